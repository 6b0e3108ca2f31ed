// RUN: not attn-opt %s --transform-interpreter --split-input-file 2>&1 | FileCheck %s

// With GQA, attn.online_attention tiles its query heads only in whole groups
// (here G = 2): a tile of one query head is refused with a diagnostic.
// CHECK: error: 'attn.online_attention' op can only tile query heads in whole groups of 2 (GQA)

// With GQA, query heads tile only in whole groups (here G = 2).
func.func @gqa_half_group(%q: tensor<1x4x8x8xf32>, %k: tensor<1x2x8x8xf32>,
                          %acc: tensor<1x4x8x8xf32>, %m: tensor<1x4x8xf32>,
                          %s: tensor<1x4x8xf32>)
    -> (tensor<1x4x8x8xf32>, tensor<1x4x8xf32>, tensor<1x4x8xf32>) {
  %r:3 = attn.online_attention
      ins(%q, %k, %k : tensor<1x4x8x8xf32>, tensor<1x2x8x8xf32>,
                       tensor<1x2x8x8xf32>)
      outs(%acc, %m, %s : tensor<1x4x8x8xf32>, tensor<1x4x8xf32>,
                          tensor<1x4x8xf32>)
      -> tensor<1x4x8x8xf32>, tensor<1x4x8xf32>, tensor<1x4x8xf32>
  return %r#0, %r#1, %r#2
      : tensor<1x4x8x8xf32>, tensor<1x4x8xf32>, tensor<1x4x8xf32>
}

module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %op = transform.structured.match ops{["attn.online_attention"]} in %root
        : (!transform.any_op) -> !transform.any_op
    %tiled, %loops = transform.structured.tile_using_for %op
        tile_sizes [0, 1]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    transform.yield
  }
}

// -----

// Split-K splits the keys into parallel ranges; the outer-reduction strategy
// (tile_reduction_using_for) would need a partial per key of a tile.
// CHECK: error: 'attn.online_attention' op splits its keys only into parallel ranges (tile_reduction_using_forall)
func.func @outer_reduction(%q: tensor<1x2x8x8xf32>, %k: tensor<1x2x64x8xf32>,
                           %acc: tensor<1x2x8x8xf32>, %m: tensor<1x2x8xf32>,
                           %s: tensor<1x2x8xf32>)
    -> (tensor<1x2x8x8xf32>, tensor<1x2x8xf32>, tensor<1x2x8xf32>) {
  %r:3 = attn.online_attention
      ins(%q, %k, %k : tensor<1x2x8x8xf32>, tensor<1x2x64x8xf32>,
                       tensor<1x2x64x8xf32>)
      outs(%acc, %m, %s : tensor<1x2x8x8xf32>, tensor<1x2x8xf32>,
                          tensor<1x2x8xf32>)
      -> tensor<1x2x8x8xf32>, tensor<1x2x8xf32>, tensor<1x2x8xf32>
  return %r#0, %r#1, %r#2
      : tensor<1x2x8x8xf32>, tensor<1x2x8xf32>, tensor<1x2x8xf32>
}

module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %op = transform.structured.match ops{["attn.online_attention"]} in %root
        : (!transform.any_op) -> !transform.any_op
    %handles:8 = transform.structured.tile_reduction_using_for %op
        by tile_sizes = [0, 0, 0, 16]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op,
                                  !transform.any_op, !transform.any_op,
                                  !transform.any_op, !transform.any_op,
                                  !transform.any_op, !transform.any_op)
    transform.yield
  }
}
