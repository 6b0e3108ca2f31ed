//===- TilingInterfaceImpl.cpp - tiling attn.online_attention -------------===//
//
// Part of the attn project: an MLIR compiler for attention.
//
//===----------------------------------------------------------------------===//

#include "attn/IR/AttnOps.h"
#include "attn/Transforms/Transforms.h"
#include "attn/Transforms/Utils.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Interfaces/TilingInterface.h"

#include <limits>

using namespace mlir;
using namespace mlir::attn;

/// The loops of an online_attention step: (b, h, i, j) over batch, query
/// heads, queries and keys. Keys are the reduction: a tile of keys folds into
/// the same (acc, max, sum), so tiling j with the outs as loop-carried
/// values is exactly the online-softmax loop.
enum Loop { kB = 0, kH = 1, kI = 2, kJ = 3 };

/// Where the tile (offsets, sizes) of the loops writes result `resultNumber`.
static void getResultTile(OpBuilder &b, OnlineAttentionOp online,
                          unsigned resultNumber, ArrayRef<OpFoldResult> offsets,
                          ArrayRef<OpFoldResult> sizes,
                          SmallVector<OpFoldResult> &resultOffsets,
                          SmallVector<OpFoldResult> &resultSizes) {
  // max and sum are [B, Hq, Sq] in every layout; acc is [B, H, S, Dv] in
  // the layout, with Dv whole. Keys (the reduction) do not index them.
  resultOffsets.assign(offsets.begin(), offsets.begin() + 3);
  resultSizes.assign(sizes.begin(), sizes.begin() + 3);
  if (resultNumber != 0)
    return;
  if (online.getLayout() == Layout::BSHD) {
    std::swap(resultOffsets[1], resultOffsets[2]);
    std::swap(resultSizes[1], resultSizes[2]);
  }
  resultOffsets.push_back(b.getIndexAttr(0));
  // Dv from the value: while tiling a partial reduction, the op's outs may
  // be the partial tensors.
  resultSizes.push_back(
      tensor::getMixedSize(b, online.getLoc(), online.getValue(), 3));
}

