// mask_mod that hides every key of query 0: its output row must be 0, not
// NaN (a NaN fails the check).

// RUN: attn-run %s --check --json --fused=false | FileCheck %s
// RUN: attn-run %s --check --json --fused --query-tile-size 8 --kv-tile-size 16 | FileCheck %s
// CHECK: check b=1,hq=2,hkv=2,sq=8,sk=8,d=8,dv=8: max abs error {{.*}} ok
// CHECK: "ok":true

func.func @mask_mod_fully_masked(%q: tensor<1x2x8x8xf32>, %k: tensor<1x2x8x8xf32>,
                                 %v: tensor<1x2x8x8xf32>,
                                 %o: tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32> {
  %0 = attn.attention ins(%q, %k, %v : tensor<1x2x8x8xf32>,
                          tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32>)
      outs(%o : tensor<1x2x8x8xf32>)
      mask_mod {
      ^bb0(%b: index, %h: index, %i: index, %j: index):
        %c0 = arith.constant 0 : index
        %vis = arith.cmpi ne, %i, %c0 : index
        attn.yield %vis : i1
      } -> tensor<1x2x8x8xf32>
  return %0 : tensor<1x2x8x8xf32>
}
