func.func @f(%q: tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32> {
  %0 = attn.flash_attention %q : tensor<1x4x8x16xf32>
  return %0 : tensor<1x4x8x16xf32>
}
