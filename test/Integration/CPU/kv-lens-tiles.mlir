// Key padding over many key tiles: the fused loop of each (batch entry,
// query tile) stops at kv_lens[b], so padding tiles are never visited and the
// f32 steps run in the micro-kernel (attn-run draws kv_lens in [0, Sk]:
// empty, partial and full entries), also with a bottom-right causal band.

// RUN: attn-run %s --function kv_lens --check --query-tile-size 16 --kv-tile-size 48 | FileCheck %s
// RUN: attn-run %s --function kv_lens --check --seed 3 | FileCheck %s
// RUN: attn-run %s --function kv_lens_causal --check --query-tile-size 16 --kv-tile-size 48 | FileCheck %s --check-prefix=CAUSAL
// RUN: attn-run %s --function kv_lens_causal --check --seed 5 --ukernels=false | FileCheck %s --check-prefix=CAUSAL
// CHECK: check b=5,hq=4,hkv=2,sq=70,sk=300,d=32,dv=32: max abs error {{.*}} ok
// CAUSAL: check b=5,hq=4,hkv=2,sq=70,sk=300,d=32,dv=32: max abs error {{.*}} ok

func.func @kv_lens(%q: tensor<5x4x70x32xf32>, %k: tensor<5x2x300x32xf32>,
                   %v: tensor<5x2x300x32xf32>, %lens: tensor<5xi32>,
                   %o: tensor<5x4x70x32xf32>) -> tensor<5x4x70x32xf32> {
  %0 = attn.attention ins(%q, %k, %v : tensor<5x4x70x32xf32>,
                          tensor<5x2x300x32xf32>, tensor<5x2x300x32xf32>)
      kv_lens(%lens : tensor<5xi32>)
      outs(%o : tensor<5x4x70x32xf32>) -> tensor<5x4x70x32xf32>
  return %0 : tensor<5x4x70x32xf32>
}

func.func @kv_lens_causal(%q: tensor<5x4x70x32xf32>, %k: tensor<5x2x300x32xf32>,
                          %v: tensor<5x2x300x32xf32>, %lens: tensor<5xi32>,
                          %o: tensor<5x4x70x32xf32>) -> tensor<5x4x70x32xf32> {
  %0 = attn.attention ins(%q, %k, %v : tensor<5x4x70x32xf32>,
                          tensor<5x2x300x32xf32>, tensor<5x2x300x32xf32>)
      kv_lens(%lens : tensor<5xi32>) outs(%o : tensor<5x4x70x32xf32>)
      {structured_mask = #attn.causal<bottom_right>} -> tensor<5x4x70x32xf32>
  return %0 : tensor<5x4x70x32xf32>
}
