//===- CPUCodegen.cpp - CPU kernels: pipeline, entry point, LLVM, object --===//
//
// Part of the attn project: an MLIR compiler for attention.
//
//===----------------------------------------------------------------------===//

#include "attn/Pipelines/Pipelines.h"
#include "attn/Runtime/UKernels.h"
#include "attn/Support/OutputFile.h"
#include "attn/Target/CPUKernel.h"
#include "attn/Transforms/Transforms.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/OpenMP/OpenMPToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"

#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/Linker/Linker.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/ToolOutputFile.h"

using namespace mlir;
using namespace mlir::attn;

// The argument-checking runtime (lib/Runtime/KernelABI.c), compiled to
// bitcode at build time.
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wc23-extensions"
static const unsigned char kRuntimeBitcode[] = {
#embed "KernelABI.bc"
};
// The micro-kernels (lib/Runtime/OnlineStepUKernel.c), per vector width.
static const unsigned char kUKernelAVX512Bitcode[] = {
#embed "OnlineStepUKernel.avx512.bc"
};
static const unsigned char kUKernelAVX512BF16Bitcode[] = {
#embed "OnlineStepUKernel.avx512bf16.bc"
};
static const unsigned char kUKernelAVX2Bitcode[] = {
#embed "OnlineStepUKernel.avx2.bc"
};
static const unsigned char kUKernelAVX2F16CBitcode[] = {
#embed "OnlineStepUKernel.avx2f16c.bc"
};
#pragma clang diagnostic pop

static constexpr StringLiteral kBindOperands = "attn_rt_bind_operands";
static constexpr StringLiteral kStatusString = "attn_rt_status_string";

