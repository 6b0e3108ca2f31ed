// A kernel with an lse output, called the way a user calls it: the lse
// operand is checked like every other one (null, rank, dtype, sizes against
// q), nothing is written on error, and a valid call writes each row's
// log-sum-exp, which equals log(sum_j exp(s_j)) recomputed here in double
// for a causal mask (row i sees keys 0..i).

// RUN: rm -rf %t && mkdir -p %t
// RUN: attn-compile --spec "b=1,hq=2,sq=8,d=8,mask=causal,lse=true,dynamic=s" --name k_lse -o %t
// RUN: %cc -O1 -Wall -Werror -I%t %s %t/k_lse.o %kernel_link_flags -lm -o %t.exe
// RUN: %t.exe | FileCheck %s

// CHECK: valid call: 0 ok
// CHECK-NEXT: lse matches the recomputed sums ok
// CHECK-NEXT: null lse: 1 ok
// CHECK-NEXT: lse rank 4: 2 ok
// CHECK-NEXT: lse f16: 3 ok
// CHECK-NEXT: lse Sq 7 for q's 8: 6 ok
// CHECK-NEXT: all ok

#include "k_lse.h"

#include "Inputs/cpu-tensor.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

enum { H = 2, S = 8, D = 8, N = H * S * D };
#define SENTINEL (-12345.0f)

static float q[N], k[N], v[N], o[N], lse[H * S];
static int all_ok = 1;

static void reset(void) {
  for (int i = 0; i < N; ++i) {
    q[i] = (float)((i * 7) % 13) / 13.0f - 0.5f;
    k[i] = (float)((i * 5) % 11) / 11.0f - 0.5f;
    v[i] = (float)((i * 3) % 17) / 17.0f - 0.5f;
    o[i] = SENTINEL;
  }
  for (int i = 0; i < H * S; ++i)
    lse[i] = SENTINEL;
}

static int untouched(void) {
  for (int i = 0; i < H * S; ++i)
    if (lse[i] != SENTINEL)
      return 0;
  for (int i = 0; i < N; ++i)
    if (o[i] != SENTINEL)
      return 0;
  return 1;
}

static void expect(const char *label, int got, int want) {
  int ok = got == want && (want == 0 || untouched());
  printf("%s: %d %s\n", label, got, ok ? "ok" : "FAILED");
  all_ok &= ok;
}

int main(void) {
  int64_t shape[4] = {1, H, S, D}, lseShape[3] = {1, H, S};
  int64_t shortLse[3] = {1, H, S - 1}, lse4[4] = {1, H, S, 1};
  DLTensor tq = cpu_tensor(q, 4, shape), tk = cpu_tensor(k, 4, shape),
           tv = cpu_tensor(v, 4, shape), to = cpu_tensor(o, 4, shape),
           tl = cpu_tensor(lse, 3, lseShape);

  reset();
  expect("valid call", k_lse(&tq, &tk, &tv, &to, &tl), 0);
  double worst = 0;
  for (int h = 0; h < H; ++h)
    for (int i = 0; i < S; ++i) {
      double sum = 0;
      for (int j = 0; j <= i; ++j) {
        double dot = 0;
        for (int d = 0; d < D; ++d)
          dot += (double)q[(h * S + i) * D + d] * k[(h * S + j) * D + d];
        sum += exp(dot / sqrt((double)D));
      }
      double err = fabs(log(sum) - lse[h * S + i]);
      worst = err > worst || err != err ? err : worst;
    }
  printf("lse matches the recomputed sums %s\n",
         worst < 1e-5 ? "ok" : "FAILED");
  all_ok &= worst < 1e-5;

  reset();
  expect("null lse", k_lse(&tq, &tk, &tv, &to, NULL), 1);
  reset();
  DLTensor bad = cpu_tensor(lse, 4, lse4);
  expect("lse rank 4", k_lse(&tq, &tk, &tv, &to, &bad), 2);
  reset();
  bad = cpu_tensor(lse, 3, lseShape);
  bad.dtype.bits = 16;
  expect("lse f16", k_lse(&tq, &tk, &tv, &to, &bad), 3);
  reset();
  bad = cpu_tensor(lse, 3, shortLse);
  expect("lse Sq 7 for q's 8", k_lse(&tq, &tk, &tv, &to, &bad), 6);

  printf("%s\n", all_ok ? "all ok" : "SOME FAILED");
  return !all_ok;
}
