//===- attn-compile.cpp - ahead-of-time attention kernels -----------------===//
//
// Part of the attn project: an MLIR compiler for attention.
//
// attn-compile (FILE.mlir | --spec SPEC) --target cpu [--name NAME] -o OUTDIR
// writes OUTDIR/NAME.o, OUTDIR/NAME.h and OUTDIR/manifest.json;
// --target nvptx [--chip sm_90] [--embed cubin|ptx] writes OUTDIR/NAME.ptx,
// OUTDIR/NAME.cubin, OUTDIR/NAME.h, OUTDIR/NAME_launch.c (embedding the
// cubin, or the PTX) and OUTDIR/manifest.json.
//
//===----------------------------------------------------------------------===//

#include "attn/Pipelines/Pipelines.h"
#include "attn/Support/OutputFile.h"
#include "attn/Target/CPUKernel.h"
#include "attn/Target/GPUKernel.h"
#include "attn/Tools/CPUKernelFlags.h"
#include "attn/Tools/KernelSource.h"
#include "attn/Transforms/Transforms.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/xxhash.h"

using namespace mlir;
using namespace mlir::attn;
namespace cl = llvm::cl;

// --help lists these and the code generation flags, not the hundreds of
// options LLVM and MLIR register.
static cl::OptionCategory toolOptions("attn-compile options");

static cl::opt<std::string> inputFile(cl::Positional, cl::desc("[kernel.mlir]"),
                                      cl::init(""), cl::cat(toolOptions));
static cl::opt<std::string>
    specText("spec",
             cl::desc("Build the kernel from a SPEC instead of a file, "
                      "e.g. b=2,hq=16,hkv=4,sq=1024,d=64,mask=causal"),
             cl::init(""), cl::cat(toolOptions));
static cl::opt<std::string> target("target", cl::desc("Target: cpu or nvptx"),
                                   cl::init("cpu"), cl::cat(toolOptions));
static cl::opt<std::string>
    chip("chip", cl::desc("NVIDIA architecture for --target nvptx"),
         cl::init("sm_90"), cl::cat(toolOptions));
static cl::opt<std::string>
    embed("embed",
          cl::desc("What NAME_launch.c embeds for --target nvptx: cubin (the "
                   "default), or ptx (compiled by the driver for the GPU it "
                   "loads on; the CUDA emulator runs it on the CPU)"),
          cl::init("cubin"), cl::cat(toolOptions));
static cl::opt<std::string>
    cudaToolkit("cuda-toolkit",
                cl::desc("CUDA toolkit directory for --target nvptx (default: "
                         "$CUDA_HOME, else /usr/local/cuda)"),
                cl::init(""), cl::cat(toolOptions));
static cl::opt<std::string>
    kernelName("name", cl::desc("C name of the entry point and the files"),
               cl::init("attn_kernel"), cl::cat(toolOptions));
static cl::opt<std::string>
    funcName("function",
             cl::desc("The kernel function in FILE (default: the only one "
                      "holding an attn.attention)"),
             cl::init(""), cl::cat(toolOptions));
static cl::opt<std::string> outDir("o", cl::desc("Output directory"),
                                   cl::value_desc("OUTDIR"), cl::Required,
                                   cl::cat(toolOptions));

static CPUKernelFlags flags;

static int usageError(const Twine &message) {
  llvm::errs() << "attn-compile: error: " << message << "\n";
  return kUsageErrorExitCode;
}

static bool isCIdentifier(StringRef name) {
  if (name.empty() || llvm::isDigit(name.front()))
    return false;
  return llvm::all_of(name,
                      [](char c) { return llvm::isAlnum(c) || c == '_'; });
}

static std::string printed(Operation *op) {
  std::string text;
  llvm::raw_string_ostream os(text);
  op->print(os, OpPrintingFlags().enableDebugInfo(false));
  return text;
}

static llvm::Error writeFile(StringRef path, StringRef text) {
  std::error_code ec;
  llvm::ToolOutputFile out(path, ec, llvm::sys::fs::OF_None);
  if (ec)
    return llvm::createStringError(ec, "cannot write '" + path + "'");
  out.os() << text;
  if (llvm::Error error = closeOutput(out.os(), path))
    return error;
  out.keep();
  return llvm::Error::success();
}

