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
// - Tensor cores (f16/bf16, `mma`): 4 warps of 16 rows on mma.sync m16n8k16,
//   the online softmax on the score fragments. K and V tiles arrive by
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
//===----------------------------------------------------------------------===//

#include "attn/Conversion/AttnToGPU.h"
#include "attn/IR/AttnOps.h"
#include "attn/IR/StructuredMasks.h"
#include "attn/Runtime/KernelABI.h"
#include "attn/Transforms/Passes.h"
#include "attn/Transforms/Transforms.h"
#include "attn/Transforms/Utils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/TypeUtilities.h"

#include <cmath>
#include <limits>

namespace mlir::attn {
#define GEN_PASS_DEF_CONVERTATTNTOGPU
#include "attn/Transforms/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

namespace {
/// The launch geometry and register split of one kernel.
struct KernelShape {
  int64_t blockRows;     // query rows per block
  int64_t threadsPerRow; // T lanes per row
  int64_t kvTile;        // keys per shared-memory tile
  int64_t headDim, valueDim;
  bool mma = false; // tensor cores: a warp per 16 rows
  /// Whether the tensor cores' cp.async copies of a tile that ends before
  /// the visible keys do skip the per-row guards (cheaper, but their
  /// addresses stay live in registers).
  bool unguardedWholeTiles = false;
  /// The exact FMA kernel behind a tensor-core kernel of `redoTile`-key
  /// tiles under a per-row mask: it redoes only the blocks whose V holds
  /// NaN or Inf in a tile they see partly (see scanPartialValues).
  int64_t redoTile = 0;
  /// Keys per online-softmax step of the FMA kernel (dividing kvTile): one
  /// rescale of the accumulator per step.
  int64_t keyGroup = 1;
  int64_t threads() const {
    return mma ? blockRows / 16 * 32 : blockRows * threadsPerRow;
  }
  int64_t headSlice() const { return headDim / threadsPerRow; }
  int64_t valueSlice() const { return valueDim / threadsPerRow; }
  /// Elements after each K or V row of `dim` in shared memory: for the
  /// tensor cores, 16 bytes when that makes the row an odd number of
  /// 16-byte chunks, so the 8 rows one ldmatrix reads start in the 8
  /// different 16-byte bank groups (free of bank conflicts).
  int64_t rowPadding(int64_t dim) const {
    return mma && dim / 8 % 2 == 0 ? 8 : 0;
  }
};

/// Builds the body of the kernel for one attention.
class KernelBuilder {
public:
  KernelBuilder(OpBuilder &b, Location loc, AttentionOp op, KernelShape shape)
      : b(b), loc(loc), m{b, loc}, op(op), shape(shape) {}

  /// Emits the body into `kernel` (arguments: the kernel function's, see
  /// unpackArgs, then B, Sq, Sk; workgroup attributions: the K and V tiles):
  /// the FMA kernel, or with `shape.mma` the tensor-core one.
  void build(gpu::GPUFuncOp kernel) {
    if (shape.mma)
      buildMma(kernel);
    else
      buildFma(kernel);
    if (redoCheck)
      returnUnlessRedone(kernel);
  }

private:
  /// The kernel's arguments, by name.
  struct KernelArgs {
    Value q, k, v, mask, bias, relBias, additiveWeight, lens, spans, blockMask,
        out, lse, sq, sk, keyTile, valueTile;
  };
  KernelArgs unpackArgs(gpu::GPUFuncOp kernel);

  /// Where one query row reads the mask and bias tensors.
  struct RowOperands {
    Value maskRow, biasRow;
  };
  RowOperands rowOperands(const KernelArgs &args, Value batch, Value head,
                          Value i, Value rowValid);

  /// Whether nothing (score_mod, bias, relative-position bias) comes
  /// between the scaled score and its base-2 logit: then the kernels fold
  /// log2(e) into the scale, saving a multiply per score.
  bool logitIsScaledScore(const KernelArgs &args) {
    return op.getScoreMod().empty() && !args.bias && !args.relBias;
  }
  /// The factor the kernels scale scores by: the attention's scale, times
  /// log2(e) when logitIsScaledScore.
  Value logitScale(const KernelArgs &args) {
    Value scale =
        createScale(b, loc, op.getScale(), b.getIndexAttr(shape.headDim));
    if (!logitIsScaledScore(args))
      return scale;
    return arith::MulFOp::create(b, loc, scale, f32(M_LOG2E));
  }

  /// The base-2 logit of one score of row i and key j, scaled by
  /// logitScale: score_mod, bias, then every mask (and `visible`); -inf
  /// where hidden. A null `visible` says the key is in a tile the block sees
  /// whole: no mask.
  Value maskedLogit(const KernelArgs &args, const RowOperands &row, Value score,
                    Value batch, Value head, Value i, Value j, Value visible);

  /// Stores row i's log-sum-exp, (max + log2(sum)) ln 2 from its base-2
  /// running max, or -inf for a row that saw no key, when the kernel has an
  /// lse output and `store` holds.
  void storeLse(const KernelArgs &args, Value batch, Value head, Value i,
                Value max, Value sum, Value store);

  /// What the online softmax subtracts from a row's logits given their
  /// running max: the max, or 0 while it is -inf (the row has seen no key).
  /// Then exp2 of the hidden logits and of the old max (-inf) is 0, and the
  /// row keeps (acc, sum) = 0 without a select per score.
  Value softmaxBase(Value max) {
    Value empty =
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, max,
                              f32(-std::numeric_limits<float>::infinity()));
    return arith::SelectOp::create(b, loc, empty, f32(0.0), max);
  }

  /// The query block this thread block computes, counted from the last: a
  /// GPU starts blocks about in index order, and under a causal mask the
  /// last query blocks see the most keys, so the longest start first and
  /// the launch ends without a tail of long blocks (longest first).
  Value queryBlockIndex() {
    Value blocks = gpu::GridDimOp::create(b, loc, gpu::Dimension::x);
    Value block = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
    return m.sub(m.sub(blocks, index(1)), block);
  }

  /// `value` combined (sum or max) over the `lanes` consecutive lanes that
  /// share it, by xor shuffles.
  Value combineLanes(Value value, int64_t lanes, bool max);

  /// Whether the structured mask or the mask_mod (by its interval bounds)
  /// certainly hides keys [keyFirst, keyEnd) from every row [qFirst, qEnd)
  /// of the block, or its block_mask blocks are all empty (or none is full
  /// and the rules hide them); null when nothing can tell. A band mask hides
  /// no key of the block's range (without a block mask), so it is not asked.
  Value tileHidden(Value batch, Value head, Value qFirst, Value qEnd,
                   Value keyFirst, Value keyEnd);

  /// The block_mask class (i8) of the block holding (i, j) of (batch,
  /// head); indices past Sq or Sk read the last block, in bounds.
  Value blockClass(Value batch, Value head, Value i, Value j);
  /// The least and greatest block_mask class under rows [qFirst, qEnd) and
  /// keys [keyFirst, keyEnd) of (batch, head).
  std::pair<Value, Value> blockClassRange(Value batch, Value head, Value qFirst,
                                          Value qEnd, Value keyFirst,
                                          Value keyEnd);
  Value classAtLeast(Value c, int64_t v) {
    return arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::sge, c,
        arith::ConstantIntOp::create(b, loc, b.getI8Type(), v));
  }

  /// The keys of one query block [qFirst, qEnd) of `head` some row may see,
  /// [begin, end) (by the structured mask, kv_lens and spans).
  struct BlockKeys {
    Value qFirst, qEnd, begin, end;
  };
  BlockKeys blockKeys(const KernelArgs &args, Value batch, Value head,
                      Value qFirst);

  /// The loop over key tiles [begin, end) in steps of `tile`, carrying
  /// `initial`; `body` returns one tile's new state, told whether the block
  /// sees the tile whole (then it needs no per-score mask: no mask tensor or
  /// mask_mod, keys before `end`, and the structured mask shows them all to
  /// every row). Tiles tileHidden
  /// proves empty are skipped: `skipped` (if given) runs instead of the body.
  /// Both branches are the block's, so barriers in them stay uniform.
  scf::ForOp
  tileLoop(const BlockKeys &keys, int64_t tile, ValueRange initial, Value batch,
           Value head,
           function_ref<SmallVector<Value>(Value, ValueRange, bool)> body,
           function_ref<void(Value)> skipped = nullptr);

  /// D = A B + C for m16n8k16 fragments (A vector<4x2xT>, B vector<2x2xT>,
  /// C and D vector<2x2xf32>): nvgpu.mma.sync for f16; nvvm.mma.sync on the
  /// packed 32-bit registers for bf16, which MLIR 22's nvgpu lowering cannot
  /// type.
  Value mmaSync(Value a, Value bFrag, Value c);

  /// `tiles` 8x8 matrices of a shared f16/bf16 `tile` by ldmatrix, from
  /// this lane's address (row, col), as vector<tiles x 2>.
  Value ldmatrix(Value tile, Value row, Value col, int64_t tiles,
                 bool transpose);
  /// The B fragment (2 registers) `which` (0 or 1) of an x4 ldmatrix.
  Value fragmentPair(Value fragments, int64_t which);
  /// acc[n] += probFrag x tile[16 ks, 16 ks + 16) x [8 (first + n), + 8):
  /// one 16-key step of O += P V over the output fragments `acc`, starting
  /// at fragment `first`, B fragments by ldmatrix.trans (two 8-wide steps
  /// per x4 load).
  void multiplyValueTile(Value tile, Value probFrag, int64_t ks,
                         MutableArrayRef<Value> acc, int64_t first);
  /// Whether V holds NaN or Inf in a key tile of the tensor-core kernel
  /// (`shape.redoTile` keys) the block sees partly: there its products would
  /// carry them, as 0 x NaN, to rows that do not see their keys. Read from
  /// global memory, block-uniform (a barrier's vote).
  Value scanPartialValues(const KernelArgs &args, const BlockKeys &keys,
                          Value batch, Value head, Value kvHead, Value tid);
  /// Makes the kernel return at once unless `redoCheck` holds.
  void returnUnlessRedone(gpu::GPUFuncOp kernel);
  Value redoCheck;

