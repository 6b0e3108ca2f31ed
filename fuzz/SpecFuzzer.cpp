//===- SpecFuzzer.cpp - libFuzzer target: SPEC strings --------------------===//
//
// Part of the attn project: an MLIR compiler for attention.
//
// An input is a SPEC (`b=2,hq=8,...`). A spec the parser takes must print
// back to a text that parses to the same spec, and build a kernel module
// that verifies (or say why not) and whose signature the ABI can describe.
// Rejections are expected; a crash, a sanitizer report or a broken round
// trip is a finding.
//
//===----------------------------------------------------------------------===//

#include "attn/Target/CPUKernel.h"
#include "attn/Tools/AttentionSpec.h"
#include "attn/Tools/KernelSource.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"

#include <cstdio>
#include <cstdlib>
#include <memory>

using namespace mlir;
using namespace mlir::attn;

static MLIRContext &context() {
  static std::unique_ptr<MLIRContext> ctx;
  static unsigned uses = 0;
  if (!ctx || ++uses % 1000 == 0) {
    DialectRegistry registry;
    registerAttnToolDialects(registry);
    ctx = std::make_unique<MLIRContext>(registry);
    ctx->disableMultithreading();
    ctx->printOpOnDiagnostic(false);
  }
  return *ctx;
}

[[noreturn]] static void finding(const char *what, StringRef spec) {
  std::fprintf(stderr, "attn-spec-fuzzer: %s: '%s'\n", what,
               spec.str().c_str());
  std::abort();
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  StringRef text(reinterpret_cast<const char *>(data), size);
  llvm::Expected<AttentionSpec> spec = parseAttentionSpec(text);
  if (!spec) {
    llvm::consumeError(spec.takeError());
    return 0;
  }
  std::string canonical = spec->str();
  llvm::Expected<AttentionSpec> again = parseAttentionSpec(canonical);
  if (!again) {
    llvm::consumeError(again.takeError());
    finding("the canonical text of a spec does not parse", canonical);
  }
  if (again->str() != canonical)
    finding("the canonical text does not round-trip", canonical);

  MLIRContext &ctx = context();
  ScopedDiagnosticHandler quiet(&ctx, [](Diagnostic &) { return success(); });
  OwningOpRef<ModuleOp> module = buildAttentionModule(&ctx, *spec, "kernel");
  if (!module)
    return 0;
  auto func = module->lookupSymbol<func::FuncOp>("kernel");
  if (!func)
    finding("the built module has no kernel function", canonical);
  (void)analyzeKernel(func);
  return 0;
}
