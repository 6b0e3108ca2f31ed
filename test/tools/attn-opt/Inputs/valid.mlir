func.func @f(%q: tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32> {
  %0 = attn.attention ins(%q, %q, %q : tensor<1x4x8x16xf32>,
                          tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>)
      outs(%q : tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32>
  return %0 : tensor<1x4x8x16xf32>
}
