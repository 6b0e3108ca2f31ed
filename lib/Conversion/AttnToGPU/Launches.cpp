//===- Launches.cpp - host functions that launch kernels ------------------===//
//
// Part of the attn project: an MLIR compiler for attention.
//
//===----------------------------------------------------------------------===//

#include "Launches.h"

#include "attn/Transforms/Utils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

using namespace mlir;
using namespace mlir::attn;

SmallVector<Value> gpu_codegen::kernelOperands(AttentionOp attention) {
  SmallVector<Value> operands = {attention.getQuery(), attention.getKey(),
                                 attention.getValue()};
  for (Value operand :
       {attention.getMask(), attention.getBias(), attention.getRelBias(),
        attention.getAdditiveWeight(), attention.getKvLens(),
        attention.getSpans(), attention.getBlockMask()})
    if (operand)
      operands.push_back(operand);
  operands.push_back(attention.getInit());
  if (Value lse = attention.getLseInit())
    operands.push_back(lse);
  return operands;
}

Value gpu_codegen::flattenForKernel(OpBuilder &b, Location loc, Value memref) {
  auto type = cast<MemRefType>(memref.getType());
  ReassociationIndices all(
      llvm::to_vector(llvm::seq<int64_t>(0, type.getRank())));
  Value flat = memref::CollapseShapeOp::create(
      b, loc, memref, ArrayRef<ReassociationIndices>{all});
  return memref::CastOp::create(
      b, loc, MemRefType::get({ShapedType::kDynamic}, type.getElementType()),
      flat);
}

void gpu_codegen::replaceWithKernelLaunches(func::FuncOp func,
                                            ArrayRef<KernelLaunch> launches,
                                            Layout layout, int64_t blockRows,
                                            int64_t packedHeads,
                                            const SplitCombine *split,
                                            const LaunchScratch *scratch) {
  OpBuilder b(func.getContext());
  Location loc = func.getLoc();

  // The host function, on memrefs: flatten and launch.
  SmallVector<Type> hostTypes;
  for (Type type : func.getArgumentTypes()) {
    auto tensor = cast<RankedTensorType>(type);
    hostTypes.push_back(
        MemRefType::get(tensor.getShape(), tensor.getElementType()));
  }
  auto host = func::FuncOp::create(loc, func.getSymName(),
                                   b.getFunctionType(hostTypes, {}));
  host.setVisibility(func.getVisibility());
  Block *entry = host.addEntryBlock();
  b.setInsertionPointToStart(entry);
  SmallVector<Value> buffers;
  for (Value arg : entry->getArguments())
    buffers.push_back(flattenForKernel(b, loc, arg));
  auto dim = [&](Value memref, int64_t d) -> Value {
    return memref::DimOp::create(b, loc, memref, d);
  };
  Value q = entry->getArgument(0), k = entry->getArgument(1);
  IndexMath m{b, loc};
  Value batchCount = dim(q, 0), sq = dim(q, getSeqDimPos(layout)),
        sk = dim(k, getSeqDimPos(layout));
  Value heads = dim(q, getHeadDimPos(layout));
  SmallVector<Value> scalars = {batchCount, sq, sk, heads,
                                dim(k, getHeadDimPos(layout))};
  // What a launcher needs: grid (ceil(Sq / block_rows), Hq / packed_heads,
  // B), its first dim times kv_splits under a split and column_blocks.
  auto launch = [&](const KernelLaunch &kernel, int64_t rows, int64_t splits,
                    int64_t packed, ValueRange kernelBuffers) {
    kernel.kernel->setAttr("attn.block_rows", b.getI64IntegerAttr(rows));
    Value gridX = arith::CeilDivUIOp::create(b, loc, sq, m.constant(rows));
    if (splits > 1)
      gridX = arith::MulIOp::create(b, loc, gridX, m.constant(splits));
    if (kernel.columnBlocks > 1)
      gridX =
          arith::MulIOp::create(b, loc, gridX, m.constant(kernel.columnBlocks));
    // A kernel's own packing (linear attention's chunk kernels) wins.
    if (kernel.packedHeads)
      packed = kernel.packedHeads;
    Value gridY = heads;
    if (packed > 1)
      gridY = arith::DivUIOp::create(b, loc, heads, m.constant(packed));
    SmallVector<Value> operands(kernelBuffers);
    operands.append(scalars);
    Value dynamicShared;
    if (kernel.dynamicShared)
      dynamicShared = arith::ConstantIntOp::create(b, loc, b.getI32Type(),
                                                   kernel.dynamicShared);
    auto launchOp = gpu::LaunchFuncOp::create(
        b, loc, kernel.kernel, gpu::KernelDim3{gridX, gridY, batchCount},
        gpu::KernelDim3{m.constant(kernel.threads), m.constant(1),
                        m.constant(1)},
        dynamicShared, operands);
    launchOp->setAttr("attn.block_rows", b.getI64IntegerAttr(rows));
    if (splits > 1)
      launchOp->setAttr("attn.kv_splits", b.getI64IntegerAttr(splits));
    if (packed > 1)
      launchOp->setAttr("attn.packed_heads", b.getI64IntegerAttr(packed));
    if (kernel.columnBlocks > 1)
      launchOp->setAttr("attn.column_blocks",
                        b.getI64IntegerAttr(kernel.columnBlocks));
    if (kernel.tensorCores)
      launchOp->setAttr("attn.tensor_cores", b.getUnitAttr());
    if (kernel.kvTile)
      launchOp->setAttr("attn.kv_tile", b.getI64IntegerAttr(kernel.kvTile));
    // What the launcher checks of its buffers before the kernel runs.
    if (llvm::any_of(kernel.alignments, [](int64_t a) { return a > 1; }))
      launchOp->setAttr("attn.alignments",
                        b.getDenseI64ArrayAttr(kernel.alignments));
  };

  // A scratch buffer of f32, `width` elements per row of argument `rowsOf`
  // (its elements over its last dim), which a launcher sizes it by.
  SmallVector<Value> allocated;
  auto allocate = [&](int64_t rowsOf, int64_t width) -> Value {
    Value arg = entry->getArgument(rowsOf);
    Value rows = m.constant(1);
    for (int64_t d = 0, e = cast<MemRefType>(arg.getType()).getRank() - 1;
         d < e; ++d)
      rows = arith::MulIOp::create(b, loc, rows, dim(arg, d));
    auto alloc = gpu::AllocOp::create(
        b, loc, MemRefType::get({ShapedType::kDynamic}, b.getF32Type()),
        /*asyncToken=*/Type(), ValueRange(),
        ValueRange{arith::MulIOp::create(b, loc, rows, m.constant(width))},
        ValueRange());
    alloc->setAttr("attn.rows_of", b.getI64IntegerAttr(rowsOf));
    alloc->setAttr("attn.width", b.getI64IntegerAttr(width));
    allocated.push_back(alloc.getMemref());
    return alloc.getMemref();
  };

  if (!split) {
    if (scratch)
      buffers.push_back(allocate(scratch->rowsOf, scratch->width));
    for (const KernelLaunch &kernel : launches)
      launch(kernel, blockRows, 1, packedHeads, buffers);
  } else {
    // The splits' partial outputs and their lse, per row of q (B Hq Sq).
    SmallVector<Value> partials = {allocate(0, split->splits * split->valueDim),
                                   allocate(0, split->splits)};
    // The scratch buffers in place of out and lse, which close the
    // arguments.
    size_t out = buffers.size() - 1 - split->lse;
    SmallVector<Value> partialBuffers(ArrayRef(buffers).take_front(out));
    partialBuffers.append(partials);
    for (const KernelLaunch &kernel : launches)
      launch(kernel, blockRows, split->splits, packedHeads, partialBuffers);
    SmallVector<Value> combineBuffers(partials);
    combineBuffers.append(buffers.begin() + out, buffers.end());
    launch(split->combine, split->rows, 1, 1, combineBuffers);
  }
  for (Value buffer : allocated)
    gpu::DeallocOp::create(b, loc, /*asyncToken=*/Type(), ValueRange(), buffer);
  func::ReturnOp::create(b, loc);
  b.setInsertionPoint(func);
  b.insert(host);
  func.erase();
}

