//===- Utils.cpp - helpers shared by the attn rewrites --------------------===//
//
// Part of the attn project: an MLIR compiler for attention.
//
//===----------------------------------------------------------------------===//

#include "attn/Transforms/Utils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"

#include <algorithm>
#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::attn;

Value mlir::attn::convertFloat(OpBuilder &b, Location loc, Value value,
                               Type to) {
  Type from = value.getType();
  if (from == to)
    return value;
  unsigned fromWidth = from.getIntOrFloatBitWidth();
  unsigned toWidth = to.getIntOrFloatBitWidth();
  if (fromWidth == toWidth) // f16 <-> bf16
    return convertFloat(b, loc, convertFloat(b, loc, value, b.getF32Type()),
                        to);
  if (fromWidth < toWidth)
    return arith::ExtFOp::create(b, loc, to, value);
  return arith::TruncFOp::create(b, loc, to, value);
}

Value mlir::attn::inlineRegion(OpBuilder &b, Region &region, ValueRange args) {
  IRMapping mapping;
  mapping.map(region.getArguments(), args);
  for (Operation &nested : region.front().without_terminator())
    b.clone(nested, mapping);
  auto yield = cast<YieldOp>(region.front().getTerminator());
  return mapping.lookup(yield.getValues().front());
}

Value mlir::attn::createFilledF32(OpBuilder &b, Location loc,
                                  ArrayRef<OpFoldResult> sizes, float value) {
  Value empty = tensor::EmptyOp::create(b, loc, sizes, b.getF32Type());
  Value cst = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(value));
  return linalg::FillOp::create(b, loc, cst, empty).getResult(0);
}

Value mlir::attn::sliceDim(OpBuilder &b, Location loc, Value value, int64_t dim,
                           Value offset, Value size) {
  auto type = cast<RankedTensorType>(value.getType());
  SmallVector<OpFoldResult> offsets(type.getRank(), b.getIndexAttr(0));
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, value);
  SmallVector<OpFoldResult> strides(type.getRank(), b.getIndexAttr(1));
  offsets[dim] = offset;
  sizes[dim] = size;
  return tensor::ExtractSliceOp::create(b, loc, value, offsets, sizes, strides);
}

/// Slices the key dimension of a mask or bias tensor, unless it is broadcast.
static Value sliceKeys(OpBuilder &b, Location loc, Value value, Value offset,
                       Value size) {
  if (!value)
    return value;
  auto type = cast<RankedTensorType>(value.getType());
  int64_t keyDim = type.getRank() - 1;
  if (type.getDimSize(keyDim) == 1)
    return value;
  return attn::sliceDim(b, loc, value, keyDim, offset, size);
}

template <typename OpTy>
AttentionPosition mlir::attn::getAttentionPosition(OpBuilder &b, Location loc,
                                                   OpTy op) {
  AttentionPosition position;
  position.offsets.assign(op.getOffsets().begin(), op.getOffsets().end());
  if (position.offsets.empty())
    position.offsets.assign(4, arith::ConstantIndexOp::create(b, loc, 0));
  position.extents.assign(op.getExtents().begin(), op.getExtents().end());
  if (position.extents.empty()) {
    int64_t seqPos = getSeqDimPos(op.getLayout());
    for (Value operand : {op.getQuery(), op.getKey()})
      position.extents.push_back(getValueOrCreateConstantIndexOp(
          b, loc, tensor::getMixedSize(b, loc, operand, seqPos)));
  }
  return position;
}
template AttentionPosition
mlir::attn::getAttentionPosition(OpBuilder &, Location, AttentionOp);
template AttentionPosition
mlir::attn::getAttentionPosition(OpBuilder &, Location, OnlineAttentionOp);

