//===- GPUCodegen.cpp - ahead-of-time NVIDIA GPU kernels ------------------===//
//
// Part of the attn project: an MLIR compiler for attention.
//
//===----------------------------------------------------------------------===//

#include "attn/Conversion/AttnToGPU.h"
#include "attn/Pipelines/Pipelines.h"
#include "attn/Target/GPUKernel.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::attn;

llvm::Error mlir::attn::checkGPUTarget(const GPUTargetOptions &options) {
  if (llvm::Expected<NVPTXTarget> chip = resolveNVPTXTarget(options.chip, "");
      !chip)
    return chip.takeError();
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

const GPULaunch &GPUKernelBinary::attention() const {
  return launches[attentionLaunch];
}

namespace {
/// One lowering of a kernel: its PTX and how its host function launches
/// it.
struct LoweredKernel {
  std::string ptx;
  std::vector<GPUScratch> scratch;
  std::vector<GPULaunch> launches;
  size_t attentionLaunch = 0;
};
} // namespace

/// The launches of the host function `host` (the gpu.launch_func ops
/// attn-convert-to-gpu annotated, in order) and the scratch buffers
/// (gpu.alloc) they pass.
static LogicalResult readLaunches(func::FuncOp host, LoweredKernel &lowered) {
  DenseMap<Value, int64_t> scratchIds;
  // A kernel argument back through flattening casts to a function argument
  // or a scratch buffer.
  auto traceBuffer = [&](Value value) -> FailureOr<GPUBuffer> {
    while (Operation *def = value.getDefiningOp()) {
      if (auto cast = dyn_cast<memref::CastOp>(def))
        value = cast.getSource();
      else if (auto collapse = dyn_cast<memref::CollapseShapeOp>(def))
        value = collapse.getSrc();
      else if (scratchIds.contains(value))
        return GPUBuffer{true, scratchIds.lookup(value)};
      else
        return failure();
    }
    return GPUBuffer{false, cast<BlockArgument>(value).getArgNumber()};
  };
  auto intAttr = [](Operation *op, StringRef name) -> int64_t {
    auto attr = op->getAttrOfType<IntegerAttr>(name);
    return attr ? attr.getInt() : -1;
  };
  for (Operation &op : host.getBody().front()) {
    if (auto alloc = dyn_cast<gpu::AllocOp>(op)) {
      MemRefType type = alloc.getType();
      if (intAttr(alloc, "attn.width") <= 0)
        return failure();
      scratchIds[alloc.getMemref()] = lowered.scratch.size();
      lowered.scratch.push_back(
          {intAttr(alloc, "attn.rows_of"), intAttr(alloc, "attn.rows_symbol"),
           intAttr(alloc, "attn.width"), type.getElementTypeBitWidth() / 8});
      continue;
    }
    auto launch = dyn_cast<gpu::LaunchFuncOp>(op);
    if (!launch)
      continue;
    GPULaunch plan;
    plan.function = launch.getKernelName().str();
    APInt threads;
    if (!matchPattern(launch.getBlockSizeX(), m_ConstantInt(&threads)))
      return failure();
    plan.threads = threads.getSExtValue();
    if (Value bytes = launch.getDynamicSharedMemorySize()) {
      APInt shared;
      if (!matchPattern(bytes, m_ConstantInt(&shared)))
        return failure();
      plan.dynamicSharedBytes = shared.getSExtValue();
    }
    for (Value operand : launch.getKernelOperands()) {
      if (!isa<MemRefType>(operand.getType()))
        continue;
      FailureOr<GPUBuffer> buffer = traceBuffer(operand);
      if (failed(buffer))
        return failure();
      plan.buffers.push_back(*buffer);
    }
    if (auto projection =
            launch->getAttrOfType<DenseI64ArrayAttr>("attn.projection")) {
      if (projection.size() != 4)
        return failure();
      plan.reduction = projection[0];
      plan.columns = projection[1];
      plan.tileRows = projection[2];
      plan.tileColumns = projection[3];
    } else {
      plan.blockRows = intAttr(launch, "attn.block_rows");
      if (launch->hasAttr("attn.kv_splits"))
        plan.kvSplits = intAttr(launch, "attn.kv_splits");
      if (launch->hasAttr("attn.packed_heads"))
        plan.packedHeads = intAttr(launch, "attn.packed_heads");
      if (launch->hasAttr("attn.column_blocks"))
        plan.columnBlocks = intAttr(launch, "attn.column_blocks");
      plan.tensorCores = launch->hasAttr("attn.tensor_cores");
      plan.kvTile = std::max<int64_t>(0, intAttr(launch, "attn.kv_tile"));
      if (plan.blockRows <= 0 || plan.kvSplits <= 0 || plan.packedHeads <= 0 ||
          plan.columnBlocks <= 0)
        return failure();
    }
    if (auto alignments =
            launch->getAttrOfType<DenseI64ArrayAttr>("attn.alignments")) {
      if (static_cast<size_t>(alignments.size()) != plan.buffers.size() ||
          llvm::any_of(alignments.asArrayRef(),
                       [](int64_t a) { return !llvm::isPowerOf2_64(a); }))
        return failure();
      plan.alignments.assign(alignments.asArrayRef().begin(),
                             alignments.asArrayRef().end());
    }
    lowered.launches.push_back(std::move(plan));
  }
  // The attention's own kernel is named after the host function; around it
  // may run the exact kernel that redoes the blocks the tensor cores defer,
  // split-K's combine kernel, projections or linear attention's chunk
  // states and prefix sums.
  auto attention = llvm::find_if(lowered.launches, [&](const GPULaunch &l) {
    return l.isAttention() && l.function == host.getSymName();
  });
  lowered.attentionLaunch = attention - lowered.launches.begin();
  return success(attention != lowered.launches.end());
}

/// The kernel of `name` lowered to PTX.
static FailureOr<LoweredKernel> lowerToPTX(func::FuncOp func, StringRef name,
                                           const GPUTargetOptions &options) {
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
  pipeline.format = "isa";
  copyGPUKernelOptions(pipeline, options);
  if (failed(buildGPUPipeline(
          pm, pipeline,
          [&](const Twine &message) { return func.emitError(message); })) ||
      failed(pm.run(*module)))
    return failure();

  auto binary = module->lookupSymbol<gpu::BinaryOp>((name + "_kernels").str());
  auto host = module->lookupSymbol<func::FuncOp>(name);
  LoweredKernel lowered;
  if (!binary || binary.getObjects().size() != 1 || !host ||
      failed(readLaunches(host, lowered)))
    return module->emitError()
           << "attn-gpu-pipeline did not produce one binary and its launches";
  auto object = cast<gpu::ObjectAttr>(binary.getObjects()[0]);
  lowered.ptx = object.getObject().getValue().str();
  return lowered;
}

/// Reads `ptxas -v`'s report: per entry function, "Compiling entry function
/// 'F'", "Function properties for F", then the stack frame and spills, then
/// "Used N registers, ..., M bytes smem".
static FailureOr<std::vector<GPUFunctionResources>>
parsePtxasReport(StringRef report) {
  std::vector<GPUFunctionResources> functions;
  auto number = [](StringRef line, StringRef unit) -> int64_t {
    size_t at = line.find(unit);
    if (at == StringRef::npos)
      return 0;
    StringRef digits = line.take_front(at).rtrim();
    digits = digits.drop_front(digits.find_last_not_of("0123456789") + 1);
    int64_t value = 0;
    return digits.getAsInteger(10, value) ? -1 : value;
  };
  SmallVector<StringRef> lines;
  report.split(lines, '\n');
  for (StringRef line : lines) {
    line = line.trim();
    StringRef name = line;
    if (name.consume_front("ptxas info    : Compiling entry function '")) {
      // Unknown until read: a report missing a line is not 0 spills.
      functions.push_back(
          {name.take_until([](char c) { return c == '\''; }).str(), -1, 0, -1,
           -1, -1});
      continue;
    }
    if (functions.empty())
      continue;
    GPUFunctionResources &function = functions.back();
    if (line.contains("bytes spill stores")) {
      function.stackFrameBytes = number(line, " bytes stack frame");
      function.spillStoreBytes = number(line, " bytes spill stores");
      function.spillLoadBytes = number(line, " bytes spill loads");
    } else if (line.consume_front("ptxas info    : Used ")) {
      function.registers = number(line, " registers");
      function.sharedBytes = number(line, " bytes smem");
    }
  }
  for (const GPUFunctionResources &function : functions)
    if (function.registers <= 0 || function.stackFrameBytes < 0 ||
        function.spillStoreBytes < 0 || function.spillLoadBytes < 0 ||
        function.sharedBytes < 0)
      return failure();
  return functions;
}

/// `ptx` with a `.maxnreg` of `budgets[F]` registers in the header of each
/// entry function F it names that has no register or blocks-per-SM bound.
static std::string
withRegisterBudgets(StringRef ptx, const llvm::StringMap<int64_t> &budgets) {
  std::string result;
  llvm::raw_string_ostream out(result);
  SmallVector<StringRef> lines;
  ptx.split(lines, '\n');
  StringRef function; // the entry whose header (up to its `{`) is being read
  bool bounded = false;
  for (auto [i, line] : llvm::enumerate(lines)) {
    StringRef text = line.trim();
    if (text.consume_front(".visible .entry ") ||
        text.consume_front(".entry ")) {
      function = text.take_until([](char c) { return c == '('; });
      bounded = false;
    } else if (!function.empty() && (text.starts_with(".maxnreg") ||
                                     text.starts_with(".minnctapersm"))) {
      bounded = true;
    } else if (!function.empty() && text == "{") {
      auto budget = budgets.find(function);
      if (budget != budgets.end() && !bounded)
        out << ".maxnreg " << budget->second << "\n";
      function = "";
    }
    out << line << (i + 1 < lines.size() ? "\n" : "");
  }
  return result;
}

/// Assembles `ptx` with the toolkit's ptxas as gpu-module-to-binary would
/// (`-arch CHIP --opt-level 3`: the same machine code, though the cubin
/// records the command line, -v included) into `binary`'s cubin and ptxas's
/// report of each function's resources; `warnings`, the lines where ptxas
/// warns.
static LogicalResult runPtxas(func::FuncOp func, StringRef ptx,
                              GPUKernelBinary &binary,
                              const GPUTargetOptions &options,
                              SmallVectorImpl<std::string> &warnings) {
  SmallString<256> ptxas(getCUDAToolkitPath(options.toolkit));
  llvm::sys::path::append(ptxas, "bin", "ptxas");
  SmallString<128> ptxPath, cubinPath, reportPath;
  for (auto [path, suffix] : {std::pair{&ptxPath, "ptx"},
                              {&cubinPath, "cubin"},
                              {&reportPath, "log"}})
    if (std::error_code ec =
            llvm::sys::fs::createTemporaryFile("attn-ptxas", suffix, *path))
      return emitError(func.getLoc())
             << "cannot create a temporary file for ptxas: " << ec.message();
  llvm::scope_exit remove([&] {
    for (StringRef path : {ptxPath, cubinPath, reportPath})
      llvm::sys::fs::remove(path);
  });
  {
    std::error_code ec;
    llvm::raw_fd_ostream out(ptxPath, ec);
    out << ptx;
    if (ec || out.has_error())
      return emitError(func.getLoc()) << "cannot write the PTX for ptxas";
  }
  std::string error;
  int status = llvm::sys::ExecuteAndWait(
      ptxas,
      {ptxas, "-arch", options.chip, "--opt-level", "3", "-v", ptxPath, "-o",
       cubinPath},
      /*Env=*/std::nullopt,
      {std::nullopt, StringRef(reportPath), StringRef(reportPath)},
      /*SecondsToWait=*/0, /*MemoryLimit=*/0, &error);
  auto report = llvm::MemoryBuffer::getFile(reportPath);
  StringRef reportText = report ? (*report)->getBuffer().rtrim() : "";
  if (status != 0)
    return emitError(func.getLoc())
           << "ptxas failed on the kernel's PTX"
           << (error.empty() ? "" : ": " + error) << "\n"
           << reportText;
  auto cubin = llvm::MemoryBuffer::getFile(cubinPath, /*IsText=*/false,
                                           /*RequiresNullTerminator=*/false);
  FailureOr<std::vector<GPUFunctionResources>> resources =
      parsePtxasReport(reportText);
  if (!cubin || failed(resources))
    return emitError(func.getLoc())
           << "ptxas left no cubin or no readable report:\n"
           << reportText;
  binary.cubin = (*cubin)->getBuffer().str();
  binary.resources = std::move(*resources);
  SmallVector<StringRef> lines;
  reportText.split(lines, '\n');
  warnings.clear();
  for (StringRef line : lines)
    if (line.starts_with("ptxas warning"))
      warnings.push_back(line.str());
  return success();
}

/// Assembles `binary.ptx`. Without a bound, ptxas may hold a kernel under
/// the registers its block could take and spill (seen: 128 of a 128-thread
/// block's 255, 64 of a 256-thread one's 255, on sm_90); each kernel that
/// spills so is given that budget (`.maxnreg`) and the PTX assembled again.
/// A kernel bound by --min-blocks-per-sm keeps its bound and its spills.
static LogicalResult assemble(func::FuncOp func, GPUKernelBinary &binary,
                              const GPUTargetOptions &options) {
  SmallVector<std::string> warnings;
  if (failed(runPtxas(func, binary.ptx, binary, options, warnings)))
    return failure();
  llvm::StringMap<int64_t> budgets;
  for (const GPULaunch &launch : binary.launches) {
    const GPUFunctionResources *used = binary.resourcesOf(launch.function);
    int64_t budget = blockRegisterBudget(launch.threads);
    if (used && used->spills() && used->registers < budget)
      budgets[launch.function] = budget;
  }
  std::string budgeted = withRegisterBudgets(binary.ptx, budgets);
  if (budgeted != binary.ptx) {
    binary.ptx = std::move(budgeted);
    if (failed(runPtxas(func, binary.ptx, binary, options, warnings)))
      return failure();
  }
  // ptxas warns of what it ignored or could not do (a launch bound out of
  // range, ...): the user should hear of it.
  for (const std::string &warning : warnings)
    emitWarning(func.getLoc()) << warning;
  return success();
}

/// Bytes the tensor-core attention kernel of `binary` spills (0 for FMA
/// kernels: their tile is not the key tile retried below).
static int64_t tensorCoreSpills(const GPUKernelBinary &binary) {
  const GPULaunch &attention = binary.attention();
  const GPUFunctionResources *used = binary.resourcesOf(attention.function);
  if (!attention.tensorCores || !used)
    return 0;
  return used->spillStoreBytes + used->spillLoadBytes;
}

/// compileGPUKernel without retries.
static FailureOr<GPUKernelBinary> compileOnce(func::FuncOp func, StringRef name,
                                              const GPUTargetOptions &options) {
  auto ptx = lowerToPTX(func, name, options);
  if (failed(ptx))
    return failure();
  GPUKernelBinary binary;
  binary.ptx = std::move(ptx->ptx);
  binary.chip = options.chip;
  binary.scratch = std::move(ptx->scratch);
  binary.launches = std::move(ptx->launches);
  binary.attentionLaunch = ptx->attentionLaunch;
  if (failed(assemble(func, binary, options)))
    return failure();
  for (const GPULaunch &launch : binary.launches)
    if (!binary.resourcesOf(launch.function))
      return emitError(func.getLoc())
             << "ptxas reported nothing of '" << launch.function << "'";
  return binary;
}

FailureOr<GPUKernelBinary>
mlir::attn::compileGPUKernel(func::FuncOp func, StringRef name,
                             const GPUTargetOptions &options) {
  FailureOr<GPUKernelBinary> binary = compileOnce(func, name, options);
  if (failed(binary) || options.mmaKvTileSize || options.minBlocksPerSM)
    return binary;
  // A chip's ptxas may spill where sm_90's does not (sm_120: GQA decoding
  // with ALiBi at D = 128, 20 bytes at 64-key tiles, none at 32): while the
  // tensor-core kernel kept spills, it is compiled again at half the last
  // key tile tried, down to 16 keys, and the one that spills least is kept.
  // Tile sizes and block bounds the user gave are kept, spills and all.
  for (int64_t keys = binary->attention().kvTile / 2;
       tensorCoreSpills(*binary) && keys >= 16; keys /= 2) {
    GPUTargetOptions smaller = options;
    smaller.mmaKvTileSize = keys;
    FailureOr<GPUKernelBinary> retry = compileOnce(func, name, smaller);
    if (failed(retry))
      return failure();
    if (tensorCoreSpills(*retry) < tensorCoreSpills(*binary))
      binary = std::move(retry);
  }
  return binary;
}

const GPUFunctionResources *
GPUKernelBinary::resourcesOf(StringRef function) const {
  auto it = llvm::find_if(resources, [&](const GPUFunctionResources &r) {
    return r.name == function;
  });
  return it == resources.end() ? nullptr : &*it;
}

std::optional<GPUOccupancy>
mlir::attn::theoreticalOccupancy(StringRef chip,
                                 const GPUFunctionResources &function,
                                 int64_t threads, int64_t dynamicSharedBytes) {
  struct SMLimits {
    int64_t threads, blocks, sharedBytes;
  };
  // Per SM: 64 Ki registers on all of them; threads, blocks and the shared
  // memory a kernel may use (CUDA C Programming Guide, compute capabilities).
  auto limits = [](unsigned sm) -> std::optional<SMLimits> {
    switch (sm) {
    case 75:
      return SMLimits{1024, 16, 64 * 1024};
    case 80:
      return SMLimits{2048, 32, 164 * 1024};
    case 86:
      return SMLimits{1536, 16, 100 * 1024};
    case 89:
      return SMLimits{1536, 24, 100 * 1024};
    case 90:
    case 100:
      return SMLimits{2048, 32, 228 * 1024};
    default:
      return std::nullopt;
    }
  };
  std::optional<unsigned> version = parseSMVersion(chip);
  std::optional<SMLimits> sm = version ? limits(*version) : std::nullopt;
  if (!sm || threads <= 0 || function.registers <= 0)
    return std::nullopt;
  int64_t warps = llvm::divideCeil(threads, 32);
  int64_t registersPerWarp = llvm::alignTo(function.registers * 32, 256);
  int64_t sharedPerBlock =
      llvm::alignTo(function.sharedBytes + dynamicSharedBytes, 128) + 1024;
  GPUOccupancy occupancy{sm->blocks, "blocks"};
  for (auto [blocks, limit] :
       {std::pair{65536 / registersPerWarp / warps, "registers"},
        {sm->sharedBytes / sharedPerBlock, "shared memory"},
        {sm->threads / (warps * 32), "threads"}})
    if (blocks < occupancy.blocksPerSM)
      occupancy = {blocks, limit};
  return occupancy;
}
