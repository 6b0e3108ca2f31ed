//===- ClassifyBlocks.cpp - skip, full or partial (query, key) blocks -----===//
//
// Part of the attn project: an MLIR compiler for attention.
//
//===----------------------------------------------------------------------===//
//
// Block classification. The attn-classify-blocks pass cuts each query tile
// to the keys its structured mask and kv_lens can show (so no lowering visits
// the rest); classifyKeyTile, which the fused loop calls per key tile, decides
// skip / full / partial from the structured mask, the mask_mod's bounds and
// the classes of a run-time block mask's blocks under the tile.
//
//===----------------------------------------------------------------------===//

#include "attn/IR/AttnOps.h"
#include "attn/IR/StructuredMasks.h"
#include "attn/Transforms/Passes.h"
#include "attn/Transforms/Transforms.h"
#include "attn/Transforms/Utils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

namespace mlir::attn {
#define GEN_PASS_DEF_CLASSIFYBLOCKS
#include "attn/Transforms/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

/// The keys [begin, end) of this attention (its own key indices) that its
/// structured mask can show to any of its queries: queries [qFirst, qFirst +
/// qLen) of the whole problem against keys [kvFirst, kvFirst + kvLen).
static std::pair<Value, Value>
visibleKeyRange(OpBuilder &b, Location loc, StructuredMaskAttrInterface mask,
                const AttentionPosition &position, Value qLen) {
  IndexMath m{b, loc};
  Value qFirst = position.offsets[2], kvFirst = position.offsets[3];
  Value qLast = m.sub(m.add(qFirst, qLen), m.constant(1));
  auto [begin, end] = buildMaskKeyHull(
      b, loc, mask, qFirst, qLast, position.extents[0], position.extents[1]);
  return {m.sub(begin, kvFirst), m.sub(end, kvFirst)};
}

/// One past the last key of this attention (its own key indices) that
/// kv_lens shows, when the attention holds a single batch entry (as attn-tile
/// makes it), so one length bounds every query; null otherwise. Keys at
/// whole-problem positions >= kv_lens[b] are hidden.
static Value keyEndFromLengths(OpBuilder &b, Location loc, AttentionOp op,
                               Value kvFirst) {
  Value lens = op.getKvLens();
  if (!lens || op.getQuery().getType().getDimSize(0) != 1)
    return Value();
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value len = tensor::ExtractOp::create(b, loc, lens, ValueRange{zero});
  Value index = arith::IndexCastOp::create(b, loc, b.getIndexType(), len);
  return arith::SubIOp::create(b, loc, index, kvFirst);
}

/// The first key of this attention (its own key indices) that its adaptive
/// spans may show, or null without spans: row i of head h sees keys from
/// i - spans[h], so the first row and the widest span of the op's heads
/// bound them all.
static Value keyBeginFromSpans(OpBuilder &b, Location loc, AttentionOp op,
                               const AttentionPosition &position) {
  Value spans = op.getSpans();
  if (!spans)
    return Value();
  IndexMath m{b, loc};
  Value heads = getValueOrCreateConstantIndexOp(
      b, loc,
      tensor::getMixedSize(b, loc, op.getQuery(),
                           getHeadDimPos(op.getLayout())));
  auto widest = scf::ForOp::create(
      b, loc, m.constant(0), heads, m.constant(1), ValueRange{m.constant(0)},
      [&](OpBuilder &lb, Location ll, Value h, ValueRange widestSoFar) {
        IndexMath lm{lb, ll};
        Value span = arith::IndexCastOp::create(
            lb, ll, lb.getIndexType(),
            tensor::ExtractOp::create(
                lb, ll, spans, ValueRange{lm.add(position.offsets[1], h)}));
        scf::YieldOp::create(
            lb, ll,
            ValueRange{arith::MaxSIOp::create(lb, ll, widestSoFar[0], span)});
      });
  return m.sub(m.sub(position.offsets[2], widest.getResult(0)),
               position.offsets[3]);
}

FailureOr<AttentionOp> mlir::attn::classifyBlocks(RewriterBase &rewriter,
                                                  AttentionOp op,
                                                  int64_t keyTile) {
  if (op.getBlockMask())
    return rewriter.notifyMatchFailure(
        op, "a block mask's full blocks show keys the other masks hide; its "
            "tiles are skipped one by one in the fused loop");
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(op);
  Location loc = op.getLoc();
  int64_t seqPos = getSeqDimPos(op.getLayout());
  AttentionPosition position = getAttentionPosition(rewriter, loc, op);
  auto length = [&](Value operand) {
    return getValueOrCreateConstantIndexOp(
        rewriter, loc, tensor::getMixedSize(rewriter, loc, operand, seqPos));
  };
  Value qLen = length(op.getQuery()), kvLen = length(op.getKey());

  StructuredMaskAttrInterface mask = op.getStructuredMaskAttr();
  std::optional<std::pair<Value, Value>> band;
  if (mask)
    band = visibleKeyRange(rewriter, loc, mask, position, qLen);
  Value lengthsEnd = keyEndFromLengths(rewriter, loc, op, position.offsets[3]);
  Value spansBegin = keyBeginFromSpans(rewriter, loc, op, position);
  if (!band && !lengthsEnd && !spansBegin)
    return rewriter.notifyMatchFailure(
        op, "no structured mask, single-batch kv_lens or spans to skip keys "
            "by");

  // Clamp to 0 <= begin <= end <= Sk.
  Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
  Value begin = band ? band->first : zero, end = band ? band->second : kvLen;
  if (lengthsEnd)
    end = arith::MinSIOp::create(rewriter, loc, end, lengthsEnd);
  if (spansBegin)
    begin = arith::MaxSIOp::create(rewriter, loc, begin, spansBegin);
  auto clamp = [&](Value v, Value lo, Value hi) -> Value {
    return arith::MinSIOp::create(
        rewriter, loc, arith::MaxSIOp::create(rewriter, loc, v, lo), hi);
  };
  begin = clamp(begin, zero, kvLen);
  end = clamp(end, begin, kvLen);
  if (keyTile > 0) {
    // Down to the grid of whole-problem key tiles, unless no key is left.
    Value tile = arith::ConstantIndexOp::create(rewriter, loc, keyTile);
    Value first =
        arith::AddIOp::create(rewriter, loc, begin, position.offsets[3]);
    Value aligned = arith::MulIOp::create(
        rewriter, loc, arith::DivUIOp::create(rewriter, loc, first, tile),
        tile);
    Value alignedBegin = arith::MaxSIOp::create(
        rewriter, loc,
        arith::SubIOp::create(rewriter, loc, aligned, position.offsets[3]),
        zero);
    Value empty = arith::CmpIOp::create(rewriter, loc,
                                        arith::CmpIPredicate::sge, begin, end);
    begin = arith::SelectOp::create(rewriter, loc, empty, end, alignedBegin);
  }
  Value size = arith::SubIOp::create(rewriter, loc, end, begin);

  // The same attention over the keys that remain; kv_lens is applied by the
  // cut, so it goes.
  OnlineStepOperands keys =
      sliceOnlineStep(rewriter, loc, op, position, begin, size);
  auto cut = AttentionOp::create(
      rewriter, loc, op->getResultTypes(), op.getQuery(), keys.key, keys.value,
      keys.mask, keys.bias, op.getRelBias(), op.getAdditiveWeight(),
      lengthsEnd ? Value() : op.getKvLens(), op.getSpans(), op.getBlockMask(),
      keys.offsets, position.extents, op.getInit(), op.getLseInit(),
      op.getScaleAttr(), op.getStructuredMaskAttr(), op.getLayoutAttr(),
      op.getSimilarityAttr(), op.getRelposAttr(), op.getBlockSizesAttr());
  for (auto [from, to] : llvm::zip(op->getRegions(), cut->getRegions()))
    if (!from.empty())
      rewriter.cloneRegionBefore(from, to, to.end());
  rewriter.replaceOp(op, cut.getResults());
  return cut;
}

/// The least and greatest class (i8) of the block_mask blocks under the
/// tile: batches, heads and queries of `op` at `position`, keys [kvFirst,
/// kvLast]. A broadcast (size-1) dimension is read at 0.
static std::pair<Value, Value>
blockClassRange(OpBuilder &b, Location loc, AttentionOp op,
                const AttentionPosition &position, Value qLen, Value kvFirst,
                Value kvLast) {
  IndexMath m{b, loc};
  Value blockMask = op.getBlockMask();
  ArrayRef<int64_t> blockSizes = *op.getBlockSizes();
  Layout layout = op.getLayout();
  auto querySize = [&](int64_t dim) {
    return getValueOrCreateConstantIndexOp(
        b, loc, tensor::getMixedSize(b, loc, op.getQuery(), dim));
  };
  auto blockOf = [&](Value x, int64_t size) {
    return arith::DivUIOp::create(b, loc, x, m.constant(size)).getResult();
  };
  Value one = m.constant(1);
  Value qFirst = position.offsets[2];
  Value qLast = m.sub(m.add(qFirst, qLen), one);
  // [first, last] of each block_mask dimension the tile covers.
  std::pair<Value, Value> ranges[4] = {
      {position.offsets[0],
       m.sub(m.add(position.offsets[0], querySize(0)), one)},
      {position.offsets[1],
       m.sub(m.add(position.offsets[1], querySize(getHeadDimPos(layout))),
             one)},
      {blockOf(qFirst, blockSizes[0]), blockOf(qLast, blockSizes[0])},
      {blockOf(kvFirst, blockSizes[1]), blockOf(kvLast, blockSizes[1])}};
  Type i8 = b.getI8Type();
  auto classConstant = [&](int64_t c) -> Value {
    return arith::ConstantIntOp::create(b, loc, i8, c);
  };
  SmallVector<Value, 4> indices;
  std::function<SmallVector<Value>(OpBuilder &, Location, unsigned, ValueRange)>
      reduce = [&](OpBuilder &lb, Location ll, unsigned d,
                   ValueRange bounds) -> SmallVector<Value> {
    if (d == 4) {
      Value c = tensor::ExtractOp::create(lb, ll, blockMask, indices);
      return {arith::MinSIOp::create(lb, ll, bounds[0], c),
              arith::MaxSIOp::create(lb, ll, bounds[1], c)};
    }
    // Broadcast dimensions stay at 0: clamp to the last index.
    IndexMath lm{lb, ll};
    Value last = lm.sub(getValueOrCreateConstantIndexOp(
                            lb, ll, tensor::getMixedSize(lb, ll, blockMask, d)),
                        lm.constant(1));
    Value first = arith::MinSIOp::create(lb, ll, ranges[d].first, last);
    Value end = lm.add(arith::MinSIOp::create(lb, ll, ranges[d].second, last),
                       lm.constant(1));
    auto loop = scf::ForOp::create(
        lb, ll, first, end, lm.constant(1), bounds,
        [&](OpBuilder &ib, Location il, Value x, ValueRange inner) {
          indices.push_back(x);
          SmallVector<Value> next = reduce(ib, il, d + 1, inner);
          indices.pop_back();
          scf::YieldOp::create(ib, il, next);
        });
    return loop.getResults();
  };
  SmallVector<Value> bounds =
      reduce(b, loc, 0, ValueRange{classConstant(2), classConstant(0)});
  return {bounds[0], bounds[1]};
}

/// How the rules (structured mask, mask_mod) treat the tile; `cut` says
/// whether attn-classify-blocks cut the keys a band mask hides.
static KeyTileClass classifyByRules(OpBuilder &b, Location loc, AttentionOp op,
                                    const AttentionPosition &position,
                                    Value qLen, Value kvStart, Value kvSize,
                                    bool cut) {
  StructuredMaskAttrInterface mask = op.getStructuredMaskAttr();
  Region &maskMod = op.getMaskMod();
  if (!mask && maskMod.empty())
    return {};
  IndexMath m{b, loc};
  Value one = m.constant(1);
  Value qFirst = position.offsets[2],
        kvFirst = m.add(position.offsets[3], kvStart);
  KeyTileClass tile{Value(), m.constantBool(true), Value()};
  if (mask) {
    MaskTileValues pairs =
        buildMaskTile(b, loc, mask, qFirst, m.sub(m.add(qFirst, qLen), one),
                      kvFirst, m.sub(m.add(kvFirst, kvSize), one),
                      position.extents[0], position.extents[1]);
    // The cut leaves no key of a band that no query sees.
    tile = {cut && isBandMask(mask) ? Value() : pairs.hidesAll, pairs.showsAll,
            Value()};
  }
  if (maskMod.empty())
    return tile;

  // The first and last index of the tile in each dimension.
  Layout layout = op.getLayout();
  auto range = [&](Value first, Value size) {
    return std::make_pair(first, m.sub(m.add(first, size), one));
  };
  auto querySize = [&](int64_t dim) {
    return getValueOrCreateConstantIndexOp(
        b, loc, tensor::getMixedSize(b, loc, op.getQuery(), dim));
  };
  std::pair<Value, Value> ranges[] = {
      range(position.offsets[0], querySize(0)),
      range(position.offsets[1], querySize(getHeadDimPos(layout))),
      range(position.offsets[2], qLen),
      range(m.add(position.offsets[3], kvStart), kvSize)};
  FailureOr<MaskModBounds> bounds = boundMaskMod(b, loc, maskMod, ranges);
  if (failed(bounds))
    return {tile.hidden, Value(), Value()};
  Value hidden =
      tile.hidden ? arith::OrIOp::create(b, loc, tile.hidden, bounds->hidesAll)
                        .getResult()
                  : bounds->hidesAll;
  return {hidden, m.both(tile.full, bounds->showsAll), Value()};
}

KeyTileClass mlir::attn::classifyKeyTile(OpBuilder &b, Location loc,
                                         AttentionOp op,
                                         const AttentionPosition &position,
                                         Value qLen, Value kvStart,
                                         Value kvSize) {
  // attn-classify-blocks cuts nothing under a block mask (a full block shows
  // keys the rules hide).
  Value blockMask = op.getBlockMask();
  KeyTileClass rules = classifyByRules(b, loc, op, position, qLen, kvStart,
                                       kvSize, /*cut=*/!blockMask);
  if (!blockMask)
    return rules;
  IndexMath m{b, loc};
  Value kvFirst = m.add(position.offsets[3], kvStart);
  auto [least, greatest] =
      blockClassRange(b, loc, op, position, qLen, kvFirst,
                      m.sub(m.add(kvFirst, kvSize), m.constant(1)));
  auto classIs = [&](arith::CmpIPredicate predicate, Value c, int64_t v) {
    return arith::CmpIOp::create(
               b, loc, predicate, c,
               arith::ConstantIntOp::create(b, loc, b.getI8Type(), v))
        .getResult();
  };
  // Hidden: every block is empty, or none is full and the rules hide all.
  Value hidden = classIs(arith::CmpIPredicate::sle, greatest, 0);
  if (rules.hidden)
    hidden = arith::OrIOp::create(
        b, loc, hidden,
        m.both(classIs(arith::CmpIPredicate::slt, greatest, 2), rules.hidden));
  return {hidden, rules.full, classIs(arith::CmpIPredicate::sge, least, 2)};
}

namespace {
struct ClassifyBlocksPass : attn::impl::ClassifyBlocksBase<ClassifyBlocksPass> {
  using Base::Base;

  void runOnOperation() override {
    if (kvTileSize < 0 || l2CacheSize < 0) {
      getOperation()->emitError()
          << "attn-classify-blocks: kv-tile-size and l2-cache-size must be "
             "non-negative, got "
          << static_cast<int64_t>(kvTileSize) << " and "
          << static_cast<int64_t>(l2CacheSize);
      return signalPassFailure();
    }
    IRRewriter rewriter(&getContext());
    SmallVector<AttentionOp> ops;
    getOperation()->walk([&](AttentionOp op) { ops.push_back(op); });
    // Attentions without a band mask or usable kv_lens keep all their keys.
    for (AttentionOp op : ops) {
      int64_t keyTile = kvTileSize > 0    ? int64_t(kvTileSize)
                        : l2CacheSize > 0 ? deriveKeyTileSize(op, l2CacheSize)
                                          : 0;
      (void)classifyBlocks(rewriter, op, keyTile);
    }
  }
};
} // namespace
