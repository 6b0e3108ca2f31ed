func.func @k(%q: tensor<1x2x?x8xf32>, %k: tensor<1x2x?x8xf32>,
             %v: tensor<1x2x?x8xf32>, %o: tensor<1x2x?x8xf32>)
    -> tensor<1x2x?x8xf32> {
  %0 = attn.attention ins(%q, %k, %v : tensor<1x2x?x8xf32>,
                          tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>)
      outs(%o : tensor<1x2x?x8xf32>) {structured_mask = #attn.causal<bottom_right>}
      -> tensor<1x2x?x8xf32>
  return %0 : tensor<1x2x?x8xf32>
}
