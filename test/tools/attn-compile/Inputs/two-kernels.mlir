func.func @first(%q: tensor<1x2x8x8xf32>, %k: tensor<1x2x8x8xf32>,
                 %v: tensor<1x2x8x8xf32>, %o: tensor<1x2x8x8xf32>)
    -> tensor<1x2x8x8xf32> {
  %0 = attn.attention ins(%q, %k, %v : tensor<1x2x8x8xf32>,
                          tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32>)
      outs(%o : tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  return %0 : tensor<1x2x8x8xf32>
}
func.func @second(%q: tensor<1x2x8x8xf32>, %k: tensor<1x2x8x8xf32>,
                  %v: tensor<1x2x8x8xf32>, %o: tensor<1x2x8x8xf32>)
    -> tensor<1x2x8x8xf32> {
  %0 = attn.attention ins(%q, %k, %v : tensor<1x2x8x8xf32>,
                          tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32>)
      outs(%o : tensor<1x2x8x8xf32>) {structured_mask = #attn.causal<top_left>}
      -> tensor<1x2x8x8xf32>
  return %0 : tensor<1x2x8x8xf32>
}
