//===- AttnOps.cpp - attn operations: verifiers and canonicalization ------===//
//
// Part of the attn project: an MLIR compiler for attention.
//
//===----------------------------------------------------------------------===//

#include "attn/IR/AttnOps.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/TypeUtilities.h"

#include "llvm/Support/CheckedArithmetic.h"

#include <cmath>

using namespace mlir;
using namespace mlir::attn;

//===----------------------------------------------------------------------===//
// Shape helpers shared by the verifiers
//===----------------------------------------------------------------------===//

namespace {
/// The four logical dimensions of a query/key/value/output tensor, whatever
/// its layout. Any of them may be ShapedType::kDynamic.
struct HeadTensorDims {
  int64_t batch, heads, seq, feature;
};

/// The problem size of one attention, as far as the types know it.
struct AttentionDims {
  int64_t batch, qHeads, kvHeads, qLen, kvLen, headDim, valueDim;
};
} // namespace

static HeadTensorDims unpackDims(ShapedType type, Layout layout) {
  ArrayRef<int64_t> s = type.getShape();
  if (layout == Layout::BHSD)
    return {s[0], s[1], s[2], s[3]};
  return {s[0], s[2], s[1], s[3]};
}

static std::string describeLayout(Layout layout, StringRef feature) {
  return layout == Layout::BHSD ? ("[B, H, S, " + feature + "]").str()
                                : ("[B, S, H, " + feature + "]").str();
}

/// Fails with "<what> is <actual>, expected <expected> (<why>)" when both
/// sizes are static and differ.
static LogicalResult checkDim(Operation *op, int64_t actual, int64_t expected,
                              const Twine &what, const Twine &why) {
  if (ShapedType::isDynamic(actual) || ShapedType::isDynamic(expected) ||
      actual == expected)
    return success();
  return op->emitOpError() << what << " is " << actual << ", expected "
                           << expected << " (" << why << ")";
}

static LogicalResult checkRank(Operation *op, Value value, StringRef name,
                               int64_t rank, StringRef shape) {
  auto type = cast<ShapedType>(value.getType());
  if (type.getRank() == rank)
    return success();
  return op->emitOpError() << "expected " << name << " to have rank " << rank
                           << " " << shape << ", got rank " << type.getRank()
                           << " (" << type << ")";
}

/// Checks that a mask or bias tensor broadcasts to [B, Hq, Sq, Sk] by the
/// right-aligned rule: rank <= 4, each dimension 1 or the full size.
static LogicalResult checkBroadcastable(Operation *op, Value value,
                                        StringRef name,
                                        const AttentionDims &dims) {
  if (!value)
    return success();
  auto type = cast<ShapedType>(value.getType());
  int64_t target[4] = {dims.batch, dims.qHeads, dims.qLen, dims.kvLen};
  static const char *const targetNames[4] = {"B", "Hq", "Sq", "Sk"};
  if (type.getRank() > 4)
    return op->emitOpError() << "expected " << name
                             << " to have rank at most 4 (broadcastable to "
                                "[B, Hq, Sq, Sk]), got rank "
                             << type.getRank();
  int64_t offset = 4 - type.getRank();
  for (auto [i, size] : llvm::enumerate(type.getShape())) {
    int64_t full = target[i + offset];
    if (size == 1 || ShapedType::isDynamic(size) ||
        ShapedType::isDynamic(full) || size == full)
      continue;
    InFlightDiagnostic diag = op->emitOpError()
                              << name << " dim " << i << " is " << size
                              << ", which does not broadcast to "
                              << targetNames[i + offset] << " = " << full
                              << " (expected 1";
    if (full != 1)
      diag << " or " << full;
    return diag << ")";
  }
  return success();
}

static LogicalResult checkKvLens(Operation *op, Value kvLens, int64_t batch) {
  if (!kvLens)
    return success();
  if (failed(checkRank(op, kvLens, "kv_lens", 1, "[B]")))
    return failure();
  return checkDim(op, cast<ShapedType>(kvLens.getType()).getDimSize(0), batch,
                  "kv_lens size", "one length per batch entry");
}

/// Adaptive spans: i32 [Hq] (a tile's keep the whole problem's heads).
static LogicalResult checkSpans(Operation *op, Value spans, int64_t qHeads,
                                bool tile) {
  if (!spans)
    return success();
  if (failed(checkRank(op, spans, "spans", 1, "[Hq]")))
    return failure();
  return tile ? success()
              : checkDim(op, cast<ShapedType>(spans.getType()).getDimSize(0),
                         qHeads, "spans size", "one span per query head");
}

