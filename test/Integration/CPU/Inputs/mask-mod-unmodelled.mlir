// Arithmetic in i32, whose wrap-around the bounds do not model: no tile is
// classified, every step applies the region.

func.func @mask_mod_unmodelled(%q: tensor<2x4x128x16xf32>, %k: tensor<2x2x128x16xf32>,
    %v: tensor<2x2x128x16xf32>, %o: tensor<2x4x128x16xf32>)
    -> tensor<2x4x128x16xf32> {
  %0 = attn.attention ins(%q, %k, %v : tensor<2x4x128x16xf32>,
                          tensor<2x2x128x16xf32>, tensor<2x2x128x16xf32>)
      outs(%o : tensor<2x4x128x16xf32>)
      mask_mod {
      ^bb0(%b: index, %h: index, %i: index, %j: index):
        %i32 = arith.index_cast %i : index to i32
        %j32 = arith.index_cast %j : index to i32
        %s = arith.addi %i32, %j32 : i32
        %c64 = arith.constant 64 : i32
        %vis = arith.cmpi slt, %s, %c64 : i32
        attn.yield %vis : i1
      } -> tensor<2x4x128x16xf32>
  return %0 : tensor<2x4x128x16xf32>
}
