// Causal attention within documents of 48 tokens: tiles across a document
// boundary above the diagonal are hidden, tiles inside one document below
// it are fully shown.

func.func @mask_mod_document(%q: tensor<2x4x128x16xf32>, %k: tensor<2x2x128x16xf32>,
    %v: tensor<2x2x128x16xf32>, %o: tensor<2x4x128x16xf32>)
    -> tensor<2x4x128x16xf32> {
  %0 = attn.attention ins(%q, %k, %v : tensor<2x4x128x16xf32>,
                          tensor<2x2x128x16xf32>, tensor<2x2x128x16xf32>)
      outs(%o : tensor<2x4x128x16xf32>)
      mask_mod {
      ^bb0(%b: index, %h: index, %i: index, %j: index):
        %c48 = arith.constant 48 : index
        %di = arith.divui %i, %c48 : index
        %dj = arith.divui %j, %c48 : index
        %same = arith.cmpi eq, %di, %dj : index
        %causal = arith.cmpi ule, %j, %i : index
        %vis = arith.andi %same, %causal : i1
        attn.yield %vis : i1
      } -> tensor<2x4x128x16xf32>
  return %0 : tensor<2x4x128x16xf32>
}