/// A run-time block mask: i8 [B or 1, Hq or 1, ceil(Sq / bq), ceil(Sk / bk)]
/// with `block_sizes = [bq, bk]`; a tile's is the whole problem's.
static LogicalResult checkBlockMask(Operation *op, Value blockMask,
                                    std::optional<ArrayRef<int64_t>> sizes,
                                    const AttentionDims &dims, bool tile) {
  if (!blockMask && sizes)
    return op->emitOpError() << "has block_sizes but no block_mask";
  if (!blockMask)
    return success();
  if (!sizes)
    return op->emitOpError() << "block_mask needs block_sizes = array<i64: "
                                "bq, bk> (the block of queries and of keys)";
  if (sizes->size() != 2 || (*sizes)[0] <= 0 || (*sizes)[1] <= 0)
    return op->emitOpError()
           << "block_sizes must be two positive sizes [bq, bk]";
  if (failed(checkRank(op, blockMask, "block_mask", 4,
                       "[B or 1, Hq or 1, query blocks, key blocks]")))
    return failure();
  if (tile)
    return success();
  ArrayRef<int64_t> shape = cast<ShapedType>(blockMask.getType()).getShape();
  auto blocks = [](int64_t len, int64_t block) {
    return ShapedType::isDynamic(len) ? len
                                      : llvm::divideCeilSigned(len, block);
  };
  auto either = [&](int64_t actual, int64_t full, const Twine &what) {
    return actual == 1 ? success()
                       : checkDim(op, actual, full, what, "or 1: broadcast");
  };
  return success(
      succeeded(either(shape[0], dims.batch, "block_mask dim 0")) &&
      succeeded(either(shape[1], dims.qHeads, "block_mask dim 1")) &&
      succeeded(checkDim(op, shape[2], blocks(dims.qLen, (*sizes)[0]),
                         "block_mask dim 2", "ceil(Sq / bq) query blocks")) &&
      succeeded(checkDim(op, shape[3], blocks(dims.kvLen, (*sizes)[1]),
                         "block_mask dim 3", "ceil(Sk / bk) key blocks")));
}

static LogicalResult checkScale(Operation *op, std::optional<APFloat> scale) {
  if (!scale)
    return success();
  // Scaled scores are computed in f32, in base 2 on the GPU (times
  // log2(e)): a scale past 2^64 overflows on any but tiny scores.
  double value = scale->convertToDouble();
  if (value > 0 && value <= 0x1p64)
    return success();
  return op->emitOpError() << "expected 'scale' to be a positive number of at "
                              "most 2^64, got "
                           << value;
}

/// Checks the counts of the optional position operands of a tile.
static LogicalResult checkPositions(Operation *op, ValueRange offsets,
                                    ValueRange extents) {
  if (!offsets.empty() && offsets.size() != 4)
    return op->emitOpError() << "expected 4 offsets (b, h, q, kv) or none, got "
                             << offsets.size();
  if (!extents.empty() && extents.size() != 2)
    return op->emitOpError()
           << "expected 2 extents (Sq, Sk) or none, got " << extents.size();
  return success();
}

