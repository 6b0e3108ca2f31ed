//===- ExpandMultiHeadAttention.cpp - MHA -> projections + attention ------===//
//
// Part of the attn project: an MLIR compiler for attention.
//
//===----------------------------------------------------------------------===//

#include "attn/IR/AttnOps.h"
#include "attn/Transforms/Passes.h"
#include "attn/Transforms/Transforms.h"
#include "attn/Transforms/Utils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StructuredOpsUtils.h"
#include "mlir/IR/TypeUtilities.h"

namespace mlir::attn {
#define GEN_PASS_DEF_EXPANDMULTIHEADATTENTION
#include "attn/Transforms/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

/// Reshapes [B, S, H*F] into [B, S, H, F].
static Value splitHeads(OpBuilder &b, Location loc, Value x, int64_t heads) {
  auto type = cast<RankedTensorType>(x.getType());
  int64_t width = type.getDimSize(2);
  int64_t feature =
      ShapedType::isDynamic(width) ? ShapedType::kDynamic : width / heads;
  OpFoldResult featureSize;
  if (ShapedType::isDynamic(feature)) {
    Value w = tensor::DimOp::create(b, loc, x, 2);
    Value h = arith::ConstantIndexOp::create(b, loc, heads);
    featureSize = arith::DivUIOp::create(b, loc, w, h).getResult();
  } else {
    featureSize = b.getIndexAttr(feature);
  }
  SmallVector<OpFoldResult> outputShape = {tensor::getMixedSize(b, loc, x, 0),
                                           tensor::getMixedSize(b, loc, x, 1),
                                           b.getIndexAttr(heads), featureSize};
  auto resultType = RankedTensorType::get(
      {type.getDimSize(0), type.getDimSize(1), heads, feature},
      type.getElementType());
  SmallVector<ReassociationIndices> reassociation = {{0}, {1}, {2, 3}};
  return tensor::ExpandShapeOp::create(b, loc, resultType, x, reassociation,
                                       outputShape);
}

FailureOr<AttentionOp>
mlir::attn::expandMultiHeadAttention(RewriterBase &rewriter,
                                     MultiHeadAttentionOp op) {
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(op);
  Location loc = op.getLoc();
  Type elementType = getElementTypeOrSelf(op.getQuery().getType());
  ValueRange biases = op.getProjBiases();
  auto biasAt = [&](unsigned i) {
    return biases.empty() ? Value() : biases[i];
  };
  int64_t numHeads = op.getNumHeads();
  int64_t numKvHeads = op.getNumKvHeadsOrDefault();

  Value q = splitHeads(rewriter, loc,
                       createProjection(rewriter, loc, op.getQuery(),
                                        op.getQProj(), biasAt(0), elementType),
                       numHeads);
  Value k = splitHeads(rewriter, loc,
                       createProjection(rewriter, loc, op.getKey(),
                                        op.getKProj(), biasAt(1), elementType),
                       numKvHeads);
  Value v = splitHeads(rewriter, loc,
                       createProjection(rewriter, loc, op.getValue(),
                                        op.getVProj(), biasAt(2), elementType),
                       numKvHeads);

  // Attention output in BSHD: [B, Sq, Hq, Dv], so merging heads is a reshape.
  SmallVector<OpFoldResult> outSizes = {
      tensor::getMixedSize(rewriter, loc, q, 0),
      tensor::getMixedSize(rewriter, loc, q, 1),
      rewriter.getIndexAttr(numHeads),
      tensor::getMixedSize(rewriter, loc, v, 3)};
  Value attnInit =
      tensor::EmptyOp::create(rewriter, loc, outSizes, elementType);
  auto attention = AttentionOp::create(
      rewriter, loc, attnInit.getType(), /*lse=*/Type(), q, k, v, op.getMask(),
      op.getBias(), /*rel_bias=*/Value(),
      /*additive_weight=*/Value(), op.getKvLens(),
      /*spans=*/Value(), /*block_mask=*/Value(),
      /*offsets=*/ValueRange(),
      /*extents=*/ValueRange(), attnInit, /*lse_init=*/Value(),
      op.getScaleAttr(), op.getStructuredMaskAttr(),
      LayoutAttr::get(rewriter.getContext(), Layout::BSHD),
      SimilarityAttr::get(rewriter.getContext(), Similarity::Dot),
      /*relpos=*/RelPosAttr(), /*block_sizes=*/DenseI64ArrayAttr());
  rewriter.inlineRegionBefore(op.getScoreMod(), attention.getScoreMod(),
                              attention.getScoreMod().end());
  rewriter.inlineRegionBefore(op.getMaskMod(), attention.getMaskMod(),
                              attention.getMaskMod().end());

  SmallVector<ReassociationIndices> mergeHeads = {{0}, {1}, {2, 3}};
  Value merged = tensor::CollapseShapeOp::create(
      rewriter, loc, attention.getResult(), mergeHeads);
  Value out = createProjection(rewriter, loc, merged, op.getOutProj(),
                               biasAt(3), elementType, op.getInit());
  rewriter.replaceOp(op, out);
  return attention;
}

namespace {
struct ExpandMultiHeadAttentionPass
    : attn::impl::ExpandMultiHeadAttentionBase<ExpandMultiHeadAttentionPass> {
  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    WalkResult result =
        getOperation()->walk([&](MultiHeadAttentionOp op) -> WalkResult {
          if (failed(expandMultiHeadAttention(rewriter, op)))
            return WalkResult::interrupt();
          return WalkResult::advance();
        });
    if (result.wasInterrupted())
      signalPassFailure();
  }
};
} // namespace
