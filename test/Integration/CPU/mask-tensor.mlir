// An i1 mask tensor of full rank [B, Hq, Sq, Sk] (attn-run fills it true 3
// times in 4), GQA 2:1, f32.

// RUN: attn-run %s --check --json --fused=false | FileCheck %s
// RUN: attn-run %s --check --json --fused --query-tile-size 8 --kv-tile-size 16 | FileCheck %s
// CHECK: check b=2,hq=4,hkv=2,sq=16,sk=24,d=16,dv=16: max abs error {{.*}} ok
// CHECK: "ok":true

func.func @mask_tensor(%q: tensor<2x4x16x16xf32>, %k: tensor<2x2x24x16xf32>,
                       %v: tensor<2x2x24x16xf32>, %m: tensor<2x4x16x24xi1>,
                       %o: tensor<2x4x16x16xf32>) -> tensor<2x4x16x16xf32> {
  %0 = attn.attention ins(%q, %k, %v : tensor<2x4x16x16xf32>,
                          tensor<2x2x24x16xf32>, tensor<2x2x24x16xf32>)
      mask(%m : tensor<2x4x16x24xi1>)
      outs(%o : tensor<2x4x16x16xf32>) -> tensor<2x4x16x16xf32>
  return %0 : tensor<2x4x16x16xf32>
}
