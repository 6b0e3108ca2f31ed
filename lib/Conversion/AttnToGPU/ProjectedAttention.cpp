//===- ProjectedAttention.cpp - multi-head and additive attention on the GPU
//===//
//
// Part of the attn project: an MLIR compiler for attention.
//
//===----------------------------------------------------------------------===//

#include "Launches.h"

#include "attn/Conversion/AttnToGPU.h"
#include "attn/Runtime/KernelABI.h"
#include "attn/Transforms/Transforms.h"
#include "attn/Transforms/Utils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/TypeUtilities.h"

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::gpu_codegen;

/// The GPU form of a multi-head or additive attention `op`, the one op of
/// `func` (which takes its operands in order and returns its result): its
/// projections run as projection kernels into scratch buffers, and the
/// attention between them (as attn-expand-mha or attn-expand-additive
/// writes it) as the attention kernel, in one gpu.module. The host
/// function allocates the scratch buffers (gpu.alloc, tagged with the rows
/// and row width a launcher sizes them by) and launches, in order:
/// - multi-head: Q, K and V = x_q W_q, x_k W_k, x_v W_v (+ biases), the
///   attention into O [B, Sq, Hq, Dv], then out = O W_o (+ b_o);
/// - additive: Q = q W_q, K = k W_k, the score weights w broadcast to the
///   [Hq, A] f32 table, then the additive-similarity attention.
LogicalResult gpu_codegen::convertProjectedAttentionToGPU(
    func::FuncOp func, Operation *op, const ConvertAttnToGPUOptions &options) {
  auto ret = dyn_cast<func::ReturnOp>(func.getBody().front().getTerminator());
  if (!llvm::equal(op->getOperands(), func.getArguments()) || !ret ||
      ret.getOperands() != op->getResults())
    return op->emitError() << "attn-convert-to-gpu: the kernel function must "
                              "take the operands of "
                           << op->getName()
                           << " in order and return its result";
  auto mha = dyn_cast<MultiHeadAttentionOp>(op);
  auto additive = dyn_cast<AdditiveAttentionOp>(op);
  SmallVector<Value> weights =
      mha ? SmallVector<Value>{mha.getQProj(), mha.getKProj(), mha.getVProj(),
                               mha.getOutProj()}
          : SmallVector<Value>{additive.getQProj(), additive.getKProj(),
                               additive.getScoreProj()};
  for (Value weight : weights)
    if (!cast<ShapedType>(weight.getType()).hasStaticShape())
      return op->emitError()
             << "attn-convert-to-gpu: projection weights must be static";
  MLIRContext *ctx = func.getContext();
  Location loc = func.getLoc();
  std::string name = func.getSymName().str();
  auto module = func->getParentOfType<ModuleOp>();
  OpBuilder b(ctx);
  IRRewriter rewriter(ctx);

  // The attention between the projections: expand a copy of `func` and
  // give its attention a kernel function of its own, named `name`.
  func.setSymName(name + ".projected");
  b.setInsertionPoint(func);
  auto expanded = cast<func::FuncOp>(b.clone(*func));
  expanded.setSymName(name + ".expanded");
  Operation *copy = &expanded.getBody().front().front();
  for (Operation &candidate : expanded.getBody().front())
    if (candidate.getName() == op->getName())
      copy = &candidate;
  FailureOr<AttentionOp> attention =
      mha ? expandMultiHeadAttention(rewriter, cast<MultiHeadAttentionOp>(copy))
          : expandAdditiveAttention(rewriter, cast<AdditiveAttentionOp>(copy));
  if (failed(attention)) {
    expanded.erase();
    return failure();
  }
  SmallVector<Value> operands = kernelOperands(*attention);
  auto outlined =
      func::FuncOp::create(b, loc, name,
                           b.getFunctionType(ValueRange(operands).getTypes(),
                                             (*attention)->getResultTypes()));
  IRMapping mapping;
  mapping.map(operands, outlined.addEntryBlock()->getArguments());
  b.setInsertionPointToStart(&outlined.getBody().front());
  func::ReturnOp::create(b, loc, b.clone(**attention, mapping)->getResults());
  // Which operand of the attention is which argument of `func` (-1: one
  // the projections make).
  SmallVector<int64_t> argumentOf;
  for (Value operand : operands) {
    auto arg = dyn_cast<BlockArgument>(operand);
    argumentOf.push_back(arg ? int64_t(arg.getArgNumber()) : -1);
  }
  // Its launches are cloned below, without scratch buffers of their own
  // (no split-K), over the grid of one query head a block (no packing).
  ConvertAttnToGPUOptions attentionOptions = options;
  attentionOptions.kvSplits = 1;
  attentionOptions.packGqa = false;
  if (failed(convertAttentionToGPU(outlined, attentionOptions))) {
    expanded.erase();
    return failure();
  }
  auto attentionHost = module.lookupSymbol<func::FuncOp>(name);
  attentionHost.setSymName(name + ".attention");
  auto kernels = module.lookupSymbol<gpu::GPUModuleOp>(name + "_kernels");

  // The host function on memrefs.
  SmallVector<Type> hostTypes;
  for (Type type : func.getArgumentTypes()) {
    auto tensor = cast<RankedTensorType>(type);
    hostTypes.push_back(
        MemRefType::get(tensor.getShape(), tensor.getElementType()));
  }
  b.setInsertionPoint(func);
  auto host =
      func::FuncOp::create(b, loc, name, b.getFunctionType(hostTypes, {}));
  host.setVisibility(func.getVisibility());
  Block *entry = host.addEntryBlock();
  b.setInsertionPointToStart(entry);
  IndexMath m{b, loc};
  auto hostArg = [&](Value funcArg) {
    return entry->getArgument(cast<BlockArgument>(funcArg).getArgNumber());
  };
  auto toMemRef = [](Type type) {
    auto tensor = cast<RankedTensorType>(type);
    return MemRefType::get(tensor.getShape(), tensor.getElementType());
  };

  // A scratch buffer shaped like attention operand `operand`, `width`
  // elements per row; its dynamic sizes are those of `like` (its leading
  // dims, whose rows it has), or `rows` for its one leading dim.
  SmallVector<Value> scratch;
  auto allocate = [&](Value operand, int64_t width, Value like,
                      Value rows = Value()) {
    MemRefType type = toMemRef(operand.getType());
    SmallVector<Value> dynamic;
    for (int64_t d = 0; d < type.getRank(); ++d)
      if (type.isDynamicDim(d))
        dynamic.push_back(
            rows ? rows : memref::DimOp::create(b, loc, like, d).getResult());
    auto alloc = gpu::AllocOp::create(b, loc, type, /*asyncToken=*/Type(),
                                      ValueRange(), dynamic, ValueRange());
    if (like)
      alloc->setAttr(
          "attn.rows_of",
          b.getI64IntegerAttr(cast<BlockArgument>(like).getArgNumber()));
    else
      alloc->setAttr("attn.rows_symbol", b.getI64IntegerAttr(ATTN_SYM_HQ));
    alloc->setAttr("attn.width", b.getI64IntegerAttr(width));
    scratch.push_back(alloc.getMemref());
    return alloc.getMemref();
  };

  // y = x w (+ bias) on the rows of y: one projection kernel per set of
  // element types.
  llvm::SmallDenseMap<std::tuple<Type, Type, Type, Type>,
                      std::pair<std::string, ProjectionBlock>>
      named; // the kernel's name and block
  auto project = [&](Value x, Value w, Value bias, Value y) {
    auto elementOf = [](Value v) {
      return v ? getElementTypeOrSelf(v.getType()) : Type();
    };
    std::tuple<Type, Type, Type, Type> types = {elementOf(x), elementOf(w),
                                                elementOf(bias), elementOf(y)};
    auto &[kernelName, block] = named[types];
    if (kernelName.empty()) {
      kernelName = name + "_project" + std::to_string(named.size() - 1);
      block = buildProjectionKernel(
          kernels, kernelName, loc, std::get<0>(types), std::get<1>(types),
          std::get<2>(types), std::get<3>(types), options.mma);
    }
    auto yType = cast<MemRefType>(y.getType());
    int64_t columns = w ? cast<ShapedType>(w.getType()).getDimSize(1)
                        : cast<ShapedType>(bias.getType()).getDimSize(0);
    int64_t reduction = w ? cast<ShapedType>(w.getType()).getDimSize(0) : 0;
    Value elements = m.constant(1);
    for (int64_t d = 0; d < yType.getRank(); ++d)
      elements = arith::MulIOp::create(b, loc, elements,
                                       memref::DimOp::create(b, loc, y, d));
    Value rows = arith::DivUIOp::create(b, loc, elements, m.constant(columns));
    SmallVector<Value> args;
    for (Value buffer : {x, w, bias, y})
      if (buffer)
        args.push_back(flattenForKernel(b, loc, buffer));
    args.append({rows, m.constant(reduction), m.constant(columns)});
    auto launch = gpu::LaunchFuncOp::create(
        b, loc,
        SymbolRefAttr::get(b.getStringAttr(kernels.getName()),
                           {FlatSymbolRefAttr::get(ctx, kernelName)}),
        gpu::KernelDim3{
            arith::CeilDivUIOp::create(b, loc, rows, m.constant(block.rows)),
            m.constant(llvm::divideCeil(columns, block.columns)),
            m.constant(1)},
        gpu::KernelDim3{m.constant(block.threads), m.constant(1),
                        m.constant(1)},
        /*dynamicSharedMemorySize=*/Value(), args);
    launch->setAttr("attn.projection",
                    b.getDenseI64ArrayAttr(
                        {reduction, columns, block.rows, block.columns}));
  };

  // Scratch buffers for the attention operands the projections make, in
  // place of the attention host function's arguments.
  IRMapping hostMapping;
  Block &attentionEntry = attentionHost.getBody().front();
  auto replaceOperand = [&](Value operand, Value buffer) {
    hostMapping.map(attentionEntry.getArgument(llvm::find(operands, operand) -
                                               operands.begin()),
                    buffer);
  };
  auto columnsOf = [](Value weight, unsigned dim) {
    return cast<ShapedType>(weight.getType()).getDimSize(dim);
  };
  Value outProjected;
  if (mha) {
    ValueRange biases = mha.getProjBiases();
    auto biasAt = [&](unsigned i) {
      return biases.empty() ? Value() : hostArg(biases[i]);
    };
    Value q = allocate(attention->getQuery(), columnsOf(mha.getQProj(), 1),
                       hostArg(mha.getQuery()));
    Value k = allocate(attention->getKey(), columnsOf(mha.getKProj(), 1),
                       hostArg(mha.getKey()));
    Value v = allocate(attention->getValue(), columnsOf(mha.getVProj(), 1),
                       hostArg(mha.getValue()));
    outProjected =
        allocate(attention->getInit(), columnsOf(mha.getOutProj(), 0),
                 hostArg(mha.getInit()));
    project(hostArg(mha.getQuery()), hostArg(mha.getQProj()), biasAt(0), q);
    project(hostArg(mha.getKey()), hostArg(mha.getKProj()), biasAt(1), k);
    project(hostArg(mha.getValue()), hostArg(mha.getVProj()), biasAt(2), v);
    replaceOperand(attention->getQuery(), q);
    replaceOperand(attention->getKey(), k);
    replaceOperand(attention->getValue(), v);
    replaceOperand(attention->getInit(), outProjected);
  } else {
    Value query = hostArg(additive.getQuery());
    int64_t width = columnsOf(additive.getQProj(), 1);
    Value q = allocate(attention->getQuery(), width, query);
    Value k = allocate(attention->getKey(), width, hostArg(additive.getKey()));
    Value table =
        allocate(attention->getAdditiveWeight(), width, Value(),
                 memref::DimOp::create(b, loc, query,
                                       getHeadDimPos(additive.getLayout())));
    project(query, hostArg(additive.getQProj()), Value(), q);
    project(hostArg(additive.getKey()), hostArg(additive.getKProj()), Value(),
            k);
    project(Value(), Value(), hostArg(additive.getScoreProj()), table);
    replaceOperand(attention->getQuery(), q);
    replaceOperand(attention->getKey(), k);
    replaceOperand(attention->getAdditiveWeight(), table);
  }
  for (auto [index, argument] : llvm::enumerate(argumentOf))
    if (argument >= 0)
      hostMapping.map(attentionEntry.getArgument(index),
                      entry->getArgument(argument));
  // The attention's launch, as its own host function makes it.
  for (Operation &hostOp : attentionEntry.without_terminator())
    b.clone(hostOp, hostMapping);
  if (mha)
    project(outProjected, hostArg(mha.getOutProj()),
            mha.getProjBiases().empty() ? Value()
                                        : hostArg(mha.getProjBiases()[3]),
            hostArg(mha.getInit()));
  for (Value buffer : scratch)
    gpu::DeallocOp::create(b, loc, /*asyncToken=*/Type(), ValueRange(), buffer);
  func::ReturnOp::create(b, loc);
  attentionHost.erase();
  expanded.erase();
  func.erase();
  return success();
}