/// The step on the tile (offsets, sizes) of the (b, h, i, j) loops. Its
/// destinations are the tile of the op's own (acc, max, sum), or with
/// `partials`, the tile of partial statistics `split` (the leading
/// dimension of each partial).
static FailureOr<TilingResult>
tileOnlineAttention(OpBuilder &b, OnlineAttentionOp online,
                    ArrayRef<OpFoldResult> offsets,
                    ArrayRef<OpFoldResult> sizes, ValueRange partials = {},
                    OpFoldResult split = OpFoldResult()) {
  Operation *op = online;
  Location loc = op->getLoc();
  Layout layout = online.getLayout();
  int64_t headPos = getHeadDimPos(layout), seqPos = getSeqDimPos(layout);
  TilingResult result;

  // Query head h reads key/value head h / G: a tile of query heads maps to
  // a tile of key/value heads only in whole groups.
  auto qType = cast<RankedTensorType>(online.getQuery().getType());
  auto kType = cast<RankedTensorType>(online.getKey().getType());
  int64_t hq = qType.getDimSize(headPos), hkv = kType.getDimSize(headPos);
  OpFoldResult kvHeadOffset = offsets[kH], kvHeadSize = sizes[kH];
  if (hq != hkv) {
    std::optional<int64_t> size = getConstantIntValue(sizes[kH]);
    bool known =
        !ShapedType::isDynamic(hq) && !ShapedType::isDynamic(hkv) && hkv > 0;
    if (!known || !size || *size % (hq / hkv) != 0)
      return op->emitOpError("can only tile query heads in whole groups of ")
             << (known ? std::to_string(hq / hkv)
                       : std::string("Hq / Hkv (not static here)"))
             << " (GQA)";
    int64_t group = hq / hkv;
    AffineExpr d0 = b.getAffineDimExpr(0);
    kvHeadOffset = affine::makeComposedFoldedAffineApply(
        b, loc, d0.floorDiv(group), {offsets[kH]});
    kvHeadSize = b.getIndexAttr(*size / group);
  }

  auto slice = [&](Value value, ArrayRef<OpFoldResult> tileOffsets,
                   ArrayRef<OpFoldResult> tileSizes) -> Value {
    auto type = cast<RankedTensorType>(value.getType());
    SmallVector<OpFoldResult> strides(type.getRank(), b.getIndexAttr(1));
    auto sliceOp = tensor::ExtractSliceOp::create(b, loc, value, tileOffsets,
                                                  tileSizes, strides);
    result.generatedSlices.push_back(sliceOp);
    return sliceOp.getResult();
  };
  // A [B, H, S, F] operand in the layout, with feature dim F whole.
  auto sliceHeads = [&](Value value, OpFoldResult headOffset,
                        OpFoldResult headSize, OpFoldResult seqOffset,
                        OpFoldResult seqSize) {
    SmallVector<OpFoldResult> o(4), s(4);
    o[0] = offsets[kB];
    s[0] = sizes[kB];
    o[headPos] = headOffset;
    s[headPos] = headSize;
    o[seqPos] = seqOffset;
    s[seqPos] = seqSize;
    o[3] = b.getIndexAttr(0);
    s[3] = tensor::getMixedSize(b, loc, value, 3);
    return slice(value, o, s);
  };
  // Mask and bias broadcast to [B, Hq, Sq, Sk] from the right; a dim of
  // static size 1 is broadcast and stays whole.
  auto sliceBroadcast = [&](Value value) -> Value {
    if (!value)
      return value;
    auto type = cast<RankedTensorType>(value.getType());
    int64_t lead = 4 - type.getRank();
    SmallVector<OpFoldResult> o, s;
    for (int64_t d = 0; d < type.getRank(); ++d) {
      bool broadcast = type.getDimSize(d) == 1;
      o.push_back(broadcast ? b.getIndexAttr(0) : offsets[d + lead]);
      s.push_back(broadcast ? b.getIndexAttr(1) : sizes[d + lead]);
    }
    return slice(value, o, s);
  };

  Value q = sliceHeads(online.getQuery(), offsets[kH], sizes[kH], offsets[kI],
                       sizes[kI]);
  Value k = sliceHeads(online.getKey(), kvHeadOffset, kvHeadSize, offsets[kJ],
                       sizes[kJ]);
  Value v = sliceHeads(online.getValue(), kvHeadOffset, kvHeadSize, offsets[kJ],
                       sizes[kJ]);
  Value mask = sliceBroadcast(online.getMask());
  Value bias = sliceBroadcast(online.getBias());
  Value kvLens = online.getKvLens()
                     ? slice(online.getKvLens(), {offsets[kB]}, {sizes[kB]})
                     : Value();
  SmallVector<Value> outs;
  for (unsigned r = 0; r < 3; ++r) {
    SmallVector<OpFoldResult> o, s;
    getResultTile(b, online, r, offsets, sizes, o, s);
    if (partials.empty()) {
      outs.push_back(slice(online.getDpsInits()[r], o, s));
      continue;
    }
    // Partial `split`, without its unit leading dimension.
    auto type = cast<RankedTensorType>(online.getDpsInits()[r].getType());
    SmallVector<int64_t> shape;
    for (OpFoldResult size : s)
      shape.push_back(getConstantIntValue(size).value_or(ShapedType::kDynamic));
    o.insert(o.begin(), split);
    s.insert(s.begin(), b.getIndexAttr(1));
    SmallVector<OpFoldResult> strides(s.size(), b.getIndexAttr(1));
    auto sliceOp = tensor::ExtractSliceOp::create(
        b, loc, RankedTensorType::get(shape, type.getElementType()),
        partials[r], o, s, strides);
    result.generatedSlices.push_back(sliceOp);
    outs.push_back(sliceOp);
  }

  // The tile's place in the whole problem, for masks and regions.
  SmallVector<Value> position, extents;
  for (unsigned l = 0; l < 4; ++l) {
    Value base = online.getOffsets().empty()
                     ? arith::ConstantIndexOp::create(b, loc, 0).getResult()
                     : online.getOffsets()[l];
    position.push_back(arith::AddIOp::create(
        b, loc, base, getValueOrCreateConstantIndexOp(b, loc, offsets[l])));
  }
  if (!online.getExtents().empty())
    extents.assign(online.getExtents().begin(), online.getExtents().end());
  else
    for (Value operand : {online.getQuery(), online.getKey()})
      extents.push_back(getValueOrCreateConstantIndexOp(
          b, loc, tensor::getMixedSize(b, loc, operand, seqPos)));

  auto tiled = OnlineAttentionOp::create(
      b, loc, ValueRange(outs).getTypes(), q, k, v, mask, bias,
      online.getRelBias(), online.getAdditiveWeight(), kvLens,
      online.getSpans(), online.getBlockMask(), position, extents, outs[0],
      outs[1], outs[2], online.getScaleAttr(), online.getStructuredMaskAttr(),
      online.getLayoutAttr(), online.getSimilarityAttr(),
      online.getRelposAttr(), online.getBlockSizesAttr());
  for (auto [from, to] : llvm::zip(op->getRegions(), tiled->getRegions()))
    if (!from.empty())
      b.cloneRegionBefore(from, to, to.end());
  result.tiledOps.push_back(tiled);
  llvm::append_range(result.tiledValues, tiled->getResults());
  return result;
}

