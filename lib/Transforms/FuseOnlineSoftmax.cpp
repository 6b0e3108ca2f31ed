//===- FuseOnlineSoftmax.cpp - attention -> loop of online_attention ------===//
//
// Part of the attn project: an MLIR compiler for attention.
//
//===----------------------------------------------------------------------===//

#include "attn/IR/AttnOps.h"
#include "attn/IR/StructuredMasks.h"
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
        auto step = [&](OpBuilder &sb, Location sl, StepMasks masks) {
          OnlineAttentionOp online = createOnlineAttentionStep(
              sb, sl, op, position, operands, carried, masks);
          scf::YieldOp::create(sb, sl, online.getResults());
        };
        // Tiles the mask rules fully show skip their per-element test; only
        // the tiles on an edge apply them. Tiles of full run-time blocks
        // apply no mask at all.
        KeyTileClass keys =
            classifyKeyTile(b, nl, op, position, qLen, kv, size);
        auto edgeOrRules = [&](OpBuilder &cb, Location cl) {
          if (!keys.full)
            return step(cb, cl, StepMasks::All);
          auto branch = scf::IfOp::create(
              cb, cl, keys.full,
              [&](OpBuilder &tb, Location tl) {
                step(tb, tl, StepMasks::NoRules);
              },
              [&](OpBuilder &eb, Location el) {
                step(eb, el, StepMasks::All);
              });
          scf::YieldOp::create(cb, cl, branch.getResults());
        };
        auto compute = [&](OpBuilder &cb, Location cl) {
          if (!keys.blocksFull)
            return edgeOrRules(cb, cl);
          auto branch = scf::IfOp::create(
              cb, cl, keys.blocksFull,
              [&](OpBuilder &tb, Location tl) {
                step(tb, tl, StepMasks::None);
              },
              edgeOrRules);
          scf::YieldOp::create(cb, cl, branch.getResults());
        };
        if (!keys.hidden)
          return compute(b, nl);
        // Tiles the masks hide whole leave the statistics as they are.
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

  auto finalize = createFinalize(rewriter, loc, op, loop.getResults());
  rewriter.replaceOp(op, finalize.getResults());
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
      return signalPassFailure();
    materializeBlockBitmapTables(getOperation());
  }
};
} // namespace
