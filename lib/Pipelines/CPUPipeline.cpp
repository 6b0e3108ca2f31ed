//===- CPUPipeline.cpp - attn-cpu-pipeline: attn to the LLVM dialect ------===//
//
// Part of the attn project: an MLIR compiler for attention.
//
//===----------------------------------------------------------------------===//

#include "attn/Pipelines/Pipelines.h"
#include "attn/Transforms/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/Transforms/Passes.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/Threading.h"

#include <algorithm>

using namespace mlir;

void mlir::attn::buildCPUPipeline(OpPassManager &pm,
                                  const CPUPipelineOptions &options) {
  // attn -> linalg on tensors.
  if (options.fused) {
    // Decode shapes split their keys across threads first (split-K).
    SplitKeyValueOptions split;
    split.parallelism = std::max<int64_t>(2, llvm::get_physical_cores());
    pm.addPass(createSplitKeyValue(split));
    TileAttentionOptions tile;
    tile.queryTileSize = options.queryTileSize;
    pm.addPass(createTileAttention(tile));
    FuseOnlineSoftmaxOptions fuse;
    fuse.kvTileSize = options.kvTileSize;
    fuse.countTiles = options.countTiles;
    pm.addPass(createFuseOnlineSoftmax(fuse));
    if (options.ukernels)
      pm.addPass(createLowerToUKernels());
  }
  pm.addPass(createDecomposeAttention());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());

  // Tensors -> buffers. The destination argument is written in place, so the
  // function result is equivalent to it and dropped: kernels return nothing.
  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  bufferize.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  // Folds collapse_shape(expand_shape(arg)) so the result is the argument.
  pm.addPass(createCanonicalizerPass());
  pm.addPass(bufferization::createDropEquivalentBufferResultsPass());
  bufferization::buildBufferDeallocationPipeline(pm);
  // A public function returning its argument returns an owned copy.
  pm.addPass(createConvertBufferizationToMemRefPass());
  pm.addPass(createLowerUKernelOpsToCalls());

  // Buffers -> loops, the parallel ones (the tiles of attn-tile first) as
  // OpenMP work-sharing loops (the thread count is libomp's:
  // OMP_NUM_THREADS or omp_set_num_threads).
  pm.addPass(createForallToParallelLoopPass());
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToParallelLoopsPass());
  pm.addPass(createConvertSCFToOpenMPPass());
  pm.addPass(createCanonicalizerPass());

  // -> LLVM. memref before scf-to-cf, so OpenMP regions see LLVM types.
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(createConvertOpenMPToLLVMPass());
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createConvertMathToLibmPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createConvertIndexToLLVMPass());
  pm.addPass(createUBToLLVMConversionPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  pm.addPass(createCanonicalizerPass());

  AttachCPUTargetOptions target;
  target.cpu = options.cpu;
  target.features = options.features;
  pm.addPass(createAttachCPUTarget(target));
}

void mlir::attn::registerAttnPipelines() {
  PassPipelineRegistration<CPUPipelineOptions>(
      "attn-cpu-pipeline",
      "Lower attn ops on tensors to the LLVM dialect for x86 CPUs",
      buildCPUPipeline);
}