Value mlir::attn::createScale(OpBuilder &b, Location loc,
                              std::optional<APFloat> scale,
                              OpFoldResult headDim) {
  if (scale)
    return arith::ConstantOp::create(
        b, loc, b.getF32FloatAttr(scale->convertToFloat()));
  if (std::optional<int64_t> d = getConstantIntValue(headDim))
    return arith::ConstantOp::create(
        b, loc, b.getF32FloatAttr(1.0 / std::sqrt(static_cast<double>(*d))));
  // Dynamic head dim: 1/sqrt(D) at run time.
  Value d = arith::IndexCastUIOp::create(
      b, loc, b.getI64Type(), getValueOrCreateConstantIndexOp(b, loc, headDim));
  Value df = arith::UIToFPOp::create(b, loc, b.getF32Type(), d);
  return math::RsqrtOp::create(b, loc, df);
}

SmallVector<Value, 3> mlir::attn::createInitialStatistics(OpBuilder &b,
                                                          Location loc,
                                                          AttentionOp op) {
  // acc in the output's shape; max and sum [B, Hq, Sq] in every layout.
  Value q = op.getQuery();
  SmallVector<OpFoldResult> rowSizes = {
      tensor::getMixedSize(b, loc, q, 0),
      tensor::getMixedSize(b, loc, q, getHeadDimPos(op.getLayout())),
      tensor::getMixedSize(b, loc, q, getSeqDimPos(op.getLayout()))};
  return {createFilledF32(b, loc, tensor::getMixedSizes(b, loc, op.getInit()),
                          0.0f),
          createFilledF32(b, loc, rowSizes,
                          -std::numeric_limits<float>::infinity()),
          createFilledF32(b, loc, rowSizes, 0.0f)};
}

Value mlir::attn::buildRelPosBucket(OpBuilder &b, Location loc,
                                    RelPosAttr relpos, Value i, Value j) {
  IndexMath m{b, loc};
  Value zero = m.constant(0), one = m.constant(1);
  // The offset n and the first bucket of its direction.
  Value n, first = zero;
  if (relpos.getBidirectional()) {
    Value distance = m.sub(j, i);
    Value after = m.slt(zero, distance);
    first = arith::SelectOp::create(
        b, loc, after, m.constant(relpos.getDirectionBuckets()), zero);
    n = arith::SelectOp::create(b, loc, m.slt(distance, zero),
                                m.sub(zero, distance), distance);
  } else {
    n = arith::MaxSIOp::create(b, loc, m.sub(i, j), zero);
  }
  Value exact = m.constant(relpos.getMaxExact());
  Value large = exact;
  for (int64_t threshold : relpos.getThresholds())
    large =
        m.add(large, arith::SelectOp::create(
                         b, loc, m.sle(m.constant(threshold), n), one, zero));
  return m.add(first,
               arith::SelectOp::create(b, loc, m.slt(n, exact), n, large));
}

Value mlir::attn::createGeneric(
    OpBuilder &b, Location loc, ValueRange inputs, Value init,
    ArrayRef<AffineMap> maps, unsigned numReductions,
    function_ref<void(OpBuilder &, Location, ValueRange)> body) {
  unsigned numLoops = maps.front().getNumDims();
  SmallVector<utils::IteratorType> iterators(numLoops - numReductions,
                                             utils::IteratorType::parallel);
  iterators.append(numReductions, utils::IteratorType::reduction);
  return linalg::GenericOp::create(b, loc, init.getType(), inputs, init, maps,
                                   iterators, body)
      .getResult(0);
}

AffineMap mlir::attn::getLoopsMap(MLIRContext *ctx, unsigned numLoops,
                                  ArrayRef<unsigned> loops) {
  SmallVector<AffineExpr> exprs;
  for (unsigned l : loops)
    exprs.push_back(getAffineDimExpr(l, ctx));
  return AffineMap::get(numLoops, 0, exprs, ctx);
}

