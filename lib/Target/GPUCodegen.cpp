//===- GPUCodegen.cpp - ahead-of-time NVIDIA GPU kernels ------------------===//
//
// Part of the attn project: an MLIR compiler for attention.
//
//===----------------------------------------------------------------------===//

#include "attn/Pipelines/Pipelines.h"
#include "attn/Target/GPUKernel.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/TargetParser/Triple.h"

using namespace mlir;
using namespace mlir::attn;

llvm::Error mlir::attn::checkGPUTarget(const GPUTargetOptions &options) {
  LLVMInitializeNVPTXTargetInfo();
  LLVMInitializeNVPTXTargetMC();
  llvm::Triple triple("nvptx64-nvidia-cuda");
  std::string error;
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return llvm::createStringError("no NVPTX backend in this LLVM: " + error);
  std::unique_ptr<llvm::MCSubtargetInfo> subtarget(
      target->createMCSubtargetInfo(triple, "", ""));
  if (!subtarget || !subtarget->isCPUStringValid(options.chip))
    return llvm::createStringError("'" + options.chip +
                                   "' is not an NVIDIA architecture LLVM "
                                   "knows (e.g. sm_80, sm_90)");
  std::string toolkit = getCUDAToolkitPath(options.toolkit);
  SmallString<256> libdevice(toolkit), ptxas(toolkit);
  llvm::sys::path::append(libdevice, "nvvm", "libdevice");
  llvm::sys::path::append(ptxas, "bin", "ptxas");
  if (!llvm::sys::fs::is_directory(libdevice) ||
      !llvm::sys::fs::can_execute(ptxas))
    return llvm::createStringError(
        "no CUDA toolkit at '" + toolkit +
        "' (it needs nvvm/libdevice and bin/ptxas; set --cuda-toolkit or "
        "CUDA_HOME)");
  return llvm::Error::success();
}

namespace {
/// One lowering of a kernel: its binary and how its host function launches
/// it.
struct LoweredKernel {
  std::string binary;
  int64_t threads, blockRows, kvAlignment;
};
} // namespace

/// The kernel of `name` lowered to `format` (isa: PTX, bin: cubin).
static FailureOr<LoweredKernel> lowerToBinary(func::FuncOp func, StringRef name,
                                              const GPUTargetOptions &options,
                                              StringRef format) {
  OwningOpRef<ModuleOp> module = ModuleOp::create(func.getLoc());
  OpBuilder builder(func.getContext());
  builder.setInsertionPointToEnd(module->getBody());
  auto kernel = cast<func::FuncOp>(builder.clone(*func));
  kernel.setSymName(name);

  // A failing stage reports its error, not the whole module after it.
  MLIRContext *ctx = func.getContext();
  bool printOp = ctx->shouldPrintOpOnDiagnostic();
  ctx->printOpOnDiagnostic(false);
  llvm::scope_exit restore([&] { ctx->printOpOnDiagnostic(printOp); });
  PassManager pm(ctx);
  GPUPipelineOptions pipeline;
  pipeline.chip = options.chip;
  pipeline.toolkit = options.toolkit;
  pipeline.format = format.str();
  pipeline.blockRows = options.blockRows;
  pipeline.kvTileSize = options.kvTileSize;
  pipeline.mma = options.mma;
  buildGPUPipeline(pm, pipeline);
  if (failed(pm.run(*module)))
    return failure();

  auto binary = module->lookupSymbol<gpu::BinaryOp>((name + "_kernels").str());
  gpu::LaunchFuncOp launch;
  module->walk([&](gpu::LaunchFuncOp op) { launch = op; });
  APInt threads;
  auto attr = [&](StringRef name) {
    return launch ? launch->getAttrOfType<IntegerAttr>(name) : nullptr;
  };
  IntegerAttr rows = attr("attn.block_rows"),
              alignment = attr("attn.kv_alignment");
  if (!binary || binary.getObjects().size() != 1 || !launch || !rows ||
      !alignment ||
      !matchPattern(launch.getBlockSizeX(), m_ConstantInt(&threads)))
    return module->emitError()
           << "attn-gpu-pipeline did not produce one binary and its launch";
  auto object = cast<gpu::ObjectAttr>(binary.getObjects()[0]);
  return LoweredKernel{object.getObject().getValue().str(),
                       threads.getSExtValue(), rows.getInt(),
                       alignment.getInt()};
}

FailureOr<GPUKernelBinary>
mlir::attn::compileGPUKernel(func::FuncOp func, StringRef name,
                             const GPUTargetOptions &options) {
  auto ptx = lowerToBinary(func, name, options, "isa");
  if (failed(ptx))
    return failure();
  auto cubin = lowerToBinary(func, name, options, "bin");
  if (failed(cubin))
    return failure();
  return GPUKernelBinary{ptx->binary,    cubin->binary, options.chip,
                         ptx->blockRows, ptx->threads,  ptx->kvAlignment};
}
