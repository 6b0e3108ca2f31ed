// Grouped-query self-attention block: 8 query heads share 2 key/value heads,
// head dim 64, causal mask, fp16 activations and weights, fp32 output.
func.func @gqa_causal_mha(%x: tensor<2x128x512xf16>,
                          %wq: tensor<512x512xf16>, %wk: tensor<512x128xf16>,
                          %wv: tensor<512x128xf16>, %wo: tensor<512x512xf16>)
    -> tensor<2x128x512xf32> {
  %init = tensor.empty() : tensor<2x128x512xf32>
  %out = attn.multi_head_attention
      ins(%x, %x, %x : tensor<2x128x512xf16>, tensor<2x128x512xf16>,
                       tensor<2x128x512xf16>)
      weights(%wq, %wk, %wv, %wo : tensor<512x512xf16>, tensor<512x128xf16>,
                                   tensor<512x128xf16>, tensor<512x512xf16>)
      outs(%init : tensor<2x128x512xf32>)
      {num_heads = 8 : i64, num_kv_heads = 2 : i64,
       structured_mask = #attn.causal<top_left>}
      -> tensor<2x128x512xf32>
  return %out : tensor<2x128x512xf32>
}
