// A multi-head attention whose embedding and weight sizes are dynamic: the
// kernel ABI needs them fixed (errors.test).
func.func @k(%x: tensor<1x8x?xf32>, %xk: tensor<1x8x?xf32>, %xv: tensor<1x8x?xf32>, %wq: tensor<?x16xf32>, %wk: tensor<?x16xf32>, %wv: tensor<?x16xf32>, %wo: tensor<16x16xf32>, %o: tensor<1x8x16xf32>) -> tensor<1x8x16xf32> {
  %0 = attn.multi_head_attention ins(%x, %xk, %xv : tensor<1x8x?xf32>, tensor<1x8x?xf32>, tensor<1x8x?xf32>)
      weights(%wq, %wk, %wv, %wo : tensor<?x16xf32>, tensor<?x16xf32>, tensor<?x16xf32>, tensor<16x16xf32>)
      outs(%o : tensor<1x8x16xf32>) {num_heads = 2 : i64} -> tensor<1x8x16xf32>
  return %0 : tensor<1x8x16xf32>
}
