//===- LowerLinearAttention.cpp - attn.linear_attention to linalg ---------===//
//
// Part of the attn project: an MLIR compiler for attention.
//
// Kernelized linear attention in f32 linalg ops. Without a mask:
// out = phi(Q) (phi(K)^T V) / phi(Q) sum_j phi(k_j). Under the causal mask:
// an scf.for over query chunks carries the prefix state (S = sum_j phi(k_j)
// v_j^T, z = sum_j phi(k_j)) of the keys every row of the chunk sees; only
// the keys the chunk's rows see in part form a masked quadratic block.
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
#include "mlir/IR/TypeUtilities.h"

namespace mlir::attn {
#define GEN_PASS_DEF_LOWERLINEARATTENTION
#include "attn/Transforms/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

namespace {
/// Builds the linalg ops of one attn.linear_attention. Every tensor it makes
/// is f32 in [B, Hq, S, F] order: keys and values are gathered per query
/// head, so GQA needs no head arithmetic in indexing maps.
class LinearAttentionLowering {
public:
  LinearAttentionLowering(OpBuilder &b, LinearAttentionOp op)
      : b(b), op(op), loc(op.getLoc()), m{b, loc} {}

  Value lower(int64_t chunkSize);

private:
  OpBuilder &b;
  LinearAttentionOp op;
  Location loc;
  IndexMath m;
  Value batch, qHeads, qLen, kvLen, headDim, valueDim;

  OpFoldResult size(Value value, int64_t d) {
    return tensor::getMixedSize(b, loc, value, d);
  }
  Value sizeValue(Value value, int64_t d) {
    return getValueOrCreateConstantIndexOp(b, loc, size(value, d));
  }
  Value zeros(ArrayRef<Value> sizes) {
    return createFilledF32(b, loc, getAsOpFoldResult(sizes), 0.0f);
  }
  AffineMap map(unsigned numLoops, ArrayRef<unsigned> loops) {
    return getLoopsMap(b.getContext(), numLoops, loops);
  }
  Value generic(ValueRange inputs, Value init, ArrayRef<AffineMap> maps,
                unsigned numReductions,
                function_ref<void(OpBuilder &, Location, ValueRange)> body) {
    return createGeneric(b, loc, inputs, init, maps, numReductions, body);
  }
  /// x * y + acc, reassociable like every sum here.
  static Value multiplyAdd(OpBuilder &nb, Location nl, Value x, Value y,
                           Value acc) {
    auto flags = arith::FastMathFlags::reassoc | arith::FastMathFlags::contract;
    Value product = arith::MulFOp::create(nb, nl, x, y, flags);
    return arith::AddFOp::create(nb, nl, product, acc, flags);
  }

