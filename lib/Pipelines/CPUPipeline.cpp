//===- CPUPipeline.cpp - attn-cpu-pipeline: attn to the LLVM dialect ------===//
//
// Part of the attn project: an MLIR compiler for attention.
//
//===----------------------------------------------------------------------===//

#include "attn/IR/AttnDialect.h"
#include "attn/Pipelines/Pipelines.h"
#include "attn/Transforms/Passes.h"
#include "attn/Transforms/Transforms.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/Transforms/Passes.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Threading.h"

#include <algorithm>

using namespace mlir;

int64_t mlir::attn::getL2CacheSize(StringRef cpu) {
  constexpr int64_t kDefault = 1 << 20;
  if (cpu != "host")
    return kDefault;
  // Linux describes each cache of cpu0 under cache/indexN.
  for (int index = 0; index < 8; ++index) {
    std::string dir =
        "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index);
    auto read = [&](StringRef file) -> std::string {
      auto buffer = llvm::MemoryBuffer::getFile(dir + "/" + file.str(),
                                                /*IsText=*/true);
      return buffer ? (*buffer)->getBuffer().trim().str() : std::string();
    };
    if (read("level") != "2" || read("type") == "Instruction")
      continue;
    std::string sizeText = read("size"); // StringRef must not outlive it
    StringRef size = sizeText;
    int64_t value = 0;
    if (size.consume_back("K") && !size.getAsInteger(10, value))
      return value * 1024;
    if (size.consume_back("M") && !size.getAsInteger(10, value))
      return value * 1024 * 1024;
  }
  return kDefault;
}

void mlir::attn::buildCPUPipeline(OpPassManager &pm,
                                  const CPUPipelineOptions &options) {
  int64_t l2CacheSize = options.l2CacheSize > 0
                            ? static_cast<int64_t>(options.l2CacheSize)
                            : getL2CacheSize(options.cpu);
  // attn -> linalg on tensors: projections first.
  pm.addPass(createExpandMultiHeadAttention());
  pm.addPass(createExpandAdditiveAttention());
  if (options.fused) {
    // Decode shapes split their keys across threads first (split-K).
    SplitKeyValueOptions split;
    split.parallelism = std::max<int64_t>(2, llvm::get_physical_cores());
    pm.addPass(createSplitKeyValue(split));
    TileAttentionOptions tile;
    tile.queryTileSize = options.queryTileSize;
    tile.l2CacheSize = l2CacheSize;
    tile.parallelism = split.parallelism;
    pm.addPass(createTileAttention(tile));
    // Cuts start on the fused loop's key tiles.
    ClassifyBlocksOptions classify;
    classify.kvTileSize = options.kvTileSize;
    classify.l2CacheSize = l2CacheSize;
    pm.addPass(createClassifyBlocks(classify));
    FuseOnlineSoftmaxOptions fuse;
    fuse.kvTileSize = options.kvTileSize;
    fuse.l2CacheSize = l2CacheSize;
    fuse.countTiles = options.countTiles;
    pm.addPass(createFuseOnlineSoftmax(fuse));
    if (options.ukernels)
      pm.addPass(createLowerToUKernels());
  }
  pm.addPass(createLowerLinearAttention());
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
  // Linalg inside a tile stays on the tile's thread, as vectorizable loops.
  pm.addNestedPass<func::FuncOp>(createLowerNestedLinalgToLoops());
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToParallelLoopsPass());
  pm.addPass(createConvertSCFToOpenMPPass());
  pm.addPass(createCanonicalizerPass());

  // bf16 stores without a libcall GCC 12's libgcc lacks (no AVX512-BF16);
  // before the OpenMP and memref conversions, which convert arith too.
  pm.addPass(createExpandBF16Conversions());
  // -> LLVM. memref before scf-to-cf, so OpenMP regions see LLVM types.
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(createConvertOpenMPToLLVMPass());
  // tanh as arithmetic LLVM can vectorize, not a libm call.
  pm.addPass(createApproximateMath());
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

void mlir::attn::registerAttnOptDialects(DialectRegistry &registry) {
  registry.insert<AttnDialect>();
  registerAllDialects(registry);
  registerAllExtensions(registry);
  registerAllToLLVMIRTranslations(registry);
  registerTilingInterfaceExternalModels(registry);
}

void mlir::attn::registerAttnPipelines() {
  PassPipelineRegistration<CPUPipelineOptions>(
      "attn-cpu-pipeline",
      "Lower attn ops on tensors to the LLVM dialect for x86 CPUs",
      buildCPUPipeline);
  // Not PassPipelineRegistration: its builder cannot refuse a chip.
  registerPassPipeline(
      "attn-gpu-pipeline",
      "Lower attention kernel functions to NVVM and PTX/cubin for NVIDIA "
      "GPUs",
      [](OpPassManager &pm, StringRef text,
         function_ref<LogicalResult(const Twine &)> errorHandler) {
        GPUPipelineOptions options;
        if (failed(options.parseFromString(text)))
          return failure();
        return buildGPUPipeline(pm, options, errorHandler);
      },
      [](function_ref<void(const mlir::detail::PassOptions &)> printOptions) {
        printOptions(GPUPipelineOptions());
      });
}