  /// `scaled()` (the online softmax's rescale of `values` by their rows'
  /// alphas) unless `unchanged`, when `values` stay as they are: a branch,
  /// not a product with 1, which would change no bit. Past the first tiles
  /// a row's max seldom moves, so the warp mostly skips the multiplies.
  SmallVector<Value> rescaleUnless(Value unchanged, ValueRange values,
                                   function_ref<SmallVector<Value>()> scaled);
  Value isOne(Value x) {
    return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, x,
                                 f32(1.0));
  }

  void buildFma(gpu::GPUFuncOp kernel);
  void buildMma(gpu::GPUFuncOp kernel);

  Value index(int64_t v) { return m.constant(v); }
  Value mul(Value x, Value y) { return arith::MulIOp::create(b, loc, x, y); }
  Value div(Value x, Value y) { return arith::DivUIOp::create(b, loc, x, y); }
  Value rem(Value x, Value y) { return arith::RemUIOp::create(b, loc, x, y); }
  Value min(Value x, Value y) { return arith::MinSIOp::create(b, loc, x, y); }
  Value max(Value x, Value y) { return arith::MaxSIOp::create(b, loc, x, y); }
  Value f32(double v) {
    return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(v));
  }

  /// Offset of element (batch, head, pos, 0) of a flattened [B, H, S, dim]
  /// (or, in BSHD, [B, S, H, dim]) tensor.
  Value rowOffset(Value batch, Value head, Value pos, Value heads, Value seq,
                  int64_t dim) {
    Value outer = op.getLayout() == Layout::BSHD
                      ? m.add(mul(m.add(mul(batch, seq), pos), heads), head)
                      : m.add(mul(m.add(mul(batch, heads), head), seq), pos);
    return mul(outer, index(dim));
  }

  /// `width` elements of `memref` from `offset`, as f32.
  Value loadSlice(Value memref, Value offset, int64_t width) {
    Type element = getElementTypeOrSelf(memref.getType());
    Value slice = vector::LoadOp::create(
        b, loc, VectorType::get({width}, element), memref, offset);
    if (element.isF32())
      return slice;
    return arith::ExtFOp::create(
        b, loc, VectorType::get({width}, b.getF32Type()), slice);
  }

  /// The FMA kernel's lanes hold interleaved slices of a row: of the T lanes
  /// of a row, `lane` holds the chunks of w elements that start at columns
  /// (c T + lane) w, w the widest of 4, 2, 1 dividing the slice. The T lanes
  /// reading a key row of shared memory then read T adjacent chunks, free of
  /// bank conflicts (contiguous slices of 32 floats would all start in bank
  /// 0).
  static int64_t sliceChunk(int64_t slice) {
    return slice % 4 == 0 ? 4 : slice % 2 == 0 ? 2 : 1;
  }
  /// `lane`'s slice of `slice` elements, as f32: `load(column, w)` reads
  /// the chunk from `column`.
  Value gatherSlice(Value lane, int64_t slice,
                    function_ref<Value(Value, int64_t)> load) {
    // Concatenated by shuffles (which, unlike strided slices, lower to LLVM
    // directly).
    int64_t w = sliceChunk(slice);
    Value gathered = load(sliceColumn(lane, 0, w), w);
    for (int64_t c = 1; c < slice / w; ++c)
      gathered = vector::ShuffleOp::create(
          b, loc, gathered, load(sliceColumn(lane, c, w), w),
          llvm::to_vector(llvm::seq<int64_t>(0, (c + 1) * w)));
    return gathered;
  }
  /// Stores `lane`'s slice `values` by `store(chunk, column)`.
  void scatterSlice(Value lane, Value values,
                    function_ref<void(Value, Value)> store) {
    int64_t slice = cast<VectorType>(values.getType()).getNumElements();
    int64_t w = sliceChunk(slice);
    for (int64_t c = 0; c < slice / w; ++c)
      store(vector::ShuffleOp::create(
                b, loc, values, values,
                llvm::to_vector(llvm::seq<int64_t>(c * w, (c + 1) * w))),
            sliceColumn(lane, c, w));
  }
  /// The dot product of two f32 vectors as FMA chains over 4-wide chunks,
  /// then a sum of the chunk (LLVM fuses no multiply into an add without
  /// contraction flags: a product and a reduction cost twice the FMAs).
  Value chunkedDot(Value x, Value y) {
    int64_t n = cast<VectorType>(x.getType()).getNumElements();
    int64_t w = sliceChunk(n);
    auto chunk = [&](Value v, int64_t c) -> Value {
      return vector::ShuffleOp::create(
          b, loc, v, v,
          llvm::to_vector(llvm::seq<int64_t>(c * w, (c + 1) * w)));
    };
    Value sum = arith::MulFOp::create(b, loc, chunk(x, 0), chunk(y, 0));
    for (int64_t c = 1; c < n / w; ++c)
      sum = vector::FMAOp::create(b, loc, chunk(x, c), chunk(y, c), sum);
    return vector::ReductionOp::create(b, loc, vector::CombiningKind::ADD, sum);
  }
  Value sliceColumn(Value lane, int64_t c, int64_t w) {
    return mul(m.add(index(c * shape.threadsPerRow), lane), index(w));
  }
  /// `lane`'s slice of a row of the 1-D `memref` starting at `rowStart`.
  Value loadRowSlice(Value memref, Value rowStart, Value lane, int64_t slice) {
    return gatherSlice(lane, slice, [&](Value column, int64_t w) {
      return loadSlice(memref, m.add(rowStart, column), w);
    });
  }
  /// `lane`'s slice of row `row` of a shared K or V tile.
  Value loadTileSlice(Value tile, Value row, Value lane, int64_t slice) {
    return gatherSlice(lane, slice, [&](Value column, int64_t w) -> Value {
      return vector::LoadOp::create(b, loc,
                                    VectorType::get({w}, b.getF32Type()), tile,
                                    ValueRange{row, column});
    });
  }

  /// For a mask or bias `operand` broadcast to [B, Hq, Sq, Sk] (rank <= 4,
  /// right-aligned, each dim 1 or full): the offset of its element (batch,
  /// head, row, 0) and its key stride, in its flattened memref. A static 1
  /// broadcasts; the row is clamped to Sq - 1 where `rowValid` is false.
  std::pair<Value, Value> broadcastRow(Value operand, Value batch, Value head,
                                       Value row, Value sq, Value sk,
                                       Value rowValid);

  /// Stages rows [tileStart, tileStart + kvTile) of a K or V head (rows
  /// past `end` as 0) into the shared `tile` [kvTile, dim].
  void stageTile(Value tile, Value source, Value batch, Value kvHead,
                 Value tileStart, Value end, Value sk, int64_t dim, Value tid);
  /// Whether row r of a K or V tile from `tileStart` holds a key before
  /// `end`, and the offset of the key row it reads (rows past the end read
  /// the last visible key, in bounds).
  std::pair<Value, Value> stagedRow(Value batch, Value kvHead, Value tileStart,
                                    Value r, Value end, Value sk, int64_t dim);
  /// The same as one cp.async group of 16-byte copies (rows past `end`
  /// zero-filled, the tile's element type kept); it lands after a
  /// cp.async.wait_group and a barrier.
  void stageTileAsync(Value tile, Value source, Value batch, Value kvHead,
                      Value tileStart, Value end, Value sk, int64_t dim,
                      Value tid);

  OpBuilder &b;
  Location loc;
  IndexMath m;
  AttentionOp op;
  KernelShape shape;
  Value kernelBatchCount;       // the kernel's B argument
  Value sqArg, skArg;           // and its Sq and Sk
  Value blockMaskArg;           // the block_mask argument, or null
  Value queryBlocks, keyBlocks; // and its block counts
  // Hq and Hkv: constants when static, else the kernel's arguments.
  Value qHeadCount, kvHeadCount;
  Value maskKeyStride, biasKeyStride;
  // The tensor-core kernel's ldmatrix lane: row l % 8 of matrix l / 8.
  Value laneRow, laneMatrix;
};
} // namespace

std::pair<Value, Value> KernelBuilder::broadcastRow(Value operand, Value batch,
                                                    Value head, Value row,
                                                    Value sq, Value sk,
                                                    Value rowValid) {
  auto type = cast<ShapedType>(operand.getType());
  Value batchCount = kernelBatchCount;
  Value safeRow =
      arith::SelectOp::create(b, loc, rowValid, row, m.sub(sq, index(1)));
  // The canonical dims (b, h, i, j): their sizes and this element's index.
  Value sizes[4] = {batchCount, qHeadCount, sq, sk};
  Value indices[4] = {batch, head, safeRow, index(0)};
  int64_t lead = 4 - type.getRank();
  Value offset = index(0), stride = index(1), keyStride = index(0);
  for (int64_t d = 3; d >= lead; --d) {
    if (type.getDimSize(d - lead) == 1)
      continue; // broadcast: stride 0
    if (d == 3)
      keyStride = stride;
    offset = m.add(offset, mul(indices[d], stride));
    stride = mul(stride, sizes[d]);
  }
  return {offset, keyStride};
}

void KernelBuilder::stageTile(Value tile, Value source, Value batch,
                              Value kvHead, Value tileStart, Value end,
                              Value sk, int64_t dim, Value tid) {
  Type element = getElementTypeOrSelf(source.getType());
  scf::ForOp::create(
      b, loc, tid, index(shape.kvTile * dim), index(shape.threads()),
      ValueRange{}, [&](OpBuilder &lb, Location ll, Value e, ValueRange) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPoint(lb.getInsertionBlock(), lb.getInsertionPoint());
        Value r = div(e, index(dim)), c = rem(e, index(dim));
        auto [inside, row] =
            stagedRow(batch, kvHead, tileStart, r, end, sk, dim);
        // Rows past the end store 0.
        Value value = memref::LoadOp::create(b, loc, source, m.add(row, c));
        Type stored = getElementTypeOrSelf(tile.getType());
        if (element != stored)
          value = arith::ExtFOp::create(b, loc, stored, value);
        value = arith::SelectOp::create(
            b, loc, inside, value,
            arith::ConstantOp::create(b, loc, b.getFloatAttr(stored, 0.0)));
        memref::StoreOp::create(b, loc, value, tile, ValueRange{r, c});
        scf::YieldOp::create(b, loc);
      });
}

std::pair<Value, Value> KernelBuilder::stagedRow(Value batch, Value kvHead,
                                                 Value tileStart, Value r,
                                                 Value end, Value sk,
                                                 int64_t dim) {
  Value key = m.add(tileStart, r);
  Value inside = m.slt(key, end);
  Value safeKey =
      arith::SelectOp::create(b, loc, inside, key, m.sub(end, index(1)));
  return {inside, rowOffset(batch, kvHead, safeKey, kvHeadCount, sk, dim)};
}

void KernelBuilder::stageTileAsync(Value tile, Value source, Value batch,
                                   Value kvHead, Value tileStart, Value end,
                                   Value sk, int64_t dim, Value tid) {
  // 8 elements of 16 bits per copy; each thread takes every threads()-th.
  constexpr int64_t chunk = 8;
  int64_t chunksPerRow = dim / chunk, chunks = shape.kvTile * chunksPerRow;
  int64_t threads = shape.threads();
  // With shape.unguardedWholeTiles, a tile whose keys all come before `end`
  // copies them unguarded: its row addresses are then affine in tileStart,
  // cheap to step (most tiles).
  auto copies = [&](bool guarded) {
    for (int64_t first = 0; first < chunks; first += threads) {
      OpBuilder::InsertionGuard guard(b);
      Value e = m.add(tid, index(first));
      if (first + threads > chunks) {
        auto inRange = scf::IfOp::create(b, loc, m.slt(e, index(chunks)),
                                         /*withElseRegion=*/false);
        b.setInsertionPointToStart(&inRange.getThenRegion().front());
      }
      // When a pass of the threads covers whole rows, a thread keeps its
      // column and steps its row by a constant: one base address plus
      // immediate offsets, not an address per pass held across the loop.
      Value r, c;
      if (threads % chunksPerRow == 0) {
        r = m.add(div(tid, index(chunksPerRow)), index(first / chunksPerRow));
        c = mul(rem(tid, index(chunksPerRow)), index(chunk));
      } else {
        r = div(e, index(chunksPerRow));
        c = mul(rem(e, index(chunksPerRow)), index(chunk));
      }
      Value row, count;
      if (guarded) {
        // Rows past the end copy nothing: zeros.
        auto [rowInside, safeRow] =
            stagedRow(batch, kvHead, tileStart, r, end, sk, dim);
        row = safeRow;
        count =
            arith::SelectOp::create(b, loc, rowInside, index(chunk), index(0));
      } else {
        row =
            rowOffset(batch, kvHead, m.add(tileStart, r), kvHeadCount, sk, dim);
      }
      nvgpu::DeviceAsyncCopyOp::create(
          b, loc, nvgpu::DeviceAsyncTokenType::get(b.getContext()), tile,
          ValueRange{r, c}, source, ValueRange{m.add(row, c)},
          b.getIndexAttr(chunk), count,
          /*bypassL1=*/b.getUnitAttr());
    }
  };
  if (!shape.unguardedWholeTiles) {
    copies(/*guarded=*/true);
    NVVM::CpAsyncCommitGroupOp::create(b, loc);
    return;
  }
  scf::IfOp::create(
      b, loc, m.sle(m.add(tileStart, index(shape.kvTile)), end),
      [&](OpBuilder &tb, Location) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPoint(tb.getInsertionBlock(), tb.getInsertionPoint());
        copies(/*guarded=*/false);
        scf::YieldOp::create(b, loc);
      },
      [&](OpBuilder &eb, Location) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPoint(eb.getInsertionBlock(), eb.getInsertionPoint());
        copies(/*guarded=*/true);
        scf::YieldOp::create(b, loc);
      });
  NVVM::CpAsyncCommitGroupOp::create(b, loc);
}

KernelBuilder::KernelArgs KernelBuilder::unpackArgs(gpu::GPUFuncOp kernel) {
  Block &body = kernel.getBody().front();
  unsigned next = 0;
  auto arg = [&] { return body.getArgument(next++); };
  KernelArgs args;
  args.q = arg();
  args.k = arg();
  args.v = arg();
  args.mask = op.getMask() ? arg() : Value();
  args.bias = op.getBias() ? arg() : Value();
  args.relBias = op.getRelBias() ? arg() : Value();
  args.additiveWeight = op.getAdditiveWeight() ? arg() : Value();
  args.lens = op.getKvLens() ? arg() : Value();
  args.spans = op.getSpans() ? arg() : Value();
  args.blockMask = blockMaskArg = op.getBlockMask() ? arg() : Value();
  args.out = arg();
  args.lse = op.getLseInit() ? arg() : Value();
  kernelBatchCount = arg();
  args.sq = sqArg = arg();
  args.sk = skArg = arg();
  auto headsOf = [&](Value operand, Value argument) -> Value {
    int64_t n = cast<ShapedType>(operand.getType())
                    .getDimSize(getHeadDimPos(op.getLayout()));
    return ShapedType::isDynamic(n) ? argument : index(n);
  };
  qHeadCount = headsOf(op.getQuery(), arg());
  kvHeadCount = headsOf(op.getKey(), arg());
  if (blockMaskArg) {
    ArrayRef<int64_t> sizes = *op.getBlockSizes();
    queryBlocks = arith::CeilDivUIOp::create(b, loc, args.sq, index(sizes[0]));
    keyBlocks = arith::CeilDivUIOp::create(b, loc, args.sk, index(sizes[1]));
  }
  args.keyTile = kernel.getWorkgroupAttributions()[0];
  args.valueTile = kernel.getWorkgroupAttributions()[1];
  return args;
}

