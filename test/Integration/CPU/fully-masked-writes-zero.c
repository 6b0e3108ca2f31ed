// A query that sees no key gets an output row of zeros, written by the
// kernel. attn-run zero-fills `out` before the call, so it cannot tell a
// written 0 from an untouched buffer; here `out` starts as NaN. Sq = 8 > Sk = 4
// with bottom-right causal: queries 0-3 see no key, query i >= 4 sees keys
// 0..i-4.

// RUN: rm -rf %t && mkdir -p %t
// RUN: attn-compile --spec "b=1,hq=2,sq=8,sk=4,d=8,mask=causal_bottom_right" --name masked -o %t
// RUN: %cc -O1 -Wall -Werror -I%t %s %t/masked.o %kernel_link_flags -o %t.exe
// RUN: %t.exe | FileCheck %s

// CHECK: status 0
// CHECK-NEXT: masked rows zero: ok
// CHECK-NEXT: visible rows finite: ok

#include "masked.h"

#include <math.h>
#include <stdio.h>

static DLTensor tensor(float *data, int64_t *shape) {
  DLTensor t = {0};
  t.data = data;
  t.device.device_type = kDLCPU;
  t.ndim = 4;
  t.dtype.code = kDLFloat;
  t.dtype.bits = 32;
  t.dtype.lanes = 1;
  t.shape = shape;
  return t;
}

int main(void) {
  static float q[2 * 8 * 8], k[2 * 4 * 8], v[2 * 4 * 8], o[2 * 8 * 8];
  int64_t qshape[4] = {1, 2, 8, 8}, kvshape[4] = {1, 2, 4, 8};
  for (int i = 0; i < 2 * 8 * 8; ++i) {
    q[i] = sinf((float)i);
    o[i] = NAN;
  }
  for (int i = 0; i < 2 * 4 * 8; ++i) {
    k[i] = cosf(1.3f * (float)i);
    v[i] = 0.5f + 0.25f * sinf(0.7f * (float)i); /* never 0 */
  }
  DLTensor tq = tensor(q, qshape), tk = tensor(k, kvshape),
           tv = tensor(v, kvshape), to = tensor(o, qshape);
  printf("status %d\n", masked(&tq, &tk, &tv, &to));

  int zero_ok = 1, finite_ok = 1;
  for (int h = 0; h < 2; ++h)
    for (int i = 0; i < 8; ++i)
      for (int f = 0; f < 8; ++f) {
        float x = o[(h * 8 + i) * 8 + f];
        if (i < 4)
          zero_ok &= x == 0.0f;
        else
          finite_ok &= isfinite(x) && x != 0.0f;
      }
  printf("masked rows zero: %s\n", zero_ok ? "ok" : "FAILED");
  printf("visible rows finite: %s\n", finite_ok ? "ok" : "FAILED");
  return zero_ok && finite_ok ? 0 : 1;
}
