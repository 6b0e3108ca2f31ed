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
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/Triple.h"

#include <cstdlib>

using namespace mlir;

std::string mlir::attn::getCUDAToolkitPath(StringRef requested) {
  if (!requested.empty())
    return requested.str();
  if (const char *home = std::getenv("CUDA_HOME"); home && *home)
    return home;
  return "/usr/local/cuda";
}

/// The PTX ISA version (80 for 8.0) LLVM writes for `chip` when not told
/// one: the oldest that knows the chip. LLVM keeps that table inside its
/// NVPTX subtarget, so this asks it for the PTX of an empty module.
static unsigned defaultPTXVersion(const llvm::Target &target,
                                  const llvm::Triple &triple, StringRef chip) {
  std::unique_ptr<llvm::TargetMachine> machine(target.createTargetMachine(
      triple, chip, "", llvm::TargetOptions(), std::nullopt));
  llvm::LLVMContext context;
  llvm::Module module("ptx-version", context);
  module.setTargetTriple(triple);
  module.setDataLayout(machine->createDataLayout());
  SmallString<256> ptx;
  llvm::raw_svector_ostream os(ptx);
  llvm::legacy::PassManager pm;
  if (machine->addPassesToEmitFile(pm, os, nullptr,
                                   llvm::CodeGenFileType::AssemblyFile))
    return 0;
  pm.run(module);
  StringRef version = StringRef(ptx).split(".version ").second;
  unsigned major = 0, minor = 0;
  if (version.consumeInteger(10, major) || !version.consume_front(".") ||
      version.consumeInteger(10, minor))
    return 0;
  return 10 * major + minor;
}

std::optional<unsigned> mlir::attn::parseSMVersion(StringRef chip) {
  unsigned sm = 0;
  if (!chip.consume_front("sm_") || chip.consumeInteger(10, sm))
    return std::nullopt;
  return sm;
}

llvm::Expected<mlir::attn::NVPTXTarget>
mlir::attn::resolveNVPTXTarget(StringRef chip, StringRef features) {
  LLVMInitializeNVPTXTargetInfo();
  LLVMInitializeNVPTXTargetMC();
  LLVMInitializeNVPTXTarget();
  LLVMInitializeNVPTXAsmPrinter();
  llvm::Triple triple("nvptx64-nvidia-cuda");
  std::string error;
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return llvm::createStringError("no NVPTX backend in this LLVM: " + error);
  std::unique_ptr<llvm::MCSubtargetInfo> subtarget(
      target->createMCSubtargetInfo(triple, "", ""));
  std::optional<unsigned> sm = parseSMVersion(chip);
  if (!subtarget || !subtarget->isCPUStringValid(chip) || !sm)
    return llvm::createStringError("'" + chip +
                                   "' is not an NVIDIA architecture LLVM "
                                   "knows (e.g. sm_80, sm_90)");
  // Older chips would need PTX and ptxas targets the toolkits attn is built
  // with (CUDA 13) no longer have.
  NVPTXTarget resolved;
  resolved.sm = *sm;
  if (resolved.sm < 75)
    return llvm::createStringError(
        "'" + chip + "' is older than the sm_75 attn's GPU kernels need");
  unsigned oldest = defaultPTXVersion(*target, triple, chip);
  if (!oldest)
    return llvm::createStringError("LLVM writes no PTX for '" + chip + "'");
  if (features.empty()) {
    resolved.features = "+ptx" + std::to_string(std::max(80u, oldest));
    return resolved;
  }
  // LLVM aborts on a PTX ISA older than the chip: refuse it first.
  SmallVector<StringRef> list;
  features.split(list, ',', -1, /*KeepEmpty=*/false);
  for (StringRef feature : list) {
    unsigned version = 0;
    if (feature.consume_front("+ptx") && !feature.getAsInteger(10, version) &&
        version < oldest)
      return llvm::createStringError(
          llvm::formatv("'{0}' needs PTX ISA {1}.{2} or newer; features "
                        "'{3}' ask for {4}.{5}",
                        chip, oldest / 10, oldest % 10, features, version / 10,
                        version % 10)
              .str());
  }
  resolved.features = features.str();
  return resolved;
}

LogicalResult mlir::attn::buildGPUPipeline(
    OpPassManager &pm, const GPUPipelineOptions &options,
    function_ref<LogicalResult(const Twine &)> errorHandler) {
  llvm::Expected<NVPTXTarget> chip =
      resolveNVPTXTarget(options.chip, options.features);
  if (!chip)
    return errorHandler(llvm::toString(chip.takeError()));
  ConvertAttnToGPUOptions convert;
  copyGPUKernelOptions(convert, options);
  convert.mma = options.mma && chip->hasTensorCores();
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
  target.features = chip->features;
  target.optLevel = 3;
  pm.addPass(createGpuNVVMAttachTarget(target));
  GpuModuleToBinaryPassOptions binary;
  binary.toolkitPath = getCUDAToolkitPath(options.toolkit);
  binary.compilationTarget = options.format;
  pm.addPass(createGpuModuleToBinaryPass(binary));
  return success();
}
