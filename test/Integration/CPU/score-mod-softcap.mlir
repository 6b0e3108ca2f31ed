// score_mod: tanh soft-capping s -> c * tanh(s / c) with a small cap (c = 0.5)
// so that it changes the result; a large scale pushes scores past the cap.

// RUN: attn-run %s --check --json --fused=false | FileCheck %s
// RUN: attn-run %s --check --json --fused --query-tile-size 8 --kv-tile-size 16 | FileCheck %s
// CHECK: check b=1,hq=4,hkv=2,sq=24,sk=24,d=16,dv=16: max abs error {{.*}} ok
// CHECK: "ok":true

func.func @softcap(%q: tensor<1x4x24x16xf32>, %k: tensor<1x2x24x16xf32>,
                   %v: tensor<1x2x24x16xf32>,
                   %o: tensor<1x4x24x16xf32>) -> tensor<1x4x24x16xf32> {
  %0 = attn.attention ins(%q, %k, %v : tensor<1x4x24x16xf32>,
                          tensor<1x2x24x16xf32>, tensor<1x2x24x16xf32>)
      outs(%o : tensor<1x4x24x16xf32>)
      {scale = 2.0 : f32, structured_mask = #attn.causal<top_left>}
      score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
        %c = arith.constant 0.5 : f32
        %d = arith.divf %s, %c : f32
        %t = math.tanh %d : f32
        %r = arith.mulf %t, %c : f32
        attn.yield %r : f32
      } -> tensor<1x4x24x16xf32>
  return %0 : tensor<1x4x24x16xf32>
}
