//===- DecomposeAttention.cpp - naive linalg lowering of attn.attention ---===//
//
// Part of the attn project: an MLIR compiler for attention.
//
// The reference lowering: it materializes the whole score matrix and runs
// each step of attention as its own linalg.generic, in f32.
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
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/TypeUtilities.h"

#include <cmath>
#include <limits>

namespace mlir::attn {
#define GEN_PASS_DEF_DECOMPOSEATTENTION
#include "attn/Transforms/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

namespace {
/// Loop dimensions shared by every generic below. Query heads are split as
/// h = hk * G + g, so GQA needs no non-trivial indexing map.
enum Loop : unsigned { kB, kHk, kG, kI, kJ };

/// Builds the generics of one decomposition; holds the sizes they share.
class AttentionDecomposer {
public:
  AttentionDecomposer(RewriterBase &rewriter, AttentionOp op)
      : b(rewriter), op(op), loc(op.getLoc()), ctx(op.getContext()),
        f32(b.getF32Type()), bhsd(op.getLayout() == Layout::BHSD) {}

  Value run();

private:
  OpFoldResult size(Value v, int64_t dim) {
    return tensor::getMixedSize(b, loc, v, dim);
  }
  Value sizeValue(OpFoldResult ofr) {
    return getValueOrCreateConstantIndexOp(b, loc, ofr);
  }
  /// Position of the head and sequence dimension in a [B, ?, ?, F] tensor.
  int64_t headPos() const { return bhsd ? 1 : 2; }
  int64_t seqPos() const { return bhsd ? 2 : 1; }

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
    unsigned numLoops = maps.front().getNumDims();
    SmallVector<utils::IteratorType> iters(numLoops - numReductions,
                                           utils::IteratorType::parallel);
    iters.append(numReductions, utils::IteratorType::reduction);
    return linalg::GenericOp::create(b, loc, init.getType(), inputs, init, maps,
                                     iters, body)
        .getResult(0);
  }
  AffineMap loopsMap(unsigned numLoops, ArrayRef<unsigned> loops) {
    SmallVector<AffineExpr> exprs;
    for (unsigned l : loops)
      exprs.push_back(b.getAffineDimExpr(l));
    return AffineMap::get(numLoops, 0, exprs, ctx);
  }

  /// Copies key/value head `h / groupCount` to head h, for `qHeads` heads.
  Value replicateKvHeads(Value kv, OpFoldResult qHeads, Value groupCount);
  Value scaledScores();
  Value maskedScores(Value scores);
  Value scaleValue();
  Value isVisible(OpBuilder &nb, Location nl, ValueRange idx, Value shift);

  RewriterBase &b;
  AttentionOp op;
  Location loc;
  MLIRContext *ctx;
  Type f32;
  bool bhsd;
  OpFoldResult batch, kvHeads, groups, qLen, kvLen, headDim, valueDim;
  /// K and V as the generics read them (with replicated heads when the group
  /// count is dynamic).
  Value key, value;
};
} // namespace