static llvm::json::Value manifest(const KernelSource &source,
                                  const KernelSignature &signature,
                                  StringRef hash) {
  llvm::json::Array operands;
  for (const KernelOperand &operand : signature.operands) {
    llvm::json::Array shape;
    for (int64_t size : operand.type.getShape())
      shape.push_back(ShapedType::isDynamic(size) ? llvm::json::Value(nullptr)
                                                  : llvm::json::Value(size));
    std::string elementType;
    llvm::raw_string_ostream(elementType) << operand.type.getElementType();
    operands.push_back(llvm::json::Object{{"name", operand.name},
                                          {"shape", std::move(shape)},
                                          {"dtype", elementType}});
  }
  llvm::json::Array linkFlags;
  for (const std::string &flag : kernelLinkFlags())
    linkFlags.push_back(flag);
  return llvm::json::Object{
      {"name", kernelName.getValue()},
      {"spec", source.spec ? llvm::json::Value(source.spec->str())
                           : llvm::json::Value(nullptr)},
      {"source", inputFile.empty() ? llvm::json::Value(nullptr)
                                   : llvm::json::Value(inputFile.getValue())},
      {"variant_hash", hash},
      {"target", target.getValue()},
      {"cpu", resolveHostCPU(flags.cpu)},
      {"features", resolveHostFeatures(flags.features)},
      {"flags",
       llvm::json::Object{{"cpu", flags.cpu.getValue()},
                          {"features", flags.features.getValue()},
                          {"fused", flags.fused.getValue()},
                          {"ukernels", flags.ukernels.getValue()},
                          {"kv_tile_size", flags.kvTileSize.getValue()},
                          {"query_tile_size", flags.queryTileSize.getValue()}}},
      {"abi", "dlpack"},
      {"object", kernelName + ".o"},
      {"header", kernelName + ".h"},
      {"operands", std::move(operands)},
      {"link_flags", std::move(linkFlags)},
  };
}

/// The manifest's grid of an attention launch, in its keys' names.
static std::string gridText(const GPULaunch &launch) {
  return llvm::formatv("(ceil(Sq / block_rows){0}{1}, Hq{2}, B)",
                       launch.kvSplits > 1 ? " * kv_splits" : "",
                       launch.columnBlocks > 1 ? " * column_blocks" : "",
                       launch.packedHeads > 1 ? " / packed_heads" : "");
}

static bool failedTo(llvm::Error error) {
  if (!error)
    return false;
  llvm::errs() << "attn-compile: error: " << llvm::toString(std::move(error))
               << "\n";
  return true;
}

