//===- SplitKeyValue.cpp - split-K attention for decode -------------------===//
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
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <limits>

namespace mlir::attn {
#define GEN_PASS_DEF_SPLITKEYVALUE
#include "attn/Transforms/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

/// A tensor like `like` with a leading dimension of `splits`.
static Value emptyWithSplits(OpBuilder &b, Location loc, Value like,
                             Value splits) {
  SmallVector<OpFoldResult> sizes = {splits};
  llvm::append_range(sizes, tensor::getMixedSizes(b, loc, like));
  return tensor::EmptyOp::create(b, loc, sizes, b.getF32Type());
}

FailureOr<FinalizeOnlineAttentionOp>
mlir::attn::splitKeyValue(RewriterBase &rewriter, AttentionOp op,
                          int64_t splits) {
  if (splits < 2)
    return rewriter.notifyMatchFailure(op, "fewer than 2 splits");
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(op);
  Location loc = op.getLoc();
  Value kvLen = getValueOrCreateConstantIndexOp(
      rewriter, loc,
      tensor::getMixedSize(rewriter, loc, op.getKey(),
                           getSeqDimPos(op.getLayout())));
  Value numSplits = arith::ConstantIndexOp::create(rewriter, loc, splits);
  Value chunk = arith::CeilDivUIOp::create(rewriter, loc, kvLen, numSplits);
  AttentionPosition position = getAttentionPosition(rewriter, loc, op);

  // Partial (acc, max, sum) per key range, side by side along a new
  // leading dimension.
  SmallVector<Value, 3> shapes = createInitialStatistics(rewriter, loc, op);
  SmallVector<Value> partialInits;
  for (Value like : shapes)
    partialInits.push_back(emptyWithSplits(rewriter, loc, like, numSplits));
  auto forall = scf::ForallOp::create(
      rewriter, loc, ArrayRef<OpFoldResult>{numSplits}, partialInits,
      /*mapping=*/std::nullopt);
  rewriter.setInsertionPoint(forall.getTerminator());
  Value split = forall.getInductionVars().front();
  Value start = arith::MulIOp::create(rewriter, loc, split, chunk);
  Value end = arith::MinUIOp::create(
      rewriter, loc, arith::AddIOp::create(rewriter, loc, start, chunk), kvLen);
  Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
  Value size = arith::MaxSIOp::create(
      rewriter, loc, arith::SubIOp::create(rewriter, loc, end, start), zero);
  OnlineAttentionOp step = createOnlineAttentionStep(
      rewriter, loc, op, position,
      sliceOnlineStep(rewriter, loc, op, position, start, size),
      createInitialStatistics(rewriter, loc, op));
  for (auto [result, shared] :
       llvm::zip(step.getResults(), forall.getRegionIterArgs())) {
    // Sizes first: in_parallel holds nothing but the inserts.
    auto type = cast<RankedTensorType>(result.getType());
    SmallVector<OpFoldResult> offsets(type.getRank() + 1,
                                      rewriter.getIndexAttr(0));
    offsets[0] = split;
    SmallVector<OpFoldResult> sizes = {rewriter.getIndexAttr(1)};
    llvm::append_range(sizes, tensor::getMixedSizes(rewriter, loc, result));
    SmallVector<OpFoldResult> strides(type.getRank() + 1,
                                      rewriter.getIndexAttr(1));
    OpBuilder::InsertionGuard insertGuard(rewriter);
    rewriter.setInsertionPointToEnd(forall.getTerminator().getBody());
    tensor::ParallelInsertSliceOp::create(rewriter, loc, result, shared,
                                          offsets, sizes, strides);
  }
  rewriter.setInsertionPointAfter(forall);

  // The merge, from a fresh state: nothing precedes the ranges.
  SmallVector<Value, 3> merged =
      mergePartialStatistics(rewriter, loc, op.getLayout(), forall.getResults(),
                             createInitialStatistics(rewriter, loc, op));
  auto finalize = createFinalize(rewriter, loc, op, merged);
  rewriter.replaceOp(op, finalize.getResults());
  return finalize;
}

namespace {
struct SplitKeyValuePass : attn::impl::SplitKeyValueBase<SplitKeyValuePass> {
  using Base::Base;

  /// The automatic choice: split a decode-shaped attention whose (batch x
  /// key/value head) tiles cannot keep `parallelism` threads busy.
  int64_t chooseSplits(AttentionOp op) {
    if (!op.getOffsets().empty())
      return 0;
    auto qType = cast<ShapedType>(op.getQuery().getType());
    auto kType = cast<ShapedType>(op.getKey().getType());
    if (!qType.hasStaticShape() || !kType.hasStaticShape())
      return 0;
    int64_t batch = qType.getDimSize(0);
    int64_t kvHeads = kType.getDimSize(getHeadDimPos(op.getLayout()));
    int64_t qLen = qType.getDimSize(getSeqDimPos(op.getLayout()));
    int64_t kvLen = kType.getDimSize(getSeqDimPos(op.getLayout()));
    if (batch * kvHeads >= parallelism || qLen > 16 ||
        kvLen < 2 * minKeysPerSplit)
      return 0;
    return std::min<int64_t>(8, kvLen / minKeysPerSplit);
  }

  void runOnOperation() override {
    if (splits < 0 || parallelism <= 0 || minKeysPerSplit <= 0) {
      getOperation()->emitError()
          << "attn-split-kv: splits must be >= 0, parallelism and "
             "min-keys-per-split > 0";
      return signalPassFailure();
    }
    IRRewriter rewriter(&getContext());
    SmallVector<AttentionOp> ops;
    getOperation()->walk([&](AttentionOp op) { ops.push_back(op); });
    for (AttentionOp op : ops) {
      int64_t n = splits ? static_cast<int64_t>(splits) : chooseSplits(op);
      if (n >= 2)
        (void)splitKeyValue(rewriter, op, n);
    }
  }
};
} // namespace
