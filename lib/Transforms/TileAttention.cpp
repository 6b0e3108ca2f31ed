//===- TileAttention.cpp - attention over (batch, head, query) tiles ------===//
//
// Part of the attn project: an MLIR compiler for attention.
//
//===----------------------------------------------------------------------===//

#include "attn/IR/AttnOps.h"
#include "attn/Transforms/Passes.h"
#include "attn/Transforms/Transforms.h"
#include "attn/Transforms/Utils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

namespace mlir::attn {
#define GEN_PASS_DEF_TILEATTENTION
#include "attn/Transforms/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

namespace {
/// The window of one tile along each logical dimension of the problem.
struct TileWindow {
  OpFoldResult batch, batchSize;   // B
  OpFoldResult qHead, qHeadSize;   // Hq
  OpFoldResult kvHead, kvHeadSize; // Hkv
  OpFoldResult query, querySize;   // Sq
};

/// Offsets and sizes of the slice of `value` (in the op's layout, with
/// `dims[d]` naming which logical dimension dim d is: 'b', 'h' (query heads),
/// 'k' (kv heads), 'q' (queries) or anything else for "all of it").
struct Slice {
  SmallVector<OpFoldResult> offsets, sizes;
};
} // namespace

static Slice sliceOf(OpBuilder &b, Location loc, Value value, StringRef dims,
                     const TileWindow &w) {
  Slice slice;
  for (auto [d, kind] : llvm::enumerate(dims)) {
    std::pair<OpFoldResult, OpFoldResult> window;
    switch (kind) {
    case 'b':
      window = {w.batch, w.batchSize};
      break;
    case 'h':
      window = {w.qHead, w.qHeadSize};
      break;
    case 'k':
      window = {w.kvHead, w.kvHeadSize};
      break;
    case 'q':
      window = {w.query, w.querySize};
      break;
    default:
      slice.offsets.push_back(b.getIndexAttr(0));
      slice.sizes.push_back(tensor::getMixedSize(b, loc, value, d));
      continue;
    }
    slice.offsets.push_back(window.first);
    slice.sizes.push_back(window.second);
  }
  return slice;
}

static Value extract(OpBuilder &b, Location loc, Value value,
                     const Slice &slice) {
  SmallVector<OpFoldResult> strides(slice.offsets.size(), b.getIndexAttr(1));
  return tensor::ExtractSliceOp::create(b, loc, value, slice.offsets,
                                        slice.sizes, strides);
}

/// The dims string of a mask or bias tensor broadcast to [B, Hq, Sq, Sk]:
/// broadcast (size-1) dimensions are taken whole.
static std::string broadcastDims(Value value) {
  auto type = cast<RankedTensorType>(value.getType());
  std::string dims;
  static const char logical[4] = {'b', 'h', 'q', '-'};
  int64_t offset = 4 - type.getRank();
  for (int64_t d = 0; d < type.getRank(); ++d)
    dims.push_back(type.getDimSize(d) == 1 ? '-' : logical[d + offset]);
  return dims;
}

FailureOr<scf::ForallOp>
mlir::attn::tileAttention(RewriterBase &rewriter, AttentionOp op,
                          const AttentionTileSizes &tileSizes) {
  if (tileSizes.batch <= 0 || tileSizes.kvHeads <= 0 || tileSizes.queries <= 0)
    return rewriter.notifyMatchFailure(op, "tile sizes must be positive");
  if (!op.getOffsets().empty() || !op.getExtents().empty())
    return rewriter.notifyMatchFailure(op, "already a tile");
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(op);
  Location loc = op.getLoc();
  bool bhsd = op.getLayout() == Layout::BHSD;
  int64_t headPos = getHeadDimPos(op.getLayout());
  int64_t seqPos = getSeqDimPos(op.getLayout());
  Value q = op.getQuery(), k = op.getKey(), v = op.getValue();
  auto dim = [&](Value value, int64_t d) {
    return tensor::getMixedSize(rewriter, loc, value, d);
  };
  OpFoldResult batch = dim(q, 0), kvHeads = dim(k, headPos),
               qHeads = dim(q, headPos), qLen = dim(q, seqPos),
               kvLen = dim(k, seqPos);
  auto value = [&](OpFoldResult ofr) {
    return getValueOrCreateConstantIndexOp(rewriter, loc, ofr);
  };
  auto index = [&](int64_t v) {
    return arith::ConstantIndexOp::create(rewriter, loc, v).getResult();
  };

  // Heads are tiled in units of key/value heads, each with its G query heads;
  // an unknown G leaves heads untiled.
  auto qType = cast<ShapedType>(q.getType());
  auto kType = cast<ShapedType>(k.getType());
  int64_t hq = qType.getDimSize(headPos), hkv = kType.getDimSize(headPos);
  bool tileHeads = !ShapedType::isDynamic(hq) && !ShapedType::isDynamic(hkv);
  int64_t groups = tileHeads ? hq / hkv : 1;

  Value zero = index(0);
  SmallVector<OpFoldResult> lbs(3, rewriter.getIndexAttr(0));
  SmallVector<OpFoldResult> ubs = {
      batch, tileHeads ? kvHeads : rewriter.getIndexAttr(1), qLen};
  SmallVector<int64_t> steps = {
      tileSizes.batch, tileHeads ? tileSizes.kvHeads : 1, tileSizes.queries};
  auto forall = scf::ForallOp::create(
      rewriter, loc, lbs, ubs, getAsIndexOpFoldResult(op.getContext(), steps),
      op.getDpsInits(), /*mapping=*/std::nullopt);
  rewriter.setInsertionPoint(forall.getTerminator());
  SmallVector<Value> ivs = forall.getInductionVars();
  Value sharedOut = forall.getRegionIterArgs().front();
  Value sharedLse = op.getLseInit() ? forall.getRegionIterArgs()[1] : Value();

  // The last tile along a dimension may be shorter, unless the tile size
  // divides a static size: then every tile keeps a static shape.
  auto clamp = [&](Value iv, int64_t step, OpFoldResult bound) -> OpFoldResult {
    std::optional<int64_t> size = getConstantIntValue(bound);
    if (size && *size % step == 0)
      return rewriter.getIndexAttr(step);
    Value rest = arith::SubIOp::create(rewriter, loc, value(bound), iv);
    return arith::MinSIOp::create(rewriter, loc, index(step), rest).getResult();
  };
  TileWindow w;
  w.batch = ivs[0];
  w.batchSize = clamp(ivs[0], steps[0], batch);
  w.query = ivs[2];
  w.querySize = clamp(ivs[2], steps[2], qLen);
  if (tileHeads) {
    w.kvHead = ivs[1];
    w.kvHeadSize = clamp(ivs[1], steps[1], kvHeads);
    w.qHead =
        arith::MulIOp::create(rewriter, loc, ivs[1], index(groups)).getResult();
    if (std::optional<int64_t> n = getConstantIntValue(w.kvHeadSize))
      w.qHeadSize = rewriter.getIndexAttr(*n * groups);
    else
      w.qHeadSize = arith::MulIOp::create(rewriter, loc, value(w.kvHeadSize),
                                          index(groups))
                        .getResult();
  } else {
    w.kvHead = w.qHead = rewriter.getIndexAttr(0);
    w.kvHeadSize = kvHeads;
    w.qHeadSize = qHeads;
  }

  StringRef qDims = bhsd ? "bhq-" : "bqh-";
  StringRef kvDims = bhsd ? "bk--" : "b-k-";
  Slice outSlice = sliceOf(rewriter, loc, sharedOut, qDims, w);
  // The lse is [B, Hq, Sq] in both layouts.
  Slice lseSlice;
  if (sharedLse)
    lseSlice = sliceOf(rewriter, loc, sharedLse, "bhq", w);
  auto sliceOptional = [&](Value value, StringRef dims) {
    return value ? extract(rewriter, loc, value,
                           sliceOf(rewriter, loc, value, dims, w))
                 : Value();
  };
  Value mask = op.getMask(), bias = op.getBias();
  Value outTile = extract(rewriter, loc, sharedOut, outSlice);
  SmallVector<Value> offsets = {ivs[0], value(w.qHead), ivs[2], zero};
  SmallVector<Value> extents = {value(qLen), value(kvLen)};
  Value lseTile =
      sharedLse ? extract(rewriter, loc, sharedLse, lseSlice) : Value();
  auto tile = AttentionOp::create(
      rewriter, loc, outTile.getType(), lseTile ? lseTile.getType() : Type(),
      sliceOptional(q, qDims), sliceOptional(k, kvDims),
      sliceOptional(v, kvDims),
      mask ? sliceOptional(mask, broadcastDims(mask)) : Value(),
      bias ? sliceOptional(bias, broadcastDims(bias)) : Value(),
      op.getRelBias(), op.getAdditiveWeight(),
      sliceOptional(op.getKvLens(), "b"), op.getSpans(), op.getBlockMask(),
      offsets, extents, outTile, lseTile, op.getScaleAttr(),
      op.getStructuredMaskAttr(), op.getLayoutAttr(), op.getSimilarityAttr(),
      op.getRelposAttr(), op.getBlockSizesAttr());
  for (auto [from, to] : llvm::zip(op->getRegions(), tile->getRegions()))
    if (!from.empty())
      rewriter.cloneRegionBefore(from, to, to.end());

  rewriter.setInsertionPointToStart(forall.getTerminator().getBody());
  auto insert = [&](Value tileResult, Value shared, const Slice &slice) {
    SmallVector<OpFoldResult> strides(slice.offsets.size(),
                                      rewriter.getIndexAttr(1));
    tensor::ParallelInsertSliceOp::create(rewriter, loc, tileResult, shared,
                                          slice.offsets, slice.sizes, strides);
  };
  insert(tile.getResult(), sharedOut, outSlice);
  if (sharedLse)
    insert(tile.getLse(), sharedLse, lseSlice);
  rewriter.replaceOp(op, forall.getResults());
  return forall;
}

namespace {
struct TileAttentionPass : attn::impl::TileAttentionBase<TileAttentionPass> {
  using Base::Base;

