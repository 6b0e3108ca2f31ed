//===- DecomposeAttention.cpp - naive linalg lowering of attn.attention ---===//
//
// Part of the attn project: an MLIR compiler for attention.
//
// The reference lowering: it materializes the whole score matrix and runs
// each step of attention as its own linalg.generic, in f32.
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
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/TypeUtilities.h"

#include <cmath>
#include <limits>

namespace mlir::attn {
#define GEN_PASS_DEF_DECOMPOSEATTENTION
#include "attn/Transforms/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

/// The log-sum-exp of a row from its running max and sum:
/// max + log(sum), or -inf for a row that saw no key (sum = 0).
static Value logSumExp(OpBuilder &b, Location loc, Value max, Value sum) {
  Value zero = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0.0f));
  Value negInf = arith::ConstantOp::create(
      b, loc, b.getF32FloatAttr(-std::numeric_limits<float>::infinity()));
  Value positive =
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, sum, zero);
  Value lse =
      arith::AddFOp::create(b, loc, max, math::LogOp::create(b, loc, sum));
  return arith::SelectOp::create(b, loc, positive, lse, negInf);
}

namespace {
/// Loop dimensions shared by every generic below. Query heads are split as
/// h = hk * G + g, so GQA needs no non-trivial indexing map.
enum Loop : unsigned { kB, kHk, kG, kI, kJ };

/// Builds the generics of one decomposition of attn.attention or
/// attn.online_attention (OpTy); holds the sizes they share.
template <typename OpTy>
class AttentionDecomposer {
public:
  AttentionDecomposer(RewriterBase &rewriter, OpTy op)
      : b(rewriter), op(op), loc(op.getLoc()), ctx(op.getContext()),
        f32(b.getF32Type()), bhsd(op.getLayout() == Layout::BHSD) {}

  /// attn.attention: the whole softmax; returns the result.
  SmallVector<Value> runAttention();
  /// attn.online_attention: folds this tile into the running statistics;
  /// returns the new (acc, max, sum).
  SmallVector<Value> runOnline();

private:
  OpFoldResult size(Value v, int64_t dim) {
    return tensor::getMixedSize(b, loc, v, dim);
  }
  Value sizeValue(OpFoldResult ofr) {
    return getValueOrCreateConstantIndexOp(b, loc, ofr);
  }
  /// Position of the head and sequence dimension in a [B, ?, ?, F] tensor.
  int64_t headPos() { return getHeadDimPos(op.getLayout()); }
  int64_t seqPos() { return getSeqDimPos(op.getLayout()); }

  /// Splits the head dimension (at `pos`) of `value` into [Hkv, G].
  Value splitHeads(Value value, int64_t pos);
  /// Map from loops (b, hk, g, i, [j|e], ...) to a split [B, ?, ?, ?, F]
  /// tensor in the op's layout.
  AffineMap splitTensorMap(unsigned numLoops, unsigned featureLoop);
  /// Map from loops to a [B, Hkv, S, F] tensor (K or V) in the op's layout.
  AffineMap kvTensorMap(unsigned numLoops, unsigned seqLoop,
                        unsigned featureLoop);
  /// Prepares a mask or bias tensor broadcast to [B, Hq, Sq, Sk]: splits its
  /// head dimension when it is not broadcast, and returns its indexing map
  /// over the (b, hk, g, i, j) loops.
  std::pair<Value, AffineMap> broadcastOperand(Value value);

  Value emptyF32(ArrayRef<OpFoldResult> sizes) {
    return tensor::EmptyOp::create(b, loc, sizes, f32);
  }
  Value filled(ArrayRef<OpFoldResult> sizes, double value) {
    Value cst = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(value));
    return linalg::FillOp::create(b, loc, cst, emptyF32(sizes)).getResult(0);
  }
  Value generic(ValueRange inputs, Value init, ArrayRef<AffineMap> maps,
                unsigned numReductions,
                function_ref<void(OpBuilder &, Location, ValueRange)> body) {
    return createGeneric(b, loc, inputs, init, maps, numReductions, body);
  }
  /// Sums may be reassociated and multiply-adds contracted: the order of a
  /// softmax's sums is not part of its meaning, and LLVM needs this to
  /// vectorize reductions and form FMAs.
  arith::FastMathFlagsAttr reassociable() {
    return arith::FastMathFlagsAttr::get(
        ctx, arith::FastMathFlags::reassoc | arith::FastMathFlags::contract);
  }
  AffineMap loopsMap(unsigned numLoops, ArrayRef<unsigned> loops) {
    return getLoopsMap(ctx, numLoops, loops);
  }