/// Checks query, key, value and the optional mask operands of an attention
/// and returns the problem size they describe.
static FailureOr<AttentionDims>
verifyAttentionInputs(Operation *op, Value query, Value key, Value value,
                      Value mask, Value bias, Value kvLens, Layout layout) {
  std::string qkShape = describeLayout(layout, "D");
  if (failed(checkRank(op, query, "query", 4, qkShape)) ||
      failed(checkRank(op, key, "key", 4, qkShape)) ||
      failed(checkRank(op, value, "value", 4, describeLayout(layout, "Dv"))))
    return failure();

  auto qType = cast<ShapedType>(query.getType());
  auto kType = cast<ShapedType>(key.getType());
  auto vType = cast<ShapedType>(value.getType());
  if (kType.getElementType() != qType.getElementType() ||
      vType.getElementType() != qType.getElementType())
    return op->emitOpError()
           << "expected query, key and value to have the same element type, "
              "got "
           << qType.getElementType() << ", " << kType.getElementType()
           << " and " << vType.getElementType();

  HeadTensorDims q = unpackDims(qType, layout);
  HeadTensorDims k = unpackDims(kType, layout);
  HeadTensorDims v = unpackDims(vType, layout);
  if (failed(checkDim(op, k.batch, q.batch, "key batch size",
                      "must match query")) ||
      failed(checkDim(op, v.batch, q.batch, "value batch size",
                      "must match query")) ||
      failed(checkDim(op, k.feature, q.feature, "key head dim D",
                      "must match query")) ||
      failed(checkDim(op, v.heads, k.heads, "value head count",
                      "must match key")) ||
      failed(checkDim(op, v.seq, k.seq, "value sequence length",
                      "must match key")))
    return failure();

  for (auto [heads, name] :
       {std::pair{q.heads, "query"}, {k.heads, "key"}, {v.heads, "value"}})
    if (heads == 0)
      return op->emitOpError() << name << " head count must be > 0";
  // Empty features or keys leave nothing to attend over (the lowerings
  // divide by them); a batch or query length of 0 is merely empty.
  for (auto [size, name] : {std::pair{q.feature, "head dim D"},
                            {v.feature, "value head dim Dv"},
                            {k.seq, "key sequence length Sk"}})
    if (size == 0)
      return op->emitOpError() << name << " must be > 0";
  if (!ShapedType::isDynamic(q.heads) && !ShapedType::isDynamic(k.heads) &&
      q.heads % k.heads != 0)
    return op->emitOpError() << "query head count (" << q.heads
                             << ") must be a multiple of the key/value head "
                                "count ("
                             << k.heads << ")";

  AttentionDims dims{q.batch, q.heads,   k.heads,  q.seq,
                     k.seq,   q.feature, v.feature};
  if (mask && failed(checkBroadcastable(op, mask, "mask", dims)))
    return failure();
  if (bias && failed(checkBroadcastable(op, bias, "bias", dims)))
    return failure();
  if (failed(checkKvLens(op, kvLens, dims.batch)))
    return failure();
  return dims;
}

/// Checks that `result` has the output shape of the attention: [B, Hq, Sq, Dv]
/// in `layout`.
static LogicalResult checkOutputShape(Operation *op, Value result,
                                      StringRef name, const AttentionDims &dims,
                                      Layout layout) {
  if (failed(checkRank(op, result, name, 4, describeLayout(layout, "Dv"))))
    return failure();
  HeadTensorDims o = unpackDims(cast<ShapedType>(result.getType()), layout);
  if (o.heads == 0)
    return op->emitOpError() << name << " head count must be > 0";
  return success(
      succeeded(checkDim(op, o.batch, dims.batch, name + " batch size",
                         "must match query")) &&
      succeeded(checkDim(op, o.heads, dims.qHeads, name + " head count",
                         "must match query")) &&
      succeeded(checkDim(op, o.seq, dims.qLen, name + " sequence length",
                         "must match query")) &&
      succeeded(checkDim(op, o.feature, dims.valueDim, name + " feature dim Dv",
                         "must match value")));
}

/// Checks a per-row statistic tensor ([B, Hq, Sq] in every layout).
static LogicalResult
checkRowStatShape(Operation *op, Value stat, StringRef name, int64_t batch,
                  int64_t heads, int64_t seq,
                  StringRef against = "must match the accumulator") {
  if (failed(checkRank(op, stat, name, 3, "[B, Hq, Sq]")))
    return failure();
  ArrayRef<int64_t> s = cast<ShapedType>(stat.getType()).getShape();
  return success(
      succeeded(checkDim(op, s[0], batch, name + " batch size", against)) &&
      succeeded(checkDim(op, s[1], heads, name + " head count", against)) &&
      succeeded(checkDim(op, s[2], seq, name + " sequence length", against)));
}

/// Checks an optional lse init ([B, Hq, Sq]) and that the lse result comes
/// with it.
static LogicalResult checkLse(Operation *op, Value init, Value result,
                              int64_t batch, int64_t heads, int64_t seq,
                              StringRef against) {
  if (!init != !result)
    return op->emitOpError()
           << "returns an lse exactly when given an 'lse' init ("
           << (init ? "init without result" : "result without init") << ")";
  if (!init)
    return success();
  if (result.getType() != init.getType())
    return op->emitOpError() << "lse result type " << result.getType()
                             << " must match the lse init " << init.getType();
  return checkRowStatShape(op, init, "lse", batch, heads, seq, against);
}