Value mlir::attn::buildBlockMaskVisible(OpBuilder &b, Location loc,
                                        Value blockMask,
                                        ArrayRef<int64_t> blockSizes,
                                        ValueRange indices,
                                        Value visibleByOthers) {
  IndexMath m{b, loc};
  auto type = cast<RankedTensorType>(blockMask.getType());
  SmallVector<Value, 4> at;
  for (auto [d, index] : llvm::enumerate(indices)) {
    Value x = index;
    if (d >= 2)
      x = arith::DivUIOp::create(b, loc, x, m.constant(blockSizes[d - 2]));
    else if (type.getDimSize(d) == 1)
      x = m.constant(0);
    else
      x = arith::MinSIOp::create(
          b, loc, x,
          m.sub(getValueOrCreateConstantIndexOp(
                    b, loc, tensor::getMixedSize(b, loc, blockMask, d)),
                m.constant(1)));
    at.push_back(x);
  }
  Value c = tensor::ExtractOp::create(b, loc, blockMask, at);
  auto classIs = [&](arith::CmpIPredicate predicate, int64_t v) {
    return arith::CmpIOp::create(
        b, loc, predicate, c,
        arith::ConstantIntOp::create(b, loc, b.getI8Type(), v));
  };
  return arith::OrIOp::create(
      b, loc, classIs(arith::CmpIPredicate::sge, 2),
      m.both(classIs(arith::CmpIPredicate::eq, 1), visibleByOthers));
}

Value mlir::attn::createLinearFeatureMap(OpBuilder &b, Location loc, Value x) {
  Value zero = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0.0f));
  Value one = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(1.0f));
  Value positive =
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, x, zero);
  return arith::SelectOp::create(b, loc, positive,
                                 arith::AddFOp::create(b, loc, x, one),
                                 math::ExpOp::create(b, loc, x));
}

Value mlir::attn::createProjection(OpBuilder &b, Location loc, Value x, Value w,
                                   Value bias, Type elementType, Value dest) {
  MLIRContext *ctx = b.getContext();
  Type f32 = b.getF32Type();
  int64_t rank = cast<ShapedType>(x.getType()).getRank();
  SmallVector<OpFoldResult> sizes;
  for (int64_t d = 0; d + 1 < rank; ++d)
    sizes.push_back(tensor::getMixedSize(b, loc, x, d));
  sizes.push_back(tensor::getMixedSize(b, loc, w, 1));
  if (!dest)
    dest = tensor::EmptyOp::create(b, loc, sizes, elementType);
  // An f32 destination accumulates in place; others get an f32 temporary.
  bool accumulateInDest = getElementTypeOrSelf(dest) == f32;
  Value accDest =
      accumulateInDest ? dest : tensor::EmptyOp::create(b, loc, sizes, f32);
  Value zero = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0.0));
  auto zeros = [&](Value into) {
    return linalg::FillOp::create(b, loc, zero, into).getResult(0);
  };

  // The product: a linalg.matmul over x's rows flattened to [M, K], which a
  // CPU micro-kernel takes (attn-lower-to-ukernels). Rows with two dynamic
  // sizes would need an expand_shape with two dynamic sizes back, which
  // memref lowering in MLIR 22 cannot handle (expand-strided-metadata
  // crashes): those keep a linalg.generic contraction.
  Value acc;
  if (rank >= 2 &&
      llvm::count_if(ArrayRef(sizes).drop_back(), [](OpFoldResult size) {
        return !getConstantIntValue(size);
      }) <= 1) {
    SmallVector<ReassociationIndices> flatten = {
        llvm::to_vector(llvm::seq<int64_t>(0, rank - 1)), {rank - 1}};
    auto toMatrix = [&](Value value) -> Value {
      if (rank == 2)
        return value;
      return tensor::CollapseShapeOp::create(b, loc, value, flatten);
    };
    // Zeros filled into the matrix itself, so that the matmul's init is the
    // fill (which the micro-kernel then overwrites instead).
    Value accMatrix = zeros(toMatrix(accDest));
    acc = linalg::MatmulOp::create(b, loc, TypeRange{accMatrix.getType()},
                                   ValueRange{toMatrix(x), w},
                                   ValueRange{accMatrix})
              .getResult(0);
    if (rank > 2)
      acc = tensor::ExpandShapeOp::create(b, loc, accDest.getType(), acc,
                                          flatten, sizes);
  } else {
    // Loops: the rows of x, the output column, then the reduction.
    SmallVector<AffineExpr> rows;
    for (int64_t d = 0; d + 1 < rank; ++d)
      rows.push_back(getAffineDimExpr(d, ctx));
    AffineExpr column = getAffineDimExpr(rank - 1, ctx);
    AffineExpr reduced = getAffineDimExpr(rank, ctx);
    SmallVector<AffineExpr> xExprs = rows, outExprs = rows;
    xExprs.push_back(reduced);
    outExprs.push_back(column);
    SmallVector<AffineMap> contractMaps = {
        AffineMap::get(rank + 1, 0, xExprs, ctx),
        AffineMap::get(rank + 1, 0, {reduced, column}, ctx),
        AffineMap::get(rank + 1, 0, outExprs, ctx)};
    SmallVector<utils::IteratorType> contractIters(
        rank, utils::IteratorType::parallel);
    contractIters.push_back(utils::IteratorType::reduction);
    acc = linalg::GenericOp::create(
              b, loc, accDest.getType(), ValueRange{x, w}, zeros(accDest),
              contractMaps, contractIters,
              [&](OpBuilder &nb, Location nl, ValueRange args) {
                Value lhs = convertFloat(nb, nl, args[0], f32);
                Value rhs = convertFloat(nb, nl, args[1], f32);
                Value prod = arith::MulFOp::create(nb, nl, lhs, rhs);
                Value sum = arith::AddFOp::create(nb, nl, prod, args[2]);
                linalg::YieldOp::create(nb, nl, sum);
              })
              .getResult(0);
  }

  if (!bias && accumulateInDest)
    return acc;

  // Epilogue: add the bias and convert to the destination element type.
  SmallVector<Value> inputs = {acc};
  SmallVector<AffineMap> maps = {b.getMultiDimIdentityMap(rank)};
  if (bias) {
    inputs.push_back(bias);
    maps.push_back(
        AffineMap::get(rank, 0, {getAffineDimExpr(rank - 1, ctx)}, ctx));
  }
  maps.push_back(b.getMultiDimIdentityMap(rank));
  SmallVector<utils::IteratorType> iters(rank, utils::IteratorType::parallel);
  return linalg::GenericOp::create(
             b, loc, dest.getType(), inputs, dest, maps, iters,
             [&](OpBuilder &nb, Location nl, ValueRange args) {
               Value v = args[0];
               if (bias)
                 v = arith::AddFOp::create(nb, nl, v,
                                           convertFloat(nb, nl, args[1], f32));
               linalg::YieldOp::create(
                   nb, nl, convertFloat(nb, nl, v, getElementTypeOrSelf(dest)));
             })
      .getResult(0);
}

