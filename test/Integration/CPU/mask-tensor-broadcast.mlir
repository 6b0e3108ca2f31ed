// An i1 mask tensor of rank 2 [Sq, Sk], broadcast over batch and heads.

// RUN: attn-run %s --check --json --fused=false | FileCheck %s
// RUN: attn-run %s --check --json --fused --query-tile-size 8 --kv-tile-size 16 | FileCheck %s
// CHECK: check b=2,hq=2,hkv=2,sq=16,sk=16,d=8,dv=8: max abs error {{.*}} ok
// CHECK: "ok":true

func.func @mask_tensor_broadcast(%q: tensor<2x2x16x8xf32>, %k: tensor<2x2x16x8xf32>,
                                 %v: tensor<2x2x16x8xf32>, %m: tensor<16x16xi1>,
                                 %o: tensor<2x2x16x8xf32>) -> tensor<2x2x16x8xf32> {
  %0 = attn.attention ins(%q, %k, %v : tensor<2x2x16x8xf32>,
                          tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>)
      mask(%m : tensor<16x16xi1>)
      outs(%o : tensor<2x2x16x8xf32>) -> tensor<2x2x16x8xf32>
  return %0 : tensor<2x2x16x8xf32>
}