/// Checks a rel_bias table against its relpos attribute: both or neither, and
/// [Hq, buckets] (a tile's table keeps the whole problem's heads, which its
/// offsets index).
static LogicalResult checkRelPos(Operation *op, Value table, RelPosAttr relpos,
                                 int64_t qHeads, bool tile) {
  if (!table != !relpos)
    return op->emitOpError()
           << "takes a 'rel_bias' table exactly with a 'relpos' attribute";
  if (!table)
    return success();
  if (failed(checkRank(op, table, "rel_bias", 2, "[Hq, buckets]")))
    return failure();
  ArrayRef<int64_t> shape = cast<ShapedType>(table.getType()).getShape();
  if (failed(checkDim(op, shape[1], relpos.getBuckets(),
                      "rel_bias bucket count", "must match relpos")))
    return failure();
  return tile ? success()
              : checkDim(op, shape[0], qHeads, "rel_bias head count",
                         "must match query");
}

/// Checks that an additive similarity comes with its weights [Hq, D] (a
/// tile's keep the whole problem's heads) and no other does.
static LogicalResult checkAdditiveWeight(Operation *op, Value weight,
                                         Similarity similarity,
                                         const AttentionDims &dims, bool tile) {
  bool additive = similarity == Similarity::Additive;
  if (additive != bool(weight))
    return op->emitOpError() << "takes an 'additive_weight' exactly with "
                                "similarity = #attn.similarity<additive>";
  if (!weight)
    return success();
  if (failed(checkRank(op, weight, "additive_weight", 2, "[Hq, D]")))
    return failure();
  ArrayRef<int64_t> shape = cast<ShapedType>(weight.getType()).getShape();
  if (failed(checkDim(op, shape[1], dims.headDim, "additive_weight dim",
                      "must match the head dim D")))
    return failure();
  return tile ? success()
              : checkDim(op, shape[0], dims.qHeads,
                         "additive_weight head count", "must match query");
}