FinalizeOnlineAttentionOp mlir::attn::createFinalize(OpBuilder &b, Location loc,
                                                     AttentionOp op,
                                                     ValueRange statistics) {
  Value lseInit = op.getLseInit();
  return FinalizeOnlineAttentionOp::create(
      b, loc, op.getInit().getType(), lseInit ? lseInit.getType() : Type(),
      statistics[0], statistics[2], lseInit ? statistics[1] : Value(),
      op.getInit(), lseInit, op.getLayoutAttr());
}

OnlineStepOperands
mlir::attn::sliceOnlineStep(OpBuilder &b, Location loc, AttentionOp op,
                            const AttentionPosition &position, Value kvStart,
                            Value kvSize) {
  int64_t seqPos = getSeqDimPos(op.getLayout());
  const SmallVector<Value, 4> &at = position.offsets;
  OnlineStepOperands operands;
  operands.key = sliceDim(b, loc, op.getKey(), seqPos, kvStart, kvSize);
  operands.value = sliceDim(b, loc, op.getValue(), seqPos, kvStart, kvSize);
  operands.mask = sliceKeys(b, loc, op.getMask(), kvStart, kvSize);
  operands.bias = sliceKeys(b, loc, op.getBias(), kvStart, kvSize);
  operands.kvLens = op.getKvLens();
  operands.offsets = {at[0], at[1], at[2],
                      arith::AddIOp::create(b, loc, at[3], kvStart)};
  return operands;
}

