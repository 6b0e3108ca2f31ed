//===- KernelSignature.cpp - the DLPack ABI of an attention kernel --------===//
//
// Part of the attn project: an MLIR compiler for attention.
//
//===----------------------------------------------------------------------===//

#include "attn/IR/AttnOps.h"
#include "attn/Target/CPUKernel.h"

#include "mlir/IR/TypeUtilities.h"
#include "llvm/Support/FormatVariadic.h"

#include <dlpack/dlpack.h>

using namespace mlir;
using namespace mlir::attn;

/// DLPack code and bit width of an element type the ABI accepts.
static FailureOr<std::pair<int64_t, int64_t>> dlpackType(Type type) {
  if (type.isF32())
    return std::pair<int64_t, int64_t>{kDLFloat, 32};
  if (type.isF16())
    return std::pair<int64_t, int64_t>{kDLFloat, 16};
  if (type.isBF16())
    return std::pair<int64_t, int64_t>{kDLBfloat, 16};
  if (type.isInteger(1))
    return std::pair<int64_t, int64_t>{ATTN_DL_BOOL, 8};
  if (type.isInteger(32))
    return std::pair<int64_t, int64_t>{kDLInt, 32};
  if (type.isInteger(8))
    return std::pair<int64_t, int64_t>{kDLInt, 8};
  return failure();
}

namespace {
/// One DLTensor argument: the operand it binds and, per dimension, its
/// symbol or ATTN_DIM_FIXED size (and, for a block count, its block).
struct Role {
  StringRef name;
  Value value;
  SmallVector<int64_t> dims;
  SmallVector<int64_t> blocks = {}; // per dim: 0, or a block size
};
} // namespace

/// The dims of a mask or bias broadcast to [B, Hq, Sq, Sk].
static SmallVector<int64_t> broadcastDims(Value value) {
  auto type = cast<RankedTensorType>(value.getType());
  static const int64_t logical[4] = {ATTN_SYM_B, ATTN_SYM_HQ, ATTN_SYM_SQ,
                                     ATTN_SYM_SK};
  SmallVector<int64_t> dims;
  int64_t offset = 4 - type.getRank();
  for (int64_t d = 0; d < type.getRank(); ++d)
    dims.push_back(type.getDimSize(d) == 1 ? ATTN_DIM_BROADCAST
                                           : logical[d + offset]);
  return dims;
}

/// The arguments of a multi-head attention kernel: activations [B, S, E]
/// and weights of fixed sizes (the heads are attributes, so every feature
/// size is static); sets the static Hq, Hkv, D and Dv.
static FailureOr<SmallVector<Role>> multiHeadRoles(func::FuncOp func,
                                                   MultiHeadAttentionOp op,
                                                   int64_t *staticSizes) {
  SmallVector<Role> roles;
  bool dynamicFeature = false;
  // `symbols[d]` >= 0 names a symbol; -1 asks for the static size.
  auto add = [&](StringRef name, Value value, ArrayRef<int64_t> symbols) {
    auto type = cast<RankedTensorType>(value.getType());
    SmallVector<int64_t> dims;
    for (int64_t d = 0; d < type.getRank(); ++d) {
      int64_t symbol = d < int64_t(symbols.size()) ? symbols[d] : -1;
      bool dynamic = symbol < 0 && type.isDynamicDim(d);
      dynamicFeature |= dynamic;
      dims.push_back(symbol >= 0 ? symbol
                     : dynamic   ? ATTN_DIM_BROADCAST // refused below
                                 : ATTN_DIM_FIXED(type.getDimSize(d)));
    }
    roles.push_back({name, value, dims});
  };
  add("x_q", op.getQuery(), {ATTN_SYM_B, ATTN_SYM_SQ});
  add("x_k", op.getKey(), {ATTN_SYM_B, ATTN_SYM_SK});
  add("x_v", op.getValue(), {ATTN_SYM_B, ATTN_SYM_SK});
  add("w_q", op.getQProj(), {});
  add("w_k", op.getKProj(), {});
  add("w_v", op.getVProj(), {});
  add("w_o", op.getOutProj(), {});
  static const StringRef biasNames[4] = {"b_q", "b_k", "b_v", "b_o"};
  for (auto [name, bias] : llvm::zip(biasNames, op.getProjBiases()))
    add(name, bias, {});
  if (Value mask = op.getMask())
    roles.push_back({"mask", mask, broadcastDims(mask)});
  if (Value bias = op.getBias())
    roles.push_back({"bias", bias, broadcastDims(bias)});
  if (Value lens = op.getKvLens())
    roles.push_back({"kv_lens", lens, {ATTN_SYM_B}});
  add("out", op.getInit(), {ATTN_SYM_B, ATTN_SYM_SQ});
  if (dynamicFeature)
    return func.emitError() << "a multi-head attention kernel needs static "
                               "embedding and weight sizes";
  int64_t heads = op.getNumHeads(), kvHeads = op.getNumKvHeadsOrDefault();
  staticSizes[ATTN_SYM_HQ] = heads;
  staticSizes[ATTN_SYM_HKV] = kvHeads;
  staticSizes[ATTN_SYM_D] =
      cast<ShapedType>(op.getQProj().getType()).getDimSize(1) / heads;
  staticSizes[ATTN_SYM_DV] =
      cast<ShapedType>(op.getVProj().getType()).getDimSize(1) / kvHeads;
  return roles;
}

