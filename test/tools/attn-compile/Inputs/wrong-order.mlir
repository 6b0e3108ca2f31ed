func.func @k(%q: tensor<1x2x8x8xf32>, %o: tensor<1x2x8x8xf32>,
             %l: tensor<1xi32>) -> tensor<1x2x8x8xf32> {
  %0 = attn.attention ins(%q, %q, %q : tensor<1x2x8x8xf32>,
                          tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32>)
      kv_lens(%l : tensor<1xi32>) outs(%o : tensor<1x2x8x8xf32>)
      -> tensor<1x2x8x8xf32>
  return %0 : tensor<1x2x8x8xf32>
}