gpu::GPUFuncOp gpu_codegen::createKernel(func::FuncOp func, StringRef name,
                                         gpu::GPUModuleOp module,
                                         TypeRange workgroup, int64_t threads,
                                         ArrayRef<Type> bufferElements) {
  MLIRContext *ctx = func.getContext();
  OpBuilder b(ctx);
  Location loc = func.getLoc();
  SmallVector<Type> elements(bufferElements);
  if (elements.empty())
    for (Type type : func.getArgumentTypes())
      elements.push_back(getElementTypeOrSelf(type));
  SmallVector<Type> argTypes;
  for (Type element : elements)
    argTypes.push_back(MemRefType::get({ShapedType::kDynamic}, element));
  argTypes.append(5, b.getIndexType());
  if (!module) {
    auto parent = func->getParentOfType<ModuleOp>();
    parent->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                    UnitAttr::get(ctx));
    b.setInsertionPointToEnd(parent.getBody());
    module = gpu::GPUModuleOp::create(b, loc,
                                      (func.getSymName() + "_kernels").str());
  }
  return createKernelFunc(b, loc, module, name, argTypes, workgroup, threads);
}

gpu::GPUFuncOp gpu_codegen::createKernelFunc(OpBuilder &b, Location loc,
                                             gpu::GPUModuleOp module,
                                             StringRef name, TypeRange argTypes,
                                             TypeRange workgroup,
                                             int64_t threads) {
  b.setInsertionPointToEnd(module.getBody());
  auto kernel = gpu::GPUFuncOp::create(
      b, loc, name, b.getFunctionType(argTypes, {}), workgroup);
  kernel->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
  kernel.setKnownBlockSizeAttr(
      b.getDenseI32ArrayAttr({static_cast<int32_t>(threads), 1, 1}));
  // Aligned to 16 bytes, what cp.async, ldmatrix and vector accesses move
  // at once (dynamic shared memory is aligned to 16 too). Said explicitly:
  // LLVM assumes a large shared array without an alignment is aligned to 16
  // and vectorizes its accesses so, while the NVPTX printer declares it
  // `.align 4` (a linear attention kernel's ld.shared.v4 was misaligned).
  for (unsigned i = 0; i < workgroup.size(); ++i)
    kernel.setWorkgroupAttributionAttr(i, LLVM::LLVMDialect::getAlignAttrName(),
                                       b.getI64IntegerAttr(16));
  return kernel;
}

LogicalResult gpu_codegen::boundBlocksPerSM(Operation *op,
                                            gpu::GPUFuncOp kernel,
                                            int64_t threads, int64_t blocks) {
  if (blocks == 0)
    return success();
  // 2048 threads an SM on sm_80 and sm_90 (fewer elsewhere: ptxas then
  // ignores the bound with a warning).
  if (blocks * threads > 2048)
    return op->emitError() << "attn-convert-to-gpu: " << blocks << " blocks of "
                           << threads
                           << " threads do not fit the 2048 threads of an SM";
  kernel->setAttr(
      NVVM::NVVMDialect::getMinctasmAttrName(),
      IntegerAttr::get(IntegerType::get(op->getContext(), 32), blocks));
  return success();
}