  /// `value` (q, k or v in the op's layout) as f32 [B, Hq, S, F], query head
  /// h reading head h / (Hq / heads of value), with phi applied when
  /// `featureMap`.
  Value gather(Value value, Value seq, Value feature, bool featureMap);
  /// (S, z) + the keys (phiK, V) over their sequence dim.
  std::pair<Value, Value> addKeys(Value state, Value normalizer, Value keys,
                                  Value values);
  /// phi(q) S and phi(q) . z per row: the numerator [B, Hq, n, Dv] and
  /// denominator [B, Hq, n] of rows `queries`.
  std::pair<Value, Value> readState(Value queries, Value state,
                                    Value normalizer);
  /// Numerator and denominator plus the block of `keys` the rows see in
  /// part: key j (at kvStart + j) counts for row i (at qStart + i) when
  /// kvStart + j <= qStart + i + shift.
  std::pair<Value, Value> addMaskedBlock(Value numerator, Value denominator,
                                         Value queries, Value keys,
                                         Value values, Value qStart,
                                         Value kvStart, Value shift);
  /// num / den (0 for a row that sees no key) written into `dest`, a slice
  /// of init in its layout and element type: the final op writes init
  /// itself, so bufferization keeps it in place.
  Value normalizeInto(Value numerator, Value denominator, Value dest);
};
} // namespace

static void yieldValue(OpBuilder &b, Location loc, Value value) {
  linalg::YieldOp::create(b, loc, ValueRange{value});
}

Value LinearAttentionLowering::gather(Value value, Value seq, Value feature,
                                      bool applyFeatureMap) {
  Layout layout = op.getLayout();
  int64_t headPos = getHeadDimPos(layout), seqPos = getSeqDimPos(layout);
  Value groups =
      arith::DivUIOp::create(b, loc, qHeads, sizeValue(value, headPos));
  Value init = tensor::EmptyOp::create(
      b, loc, getAsOpFoldResult(ValueRange{batch, qHeads, seq, feature}),
      b.getF32Type());
  return generic({}, init, {b.getMultiDimIdentityMap(4)}, 0,
                 [&](OpBuilder &nb, Location nl, ValueRange) {
                   SmallVector<Value> idx;
                   for (unsigned d = 0; d < 4; ++d)
                     idx.push_back(linalg::IndexOp::create(nb, nl, d));
                   SmallVector<Value> at(4);
                   at[0] = idx[0];
                   at[headPos] = arith::DivUIOp::create(nb, nl, idx[1], groups);
                   at[seqPos] = idx[2];
                   at[3] = idx[3];
                   Value x = convertFloat(
                       nb, nl, tensor::ExtractOp::create(nb, nl, value, at),
                       nb.getF32Type());
                   if (applyFeatureMap)
                     x = createLinearFeatureMap(nb, nl, x);
                   yieldValue(nb, nl, x);
                 });
}

std::pair<Value, Value> LinearAttentionLowering::addKeys(Value state,
                                                         Value normalizer,
                                                         Value keys,
                                                         Value values) {
  // Loops (b, h, d, e, j) and (b, h, d, j).
  Value newState = generic(
      {keys, values}, state,
      {map(5, {0, 1, 4, 2}), map(5, {0, 1, 4, 3}), map(5, {0, 1, 2, 3})}, 1,
      [&](OpBuilder &nb, Location nl, ValueRange args) {
        yieldValue(nb, nl, multiplyAdd(nb, nl, args[0], args[1], args[2]));
      });
  Value newNormalizer = generic(
      {keys}, normalizer, {map(4, {0, 1, 3, 2}), map(4, {0, 1, 2})}, 1,
      [&](OpBuilder &nb, Location nl, ValueRange args) {
        yieldValue(nb, nl, arith::AddFOp::create(nb, nl, args[0], args[1]));
      });
  return {newState, newNormalizer};
}

std::pair<Value, Value> LinearAttentionLowering::readState(Value queries,
                                                           Value state,
                                                           Value normalizer) {
  Value rows = sizeValue(queries, 2);
  // Loops (b, h, i, e, d) and (b, h, i, d).
  Value numerator = generic(
      {queries, state}, zeros({batch, qHeads, rows, valueDim}),
      {map(5, {0, 1, 2, 4}), map(5, {0, 1, 4, 3}), map(5, {0, 1, 2, 3})}, 1,
      [&](OpBuilder &nb, Location nl, ValueRange args) {
        yieldValue(nb, nl, multiplyAdd(nb, nl, args[0], args[1], args[2]));
      });
  Value denominator = generic(
      {queries, normalizer}, zeros({batch, qHeads, rows}),
      {map(4, {0, 1, 2, 3}), map(4, {0, 1, 3}), map(4, {0, 1, 2})}, 1,
      [&](OpBuilder &nb, Location nl, ValueRange args) {
        yieldValue(nb, nl, multiplyAdd(nb, nl, args[0], args[1], args[2]));
      });
  return {numerator, denominator};
}

std::pair<Value, Value> LinearAttentionLowering::addMaskedBlock(
    Value numerator, Value denominator, Value queries, Value keys, Value values,
    Value qStart, Value kvStart, Value shift) {
  Value rows = sizeValue(queries, 2), cols = sizeValue(keys, 2);
  // A[b, h, i, j] = phi(q_i) . phi(k_j) where key j counts for row i, else 0.
  Value block = generic(
      {queries, keys}, zeros({batch, qHeads, rows, cols}),
      {map(5, {0, 1, 2, 4}), map(5, {0, 1, 3, 4}), map(5, {0, 1, 2, 3})}, 1,
      [&](OpBuilder &nb, Location nl, ValueRange args) {
        yieldValue(nb, nl, multiplyAdd(nb, nl, args[0], args[1], args[2]));
      });
  Value zero = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0.0f));
  block = generic(
      {}, block, {b.getMultiDimIdentityMap(4)}, 0,
      [&](OpBuilder &nb, Location nl, ValueRange args) {
        IndexMath im{nb, nl};
        Value row =
            im.add(im.add(linalg::IndexOp::create(nb, nl, 2), qStart), shift);
        Value key = im.add(linalg::IndexOp::create(nb, nl, 3), kvStart);
        yieldValue(
            nb, nl,
            arith::SelectOp::create(nb, nl, im.sle(key, row), args[0], zero));
      });
  // Loops (b, h, i, e, j) and (b, h, i, j).
  Value newNumerator = generic(
      {block, values}, numerator,
      {map(5, {0, 1, 2, 4}), map(5, {0, 1, 4, 3}), map(5, {0, 1, 2, 3})}, 1,
      [&](OpBuilder &nb, Location nl, ValueRange args) {
        yieldValue(nb, nl, multiplyAdd(nb, nl, args[0], args[1], args[2]));
      });
  Value newDenominator = generic(
      {block}, denominator, {map(4, {0, 1, 2, 3}), map(4, {0, 1, 2})}, 1,
      [&](OpBuilder &nb, Location nl, ValueRange args) {
        yieldValue(nb, nl, arith::AddFOp::create(nb, nl, args[0], args[1]));
      });
  return {newNumerator, newDenominator};
}

