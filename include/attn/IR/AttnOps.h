//===- AttnOps.h - attn operations ------------------------------*- C++ -*-===//
//
// Part of the attn project: an MLIR compiler for attention.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_IR_ATTNOPS_H
#define ATTN_IR_ATTNOPS_H

#include "attn/IR/AttnDialect.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/DestinationStyleOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#define GET_OP_CLASSES
#include "attn/IR/AttnOps.h.inc"

namespace mlir::attn {
/// Whether `op` is what a kernel function computes: an attn.attention,
/// attn.linear_attention, attn.additive_attention or
/// attn.multi_head_attention.
inline bool isKernelOp(Operation *op) {
  return isa<AttentionOp, LinearAttentionOp, AdditiveAttentionOp,
             MultiHeadAttentionOp>(op);
}
} // namespace mlir::attn

#endif // ATTN_IR_ATTNOPS_H
