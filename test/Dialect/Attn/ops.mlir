// RUN: attn-opt %s | FileCheck %s
// Round trip through the printer, and through the generic form.
// RUN: attn-opt %s | attn-opt | FileCheck %s
// RUN: attn-opt %s --mlir-print-op-generic | attn-opt | FileCheck %s
// RUN: attn-opt %s --mlir-print-op-generic | FileCheck %s --check-prefix=GENERIC

// CHECK-LABEL: func.func @plain
// CHECK: attn.attention ins(%{{.*}}, %{{.*}}, %{{.*}} : tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>)
// CHECK-SAME: outs(%{{.*}} : tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32>
// GENERIC-LABEL: sym_name = "plain"
// GENERIC: "attn.attention"(%{{.*}}) <{layout = #attn.layout<bhsd>, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0>, similarity = #attn.similarity<dot>}> ({
func.func @plain(%q: tensor<1x4x8x16xf32>, %k: tensor<1x4x8x16xf32>,
                 %v: tensor<1x4x8x16xf32>, %o: tensor<1x4x8x16xf32>)
    -> tensor<1x4x8x16xf32> {
  %0 = attn.attention ins(%q, %k, %v : tensor<1x4x8x16xf32>,
                          tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>)
      outs(%o : tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32>
  return %0 : tensor<1x4x8x16xf32>
}

// GQA 4:1, cross-attention (Sq != Sk), Dv != D, f16 in and f32 out, every
// optional operand and attribute.
// CHECK-LABEL: func.func @everything
// CHECK: attn.attention
// CHECK-SAME: mask(%{{.*}} : tensor<8x32xi1>)
// CHECK-SAME: bias(%{{.*}} : tensor<2x1x8x32xf16>)
// CHECK-SAME: kv_lens(%{{.*}} : tensor<2xi32>)
// CHECK-SAME: outs(%{{.*}} : tensor<2x8x8x32xf32>)
// CHECK-SAME: scale = 1.250000e-01 : f32
// CHECK-SAME: similarity = #attn.similarity<gaussian>
// CHECK-SAME: structured_mask = #attn.causal<bottom_right>
// CHECK-SAME: score_mod {
// CHECK-NEXT: ^bb0(%[[S:.+]]: f32, %{{.+}}: index, %{{.+}}: index, %{{.+}}: index, %{{.+}}: index):
// CHECK: math.tanh
// CHECK: attn.yield %{{.*}} : f32
// CHECK: } mask_mod {
// CHECK-NEXT: ^bb0(%{{.+}}: index, %{{.+}}: index, %[[I:.+]]: index, %[[J:.+]]: index):
// CHECK-NEXT: %[[NE:.+]] = arith.cmpi ne, %[[I]], %[[J]] : index
// CHECK-NEXT: attn.yield %[[NE]] : i1
// CHECK-NEXT: } -> tensor<2x8x8x32xf32>
func.func @everything(%q: tensor<2x8x8x64xf16>, %k: tensor<2x2x32x64xf16>,
                      %v: tensor<2x2x32x32xf16>, %m: tensor<8x32xi1>,
                      %b: tensor<2x1x8x32xf16>, %l: tensor<2xi32>,
                      %o: tensor<2x8x8x32xf32>) -> tensor<2x8x8x32xf32> {
  %0 = attn.attention ins(%q, %k, %v : tensor<2x8x8x64xf16>,
                          tensor<2x2x32x64xf16>, tensor<2x2x32x32xf16>)
      mask(%m : tensor<8x32xi1>) bias(%b : tensor<2x1x8x32xf16>)
      kv_lens(%l : tensor<2xi32>) outs(%o : tensor<2x8x8x32xf32>)
      {scale = 0.125 : f32, similarity = #attn.similarity<gaussian>,
       structured_mask = #attn.causal<bottom_right>}
      score_mod {
      ^bb0(%s: f32, %bi: index, %h: index, %i: index, %j: index):
        %c = arith.constant 50.0 : f32
        %d = arith.divf %s, %c : f32
        %t = math.tanh %d : f32
        %r = arith.mulf %t, %c : f32
        attn.yield %r : f32
      }
      mask_mod {
      ^bb0(%bi: index, %h: index, %i: index, %j: index):
        %ne = arith.cmpi ne, %i, %j : index
        attn.yield %ne : i1
      } -> tensor<2x8x8x32xf32>
  return %0 : tensor<2x8x8x32xf32>
}

// Dynamic batch, heads and sequence lengths; BSHD layout; MQA; bf16.
// CHECK-LABEL: func.func @dynamic_bshd
// CHECK: attn.attention
// CHECK-SAME: {layout = #attn.layout<bshd>, structured_mask = #attn.sliding_window<left = 128, right = 0>}
// CHECK-SAME: -> tensor<?x?x?x64xbf16>
func.func @dynamic_bshd(%q: tensor<?x?x?x64xbf16>, %k: tensor<?x?x1x64xbf16>,
                        %v: tensor<?x?x1x64xbf16>, %o: tensor<?x?x?x64xbf16>)
    -> tensor<?x?x?x64xbf16> {
  %0 = attn.attention ins(%q, %k, %v : tensor<?x?x?x64xbf16>,
                          tensor<?x?x1x64xbf16>, tensor<?x?x1x64xbf16>)
      outs(%o : tensor<?x?x?x64xbf16>)
      {layout = #attn.layout<bshd>,
       structured_mask = #attn.sliding_window<left = 128, right = 0>}
      -> tensor<?x?x?x64xbf16>
  return %0 : tensor<?x?x?x64xbf16>
}

// The default alignment is elided; a non-default one is printed.
// CHECK-LABEL: func.func @window_bottom_right
// CHECK: structured_mask = #attn.sliding_window<left = 4, right = 2, alignment = bottom_right>
func.func @window_bottom_right(%q: tensor<1x1x4x8xf32>, %k: tensor<1x1x16x8xf32>,
                               %o: tensor<1x1x4x8xf32>) -> tensor<1x1x4x8xf32> {
  %0 = attn.attention ins(%q, %k, %k : tensor<1x1x4x8xf32>,
                          tensor<1x1x16x8xf32>, tensor<1x1x16x8xf32>)
      outs(%o : tensor<1x1x4x8xf32>)
      {structured_mask = #attn.sliding_window<left = 4, right = 2,
                                              alignment = bottom_right>}
      -> tensor<1x1x4x8xf32>
  return %0 : tensor<1x1x4x8xf32>
}

// Sparse patterns and their compositions.
// CHECK-LABEL: func.func @sparse_patterns
// CHECK: structured_mask = #attn.chunked<size = 4>
// CHECK: structured_mask = #attn.prefix<size = 3>
// CHECK: structured_mask = #attn.strided<stride = 4>
// CHECK: structured_mask = #attn.fixed<stride = 4, summary = 1>
// CHECK: structured_mask = #attn.dilated<window = 2, dilation = 3>
// CHECK: structured_mask = #attn.union<[#attn.sliding_window<left = 2, right = 0>, #attn.global<tokens = 1>]>
// CHECK: structured_mask = #attn.intersection<[#attn.causal<top_left>, #attn.union<[#attn.chunked<size = 4>, #attn.global<tokens = 2>]>]>
// CHECK: structured_mask = #attn.bigbird<block = 4, window = 3, global = 1, random = 2, seed = 7>
// CHECK: structured_mask = #attn.block_bitmap<block = 4, rows = [1, 3, 6, 12]>
func.func @sparse_patterns(%q: tensor<1x1x16x8xf32>, %o: tensor<1x1x16x8xf32>)
    -> tensor<1x1x16x8xf32> {
  %0 = attn.attention ins(%q, %q, %q : tensor<1x1x16x8xf32>,
                          tensor<1x1x16x8xf32>, tensor<1x1x16x8xf32>)
      outs(%o : tensor<1x1x16x8xf32>)
      {structured_mask = #attn.chunked<size = 4>} -> tensor<1x1x16x8xf32>
  %1 = attn.attention ins(%q, %q, %q : tensor<1x1x16x8xf32>,
                          tensor<1x1x16x8xf32>, tensor<1x1x16x8xf32>)
      outs(%0 : tensor<1x1x16x8xf32>)
      {structured_mask = #attn.prefix<size = 3>} -> tensor<1x1x16x8xf32>
  %2 = attn.attention ins(%q, %q, %q : tensor<1x1x16x8xf32>,
                          tensor<1x1x16x8xf32>, tensor<1x1x16x8xf32>)
      outs(%1 : tensor<1x1x16x8xf32>)
      {structured_mask = #attn.strided<stride = 4>} -> tensor<1x1x16x8xf32>
  %3 = attn.attention ins(%q, %q, %q : tensor<1x1x16x8xf32>,
                          tensor<1x1x16x8xf32>, tensor<1x1x16x8xf32>)
      outs(%2 : tensor<1x1x16x8xf32>)
      {structured_mask = #attn.fixed<stride = 4, summary = 1>}
      -> tensor<1x1x16x8xf32>
  %4 = attn.attention ins(%q, %q, %q : tensor<1x1x16x8xf32>,
                          tensor<1x1x16x8xf32>, tensor<1x1x16x8xf32>)
      outs(%3 : tensor<1x1x16x8xf32>)
      {structured_mask = #attn.dilated<window = 2, dilation = 3>}
      -> tensor<1x1x16x8xf32>
  %5 = attn.attention ins(%q, %q, %q : tensor<1x1x16x8xf32>,
                          tensor<1x1x16x8xf32>, tensor<1x1x16x8xf32>)
      outs(%4 : tensor<1x1x16x8xf32>)
      {structured_mask = #attn.union<[#attn.sliding_window<left = 2, right = 0>,
                                      #attn.global<tokens = 1>]>}
      -> tensor<1x1x16x8xf32>
  %6 = attn.attention ins(%q, %q, %q : tensor<1x1x16x8xf32>,
                          tensor<1x1x16x8xf32>, tensor<1x1x16x8xf32>)
      outs(%5 : tensor<1x1x16x8xf32>)
      {structured_mask = #attn.intersection<[#attn.causal<top_left>,
          #attn.union<[#attn.chunked<size = 4>, #attn.global<tokens = 2>]>]>}
      -> tensor<1x1x16x8xf32>
  %7 = attn.attention ins(%q, %q, %q : tensor<1x1x16x8xf32>,
                          tensor<1x1x16x8xf32>, tensor<1x1x16x8xf32>)
      outs(%6 : tensor<1x1x16x8xf32>)
      {structured_mask = #attn.bigbird<block = 4, window = 3, global = 1,
                                       random = 2, seed = 7>}
      -> tensor<1x1x16x8xf32>
  %8 = attn.attention ins(%q, %q, %q : tensor<1x1x16x8xf32>,
                          tensor<1x1x16x8xf32>, tensor<1x1x16x8xf32>)
      outs(%7 : tensor<1x1x16x8xf32>)
      {structured_mask = #attn.block_bitmap<block = 4, rows = [1, 3, 6, 12]>}
      -> tensor<1x1x16x8xf32>
  return %8 : tensor<1x1x16x8xf32>
}

// CHECK-LABEL: func.func @online
// CHECK: %[[ACC:.+]], %{{.+}}, %[[SUM:.+]] = attn.online_attention
// CHECK-SAME: offsets(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : index, index, index, index)
// CHECK-SAME: extents(%{{.*}}, %{{.*}} : index, index)
// CHECK-SAME: outs(%{{.*}}, %{{.*}}, %{{.*}} : tensor<1x8x64x64xf32>, tensor<1x8x64xf32>, tensor<1x8x64xf32>)
// CHECK-SAME: -> tensor<1x8x64x64xf32>, tensor<1x8x64xf32>, tensor<1x8x64xf32>
// CHECK: attn.finalize_online_attention ins(%[[ACC]], %[[SUM]] : tensor<1x8x64x64xf32>, tensor<1x8x64xf32>)
// CHECK-SAME: outs(%{{.*}} : tensor<1x8x64x64xf16>) -> tensor<1x8x64x64xf16>
func.func @online(%q: tensor<1x8x64x64xf16>, %k: tensor<1x8x32x64xf16>,
                  %v: tensor<1x8x32x64xf16>, %acc: tensor<1x8x64x64xf32>,
                  %max: tensor<1x8x64xf32>, %sum: tensor<1x8x64xf32>,
                  %kv0: index, %o: tensor<1x8x64x64xf16>)
    -> tensor<1x8x64x64xf16> {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %r:3 = attn.online_attention
      ins(%q, %k, %v : tensor<1x8x64x64xf16>, tensor<1x8x32x64xf16>,
                       tensor<1x8x32x64xf16>)
      offsets(%c0, %c0, %c0, %kv0 : index, index, index, index)
      extents(%c64, %c128 : index, index)
      outs(%acc, %max, %sum : tensor<1x8x64x64xf32>, tensor<1x8x64xf32>,
                              tensor<1x8x64xf32>)
      {structured_mask = #attn.causal<top_left>}
      -> tensor<1x8x64x64xf32>, tensor<1x8x64xf32>, tensor<1x8x64xf32>
  %out = attn.finalize_online_attention
      ins(%r#0, %r#2 : tensor<1x8x64x64xf32>, tensor<1x8x64xf32>)
      outs(%o : tensor<1x8x64x64xf16>) -> tensor<1x8x64x64xf16>
  return %out : tensor<1x8x64x64xf16>
}

// CHECK-LABEL: func.func @mha
// CHECK: attn.multi_head_attention ins(%{{.*}}, %{{.*}}, %{{.*}} : tensor<2x16x64xf32>, tensor<2x24x32xf32>, tensor<2x24x32xf32>)
// CHECK-SAME: weights(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : tensor<64x64xf32>, tensor<32x32xf32>, tensor<32x16xf32>, tensor<32x48xf32>)
// CHECK-SAME: proj_biases(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : tensor<64xf32>, tensor<32xf32>, tensor<16xf32>, tensor<48xf32>)
// CHECK-SAME: kv_lens(%{{.*}} : tensor<2xi32>)
// CHECK-SAME: {num_heads = 4 : i64, num_kv_heads = 2 : i64}
// CHECK-SAME: -> tensor<2x16x48xf32>
func.func @mha(%x: tensor<2x16x64xf32>, %y: tensor<2x24x32xf32>,
               %wq: tensor<64x64xf32>, %wk: tensor<32x32xf32>,
               %wv: tensor<32x16xf32>, %wo: tensor<32x48xf32>,
               %bq: tensor<64xf32>, %bk: tensor<32xf32>, %bv: tensor<16xf32>,
               %bo: tensor<48xf32>, %l: tensor<2xi32>,
               %o: tensor<2x16x48xf32>) -> tensor<2x16x48xf32> {
  %0 = attn.multi_head_attention
      ins(%x, %y, %y : tensor<2x16x64xf32>, tensor<2x24x32xf32>,
                       tensor<2x24x32xf32>)
      weights(%wq, %wk, %wv, %wo : tensor<64x64xf32>, tensor<32x32xf32>,
                                   tensor<32x16xf32>, tensor<32x48xf32>)
      proj_biases(%bq, %bk, %bv, %bo : tensor<64xf32>, tensor<32xf32>,
                                       tensor<16xf32>, tensor<48xf32>)
      kv_lens(%l : tensor<2xi32>)
      outs(%o : tensor<2x16x48xf32>) {num_heads = 4 : i64, num_kv_heads = 2 : i64}
      -> tensor<2x16x48xf32>
  return %0 : tensor<2x16x48xf32>
}

// A tile of a larger attention says where it sits.
// CHECK-LABEL: func.func @attention_tile
// CHECK: attn.attention
// CHECK-SAME: offsets(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} : index, index, index, index)
// CHECK-SAME: extents(%{{.+}}, %{{.+}} : index, index)
func.func @attention_tile(%q: tensor<1x4x16x8xf32>, %b: index, %h: index,
                          %i: index, %sq: index, %sk: index)
    -> tensor<1x4x16x8xf32> {
  %c0 = arith.constant 0 : index
  %0 = attn.attention ins(%q, %q, %q : tensor<1x4x16x8xf32>,
                          tensor<1x4x16x8xf32>, tensor<1x4x16x8xf32>)
      offsets(%b, %h, %i, %c0 : index, index, index, index)
      extents(%sq, %sk : index, index)
      outs(%q : tensor<1x4x16x8xf32>)
      {structured_mask = #attn.causal<top_left>} -> tensor<1x4x16x8xf32>
  return %0 : tensor<1x4x16x8xf32>
}

// A micro-kernel call on tensors returns its updated outs; on memrefs it
// returns nothing.
// CHECK-LABEL: func.func @ukernel
// CHECK: attn.ukernel.generic "attn_uk_online_step_f32" ins(%{{.+}} : tensor<1x1x4x8xf32>) outs(%{{.+}}, %{{.+}} : tensor<1x1x4x8xf32>, tensor<1x1x4xf32>) (%{{.+}}, %{{.+}} : f32, i64) -> tensor<1x1x4x8xf32>, tensor<1x1x4xf32>
// CHECK: attn.ukernel.generic "attn_uk_online_step_f32" ins(%{{.+}} : memref<4xf32>) outs(%{{.+}} : memref<4xf32>){{$}}
func.func @ukernel(%q: tensor<1x1x4x8xf32>, %s: tensor<1x1x4xf32>, %x: f32,
                   %l: i64, %m: memref<4xf32>)
    -> (tensor<1x1x4x8xf32>, tensor<1x1x4xf32>) {
  %r:2 = attn.ukernel.generic "attn_uk_online_step_f32"
      ins(%q : tensor<1x1x4x8xf32>)
      outs(%q, %s : tensor<1x1x4x8xf32>, tensor<1x1x4xf32>)
      (%x, %l : f32, i64) -> tensor<1x1x4x8xf32>, tensor<1x1x4xf32>
  attn.ukernel.generic "attn_uk_online_step_f32" ins(%m : memref<4xf32>)
      outs(%m : memref<4xf32>)
  return %r#0, %r#1 : tensor<1x1x4x8xf32>, tensor<1x1x4xf32>
}

// An lse output next to the attention's (the second init and result), and
// the finalize that makes it from the running max and sum.
// CHECK-LABEL: func.func @with_lse
// CHECK: %{{.+}}, %{{.+}} = attn.attention ins(%{{.*}}) outs(%{{.*}} : tensor<1x4x8x16xf32>) lse(%{{.*}} : tensor<1x4x8xf32>) -> tensor<1x4x8x16xf32>, tensor<1x4x8xf32>
// CHECK: %{{.+}}, %{{.+}} = attn.finalize_online_attention ins(%{{.*}} : tensor<1x4x8x16xf32>, tensor<1x4x8xf32>) max(%{{.*}} : tensor<1x4x8xf32>) outs(%{{.*}} : tensor<1x4x8x16xf16>) lse(%{{.*}} : tensor<1x4x8xf32>) -> tensor<1x4x8x16xf16>, tensor<1x4x8xf32>
func.func @with_lse(%q: tensor<1x4x8x16xf32>, %o: tensor<1x4x8x16xf32>,
                    %l: tensor<1x4x8xf32>, %h: tensor<1x4x8x16xf16>)
    -> (tensor<1x4x8x16xf32>, tensor<1x4x8xf32>, tensor<1x4x8x16xf16>,
        tensor<1x4x8xf32>) {
  %0:2 = attn.attention ins(%q, %q, %q : tensor<1x4x8x16xf32>,
                            tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>)
      outs(%o : tensor<1x4x8x16xf32>) lse(%l : tensor<1x4x8xf32>)
      -> tensor<1x4x8x16xf32>, tensor<1x4x8xf32>
  %1:2 = attn.finalize_online_attention ins(%o, %l : tensor<1x4x8x16xf32>,
                                            tensor<1x4x8xf32>)
      max(%l : tensor<1x4x8xf32>) outs(%h : tensor<1x4x8x16xf16>)
      lse(%l : tensor<1x4x8xf32>) -> tensor<1x4x8x16xf16>, tensor<1x4x8xf32>
  return %0#0, %0#1, %1#0, %1#1 : tensor<1x4x8x16xf32>, tensor<1x4x8xf32>,
                                  tensor<1x4x8x16xf16>, tensor<1x4x8xf32>
}

// Linear attention: GQA, BSHD, the causal mask.
// CHECK-LABEL: func.func @linear
// CHECK: attn.linear_attention ins(%{{.*}} : tensor<1x8x4x16xf32>, tensor<1x8x2x16xf32>, tensor<1x8x2x8xf32>) outs(%{{.*}} : tensor<1x8x4x8xf32>) {layout = #attn.layout<bshd>, structured_mask = #attn.causal<top_left>} -> tensor<1x8x4x8xf32>
func.func @linear(%q: tensor<1x8x4x16xf32>, %k: tensor<1x8x2x16xf32>,
                  %v: tensor<1x8x2x8xf32>, %o: tensor<1x8x4x8xf32>)
    -> tensor<1x8x4x8xf32> {
  %0 = attn.linear_attention ins(%q, %k, %v : tensor<1x8x4x16xf32>,
                                 tensor<1x8x2x16xf32>, tensor<1x8x2x8xf32>)
      outs(%o : tensor<1x8x4x8xf32>)
      {layout = #attn.layout<bshd>, structured_mask = #attn.causal<top_left>}
      -> tensor<1x8x4x8xf32>
  return %0 : tensor<1x8x4x8xf32>
}

// A T5 relative-position bias table and how it is indexed.
// CHECK-LABEL: func.func @relpos
// CHECK: attn.attention ins(%{{.*}}) rel_bias(%{{.*}} : tensor<4x16xf32>) outs(%{{.*}}) {relpos = #attn.relpos<buckets = 16, max_distance = 64, bidirectional = false>}
func.func @relpos(%q: tensor<1x4x8x16xf32>, %t: tensor<4x16xf32>,
                  %o: tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32> {
  %0 = attn.attention ins(%q, %q, %q : tensor<1x4x8x16xf32>,
                          tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>)
      rel_bias(%t : tensor<4x16xf32>) outs(%o : tensor<1x4x8x16xf32>)
      {relpos = #attn.relpos<buckets = 16, max_distance = 64,
                             bidirectional = false>}
      -> tensor<1x4x8x16xf32>
  return %0 : tensor<1x4x8x16xf32>
}

// Additive (Bahdanau) attention on projected queries and keys.
// CHECK-LABEL: func.func @additive
// CHECK: attn.attention ins(%{{.*}}) additive_weight(%{{.*}} : tensor<4x16xf32>) outs(%{{.*}}) {scale = 1.000000e+00 : f32, similarity = #attn.similarity<additive>}
func.func @additive(%q: tensor<1x4x8x16xf32>, %w: tensor<4x16xf32>,
                    %o: tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32> {
  %0 = attn.attention ins(%q, %q, %q : tensor<1x4x8x16xf32>,
                          tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>)
      additive_weight(%w : tensor<4x16xf32>) outs(%o : tensor<1x4x8x16xf32>)
      {scale = 1.0 : f32, similarity = #attn.similarity<additive>}
      -> tensor<1x4x8x16xf32>
  return %0 : tensor<1x4x8x16xf32>
}

// Adaptive spans: a run-time window width per query head.
// CHECK-LABEL: func.func @spans
// CHECK: attn.attention ins(%{{.*}}) spans(%{{.*}} : tensor<4xi32>) outs(%{{.*}} : tensor<1x4x8x16xf32>)
func.func @spans(%q: tensor<1x4x8x16xf32>, %s: tensor<4xi32>,
                 %o: tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32> {
  %0 = attn.attention ins(%q, %q, %q : tensor<1x4x8x16xf32>,
                          tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>)
      spans(%s : tensor<4xi32>) outs(%o : tensor<1x4x8x16xf32>)
      -> tensor<1x4x8x16xf32>
  return %0 : tensor<1x4x8x16xf32>
}

// A run-time block mask: one i8 class per (query block, key block), heads
// broadcast.
// CHECK-LABEL: func.func @block_mask
// CHECK: attn.attention ins(%{{.*}}) block_mask(%{{.*}} : tensor<1x1x2x1xi8>) outs(%{{.*}} : tensor<1x4x8x16xf32>) {block_sizes = array<i64: 4, 8>, structured_mask = #attn.causal<top_left>}
func.func @block_mask(%q: tensor<1x4x8x16xf32>, %m: tensor<1x1x2x1xi8>,
                      %o: tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32> {
  %0 = attn.attention ins(%q, %q, %q : tensor<1x4x8x16xf32>,
                          tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>)
      block_mask(%m : tensor<1x1x2x1xi8>) outs(%o : tensor<1x4x8x16xf32>)
      {block_sizes = array<i64: 4, 8>,
       structured_mask = #attn.causal<top_left>} -> tensor<1x4x8x16xf32>
  return %0 : tensor<1x4x8x16xf32>
}

// Additive (Bahdanau) attention with its projections.
// CHECK-LABEL: func.func @additive_attention
// CHECK: attn.additive_attention ins(%{{.*}}) weights(%{{.*}} : tensor<16x8xf32>, tensor<16x8xf32>, tensor<8xf32>) kv_lens(%{{.*}} : tensor<1xi32>) outs(%{{.*}} : tensor<1x4x8x16xf32>) {structured_mask = #attn.causal<top_left>}
func.func @additive_attention(%q: tensor<1x4x8x16xf32>, %wq: tensor<16x8xf32>,
                              %w: tensor<8xf32>, %lens: tensor<1xi32>,
                              %o: tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32> {
  %0 = attn.additive_attention
      ins(%q, %q, %q : tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>,
                       tensor<1x4x8x16xf32>)
      weights(%wq, %wq, %w : tensor<16x8xf32>, tensor<16x8xf32>, tensor<8xf32>)
      kv_lens(%lens : tensor<1xi32>) outs(%o : tensor<1x4x8x16xf32>)
      {structured_mask = #attn.causal<top_left>} -> tensor<1x4x8x16xf32>
  return %0 : tensor<1x4x8x16xf32>
}

// A bitmap of 100 key blocks holds two words per row; 64 key blocks (the
// default) print no key_blocks.
// CHECK-LABEL: func.func @wide_bitmap
// CHECK: structured_mask = #attn.block_bitmap<block = 4, rows = [1, 0, 0, 68719476736], key_blocks = 100>
// CHECK: structured_mask = #attn.block_bitmap<block = 4, rows = [1, 3]>}
func.func @wide_bitmap(%q: tensor<1x1x16x8xf32>, %o: tensor<1x1x16x8xf32>)
    -> tensor<1x1x16x8xf32> {
  %0 = attn.attention ins(%q, %q, %q : tensor<1x1x16x8xf32>,
                          tensor<1x1x16x8xf32>, tensor<1x1x16x8xf32>)
      outs(%o : tensor<1x1x16x8xf32>)
      {structured_mask = #attn.block_bitmap<block = 4, rows = [1, 0, 0, 68719476736],
                                            key_blocks = 100>}
      -> tensor<1x1x16x8xf32>
  %1 = attn.attention ins(%q, %q, %q : tensor<1x1x16x8xf32>,
                          tensor<1x1x16x8xf32>, tensor<1x1x16x8xf32>)
      outs(%0 : tensor<1x1x16x8xf32>)
      {structured_mask = #attn.block_bitmap<block = 4, rows = [1, 3],
                                            key_blocks = 64>}
      -> tensor<1x1x16x8xf32>
  return %1 : tensor<1x1x16x8xf32>
}
