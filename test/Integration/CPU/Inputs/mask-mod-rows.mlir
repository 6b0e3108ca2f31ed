// Only every fourth query sees keys (up to 40 past itself); the others see
// none and output 0. In the micro-kernel's blocks of 4 rows, a key chunk is
// then visible to the block's first row alone, which must not skip it.

func.func @mask_mod_rows(%q: tensor<2x4x128x16xf32>, %k: tensor<2x2x128x16xf32>,
    %v: tensor<2x2x128x16xf32>, %o: tensor<2x4x128x16xf32>)
    -> tensor<2x4x128x16xf32> {
  %0 = attn.attention ins(%q, %k, %v : tensor<2x4x128x16xf32>,
                          tensor<2x2x128x16xf32>, tensor<2x2x128x16xf32>)
      outs(%o : tensor<2x4x128x16xf32>)
      mask_mod {
      ^bb0(%b: index, %h: index, %i: index, %j: index):
        %c4 = arith.constant 4 : index
        %r = arith.remui %i, %c4 : index
        %c0 = arith.constant 0 : index
        %first = arith.cmpi eq, %r, %c0 : index
        %c40 = arith.constant 40 : index
        %reach = arith.addi %i, %c40 : index
        %near = arith.cmpi ule, %j, %reach : index
        %vis = arith.andi %first, %near : i1
        attn.yield %vis : i1
      } -> tensor<2x4x128x16xf32>
  return %0 : tensor<2x4x128x16xf32>
}