/// Adds `i32 name(ptr...)`, which checks its DLTensor arguments with the
/// runtime and calls the lowered kernel `kernel`, and `name_error_string`.
static LogicalResult emitEntryPoint(ModuleOp module, LLVM::LLVMFuncOp kernel,
                                    const KernelSignature &signature,
                                    StringRef name) {
  MLIRContext *ctx = module.getContext();
  Location loc = kernel.getLoc();
  auto b = OpBuilder::atBlockEnd(module.getBody());
  auto ptr = LLVM::LLVMPointerType::get(ctx);
  Type i32 = b.getI32Type(), i64 = b.getI64Type();
  int64_t n = signature.operands.size();

  // Constant tables: the operand descriptions and the compiled sizes.
  SmallVector<int64_t> descWords;
  for (const KernelOperand &operand : signature.operands) {
    const attn_operand_desc &d = operand.desc;
    descWords.append({d.ndim, d.dtype_code, d.dtype_bits});
    descWords.append(std::begin(d.dims), std::end(d.dims));
    descWords.append(std::begin(d.blocks), std::end(d.blocks));
  }
  auto makeTable = [&](StringRef symbol, ArrayRef<int64_t> words) {
    auto type = LLVM::LLVMArrayType::get(i64, words.size());
    auto value = DenseElementsAttr::get(
        RankedTensorType::get({static_cast<int64_t>(words.size())}, i64),
        words);
    return LLVM::GlobalOp::create(b, loc, type, /*isConstant=*/true,
                                  LLVM::Linkage::Internal, symbol, value);
  };
  LLVM::GlobalOp descTable = makeTable((name + "_operands").str(), descWords);
  LLVM::GlobalOp sizeTable =
      makeTable((name + "_static_sizes").str(),
                ArrayRef<int64_t>(signature.staticSizes, ATTN_NUM_SYMBOLS));

  auto declare = [&](StringRef symbol, Type result, ArrayRef<Type> args) {
    if (auto existing = module.lookupSymbol<LLVM::LLVMFuncOp>(symbol))
      return existing;
    return LLVM::LLVMFuncOp::create(b, loc, symbol,
                                    LLVM::LLVMFunctionType::get(result, args));
  };
  LLVM::LLVMFuncOp bind =
      declare(kBindOperands, i32, {ptr, ptr, i64, ptr, ptr});
  LLVM::LLVMFuncOp statusString = declare(kStatusString, ptr, {i32});

  // int name_error_string(int code)
  auto errorFn =
      LLVM::LLVMFuncOp::create(b, loc, (name + "_error_string").str(),
                               LLVM::LLVMFunctionType::get(ptr, {i32}));
  {
    OpBuilder::InsertionGuard guard(b);
    Block *body = errorFn.addEntryBlock(b);
    b.setInsertionPointToStart(body);
    auto call = LLVM::CallOp::create(b, loc, statusString,
                                     ValueRange{body->getArgument(0)});
    LLVM::ReturnOp::create(b, loc, call.getResult());
  }

  // int name(DLTensor *...)
  SmallVector<Type> argTypes(n, ptr);
  auto entry = LLVM::LLVMFuncOp::create(
      b, loc, name, LLVM::LLVMFunctionType::get(i32, argTypes));
  Block *body = entry.addEntryBlock(b);
  Block *run = entry.addBlock();
  Block *done = entry.addBlock();
  done->addArgument(i32, loc);
  b.setInsertionPointToStart(body);

  Value one = LLVM::ConstantOp::create(b, loc, i64, 1);
  auto tensorsType = LLVM::LLVMArrayType::get(ptr, n);
  Value tensors = LLVM::AllocaOp::create(b, loc, ptr, tensorsType, one);
  for (int64_t i = 0; i < n; ++i) {
    Value slot = LLVM::GEPOp::create(b, loc, ptr, tensorsType, tensors,
                                     ArrayRef<LLVM::GEPArg>{0, i});
    LLVM::StoreOp::create(b, loc, body->getArgument(i), slot);
  }
  auto memrefType = LLVM::LLVMStructType::getLiteral(
      ctx, {ptr, ptr, i64, LLVM::LLVMArrayType::get(i64, 2 * ATTN_MAX_RANK)});
  auto memrefsType = LLVM::LLVMArrayType::get(memrefType, n);
  Value memrefs = LLVM::AllocaOp::create(b, loc, ptr, memrefsType, one);
  Value descs = LLVM::AddressOfOp::create(b, loc, descTable);
  Value sizes = LLVM::AddressOfOp::create(b, loc, sizeTable);
  Value count = LLVM::ConstantOp::create(b, loc, i64, n);
  Value status =
      LLVM::CallOp::create(b, loc, bind,
                           ValueRange{tensors, descs, count, sizes, memrefs})
          .getResult();
  Value zero = LLVM::ConstantOp::create(b, loc, i32, 0);
  Value ok =
      LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::eq, status, zero);
  LLVM::CondBrOp::create(b, loc, ok, run, ValueRange{}, done,
                         ValueRange{status});

  // Unpack each memref descriptor into the expanded calling convention of
  // the lowered kernel: allocated, aligned, offset, sizes..., strides....
  b.setInsertionPointToStart(run);
  SmallVector<Value> kernelArgs;
  for (auto [i, operand] : llvm::enumerate(signature.operands)) {
    auto field = [&](Type type, ArrayRef<LLVM::GEPArg> path) {
      Value addr = LLVM::GEPOp::create(b, loc, ptr, memrefsType, memrefs, path);
      return LLVM::LoadOp::create(b, loc, type, addr).getResult();
    };
    int64_t idx = i;
    kernelArgs.push_back(field(ptr, {0, idx, 0}));
    kernelArgs.push_back(field(ptr, {0, idx, 1}));
    kernelArgs.push_back(field(i64, {0, idx, 2}));
    int64_t rank = operand.desc.ndim;
    for (int64_t d = 0; d < 2 * rank; ++d)
      kernelArgs.push_back(
          field(i64, {0, idx, 3, d < rank ? d : d - rank + rank}));
  }
  LLVM::LLVMFunctionType kernelType = kernel.getFunctionType();
  if (kernelType.getNumParams() != kernelArgs.size())
    return kernel.emitError()
           << "lowered kernel takes " << kernelType.getNumParams()
           << " scalar arguments, expected " << kernelArgs.size();
  LLVM::CallOp::create(b, loc, kernel, kernelArgs);
  LLVM::BrOp::create(b, loc, ValueRange{zero}, done);

  b.setInsertionPointToStart(done);
  LLVM::ReturnOp::create(b, loc, done->getArgument(0));
  return success();
}

/// Sets the target CPU and features on every function definition, so that
/// the runtime can be inlined into the entry point and everything is
/// specialized alike.
static void setTargetAttributes(llvm::Module &module, StringRef cpu,
                                StringRef features) {
  for (llvm::Function &fn : module) {
    if (fn.isDeclaration())
      continue;
    fn.addFnAttr("target-cpu", cpu);
    fn.addFnAttr("target-features", features);
  }
}