  /// Copies key/value head `h / groupCount` to head h, for `qHeads` heads.
  Value replicateKvHeads(Value kv, OpFoldResult qHeads, Value groupCount);
  Value scaledScores();
  Value maskedScores(Value scores);
  Value rowMax(Value scores);
  Value weights(Value scores, Value max);
  Value accumulateRowSum(Value probs, Value init);
  Value accumulatePV(Value probs, Value init, bool initInLayout);
  /// Collapses split heads back into `type` ([B, H, S, F] in the layout, or
  /// [B, H, S]).
  Value mergeHeads(Value split, Type type);
  Value constantF32(float value) {
    return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(value));
  }
  Value scaleValue() { return createScale(b, loc, op.getScale(), headDim); }

  /// Sizes, head groups and positions every decomposition needs.
  void prepare();
  /// The masked scores of this op's keys: scale, score_mod, bias, masks.
  Value scores() { return maskedScores(scaledScores()); }
  /// Splits the head dimension of a [B, Hq, Sq] row statistic.
  Value splitRowHeads(Value stat) { return splitHeads(stat, 1); }
  /// Index `local` of loop `l` in whole-problem coordinates.
  Value absolute(OpBuilder &nb, Location nl, Value local, Value offset) {
    return offset ? arith::AddIOp::create(nb, nl, local, offset).getResult()
                  : local;
  }

  RewriterBase &b;
  OpTy op;
  Location loc;
  MLIRContext *ctx;
  Type f32;
  bool bhsd;
  OpFoldResult batch, kvHeads, groups, qLen, kvLen, headDim, valueDim;
  /// K and V as the generics read them (with replicated heads when the group
  /// count is dynamic).
  Value key, value;
  /// Where this op's tile starts in the whole problem (null: at 0), and the
  /// whole sequence lengths that bottom-right alignment measures against.
  Value batchOffset, headOffset, qOffset, kvOffset, wholeQLen, wholeKvLen;
};
} // namespace

template <typename OpTy>
Value AttentionDecomposer<OpTy>::splitHeads(Value value, int64_t pos) {
  auto type = cast<RankedTensorType>(value.getType());
  SmallVector<int64_t> shape;
  SmallVector<OpFoldResult> outputShape;
  SmallVector<ReassociationIndices> reassociation;
  for (int64_t d = 0; d < type.getRank(); ++d) {
    int64_t next = static_cast<int64_t>(shape.size());
    if (d != pos) {
      reassociation.push_back({next});
      shape.push_back(type.getDimSize(d));
      outputShape.push_back(size(value, d));
      continue;
    }
    reassociation.push_back({next, next + 1});
    for (OpFoldResult part : {kvHeads, groups}) {
      std::optional<int64_t> c = getConstantIntValue(part);
      shape.push_back(c ? *c : ShapedType::kDynamic);
      outputShape.push_back(part);
    }
  }
  auto resultType = RankedTensorType::get(shape, type.getElementType());
  return tensor::ExpandShapeOp::create(b, loc, resultType, value, reassociation,
                                       outputShape);
}

template <typename OpTy>
AffineMap AttentionDecomposer<OpTy>::splitTensorMap(unsigned numLoops,
                                                    unsigned featureLoop) {
  if (bhsd)
    return loopsMap(numLoops, {kB, kHk, kG, kI, featureLoop});
  return loopsMap(numLoops, {kB, kI, kHk, kG, featureLoop});
}

template <typename OpTy>
AffineMap AttentionDecomposer<OpTy>::kvTensorMap(unsigned numLoops,
                                                 unsigned seqLoop,
                                                 unsigned featureLoop) {
  if (bhsd)
    return loopsMap(numLoops, {kB, kHk, seqLoop, featureLoop});
  return loopsMap(numLoops, {kB, seqLoop, kHk, featureLoop});
}

