// RUN: attn-opt %s --attn-expand-mha --split-input-file | FileCheck %s

// GQA with projection biases and f16 activations: three projections that
// accumulate in f32 (a linalg.matmul over the [B S, E] rows into zeros),
// a split into heads, one BSHD attention, the merge of heads and the output
// projection writing into the op's init.
// CHECK-DAG: #[[$BIAS:.+]] = affine_map<(d0, d1, d2) -> (d2)>
// CHECK-LABEL: func.func @gqa_biases
// CHECK-SAME: (%[[X:[a-z0-9_]+]]: tensor<2x16x64xf16>, %[[WQ:[a-z0-9_]+]]: tensor<64x64xf16>, %[[WK:[a-z0-9_]+]]: tensor<64x32xf16>, %[[WV:[a-z0-9_]+]]: tensor<64x32xf16>, %[[WO:[a-z0-9_]+]]: tensor<64x64xf16>, %[[BQ:[a-z0-9_]+]]: tensor<64xf16>, %{{[a-z0-9_]+}}: tensor<32xf16>, %{{[a-z0-9_]+}}: tensor<32xf16>, %[[BO:[a-z0-9_]+]]: tensor<64xf16>, %[[INIT:[a-z0-9_]+]]: tensor<2x16x64xf32>)
// CHECK: %[[ACCROWS:.+]] = tensor.collapse_shape %{{.+}} {{\[}}[0, 1], [2]] : tensor<2x16x64xf32> into tensor<32x64xf32>
// CHECK: %[[ZERO:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%[[ACCROWS]] : tensor<32x64xf32>)
// CHECK: %[[XROWS:.+]] = tensor.collapse_shape %[[X]] {{\[}}[0, 1], [2]] : tensor<2x16x64xf16> into tensor<32x64xf16>
// CHECK: %[[QMAT:.+]] = linalg.matmul ins(%[[XROWS]], %[[WQ]] : tensor<32x64xf16>, tensor<64x64xf16>) outs(%[[ZERO]] : tensor<32x64xf32>)
// CHECK: %[[QACC:.+]] = tensor.expand_shape %[[QMAT]] {{\[}}[0, 1], [2]] output_shape [2, 16, 64]
// CHECK: %[[QPROJ:.+]] = linalg.generic {{.+}} ins(%[[QACC]], %[[BQ]] : tensor<2x16x64xf32>, tensor<64xf16>) outs(%{{.+}} : tensor<2x16x64xf16>)
// CHECK: arith.truncf
// CHECK: %[[Q:.+]] = tensor.expand_shape %[[QPROJ]] {{\[}}[0], [1], [2, 3]] output_shape [2, 16, 4, 16]
// CHECK: %[[K:.+]] = tensor.expand_shape %{{.+}} output_shape [2, 16, 2, 16]
// CHECK: %[[V:.+]] = tensor.expand_shape %{{.+}} output_shape [2, 16, 2, 16]
// CHECK: %[[ATTN:.+]] = attn.attention ins(%[[Q]], %[[K]], %[[V]] : tensor<2x16x4x16xf16>, tensor<2x16x2x16xf16>, tensor<2x16x2x16xf16>)
// CHECK-SAME: {layout = #attn.layout<bshd>, scale = 2.500000e-01 : f32, structured_mask = #attn.causal<top_left>}
// CHECK: %[[MERGED:.+]] = tensor.collapse_shape %[[ATTN]] {{\[}}[0], [1], [2, 3]] : tensor<2x16x4x16xf16> into tensor<2x16x64xf16>
// CHECK: %[[MROWS:.+]] = tensor.collapse_shape %[[MERGED]]
// CHECK: %[[OMAT:.+]] = linalg.matmul ins(%[[MROWS]], %[[WO]] :
// CHECK: %[[OACC:.+]] = tensor.expand_shape %[[OMAT]]
// CHECK: %[[OUT:.+]] = linalg.generic {indexing_maps = [{{.+}}, #[[$BIAS]], {{.+}}]{{.+}} ins(%[[OACC]], %[[BO]] : tensor<2x16x64xf32>, tensor<64xf16>) outs(%[[INIT]] : tensor<2x16x64xf32>)
// CHECK: return %[[OUT]]
func.func @gqa_biases(%x: tensor<2x16x64xf16>, %wq: tensor<64x64xf16>,
                      %wk: tensor<64x32xf16>, %wv: tensor<64x32xf16>,
                      %wo: tensor<64x64xf16>, %bq: tensor<64xf16>,
                      %bk: tensor<32xf16>, %bv: tensor<32xf16>,
                      %bo: tensor<64xf16>, %init: tensor<2x16x64xf32>)
    -> tensor<2x16x64xf32> {
  %0 = attn.multi_head_attention
      ins(%x, %x, %x : tensor<2x16x64xf16>, tensor<2x16x64xf16>,
                       tensor<2x16x64xf16>)
      weights(%wq, %wk, %wv, %wo : tensor<64x64xf16>, tensor<64x32xf16>,
                                   tensor<64x32xf16>, tensor<64x64xf16>)
      proj_biases(%bq, %bk, %bv, %bo : tensor<64xf16>, tensor<32xf16>,
                                       tensor<32xf16>, tensor<64xf16>)
      outs(%init : tensor<2x16x64xf32>)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, scale = 0.25 : f32,
       structured_mask = #attn.causal<top_left>}
      -> tensor<2x16x64xf32>
  return %0 : tensor<2x16x64xf32>
}

