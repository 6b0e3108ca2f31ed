//===- Utils.cpp - helpers shared by the attn rewrites --------------------===//
//
// Part of the attn project: an MLIR compiler for attention.
//
//===----------------------------------------------------------------------===//

#include "attn/Transforms/Utils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

using namespace mlir;

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