template <typename OpTy>
std::pair<Value, AffineMap>
AttentionDecomposer<OpTy>::broadcastOperand(Value value) {
  auto type = cast<RankedTensorType>(value.getType());
  int64_t rank = type.getRank();
  int64_t offset = 4 - rank; // Right-aligned against [B, Hq, Sq, Sk].
  // A dimension is broadcast only when it is statically 1.
  auto isBroadcast = [&](int64_t d) { return type.getDimSize(d) == 1; };
  int64_t headDimPos = 1 - offset;
  bool splitHead = headDimPos >= 0 && !isBroadcast(headDimPos);
  if (splitHead)
    value = splitHeads(value, headDimPos);

  static const unsigned logicalLoops[4] = {kB, kHk, kI, kJ};
  SmallVector<AffineExpr> exprs;
  for (int64_t d = 0; d < rank; ++d) {
    if (isBroadcast(d)) {
      exprs.push_back(b.getAffineConstantExpr(0));
      continue;
    }
    exprs.push_back(b.getAffineDimExpr(logicalLoops[d + offset]));
    if (d == headDimPos)
      exprs.push_back(b.getAffineDimExpr(kG));
  }
  return {value, AffineMap::get(kJ + 1, 0, exprs, ctx)};
}

template <typename OpTy>
Value AttentionDecomposer<OpTy>::replicateKvHeads(Value kv, OpFoldResult qHeads,
                                                  Value groupCount) {
  auto type = cast<RankedTensorType>(kv.getType());
  SmallVector<OpFoldResult> sizes;
  for (int64_t d = 0; d < 4; ++d)
    sizes.push_back(d == headPos() ? qHeads : size(kv, d));
  Value init = tensor::EmptyOp::create(b, loc, sizes, type.getElementType());
  AffineMap identity = b.getMultiDimIdentityMap(4);
  return generic(
      {}, init, {identity}, 0, [&](OpBuilder &nb, Location nl, ValueRange) {
        SmallVector<Value> idx;
        for (unsigned d = 0; d < 4; ++d)
          idx.push_back(linalg::IndexOp::create(nb, nl, d));
        idx[headPos()] =
            arith::DivUIOp::create(nb, nl, idx[headPos()], groupCount);
        linalg::YieldOp::create(
            nb, nl, ValueRange{tensor::ExtractOp::create(nb, nl, kv, idx)});
      });
}

/// S[b, hk, g, i, j] = sum_d q[b, h, i, d] * k[b, hk, j, d], in f32; for a
/// Gaussian similarity sum_d k (q - k / 2), the dot product less half the
/// key's squared norm; for an additive one sum_d w[h, d] tanh(q + k).
template <typename OpTy>
Value AttentionDecomposer<OpTy>::scaledScores() {
  bool gaussian = op.getSimilarity() == Similarity::Gaussian;
  Value weight = op.getAdditiveWeight();
  Value groupCount = weight ? sizeValue(groups) : Value();
  Value q = splitHeads(op.getQuery(), headPos());
  enum { kD = kJ + 1, kNumLoops };
  SmallVector<AffineMap> maps = {splitTensorMap(kNumLoops, kD),
                                 kvTensorMap(kNumLoops, kJ, kD),
                                 loopsMap(kNumLoops, {kB, kHk, kG, kI, kJ})};
  Value init = filled({batch, kvHeads, groups, qLen, kvLen}, 0.0);
  return generic(
      {q, key}, init, maps, /*numReductions=*/1,
      [&](OpBuilder &nb, Location nl, ValueRange args) {
        Value qv = convertFloat(nb, nl, args[0], f32);
        Value kv = convertFloat(nb, nl, args[1], f32);
        if (gaussian)
          qv = arith::SubFOp::create(
              nb, nl, qv,
              arith::MulFOp::create(
                  nb, nl, kv,
                  arith::ConstantOp::create(nb, nl, nb.getF32FloatAttr(0.5))));
        if (weight) {
          // w[h, d] tanh(q + k), h in whole-problem numbering.
          Value h = arith::AddIOp::create(
              nb, nl,
              arith::MulIOp::create(
                  nb, nl, linalg::IndexOp::create(nb, nl, kHk), groupCount),
              linalg::IndexOp::create(nb, nl, kG));
          Value w = tensor::ExtractOp::create(
              nb, nl, weight,
              ValueRange{absolute(nb, nl, h, headOffset),
                         linalg::IndexOp::create(nb, nl, kD)});
          qv = math::TanhOp::create(nb, nl,
                                    arith::AddFOp::create(nb, nl, qv, kv));
          kv = w;
        }
        Value prod = arith::MulFOp::create(nb, nl, qv, kv, reassociable());
        linalg::YieldOp::create(nb, nl,
                                ValueRange{arith::AddFOp::create(
                                    nb, nl, prod, args[2], reassociable())});
      });
}

