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

namespace {
/// The attention between the projections of a multi-head or additive
/// attention, as attn-expand-mha or attn-expand-additive writes it, in a
/// kernel function of its own converted to the GPU.
struct OutlinedAttention {
  /// The expanded copy of the kernel function holding it (erased once the
  /// host function is built).
  func::FuncOp expanded;
  AttentionOp attention;
  /// Its operands, and which argument of the kernel function each is (-1:
  /// one the projections make).
  SmallVector<Value> operands;
  SmallVector<int64_t> argumentOf;
  /// Its host function (launching it on its operands) and the gpu.module
  /// of its kernels.
  func::FuncOp host;
  gpu::GPUModuleOp kernels;
};

/// Builds the host function of a projected attention: its scratch buffers
/// and the launches of its projection kernels.
class ProjectedHostBuilder {
public:
  ProjectedHostBuilder(OpBuilder &b, Location loc, StringRef name,
                       gpu::GPUModuleOp kernels, bool mma)
      : b(b), loc(loc), m{b, loc}, name(name), kernels(kernels), mma(mma) {}

  /// A scratch buffer shaped like attention operand `operand`, `width`
  /// elements per row; its dynamic sizes are those of `like` (its leading
  /// dims, whose rows it has), or `rows` for its one leading dim.
  Value allocate(Value operand, int64_t width, Value like,
                 Value rows = Value());
  /// y = x w (+ bias) on the rows of y: one projection kernel per set of
  /// element types.
  void project(Value x, Value w, Value bias, Value y);
  /// Frees the scratch buffers.
  void deallocate() {
    for (Value buffer : scratch)
      gpu::DeallocOp::create(b, loc, /*asyncToken=*/Type(), ValueRange(),
                             buffer);
  }

private:
  OpBuilder &b;
  Location loc;
  IndexMath m;
  std::string name;
  gpu::GPUModuleOp kernels;
  bool mma;
  SmallVector<Value> scratch;
  /// The projection kernels by element types: name and block.
  llvm::SmallDenseMap<std::tuple<Type, Type, Type, Type>,
                      std::pair<std::string, ProjectionBlock>>
      named;
};
} // namespace

Value ProjectedHostBuilder::allocate(Value operand, int64_t width, Value like,
                                     Value rows) {
  auto tensor = cast<RankedTensorType>(operand.getType());
  auto type = MemRefType::get(tensor.getShape(), tensor.getElementType());
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
}

void ProjectedHostBuilder::project(Value x, Value w, Value bias, Value y) {
  auto elementOf = [](Value v) {
    return v ? getElementTypeOrSelf(v.getType()) : Type();
  };
  std::tuple<Type, Type, Type, Type> types = {elementOf(x), elementOf(w),
                                              elementOf(bias), elementOf(y)};
  auto &[kernelName, block] = named[types];
  if (kernelName.empty()) {
    kernelName = name + "_project" + std::to_string(named.size() - 1);
    block = buildProjectionKernel(kernels, kernelName, loc, std::get<0>(types),
                                  std::get<1>(types), std::get<2>(types),
                                  std::get<3>(types), mma);
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
                         {FlatSymbolRefAttr::get(b.getContext(), kernelName)}),
      gpu::KernelDim3{
          arith::CeilDivUIOp::create(b, loc, rows, m.constant(block.rows)),
          m.constant(llvm::divideCeil(columns, block.columns)), m.constant(1)},
      gpu::KernelDim3{m.constant(block.threads), m.constant(1), m.constant(1)},
      /*dynamicSharedMemorySize=*/Value(), args);
  launch->setAttr(
      "attn.projection",
      b.getDenseI64ArrayAttr({reduction, columns, block.rows, block.columns}));
}

