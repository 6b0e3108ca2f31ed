// mask_mod: hide keys whose distance to the query is odd, and (per head) the
// keys j < h; checks the indices the region is given.

// RUN: attn-run %s --check --json --fused=false | FileCheck %s
// RUN: attn-run %s --check --json --fused --query-tile-size 8 --kv-tile-size 16 | FileCheck %s
// CHECK: check b=2,hq=4,hkv=2,sq=16,sk=16,d=16,dv=16: max abs error {{.*}} ok
// CHECK: "ok":true

func.func @mask_mod(%q: tensor<2x4x16x16xf32>, %k: tensor<2x2x16x16xf32>,
                    %v: tensor<2x2x16x16xf32>,
                    %o: tensor<2x4x16x16xf32>) -> tensor<2x4x16x16xf32> {
  %0 = attn.attention ins(%q, %k, %v : tensor<2x4x16x16xf32>,
                          tensor<2x2x16x16xf32>, tensor<2x2x16x16xf32>)
      outs(%o : tensor<2x4x16x16xf32>)
      mask_mod {
      ^bb0(%b: index, %h: index, %i: index, %j: index):
        %s = arith.addi %i, %j : index
        %c2 = arith.constant 2 : index
        %r = arith.remui %s, %c2 : index
        %c0 = arith.constant 0 : index
        %even = arith.cmpi eq, %r, %c0 : index
        %ge = arith.cmpi uge, %j, %h : index
        %vis = arith.andi %even, %ge : i1
        attn.yield %vis : i1
      } -> tensor<2x4x16x16xf32>
  return %0 : tensor<2x4x16x16xf32>
}