void KernelBuilder::storeLse(const KernelArgs &args, Value batch, Value head,
                             Value i, Value max, Value sum, Value store) {
  if (!args.lse)
    return;
  OpBuilder::InsertionGuard guard(b);
  auto ifStore = scf::IfOp::create(b, loc, store, /*withElseRegion=*/false);
  b.setInsertionPointToStart(&ifStore.getThenRegion().front());
  Value sawKey =
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, sum, f32(0.0));
  Value log2 =
      arith::AddFOp::create(b, loc, max, math::Log2Op::create(b, loc, sum));
  Value lse = arith::SelectOp::create(
      b, loc, sawKey,
      arith::MulFOp::create(b, loc, log2, f32(llvm::numbers::ln2)),
      f32(-std::numeric_limits<float>::infinity()));
  // [B, Hq, Sq] in every layout.
  Value at = m.add(mul(m.add(mul(batch, qHeadCount), head), args.sq), i);
  memref::StoreOp::create(b, loc, lse, args.lse, at);
}

KernelBuilder::RowOperands KernelBuilder::rowOperands(const KernelArgs &args,
                                                      Value batch, Value head,
                                                      Value i, Value rowValid) {
  RowOperands row;
  if (args.mask)
    std::tie(row.maskRow, maskKeyStride) =
        broadcastRow(op.getMask(), batch, head, i, args.sq, args.sk, rowValid);
  if (args.bias)
    std::tie(row.biasRow, biasKeyStride) =
        broadcastRow(op.getBias(), batch, head, i, args.sq, args.sk, rowValid);
  return row;
}

Value KernelBuilder::maskedLogit(const KernelArgs &args, const RowOperands &row,
                                 Value score, Value batch, Value head, Value i,
                                 Value j, Value visible) {
  Region &scoreMod = op.getScoreMod(), &maskMod = op.getMaskMod();
  if (!scoreMod.empty())
    score = inlineRegion(b, scoreMod, {score, batch, head, i, j});
  // A block mask's class decides before the other masks, within `visible`
  // (rows and keys in range).
  Value inRange = visible;
  // Tensor-core fragments hold keys past Sk too: their mask and bias reads
  // stay in bounds (rowOperands clamps the rows), their scores are hidden.
  Value safeKey =
      args.mask || args.bias ? min(j, m.sub(args.sk, index(1))) : Value();
  if (args.bias) {
    Value bias = memref::LoadOp::create(
        b, loc, args.bias,
        ValueRange{m.add(row.biasRow, mul(safeKey, biasKeyStride))});
    if (!bias.getType().isF32())
      bias = arith::ExtFOp::create(b, loc, b.getF32Type(), bias);
    score = arith::AddFOp::create(b, loc, score, bias);
  }
  if (args.relBias) {
    // rel_bias[h, bucket(j - i)], flattened.
    RelPosAttr relpos = op.getRelposAttr();
    Value at = m.add(mul(head, index(relpos.getBuckets())),
                     buildRelPosBucket(b, loc, relpos, i, j));
    score = arith::AddFOp::create(
        b, loc, score, memref::LoadOp::create(b, loc, args.relBias, at));
  }
  Value logit = logitIsScaledScore(args)
                    ? score
                    : arith::MulFOp::create(b, loc, score, f32(M_LOG2E));
  if (!visible)
    return logit;
  if (StructuredMaskAttrInterface mask = op.getStructuredMaskAttr())
    visible =
        m.both(visible, buildMaskVisible(b, loc, mask, i, j, args.sq, args.sk));
  if (args.mask)
    visible = m.both(
        visible,
        memref::LoadOp::create(
            b, loc, args.mask,
            ValueRange{m.add(row.maskRow, mul(safeKey, maskKeyStride))}));
  if (args.spans) {
    // Adaptive span: j >= i - spans[h].
    Value span = arith::IndexCastOp::create(
        b, loc, b.getIndexType(),
        memref::LoadOp::create(b, loc, args.spans, ValueRange{head}));
    visible = m.both(visible, m.sle(m.sub(i, span), j));
  }
  if (!maskMod.empty())
    visible = m.both(visible, inlineRegion(b, maskMod, {batch, head, i, j}));
  if (args.blockMask) {
    // kv_lens ends the key loop (blockKeys) except under a block mask, whose
    // full blocks show keys past it: its partial blocks test it here.
    if (args.lens)
      visible = m.both(
          visible,
          m.slt(j, arith::IndexCastOp::create(
                       b, loc, b.getIndexType(),
                       memref::LoadOp::create(b, loc, args.lens, batch))));
    Value c = blockClass(batch, head, i, j);
    Value partial = arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::eq, c,
        arith::ConstantIntOp::create(b, loc, b.getI8Type(), 1));
    visible = m.both(inRange, arith::OrIOp::create(b, loc, classAtLeast(c, 2),
                                                   m.both(partial, visible)));
  }
  return arith::SelectOp::create(b, loc, visible, logit,
                                 f32(-std::numeric_limits<float>::infinity()));
}

Value KernelBuilder::combineLanes(Value value, int64_t lanes, bool max) {
  Value width = arith::ConstantIntOp::create(b, loc, 32, 32);
  for (int64_t offset = 1; offset < lanes; offset *= 2) {
    Value mask = arith::ConstantIntOp::create(b, loc, offset, 32);
    Value other = gpu::ShuffleOp::create(b, loc, value, mask, width,
                                         gpu::ShuffleMode::XOR)
                      .getShuffleResult();
    value = max ? arith::MaximumFOp::create(b, loc, value, other).getResult()
                : arith::AddFOp::create(b, loc, value, other).getResult();
  }
  return value;
}

Value KernelBuilder::tileHidden(Value batch, Value head, Value qFirst,
                                Value qEnd, Value keyFirst, Value keyEnd) {
  Value qLast = m.sub(qEnd, index(1)), keyLast = m.sub(keyEnd, index(1));
  Value hidden;
  auto either = [&](Value x, Value y) -> Value {
    return x ? arith::OrIOp::create(b, loc, x, y).getResult() : y;
  };
  StructuredMaskAttrInterface mask = op.getStructuredMaskAttr();
  if (mask && (!isBandMask(mask) || blockMaskArg))
    hidden = buildMaskTile(b, loc, mask, qFirst, qLast, keyFirst, keyLast,
                           sqArg, skArg)
                 .hidesAll;
  Region &maskMod = op.getMaskMod();
  std::pair<Value, Value> ranges[] = {
      {batch, batch}, {head, head}, {qFirst, qLast}, {keyFirst, keyLast}};
  if (!maskMod.empty())
    if (FailureOr<MaskModBounds> bounds = boundMaskMod(b, loc, maskMod, ranges);
        succeeded(bounds))
      hidden = either(hidden, bounds->hidesAll);
  if (!blockMaskArg)
    return hidden;
  // Every block empty, or none full while the rules hide the tile.
  Value greatest =
      blockClassRange(batch, head, qFirst, qEnd, keyFirst, keyEnd).second;
  Value noneFull = m.constantBool(true);
  noneFull = arith::XOrIOp::create(b, loc, classAtLeast(greatest, 2), noneFull);
  Value empty = arith::XOrIOp::create(b, loc, classAtLeast(greatest, 1),
                                      m.constantBool(true));
  return hidden ? either(empty, m.both(noneFull, hidden)) : empty;
}

Value KernelBuilder::blockClass(Value batch, Value head, Value i, Value j) {
  auto type = cast<RankedTensorType>(op.getBlockMask().getType());
  ArrayRef<int64_t> sizes = *op.getBlockSizes();
  Value one = index(1);
  // [B or 1, Hq or 1, query blocks, key blocks], flattened.
  bool batches = type.getDimSize(0) != 1, heads = type.getDimSize(1) != 1;
  Value at = batches ? batch : index(0);
  at = m.add(mul(at, heads ? qHeadCount : one), heads ? head : index(0));
  at = m.add(mul(at, queryBlocks),
             min(div(i, index(sizes[0])), m.sub(queryBlocks, one)));
  at = m.add(mul(at, keyBlocks),
             min(div(j, index(sizes[1])), m.sub(keyBlocks, one)));
  return memref::LoadOp::create(b, loc, blockMaskArg, at);
}

std::pair<Value, Value> KernelBuilder::blockClassRange(Value batch, Value head,
                                                       Value qFirst, Value qEnd,
                                                       Value keyFirst,
                                                       Value keyEnd) {
  ArrayRef<int64_t> sizes = *op.getBlockSizes();
  Type i8 = b.getI8Type();
  auto classes = [&](int64_t c) -> Value {
    return arith::ConstantIntOp::create(b, loc, i8, c);
  };
  // One class per block: step from each block's first index.
  auto blocks = [&](Value first, Value end, int64_t size) {
    Value from = mul(div(first, index(size)), index(size));
    return std::make_tuple(from, end, index(size));
  };
  auto [qFrom, qTo, qStep] = blocks(qFirst, qEnd, sizes[0]);
  auto [kFrom, kTo, kStep] = blocks(keyFirst, keyEnd, sizes[1]);
  auto rows = scf::ForOp::create(
      b, loc, qFrom, qTo, qStep, ValueRange{classes(2), classes(0)},
      [&](OpBuilder &rb, Location, Value i, ValueRange outer) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPoint(rb.getInsertionBlock(), rb.getInsertionPoint());
        auto cols = scf::ForOp::create(
            b, loc, kFrom, kTo, kStep, outer,
            [&](OpBuilder &cb, Location, Value j, ValueRange inner) {
              OpBuilder::InsertionGuard guard(b);
              b.setInsertionPoint(cb.getInsertionBlock(),
                                  cb.getInsertionPoint());
              Value c = blockClass(batch, head, i, j);
              scf::YieldOp::create(
                  b, loc,
                  ValueRange{arith::MinSIOp::create(b, loc, inner[0], c),
                             arith::MaxSIOp::create(b, loc, inner[1], c)});
            });
        scf::YieldOp::create(b, loc, cols.getResults());
      });
  return {rows.getResult(0), rows.getResult(1)};
}

KernelBuilder::BlockKeys KernelBuilder::blockKeys(const KernelArgs &args,
                                                  Value batch, Value head,
                                                  Value qFirst) {
  BlockKeys keys;
  keys.qFirst = qFirst;
  keys.qEnd = min(m.add(qFirst, index(shape.blockRows)), args.sq);
  keys.begin = index(0);
  keys.end = args.sk;
  // A block mask's full blocks show keys the other masks hide.
  if (args.blockMask)
    return keys;
  if (StructuredMaskAttrInterface mask = op.getStructuredMaskAttr())
    std::tie(keys.begin, keys.end) = buildMaskKeyHull(
        b, loc, mask, qFirst, m.sub(keys.qEnd, index(1)), args.sq, args.sk);
  if (args.lens) {
    Value len = memref::LoadOp::create(b, loc, args.lens, batch);
    keys.end = min(keys.end,
                   arith::IndexCastOp::create(b, loc, b.getIndexType(), len));
  }
  if (args.spans) {
    // The block's first row sees keys from qFirst - spans[head] on.
    Value span = memref::LoadOp::create(b, loc, args.spans, head);
    keys.begin =
        max(keys.begin, m.sub(qFirst, arith::IndexCastOp::create(
                                          b, loc, b.getIndexType(), span)));
  }
  keys.begin = min(max(keys.begin, index(0)), args.sk);
  keys.end = min(max(keys.end, keys.begin), args.sk);
  return keys;
}

