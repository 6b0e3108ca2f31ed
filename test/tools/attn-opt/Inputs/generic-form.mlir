// Generic-form attention ops that the custom parser would never produce.

// Missing operands for the declared segment sizes.
func.func @missing_operands(%q: tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32> {
  %0 = "attn.attention"(%q, %q) <{layout = #attn.layout<bhsd>, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0>}> ({}, {}) : (tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32>
  return %0 : tensor<1x4x8x16xf32>
}

// -----

// No operandSegmentSizes at all.
func.func @no_segments(%q: tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32> {
  %0 = "attn.attention"(%q, %q, %q, %q) ({}, {}) : (tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32>
  return %0 : tensor<1x4x8x16xf32>
}

// -----

// An integer where a float tensor belongs.
func.func @wrong_type(%q: tensor<1x4x8x16xf32>, %i: i32) -> tensor<1x4x8x16xf32> {
  %0 = "attn.attention"(%q, %i, %q, %q) <{operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0>}> ({}, {}) : (tensor<1x4x8x16xf32>, i32, tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32>
  return %0 : tensor<1x4x8x16xf32>
}

// -----

// One region instead of two.
func.func @one_region(%q: tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32> {
  %0 = "attn.attention"(%q, %q, %q, %q) <{operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0>}> ({}) : (tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32>
  return %0 : tensor<1x4x8x16xf32>
}

// -----

// A score_mod region whose block has no terminator.
func.func @no_terminator(%q: tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32> {
  %0 = "attn.attention"(%q, %q, %q, %q) <{operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0>}> ({
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
  }, {}) : (tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32>
  return %0 : tensor<1x4x8x16xf32>
}

// -----

// Attributes of the wrong kind.
func.func @wrong_attrs(%q: tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32> {
  %0 = "attn.attention"(%q, %q, %q, %q) <{structured_mask = 3 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0>}> ({}, {}) : (tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32>
  return %0 : tensor<1x4x8x16xf32>
}

// -----

// No result.
func.func @no_result(%q: tensor<1x4x8x16xf32>) {
  "attn.attention"(%q, %q, %q, %q) <{operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0>}> ({}, {}) : (tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>) -> ()
  return
}

// -----

// multi_head_attention without its required num_heads.
func.func @mha_no_heads(%x: tensor<1x8x16xf32>, %w: tensor<16x16xf32>) -> tensor<1x8x16xf32> {
  %0 = "attn.multi_head_attention"(%x, %x, %x, %w, %w, %w, %w, %x) <{operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1>}> ({}, {}) : (tensor<1x8x16xf32>, tensor<1x8x16xf32>, tensor<1x8x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<1x8x16xf32>) -> tensor<1x8x16xf32>
  return %0 : tensor<1x8x16xf32>
}
