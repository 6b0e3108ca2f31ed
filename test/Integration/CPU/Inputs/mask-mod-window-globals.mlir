// A window of 40 keys to the left, computed in i64 on signed differences,
// plus 8 global keys every query sees (ori, select, ult).

func.func @mask_mod_window_globals(%q: tensor<2x4x128x16xf32>, %k: tensor<2x2x128x16xf32>,
    %v: tensor<2x2x128x16xf32>, %o: tensor<2x4x128x16xf32>)
    -> tensor<2x4x128x16xf32> {
  %0 = attn.attention ins(%q, %k, %v : tensor<2x4x128x16xf32>,
                          tensor<2x2x128x16xf32>, tensor<2x2x128x16xf32>)
      outs(%o : tensor<2x4x128x16xf32>)
      mask_mod {
      ^bb0(%b: index, %h: index, %i: index, %j: index):
        %i64 = arith.index_cast %i : index to i64
        %j64 = arith.index_castui %j : index to i64
        %d = arith.subi %i64, %j64 : i64
        %c0 = arith.constant 0 : i64
        %c40 = arith.constant 40 : i64
        %ge = arith.cmpi sge, %d, %c0 : i64
        %lt = arith.cmpi slt, %d, %c40 : i64
        %win = arith.select %ge, %lt, %ge : i1
        %c8 = arith.constant 8 : index
        %global = arith.cmpi ult, %j, %c8 : index
        %vis = arith.ori %win, %global : i1
        attn.yield %vis : i1
      } -> tensor<2x4x128x16xf32>
  return %0 : tensor<2x4x128x16xf32>
}
