// RUN: attn-opt %s -split-input-file -verify-diagnostics

// Negative tests for the attn dialect verifiers: one case per rule.
// Common shapes (BHSD): Q [1, 4, 8, 16], K/V [1, 2, 8, 16], out [1, 4, 8, 16].

//===----------------------------------------------------------------------===//
// attn.attention: operand ranks
//===----------------------------------------------------------------------===//

func.func @attention_query_rank(%q: tensor<4x8x16xf32>, %k: tensor<1x2x8x16xf32>,
                                %v: tensor<1x2x8x16xf32>, %o: tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32> {
  // expected-error @+1 {{'attn.attention' op expected query to have rank 4 [B, H, S, D], got rank 3}}
  %r = attn.attention ins(%q, %k, %v : tensor<4x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
      outs(%o : tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32>
  return %r : tensor<1x4x8x16xf32>
}

// -----

func.func @attention_key_rank(%q: tensor<1x4x8x16xf32>, %k: tensor<1x1x2x8x16xf32>,
                              %v: tensor<1x2x8x16xf32>, %o: tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32> {
  // expected-error @+1 {{expected key to have rank 4 [B, H, S, D], got rank 5}}
  %r = attn.attention ins(%q, %k, %v : tensor<1x4x8x16xf32>, tensor<1x1x2x8x16xf32>, tensor<1x2x8x16xf32>)
      outs(%o : tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32>
  return %r : tensor<1x4x8x16xf32>
}

// -----

func.func @attention_value_rank(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x8x16xf32>,
                                %v: tensor<2x8x16xf32>, %o: tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32> {
  // expected-error @+1 {{expected value to have rank 4 [B, H, S, Dv], got rank 3}}
  %r = attn.attention ins(%q, %k, %v : tensor<1x4x8x16xf32>, tensor<1x2x8x16xf32>, tensor<2x8x16xf32>)
      outs(%o : tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32>
  return %r : tensor<1x4x8x16xf32>
}

// -----

func.func @attention_init_rank(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x8x16xf32>,
                               %v: tensor<1x2x8x16xf32>, %o: tensor<4x8x16xf32>) -> tensor<4x8x16xf32> {
  // expected-error @+1 {{expected init to have rank 4 [B, H, S, Dv], got rank 3}}
  %r = attn.attention ins(%q, %k, %v : tensor<1x4x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
      outs(%o : tensor<4x8x16xf32>) -> tensor<4x8x16xf32>
  return %r : tensor<4x8x16xf32>
}

// -----

// The rank message names the layout's dimension order.
func.func @attention_query_rank_bshd(%q: tensor<8x4x16xf32>, %k: tensor<1x8x2x16xf32>,
                                     %v: tensor<1x8x2x16xf32>, %o: tensor<1x8x4x16xf32>) -> tensor<1x8x4x16xf32> {
  // expected-error @+1 {{expected query to have rank 4 [B, S, H, D], got rank 3}}
  %r = attn.attention ins(%q, %k, %v : tensor<8x4x16xf32>, tensor<1x8x2x16xf32>, tensor<1x8x2x16xf32>)
      outs(%o : tensor<1x8x4x16xf32>) {layout = #attn.layout<bshd>} -> tensor<1x8x4x16xf32>
  return %r : tensor<1x8x4x16xf32>
}

// -----

//===----------------------------------------------------------------------===//
// attn.attention: element types
//===----------------------------------------------------------------------===//

func.func @attention_element_type_mismatch(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x8x16xf16>,
                                           %v: tensor<1x2x8x16xf32>, %o: tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32> {
  // expected-error @+1 {{expected query, key and value to have the same element type, got 'f32', 'f16' and 'f32'}}
  %r = attn.attention ins(%q, %k, %v : tensor<1x4x8x16xf32>, tensor<1x2x8x16xf16>, tensor<1x2x8x16xf32>)
      outs(%o : tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32>
  return %r : tensor<1x4x8x16xf32>
}

// -----

func.func @attention_value_element_type_mismatch(%q: tensor<1x4x8x16xbf16>, %k: tensor<1x2x8x16xbf16>,
                                                 %v: tensor<1x2x8x16xf16>, %o: tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32> {
  // expected-error @+1 {{expected query, key and value to have the same element type, got 'bf16', 'bf16' and 'f16'}}
  %r = attn.attention ins(%q, %k, %v : tensor<1x4x8x16xbf16>, tensor<1x2x8x16xbf16>, tensor<1x2x8x16xf16>)
      outs(%o : tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32>
  return %r : tensor<1x4x8x16xf32>
}

// -----

func.func @attention_integer_query(%q: tensor<1x4x8x16xi32>, %k: tensor<1x2x8x16xf32>,
                                   %v: tensor<1x2x8x16xf32>, %o: tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32> {
  // expected-error @+1 {{'attn.attention' op operand #0 must be ranked tensor of 32-bit float or 16-bit float or bfloat16 type values, but got 'tensor<1x4x8x16xi32>'}}
  %r = attn.attention ins(%q, %k, %v : tensor<1x4x8x16xi32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
      outs(%o : tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32>
  return %r : tensor<1x4x8x16xf32>
}

// -----

func.func @attention_f64_init(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x8x16xf32>,
                              %v: tensor<1x2x8x16xf32>, %o: tensor<1x4x8x16xf64>) -> tensor<1x4x8x16xf64> {
  // expected-error @+1 {{operand #3 must be ranked tensor of 32-bit float or 16-bit float or bfloat16 type values, but got 'tensor<1x4x8x16xf64>'}}
  %r = attn.attention ins(%q, %k, %v : tensor<1x4x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
      outs(%o : tensor<1x4x8x16xf64>) -> tensor<1x4x8x16xf64>
  return %r : tensor<1x4x8x16xf64>
}

// -----

func.func @attention_unranked_key(%q: tensor<1x4x8x16xf32>, %k: tensor<*xf32>,
                                  %v: tensor<1x2x8x16xf32>, %o: tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32> {
  // The custom parser already demands a ranked tensor type.
  // expected-error @+1 {{invalid kind of type specified: expected builtin.tensor, but found 'tensor<*xf32>'}}
  %r = attn.attention ins(%q, %k, %v : tensor<1x4x8x16xf32>, tensor<*xf32>, tensor<1x2x8x16xf32>)
      outs(%o : tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32>
  return %r : tensor<1x4x8x16xf32>
}

// -----

func.func @attention_float_mask(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x8x16xf32>,
                                %v: tensor<1x2x8x16xf32>, %o: tensor<1x4x8x16xf32>,
                                %m: tensor<8x8xf32>) -> tensor<1x4x8x16xf32> {
  // expected-error @+1 {{operand #3 must be ranked tensor of 1-bit signless integer values, but got 'tensor<8x8xf32>'}}
  %r = attn.attention ins(%q, %k, %v : tensor<1x4x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
      mask(%m : tensor<8x8xf32>)
      outs(%o : tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32>
  return %r : tensor<1x4x8x16xf32>
}

// -----

func.func @attention_integer_bias(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x8x16xf32>,
                                  %v: tensor<1x2x8x16xf32>, %o: tensor<1x4x8x16xf32>,
                                  %b: tensor<8x8xi1>) -> tensor<1x4x8x16xf32> {
  // expected-error @+1 {{operand #3 must be ranked tensor of 32-bit float or 16-bit float or bfloat16 type values, but got 'tensor<8x8xi1>'}}
  %r = attn.attention ins(%q, %k, %v : tensor<1x4x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
      bias(%b : tensor<8x8xi1>)
      outs(%o : tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32>
  return %r : tensor<1x4x8x16xf32>
}

// -----

func.func @attention_float_kv_lens(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x8x16xf32>,
                                   %v: tensor<1x2x8x16xf32>, %o: tensor<1x4x8x16xf32>,
                                   %l: tensor<1xf32>) -> tensor<1x4x8x16xf32> {
  // expected-error @+1 {{must be ranked tensor of 32-bit signless integer values, but got 'tensor<1xf32>'}}
  %r = attn.attention ins(%q, %k, %v : tensor<1x4x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
      kv_lens(%l : tensor<1xf32>)
      outs(%o : tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32>
  return %r : tensor<1x4x8x16xf32>
}

// -----

func.func @attention_result_type_mismatch(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x8x16xf32>,
                                          %v: tensor<1x2x8x16xf32>, %o: tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf16> {
  // expected-error @+1 {{expected type of operand #3 ('tensor<1x4x8x16xf32>') to match type of corresponding result ('tensor<1x4x8x16xf16>')}}
  %r = attn.attention ins(%q, %k, %v : tensor<1x4x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
      outs(%o : tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf16>
  return %r : tensor<1x4x8x16xf16>
}

// -----

//===----------------------------------------------------------------------===//
// attn.attention: query/key/value shapes
//===----------------------------------------------------------------------===//

func.func @attention_key_batch(%q: tensor<1x4x8x16xf32>, %k: tensor<2x2x8x16xf32>,
                               %v: tensor<1x2x8x16xf32>, %o: tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32> {
  // expected-error @+1 {{key batch size is 2, expected 1 (must match query)}}
  %r = attn.attention ins(%q, %k, %v : tensor<1x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<1x2x8x16xf32>)
      outs(%o : tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32>
  return %r : tensor<1x4x8x16xf32>
}

// -----

func.func @attention_value_batch(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x8x16xf32>,
                                 %v: tensor<3x2x8x16xf32>, %o: tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32> {
  // expected-error @+1 {{value batch size is 3, expected 1 (must match query)}}
  %r = attn.attention ins(%q, %k, %v : tensor<1x4x8x16xf32>, tensor<1x2x8x16xf32>, tensor<3x2x8x16xf32>)
      outs(%o : tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32>
  return %r : tensor<1x4x8x16xf32>
}

// -----

// A dynamic batch is accepted where a static mismatch would fail; the error
// comes from the key head dim instead.
func.func @attention_dynamic_batch_then_head_dim(%q: tensor<1x4x8x16xf32>, %k: tensor<?x2x8x32xf32>,
                                                 %v: tensor<?x2x8x16xf32>, %o: tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32> {
  // expected-error @+1 {{key head dim D is 32, expected 16 (must match query)}}
  %r = attn.attention ins(%q, %k, %v : tensor<1x4x8x16xf32>, tensor<?x2x8x32xf32>, tensor<?x2x8x16xf32>)
      outs(%o : tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32>
  return %r : tensor<1x4x8x16xf32>
}

// -----

func.func @attention_value_heads(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x8x16xf32>,
                                 %v: tensor<1x1x8x16xf32>, %o: tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32> {
  // expected-error @+1 {{value head count is 1, expected 2 (must match key)}}
  %r = attn.attention ins(%q, %k, %v : tensor<1x4x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x1x8x16xf32>)
      outs(%o : tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32>
  return %r : tensor<1x4x8x16xf32>
}

// -----

func.func @attention_value_seq(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x8x16xf32>,
                               %v: tensor<1x2x4x16xf32>, %o: tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32> {
  // expected-error @+1 {{value sequence length is 4, expected 8 (must match key)}}
  %r = attn.attention ins(%q, %k, %v : tensor<1x4x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x4x16xf32>)
      outs(%o : tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32>
  return %r : tensor<1x4x8x16xf32>
}

// -----

// BSHD: heads are dim 2, so a K/V pair that is fine in BHSD fails here.
func.func @attention_value_heads_bshd(%q: tensor<1x8x4x16xf32>, %k: tensor<1x8x2x16xf32>,
                                      %v: tensor<1x2x8x16xf32>, %o: tensor<1x8x4x16xf32>) -> tensor<1x8x4x16xf32> {
  // expected-error @+1 {{value head count is 8, expected 2 (must match key)}}
  %r = attn.attention ins(%q, %k, %v : tensor<1x8x4x16xf32>, tensor<1x8x2x16xf32>, tensor<1x2x8x16xf32>)
      outs(%o : tensor<1x8x4x16xf32>) {layout = #attn.layout<bshd>} -> tensor<1x8x4x16xf32>
  return %r : tensor<1x8x4x16xf32>
}

// -----

func.func @attention_zero_query_heads(%q: tensor<1x0x8x16xf32>, %k: tensor<1x2x8x16xf32>,
                                      %v: tensor<1x2x8x16xf32>, %o: tensor<1x0x8x16xf32>) -> tensor<1x0x8x16xf32> {
  // expected-error @+1 {{query head count must be > 0}}
  %r = attn.attention ins(%q, %k, %v : tensor<1x0x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
      outs(%o : tensor<1x0x8x16xf32>) -> tensor<1x0x8x16xf32>
  return %r : tensor<1x0x8x16xf32>
}

// -----

func.func @attention_zero_kv_heads(%q: tensor<1x4x8x16xf32>, %k: tensor<1x0x8x16xf32>,
                                   %v: tensor<1x0x8x16xf32>, %o: tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32> {
  // expected-error @+1 {{key head count must be > 0}}
  %r = attn.attention ins(%q, %k, %v : tensor<1x4x8x16xf32>, tensor<1x0x8x16xf32>, tensor<1x0x8x16xf32>)
      outs(%o : tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32>
  return %r : tensor<1x4x8x16xf32>
}

// -----

func.func @attention_heads_not_multiple(%q: tensor<1x4x8x16xf32>, %k: tensor<1x3x8x16xf32>,
                                        %v: tensor<1x3x8x16xf32>, %o: tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32> {
  // expected-error @+1 {{query head count (4) must be a multiple of the key/value head count (3)}}
  %r = attn.attention ins(%q, %k, %v : tensor<1x4x8x16xf32>, tensor<1x3x8x16xf32>, tensor<1x3x8x16xf32>)
      outs(%o : tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32>
  return %r : tensor<1x4x8x16xf32>
}

// -----

// A dynamic query head count skips the Hq % Hkv check (3 kv heads would fail
// against 4 static query heads); the error comes from the init instead.
func.func @attention_dynamic_heads_then_init(%q: tensor<1x?x8x16xf32>, %k: tensor<1x3x8x16xf32>,
                                             %v: tensor<1x3x8x16xf32>, %o: tensor<1x?x8x32xf32>) -> tensor<1x?x8x32xf32> {
  // expected-error @+1 {{init feature dim Dv is 32, expected 16 (must match value)}}
  %r = attn.attention ins(%q, %k, %v : tensor<1x?x8x16xf32>, tensor<1x3x8x16xf32>, tensor<1x3x8x16xf32>)
      outs(%o : tensor<1x?x8x32xf32>) -> tensor<1x?x8x32xf32>
  return %r : tensor<1x?x8x32xf32>
}

// -----

//===----------------------------------------------------------------------===//
// attn.attention: mask, bias, kv_lens
//===----------------------------------------------------------------------===//

func.func @attention_mask_not_broadcastable(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x8x16xf32>,
                                            %v: tensor<1x2x8x16xf32>, %o: tensor<1x4x8x16xf32>,
                                            %m: tensor<8x4xi1>) -> tensor<1x4x8x16xf32> {
  // expected-error @+1 {{mask dim 1 is 4, which does not broadcast to Sk = 8 (expected 1 or 8)}}
  %r = attn.attention ins(%q, %k, %v : tensor<1x4x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
      mask(%m : tensor<8x4xi1>)
      outs(%o : tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32>
  return %r : tensor<1x4x8x16xf32>
}

// -----

// The mask broadcasts against Hq (4), not Hkv (2).
func.func @attention_mask_kv_heads(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x8x16xf32>,
                                   %v: tensor<1x2x8x16xf32>, %o: tensor<1x4x8x16xf32>,
                                   %m: tensor<1x2x8x8xi1>) -> tensor<1x4x8x16xf32> {
  // expected-error @+1 {{mask dim 1 is 2, which does not broadcast to Hq = 4 (expected 1 or 4)}}
  %r = attn.attention ins(%q, %k, %v : tensor<1x4x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
      mask(%m : tensor<1x2x8x8xi1>)
      outs(%o : tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32>
  return %r : tensor<1x4x8x16xf32>
}

// -----

func.func @attention_mask_rank(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x8x16xf32>,
                               %v: tensor<1x2x8x16xf32>, %o: tensor<1x4x8x16xf32>,
                               %m: tensor<1x1x4x8x8xi1>) -> tensor<1x4x8x16xf32> {
  // expected-error @+1 {{expected mask to have rank at most 4 (broadcastable to [B, Hq, Sq, Sk]), got rank 5}}
  %r = attn.attention ins(%q, %k, %v : tensor<1x4x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
      mask(%m : tensor<1x1x4x8x8xi1>)
      outs(%o : tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32>
  return %r : tensor<1x4x8x16xf32>
}

// -----

// In BSHD the mask still broadcasts to [B, Hq, Sq, Sk]: Sq is 8 here.
func.func @attention_bias_not_broadcastable_bshd(%q: tensor<1x8x4x16xf32>, %k: tensor<1x6x2x16xf32>,
                                                 %v: tensor<1x6x2x16xf32>, %o: tensor<1x8x4x16xf32>,
                                                 %b: tensor<4x6xf32>) -> tensor<1x8x4x16xf32> {
  // expected-error @+1 {{bias dim 0 is 4, which does not broadcast to Sq = 8 (expected 1 or 8)}}
  %r = attn.attention ins(%q, %k, %v : tensor<1x8x4x16xf32>, tensor<1x6x2x16xf32>, tensor<1x6x2x16xf32>)
      bias(%b : tensor<4x6xf32>)
      outs(%o : tensor<1x8x4x16xf32>) {layout = #attn.layout<bshd>} -> tensor<1x8x4x16xf32>
  return %r : tensor<1x8x4x16xf32>
}

// -----

func.func @attention_bias_not_broadcastable(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x8x16xf32>,
                                            %v: tensor<1x2x8x16xf32>, %o: tensor<1x4x8x16xf32>,
                                            %b: tensor<2x4x8x8xf32>) -> tensor<1x4x8x16xf32> {
  // expected-error @+1 {{bias dim 0 is 2, which does not broadcast to B = 1 (expected 1)}}
  %r = attn.attention ins(%q, %k, %v : tensor<1x4x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
      bias(%b : tensor<2x4x8x8xf32>)
      outs(%o : tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32>
  return %r : tensor<1x4x8x16xf32>
}

// -----

func.func @attention_bias_rank(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x8x16xf32>,
                               %v: tensor<1x2x8x16xf32>, %o: tensor<1x4x8x16xf32>,
                               %b: tensor<1x1x1x8x8xf16>) -> tensor<1x4x8x16xf32> {
  // expected-error @+1 {{expected bias to have rank at most 4 (broadcastable to [B, Hq, Sq, Sk]), got rank 5}}
  %r = attn.attention ins(%q, %k, %v : tensor<1x4x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
      bias(%b : tensor<1x1x1x8x8xf16>)
      outs(%o : tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32>
  return %r : tensor<1x4x8x16xf32>
}

// -----

// A dynamic mask dim is accepted; the bias after it is checked and fails.
func.func @attention_dynamic_mask_then_bias(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x8x16xf32>,
                                            %v: tensor<1x2x8x16xf32>, %o: tensor<1x4x8x16xf32>,
                                            %m: tensor<?x?xi1>, %b: tensor<3x1x1xf32>) -> tensor<1x4x8x16xf32> {
  // expected-error @+1 {{bias dim 0 is 3, which does not broadcast to Hq = 4 (expected 1 or 4)}}
  %r = attn.attention ins(%q, %k, %v : tensor<1x4x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
      mask(%m : tensor<?x?xi1>) bias(%b : tensor<3x1x1xf32>)
      outs(%o : tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32>
  return %r : tensor<1x4x8x16xf32>
}

// -----

func.func @attention_kv_lens_rank(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x8x16xf32>,
                                  %v: tensor<1x2x8x16xf32>, %o: tensor<1x4x8x16xf32>,
                                  %l: tensor<1x1xi32>) -> tensor<1x4x8x16xf32> {
  // expected-error @+1 {{expected kv_lens to have rank 1 [B], got rank 2}}
  %r = attn.attention ins(%q, %k, %v : tensor<1x4x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
      kv_lens(%l : tensor<1x1xi32>)
      outs(%o : tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32>
  return %r : tensor<1x4x8x16xf32>
}

// -----

func.func @attention_kv_lens_size(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x8x16xf32>,
                                  %v: tensor<1x2x8x16xf32>, %o: tensor<1x4x8x16xf32>,
                                  %l: tensor<2xi32>) -> tensor<1x4x8x16xf32> {
  // expected-error @+1 {{kv_lens size is 2, expected 1 (one length per batch entry)}}
  %r = attn.attention ins(%q, %k, %v : tensor<1x4x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
      kv_lens(%l : tensor<2xi32>)
      outs(%o : tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32>
  return %r : tensor<1x4x8x16xf32>
}

// -----

//===----------------------------------------------------------------------===//
// attn.attention: attributes
//===----------------------------------------------------------------------===//

func.func @attention_scale_zero(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x8x16xf32>,
                                %v: tensor<1x2x8x16xf32>, %o: tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32> {
  // expected-error @+1 {{expected 'scale' to be a positive number of at most 2^64, got 0.000000e+00}}
  %r = attn.attention ins(%q, %k, %v : tensor<1x4x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
      outs(%o : tensor<1x4x8x16xf32>) {scale = 0.0 : f32} -> tensor<1x4x8x16xf32>
  return %r : tensor<1x4x8x16xf32>
}

// -----

func.func @attention_scale_negative(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x8x16xf32>,
                                    %v: tensor<1x2x8x16xf32>, %o: tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32> {
  // expected-error @+1 {{expected 'scale' to be a positive number of at most 2^64, got -2.500000e-01}}
  %r = attn.attention ins(%q, %k, %v : tensor<1x4x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
      outs(%o : tensor<1x4x8x16xf32>) {scale = -0.25 : f32} -> tensor<1x4x8x16xf32>
  return %r : tensor<1x4x8x16xf32>
}

// -----

func.func @attention_scale_inf(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x8x16xf32>,
                               %v: tensor<1x2x8x16xf32>, %o: tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32> {
  // expected-error @+1 {{expected 'scale' to be a positive number of at most 2^64, got INF}}
  %r = attn.attention ins(%q, %k, %v : tensor<1x4x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
      outs(%o : tensor<1x4x8x16xf32>) {scale = 0x7F800000 : f32} -> tensor<1x4x8x16xf32>
  return %r : tensor<1x4x8x16xf32>
}

// -----

func.func @attention_scale_nan(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x8x16xf32>,
                               %v: tensor<1x2x8x16xf32>, %o: tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32> {
  // expected-error @+1 {{expected 'scale' to be a positive number of at most 2^64, got nan}}
  %r = attn.attention ins(%q, %k, %v : tensor<1x4x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
      outs(%o : tensor<1x4x8x16xf32>) {scale = 0x7FC00000 : f32} -> tensor<1x4x8x16xf32>
  return %r : tensor<1x4x8x16xf32>
}

// -----

func.func @attention_scale_not_f32(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x8x16xf32>,
                                   %v: tensor<1x2x8x16xf32>, %o: tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32> {
  // expected-error @+2 {{attribute 'scale' failed to satisfy constraint: 32-bit float attribute}}
  %r = attn.attention ins(%q, %k, %v : tensor<1x4x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
      outs(%o : tensor<1x4x8x16xf32>) {scale = 0.5 : f64} -> tensor<1x4x8x16xf32>
  return %r : tensor<1x4x8x16xf32>
}

// -----

func.func @attention_structured_mask_not_a_mask(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x8x16xf32>,
                                                %v: tensor<1x2x8x16xf32>, %o: tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32> {
  // expected-error @+2 {{attribute 'structured_mask' failed to satisfy constraint: structured mask attribute}}
  %r = attn.attention ins(%q, %k, %v : tensor<1x4x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
      outs(%o : tensor<1x4x8x16xf32>) {structured_mask = #attn.layout<bshd>} -> tensor<1x4x8x16xf32>
  return %r : tensor<1x4x8x16xf32>
}

// -----

func.func @attention_layout_not_a_layout(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x8x16xf32>,
                                         %v: tensor<1x2x8x16xf32>, %o: tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32> {
  // expected-error @+2 {{attribute 'layout' failed to satisfy constraint}}
  %r = attn.attention ins(%q, %k, %v : tensor<1x4x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
      outs(%o : tensor<1x4x8x16xf32>) {layout = 1 : i32} -> tensor<1x4x8x16xf32>
  return %r : tensor<1x4x8x16xf32>
}

// -----

func.func @sliding_window_negative_left(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x8x16xf32>,
                                        %v: tensor<1x2x8x16xf32>, %o: tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32> {
  %r = attn.attention ins(%q, %k, %v : tensor<1x4x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
      outs(%o : tensor<1x4x8x16xf32>)
      // expected-error @+1 {{sliding_window 'left' must be in [0, 2^40], got -1}}
      {structured_mask = #attn.sliding_window<left = -1, right = 0>} -> tensor<1x4x8x16xf32>
  return %r : tensor<1x4x8x16xf32>
}

// -----

func.func @sliding_window_negative_right(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x8x16xf32>,
                                         %v: tensor<1x2x8x16xf32>, %o: tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32> {
  %r = attn.attention ins(%q, %k, %v : tensor<1x4x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
      outs(%o : tensor<1x4x8x16xf32>)
      // expected-error @+1 {{sliding_window 'right' must be in [0, 2^40], got -4}}
      {structured_mask = #attn.sliding_window<left = 4, right = -4, alignment = bottom_right>} -> tensor<1x4x8x16xf32>
  return %r : tensor<1x4x8x16xf32>
}

// -----

//===----------------------------------------------------------------------===//
// attn.attention: init (output) shape
//===----------------------------------------------------------------------===//

func.func @attention_init_batch(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x8x16xf32>,
                                %v: tensor<1x2x8x16xf32>, %o: tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32> {
  // expected-error @+1 {{init batch size is 2, expected 1 (must match query)}}
  %r = attn.attention ins(%q, %k, %v : tensor<1x4x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
      outs(%o : tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32>
  return %r : tensor<2x4x8x16xf32>
}

// -----

// The output has Hq heads, not Hkv.
func.func @attention_init_heads(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x8x16xf32>,
                                %v: tensor<1x2x8x16xf32>, %o: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  // expected-error @+1 {{init head count is 2, expected 4 (must match query)}}
  %r = attn.attention ins(%q, %k, %v : tensor<1x4x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
      outs(%o : tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  return %r : tensor<1x2x8x16xf32>
}

// -----

// The output has Sq rows, not Sk.
func.func @attention_init_seq(%q: tensor<1x4x1x16xf32>, %k: tensor<1x2x8x16xf32>,
                              %v: tensor<1x2x8x16xf32>, %o: tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32> {
  // expected-error @+1 {{init sequence length is 8, expected 1 (must match query)}}
  %r = attn.attention ins(%q, %k, %v : tensor<1x4x1x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
      outs(%o : tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32>
  return %r : tensor<1x4x8x16xf32>
}

// -----

// The output feature dim is Dv (32), not D (16).
func.func @attention_init_value_dim(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x8x16xf32>,
                                    %v: tensor<1x2x8x32xf32>, %o: tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32> {
  // expected-error @+1 {{init feature dim Dv is 16, expected 32 (must match value)}}
  %r = attn.attention ins(%q, %k, %v : tensor<1x4x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x32xf32>)
      outs(%o : tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32>
  return %r : tensor<1x4x8x16xf32>
}

// -----

// BSHD: the BHSD-ordered output is rejected.
func.func @attention_init_heads_bshd(%q: tensor<1x8x4x16xf32>, %k: tensor<1x8x2x16xf32>,
                                     %v: tensor<1x8x2x16xf32>, %o: tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32> {
  // expected-error @+1 {{init head count is 8, expected 4 (must match query)}}
  %r = attn.attention ins(%q, %k, %v : tensor<1x8x4x16xf32>, tensor<1x8x2x16xf32>, tensor<1x8x2x16xf32>)
      outs(%o : tensor<1x4x8x16xf32>) {layout = #attn.layout<bshd>} -> tensor<1x4x8x16xf32>
  return %r : tensor<1x4x8x16xf32>
}

// -----

//===----------------------------------------------------------------------===//
// attn.attention: score_mod / mask_mod regions
//===----------------------------------------------------------------------===//

func.func @score_mod_arg_count(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x8x16xf32>,
                               %v: tensor<1x2x8x16xf32>, %o: tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32> {
  // expected-error @+1 {{expected score_mod region arguments (f32 score, index b, index h, index q_idx, index kv_idx) -> f32, got 4 argument(s) of types ('f32', 'index', 'index', 'index')}}
  %r = attn.attention ins(%q, %k, %v : tensor<1x4x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
      outs(%o : tensor<1x4x8x16xf32>)
      score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %i: index):
        attn.yield %s : f32
      } -> tensor<1x4x8x16xf32>
  return %r : tensor<1x4x8x16xf32>
}

// -----

func.func @score_mod_arg_types(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x8x16xf32>,
                               %v: tensor<1x2x8x16xf32>, %o: tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32> {
  // expected-error @+1 {{expected score_mod region arguments (f32 score, index b, index h, index q_idx, index kv_idx) -> f32, got 5 argument(s) of types ('f16', 'index', 'index', 'i32', 'index')}}
  %r = attn.attention ins(%q, %k, %v : tensor<1x4x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
      outs(%o : tensor<1x4x8x16xf32>)
      score_mod {
      ^bb0(%s: f16, %b: index, %h: index, %i: i32, %j: index):
        %c = arith.constant 1.0 : f32
        attn.yield %c : f32
      } -> tensor<1x4x8x16xf32>
  return %r : tensor<1x4x8x16xf32>
}

// -----

func.func @score_mod_yield_type(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x8x16xf32>,
                                %v: tensor<1x2x8x16xf32>, %o: tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32> {
  %r = attn.attention ins(%q, %k, %v : tensor<1x4x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
      outs(%o : tensor<1x4x8x16xf32>)
      score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
        %t = arith.truncf %s : f32 to f16
        // expected-error @+1 {{'attn.yield' op in score_mod must yield exactly one 'f32', got ('f16')}}
        attn.yield %t : f16
      } -> tensor<1x4x8x16xf32>
  return %r : tensor<1x4x8x16xf32>
}

// -----

func.func @score_mod_yield_two_values(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x8x16xf32>,
                                      %v: tensor<1x2x8x16xf32>, %o: tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32> {
  %r = attn.attention ins(%q, %k, %v : tensor<1x4x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
      outs(%o : tensor<1x4x8x16xf32>)
      score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
        // expected-error @+1 {{'attn.yield' op in score_mod must yield exactly one 'f32', got ('f32', 'f32')}}
        attn.yield %s, %s : f32, f32
      } -> tensor<1x4x8x16xf32>
  return %r : tensor<1x4x8x16xf32>
}

// -----

func.func @score_mod_yield_nothing(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x8x16xf32>,
                                   %v: tensor<1x2x8x16xf32>, %o: tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32> {
  %r = attn.attention ins(%q, %k, %v : tensor<1x4x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
      outs(%o : tensor<1x4x8x16xf32>)
      score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
        // expected-error @+1 {{'attn.yield' op in score_mod must yield exactly one 'f32', got ()}}
        attn.yield
      } -> tensor<1x4x8x16xf32>
  return %r : tensor<1x4x8x16xf32>
}

// -----

func.func @score_mod_wrong_terminator(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x8x16xf32>,
                                      %v: tensor<1x2x8x16xf32>, %o: tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32> {
  // expected-error @+1 {{expected score_mod region to end with attn.yield}}
  %r = attn.attention ins(%q, %k, %v : tensor<1x4x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
      outs(%o : tensor<1x4x8x16xf32>)
      score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
        llvm.unreachable
      } -> tensor<1x4x8x16xf32>
  return %r : tensor<1x4x8x16xf32>
}

// -----

func.func @score_mod_two_blocks(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x8x16xf32>,
                                %v: tensor<1x2x8x16xf32>, %o: tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32> {
  // expected-error @+1 {{region #0 ('score_mod') failed to verify constraint: region with at most 1 blocks}}
  %r = attn.attention ins(%q, %k, %v : tensor<1x4x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
      outs(%o : tensor<1x4x8x16xf32>)
      score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
        cf.br ^bb1
      ^bb1:
        attn.yield %s : f32
      } -> tensor<1x4x8x16xf32>
  return %r : tensor<1x4x8x16xf32>
}

// -----

func.func @mask_mod_yield_type(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x8x16xf32>,
                               %v: tensor<1x2x8x16xf32>, %o: tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32> {
  %r = attn.attention ins(%q, %k, %v : tensor<1x4x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
      outs(%o : tensor<1x4x8x16xf32>)
      mask_mod {
      ^bb0(%b: index, %h: index, %i: index, %j: index):
        %c = arith.cmpi ule, %j, %i : index
        %f = arith.uitofp %c : i1 to f32
        // expected-error @+1 {{'attn.yield' op in mask_mod must yield exactly one 'i1', got ('f32')}}
        attn.yield %f : f32
      } -> tensor<1x4x8x16xf32>
  return %r : tensor<1x4x8x16xf32>
}

// -----

// mask_mod takes the indices only, not the score.
func.func @mask_mod_arg_count(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x8x16xf32>,
                              %v: tensor<1x2x8x16xf32>, %o: tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32> {
  // expected-error @+1 {{expected mask_mod region arguments (index b, index h, index q_idx, index kv_idx) -> i1, got 5 argument(s) of types ('f32', 'index', 'index', 'index', 'index')}}
  %r = attn.attention ins(%q, %k, %v : tensor<1x4x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
      outs(%o : tensor<1x4x8x16xf32>)
      mask_mod {
      ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
        %c = arith.cmpi ule, %j, %i : index
        attn.yield %c : i1
      } -> tensor<1x4x8x16xf32>
  return %r : tensor<1x4x8x16xf32>
}

// -----

func.func @mask_mod_two_blocks(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x8x16xf32>,
                               %v: tensor<1x2x8x16xf32>, %o: tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32> {
  // expected-error @+1 {{region #1 ('mask_mod') failed to verify constraint: region with at most 1 blocks}}
  %r = attn.attention ins(%q, %k, %v : tensor<1x4x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
      outs(%o : tensor<1x4x8x16xf32>)
      mask_mod {
      ^bb0(%b: index, %h: index, %i: index, %j: index):
        %c = arith.cmpi ule, %j, %i : index
        cf.br ^bb1(%c : i1)
      ^bb1(%x: i1):
        attn.yield %x : i1
      } -> tensor<1x4x8x16xf32>
  return %r : tensor<1x4x8x16xf32>
}

// -----

func.func @yield_outside_attn_op(%s: f32) {
  // expected-error @+1 {{'attn.yield' op expects parent op to be one of 'attn.attention, attn.online_attention, attn.multi_head_attention'}}
  attn.yield %s : f32
}

// -----

func.func @yield_in_other_region(%c: i1, %s: f32) -> f32 {
  %r = scf.if %c -> f32 {
    // expected-error @+1 {{'attn.yield' op expects parent op to be one of 'attn.attention, attn.online_attention, attn.multi_head_attention'}}
    attn.yield %s : f32
  } else {
    scf.yield %s : f32
  }
  return %r : f32
}

// -----

//===----------------------------------------------------------------------===//
// attn.online_attention
// Common shapes: Q [1, 4, 8, 16], K/V [1, 2, 8, 16], acc [1, 4, 8, 16],
// max/sum [1, 4, 8].
//===----------------------------------------------------------------------===//

func.func @online_offsets_count(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>,
                                %acc: tensor<1x4x8x16xf32>, %m: tensor<1x4x8xf32>, %s: tensor<1x4x8xf32>,
                                %i: index) -> tensor<1x4x8x16xf32> {
  // expected-error @+1 {{expected 4 offsets (b, h, q, kv) or none, got 2}}
  %a, %mx, %sm = attn.online_attention
      ins(%q, %k, %v : tensor<1x4x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
      offsets(%i, %i : index, index)
      outs(%acc, %m, %s : tensor<1x4x8x16xf32>, tensor<1x4x8xf32>, tensor<1x4x8xf32>)
      -> tensor<1x4x8x16xf32>, tensor<1x4x8xf32>, tensor<1x4x8xf32>
  return %a : tensor<1x4x8x16xf32>
}

// -----

func.func @online_extents_count(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>,
                                %acc: tensor<1x4x8x16xf32>, %m: tensor<1x4x8xf32>, %s: tensor<1x4x8xf32>,
                                %i: index) -> tensor<1x4x8x16xf32> {
  // expected-error @+1 {{expected 2 extents (Sq, Sk) or none, got 3}}
  %a, %mx, %sm = attn.online_attention
      ins(%q, %k, %v : tensor<1x4x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
      offsets(%i, %i, %i, %i : index, index, index, index)
      extents(%i, %i, %i : index, index, index)
      outs(%acc, %m, %s : tensor<1x4x8x16xf32>, tensor<1x4x8xf32>, tensor<1x4x8xf32>)
      -> tensor<1x4x8x16xf32>, tensor<1x4x8xf32>, tensor<1x4x8xf32>
  return %a : tensor<1x4x8x16xf32>
}

// -----

func.func @online_extents_one(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>,
                              %acc: tensor<1x4x8x16xf32>, %m: tensor<1x4x8xf32>, %s: tensor<1x4x8xf32>,
                              %i: index) -> tensor<1x4x8x16xf32> {
  // expected-error @+1 {{expected 2 extents (Sq, Sk) or none, got 1}}
  %a, %mx, %sm = attn.online_attention
      ins(%q, %k, %v : tensor<1x4x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
      extents(%i : index)
      outs(%acc, %m, %s : tensor<1x4x8x16xf32>, tensor<1x4x8xf32>, tensor<1x4x8xf32>)
      -> tensor<1x4x8x16xf32>, tensor<1x4x8xf32>, tensor<1x4x8xf32>
  return %a : tensor<1x4x8x16xf32>
}

// -----

func.func @online_offsets_not_index(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>,
                                    %acc: tensor<1x4x8x16xf32>, %m: tensor<1x4x8xf32>, %s: tensor<1x4x8xf32>,
                                    %i: i64) -> tensor<1x4x8x16xf32> {
  // expected-error @+1 {{operand #3 must be variadic of index, but got 'i64'}}
  %a, %mx, %sm = attn.online_attention
      ins(%q, %k, %v : tensor<1x4x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
      offsets(%i, %i, %i, %i : i64, i64, i64, i64)
      outs(%acc, %m, %s : tensor<1x4x8x16xf32>, tensor<1x4x8xf32>, tensor<1x4x8xf32>)
      -> tensor<1x4x8x16xf32>, tensor<1x4x8xf32>, tensor<1x4x8xf32>
  return %a : tensor<1x4x8x16xf32>
}

// -----

func.func @online_query_rank(%q: tensor<4x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>,
                             %acc: tensor<1x4x8x16xf32>, %m: tensor<1x4x8xf32>, %s: tensor<1x4x8xf32>) -> tensor<1x4x8x16xf32> {
  // expected-error @+1 {{'attn.online_attention' op expected query to have rank 4 [B, H, S, D], got rank 3}}
  %a, %mx, %sm = attn.online_attention
      ins(%q, %k, %v : tensor<4x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
      outs(%acc, %m, %s : tensor<1x4x8x16xf32>, tensor<1x4x8xf32>, tensor<1x4x8xf32>)
      -> tensor<1x4x8x16xf32>, tensor<1x4x8xf32>, tensor<1x4x8xf32>
  return %a : tensor<1x4x8x16xf32>
}

// -----

func.func @online_heads_not_multiple(%q: tensor<1x4x8x16xf16>, %k: tensor<1x3x8x16xf16>, %v: tensor<1x3x8x16xf16>,
                                     %acc: tensor<1x4x8x16xf32>, %m: tensor<1x4x8xf32>, %s: tensor<1x4x8xf32>) -> tensor<1x4x8x16xf32> {
  // expected-error @+1 {{query head count (4) must be a multiple of the key/value head count (3)}}
  %a, %mx, %sm = attn.online_attention
      ins(%q, %k, %v : tensor<1x4x8x16xf16>, tensor<1x3x8x16xf16>, tensor<1x3x8x16xf16>)
      outs(%acc, %m, %s : tensor<1x4x8x16xf32>, tensor<1x4x8xf32>, tensor<1x4x8xf32>)
      -> tensor<1x4x8x16xf32>, tensor<1x4x8xf32>, tensor<1x4x8xf32>
  return %a : tensor<1x4x8x16xf32>
}

// -----

func.func @online_mask_not_broadcastable(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>,
                                         %acc: tensor<1x4x8x16xf32>, %m: tensor<1x4x8xf32>, %s: tensor<1x4x8xf32>,
                                         %mask: tensor<3x1x1xi1>) -> tensor<1x4x8x16xf32> {
  // expected-error @+1 {{mask dim 0 is 3, which does not broadcast to Hq = 4 (expected 1 or 4)}}
  %a, %mx, %sm = attn.online_attention
      ins(%q, %k, %v : tensor<1x4x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
      mask(%mask : tensor<3x1x1xi1>)
      outs(%acc, %m, %s : tensor<1x4x8x16xf32>, tensor<1x4x8xf32>, tensor<1x4x8xf32>)
      -> tensor<1x4x8x16xf32>, tensor<1x4x8xf32>, tensor<1x4x8xf32>
  return %a : tensor<1x4x8x16xf32>
}

// -----

func.func @online_kv_lens_size(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>,
                               %acc: tensor<1x4x8x16xf32>, %m: tensor<1x4x8xf32>, %s: tensor<1x4x8xf32>,
                               %l: tensor<4xi32>) -> tensor<1x4x8x16xf32> {
  // expected-error @+1 {{kv_lens size is 4, expected 1 (one length per batch entry)}}
  %a, %mx, %sm = attn.online_attention
      ins(%q, %k, %v : tensor<1x4x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
      kv_lens(%l : tensor<4xi32>)
      outs(%acc, %m, %s : tensor<1x4x8x16xf32>, tensor<1x4x8xf32>, tensor<1x4x8xf32>)
      -> tensor<1x4x8x16xf32>, tensor<1x4x8xf32>, tensor<1x4x8xf32>
  return %a : tensor<1x4x8x16xf32>
}

// -----

func.func @online_scale_negative(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>,
                                 %acc: tensor<1x4x8x16xf32>, %m: tensor<1x4x8xf32>, %s: tensor<1x4x8xf32>) -> tensor<1x4x8x16xf32> {
  // expected-error @+1 {{'attn.online_attention' op expected 'scale' to be a positive number of at most 2^64, got -1.000000e+00}}
  %a, %mx, %sm = attn.online_attention
      ins(%q, %k, %v : tensor<1x4x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
      outs(%acc, %m, %s : tensor<1x4x8x16xf32>, tensor<1x4x8xf32>, tensor<1x4x8xf32>)
      {scale = -1.0 : f32}
      -> tensor<1x4x8x16xf32>, tensor<1x4x8xf32>, tensor<1x4x8xf32>
  return %a : tensor<1x4x8x16xf32>
}

// -----

func.func @online_acc_f16(%q: tensor<1x4x8x16xf16>, %k: tensor<1x2x8x16xf16>, %v: tensor<1x2x8x16xf16>,
                          %acc: tensor<1x4x8x16xf16>, %m: tensor<1x4x8xf32>, %s: tensor<1x4x8xf32>) -> tensor<1x4x8x16xf16> {
  // expected-error @+1 {{operand #3 must be ranked tensor of 32-bit float values, but got 'tensor<1x4x8x16xf16>'}}
  %a, %mx, %sm = attn.online_attention
      ins(%q, %k, %v : tensor<1x4x8x16xf16>, tensor<1x2x8x16xf16>, tensor<1x2x8x16xf16>)
      outs(%acc, %m, %s : tensor<1x4x8x16xf16>, tensor<1x4x8xf32>, tensor<1x4x8xf32>)
      -> tensor<1x4x8x16xf16>, tensor<1x4x8xf32>, tensor<1x4x8xf32>
  return %a : tensor<1x4x8x16xf16>
}

// -----

func.func @online_max_bf16(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>,
                           %acc: tensor<1x4x8x16xf32>, %m: tensor<1x4x8xbf16>, %s: tensor<1x4x8xf32>) -> tensor<1x4x8x16xf32> {
  // expected-error @+1 {{operand #4 must be ranked tensor of 32-bit float values, but got 'tensor<1x4x8xbf16>'}}
  %a, %mx, %sm = attn.online_attention
      ins(%q, %k, %v : tensor<1x4x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
      outs(%acc, %m, %s : tensor<1x4x8x16xf32>, tensor<1x4x8xbf16>, tensor<1x4x8xf32>)
      -> tensor<1x4x8x16xf32>, tensor<1x4x8xbf16>, tensor<1x4x8xf32>
  return %a : tensor<1x4x8x16xf32>
}

// -----

func.func @online_acc_rank(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>,
                           %acc: tensor<4x8x16xf32>, %m: tensor<1x4x8xf32>, %s: tensor<1x4x8xf32>) -> tensor<4x8x16xf32> {
  // expected-error @+1 {{expected acc to have rank 4 [B, H, S, Dv], got rank 3}}
  %a, %mx, %sm = attn.online_attention
      ins(%q, %k, %v : tensor<1x4x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
      outs(%acc, %m, %s : tensor<4x8x16xf32>, tensor<1x4x8xf32>, tensor<1x4x8xf32>)
      -> tensor<4x8x16xf32>, tensor<1x4x8xf32>, tensor<1x4x8xf32>
  return %a : tensor<4x8x16xf32>
}

// -----

func.func @online_acc_batch(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>,
                            %acc: tensor<2x4x8x16xf32>, %m: tensor<1x4x8xf32>, %s: tensor<1x4x8xf32>) -> tensor<2x4x8x16xf32> {
  // expected-error @+1 {{acc batch size is 2, expected 1 (must match query)}}
  %a, %mx, %sm = attn.online_attention
      ins(%q, %k, %v : tensor<1x4x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
      outs(%acc, %m, %s : tensor<2x4x8x16xf32>, tensor<1x4x8xf32>, tensor<1x4x8xf32>)
      -> tensor<2x4x8x16xf32>, tensor<1x4x8xf32>, tensor<1x4x8xf32>
  return %a : tensor<2x4x8x16xf32>
}

// -----

func.func @online_acc_heads(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>,
                            %acc: tensor<1x2x8x16xf32>, %m: tensor<1x4x8xf32>, %s: tensor<1x4x8xf32>) -> tensor<1x2x8x16xf32> {
  // expected-error @+1 {{acc head count is 2, expected 4 (must match query)}}
  %a, %mx, %sm = attn.online_attention
      ins(%q, %k, %v : tensor<1x4x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
      outs(%acc, %m, %s : tensor<1x2x8x16xf32>, tensor<1x4x8xf32>, tensor<1x4x8xf32>)
      -> tensor<1x2x8x16xf32>, tensor<1x4x8xf32>, tensor<1x4x8xf32>
  return %a : tensor<1x2x8x16xf32>
}

// -----

// The accumulator has the query tile's rows (8), not the key tile's (4).
func.func @online_acc_seq(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x4x16xf32>, %v: tensor<1x2x4x16xf32>,
                          %acc: tensor<1x4x4x16xf32>, %m: tensor<1x4x8xf32>, %s: tensor<1x4x8xf32>) -> tensor<1x4x4x16xf32> {
  // expected-error @+1 {{acc sequence length is 4, expected 8 (must match query)}}
  %a, %mx, %sm = attn.online_attention
      ins(%q, %k, %v : tensor<1x4x8x16xf32>, tensor<1x2x4x16xf32>, tensor<1x2x4x16xf32>)
      outs(%acc, %m, %s : tensor<1x4x4x16xf32>, tensor<1x4x8xf32>, tensor<1x4x8xf32>)
      -> tensor<1x4x4x16xf32>, tensor<1x4x8xf32>, tensor<1x4x8xf32>
  return %a : tensor<1x4x4x16xf32>
}

// -----

func.func @online_acc_value_dim(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x8xf32>,
                                %acc: tensor<1x4x8x16xf32>, %m: tensor<1x4x8xf32>, %s: tensor<1x4x8xf32>) -> tensor<1x4x8x16xf32> {
  // expected-error @+1 {{acc feature dim Dv is 16, expected 8 (must match value)}}
  %a, %mx, %sm = attn.online_attention
      ins(%q, %k, %v : tensor<1x4x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x8xf32>)
      outs(%acc, %m, %s : tensor<1x4x8x16xf32>, tensor<1x4x8xf32>, tensor<1x4x8xf32>)
      -> tensor<1x4x8x16xf32>, tensor<1x4x8xf32>, tensor<1x4x8xf32>
  return %a : tensor<1x4x8x16xf32>
}

// -----

func.func @online_max_rank(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>,
                           %acc: tensor<1x4x8x16xf32>, %m: tensor<4x8xf32>, %s: tensor<1x4x8xf32>) -> tensor<1x4x8x16xf32> {
  // expected-error @+1 {{expected max to have rank 3 [B, Hq, Sq], got rank 2}}
  %a, %mx, %sm = attn.online_attention
      ins(%q, %k, %v : tensor<1x4x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
      outs(%acc, %m, %s : tensor<1x4x8x16xf32>, tensor<4x8xf32>, tensor<1x4x8xf32>)
      -> tensor<1x4x8x16xf32>, tensor<4x8xf32>, tensor<1x4x8xf32>
  return %a : tensor<1x4x8x16xf32>
}

// -----

func.func @online_max_batch(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>,
                            %acc: tensor<1x4x8x16xf32>, %m: tensor<3x4x8xf32>, %s: tensor<1x4x8xf32>) -> tensor<1x4x8x16xf32> {
  // expected-error @+1 {{max batch size is 3, expected 1 (must match the accumulator)}}
  %a, %mx, %sm = attn.online_attention
      ins(%q, %k, %v : tensor<1x4x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
      outs(%acc, %m, %s : tensor<1x4x8x16xf32>, tensor<3x4x8xf32>, tensor<1x4x8xf32>)
      -> tensor<1x4x8x16xf32>, tensor<3x4x8xf32>, tensor<1x4x8xf32>
  return %a : tensor<1x4x8x16xf32>
}

// -----

func.func @online_max_heads(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>,
                            %acc: tensor<1x4x8x16xf32>, %m: tensor<1x2x8xf32>, %s: tensor<1x4x8xf32>) -> tensor<1x4x8x16xf32> {
  // expected-error @+1 {{max head count is 2, expected 4 (must match the accumulator)}}
  %a, %mx, %sm = attn.online_attention
      ins(%q, %k, %v : tensor<1x4x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
      outs(%acc, %m, %s : tensor<1x4x8x16xf32>, tensor<1x2x8xf32>, tensor<1x4x8xf32>)
      -> tensor<1x4x8x16xf32>, tensor<1x2x8xf32>, tensor<1x4x8xf32>
  return %a : tensor<1x4x8x16xf32>
}

// -----

func.func @online_max_seq(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>,
                          %acc: tensor<1x4x8x16xf32>, %m: tensor<1x4x16xf32>, %s: tensor<1x4x8xf32>) -> tensor<1x4x8x16xf32> {
  // expected-error @+1 {{max sequence length is 16, expected 8 (must match the accumulator)}}
  %a, %mx, %sm = attn.online_attention
      ins(%q, %k, %v : tensor<1x4x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
      outs(%acc, %m, %s : tensor<1x4x8x16xf32>, tensor<1x4x16xf32>, tensor<1x4x8xf32>)
      -> tensor<1x4x8x16xf32>, tensor<1x4x16xf32>, tensor<1x4x8xf32>
  return %a : tensor<1x4x8x16xf32>
}

// -----

func.func @online_sum_rank(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>,
                           %acc: tensor<1x4x8x16xf32>, %m: tensor<1x4x8xf32>, %s: tensor<1x4x8x1xf32>) -> tensor<1x4x8x16xf32> {
  // expected-error @+1 {{expected sum to have rank 3 [B, Hq, Sq], got rank 4}}
  %a, %mx, %sm = attn.online_attention
      ins(%q, %k, %v : tensor<1x4x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
      outs(%acc, %m, %s : tensor<1x4x8x16xf32>, tensor<1x4x8xf32>, tensor<1x4x8x1xf32>)
      -> tensor<1x4x8x16xf32>, tensor<1x4x8xf32>, tensor<1x4x8x1xf32>
  return %a : tensor<1x4x8x16xf32>
}

// -----

// A dynamic max is accepted; the static sum after it is checked and fails.
func.func @online_dynamic_max_then_sum(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>,
                                       %acc: tensor<1x4x8x16xf32>, %m: tensor<?x?x?xf32>, %s: tensor<1x4x7xf32>) -> tensor<1x4x8x16xf32> {
  // expected-error @+1 {{sum sequence length is 7, expected 8 (must match the accumulator)}}
  %a, %mx, %sm = attn.online_attention
      ins(%q, %k, %v : tensor<1x4x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
      outs(%acc, %m, %s : tensor<1x4x8x16xf32>, tensor<?x?x?xf32>, tensor<1x4x7xf32>)
      -> tensor<1x4x8x16xf32>, tensor<?x?x?xf32>, tensor<1x4x7xf32>
  return %a : tensor<1x4x8x16xf32>
}

// -----

func.func @online_sum_heads(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>,
                            %acc: tensor<1x4x8x16xf32>, %m: tensor<1x4x8xf32>, %s: tensor<1x1x8xf32>) -> tensor<1x4x8x16xf32> {
  // expected-error @+1 {{sum head count is 1, expected 4 (must match the accumulator)}}
  %a, %mx, %sm = attn.online_attention
      ins(%q, %k, %v : tensor<1x4x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
      outs(%acc, %m, %s : tensor<1x4x8x16xf32>, tensor<1x4x8xf32>, tensor<1x1x8xf32>)
      -> tensor<1x4x8x16xf32>, tensor<1x4x8xf32>, tensor<1x1x8xf32>
  return %a : tensor<1x4x8x16xf32>
}

// -----

// BSHD: acc follows the layout ([B, S, H, Dv]) but max stays [B, Hq, Sq].
func.func @online_max_heads_bshd(%q: tensor<1x8x4x16xf32>, %k: tensor<1x8x2x16xf32>, %v: tensor<1x8x2x16xf32>,
                                 %acc: tensor<1x8x4x16xf32>, %m: tensor<1x8x4xf32>, %s: tensor<1x4x8xf32>) -> tensor<1x8x4x16xf32> {
  // expected-error @+1 {{max head count is 8, expected 4 (must match the accumulator)}}
  %a, %mx, %sm = attn.online_attention
      ins(%q, %k, %v : tensor<1x8x4x16xf32>, tensor<1x8x2x16xf32>, tensor<1x8x2x16xf32>)
      outs(%acc, %m, %s : tensor<1x8x4x16xf32>, tensor<1x8x4xf32>, tensor<1x4x8xf32>)
      {layout = #attn.layout<bshd>}
      -> tensor<1x8x4x16xf32>, tensor<1x8x4xf32>, tensor<1x4x8xf32>
  return %a : tensor<1x8x4x16xf32>
}

// -----

// BSHD: a BHSD-ordered accumulator is rejected.
func.func @online_acc_seq_bshd(%q: tensor<1x8x4x16xf32>, %k: tensor<1x8x2x16xf32>, %v: tensor<1x8x2x16xf32>,
                               %acc: tensor<1x4x8x16xf32>, %m: tensor<1x4x8xf32>, %s: tensor<1x4x8xf32>) -> tensor<1x4x8x16xf32> {
  // expected-error @+1 {{acc head count is 8, expected 4 (must match query)}}
  %a, %mx, %sm = attn.online_attention
      ins(%q, %k, %v : tensor<1x8x4x16xf32>, tensor<1x8x2x16xf32>, tensor<1x8x2x16xf32>)
      outs(%acc, %m, %s : tensor<1x4x8x16xf32>, tensor<1x4x8xf32>, tensor<1x4x8xf32>)
      {layout = #attn.layout<bshd>}
      -> tensor<1x4x8x16xf32>, tensor<1x4x8xf32>, tensor<1x4x8xf32>
  return %a : tensor<1x4x8x16xf32>
}

// -----

func.func @online_score_mod_yield_type(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>,
                                       %acc: tensor<1x4x8x16xf32>, %m: tensor<1x4x8xf32>, %s: tensor<1x4x8xf32>) -> tensor<1x4x8x16xf32> {
  %a, %mx, %sm = attn.online_attention
      ins(%q, %k, %v : tensor<1x4x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
      outs(%acc, %m, %s : tensor<1x4x8x16xf32>, tensor<1x4x8xf32>, tensor<1x4x8xf32>)
      score_mod {
      ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
        // expected-error @+1 {{'attn.yield' op in score_mod must yield exactly one 'f32', got ('index')}}
        attn.yield %j : index
      }
      -> tensor<1x4x8x16xf32>, tensor<1x4x8xf32>, tensor<1x4x8xf32>
  return %a : tensor<1x4x8x16xf32>
}

// -----

func.func @online_mask_mod_arg_types(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>,
                                     %acc: tensor<1x4x8x16xf32>, %m: tensor<1x4x8xf32>, %s: tensor<1x4x8xf32>) -> tensor<1x4x8x16xf32> {
  // expected-error @+1 {{expected mask_mod region arguments (index b, index h, index q_idx, index kv_idx) -> i1, got 4 argument(s) of types ('i64', 'i64', 'i64', 'i64')}}
  %a, %mx, %sm = attn.online_attention
      ins(%q, %k, %v : tensor<1x4x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
      outs(%acc, %m, %s : tensor<1x4x8x16xf32>, tensor<1x4x8xf32>, tensor<1x4x8xf32>)
      mask_mod {
      ^bb0(%b: i64, %h: i64, %i: i64, %j: i64):
        %c = arith.cmpi ule, %j, %i : i64
        attn.yield %c : i1
      }
      -> tensor<1x4x8x16xf32>, tensor<1x4x8xf32>, tensor<1x4x8xf32>
  return %a : tensor<1x4x8x16xf32>
}

// -----

//===----------------------------------------------------------------------===//
// attn.finalize_online_attention
//===----------------------------------------------------------------------===//

func.func @finalize_acc_rank(%acc: tensor<4x8x16xf32>, %s: tensor<1x4x8xf32>,
                             %o: tensor<1x4x8x16xf16>) -> tensor<1x4x8x16xf16> {
  // expected-error @+1 {{'attn.finalize_online_attention' op expected acc to have rank 4 [B, H, S, Dv], got rank 3}}
  %r = attn.finalize_online_attention ins(%acc, %s : tensor<4x8x16xf32>, tensor<1x4x8xf32>)
      outs(%o : tensor<1x4x8x16xf16>) -> tensor<1x4x8x16xf16>
  return %r : tensor<1x4x8x16xf16>
}

// -----

func.func @finalize_init_rank(%acc: tensor<1x4x8x16xf32>, %s: tensor<1x4x8xf32>,
                              %o: tensor<1x4x8x16x1xf16>) -> tensor<1x4x8x16x1xf16> {
  // expected-error @+1 {{expected init to have rank 4 [B, S, H, Dv], got rank 5}}
  %r = attn.finalize_online_attention ins(%acc, %s : tensor<1x4x8x16xf32>, tensor<1x4x8xf32>)
      outs(%o : tensor<1x4x8x16x1xf16>) {layout = #attn.layout<bshd>} -> tensor<1x4x8x16x1xf16>
  return %r : tensor<1x4x8x16x1xf16>
}

// -----

func.func @finalize_acc_f16(%acc: tensor<1x4x8x16xf16>, %s: tensor<1x4x8xf32>,
                            %o: tensor<1x4x8x16xf16>) -> tensor<1x4x8x16xf16> {
  // expected-error @+1 {{operand #0 must be ranked tensor of 32-bit float values, but got 'tensor<1x4x8x16xf16>'}}
  %r = attn.finalize_online_attention ins(%acc, %s : tensor<1x4x8x16xf16>, tensor<1x4x8xf32>)
      outs(%o : tensor<1x4x8x16xf16>) -> tensor<1x4x8x16xf16>
  return %r : tensor<1x4x8x16xf16>
}

// -----

func.func @finalize_init_i8(%acc: tensor<1x4x8x16xf32>, %s: tensor<1x4x8xf32>,
                            %o: tensor<1x4x8x16xi8>) -> tensor<1x4x8x16xi8> {
  // expected-error @+1 {{operand #2 must be ranked tensor of 32-bit float or 16-bit float or bfloat16 type values, but got 'tensor<1x4x8x16xi8>'}}
  %r = attn.finalize_online_attention ins(%acc, %s : tensor<1x4x8x16xf32>, tensor<1x4x8xf32>)
      outs(%o : tensor<1x4x8x16xi8>) -> tensor<1x4x8x16xi8>
  return %r : tensor<1x4x8x16xi8>
}

// -----

func.func @finalize_init_dim0(%acc: tensor<1x4x8x16xf32>, %s: tensor<1x4x8xf32>,
                              %o: tensor<2x4x8x16xf16>) -> tensor<2x4x8x16xf16> {
  // expected-error @+1 {{init dim 0 is 2, expected 1 (must match acc)}}
  %r = attn.finalize_online_attention ins(%acc, %s : tensor<1x4x8x16xf32>, tensor<1x4x8xf32>)
      outs(%o : tensor<2x4x8x16xf16>) -> tensor<2x4x8x16xf16>
  return %r : tensor<2x4x8x16xf16>
}

// -----

func.func @finalize_init_dim3(%acc: tensor<1x4x8x16xf32>, %s: tensor<1x4x8xf32>,
                              %o: tensor<1x4x8x32xbf16>) -> tensor<1x4x8x32xbf16> {
  // expected-error @+1 {{init dim 3 is 32, expected 16 (must match acc)}}
  %r = attn.finalize_online_attention ins(%acc, %s : tensor<1x4x8x16xf32>, tensor<1x4x8xf32>)
      outs(%o : tensor<1x4x8x32xbf16>) -> tensor<1x4x8x32xbf16>
  return %r : tensor<1x4x8x32xbf16>
}

// -----

// Dynamic init dims are accepted; the error comes from the sum.
func.func @finalize_dynamic_init_then_sum(%acc: tensor<1x4x8x16xf32>, %s: tensor<2x4x8xf32>,
                                          %o: tensor<?x?x?x?xf16>) -> tensor<?x?x?x?xf16> {
  // expected-error @+1 {{sum batch size is 2, expected 1 (must match the accumulator)}}
  %r = attn.finalize_online_attention ins(%acc, %s : tensor<1x4x8x16xf32>, tensor<2x4x8xf32>)
      outs(%o : tensor<?x?x?x?xf16>) -> tensor<?x?x?x?xf16>
  return %r : tensor<?x?x?x?xf16>
}

// -----

func.func @finalize_sum_rank(%acc: tensor<1x4x8x16xf32>, %s: tensor<1x4x8x16xf32>,
                             %o: tensor<1x4x8x16xf16>) -> tensor<1x4x8x16xf16> {
  // expected-error @+1 {{expected sum to have rank 3 [B, Hq, Sq], got rank 4}}
  %r = attn.finalize_online_attention ins(%acc, %s : tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>)
      outs(%o : tensor<1x4x8x16xf16>) -> tensor<1x4x8x16xf16>
  return %r : tensor<1x4x8x16xf16>
}

// -----

func.func @finalize_sum_heads(%acc: tensor<1x4x8x16xf32>, %s: tensor<1x8x8xf32>,
                              %o: tensor<1x4x8x16xf16>) -> tensor<1x4x8x16xf16> {
  // expected-error @+1 {{sum head count is 8, expected 4 (must match the accumulator)}}
  %r = attn.finalize_online_attention ins(%acc, %s : tensor<1x4x8x16xf32>, tensor<1x8x8xf32>)
      outs(%o : tensor<1x4x8x16xf16>) -> tensor<1x4x8x16xf16>
  return %r : tensor<1x4x8x16xf16>
}

// -----

func.func @finalize_sum_seq(%acc: tensor<1x4x8x16xf32>, %s: tensor<1x4x16xf32>,
                            %o: tensor<1x4x8x16xf16>) -> tensor<1x4x8x16xf16> {
  // expected-error @+1 {{sum sequence length is 16, expected 8 (must match the accumulator)}}
  %r = attn.finalize_online_attention ins(%acc, %s : tensor<1x4x8x16xf32>, tensor<1x4x16xf32>)
      outs(%o : tensor<1x4x8x16xf16>) -> tensor<1x4x8x16xf16>
  return %r : tensor<1x4x8x16xf16>
}

// -----

// BSHD: acc is [B, S, H, Dv] = [1, 8, 4, 16], so sum must be [1, 4, 8].
func.func @finalize_sum_bshd(%acc: tensor<1x8x4x16xf32>, %s: tensor<1x8x4xf32>,
                             %o: tensor<1x8x4x16xf16>) -> tensor<1x8x4x16xf16> {
  // expected-error @+1 {{sum head count is 8, expected 4 (must match the accumulator)}}
  %r = attn.finalize_online_attention ins(%acc, %s : tensor<1x8x4x16xf32>, tensor<1x8x4xf32>)
      outs(%o : tensor<1x8x4x16xf16>) {layout = #attn.layout<bshd>} -> tensor<1x8x4x16xf16>
  return %r : tensor<1x8x4x16xf16>
}

// -----

//===----------------------------------------------------------------------===//
// attn.multi_head_attention
// Common shapes: x [2, 8, 32], num_heads = 4, num_kv_heads = 2 (D = Dv = 8):
// W_q [32, 32], W_k [32, 16], W_v [32, 16], W_o [32, 32], out [2, 8, 32].
//===----------------------------------------------------------------------===//

func.func @mha_num_heads_zero(%x: tensor<2x8x32xf32>, %wq: tensor<32x32xf32>, %wk: tensor<32x16xf32>,
                              %wv: tensor<32x16xf32>, %wo: tensor<32x32xf32>, %o: tensor<2x8x32xf32>) -> tensor<2x8x32xf32> {
  // expected-error @+1 {{'attn.multi_head_attention' op expected 'num_heads' > 0, got 0}}
  %r = attn.multi_head_attention ins(%x, %x, %x : tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>)
      weights(%wq, %wk, %wv, %wo : tensor<32x32xf32>, tensor<32x16xf32>, tensor<32x16xf32>, tensor<32x32xf32>)
      outs(%o : tensor<2x8x32xf32>) {num_heads = 0 : i64} -> tensor<2x8x32xf32>
  return %r : tensor<2x8x32xf32>
}

// -----

func.func @mha_num_heads_negative(%x: tensor<2x8x32xf32>, %wq: tensor<32x32xf32>, %wk: tensor<32x16xf32>,
                                  %wv: tensor<32x16xf32>, %wo: tensor<32x32xf32>, %o: tensor<2x8x32xf32>) -> tensor<2x8x32xf32> {
  // expected-error @+1 {{expected 'num_heads' > 0, got -4}}
  %r = attn.multi_head_attention ins(%x, %x, %x : tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>)
      weights(%wq, %wk, %wv, %wo : tensor<32x32xf32>, tensor<32x16xf32>, tensor<32x16xf32>, tensor<32x32xf32>)
      outs(%o : tensor<2x8x32xf32>) {num_heads = -4 : i64, num_kv_heads = 2 : i64} -> tensor<2x8x32xf32>
  return %r : tensor<2x8x32xf32>
}

// -----

func.func @mha_num_heads_missing(%x: tensor<2x8x32xf32>, %wq: tensor<32x32xf32>, %wk: tensor<32x16xf32>,
                                 %wv: tensor<32x16xf32>, %wo: tensor<32x32xf32>, %o: tensor<2x8x32xf32>) -> tensor<2x8x32xf32> {
  // expected-error @+1 {{requires attribute 'num_heads'}}
  %r = attn.multi_head_attention ins(%x, %x, %x : tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>)
      weights(%wq, %wk, %wv, %wo : tensor<32x32xf32>, tensor<32x16xf32>, tensor<32x16xf32>, tensor<32x32xf32>)
      outs(%o : tensor<2x8x32xf32>) {num_kv_heads = 2 : i64} -> tensor<2x8x32xf32>
  return %r : tensor<2x8x32xf32>
}

// -----

func.func @mha_num_kv_heads_zero(%x: tensor<2x8x32xf32>, %wq: tensor<32x32xf32>, %wk: tensor<32x16xf32>,
                                 %wv: tensor<32x16xf32>, %wo: tensor<32x32xf32>, %o: tensor<2x8x32xf32>) -> tensor<2x8x32xf32> {
  // expected-error @+1 {{expected 'num_kv_heads' > 0, got 0}}
  %r = attn.multi_head_attention ins(%x, %x, %x : tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>)
      weights(%wq, %wk, %wv, %wo : tensor<32x32xf32>, tensor<32x16xf32>, tensor<32x16xf32>, tensor<32x32xf32>)
      outs(%o : tensor<2x8x32xf32>) {num_heads = 4 : i64, num_kv_heads = 0 : i64} -> tensor<2x8x32xf32>
  return %r : tensor<2x8x32xf32>
}

// -----

func.func @mha_num_kv_heads_negative(%x: tensor<2x8x32xf32>, %wq: tensor<32x32xf32>, %wk: tensor<32x16xf32>,
                                     %wv: tensor<32x16xf32>, %wo: tensor<32x32xf32>, %o: tensor<2x8x32xf32>) -> tensor<2x8x32xf32> {
  // expected-error @+1 {{expected 'num_kv_heads' > 0, got -2}}
  %r = attn.multi_head_attention ins(%x, %x, %x : tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>)
      weights(%wq, %wk, %wv, %wo : tensor<32x32xf32>, tensor<32x16xf32>, tensor<32x16xf32>, tensor<32x32xf32>)
      outs(%o : tensor<2x8x32xf32>) {num_heads = 4 : i64, num_kv_heads = -2 : i64} -> tensor<2x8x32xf32>
  return %r : tensor<2x8x32xf32>
}

// -----

func.func @mha_heads_not_multiple(%x: tensor<2x8x32xf32>, %wq: tensor<32x32xf32>, %wk: tensor<32x24xf32>,
                                  %wv: tensor<32x24xf32>, %wo: tensor<32x32xf32>, %o: tensor<2x8x32xf32>) -> tensor<2x8x32xf32> {
  // expected-error @+1 {{'num_heads' (4) must be a multiple of 'num_kv_heads' (3)}}
  %r = attn.multi_head_attention ins(%x, %x, %x : tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>)
      weights(%wq, %wk, %wv, %wo : tensor<32x32xf32>, tensor<32x24xf32>, tensor<32x24xf32>, tensor<32x32xf32>)
      outs(%o : tensor<2x8x32xf32>) {num_heads = 4 : i64, num_kv_heads = 3 : i64} -> tensor<2x8x32xf32>
  return %r : tensor<2x8x32xf32>
}

// -----

// More kv heads than query heads.
func.func @mha_more_kv_heads(%x: tensor<2x8x32xf32>, %wq: tensor<32x32xf32>, %wk: tensor<32x64xf32>,
                             %wv: tensor<32x64xf32>, %wo: tensor<32x32xf32>, %o: tensor<2x8x32xf32>) -> tensor<2x8x32xf32> {
  // expected-error @+1 {{'num_heads' (4) must be a multiple of 'num_kv_heads' (8)}}
  %r = attn.multi_head_attention ins(%x, %x, %x : tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>)
      weights(%wq, %wk, %wv, %wo : tensor<32x32xf32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<32x32xf32>)
      outs(%o : tensor<2x8x32xf32>) {num_heads = 4 : i64, num_kv_heads = 8 : i64} -> tensor<2x8x32xf32>
  return %r : tensor<2x8x32xf32>
}

// -----

func.func @mha_scale_zero(%x: tensor<2x8x32xf32>, %wq: tensor<32x32xf32>, %wk: tensor<32x16xf32>,
                          %wv: tensor<32x16xf32>, %wo: tensor<32x32xf32>, %o: tensor<2x8x32xf32>) -> tensor<2x8x32xf32> {
  // expected-error @+1 {{'attn.multi_head_attention' op expected 'scale' to be a positive number of at most 2^64, got -0.000000e+00}}
  %r = attn.multi_head_attention ins(%x, %x, %x : tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>)
      weights(%wq, %wk, %wv, %wo : tensor<32x32xf32>, tensor<32x16xf32>, tensor<32x16xf32>, tensor<32x32xf32>)
      outs(%o : tensor<2x8x32xf32>) {num_heads = 4 : i64, num_kv_heads = 2 : i64, scale = -0.0 : f32} -> tensor<2x8x32xf32>
  return %r : tensor<2x8x32xf32>
}

// -----

func.func @mha_query_rank(%x: tensor<2x8x4x8xf32>, %kv: tensor<2x8x32xf32>, %wq: tensor<32x32xf32>, %wk: tensor<32x16xf32>,
                          %wv: tensor<32x16xf32>, %wo: tensor<32x32xf32>, %o: tensor<2x8x32xf32>) -> tensor<2x8x32xf32> {
  // expected-error @+1 {{expected query to have rank 3 [B, Sq, E], got rank 4}}
  %r = attn.multi_head_attention ins(%x, %kv, %kv : tensor<2x8x4x8xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>)
      weights(%wq, %wk, %wv, %wo : tensor<32x32xf32>, tensor<32x16xf32>, tensor<32x16xf32>, tensor<32x32xf32>)
      outs(%o : tensor<2x8x32xf32>) {num_heads = 4 : i64, num_kv_heads = 2 : i64} -> tensor<2x8x32xf32>
  return %r : tensor<2x8x32xf32>
}

// -----

func.func @mha_key_rank(%x: tensor<2x8x32xf32>, %kv: tensor<16x32xf32>, %wq: tensor<32x32xf32>, %wk: tensor<32x16xf32>,
                        %wv: tensor<32x16xf32>, %wo: tensor<32x32xf32>, %o: tensor<2x8x32xf32>) -> tensor<2x8x32xf32> {
  // expected-error @+1 {{expected key to have rank 3 [B, Sk, E_kv], got rank 2}}
  %r = attn.multi_head_attention ins(%x, %kv, %x : tensor<2x8x32xf32>, tensor<16x32xf32>, tensor<2x8x32xf32>)
      weights(%wq, %wk, %wv, %wo : tensor<32x32xf32>, tensor<32x16xf32>, tensor<32x16xf32>, tensor<32x32xf32>)
      outs(%o : tensor<2x8x32xf32>) {num_heads = 4 : i64, num_kv_heads = 2 : i64} -> tensor<2x8x32xf32>
  return %r : tensor<2x8x32xf32>
}

// -----

func.func @mha_value_rank(%x: tensor<2x8x32xf32>, %kv: tensor<2x8x2x16xf32>, %wq: tensor<32x32xf32>, %wk: tensor<32x16xf32>,
                          %wv: tensor<32x16xf32>, %wo: tensor<32x32xf32>, %o: tensor<2x8x32xf32>) -> tensor<2x8x32xf32> {
  // expected-error @+1 {{expected value to have rank 3 [B, Sk, E_kv], got rank 4}}
  %r = attn.multi_head_attention ins(%x, %x, %kv : tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x2x16xf32>)
      weights(%wq, %wk, %wv, %wo : tensor<32x32xf32>, tensor<32x16xf32>, tensor<32x16xf32>, tensor<32x32xf32>)
      outs(%o : tensor<2x8x32xf32>) {num_heads = 4 : i64, num_kv_heads = 2 : i64} -> tensor<2x8x32xf32>
  return %r : tensor<2x8x32xf32>
}

// -----

func.func @mha_q_proj_rank(%x: tensor<2x8x32xf32>, %wq: tensor<32x4x8xf32>, %wk: tensor<32x16xf32>,
                           %wv: tensor<32x16xf32>, %wo: tensor<32x32xf32>, %o: tensor<2x8x32xf32>) -> tensor<2x8x32xf32> {
  // expected-error @+1 {{expected q_proj to have rank 2 [E, Hq*D], got rank 3}}
  %r = attn.multi_head_attention ins(%x, %x, %x : tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>)
      weights(%wq, %wk, %wv, %wo : tensor<32x4x8xf32>, tensor<32x16xf32>, tensor<32x16xf32>, tensor<32x32xf32>)
      outs(%o : tensor<2x8x32xf32>) {num_heads = 4 : i64, num_kv_heads = 2 : i64} -> tensor<2x8x32xf32>
  return %r : tensor<2x8x32xf32>
}

// -----

func.func @mha_k_proj_rank(%x: tensor<2x8x32xf32>, %wq: tensor<32x32xf32>, %wk: tensor<512xf32>,
                           %wv: tensor<32x16xf32>, %wo: tensor<32x32xf32>, %o: tensor<2x8x32xf32>) -> tensor<2x8x32xf32> {
  // expected-error @+1 {{expected k_proj to have rank 2 [E_kv, Hkv*D], got rank 1}}
  %r = attn.multi_head_attention ins(%x, %x, %x : tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>)
      weights(%wq, %wk, %wv, %wo : tensor<32x32xf32>, tensor<512xf32>, tensor<32x16xf32>, tensor<32x32xf32>)
      outs(%o : tensor<2x8x32xf32>) {num_heads = 4 : i64, num_kv_heads = 2 : i64} -> tensor<2x8x32xf32>
  return %r : tensor<2x8x32xf32>
}

// -----

func.func @mha_v_proj_rank(%x: tensor<2x8x32xf32>, %wq: tensor<32x32xf32>, %wk: tensor<32x16xf32>,
                           %wv: tensor<32x2x8xf32>, %wo: tensor<32x32xf32>, %o: tensor<2x8x32xf32>) -> tensor<2x8x32xf32> {
  // expected-error @+1 {{expected v_proj to have rank 2 [E_kv, Hkv*Dv], got rank 3}}
  %r = attn.multi_head_attention ins(%x, %x, %x : tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>)
      weights(%wq, %wk, %wv, %wo : tensor<32x32xf32>, tensor<32x16xf32>, tensor<32x2x8xf32>, tensor<32x32xf32>)
      outs(%o : tensor<2x8x32xf32>) {num_heads = 4 : i64, num_kv_heads = 2 : i64} -> tensor<2x8x32xf32>
  return %r : tensor<2x8x32xf32>
}

// -----

func.func @mha_out_proj_rank(%x: tensor<2x8x32xf32>, %wq: tensor<32x32xf32>, %wk: tensor<32x16xf32>,
                             %wv: tensor<32x16xf32>, %wo: tensor<1024xf32>, %o: tensor<2x8x32xf32>) -> tensor<2x8x32xf32> {
  // expected-error @+1 {{expected out_proj to have rank 2 [Hq*Dv, E_out], got rank 1}}
  %r = attn.multi_head_attention ins(%x, %x, %x : tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>)
      weights(%wq, %wk, %wv, %wo : tensor<32x32xf32>, tensor<32x16xf32>, tensor<32x16xf32>, tensor<1024xf32>)
      outs(%o : tensor<2x8x32xf32>) {num_heads = 4 : i64, num_kv_heads = 2 : i64} -> tensor<2x8x32xf32>
  return %r : tensor<2x8x32xf32>
}

// -----

func.func @mha_init_rank(%x: tensor<2x8x32xf32>, %wq: tensor<32x32xf32>, %wk: tensor<32x16xf32>,
                         %wv: tensor<32x16xf32>, %wo: tensor<32x32xf32>, %o: tensor<2x8x4x8xf32>) -> tensor<2x8x4x8xf32> {
  // expected-error @+1 {{expected init to have rank 3 [B, Sq, E_out], got rank 4}}
  %r = attn.multi_head_attention ins(%x, %x, %x : tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>)
      weights(%wq, %wk, %wv, %wo : tensor<32x32xf32>, tensor<32x16xf32>, tensor<32x16xf32>, tensor<32x32xf32>)
      outs(%o : tensor<2x8x4x8xf32>) {num_heads = 4 : i64, num_kv_heads = 2 : i64} -> tensor<2x8x4x8xf32>
  return %r : tensor<2x8x4x8xf32>
}

// -----

func.func @mha_key_element_type(%x: tensor<2x8x32xf32>, %kv: tensor<2x8x32xf16>, %wq: tensor<32x32xf32>, %wk: tensor<32x16xf32>,
                                %wv: tensor<32x16xf32>, %wo: tensor<32x32xf32>, %o: tensor<2x8x32xf32>) -> tensor<2x8x32xf32> {
  // expected-error @+1 {{expected key element type 'f32' (the query's), got 'f16'}}
  %r = attn.multi_head_attention ins(%x, %kv, %x : tensor<2x8x32xf32>, tensor<2x8x32xf16>, tensor<2x8x32xf32>)
      weights(%wq, %wk, %wv, %wo : tensor<32x32xf32>, tensor<32x16xf32>, tensor<32x16xf32>, tensor<32x32xf32>)
      outs(%o : tensor<2x8x32xf32>) {num_heads = 4 : i64, num_kv_heads = 2 : i64} -> tensor<2x8x32xf32>
  return %r : tensor<2x8x32xf32>
}

// -----

func.func @mha_value_element_type(%x: tensor<2x8x32xf16>, %kv: tensor<2x8x32xbf16>, %wq: tensor<32x32xf16>, %wk: tensor<32x16xf16>,
                                  %wv: tensor<32x16xf16>, %wo: tensor<32x32xf16>, %o: tensor<2x8x32xf32>) -> tensor<2x8x32xf32> {
  // expected-error @+1 {{expected value element type 'f16' (the query's), got 'bf16'}}
  %r = attn.multi_head_attention ins(%x, %x, %kv : tensor<2x8x32xf16>, tensor<2x8x32xf16>, tensor<2x8x32xbf16>)
      weights(%wq, %wk, %wv, %wo : tensor<32x32xf16>, tensor<32x16xf16>, tensor<32x16xf16>, tensor<32x32xf16>)
      outs(%o : tensor<2x8x32xf32>) {num_heads = 4 : i64, num_kv_heads = 2 : i64} -> tensor<2x8x32xf32>
  return %r : tensor<2x8x32xf32>
}

// -----

func.func @mha_q_proj_element_type(%x: tensor<2x8x32xf32>, %wq: tensor<32x32xf16>, %wk: tensor<32x16xf32>,
                                   %wv: tensor<32x16xf32>, %wo: tensor<32x32xf32>, %o: tensor<2x8x32xf32>) -> tensor<2x8x32xf32> {
  // expected-error @+1 {{expected q_proj element type 'f32' (the query's), got 'f16'}}
  %r = attn.multi_head_attention ins(%x, %x, %x : tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>)
      weights(%wq, %wk, %wv, %wo : tensor<32x32xf16>, tensor<32x16xf32>, tensor<32x16xf32>, tensor<32x32xf32>)
      outs(%o : tensor<2x8x32xf32>) {num_heads = 4 : i64, num_kv_heads = 2 : i64} -> tensor<2x8x32xf32>
  return %r : tensor<2x8x32xf32>
}

// -----

func.func @mha_k_proj_element_type(%x: tensor<2x8x32xf32>, %wq: tensor<32x32xf32>, %wk: tensor<32x16xbf16>,
                                   %wv: tensor<32x16xf32>, %wo: tensor<32x32xf32>, %o: tensor<2x8x32xf32>) -> tensor<2x8x32xf32> {
  // expected-error @+1 {{expected k_proj element type 'f32' (the query's), got 'bf16'}}
  %r = attn.multi_head_attention ins(%x, %x, %x : tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>)
      weights(%wq, %wk, %wv, %wo : tensor<32x32xf32>, tensor<32x16xbf16>, tensor<32x16xf32>, tensor<32x32xf32>)
      outs(%o : tensor<2x8x32xf32>) {num_heads = 4 : i64, num_kv_heads = 2 : i64} -> tensor<2x8x32xf32>
  return %r : tensor<2x8x32xf32>
}

// -----

func.func @mha_v_proj_element_type(%x: tensor<2x8x32xf32>, %wq: tensor<32x32xf32>, %wk: tensor<32x16xf32>,
                                   %wv: tensor<32x16xf16>, %wo: tensor<32x32xf32>, %o: tensor<2x8x32xf32>) -> tensor<2x8x32xf32> {
  // expected-error @+1 {{expected v_proj element type 'f32' (the query's), got 'f16'}}
  %r = attn.multi_head_attention ins(%x, %x, %x : tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>)
      weights(%wq, %wk, %wv, %wo : tensor<32x32xf32>, tensor<32x16xf32>, tensor<32x16xf16>, tensor<32x32xf32>)
      outs(%o : tensor<2x8x32xf32>) {num_heads = 4 : i64, num_kv_heads = 2 : i64} -> tensor<2x8x32xf32>
  return %r : tensor<2x8x32xf32>
}

// -----

func.func @mha_out_proj_element_type(%x: tensor<2x8x32xf32>, %wq: tensor<32x32xf32>, %wk: tensor<32x16xf32>,
                                     %wv: tensor<32x16xf32>, %wo: tensor<32x32xbf16>, %o: tensor<2x8x32xf32>) -> tensor<2x8x32xf32> {
  // expected-error @+1 {{expected out_proj element type 'f32' (the query's), got 'bf16'}}
  %r = attn.multi_head_attention ins(%x, %x, %x : tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>)
      weights(%wq, %wk, %wv, %wo : tensor<32x32xf32>, tensor<32x16xf32>, tensor<32x16xf32>, tensor<32x32xbf16>)
      outs(%o : tensor<2x8x32xf32>) {num_heads = 4 : i64, num_kv_heads = 2 : i64} -> tensor<2x8x32xf32>
  return %r : tensor<2x8x32xf32>
}

// -----

func.func @mha_integer_weights(%x: tensor<2x8x32xf32>, %wq: tensor<32x32xi8>, %wk: tensor<32x16xf32>,
                               %wv: tensor<32x16xf32>, %wo: tensor<32x32xf32>, %o: tensor<2x8x32xf32>) -> tensor<2x8x32xf32> {
  // expected-error @+1 {{operand #3 must be ranked tensor of 32-bit float or 16-bit float or bfloat16 type values, but got 'tensor<32x32xi8>'}}
  %r = attn.multi_head_attention ins(%x, %x, %x : tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>)
      weights(%wq, %wk, %wv, %wo : tensor<32x32xi8>, tensor<32x16xf32>, tensor<32x16xf32>, tensor<32x32xf32>)
      outs(%o : tensor<2x8x32xf32>) {num_heads = 4 : i64, num_kv_heads = 2 : i64} -> tensor<2x8x32xf32>
  return %r : tensor<2x8x32xf32>
}

// -----

func.func @mha_q_proj_width(%x: tensor<2x8x32xf32>, %wq: tensor<32x30xf32>, %wk: tensor<32x16xf32>,
                            %wv: tensor<32x16xf32>, %wo: tensor<32x32xf32>, %o: tensor<2x8x32xf32>) -> tensor<2x8x32xf32> {
  // expected-error @+1 {{q_proj output width 30 is not divisible by its 4 head(s)}}
  %r = attn.multi_head_attention ins(%x, %x, %x : tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>)
      weights(%wq, %wk, %wv, %wo : tensor<32x30xf32>, tensor<32x16xf32>, tensor<32x16xf32>, tensor<32x32xf32>)
      outs(%o : tensor<2x8x32xf32>) {num_heads = 4 : i64, num_kv_heads = 2 : i64} -> tensor<2x8x32xf32>
  return %r : tensor<2x8x32xf32>
}

// -----

func.func @mha_k_proj_width(%x: tensor<2x8x32xf32>, %wq: tensor<32x32xf32>, %wk: tensor<32x15xf32>,
                            %wv: tensor<32x16xf32>, %wo: tensor<32x32xf32>, %o: tensor<2x8x32xf32>) -> tensor<2x8x32xf32> {
  // expected-error @+1 {{k_proj output width 15 is not divisible by its 2 head(s)}}
  %r = attn.multi_head_attention ins(%x, %x, %x : tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>)
      weights(%wq, %wk, %wv, %wo : tensor<32x32xf32>, tensor<32x15xf32>, tensor<32x16xf32>, tensor<32x32xf32>)
      outs(%o : tensor<2x8x32xf32>) {num_heads = 4 : i64, num_kv_heads = 2 : i64} -> tensor<2x8x32xf32>
  return %r : tensor<2x8x32xf32>
}

// -----

// num_kv_heads defaults to num_heads (4).
func.func @mha_v_proj_width_default_kv_heads(%x: tensor<2x8x32xf32>, %wq: tensor<32x32xf32>, %wk: tensor<32x32xf32>,
                                             %wv: tensor<32x18xf32>, %wo: tensor<32x32xf32>, %o: tensor<2x8x32xf32>) -> tensor<2x8x32xf32> {
  // expected-error @+1 {{v_proj output width 18 is not divisible by its 4 head(s)}}
  %r = attn.multi_head_attention ins(%x, %x, %x : tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>)
      weights(%wq, %wk, %wv, %wo : tensor<32x32xf32>, tensor<32x32xf32>, tensor<32x18xf32>, tensor<32x32xf32>)
      outs(%o : tensor<2x8x32xf32>) {num_heads = 4 : i64} -> tensor<2x8x32xf32>
  return %r : tensor<2x8x32xf32>
}

// -----

func.func @mha_key_batch(%x: tensor<2x8x32xf32>, %kv: tensor<1x8x32xf32>, %wq: tensor<32x32xf32>, %wk: tensor<32x16xf32>,
                         %wv: tensor<32x16xf32>, %wo: tensor<32x32xf32>, %o: tensor<2x8x32xf32>) -> tensor<2x8x32xf32> {
  // expected-error @+1 {{key batch size is 1, expected 2 (must match query)}}
  %r = attn.multi_head_attention ins(%x, %kv, %kv : tensor<2x8x32xf32>, tensor<1x8x32xf32>, tensor<1x8x32xf32>)
      weights(%wq, %wk, %wv, %wo : tensor<32x32xf32>, tensor<32x16xf32>, tensor<32x16xf32>, tensor<32x32xf32>)
      outs(%o : tensor<2x8x32xf32>) {num_heads = 4 : i64, num_kv_heads = 2 : i64} -> tensor<2x8x32xf32>
  return %r : tensor<2x8x32xf32>
}

// -----

func.func @mha_value_batch(%x: tensor<2x8x32xf32>, %kv: tensor<3x8x32xf32>, %wq: tensor<32x32xf32>, %wk: tensor<32x16xf32>,
                           %wv: tensor<32x16xf32>, %wo: tensor<32x32xf32>, %o: tensor<2x8x32xf32>) -> tensor<2x8x32xf32> {
  // expected-error @+1 {{value batch size is 3, expected 2 (must match query)}}
  %r = attn.multi_head_attention ins(%x, %x, %kv : tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<3x8x32xf32>)
      weights(%wq, %wk, %wv, %wo : tensor<32x32xf32>, tensor<32x16xf32>, tensor<32x16xf32>, tensor<32x32xf32>)
      outs(%o : tensor<2x8x32xf32>) {num_heads = 4 : i64, num_kv_heads = 2 : i64} -> tensor<2x8x32xf32>
  return %r : tensor<2x8x32xf32>
}

// -----

func.func @mha_value_seq(%x: tensor<2x8x32xf32>, %k: tensor<2x16x32xf32>, %v: tensor<2x12x32xf32>, %wq: tensor<32x32xf32>,
                         %wk: tensor<32x16xf32>, %wv: tensor<32x16xf32>, %wo: tensor<32x32xf32>, %o: tensor<2x8x32xf32>) -> tensor<2x8x32xf32> {
  // expected-error @+1 {{value sequence length is 12, expected 16 (must match key)}}
  %r = attn.multi_head_attention ins(%x, %k, %v : tensor<2x8x32xf32>, tensor<2x16x32xf32>, tensor<2x12x32xf32>)
      weights(%wq, %wk, %wv, %wo : tensor<32x32xf32>, tensor<32x16xf32>, tensor<32x16xf32>, tensor<32x32xf32>)
      outs(%o : tensor<2x8x32xf32>) {num_heads = 4 : i64, num_kv_heads = 2 : i64} -> tensor<2x8x32xf32>
  return %r : tensor<2x8x32xf32>
}

// -----

func.func @mha_q_proj_input_width(%x: tensor<2x8x32xf32>, %wq: tensor<64x32xf32>, %wk: tensor<32x16xf32>,
                                  %wv: tensor<32x16xf32>, %wo: tensor<32x32xf32>, %o: tensor<2x8x32xf32>) -> tensor<2x8x32xf32> {
  // expected-error @+1 {{q_proj input width is 64, expected 32 (must match the query embedding size)}}
  %r = attn.multi_head_attention ins(%x, %x, %x : tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>)
      weights(%wq, %wk, %wv, %wo : tensor<64x32xf32>, tensor<32x16xf32>, tensor<32x16xf32>, tensor<32x32xf32>)
      outs(%o : tensor<2x8x32xf32>) {num_heads = 4 : i64, num_kv_heads = 2 : i64} -> tensor<2x8x32xf32>
  return %r : tensor<2x8x32xf32>
}

// -----

// Cross-attention: the key/value embedding (48) differs from the query's (32).
func.func @mha_k_proj_input_width(%x: tensor<2x8x32xf32>, %kv: tensor<2x16x48xf32>, %wq: tensor<32x32xf32>,
                                  %wk: tensor<32x16xf32>, %wv: tensor<48x16xf32>, %wo: tensor<32x32xf32>,
                                  %o: tensor<2x8x32xf32>) -> tensor<2x8x32xf32> {
  // expected-error @+1 {{k_proj input width is 32, expected 48 (must match the key embedding size)}}
  %r = attn.multi_head_attention ins(%x, %kv, %kv : tensor<2x8x32xf32>, tensor<2x16x48xf32>, tensor<2x16x48xf32>)
      weights(%wq, %wk, %wv, %wo : tensor<32x32xf32>, tensor<32x16xf32>, tensor<48x16xf32>, tensor<32x32xf32>)
      outs(%o : tensor<2x8x32xf32>) {num_heads = 4 : i64, num_kv_heads = 2 : i64} -> tensor<2x8x32xf32>
  return %r : tensor<2x8x32xf32>
}

// -----

func.func @mha_v_proj_input_width(%x: tensor<2x8x32xf32>, %kv: tensor<2x16x48xf32>, %wq: tensor<32x32xf32>,
                                  %wk: tensor<48x16xf32>, %wv: tensor<32x16xf32>, %wo: tensor<32x32xf32>,
                                  %o: tensor<2x8x32xf32>) -> tensor<2x8x32xf32> {
  // expected-error @+1 {{v_proj input width is 32, expected 48 (must match the value embedding size)}}
  %r = attn.multi_head_attention ins(%x, %kv, %kv : tensor<2x8x32xf32>, tensor<2x16x48xf32>, tensor<2x16x48xf32>)
      weights(%wq, %wk, %wv, %wo : tensor<32x32xf32>, tensor<48x16xf32>, tensor<32x16xf32>, tensor<32x32xf32>)
      outs(%o : tensor<2x8x32xf32>) {num_heads = 4 : i64, num_kv_heads = 2 : i64} -> tensor<2x8x32xf32>
  return %r : tensor<2x8x32xf32>
}

// -----

// D = 32 / 4 = 8, so k_proj must be 2 * 8 = 16 wide, not 8.
func.func @mha_k_proj_output_width(%x: tensor<2x8x32xf32>, %wq: tensor<32x32xf32>, %wk: tensor<32x8xf32>,
                                   %wv: tensor<32x16xf32>, %wo: tensor<32x32xf32>, %o: tensor<2x8x32xf32>) -> tensor<2x8x32xf32> {
  // expected-error @+1 {{k_proj output width is 8, expected 16 (num_kv_heads x the head dim of q_proj)}}
  %r = attn.multi_head_attention ins(%x, %x, %x : tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>)
      weights(%wq, %wk, %wv, %wo : tensor<32x32xf32>, tensor<32x8xf32>, tensor<32x16xf32>, tensor<32x32xf32>)
      outs(%o : tensor<2x8x32xf32>) {num_heads = 4 : i64, num_kv_heads = 2 : i64} -> tensor<2x8x32xf32>
  return %r : tensor<2x8x32xf32>
}

// -----

// A dynamic q_proj width leaves D unknown, so the k_proj width (8) is accepted;
// the error comes from out_proj instead.
func.func @mha_dynamic_q_proj_then_out_proj(%x: tensor<2x8x32xf32>, %wq: tensor<32x?xf32>, %wk: tensor<32x8xf32>,
                                            %wv: tensor<32x16xf32>, %wo: tensor<16x32xf32>, %o: tensor<2x8x32xf32>) -> tensor<2x8x32xf32> {
  // expected-error @+1 {{out_proj input width is 16, expected 32 (num_heads x the value head dim of v_proj)}}
  %r = attn.multi_head_attention ins(%x, %x, %x : tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>)
      weights(%wq, %wk, %wv, %wo : tensor<32x?xf32>, tensor<32x8xf32>, tensor<32x16xf32>, tensor<16x32xf32>)
      outs(%o : tensor<2x8x32xf32>) {num_heads = 4 : i64, num_kv_heads = 2 : i64} -> tensor<2x8x32xf32>
  return %r : tensor<2x8x32xf32>
}

// -----

func.func @mha_init_batch(%x: tensor<2x8x32xf32>, %wq: tensor<32x32xf32>, %wk: tensor<32x16xf32>,
                          %wv: tensor<32x16xf32>, %wo: tensor<32x32xf32>, %o: tensor<4x8x32xf32>) -> tensor<4x8x32xf32> {
  // expected-error @+1 {{init batch size is 4, expected 2 (must match query)}}
  %r = attn.multi_head_attention ins(%x, %x, %x : tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>)
      weights(%wq, %wk, %wv, %wo : tensor<32x32xf32>, tensor<32x16xf32>, tensor<32x16xf32>, tensor<32x32xf32>)
      outs(%o : tensor<4x8x32xf32>) {num_heads = 4 : i64, num_kv_heads = 2 : i64} -> tensor<4x8x32xf32>
  return %r : tensor<4x8x32xf32>
}

// -----

// The output has Sq rows (8), not Sk (16).
func.func @mha_init_seq(%x: tensor<2x8x32xf32>, %kv: tensor<2x16x32xf32>, %wq: tensor<32x32xf32>, %wk: tensor<32x16xf32>,
                        %wv: tensor<32x16xf32>, %wo: tensor<32x32xf32>, %o: tensor<2x16x32xf32>) -> tensor<2x16x32xf32> {
  // expected-error @+1 {{init sequence length is 16, expected 8 (must match query)}}
  %r = attn.multi_head_attention ins(%x, %kv, %kv : tensor<2x8x32xf32>, tensor<2x16x32xf32>, tensor<2x16x32xf32>)
      weights(%wq, %wk, %wv, %wo : tensor<32x32xf32>, tensor<32x16xf32>, tensor<32x16xf32>, tensor<32x32xf32>)
      outs(%o : tensor<2x16x32xf32>) {num_heads = 4 : i64, num_kv_heads = 2 : i64} -> tensor<2x16x32xf32>
  return %r : tensor<2x16x32xf32>
}

// -----

func.func @mha_init_embedding(%x: tensor<2x8x32xf32>, %wq: tensor<32x32xf32>, %wk: tensor<32x16xf32>,
                              %wv: tensor<32x16xf32>, %wo: tensor<32x64xf32>, %o: tensor<2x8x32xf32>) -> tensor<2x8x32xf32> {
  // expected-error @+1 {{init embedding size is 32, expected 64 (must match the out_proj output width)}}
  %r = attn.multi_head_attention ins(%x, %x, %x : tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>)
      weights(%wq, %wk, %wv, %wo : tensor<32x32xf32>, tensor<32x16xf32>, tensor<32x16xf32>, tensor<32x64xf32>)
      outs(%o : tensor<2x8x32xf32>) {num_heads = 4 : i64, num_kv_heads = 2 : i64} -> tensor<2x8x32xf32>
  return %r : tensor<2x8x32xf32>
}

// -----

func.func @mha_proj_biases_count(%x: tensor<2x8x32xf32>, %wq: tensor<32x32xf32>, %wk: tensor<32x16xf32>,
                                 %wv: tensor<32x16xf32>, %wo: tensor<32x32xf32>, %o: tensor<2x8x32xf32>,
                                 %bq: tensor<32xf32>, %bk: tensor<16xf32>) -> tensor<2x8x32xf32> {
  // expected-error @+1 {{expected 4 proj_biases (b_q, b_k, b_v, b_o) or none, got 2}}
  %r = attn.multi_head_attention ins(%x, %x, %x : tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>)
      weights(%wq, %wk, %wv, %wo : tensor<32x32xf32>, tensor<32x16xf32>, tensor<32x16xf32>, tensor<32x32xf32>)
      proj_biases(%bq, %bk : tensor<32xf32>, tensor<16xf32>)
      outs(%o : tensor<2x8x32xf32>) {num_heads = 4 : i64, num_kv_heads = 2 : i64} -> tensor<2x8x32xf32>
  return %r : tensor<2x8x32xf32>
}

// -----

func.func @mha_proj_bias_rank(%x: tensor<2x8x32xf32>, %wq: tensor<32x32xf32>, %wk: tensor<32x16xf32>,
                              %wv: tensor<32x16xf32>, %wo: tensor<32x32xf32>, %o: tensor<2x8x32xf32>,
                              %bq: tensor<32xf32>, %bk: tensor<1x16xf32>, %bv: tensor<16xf32>,
                              %bo: tensor<32xf32>) -> tensor<2x8x32xf32> {
  // expected-error @+1 {{expected b_k to have rank 1 [out width], got rank 2}}
  %r = attn.multi_head_attention ins(%x, %x, %x : tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>)
      weights(%wq, %wk, %wv, %wo : tensor<32x32xf32>, tensor<32x16xf32>, tensor<32x16xf32>, tensor<32x32xf32>)
      proj_biases(%bq, %bk, %bv, %bo : tensor<32xf32>, tensor<1x16xf32>, tensor<16xf32>, tensor<32xf32>)
      outs(%o : tensor<2x8x32xf32>) {num_heads = 4 : i64, num_kv_heads = 2 : i64} -> tensor<2x8x32xf32>
  return %r : tensor<2x8x32xf32>
}

// -----

func.func @mha_proj_bias_element_type(%x: tensor<2x8x32xf32>, %wq: tensor<32x32xf32>, %wk: tensor<32x16xf32>,
                                      %wv: tensor<32x16xf32>, %wo: tensor<32x32xf32>, %o: tensor<2x8x32xf32>,
                                      %bq: tensor<32xf32>, %bk: tensor<16xf32>, %bv: tensor<16xf16>,
                                      %bo: tensor<32xf32>) -> tensor<2x8x32xf32> {
  // expected-error @+1 {{expected b_v element type 'f32' (the query's), got 'f16'}}
  %r = attn.multi_head_attention ins(%x, %x, %x : tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>)
      weights(%wq, %wk, %wv, %wo : tensor<32x32xf32>, tensor<32x16xf32>, tensor<32x16xf32>, tensor<32x32xf32>)
      proj_biases(%bq, %bk, %bv, %bo : tensor<32xf32>, tensor<16xf32>, tensor<16xf16>, tensor<32xf32>)
      outs(%o : tensor<2x8x32xf32>) {num_heads = 4 : i64, num_kv_heads = 2 : i64} -> tensor<2x8x32xf32>
  return %r : tensor<2x8x32xf32>
}

// -----

func.func @mha_proj_bias_size(%x: tensor<2x8x32xf32>, %wq: tensor<32x32xf32>, %wk: tensor<32x16xf32>,
                              %wv: tensor<32x16xf32>, %wo: tensor<32x32xf32>, %o: tensor<2x8x32xf32>,
                              %bq: tensor<32xf32>, %bk: tensor<16xf32>, %bv: tensor<16xf32>,
                              %bo: tensor<16xf32>) -> tensor<2x8x32xf32> {
  // expected-error @+1 {{b_o size is 16, expected 32 (must match its projection's output width)}}
  %r = attn.multi_head_attention ins(%x, %x, %x : tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>)
      weights(%wq, %wk, %wv, %wo : tensor<32x32xf32>, tensor<32x16xf32>, tensor<32x16xf32>, tensor<32x32xf32>)
      proj_biases(%bq, %bk, %bv, %bo : tensor<32xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>)
      outs(%o : tensor<2x8x32xf32>) {num_heads = 4 : i64, num_kv_heads = 2 : i64} -> tensor<2x8x32xf32>
  return %r : tensor<2x8x32xf32>
}

// -----

// The MHA mask broadcasts against num_heads (4) query heads.
func.func @mha_mask_not_broadcastable(%x: tensor<2x8x32xf32>, %wq: tensor<32x32xf32>, %wk: tensor<32x16xf32>,
                                      %wv: tensor<32x16xf32>, %wo: tensor<32x32xf32>, %o: tensor<2x8x32xf32>,
                                      %m: tensor<2x2x8x8xi1>) -> tensor<2x8x32xf32> {
  // expected-error @+1 {{mask dim 1 is 2, which does not broadcast to Hq = 4 (expected 1 or 4)}}
  %r = attn.multi_head_attention ins(%x, %x, %x : tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>)
      weights(%wq, %wk, %wv, %wo : tensor<32x32xf32>, tensor<32x16xf32>, tensor<32x16xf32>, tensor<32x32xf32>)
      mask(%m : tensor<2x2x8x8xi1>)
      outs(%o : tensor<2x8x32xf32>) {num_heads = 4 : i64, num_kv_heads = 2 : i64} -> tensor<2x8x32xf32>
  return %r : tensor<2x8x32xf32>
}

// -----

func.func @mha_bias_rank(%x: tensor<2x8x32xf32>, %wq: tensor<32x32xf32>, %wk: tensor<32x16xf32>,
                         %wv: tensor<32x16xf32>, %wo: tensor<32x32xf32>, %o: tensor<2x8x32xf32>,
                         %b: tensor<1x2x4x8x8xf32>) -> tensor<2x8x32xf32> {
  // expected-error @+1 {{expected bias to have rank at most 4 (broadcastable to [B, Hq, Sq, Sk]), got rank 5}}
  %r = attn.multi_head_attention ins(%x, %x, %x : tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>)
      weights(%wq, %wk, %wv, %wo : tensor<32x32xf32>, tensor<32x16xf32>, tensor<32x16xf32>, tensor<32x32xf32>)
      bias(%b : tensor<1x2x4x8x8xf32>)
      outs(%o : tensor<2x8x32xf32>) {num_heads = 4 : i64, num_kv_heads = 2 : i64} -> tensor<2x8x32xf32>
  return %r : tensor<2x8x32xf32>
}

// -----

func.func @mha_bias_not_broadcastable(%x: tensor<2x8x32xf32>, %kv: tensor<2x16x32xf32>, %wq: tensor<32x32xf32>,
                                      %wk: tensor<32x16xf32>, %wv: tensor<32x16xf32>, %wo: tensor<32x32xf32>,
                                      %o: tensor<2x8x32xf32>, %b: tensor<8x8xf32>) -> tensor<2x8x32xf32> {
  // expected-error @+1 {{bias dim 1 is 8, which does not broadcast to Sk = 16 (expected 1 or 16)}}
  %r = attn.multi_head_attention ins(%x, %kv, %kv : tensor<2x8x32xf32>, tensor<2x16x32xf32>, tensor<2x16x32xf32>)
      weights(%wq, %wk, %wv, %wo : tensor<32x32xf32>, tensor<32x16xf32>, tensor<32x16xf32>, tensor<32x32xf32>)
      bias(%b : tensor<8x8xf32>)
      outs(%o : tensor<2x8x32xf32>) {num_heads = 4 : i64, num_kv_heads = 2 : i64} -> tensor<2x8x32xf32>
  return %r : tensor<2x8x32xf32>
}

// -----

func.func @mha_kv_lens_size(%x: tensor<2x8x32xf32>, %wq: tensor<32x32xf32>, %wk: tensor<32x16xf32>,
                            %wv: tensor<32x16xf32>, %wo: tensor<32x32xf32>, %o: tensor<2x8x32xf32>,
                            %l: tensor<1xi32>) -> tensor<2x8x32xf32> {
  // expected-error @+1 {{kv_lens size is 1, expected 2 (one length per batch entry)}}
  %r = attn.multi_head_attention ins(%x, %x, %x : tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>)
      weights(%wq, %wk, %wv, %wo : tensor<32x32xf32>, tensor<32x16xf32>, tensor<32x16xf32>, tensor<32x32xf32>)
      kv_lens(%l : tensor<1xi32>)
      outs(%o : tensor<2x8x32xf32>) {num_heads = 4 : i64, num_kv_heads = 2 : i64} -> tensor<2x8x32xf32>
  return %r : tensor<2x8x32xf32>
}

// -----

func.func @mha_kv_lens_rank(%x: tensor<2x8x32xf32>, %wq: tensor<32x32xf32>, %wk: tensor<32x16xf32>,
                            %wv: tensor<32x16xf32>, %wo: tensor<32x32xf32>, %o: tensor<2x8x32xf32>,
                            %l: tensor<i32>) -> tensor<2x8x32xf32> {
  // expected-error @+1 {{expected kv_lens to have rank 1 [B], got rank 0}}
  %r = attn.multi_head_attention ins(%x, %x, %x : tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>)
      weights(%wq, %wk, %wv, %wo : tensor<32x32xf32>, tensor<32x16xf32>, tensor<32x16xf32>, tensor<32x32xf32>)
      kv_lens(%l : tensor<i32>)
      outs(%o : tensor<2x8x32xf32>) {num_heads = 4 : i64, num_kv_heads = 2 : i64} -> tensor<2x8x32xf32>
  return %r : tensor<2x8x32xf32>
}

// -----

func.func @mha_score_mod_arg_count(%x: tensor<2x8x32xf32>, %wq: tensor<32x32xf32>, %wk: tensor<32x16xf32>,
                                   %wv: tensor<32x16xf32>, %wo: tensor<32x32xf32>, %o: tensor<2x8x32xf32>) -> tensor<2x8x32xf32> {
  // expected-error @+1 {{'attn.multi_head_attention' op expected score_mod region arguments (f32 score, index b, index h, index q_idx, index kv_idx) -> f32, got 1 argument(s) of types ('f32')}}
  %r = attn.multi_head_attention ins(%x, %x, %x : tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>)
      weights(%wq, %wk, %wv, %wo : tensor<32x32xf32>, tensor<32x16xf32>, tensor<32x16xf32>, tensor<32x32xf32>)
      outs(%o : tensor<2x8x32xf32>) {num_heads = 4 : i64, num_kv_heads = 2 : i64}
      score_mod {
      ^bb0(%s: f32):
        attn.yield %s : f32
      } -> tensor<2x8x32xf32>
  return %r : tensor<2x8x32xf32>
}

// -----

func.func @mha_mask_mod_yield_type(%x: tensor<2x8x32xf32>, %wq: tensor<32x32xf32>, %wk: tensor<32x16xf32>,
                                   %wv: tensor<32x16xf32>, %wo: tensor<32x32xf32>, %o: tensor<2x8x32xf32>) -> tensor<2x8x32xf32> {
  %r = attn.multi_head_attention ins(%x, %x, %x : tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>)
      weights(%wq, %wk, %wv, %wo : tensor<32x32xf32>, tensor<32x16xf32>, tensor<32x16xf32>, tensor<32x32xf32>)
      outs(%o : tensor<2x8x32xf32>) {num_heads = 4 : i64, num_kv_heads = 2 : i64}
      mask_mod {
      ^bb0(%b: index, %h: index, %i: index, %j: index):
        %c = arith.cmpi ule, %j, %i : index
        %e = arith.extui %c : i1 to i8
        // expected-error @+1 {{'attn.yield' op in mask_mod must yield exactly one 'i1', got ('i8')}}
        attn.yield %e : i8
      } -> tensor<2x8x32xf32>
  return %r : tensor<2x8x32xf32>
}

// -----

// A zero head count hides behind a dynamic query head count.
func.func @zero_value_heads(%q: tensor<1x?x8x16xf32>, %k: tensor<1x?x8x16xf32>,
                            %v: tensor<1x0x8x16xf32>, %o: tensor<1x?x8x16xf32>)
    -> tensor<1x?x8x16xf32> {
  // expected-error @+1 {{value head count must be > 0}}
  %0 = attn.attention ins(%q, %k, %v : tensor<1x?x8x16xf32>,
                          tensor<1x?x8x16xf32>, tensor<1x0x8x16xf32>)
      outs(%o : tensor<1x?x8x16xf32>) -> tensor<1x?x8x16xf32>
  return %0 : tensor<1x?x8x16xf32>
}

// -----

func.func @zero_init_heads(%q: tensor<1x?x8x16xf32>, %o: tensor<1x0x8x16xf32>)
    -> tensor<1x0x8x16xf32> {
  // expected-error @+1 {{init head count must be > 0}}
  %0 = attn.attention ins(%q, %q, %q : tensor<1x?x8x16xf32>,
                          tensor<1x?x8x16xf32>, tensor<1x?x8x16xf32>)
      outs(%o : tensor<1x0x8x16xf32>) -> tensor<1x0x8x16xf32>
  return %0 : tensor<1x0x8x16xf32>
}

// -----

func.func @mha_width_overflow(%x: tensor<1x2x8xf32>, %w: tensor<8x?xf32>,
                              %wv: tensor<8x4xf32>, %wo: tensor<0x8xf32>)
    -> tensor<1x2x8xf32> {
  // expected-error @+1 {{4611686018427387904 heads x 4 per head overflows a 64-bit size}}
  %0 = attn.multi_head_attention
      ins(%x, %x, %x : tensor<1x2x8xf32>, tensor<1x2x8xf32>, tensor<1x2x8xf32>)
      weights(%w, %w, %wv, %wo : tensor<8x?xf32>, tensor<8x?xf32>,
                                 tensor<8x4xf32>, tensor<0x8xf32>)
      outs(%x : tensor<1x2x8xf32>)
      {num_heads = 4611686018427387904 : i64, num_kv_heads = 1 : i64}
      -> tensor<1x2x8xf32>
  return %0 : tensor<1x2x8xf32>
}

// -----

func.func @attention_offsets_count(%q: tensor<1x4x8x16xf32>, %i: index)
    -> tensor<1x4x8x16xf32> {
  // expected-error @+1 {{expected 4 offsets (b, h, q, kv) or none, got 2}}
  %0 = attn.attention ins(%q, %q, %q : tensor<1x4x8x16xf32>,
                          tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>)
      offsets(%i, %i : index, index) outs(%q : tensor<1x4x8x16xf32>)
      -> tensor<1x4x8x16xf32>
  return %0 : tensor<1x4x8x16xf32>
}

// -----

func.func @attention_extents_count(%q: tensor<1x4x8x16xf32>, %i: index)
    -> tensor<1x4x8x16xf32> {
  // expected-error @+1 {{expected 2 extents (Sq, Sk) or none, got 1}}
  %0 = attn.attention ins(%q, %q, %q : tensor<1x4x8x16xf32>,
                          tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>)
      extents(%i : index) outs(%q : tensor<1x4x8x16xf32>)
      -> tensor<1x4x8x16xf32>
  return %0 : tensor<1x4x8x16xf32>
}

// -----

func.func @ukernel_mixed(%t: tensor<4xf32>, %m: memref<4xf32>) {
  // expected-error @+1 {{expected all shaped operands to be ranked tensors or all to be memrefs, not a mix}}
  attn.ukernel.generic "k" ins(%t : tensor<4xf32>) outs(%m : memref<4xf32>)
  return
}

// -----

func.func @ukernel_result_count(%t: tensor<4xf32>) {
  // expected-error @+1 {{expected the number of tensor results (0) to be equal to the number of output tensors (1)}}
  attn.ukernel.generic "k" outs(%t : tensor<4xf32>)
  return
}

// -----

func.func @chunked_zero(%q: tensor<1x1x8x16xf32>, %o: tensor<1x1x8x16xf32>)
    -> tensor<1x1x8x16xf32> {
  %0 = attn.attention ins(%q, %q, %q : tensor<1x1x8x16xf32>,
                          tensor<1x1x8x16xf32>, tensor<1x1x8x16xf32>)
      outs(%o : tensor<1x1x8x16xf32>)
      // expected-error @+1 {{chunked 'size' must be in [1, 2^40], got 0}}
      {structured_mask = #attn.chunked<size = 0>} -> tensor<1x1x8x16xf32>
  return %0 : tensor<1x1x8x16xf32>
}

// -----

func.func @prefix_negative(%q: tensor<1x1x8x16xf32>, %o: tensor<1x1x8x16xf32>)
    -> tensor<1x1x8x16xf32> {
  %0 = attn.attention ins(%q, %q, %q : tensor<1x1x8x16xf32>,
                          tensor<1x1x8x16xf32>, tensor<1x1x8x16xf32>)
      outs(%o : tensor<1x1x8x16xf32>)
      // expected-error @+1 {{prefix 'size' must be in [0, 2^40], got -1}}
      {structured_mask = #attn.prefix<size = -1>} -> tensor<1x1x8x16xf32>
  return %0 : tensor<1x1x8x16xf32>
}

// -----

func.func @strided_zero(%q: tensor<1x1x8x16xf32>, %o: tensor<1x1x8x16xf32>)
    -> tensor<1x1x8x16xf32> {
  %0 = attn.attention ins(%q, %q, %q : tensor<1x1x8x16xf32>,
                          tensor<1x1x8x16xf32>, tensor<1x1x8x16xf32>)
      outs(%o : tensor<1x1x8x16xf32>)
      // expected-error @+1 {{strided 'stride' must be in [1, 2^40], got 0}}
      {structured_mask = #attn.strided<stride = 0>} -> tensor<1x1x8x16xf32>
  return %0 : tensor<1x1x8x16xf32>
}

// -----

func.func @fixed_summary_too_wide(%q: tensor<1x1x8x16xf32>, %o: tensor<1x1x8x16xf32>)
    -> tensor<1x1x8x16xf32> {
  %0 = attn.attention ins(%q, %q, %q : tensor<1x1x8x16xf32>,
                          tensor<1x1x8x16xf32>, tensor<1x1x8x16xf32>)
      outs(%o : tensor<1x1x8x16xf32>)
      // expected-error @+1 {{fixed 'summary' must be <= 'stride' (4), got 5}}
      {structured_mask = #attn.fixed<stride = 4, summary = 5>} -> tensor<1x1x8x16xf32>
  return %0 : tensor<1x1x8x16xf32>
}

// -----

func.func @dilated_zero(%q: tensor<1x1x8x16xf32>, %o: tensor<1x1x8x16xf32>)
    -> tensor<1x1x8x16xf32> {
  %0 = attn.attention ins(%q, %q, %q : tensor<1x1x8x16xf32>,
                          tensor<1x1x8x16xf32>, tensor<1x1x8x16xf32>)
      outs(%o : tensor<1x1x8x16xf32>)
      // expected-error @+1 {{dilated 'dilation' must be in [1, 2^40], got 0}}
      {structured_mask = #attn.dilated<window = 2, dilation = 0>} -> tensor<1x1x8x16xf32>
  return %0 : tensor<1x1x8x16xf32>
}

// -----

func.func @global_negative(%q: tensor<1x1x8x16xf32>, %o: tensor<1x1x8x16xf32>)
    -> tensor<1x1x8x16xf32> {
  %0 = attn.attention ins(%q, %q, %q : tensor<1x1x8x16xf32>,
                          tensor<1x1x8x16xf32>, tensor<1x1x8x16xf32>)
      outs(%o : tensor<1x1x8x16xf32>)
      // expected-error @+1 {{global 'tokens' must be in [0, 2^40], got -2}}
      {structured_mask = #attn.global<tokens = -2>} -> tensor<1x1x8x16xf32>
  return %0 : tensor<1x1x8x16xf32>
}

// -----

func.func @bigbird_zero_block(%q: tensor<1x1x8x16xf32>, %o: tensor<1x1x8x16xf32>)
    -> tensor<1x1x8x16xf32> {
  %0 = attn.attention ins(%q, %q, %q : tensor<1x1x8x16xf32>,
                          tensor<1x1x8x16xf32>, tensor<1x1x8x16xf32>)
      outs(%o : tensor<1x1x8x16xf32>)
      // expected-error @+1 {{bigbird 'block' must be in [1, 2^40], got 0}}
      {structured_mask = #attn.bigbird<block = 0, window = 3, global = 1, random = 2, seed = 7>} -> tensor<1x1x8x16xf32>
  return %0 : tensor<1x1x8x16xf32>
}

// -----

func.func @block_bitmap_zero_block(%q: tensor<1x1x8x16xf32>, %o: tensor<1x1x8x16xf32>)
    -> tensor<1x1x8x16xf32> {
  %0 = attn.attention ins(%q, %q, %q : tensor<1x1x8x16xf32>,
                          tensor<1x1x8x16xf32>, tensor<1x1x8x16xf32>)
      outs(%o : tensor<1x1x8x16xf32>)
      // expected-error @+1 {{block_bitmap 'block' must be in [1, 2^40], got 0}}
      {structured_mask = #attn.block_bitmap<block = 0, rows = [1]>} -> tensor<1x1x8x16xf32>
  return %0 : tensor<1x1x8x16xf32>
}

// -----

func.func @block_bitmap_words(%q: tensor<1x1x8x16xf32>, %o: tensor<1x1x8x16xf32>)
    -> tensor<1x1x8x16xf32> {
  %0 = attn.attention ins(%q, %q, %q : tensor<1x1x8x16xf32>,
                          tensor<1x1x8x16xf32>, tensor<1x1x8x16xf32>)
      outs(%o : tensor<1x1x8x16xf32>)
      // expected-error @+1 {{block_bitmap rows hold 2 word(s) each (key_blocks = 100), got 3 words}}
      {structured_mask = #attn.block_bitmap<block = 4, rows = [1, 2, 3], key_blocks = 100>} -> tensor<1x1x8x16xf32>
  return %0 : tensor<1x1x8x16xf32>
}

// -----

func.func @block_bitmap_no_key_blocks(%q: tensor<1x1x8x16xf32>, %o: tensor<1x1x8x16xf32>)
    -> tensor<1x1x8x16xf32> {
  %0 = attn.attention ins(%q, %q, %q : tensor<1x1x8x16xf32>,
                          tensor<1x1x8x16xf32>, tensor<1x1x8x16xf32>)
      outs(%o : tensor<1x1x8x16xf32>)
      // expected-error @+1 {{block_bitmap 'key_blocks' must be in [1, 2^40], got 0}}
      {structured_mask = #attn.block_bitmap<block = 4, rows = [1], key_blocks = 0>} -> tensor<1x1x8x16xf32>
  return %0 : tensor<1x1x8x16xf32>
}

// -----

func.func @unknown_similarity(%q: tensor<1x1x8x16xf32>, %o: tensor<1x1x8x16xf32>)
    -> tensor<1x1x8x16xf32> {
  %0 = attn.attention ins(%q, %q, %q : tensor<1x1x8x16xf32>,
                          tensor<1x1x8x16xf32>, tensor<1x1x8x16xf32>)
      outs(%o : tensor<1x1x8x16xf32>)
      // expected-error @+2 {{expected ::mlir::attn::Similarity to be one of: dot, gaussian}}
      // expected-error @+1 {{failed to parse Attn_SimilarityAttr parameter 'value'}}
      {similarity = #attn.similarity<cosine>} -> tensor<1x1x8x16xf32>
  return %0 : tensor<1x1x8x16xf32>
}

// -----

func.func @lse_wrong_rows(%q: tensor<1x4x8x16xf32>, %o: tensor<1x4x8x16xf32>,
                          %l: tensor<1x4x7xf32>) -> tensor<1x4x8x16xf32> {
  // expected-error @+1 {{lse sequence length is 7, expected 8 (must match query)}}
  %0:2 = attn.attention ins(%q, %q, %q : tensor<1x4x8x16xf32>,
                            tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>)
      outs(%o : tensor<1x4x8x16xf32>) lse(%l : tensor<1x4x7xf32>)
      -> tensor<1x4x8x16xf32>, tensor<1x4x7xf32>
  return %0#0 : tensor<1x4x8x16xf32>
}

// -----

func.func @lse_result_without_init(%q: tensor<1x4x8x16xf32>,
                                   %o: tensor<1x4x8x16xf32>)
    -> tensor<1x4x8x16xf32> {
  // expected-error @+1 {{returns an lse exactly when given an 'lse' init (result without init)}}
  %0:2 = "attn.attention"(%q, %q, %q, %o) <{operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0>}> ({}, {})
      : (tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>,
         tensor<1x4x8x16xf32>) -> (tensor<1x4x8x16xf32>, tensor<1x4x8xf32>)
  return %0#0 : tensor<1x4x8x16xf32>
}

// -----

func.func @finalize_lse_without_max(%acc: tensor<1x4x8x16xf32>,
                                    %s: tensor<1x4x8xf32>)
    -> tensor<1x4x8x16xf32> {
  // expected-error @+1 {{needs the running 'max' to return an lse}}
  %0:2 = attn.finalize_online_attention ins(%acc, %s : tensor<1x4x8x16xf32>,
                                            tensor<1x4x8xf32>)
      outs(%acc : tensor<1x4x8x16xf32>) lse(%s : tensor<1x4x8xf32>)
      -> tensor<1x4x8x16xf32>, tensor<1x4x8xf32>
  return %0#0 : tensor<1x4x8x16xf32>
}

// -----

func.func @linear_heads(%q: tensor<1x3x8x16xf32>, %k: tensor<1x2x8x16xf32>,
                        %o: tensor<1x3x8x16xf32>) -> tensor<1x3x8x16xf32> {
  // expected-error @+1 {{query head count (3) must be a multiple of the key/value head count (2)}}
  %0 = attn.linear_attention ins(%q, %k, %k : tensor<1x3x8x16xf32>,
                                 tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
      outs(%o : tensor<1x3x8x16xf32>) -> tensor<1x3x8x16xf32>
  return %0 : tensor<1x3x8x16xf32>
}

// -----

func.func @linear_window(%q: tensor<1x2x8x16xf32>, %o: tensor<1x2x8x16xf32>)
    -> tensor<1x2x8x16xf32> {
  %0 = attn.linear_attention ins(%q, %q, %q : tensor<1x2x8x16xf32>,
                                 tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
      outs(%o : tensor<1x2x8x16xf32>)
      // expected-error @+1 {{attribute 'structured_mask' failed to satisfy constraint: causal mask}}
      {structured_mask = #attn.sliding_window<left = 2, right = 0>}
      -> tensor<1x2x8x16xf32>
  return %0 : tensor<1x2x8x16xf32>
}

// -----

func.func @rel_bias_without_relpos(%q: tensor<1x4x8x16xf32>,
                                   %t: tensor<4x32xf32>,
                                   %o: tensor<1x4x8x16xf32>)
    -> tensor<1x4x8x16xf32> {
  // expected-error @+1 {{takes a 'rel_bias' table exactly with a 'relpos' attribute}}
  %0 = attn.attention ins(%q, %q, %q : tensor<1x4x8x16xf32>,
                          tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>)
      rel_bias(%t : tensor<4x32xf32>) outs(%o : tensor<1x4x8x16xf32>)
      -> tensor<1x4x8x16xf32>
  return %0 : tensor<1x4x8x16xf32>
}

// -----

func.func @rel_bias_buckets(%q: tensor<1x4x8x16xf32>, %t: tensor<4x16xf32>,
                            %o: tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32> {
  // expected-error @+1 {{rel_bias bucket count is 16, expected 32 (must match relpos)}}
  %0 = attn.attention ins(%q, %q, %q : tensor<1x4x8x16xf32>,
                          tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>)
      rel_bias(%t : tensor<4x16xf32>) outs(%o : tensor<1x4x8x16xf32>)
      {relpos = #attn.relpos<buckets = 32, max_distance = 128,
                             bidirectional = true>}
      -> tensor<1x4x8x16xf32>
  return %0 : tensor<1x4x8x16xf32>
}

// -----

func.func @rel_bias_heads(%q: tensor<1x4x8x16xf32>, %t: tensor<2x32xf32>,
                          %o: tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32> {
  // expected-error @+1 {{rel_bias head count is 2, expected 4 (must match query)}}
  %0 = attn.attention ins(%q, %q, %q : tensor<1x4x8x16xf32>,
                          tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>)
      rel_bias(%t : tensor<2x32xf32>) outs(%o : tensor<1x4x8x16xf32>)
      {relpos = #attn.relpos<buckets = 32, max_distance = 128,
                             bidirectional = true>}
      -> tensor<1x4x8x16xf32>
  return %0 : tensor<1x4x8x16xf32>
}

// -----

func.func @relpos_odd_buckets(%q: tensor<1x4x8x16xf32>, %t: tensor<4x7xf32>,
                              %o: tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32> {
  %0 = attn.attention ins(%q, %q, %q : tensor<1x4x8x16xf32>,
                          tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>)
      rel_bias(%t : tensor<4x7xf32>) outs(%o : tensor<1x4x8x16xf32>)
      // expected-error @+1 {{relpos 'buckets' must be at least 4 and even (bidirectional), got 7}}
      {relpos = #attn.relpos<buckets = 7, max_distance = 128,
                             bidirectional = true>}
      -> tensor<1x4x8x16xf32>
  return %0 : tensor<1x4x8x16xf32>
}

// -----

func.func @additive_without_weight(%q: tensor<1x4x8x16xf32>,
                                   %o: tensor<1x4x8x16xf32>)
    -> tensor<1x4x8x16xf32> {
  // expected-error @+1 {{takes an 'additive_weight' exactly with similarity = #attn.similarity<additive>}}
  %0 = attn.attention ins(%q, %q, %q : tensor<1x4x8x16xf32>,
                          tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>)
      outs(%o : tensor<1x4x8x16xf32>)
      {similarity = #attn.similarity<additive>} -> tensor<1x4x8x16xf32>
  return %0 : tensor<1x4x8x16xf32>
}

// -----

func.func @additive_weight_dim(%q: tensor<1x4x8x16xf32>, %w: tensor<4x8xf32>,
                               %o: tensor<1x4x8x16xf32>)
    -> tensor<1x4x8x16xf32> {
  // expected-error @+1 {{additive_weight dim is 8, expected 16 (must match the head dim D)}}
  %0 = attn.attention ins(%q, %q, %q : tensor<1x4x8x16xf32>,
                          tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>)
      additive_weight(%w : tensor<4x8xf32>) outs(%o : tensor<1x4x8x16xf32>)
      {similarity = #attn.similarity<additive>} -> tensor<1x4x8x16xf32>
  return %0 : tensor<1x4x8x16xf32>
}

// -----

func.func @spans_size(%q: tensor<1x4x8x16xf32>, %s: tensor<3xi32>,
                      %o: tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32> {
  // expected-error @+1 {{spans size is 3, expected 4 (one span per query head)}}
  %0 = attn.attention ins(%q, %q, %q : tensor<1x4x8x16xf32>,
                          tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>)
      spans(%s : tensor<3xi32>) outs(%o : tensor<1x4x8x16xf32>)
      -> tensor<1x4x8x16xf32>
  return %0 : tensor<1x4x8x16xf32>
}

// -----

func.func @block_mask_without_sizes(%q: tensor<1x4x8x16xf32>,
                                    %m: tensor<1x4x2x2xi8>,
                                    %o: tensor<1x4x8x16xf32>)
    -> tensor<1x4x8x16xf32> {
  // expected-error @+1 {{block_mask needs block_sizes = array<i64: bq, bk> (the block of queries and of keys)}}
  %0 = attn.attention ins(%q, %q, %q : tensor<1x4x8x16xf32>,
                          tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>)
      block_mask(%m : tensor<1x4x2x2xi8>) outs(%o : tensor<1x4x8x16xf32>)
      -> tensor<1x4x8x16xf32>
  return %0 : tensor<1x4x8x16xf32>
}

// -----

func.func @block_sizes_without_mask(%q: tensor<1x4x8x16xf32>,
                                    %o: tensor<1x4x8x16xf32>)
    -> tensor<1x4x8x16xf32> {
  // expected-error @+1 {{has block_sizes but no block_mask}}
  %0 = attn.attention ins(%q, %q, %q : tensor<1x4x8x16xf32>,
                          tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>)
      outs(%o : tensor<1x4x8x16xf32>) {block_sizes = array<i64: 4, 4>}
      -> tensor<1x4x8x16xf32>
  return %0 : tensor<1x4x8x16xf32>
}

// -----

func.func @block_sizes_not_positive(%q: tensor<1x4x8x16xf32>,
                                    %m: tensor<1x4x2x2xi8>,
                                    %o: tensor<1x4x8x16xf32>)
    -> tensor<1x4x8x16xf32> {
  // expected-error @+1 {{block_sizes must be two positive sizes [bq, bk]}}
  %0 = attn.attention ins(%q, %q, %q : tensor<1x4x8x16xf32>,
                          tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>)
      block_mask(%m : tensor<1x4x2x2xi8>) outs(%o : tensor<1x4x8x16xf32>)
      {block_sizes = array<i64: 4, 0>} -> tensor<1x4x8x16xf32>
  return %0 : tensor<1x4x8x16xf32>
}

// -----

func.func @block_mask_rank(%q: tensor<1x4x8x16xf32>, %m: tensor<2x2xi8>,
                           %o: tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32> {
  // expected-error @+1 {{expected block_mask to have rank 4 [B or 1, Hq or 1, query blocks, key blocks], got rank 2 ('tensor<2x2xi8>')}}
  %0 = attn.attention ins(%q, %q, %q : tensor<1x4x8x16xf32>,
                          tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>)
      block_mask(%m : tensor<2x2xi8>) outs(%o : tensor<1x4x8x16xf32>)
      {block_sizes = array<i64: 4, 4>} -> tensor<1x4x8x16xf32>
  return %0 : tensor<1x4x8x16xf32>
}

// -----

func.func @block_mask_key_blocks(%q: tensor<1x4x8x16xf32>,
                                 %m: tensor<1x4x2x3xi8>,
                                 %o: tensor<1x4x8x16xf32>)
    -> tensor<1x4x8x16xf32> {
  // expected-error @+1 {{block_mask dim 3 is 3, expected 2 (ceil(Sk / bk) key blocks)}}
  %0 = attn.attention ins(%q, %q, %q : tensor<1x4x8x16xf32>,
                          tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>)
      block_mask(%m : tensor<1x4x2x3xi8>) outs(%o : tensor<1x4x8x16xf32>)
      {block_sizes = array<i64: 4, 5>} -> tensor<1x4x8x16xf32>
  return %0 : tensor<1x4x8x16xf32>
}

// -----

func.func @block_mask_heads(%q: tensor<1x4x8x16xf32>, %m: tensor<1x2x2x2xi8>,
                            %o: tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32> {
  // expected-error @+1 {{block_mask dim 1 is 2, expected 4 (or 1: broadcast)}}
  %0 = attn.attention ins(%q, %q, %q : tensor<1x4x8x16xf32>,
                          tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>)
      block_mask(%m : tensor<1x2x2x2xi8>) outs(%o : tensor<1x4x8x16xf32>)
      {block_sizes = array<i64: 4, 4>} -> tensor<1x4x8x16xf32>
  return %0 : tensor<1x4x8x16xf32>
}

// -----

func.func @block_mask_type(%q: tensor<1x4x8x16xf32>, %m: tensor<1x4x2x2xi32>,
                           %o: tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32> {
  // expected-error @+1 {{operand #3 must be ranked tensor of 8-bit signless integer values}}
  %0 = attn.attention ins(%q, %q, %q : tensor<1x4x8x16xf32>,
                          tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>)
      block_mask(%m : tensor<1x4x2x2xi32>) outs(%o : tensor<1x4x8x16xf32>)
      {block_sizes = array<i64: 4, 4>} -> tensor<1x4x8x16xf32>
  return %0 : tensor<1x4x8x16xf32>
}

// -----

func.func @additive_attention_rows(%q: tensor<1x4x8x16xf32>,
                                   %wq: tensor<12x8xf32>, %w: tensor<8xf32>,
                                   %o: tensor<1x4x8x16xf32>)
    -> tensor<1x4x8x16xf32> {
  // expected-error @+1 {{q_proj rows is 12, expected 16 (the head dim D)}}
  %0 = attn.additive_attention
      ins(%q, %q, %q : tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>,
                       tensor<1x4x8x16xf32>)
      weights(%wq, %wq, %w : tensor<12x8xf32>, tensor<12x8xf32>, tensor<8xf32>)
      outs(%o : tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32>
  return %0 : tensor<1x4x8x16xf32>
}

// -----

func.func @additive_attention_dims(%q: tensor<1x4x8x16xf32>,
                                   %wq: tensor<16x8xf32>,
                                   %wk: tensor<16x4xf32>, %w: tensor<8xf32>,
                                   %o: tensor<1x4x8x16xf32>)
    -> tensor<1x4x8x16xf32> {
  // expected-error @+1 {{k_proj columns is 4, expected 8 (q_proj's attention dim A)}}
  %0 = attn.additive_attention
      ins(%q, %q, %q : tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>,
                       tensor<1x4x8x16xf32>)
      weights(%wq, %wk, %w : tensor<16x8xf32>, tensor<16x4xf32>, tensor<8xf32>)
      outs(%o : tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32>
  return %0 : tensor<1x4x8x16xf32>
}

// -----

func.func @additive_attention_score(%q: tensor<1x4x8x16xf32>,
                                    %wq: tensor<16x8xf32>, %w: tensor<6xf32>,
                                    %o: tensor<1x4x8x16xf32>)
    -> tensor<1x4x8x16xf32> {
  // expected-error @+1 {{score_proj size is 6, expected 8 (q_proj's attention dim A)}}
  %0 = attn.additive_attention
      ins(%q, %q, %q : tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>,
                       tensor<1x4x8x16xf32>)
      weights(%wq, %wq, %w : tensor<16x8xf32>, tensor<16x8xf32>, tensor<6xf32>)
      outs(%o : tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32>
  return %0 : tensor<1x4x8x16xf32>
}

// -----

func.func @additive_attention_rank(%q: tensor<1x4x8x16xf32>,
                                   %wq: tensor<16x8xf32>, %w: tensor<8x1xf32>,
                                   %o: tensor<1x4x8x16xf32>)
    -> tensor<1x4x8x16xf32> {
  // expected-error @+1 {{expected score_proj to have rank 1 [A], got rank 2 ('tensor<8x1xf32>')}}
  %0 = attn.additive_attention
      ins(%q, %q, %q : tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>,
                       tensor<1x4x8x16xf32>)
      weights(%wq, %wq, %w : tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x1xf32>)
      outs(%o : tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32>
  return %0 : tensor<1x4x8x16xf32>
}

// -----

// Positions plus mask parameters stay within int64: at most 2^40.
func.func @window_too_wide(%q: tensor<1x4x8x16xf32>, %o: tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32> {
  %0 = attn.attention ins(%q, %q, %q : tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>)
      outs(%o : tensor<1x4x8x16xf32>)
      // expected-error @+1 {{sliding_window 'right' must be in [0, 2^40], got 9223372036854775807}}
      {structured_mask = #attn.sliding_window<left = 0, right = 9223372036854775807>} -> tensor<1x4x8x16xf32>
  return %0 : tensor<1x4x8x16xf32>
}

// -----

func.func @relpos_too_far(%q: tensor<1x4x8x16xf32>, %t: tensor<4x32xf32>, %o: tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32> {
  %0 = attn.attention ins(%q, %q, %q : tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>)
      rel_bias(%t : tensor<4x32xf32>)
      outs(%o : tensor<1x4x8x16xf32>)
      // expected-error @+1 {{relpos needs at most 2^16 buckets and a max_distance of at most 2^20, got 32 and 4611686018427387904}}
      {relpos = #attn.relpos<buckets = 32, max_distance = 4611686018427387904, bidirectional = true>} -> tensor<1x4x8x16xf32>
  return %0 : tensor<1x4x8x16xf32>
}

// -----

func.func @zero_head_dim(%q: tensor<1x4x8x0xf32>, %o: tensor<1x4x8x0xf32>) -> tensor<1x4x8x0xf32> {
  // expected-error @+1 {{head dim D must be > 0}}
  %0 = attn.attention ins(%q, %q, %q : tensor<1x4x8x0xf32>, tensor<1x4x8x0xf32>, tensor<1x4x8x0xf32>)
      outs(%o : tensor<1x4x8x0xf32>) -> tensor<1x4x8x0xf32>
  return %0 : tensor<1x4x8x0xf32>
}

// -----

func.func @zero_keys(%q: tensor<1x4x8x16xf32>, %k: tensor<1x4x0x16xf32>, %o: tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32> {
  // expected-error @+1 {{key sequence length Sk must be > 0}}
  %0 = attn.attention ins(%q, %k, %k : tensor<1x4x8x16xf32>, tensor<1x4x0x16xf32>, tensor<1x4x0x16xf32>)
      outs(%o : tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32>
  return %0 : tensor<1x4x8x16xf32>
}
