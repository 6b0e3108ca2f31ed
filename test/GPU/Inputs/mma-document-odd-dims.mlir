// Tensor-core kernel shapes off the fast path: D = 48 (three 16-wide steps:
// one x4 ldmatrix of K and one x2) and Dv = 40 (five 8-wide steps: two x4
// ldmatrix.trans of V and one x2), under a document mask_mod whose hidden
// key tiles are skipped (their K never fetched).

func.func @mma_document(%q: tensor<1x4x200x48xf16>, %k: tensor<1x2x200x48xf16>,
    %v: tensor<1x2x200x40xf16>, %o: tensor<1x4x200x40xf16>)
    -> tensor<1x4x200x40xf16> {
  %0 = attn.attention ins(%q, %k, %v : tensor<1x4x200x48xf16>,
                          tensor<1x2x200x48xf16>, tensor<1x2x200x40xf16>)
      outs(%o : tensor<1x4x200x40xf16>)
      mask_mod {
      ^bb0(%b: index, %h: index, %i: index, %j: index):
        %c64 = arith.constant 64 : index
        %di = arith.divui %i, %c64 : index
        %dj = arith.divui %j, %c64 : index
        %same = arith.cmpi eq, %di, %dj : index
        attn.yield %same : i1
      } -> tensor<1x4x200x40xf16>
  return %0 : tensor<1x4x200x40xf16>
}
