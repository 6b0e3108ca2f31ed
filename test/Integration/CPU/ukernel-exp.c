// The micro-kernels' vector exp (vexp in lib/Runtime/OnlineStepUKernel.c)
// over its domain, the softmax's arguments: against double-precision exp on
// every 16th float of [-87.34, 0] (within 1 ulp), and exactly at the edges the
// softmax relies on: exp(0) = 1, exp(-inf) = 0 and 0 below -87.34 (where
// 2^n would be subnormal), exp(NaN) = NaN. Built from the micro-kernel's
// source at both vector widths (AVX-512 forms 2^n with vscalefps).

// RUN: %cc -O2 -std=c11 -mavx2 -mfma -DATTN_UK_VL=8 -I%attn_src_root/include %s -lm -o %t.avx2 && %t.avx2 | FileCheck %s
// RUN: %cc -O2 -std=c11 -mavx512f -mfma -DATTN_UK_VL=16 -I%attn_src_root/include %s -lm -o %t.avx512
// RUN: %if avx512f %{ %t.avx512 | FileCheck %s %}

// CHECK: domain: {{[0-9]+}} values, max error {{0\.[0-9]+}} ulp, 0 over 1 ulp
// CHECK: edges: 0 wrong

#include "../../../lib/Runtime/OnlineStepUKernel.c"

#include <float.h>
#include <stdio.h>

static float expOf(float x) { return vexp(splat(x))[VL - 1]; }

int main(void) {
  const float lo = -87.33654f;
  long values = 0, over = 0;
  double worst = 0;
  float xs[VL];
  uint32_t loBits;
  memcpy(&loBits, &lo, 4);
  /* Negative floats grow in magnitude with their bits: -0 is 0x80000000. */
  for (uint32_t bits = 0x80000000u; bits <= loBits; bits += 16 * VL) {
    for (int l = 0; l < VL; ++l) {
      uint32_t b = bits + 16 * l < loBits ? bits + 16 * l : loBits;
      memcpy(&xs[l], &b, 4);
    }
    vf e = vexp(load(xs));
    for (int l = 0; l < VL; ++l) {
      double ref = exp((double)xs[l]);
      double ulp = ldexp(1.0, ilogb(ref) - 23);
      double err = fabs(e[l] - ref) / ulp;
      worst = err > worst ? err : worst;
      over += err > 1.0;
      ++values;
    }
  }
  printf("domain: %ld values, max error %.3f ulp, %ld over 1 ulp\n", values,
         worst, over);

  int wrong = 0;
  wrong += expOf(0.0f) != 1.0f;
  wrong += expOf(-0.0f) != 1.0f;
  wrong += expOf(-INFINITY) != 0.0f;
  wrong += expOf(nextafterf(lo, -INFINITY)) != 0.0f;
  wrong += expOf(-100.0f) != 0.0f;
  wrong += expOf(-FLT_MAX) != 0.0f;
  wrong += expOf(lo) < FLT_MIN;
  wrong += !isnan(expOf(NAN));
  wrong += !isnan(expOf(-NAN));
  printf("edges: %d wrong\n", wrong);
  return 0;
}