/// Applies scale, score_mod, bias and every mask; hidden keys become -inf.
template <typename OpTy>
Value AttentionDecomposer<OpTy>::maskedScores(Value scores) {
  unsigned numLoops = kJ + 1;
  AffineMap identity = b.getMultiDimIdentityMap(numLoops);
  SmallVector<Value> inputs = {scores};
  SmallVector<AffineMap> maps = {identity};
  int64_t biasArg = -1, maskArg = -1, lensArg = -1;
  for (auto [value, arg] : {std::pair<Value, int64_t *>{op.getBias(), &biasArg},
                            {op.getMask(), &maskArg}}) {
    if (!value)
      continue;
    auto [operand, map] = broadcastOperand(value);
    *arg = inputs.size();
    inputs.push_back(operand);
    maps.push_back(map);
  }
  if (Value lens = op.getKvLens()) {
    lensArg = inputs.size();
    inputs.push_back(lens);
    maps.push_back(loopsMap(numLoops, {kB}));
  }
  maps.push_back(identity);

  Value scale = scaleValue();
  Value groupCount = sizeValue(groups);
  Value negInf = arith::ConstantOp::create(
      b, loc, b.getF32FloatAttr(-std::numeric_limits<float>::infinity()));
  Region &scoreMod = op.getScoreMod(), &maskMod = op.getMaskMod();

  return generic(
      inputs, emptyF32({batch, kvHeads, groups, qLen, kvLen}), maps, 0,
      [&](OpBuilder &nb, Location nl, ValueRange args) {
        SmallVector<Value> idx;
        for (unsigned l = 0; l < numLoops; ++l)
          idx.push_back(linalg::IndexOp::create(nb, nl, l));
        // Whole-problem positions, with the query head in the user's
        // numbering, for the masks and the regions.
        Value h = arith::AddIOp::create(
            nb, nl, arith::MulIOp::create(nb, nl, idx[kHk], groupCount),
            idx[kG]);
        Value bAbs = absolute(nb, nl, idx[kB], batchOffset);
        Value hAbs = absolute(nb, nl, h, headOffset);
        Value iAbs = absolute(nb, nl, idx[kI], qOffset);
        Value jAbs = absolute(nb, nl, idx[kJ], kvOffset);
        Value s = arith::MulFOp::create(nb, nl, args[0], scale);
        if (!scoreMod.empty())
          s = inlineRegion(nb, scoreMod, {s, bAbs, hAbs, iAbs, jAbs});
        if (biasArg >= 0)
          s = arith::AddFOp::create(nb, nl, s,
                                    convertFloat(nb, nl, args[biasArg], f32));
        if (Value table = op.getRelBias())
          s = arith::AddFOp::create(
              nb, nl, s,
              tensor::ExtractOp::create(
                  nb, nl, table,
                  ValueRange{hAbs, buildRelPosBucket(nb, nl, op.getRelposAttr(),
                                                     iAbs, jAbs)}));

        Value visible = arith::ConstantIntOp::create(nb, nl, 1, 1);
        auto hideUnless = [&](Value cond) {
          visible = arith::AndIOp::create(nb, nl, visible, cond);
        };
        if (StructuredMaskAttrInterface mask = op.getStructuredMaskAttr())
          hideUnless(buildMaskVisible(nb, nl, mask, iAbs, jAbs, wholeQLen,
                                      wholeKvLen));
        if (maskArg >= 0)
          hideUnless(args[maskArg]);
        if (lensArg >= 0) {
          Value len = arith::IndexCastOp::create(nb, nl, nb.getIndexType(),
                                                 args[lensArg]);
          hideUnless(arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::slt,
                                           jAbs, len));
        }
        if (Value spans = op.getSpans()) {
          // j >= i - spans[h].
          Value span = arith::IndexCastOp::create(
              nb, nl, nb.getIndexType(),
              tensor::ExtractOp::create(nb, nl, spans, ValueRange{hAbs}));
          hideUnless(
              arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::sge, jAbs,
                                    arith::SubIOp::create(nb, nl, iAbs, span)));
        }
        if (!maskMod.empty())
          hideUnless(inlineRegion(nb, maskMod, {bAbs, hAbs, iAbs, jAbs}));
        if (Value blockMask = op.getBlockMask())
          visible =
              buildBlockMaskVisible(nb, nl, blockMask, *op.getBlockSizes(),
                                    {bAbs, hAbs, iAbs, jAbs}, visible);
        linalg::YieldOp::create(
            nb, nl,
            ValueRange{arith::SelectOp::create(nb, nl, visible, s, negInf)});
      });
}

