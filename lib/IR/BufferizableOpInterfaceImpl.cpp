//===- BufferizableOpInterfaceImpl.cpp - bufferizing attn.ukernel.generic -===//
//
// Part of the attn project: an MLIR compiler for attention.
//
//===----------------------------------------------------------------------===//

#include "attn/IR/AttnOps.h"

#include "mlir/Dialect/Bufferization/IR/BufferizableOpInterface.h"
#include "mlir/Dialect/Bufferization/IR/DstBufferizableOpInterfaceImpl.h"

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::bufferization;

namespace {
/// A micro-kernel call on tensors becomes the same call on the buffers of
/// its operands: inputs are read, outputs updated in place (or in the copy
/// that the analysis decided on), like any destination-style op.
struct UKernelGenericOpInterface
    : public DstBufferizableOpInterfaceExternalModel<UKernelGenericOpInterface,
                                                     UKernelGenericOp> {
  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &options,
                          BufferizationState &state) const {
    auto ukernel = cast<UKernelGenericOp>(op);
    auto buffersOf = [&](ValueRange values) -> FailureOr<SmallVector<Value>> {
      SmallVector<Value> buffers;
      for (Value value : values) {
        FailureOr<Value> buffer = getBuffer(rewriter, value, options, state);
        if (failed(buffer))
          return failure();
        buffers.push_back(*buffer);
      }
      return buffers;
    };
    FailureOr<SmallVector<Value>> inputs = buffersOf(ukernel.getInputs());
    FailureOr<SmallVector<Value>> outputs = buffersOf(ukernel.getOutputs());
    if (failed(inputs) || failed(outputs))
      return failure();
    rewriter.setInsertionPoint(op);
    UKernelGenericOp::create(rewriter, op->getLoc(), TypeRange{},
                             ukernel.getUkernelAttr(), *inputs, *outputs,
                             ukernel.getScalars());
    replaceOpWithBufferizedValues(rewriter, op, *outputs);
    return success();
  }
};
} // namespace

void mlir::attn::registerBufferizableOpInterfaceExternalModels(
    MLIRContext *ctx) {
  UKernelGenericOp::attachInterface<UKernelGenericOpInterface>(*ctx);
}
