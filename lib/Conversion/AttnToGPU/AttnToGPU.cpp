//===- AttnToGPU.cpp - attention kernels as gpu.func ----------------------===//
//
// Part of the attn project: an MLIR compiler for attention.
//
//===----------------------------------------------------------------------===//
//
// The GPU backend's kernels: a kernel function (q, k, v, [mask], [bias],
// [rel_bias], [additive_weight], [kv_lens], [spans], out, [lse]) holding one
// attn.attention becomes a gpu.func plus a host
// function that launches it, one block per (query block, query head, batch
// entry). Two kernels:
// - FMA (any float type): T consecutive lanes share a query row, each holding
//   D/T (at most 32) of its query and Dv/T of its accumulator in registers;
//   K and V tiles go through shared memory as f32; the online softmax runs per
//   key in registers with exp2 (log2(e) folded in).
// - Tensor cores (f16/bf16, `mma`): 4 warps of 16 rows (or 32, two row
//   blocks sharing each K and V fragment) on mma.sync m16n8k16, the online
//   softmax on the score fragments. K and V tiles arrive by
//   cp.async into rows padded to an odd number of 16-byte chunks (so ldmatrix
//   is free of bank conflicts) and the loads overlap the math as in
//   FlashAttention-2: V of a tile is copied while Q K^T runs, K of the next
//   tile while P V runs.
// In both, keys the structured mask and kv_lens hide from the whole query
// block are never loaded, key tiles the structured mask or a mask_mod's
// bounds prove hidden are skipped, and tiles every row sees whole run
// without per-score masks. Gaussian and additive similarities run the FMA
// kernel only; the log-sum-exp output is written by both. Under a per-row
// mask the tensor cores multiply whole V tiles, so a NaN or Inf of V would
// reach rows that do not see its key (0 x NaN): an exact FMA kernel follows
// them and redoes the blocks whose V holds one in a tile they see partly.
//
// This file picks each kernel's shape and builds it; KernelBuilder.cpp,
// FMAKernel.cpp and TensorCoreKernel.cpp emit the attention kernels,
// LinearAttentionKernel.cpp and ProjectedAttention.cpp the other kernel
// functions, Launches.cpp the host functions that launch them.
//
//===----------------------------------------------------------------------===//

#include "attn/Conversion/AttnToGPU.h"
#include "KernelBuilder.h"
#include "Launches.h"

#include "attn/IR/StructuredMasks.h"
#include "attn/Transforms/Transforms.h"

// The pass's dependent dialects.
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/IR/TypeUtilities.h"

