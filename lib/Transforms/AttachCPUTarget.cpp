//===- AttachCPUTarget.cpp - target CPU and features on llvm.func ---------===//
//
// Part of the attn project: an MLIR compiler for attention.
//
//===----------------------------------------------------------------------===//

#include "attn/Transforms/Passes.h"
#include "attn/Transforms/Transforms.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "llvm/ADT/StringMap.h"
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

namespace {
struct AttachCPUTargetPass
    : attn::impl::AttachCPUTargetBase<AttachCPUTargetPass> {
  using Base::Base;

  void runOnOperation() override {
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