scf::ForOp KernelBuilder::tileLoop(
    const BlockKeys &keys, int64_t tile, ValueRange initial, Value batch,
    Value head, function_ref<SmallVector<Value>(Value, ValueRange, bool)> body,
    function_ref<void(Value)> skipped) {
  // Ends the region at `bb` with a yield of what `fill` builds there.
  auto yieldFrom = [&](OpBuilder &bb, function_ref<SmallVector<Value>()> fill) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(bb.getInsertionBlock(), bb.getInsertionPoint());
    scf::YieldOp::create(b, loc, fill());
  };
  return scf::ForOp::create(
      b, loc, keys.begin, keys.end, index(tile), initial,
      [&](OpBuilder &lb, Location, Value tileStart, ValueRange state) {
        // A tile the block sees whole runs without masks.
        auto compute = [&]() -> SmallVector<Value> {
          bool blocks = op.getBlockMask() != nullptr;
          if (!blocks &&
              (op.getMask() || op.getSpans() || !op.getMaskMod().empty()))
            return body(tileStart, state, /*whole=*/false);
          Value tileLast = m.add(tileStart, index(tile - 1));
          Value whole = m.slt(tileLast, keys.end);
          // Under a block mask only full blocks drop every mask.
          if (blocks)
            whole = m.both(
                whole, classAtLeast(blockClassRange(batch, head, keys.qFirst,
                                                    keys.qEnd, tileStart,
                                                    m.add(tileLast, index(1)))
                                        .first,
                                    2));
          else if (StructuredMaskAttrInterface mask =
                       op.getStructuredMaskAttr())
            whole =
                m.both(whole, buildMaskTile(b, loc, mask, keys.qFirst,
                                            m.sub(keys.qEnd, index(1)),
                                            tileStart, tileLast, sqArg, skArg)
                                  .showsAll);
          auto branch = scf::IfOp::create(
              b, loc, whole,
              [&](OpBuilder &tb, Location) {
                yieldFrom(tb, [&] { return body(tileStart, state, true); });
              },
              [&](OpBuilder &eb, Location) {
                yieldFrom(eb, [&] { return body(tileStart, state, false); });
              });
          return SmallVector<Value>(branch.getResults());
        };
        yieldFrom(lb, [&]() -> SmallVector<Value> {
          Value tileEnd = min(keys.end, m.add(tileStart, index(tile)));
          Value hidden = tileHidden(batch, head, keys.qFirst, keys.qEnd,
                                    tileStart, tileEnd);
          if (!hidden)
            return compute();
          auto branch = scf::IfOp::create(
              b, loc, hidden,
              [&](OpBuilder &tb, Location) {
                yieldFrom(tb, [&]() -> SmallVector<Value> {
                  if (skipped)
                    skipped(tileStart);
                  return SmallVector<Value>(state);
                });
              },
              [&](OpBuilder &eb, Location) { yieldFrom(eb, compute); });
          return SmallVector<Value>(branch.getResults());
        });
      });
}

SmallVector<Value>
KernelBuilder::rescaleUnless(Value unchanged, ValueRange values,
                             function_ref<SmallVector<Value>()> scaled) {
  auto branch = scf::IfOp::create(b, loc, values.getTypes(), unchanged,
                                  /*withElseRegion=*/true);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(&branch.getThenRegion().front());
  scf::YieldOp::create(b, loc, values);
  b.setInsertionPointToStart(&branch.getElseRegion().front());
  scf::YieldOp::create(b, loc, scaled());
  return branch.getResults();
}

void KernelBuilder::buildFma(gpu::GPUFuncOp kernel) {
  Block &body = kernel.getBody().front();
  b.setInsertionPointToStart(&body);
  KernelArgs args = unpackArgs(kernel);
  Value q = args.q, k = args.k, v = args.v, out = args.out;
  Value sq = args.sq, sk = args.sk;
  Value keyTile = args.keyTile, valueTile = args.valueTile;

  Value heads = qHeadCount;
  int64_t t = shape.threadsPerRow;

  Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  Value queryBlock = queryBlockIndex();
  Value head = gpu::BlockIdOp::create(b, loc, gpu::Dimension::y);
  Value batch = gpu::BlockIdOp::create(b, loc, gpu::Dimension::z);
  Value row = div(tid, index(t)), lane = rem(tid, index(t));
  Value qFirst = mul(queryBlock, index(shape.blockRows));
  Value i = m.add(qFirst, row);
  Value rowValid = m.slt(i, sq);
  Value kvHead = div(head, div(qHeadCount, kvHeadCount));
  // Mask and bias rows of this row (clamped like its query, so rows past Sq
  // read in bounds), indexed by key below.
  RowOperands rowMasks = rowOperands(args, batch, head, i, rowValid);

  // This lane's slice of its query row, scaled. Rows past Sq read the last
  // row (their results are never stored) so every lane takes part in the
  // shuffles and barriers.
  Value safeRow =
      arith::SelectOp::create(b, loc, rowValid, i, m.sub(sq, index(1)));
  Value qAt = rowOffset(batch, head, safeRow, heads, sq, shape.headDim);
  // The Gaussian and additive scores are linear in it too.
  Value scale = logitScale(args);
  auto qVecType = VectorType::get({shape.headSlice()}, b.getF32Type());
  Value qLoaded = loadRowSlice(q, qAt, lane, shape.headSlice());
  Value qSlice = arith::MulFOp::create(
      b, loc, qLoaded, vector::BroadcastOp::create(b, loc, qVecType, scale));
  // Additive: this lane's slice of w[h], scaled; a score is then
  // sum w tanh(q + k) over the row's lanes.
  Value weightSlice;
  if (args.additiveWeight)
    weightSlice = arith::MulFOp::create(
        b, loc,
        loadRowSlice(args.additiveWeight, mul(head, index(shape.headDim)), lane,
                     shape.headSlice()),
        vector::BroadcastOp::create(b, loc, qVecType, scale));
  Value halfScale;
  if (op.getSimilarity() == Similarity::Gaussian)
    halfScale = vector::BroadcastOp::create(
        b, loc, qVecType,
        arith::MulFOp::create(b, loc, scale, f32(-0.5)).getResult());

  BlockKeys keys = blockKeys(args, batch, head, qFirst);
  // Behind the tensor cores, the block is redone only if they got it wrong.
  if (shape.redoTile)
    redoCheck = scanPartialValues(args, keys, batch, head, kvHead, tid);
  Value end = keys.end;

  auto accType = VectorType::get({shape.valueSlice()}, b.getF32Type());
  Value negInf = f32(-std::numeric_limits<float>::infinity());
  Value zero = f32(0.0);
  // Row i's score of key row jj of the K tile: this lane's part, summed
  // over the row's lanes.
  auto scoreOf = [&](Value jj) {
    Value keySlice = loadTileSlice(keyTile, jj, lane, shape.headSlice());
    Value score;
    if (weightSlice) {
      score = chunkedDot(
          weightSlice,
          math::TanhOp::create(
              b, loc, arith::AddFOp::create(b, loc, qLoaded, keySlice)));
    } else {
      // A Gaussian similarity scores k (q - k / 2) (both scaled).
      Value querySide =
          halfScale ? vector::FMAOp::create(b, loc, keySlice, halfScale, qSlice)
                          .getResult()
                    : qSlice;
      score = chunkedDot(querySide, keySlice);
    }
    return combineLanes(score, t, /*max=*/false);
  };
  SmallVector<Value> initial = {
      negInf, zero,
      arith::ConstantOp::create(b, loc, DenseElementsAttr::get(accType, 0.0f))};
  auto tiles = tileLoop(
      keys, shape.kvTile, initial, batch, head,
      [&](Value tileStart, ValueRange state, bool whole) -> SmallVector<Value> {
        gpu::BarrierOp::create(b, loc);
        stageTile(keyTile, k, batch, kvHead, tileStart, end, sk, shape.headDim,
                  tid);
        stageTile(valueTile, v, batch, kvHead, tileStart, end, sk,
                  shape.valueDim, tid);
        gpu::BarrierOp::create(b, loc);
        // Keys in steps of `group`: one rescale of acc and one exp2 of the
        // old max per step, not per key. A partial tile's keys past `end`
        // (zeros in shared memory) are hidden.
        int64_t group = shape.keyGroup;
        Value count =
            whole ? index(shape.kvTile)
                  : mul(arith::CeilDivUIOp::create(
                            b, loc,
                            min(index(shape.kvTile), m.sub(end, tileStart)),
                            index(group)),
                        index(group));
        auto keys = scf::ForOp::create(
            b, loc, index(0), count, index(group), state,
            [&](OpBuilder &kb, Location, Value first, ValueRange carried) {
              OpBuilder::InsertionGuard guard(b);
              b.setInsertionPoint(kb.getInsertionBlock(),
                                  kb.getInsertionPoint());
              Value rowMax = carried[0], rowSum = carried[1], acc = carried[2];
              SmallVector<Value> logits;
              Value newMax = rowMax;
              for (int64_t g = 0; g < group; ++g) {
                Value jj = m.add(first, index(g)), j = m.add(tileStart, jj);
                Value visible =
                    whole ? Value() : m.both(rowValid, m.slt(j, end));
                logits.push_back(maskedLogit(args, rowMasks, scoreOf(jj), batch,
                                             head, i, j, visible));
                newMax =
                    arith::MaximumFOp::create(b, loc, newMax, logits.back());
              }
              // Online softmax in base 2.
              Value base = softmaxBase(newMax);
              Value alpha = math::Exp2Op::create(
                  b, loc, arith::SubFOp::create(b, loc, rowMax, base));
              Value newSum = arith::MulFOp::create(b, loc, rowSum, alpha);
              Value newAcc = rescaleUnless(isOne(alpha), acc, [&] {
                return SmallVector<Value>{arith::MulFOp::create(
                    b, loc, acc,
                    vector::BroadcastOp::create(b, loc, accType, alpha))};
              })[0];
              for (int64_t g = 0; g < group; ++g) {
                Value p = math::Exp2Op::create(
                    b, loc, arith::SubFOp::create(b, loc, logits[g], base));
                newSum = arith::AddFOp::create(b, loc, newSum, p);
                Value valueSlice =
                    loadTileSlice(valueTile, m.add(first, index(g)), lane,
                                  shape.valueSlice());
                // A key the row does not see (p = 0) adds nothing, even a
                // NaN or Inf value. A branch, not a select per element: the
                // rows of a warp mostly agree.
                auto add = scf::IfOp::create(
                    b, loc, TypeRange{accType},
                    arith::CmpFOp::create(b, loc, arith::CmpFPredicate::ONE, p,
                                          zero),
                    /*withElseRegion=*/true);
                {
                  OpBuilder::InsertionGuard branch(b);
                  b.setInsertionPointToStart(&add.getThenRegion().front());
                  scf::YieldOp::create(
                      b, loc,
                      ValueRange{vector::FMAOp::create(
                          b, loc,
                          vector::BroadcastOp::create(b, loc, accType, p),
                          valueSlice, newAcc)});
                  b.setInsertionPointToStart(&add.getElseRegion().front());
                  scf::YieldOp::create(b, loc, ValueRange{newAcc});
                }
                newAcc = add.getResult(0);
              }
              scf::YieldOp::create(b, loc, ValueRange{newMax, newSum, newAcc});
            });
        return SmallVector<Value>(keys.getResults());
      });

  // out = acc / sum, 0 for a row that saw no key (NaN stays NaN).
  Value rowSum = tiles.getResult(1), acc = tiles.getResult(2);
  Value noKey =
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, rowSum, zero);
  Value normalized = arith::DivFOp::create(
      b, loc, acc, vector::BroadcastOp::create(b, loc, accType, rowSum));
  Value result = arith::SelectOp::create(
      b, loc, noKey,
      arith::ConstantOp::create(b, loc, DenseElementsAttr::get(accType, 0.0f)),
      normalized);
  Type outElement = getElementTypeOrSelf(out.getType());
  if (!outElement.isF32())
    result = arith::TruncFOp::create(
        b, loc, VectorType::get({shape.valueSlice()}, outElement), result);
  // The row's lanes hold the same max and sum: the first one stores.
  storeLse(args, batch, head, i, tiles.getResult(0), rowSum,
           m.both(rowValid, m.eq(lane, index(0))));
  auto store = scf::IfOp::create(b, loc, rowValid, /*withElseRegion=*/false);
  b.setInsertionPointToStart(&store.getThenRegion().front());
  Value outAt = rowOffset(batch, head, i, heads, sq, shape.valueDim);
  scatterSlice(lane, result, [&](Value chunk, Value column) {
    vector::StoreOp::create(b, loc, chunk, out, m.add(outAt, column));
  });
  b.setInsertionPointToEnd(&body);
  gpu::ReturnOp::create(b, loc);
}

