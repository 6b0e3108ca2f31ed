// Stripes of 32 keys out of every 64 (remui), not the keys more than twice
// past the query (muli, ceildivsi, floordivsi, min/max), xori as a
// negation.

func.func @mask_mod_strided(%q: tensor<2x4x128x16xf32>, %k: tensor<2x2x128x16xf32>,
    %v: tensor<2x2x128x16xf32>, %o: tensor<2x4x128x16xf32>)
    -> tensor<2x4x128x16xf32> {
  %0 = attn.attention ins(%q, %k, %v : tensor<2x4x128x16xf32>,
                          tensor<2x2x128x16xf32>, tensor<2x2x128x16xf32>)
      outs(%o : tensor<2x4x128x16xf32>)
      mask_mod {
      ^bb0(%b: index, %h: index, %i: index, %j: index):
        %c64 = arith.constant 64 : index
        %c32 = arith.constant 32 : index
        %r = arith.remui %j, %c64 : index
        %stripe = arith.cmpi uge, %r, %c32 : index
        %true = arith.constant true
        %left = arith.xori %stripe, %true : i1
        %c2 = arith.constant 2 : index
        %j2 = arith.muli %j, %c2 : index
        %c3 = arith.constant 3 : index
        %up = arith.ceildivsi %i, %c3 : index
        %down = arith.floordivsi %i, %c3 : index
        %lo = arith.minsi %up, %down : index
        %hi = arith.maxui %up, %down : index
        %sum = arith.addi %lo, %hi : index
        %bound = arith.addi %sum, %i : index
        %near = arith.cmpi sle, %j2, %bound : index
        %vis = arith.andi %left, %near : i1
        attn.yield %vis : i1
      } -> tensor<2x4x128x16xf32>
  return %0 : tensor<2x4x128x16xf32>
}
