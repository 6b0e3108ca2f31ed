//===- FuseOnlineSoftmax.cpp - attention -> loop of online_attention ------===//
//
// Part of the attn project: an MLIR compiler for attention.
//
//===----------------------------------------------------------------------===//

#include "attn/IR/AttnOps.h"
#include "attn/Transforms/Passes.h"
#include "attn/Transforms/Transforms.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <limits>

namespace mlir::attn {
#define GEN_PASS_DEF_FUSEONLINESOFTMAX
#include "attn/Transforms/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

/// A tensor of `sizes` f32 elements, all `value`.
static Value filledF32(OpBuilder &b, Location loc, ArrayRef<OpFoldResult> sizes,
                       float value) {
  Value empty = tensor::EmptyOp::create(b, loc, sizes, b.getF32Type());
  Value cst = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(value));
  return linalg::FillOp::create(b, loc, cst, empty).getResult(0);
}

/// Slices `size` positions from `offset` out of dimension `dim` of `value`.
static Value sliceDim(OpBuilder &b, Location loc, Value value, int64_t dim,
                      Value offset, Value size) {
  auto type = cast<RankedTensorType>(value.getType());
  SmallVector<OpFoldResult> offsets(type.getRank(), b.getIndexAttr(0));
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, value);
  SmallVector<OpFoldResult> strides(type.getRank(), b.getIndexAttr(1));
  offsets[dim] = offset;
  sizes[dim] = size;
  return tensor::ExtractSliceOp::create(b, loc, value, offsets, sizes, strides);
}

/// Slices the key dimension of a mask or bias tensor, unless it is broadcast.
static Value sliceKeys(OpBuilder &b, Location loc, Value value, Value offset,
                       Value size) {
  if (!value)
    return value;
  auto type = cast<RankedTensorType>(value.getType());
  int64_t keyDim = type.getRank() - 1;
  if (type.getDimSize(keyDim) == 1)
    return value;
  return sliceDim(b, loc, value, keyDim, offset, size);
}

/// The keys [begin, end) of this attention (its own key indices) that its
/// structured mask can show to any of its queries: queries
/// [qOffset, qOffset + qLen) of the whole problem against keys
/// [kvOffset, kvOffset + kvLen). Band masks (causal, sliding window) bound
/// them; otherwise all keys.
static std::pair<Value, Value> visibleKeyRange(OpBuilder &b, Location loc,
                                               StructuredMaskAttrInterface mask,
                                               ArrayRef<Value> offsets,
                                               ArrayRef<Value> extents,
                                               Value qLen, Value kvLen) {
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  if (!mask)
    return {zero, kvLen};
  auto index = [&](int64_t v) {
    return arith::ConstantIndexOp::create(b, loc, v).getResult();
  };
  auto add = [&](Value x, Value y) {
    return arith::AddIOp::create(b, loc, x, y).getResult();
  };
  auto sub = [&](Value x, Value y) {
    return arith::SubIOp::create(b, loc, x, y).getResult();
  };
  // A query at whole-problem position i is aligned with key i + shift.
  auto shiftOf = [&](Alignment alignment) {
    return alignment == Alignment::BottomRight ? sub(extents[1], extents[0])
                                               : zero;
  };
  Value qFirst = offsets[2], kvFirst = offsets[3];
  Value qEnd = add(qFirst, qLen); // one past the last query
  Value begin = zero, end;
  if (auto causal = dyn_cast<CausalMaskAttr>(mask)) {
    // Keys up to (last query) + shift.
    end = sub(add(qEnd, shiftOf(causal.getAlignment())), kvFirst);
  } else if (auto window = dyn_cast<SlidingWindowMaskAttr>(mask)) {
    Value shift = shiftOf(window.getAlignment());
    begin = sub(sub(add(qFirst, shift), index(window.getLeft())), kvFirst);
    end = sub(add(add(qEnd, shift), index(window.getRight())), kvFirst);
    begin = arith::MaxSIOp::create(b, loc, begin, zero);
  } else {
    return {zero, kvLen};
  }
  end = arith::MinSIOp::create(b, loc, end, kvLen);
  return {begin, end};
}