Value KernelBuilder::mmaSync(Value a, Value bFrag, Value c) {
  Type element = getElementTypeOrSelf(a.getType());
  if (element.isF16())
    return nvgpu::MmaSyncOp::create(b, loc, a, bFrag, c,
                                    ArrayRef<int64_t>{16, 8, 16});
  // Each row of a fragment is one 32-bit register of two bf16.
  auto registers = [&](Value fragment, int64_t count) {
    SmallVector<Value> regs;
    for (int64_t r = 0; r < count; ++r) {
      Value pair =
          vector::ExtractOp::create(b, loc, fragment, ArrayRef<int64_t>{r});
      Value word = vector::BitCastOp::create(
          b, loc, VectorType::get({1}, b.getI32Type()), pair);
      regs.push_back(
          vector::ExtractOp::create(b, loc, word, ArrayRef<int64_t>{0}));
    }
    return regs;
  };
  SmallVector<Value> accumulators;
  for (int64_t r = 0; r < 2; ++r)
    for (int64_t col = 0; col < 2; ++col)
      accumulators.push_back(
          vector::ExtractOp::create(b, loc, c, ArrayRef<int64_t>{r, col}));
  Type f32Type = b.getF32Type();
  auto resultType = LLVM::LLVMStructType::getLiteral(
      b.getContext(), {f32Type, f32Type, f32Type, f32Type});
  auto mma = NVVM::MmaOp::create(
      b, loc, resultType, registers(a, 4), registers(bFrag, 2), accumulators,
      ArrayRef<int64_t>{16, 8, 16}, std::nullopt, std::nullopt,
      std::array<NVVM::MMATypes, 2>{NVVM::MMATypes::bf16, NVVM::MMATypes::bf16},
      std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row,
                                     NVVM::MMALayout::col});
  SmallVector<Value> results;
  for (int64_t r = 0; r < 4; ++r)
    results.push_back(LLVM::ExtractValueOp::create(b, loc, mma, r));
  return vector::FromElementsOp::create(b, loc, c.getType(), results);
}

Value KernelBuilder::ldmatrix(Value tile, Value row, Value col, int64_t tiles,
                              bool transpose) {
  Type element = getElementTypeOrSelf(tile.getType());
  return nvgpu::LdMatrixOp::create(b, loc, VectorType::get({tiles, 2}, element),
                                   tile, ValueRange{row, col}, transpose,
                                   tiles);
}

Value KernelBuilder::fragmentPair(Value fragments, int64_t which) {
  Type element = getElementTypeOrSelf(fragments.getType());
  Value pair = arith::ConstantOp::create(
      b, loc,
      DenseElementsAttr::get(VectorType::get({2, 2}, element),
                             b.getFloatAttr(element, 0.0)));
  for (int64_t row = 0; row < 2; ++row)
    pair = vector::InsertOp::create(
        b, loc,
        vector::ExtractOp::create(b, loc, fragments,
                                  ArrayRef<int64_t>{2 * which + row}),
        pair, ArrayRef<int64_t>{row});
  return pair;
}

void KernelBuilder::multiplyValueTile(Value tile, Value probFrag, int64_t ks,
                                      MutableArrayRef<Value> acc,
                                      int64_t first) {
  int64_t end = first + acc.size();
  Value keyHalf = mul(rem(laneMatrix, index(2)), index(8));
  Value key = m.add(m.add(laneRow, keyHalf), index(ks * 16));
  for (int64_t nv = first; nv < end; nv += 2) {
    Value &out = acc[nv - first];
    if (nv + 1 < end) {
      Value col =
          m.add(mul(div(laneMatrix, index(2)), index(8)), index(nv * 8));
      Value both = ldmatrix(tile, key, col, 4, /*transpose=*/true);
      out = mmaSync(probFrag, fragmentPair(both, 0), out);
      acc[nv + 1 - first] =
          mmaSync(probFrag, fragmentPair(both, 1), acc[nv + 1 - first]);
      continue;
    }
    out = mmaSync(probFrag, ldmatrix(tile, key, index(nv * 8), 2, true), out);
  }
}

/// A value of `element` (f16 or bf16) is not finite when its exponent bits
/// are all set.
static int64_t exponentBits(Type element) {
  return element.isF16() ? 0x7C00 : 0x7F80;
}

Value KernelBuilder::scanPartialValues(const KernelArgs &args,
                                       const BlockKeys &keys, Value batch,
                                       Value head, Value kvHead, Value tid) {
  Type element = getElementTypeOrSelf(args.v.getType());
  Type i16 = b.getI16Type(), i32 = b.getI32Type();
  int64_t dv = shape.valueDim, tile = shape.redoTile;
  int64_t chunks = tile * dv / 8, threads = shape.threads();
  auto bitsType = VectorType::get({8}, i16);
  Value magnitude = arith::ConstantOp::create(
      b, loc, DenseElementsAttr::get(bitsType, b.getI16IntegerAttr(0x7FFF)));
  Value exponent = arith::ConstantOp::create(
      b, loc,
      DenseElementsAttr::get(bitsType,
                             b.getI16IntegerAttr(exponentBits(element))));
  // This thread's share of each partial tile: chunks of 8 values of a key.
  auto partial = [&](Value tileStart, ValueRange state,
                     bool whole) -> SmallVector<Value> {
    if (whole)
      return SmallVector<Value>(state);
    auto scan = scf::ForOp::create(
        b, loc, tid, index(chunks), index(threads), state,
        [&](OpBuilder &lb, Location, Value e, ValueRange found) {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPoint(lb.getInsertionBlock(), lb.getInsertionPoint());
          Value key = m.add(tileStart, div(e, index(dv / 8)));
          auto seen = scf::IfOp::create(b, loc, TypeRange{b.getI1Type()},
                                        m.slt(key, keys.end),
                                        /*withElseRegion=*/true);
          b.setInsertionPointToStart(&seen.getThenRegion().front());
          Value at =
              m.add(rowOffset(batch, kvHead, key, kvHeadCount, args.sk, dv),
                    mul(rem(e, index(dv / 8)), index(8)));
          Value chunk = vector::LoadOp::create(
              b, loc, VectorType::get({8}, element), args.v, at);
          Value bits = vector::BitCastOp::create(b, loc, bitsType, chunk);
          Value special = arith::CmpIOp::create(
              b, loc, arith::CmpIPredicate::uge,
              arith::AndIOp::create(b, loc, bits, magnitude), exponent);
          scf::YieldOp::create(
              b, loc,
              ValueRange{arith::OrIOp::create(
                  b, loc, found.front(),
                  vector::ReductionOp::create(b, loc, vector::CombiningKind::OR,
                                              special))});
          b.setInsertionPointToStart(&seen.getElseRegion().front());
          scf::YieldOp::create(b, loc, found);
          b.setInsertionPointAfter(seen);
          scf::YieldOp::create(b, loc, seen.getResults());
        });
    return SmallVector<Value>(scan.getResults());
  };
  scf::ForOp tiles = tileLoop(keys, tile, ValueRange{m.constantBool(false)},
                              batch, head, partial);
  Value votes = NVVM::BarrierOp::create(
                    b, loc, i32, Value(), Value(),
                    NVVM::BarrierReductionAttr::get(b.getContext(),
                                                    NVVM::BarrierReduction::OR),
                    arith::ExtUIOp::create(b, loc, i32, tiles.getResult(0)))
                    .getRes();
  return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, votes,
                               arith::ConstantIntOp::create(b, loc, i32, 0));
}

void KernelBuilder::returnUnlessRedone(gpu::GPUFuncOp kernel) {
  Operation *check = redoCheck.getDefiningOp();
  Block *entry = check->getBlock();
  Block *compute = entry->splitBlock(std::next(Block::iterator(check)));
  Block *done = b.createBlock(&kernel.getBody());
  gpu::ReturnOp::create(b, loc);
  b.setInsertionPointToEnd(entry);
  cf::CondBranchOp::create(b, loc, redoCheck, compute, ValueRange(), done,
                           ValueRange());
}

