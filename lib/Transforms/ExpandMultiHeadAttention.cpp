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

/// Computes `x @ w + bias` for x [B, S, K], w [K, N], bias [N] (optional),
/// accumulating in f32, into `dest` [B, S, N] (a new tensor of `elementType`
/// when `dest` is null).
static Value project(OpBuilder &b, Location loc, Value x, Value w, Value bias,
                     Type elementType, Value dest = {}) {
  MLIRContext *ctx = b.getContext();
  Type f32 = b.getF32Type();
  SmallVector<OpFoldResult> sizes = {tensor::getMixedSize(b, loc, x, 0),
                                     tensor::getMixedSize(b, loc, x, 1),
                                     tensor::getMixedSize(b, loc, w, 1)};
  if (!dest)
    dest = tensor::EmptyOp::create(b, loc, sizes, elementType);
  // An f32 destination accumulates in place; others get an f32 temporary.
  bool accumulateInDest = getElementTypeOrSelf(dest) == f32;
  Value zero = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0.0));
  Value accInit =
      linalg::FillOp::create(
          b, loc, zero,
          accumulateInDest ? dest : tensor::EmptyOp::create(b, loc, sizes, f32))
          .getResult(0);

  AffineExpr d0, d1, d2, d3;
  bindDims(ctx, d0, d1, d2, d3);
  SmallVector<AffineMap> contractMaps = {
      AffineMap::get(4, 0, {d0, d1, d3}, ctx),
      AffineMap::get(4, 0, {d3, d2}, ctx),
      AffineMap::get(4, 0, {d0, d1, d2}, ctx)};
  SmallVector<utils::IteratorType> contractIters(3,
                                                 utils::IteratorType::parallel);
  contractIters.push_back(utils::IteratorType::reduction);
  Value acc = linalg::GenericOp::create(
                  b, loc, accInit.getType(), ValueRange{x, w}, accInit,
                  contractMaps, contractIters,
                  [&](OpBuilder &nb, Location nl, ValueRange args) {
                    Value lhs = convertFloat(nb, nl, args[0], f32);
                    Value rhs = convertFloat(nb, nl, args[1], f32);
                    Value prod = arith::MulFOp::create(nb, nl, lhs, rhs);
                    Value sum = arith::AddFOp::create(nb, nl, prod, args[2]);
                    linalg::YieldOp::create(nb, nl, sum);
                  })
                  .getResult(0);

  if (!bias && accumulateInDest)
    return acc;

  // Epilogue: add the bias and convert to the destination element type.
  SmallVector<Value> inputs = {acc};
  SmallVector<AffineMap> maps = {b.getMultiDimIdentityMap(3)};
  if (bias) {
    inputs.push_back(bias);
    maps.push_back(AffineMap::get(3, 0, {d2}, ctx));
  }
  maps.push_back(b.getMultiDimIdentityMap(3));
  SmallVector<utils::IteratorType> iters(3, utils::IteratorType::parallel);
  return linalg::GenericOp::create(
             b, loc, dest.getType(), inputs, dest, maps, iters,
             [&](OpBuilder &nb, Location nl, ValueRange args) {
               Value v = args[0];
               if (bias)
                 v = arith::AddFOp::create(nb, nl, v,
                                           convertFloat(nb, nl, args[1], f32));
               linalg::YieldOp::create(
                   nb, nl, convertFloat(nb, nl, v, getElementTypeOrSelf(dest)));
             })
      .getResult(0);
}

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
                       project(rewriter, loc, op.getQuery(), op.getQProj(),
                               biasAt(0), elementType),
                       numHeads);
  Value k = splitHeads(rewriter, loc,
                       project(rewriter, loc, op.getKey(), op.getKProj(),
                               biasAt(1), elementType),
                       numKvHeads);
  Value v = splitHeads(rewriter, loc,
                       project(rewriter, loc, op.getValue(), op.getVProj(),
                               biasAt(2), elementType),
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
  Value out = project(rewriter, loc, merged, op.getOutProj(), biasAt(3),
                      elementType, op.getInit());
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
