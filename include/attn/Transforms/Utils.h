//===- Utils.h - helpers shared by the attn rewrites ------------*- C++ -*-===//
//
// Part of the attn project: an MLIR compiler for attention.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_TRANSFORMS_UTILS_H
#define ATTN_TRANSFORMS_UTILS_H

#include "mlir/IR/Builders.h"

namespace mlir::attn {

/// Converts a float scalar to the float type `to`: extf when widening, truncf
/// when narrowing, through f32 between two 16-bit types.
Value convertFloat(OpBuilder &b, Location loc, Value value, Type to);

} // namespace mlir::attn

#endif // ATTN_TRANSFORMS_UTILS_H
