// An additive bias of shape [1, 1, Sq, Sk], broadcast over batch and heads;
// causal, GQA 2:1.

// RUN: attn-run %s --check --json --fused=false | FileCheck %s
// RUN: attn-run %s --check --json --fused --query-tile-size 8 --kv-tile-size 16 | FileCheck %s
// CHECK: check b=2,hq=4,hkv=2,sq=16,sk=16,d=16,dv=16: max abs error {{.*}} ok
// CHECK: "ok":true

func.func @bias_broadcast(%q: tensor<2x4x16x16xf32>, %k: tensor<2x2x16x16xf32>,
                          %v: tensor<2x2x16x16xf32>, %bias: tensor<1x1x16x16xf32>,
                          %o: tensor<2x4x16x16xf32>) -> tensor<2x4x16x16xf32> {
  %0 = attn.attention ins(%q, %k, %v : tensor<2x4x16x16xf32>,
                          tensor<2x2x16x16xf32>, tensor<2x2x16x16xf32>)
      bias(%bias : tensor<1x1x16x16xf32>)
      outs(%o : tensor<2x4x16x16xf32>)
      {structured_mask = #attn.causal<top_left>} -> tensor<2x4x16x16xf32>
  return %0 : tensor<2x4x16x16xf32>
}
