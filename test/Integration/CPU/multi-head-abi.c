// A kind=mha kernel at the DLPack ABI: activations [B, S, E] whose batch and
// lengths are dynamic, weights of fixed sizes (the heads are attributes), each
// checked; a valid call projects, attends and projects back.

// RUN: rm -rf %t && mkdir -p %t
// RUN: attn-compile --spec "b=1,hq=2,sq=2,d=2,kind=mha,e=4,dynamic=bs" --name k_mha -o %t
// RUN: FileCheck %s --check-prefix=HEADER < %t/k_mha.h
// RUN: %cc -O1 -Wall -Werror -I%t %s %t/k_mha.o %kernel_link_flags -lm -o %t.exe
// RUN: %t.exe | FileCheck %s

// HEADER: x_q      [B, Sq, 4] f32
// HEADER: w_q      [4, 4] f32
// HEADER: w_o      [4, 4] f32
// HEADER: out      [B, Sq, 4] f32
// HEADER: int k_mha(const DLTensor *x_q, const DLTensor *x_k, const DLTensor *x_v, const DLTensor *w_q, const DLTensor *w_k, const DLTensor *w_v, const DLTensor *w_o, DLTensor *out);

// CHECK: valid call: 0 ok
// CHECK-NEXT: out = x W_v W_o averaged over keys ok
// CHECK-NEXT: w_q [4, 3]: 5 ok
// CHECK-NEXT: x_k [1, 2, 5]: 5 ok
// CHECK-NEXT: x_k of 3 keys, x_v of 2: 6 ok
// CHECK-NEXT: all ok

#include "k_mha.h"

#include "Inputs/cpu-tensor.h"
#include "Inputs/expect.h"

#include <math.h>
#include <stdio.h>

enum { S = 2, E = 4, N = S * E };

static float x[N], kx[3 * 5], wq[E * E], wk[E * E], wv[E * E], wo[E * E], o[N];

int main(void) {
  int64_t act[3] = {1, S, E}, w[2] = {E, E}, narrow[2] = {E, 3};
  int64_t wide[3] = {1, S, 5}, longer[3] = {1, 3, E};
  /* W_q = W_k = 0: every score is 0, so each row averages the keys' values;
   * W_v = W_o = identity: out = mean over keys of x. */
  for (int i = 0; i < N; ++i)
    x[i] = (float)(i + 1);
  for (int i = 0; i < E; ++i)
    wv[i * E + i] = wo[i * E + i] = 1.0f;
  DLTensor tx = cpu_tensor(x, 3, act), tq = cpu_tensor(wq, 2, w),
           tk = cpu_tensor(wk, 2, w), tv = cpu_tensor(wv, 2, w),
           two = cpu_tensor(wo, 2, w), to = cpu_tensor(o, 3, act);
  expect("valid call", k_mha(&tx, &tx, &tx, &tq, &tk, &tv, &two, &to), 0);
  int mean = 1;
  for (int s = 0; s < S; ++s)
    for (int e = 0; e < E; ++e)
      mean &= fabs(o[s * E + e] - (x[e] + x[E + e]) / 2) < 1e-5;
  printf("out = x W_v W_o averaged over keys %s\n", mean ? "ok" : "FAILED");
  all_ok &= mean;

  DLTensor bad = cpu_tensor(wq, 2, narrow);
  expect("w_q [4, 3]", k_mha(&tx, &tx, &tx, &bad, &tk, &tv, &two, &to), 5);
  bad = cpu_tensor(kx, 3, wide);
  expect("x_k [1, 2, 5]", k_mha(&tx, &bad, &tx, &tq, &tk, &tv, &two, &to), 5);
  bad = cpu_tensor(kx, 3, longer);
  expect("x_k of 3 keys, x_v of 2",
         k_mha(&tx, &bad, &tx, &tq, &tk, &tv, &two, &to), 6);

  printf("%s\n", all_ok ? "all ok" : "SOME FAILED");
  return !all_ok;
}