/// --target nvptx: NAME.ptx, NAME.cubin, the C launcher NAME_launch.c with
/// its header NAME.h, and the manifest.
static int compileForGPU(const KernelSource &source,
                         const KernelSignature &signature) {
  GPUTargetOptions options = flags.gpuOptions(chip, cudaToolkit);
  FailureOr<GPUKernelBinary> binary =
      compileGPUKernel(source.func, kernelName, options);
  if (failed(binary))
    return 1;
  if (std::error_code ec = llvm::sys::fs::create_directories(outDir))
    return usageError("cannot create '" + outDir + "': " + ec.message());
  SmallString<256> base(outDir);
  llvm::sys::path::append(base, kernelName);
  llvm::json::Array operands, launches;
  for (const KernelOperand &operand : signature.operands)
    operands.push_back(operand.name);
  llvm::json::Array resources;
  for (const GPULaunch &launch : binary->launches) {
    launches.push_back(launch.function);
    const GPUFunctionResources &used = *binary->resourcesOf(launch.function);
    resources.push_back(
        llvm::json::Object{{"function", used.name},
                           {"registers", used.registers},
                           {"shared_bytes", used.sharedBytes},
                           {"dynamic_shared_bytes", launch.dynamicSharedBytes},
                           {"stack_frame_bytes", used.stackFrameBytes},
                           {"spill_store_bytes", used.spillStoreBytes},
                           {"spill_load_bytes", used.spillLoadBytes}});
    if (std::optional<GPUOccupancy> occupancy = theoreticalOccupancy(
            chip, used, launch.threads, launch.dynamicSharedBytes)) {
      llvm::json::Object &entry = *resources.back().getAsObject();
      entry["blocks_per_sm"] = occupancy->blocksPerSM;
      entry["occupancy_limit"] = occupancy->limit;
    }
    // Spills cost local-memory traffic in the inner loop: worth a look.
    if (used.spills())
      llvm::errs() << "attn-compile: warning: ptxas spills in '" << used.name
                   << "' for " << chip << " (" << used.spillStoreBytes
                   << " bytes stored, " << used.spillLoadBytes
                   << " bytes loaded)\n";
  }
  llvm::json::Value manifest = llvm::json::Object{
      {"name", kernelName.getValue()},
      {"spec", source.spec ? llvm::json::Value(source.spec->str())
                           : llvm::json::Value(nullptr)},
      {"target", "nvptx"},
      {"chip", chip.getValue()},
      {"ptx", kernelName + ".ptx"},
      {"cubin", kernelName + ".cubin"},
      {"header", kernelName + ".h"},
      {"launcher", kernelName + "_launch.c"},
      {"embeds", embed.getValue()},
      {"abi", "dlpack"},
      {"link_flags", llvm::json::Array{"-lcuda", "-lpthread"}},
      {"kernel", kernelName.getValue()},
      {"operands", std::move(operands)},
      {"launches", std::move(launches)},
      {"resources", std::move(resources)},
      {"block_rows", binary->attention().blockRows},
      {"kv_tile", binary->attention().kvTile},
      {"threads", binary->attention().threads},
      {"mma", binary->attention().tensorCores},
      {"kv_splits", binary->attention().kvSplits},
      {"packed_heads", binary->attention().packedHeads},
      {"column_blocks", binary->attention().columnBlocks},
      {"grid", gridText(binary->attention())},
  };
  std::string manifestText;
  llvm::raw_string_ostream(manifestText)
      << llvm::formatv("{0:2}", manifest) << "\n";
  SmallString<256> manifestPath(outDir);
  llvm::sys::path::append(manifestPath, "manifest.json");
  if (failedTo(writeFile((base + ".ptx").str(), binary->ptx)) ||
      failedTo(writeFile((base + ".cubin").str(), binary->cubin)) ||
      failedTo(writeFile((base + ".h").str(),
                         emitCHeader(signature, kernelName,
                                     "attention kernel for " + chip + ": " +
                                         source.description,
                                     KernelDevice::CUDA))) ||
      failedTo(writeFile((base + "_launch.c").str(),
                         emitCUDALauncher(signature, kernelName, *binary,
                                          embed == "ptx" ? GPUImage::PTX
                                                         : GPUImage::Cubin))) ||
      failedTo(writeFile(manifestPath, manifestText)))
    return 1;
  return 0;
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions({&toolOptions, &codegenOptionCategory()});
  cl::ParseCommandLineOptions(argc, argv, "attn ahead-of-time compiler\n");

  if (inputFile.empty() == specText.empty())
    return usageError("give exactly one of FILE.mlir and --spec");
  if (target != "cpu" && target != "nvptx")
    return usageError("unknown --target '" + target +
                      "' (expected cpu or nvptx)");
  if (embed != "cubin" && embed != "ptx")
    return usageError("unknown --embed '" + embed +
                      "' (expected cubin or ptx)");
  if (embed.getNumOccurrences() && target != "nvptx")
    return usageError("--embed is for --target nvptx");
  if (target == "nvptx")
    if (llvm::Error error = checkGPUTarget(flags.gpuOptions(chip, cudaToolkit)))
      return usageError("--target nvptx: " + llvm::toString(std::move(error)));
  if (target == "cpu")
    if (llvm::Error error = checkCPUTarget(flags.options()))
      return usageError("--target cpu: " + llvm::toString(std::move(error)));
  if (std::string wrong = flags.check(); !wrong.empty())
    return usageError(wrong);
  if (!isCIdentifier(kernelName))
    return usageError("--name '" + kernelName + "' is not a C identifier");

  DialectRegistry registry;
  registerAttnToolDialects(registry);
  MLIRContext ctx(registry);
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler diagnostics(sourceMgr, &ctx);

  int exitCode = 0;
  FailureOr<KernelSource> source = loadToolKernelSource(
      &ctx, "attn-compile", inputFile, specText, funcName, exitCode);
  if (failed(source))
    return exitCode;
  FailureOr<KernelSignature> signature = analyzeKernel(source->func);
  if (failed(signature))
    return 1;

  if (target == "nvptx")
    return compileForGPU(*source, *signature);

  // The variant: the kernel as written, plus everything that changes code.
  std::string identity =
      printed(source->func) + "\n" + target + "\n" + resolveHostCPU(flags.cpu) +
      "\n" + resolveHostFeatures(flags.features) + "\n" +
      (flags.fused ? "fused:" + std::to_string(flags.queryTileSize) + "x" +
                         std::to_string(flags.kvTileSize) +
                         (flags.ukernels ? ":ukernels" : "") +
                         ":l2=" + std::to_string(getL2CacheSize(flags.cpu))
                   : "naive");
  std::string hash = llvm::utohexstr(llvm::xxh3_64bits(identity),
                                     /*LowerCase=*/true, /*Width=*/16);

  CPUTargetOptions options = flags.options();
  llvm::LLVMContext llvmCtx;
  FailureOr<std::unique_ptr<llvm::Module>> module =
      compileCPUKernel(source->func, kernelName, *signature, options, llvmCtx);
  if (failed(module))
    return 1;

  if (std::error_code ec = llvm::sys::fs::create_directories(outDir))
    return usageError("cannot create '" + outDir + "': " + ec.message());
  SmallString<256> base(outDir);
  llvm::sys::path::append(base, kernelName);
  std::string manifestText;
  llvm::raw_string_ostream(manifestText)
      << llvm::formatv("{0:2}", manifest(*source, *signature, hash)) << "\n";
  SmallString<256> manifestPath(outDir);
  llvm::sys::path::append(manifestPath, "manifest.json");
  if (failedTo(writeObjectFile(**module, options, (base + ".o").str())) ||
      failedTo(
          writeFile((base + ".h").str(),
                    emitCHeader(*signature, kernelName,
                                "attention kernel: " + source->description))) ||
      failedTo(writeFile(manifestPath, manifestText)))
    return 1;
  return 0;
}