void KernelBuilder::buildMma(gpu::GPUFuncOp kernel) {
  // Warp w of the block computes query rows [16 w, 16 w + 16) of its block
  // with mma.sync m16n8k16 (f16 in, f32 accumulators). In every fragment,
  // lane l holds rows g = l / 4 and g + 8, and columns 2 (l % 4) + {0, 1}
  // (+ 8 for the A operand's second half): PTX's m16n8k16 layout.
  Block &body = kernel.getBody().front();
  b.setInsertionPointToStart(&body);
  KernelArgs args = unpackArgs(kernel);
  Value heads = qHeadCount;
  Type element = getElementTypeOrSelf(args.q.getType());
  Type f32Type = b.getF32Type();
  int64_t d = shape.headDim, dv = shape.valueDim, bc = shape.kvTile;
  auto fragA = VectorType::get({4, 2}, element);
  auto fragC = VectorType::get({2, 2}, f32Type);
  auto pair = VectorType::get({2}, element);
  Value negInf = f32(-std::numeric_limits<float>::infinity());
  Value zero = f32(0.0);

  Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  Value queryBlock = queryBlockIndex();
  Value head = gpu::BlockIdOp::create(b, loc, gpu::Dimension::y);
  Value batch = gpu::BlockIdOp::create(b, loc, gpu::Dimension::z);
  Value warp = div(tid, index(32)), lane = rem(tid, index(32));
  Value group = div(lane, index(4)),
        pairCol = mul(rem(lane, index(4)), index(2));
  Value qFirst = mul(queryBlock, index(shape.blockRows));
  Value kvHead = div(head, div(qHeadCount, kvHeadCount));

  // This lane's two rows: g and g + 8 of its warp's 16. Rows past Sq read
  // row Sq - 1 (never stored) so every lane takes part in the shuffles.
  Value rows[2], valid[2], safe[2];
  RowOperands rowMasks[2];
  for (int r = 0; r < 2; ++r) {
    rows[r] =
        m.add(m.add(qFirst, mul(warp, index(16))), m.add(group, index(8 * r)));
    valid[r] = m.slt(rows[r], args.sq);
    safe[r] = arith::SelectOp::create(b, loc, valid[r], rows[r],
                                      m.sub(args.sq, index(1)));
    rowMasks[r] = rowOperands(args, batch, head, rows[r], valid[r]);
  }
  auto qAt = [&](int r, int64_t col) {
    return m.add(rowOffset(batch, head, safe[r], heads, args.sq, d),
                 m.add(pairCol, index(col)));
  };
  // The query as A fragments, one per 16 of D: [row g | g + 8][col | + 8].
  SmallVector<Value> queryFrags;
  for (int64_t ks = 0; ks < d / 16; ++ks) {
    Value frag = arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(fragA, b.getFloatAttr(element, 0.0)));
    for (int64_t part = 0; part < 4; ++part) {
      Value two = vector::LoadOp::create(
          b, loc, pair, args.q, qAt(part % 2, ks * 16 + 8 * (part / 2)));
      frag = vector::InsertOp::create(b, loc, two, frag, part);
    }
    queryFrags.push_back(frag);
  }
  Value scale = logitScale(args);
  // Where the logit is the scaled score, scores stay unscaled until the
  // softmax: the scale is positive (the verifier's word), so max(s) scale =
  // max(s scale) (rounding is monotonic), and each p = exp2(fma(s, scale,
  // -base)) is one FMA rather than a multiply and a subtract.
  bool foldScale = logitIsScaledScore(args);

  BlockKeys keys = blockKeys(args, batch, head, qFirst);
  Value end = keys.end;

  // State: row max and this lane's partial row sum for rows g and g + 8,
  // then the output fragments, one per 8 of Dv.
  Value zeroFrag =
      arith::ConstantOp::create(b, loc, DenseElementsAttr::get(fragC, 0.0f));
  SmallVector<Value> initial = {negInf, negInf, zero, zero};
  initial.append(dv / 8, zeroFrag);

  // K and V tiles by cp.async, one group in flight at a time. K of a tile is
  // in flight when its iteration starts (unless the tile is skipped: then it
  // was never asked for), V is fetched while Q K^T runs.
  auto fetchKeys = [&](Value tileStart) {
    Value wanted = m.slt(tileStart, end);
    if (Value hidden = tileHidden(batch, head, qFirst, keys.qEnd, tileStart,
                                  min(end, m.add(tileStart, index(bc)))))
      wanted = m.both(
          wanted, arith::XOrIOp::create(b, loc, hidden, m.constantBool(true)));
    auto fetch = scf::IfOp::create(b, loc, wanted, /*withElseRegion=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&fetch.getThenRegion().front());
    stageTileAsync(args.keyTile, args.k, batch, kvHead, tileStart, end, args.sk,
                   d, tid);
  };
  auto landTile = [&] {
    NVVM::CpAsyncWaitGroupOp::create(b, loc, 0);
    gpu::BarrierOp::create(b, loc);
  };
  // ldmatrix addresses: lane l names row l % 8 of matrix l / 8.
  laneRow = rem(lane, index(8));
  laneMatrix = div(lane, index(8));

  fetchKeys(keys.begin);
  auto tiles = tileLoop(
      keys, bc, initial, batch, head,
      [&](Value tileStart, ValueRange state, bool whole) -> SmallVector<Value> {
        landTile();
        stageTileAsync(args.valueTile, args.v, batch, kvHead, tileStart, end,
                       args.sk, dv, tid);

        // S = Q K^T, 8 keys per fragment: B[k][n] = K[key n][d k], K's rows
        // as stored; one x4 ldmatrix takes two 16-wide steps of D.
        SmallVector<Value> logits; // [nb][r][c], flattened
        for (int64_t nb = 0; nb < bc / 8; ++nb) {
          Value key = m.add(laneRow, index(nb * 8));
          Value acc = zeroFrag;
          for (int64_t ks = 0; ks < d / 16; ks += 2) {
            if (ks + 1 < d / 16) {
              Value both =
                  ldmatrix(args.keyTile, key,
                           m.add(mul(laneMatrix, index(8)), index(ks * 16)), 4,
                           /*transpose=*/false);
              acc = mmaSync(queryFrags[ks], fragmentPair(both, 0), acc);
              acc = mmaSync(queryFrags[ks + 1], fragmentPair(both, 1), acc);
              continue;
            }
            Value col =
                m.add(mul(rem(laneMatrix, index(2)), index(8)), index(ks * 16));
            acc = mmaSync(queryFrags[ks],
                          ldmatrix(args.keyTile, key, col, 2, false), acc);
          }
          for (int64_t r = 0; r < 2; ++r)
            for (int64_t c = 0; c < 2; ++c) {
              Value score = vector::ExtractOp::create(b, loc, acc,
                                                      ArrayRef<int64_t>{r, c});
              if (!foldScale)
                score = arith::MulFOp::create(b, loc, score, scale);
              Value j = m.add(tileStart, m.add(pairCol, index(nb * 8 + c)));
              // Keys past the tile's end are padding.
              Value inside = whole ? Value() : m.both(valid[r], m.slt(j, end));
              logits.push_back(maskedLogit(args, rowMasks[r], score, batch,
                                           head, rows[r], j, inside));
            }
        }

        // Online softmax per row, its max over the row's 4 lanes.
        SmallVector<Value> next(state.begin(), state.end());
        Value alpha[2], newMax[2];
        SmallVector<Value> probs(logits.size());
        for (int64_t r = 0; r < 2; ++r) {
          Value rowMax = foldScale ? negInf : state[r];
          for (int64_t nb = 0; nb < bc / 8; ++nb)
            for (int64_t c = 0; c < 2; ++c)
              rowMax = arith::MaximumFOp::create(b, loc, rowMax,
                                                 logits[nb * 4 + r * 2 + c]);
          newMax[r] = combineLanes(rowMax, 4, /*max=*/true);
          if (foldScale)
            newMax[r] = arith::MaximumFOp::create(
                b, loc, state[r],
                arith::MulFOp::create(b, loc, newMax[r], scale));
          Value base = softmaxBase(newMax[r]);
          Value negBase =
              foldScale ? arith::NegFOp::create(b, loc, base) : Value();
          alpha[r] = math::Exp2Op::create(
              b, loc, arith::SubFOp::create(b, loc, state[r], base));
          Value sum = arith::MulFOp::create(b, loc, state[2 + r], alpha[r]);
          for (int64_t nb = 0; nb < bc / 8; ++nb)
            for (int64_t c = 0; c < 2; ++c) {
              int64_t at = nb * 4 + r * 2 + c;
              Value shifted =
                  foldScale
                      ? math::FmaOp::create(b, loc, logits[at], scale, negBase)
                            .getResult()
                      : arith::SubFOp::create(b, loc, logits[at], base)
                            .getResult();
              probs[at] = math::Exp2Op::create(b, loc, shifted);
              sum = arith::AddFOp::create(b, loc, sum, probs[at]);
            }
          next[r] = newMax[r];
          next[2 + r] = sum;
        }

        // V has landed and every warp is done with K: fetch the next K.
        landTile();
        fetchKeys(m.add(tileStart, index(bc)));

        // Rescale the output rows, then O += P V: P's fragments are the
        // score fragments of 2 adjacent key blocks, B[k][n] = V[key k][n],
        // transposed out of V's rows by ldmatrix.trans.
        // P packed first: 16-bit pairs, half the registers of P across the
        // rescale's branch.
        SmallVector<Value> probFrags;
        for (int64_t ks = 0; ks < bc / 16; ++ks) {
          SmallVector<Value> parts;
          for (int64_t half = 0; half < 2; ++half)
            for (int64_t r = 0; r < 2; ++r)
              for (int64_t c = 0; c < 2; ++c)
                parts.push_back(arith::TruncFOp::create(
                    b, loc, element, probs[(2 * ks + half) * 4 + r * 2 + c]));
          probFrags.push_back(
              vector::FromElementsOp::create(b, loc, fragA, parts));
        }
        MutableArrayRef<Value> outFrags =
            MutableArrayRef<Value>(next).drop_front(4);
        llvm::copy(
            rescaleUnless(
                m.both(isOne(alpha[0]), isOne(alpha[1])), state.drop_front(4),
                [&] {
                  Value alphas = vector::FromElementsOp::create(
                      b, loc, fragC,
                      ValueRange{alpha[0], alpha[0], alpha[1], alpha[1]});
                  SmallVector<Value> scaled;
                  for (Value frag : state.drop_front(4))
                    scaled.push_back(
                        arith::MulFOp::create(b, loc, frag, alphas));
                  return scaled;
                }),
            outFrags.begin());
        for (int64_t ks = 0; ks < bc / 16; ++ks)
          multiplyValueTile(args.valueTile, probFrags[ks], ks, outFrags, 0);
        return next;
      },
      [&](Value tileStart) { fetchKeys(m.add(tileStart, index(bc))); });

  // out = O / sum (the row's 4 lanes' partial sums), 0 for a row that saw
  // no key (NaN stays NaN).
  Type outElement = getElementTypeOrSelf(args.out.getType());
  for (int64_t r = 0; r < 2; ++r) {
    Value sum = combineLanes(tiles.getResult(2 + r), 4, /*max=*/false);
    // The row's quad holds the same max and sum: its first lane stores.
    storeLse(args, batch, head, rows[r], tiles.getResult(r), sum,
             m.both(valid[r], m.eq(rem(lane, index(4)), index(0))));
    Value noKey =
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, sum, zero);
    auto store = scf::IfOp::create(b, loc, valid[r], /*withElseRegion=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&store.getThenRegion().front());
    for (int64_t nv = 0; nv < dv / 8; ++nv) {
      Value rowPair = vector::ExtractOp::create(b, loc, tiles.getResult(4 + nv),
                                                ArrayRef<int64_t>{r});
      auto pairF32 = VectorType::get({2}, f32Type);
      Value result = arith::SelectOp::create(
          b, loc, noKey,
          arith::ConstantOp::create(b, loc,
                                    DenseElementsAttr::get(pairF32, 0.0f)),
          arith::DivFOp::create(
              b, loc, rowPair,
              vector::BroadcastOp::create(b, loc, pairF32, sum)));
      if (!outElement.isF32())
        result = arith::TruncFOp::create(
            b, loc, VectorType::get({2}, outElement), result);
      Value at = m.add(rowOffset(batch, head, rows[r], heads, args.sq, dv),
                       m.add(pairCol, index(nv * 8)));
      vector::StoreOp::create(b, loc, result, args.out, at);
    }
  }
  gpu::ReturnOp::create(b, loc);
}

/// The operands of `attention` a kernel takes, in its order: q, k, v,
/// [mask], [bias], [rel_bias], [additive_weight], [kv_lens], [spans],
/// [block_mask], out, [lse].
static SmallVector<Value> kernelOperands(AttentionOp attention) {
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

/// Shared memory a block may declare statically.
static constexpr int64_t kStaticSharedBytes = 48 * 1024;
/// The most elements of q and of acc one lane keeps in registers.
static constexpr int64_t kMaxSliceElements = 32;

/// Picks T lanes per row, the fewest (a power of two up to a warp) that
/// divide D and Dv into slices of at most 32 registers each (else the most
/// that divide both), and shrinks the key tile until the K and V tiles fit
/// in static shared memory. Fails with a diagnostic when a block would
/// exceed 1024 threads or one key row does not fit.
/// Whether the tensor-core kernel takes `op`: f16 or bf16 q, k and v (one
/// type), D a multiple of 16 and Dv of 8, both at most 128 (the output
/// fragments stay in registers), and a dot-product similarity (the Gaussian
/// one needs key norms its fragments do not give, the additive one is no
/// matrix product).
static bool fitsTensorCores(AttentionOp op, int64_t d, int64_t dv) {
  if (op.getSimilarity() != Similarity::Dot)
    return false;
  Type element = getElementTypeOrSelf(op.getQuery().getType());
  if (!element.isF16() && !element.isBF16())
    return false;
  for (Value operand : {op.getKey(), op.getValue()})
    if (getElementTypeOrSelf(operand.getType()) != element)
      return false;
  return d % 16 == 0 && dv % 8 == 0 && d <= 128 && dv <= 128;
}

/// Whether a row of a block may not see a key another row sees: under a
/// mask tensor, a structured mask, spans, a mask_mod or a block mask (kv_lens
/// and Sk hide keys from every row alike).
static bool hidesKeysPerRow(AttentionOp op) {
  return op.getMask() || op.getStructuredMaskAttr() || op.getSpans() ||
         !op.getMaskMod().empty() || op.getBlockMask();
}

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

static FailureOr<KernelShape>
chooseShape(AttentionOp op, const ConvertAttnToGPUOptions &options) {
  int64_t d = cast<ShapedType>(op.getQuery().getType()).getDimSize(3);
  int64_t dv = cast<ShapedType>(op.getValue().getType()).getDimSize(3);
  int64_t blockRows = options.blockRows, kvTile = options.kvTileSize;
  if (options.mma && fitsTensorCores(op, d, dv)) {
    // A warp per 16 rows (4 by default); key tiles in whole 16-key steps of
    // f16 that fit. Kernels evaluating heavier masks keep fewer registers
    // live.
    bool lean = evaluatesMasksBeyondBands(op);
    int64_t keys = options.mmaKvTileSize;
    if (!keys)
      keys = lean ? 32 : 64;
    int64_t steps = std::max<int64_t>(1, keys / 16);
    int64_t rows = options.mmaBlockRows ? options.mmaBlockRows : 64;
    // Up to 8 warps: their registers (at most 255 each) fit in 64 Ki.
    if (rows < 0 || rows > 128 || rows % 16)
      return op.emitError() << "attn-convert-to-gpu: the tensor-core kernel "
                               "takes a multiple of 16 query rows per block "
                               "up to 128 (a warp per 16), got "
                            << rows;
    KernelShape shape{rows, 4, 16 * steps, d, dv};
    shape.mma = true;
    shape.unguardedWholeTiles = !lean;
    int64_t rowBytes =
        (d + shape.rowPadding(d) + dv + shape.rowPadding(dv)) * 2;
    shape.kvTile = std::min<int64_t>(shape.kvTile,
                                     kStaticSharedBytes / rowBytes / 16 * 16);
    return shape;
  }
  int64_t lanes = 0, fallback = 1;
  for (int64_t t = 1; t <= 32 && !lanes; t *= 2) {
    if (d % t || dv % t)
      continue;
    fallback = t;
    if (d / t <= kMaxSliceElements && dv / t <= kMaxSliceElements)
      lanes = t;
  }
  KernelShape shape{blockRows, lanes ? lanes : fallback, kvTile, d, dv};
  if (shape.threads() > 1024)
    return op.emitError() << "attn-convert-to-gpu: " << blockRows << " rows of "
                          << shape.threadsPerRow
                          << " lanes exceed 1024 threads per block";
  // The row's lanes sum their dot products with full-warp shuffles.
  if (shape.threadsPerRow > 1 && shape.threads() % 32)
    return op.emitError() << "attn-convert-to-gpu: " << blockRows << " rows of "
                          << shape.threadsPerRow
                          << " lanes do not fill whole warps";
  int64_t rowBytes = (d + dv) * 4;
  shape.kvTile = std::min(kvTile, kStaticSharedBytes / rowBytes);
  if (shape.kvTile < 1)
    return op.emitError() << "attn-convert-to-gpu: one key of D + Dv = "
                          << d + dv << " floats exceeds shared memory";
  // Steps of 4 keys, 2 under heavier masks, whose scores keep more
  // registers live (at 4, ptxas spilled a block mask's to stay at 128).
  for (int64_t group = evaluatesMasksBeyondBands(op) ? 2 : 4;
       shape.keyGroup == 1 && group > 1; group /= 2)
    if (shape.kvTile % group == 0)
      shape.keyGroup = group;
  return shape;
}

/// `memref` as the 1-D memref<?xT> a kernel takes.
static Value flattenForKernel(OpBuilder &b, Location loc, Value memref) {
  auto type = cast<MemRefType>(memref.getType());
  ReassociationIndices all(
      llvm::to_vector(llvm::seq<int64_t>(0, type.getRank())));
  Value flat = memref::CollapseShapeOp::create(
      b, loc, memref, ArrayRef<ReassociationIndices>{all});
  return memref::CastOp::create(
      b, loc, MemRefType::get({ShapedType::kDynamic}, type.getElementType()),
      flat);
}

namespace {
/// A kernel a host function launches, in blocks of `threads`, checking K
/// and V are aligned to `kvAlignment` bytes.
struct KernelLaunch {
  gpu::GPUFuncOp kernel;
  int64_t threads, kvAlignment;
};
} // namespace

/// Replaces `func` by a host function on memrefs that flattens its
/// arguments and launches each kernel in turn over (ceil(Sq / blockRows),
/// Hq, B) blocks with them, then B, Sq, Sk, Hq and Hkv.
static void replaceWithKernelLaunches(func::FuncOp func,
                                      ArrayRef<KernelLaunch> launches,
                                      Layout layout, int64_t blockRows) {
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
  SmallVector<Value> operands;
  for (Value arg : entry->getArguments())
    operands.push_back(flattenForKernel(b, loc, arg));
  auto dim = [&](Value memref, int64_t d) -> Value {
    return memref::DimOp::create(b, loc, memref, d);
  };
  Value q = entry->getArgument(0), k = entry->getArgument(1);
  IndexMath m{b, loc};
  Value batchCount = dim(q, 0), sq = dim(q, getSeqDimPos(layout)),
        sk = dim(k, getSeqDimPos(layout));
  Value heads = dim(q, getHeadDimPos(layout));
  operands.append({batchCount, sq, sk, heads, dim(k, getHeadDimPos(layout))});
  Value queryBlocks =
      arith::CeilDivUIOp::create(b, loc, sq, m.constant(blockRows));
  for (const KernelLaunch &launch : launches) {
    // What a launcher needs: grid (ceil(Sq / block_rows), Hq, B).
    launch.kernel->setAttr("attn.block_rows", b.getI64IntegerAttr(blockRows));
    auto launchOp = gpu::LaunchFuncOp::create(
        b, loc, launch.kernel, gpu::KernelDim3{queryBlocks, heads, batchCount},
        gpu::KernelDim3{m.constant(launch.threads), m.constant(1),
                        m.constant(1)},
        /*dynamicSharedMemorySize=*/Value(), operands);
    launchOp->setAttr("attn.block_rows", b.getI64IntegerAttr(blockRows));
    // What the launcher checks of K and V before the kernel copies them.
    launchOp->setAttr("attn.kv_alignment",
                      b.getI64IntegerAttr(launch.kvAlignment));
  }
  func::ReturnOp::create(b, loc);
  b.setInsertionPoint(func);
  b.insert(host);
  func.erase();
}

