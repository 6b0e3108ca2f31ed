// Using a compiled kernel from C, the way a user would: attn-compile writes
// my_attn.o and my_attn.h; this program builds DLTensors, calls the kernel
// (dynamic in the sequence lengths) at several lengths, and compares every
// output with its own naive reference (double accumulation, causal top-left,
// GQA: query head h reads key/value head h / (Hq / Hkv)).

// RUN: rm -rf %t && mkdir -p %t
// RUN: attn-compile --spec "b=1,hq=4,hkv=2,sq=16,sk=16,d=16,mask=causal,dynamic=s" --name my_attn -o %t
// RUN: %cc -O1 -Wall -Werror -I%t %s %t/my_attn.o %kernel_link_flags -o %t.exe
// RUN: %t.exe | FileCheck %s

// CHECK: len 16: status 0 max err {{.*}} ok
// CHECK-NEXT: len 7: status 0 max err {{.*}} ok
// CHECK-NEXT: sq 5 sk 9 (strides): status 0 max err {{.*}} ok
// CHECK-NEXT: all ok

#include "my_attn.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

enum { B = 1, HQ = 4, HKV = 2, D = 16 };

static float frand(uint32_t *state) {
  *state = *state * 1664525u + 1013904223u;
  return (float)((*state >> 8) & 0xffff) / 32768.0f - 1.0f; /* [-1, 1) */
}

static DLTensor make_tensor(float *data, int64_t *shape, int64_t *strides) {
  DLTensor t;
  t.data = data;
  t.device.device_type = kDLCPU;
  t.device.device_id = 0;
  t.ndim = 4;
  t.dtype.code = kDLFloat;
  t.dtype.bits = 32;
  t.dtype.lanes = 1;
  t.shape = shape;
  t.strides = strides;
  t.byte_offset = 0;
  return t;
}

static void compact_strides(const int64_t *shape, int64_t *strides) {
  int64_t s = 1;
  for (int d = 3; d >= 0; --d) {
    strides[d] = s;
    s *= shape[d];
  }
}

/* out[b][h][i][f] for causal top-left attention with scale 1/sqrt(D). */
static void reference(int sq, int sk, const float *q, const float *k,
                      const float *v, double *out) {
  int group = HQ / HKV;
  double scale = 1.0 / sqrt((double)D);
  double *w = malloc(sizeof(double) * (sk > 0 ? sk : 1));
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < HQ; ++h) {
      int kh = h / group;
      for (int i = 0; i < sq; ++i) {
        double mx = -INFINITY, sum = 0;
        for (int j = 0; j <= i && j < sk; ++j) {
          double dot = 0;
          for (int f = 0; f < D; ++f)
            dot += (double)q[((b * HQ + h) * sq + i) * D + f] *
                   (double)k[((b * HKV + kh) * sk + j) * D + f];
          w[j] = scale * dot;
          if (w[j] > mx)
            mx = w[j];
        }
        for (int j = 0; j <= i && j < sk; ++j) {
          w[j] = exp(w[j] - mx);
          sum += w[j];
        }
        for (int f = 0; f < D; ++f) {
          double acc = 0;
          for (int j = 0; j <= i && j < sk; ++j)
            acc += w[j] * (double)v[((b * HKV + kh) * sk + j) * D + f];
          out[((b * HQ + h) * sq + i) * D + f] = sum > 0 ? acc / sum : 0.0;
        }
      }
    }
  free(w);
}

static int run(const char *label, int sq, int sk, int use_strides,
               uint32_t seed) {
  int64_t qshape[4] = {B, HQ, sq, D}, kshape[4] = {B, HKV, sk, D};
  int64_t vshape[4] = {B, HKV, sk, D}, oshape[4] = {B, HQ, sq, D};
  int64_t qst[4], kst[4], vst[4], ost[4];
  size_t nq = (size_t)B * HQ * sq * D, nk = (size_t)B * HKV * sk * D;
  float *q = malloc(nq * sizeof(float)), *k = malloc(nk * sizeof(float));
  float *v = malloc(nk * sizeof(float)), *o = malloc(nq * sizeof(float));
  double *want = malloc(nq * sizeof(double));
  for (size_t i = 0; i < nq; ++i)
    q[i] = frand(&seed);
  for (size_t i = 0; i < nk; ++i) {
    k[i] = frand(&seed);
    v[i] = frand(&seed);
  }
  for (size_t i = 0; i < nq; ++i)
    o[i] = NAN; /* every element must be written */
  compact_strides(qshape, qst);
  compact_strides(kshape, kst);
  compact_strides(vshape, vst);
  compact_strides(oshape, ost);

  DLTensor tq = make_tensor(q, qshape, use_strides ? qst : NULL);
  DLTensor tk = make_tensor(k, kshape, use_strides ? kst : NULL);
  DLTensor tv = make_tensor(v, vshape, use_strides ? vst : NULL);
  DLTensor to = make_tensor(o, oshape, use_strides ? ost : NULL);
  int status = my_attn(&tq, &tk, &tv, &to);
  if (status != MY_ATTN_OK)
    printf("%s: error %d: %s\n", label, status, my_attn_error_string(status));

  reference(sq, sk, q, k, v, want);
  double err = 0;
  for (size_t i = 0; i < nq; ++i) {
    double diff = fabs((double)o[i] - want[i]);
    if (isnan(diff))
      diff = INFINITY;
    if (diff > err)
      err = diff;
  }
  int ok = status == MY_ATTN_OK && err <= 1e-4;
  printf("%s: status %d max err %.3e %s\n", label, status, err,
         ok ? "ok" : "FAILED");
  free(q);
  free(k);
  free(v);
  free(o);
  free(want);
  return ok;
}

int main(void) {
  int ok = 1;
  ok &= run("len 16", 16, 16, 0, 1u);
  ok &= run("len 7", 7, 7, 0, 2u);
  ok &= run("sq 5 sk 9 (strides)", 5, 9, 1, 3u);
  printf("%s\n", ok ? "all ok" : "SOME FAILED");
  return ok ? 0 : 1;
}
