//===- AttnAttrs.cpp - attn attributes ------------------------------------===//
//
// Part of the attn project: an MLIR compiler for attention.
//
//===----------------------------------------------------------------------===//

#include "attn/IR/AttnDialect.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::attn;

#include "attn/IR/AttnAttrInterfaces.cpp.inc"
#include "attn/IR/AttnEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "attn/IR/AttnAttrs.cpp.inc"

void AttnDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "attn/IR/AttnAttrs.cpp.inc"
      >();
}

/// The offset added to a query index so that it lines up with key indices:
/// 0 for top-left alignment, Sk - Sq for bottom-right.
static int64_t alignmentShift(Alignment alignment, int64_t qLen,
                              int64_t kvLen) {
  return alignment == Alignment::BottomRight ? kvLen - qLen : 0;
}

//===----------------------------------------------------------------------===//
// CausalMaskAttr
//===----------------------------------------------------------------------===//

bool CausalMaskAttr::isVisible(int64_t qIdx, int64_t kvIdx, int64_t qLen,
                               int64_t kvLen) const {
  return kvIdx <= qIdx + alignmentShift(getAlignment(), qLen, kvLen);
}

bool CausalMaskAttr::isAllVisible(int64_t qLen, int64_t kvLen) const {
  // The hardest pair is the first query against the last key.
  return isVisible(/*qIdx=*/0, /*kvIdx=*/kvLen - 1, qLen, kvLen);
}

//===----------------------------------------------------------------------===//
// SlidingWindowMaskAttr
//===----------------------------------------------------------------------===//

LogicalResult
SlidingWindowMaskAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                              int64_t left, int64_t right, Alignment) {
  if (left < 0)
    return emitError() << "sliding_window 'left' must be >= 0, got " << left;
  if (right < 0)
    return emitError() << "sliding_window 'right' must be >= 0, got " << right;
  return success();
}

bool SlidingWindowMaskAttr::isVisible(int64_t qIdx, int64_t kvIdx, int64_t qLen,
                                      int64_t kvLen) const {
  int64_t pos = qIdx + alignmentShift(getAlignment(), qLen, kvLen);
  return pos - getLeft() <= kvIdx && kvIdx <= pos + getRight();
}

bool SlidingWindowMaskAttr::isAllVisible(int64_t qLen, int64_t kvLen) const {
  // The extreme pairs: the last query against key 0, the first against the
  // last key.
  return isVisible(qLen - 1, 0, qLen, kvLen) &&
         isVisible(0, kvLen - 1, qLen, kvLen);
}
