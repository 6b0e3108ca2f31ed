//===- AttnDialect.h - attn dialect, attributes and enums -------*- C++ -*-===//
//
// Part of the attn project: an MLIR compiler for attention.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_IR_ATTNDIALECT_H
#define ATTN_IR_ATTNDIALECT_H

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/DialectImplementation.h"

#include "attn/IR/AttnDialect.h.inc"
#include "attn/IR/AttnEnums.h.inc"

namespace mlir::attn {
/// The constant answers of a structured mask (any attribute implementing
/// StructuredMaskAttrInterface), in StructuredMasks.cpp.
bool isMaskVisible(Attribute mask, int64_t qIdx, int64_t kvIdx, int64_t qLen,
                   int64_t kvLen);
bool isMaskAllVisible(Attribute mask, int64_t qLen, int64_t kvLen);
/// Whether `mask` hides, and whether it shows, every key of [kvFirst, kvLast]
/// to every query of [qFirst, qLast] (whole-problem positions of a problem of
/// qLen x kvLen), as the lowerings decide it.
struct MaskTileBits {
  bool hidesAll, showsAll;
};
MaskTileBits classifyMaskTile(Attribute mask, int64_t qFirst, int64_t qLast,
                              int64_t kvFirst, int64_t kvLast, int64_t qLen,
                              int64_t kvLen);
} // namespace mlir::attn

#include "attn/IR/AttnAttrInterfaces.h.inc"

#define GET_ATTRDEF_CLASSES
#include "attn/IR/AttnAttrs.h.inc"

namespace mlir::attn {
/// Position of the head dimension of a [B, ?, ?, F] tensor in `layout`.
inline int64_t getHeadDimPos(Layout layout) {
  return layout == Layout::BHSD ? 1 : 2;
}
/// Position of the sequence dimension of a [B, ?, ?, F] tensor in `layout`.
inline int64_t getSeqDimPos(Layout layout) {
  return layout == Layout::BHSD ? 2 : 1;
}

/// Attaches the bufferization model of attn.ukernel.generic (in
/// BufferizableOpInterfaceImpl.cpp); the dialect does so when it loads.
void registerBufferizableOpInterfaceExternalModels(MLIRContext *ctx);
} // namespace mlir::attn

#endif // ATTN_IR_ATTNDIALECT_H