  void runOnOperation() override {
    AttentionTileSizes sizes{batchTileSize, headTileSize, queryTileSize};
    bool derive = queryTileSize == 0 && l2CacheSize > 0;
    if (sizes.batch <= 0 || sizes.kvHeads <= 0 || sizes.queries < 0 ||
        l2CacheSize < 0 || parallelism <= 0 ||
        (sizes.queries == 0 && !derive)) {
      getOperation()->emitError()
          << "attn-tile: batch-tile-size, head-tile-size, query-tile-size and "
             "parallelism must be positive, l2-cache-size non-negative "
             "(query-tile-size=0 needs l2-cache-size), got "
          << sizes.batch << ", " << sizes.kvHeads << ", " << sizes.queries
          << ", " << static_cast<int64_t>(parallelism) << ", "
          << static_cast<int64_t>(l2CacheSize);
      return signalPassFailure();
    }
    IRRewriter rewriter(&getContext());
    SmallVector<AttentionOp> untiled;
    getOperation()->walk([&](AttentionOp op) {
      if (op.getOffsets().empty() && op.getExtents().empty())
        untiled.push_back(op);
    });
    for (AttentionOp op : untiled) {
      if (derive)
        sizes.queries = deriveQueryTileSize(op, l2CacheSize, parallelism);
      if (failed(tileAttention(rewriter, op, sizes)))
        return signalPassFailure();
    }
  }
};
} // namespace
