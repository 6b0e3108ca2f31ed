func.func @f(%q: tensor<1x4x8x16xf32>, %o: tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32> {
  %0 = attn.attention ins(%q, %q, %q : tensor<1x4x8x16xf32>,
                          tensor<1x4x8x
