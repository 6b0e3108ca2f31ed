// Per batch entry and head: batch 1 sees everything, batch 0 hides from head
// h the keys below h * 24 (a GQA group holds two heads, so tiles of heads
// 0-1 and 2-3 differ), and keys above 100 from earlier queries (a select
// on a condition that key tiles across 100 leave unknown).

func.func @mask_mod_heads(%q: tensor<2x4x128x16xf32>, %k: tensor<2x2x128x16xf32>,
    %v: tensor<2x2x128x16xf32>, %o: tensor<2x4x128x16xf32>)
    -> tensor<2x4x128x16xf32> {
  %0 = attn.attention ins(%q, %k, %v : tensor<2x4x128x16xf32>,
                          tensor<2x2x128x16xf32>, tensor<2x2x128x16xf32>)
      outs(%o : tensor<2x4x128x16xf32>)
      mask_mod {
      ^bb0(%b: index, %h: index, %i: index, %j: index):
        %c1 = arith.constant 1 : index
        %c24 = arith.constant 24 : index
        %c100 = arith.constant 100 : index
        %all = arith.cmpi eq, %b, %c1 : index
        %first = arith.muli %h, %c24 : index
        %from = arith.cmpi sge, %j, %first : index
        %far = arith.cmpi sgt, %j, %c100 : index
        %causal = arith.cmpi sle, %j, %i : index
        %true = arith.constant true
        %ok = arith.select %far, %causal, %true : i1
        %part = arith.andi %from, %ok : i1
        %vis = arith.ori %all, %part : i1
        attn.yield %vis : i1
      } -> tensor<2x4x128x16xf32>
  return %0 : tensor<2x4x128x16xf32>
}