namespace {

struct OnlineAttentionTilingInterface
    : public TilingInterface::ExternalModel<OnlineAttentionTilingInterface,
                                            OnlineAttentionOp> {
  SmallVector<utils::IteratorType> getLoopIteratorTypes(Operation *) const {
    return {utils::IteratorType::parallel, utils::IteratorType::parallel,
            utils::IteratorType::parallel, utils::IteratorType::reduction};
  }

  SmallVector<Range> getIterationDomain(Operation *op, OpBuilder &b) const {
    auto online = cast<OnlineAttentionOp>(op);
    Location loc = op->getLoc();
    Layout layout = online.getLayout();
    OpFoldResult zero = b.getIndexAttr(0), one = b.getIndexAttr(1);
    auto dim = [&](Value v, int64_t d) {
      return tensor::getMixedSize(b, loc, v, d);
    };
    Value q = online.getQuery();
    return {Range{zero, dim(q, 0), one},
            Range{zero, dim(q, getHeadDimPos(layout)), one},
            Range{zero, dim(q, getSeqDimPos(layout)), one},
            Range{zero, dim(online.getKey(), getSeqDimPos(layout)), one}};
  }

  FailureOr<TilingResult>
  getTiledImplementation(Operation *op, OpBuilder &b,
                         ArrayRef<OpFoldResult> offsets,
                         ArrayRef<OpFoldResult> sizes) const {
    return tileOnlineAttention(b, cast<OnlineAttentionOp>(op), offsets, sizes);
  }

  LogicalResult
  getResultTilePosition(Operation *op, OpBuilder &b, unsigned resultNumber,
                        ArrayRef<OpFoldResult> offsets,
                        ArrayRef<OpFoldResult> sizes,
                        SmallVector<OpFoldResult> &resultOffsets,
                        SmallVector<OpFoldResult> &resultSizes) const {
    getResultTile(b, cast<OnlineAttentionOp>(op), resultNumber, offsets, sizes,
                  resultOffsets, resultSizes);
    return success();
  }
};

/// Split-K: the keys split into parallel ranges (the outer-parallel strategy
/// of tile_reduction_using_forall), each folded from a fresh state into its
/// own partial (acc, max, sum), merged exactly into the op's running state
/// afterwards (see mergePartialStatistics). Partials carry the range index
/// as a leading dimension.
struct OnlineAttentionPartialReduction
    : public PartialReductionOpInterface::ExternalModel<
          OnlineAttentionPartialReduction, OnlineAttentionOp> {
  static LogicalResult checkSplit(Operation *op,
                                  const SetVector<unsigned> &reductionDims) {
    if (reductionDims.size() != 1 || reductionDims.front() != kJ)
      return op->emitOpError("can only split its key dimension (loop 3)");
    return success();
  }

  FailureOr<SmallVector<Value>> generateInitialTensorForPartialReduction(
      Operation *op, OpBuilder &b, Location loc, ArrayRef<OpFoldResult> sizes,
      const SetVector<unsigned> &reductionDims) const {
    if (failed(checkSplit(op, reductionDims)))
      return failure();
    auto online = cast<OnlineAttentionOp>(op);
    // (0, -inf, 0) per range: the state before any key.
    float identities[3] = {0.0f, -std::numeric_limits<float>::infinity(), 0.0f};
    SmallVector<Value> inits;
    for (auto [state, identity] : llvm::zip(online.getDpsInits(), identities)) {
      SmallVector<OpFoldResult> shape = {sizes[kJ]};
      llvm::append_range(shape, tensor::getMixedSizes(b, loc, state));
      inits.push_back(createFilledF32(b, loc, shape, identity));
    }
    return inits;
  }

  FailureOr<TilingResult>
  tileToPartialReduction(Operation *op, OpBuilder &b, Location loc,
                         ReductionTilingStrategy strategy, ValueRange init,
                         ArrayRef<OpFoldResult> offsets,
                         ArrayRef<OpFoldResult> sizes,
                         const SetVector<unsigned> &reductionDims,
                         ArrayRef<OpFoldResult> splitReductionIvs) const {
    if (strategy != ReductionTilingStrategy::PartialReductionOuterParallel)
      return op->emitOpError("splits its keys only into parallel ranges "
                             "(tile_reduction_using_forall)");
    if (failed(checkSplit(op, reductionDims)))
      return failure();
    return tileOnlineAttention(b, cast<OnlineAttentionOp>(op), offsets, sizes,
                               init, splitReductionIvs.front());
  }

  FailureOr<MergeResult>
  mergeReductions(Operation *op, OpBuilder &b, Location loc,
                  ValueRange partialReduce,
                  const SetVector<unsigned> &reductionDims) const {
    auto online = cast<OnlineAttentionOp>(op);
    SmallVector<Value, 3> merged = mergePartialStatistics(
        b, loc, online.getLayout(), partialReduce, online.getDpsInits());
    MergeResult result;
    for (Value value : merged)
      result.mergeOps.push_back(value.getDefiningOp());
    result.replacements.assign(merged.begin(), merged.end());
    return result;
  }

  LogicalResult getPartialResultTilePosition(
      Operation *op, OpBuilder &b, unsigned resultNumber,
      ReductionTilingStrategy strategy, ArrayRef<OpFoldResult> offsets,
      ArrayRef<OpFoldResult> sizes, const SetVector<unsigned> &reductionDims,
      ArrayRef<OpFoldResult> splitReductionIvs,
      SmallVector<OpFoldResult> &resultOffsets,
      SmallVector<OpFoldResult> &resultSizes) const {
    if (strategy != ReductionTilingStrategy::PartialReductionOuterParallel)
      return failure();
    getResultTile(b, cast<OnlineAttentionOp>(op), resultNumber, offsets, sizes,
                  resultOffsets, resultSizes);
    resultOffsets.insert(resultOffsets.begin(), splitReductionIvs.front());
    resultSizes.insert(resultSizes.begin(), b.getIndexAttr(1));
    return success();
  }
};
} // namespace

void mlir::attn::registerTilingInterfaceExternalModels(
    DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, AttnDialect *) {
    OnlineAttentionOp::attachInterface<OnlineAttentionTilingInterface>(*ctx);
    OnlineAttentionOp::attachInterface<OnlineAttentionPartialReduction>(*ctx);
  });
}