/// The operands of an attn.attention, attn.linear_attention or
/// attn.additive_attention, in the order the kernel takes them.
static FailureOr<SmallVector<Role>> attentionRoles(func::FuncOp func,
                                                   Operation *kernelOp) {
  // Only attn.attention takes masks, biases, key lengths and an lse.
  auto op = dyn_cast<AttentionOp>(kernelOp);
  auto linear = dyn_cast<LinearAttentionOp>(kernelOp);
  auto additive = dyn_cast<AdditiveAttentionOp>(kernelOp);
  Layout layout = op       ? op.getLayout()
                  : linear ? linear.getLayout()
                           : additive.getLayout();

  // Symbols of each dimension of [B, Hq, Sq, D] etc., in the op's layout.
  bool bhsd = layout == Layout::BHSD;
  auto headTensorDims = [&](int64_t heads, int64_t seq, int64_t feature) {
    return bhsd ? SmallVector<int64_t>{ATTN_SYM_B, heads, seq, feature}
                : SmallVector<int64_t>{ATTN_SYM_B, seq, heads, feature};
  };
  SmallVector<Role> roles = {
      {"q", kernelOp->getOperand(0),
       headTensorDims(ATTN_SYM_HQ, ATTN_SYM_SQ, ATTN_SYM_D)},
      {"k", kernelOp->getOperand(1),
       headTensorDims(ATTN_SYM_HKV, ATTN_SYM_SK, ATTN_SYM_D)},
      {"v", kernelOp->getOperand(2),
       headTensorDims(ATTN_SYM_HKV, ATTN_SYM_SK, ATTN_SYM_DV)}};
  if (additive) {
    // w_q, w_k [D, A] and w_score [A]: A is fixed.
    auto attentionDim = [&](Value weight, int64_t d) {
      return ATTN_DIM_FIXED(cast<ShapedType>(weight.getType()).getDimSize(d));
    };
    if (ShapedType::isDynamic(
            cast<ShapedType>(additive.getScoreProj().getType()).getDimSize(0)))
      return func.emitError()
             << "an additive attention kernel needs a static attention dim";
    roles.push_back({"w_q",
                     additive.getQProj(),
                     {ATTN_SYM_D, attentionDim(additive.getQProj(), 1)}});
    roles.push_back({"w_k",
                     additive.getKProj(),
                     {ATTN_SYM_D, attentionDim(additive.getKProj(), 1)}});
    roles.push_back({"w_score",
                     additive.getScoreProj(),
                     {attentionDim(additive.getScoreProj(), 0)}});
    if (Value lens = additive.getKvLens())
      roles.push_back({"kv_lens", lens, {ATTN_SYM_B}});
  }
  if (Value mask = op ? op.getMask() : Value())
    roles.push_back({"mask", mask, broadcastDims(mask)});
  if (Value bias = op ? op.getBias() : Value())
    roles.push_back({"bias", bias, broadcastDims(bias)});
  if (Value table = op ? op.getRelBias() : Value())
    roles.push_back({"rel_bias", table, {ATTN_SYM_HQ, ATTN_SYM_NB}});
  if (Value weight = op ? op.getAdditiveWeight() : Value())
    roles.push_back({"additive_weight", weight, {ATTN_SYM_HQ, ATTN_SYM_D}});
  if (Value lens = op ? op.getKvLens() : Value())
    roles.push_back({"kv_lens", lens, {ATTN_SYM_B}});
  if (Value spans = op ? op.getSpans() : Value())
    roles.push_back({"spans", spans, {ATTN_SYM_HQ}});
  if (Value blockMask = op ? op.getBlockMask() : Value()) {
    // [B or 1, Hq or 1, ceil(Sq / bq), ceil(Sk / bk)].
    SmallVector<int64_t> dims = broadcastDims(blockMask);
    dims[2] = ATTN_SYM_SQ;
    dims[3] = ATTN_SYM_SK;
    ArrayRef<int64_t> sizes = *op.getBlockSizes();
    roles.push_back(
        {"block_mask", blockMask, dims, {0, 0, sizes[0], sizes[1]}});
  }
  roles.push_back({"out",
                   op       ? op.getInit()
                   : linear ? linear.getInit()
                            : additive.getInit(),
                   headTensorDims(ATTN_SYM_HQ, ATTN_SYM_SQ, ATTN_SYM_DV)});
  if (Value lse = op ? op.getLseInit() : Value())
    roles.push_back({"lse", lse, {ATTN_SYM_B, ATTN_SYM_HQ, ATTN_SYM_SQ}});
  return roles;
}