/// A gpu.func `name` in `module` (if null, a new gpu.module named after
/// `func`, `<func>_kernels`): each tensor argument of `func` flattened to a
/// 1-D memref, then B, Sq, Sk, Hq and Hkv; `workgroup` buffers in shared
/// memory; `threads` per block.
static gpu::GPUFuncOp createKernel(func::FuncOp func, StringRef name,
                                   gpu::GPUModuleOp module, TypeRange workgroup,
                                   int64_t threads) {
  MLIRContext *ctx = func.getContext();
  OpBuilder b(ctx);
  Location loc = func.getLoc();
  SmallVector<Type> argTypes;
  for (Type type : func.getArgumentTypes())
    argTypes.push_back(
        MemRefType::get({ShapedType::kDynamic}, getElementTypeOrSelf(type)));
  argTypes.append(5, b.getIndexType());
  if (!module) {
    auto parent = func->getParentOfType<ModuleOp>();
    parent->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                    UnitAttr::get(ctx));
    b.setInsertionPointToEnd(parent.getBody());
    module = gpu::GPUModuleOp::create(b, loc,
                                      (func.getSymName() + "_kernels").str());
  }
  b.setInsertionPointToEnd(module.getBody());
  auto kernel = gpu::GPUFuncOp::create(
      b, loc, name, b.getFunctionType(argTypes, {}), workgroup);
  kernel->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
  kernel.setKnownBlockSizeAttr(
      b.getDenseI32ArrayAttr({static_cast<int32_t>(threads), 1, 1}));
  return kernel;
}

//===----------------------------------------------------------------------===//
// Linear attention
//===----------------------------------------------------------------------===//

/// Threads of a linear attention block.
static constexpr int64_t kLinearThreads = 128;

namespace {
/// One block per (query head, batch entry) keeps the state S = sum_j
/// phi(k_j) v_j^T [D, Dv] and z = sum_j phi(k_j) [D] in shared memory, each
/// thread owning entries of it. Without a mask it folds every key, then
/// writes every row as phi(q_i) S / phi(q_i) z. Causal: row by row, it first
/// folds the keys the row newly sees, then writes the row (a barrier
/// between): linear in Sq + Sk.
class LinearKernelBuilder {
public:
  LinearKernelBuilder(OpBuilder &b, Location loc, LinearAttentionOp op)
      : b(b), loc(loc), m{b, loc}, op(op) {}

  void build(gpu::GPUFuncOp kernel);

private:
  /// The offset of element (batch, head, s, f) of a [B, H, S, F] tensor in
  /// the op's layout.
  Value offset(Value batch, Value head, Value s, Value f, Value heads,
               Value seq, int64_t feature) {
    bool bhsd = op.getLayout() == Layout::BHSD;
    Value outer =
        bhsd ? m.add(mul(batch, heads), head) : m.add(mul(batch, seq), s);
    Value inner = bhsd ? s : head;
    Value rows = m.add(mul(outer, bhsd ? seq : heads), inner);
    return m.add(mul(rows, m.constant(feature)), f);
  }
  Value mul(Value x, Value y) { return arith::MulIOp::create(b, loc, x, y); }
  /// memref[at] as f32.
  Value loadF32(Value memref, Value at) {
    return convertFloat(b, loc, memref::LoadOp::create(b, loc, memref, at),
                        b.getF32Type());
  }
  Value phi(Value x) { return createLinearFeatureMap(b, loc, x); }
  /// A loop over [from, to) in steps of the block's threads, from `tid` on.
  void forEachOwned(Value tid, Value to, function_ref<void(Value)> body) {
    auto loop = scf::ForOp::create(b, loc, tid, to, m.constant(kLinearThreads));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    body(loop.getInductionVar());
  }

  OpBuilder &b;
  Location loc;
  IndexMath m;
  LinearAttentionOp op;
};
} // namespace

void LinearKernelBuilder::build(gpu::GPUFuncOp kernel) {
  Block &body = kernel.getBody().front();
  b.setInsertionPointToStart(&body);
  Value q = body.getArgument(0), k = body.getArgument(1),
        v = body.getArgument(2), out = body.getArgument(3);
  Value sq = body.getArgument(5), sk = body.getArgument(6),
        hq = body.getArgument(7), hkv = body.getArgument(8);
  Value state = kernel.getWorkgroupAttributions()[0],
        norm = kernel.getWorkgroupAttributions()[1];
  int64_t d = cast<ShapedType>(op.getQuery().getType()).getDimSize(3);
  int64_t dv = cast<ShapedType>(op.getValue().getType()).getDimSize(3);
  Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  Value head = gpu::BlockIdOp::create(b, loc, gpu::Dimension::y);
  Value batch = gpu::BlockIdOp::create(b, loc, gpu::Dimension::z);
  Value kvHead = arith::DivUIOp::create(
      b, loc, head, arith::DivUIOp::create(b, loc, hq, hkv));
  Value zero = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0.0f));
  Value stateSize = m.constant(d * dv), normSize = m.constant(d);
  auto barrier = [&] { gpu::BarrierOp::create(b, loc); };

  forEachOwned(tid, stateSize, [&](Value x) {
    memref::StoreOp::create(b, loc, zero, state, x);
  });
  forEachOwned(tid, normSize, [&](Value x) {
    memref::StoreOp::create(b, loc, zero, norm, x);
  });
  barrier();

  // Folds keys [from, to) into the entries this thread owns.
  auto foldKeys = [&](Value from, Value to) {
    auto key = [&](Value j, Value f, int64_t feature, Value memref) {
      return loadF32(memref, offset(batch, kvHead, j, f, hkv, sk, feature));
    };
    // buffer[x] += sum over the keys of term(j).
    auto accumulate = [&](Value buffer, Value x,
                          function_ref<Value(Value)> term) {
      Value init = memref::LoadOp::create(b, loc, buffer, x);
      auto keys = scf::ForOp::create(
          b, loc, from, to, m.constant(1), ValueRange{init},
          [&](OpBuilder &lb, Location, Value j, ValueRange acc) {
            OpBuilder::InsertionGuard guard(b);
            b.setInsertionPoint(lb.getInsertionBlock(), lb.getInsertionPoint());
            scf::YieldOp::create(
                b, loc,
                ValueRange{arith::AddFOp::create(b, loc, acc[0], term(j))});
          });
      memref::StoreOp::create(b, loc, keys.getResult(0), buffer, x);
    };
    forEachOwned(tid, stateSize, [&](Value x) {
      Value f = arith::DivUIOp::create(b, loc, x, m.constant(dv));
      Value e = arith::RemUIOp::create(b, loc, x, m.constant(dv));
      accumulate(state, x, [&](Value j) -> Value {
        return arith::MulFOp::create(b, loc, phi(key(j, f, d, k)),
                                     key(j, e, dv, v));
      });
    });
    forEachOwned(tid, normSize, [&](Value f) {
      accumulate(norm, f, [&](Value j) { return phi(key(j, f, d, k)); });
    });
  };
  // Writes rows [first, first + count): (row, column) pairs over threads.
  Type outElement = getElementTypeOrSelf(out.getType());
  auto writeRows = [&](Value first, Value count) {
    forEachOwned(tid, mul(count, m.constant(dv)), [&](Value p) {
      Value i = m.add(first, arith::DivUIOp::create(b, loc, p, m.constant(dv)));
      Value e = arith::RemUIOp::create(b, loc, p, m.constant(dv));
      auto sums = scf::ForOp::create(
          b, loc, m.constant(0), m.constant(d), m.constant(1),
          ValueRange{zero, zero},
          [&](OpBuilder &lb, Location, Value f, ValueRange acc) {
            OpBuilder::InsertionGuard guard(b);
            b.setInsertionPoint(lb.getInsertionBlock(), lb.getInsertionPoint());
            Value feature =
                phi(loadF32(q, offset(batch, head, i, f, hq, sq, d)));
            Value s = memref::LoadOp::create(b, loc, state,
                                             m.add(mul(f, m.constant(dv)), e));
            Value z = memref::LoadOp::create(b, loc, norm, f);
            scf::YieldOp::create(
                b, loc,
                ValueRange{arith::AddFOp::create(
                               b, loc, acc[0],
                               arith::MulFOp::create(b, loc, feature, s)),
                           arith::AddFOp::create(
                               b, loc, acc[1],
                               arith::MulFOp::create(b, loc, feature, z))});
          });
      // phi > 0, so the denominator is 0 only for a row without keys.
      Value num = sums.getResult(0), den = sums.getResult(1);
      Value seen =
          arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, den, zero);
      Value result = arith::SelectOp::create(
          b, loc, seen, arith::DivFOp::create(b, loc, num, den), zero);
      memref::StoreOp::create(b, loc, convertFloat(b, loc, result, outElement),
                              out, offset(batch, head, i, e, hq, sq, dv));
    });
  };

  CausalMaskAttr causal = op.getStructuredMaskAttr();
  if (!causal) {
    foldKeys(m.constant(0), sk);
    barrier();
    writeRows(m.constant(0), sq);
  } else {
    // Row i sees keys j < i + shift + 1 (shift = Sk - Sq bottom-right).
    Value shift = causal.getAlignment() == Alignment::BottomRight
                      ? m.sub(sk, sq)
                      : m.constant(0);
    scf::ForOp::create(
        b, loc, m.constant(0), sq, m.constant(1), ValueRange{m.constant(0)},
        [&](OpBuilder &lb, Location, Value i, ValueRange folded) {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPoint(lb.getInsertionBlock(), lb.getInsertionPoint());
          Value seen = arith::MinSIOp::create(
              b, loc,
              arith::MaxSIOp::create(
                  b, loc, m.add(m.add(i, shift), m.constant(1)), m.constant(0)),
              sk);
          Value next = arith::MaxSIOp::create(b, loc, folded[0], seen);
          foldKeys(folded[0], next);
          barrier();
          writeRows(i, m.constant(1));
          barrier();
          scf::YieldOp::create(b, loc, ValueRange{next});
        });
  }
  gpu::ReturnOp::create(b, loc);
}