/// Checks the signature and terminator of the optional score_mod and mask_mod
/// regions. Runs after the nested ops verified, so blocks have terminators.
static LogicalResult verifyModRegions(Operation *op, Region &scoreMod,
                                      Region &maskMod) {
  Builder b(op->getContext());
  Type index = b.getIndexType();
  struct Expected {
    Region &region;
    StringRef name;
    SmallVector<Type> args;
    Type yield;
    StringRef signature;
  } expected[] = {
      {scoreMod,
       "score_mod",
       {b.getF32Type(), index, index, index, index},
       b.getF32Type(),
       "(f32 score, index b, index h, index q_idx, index kv_idx) -> f32"},
      {maskMod,
       "mask_mod",
       {index, index, index, index},
       b.getI1Type(),
       "(index b, index h, index q_idx, index kv_idx) -> i1"}};

  for (Expected &e : expected) {
    if (e.region.empty())
      continue;
    Block &block = e.region.front();
    if (block.getArgumentTypes() != ArrayRef<Type>(e.args))
      return op->emitOpError()
             << "expected " << e.name << " region arguments " << e.signature
             << ", got " << block.getNumArguments() << " argument(s) of types ("
             << block.getArgumentTypes() << ")";
    auto yield = dyn_cast<YieldOp>(block.getTerminator());
    if (!yield)
      return op->emitOpError()
             << "expected " << e.name << " region to end with attn.yield";
    if (yield.getValues().size() != 1 ||
        yield.getValues().front().getType() != e.yield)
      return yield.emitOpError()
             << "in " << e.name << " must yield exactly one " << e.yield
             << ", got (" << yield.getValues().getTypes() << ")";
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Canonicalization shared by the ops with regions
//===----------------------------------------------------------------------===//

namespace {
/// Folds a tensor.cast that only erases static sizes into the attn op that
/// consumes it, as tensor's FoldTensorCastProducerOp does for other
/// destination-style ops. That pattern clones the op and, in MLIR 22, crashes
/// on an absent (empty) score_mod or mask_mod region; the higher benefit
/// makes this in-place version run first.
template <typename OpTy>
struct FoldTensorCastIntoAttnOp : OpRewritePattern<OpTy> {
  FoldTensorCastIntoAttnOp(MLIRContext *context)
      : OpRewritePattern<OpTy>(context, /*benefit=*/2) {}

  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    SmallVector<std::pair<unsigned, Value>> folds;
    for (OpOperand &operand : op->getOpOperands()) {
      auto castOp = operand.get().template getDefiningOp<tensor::CastOp>();
      if (castOp && tensor::canFoldIntoConsumerOp(castOp))
        folds.push_back({operand.getOperandNumber(), castOp.getSource()});
    }
    if (folds.empty())
      return rewriter.notifyMatchFailure(op, "no foldable tensor.cast");

    auto dps = cast<DestinationStyleOpInterface>(op.getOperation());
    SmallVector<Type> oldTypes(op->getResultTypes());
    rewriter.modifyOpInPlace(op, [&] {
      for (auto [index, source] : folds)
        op->setOperand(index, source);
      for (OpResult result : op->getResults())
        result.setType(dps.getTiedOpOperand(result)->get().getType());
    });
    // Users keep seeing the old, less static type.
    rewriter.setInsertionPointAfter(op);
    for (auto [result, oldType] : llvm::zip(op->getResults(), oldTypes)) {
      if (result.getType() == oldType)
        continue;
      auto back =
          tensor::CastOp::create(rewriter, op.getLoc(), oldType, result);
      rewriter.replaceAllUsesExcept(result, back, back);
    }
    return success();
  }
};
} // namespace

//===----------------------------------------------------------------------===//
// AttentionOp
//===----------------------------------------------------------------------===//

/// What attn.attention and attn.online_attention verify alike: the tile's
/// position, the inputs, the scale, the output `out` (named `outName`) and
/// the operands that score or mask keys. Their dims, or failure.
template <typename OpTy>
static FailureOr<AttentionDims> verifyAttentionOperands(OpTy op, Value out,
                                                        StringRef outName) {
  if (failed(checkPositions(op, op.getOffsets(), op.getExtents())))
    return failure();
  FailureOr<AttentionDims> dims = verifyAttentionInputs(
      op, op.getQuery(), op.getKey(), op.getValue(), op.getMask(), op.getBias(),
      op.getKvLens(), op.getLayout());
  bool tile = !op.getOffsets().empty();
  if (failed(dims) || failed(checkScale(op, op.getScale())) ||
      failed(checkOutputShape(op, out, outName, *dims, op.getLayout())) ||
      failed(checkRelPos(op, op.getRelBias(), op.getRelposAttr(), dims->qHeads,
                         tile)) ||
      failed(checkAdditiveWeight(op, op.getAdditiveWeight(), op.getSimilarity(),
                                 *dims, tile)) ||
      failed(checkSpans(op, op.getSpans(), dims->qHeads, tile)) ||
      failed(checkBlockMask(op, op.getBlockMask(), op.getBlockSizes(), *dims,
                            tile)))
    return failure();
  return dims;
}

LogicalResult AttentionOp::verify() {
  FailureOr<AttentionDims> dims =
      verifyAttentionOperands(*this, getInit(), "init");
  if (failed(dims))
    return failure();
  return checkLse(*this, getLseInit(), getLse(), dims->batch, dims->qHeads,
                  dims->qLen, "must match query");
}

LogicalResult AttentionOp::verifyRegions() {
  return verifyModRegions(*this, getScoreMod(), getMaskMod());
}

namespace {
/// Drops a structured mask that hides no key for the static sequence lengths,
/// e.g. a bottom-right causal mask when decoding one token; in a tile, at its
/// constant offsets in the whole problem.
struct DropMaskThatHidesNothing : OpRewritePattern<AttentionOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(AttentionOp op,
                                PatternRewriter &rewriter) const override {
    StructuredMaskAttrInterface mask = op.getStructuredMaskAttr();
    if (!mask)
      return rewriter.notifyMatchFailure(op, "no structured mask");
    auto qType = cast<ShapedType>(op.getQuery().getType());
    auto kType = cast<ShapedType>(op.getKey().getType());
    int64_t qLen = unpackDims(qType, op.getLayout()).seq;
    int64_t kvLen = unpackDims(kType, op.getLayout()).seq;
    if (ShapedType::isDynamic(qLen) || ShapedType::isDynamic(kvLen))
      return rewriter.notifyMatchFailure(op, "dynamic sequence length");
    // Where the tile sits: (query, key) offsets and the whole (Sq, Sk).
    int64_t at[4] = {0, 0, qLen, kvLen};
    if (!op.getOffsets().empty()) {
      Value where[4] = {op.getOffsets()[2], op.getOffsets()[3],
                        op.getExtents()[0], op.getExtents()[1]};
      for (auto [value, constant] : llvm::zip(where, at)) {
        APInt v;
        if (!matchPattern(value, m_ConstantInt(&v)))
          return rewriter.notifyMatchFailure(op, "tile position not constant");
        constant = v.getSExtValue();
      }
    }
    if (!classifyMaskTile(mask, at[0], at[0] + qLen - 1, at[1],
                          at[1] + kvLen - 1, at[2], at[3])
             .showsAll)
      return rewriter.notifyMatchFailure(op, "mask hides some keys");
    rewriter.modifyOpInPlace(op, [&] { op.removeStructuredMaskAttr(); });
    return success();
  }
};
} // namespace

void AttentionOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                              MLIRContext *context) {
  results.add<DropMaskThatHidesNothing, FoldTensorCastIntoAttnOp<AttentionOp>>(
      context);
}

//===----------------------------------------------------------------------===//
// OnlineAttentionOp
//===----------------------------------------------------------------------===//

LogicalResult OnlineAttentionOp::verify() {
  FailureOr<AttentionDims> dims =
      verifyAttentionOperands(*this, getAcc(), "acc");
  if (failed(dims))
    return failure();
  return success(
      succeeded(checkRowStatShape(*this, getMax(), "max", dims->batch,
                                  dims->qHeads, dims->qLen)) &&
      succeeded(checkRowStatShape(*this, getSum(), "sum", dims->batch,
                                  dims->qHeads, dims->qLen)));
}

LogicalResult OnlineAttentionOp::verifyRegions() {
  return verifyModRegions(*this, getScoreMod(), getMaskMod());
}

void OnlineAttentionOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                                    MLIRContext *context) {
  results.add<FoldTensorCastIntoAttnOp<OnlineAttentionOp>>(context);
}

//===----------------------------------------------------------------------===//
// FinalizeOnlineAttentionOp
//===----------------------------------------------------------------------===//

LogicalResult FinalizeOnlineAttentionOp::verify() {
  if (failed(checkRank(*this, getAcc(), "acc", 4,
                       describeLayout(getLayout(), "Dv"))))
    return failure();
  auto accType = cast<ShapedType>(getAcc().getType());
  auto initType = cast<ShapedType>(getInit().getType());
  if (failed(checkRank(*this, getInit(), "init", 4,
                       describeLayout(getLayout(), "Dv"))))
    return failure();
  for (auto [i, sizes] :
       llvm::enumerate(llvm::zip(initType.getShape(), accType.getShape())))
    if (failed(checkDim(*this, std::get<0>(sizes), std::get<1>(sizes),
                        "init dim " + Twine(i), "must match acc")))
      return failure();
  HeadTensorDims acc = unpackDims(accType, getLayout());
  if (failed(checkRowStatShape(*this, getSum(), "sum", acc.batch, acc.heads,
                               acc.seq)))
    return failure();
  if (getLseInit() && !getMax())
    return emitOpError() << "needs the running 'max' to return an lse";
  if (getMax() && failed(checkRowStatShape(*this, getMax(), "max", acc.batch,
                                           acc.heads, acc.seq)))
    return failure();
  return checkLse(*this, getLseInit(), getLse(), acc.batch, acc.heads, acc.seq,
                  "must match the accumulator");
}

//===----------------------------------------------------------------------===//
// LinearAttentionOp
//===----------------------------------------------------------------------===//

LogicalResult LinearAttentionOp::verify() {
  FailureOr<AttentionDims> dims = verifyAttentionInputs(
      *this, getQuery(), getKey(), getValue(), /*mask=*/Value(),
      /*bias=*/Value(), /*kvLens=*/Value(), getLayout());
  if (failed(dims))
    return failure();
  return checkOutputShape(*this, getInit(), "init", *dims, getLayout());
}

//===----------------------------------------------------------------------===//
// AdditiveAttentionOp
//===----------------------------------------------------------------------===//

LogicalResult AdditiveAttentionOp::verify() {
  FailureOr<AttentionDims> dims = verifyAttentionInputs(
      *this, getQuery(), getKey(), getValue(), /*mask=*/Value(),
      /*bias=*/Value(), getKvLens(), getLayout());
  if (failed(dims) || failed(checkScale(*this, getScale())) ||
      failed(checkOutputShape(*this, getInit(), "init", *dims, getLayout())) ||
      failed(checkRank(getOperation(), getQProj(), "q_proj", 2, "[D, A]")) ||
      failed(checkRank(getOperation(), getKProj(), "k_proj", 2, "[D, A]")) ||
      failed(checkRank(getOperation(), getScoreProj(), "score_proj", 1, "[A]")))
    return failure();
  auto shape = [](Value value) {
    return cast<ShapedType>(value.getType()).getShape();
  };
  int64_t attentionDim = shape(getQProj())[1];
  return success(
      succeeded(checkDim(*this, shape(getQProj())[0], dims->headDim,
                         "q_proj rows", "the head dim D")) &&
      succeeded(checkDim(*this, shape(getKProj())[0], dims->headDim,
                         "k_proj rows", "the head dim D")) &&
      succeeded(checkDim(*this, shape(getKProj())[1], attentionDim,
                         "k_proj columns", "q_proj's attention dim A")) &&
      succeeded(checkDim(*this, shape(getScoreProj())[0], attentionDim,
                         "score_proj size", "q_proj's attention dim A")));
}

