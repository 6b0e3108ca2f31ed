// RUN: attn-opt %s --transform-interpreter --canonicalize --cse | FileCheck %s

// attn.online_attention implements TilingInterface over (b, h, i, j): batch,
// query heads, queries (parallel) and keys (the reduction, carried through
// the loop in the outs). In BSHD, operands are sliced in their own dim
// order; a mask broadcast over heads keeps its head dim whole; kv_lens is
// sliced by batch; the tile's offsets are added to the op's own.
// CHECK-LABEL: func.func @bshd_mask_lens
// CHECK-SAME: %[[Q:[a-z0-9_]+]]: tensor<2x32x4x8xf32>, %[[K:[a-z0-9_]+]]: tensor<2x48x4x8xf32>, %[[MASK:[a-z0-9_]+]]: tensor<2x1x32x48xi1>, %[[LENS:[a-z0-9_]+]]: tensor<2xi32>
// CHECK-SAME: %[[QOFF:[a-z0-9_]+]]: index
// CHECK: scf.for %[[B:.+]] = %{{.+}} to %{{.+}} step %c1
// CHECK: scf.for %[[I:.+]] = %{{.+}} to %{{.+}} step %c8
// CHECK: scf.for %[[J:.+]] = %{{.+}} to %{{.+}} step %c16
// CHECK-DAG: %[[QT:.+]] = tensor.extract_slice %[[Q]][%[[B]], %[[I]], 0, 0] [1, 8, 4, 8]
// CHECK-DAG: %[[KT:.+]] = tensor.extract_slice %[[K]][%[[B]], %[[J]], 0, 0] [1, 16, 4, 8]
// CHECK-DAG: %[[MT:.+]] = tensor.extract_slice %[[MASK]][%[[B]], 0, %[[I]], %[[J]]] [1, 1, 8, 16]
// CHECK-DAG: %[[LT:.+]] = tensor.extract_slice %[[LENS]][%[[B]]] [1]
// CHECK-DAG: %[[QPOS:.+]] = arith.addi %[[QOFF]], %[[I]] : index
// CHECK: attn.online_attention ins(%[[QT]], %[[KT]], %[[KT]] : {{.*}}) mask(%[[MT]] : tensor<1x1x8x16xi1>) kv_lens(%[[LT]] : tensor<1xi32>) offsets(%[[B]], %c0, %[[QPOS]], %[[J]] : index, index, index, index) extents(%c100, %c48 : index, index) outs({{.*}} : tensor<1x8x4x8xf32>, tensor<1x4x8xf32>, tensor<1x4x8xf32>)
// CHECK-SAME: score_mod
// CHECK: math.tanh
func.func @bshd_mask_lens(%q: tensor<2x32x4x8xf32>, %k: tensor<2x48x4x8xf32>,
                          %mask: tensor<2x1x32x48xi1>, %lens: tensor<2xi32>,
                          %acc: tensor<2x32x4x8xf32>, %m: tensor<2x4x32xf32>,
                          %s: tensor<2x4x32xf32>, %qoff: index)
    -> (tensor<2x32x4x8xf32>, tensor<2x4x32xf32>, tensor<2x4x32xf32>) {
  %c0 = arith.constant 0 : index
  %c48 = arith.constant 48 : index
  %c100 = arith.constant 100 : index
  %r:3 = attn.online_attention
      ins(%q, %k, %k : tensor<2x32x4x8xf32>, tensor<2x48x4x8xf32>,
                       tensor<2x48x4x8xf32>)
      mask(%mask : tensor<2x1x32x48xi1>) kv_lens(%lens : tensor<2xi32>)
      offsets(%c0, %c0, %qoff, %c0 : index, index, index, index)
      extents(%c100, %c48 : index, index)
      outs(%acc, %m, %s : tensor<2x32x4x8xf32>, tensor<2x4x32xf32>,
                          tensor<2x4x32xf32>)
      {layout = #attn.layout<bshd>}
      score_mod {
      ^bb0(%score: f32, %bi: index, %h: index, %i: index, %j: index):
        %t = math.tanh %score : f32
        attn.yield %t : f32
      }
      -> tensor<2x32x4x8xf32>, tensor<2x4x32xf32>, tensor<2x4x32xf32>
  return %r#0, %r#1, %r#2
      : tensor<2x32x4x8xf32>, tensor<2x4x32xf32>, tensor<2x4x32xf32>
}

module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %op = transform.structured.match ops{["attn.online_attention"]} in %root
        : (!transform.any_op) -> !transform.any_op
    %tiled, %loops:3 = transform.structured.tile_using_for %op
        tile_sizes [1, 0, 8, 16]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op,
                                  !transform.any_op, !transform.any_op)
    transform.yield
  }
}