namespace mlir::attn {
#define GEN_PASS_DEF_CONVERTATTNTOGPU
#include "attn/Transforms/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::gpu_codegen;

/// The single attention a kernel function computes, or null with a
/// diagnostic when `func` is not one the GPU path takes.
static AttentionOp getKernelAttention(func::FuncOp func) {
  AttentionOp attention;
  WalkResult walk = func.walk([&](AttentionOp op) {
    if (attention)
      return WalkResult::interrupt();
    attention = op;
    return WalkResult::advance();
  });
  if (walk.wasInterrupted() || !attention) {
    func.emitError() << "attn-convert-to-gpu: '" << func.getSymName()
                     << "' must hold exactly one attn.attention";
    return {};
  }
  auto fail = [&](const Twine &why) -> AttentionOp {
    attention.emitError() << "attn-convert-to-gpu: " << why;
    return {};
  };
  if (attention.getOffsets().size() || attention.getExtents().size())
    return fail("takes whole attentions, not tiles (offsets/extents)");
  auto q = cast<ShapedType>(attention.getQuery().getType());
  auto v = cast<ShapedType>(attention.getValue().getType());
  if (q.isDynamicDim(3) || v.isDynamicDim(3))
    return fail("head dims must be static");
  // The kernel's arguments are the function's, in the attention's order.
  SmallVector<Value> expected = kernelOperands(attention);
  auto ret = dyn_cast<func::ReturnOp>(func.getBody().front().getTerminator());
  if (!llvm::equal(expected, func.getArguments()) || !ret ||
      ret.getOperands() != attention->getResults() ||
      !llvm::all_of(attention->getUsers(),
                    [&](Operation *user) { return user == ret; }))
    return fail("the kernel function must take (q, k, v, [mask], [bias], "
                "[rel_bias], [additive_weight], [kv_lens], [spans], "
                "[block_mask], out, [lse]) and return the attention's "
                "results");
  return attention;
}

/// The most elements of q and of acc one lane keeps in registers.
static constexpr int64_t kMaxSliceElements = 32;

/// The widest D and Dv of the tensor-core kernel: at Dv = 256 the output
/// fragments of a warp's 16 rows take 128 f32 registers a lane.
static constexpr int64_t kMaxMmaHeadDim = 256;
/// The widest D and Dv of a narrow head. Past it a head is wide: its output
/// fragments may take 128 registers a lane (Dv = 256; two row blocks of Dv
/// = 128 take as many), which leaves the tensor-core kernel few registers.
static constexpr int64_t kMaxNarrowHeadDim = 128;

/// Whether the kernel of `op` evaluates a mask other than a band (causal or
/// sliding window) per score in the key tiles a block sees partly: a mask
/// tensor, a mask_mod, spans, a block mask or another structured mask. Those
/// keep more registers live than 64-key tensor-core tiles and unguarded
/// copies leave (ptxas then spills to stay at 128 or 168 registers), so they
/// take 32-key tiles and guarded copies.
static bool evaluatesMasksBeyondBands(AttentionOp op) {
  StructuredMaskAttrInterface mask = op.getStructuredMaskAttr();
  return op.getMask() || !op.getMaskMod().empty() || op.getSpans() ||
         op.getBlockMask() || (mask && !isBandMask(mask));
}

/// Whether the tensor-core kernel takes `op`: f16 or bf16 q, k and v (one
/// type), D and Dv multiples of 8, both at most 256 (the output
/// fragments stay in registers: 128 a lane at Dv = 256), and a dot-product
/// similarity (the Gaussian one needs key norms its fragments do not give,
/// the additive one is no matrix product). Wide heads (D or Dv past 128)
/// under masks beyond bands take the FMA kernel: those spilled, the
/// tensor-core kernel (block masks, mask_mods, block bitmaps: 24 to 112
/// bytes even with 16-key tiles) or its exact FMA kernel (512 threads of
/// 128 registers at D = 256: 8 bytes under bigbird).
static bool fitsTensorCores(AttentionOp op, int64_t d, int64_t dv) {
  if (op.getSimilarity() != Similarity::Dot)
    return false;
  Type element = getElementTypeOrSelf(op.getQuery().getType());
  if (!element.isF16() && !element.isBF16())
    return false;
  for (Value operand : {op.getKey(), op.getValue()})
    if (getElementTypeOrSelf(operand.getType()) != element)
      return false;
  if (d % 8 || dv % 8 || d > kMaxMmaHeadDim || dv > kMaxMmaHeadDim)
    return false;
  return std::max(d, dv) <= kMaxNarrowHeadDim || !evaluatesMasksBeyondBands(op);
}

/// Whether a row of a block may not see a key another row sees: under a
/// mask tensor, a structured mask, spans, a mask_mod or a block mask (kv_lens
/// and Sk hide keys from every row alike).
static bool hidesKeysPerRow(AttentionOp op) {
  return op.getMask() || op.getStructuredMaskAttr() || op.getSpans() ||
         !op.getMaskMod().empty() || op.getBlockMask();
}

/// The query heads sharing a KV head, g = Hq / Hkv, that one block of `op`
/// may compute together (GQA packing; its rows are then Sq g), or 1. It
/// takes `pack-gqa`, static head counts and Sq, and keys a block sees that
/// do not depend on the head: no spans, block mask or mask_mod.
static int64_t packableHeads(AttentionOp op,
                             const ConvertAttnToGPUOptions &options) {
  if (!options.packGqa || op.getSpans() || op.getBlockMask() ||
      !op.getMaskMod().empty())
    return 1;
  Layout layout = op.getLayout();
  auto q = cast<ShapedType>(op.getQuery().getType());
  auto k = cast<ShapedType>(op.getKey().getType());
  int64_t hq = q.getDimSize(getHeadDimPos(layout));
  int64_t hkv = k.getDimSize(getHeadDimPos(layout));
  if (ShapedType::isDynamic(hq) || ShapedType::isDynamic(hkv) ||
      q.isDynamicDim(getSeqDimPos(layout)))
    return 1;
  return hq / hkv;
}

/// Packs the heads of `op` into the blocks of `shape` where all its rows of
/// the g packable heads fit one block, g dividing its rows.
static void packHeads(AttentionOp op, const ConvertAttnToGPUOptions &options,
                      KernelShape &shape) {
  int64_t g = packableHeads(op, options);
  auto q = cast<ShapedType>(op.getQuery().getType());
  int64_t sq = q.getDimSize(getSeqDimPos(op.getLayout()));
  if (g > 1 && shape.blockRows % g == 0 && sq * g <= shape.blockRows)
    shape.packedHeads = g;
}

/// The shape of the kernel of `op`: on tensor cores (`mma`, where
/// fitsTensorCores), a warp per 16 or 32 rows; else T lanes per row, the fewest
/// (a power of two up to a warp) whose slices of D and Dv take at most 32
/// registers each (else a warp). T need not divide them: where it does not, a
/// lane's last chunk of a row may be padding (see gatherSlice), cheaper than
/// the long slices of the most lanes dividing both (D = 144 and Dv = 79: one
/// lane, slices of 144 and 79, spilled 348 bytes on sm_90). Either shrinks
/// the key tile until the K and V tiles fit in static shared memory (the tensor
/// cores' double-buffered ones, or beside Q: in kDynamicSharedBytes) and packs
/// GQA heads where packHeads can. Fails with a diagnostic when a block would
/// exceed 1024 threads or one key row does not fit.
static FailureOr<KernelShape>
chooseShape(AttentionOp op, const ConvertAttnToGPUOptions &options) {
  int64_t d = cast<ShapedType>(op.getQuery().getType()).getDimSize(3);
  int64_t dv = cast<ShapedType>(op.getValue().getType()).getDimSize(3);
  int64_t blockRows = options.blockRows, kvTile = options.kvTileSize;
  if (options.mma && fitsTensorCores(op, d, dv)) {
    // A warp per 16 rows (4 by default); key tiles in whole 16-key steps of
    // f16 that fit. Kernels evaluating heavier masks keep fewer registers
    // live, as do wide heads (D or Dv past 128), whose output fragments take
    // up to 128 registers a lane: with 64-key tiles ptxas spilled at D = Dv
    // = 192 and 224 (sm_90: 36 and 172 bytes), with 32-key ones at none of
    // D, Dv in {144, 160, 192, 224, 256}. So do kernels gathering a relpos
    // bias per score: with 64-key tiles 20 of 96 decoding kernels (D = 72 to
    // 128) spilled up to 60 bytes.
    bool wide = std::max(d, dv) > kMaxNarrowHeadDim;
    bool lean = evaluatesMasksBeyondBands(op) || wide || op.getRelBias();
    // A query of at most 16 rows (decoding) takes blocks of one warp: the
    // other three would only compute rows past Sq, and smaller blocks leave
    // room for more of them per SM, each with its K/V copies in flight.
    // Wide heads keep blocks of 4 warps: one warp alone takes 243 to 255
    // registers at D = Dv = 144 to 256 (no spill since copies step whole
    // rows; 384 bytes at 192 before), too close to the limit.
    auto q = cast<ShapedType>(op.getQuery().getType());
    int64_t sq = q.getDimSize(getSeqDimPos(op.getLayout()));
    int64_t rows = options.mmaBlockRows, warpRows = options.mmaWarpRows;
    // Two row blocks of a wide head would take 256 registers a lane for
    // their output alone (Dv = 256), or leave few beside it (D = 256, Dv =
    // 128: 252 on sm_90), so wide heads keep warps of 16 rows.
    if (wide)
      warpRows = 16;
    if (!rows) {
      rows = !ShapedType::isDynamic(sq) && sq <= 16 ? 16 : 64;
      // Packed GQA heads count as rows: as few warps as hold them, up to 4.
      int64_t g = packableHeads(op, options);
      int64_t packed = llvm::alignTo(sq * g, 16);
      bool packs = g > 1 && sq * g > 16 && packed <= 64 && packed % g == 0;
      if (packs)
        rows = packed;
      if (wide)
        rows = 64;
      // Warps of 32 rows take blocks of 4 of them, packed heads as many as
      // hold them; blocks under 64 rows (decoding) would compute rows past
      // Sq, so they keep warps of 16.
      if (warpRows == 32) {
        if (rows < 64)
          warpRows = 16;
        else if (!packs)
          rows = 128;
      }
    }
    // Warps of 32 rows hold two row blocks' output and scores: past D = 64
    // (Q in shared memory) 64-key tiles spilled (D = 128, sm_90: 120 bytes),
    // 32-key ones do not.
    int64_t keys = options.mmaKvTileSize;
    if (!keys)
      keys = lean || (warpRows == 32 && std::max(d, dv) > 64) ? 32 : 64;
    int64_t steps = std::max<int64_t>(1, keys / 16);
    // Up to 8 warps of 16 rows, 4 of 32: their registers (at most 255 a
    // thread) fit in 64 Ki.
    if (rows < 0 || rows > 128 || rows % warpRows)
      return op.emitError()
             << "attn-convert-to-gpu: the tensor-core kernel "
                "takes a multiple of "
             << warpRows << " query rows per block up to 128 (a warp per "
             << warpRows << "), got " << rows;
    KernelShape shape{rows, 4, 16 * steps, d, dv};
    shape.mma = true;
    shape.warpRows = warpRows;
    shape.sharedQuery = options.mmaQueryInShared;
    shape.rowSumsByMma = options.mmaRowSums;
    shape.unguardedWholeTiles = !lean;
    shape.kvStages = options.kvStages;
    // Double-buffered tiles and Q in shared memory may take dynamic shared
    // memory beyond the 48 KiB a block declares statically.
    int64_t rowBytes = (d + shape.rowPadding(d) + dv + shape.rowPadding(dv)) *
                       2 * shape.kvStages;
    bool dynamic = shape.kvStages > 1 || shape.queryInShared();
    int64_t sharedBytes = dynamic ? kDynamicSharedBytes : kStaticSharedBytes;
    if (shape.queryInShared())
      sharedBytes -= rows * d * 2;
    shape.kvTile =
        std::min<int64_t>(shape.kvTile, sharedBytes / rowBytes / 16 * 16);
    packHeads(op, options, shape);
    return shape;
  }
  int64_t lanes = 1;
  while (lanes < 32 &&
         (KernelShape::sliceElements(d, lanes) > kMaxSliceElements ||
          KernelShape::sliceElements(dv, lanes) > kMaxSliceElements))
    lanes *= 2;
  KernelShape shape{blockRows, lanes, kvTile, d, dv};
  if (shape.threads() > 1024)
    return op.emitError() << "attn-convert-to-gpu: " << blockRows << " rows of "
                          << shape.threadsPerRow
                          << " lanes exceed 1024 threads per block";
  // The row's lanes sum their dot products with full-warp shuffles.
  if (shape.threadsPerRow > 1 && shape.threads() % 32)
    return op.emitError() << "attn-convert-to-gpu: " << blockRows << " rows of "
                          << shape.threadsPerRow
                          << " lanes do not fill whole warps";
  // f32 K and V tiles, V's from the first 16-byte boundary after K's (the
  // shared buffers' alignment): at D + Dv = 2048 with an odd D, 6 keys of
  // each took 8 bytes past 48 KiB, which ptxas refused.
  auto tileBytes = [&](int64_t keys) {
    return int64_t(llvm::alignTo(keys * d * 4, 16)) + keys * dv * 4;
  };
  shape.kvTile = std::min(kvTile, kStaticSharedBytes / ((d + dv) * 4));
  while (shape.kvTile > 0 && tileBytes(shape.kvTile) > kStaticSharedBytes)
    --shape.kvTile;
  if (shape.kvTile < 1)
    return op.emitError() << "attn-convert-to-gpu: one key of D + Dv = "
                          << d + dv << " floats exceeds shared memory";
  // Steps of 4 keys, 2 under heavier masks, whose scores keep more
  // registers live (at 4, ptxas spilled a block mask's to stay at 128).
  for (int64_t group = evaluatesMasksBeyondBands(op) ? 2 : 4;
       shape.keyGroup == 1 && group > 1; group /= 2)
    if (shape.kvTile % group == 0)
      shape.keyGroup = group;
  packHeads(op, options, shape);
  return shape;
}

/// The element types of the buffers a kernel of a split-K `op` takes: the
/// attention kernels' (out and lse into f32 scratch), or with `combine` the
/// combine kernel's (partial out, partial lse, out, [lse]).
static SmallVector<Type> splitKernelBuffers(AttentionOp op, bool combine) {
  Type f32 = Float32Type::get(op.getContext());
  Type out = getElementTypeOrSelf(op.getInit().getType());
  SmallVector<Type> elements;
  if (combine) {
    elements = {f32, f32, out};
    if (op.getLseInit())
      elements.push_back(f32);
    return elements;
  }
  for (Value operand : kernelOperands(op))
    elements.push_back(getElementTypeOrSelf(operand.getType()));
  elements.resize(elements.size() - (op.getLseInit() ? 2 : 1));
  elements.append({f32, f32});
  return elements;
}

/// The bytes the data of each kernel operand of `op` must be aligned to
/// for a kernel of `of`: K and V to what its copies move at once, Q (and an
/// additive weight, read as Q is) and out to the chunks it reads and
/// writes, the rest to their elements. Under a split the f32 scratch of
/// partial outputs and lse (allocated aligned) takes out's and lse's place.
static SmallVector<int64_t> operandAlignments(AttentionOp op,
                                              const KernelShape &of) {
  auto bytes = [](Value operand, int64_t elements) {
    return elements *
           getElementTypeOrSelf(operand.getType()).getIntOrFloatBitWidth() / 8;
  };
  SmallVector<Value> operands = kernelOperands(op);
  SmallVector<int64_t> alignments(operands.size(), 1);
  alignments[0] = bytes(op.getQuery(), of.queryChunk());
  alignments[1] = of.kvAlignment(bytes(op.getKey(), 1));
  alignments[2] = of.kvAlignment(bytes(op.getValue(), 1));
  size_t out = operands.size() - (op.getLseInit() ? 2 : 1);
  alignments[out] = bytes(op.getInit(), of.outChunk());
  if (of.kvSplits > 1) {
    alignments.resize(out);
    alignments.append({1, 1});
  }
  // (An operand passed twice is one buffer: the launcher checks the most
  // any of its places needs.)
  if (Value weight = op.getAdditiveWeight()) {
    int64_t &slot = alignments[llvm::find(operands, weight) - operands.begin()];
    slot = std::max(slot, bytes(weight, of.queryChunk()));
  }
  return alignments;
}

/// The most splits (the combine kernel unrolls them) and the fewest key
/// tiles a split takes.
static constexpr int64_t kMaxKvSplits = 32, kMinTilesPerSplit = 4;

/// The splits of each query block's keys for `shape`: `requested` if not 0,
/// else (static sizes only) enough to make kBlocksToFill blocks where the
/// query fits one block, each split at least kMinTilesPerSplit tiles.
static int64_t chooseKvSplits(AttentionOp op, const KernelShape &shape,
                              int64_t requested) {
  if (requested)
    return requested;
  auto q = cast<ShapedType>(op.getQuery().getType());
  auto k = cast<ShapedType>(op.getKey().getType());
  Layout layout = op.getLayout();
  int64_t sk = k.getDimSize(getSeqDimPos(layout));
  if (!q.hasStaticShape() || ShapedType::isDynamic(sk) ||
      q.getDimSize(getSeqDimPos(layout)) > shape.queryRows())
    return 1;
  int64_t blocks =
      q.getDimSize(0) * q.getDimSize(getHeadDimPos(layout)) / shape.packedHeads;
  int64_t wanted = llvm::divideCeil(kBlocksToFill, blocks);
  int64_t splits =
      std::min({wanted, sk / (kMinTilesPerSplit * shape.kvTile), kMaxKvSplits});
  return std::max<int64_t>(splits, 1);
}

LogicalResult
mlir::attn::convertAttentionToGPU(func::FuncOp func,
                                  const ConvertAttnToGPUOptions &options) {
  auto linear = func.getOps<LinearAttentionOp>();
  if (!linear.empty())
    return convertLinearAttentionToGPU(func, *linear.begin(),
                                       options.minBlocksPerSM);
  for (Operation &op : func.getBody().front())
    if (isa<MultiHeadAttentionOp, AdditiveAttentionOp>(op))
      return convertProjectedAttentionToGPU(func, &op, options);
  AttentionOp op = getKernelAttention(func);
  if (!op)
    return failure();
  FailureOr<KernelShape> chosen = chooseShape(op, options);
  if (failed(chosen))
    return failure();
  KernelShape shape = *chosen;
  shape.kvSplits = chooseKvSplits(op, shape, options.kvSplits);
  MLIRContext *ctx = func.getContext();
  Location loc = func.getLoc();
  OpBuilder b(ctx);
  auto sharedSpace = gpu::AddressSpaceAttr::get(
      ctx, gpu::GPUDialect::getWorkgroupAddressSpace());
  // The kernel of `of`, named `name`, in `module` (a new one if null).
  auto buildKernel = [&](const KernelShape &of, StringRef name,
                         gpu::GPUModuleOp module) -> KernelLaunch {
    // The FMA kernel widens K and V tiles to f32; the tensor cores read f16.
    Type tileElement =
        of.mma ? getElementTypeOrSelf(op.getKey().getType()) : b.getF32Type();
    SmallVector<std::pair<SmallVector<int64_t>, Type>> buffers = {
        {of.tileShape(of.headDim), tileElement},
        {of.tileShape(of.valueDim), tileElement}};
    if (of.queryInShared())
      buffers.push_back({of.queryTileShape(), b.getI32Type()});
    SmallVector<Type> tiles;
    int64_t tileBytes = 0;
    for (auto &[bufferShape, element] : buffers) {
      auto type = MemRefType::get(bufferShape, element,
                                  MemRefLayoutAttrInterface(), sharedSpace);
      tiles.push_back(type);
      tileBytes += type.getNumElements() * element.getIntOrFloatBitWidth() / 8;
    }
    // Tiles beyond static shared memory go in dynamic shared memory (see
    // unpackArgs).
    int64_t dynamicShared = 0;
    if (tileBytes > kStaticSharedBytes) {
      tiles.clear();
      dynamicShared = tileBytes;
    }
    gpu::GPUFuncOp kernel =
        createKernel(func, name, module, tiles, of.threads(),
                     of.kvSplits > 1 ? splitKernelBuffers(op, /*combine=*/false)
                                     : SmallVector<Type>());
    KernelBuilder(b, loc, op, of).build(kernel);
    KernelLaunch launch{kernel, of.threads(), operandAlignments(op, of),
                        dynamicShared, of.mma};
    launch.kvTile = of.kvTile;
    return launch;
  };
  SmallVector<KernelLaunch> launches = {
      buildKernel(shape, func.getSymName(), gpu::GPUModuleOp())};
  if (failed(boundBlocksPerSM(op, launches.front().kernel, shape.threads(),
                              options.minBlocksPerSM)))
    return failure();
  // Under a per-row mask, an exact FMA kernel over blocks of the same rows
  // redoes those the tensor cores would get wrong (NaN or Inf in V).
  if (shape.mma && hidesKeysPerRow(op)) {
    ConvertAttnToGPUOptions exactOptions = options;
    exactOptions.blockRows = shape.blockRows;
    exactOptions.mma = false;
    FailureOr<KernelShape> exact = chooseShape(op, exactOptions);
    if (failed(exact))
      return failure();
    exact->redoTile = shape.kvTile;
    exact->kvSplits = shape.kvSplits;
    exact->packedHeads = shape.packedHeads;
    launches.push_back(buildKernel(
        *exact, (func.getSymName() + "_exact").str(),
        launches.front().kernel->getParentOfType<gpu::GPUModuleOp>()));
    // It runs rarely: registers matter more than occupancy (without the
    // bound, ptxas may spill to keep it at 128 registers).
    launches.back().kernel->setAttr(
        NVVM::NVVMDialect::getMaxnregAttrName(),
        b.getI32IntegerAttr(blockRegisterBudget(exact->threads())));
  }
  if (shape.kvSplits == 1) {
    replaceWithKernelLaunches(func, launches, op.getLayout(), shape.queryRows(),
                              shape.packedHeads);
    return success();
  }
  // The splits' combine kernel: a warp per query row, 4 rows a block.
  KernelShape combineShape{4, 32, 0, shape.headDim, shape.valueDim};
  combineShape.kvSplits = shape.kvSplits;
  gpu::GPUFuncOp combine = createKernel(
      func, (func.getSymName() + "_combine").str(),
      launches.front().kernel->getParentOfType<gpu::GPUModuleOp>(), {},
      combineShape.threads(), splitKernelBuffers(op, /*combine=*/true));
  KernelBuilder(b, loc, op, combineShape).combiningSplits().build(combine);
  SplitCombine split{{combine, combineShape.threads()},
                     combineShape.blockRows,
                     shape.kvSplits,
                     shape.valueDim,
                     op.getLseInit() != nullptr};
  replaceWithKernelLaunches(func, launches, op.getLayout(), shape.queryRows(),
                            shape.packedHeads, &split);
  return success();
}

namespace {
struct ConvertAttnToGPUPass
    : attn::impl::ConvertAttnToGPUBase<ConvertAttnToGPUPass> {
  using Base::Base;

  void runOnOperation() override {
    if (kvSplits < 0 || kvSplits > kMaxKvSplits) {
      getOperation()->emitError()
          << "attn-convert-to-gpu: kv-splits must be in [0, " << kMaxKvSplits
          << "], got " << static_cast<int64_t>(kvSplits);
      return signalPassFailure();
    }
    if (mmaWarpRows != 16 && mmaWarpRows != 32) {
      getOperation()->emitError()
          << "attn-convert-to-gpu: mma-warp-rows must be 16 or 32, got "
          << static_cast<int64_t>(mmaWarpRows);
      return signalPassFailure();
    }
    if (kvStages != 1 && kvStages != 2) {
      getOperation()->emitError()
          << "attn-convert-to-gpu: kv-stages must be 1 or 2, got "
          << static_cast<int64_t>(kvStages);
      return signalPassFailure();
    }
    if (minBlocksPerSM < 0 || minBlocksPerSM > 32) {
      getOperation()->emitError()
          << "attn-convert-to-gpu: min-blocks-per-sm must be in [0, 32], got "
          << static_cast<int64_t>(minBlocksPerSM);
      return signalPassFailure();
    }
    if (blockRows <= 0 || kvTileSize <= 0 || mmaKvTileSize < 0 ||
        blockRows > 1024) {
      getOperation()->emitError()
          << "attn-convert-to-gpu: block-rows must be in [1, 1024], "
             "kv-tile-size positive and mma-kv-tile-size not negative, got "
          << static_cast<int64_t>(blockRows) << ", "
          << static_cast<int64_t>(kvTileSize) << " and "
          << static_cast<int64_t>(mmaKvTileSize);
      return signalPassFailure();
    }
    SmallVector<func::FuncOp> kernels;
    for (auto func : getOperation().getOps<func::FuncOp>())
      if (!func.isExternal())
        kernels.push_back(func);
    for (func::FuncOp func : kernels)
      if (failed(convertAttentionToGPU(
              func, {blockRows, kvTileSize, mmaKvTileSize, mmaBlockRows, mma,
                     minBlocksPerSM, kvSplits, kvStages, packGqa, mmaWarpRows,
                     mmaQueryInShared, mmaRowSums})))
        return signalPassFailure();
    materializeBlockBitmapTables(getOperation());
  }
};
} // namespace