template <typename OpTy>
void AttentionDecomposer<OpTy>::prepare() {
  Value q = op.getQuery(), k = op.getKey(), v = op.getValue();
  batch = size(q, 0);
  qLen = size(q, seqPos());
  kvLen = size(k, seqPos());
  kvHeads = size(k, headPos());
  headDim = size(q, 3);
  valueDim = size(v, 3);
  OpFoldResult qHeads = size(q, headPos());
  std::optional<int64_t> hq = getConstantIntValue(qHeads);
  std::optional<int64_t> hkv = getConstantIntValue(kvHeads);
  if (hq && hkv) {
    groups = b.getIndexAttr(*hq / *hkv);
  } else {
    // A dynamic group count would need expand_shape groups with two dynamic
    // sizes, which memref lowering in MLIR 22 cannot handle
    // (expand-strided-metadata crashes). Give each query head its own copy
    // of its key/value head instead: G = 1.
    Value groupCount =
        arith::DivUIOp::create(b, loc, sizeValue(qHeads), sizeValue(kvHeads));
    k = replicateKvHeads(k, qHeads, groupCount);
    v = replicateKvHeads(v, qHeads, groupCount);
    kvHeads = qHeads;
    groups = b.getIndexAttr(1);
  }
  key = k;
  value = v;

  wholeQLen = sizeValue(qLen);
  wholeKvLen = sizeValue(kvLen);
  if (!op.getOffsets().empty()) {
    batchOffset = op.getOffsets()[0];
    headOffset = op.getOffsets()[1];
    qOffset = op.getOffsets()[2];
    kvOffset = op.getOffsets()[3];
  }
  if (!op.getExtents().empty()) {
    wholeQLen = op.getExtents()[0];
    wholeKvLen = op.getExtents()[1];
  }
}

/// Row max over keys: -inf for a row whose keys are all hidden.
template <typename OpTy>
Value AttentionDecomposer<OpTy>::rowMax(Value scores) {
  unsigned n = kJ + 1;
  return generic(scores,
                 filled({batch, kvHeads, groups, qLen},
                        -std::numeric_limits<double>::infinity()),
                 {b.getMultiDimIdentityMap(n), loopsMap(n, {kB, kHk, kG, kI})},
                 1, [&](OpBuilder &nb, Location nl, ValueRange args) {
                   linalg::YieldOp::create(nb, nl,
                                           ValueRange{arith::MaximumFOp::create(
                                               nb, nl, args[0], args[1])});
                 });
}