FailureOr<FinalizeOnlineAttentionOp>
mlir::attn::fuseOnlineSoftmax(RewriterBase &rewriter, AttentionOp op,
                              int64_t kvTileSize) {
  if (kvTileSize <= 0)
    return rewriter.notifyMatchFailure(op, "kv-tile-size must be positive");
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(op);
  Location loc = op.getLoc();
  int64_t headPos = getHeadDimPos(op.getLayout());
  int64_t seqPos = getSeqDimPos(op.getLayout());
  Value q = op.getQuery(), k = op.getKey(), v = op.getValue();

  // Running statistics: acc in the output's shape, max and sum [B, Hq, Sq].
  SmallVector<OpFoldResult> accSizes =
      tensor::getMixedSizes(rewriter, loc, op.getInit());
  SmallVector<OpFoldResult> rowSizes = {
      tensor::getMixedSize(rewriter, loc, q, 0),
      tensor::getMixedSize(rewriter, loc, q, headPos),
      tensor::getMixedSize(rewriter, loc, q, seqPos)};
  Value acc0 = filledF32(rewriter, loc, accSizes, 0.0f);
  Value max0 = filledF32(rewriter, loc, rowSizes,
                         -std::numeric_limits<float>::infinity());
  Value sum0 = filledF32(rewriter, loc, rowSizes, 0.0f);

  Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
  Value tile = arith::ConstantIndexOp::create(rewriter, loc, kvTileSize);
  Value qLen = getValueOrCreateConstantIndexOp(rewriter, loc, rowSizes[2]);
  Value kvLen = getValueOrCreateConstantIndexOp(
      rewriter, loc, tensor::getMixedSize(rewriter, loc, k, seqPos));
  // An attention that is itself a tile keeps its place in the whole problem.
  SmallVector<Value> offsets(op.getOffsets());
  if (offsets.empty())
    offsets.assign(4, zero);
  SmallVector<Value> extents(op.getExtents());
  if (extents.empty())
    extents = {qLen, kvLen};

  // Tiles of keys that the structured mask hides from every query of this
  // attention are never visited.
  auto [kvBegin, kvEnd] = visibleKeyRange(
      rewriter, loc, op.getStructuredMaskAttr(), offsets, extents, qLen, kvLen);

  auto loop = scf::ForOp::create(
      rewriter, loc, kvBegin, kvEnd, tile, ValueRange{acc0, max0, sum0},
      [&](OpBuilder &b, Location nl, Value kv, ValueRange carried) {
        // The last tile may be shorter.
        Value rest = arith::SubIOp::create(b, nl, kvEnd, kv);
        Value size = arith::MinSIOp::create(b, nl, tile, rest);
        auto online = OnlineAttentionOp::create(
            b, nl, TypeRange(carried), q, sliceDim(b, nl, k, seqPos, kv, size),
            sliceDim(b, nl, v, seqPos, kv, size),
            sliceKeys(b, nl, op.getMask(), kv, size),
            sliceKeys(b, nl, op.getBias(), kv, size), op.getKvLens(),
            ValueRange{offsets[0], offsets[1], offsets[2],
                       arith::AddIOp::create(b, nl, offsets[3], kv)},
            extents, carried[0], carried[1], carried[2], op.getScaleAttr(),
            op.getStructuredMaskAttr(), op.getLayoutAttr());
        for (auto [from, to] :
             llvm::zip(op->getRegions(), online->getRegions()))
          if (!from.empty())
            rewriter.cloneRegionBefore(from, to, to.end());
        scf::YieldOp::create(b, nl, online.getResults());
      });

  auto finalize = FinalizeOnlineAttentionOp::create(
      rewriter, loc, op.getInit().getType(), loop.getResult(0),
      loop.getResult(2), op.getInit(), op.getLayoutAttr());
  rewriter.replaceOp(op, finalize.getResult());
  return finalize;
}

namespace {
struct FuseOnlineSoftmaxPass
    : attn::impl::FuseOnlineSoftmaxBase<FuseOnlineSoftmaxPass> {
  using Base::Base;

  void runOnOperation() override {
    int64_t tileSize = kvTileSize;
    if (tileSize <= 0) {
      getOperation()->emitError()
          << "attn-fuse-online-softmax: kv-tile-size must be positive, got "
          << tileSize;
      return signalPassFailure();
    }
    IRRewriter rewriter(&getContext());
    WalkResult result = getOperation()->walk([&](AttentionOp op) -> WalkResult {
      if (failed(fuseOnlineSoftmax(rewriter, op, tileSize)))
        return WalkResult::interrupt();
      return WalkResult::advance();
    });
    if (result.wasInterrupted())
      signalPassFailure();
  }
};
} // namespace
