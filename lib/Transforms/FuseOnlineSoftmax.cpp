//===- FuseOnlineSoftmax.cpp - attention -> loop of online_attention ------===//
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
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <limits>

namespace mlir::attn {
#define GEN_PASS_DEF_FUSEONLINESOFTMAX
#include "attn/Transforms/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

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

namespace {
/// How the mask rules (structured mask, mask_mod) of an attention treat one
/// key tile, as i1 values: `hidden` when they certainly hide every key of it
/// from every query (the tile is skipped), `full` when they certainly show
/// every one (the step runs without them). Null when nothing decides it.
struct KeyTileClass {
  Value hidden, full;
};
} // namespace

/// Classifies the keys [kvStart, kvStart + kvSize) of `op` against its
/// queries: by the band of its structured mask, and by the bounds of its
/// mask_mod region over the tile's box of indices.
static KeyTileClass classifyKeyTile(OpBuilder &b, Location loc, AttentionOp op,
                                    const AttentionPosition &position,
                                    Value qLen, Value kvStart, Value kvSize) {
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

/// Atomically adds the index `delta` to the i64 global `counter`.
static void addToCounter(OpBuilder &b, Location loc, memref::GlobalOp counter,
                         Value delta) {
  Value ref = memref::GetGlobalOp::create(b, loc, counter.getType(),
                                          counter.getSymName());
  memref::AtomicRMWOp::create(
      b, loc, arith::AtomicRMWKind::addi,
      arith::IndexCastOp::create(b, loc, b.getI64Type(), delta), ref,
      ValueRange{});
}

/// Adds ceil(max(count, 0) / tile) tiles to `counter`.
static void addTileCount(OpBuilder &b, Location loc, memref::GlobalOp counter,
                         Value count, Value tile) {
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  addToCounter(b, loc, counter,
               arith::CeilDivSIOp::create(
                   b, loc, arith::MaxSIOp::create(b, loc, count, zero), tile));
}

FailureOr<FinalizeOnlineAttentionOp>
mlir::attn::fuseOnlineSoftmax(RewriterBase &rewriter, AttentionOp op,
                              int64_t kvTileSize,
                              ArrayRef<memref::GlobalOp> tileCounters) {
  if (kvTileSize <= 0)
    return rewriter.notifyMatchFailure(op, "kv-tile-size must be positive");
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(op);
  Location loc = op.getLoc();
  int64_t seqPos = getSeqDimPos(op.getLayout());

  SmallVector<Value, 3> statistics = createInitialStatistics(rewriter, loc, op);
  AttentionPosition position = getAttentionPosition(rewriter, loc, op);
  Value tile = arith::ConstantIndexOp::create(rewriter, loc, kvTileSize);
  Value qLen = getValueOrCreateConstantIndexOp(
      rewriter, loc,
      tensor::getMixedSize(rewriter, loc, op.getQuery(), seqPos));
  Value kvLen = getValueOrCreateConstantIndexOp(
      rewriter, loc, tensor::getMixedSize(rewriter, loc, op.getKey(), seqPos));

  // Keys no query of the tile can see were cut off by attn-classify-blocks;
  // the loop visits the rest. Counted against the whole key range.
  Value kvBegin = arith::ConstantIndexOp::create(rewriter, loc, 0);
  Value kvEnd = kvLen;
  if (tileCounters.size() == 2) {
    addTileCount(rewriter, loc, tileCounters[0], position.extents[1], tile);
    addTileCount(rewriter, loc, tileCounters[1], kvLen, tile);
  }

  auto loop = scf::ForOp::create(
      rewriter, loc, kvBegin, kvEnd, tile, statistics,
      [&](OpBuilder &b, Location nl, Value kv, ValueRange carried) {
        // The last tile may be shorter.
        Value rest = arith::SubIOp::create(b, nl, kvEnd, kv);
        Value size = arith::MinSIOp::create(b, nl, tile, rest);
        OnlineStepOperands operands =
            sliceOnlineStep(b, nl, op, position, kv, size);
        auto step = [&](OpBuilder &sb, Location sl, bool masked) {
          OnlineAttentionOp online = createOnlineAttentionStep(
              sb, sl, op, position, operands, carried, masked);
          scf::YieldOp::create(sb, sl, online.getResults());
        };
        // Tiles the mask rules fully show skip their per-element test; only
        // the tiles on an edge apply them.
        KeyTileClass keys =
            classifyKeyTile(b, nl, op, position, qLen, kv, size);
        auto compute = [&](OpBuilder &cb, Location cl) {
          if (!keys.full)
            return step(cb, cl, /*masked=*/true);
          auto branch = scf::IfOp::create(
              cb, cl, keys.full,
              [&](OpBuilder &tb, Location tl) { step(tb, tl, false); },
              [&](OpBuilder &eb, Location el) { step(eb, el, true); });
          scf::YieldOp::create(cb, cl, branch.getResults());
        };
        if (!keys.hidden)
          return compute(b, nl);
        // Tiles the mask_mod hides whole leave the statistics as they are.
        auto skip = scf::IfOp::create(
            b, nl, keys.hidden,
            [&](OpBuilder &tb, Location tl) {
              if (tileCounters.size() == 2)
                addToCounter(tb, tl, tileCounters[1],
                             arith::ConstantIndexOp::create(tb, tl, -1));
              scf::YieldOp::create(tb, tl, carried);
            },
            compute);
        scf::YieldOp::create(b, nl, skip.getResults());
      });

  auto finalize = FinalizeOnlineAttentionOp::create(
      rewriter, loc, op.getInit().getType(), loop.getResult(0),
      loop.getResult(2), op.getInit(), op.getLayoutAttr());
  rewriter.replaceOp(op, finalize.getResult());
  return finalize;
}

/// The public i64 global `name` (initially 0) of `module`.
static memref::GlobalOp getOrCreateCounter(OpBuilder &b, ModuleOp module,
                                           StringRef name) {
  if (auto existing = module.lookupSymbol<memref::GlobalOp>(name))
    return existing;
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(module.getBody());
  auto type = MemRefType::get({}, b.getI64Type());
  return memref::GlobalOp::create(
      b, module.getLoc(), name, b.getStringAttr("public"), type,
      DenseElementsAttr::get(RankedTensorType::get({}, b.getI64Type()),
                             int64_t(0)),
      /*constant=*/false, /*alignment=*/IntegerAttr());
}

namespace {
struct FuseOnlineSoftmaxPass
    : attn::impl::FuseOnlineSoftmaxBase<FuseOnlineSoftmaxPass> {
  using Base::Base;

  void runOnOperation() override {
    bool derive = kvTileSize == 0 && l2CacheSize > 0;
    if (kvTileSize <= 0 && !derive) {
      getOperation()->emitError()
          << "attn-fuse-online-softmax: kv-tile-size must be positive, got "
          << static_cast<int64_t>(kvTileSize) << " (0 needs l2-cache-size)";
      return signalPassFailure();
    }
    IRRewriter rewriter(&getContext());
    SmallVector<memref::GlobalOp, 2> counters;
    if (countTiles) {
      auto module = dyn_cast<ModuleOp>(getOperation());
      if (!module) {
        getOperation()->emitError()
            << "attn-fuse-online-softmax: count-tiles needs the pass to run "
               "on a module";
        return signalPassFailure();
      }
      for (StringRef name : {"attn_tiles_total", "attn_tiles_computed"})
        counters.push_back(getOrCreateCounter(rewriter, module, name));
    }
    WalkResult result = getOperation()->walk([&](AttentionOp op) -> WalkResult {
      int64_t tileSize =
          derive ? deriveKeyTileSize(op, l2CacheSize) : int64_t(kvTileSize);
      if (failed(fuseOnlineSoftmax(rewriter, op, tileSize, counters)))
        return WalkResult::interrupt();
      return WalkResult::advance();
    });
    if (result.wasInterrupted())
      signalPassFailure();
  }
};
} // namespace