OnlineAttentionOp mlir::attn::createOnlineAttentionStep(
    OpBuilder &b, Location loc, AttentionOp op,
    const AttentionPosition &position, const OnlineStepOperands &operands,
    ValueRange statistics, StepMasks masks) {
  bool rules = masks == StepMasks::All, data = masks != StepMasks::None;
  auto online = OnlineAttentionOp::create(
      b, loc, statistics.getTypes(), op.getQuery(), operands.key,
      operands.value, data ? operands.mask : Value(), operands.bias,
      op.getRelBias(), op.getAdditiveWeight(), data ? operands.kvLens : Value(),
      data ? op.getSpans() : Value(), data ? op.getBlockMask() : Value(),
      operands.offsets, position.extents, statistics[0], statistics[1],
      statistics[2], op.getScaleAttr(),
      rules ? op.getStructuredMaskAttr() : StructuredMaskAttrInterface(),
      op.getLayoutAttr(), op.getSimilarityAttr(), op.getRelposAttr(),
      data ? op.getBlockSizesAttr() : DenseI64ArrayAttr());
  for (auto [from, to] : llvm::zip(op->getRegions(), online->getRegions()))
    if (!from.empty() && (rules || &from != &op.getMaskMod()))
      b.cloneRegionBefore(from, to, to.end());
  return online;
}

/// exp(max - merged max), or 0 where every key was hidden.
static Value mergeWeight(OpBuilder &b, Location loc, Value max,
                         Value mergedMax) {
  Value negInf = arith::ConstantOp::create(
      b, loc, b.getF32FloatAttr(-std::numeric_limits<float>::infinity()));
  Value zero = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0.0f));
  Value e = math::ExpOp::create(b, loc,
                                arith::SubFOp::create(b, loc, max, mergedMax));
  Value empty = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ,
                                      mergedMax, negInf);
  return arith::SelectOp::create(b, loc, empty, zero, e);
}

SmallVector<Value, 3>
mlir::attn::mergePartialStatistics(OpBuilder &b, Location loc, Layout layout,
                                   ValueRange parts, ValueRange state) {
  MLIRContext *ctx = b.getContext();
  AffineExpr d0, d1, d2, d3, d4;
  bindDims(ctx, d0, d1, d2, d3, d4);
  auto map = [&](unsigned numDims, ArrayRef<AffineExpr> exprs) {
    return AffineMap::get(numDims, 0, exprs, ctx);
  };
  auto iterators = [](unsigned parallel, unsigned reduction) {
    SmallVector<utils::IteratorType> iters(parallel,
                                           utils::IteratorType::parallel);
    iters.append(reduction, utils::IteratorType::reduction);
    return iters;
  };
  auto generic =
      [&](ValueRange inputs, Value init, ArrayRef<AffineMap> maps,
          unsigned reductions,
          function_ref<void(OpBuilder &, Location, ValueRange)> body) {
        unsigned loops = maps.front().getNumDims();
        return linalg::GenericOp::create(
                   b, loc, init.getType(), inputs, init, maps,
                   iterators(loops - reductions, reductions), body)
            .getResult(0);
      };
  auto yield = [](OpBuilder &nb, Location nl, Value v) {
    linalg::YieldOp::create(nb, nl, ValueRange{v});
  };

  // Rows (b, h, i) of max and sum, then the partial index s.
  AffineMap rowPart = map(4, {d3, d0, d1, d2}), row = map(4, {d0, d1, d2});
  Value mergedMax = generic(
      parts[1], state[1], {rowPart, row}, 1,
      [&](OpBuilder &nb, Location nl, ValueRange args) {
        yield(nb, nl, arith::MaximumFOp::create(nb, nl, args[0], args[1]));
      });
  // state * exp(state max - M), then + sum_s part_s * exp(max_s - M).
  auto scale = [&](OpBuilder &nb, Location nl, ValueRange args) {
    Value w = mergeWeight(nb, nl, args[1], args[2]);
    yield(nb, nl, arith::MulFOp::create(nb, nl, w, args[0]));
  };
  auto weightedSum = [&](OpBuilder &nb, Location nl, ValueRange args) {
    Value w = mergeWeight(nb, nl, args[1], args[2]);
    Value term = arith::MulFOp::create(nb, nl, w, args[0]);
    yield(nb, nl, arith::AddFOp::create(nb, nl, term, args[3]));
  };
  AffineMap row3 = map(3, {d0, d1, d2});
  Value sumInit = generic({state[2], state[1], mergedMax}, state[2],
                          {row3, row3, row3, row3}, 0, scale);
  Value sum = generic({parts[2], parts[1], mergedMax}, sumInit,
                      {rowPart, rowPart, row, row}, 1, weightedSum);

  // acc is [B, H, S, Dv] or [B, S, H, Dv]; its rows are [B, H, S].
  bool bhsd = layout == Layout::BHSD;
  AffineMap acc4 = map(4, {d0, d1, d2, d3});
  AffineMap accRow4 = bhsd ? map(4, {d0, d1, d2}) : map(4, {d0, d2, d1});
  Value accInit = generic({state[0], state[1], mergedMax}, state[0],
                          {acc4, accRow4, accRow4, acc4}, 0, scale);
  AffineMap accRowPart =
      bhsd ? map(5, {d4, d0, d1, d2}) : map(5, {d4, d0, d2, d1});
  AffineMap accRow = bhsd ? map(5, {d0, d1, d2}) : map(5, {d0, d2, d1});
  Value acc = generic({parts[0], parts[1], mergedMax}, accInit,
                      {map(5, {d4, d0, d1, d2, d3}), accRowPart, accRow,
                       map(5, {d0, d1, d2, d3})},
                      1, weightedSum);
  return {acc, mergedMax, sum};
}

