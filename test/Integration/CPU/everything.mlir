// Everything at once: i1 mask [Sq, Sk], bias [B, 1, Sq, Sk], kv_lens, a
// score_mod (tanh soft-cap plus a per-head ALiBi-like slope), a mask_mod, a
// bottom-right sliding window, an explicit scale, GQA 4:1, Sq != Sk, D != Dv,
// f16 inputs with f32 output.

// RUN: attn-run %s --check --json --fused=false | FileCheck %s
// RUN: attn-run %s --check --json --fused --query-tile-size 8 --kv-tile-size 16 | FileCheck %s
// RUN: attn-run %s --check --threads 2 --seed 3 --fused=false | FileCheck %s --check-prefix=SEED3
// CHECK: check b=2,hq=8,hkv=2,sq=16,sk=24,d=32,dv=16: max abs error {{.*}} ok
// CHECK: "ok":true
// SEED3: check b=2,hq=8,hkv=2,sq=16,sk=24,d=32,dv=16: max abs error {{.*}} ok

func.func @everything(%q: tensor<2x8x16x32xf16>, %k: tensor<2x2x24x32xf16>,
                      %v: tensor<2x2x24x16xf16>, %m: tensor<16x24xi1>,
                      %bias: tensor<2x1x16x24xf32>, %lens: tensor<2xi32>,
                      %o: tensor<2x8x16x16xf32>) -> tensor<2x8x16x16xf32> {
  %0 = attn.attention ins(%q, %k, %v : tensor<2x8x16x32xf16>,
                          tensor<2x2x24x32xf16>, tensor<2x2x24x16xf16>)
      mask(%m : tensor<16x24xi1>) bias(%bias : tensor<2x1x16x24xf32>)
      kv_lens(%lens : tensor<2xi32>)
      outs(%o : tensor<2x8x16x16xf32>)
      {scale = 0.25 : f32,
       structured_mask = #attn.sliding_window<left = 7, right = 2, alignment = bottom_right>}
      score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
        %c = arith.constant 1.5 : f32
        %d = arith.divf %s, %c : f32
        %t = math.tanh %d : f32
        %r = arith.mulf %t, %c : f32
        %hi = arith.index_cast %h : index to i32
        %hf = arith.sitofp %hi : i32 to f32
        %slope = arith.constant -0.125 : f32
        %a = arith.mulf %hf, %slope : f32
        %r2 = arith.addf %r, %a : f32
        attn.yield %r2 : f32
      }
      mask_mod {
      ^bb0(%b: index, %h: index, %i: index, %j: index):
        %c5 = arith.constant 5 : index
        %x = arith.remui %j, %c5 : index
        %c1 = arith.constant 1 : index
        %ne = arith.cmpi ne, %x, %c1 : index
        attn.yield %ne : i1
      } -> tensor<2x8x16x16xf32>
  return %0 : tensor<2x8x16x16xf32>
}
