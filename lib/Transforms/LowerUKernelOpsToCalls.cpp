//===- LowerUKernelOpsToCalls.cpp - attn.ukernel.generic -> func.call -----===//
//
// Part of the attn project: an MLIR compiler for attention.
//
//===----------------------------------------------------------------------===//

#include "attn/IR/AttnOps.h"
#include "attn/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/SymbolTable.h"

namespace mlir::attn {
#define GEN_PASS_DEF_LOWERUKERNELOPSTOCALLS
#include "attn/Transforms/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

/// memref<?x...x?xT, strided<[?, ..., ?], offset: ?>>: the one type every
/// call site of a micro-kernel agrees on.
static MemRefType getFullyDynamicType(MemRefType type) {
  int64_t rank = type.getRank();
  auto layout =
      StridedLayoutAttr::get(type.getContext(), ShapedType::kDynamic,
                             SmallVector<int64_t>(rank, ShapedType::kDynamic));
  return MemRefType::get(SmallVector<int64_t>(rank, ShapedType::kDynamic),
                         type.getElementType(), layout, type.getMemorySpace());
}

namespace {
struct LowerUKernelOpsToCallsPass
    : attn::impl::LowerUKernelOpsToCallsBase<LowerUKernelOpsToCallsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    IRRewriter rewriter(&getContext());
    WalkResult result = module.walk([&](UKernelGenericOp op) -> WalkResult {
      if (op.getNumResults() != 0 || op.hasPureTensorSemantics()) {
        op.emitOpError("must be bufferized before it becomes a call");
        return WalkResult::interrupt();
      }
      rewriter.setInsertionPoint(op);
      SmallVector<Value> args;
      for (Value operand : op->getOperands()) {
        auto memref = dyn_cast<MemRefType>(operand.getType());
        args.push_back(memref ? memref::CastOp::create(
                                    rewriter, op.getLoc(),
                                    getFullyDynamicType(memref), operand)
                              : operand);
      }
      auto type =
          FunctionType::get(&getContext(), ValueRange(args).getTypes(), {});
      auto callee = symbols.lookup<func::FuncOp>(op.getUkernel());
      if (!callee) {
        OpBuilder::InsertionGuard guard(rewriter);
        rewriter.setInsertionPointToStart(module.getBody());
        callee = func::FuncOp::create(rewriter, module.getLoc(),
                                      op.getUkernel(), type);
        callee.setPrivate();
        // The C routine takes pointers to memref descriptors.
        callee->setAttr(LLVM::LLVMDialect::getEmitCWrapperAttrName(),
                        rewriter.getUnitAttr());
        symbols.insert(callee);
      } else if (callee.getFunctionType() != type) {
        op.emitOpError("operand types do not match the earlier calls of '")
            << op.getUkernel() << "': " << type << " vs "
            << callee.getFunctionType();
        return WalkResult::interrupt();
      }
      rewriter.replaceOpWithNewOp<func::CallOp>(op, callee, args);
      return WalkResult::advance();
    });
    if (result.wasInterrupted())
      signalPassFailure();
  }
};
} // namespace
