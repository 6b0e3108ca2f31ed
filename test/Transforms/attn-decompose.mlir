// RUN: attn-opt %s --attn-decompose --canonicalize --cse --split-input-file | FileCheck %s

// GQA 4:1, bottom-right causal, f16 in, f32 out. Query heads split into
// [Hkv, G] so every map is a projected permutation; the steps are S = QK^T,
// scale + mask, row max, exp, row sum, PV and the normalization.
// CHECK-DAG: #[[$Q:.+]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3, d5)>
// CHECK-DAG: #[[$K:.+]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d4, d5)>
// CHECK-DAG: #[[$S:.+]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3, d4)>
// CHECK-DAG: #[[$ID5:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>
// CHECK-DAG: #[[$ROW:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>
// CHECK-DAG: #[[$V:.+]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d5, d4)>
// CHECK-LABEL: func.func @gqa_causal_bottom_right
// CHECK-SAME: (%[[QA:[a-z0-9_]+]]: tensor<2x8x16x32xf16>, %[[KA:[a-z0-9_]+]]: tensor<2x2x24x32xf16>, %[[VA:[a-z0-9_]+]]: tensor<2x2x24x16xf16>, %[[OA:[a-z0-9_]+]]: tensor<2x8x16x16xf32>)
// CHECK-DAG: %[[SHIFT:.+]] = arith.constant 8 : index
// CHECK-DAG: %[[NEGINF:.+]] = arith.constant 0xFF800000 : f32
// CHECK-DAG: %[[SCALE:.+]] = arith.constant 0.176776692 : f32
// CHECK-DAG: %[[ZERO:.+]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[Q:.+]] = tensor.expand_shape %[[QA]] {{\[}}[0], [1, 2], [3], [4]] output_shape [2, 2, 4, 16, 32]
// CHECK: %[[QK:.+]] = linalg.generic {indexing_maps = [#[[$Q]], #[[$K]], #[[$S]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%[[Q]], %[[KA]] : {{.*}}) outs(%{{.+}} : tensor<2x2x4x16x24xf32>)
// CHECK: arith.extf
// Sums may be reassociated and contracted into FMAs, so LLVM vectorizes them.
// CHECK: %[[QKPROD:.+]] = arith.mulf %{{.+}}, %{{.+}} fastmath<reassoc,contract> : f32
// CHECK: arith.addf %[[QKPROD]], %{{.+}} fastmath<reassoc,contract> : f32
// CHECK: %[[MASKED:.+]] = linalg.generic {indexing_maps = [#[[$ID5]], #[[$ID5]]], {{.*}} ins(%[[QK]] :
// CHECK-DAG: %[[I:.+]] = linalg.index 3 : index
// CHECK-DAG: %[[J:.+]] = linalg.index 4 : index
// CHECK: %[[SCALED:.+]] = arith.mulf %{{.+}}, %[[SCALE]] : f32
// CHECK: %[[POS:.+]] = arith.addi %[[I]], %[[SHIFT]] : index
// CHECK: %[[VIS:.+]] = arith.cmpi sle, %[[J]], %[[POS]] : index
// CHECK: arith.select %[[VIS]], %[[SCALED]], %[[NEGINF]] : f32
// CHECK: %[[MAX:.+]] = linalg.generic {indexing_maps = [#[[$ID5]], #[[$ROW]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%[[MASKED]] :
// CHECK: arith.maximumf
// CHECK: %[[P:.+]] = linalg.generic {{.*}} ins(%[[MASKED]], %[[MAX]] :
// CHECK: ^bb0(%[[SIN:.+]]: f32, %[[MIN:.+]]: f32, %{{.+}}: f32):
// CHECK: %[[E:.+]] = math.exp
// A row whose keys are all hidden has max -inf: its weights are 0, not NaN.
// CHECK: %[[EMPTY:.+]] = arith.cmpf oeq, %[[MIN]], %[[NEGINF]] : f32
// CHECK: arith.select %[[EMPTY]], %[[ZERO]], %[[E]] : f32
// CHECK: %[[SUM:.+]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%[[P]] :
// CHECK: %[[PV:.+]] = linalg.generic {indexing_maps = [#[[$Q]], #[[$V]], #[[$S]]], {{.*}} ins(%[[P]], %[[VA]] :
// CHECK: %[[OUT5:.+]] = tensor.expand_shape %[[OA]] {{\[}}[0], [1, 2], [3], [4]]
// CHECK: %[[NORM:.+]] = linalg.generic {{.*}} ins(%[[PV]], %[[SUM]] : {{.*}}) outs(%[[OUT5]] :
// CHECK: %[[POSITIVE:.+]] = arith.cmpf ogt
// CHECK: arith.select %[[POSITIVE]]
// CHECK: %[[RESULT:.+]] = tensor.collapse_shape %[[NORM]] {{\[}}[0], [1, 2], [3], [4]] : tensor<2x2x4x16x16xf32> into tensor<2x8x16x16xf32>
// CHECK: return %[[RESULT]]
func.func @gqa_causal_bottom_right(%q: tensor<2x8x16x32xf16>,
    %k: tensor<2x2x24x32xf16>, %v: tensor<2x2x24x16xf16>,
    %o: tensor<2x8x16x16xf32>) -> tensor<2x8x16x16xf32> {
  %0 = attn.attention ins(%q, %k, %v : tensor<2x8x16x32xf16>,
                          tensor<2x2x24x32xf16>, tensor<2x2x24x16xf16>)
      outs(%o : tensor<2x8x16x16xf32>)
      {structured_mask = #attn.causal<bottom_right>} -> tensor<2x8x16x16xf32>
  return %0 : tensor<2x8x16x16xf32>
}

// -----

// BSHD is read in place; the window, the i1 mask, the bias and kv_lens all
// feed the same select, and the regions are inlined with h = hk * G + g.
// CHECK-DAG: #[[$BSHD_Q:.+]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d3, d1, d2, d5)>
// CHECK-DAG: #[[$BIAS:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d3, d4)>
// CHECK-DAG: #[[$MASK:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (0, 0, d3, d4)>
// CHECK-DAG: #[[$LENS:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d0)>
// CHECK-LABEL: func.func @bshd_everything
// CHECK: linalg.generic {indexing_maps = [#[[$BSHD_Q]],
// CHECK: linalg.generic {indexing_maps = [{{.+}}, #[[$BIAS]], #[[$MASK]], #[[$LENS]], {{.+}}]
// CHECK: ^bb0(%{{.+}}: f32, %[[B:.+]]: f32, %[[M:.+]]: i1, %[[LEN:.+]]: i32, %{{.+}}: f32):
// CHECK-DAG: %[[HK:.+]] = linalg.index 1 : index
// CHECK-DAG: %[[G:.+]] = linalg.index 2 : index
// CHECK: %[[HKG:.+]] = arith.muli %[[HK]], %{{.+}} : index
// CHECK: %[[H:.+]] = arith.addi %[[HKG]], %[[G]] : index
// CHECK: %[[HI:.+]] = arith.index_cast %[[H]] : index to i32
// CHECK: math.tanh
// CHECK: arith.addf %{{.+}}, %[[B]] : f32
// CHECK: arith.andi %{{.+}}, %[[M]] : i1
// CHECK: %[[LENX:.+]] = arith.index_cast %[[LEN]] : i32 to index
// CHECK: arith.cmpi slt, %{{.+}}, %[[LENX]] : index
// CHECK: arith.cmpi ne
// CHECK: arith.select
func.func @bshd_everything(%q: tensor<1x16x4x8xf32>, %k: tensor<1x16x2x8xf32>,
    %m: tensor<1x1x16x16xi1>, %b: tensor<16x16xf32>, %l: tensor<1xi32>,
    %o: tensor<1x16x4x8xf32>) -> tensor<1x16x4x8xf32> {
  %0 = attn.attention ins(%q, %k, %k : tensor<1x16x4x8xf32>,
                          tensor<1x16x2x8xf32>, tensor<1x16x2x8xf32>)
      mask(%m : tensor<1x1x16x16xi1>) bias(%b : tensor<16x16xf32>)
      kv_lens(%l : tensor<1xi32>) outs(%o : tensor<1x16x4x8xf32>)
      {layout = #attn.layout<bshd>,
       structured_mask = #attn.sliding_window<left = 3, right = 1>}
      score_mod {
      ^bb0(%s: f32, %bi: index, %h: index, %i: index, %j: index):
        %hi = arith.index_cast %h : index to i32
        %hf = arith.sitofp %hi : i32 to f32
        %t = math.tanh %s : f32
        %r = arith.addf %t, %hf : f32
        attn.yield %r : f32
      }
      mask_mod {
      ^bb0(%bi: index, %h: index, %i: index, %j: index):
        %ne = arith.cmpi ne, %i, %j : index
        attn.yield %ne : i1
      } -> tensor<1x16x4x8xf32>
  return %0 : tensor<1x16x4x8xf32>
}

// -----

// Dynamic head counts: the group count is unknown, so each query head gets
// its own copy of its key/value head (a gather), and G is 1.
// CHECK-LABEL: func.func @dynamic_heads
// CHECK-SAME: (%[[QA:[a-z0-9_]+]]: tensor<1x?x8x4xf32>, %[[KA:[a-z0-9_]+]]: tensor<1x?x8x4xf32>
// CHECK-DAG: %[[HQ:.+]] = tensor.dim %[[QA]], %{{.+}} : tensor<1x?x8x4xf32>
// CHECK-DAG: %[[HKV:.+]] = tensor.dim %[[KA]], %{{.+}} : tensor<1x?x8x4xf32>
// CHECK: %[[GROUPS:.+]] = arith.divui %[[HQ]], %[[HKV]] : index
// CHECK: %[[KREP:.+]] = linalg.generic {{.*}} outs(%{{.+}} : tensor<1x?x8x4xf32>)
// CHECK: %[[H:.+]] = linalg.index 1 : index
// CHECK: %[[KVH:.+]] = arith.divui %[[H]], %[[GROUPS]] : index
// CHECK: tensor.extract %[[KA]][%{{.+}}, %[[KVH]], %{{.+}}, %{{.+}}] : tensor<1x?x8x4xf32>
// CHECK: tensor.expand_shape %[[QA]] {{\[}}[0], [1, 2], [3], [4]] output_shape [1, %[[HQ]], 1, 8, 4]
// CHECK: linalg.generic {{.*}} ins(%{{.+}}, %[[KREP]] :
func.func @dynamic_heads(%q: tensor<1x?x8x4xf32>, %k: tensor<1x?x8x4xf32>,
    %o: tensor<1x?x8x4xf32>) -> tensor<1x?x8x4xf32> {
  %0 = attn.attention ins(%q, %k, %k : tensor<1x?x8x4xf32>,
                          tensor<1x?x8x4xf32>, tensor<1x?x8x4xf32>)
      outs(%o : tensor<1x?x8x4xf32>) -> tensor<1x?x8x4xf32>
  return %0 : tensor<1x?x8x4xf32>
}

// -----

// One online step: masks see whole-problem positions (kv offset added to j;
// the bottom-right shift is extents Sk - Sq = 32 - 8), the old statistics
// shrink by exp(max - max') (0 while every key so far was hidden), and the
// tile's P V accumulates onto the rescaled acc.
// CHECK-LABEL: func.func @online_step
// CHECK-SAME: %[[ACC:[a-z0-9_]+]]: tensor<1x4x8x16xf32>, %[[MAX:[a-z0-9_]+]]: tensor<1x4x8xf32>, %[[SUM:[a-z0-9_]+]]: tensor<1x4x8xf32>, %[[KV0:[a-z0-9_]+]]: index
// CHECK-DAG: %[[SHIFT:.+]] = arith.constant 24 : index
// CHECK-DAG: %[[NEGINF:.+]] = arith.constant 0xFF800000 : f32
// CHECK-DAG: %[[ZERO:.+]] = arith.constant 0.000000e+00 : f32
// CHECK: linalg.generic
// CHECK: %[[J:.+]] = linalg.index 4 : index
// CHECK: %[[JABS:.+]] = arith.addi %[[J]], %[[KV0]] : index
// CHECK: %[[POS:.+]] = arith.addi %{{.+}}, %[[SHIFT]] : index
// CHECK: arith.cmpi sle, %[[JABS]], %[[POS]] : index
// CHECK: %[[TILEMAX:.+]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]
// CHECK-DAG: %[[OLDMAX:.+]] = tensor.expand_shape %[[MAX]] {{\[}}[0], [1, 2], [3]]
// CHECK-DAG: %[[OLDSUM:.+]] = tensor.expand_shape %[[SUM]] {{\[}}[0], [1, 2], [3]]
// CHECK-DAG: %[[OLDACC:.+]] = tensor.expand_shape %[[ACC]] {{\[}}[0], [1, 2], [3], [4]]
// CHECK: %[[CORR:.+]] = linalg.generic {{.*}} ins(%[[TILEMAX]], %[[OLDMAX]] :
// CHECK: ^bb0(%[[TM:.+]]: f32, %[[OM:.+]]: f32, %{{.+}}: f32):
// CHECK: %[[NM:.+]] = arith.maximumf %[[TM]], %[[OM]] : f32
// CHECK: %[[D:.+]] = arith.subf %[[OM]], %[[NM]] : f32
// CHECK: %[[E:.+]] = math.exp %[[D]] : f32
// CHECK: %[[NONE:.+]] = arith.cmpf oeq, %[[NM]], %[[NEGINF]] : f32
// CHECK: arith.select %[[NONE]], %[[ZERO]], %[[E]] : f32
// CHECK: %[[NEWMAX:.+]] = linalg.generic {{.*}} ins(%[[TILEMAX]], %[[OLDMAX]] : {{.*}}) outs(%[[OLDMAX]] :
// CHECK: %[[P:.+]] = linalg.generic {{.*}} ins(%{{.+}}, %[[NEWMAX]] :
// CHECK: %[[SCALEDSUM:.+]] = linalg.generic {{.*}} ins(%[[OLDSUM]], %[[CORR]] : {{.*}}) outs(%[[OLDSUM]] :
// CHECK: %[[NEWSUM:.+]] = linalg.generic {{.*}} ins(%[[P]] : {{.*}}) outs(%[[SCALEDSUM]] :
// CHECK: %[[SCALEDACC:.+]] = linalg.generic {{.*}} ins(%[[OLDACC]], %[[CORR]] : {{.*}}) outs(%[[OLDACC]] :
// CHECK: %[[NEWACC:.+]] = linalg.generic {{.*}} ins(%[[P]], %{{.+}} : {{.*}}) outs(%[[SCALEDACC]] :
// CHECK-DAG: %[[R0:.+]] = tensor.collapse_shape %[[NEWACC]]
// CHECK-DAG: %[[R1:.+]] = tensor.collapse_shape %[[NEWMAX]]
// CHECK-DAG: %[[R2:.+]] = tensor.collapse_shape %[[NEWSUM]]
// CHECK: return %[[R0]], %[[R1]], %[[R2]]
func.func @online_step(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x4x16xf32>,
    %acc: tensor<1x4x8x16xf32>, %max: tensor<1x4x8xf32>,
    %sum: tensor<1x4x8xf32>, %kv0: index)
    -> (tensor<1x4x8x16xf32>, tensor<1x4x8xf32>, tensor<1x4x8xf32>) {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %c32 = arith.constant 32 : index
  %r:3 = attn.online_attention ins(%q, %k, %k : tensor<1x4x8x16xf32>,
                                   tensor<1x2x4x16xf32>, tensor<1x2x4x16xf32>)
      offsets(%c0, %c0, %c0, %kv0 : index, index, index, index)
      extents(%c8, %c32 : index, index)
      outs(%acc, %max, %sum : tensor<1x4x8x16xf32>, tensor<1x4x8xf32>,
                              tensor<1x4x8xf32>)
      {structured_mask = #attn.causal<bottom_right>}
      -> tensor<1x4x8x16xf32>, tensor<1x4x8xf32>, tensor<1x4x8xf32>
  return %r#0, %r#1, %r#2
      : tensor<1x4x8x16xf32>, tensor<1x4x8xf32>, tensor<1x4x8xf32>
}

// -----

// Finalize: acc / sum where sum > 0, else 0, converted to the output type;
// in BSHD the sum is read transposed.
// CHECK-DAG: #[[$ACC:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
// CHECK-DAG: #[[$SUMBSHD:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d2, d1)>
// CHECK-LABEL: func.func @finalize_bshd
// CHECK: linalg.generic {indexing_maps = [#[[$ACC]], #[[$SUMBSHD]], #[[$ACC]]]
// CHECK: %[[POS:.+]] = arith.cmpf ogt
// CHECK: %[[Q:.+]] = arith.divf
// CHECK: %[[R:.+]] = arith.select %[[POS]], %[[Q]]
// CHECK: arith.truncf %[[R]] : f32 to bf16
func.func @finalize_bshd(%acc: tensor<1x8x4x16xf32>, %sum: tensor<1x4x8xf32>,
                         %o: tensor<1x8x4x16xbf16>) -> tensor<1x8x4x16xbf16> {
  %0 = attn.finalize_online_attention
      ins(%acc, %sum : tensor<1x8x4x16xf32>, tensor<1x4x8xf32>)
      outs(%o : tensor<1x8x4x16xbf16>) {layout = #attn.layout<bshd>}
      -> tensor<1x8x4x16xbf16>
  return %0 : tensor<1x8x4x16xbf16>
}

// -----

// Gaussian similarity: the score product is k (q - k / 2), summed over D,
// then scaled like any score (scale = 1/sigma^2).
// CHECK-LABEL: func.func @gaussian
// CHECK-DAG: %[[HALF:.+]] = arith.constant 5.000000e-01 : f32
// CHECK-DAG: %[[SCALE:.+]] = arith.constant 2.500000e-01 : f32
// CHECK: linalg.generic
// CHECK-NEXT: ^bb0(%[[QE:.+]]: f32, %[[KE:.+]]: f32, %[[ACC:.+]]: f32):
// CHECK-NEXT: %[[HALFK:.+]] = arith.mulf %[[KE]], %[[HALF]] : f32
// CHECK-NEXT: %[[DIFF:.+]] = arith.subf %[[QE]], %[[HALFK]] : f32
// CHECK-NEXT: %[[PROD:.+]] = arith.mulf %[[DIFF]], %[[KE]]
// CHECK-NEXT: arith.addf %[[PROD]], %[[ACC]]
// CHECK: linalg.generic
// CHECK: arith.mulf %{{.+}}, %[[SCALE]] : f32
func.func @gaussian(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>,
                    %o: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  %0 = attn.attention ins(%q, %k, %k : tensor<1x2x8x16xf32>,
                          tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
      outs(%o : tensor<1x2x8x16xf32>)
      {scale = 0.25 : f32, similarity = #attn.similarity<gaussian>}
      -> tensor<1x2x8x16xf32>
  return %0 : tensor<1x2x8x16xf32>
}

// -----

// With an lse init: max + log(sum) per row, -inf for a row that saw no key,
// collapsed back to [B, Hq, Sq] next to the output.
// CHECK-LABEL: func.func @lse
// CHECK: %[[OUT:.+]] = tensor.collapse_shape %{{.+}} {{\[\[}}0], [1, 2], [3], [4]]
// CHECK: linalg.generic
// CHECK-NEXT: ^bb0(%[[MAX:.+]]: f32, %[[SUM:.+]]: f32, %{{.+}}: f32):
// CHECK-NEXT: %[[SAW:.+]] = arith.cmpf ogt, %[[SUM]]
// CHECK-NEXT: %[[LOG:.+]] = math.log %[[SUM]] : f32
// CHECK-NEXT: %[[LSE:.+]] = arith.addf %[[MAX]], %[[LOG]] : f32
// CHECK-NEXT: arith.select %[[SAW]], %[[LSE]], %{{.+}} : f32
// CHECK: %[[ROWS:.+]] = tensor.collapse_shape %{{.+}} {{\[\[}}0], [1, 2], [3]] : tensor<1x4x1x8xf32> into tensor<1x4x8xf32>
// CHECK: return %[[OUT]], %[[ROWS]]
func.func @lse(%q: tensor<1x4x8x16xf32>, %o: tensor<1x4x8x16xf32>,
               %l: tensor<1x4x8xf32>)
    -> (tensor<1x4x8x16xf32>, tensor<1x4x8xf32>) {
  %0:2 = attn.attention ins(%q, %q, %q : tensor<1x4x8x16xf32>,
                            tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>)
      outs(%o : tensor<1x4x8x16xf32>) lse(%l : tensor<1x4x8xf32>)
      -> tensor<1x4x8x16xf32>, tensor<1x4x8xf32>
  return %0#0, %0#1 : tensor<1x4x8x16xf32>, tensor<1x4x8xf32>
}

// -----

// Finalize with an lse: the same log-sum-exp from the running max and sum.
// CHECK-LABEL: func.func @finalize_lse
// CHECK: linalg.generic
// CHECK: %[[LSE:.+]] = linalg.generic {{.*}} ins(%{{.+}}, %{{.+}} : tensor<1x4x8xf32>, tensor<1x4x8xf32>) outs(%{{.+}} : tensor<1x4x8xf32>)
// CHECK: math.log
// CHECK: return %{{.+}}, %[[LSE]]
func.func @finalize_lse(%acc: tensor<1x4x8x16xf32>, %m: tensor<1x4x8xf32>,
                        %s: tensor<1x4x8xf32>, %o: tensor<1x4x8x16xf16>,
                        %l: tensor<1x4x8xf32>)
    -> (tensor<1x4x8x16xf16>, tensor<1x4x8xf32>) {
  %0:2 = attn.finalize_online_attention
      ins(%acc, %s : tensor<1x4x8x16xf32>, tensor<1x4x8xf32>)
      max(%m : tensor<1x4x8xf32>) outs(%o : tensor<1x4x8x16xf16>)
      lse(%l : tensor<1x4x8xf32>) -> tensor<1x4x8x16xf16>, tensor<1x4x8xf32>
  return %0#0, %0#1 : tensor<1x4x8x16xf16>, tensor<1x4x8xf32>
}

// -----

// T5's relative-position bias: score + rel_bias[h, bucket(j - i)]. With
// T5's defaults (32 buckets, bidirectional, max distance 128), keys after
// the query take buckets 16-31; an offset n below 8 is its own bucket and
// larger ones count the thresholds 12, 16, 23, 32, 46, 64, 91 they reach
// (Hugging Face's relative_position_bucket, in f32).
// CHECK-LABEL: func.func @relpos
// CHECK-SAME: (%[[Q:[a-z0-9_]+]]: tensor<1x2x8x16xf32>, %[[T:[a-z0-9_]+]]: tensor<2x32xf32>,
// CHECK: %[[REL:.+]] = arith.subi %[[J:.+]], %[[I:.+]] : index
// CHECK: %[[AFTER:.+]] = arith.cmpi sgt, %[[REL]], %{{.+}} : index
// CHECK: %[[FIRST:.+]] = arith.select %[[AFTER]], %{{.+}}, %{{.+}} : index
// CHECK: %[[N:.+]] = arith.select
// CHECK: arith.cmpi sge, %[[N]], %{{.+}}12 : index
// CHECK: arith.cmpi sge, %[[N]], %{{.+}}16 : index
// CHECK: arith.cmpi sge, %[[N]], %{{.+}}23 : index
// CHECK: arith.cmpi sge, %[[N]], %{{.+}}32 : index
// CHECK: arith.cmpi sge, %[[N]], %{{.+}}46 : index
// CHECK: arith.cmpi sge, %[[N]], %{{.+}}64 : index
// CHECK: arith.cmpi sge, %[[N]], %{{.+}}91 : index
// CHECK-NOT: arith.cmpi sge, %[[N]]
// CHECK: %[[SMALL:.+]] = arith.cmpi slt, %[[N]], %{{.+}}8 : index
// CHECK: %[[INDIR:.+]] = arith.select %[[SMALL]], %[[N]], %{{.+}} : index
// CHECK: %[[BUCKET:.+]] = arith.addi %[[FIRST]], %[[INDIR]] : index
// CHECK: %[[B:.+]] = tensor.extract %[[T]][%{{.+}}, %[[BUCKET]]] : tensor<2x32xf32>
// CHECK: arith.addf %{{.+}}, %[[B]] : f32
func.func @relpos(%q: tensor<1x2x8x16xf32>, %t: tensor<2x32xf32>,
                  %o: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  %0 = attn.attention ins(%q, %q, %q : tensor<1x2x8x16xf32>,
                          tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
      rel_bias(%t : tensor<2x32xf32>) outs(%o : tensor<1x2x8x16xf32>)
      {relpos = #attn.relpos<buckets = 32, max_distance = 128,
                             bidirectional = true>}
      -> tensor<1x2x8x16xf32>
  return %0 : tensor<1x2x8x16xf32>
}

// -----

// Additive similarity: the score product is w[h, d] tanh(q + k), summed over
// d (h = hk * G + g: 2 query heads per key head here).
// CHECK-LABEL: func.func @additive
// CHECK-SAME: %[[W:[a-z0-9_]+]]: tensor<4x16xf32>
// CHECK: linalg.generic
// CHECK-NEXT: ^bb0(%[[QE:.+]]: f32, %[[KE:.+]]: f32, %[[ACC:.+]]: f32):
// CHECK: %[[WE:.+]] = tensor.extract %[[W]][%{{.+}}, %{{.+}}] : tensor<4x16xf32>
// CHECK: %[[SUM:.+]] = arith.addf %[[QE]], %[[KE]] : f32
// CHECK: %[[T:.+]] = math.tanh %[[SUM]] : f32
// CHECK: %[[PROD:.+]] = arith.mulf %[[T]], %[[WE]]
// CHECK: arith.addf %[[PROD]], %[[ACC]]
func.func @additive(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x8x16xf32>,
                    %w: tensor<4x16xf32>, %o: tensor<1x4x8x16xf32>)
    -> tensor<1x4x8x16xf32> {
  %0 = attn.attention ins(%q, %k, %k : tensor<1x4x8x16xf32>,
                          tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
      additive_weight(%w : tensor<4x16xf32>) outs(%o : tensor<1x4x8x16xf32>)
      {scale = 1.0 : f32, similarity = #attn.similarity<additive>}
      -> tensor<1x4x8x16xf32>
  return %0 : tensor<1x4x8x16xf32>
}

// -----

// Adaptive spans: key j is hidden from row i of head h when
// j < i - spans[h].
// CHECK-LABEL: func.func @spans
// CHECK-SAME: %[[S:[a-z0-9_]+]]: tensor<4xi32>
// CHECK: %[[SPAN:.+]] = tensor.extract %[[S]][%{{.+}}] : tensor<4xi32>
// CHECK: %[[W:.+]] = arith.index_cast %[[SPAN]] : i32 to index
// CHECK: %[[FIRST:.+]] = arith.subi %[[I:.+]], %[[W]] : index
// CHECK: arith.cmpi sge, %{{.+}}, %[[FIRST]] : index
func.func @spans(%q: tensor<1x4x8x16xf32>, %s: tensor<4xi32>,
                 %o: tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32> {
  %0 = attn.attention ins(%q, %q, %q : tensor<1x4x8x16xf32>,
                          tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>)
      spans(%s : tensor<4xi32>) outs(%o : tensor<1x4x8x16xf32>)
      -> tensor<1x4x8x16xf32>
  return %0 : tensor<1x4x8x16xf32>
}

// -----

// A run-time block mask decides before the other masks: the class of the
// pair's block (heads broadcast: index 0) shows it at 2 or more, leaves it
// to the causal mask at 1, hides it otherwise.
// CHECK-LABEL: func.func @block_mask
// CHECK-SAME: %[[M:[a-z0-9_]+]]: tensor<1x1x2x4xi8>
// CHECK: linalg.generic
// CHECK: %[[CAUSAL:.+]] = arith.cmpi sle, %{{.+}}, %{{.+}} : index
// CHECK: %[[QB:.+]] = arith.divui %{{.+}}, %c4 : index
// CHECK: %[[KB:.+]] = arith.divui %{{.+}}, %c2 : index
// CHECK: %[[C:.+]] = tensor.extract %[[M]][%c0, %c0, %[[QB]], %[[KB]]] : tensor<1x1x2x4xi8>
// CHECK: %[[FULL:.+]] = arith.cmpi sge, %[[C]], %c2_i8 : i8
// CHECK: %[[PARTIAL:.+]] = arith.cmpi eq, %[[C]], %c1_i8 : i8
// CHECK: %[[BY_CAUSAL:.+]] = arith.andi %[[PARTIAL]], %[[CAUSAL]] : i1
// CHECK: %[[SHOWN:.+]] = arith.ori %[[FULL]], %[[BY_CAUSAL]] : i1
// CHECK: arith.select %[[SHOWN]]
func.func @block_mask(%q: tensor<1x4x8x16xf32>, %m: tensor<1x1x2x4xi8>,
                      %o: tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32> {
  %0 = attn.attention ins(%q, %q, %q : tensor<1x4x8x16xf32>,
                          tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>)
      block_mask(%m : tensor<1x1x2x4xi8>) outs(%o : tensor<1x4x8x16xf32>)
      {block_sizes = array<i64: 4, 2>,
       structured_mask = #attn.causal<top_left>} -> tensor<1x4x8x16xf32>
  return %0 : tensor<1x4x8x16xf32>
}
