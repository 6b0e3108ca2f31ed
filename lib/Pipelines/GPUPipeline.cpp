//===- GPUPipeline.cpp - attn-gpu-pipeline
//---------------------------------===//
//
// Part of the attn project: an MLIR compiler for attention.
//
//===----------------------------------------------------------------------===//

#include "attn/Pipelines/Pipelines.h"
#include "attn/Transforms/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/LLVMIR/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Transforms/Passes.h"

#include <cstdlib>

using namespace mlir;

std::string mlir::attn::getCUDAToolkitPath(StringRef requested) {
  if (!requested.empty())
    return requested.str();
  if (const char *home = std::getenv("CUDA_HOME"); home && *home)
    return home;
  return "/usr/local/cuda";
}

void mlir::attn::buildGPUPipeline(OpPassManager &pm,
                                  const GPUPipelineOptions &options) {
  ConvertAttnToGPUOptions convert;
  copyGPUKernelOptions(convert, options);
  pm.addPass(createConvertAttnToGPU(convert));
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());

  // The kernels -> NVVM.
  OpPassManager &kernels = pm.nest<gpu::GPUModuleOp>();
  kernels.addPass(createSCFToControlFlowPass());
  kernels.addPass(memref::createExpandStridedMetadataPass());
  kernels.addPass(createLowerAffinePass());
  kernels.addPass(createConvertNVGPUToNVVMPass());
  kernels.addPass(createConvertGpuOpsToNVVMOps());
  kernels.addPass(createCanonicalizerPass());
  kernels.addPass(createCSEPass());
  kernels.addPass(createReconcileUnrealizedCastsPass());

  // NVVM -> PTX (and cubin), libdevice linked from the toolkit: without it
  // __nv_* calls would stay unresolved externs.
  GpuNVVMAttachTargetOptions target;
  target.chip = options.chip;
  target.features = options.features;
  target.optLevel = 3;
  pm.addPass(createGpuNVVMAttachTarget(target));
  GpuModuleToBinaryPassOptions binary;
  binary.toolkitPath = getCUDAToolkitPath(options.toolkit);
  binary.compilationTarget = options.format;
  pm.addPass(createGpuModuleToBinaryPass(binary));
}