Value LinearAttentionLowering::normalizeInto(Value numerator, Value denominator,
                                             Value dest) {
  Type element = getElementTypeOrSelf(dest);
  AffineMap destMap = op.getLayout() == Layout::BHSD ? map(4, {0, 1, 2, 3})
                                                     : map(4, {0, 2, 1, 3});
  Value zero = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0.0f));
  return generic({numerator, denominator}, dest,
                 {map(4, {0, 1, 2, 3}), map(4, {0, 1, 2}), destMap}, 0,
                 [&](OpBuilder &nb, Location nl, ValueRange args) {
                   Value sawKey = arith::CmpFOp::create(
                       nb, nl, arith::CmpFPredicate::OGT, args[1], zero);
                   Value quotient = arith::SelectOp::create(
                       nb, nl, sawKey,
                       arith::DivFOp::create(nb, nl, args[0], args[1]), zero);
                   yieldValue(nb, nl, convertFloat(nb, nl, quotient, element));
                 });
}

Value LinearAttentionLowering::lower(int64_t chunkSize) {
  Layout layout = op.getLayout();
  int64_t headPos = getHeadDimPos(layout), seqPos = getSeqDimPos(layout);
  Value q = op.getQuery(), k = op.getKey(), v = op.getValue();
  batch = sizeValue(q, 0);
  qHeads = sizeValue(q, headPos);
  qLen = sizeValue(q, seqPos);
  kvLen = sizeValue(k, seqPos);
  headDim = sizeValue(q, 3);
  valueDim = sizeValue(v, 3);

  Value queries = gather(q, qLen, headDim, /*featureMap=*/true);
  Value keys = gather(k, kvLen, headDim, /*featureMap=*/true);
  Value values = gather(v, kvLen, valueDim, /*featureMap=*/false);
  Value state = zeros({batch, qHeads, headDim, valueDim});
  Value normalizer = zeros({batch, qHeads, headDim});

  auto causal = op.getStructuredMaskAttr();
  Value zero = m.constant(0);
  Value step = m.constant(chunkSize);
  auto slice = [&](Value tensor, Value start, Value count) -> Value {
    SmallVector<OpFoldResult> offsets = {b.getIndexAttr(0), b.getIndexAttr(0),
                                         start, b.getIndexAttr(0)};
    SmallVector<OpFoldResult> sizes = {batch, qHeads, count, size(tensor, 3)};
    return tensor::ExtractSliceOp::create(
        b, loc, tensor, offsets, sizes,
        SmallVector<OpFoldResult>(4, b.getIndexAttr(1)));
  };

  if (!causal) {
    // The state over key chunks: each chunk's keys stay in cache while its
    // outer products accumulate.
    auto keyLoop = scf::ForOp::create(
        b, loc, zero, kvLen, step, ValueRange{state, normalizer},
        [&](OpBuilder &lb, Location ll, Value chunk, ValueRange carried) {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPoint(lb.getInsertionBlock(), lb.getInsertionPoint());
          Value count =
              arith::MinSIOp::create(b, loc, step, m.sub(kvLen, chunk));
          auto [newState, newNormalizer] =
              addKeys(carried[0], carried[1], slice(keys, chunk, count),
                      slice(values, chunk, count));
          scf::YieldOp::create(b, loc, ValueRange{newState, newNormalizer});
        });
    auto [numerator, denominator] =
        readState(queries, keyLoop.getResult(0), keyLoop.getResult(1));
    return normalizeInto(numerator, denominator, op.getInit());
  }

  // Row i sees keys j <= i + shift. Chunk [c, c + n) of the rows: keys below
  // c + shift are in the state, keys [c + shift, c + n + shift) form its
  // masked block (both clamped to [0, Sk)).
  Value shift = m.shift(causal.getAlignment(), {qLen, kvLen});
  auto clampKey = [&](Value key) {
    return arith::MinSIOp::create(
        b, loc, arith::MaxSIOp::create(b, loc, key, zero), kvLen);
  };
  // Keys before the first chunk's block (bottom-right with Sk > Sq).
  if (causal.getAlignment() == Alignment::BottomRight) {
    Value firstBlock = clampKey(shift);
    std::tie(state, normalizer) =
        addKeys(state, normalizer, slice(keys, zero, firstBlock),
                slice(values, zero, firstBlock));
  }

  auto loop = scf::ForOp::create(
      b, loc, zero, qLen, step, ValueRange{op.getInit(), state, normalizer},
      [&](OpBuilder &lb, Location ll, Value chunk, ValueRange carried) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPoint(lb.getInsertionBlock(), lb.getInsertionPoint());
        Value rows = arith::MinSIOp::create(b, loc, step, m.sub(qLen, chunk));
        Value blockStart = clampKey(m.add(chunk, shift));
        Value blockEnd = clampKey(m.add(m.add(chunk, rows), shift));
        Value blockKeys = m.sub(blockEnd, blockStart);
        Value chunkQueries = slice(queries, chunk, rows);
        Value chunkKeys = slice(keys, blockStart, blockKeys);
        Value chunkValues = slice(values, blockStart, blockKeys);

        auto [numerator, denominator] =
            readState(chunkQueries, carried[1], carried[2]);
        std::tie(numerator, denominator) =
            addMaskedBlock(numerator, denominator, chunkQueries, chunkKeys,
                           chunkValues, chunk, blockStart, shift);
        // The chunk's rows of init, in its layout.
        SmallVector<OpFoldResult> offsets(4, b.getIndexAttr(0));
        SmallVector<OpFoldResult> sizes =
            tensor::getMixedSizes(b, loc, carried[0]);
        offsets[seqPos] = chunk;
        sizes[seqPos] = rows;
        SmallVector<OpFoldResult> strides(4, b.getIndexAttr(1));
        Value dest = tensor::ExtractSliceOp::create(b, loc, carried[0], offsets,
                                                    sizes, strides);
        Value written = normalizeInto(numerator, denominator, dest);
        Value inserted = tensor::InsertSliceOp::create(
            b, loc, written, carried[0], offsets, sizes, strides);
        auto [newState, newNormalizer] =
            addKeys(carried[1], carried[2], chunkKeys, chunkValues);
        scf::YieldOp::create(b, loc,
                             ValueRange{inserted, newState, newNormalizer});
      });
  return loop.getResult(0);
}

FailureOr<Value> mlir::attn::lowerLinearAttention(RewriterBase &rewriter,
                                                  LinearAttentionOp op,
                                                  int64_t chunkSize) {
  if (chunkSize <= 0)
    return rewriter.notifyMatchFailure(op, "chunk size must be positive");
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(op);
  Value result = LinearAttentionLowering(rewriter, op).lower(chunkSize);
  rewriter.replaceOp(op, result);
  return result;
}

namespace {
struct LowerLinearAttentionPass
    : attn::impl::LowerLinearAttentionBase<LowerLinearAttentionPass> {
  using Base::Base;

  void runOnOperation() override {
    if (chunkSize <= 0) {
      getOperation()->emitError()
          << "attn-lower-linear-attention: chunk-size must be positive, got "
          << static_cast<int64_t>(chunkSize);
      return signalPassFailure();
    }
    IRRewriter rewriter(&getContext());
    SmallVector<LinearAttentionOp> ops;
    getOperation()->walk([&](LinearAttentionOp op) { ops.push_back(op); });
    for (LinearAttentionOp op : ops)
      if (failed(lowerLinearAttention(rewriter, op, chunkSize)))
        return signalPassFailure();
  }
};
} // namespace
