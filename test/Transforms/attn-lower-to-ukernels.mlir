// RUN: attn-opt %s --attn-lower-to-ukernels --canonicalize --split-input-file | FileCheck %s

// An f32 step without mask operands becomes a call of the online-step
// micro-kernel on the same tensors: scale 1/sqrt(64), layout 0 (BHSD), the
// first query and key positions, and the band of a causal mask (keys up to
// the query's own position: key - query <= 0).
// CHECK-LABEL: func.func @causal
// CHECK-SAME: (%[[Q:[a-z0-9_]+]]: tensor<1x4x16x64xf32>, %[[K:[a-z0-9_]+]]: tensor<1x2x32x64xf32>, %[[ACC:[a-z0-9_]+]]: tensor<1x4x16x64xf32>, %[[M:[a-z0-9_]+]]: tensor<1x4x16xf32>, %[[S:[a-z0-9_]+]]: tensor<1x4x16xf32>, %[[QOFF:[a-z0-9_]+]]: index, %[[KVOFF:[a-z0-9_]+]]: index)
// CHECK-DAG: %[[SCALE:.+]] = arith.constant 1.250000e-01 : f32
// CHECK-DAG: %[[BHSD:.+]] = arith.constant 0 : i64
// CHECK-DAG: %[[LO:.+]] = arith.constant -4611686018427387904 : i64
// CHECK-DAG: %[[QPOS:.+]] = arith.index_cast %[[QOFF]] : index to i64
// CHECK-DAG: %[[KVPOS:.+]] = arith.index_cast %[[KVOFF]] : index to i64
// No mask, bias or given scores: flags 0 and dummy 1x1x1x1 operands the
// micro-kernel does not read.
// CHECK-DAG: %[[NOMASK:.+]] = tensor.empty() : tensor<1x1x1x1xi1>
// CHECK-DAG: %[[NOBIAS:.+]] = tensor.empty() : tensor<1x1x1x1xf32>
// CHECK-DAG: %[[NOSCORES:.+]] = tensor.empty() : tensor<1x1x1x1xf32>
// CHECK: %[[R:.+]]:3 = attn.ukernel.generic "attn_uk_online_step_f32" ins(%[[Q]], %[[K]], %[[K]], %[[NOMASK]], %[[NOBIAS]], %[[NOSCORES]] : tensor<1x4x16x64xf32>, tensor<1x2x32x64xf32>, tensor<1x2x32x64xf32>, tensor<1x1x1x1xi1>, tensor<1x1x1x1xf32>, tensor<1x1x1x1xf32>) outs(%[[ACC]], %[[M]], %[[S]] : tensor<1x4x16x64xf32>, tensor<1x4x16xf32>, tensor<1x4x16xf32>) (%[[SCALE]], %[[BHSD]], %[[QPOS]], %[[KVPOS]], %[[LO]], %[[BHSD]], %[[BHSD]] : f32, i64, i64, i64, i64, i64, i64) -> tensor<1x4x16x64xf32>, tensor<1x4x16xf32>, tensor<1x4x16xf32>
// CHECK-NOT: attn.online_attention
// CHECK: return %[[R]]#0, %[[R]]#1, %[[R]]#2
func.func @causal(%q: tensor<1x4x16x64xf32>, %k: tensor<1x2x32x64xf32>,
                  %acc: tensor<1x4x16x64xf32>, %m: tensor<1x4x16xf32>,
                  %s: tensor<1x4x16xf32>, %qoff: index, %kvoff: index)
    -> (tensor<1x4x16x64xf32>, tensor<1x4x16xf32>, tensor<1x4x16xf32>) {
  %c0 = arith.constant 0 : index
  %c100 = arith.constant 100 : index
  %r:3 = attn.online_attention
      ins(%q, %k, %k : tensor<1x4x16x64xf32>, tensor<1x2x32x64xf32>,
                       tensor<1x2x32x64xf32>)
      offsets(%c0, %c0, %qoff, %kvoff : index, index, index, index)
      extents(%c100, %c100 : index, index)
      outs(%acc, %m, %s : tensor<1x4x16x64xf32>, tensor<1x4x16xf32>,
                          tensor<1x4x16xf32>)
      {structured_mask = #attn.causal<top_left>}
      -> tensor<1x4x16x64xf32>, tensor<1x4x16xf32>, tensor<1x4x16xf32>
  return %r#0, %r#1, %r#2
      : tensor<1x4x16x64xf32>, tensor<1x4x16xf32>, tensor<1x4x16xf32>
}

// -----

// A bottom-right window: the query position is shifted by Sk - Sq (whole
// problem), the band is [-left, right], BSHD is layout 1 and an explicit
// scale is passed as is. No mask at all is the band [-2^62, 2^62].
// CHECK-LABEL: func.func @window_bshd
// CHECK-DAG: %[[SCALE:.+]] = arith.constant 5.000000e-01 : f32
// CHECK-DAG: %[[BSHD:.+]] = arith.constant 1 : i64
// CHECK-DAG: %[[LO:.+]] = arith.constant -7 : i64
// CHECK-DAG: %[[HI:.+]] = arith.constant 2 : i64
// CHECK-DAG: %[[C0:.+]] = arith.constant 0 : i64
// CHECK-DAG: %[[C16:.+]] = arith.constant 16 : i64
// CHECK: attn.ukernel.generic "attn_uk_online_step_f32" {{.*}} (%[[SCALE]], %[[BSHD]], %[[C16]], %[[C0]], %[[LO]], %[[HI]], %[[C0]] :
// CHECK-LABEL: func.func @unmasked
// CHECK-DAG: %[[NLO:.+]] = arith.constant -4611686018427387904 : i64
// CHECK-DAG: %[[NHI:.+]] = arith.constant 4611686018427387904 : i64
// CHECK: attn.ukernel.generic "attn_uk_online_step_f32" {{.*}} %[[NLO]], %[[NHI]], %{{.+}} : f32, i64, i64, i64, i64, i64, i64)
func.func @window_bshd(%q: tensor<1x8x2x16xf32>, %k: tensor<1x24x2x16xf32>,
                       %acc: tensor<1x8x2x16xf32>, %m: tensor<1x2x8xf32>,
                       %s: tensor<1x2x8xf32>)
    -> (tensor<1x8x2x16xf32>, tensor<1x2x8xf32>, tensor<1x2x8xf32>) {
  %r:3 = attn.online_attention
      ins(%q, %k, %k : tensor<1x8x2x16xf32>, tensor<1x24x2x16xf32>,
                       tensor<1x24x2x16xf32>)
      outs(%acc, %m, %s : tensor<1x8x2x16xf32>, tensor<1x2x8xf32>,
                          tensor<1x2x8xf32>)
      {scale = 0.5 : f32, layout = #attn.layout<bshd>,
       structured_mask = #attn.sliding_window<left = 7, right = 2, alignment = bottom_right>}
      -> tensor<1x8x2x16xf32>, tensor<1x2x8xf32>, tensor<1x2x8xf32>
  return %r#0, %r#1, %r#2
      : tensor<1x8x2x16xf32>, tensor<1x2x8xf32>, tensor<1x2x8xf32>
}
func.func @unmasked(%q: tensor<1x1x4x8xf32>, %acc: tensor<1x1x4x8xf32>,
                    %m: tensor<1x1x4xf32>, %s: tensor<1x1x4xf32>)
    -> (tensor<1x1x4x8xf32>, tensor<1x1x4xf32>, tensor<1x1x4xf32>) {
  %r:3 = attn.online_attention
      ins(%q, %q, %q : tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32>,
                       tensor<1x1x4x8xf32>)
      outs(%acc, %m, %s : tensor<1x1x4x8xf32>, tensor<1x1x4xf32>,
                          tensor<1x1x4xf32>)
      -> tensor<1x1x4x8xf32>, tensor<1x1x4xf32>, tensor<1x1x4xf32>
  return %r#0, %r#1, %r#2
      : tensor<1x1x4x8xf32>, tensor<1x1x4xf32>, tensor<1x1x4xf32>
}

// -----

// f16 and bf16 steps call their own micro-kernels (q, k and v are widened
// to f32 as the chunk is packed; the statistics are f32 throughout).
// CHECK-LABEL: func.func @half
// CHECK: attn.ukernel.generic "attn_uk_online_step_f16" ins({{.*}} : tensor<1x1x4x8xf16>, tensor<1x1x4x8xf16>, tensor<1x1x4x8xf16>, tensor<1x1x1x1xi1>, tensor<1x1x1x1xf16>, tensor<1x1x1x1xf32>)
// CHECK: attn.ukernel.generic "attn_uk_online_step_bf16" ins({{.*}} : tensor<1x1x4x8xbf16>, tensor<1x1x4x8xbf16>, tensor<1x1x4x8xbf16>, tensor<1x1x1x1xi1>, tensor<1x1x1x1xbf16>, tensor<1x1x1x1xf32>)
func.func @half(%h: tensor<1x1x4x8xf16>, %g: tensor<1x1x4x8xbf16>,
                %acc: tensor<1x1x4x8xf32>, %m: tensor<1x1x4xf32>,
                %s: tensor<1x1x4xf32>)
    -> (tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32>) {
  %a:3 = attn.online_attention
      ins(%h, %h, %h : tensor<1x1x4x8xf16>, tensor<1x1x4x8xf16>,
                       tensor<1x1x4x8xf16>)
      outs(%acc, %m, %s : tensor<1x1x4x8xf32>, tensor<1x1x4xf32>,
                          tensor<1x1x4xf32>)
      -> tensor<1x1x4x8xf32>, tensor<1x1x4xf32>, tensor<1x1x4xf32>
  %b:3 = attn.online_attention
      ins(%g, %g, %g : tensor<1x1x4x8xbf16>, tensor<1x1x4x8xbf16>,
                       tensor<1x1x4x8xbf16>)
      outs(%acc, %m, %s : tensor<1x1x4x8xf32>, tensor<1x1x4xf32>,
                          tensor<1x1x4xf32>)
      -> tensor<1x1x4x8xf32>, tensor<1x1x4xf32>, tensor<1x1x4xf32>
  return %a#0, %b#0 : tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32>
}

// -----

// A Gaussian similarity sets flag 4: the micro-kernel adds -|k|^2 / 2 * scale
// to each key's scores.
// CHECK-LABEL: func.func @gaussian
// CHECK-DAG: %[[GAUSSIAN:.+]] = arith.constant 4 : i64
// CHECK: attn.ukernel.generic "attn_uk_online_step_f32"
// CHECK-SAME: %[[GAUSSIAN]] : f32, i64, i64, i64, i64, i64, i64)
func.func @gaussian(%q: tensor<1x1x4x8xf32>, %acc: tensor<1x1x4x8xf32>,
                    %m: tensor<1x1x4xf32>, %s: tensor<1x1x4xf32>)
    -> tensor<1x1x4x8xf32> {
  %a:3 = attn.online_attention
      ins(%q, %q, %q : tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32>,
                       tensor<1x1x4x8xf32>)
      outs(%acc, %m, %s : tensor<1x1x4x8xf32>, tensor<1x1x4xf32>,
                          tensor<1x1x4xf32>)
      {similarity = #attn.similarity<gaussian>}
      -> tensor<1x1x4x8xf32>, tensor<1x1x4xf32>, tensor<1x1x4xf32>
  return %a#0 : tensor<1x1x4x8xf32>
}

// -----

// A mask and a bias broadcast to [B, Hq, Sq, Sk] (rank 2 here, expanded
// with leading unit dims) go to the micro-kernel with flags 1 and 2.
// CHECK-LABEL: func.func @mask_and_bias
// CHECK-SAME: %[[MASK:[a-z0-9_]+]]: tensor<1x1x4x4xi1>, %[[BIAS:[a-z0-9_]+]]: tensor<4x4xf32>
// CHECK: attn.ukernel.generic "attn_uk_online_step_f32" ins(%{{.+}}, %{{.+}}, %{{.+}}, %[[MASK]], %{{.+}}, %{{.+}} : {{.*}}, tensor<1x1x4x4xi1>, tensor<1x1x1x1xf32>, tensor<1x1x1x1xf32>) outs({{.*}}) ({{.*}}, %c1_i64 :
// CHECK: %[[BIAS4:.+]] = tensor.expand_shape %[[BIAS]] {{\[\[}}0, 1, 2], [3]] output_shape [1, 1, 4, 4] : tensor<4x4xf32> into tensor<1x1x4x4xf32>
// CHECK: attn.ukernel.generic "attn_uk_online_step_f32" ins(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %[[BIAS4]], %{{.+}} : {{.*}}, tensor<1x1x1x1xi1>, tensor<1x1x4x4xf32>, tensor<1x1x1x1xf32>) outs({{.*}}) ({{.*}}, %c2_i64 :
func.func @mask_and_bias(%q: tensor<1x1x4x8xf32>, %mask: tensor<1x1x4x4xi1>,
                         %bias: tensor<4x4xf32>, %acc: tensor<1x1x4x8xf32>,
                         %m: tensor<1x1x4xf32>, %s: tensor<1x1x4xf32>)
    -> (tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32>) {
  %a:3 = attn.online_attention
      ins(%q, %q, %q : tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32>,
                       tensor<1x1x4x8xf32>)
      mask(%mask : tensor<1x1x4x4xi1>)
      outs(%acc, %m, %s : tensor<1x1x4x8xf32>, tensor<1x1x4xf32>,
                          tensor<1x1x4xf32>)
      -> tensor<1x1x4x8xf32>, tensor<1x1x4xf32>, tensor<1x1x4xf32>
  %b:3 = attn.online_attention
      ins(%q, %q, %q : tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32>,
                       tensor<1x1x4x8xf32>)
      bias(%bias : tensor<4x4xf32>)
      outs(%acc, %m, %s : tensor<1x1x4x8xf32>, tensor<1x1x4xf32>,
                          tensor<1x1x4xf32>)
      -> tensor<1x1x4x8xf32>, tensor<1x1x4xf32>, tensor<1x1x4xf32>
  return %a#0, %b#0 : tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32>
}

// -----

// A mask_mod region is evaluated over the step into an i1 tile the
// micro-kernel reads as its mask (flags 1): [1, Hq, Sq, Sk] here, since the
// region ignores the batch index; indices are the whole problem's
// (linalg.index + the step's offsets).
// CHECK-LABEL: func.func @mask_mod
// CHECK-SAME: %[[QOFF:[a-z0-9_]+]]: index, %[[KVOFF:[a-z0-9_]+]]: index)
// CHECK: %[[EMPTY:.+]] = tensor.empty() : tensor<1x2x4x8xi1>
// CHECK: %[[TILE:.+]] = linalg.generic {{.*}} outs(%[[EMPTY]] : tensor<1x2x4x8xi1>)
// CHECK: %[[H:.+]] = linalg.index 1 : index
// CHECK: %[[I:.+]] = linalg.index 2 : index
// CHECK: %[[IABS:.+]] = arith.addi %[[I]], %[[QOFF]] : index
// CHECK: %[[J:.+]] = linalg.index 3 : index
// CHECK: %[[JABS:.+]] = arith.addi %[[J]], %[[KVOFF]] : index
// CHECK: %[[D:.+]] = arith.subi %[[IABS]], %[[JABS]] : index
// CHECK: %[[VIS:.+]] = arith.cmpi sge, %[[D]], %[[H]] : index
// CHECK: linalg.yield %[[VIS]] : i1
// CHECK: attn.ukernel.generic "attn_uk_online_step_f32" ins(%{{.+}}, %{{.+}}, %{{.+}}, %[[TILE]], %{{.+}}, %{{.+}} : {{.*}}, tensor<1x2x4x8xi1>, tensor<1x1x1x1xf32>, tensor<1x1x1x1xf32>) outs({{.*}}) ({{.*}}, %c1_i64 :
func.func @mask_mod(%q: tensor<1x2x4x16xf32>, %k: tensor<1x2x8x16xf32>,
                    %acc: tensor<1x2x4x16xf32>, %m: tensor<1x2x4xf32>,
                    %s: tensor<1x2x4xf32>, %qoff: index, %kvoff: index)
    -> tensor<1x2x4x16xf32> {
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %a:3 = attn.online_attention
      ins(%q, %k, %k : tensor<1x2x4x16xf32>, tensor<1x2x8x16xf32>,
                       tensor<1x2x8x16xf32>)
      offsets(%c0, %c0, %qoff, %kvoff : index, index, index, index)
      extents(%c16, %c16 : index, index)
      outs(%acc, %m, %s : tensor<1x2x4x16xf32>, tensor<1x2x4xf32>,
                          tensor<1x2x4xf32>)
      mask_mod {
      ^bb0(%bi: index, %h: index, %i: index, %j: index):
        %d = arith.subi %i, %j : index
        %vis = arith.cmpi sge, %d, %h : index
        attn.yield %vis : i1
      }
      -> tensor<1x2x4x16xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>
  return %a#0 : tensor<1x2x4x16xf32>
}

// -----

// Steps the micro-kernel does not implement stay for attn-decompose: kv_lens
// or a mask_mod together with a mask tensor (it takes one i1 tile), an
// additive similarity.
// CHECK-LABEL: func.func @not_lowered
// CHECK-NOT: attn.ukernel.generic
// CHECK-COUNT-3: attn.online_attention
// CHECK-NOT: attn.ukernel.generic
func.func @not_lowered(%q: tensor<1x1x4x8xf32>, %lens: tensor<1xi32>,
                       %mask: tensor<4x4xi1>, %w: tensor<1x8xf32>,
                       %acc: tensor<1x1x4x8xf32>,
                       %m: tensor<1x1x4xf32>, %s: tensor<1x1x4xf32>)
    -> (tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32>) {
  %b:3 = attn.online_attention
      ins(%q, %q, %q : tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32>,
                       tensor<1x1x4x8xf32>)
      mask(%mask : tensor<4x4xi1>) kv_lens(%lens : tensor<1xi32>)
      outs(%acc, %m, %s : tensor<1x1x4x8xf32>, tensor<1x1x4xf32>,
                          tensor<1x1x4xf32>)
      -> tensor<1x1x4x8xf32>, tensor<1x1x4xf32>, tensor<1x1x4xf32>
  %c:3 = attn.online_attention
      ins(%q, %q, %q : tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32>,
                       tensor<1x1x4x8xf32>)
      additive_weight(%w : tensor<1x8xf32>)
      outs(%acc, %m, %s : tensor<1x1x4x8xf32>, tensor<1x1x4xf32>,
                          tensor<1x1x4xf32>)
      {similarity = #attn.similarity<additive>}
      -> tensor<1x1x4x8xf32>, tensor<1x1x4xf32>, tensor<1x1x4xf32>
  %d:3 = attn.online_attention
      ins(%q, %q, %q : tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32>,
                       tensor<1x1x4x8xf32>)
      mask(%mask : tensor<4x4xi1>)
      outs(%acc, %m, %s : tensor<1x1x4x8xf32>, tensor<1x1x4xf32>,
                          tensor<1x1x4xf32>)
      mask_mod {
      ^bb0(%bi: index, %hh: index, %i: index, %j: index):
        %ne = arith.cmpi ne, %i, %j : index
        attn.yield %ne : i1
      }
      -> tensor<1x1x4x8xf32>, tensor<1x1x4xf32>, tensor<1x1x4xf32>
  return %b#0, %c#0, %d#0
      : tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32>
}

// -----

// Run-time masks go into the micro-kernel's i1 tile: kv_lens (local batch
// index), spans and a block mask, whose full blocks override the causal
// band, so the band is evaluated in the tile too and the kernel's own band
// is unbounded.
// CHECK-LABEL: func.func @run_time_masks
// CHECK: %[[TILE:.+]] = linalg.generic
// CHECK: tensor.extract %{{.+}}[%{{.+}}] : tensor<1xi32>
// CHECK: tensor.extract %{{.+}}[%{{.+}}] : tensor<2xi32>
// CHECK: tensor.extract %{{.+}}[%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}] : tensor<1x2x1x1xi8>
// CHECK: } -> tensor<1x2x4x16xi1>
// CHECK: attn.ukernel.generic "attn_uk_online_step_f32" ins(%{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}, %[[TILE]], %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} :
// CHECK-SAME: %c-4611686018427387904_i64, %c4611686018427387904_i64, %c1_i64 : f32
func.func @run_time_masks(%q: tensor<1x2x4x16xf32>, %k: tensor<1x2x16x16xf32>,
                          %lens: tensor<1xi32>, %spans: tensor<2xi32>,
                          %blocks: tensor<1x2x1x1xi8>,
                          %acc: tensor<1x2x4x16xf32>, %m: tensor<1x2x4xf32>,
                          %s: tensor<1x2x4xf32>) -> tensor<1x2x4x16xf32> {
  %a:3 = attn.online_attention
      ins(%q, %k, %k : tensor<1x2x4x16xf32>, tensor<1x2x16x16xf32>,
                       tensor<1x2x16x16xf32>)
      kv_lens(%lens : tensor<1xi32>) spans(%spans : tensor<2xi32>)
      block_mask(%blocks : tensor<1x2x1x1xi8>)
      outs(%acc, %m, %s : tensor<1x2x4x16xf32>, tensor<1x2x4xf32>,
                          tensor<1x2x4xf32>)
      {block_sizes = array<i64: 16, 16>,
       structured_mask = #attn.causal<top_left>}
      -> tensor<1x2x4x16xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>
  return %a#0 : tensor<1x2x4x16xf32>
}

// -----

// A score_mod and a rel_bias run between the products and the softmax: the
// scores micro-kernel writes the scaled products (with the Gaussian
// similarity's flag 4 here) into an f32 [B, Hq, Sq, Sk] tile, one
// linalg.generic applies the region and then adds the bias, in place, and
// the step reads that tile (flag 8) instead of computing scores, so it takes
// no similarity flag itself. The bias depends on j - i alone: a first
// generic gathers the table's bucket of each of the tile's Sq + Sk
// diagonals per head (entry t at j - i = kvoff + t - (qoff + Sq)), and the
// scores read entry j - i + Sq of their head.
// CHECK-LABEL: func.func @modified_scores
// CHECK-SAME: %[[Q:[a-z0-9_]+]]: tensor<1x2x4x16xf32>, %[[K:[a-z0-9_]+]]: tensor<1x2x8x16xf32>, %[[T:[a-z0-9_]+]]: tensor<2x32xf32>
// CHECK-SAME: %[[QOFF:[a-z0-9_]+]]: index, %[[KVOFF:[a-z0-9_]+]]: index)
// CHECK-DAG: %[[SCALE:.+]] = arith.constant 2.500000e-01 : f32
// CHECK-DAG: %[[GAUSSIAN:.+]] = arith.constant 4 : i64
// CHECK-DAG: %[[GIVEN:.+]] = arith.constant 8 : i64
// CHECK-DAG: %[[BHSD:.+]] = arith.constant 0 : i64
// CHECK-DAG: %[[C4:.+]] = arith.constant 4 : index
// CHECK: %[[EMPTY:.+]] = tensor.empty() : tensor<1x2x4x8xf32>
// CHECK: %[[PRODUCTS:.+]] = attn.ukernel.generic "attn_uk_scores_f32" ins(%[[Q]], %[[K]] : tensor<1x2x4x16xf32>, tensor<1x2x8x16xf32>) outs(%[[EMPTY]] : tensor<1x2x4x8xf32>) (%[[SCALE]], %[[BHSD]], %[[GAUSSIAN]] : f32, i64, i64) -> tensor<1x2x4x8xf32>
// CHECK: %[[DIAGEMPTY:.+]] = tensor.empty() : tensor<2x12xf32>
// CHECK: %[[LAST:.+]] = arith.addi %[[QOFF]], %[[C4]] : index
// CHECK: %[[DIAGS:.+]] = linalg.generic {{.*}} outs(%[[DIAGEMPTY]] : tensor<2x12xf32>)
// CHECK: %[[DH:.+]] = linalg.index 0 : index
// CHECK: %[[T0:.+]] = linalg.index 1 : index
// CHECK: %[[JABS:.+]] = arith.addi %[[T0]], %[[KVOFF]] : index
// CHECK: arith.subi %[[JABS]], %[[LAST]] : index
// CHECK: %[[BIAS:.+]] = tensor.extract %[[T]][%[[DH]], %{{.+}}] : tensor<2x32xf32>
// CHECK: linalg.yield %[[BIAS]] : f32
// CHECK: %[[SCORES:.+]] = linalg.generic {{.*}} outs(%[[PRODUCTS]] : tensor<1x2x4x8xf32>)
// CHECK-NEXT: ^bb0(%[[S:.+]]: f32):
// CHECK: %[[CAPPED:.+]] = math.tanh %[[S]] : f32
// CHECK: %[[J:.+]] = linalg.index 3 : index
// CHECK: %[[I:.+]] = linalg.index 2 : index
// CHECK: %[[DIFF:.+]] = arith.subi %[[J]], %[[I]] : index
// CHECK: %[[ENTRY:.+]] = arith.addi %[[DIFF]], %[[C4]] : index
// CHECK: %[[H:.+]] = linalg.index 1 : index
// CHECK: %[[DBIAS:.+]] = tensor.extract %[[DIAGS]][%[[H]], %[[ENTRY]]] : tensor<2x12xf32>
// CHECK: %[[SUM:.+]] = arith.addf %[[CAPPED]], %[[DBIAS]] : f32
// CHECK: linalg.yield %[[SUM]] : f32
// CHECK: attn.ukernel.generic "attn_uk_online_step_f32" ins(%[[Q]], %[[K]], %[[K]], %{{.+}}, %{{.+}}, %[[SCORES]] : {{.*}}, tensor<1x2x4x8xf32>) outs({{.*}}) ({{.*}}, %[[GIVEN]] : f32, i64, i64, i64, i64, i64, i64)
func.func @modified_scores(%q: tensor<1x2x4x16xf32>, %k: tensor<1x2x8x16xf32>,
                           %t: tensor<2x32xf32>, %acc: tensor<1x2x4x16xf32>,
                           %m: tensor<1x2x4xf32>, %s: tensor<1x2x4xf32>,
                           %qoff: index, %kvoff: index)
    -> tensor<1x2x4x16xf32> {
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %a:3 = attn.online_attention
      ins(%q, %k, %k : tensor<1x2x4x16xf32>, tensor<1x2x8x16xf32>,
                       tensor<1x2x8x16xf32>)
      rel_bias(%t : tensor<2x32xf32>)
      offsets(%c0, %c0, %qoff, %kvoff : index, index, index, index)
      extents(%c16, %c16 : index, index)
      outs(%acc, %m, %s : tensor<1x2x4x16xf32>, tensor<1x2x4xf32>,
                          tensor<1x2x4xf32>)
      {relpos = #attn.relpos<buckets = 32, max_distance = 128,
                             bidirectional = true>,
       similarity = #attn.similarity<gaussian>}
      score_mod {
      ^bb0(%score: f32, %bi: index, %h: index, %i: index, %j: index):
        %capped = math.tanh %score : f32
        attn.yield %capped : f32
      }
      -> tensor<1x2x4x16xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>
  return %a#0 : tensor<1x2x4x16xf32>
}

// -----

// A projection's linalg.matmul (f16 inputs, f32 accumulator) becomes an
// scf.forall over tiles of 64 rows (the last one 36), each a call of the
// matmul micro-kernel on its rows of x and acc and all of w, accumulating
// (flags 0). A matmul into f16 has no micro-kernel and stays.
// CHECK-LABEL: func.func @projection
// CHECK-SAME: %[[X:[a-z0-9_]+]]: tensor<100x40xf16>, %[[W:[a-z0-9_]+]]: tensor<40x72xf16>, %[[ACC:[a-z0-9_]+]]: tensor<100x72xf32>
// CHECK: %[[R:.+]] = scf.forall (%[[I:.+]]) = (0) to (100) step (64) shared_outs(%[[O:.+]] = %[[ACC]]) -> (tensor<100x72xf32>)
// CHECK: %[[ROWS:.+]] = affine.min
// CHECK: %[[XS:.+]] = tensor.extract_slice %[[X]][%[[I]], 0] [%[[ROWS]], 40] [1, 1]
// CHECK: %[[OS:.+]] = tensor.extract_slice %[[O]][%[[I]], 0] [%[[ROWS]], 72] [1, 1]
// CHECK: %[[T:.+]] = attn.ukernel.generic "attn_uk_matmul_f16" ins(%[[XS]], %[[W]] : tensor<?x40xf16>, tensor<40x72xf16>) outs(%[[OS]] : tensor<?x72xf32>) (%c0_i64 : i64) -> tensor<?x72xf32>
// CHECK: tensor.parallel_insert_slice %[[T]] into %[[O]][%[[I]], 0] [%[[ROWS]], 72] [1, 1]
// CHECK: linalg.matmul ins(%[[X]], %[[W]] : tensor<100x40xf16>, tensor<40x72xf16>) outs(%{{.+}} : tensor<100x72xf16>)
// CHECK: return %[[R]]
func.func @projection(%x: tensor<100x40xf16>, %w: tensor<40x72xf16>,
                      %acc: tensor<100x72xf32>, %half: tensor<100x72xf16>)
    -> (tensor<100x72xf32>, tensor<100x72xf16>) {
  %0 = linalg.matmul ins(%x, %w : tensor<100x40xf16>, tensor<40x72xf16>)
                     outs(%acc : tensor<100x72xf32>) -> tensor<100x72xf32>
  %1 = linalg.matmul ins(%x, %w : tensor<100x40xf16>, tensor<40x72xf16>)
                     outs(%half : tensor<100x72xf16>) -> tensor<100x72xf16>
  return %0, %1 : tensor<100x72xf32>, tensor<100x72xf16>
}

// -----

// A matmul into a zero fill (as attn-expand-mha writes projections) writes
// the fill's destination instead (flags 1: the micro-kernel overwrites its
// rows), so no fill is left to run.
// CHECK-LABEL: func.func @projection_into_zeros
// CHECK-NOT: linalg.fill
// CHECK: %[[EMPTY:.+]] = tensor.empty() : tensor<128x64xf32>
// CHECK: scf.forall (%{{.+}}) = (0) to (128) step (64) shared_outs(%{{.+}} = %[[EMPTY]])
// CHECK: attn.ukernel.generic "attn_uk_matmul_f32" {{.*}} (%c1_i64 : i64)
// CHECK-NOT: linalg.fill
func.func @projection_into_zeros(%x: tensor<128x32xf32>, %w: tensor<32x64xf32>)
    -> tensor<128x64xf32> {
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<128x64xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%empty : tensor<128x64xf32>)
      -> tensor<128x64xf32>
  %0 = linalg.matmul ins(%x, %w : tensor<128x32xf32>, tensor<32x64xf32>)
                     outs(%acc : tensor<128x64xf32>) -> tensor<128x64xf32>
  return %0 : tensor<128x64xf32>
}
