// A decode kernel with key padding: kv_lens (random in [0, 1024]) leaves
// the later key ranges of the split entirely hidden.
func.func @decode(%q: tensor<1x2x1x16xf32>, %k: tensor<1x1x1024x16xf32>,
                  %v: tensor<1x1x1024x16xf32>, %lens: tensor<1xi32>,
                  %o: tensor<1x2x1x16xf32>) -> tensor<1x2x1x16xf32> {
  %0 = attn.attention ins(%q, %k, %v : tensor<1x2x1x16xf32>,
                          tensor<1x1x1024x16xf32>, tensor<1x1x1024x16xf32>)
      kv_lens(%lens : tensor<1xi32>) outs(%o : tensor<1x2x1x16xf32>)
      -> tensor<1x2x1x16xf32>
  return %0 : tensor<1x2x1x16xf32>
}