Value AttentionDecomposer::splitHeads(Value value, int64_t pos) {
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

AffineMap AttentionDecomposer::splitTensorMap(unsigned numLoops,
                                              unsigned featureLoop) {
  if (bhsd)
    return loopsMap(numLoops, {kB, kHk, kG, kI, featureLoop});
  return loopsMap(numLoops, {kB, kI, kHk, kG, featureLoop});
}

AffineMap AttentionDecomposer::kvTensorMap(unsigned numLoops, unsigned seqLoop,
                                           unsigned featureLoop) {
  if (bhsd)
    return loopsMap(numLoops, {kB, kHk, seqLoop, featureLoop});
  return loopsMap(numLoops, {kB, seqLoop, kHk, featureLoop});
}

std::pair<Value, AffineMap> AttentionDecomposer::broadcastOperand(Value value) {
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

Value AttentionDecomposer::scaleValue() {
  if (std::optional<APFloat> scale = op.getScale())
    return arith::ConstantOp::create(
        b, loc, b.getF32FloatAttr(scale->convertToFloat()));
  if (std::optional<int64_t> d = getConstantIntValue(headDim))
    return arith::ConstantOp::create(
        b, loc, b.getF32FloatAttr(1.0 / std::sqrt(static_cast<double>(*d))));
  // Dynamic head dim: 1/sqrt(D) at run time.
  Value d =
      arith::IndexCastUIOp::create(b, loc, b.getI64Type(), sizeValue(headDim));
  Value df = arith::UIToFPOp::create(b, loc, f32, d);
  return math::RsqrtOp::create(b, loc, df);
}

Value AttentionDecomposer::replicateKvHeads(Value kv, OpFoldResult qHeads,
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

/// S[b, hk, g, i, j] = sum_d q[b, h, i, d] * k[b, hk, j, d], in f32.
Value AttentionDecomposer::scaledScores() {
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
        Value prod = arith::MulFOp::create(nb, nl, qv, kv);
        linalg::YieldOp::create(
            nb, nl, ValueRange{arith::AddFOp::create(nb, nl, prod, args[2])});
      });
}

/// Whether key `j` is visible to query `i` under the structured mask.
Value AttentionDecomposer::isVisible(OpBuilder &nb, Location nl, ValueRange idx,
                                     Value shift) {
  Value i = idx[kI], j = idx[kJ];
  auto pos = [&](Alignment alignment) {
    return alignment == Alignment::BottomRight
               ? arith::AddIOp::create(nb, nl, i, shift).getResult()
               : i;
  };
  auto sle = [&](Value lhs, Value rhs) {
    return arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::sle, lhs, rhs)
        .getResult();
  };
  auto offsetBy = [&](Value v, int64_t delta) {
    Value c = arith::ConstantIndexOp::create(nb, nl, delta);
    return arith::AddIOp::create(nb, nl, v, c).getResult();
  };
  StructuredMaskAttrInterface mask = op.getStructuredMaskAttr();
  if (auto causal = dyn_cast<CausalMaskAttr>(mask))
    return sle(j, pos(causal.getAlignment()));
  auto window = cast<SlidingWindowMaskAttr>(mask);
  Value p = pos(window.getAlignment());
  Value lo = sle(offsetBy(p, -window.getLeft()), j);
  Value hi = sle(j, offsetBy(p, window.getRight()));
  return arith::AndIOp::create(nb, nl, lo, hi);
}

/// Applies scale, score_mod, bias and every mask; hidden keys become -inf.
Value AttentionDecomposer::maskedScores(Value scores) {
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
  Value qLenV = sizeValue(qLen), kvLenV = sizeValue(kvLen);
  Value shift = arith::SubIOp::create(b, loc, kvLenV, qLenV);
  Value negInf = arith::ConstantOp::create(
      b, loc, b.getF32FloatAttr(-std::numeric_limits<float>::infinity()));
  Region &scoreMod = op.getScoreMod(), &maskMod = op.getMaskMod();

  return generic(
      inputs, emptyF32({batch, kvHeads, groups, qLen, kvLen}), maps, 0,
      [&](OpBuilder &nb, Location nl, ValueRange args) {
        SmallVector<Value> idx;
        for (unsigned l = 0; l < numLoops; ++l)
          idx.push_back(linalg::IndexOp::create(nb, nl, l));
        // The query head in the user's numbering, for the regions.
        Value h = arith::AddIOp::create(
            nb, nl, arith::MulIOp::create(nb, nl, idx[kHk], groupCount),
            idx[kG]);
        auto inlineRegion = [&](Region &region, ValueRange regionArgs) {
          IRMapping mapping;
          mapping.map(region.getArguments(), regionArgs);
          for (Operation &nested : region.front().without_terminator())
            nb.clone(nested, mapping);
          auto yield = cast<YieldOp>(region.front().getTerminator());
          return mapping.lookup(yield.getValues().front());
        };

        Value s = arith::MulFOp::create(nb, nl, args[0], scale);
        if (!scoreMod.empty())
          s = inlineRegion(scoreMod, {s, idx[kB], h, idx[kI], idx[kJ]});
        if (biasArg >= 0)
          s = arith::AddFOp::create(nb, nl, s,
                                    convertFloat(nb, nl, args[biasArg], f32));

        Value visible = arith::ConstantIntOp::create(nb, nl, 1, 1);
        auto hideUnless = [&](Value cond) {
          visible = arith::AndIOp::create(nb, nl, visible, cond);
        };
        if (op.getStructuredMaskAttr())
          hideUnless(isVisible(nb, nl, idx, shift));
        if (maskArg >= 0)
          hideUnless(args[maskArg]);
        if (lensArg >= 0) {
          Value len = arith::IndexCastOp::create(nb, nl, nb.getIndexType(),
                                                 args[lensArg]);
          hideUnless(arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::slt,
                                           idx[kJ], len));
        }
        if (!maskMod.empty())
          hideUnless(inlineRegion(maskMod, {idx[kB], h, idx[kI], idx[kJ]}));
        linalg::YieldOp::create(
            nb, nl,
            ValueRange{arith::SelectOp::create(nb, nl, visible, s, negInf)});
      });
}