/// Links embedded bitcode into `module` and makes every function it defines
/// private to it, so that two kernels link into one program.
template <size_t N>
static LogicalResult linkBitcode(llvm::Module &module, Location loc,
                                 const unsigned char (&bitcode)[N],
                                 StringRef what) {
  llvm::MemoryBufferRef buffer(
      StringRef(reinterpret_cast<const char *>(bitcode), N), what);
  llvm::Expected<std::unique_ptr<llvm::Module>> library =
      llvm::parseBitcodeFile(buffer, module.getContext());
  if (!library)
    return emitError(loc) << "cannot read the embedded " << what << ": "
                          << llvm::toString(library.takeError());
  (*library)->setDataLayout(module.getDataLayout());
  (*library)->setTargetTriple(module.getTargetTriple());
  SmallVector<std::string> defined;
  for (llvm::Function &fn : **library)
    if (!fn.isDeclaration())
      defined.push_back(fn.getName().str());
  if (llvm::Linker::linkModules(module, std::move(*library)))
    return emitError(loc) << "cannot link the " << what;
  for (const std::string &symbol : defined)
    if (llvm::Function *fn = module.getFunction(symbol))
      fn->setLinkage(llvm::GlobalValue::InternalLinkage);
  return success();
}

/// The micro-kernels' entry points (UKernels.h).
static constexpr StringLiteral kUKernelNames[] = {
    ATTN_UK_ONLINE_STEP_F32, ATTN_UK_ONLINE_STEP_F16, ATTN_UK_ONLINE_STEP_BF16,
    ATTN_UK_SCORES_F32,      ATTN_UK_SCORES_F16,      ATTN_UK_SCORES_BF16,
    ATTN_UK_MATMUL_F32,      ATTN_UK_MATMUL_F16,      ATTN_UK_MATMUL_BF16};

/// Links the micro-kernels the module calls, in the vector width of its
/// target's features (its CPU's and the explicit ones).
static LogicalResult linkUKernels(llvm::Module &module, Location loc,
                                  const llvm::MCSubtargetInfo &target) {
  SmallVector<std::string> entries;
  for (StringRef name : kUKernelNames)
    entries.push_back(("_mlir_ciface_" + name).str());
  if (llvm::none_of(entries, [&](const std::string &entry) {
        return module.getFunction(entry);
      }))
    return success();
  bool avx512 = target.checkFeatures("+avx512f");
  LogicalResult linked =
      avx512 && target.checkFeatures("+avx512bf16")
          ? linkBitcode(module, loc, kUKernelAVX512BF16Bitcode,
                        "AVX512-BF16 micro-kernels")
      : avx512 ? linkBitcode(module, loc, kUKernelAVX512Bitcode,
                             "AVX-512 micro-kernels")
      : target.checkFeatures("+f16c")
          ? linkBitcode(module, loc, kUKernelAVX2F16CBitcode,
                        "AVX2 F16C micro-kernels")
          : linkBitcode(module, loc, kUKernelAVX2Bitcode, "AVX2 micro-kernels");
  if (failed(linked))
    return failure();
  // Every step is inlined where it is called, so it specializes on its
  // constant operands (head dims, strides, layout, flags). A band-masked
  // kernel calls the step twice (full and edge tiles); LLVM then left the
  // C-interface wrapper MLIR emits, with the micro-kernel inlined in it, out
  // of line: measured, ~20% fewer useful FLOP/s under a causal mask.
  for (StringRef name : kUKernelNames)
    for (std::string symbol : {name.str(), ("_mlir_ciface_" + name).str()})
      if (llvm::Function *fn = module.getFunction(symbol)) {
        fn->removeFnAttr(llvm::Attribute::NoInline);
        fn->addFnAttr(llvm::Attribute::AlwaysInline);
      }
  return success();
}

llvm::Error mlir::attn::checkCPUTarget(const CPUTargetOptions &options) {
  return checkCPUTarget(options.cpu, options.features);
}

llvm::Expected<std::unique_ptr<llvm::TargetMachine>>
mlir::attn::createCPUTargetMachine(const CPUTargetOptions &options) {
  llvm::Triple triple;
  llvm::Expected<const llvm::Target *> target = getHostTarget(triple);
  if (!target)
    return target.takeError();
  llvm::TargetOptions targetOptions;
  std::unique_ptr<llvm::TargetMachine> machine((*target)->createTargetMachine(
      triple, resolveHostCPU(options.cpu),
      resolveHostFeatures(options.features), targetOptions, llvm::Reloc::PIC_,
      llvm::CodeModel::Small, llvm::CodeGenOptLevel::Aggressive));
  if (!machine)
    return llvm::createStringError("cannot create a target machine for cpu '" +
                                   options.cpu + "'");
  return machine;
}

static void optimize(llvm::Module &module, llvm::TargetMachine &machine) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassBuilder builder(&machine);
  builder.registerModuleAnalyses(mam);
  builder.registerCGSCCAnalyses(cgam);
  builder.registerFunctionAnalyses(fam);
  builder.registerLoopAnalyses(lam);
  builder.crossRegisterProxies(lam, fam, cgam, mam);
  builder.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3)
      .run(module, mam);
}