/// D + Dv of `op`, 64 for each dynamic one.
static int64_t getFeatureSize(AttentionOp op) {
  int64_t size = 0;
  for (Value operand : {op.getQuery(), op.getValue()}) {
    int64_t dim = cast<ShapedType>(operand.getType()).getDimSize(3);
    size += ShapedType::isDynamic(dim) ? 64 : dim;
  }
  return size;
}

int64_t mlir::attn::deriveKeyTileSize(AttentionOp op, int64_t l2CacheSize) {
  int64_t keys = l2CacheSize / (16 * getFeatureSize(op));
  // Under a sliding window, tiles wider than half the window are mostly
  // hidden keys (window:256:0 at S = 8192: 512-key tiles visit 9.2 % of the
  // tiles, 128-key ones 4.6 %, in the same time).
  if (auto window =
          dyn_cast_or_null<SlidingWindowMaskAttr>(op.getStructuredMaskAttr()))
    keys = std::min(keys, (window.getLeft() + window.getRight() + 1) / 2);
  return std::clamp<int64_t>(keys / 64 * 64, 64, 1024);
}

int64_t mlir::attn::deriveQueryTileSize(AttentionOp op, int64_t l2CacheSize,
                                        int64_t parallelism) {
  // At most 128: a query tile's rows all stream its key range, and under a
  // causal band longer tiles waste more of the diagonal (measured: 8 heads x
  // 4096 x 128, causal against none, 1.56-1.92x with 256 rows, 1.70-1.79x
  // with 128).
  int64_t rows = std::min(
      {deriveKeyTileSize(op, l2CacheSize), getFeatureSize(op), int64_t(128)});
  auto qType = cast<ShapedType>(op.getQuery().getType());
  auto kType = cast<ShapedType>(op.getKey().getType());
  int64_t kvHeads = kType.getDimSize(getHeadDimPos(op.getLayout()));
  int64_t qLen = qType.getDimSize(getSeqDimPos(op.getLayout()));
  if (ShapedType::isDynamic(qType.getDimSize(0)) ||
      ShapedType::isDynamic(kvHeads) || ShapedType::isDynamic(qLen))
    return rows;
  int64_t groups = qType.getDimSize(0) * kvHeads;
  while (rows > 16 &&
         groups * static_cast<int64_t>(llvm::divideCeil(qLen, rows)) <
             2 * parallelism)
    rows /= 2;
  return rows;
}