/// Expands a copy of `func` (renamed NAME.projected, its copy
/// NAME.expanded) and gives the attention between its projections a kernel
/// function NAME of its own, converted to the GPU: its host function
/// becomes NAME.attention.
static FailureOr<OutlinedAttention>
outlineAttention(func::FuncOp func, Operation *op,
                 const ConvertAttnToGPUOptions &options) {
  MLIRContext *ctx = func.getContext();
  Location loc = func.getLoc();
  std::string name = func.getSymName().str();
  auto module = func->getParentOfType<ModuleOp>();
  OpBuilder b(ctx);
  IRRewriter rewriter(ctx);
  OutlinedAttention result;
  func.setSymName(name + ".projected");
  b.setInsertionPoint(func);
  result.expanded = cast<func::FuncOp>(b.clone(*func));
  result.expanded.setSymName(name + ".expanded");
  Operation *copy = &result.expanded.getBody().front().front();
  for (Operation &candidate : result.expanded.getBody().front())
    if (candidate.getName() == op->getName())
      copy = &candidate;
  FailureOr<AttentionOp> attention =
      isa<MultiHeadAttentionOp>(op)
          ? expandMultiHeadAttention(rewriter, cast<MultiHeadAttentionOp>(copy))
          : expandAdditiveAttention(rewriter, cast<AdditiveAttentionOp>(copy));
  if (failed(attention)) {
    result.expanded.erase();
    return failure();
  }
  result.attention = *attention;
  result.operands = kernelOperands(*attention);
  auto outlined = func::FuncOp::create(
      b, loc, name,
      b.getFunctionType(ValueRange(result.operands).getTypes(),
                        (*attention)->getResultTypes()));
  IRMapping mapping;
  mapping.map(result.operands, outlined.addEntryBlock()->getArguments());
  b.setInsertionPointToStart(&outlined.getBody().front());
  func::ReturnOp::create(b, loc, b.clone(**attention, mapping)->getResults());
  for (Value operand : result.operands) {
    auto arg = dyn_cast<BlockArgument>(operand);
    result.argumentOf.push_back(arg ? int64_t(arg.getArgNumber()) : -1);
  }
  // Its launches are cloned into the host function, without scratch
  // buffers of their own (no split-K), over the grid of one query head a
  // block (no packing).
  ConvertAttnToGPUOptions attentionOptions = options;
  attentionOptions.kvSplits = 1;
  attentionOptions.packGqa = false;
  if (failed(convertAttentionToGPU(outlined, attentionOptions))) {
    result.expanded.erase();
    return failure();
  }
  result.host = module.lookupSymbol<func::FuncOp>(name);
  result.host.setSymName(name + ".attention");
  result.kernels = module.lookupSymbol<gpu::GPUModuleOp>(name + "_kernels");
  return result;
}

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
  std::string name = func.getSymName().str();
  FailureOr<OutlinedAttention> outlined = outlineAttention(func, op, options);
  if (failed(outlined))
    return failure();
  AttentionOp attention = outlined->attention;

  // The host function on memrefs.
  Location loc = func.getLoc();
  OpBuilder b(func.getContext());
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
  auto hostArg = [&](Value funcArg) {
    return entry->getArgument(cast<BlockArgument>(funcArg).getArgNumber());
  };
  ProjectedHostBuilder projections(b, loc, name, outlined->kernels,
                                   options.mma);

  // Scratch buffers for the attention operands the projections make, in
  // place of the attention host function's arguments.
  IRMapping hostMapping;
  Block &attentionEntry = outlined->host.getBody().front();
  auto replaceOperand = [&](Value operand, Value buffer) {
    hostMapping.map(
        attentionEntry.getArgument(llvm::find(outlined->operands, operand) -
                                   outlined->operands.begin()),
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
    Value q =
        projections.allocate(attention.getQuery(), columnsOf(mha.getQProj(), 1),
                             hostArg(mha.getQuery()));
    Value k =
        projections.allocate(attention.getKey(), columnsOf(mha.getKProj(), 1),
                             hostArg(mha.getKey()));
    Value v =
        projections.allocate(attention.getValue(), columnsOf(mha.getVProj(), 1),
                             hostArg(mha.getValue()));
    outProjected = projections.allocate(attention.getInit(),
                                        columnsOf(mha.getOutProj(), 0),
                                        hostArg(mha.getInit()));
    projections.project(hostArg(mha.getQuery()), hostArg(mha.getQProj()),
                        biasAt(0), q);
    projections.project(hostArg(mha.getKey()), hostArg(mha.getKProj()),
                        biasAt(1), k);
    projections.project(hostArg(mha.getValue()), hostArg(mha.getVProj()),
                        biasAt(2), v);
    replaceOperand(attention.getQuery(), q);
    replaceOperand(attention.getKey(), k);
    replaceOperand(attention.getValue(), v);
    replaceOperand(attention.getInit(), outProjected);
  } else {
    Value query = hostArg(additive.getQuery());
    int64_t width = columnsOf(additive.getQProj(), 1);
    Value q = projections.allocate(attention.getQuery(), width, query);
    Value k = projections.allocate(attention.getKey(), width,
                                   hostArg(additive.getKey()));
    Value table = projections.allocate(
        attention.getAdditiveWeight(), width, Value(),
        memref::DimOp::create(b, loc, query,
                              getHeadDimPos(additive.getLayout())));
    projections.project(query, hostArg(additive.getQProj()), Value(), q);
    projections.project(hostArg(additive.getKey()),
                        hostArg(additive.getKProj()), Value(), k);
    projections.project(Value(), Value(), hostArg(additive.getScoreProj()),
                        table);
    replaceOperand(attention.getQuery(), q);
    replaceOperand(attention.getKey(), k);
    replaceOperand(attention.getAdditiveWeight(), table);
  }
  for (auto [index, argument] : llvm::enumerate(outlined->argumentOf))
    if (argument >= 0)
      hostMapping.map(attentionEntry.getArgument(index),
                      entry->getArgument(argument));
  // The attention's launch, as its own host function makes it.
  for (Operation &hostOp : attentionEntry.without_terminator())
    b.clone(hostOp, hostMapping);
  if (mha)
    projections.project(
        outProjected, hostArg(mha.getOutProj()),
        mha.getProjBiases().empty() ? Value() : hostArg(mha.getProjBiases()[3]),
        hostArg(mha.getInit()));
  projections.deallocate();
  func::ReturnOp::create(b, loc);
  outlined->host.erase();
  outlined->expanded.erase();
  func.erase();
  return success();
}