//===----------------------------------------------------------------------===//
// MultiHeadAttentionOp
//===----------------------------------------------------------------------===//

LogicalResult MultiHeadAttentionOp::verify() {
  int64_t numHeads = getNumHeads();
  int64_t numKvHeads = getNumKvHeadsOrDefault();
  if (numHeads <= 0)
    return emitOpError() << "expected 'num_heads' > 0, got " << numHeads;
  if (numKvHeads <= 0)
    return emitOpError() << "expected 'num_kv_heads' > 0, got " << numKvHeads;
  if (numHeads % numKvHeads != 0)
    return emitOpError() << "'num_heads' (" << numHeads
                         << ") must be a multiple of 'num_kv_heads' ("
                         << numKvHeads << ")";
  if (failed(checkScale(*this, getScale())))
    return failure();

  if (failed(checkRank(*this, getQuery(), "query", 3, "[B, Sq, E]")) ||
      failed(checkRank(*this, getKey(), "key", 3, "[B, Sk, E_kv]")) ||
      failed(checkRank(*this, getValue(), "value", 3, "[B, Sk, E_kv]")) ||
      failed(checkRank(*this, getQProj(), "q_proj", 2, "[E, Hq*D]")) ||
      failed(checkRank(*this, getKProj(), "k_proj", 2, "[E_kv, Hkv*D]")) ||
      failed(checkRank(*this, getVProj(), "v_proj", 2, "[E_kv, Hkv*Dv]")) ||
      failed(checkRank(*this, getOutProj(), "out_proj", 2, "[Hq*Dv, E_out]")) ||
      failed(checkRank(*this, getInit(), "init", 3, "[B, Sq, E_out]")))
    return failure();

  Type elementType = getElementTypeOrSelf(getQuery().getType());
  for (auto [value, name] : {std::pair{getKey(), "key"},
                             {getValue(), "value"},
                             {getQProj(), "q_proj"},
                             {getKProj(), "k_proj"},
                             {getVProj(), "v_proj"},
                             {getOutProj(), "out_proj"}})
    if (getElementTypeOrSelf(value.getType()) != elementType)
      return emitOpError() << "expected " << name << " element type "
                           << elementType << " (the query's), got "
                           << getElementTypeOrSelf(value.getType());

  auto shape = [](Value v) { return cast<ShapedType>(v.getType()).getShape(); };
  ArrayRef<int64_t> x = shape(getQuery()), xk = shape(getKey()),
                    xv = shape(getValue()), wq = shape(getQProj()),
                    wk = shape(getKProj()), wv = shape(getVProj()),
                    wo = shape(getOutProj()), out = shape(getInit());

  // Per-head sizes follow from the projection widths.
  auto perHead = [](int64_t width, int64_t heads) {
    return ShapedType::isDynamic(width) ? ShapedType::kDynamic : width / heads;
  };
  for (auto [width, heads, name] : {std::tuple{wq[1], numHeads, "q_proj"},
                                    {wk[1], numKvHeads, "k_proj"},
                                    {wv[1], numKvHeads, "v_proj"}})
    if (!ShapedType::isDynamic(width) && width % heads != 0)
      return emitOpError() << name << " output width " << width
                           << " is not divisible by its " << heads
                           << " head(s)";
  int64_t headDim = perHead(wq[1], numHeads);
  int64_t valueDim = perHead(wv[1], numKvHeads);

  // heads x per-head size; the dynamic marker when unknown.
  auto headsWidth = [&](int64_t dim, int64_t heads) -> FailureOr<int64_t> {
    if (ShapedType::isDynamic(dim))
      return dim;
    if (std::optional<int64_t> width = llvm::checkedMul(dim, heads))
      return *width;
    return emitOpError() << heads << " heads x " << dim
                         << " per head overflows a 64-bit size";
  };
  FailureOr<int64_t> kvKeyWidth = headsWidth(headDim, numKvHeads);
  FailureOr<int64_t> qValueWidth = headsWidth(valueDim, numHeads);
  if (failed(kvKeyWidth) || failed(qValueWidth))
    return failure();
  if (failed(
          checkDim(*this, xk[0], x[0], "key batch size", "must match query")) ||
      failed(checkDim(*this, xv[0], x[0], "value batch size",
                      "must match query")) ||
      failed(checkDim(*this, xv[1], xk[1], "value sequence length",
                      "must match key")) ||
      failed(checkDim(*this, wq[0], x[2], "q_proj input width",
                      "must match the query embedding size")) ||
      failed(checkDim(*this, wk[0], xk[2], "k_proj input width",
                      "must match the key embedding size")) ||
      failed(checkDim(*this, wv[0], xv[2], "v_proj input width",
                      "must match the value embedding size")) ||
      failed(checkDim(*this, wk[1], *kvKeyWidth, "k_proj output width",
                      "num_kv_heads x the head dim of q_proj")) ||
      failed(checkDim(*this, wo[0], *qValueWidth, "out_proj input width",
                      "num_heads x the value head dim of v_proj")) ||
      failed(checkDim(*this, out[0], x[0], "init batch size",
                      "must match query")) ||
      failed(checkDim(*this, out[1], x[1], "init sequence length",
                      "must match query")) ||
      failed(checkDim(*this, out[2], wo[1], "init embedding size",
                      "must match the out_proj output width")))
    return failure();

  ValueRange biases = getProjBiases();
  if (!biases.empty()) {
    if (biases.size() != 4)
      return emitOpError() << "expected 4 proj_biases (b_q, b_k, b_v, b_o) "
                              "or none, got "
                           << biases.size();
    Value weights[4] = {getQProj(), getKProj(), getVProj(), getOutProj()};
    static const char *const names[4] = {"b_q", "b_k", "b_v", "b_o"};
    for (auto [bias, weight, name] : llvm::zip(biases, weights, names)) {
      if (failed(checkRank(*this, bias, name, 1, "[out width]")))
        return failure();
      if (getElementTypeOrSelf(bias.getType()) != elementType)
        return emitOpError() << "expected " << name << " element type "
                             << elementType << " (the query's), got "
                             << getElementTypeOrSelf(bias.getType());
      if (failed(checkDim(*this, shape(bias)[0], shape(weight)[1],
                          Twine(name) + " size",
                          "must match its projection's output width")))
        return failure();
    }
  }

  AttentionDims dims{x[0],  numHeads, numKvHeads, x[1],
                     xk[1], headDim,  valueDim};
  return success(
      succeeded(checkBroadcastable(*this, getMask(), "mask", dims)) &&
      succeeded(checkBroadcastable(*this, getBias(), "bias", dims)) &&
      succeeded(checkKvLens(*this, getKvLens(), dims.batch)));
}

