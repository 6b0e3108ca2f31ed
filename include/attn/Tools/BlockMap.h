//===- BlockMap.h - pictures of the tiles a mask leaves ---------*- C++ -*-===//
//
// Part of the attn project: an MLIR compiler for attention.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_TOOLS_BLOCKMAP_H
#define ATTN_TOOLS_BLOCKMAP_H

#include "attn/IR/AttnDialect.h"

#include "llvm/Support/raw_ostream.h"

namespace mlir::attn {

/// How the lowerings treat the (query tile, key tile) pairs of a mask.
struct BlockMapCounts {
  int64_t skipped = 0, full = 0, partial = 0;
};

/// Draws, as SVG, the tile map of `mask` over Sq x Sk positions in tiles of
/// `queryTile` x `keyTile`: each tile skipped (the mask hides it), full (it
/// shows every pair: no per-score test) or partial, as the lowerings
/// classify it (classifyMaskTile).
BlockMapCounts writeBlockMapSVG(llvm::raw_ostream &os,
                                StructuredMaskAttrInterface mask, int64_t qLen,
                                int64_t kvLen, int64_t queryTile,
                                int64_t keyTile, StringRef title);

} // namespace mlir::attn

#endif // ATTN_TOOLS_BLOCKMAP_H
