// mask-tensor.mlir in bf16, for hostile-numerics.c: an i1 mask tensor
// [B, Hq, Sq, Sk], GQA 2:1.

func.func @mask_tensor_bf16(%q: tensor<2x4x16x16xbf16>,
                            %k: tensor<2x2x24x16xbf16>,
                            %v: tensor<2x2x24x16xbf16>,
                            %m: tensor<2x4x16x24xi1>,
                            %o: tensor<2x4x16x16xbf16>)
    -> tensor<2x4x16x16xbf16> {
  %0 = attn.attention ins(%q, %k, %v : tensor<2x4x16x16xbf16>,
                          tensor<2x2x24x16xbf16>, tensor<2x2x24x16xbf16>)
      mask(%m : tensor<2x4x16x24xi1>)
      outs(%o : tensor<2x4x16x16xbf16>) -> tensor<2x4x16x16xbf16>
  return %0 : tensor<2x4x16x16xbf16>
}