/// The DLPack descriptor of `role`'s operand, recording the static sizes
/// it fixes in `staticSizes`.
static FailureOr<KernelOperand>
describeOperand(func::FuncOp func, const Role &role, int64_t *staticSizes) {
  auto type = cast<RankedTensorType>(role.value.getType());
  FailureOr<std::pair<int64_t, int64_t>> dtype =
      dlpackType(type.getElementType());
  if (failed(dtype))
    return func.emitError() << "unsupported element type "
                            << type.getElementType() << " for " << role.name;
  KernelOperand operand;
  operand.name = role.name.str();
  operand.type = type;
  operand.desc.ndim = type.getRank();
  operand.desc.dtype_code = dtype->first;
  operand.desc.dtype_bits = dtype->second;
  std::fill(std::begin(operand.desc.dims), std::end(operand.desc.dims),
            ATTN_DIM_BROADCAST);
  std::fill(std::begin(operand.desc.blocks), std::end(operand.desc.blocks), 0);
  for (auto [d, symbol] : llvm::enumerate(role.dims)) {
    operand.desc.dims[d] = symbol;
    if (d < role.blocks.size())
      operand.desc.blocks[d] = role.blocks[d];
    int64_t size = type.getDimSize(d);
    if (symbol >= 0 && !ShapedType::isDynamic(size) && !operand.desc.blocks[d])
      staticSizes[symbol] = size;
  }
  return operand;
}

FailureOr<KernelSignature> mlir::attn::analyzeKernel(func::FuncOp func) {
  Block &body = func.getBody().front();
  auto kernelOps = llvm::to_vector(
      llvm::make_filter_range(llvm::make_pointer_range(body),
                              [](Operation *op) { return isKernelOp(op); }));
  if (kernelOps.size() != 1)
    return func.emitError() << "a kernel function must hold exactly one "
                               "attn.attention, attn.linear_attention, "
                               "attn.additive_attention or "
                               "attn.multi_head_attention at its top level, "
                               "found "
                            << kernelOps.size();
  Operation *kernelOp = kernelOps.front();
  auto ret = dyn_cast<func::ReturnOp>(body.getTerminator());
  if (!ret || ret.getOperands() != kernelOp->getResults())
    return func.emitError()
           << "a kernel function must return the attention's results";
  KernelSignature signature;
  std::fill(std::begin(signature.staticSizes), std::end(signature.staticSizes),
            -1);
  auto mha = dyn_cast<MultiHeadAttentionOp>(kernelOp);
  FailureOr<SmallVector<Role>> roles =
      mha ? multiHeadRoles(func, mha, signature.staticSizes)
          : attentionRoles(func, kernelOp);
  if (failed(roles))
    return failure();

  std::string expectedOrder;
  for (const Role &role : *roles)
    expectedOrder += (expectedOrder.empty() ? "" : ", ") + role.name.str();
  if (func.getNumArguments() != roles->size())
    return func.emitError() << "a kernel function takes the attention operands "
                               "as its arguments, in the order ("
                            << expectedOrder << "); it has "
                            << func.getNumArguments() << " argument(s)";

  for (auto [index, role] : llvm::enumerate(*roles)) {
    if (role.value != func.getArgument(index))
      return func.emitError()
             << "argument #" << index << " of a kernel function must be the "
             << role.name << " operand of " << kernelOp->getName()
             << "; expected order (" << expectedOrder << ")";
    FailureOr<KernelOperand> operand =
        describeOperand(func, role, signature.staticSizes);
    if (failed(operand))
      return failure();
    signature.operands.push_back(*operand);
  }
  return signature;
}

