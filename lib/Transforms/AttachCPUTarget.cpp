//===- AttachCPUTarget.cpp - target CPU and features on llvm.func ---------===//
//
// Part of the attn project: an MLIR compiler for attention.
//
//===----------------------------------------------------------------------===//

#include "attn/Transforms/Passes.h"
#include "attn/Transforms/Transforms.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/TargetParser/Host.h"

namespace mlir::attn {
#define GEN_PASS_DEF_ATTACHCPUTARGET
#include "attn/Transforms/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;

std::string mlir::attn::resolveHostCPU(StringRef cpu) {
  return cpu == "host" ? llvm::sys::getHostCPUName().str() : cpu.str();
}

std::string mlir::attn::resolveHostFeatures(StringRef features) {
  if (features != "host")
    return features.str();
  std::string result;
  for (const llvm::StringMapEntry<bool> &feature :
       llvm::sys::getHostCPUFeatures()) {
    if (!result.empty())
      result += ',';
    result += (feature.getValue() ? "+" : "-") + feature.getKey().str();
  }
  return result;
}

llvm::Expected<const llvm::Target *>
mlir::attn::getHostTarget(llvm::Triple &triple) {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  triple = llvm::Triple(llvm::sys::getDefaultTargetTriple());
  std::string error;
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return llvm::createStringError(error);
  return target;
}

llvm::Error mlir::attn::checkCPUTarget(StringRef cpu, StringRef features) {
  llvm::Triple triple;
  llvm::Expected<const llvm::Target *> target = getHostTarget(triple);
  if (!target)
    return target.takeError();
  std::unique_ptr<llvm::MCSubtargetInfo> subtarget(
      (*target)->createMCSubtargetInfo(triple, "", ""));
  if (cpu != "host" && !subtarget->isCPUStringValid(cpu))
    return llvm::createStringError("'" + cpu +
                                   "' is not a CPU LLVM knows (e.g. host, "
                                   "skylake-avx512, znver4)");
  if (features == "host" || features.empty())
    return llvm::Error::success();
  SmallVector<StringRef> list;
  features.split(list, ',');
  for (StringRef feature : list) {
    StringRef name = feature.drop_front();
    if ((!feature.starts_with("+") && !feature.starts_with("-")) ||
        !llvm::any_of(
            subtarget->getAllProcessorFeatures(),
            [&](const llvm::SubtargetFeatureKV &kv) { return name == kv.Key; }))
      return llvm::createStringError(
          "'" + feature +
          "' is not a feature LLVM knows, as +name or -name (e.g. +avx512f)");
  }
  return llvm::Error::success();
}

namespace {
struct AttachCPUTargetPass
    : attn::impl::AttachCPUTargetBase<AttachCPUTargetPass> {
  using Base::Base;

  void runOnOperation() override {
    if (llvm::Error error = attn::checkCPUTarget(cpu, features)) {
      getOperation()->emitError()
          << "attn-attach-cpu-target: " << llvm::toString(std::move(error));
      return signalPassFailure();
    }
    MLIRContext *ctx = &getContext();
    auto cpuAttr = StringAttr::get(ctx, attn::resolveHostCPU(cpu));
    auto featuresAttr = LLVM::TargetFeaturesAttr::get(
        ctx, StringRef(attn::resolveHostFeatures(features)));
    getOperation().walk([&](LLVM::LLVMFuncOp func) {
      func.setTargetCpuAttr(cpuAttr);
      func.setTargetFeaturesAttr(featuresAttr);
    });
  }
};
} // namespace