Value AttentionDecomposer::run() {
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(op);
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

  Value scores = maskedScores(scaledScores());

  // M = max_j S; -inf for a row whose keys are all hidden.
  SmallVector<OpFoldResult> rowSizes = {batch, kvHeads, groups, qLen};
  unsigned n = kJ + 1;
  AffineMap full = b.getMultiDimIdentityMap(n);
  AffineMap row = loopsMap(n, {kB, kHk, kG, kI});
  Value rowMax = generic(
      scores, filled(rowSizes, -std::numeric_limits<double>::infinity()),
      {full, row}, 1, [&](OpBuilder &nb, Location nl, ValueRange args) {
        linalg::YieldOp::create(
            nb, nl,
            ValueRange{arith::MaximumFOp::create(nb, nl, args[0], args[1])});
      });

  // P = exp(S - M), and 0 instead of exp(-inf - -inf) = NaN for empty rows.
  Value negInf = arith::ConstantOp::create(
      b, loc, b.getF32FloatAttr(-std::numeric_limits<float>::infinity()));
  Value zero = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0.0f));
  Value probs = generic(
      {scores, rowMax}, emptyF32({batch, kvHeads, groups, qLen, kvLen}),
      {full, row, full}, 0, [&](OpBuilder &nb, Location nl, ValueRange args) {
        Value diff = arith::SubFOp::create(nb, nl, args[0], args[1]);
        Value e = math::ExpOp::create(nb, nl, diff);
        Value empty = arith::CmpFOp::create(nb, nl, arith::CmpFPredicate::OEQ,
                                            args[1], negInf);
        linalg::YieldOp::create(
            nb, nl,
            ValueRange{arith::SelectOp::create(nb, nl, empty, zero, e)});
      });

  // L = sum_j P.
  Value rowSum = generic(
      probs, filled(rowSizes, 0.0), {full, row}, 1,
      [&](OpBuilder &nb, Location nl, ValueRange args) {
        linalg::YieldOp::create(
            nb, nl,
            ValueRange{arith::AddFOp::create(nb, nl, args[0], args[1])});
      });

  // O[b, hk, g, i, e] = sum_j P * V.
  enum { kE = kJ, kJ2 = kJ + 1, kPvLoops };
  Value weighted = generic(
      {probs, value}, filled({batch, kvHeads, groups, qLen, valueDim}, 0.0),
      {loopsMap(kPvLoops, {kB, kHk, kG, kI, kJ2}),
       kvTensorMap(kPvLoops, kJ2, kE),
       loopsMap(kPvLoops, {kB, kHk, kG, kI, kE})},
      1, [&](OpBuilder &nb, Location nl, ValueRange args) {
        Value vv = convertFloat(nb, nl, args[1], f32);
        Value prod = arith::MulFOp::create(nb, nl, args[0], vv);
        linalg::YieldOp::create(
            nb, nl, ValueRange{arith::AddFOp::create(nb, nl, prod, args[2])});
      });

  // out = L > 0 ? O / L : 0, in the layout and element type of init.
  Value init = splitHeads(op.getInit(), headPos());
  Type outType = getElementTypeOrSelf(init);
  Value out =
      generic({weighted, rowSum}, init,
              {b.getMultiDimIdentityMap(5), loopsMap(5, {kB, kHk, kG, kI}),
               splitTensorMap(5, kE)},
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
  SmallVector<ReassociationIndices> mergeHeads =
      bhsd ? SmallVector<ReassociationIndices>{{0}, {1, 2}, {3}, {4}}
           : SmallVector<ReassociationIndices>{{0}, {1}, {2, 3}, {4}};
  return tensor::CollapseShapeOp::create(b, loc, op.getInit().getType(), out,
                                         mergeHeads);
}

FailureOr<Value> mlir::attn::decomposeAttention(RewriterBase &rewriter,
                                                AttentionOp op) {
  Value result = AttentionDecomposer(rewriter, op).run();
  rewriter.replaceOp(op, result);
  return result;
}

namespace {
struct DecomposeAttentionPass
    : attn::impl::DecomposeAttentionBase<DecomposeAttentionPass> {
  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    WalkResult result = getOperation()->walk([&](AttentionOp op) -> WalkResult {
      if (failed(decomposeAttention(rewriter, op)))
        return WalkResult::interrupt();
      return WalkResult::advance();
    });
    if (result.wasInterrupted())
      signalPassFailure();
  }
};
} // namespace
