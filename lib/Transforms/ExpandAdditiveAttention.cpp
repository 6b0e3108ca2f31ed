//===- ExpandAdditiveAttention.cpp - projections + additive attention -----===//
//
// Part of the attn project: an MLIR compiler for attention.
//
//===----------------------------------------------------------------------===//
//
// Bahdanau's score w . tanh(q W_q + k W_k) projects each query and key once
// (O(S D A)); only the tanh of their sums is quadratic. The projections
// become linalg, the rest an attn.attention with the additive similarity,
// so the online softmax fuses it and masks skip its tiles.
//
//===----------------------------------------------------------------------===//

#include "attn/IR/AttnOps.h"
#include "attn/Transforms/Passes.h"
#include "attn/Transforms/Transforms.h"
#include "attn/Transforms/Utils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/TypeUtilities.h"

namespace mlir::attn {
#define GEN_PASS_DEF_EXPANDADDITIVEATTENTION
#include "attn/Transforms/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

/// The score weights [A] as the additive_weight table [Hq, A] (f32), one
/// row per query head of `query`.
static Value broadcastToHeads(OpBuilder &b, Location loc, Value weights,
                              Value query, Layout layout) {
  MLIRContext *ctx = b.getContext();
  SmallVector<OpFoldResult> sizes = {
      tensor::getMixedSize(b, loc, query, getHeadDimPos(layout)),
      tensor::getMixedSize(b, loc, weights, 0)};
  Value table = tensor::EmptyOp::create(b, loc, sizes, b.getF32Type());
  AffineExpr h, a;
  bindDims(ctx, h, a);
  return createGeneric(
      b, loc, weights, table,
      {AffineMap::get(2, 0, {a}, ctx), b.getMultiDimIdentityMap(2)},
      /*numReductions=*/0, [&](OpBuilder &nb, Location nl, ValueRange args) {
        linalg::YieldOp::create(nb, nl,
                                convertFloat(nb, nl, args[0], nb.getF32Type()));
      });
}

FailureOr<AttentionOp>
mlir::attn::expandAdditiveAttention(RewriterBase &rewriter,
                                    AdditiveAttentionOp op) {
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(op);
  Location loc = op.getLoc();
  Type elementType = getElementTypeOrSelf(op.getQuery().getType());
  Value q = createProjection(rewriter, loc, op.getQuery(), op.getQProj(),
                             /*bias=*/Value(), elementType);
  Value k = createProjection(rewriter, loc, op.getKey(), op.getKProj(),
                             /*bias=*/Value(), elementType);
  Value table = broadcastToHeads(rewriter, loc, op.getScoreProj(),
                                 op.getQuery(), op.getLayout());
  // Additive scores are no dot products: no 1/sqrt(A) by default.
  FloatAttr scale =
      op.getScaleAttr() ? op.getScaleAttr() : rewriter.getF32FloatAttr(1.0f);
  auto attention = rewriter.replaceOpWithNewOp<AttentionOp>(
      op, op.getInit().getType(), /*lse=*/Type(), q, k, op.getValue(),
      /*mask=*/Value(), /*bias=*/Value(), /*rel_bias=*/Value(), table,
      op.getKvLens(), /*spans=*/Value(), /*block_mask=*/Value(),
      /*offsets=*/ValueRange(), /*extents=*/ValueRange(), op.getInit(),
      /*lse_init=*/Value(), scale, op.getStructuredMaskAttr(),
      op.getLayoutAttr(),
      SimilarityAttr::get(rewriter.getContext(), Similarity::Additive),
      /*relpos=*/RelPosAttr(), /*block_sizes=*/DenseI64ArrayAttr());
  return attention;
}

namespace {
struct ExpandAdditiveAttentionPass
    : attn::impl::ExpandAdditiveAttentionBase<ExpandAdditiveAttentionPass> {
  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    SmallVector<AdditiveAttentionOp> ops;
    getOperation()->walk([&](AdditiveAttentionOp op) { ops.push_back(op); });
    for (AdditiveAttentionOp op : ops)
      if (failed(expandAdditiveAttention(rewriter, op)))
        return signalPassFailure();
  }
};
} // namespace
