//===- attn-opt.cpp - run attn passes and pipelines on .mlir files --------===//
//
// Part of the attn project: an MLIR compiler for attention.
//
//===----------------------------------------------------------------------===//

#include "attn/Pipelines/Pipelines.h"
#include "attn/Support/Nesting.h"
#include "attn/Support/OutputFile.h"
#include "attn/Transforms/Passes.h"

#include "mlir/Bytecode/BytecodeReader.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/ToolOutputFile.h"

using namespace mlir;

int main(int argc, char **argv) {
  // Upstream dialects, passes and translations are registered as a whole:
  // the attn pipelines mix linalg, vector, gpu and the LLVM/NVVM targets.
  registerAllPasses();
  attn::registerAttnPasses();
  attn::registerAttnPipelines();

  DialectRegistry registry;
  attn::registerAttnOptDialects(registry);

  auto [inputFilename, outputFilename] = registerAndParseCLIOptions(
      argc, argv, "attn optimizer driver\n", registry);
  MlirOptMainConfig config = MlirOptMainConfig::createFromCLOptions();
  if (config.shouldShowDialects()) {
    for (StringRef name : registry.getDialectNames())
      llvm::outs() << name << "\n";
    return 0;
  }
  if (config.shouldListPasses()) {
    printRegisteredPasses();
    return 0;
  }

  std::string error;
  std::unique_ptr<llvm::MemoryBuffer> input =
      openInputFile(inputFilename, &error);
  if (!input) {
    llvm::errs() << error << "\n";
    return 1;
  }
  // MLIR 22's bytecode reader crashes on corrupted files; attn-opt promises
  // a diagnostic for any malformed input, so it reads the textual form only.
  if (isBytecode(*input)) {
    llvm::errs() << "attn-opt: error: '" << inputFilename
                 << "' is MLIR bytecode; attn-opt reads textual MLIR only\n";
    return 1;
  }
  if (unsigned line = attn::findDeepNesting(input->getBuffer())) {
    llvm::errs() << inputFilename << ":" << line
                 << ": error: the input nests brackets more than "
                 << attn::kMaxNesting
                 << " levels deep, past what MLIR's parser can take\n";
    return 1;
  }
  std::unique_ptr<llvm::ToolOutputFile> output =
      openOutputFile(outputFilename, &error);
  if (!output) {
    llvm::errs() << error << "\n";
    return 1;
  }
  if (failed(MlirOptMain(output->os(), std::move(input), registry, config)))
    return 1;
  if (llvm::Error error = attn::closeOutput(output->os(), outputFilename)) {
    llvm::errs() << "attn-opt: error: " << llvm::toString(std::move(error))
                 << "\n";
    return 1;
  }
  output->keep();
  return 0;
}
