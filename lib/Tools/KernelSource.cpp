//===- KernelSource.cpp - where a tool's kernel comes from ----------------===//
//
// Part of the attn project: an MLIR compiler for attention.
//
//===----------------------------------------------------------------------===//

#include "attn/Tools/KernelSource.h"
#include "attn/IR/AttnOps.h"
#include "attn/Support/Nesting.h"

#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"

using namespace mlir;
using namespace mlir::attn;

void mlir::attn::registerAttnToolDialects(DialectRegistry &registry) {
  registry.insert<AttnDialect>();
  registerAllDialects(registry);
  registerAllExtensions(registry);
  // gpu-module-to-binary translates the kernels to LLVM IR (NVVM).
  registerAllToLLVMIRTranslations(registry);
}

FailureOr<KernelSource>
mlir::attn::loadKernelSource(MLIRContext *ctx, StringRef file,
                             const std::optional<AttentionSpec> &spec,
                             StringRef funcName) {
  KernelSource source;
  if (spec) {
    source.spec = spec;
    source.description = spec->str();
    source.module = buildAttentionModule(ctx, *spec, "attention");
  } else {
    source.description = file.str();
    llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
        llvm::MemoryBuffer::getFileOrSTDIN(file);
    if (!buffer)
      return emitError(UnknownLoc::get(ctx))
             << "cannot read '" << file << "': " << buffer.getError().message();
    if (unsigned line = findDeepNesting((*buffer)->getBuffer()))
      return emitError(UnknownLoc::get(ctx))
             << file << ":" << line << ": the input nests brackets more than "
             << kMaxNesting << " levels deep, past what MLIR's parser can take";
    llvm::SourceMgr sourceMgr;
    sourceMgr.AddNewSourceBuffer(std::move(*buffer), llvm::SMLoc());
    source.module = parseSourceFile<ModuleOp>(sourceMgr, ctx);
  }
  if (!source.module)
    return failure();

  ModuleOp module = *source.module;
  if (!funcName.empty()) {
    source.func = module.lookupSymbol<func::FuncOp>(funcName);
    if (!source.func)
      return module.emitError() << "no function named '" << funcName << "'";
  } else {
    for (auto func : module.getOps<func::FuncOp>()) {
      if (func.isExternal() ||
          llvm::none_of(func.getBody().front(),
                        [](Operation &op) { return isKernelOp(&op); }))
        continue;
      if (source.func)
        return module.emitError()
               << "more than one function holds an attn.attention ('"
               << source.func.getSymName() << "', '" << func.getSymName()
               << "'); choose one with --function";
      source.func = func;
    }
    if (!source.func)
      return module.emitError() << "no function holds an attn.attention";
  }
  return source;
}

FailureOr<KernelSource>
mlir::attn::loadToolKernelSource(MLIRContext *ctx, StringRef toolName,
                                 StringRef file, StringRef specText,
                                 StringRef funcName, int &exitCode) {
  std::optional<AttentionSpec> spec;
  if (!specText.empty() && !funcName.empty()) {
    llvm::errs() << toolName
                 << ": error: --function picks a function of FILE.mlir; a "
                    "--spec builds its own\n";
    exitCode = kUsageErrorExitCode;
    return failure();
  }
  if (!specText.empty()) {
    llvm::Expected<AttentionSpec> parsed = parseAttentionSpec(specText);
    if (!parsed) {
      llvm::errs() << toolName
                   << ": error: " << llvm::toString(parsed.takeError()) << "\n";
      exitCode = kUsageErrorExitCode;
      return failure();
    }
    spec = *parsed;
  }
  FailureOr<KernelSource> source = loadKernelSource(ctx, file, spec, funcName);
  if (failed(source))
    exitCode = 1;
  return source;
}
