//===- StructuredMasks.h - structured masks as IR ---------------*- C++ -*-===//
//
// Part of the attn project: an MLIR compiler for attention.
//
//===----------------------------------------------------------------------===//
//
// The questions every lowering asks of a structured mask, emitted as index
// arithmetic: is one key visible, which keys can a run of queries see, does a
// tile of (query, key) pairs hide or show every pair. Positions are those of
// the whole problem; Sq and Sk are its lengths.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_IR_STRUCTUREDMASKS_H
#define ATTN_IR_STRUCTUREDMASKS_H

#include "attn/IR/AttnDialect.h"

#include "mlir/IR/Builders.h"

namespace mlir::attn {

/// Defines, in the nearest symbol table of each, the constant tables that
/// block bitmaps' lowerings under `root` read (they refer to them by name
/// while the code is built). Every pass that lowers structured masks calls
/// it at its end.
void materializeBlockBitmapTables(Operation *root);

/// i1: whether key `kv` is visible to query `q`.
Value buildMaskVisible(OpBuilder &b, Location loc,
                       StructuredMaskAttrInterface mask, Value q, Value kv,
                       Value qLen, Value kvLen);

/// The keys [begin, end) that some query of [qFirst, qLast] may see, not yet
/// clamped to [0, Sk): no query sees a key outside, and for every mask but
/// an intersection, begin is the first key one of them sees.
std::pair<Value, Value> buildMaskKeyHull(OpBuilder &b, Location loc,
                                         StructuredMaskAttrInterface mask,
                                         Value qFirst, Value qLast, Value qLen,
                                         Value kvLen);

/// Whether the mask hides every pair, and whether it shows every pair, of
/// queries [qFirst, qLast] x keys [kvFirst, kvLast] (both ranges non-empty).
/// Exact for every mask but the intersection, whose `hidesAll` is only sound
/// (it may miss a tile where two masks each show pairs the other hides).
struct MaskTileValues {
  Value hidesAll, showsAll;
};
MaskTileValues buildMaskTile(OpBuilder &b, Location loc,
                             StructuredMaskAttrInterface mask, Value qFirst,
                             Value qLast, Value kvFirst, Value kvLast,
                             Value qLen, Value kvLen);

/// Whether `mask` is a band: a causal or sliding-window mask, whose visible
/// keys per query are one interval of key - query differences.
bool isBandMask(StructuredMaskAttrInterface mask);

} // namespace mlir::attn

#endif // ATTN_IR_STRUCTUREDMASKS_H