/// P = exp(S - M), and 0 instead of exp(-inf - -inf) = NaN for a row whose
/// keys are all hidden.
template <typename OpTy>
Value AttentionDecomposer<OpTy>::weights(Value scores, Value max) {
  unsigned n = kJ + 1;
  AffineMap full = b.getMultiDimIdentityMap(n);
  Value negInf = constantF32(-std::numeric_limits<float>::infinity());
  Value zero = constantF32(0.0f);
  return generic({scores, max}, emptyF32({batch, kvHeads, groups, qLen, kvLen}),
                 {full, loopsMap(n, {kB, kHk, kG, kI}), full}, 0,
                 [&](OpBuilder &nb, Location nl, ValueRange args) {
                   Value diff = arith::SubFOp::create(nb, nl, args[0], args[1]);
                   Value e = math::ExpOp::create(nb, nl, diff);
                   Value empty = arith::CmpFOp::create(
                       nb, nl, arith::CmpFPredicate::OEQ, args[1], negInf);
                   linalg::YieldOp::create(nb, nl,
                                           ValueRange{arith::SelectOp::create(
                                               nb, nl, empty, zero, e)});
                 });
}

/// init + sum_j P, per row.
template <typename OpTy>
Value AttentionDecomposer<OpTy>::accumulateRowSum(Value probs, Value init) {
  unsigned n = kJ + 1;
  return generic(probs, init,
                 {b.getMultiDimIdentityMap(n), loopsMap(n, {kB, kHk, kG, kI})},
                 1, [&](OpBuilder &nb, Location nl, ValueRange args) {
                   linalg::YieldOp::create(
                       nb, nl,
                       ValueRange{arith::AddFOp::create(
                           nb, nl, args[0], args[1], reassociable())});
                 });
}

/// init + P V, where `init` is [B, Hkv, G, Sq, Dv] (canonical) or, with
/// `initInLayout`, split in the op's layout.
template <typename OpTy>
Value AttentionDecomposer<OpTy>::accumulatePV(Value probs, Value init,
                                              bool initInLayout) {
  enum { kE = kJ, kJ2 = kJ + 1, kPvLoops };
  return generic(
      {probs, value}, init,
      {loopsMap(kPvLoops, {kB, kHk, kG, kI, kJ2}),
       kvTensorMap(kPvLoops, kJ2, kE),
       initInLayout ? splitTensorMap(kPvLoops, kE)
                    : loopsMap(kPvLoops, {kB, kHk, kG, kI, kE})},
      1, [&](OpBuilder &nb, Location nl, ValueRange args) {
        Value vv = convertFloat(nb, nl, args[1], f32);
        Value prod = arith::MulFOp::create(nb, nl, args[0], vv, reassociable());
        // A key the row does not see (p = 0) adds nothing, even a NaN or
        // Inf value.
        Value zero =
            arith::ConstantOp::create(nb, nl, nb.getF32FloatAttr(0.0f));
        Value seen = arith::CmpFOp::create(nb, nl, arith::CmpFPredicate::ONE,
                                           args[0], zero);
        prod = arith::SelectOp::create(nb, nl, seen, prod, zero);
        linalg::YieldOp::create(nb, nl,
                                ValueRange{arith::AddFOp::create(
                                    nb, nl, prod, args[2], reassociable())});
      });
}

template <typename OpTy>
Value AttentionDecomposer<OpTy>::mergeHeads(Value split, Type type) {
  SmallVector<ReassociationIndices> reassociation;
  int64_t rank = cast<ShapedType>(type).getRank();
  int64_t pos = rank == 3 ? 1 : headPos();
  for (int64_t d = 0, next = 0; d < rank; ++d) {
    if (d == pos) {
      reassociation.push_back({next, next + 1});
      next += 2;
    } else {
      reassociation.push_back({next++});
    }
  }
  return tensor::CollapseShapeOp::create(b, loc, type, split, reassociation);
}

