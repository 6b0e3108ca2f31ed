//===- ClassifyBlocks.cpp - skip, full or partial (query, key) blocks -----===//
//
// Part of the attn project: an MLIR compiler for attention.
//
//===----------------------------------------------------------------------===//
//
// Block classification. The attn-classify-blocks pass cuts each query tile
// to the keys its band mask and kv_lens can show (so no lowering visits the
// rest); classifyKeyTile, which the fused loop calls per key tile, decides
// skip / full / partial from the band and the mask_mod's bounds.
//
//===----------------------------------------------------------------------===//

#include "attn/IR/AttnOps.h"
#include "attn/Transforms/Passes.h"
#include "attn/Transforms/Transforms.h"
#include "attn/Transforms/Utils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

namespace mlir::attn {
#define GEN_PASS_DEF_CLASSIFYBLOCKS
#include "attn/Transforms/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

/// The keys [begin, end) of this attention (its own key indices) that its
/// band mask can show to any of its queries: queries [qFirst, qFirst + qLen)
/// of the whole problem against keys [kvFirst, kvFirst + kvLen). Null when
/// the structured mask is not a band.
static std::optional<std::pair<Value, Value>>
visibleKeyRange(OpBuilder &b, Location loc, StructuredMaskAttrInterface mask,
                const AttentionPosition &position, Value qLen) {
  IndexMath m{b, loc};
  Value qFirst = position.offsets[2], kvFirst = position.offsets[3];
  Value qEnd = m.add(qFirst, qLen); // one past the last query
  if (auto causal = dyn_cast_or_null<CausalMaskAttr>(mask)) {
    // Keys up to (last query) + shift.
    Value shift = m.shift(causal.getAlignment(), position.extents);
    return std::make_pair(m.constant(0), m.sub(m.add(qEnd, shift), kvFirst));
  }
  if (auto window = dyn_cast_or_null<SlidingWindowMaskAttr>(mask)) {
    Value shift = m.shift(window.getAlignment(), position.extents);
    Value begin = m.sub(
        m.sub(m.add(qFirst, shift), m.constant(window.getLeft())), kvFirst);
    Value end = m.sub(m.add(m.add(qEnd, shift), m.constant(window.getRight())),
                      kvFirst);
    return std::make_pair(begin, end);
  }
  return std::nullopt;
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

FailureOr<AttentionOp> mlir::attn::classifyBlocks(RewriterBase &rewriter,
                                                  AttentionOp op) {
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

  std::optional<std::pair<Value, Value>> band = visibleKeyRange(
      rewriter, loc, op.getStructuredMaskAttr(), position, qLen);
  Value lengthsEnd = keyEndFromLengths(rewriter, loc, op, position.offsets[3]);
  if (!band && !lengthsEnd)
    return rewriter.notifyMatchFailure(
        op, "no band mask and no single-batch kv_lens to skip keys by");

  // Clamp to 0 <= begin <= end <= Sk.
  Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
  Value begin = band ? band->first : zero, end = band ? band->second : kvLen;
  if (lengthsEnd)
    end = arith::MinSIOp::create(rewriter, loc, end, lengthsEnd);
  auto clamp = [&](Value v, Value lo, Value hi) -> Value {
    return arith::MinSIOp::create(
        rewriter, loc, arith::MaxSIOp::create(rewriter, loc, v, lo), hi);
  };
  begin = clamp(begin, zero, kvLen);
  end = clamp(end, begin, kvLen);
  Value size = arith::SubIOp::create(rewriter, loc, end, begin);

  // The same attention over the keys that remain; kv_lens is applied by the
  // cut, so it goes.
  OnlineStepOperands keys =
      sliceOnlineStep(rewriter, loc, op, position, begin, size);
  auto cut = AttentionOp::create(
      rewriter, loc, op.getType(), op.getQuery(), keys.key, keys.value,
      keys.mask, keys.bias, lengthsEnd ? Value() : op.getKvLens(), keys.offsets,
      position.extents, op.getInit(), op.getScaleAttr(),
      op.getStructuredMaskAttr(), op.getLayoutAttr());
  for (auto [from, to] : llvm::zip(op->getRegions(), cut->getRegions()))
    if (!from.empty())
      rewriter.cloneRegionBefore(from, to, to.end());
  rewriter.replaceOp(op, cut.getResult());
  return cut;
}

/// Whether the structured mask shows every key of [kvStart, kvStart +
/// kvSize) to every query of this attention, so the step needs no per-element
/// structured masking. Null when there is no band mask to decide on.
static Value isTileInsideBand(OpBuilder &b, Location loc,
                              StructuredMaskAttrInterface mask,
                              const AttentionPosition &position, Value qLen,
                              Value kvStart, Value kvSize) {
  auto causal = dyn_cast_or_null<CausalMaskAttr>(mask);
  auto window = dyn_cast_or_null<SlidingWindowMaskAttr>(mask);
  if (!causal && !window)
    return Value();
  IndexMath m{b, loc};
  Alignment alignment = causal ? causal.getAlignment() : window.getAlignment();
  Value shift = m.shift(alignment, position.extents);
  // Whole-problem positions of the first query, the last query, the first
  // key and the last key.
  Value firstQuery = m.add(position.offsets[2], shift);
  Value lastQuery = m.sub(m.add(firstQuery, qLen), m.constant(1));
  Value firstKey = m.add(position.offsets[3], kvStart);
  Value lastKey = m.sub(m.add(firstKey, kvSize), m.constant(1));
  // The first query sees up to its position (+ right); the last query down
  // to its position - left.
  if (causal)
    return m.sle(lastKey, firstQuery);
  Value right =
      m.sle(lastKey, m.add(firstQuery, m.constant(window.getRight())));
  Value left = m.sle(m.sub(lastQuery, m.constant(window.getLeft())), firstKey);
  return m.both(left, right);
}

KeyTileClass mlir::attn::classifyKeyTile(OpBuilder &b, Location loc,
                                         AttentionOp op,
                                         const AttentionPosition &position,
                                         Value qLen, Value kvStart,
                                         Value kvSize) {
  StructuredMaskAttrInterface mask = op.getStructuredMaskAttr();
  Region &maskMod = op.getMaskMod();
  if (!mask && maskMod.empty())
    return {};
  IndexMath m{b, loc};
  Value insideBand =
      mask ? isTileInsideBand(b, loc, mask, position, qLen, kvStart, kvSize)
           : m.constantBool(true);
  if (maskMod.empty())
    return {Value(), insideBand};

  // The first and last index of the tile in each dimension.
  Layout layout = op.getLayout();
  Value one = m.constant(1);
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
    return {};
  return {bounds->hidesAll,
          insideBand ? m.both(insideBand, bounds->showsAll) : Value()};
}

namespace {
struct ClassifyBlocksPass : attn::impl::ClassifyBlocksBase<ClassifyBlocksPass> {
  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    SmallVector<AttentionOp> ops;
    getOperation()->walk([&](AttentionOp op) { ops.push_back(op); });
    // Attentions without a band mask or usable kv_lens keep all their keys.
    for (AttentionOp op : ops)
      (void)classifyBlocks(rewriter, op);
  }
};
} // namespace
