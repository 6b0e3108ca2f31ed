// An additive bias of shape [B, 1, Sq, Sk] (one per batch entry, broadcast
// over heads), Sq != Sk.

// RUN: attn-run %s --check --json --fused=false | FileCheck %s
// RUN: attn-run %s --check --json --fused --query-tile-size 8 --kv-tile-size 16 | FileCheck %s
// CHECK: check b=3,hq=2,hkv=2,sq=12,sk=20,d=16,dv=16: max abs error {{.*}} ok
// CHECK: "ok":true

func.func @bias_per_batch(%q: tensor<3x2x12x16xf32>, %k: tensor<3x2x20x16xf32>,
                          %v: tensor<3x2x20x16xf32>, %bias: tensor<3x1x12x20xf32>,
                          %o: tensor<3x2x12x16xf32>) -> tensor<3x2x12x16xf32> {
  %0 = attn.attention ins(%q, %k, %v : tensor<3x2x12x16xf32>,
                          tensor<3x2x20x16xf32>, tensor<3x2x20x16xf32>)
      bias(%bias : tensor<3x1x12x20xf32>)
      outs(%o : tensor<3x2x12x16xf32>) -> tensor<3x2x12x16xf32>
  return %0 : tensor<3x2x12x16xf32>
}
