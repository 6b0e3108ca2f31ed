// RUN: attn-opt %s --attn-expand-additive --canonicalize --cse --split-input-file | FileCheck %s

// GQA, f16: q W_q and k W_k accumulate in f32 over D and return to f16 (the
// projections keep the BHSD layout); the score weights become one f32 row
// per query head; the attention scores additively with scale 1 and keeps
// the mask and kv_lens.
// CHECK-DAG: #[[$ROW:.+]] = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func @gqa
// CHECK-SAME: (%[[Q:[a-z0-9_]+]]: tensor<2x4x16x8xf16>, %[[K:[a-z0-9_]+]]: tensor<2x2x16x8xf16>, %[[V:[a-z0-9_]+]]: tensor<2x2x16x8xf16>, %[[WQ:[a-z0-9_]+]]: tensor<8x32xf16>, %[[WK:[a-z0-9_]+]]: tensor<8x32xf16>, %[[W:[a-z0-9_]+]]: tensor<32xf16>, %[[LENS:[a-z0-9_]+]]: tensor<2xi32>, %[[INIT:[a-z0-9_]+]]: tensor<2x4x16x8xf16>)
// CHECK: %[[QROWS:.+]] = tensor.collapse_shape %[[Q]] {{\[}}[0, 1, 2], [3]] : tensor<2x4x16x8xf16> into tensor<128x8xf16>
// CHECK: %[[QMAT:.+]] = linalg.matmul ins(%[[QROWS]], %[[WQ]] : tensor<128x8xf16>, tensor<8x32xf16>) outs(%{{.+}} : tensor<128x32xf32>)
// CHECK: %[[QACC:.+]] = tensor.expand_shape %[[QMAT]] {{\[}}[0, 1, 2], [3]] output_shape [2, 4, 16, 32]
// CHECK: %[[QA:.+]] = linalg.generic {{.+}} ins(%[[QACC]] : tensor<2x4x16x32xf32>) outs(%{{.+}} : tensor<2x4x16x32xf16>)
// CHECK: arith.truncf
// CHECK: %[[KROWS:.+]] = tensor.collapse_shape %[[K]]
// CHECK: %[[KMAT:.+]] = linalg.matmul ins(%[[KROWS]], %[[WK]] : tensor<64x8xf16>, tensor<8x32xf16>)
// CHECK: %[[KACC:.+]] = tensor.expand_shape %[[KMAT]]
// CHECK: %[[KA:.+]] = linalg.generic {{.+}} ins(%[[KACC]] : tensor<2x2x16x32xf32>) outs(%{{.+}} : tensor<2x2x16x32xf16>)
// CHECK: %[[TABLE:.+]] = linalg.generic {indexing_maps = [#[[$ROW]], {{.+}}], {{.+}} ins(%[[W]] : tensor<32xf16>) outs(%{{.+}} : tensor<4x32xf32>)
// CHECK: arith.extf
// CHECK: %[[OUT:.+]] = attn.attention ins(%[[QA]], %[[KA]], %[[V]] : tensor<2x4x16x32xf16>, tensor<2x2x16x32xf16>, tensor<2x2x16x8xf16>) additive_weight(%[[TABLE]] : tensor<4x32xf32>) kv_lens(%[[LENS]] : tensor<2xi32>) outs(%[[INIT]] : tensor<2x4x16x8xf16>) {scale = 1.000000e+00 : f32, similarity = #attn.similarity<additive>, structured_mask = #attn.causal<top_left>}
// CHECK: return %[[OUT]]
func.func @gqa(%q: tensor<2x4x16x8xf16>, %k: tensor<2x2x16x8xf16>,
               %v: tensor<2x2x16x8xf16>, %wq: tensor<8x32xf16>,
               %wk: tensor<8x32xf16>, %w: tensor<32xf16>,
               %lens: tensor<2xi32>, %o: tensor<2x4x16x8xf16>)
    -> tensor<2x4x16x8xf16> {
  %0 = attn.additive_attention
      ins(%q, %k, %v : tensor<2x4x16x8xf16>, tensor<2x2x16x8xf16>,
                       tensor<2x2x16x8xf16>)
      weights(%wq, %wk, %w : tensor<8x32xf16>, tensor<8x32xf16>,
                             tensor<32xf16>)
      kv_lens(%lens : tensor<2xi32>) outs(%o : tensor<2x4x16x8xf16>)
      {structured_mask = #attn.causal<top_left>} -> tensor<2x4x16x8xf16>
  return %0 : tensor<2x4x16x8xf16>
}

// -----

// A given scale is kept; dynamic heads size the table at run time.
// CHECK-LABEL: func.func @scaled
// CHECK: %[[H:.+]] = tensor.dim %{{.+}}, %c1 : tensor<1x?x8x4xf32>
// CHECK: tensor.empty(%[[H]]) : tensor<?x16xf32>
// CHECK: attn.attention {{.+}} {scale = 5.000000e-01 : f32, similarity = #attn.similarity<additive>}
func.func @scaled(%q: tensor<1x?x8x4xf32>, %wq: tensor<4x16xf32>,
                  %w: tensor<16xf32>, %o: tensor<1x?x8x4xf32>)
    -> tensor<1x?x8x4xf32> {
  %0 = attn.additive_attention
      ins(%q, %q, %q : tensor<1x?x8x4xf32>, tensor<1x?x8x4xf32>,
                       tensor<1x?x8x4xf32>)
      weights(%wq, %wq, %w : tensor<4x16xf32>, tensor<4x16xf32>,
                             tensor<16xf32>)
      outs(%o : tensor<1x?x8x4xf32>) {scale = 0.5 : f32}
      -> tensor<1x?x8x4xf32>
  return %0 : tensor<1x?x8x4xf32>
}