template <typename OpTy>
SmallVector<Value> AttentionDecomposer<OpTy>::runAttention() {
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(op);
  prepare();
  Value s = scores();
  Value max = rowMax(s);
  Value probs = weights(s, max);
  Value sum =
      accumulateRowSum(probs, filled({batch, kvHeads, groups, qLen}, 0));
  Value weighted =
      accumulatePV(probs, filled({batch, kvHeads, groups, qLen, valueDim}, 0.0),
                   /*initInLayout=*/false);

  // out = L > 0 ? O / L : 0, in the layout and element type of init.
  Value init = splitHeads(op.getInit(), headPos());
  Type outType = getElementTypeOrSelf(init);
  Value zero = constantF32(0.0f);
  Value out =
      generic({weighted, sum}, init,
              {b.getMultiDimIdentityMap(5), loopsMap(5, {kB, kHk, kG, kI}),
               splitTensorMap(5, kJ)},
              0, [&](OpBuilder &nb, Location nl, ValueRange args) {
                Value positive = arith::CmpFOp::create(
                    nb, nl, arith::CmpFPredicate::OGT, args[1], zero);
                Value quotient =
                    arith::DivFOp::create(nb, nl, args[0], args[1]);
                Value result =
                    arith::SelectOp::create(nb, nl, positive, quotient, zero);
                linalg::YieldOp::create(
                    nb, nl, ValueRange{convertFloat(nb, nl, result, outType)});
              });
  SmallVector<Value> results = {mergeHeads(out, op.getInit().getType())};
  if (Value lseInit = op.getLseInit()) {
    AffineMap row = b.getMultiDimIdentityMap(4);
    Value lse =
        generic({max, sum}, splitRowHeads(lseInit), {row, row, row}, 0,
                [&](OpBuilder &nb, Location nl, ValueRange args) {
                  linalg::YieldOp::create(
                      nb, nl, ValueRange{logSumExp(nb, nl, args[0], args[1])});
                });
    results.push_back(mergeHeads(lse, lseInit.getType()));
  }
  return results;
}

template <typename OpTy>
SmallVector<Value> AttentionDecomposer<OpTy>::runOnline() {
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(op);
  prepare();
  Value s = scores();
  Value tileMax = rowMax(s);
  Value oldMax = splitRowHeads(op.getMax());
  Value oldSum = splitRowHeads(op.getSum());
  Value oldAcc = splitHeads(op.getAcc(), headPos());

  // max' = max(max, tile max); the old statistics shrink by
  // exp(max - max'), which is 0 (not NaN) while every key so far is hidden.
  unsigned rowLoops = 4;
  AffineMap row = b.getMultiDimIdentityMap(rowLoops);
  Value negInf = constantF32(-std::numeric_limits<float>::infinity());
  Value zero = constantF32(0.0f);
  Value correction = generic(
      {tileMax, oldMax}, emptyF32({batch, kvHeads, groups, qLen}),
      {row, row, row}, 0, [&](OpBuilder &nb, Location nl, ValueRange args) {
        Value newMax = arith::MaximumFOp::create(nb, nl, args[0], args[1]);
        Value e = math::ExpOp::create(
            nb, nl, arith::SubFOp::create(nb, nl, args[1], newMax));
        Value empty = arith::CmpFOp::create(nb, nl, arith::CmpFPredicate::OEQ,
                                            newMax, negInf);
        linalg::YieldOp::create(
            nb, nl,
            ValueRange{arith::SelectOp::create(nb, nl, empty, zero, e)});
      });
  Value newMax = generic(
      {tileMax, oldMax}, oldMax, {row, row, row}, 0,
      [&](OpBuilder &nb, Location nl, ValueRange args) {
        linalg::YieldOp::create(
            nb, nl,
            ValueRange{arith::MaximumFOp::create(nb, nl, args[0], args[1])});
      });
  auto rescale = [&](OpBuilder &nb, Location nl, ValueRange args) {
    linalg::YieldOp::create(
        nb, nl, ValueRange{arith::MulFOp::create(nb, nl, args[0], args[1])});
  };
  Value probs = weights(s, newMax);
  Value sum = accumulateRowSum(probs, generic({oldSum, correction}, oldSum,
                                              {row, row, row}, 0, rescale));
  // Loops in acc's own dimension order: bufferization updates a tensor in
  // place only when it is read and written through identity maps.
  AffineMap accIdentity = b.getMultiDimIdentityMap(5);
  AffineMap accRow =
      bhsd ? loopsMap(5, {0, 1, 2, 3}) : loopsMap(5, {0, 2, 3, 1});
  Value scaledAcc = generic({oldAcc, correction}, oldAcc,
                            {accIdentity, accRow, accIdentity}, 0, rescale);
  Value acc = accumulatePV(probs, scaledAcc, /*initInLayout=*/true);
  return {mergeHeads(acc, op.getAcc().getType()),
          mergeHeads(newMax, op.getMax().getType()),
          mergeHeads(sum, op.getSum().getType())};
}

