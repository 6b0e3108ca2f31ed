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
    ValueRange statistics, bool withStructuredMask) {
  auto online = OnlineAttentionOp::create(
      b, loc, statistics.getTypes(), op.getQuery(), operands.key,
      operands.value, operands.mask, operands.bias, operands.kvLens,
      operands.offsets, position.extents, statistics[0], statistics[1],
      statistics[2], op.getScaleAttr(),
      withStructuredMask ? op.getStructuredMaskAttr()
                         : StructuredMaskAttrInterface(),
      op.getLayoutAttr());
  for (auto [from, to] : llvm::zip(op->getRegions(), online->getRegions()))
    if (!from.empty())
      b.cloneRegionBefore(from, to, to.end());
  return online;
}
