//===- RegionInterpreter.h - evaluate score_mod/mask_mod regions -*- C++
//-*-===//
//
// Part of the attn project: an MLIR compiler for attention.
//
// The reference must apply a user's score_mod and mask_mod without going
// through the compiler under test, so these functions evaluate the region's
// scalar arith/math ops directly, in double (floats) and 64-bit integers
// wrapped to each value's width.
//
// Supported: arith.constant (float, integer, index, i1), addf, subf, mulf,
// divf, remf, negf, maximumf, minimumf, maxnumf, minnumf, cmpf, cmpi, addi,
// subi, muli, divsi, divui, remsi, remui, andi, ori, xori, select,
// index_cast, index_castui, extsi, extui, trunci, sitofp, uitofp, fptosi,
// fptoui, extf and truncf (identity: floats stay double); math.tanh, exp,
// exp2, expm1, log, log2, log1p, sqrt, rsqrt, absf, powf, sin, cos, floor,
// ceil, erf, copysign, absi. Operands defined above the region must be
// constants. Integer division by zero, which is undefined in MLIR, gives 0;
// fptosi/fptoui saturate.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_TOOLS_REGIONINTERPRETER_H
#define ATTN_TOOLS_REGIONINTERPRETER_H

#include "mlir/IR/Region.h"
#include "mlir/Support/LLVM.h"

#include <cstdint>
#include <functional>

namespace mlir::attn {

/// Evaluates a score_mod region: one block with arguments (float score,
/// index b, index h, index q_idx, index kv_idx) ending in attn.yield of one
/// float. All ops are checked up front; an unsupported one fails with a
/// diagnostic naming it. The closure holds a private compiled copy of the
/// region (no pointers into the IR), so it stays valid after the region is
/// gone, and may be called concurrently.
FailureOr<std::function<double(double, int64_t, int64_t, int64_t, int64_t)>>
interpretScoreMod(Region &region);

/// Evaluates a mask_mod region: one block with arguments (index b, index h,
/// index q_idx, index kv_idx) ending in attn.yield of one i1 (true: the key
/// is visible). Same guarantees as interpretScoreMod.
FailureOr<std::function<bool(int64_t, int64_t, int64_t, int64_t)>>
interpretMaskMod(Region &region);

} // namespace mlir::attn

#endif // ATTN_TOOLS_REGIONINTERPRETER_H