std::string mlir::attn::emitCHeader(const KernelSignature &signature,
                                    StringRef name, StringRef description,
                                    KernelDevice device) {
  static const char *const symbolNames[ATTN_NUM_SYMBOLS] = {
      "B", "Hq", "Hkv", "Sq", "Sk", "D", "Dv", "NB"};
  auto shapeOf = [&](const KernelOperand &operand) {
    std::string text = "[";
    for (int64_t d = 0; d < operand.desc.ndim; ++d) {
      int64_t symbol = operand.desc.dims[d];
      if (d)
        text += ", ";
      if (symbol < 0) // ATTN_DIM_FIXED
        text += std::to_string(-symbol);
      else if (int64_t block = operand.desc.blocks[d])
        text += llvm::formatv("ceil({0}/{1})", symbolNames[symbol], block);
      else if (signature.staticSizes[symbol] >= 0)
        text += llvm::formatv("{0}={1}", symbolNames[symbol],
                              signature.staticSizes[symbol]);
      else
        text += symbolNames[symbol];
    }
    std::string elementType;
    llvm::raw_string_ostream os(elementType);
    os << operand.type.getElementType();
    return text + "] " + elementType;
  };

  auto has = [&](StringRef name) {
    return llvm::any_of(signature.operands,
                        [&](const KernelOperand &o) { return o.name == name; });
  };
  bool cuda = device == KernelDevice::CUDA;
  std::string guard = StringRef(name).upper() + "_H";
  std::string params, docs;
  for (const KernelOperand &operand : signature.operands) {
    params += llvm::formatv("{0}{1}DLTensor *{2}", params.empty() ? "" : ", ",
                            operand.isOutput() ? "" : "const ", operand.name);
    docs += llvm::formatv(" *   {0,-8} {1}\n", operand.name, shapeOf(operand));
  }
  if (cuda)
    params += ", CUstream stream";
  std::string upper = StringRef(name).upper();
  std::string gpuCodes = cuda ? llvm::formatv(R"(
  {0}_ERR_NO_DEVICE = 10,     /* no CUDA driver or device */
  {0}_ERR_MODULE = 11,        /* the cubin did not load on this GPU */
  {0}_ERR_LAUNCH = 12,        /* the launch failed or exceeds the grid */
  {0}_ERR_OUT_OF_MEMORY = 13, /* no device memory for scratch buffers */)",
                                              upper)
                                    .str()
                              : std::string();

  return llvm::formatv(
      R"(/* Generated by attn-compile. Do not edit.
 *
 * {0}
 */
#ifndef {1}
#define {1}

{6}#include <dlpack/dlpack.h>

#ifdef __cplusplus
extern "C" {{
#endif

/* Computes attention into `out`. Every argument is a {7} DLTensor, compact
 * row-major (strides NULL or the compact ones), with these shapes and
 * element types (NAME=n: compiled for size n; a bare name: any size, the same
 * wherever the name appears; a number: exactly that size):
 *
{2} *{12}{8}
 * Returns 0 on success, or one of the codes below; on error nothing is
 * written. {3}_error_string() describes a code. */
int {3}({4});

const char *{3}_error_string(int code);

enum {{
  {5}_OK = 0,
  {5}_ERR_NULL = 1,           /* a DLTensor, its shape or its data is NULL */
  {5}_ERR_NDIM = 2,           /* wrong number of dimensions */
  {5}_ERR_DTYPE = 3,          /* wrong dtype, or lanes != 1 */
  {5}_ERR_DEVICE = 4,         /* not a {7} tensor{9} */
  {5}_ERR_STATIC_SHAPE = 5,   /* a size differs from the compiled size */
  {5}_ERR_SHAPE_MISMATCH = 6, /* sizes disagree between arguments */
  {5}_ERR_STRIDES = 7,        /* not compact row-major */
  {5}_ERR_HEADS = 8,          /* Hq is not a positive multiple of Hkv */
  {5}_ERR_ALIGNMENT = 9,      /* data not aligned to its element size{11} */{10}
  {5}_ERR_TOO_LARGE = 14      /* a size in bytes, or data + byte_offset, overflows */
};

#ifdef __cplusplus
}
#endif

#endif /* {1} */
)",
      description, guard, docs, name, params, upper,
      cuda ? "#include <cuda.h>\n" : "", cuda ? "kDLCUDA" : "kDLCPU",
      cuda ? "\n * The kernel is queued on `stream` (in the "
             "calling thread's current\n * context, or the "
             "tensors' device's primary context when there "
             "is\n * none); the call does not wait for it."
           : "",
      cuda ? ", all on one device" : "", gpuCodes,
      cuda ? "\n                                 (K and V of a tensor-core "
             "kernel: 16 bytes)"
           : "",
      (has("lse") ? "\n * `lse` gets each query row's log-sum-exp (natural "
                    "log; -inf for a row\n * that sees no key)."
                  : std::string()) +
          (has("block_mask")
               ? "\n * `block_mask` holds one class per (query block, key "
                 "block): 0 hides the\n * block, 2 shows it whatever the "
                 "other masks say, 1 leaves it to them."
               : ""));
}

SmallVector<std::string> mlir::attn::kernelLinkFlags() {
  // libm for expf/tanhf; LLVM's OpenMP runtime for the parallel loops.
  return {"-lm", "-L" ATTN_LIBOMP_DIR, "-lomp", "-Wl,-rpath," ATTN_LIBOMP_DIR};
}
