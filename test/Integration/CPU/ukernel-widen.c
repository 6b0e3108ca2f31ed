// The micro-kernels' vector widening of f16 and bf16 rows (loadRow in
// lib/Runtime/OnlineStepUKernel.c, which the decoding path and the f16/bf16
// value chunks use) against its scalar form (element), for every one of the
// 65536 bit patterns: zeros, subnormals, normals, infinities and NaNs, bit
// for bit (a NaN comes out quiet). Built from the micro-kernel's source at
// both vector widths, the AVX2 one with and without F16C (every AVX2 CPU
// has F16C).

// RUN: %cc -O1 -std=c11 -mavx2 -mfma -DATTN_UK_VL=8 -I%attn_src_root/include %s -lm -o %t.avx2 && %t.avx2 | FileCheck %s
// RUN: %cc -O1 -std=c11 -mavx2 -mfma -mf16c -DATTN_UK_VL=8 -I%attn_src_root/include %s -lm -o %t.f16c && %t.f16c | FileCheck %s
// RUN: %cc -O1 -std=c11 -mavx512f -mfma -DATTN_UK_VL=16 -I%attn_src_root/include %s -lm -o %t.avx512
// RUN: %if avx512f %{ %t.avx512 | FileCheck %s %}

// CHECK: f16: 65536 patterns, 0 mismatches
// CHECK: bf16: 65536 patterns, 0 mismatches

#include "../../../lib/Runtime/OnlineStepUKernel.c"

#include <stdio.h>

static int mismatches(int kind) {
  static uint16_t bits[65536];
  for (uint32_t i = 0; i < 65536; ++i)
    bits[i] = (uint16_t)i;
  int bad = 0;
  for (int64_t i = 0; i < 65536; i += VL) {
    float wide[VL];
    store(wide, loadRow(kind, bits, i));
    for (int l = 0; l < VL; ++l) {
      float scalar = element(kind, bits, i + l);
      if (memcmp(&scalar, &wide[l], 4) != 0)
        ++bad;
    }
  }
  return bad;
}

int main(void) {
  printf("f16: 65536 patterns, %d mismatches\n", mismatches(F16));
  printf("bf16: 65536 patterns, %d mismatches\n", mismatches(BF16));
  return 0;
}
