//===- Passes.td - attn transformation passes --------------*- tablegen -*-===//

#ifndef ATTN_PASSES_TD
#define ATTN_PASSES_TD

include "mlir/Pass/PassBase.td"

def ExpandMultiHeadAttention : Pass<"attn-expand-mha"> {
  let summary = "Expand attn.multi_head_attention into projections and "
                "attn.attention";
  let description = [{
    Rewrites every `attn.multi_head_attention` into `linalg` projections
    (`x @ W + b`, accumulated in f32 and converted back to the activation
    type), a reshape of the projected activations into heads, one
    `attn.attention` in the BSHD layout (so no transpose is needed), and the
    output projection. Masks, scale and regions carry over unchanged.

    Example:

    ```mlir
    %o = attn.multi_head_attention ins(%x, %x, %x : ...) weights(...)
        outs(%init : tensor<2x128x512xf32>) {num_heads = 8 : i64} -> ...
    ```

    becomes three `linalg.generic` projections, `tensor.expand_shape` to
    [2, 128, 8, 64], an `attn.attention` with `layout = #attn.layout<bshd>`,
    a `tensor.collapse_shape` back to [2, 128, 512] and the output projection.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::tensor::TensorDialect",
  ];
}

#endif // ATTN_PASSES_TD