LogicalResult MultiHeadAttentionOp::verifyRegions() {
  return verifyModRegions(*this, getScoreMod(), getMaskMod());
}

void MultiHeadAttentionOp::getCanonicalizationPatterns(
    RewritePatternSet &results, MLIRContext *context) {
  results.add<FoldTensorCastIntoAttnOp<MultiHeadAttentionOp>>(context);
}

//===----------------------------------------------------------------------===//
// UKernelGenericOp
//===----------------------------------------------------------------------===//

LogicalResult UKernelGenericOp::verify() {
  bool tensors = false, memrefs = false;
  for (Value operand : llvm::concat<Value>(getInputs(), getOutputs())) {
    tensors |= isa<RankedTensorType>(operand.getType());
    memrefs |= isa<MemRefType>(operand.getType());
  }
  if (tensors && memrefs)
    return emitOpError("expected all shaped operands to be ranked tensors or "
                       "all to be memrefs, not a mix");
  if (!tensors && !memrefs && !getOutputs().empty())
    return emitOpError("expected ranked tensor or memref operands");
  return success();
}

void UKernelGenericOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  // On memrefs the micro-kernel reads its inputs and updates its outputs.
  for (OpOperand &operand : getInputsMutable())
    if (isa<MemRefType>(operand.get().getType()))
      effects.emplace_back(MemoryEffects::Read::get(), &operand,
                           SideEffects::DefaultResource::get());
  for (OpOperand &operand : getOutputsMutable()) {
    if (!isa<MemRefType>(operand.get().getType()))
      continue;
    effects.emplace_back(MemoryEffects::Read::get(), &operand,
                         SideEffects::DefaultResource::get());
    effects.emplace_back(MemoryEffects::Write::get(), &operand,
                         SideEffects::DefaultResource::get());
  }
}

#define GET_OP_CLASSES
#include "attn/IR/AttnOps.cpp.inc"