FailureOr<std::unique_ptr<llvm::Module>> mlir::attn::compileCPUKernel(
    func::FuncOp func, StringRef name, const KernelSignature &signature,
    const CPUTargetOptions &options, llvm::LLVMContext &llvmCtx) {
  MLIRContext *ctx = func.getContext();
  // The kernel is compiled alone, and reached only through the entry point.
  // Private, its destination result can be dropped after bufferization.
  std::string kernelName = ("__attn_kernel_" + name).str();
  OpBuilder builder(ctx);
  OwningOpRef<ModuleOp> owned = ModuleOp::create(func.getLoc());
  ModuleOp module = *owned;
  builder.setInsertionPointToEnd(module.getBody());
  auto kernelFunc = cast<func::FuncOp>(builder.clone(*func));
  kernelFunc.setSymName(kernelName);
  kernelFunc.setPrivate();

  PassManager pm(ctx);
  CPUPipelineOptions pipeline;
  pipeline.cpu = options.cpu;
  pipeline.features = options.features;
  pipeline.fused = options.fused;
  pipeline.ukernels = options.ukernels;
  pipeline.countTiles = options.countTiles;
  pipeline.kvTileSize = options.kvTileSize;
  pipeline.queryTileSize = options.queryTileSize;
  buildCPUPipeline(pm, pipeline);
  if (failed(pm.run(module)))
    return failure();

  auto kernel = module.lookupSymbol<LLVM::LLVMFuncOp>(kernelName);
  if (!kernel)
    return module.emitError() << "the kernel function vanished during lowering";
  if (!isa<LLVM::LLVMVoidType>(kernel.getFunctionType().getReturnType()))
    return kernel.emitError()
           << "the kernel does not write its destination in place";
  if (failed(emitEntryPoint(module, kernel, signature, name)))
    return failure();

  DialectRegistry registry;
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  registerOpenMPDialectTranslation(registry);
  ctx->appendDialectRegistry(registry);
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(module, llvmCtx, name);
  if (!llvmModule)
    return module.emitError() << "translation to LLVM IR failed";

  llvm::Expected<std::unique_ptr<llvm::TargetMachine>> machine =
      createCPUTargetMachine(options);
  if (!machine)
    return module.emitError() << llvm::toString(machine.takeError());
  llvmModule->setDataLayout((*machine)->createDataLayout());
  llvmModule->setTargetTriple((*machine)->getTargetTriple());
  if (failed(linkBitcode(*llvmModule, module.getLoc(), kRuntimeBitcode,
                         "kernel runtime")) ||
      failed(linkUKernels(*llvmModule, module.getLoc(),
                          *(*machine)->getMCSubtargetInfo())))
    return failure();
  // Only the entry point, its error strings and (with count-tiles) the tile
  // counters attn-run reads are public: every other definition (the lowered
  // kernel, helpers the lowering adds such as bufferization's
  // dealloc_helper, constant tables) is internal, so that two kernels link
  // into one program or JIT session.
  std::string errorStringName = (name + "_error_string").str();
  StringRef publicNames[] = {name, errorStringName, "attn_tiles_total",
                             "attn_tiles_computed"};
  for (llvm::GlobalValue &value : llvmModule->global_values())
    if (!value.isDeclaration() && !value.hasAppendingLinkage() &&
        !value.getName().starts_with("llvm.") &&
        !llvm::is_contained(publicNames, value.getName()))
      value.setLinkage(llvm::GlobalValue::InternalLinkage);
  setTargetAttributes(*llvmModule, (*machine)->getTargetCPU(),
                      (*machine)->getTargetFeatureString());
  optimize(*llvmModule, **machine);
  return llvmModule;
}

llvm::Error mlir::attn::writeObjectFile(llvm::Module &module,
                                        const CPUTargetOptions &options,
                                        StringRef path) {
  llvm::Expected<std::unique_ptr<llvm::TargetMachine>> machine =
      createCPUTargetMachine(options);
  if (!machine)
    return machine.takeError();
  std::error_code ec;
  llvm::ToolOutputFile out(path, ec, llvm::sys::fs::OF_None);
  if (ec)
    return llvm::createStringError(ec, "cannot write '" + path + "'");
  llvm::legacy::PassManager pm;
  if ((*machine)->addPassesToEmitFile(pm, out.os(), nullptr,
                                      llvm::CodeGenFileType::ObjectFile))
    return llvm::createStringError("the target cannot emit object files");
  pm.run(module);
  if (llvm::Error error = closeOutput(out.os(), path))
    return error;
  out.keep();
  return llvm::Error::success();
}