// -----

// Dynamic batch and sequence lengths flow into the reshapes; the masks and
// the score_mod region move onto the attention unchanged. Rows with two
// dynamic sizes are not flattened into a matmul (MLIR 22 cannot lower the
// expand_shape back): the projection is a linalg.generic contraction.
// CHECK-LABEL: func.func @dynamic_with_mods
// CHECK-SAME: (%[[X:[a-z0-9_]+]]: tensor<?x?x32xf32>, %{{[a-z0-9_]+}}: tensor<?x?x32xf32>
// CHECK-SAME: %[[MASK:[a-z0-9_]+]]: tensor<?x?xi1>, %[[LENS:[a-z0-9_]+]]: tensor<?xi32>
// CHECK-NOT: linalg.matmul
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%[[X]], %{{.+}} : tensor<?x?x32xf32>, tensor<32x32xf32>)
// CHECK: tensor.expand_shape %{{.+}} {{\[}}[0], [1], [2, 3]] output_shape [%{{.+}}, %{{.+}}, 2, 16] : tensor<?x?x32xf32> into tensor<?x?x2x16xf32>
// CHECK: attn.attention
// CHECK-SAME: mask(%[[MASK]] : tensor<?x?xi1>) kv_lens(%[[LENS]] : tensor<?xi32>)
// CHECK-SAME: score_mod {
// CHECK: math.tanh
// CHECK: attn.yield
// CHECK: -> tensor<?x?x2x16xf32>
// CHECK-NOT: attn.multi_head_attention
func.func @dynamic_with_mods(%x: tensor<?x?x32xf32>, %y: tensor<?x?x32xf32>,
                             %w: tensor<32x32xf32>, %m: tensor<?x?xi1>,
                             %l: tensor<?xi32>, %init: tensor<?x?x32xf32>)
    -> tensor<?x?x32xf32> {
  %0 = attn.multi_head_attention
      ins(%x, %y, %y : tensor<?x?x32xf32>, tensor<?x?x32xf32>,
                       tensor<?x?x32xf32>)
      weights(%w, %w, %w, %w : tensor<32x32xf32>, tensor<32x32xf32>,
                               tensor<32x32xf32>, tensor<32x32xf32>)
      mask(%m : tensor<?x?xi1>) kv_lens(%l : tensor<?xi32>)
      outs(%init : tensor<?x?x32xf32>) {num_heads = 2 : i64}
      score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
        %t = math.tanh %s : f32
        attn.yield %t : f32
      }
      -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

// Expanding and then canonicalizing folds the casts that dynamic widths
// introduce into the new attention (this used to crash).
// RUN: attn-opt %s --attn-expand-mha --canonicalize --split-input-file | FileCheck %s --check-prefix=CANON
// CHECK-LABEL: func.func @dynamic_width
// CANON-LABEL: func.func @dynamic_width
// CANON: attn.attention
// CANON-NOT: attn.multi_head_attention
func.func @dynamic_width(%x: tensor<1x2x4xf32>, %w: tensor<4x4xf32>,
                         %wv: tensor<4x?xf32>, %b: tensor<4xf32>)
    -> tensor<1x2x4xf32> {
  %0 = attn.multi_head_attention
      ins(%x, %x, %x : tensor<1x2x4xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>)
      weights(%w, %w, %wv, %w : tensor<4x4xf32>, tensor<4x4xf32>,
                                tensor<4x?xf32>, tensor<4x4xf32>)
      proj_biases(%b, %b, %b, %b : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>,
                                   tensor<4xf32>)
      outs(%x : tensor<1x2x4xf32>) {num_heads = 1 : i64} -> tensor<1x2x4xf32>
  return %0 : tensor<1x2x4xf32>
}
