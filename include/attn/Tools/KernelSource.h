//===- KernelSource.h - where a tool's kernel comes from --------*- C++ -*-===//
//
// Part of the attn project: an MLIR compiler for attention.
//
// attn-compile and attn-run take a kernel as a .mlir file or as a SPEC; this
// turns either into a module and the function to compile.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_TOOLS_KERNELSOURCE_H
#define ATTN_TOOLS_KERNELSOURCE_H

#include "attn/Tools/AttentionSpec.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"

namespace mlir::attn {

/// Exit code of a tool for a bad SPEC or bad options.
constexpr int kUsageErrorExitCode = 2;

struct KernelSource {
  OwningOpRef<ModuleOp> module;
  func::FuncOp func;                 // the kernel function in `module`
  std::optional<AttentionSpec> spec; // when built from a SPEC
  std::string description;           // the SPEC or the file name
};

/// Every dialect, extension and interface the attn pipelines need.
void registerAttnToolDialects(DialectRegistry &registry);

/// Parses `file` (when non-empty) or builds `spec` and finds the kernel
/// function: `funcName` when given, else the only function that holds an
/// attn.attention. Errors go to the context's diagnostic handler.
FailureOr<KernelSource>
loadKernelSource(MLIRContext *ctx, StringRef file,
                 const std::optional<AttentionSpec> &spec, StringRef funcName);

/// What attn-compile and attn-run do with their `FILE.mlir | --spec SPEC`
/// arguments: parses `specText` when non-empty, then loadKernelSource. On
/// failure, sets `exitCode`: kUsageErrorExitCode for a bad SPEC (printed as
/// "<tool>: error: ..."), 1 for a file without a kernel.
FailureOr<KernelSource> loadToolKernelSource(MLIRContext *ctx,
                                             StringRef toolName, StringRef file,
                                             StringRef specText,
                                             StringRef funcName, int &exitCode);

} // namespace mlir::attn

#endif // ATTN_TOOLS_KERNELSOURCE_H
