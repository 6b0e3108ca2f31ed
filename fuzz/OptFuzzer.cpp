//===- OptFuzzer.cpp - libFuzzer target: MLIR through every attn pass -----===//
//
// Part of the attn project: an MLIR compiler for attention.
//
// An input is textual MLIR. What parses and verifies runs, on a fresh copy
// each time, through every attn pass alone and through both pipelines.
// Diagnostics are expected; a crash, a sanitizer report or a module a pass
// leaves invalid is a finding.
//
//===----------------------------------------------------------------------===//

#include "attn/Pipelines/Pipelines.h"
#include "attn/Support/Nesting.h"
#include "attn/Transforms/Passes.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"

#include <cstdio>
#include <cstdlib>
#include <memory>

using namespace mlir;

/// Each pass alone, then the pipelines (the GPU one up to NVVM: its last
/// step runs ptxas, a separate program).
static const char *const kPipelines[] = {
    "builtin.module(attn-expand-mha)",
    "builtin.module(attn-expand-additive)",
    "builtin.module(attn-decompose)",
    "builtin.module(attn-lower-linear-attention)",
    "builtin.module(attn-attach-cpu-target)",
    "builtin.module(attn-classify-blocks)",
    "builtin.module(attn-fuse-online-softmax)",
    "builtin.module(attn-tile)",
    "builtin.module(attn-split-kv)",
    "builtin.module(attn-lower-to-ukernels)",
    "builtin.module(attn-lower-ukernel-ops-to-calls)",
    "builtin.module(attn-lower-nested-linalg-to-loops)",
    "builtin.module(attn-approximate-math)",
    "builtin.module(attn-expand-bf16-conversions)",
    "builtin.module(attn-convert-to-gpu)",
    "builtin.module(attn-convert-to-gpu{mma=true kv-stages=2 pack-gqa=false})",
    "builtin.module(attn-convert-to-gpu{mma=true mma-query-in-shared=true})",
    "builtin.module(attn-convert-to-gpu{mma=true mma-row-sums=true})",
    "builtin.module(attn-cpu-pipeline)",
    "builtin.module(attn-cpu-pipeline{fused=false})",
    "builtin.module(attn-convert-to-gpu{mma=true},canonicalize,cse,"
    "gpu.module(convert-scf-to-cf,expand-strided-metadata,lower-affine,"
    "convert-nvgpu-to-nvvm,convert-gpu-to-nvvm,canonicalize,cse,"
    "reconcile-unrealized-casts))",
    "builtin.module(attn-convert-to-gpu{mma=true mma-warp-rows=32},"
    "canonicalize,cse,"
    "gpu.module(convert-scf-to-cf,expand-strided-metadata,lower-affine,"
    "convert-nvgpu-to-nvvm,convert-gpu-to-nvvm,canonicalize,cse,"
    "reconcile-unrealized-casts))",
};

/// A context with every dialect attn-opt knows, replaced now and then so
/// that the types and attributes of past inputs do not pile up.
static MLIRContext &context() {
  static std::unique_ptr<MLIRContext> ctx;
  static unsigned uses = 0;
  if (!ctx || ++uses % 1000 == 0) {
    DialectRegistry registry;
    attn::registerAttnOptDialects(registry);
    ctx = std::make_unique<MLIRContext>(registry);
    ctx->disableMultithreading();
    ctx->printOpOnDiagnostic(false);
  }
  return *ctx;
}

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  registerAllPasses();
  attn::registerAttnPasses();
  attn::registerAttnPipelines();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  StringRef text(reinterpret_cast<const char *>(data), size);
  // As attn-opt and attn-compile do: refuse deep nesting before MLIR's
  // parser, whose recursion would overflow the stack.
  if (attn::findDeepNesting(text))
    return 0;
  MLIRContext &ctx = context();
  ScopedDiagnosticHandler quiet(&ctx, [](Diagnostic &) { return success(); });
  ParserConfig config(&ctx);
  // A file as attn-opt reads it: MLIR's lexer stops at a terminating NUL,
  // which the fuzzer's bytes lack.
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(text, "input"), llvm::SMLoc());
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, config);
  if (!module || failed(verify(*module)))
    return 0;
  for (const char *pipeline : kPipelines) {
    OwningOpRef<ModuleOp> copy(module->clone());
    PassManager pm(&ctx);
    pm.enableVerifier(false);
    if (failed(parsePassPipeline(pipeline, pm))) {
      std::fprintf(stderr, "attn-opt-fuzzer: bad pipeline %s\n", pipeline);
      std::abort();
    }
    // A pass that fails has said why; one that succeeds must leave valid IR.
    if (succeeded(pm.run(*copy)) && failed(verify(*copy))) {
      std::fprintf(stderr, "attn-opt-fuzzer: %s left invalid IR\n", pipeline);
      std::abort();
    }
  }
  return 0;
}