/// The linear-attention kernel of `func` ((q, k, v, out) returning one
/// attn.linear_attention): one block per (query head, batch entry).
static LogicalResult convertLinearAttentionToGPU(func::FuncOp func,
                                                 LinearAttentionOp op) {
  auto fail = [&](const Twine &why) {
    return op.emitError() << "attn-convert-to-gpu: " << why;
  };
  auto ret = dyn_cast<func::ReturnOp>(func.getBody().front().getTerminator());
  SmallVector<Value> expected = {op.getQuery(), op.getKey(), op.getValue(),
                                 op.getInit()};
  if (!llvm::equal(expected, func.getArguments()) || !ret ||
      ret.getOperands() != op->getResults())
    return fail("the kernel function must take (q, k, v, out) and return the "
                "linear attention's result");
  int64_t d = cast<ShapedType>(op.getQuery().getType()).getDimSize(3);
  int64_t dv = cast<ShapedType>(op.getValue().getType()).getDimSize(3);
  if (ShapedType::isDynamic(d) || ShapedType::isDynamic(dv))
    return fail("head dims must be static");
  // The state [D, Dv] and the normalizer [D] in f32.
  if ((d * dv + d) * 4 > kStaticSharedBytes)
    return fail("the state of D x Dv = " + Twine(d) + " x " + Twine(dv) +
                " f32 exceeds 48 KiB of shared memory");
  MLIRContext *ctx = func.getContext();
  auto shared = [&](int64_t size) {
    return MemRefType::get(
        {size}, Float32Type::get(ctx), MemRefLayoutAttrInterface(),
        gpu::AddressSpaceAttr::get(
            ctx, gpu::GPUDialect::getWorkgroupAddressSpace()));
  };
  gpu::GPUFuncOp kernel =
      createKernel(func, func.getSymName(), gpu::GPUModuleOp(),
                   TypeRange{shared(d * dv), shared(d)}, kLinearThreads);
  OpBuilder b(ctx);
  LinearKernelBuilder(b, func.getLoc(), op).build(kernel);
  // One block per (head, batch entry): block rows past any sequence.
  replaceWithKernelLaunches(func, {{kernel, kLinearThreads, 1}}, op.getLayout(),
                            /*blockRows=*/int64_t(1) << 40);
  return success();
}

//===----------------------------------------------------------------------===//
// Projected attentions: multi-head and additive
//===----------------------------------------------------------------------===//

/// A projection block computes a square tile of this many rows and columns
/// of its output, one element per thread.
static constexpr int64_t kProjectionTile = 16;

/// Adds to `module` the gpu.func `name` computing y [M, N] = x [M, K]
/// w [K, N] (+ bias [N]) in f32, stored as y's element type. Its arguments:
/// [x], [w], [bias], y as 1-D memrefs (x and w exactly when `x` is set;
/// null types are absent operands), then M, K and N. A block of 16 x 16
/// threads computes a 16 x 16 tile of y through 16 x 16 tiles of x and w
/// staged in shared memory. Without x and w it writes the bias to every
/// row of y.
static void buildProjectionKernel(gpu::GPUModuleOp module, StringRef name,
                                  Location loc, Type x, Type w, Type bias,
                                  Type y) {
  MLIRContext *ctx = module.getContext();
  OpBuilder b(ctx);
  IndexMath m{b, loc};
  Type f32 = b.getF32Type();
  SmallVector<Type> argTypes;
  for (Type element : {x, w, bias, y})
    if (element)
      argTypes.push_back(MemRefType::get({ShapedType::kDynamic}, element));
  argTypes.append(3, b.getIndexType());
  SmallVector<Type> workgroup;
  if (x)
    workgroup.assign(
        2,
        MemRefType::get({kProjectionTile, kProjectionTile}, f32,
                        MemRefLayoutAttrInterface(),
                        gpu::AddressSpaceAttr::get(
                            ctx, gpu::GPUDialect::getWorkgroupAddressSpace())));
  b.setInsertionPointToEnd(module.getBody());
  auto kernel = gpu::GPUFuncOp::create(
      b, loc, name, b.getFunctionType(argTypes, {}), workgroup);
  kernel->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
  int64_t threads = kProjectionTile * kProjectionTile;
  kernel.setKnownBlockSizeAttr(
      b.getDenseI32ArrayAttr({static_cast<int32_t>(threads), 1, 1}));

  Block &body = kernel.getBody().front();
  b.setInsertionPointToStart(&body);
  // The entry block also holds the workgroup buffers, after the arguments.
  auto args = body.getArguments().take_front(kernel.getNumArguments());
  Value xArg = x ? args[0] : Value(), wArg = x ? args[1] : Value();
  Value biasArg = bias ? args[x ? 2 : 0] : Value();
  Value yArg = args[args.size() - 4], rows = args[args.size() - 3],
        reduction = args[args.size() - 2], columns = args.back();
  auto mul = [&](Value a, Value c) -> Value {
    return arith::MulIOp::create(b, loc, a, c);
  };
  Value tile = m.constant(kProjectionTile);
  Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  Value tx = arith::RemUIOp::create(b, loc, tid, tile);
  Value ty = arith::DivUIOp::create(b, loc, tid, tile);
  Value row =
      m.add(mul(gpu::BlockIdOp::create(b, loc, gpu::Dimension::x), tile), ty);
  Value column =
      m.add(mul(gpu::BlockIdOp::create(b, loc, gpu::Dimension::y), tile), tx);
  Value zero = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0.0f));
  Value acc = zero;
  if (x) {
    Value xTile = kernel.getWorkgroupAttributions()[0],
          wTile = kernel.getWorkgroupAttributions()[1];
    // memref[at] as f32 where `inside`, else 0.
    auto loadOrZero = [&](Value inside, Value memref, Value at) {
      return scf::IfOp::create(
                 b, loc, inside,
                 [&](OpBuilder &tb, Location tl) {
                   Value loaded = memref::LoadOp::create(tb, tl, memref, at);
                   scf::YieldOp::create(tb, tl,
                                        convertFloat(tb, tl, loaded, f32));
                 },
                 [&](OpBuilder &eb, Location el) {
                   scf::YieldOp::create(eb, el, zero);
                 })
          .getResult(0);
    };
    auto steps = scf::ForOp::create(b, loc, m.constant(0), reduction, tile,
                                    ValueRange{zero});
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(steps.getBody());
    Value first = steps.getInductionVar();
    Value xColumn = m.add(first, tx), wRow = m.add(first, ty);
    memref::StoreOp::create(
        b, loc,
        loadOrZero(m.both(m.slt(row, rows), m.slt(xColumn, reduction)), xArg,
                   m.add(mul(row, reduction), xColumn)),
        xTile, ValueRange{ty, tx});
    memref::StoreOp::create(
        b, loc,
        loadOrZero(m.both(m.slt(wRow, reduction), m.slt(column, columns)), wArg,
                   m.add(mul(wRow, columns), column)),
        wTile, ValueRange{ty, tx});
    gpu::BarrierOp::create(b, loc);
    auto dot = scf::ForOp::create(
        b, loc, m.constant(0), tile, m.constant(1),
        ValueRange{steps.getRegionIterArg(0)},
        [&](OpBuilder &lb, Location ll, Value kk, ValueRange sum) {
          Value a = memref::LoadOp::create(lb, ll, xTile, ValueRange{ty, kk});
          Value c = memref::LoadOp::create(lb, ll, wTile, ValueRange{kk, tx});
          scf::YieldOp::create(
              lb, ll, ValueRange{math::FmaOp::create(lb, ll, a, c, sum[0])});
        });
    gpu::BarrierOp::create(b, loc);
    scf::YieldOp::create(b, loc, dot.getResults());
    acc = steps.getResult(0);
  }
  auto store = scf::IfOp::create(
      b, loc, m.both(m.slt(row, rows), m.slt(column, columns)),
      /*withElseRegion=*/false);
  b.setInsertionPointToStart(&store.getThenRegion().front());
  if (biasArg)
    acc = arith::AddFOp::create(
        b, loc, acc,
        convertFloat(b, loc, memref::LoadOp::create(b, loc, biasArg, column),
                     f32));
  memref::StoreOp::create(
      b, loc, convertFloat(b, loc, acc, getElementTypeOrSelf(yArg.getType())),
      yArg, m.add(mul(row, columns), column));
  b.setInsertionPointAfter(store);
  gpu::ReturnOp::create(b, loc);
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
static LogicalResult
convertProjectedAttentionToGPU(func::FuncOp func, Operation *op,
                               const ConvertAttnToGPUOptions &options) {
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
  if (failed(convertAttentionToGPU(outlined, options))) {
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
  llvm::SmallDenseMap<std::tuple<Type, Type, Type, Type>, std::string> named;
  auto project = [&](Value x, Value w, Value bias, Value y) {
    auto elementOf = [](Value v) {
      return v ? getElementTypeOrSelf(v.getType()) : Type();
    };
    std::tuple<Type, Type, Type, Type> types = {elementOf(x), elementOf(w),
                                                elementOf(bias), elementOf(y)};
    std::string &kernelName = named[types];
    if (kernelName.empty()) {
      kernelName = name + "_project" + std::to_string(named.size() - 1);
      buildProjectionKernel(kernels, kernelName, loc, std::get<0>(types),
                            std::get<1>(types), std::get<2>(types),
                            std::get<3>(types));
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
    Value tile = m.constant(kProjectionTile);
    auto launch = gpu::LaunchFuncOp::create(
        b, loc,
        SymbolRefAttr::get(b.getStringAttr(kernels.getName()),
                           {FlatSymbolRefAttr::get(ctx, kernelName)}),
        gpu::KernelDim3{arith::CeilDivUIOp::create(b, loc, rows, tile),
                        m.constant(llvm::divideCeil(columns, kProjectionTile)),
                        m.constant(1)},
        gpu::KernelDim3{m.constant(kProjectionTile * kProjectionTile),
                        m.constant(1), m.constant(1)},
        /*dynamicSharedMemorySize=*/Value(), args);
    launch->setAttr("attn.projection",
                    b.getDenseI64ArrayAttr({reduction, columns, kProjectionTile,
                                            kProjectionTile}));
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

LogicalResult
mlir::attn::convertAttentionToGPU(func::FuncOp func,
                                  const ConvertAttnToGPUOptions &options) {
  auto linear = func.getOps<LinearAttentionOp>();
  if (!linear.empty())
    return convertLinearAttentionToGPU(func, *linear.begin());
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
    auto tileType = [&](int64_t dim) -> Type {
      return MemRefType::get({of.kvTile, dim + of.rowPadding(dim)}, tileElement,
                             MemRefLayoutAttrInterface(), sharedSpace);
    };
    gpu::GPUFuncOp kernel = createKernel(
        func, name, module, {tileType(of.headDim), tileType(of.valueDim)},
        of.threads());
    // cp.async and ldmatrix move 16 bytes at a time.
    if (of.mma)
      for (unsigned tile = 0; tile < 2; ++tile)
        kernel.setWorkgroupAttributionAttr(
            tile, LLVM::LLVMDialect::getAlignAttrName(),
            b.getI64IntegerAttr(16));
    KernelBuilder(b, loc, op, of).build(kernel);
    // K and V of the tensor cores' kernel are copied 16 bytes at a time.
    return {kernel, of.threads(), of.mma ? 16 : 1};
  };
  SmallVector<KernelLaunch> launches = {
      buildKernel(shape, func.getSymName(), gpu::GPUModuleOp())};
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
    launches.push_back(buildKernel(
        *exact, (func.getSymName() + "_exact").str(),
        launches.front().kernel->getParentOfType<gpu::GPUModuleOp>()));
    // It runs rarely: registers matter more than occupancy (without the
    // bound, ptxas may spill to keep it at 128 registers), as many as a
    // block of its threads may take (64 Ki per block).
    int64_t registers =
        std::min<int64_t>(255, 65536 / exact->threads() / 8 * 8);
    launches.back().kernel->setAttr(NVVM::NVVMDialect::getMaxnregAttrName(),
                                    b.getI32IntegerAttr(registers));
  }
  replaceWithKernelLaunches(func, launches, op.getLayout(), shape.blockRows);
  return success();
}

namespace {
struct ConvertAttnToGPUPass
    : attn::impl::ConvertAttnToGPUBase<ConvertAttnToGPUPass> {
  using Base::Base;

  void runOnOperation() override {
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
              func, {blockRows, kvTileSize, mmaKvTileSize, mmaBlockRows, mma})))
        return signalPassFailure();
    materializeBlockBitmapTables(getOperation());
  }
};
} // namespace