FailureOr<SmallVector<Value>>
mlir::attn::decomposeAttention(RewriterBase &rewriter, AttentionOp op) {
  SmallVector<Value> results =
      AttentionDecomposer<AttentionOp>(rewriter, op).runAttention();
  rewriter.replaceOp(op, results);
  return results;
}

FailureOr<SmallVector<Value>>
mlir::attn::decomposeOnlineAttention(RewriterBase &rewriter,
                                     OnlineAttentionOp op) {
  SmallVector<Value> results =
      AttentionDecomposer<OnlineAttentionOp>(rewriter, op).runOnline();
  rewriter.replaceOp(op, results);
  return results;
}

FailureOr<SmallVector<Value>>
mlir::attn::decomposeFinalizeOnlineAttention(RewriterBase &rewriter,
                                             FinalizeOnlineAttentionOp op) {
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(op);
  Location loc = op.getLoc();
  MLIRContext *ctx = op.getContext();
  // acc and out are [B, H, S, Dv] or [B, S, H, Dv]; sum is [B, H, S].
  AffineExpr d0, d1, d2;
  bindDims(ctx, d0, d1, d2);
  AffineMap sumMap = op.getLayout() == Layout::BHSD
                         ? AffineMap::get(4, 0, {d0, d1, d2}, ctx)
                         : AffineMap::get(4, 0, {d0, d2, d1}, ctx);
  AffineMap identity = rewriter.getMultiDimIdentityMap(4);
  Type outType = getElementTypeOrSelf(op.getInit());
  Value zero =
      arith::ConstantOp::create(rewriter, loc, rewriter.getF32FloatAttr(0.0f));
  auto generic = linalg::GenericOp::create(
      rewriter, loc, op.getInit().getType(),
      ValueRange{op.getAcc(), op.getSum()}, op.getInit(),
      ArrayRef<AffineMap>{identity, sumMap, identity},
      SmallVector<utils::IteratorType>(4, utils::IteratorType::parallel),
      [&](OpBuilder &nb, Location nl, ValueRange args) {
        Value positive = arith::CmpFOp::create(
            nb, nl, arith::CmpFPredicate::OGT, args[1], zero);
        Value quotient = arith::DivFOp::create(nb, nl, args[0], args[1]);
        Value result =
            arith::SelectOp::create(nb, nl, positive, quotient, zero);
        linalg::YieldOp::create(
            nb, nl, ValueRange{convertFloat(nb, nl, result, outType)});
      });
  SmallVector<Value> results = {generic.getResult(0)};
  if (Value lseInit = op.getLseInit()) {
    AffineMap row = rewriter.getMultiDimIdentityMap(3);
    auto lse = linalg::GenericOp::create(
        rewriter, loc, lseInit.getType(), ValueRange{op.getMax(), op.getSum()},
        lseInit, ArrayRef<AffineMap>{row, row, row},
        SmallVector<utils::IteratorType>(3, utils::IteratorType::parallel),
        [&](OpBuilder &nb, Location nl, ValueRange args) {
          linalg::YieldOp::create(
              nb, nl, ValueRange{logSumExp(nb, nl, args[0], args[1])});
        });
    results.push_back(lse.getResult(0));
  }
  rewriter.replaceOp(op, results);
  return results;
}

namespace {
struct DecomposeAttentionPass
    : attn::impl::DecomposeAttentionBase<DecomposeAttentionPass> {
  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    WalkResult result = getOperation()->walk([&](Operation *op) -> WalkResult {
      LogicalResult decomposed = success();
      if (auto attention = dyn_cast<AttentionOp>(op))
        decomposed = decomposeAttention(rewriter, attention);
      else if (auto online = dyn_cast<OnlineAttentionOp>(op))
        decomposed = decomposeOnlineAttention(rewriter, online);
      else if (auto finalize = dyn_cast<FinalizeOnlineAttentionOp>(op))
        decomposed = decomposeFinalizeOnlineAttention(rewriter, finalize);
      return failed(decomposed) ? WalkResult::interrupt()
                                : WalkResult::advance();
    });
    if (result.wasInterrupted())
      return signalPassFailure();
    materializeBlockBitmapTables(getOperation());
  }
};
} // namespace
