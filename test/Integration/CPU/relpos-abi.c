// The rel_bias table of a relpos kernel at the DLPack ABI: its bucket count
// NB is compiled in and checked, its head count must be q's, and a valid
// call adds rel_bias[h, bucket(j - i)]: with a table that is 0 except one
// bucket per head, row 0 of a 2-key problem weighs its keys by that bias.

// RUN: rm -rf %t && mkdir -p %t
// RUN: attn-compile --spec "b=1,hq=2,sq=2,d=4,mod=relpos:8:16,dynamic=h" --name k_rel -o %t
// RUN: %cc -O1 -Wall -Werror -I%t %s %t/k_rel.o %kernel_link_flags -lm -o %t.exe
// RUN: %t.exe | FileCheck %s

// CHECK: valid call: 0 ok
// CHECK-NEXT: bias of bucket 5 moves row 0 ok
// CHECK-NEXT: NB 4 for the compiled 8: 5 ok
// CHECK-NEXT: table heads 3 for q's 2: 6 ok
// CHECK-NEXT: table rank 1: 2 ok
// CHECK-NEXT: all ok

#include "k_rel.h"

#include "Inputs/cpu-tensor.h"
#include "Inputs/expect.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

enum { H = 2, S = 2, D = 4, NB = 8, N = H * S * D };

static float q[N], k[N], v[N], o[N], table[(H + 1) * NB];

int main(void) {
  int64_t shape[4] = {1, H, S, D}, tableShape[2] = {H, NB};
  int64_t narrow[2] = {H, 4}, tall[2] = {H + 1, NB}, flat[1] = {H * NB};
  /* q = k = 0: every score is its bias alone. v[j] = j. */
  for (int i = 0; i < N; ++i)
    v[i] = (float)((i / D) % S);
  /* Bidirectional, 8 buckets: key 1 after query 0 is offset +1, bucket
   * 4 + 1 = 5. */
  table[0 * NB + 5] = 2.0f;
  table[1 * NB + 5] = -2.0f;
  DLTensor tq = cpu_tensor(q, 4, shape), tk = cpu_tensor(k, 4, shape),
           tv = cpu_tensor(v, 4, shape), to = cpu_tensor(o, 4, shape),
           tt = cpu_tensor(table, 2, tableShape);
  expect("valid call", k_rel(&tq, &tk, &tv, &tt, &to), 0);
  /* Row 0 of head h: softmax(0, bias) . (0, 1) = sigmoid(bias). */
  double want0 = 1 / (1 + exp(-2.0)), want1 = 1 / (1 + exp(2.0));
  double got0 = o[0 * S * D], got1 = o[1 * S * D];
  int moved = fabs(got0 - want0) < 1e-5 && fabs(got1 - want1) < 1e-5;
  printf("bias of bucket 5 moves row 0 %s\n", moved ? "ok" : "FAILED");
  all_ok &= moved;

  DLTensor bad = cpu_tensor(table, 2, narrow);
  expect("NB 4 for the compiled 8", k_rel(&tq, &tk, &tv, &bad, &to), 5);
  bad = cpu_tensor(table, 2, tall);
  expect("table heads 3 for q's 2", k_rel(&tq, &tk, &tv, &bad, &to), 6);
  bad = cpu_tensor(table, 1, flat);
  expect("table rank 1", k_rel(&tq, &tk, &tv, &bad, &to), 2);

  printf("%s\n", all_ok ? "all ok" : "SOME FAILED");
  return !all_ok;
}
