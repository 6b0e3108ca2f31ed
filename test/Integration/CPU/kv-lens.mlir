// Key padding: kv_lens[b] valid keys per batch entry (attn-run draws each in
// [0, Sk], so a batch entry may have no key at all and must come out 0).

// RUN: attn-run %s --check --json --fused=false | FileCheck %s
// RUN: attn-run %s --check --json --fused --query-tile-size 8 --kv-tile-size 16 | FileCheck %s
// RUN: attn-run %s --check --seed 7 --fused=false | FileCheck %s --check-prefix=SEED7
// CHECK: check b=4,hq=2,hkv=1,sq=16,sk=32,d=16,dv=16: max abs error {{.*}} ok
// CHECK: "ok":true
// SEED7: check b=4,hq=2,hkv=1,sq=16,sk=32,d=16,dv=16: max abs error {{.*}} ok

func.func @kv_lens(%q: tensor<4x2x16x16xf32>, %k: tensor<4x1x32x16xf32>,
                   %v: tensor<4x1x32x16xf32>, %lens: tensor<4xi32>,
                   %o: tensor<4x2x16x16xf32>) -> tensor<4x2x16x16xf32> {
  %0 = attn.attention ins(%q, %k, %v : tensor<4x2x16x16xf32>,
                          tensor<4x1x32x16xf32>, tensor<4x1x32x16xf32>)
      kv_lens(%lens : tensor<4xi32>)
      outs(%o : tensor<4x2x16x16xf32>) -> tensor<4x2x16x16xf32>
  return %0 : tensor<4x2x16x16xf32>
}
