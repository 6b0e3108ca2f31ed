// RUN: attn-opt %s --canonicalize --split-input-file | FileCheck %s

// Decoding one token with a bottom-right causal mask sees every key: the mask
// is dropped.
// CHECK-LABEL: func.func @decode_causal_bottom_right
// CHECK: attn.attention
// CHECK-NOT: structured_mask
// CHECK-SAME: -> tensor<1x4x1x16xf32>
func.func @decode_causal_bottom_right(%q: tensor<1x4x1x16xf32>,
    %k: tensor<1x4x64x16xf32>, %o: tensor<1x4x1x16xf32>) -> tensor<1x4x1x16xf32> {
  %0 = attn.attention ins(%q, %k, %k : tensor<1x4x1x16xf32>,
                          tensor<1x4x64x16xf32>, tensor<1x4x64x16xf32>)
      outs(%o : tensor<1x4x1x16xf32>)
      {structured_mask = #attn.causal<bottom_right>} -> tensor<1x4x1x16xf32>
  return %0 : tensor<1x4x1x16xf32>
}

// -----

// The same query under top-left alignment sees only key 0: kept.
// CHECK-LABEL: func.func @decode_causal_top_left
// CHECK: structured_mask = #attn.causal<top_left>
func.func @decode_causal_top_left(%q: tensor<1x4x1x16xf32>,
    %k: tensor<1x4x64x16xf32>, %o: tensor<1x4x1x16xf32>) -> tensor<1x4x1x16xf32> {
  %0 = attn.attention ins(%q, %k, %k : tensor<1x4x1x16xf32>,
                          tensor<1x4x64x16xf32>, tensor<1x4x64x16xf32>)
      outs(%o : tensor<1x4x1x16xf32>)
      {structured_mask = #attn.causal<top_left>} -> tensor<1x4x1x16xf32>
  return %0 : tensor<1x4x1x16xf32>
}

// -----

// A window wider than the sequence hides nothing (BSHD: S is dim 1).
// CHECK-LABEL: func.func @wide_window
// CHECK: attn.attention
// CHECK-NOT: structured_mask
// CHECK-SAME: -> tensor<1x8x2x16xf32>
func.func @wide_window(%q: tensor<1x8x2x16xf32>, %o: tensor<1x8x2x16xf32>)
    -> tensor<1x8x2x16xf32> {
  %0 = attn.attention ins(%q, %q, %q : tensor<1x8x2x16xf32>,
                          tensor<1x8x2x16xf32>, tensor<1x8x2x16xf32>)
      outs(%o : tensor<1x8x2x16xf32>)
      {layout = #attn.layout<bshd>,
       structured_mask = #attn.sliding_window<left = 7, right = 7>}
      -> tensor<1x8x2x16xf32>
  return %0 : tensor<1x8x2x16xf32>
}

// -----

// One key short on the left: kept.
// CHECK-LABEL: func.func @narrow_window
// CHECK: structured_mask = #attn.sliding_window<left = 6, right = 7>
func.func @narrow_window(%q: tensor<1x8x2x16xf32>, %o: tensor<1x8x2x16xf32>)
    -> tensor<1x8x2x16xf32> {
  %0 = attn.attention ins(%q, %q, %q : tensor<1x8x2x16xf32>,
                          tensor<1x8x2x16xf32>, tensor<1x8x2x16xf32>)
      outs(%o : tensor<1x8x2x16xf32>)
      {layout = #attn.layout<bshd>,
       structured_mask = #attn.sliding_window<left = 6, right = 7>}
      -> tensor<1x8x2x16xf32>
  return %0 : tensor<1x8x2x16xf32>
}

// -----

// Unknown sequence lengths: nothing can be proven, the mask stays.
// CHECK-LABEL: func.func @dynamic_length
// CHECK: structured_mask = #attn.causal<bottom_right>
func.func @dynamic_length(%q: tensor<1x4x?x16xf32>, %k: tensor<1x4x?x16xf32>,
                          %o: tensor<1x4x?x16xf32>) -> tensor<1x4x?x16xf32> {
  %0 = attn.attention ins(%q, %k, %k : tensor<1x4x?x16xf32>,
                          tensor<1x4x?x16xf32>, tensor<1x4x?x16xf32>)
      outs(%o : tensor<1x4x?x16xf32>)
      {structured_mask = #attn.causal<bottom_right>} -> tensor<1x4x?x16xf32>
  return %0 : tensor<1x4x?x16xf32>
}

// -----

// A tile is judged where it sits: query 0 against key 4 of a causal mask
// hides the key (although a 1 x 1 problem at the origin would not), query 8
// against keys [0, 4) shows them all, and a chunk tile inside one chunk too.
// CHECK-LABEL: func.func @tiles_at_offsets
// CHECK: structured_mask = #attn.causal<top_left>
// CHECK-NOT: structured_mask
// CHECK: return
func.func @tiles_at_offsets(%q: tensor<1x1x1x16xf32>, %k1: tensor<1x1x1x16xf32>,
                            %k4: tensor<1x1x4x16xf32>,
                            %o: tensor<1x1x1x16xf32>)
    -> (tensor<1x1x1x16xf32>, tensor<1x1x1x16xf32>, tensor<1x1x1x16xf32>) {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %0 = attn.attention ins(%q, %k1, %k1 : tensor<1x1x1x16xf32>,
                          tensor<1x1x1x16xf32>, tensor<1x1x1x16xf32>)
      offsets(%c0, %c0, %c0, %c4 : index, index, index, index)
      extents(%c16, %c16 : index, index) outs(%o : tensor<1x1x1x16xf32>)
      {structured_mask = #attn.causal<top_left>} -> tensor<1x1x1x16xf32>
  %1 = attn.attention ins(%q, %k4, %k4 : tensor<1x1x1x16xf32>,
                          tensor<1x1x4x16xf32>, tensor<1x1x4x16xf32>)
      offsets(%c0, %c0, %c8, %c0 : index, index, index, index)
      extents(%c16, %c16 : index, index) outs(%o : tensor<1x1x1x16xf32>)
      {structured_mask = #attn.causal<top_left>} -> tensor<1x1x1x16xf32>
  %2 = attn.attention ins(%q, %k4, %k4 : tensor<1x1x1x16xf32>,
                          tensor<1x1x4x16xf32>, tensor<1x1x4x16xf32>)
      offsets(%c0, %c0, %c8, %c8 : index, index, index, index)
      extents(%c16, %c16 : index, index) outs(%o : tensor<1x1x1x16xf32>)
      {structured_mask = #attn.chunked<size = 8>} -> tensor<1x1x1x16xf32>
  return %0, %1, %2 : tensor<1x1x1x16xf32>, tensor<1x1x1x16xf32>, tensor<1x1x1x16xf32>
}

// -----

// Attention has no side effects: an unused one is erased.
// CHECK-LABEL: func.func @dead
// CHECK-NOT: attn.attention
// CHECK: return
func.func @dead(%q: tensor<1x4x8x16xf32>) {
  %0 = attn.attention ins(%q, %q, %q : tensor<1x4x8x16xf32>,
                          tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>)
      outs(%q : tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32>
  return
}

// -----

// A tensor.cast that only hides static sizes folds into the op; the result
// is cast back for its users. (Upstream's generic DPS cast folding would
// clone the op and crash on the absent regions.)
// CHECK-LABEL: func.func @fold_cast_into_attention
// CHECK-SAME: (%[[Q:[a-z0-9_]+]]: tensor<1x4x8x16xf32>, %[[O:[a-z0-9_]+]]: tensor<1x4x8x16xf32>)
// CHECK: %[[R:.+]] = attn.attention ins(%[[Q]], %[[Q]], %[[Q]] : tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>) outs(%[[O]] : tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32>
// CHECK: %[[BACK:.+]] = tensor.cast %[[R]] : tensor<1x4x8x16xf32> to tensor<?x4x?x16xf32>
// CHECK: return %[[BACK]]
func.func @fold_cast_into_attention(%q: tensor<1x4x8x16xf32>,
    %o: tensor<1x4x8x16xf32>) -> tensor<?x4x?x16xf32> {
  %qd = tensor.cast %q : tensor<1x4x8x16xf32> to tensor<?x4x?x16xf32>
  %od = tensor.cast %o : tensor<1x4x8x16xf32> to tensor<?x4x?x16xf32>
  %0 = attn.attention ins(%qd, %qd, %qd : tensor<?x4x?x16xf32>,
                          tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>)
      outs(%od : tensor<?x4x?x16xf32>) -> tensor<?x4x?x16xf32>
  return %0 : tensor<?x4x?x16xf32>
}

// -----

// CHECK-LABEL: func.func @fold_cast_into_online_attention
// CHECK: %{{.+}}, %{{.+}}, %{{.+}} = attn.online_attention ins(%{{.+}}, %{{.+}}, %{{.+}} : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
// CHECK-SAME: -> tensor<1x2x8x16xf32>, tensor<1x2x8xf32>, tensor<1x2x8xf32>
// CHECK-COUNT-3: tensor.cast
func.func @fold_cast_into_online_attention(%q: tensor<1x2x8x16xf32>,
    %max: tensor<1x2x8xf32>)
    -> (tensor<?x2x8x16xf32>, tensor<?x2x8xf32>, tensor<?x2x8xf32>) {
  %qd = tensor.cast %q : tensor<1x2x8x16xf32> to tensor<?x2x8x16xf32>
  %md = tensor.cast %max : tensor<1x2x8xf32> to tensor<?x2x8xf32>
  %r:3 = attn.online_attention
      ins(%qd, %qd, %qd : tensor<?x2x8x16xf32>, tensor<?x2x8x16xf32>,
                          tensor<?x2x8x16xf32>)
      outs(%qd, %md, %md : tensor<?x2x8x16xf32>, tensor<?x2x8xf32>,
                           tensor<?x2x8xf32>)
      -> tensor<?x2x8x16xf32>, tensor<?x2x8xf32>, tensor<?x2x8xf32>
  return %r#0, %r#1, %r#2
      : tensor<?x2x8x16xf32>, tensor<?x2x8xf32>, tensor<?x2x8xf32>
}

// -----

// CHECK-LABEL: func.func @fold_cast_into_mha
// CHECK: attn.multi_head_attention ins(%{{.+}}, %{{.+}}, %{{.+}} : tensor<1x2x4xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>) weights(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} : tensor<4x4xf32>,
// CHECK-SAME: -> tensor<1x2x4xf32>
func.func @fold_cast_into_mha(%x: tensor<1x2x4xf32>, %w: tensor<4x4xf32>)
    -> tensor<1x2x4xf32> {
  %wd = tensor.cast %w : tensor<4x4xf32> to tensor<4x?xf32>
  %0 = attn.multi_head_attention
      ins(%x, %x, %x : tensor<1x2x4xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>)
      weights(%wd, %w, %w, %w : tensor<4x?xf32>, tensor<4x4xf32>,
                                tensor<4x4xf32>, tensor<4x4xf32>)
      outs(%x : tensor<1x2x4xf32>) {num_heads = 1 : i64} -> tensor<1x2x4xf32>
  return %0 : tensor<1x2x4xf32>
}
