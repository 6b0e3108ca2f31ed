//===- Transforms.h - attn rewrites as library functions --------*- C++ -*-===//
//
// Part of the attn project: an MLIR compiler for attention.
//
// The passes are thin drivers over these functions, which tools and tests can
// call directly.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_TRANSFORMS_TRANSFORMS_H
#define ATTN_TRANSFORMS_TRANSFORMS_H

#include "attn/IR/AttnOps.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::attn {

/// Replaces `op` with its input projections, an `attn.attention` in the BSHD
/// layout and the output projection. Returns the new attention op.
FailureOr<AttentionOp> expandMultiHeadAttention(RewriterBase &rewriter,
                                                MultiHeadAttentionOp op);

} // namespace mlir::attn

#endif // ATTN_TRANSFORMS_TRANSFORMS_H
