//===- LowerNestedLinalgToLoops.cpp - linalg in parallel loops -> scf.for -===//
//
// Part of the attn project: an MLIR compiler for attention.
//
//===----------------------------------------------------------------------===//

#include "attn/Transforms/Passes.h"
#include "attn/Transforms/Transforms.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

namespace mlir::attn {
#define GEN_PASS_DEF_LOWERNESTEDLINALGTOLOOPS
#include "attn/Transforms/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

LogicalResult mlir::attn::lowerNestedLinalgToLoops(RewriterBase &rewriter,
                                                   Operation *root) {
  SmallVector<linalg::LinalgOp> nested;
  root->walk([&](linalg::LinalgOp op) {
    if (op.hasPureBufferSemantics() && op->getParentOfType<scf::ParallelOp>())
      nested.push_back(op);
  });
  for (linalg::LinalgOp op : nested) {
    rewriter.setInsertionPoint(op);
    if (failed(linalg::linalgOpToLoops(rewriter, op)))
      return op->emitOpError("cannot be lowered to loops");
    rewriter.eraseOp(op);
  }
  return success();
}

namespace {
struct LowerNestedLinalgToLoopsPass
    : attn::impl::LowerNestedLinalgToLoopsBase<LowerNestedLinalgToLoopsPass> {
  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    if (failed(lowerNestedLinalgToLoops(rewriter, getOperation())))
      signalPassFailure();
  }
};
} // namespace
