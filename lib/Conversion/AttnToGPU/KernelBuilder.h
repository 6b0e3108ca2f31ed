//===- KernelBuilder.h - builds attention kernels ---------------*- C++ -*-===//
//
// Part of the attn project: an MLIR compiler for attention.
//
//===----------------------------------------------------------------------===//
//
// The shape of one attention kernel and the builder of its gpu.func body,
// shared by the FMA kernel (FMAKernel.cpp), the tensor-core kernel
// (TensorCoreKernel.cpp) and their common pieces (KernelBuilder.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_LIB_CONVERSION_ATTNTOGPU_KERNELBUILDER_H
#define ATTN_LIB_CONVERSION_ATTNTOGPU_KERNELBUILDER_H

#include "attn/IR/AttnOps.h"
#include "attn/Transforms/Utils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

namespace mlir::attn::gpu_codegen {

/// D = A B + C for m16n8k16 fragments (A vector<4x2xT>, B vector<2x2xT>,
/// C and D vector<2x2xf32>): nvgpu.mma.sync for f16; nvvm.mma.sync on the
/// packed 32-bit registers for bf16, which MLIR 22's nvgpu lowering cannot
/// type.
Value mmaSync(OpBuilder &b, Location loc, Value a, Value bFrag, Value c);
/// The B fragment (2 registers) `which` (0 or 1) of an x4 ldmatrix.
Value fragmentPair(OpBuilder &b, Location loc, Value fragments, int64_t which);

/// The launch geometry and register split of one kernel.
struct KernelShape {
  int64_t blockRows;     // query rows per block
  int64_t threadsPerRow; // T lanes per row
  int64_t kvTile;        // keys per shared-memory tile
  int64_t headDim, valueDim;
  bool mma = false; // tensor cores: a warp per warpRows rows
  /// Query rows each warp of the tensor-core kernel computes: 16 (one
  /// m16n8k16 row block) or 32 (two, as FlashAttention-2: each K and V
  /// fragment read from shared memory feeds twice the MMAs).
  int64_t warpRows = 16;
  /// Whether Q stays in shared memory whatever the warp's rows and D (see
  /// queryInShared).
  bool sharedQuery = false;
  /// Whether the tensor-core kernel sums each row's probabilities on the
  /// tensor cores (P times a B fragment of ones) rather than by adds.
  bool rowSumsByMma = false;
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
  /// Blocks that share each query block's keys (split-K, as flash-decoding
  /// does when the grid is too small for the GPU): each takes a run of whole
  /// tiles and writes its rows' partial output (normalized, f32) and lse
  /// into its slice of two scratch buffers, which the combine kernel
  /// merges. 1: no split.
  int64_t kvSplits = 1;
  /// K/V buffers of the tensor-core kernel: 1, one K and one V tile
  /// (FlashAttention-2's schedule: V of a tile copied while Q K^T runs, K of
  /// the next while P V runs, two barriers a tile); 2, double-buffered (K
  /// and V of the next tile copied while the whole tile runs, one barrier a
  /// tile, twice the shared memory).
  int64_t kvStages = 1;
  /// Query heads a block computes (GQA decoding, FlashAttention's
  /// pack_gqa): the g = Hq / Hkv heads of a KV head (grid y), row p of the
  /// block holding query row p / g of head g kvHead + p % g, so a key tile
  /// is read once for all of them. 1: a block computes one query head.
  int64_t packedHeads = 1;
  /// Query rows of each head a block computes.
  int64_t queryRows() const { return blockRows / packedHeads; }
  /// The shape of a K (`dim` D) or V (Dv) tile in shared memory: [kvTile,
  /// dim + rowPadding], double-buffered [2, kvTile, dim + rowPadding].
  SmallVector<int64_t> tileShape(int64_t dim) const {
    SmallVector<int64_t> tile = {kvTile, dim + rowPadding(dim)};
    if (kvStages > 1)
      tile.insert(tile.begin(), kvStages);
    return tile;
  }
  int64_t threads() const {
    return mma ? blockRows / warpRows * 32 : blockRows * threadsPerRow;
  }
  /// The m16n8k16 row blocks of a warp.
  int64_t rowBlocks() const { return warpRows / 16; }
  /// Whether the tensor-core kernel keeps Q in shared memory rather than in
  /// registers: when asked (sharedQuery), or where the fragments of a warp's
  /// rows would take more than 32 registers (two row blocks of D > 64), as
  /// FlashAttention-2 does.
  bool queryInShared() const {
    return mma && (sharedQuery || rowBlocks() * headDim > 128);
  }
  /// The shape of that Q buffer (of i32): the A fragments of every row
  /// block and 16 of D, each as 32 lanes' 4 registers (one 16-byte load a
  /// lane).
  SmallVector<int64_t> queryTileShape() const {
    return {blockRows / 16 * queryKSteps(), 32, 4};
  }
  /// The 16-wide steps of D of the tensor cores' Q K^T: where D is an odd
  /// multiple of 8, the last one's columns 8-15 are zeros in A and B.
  int64_t queryKSteps() const { return llvm::divideCeil(headDim, 16); }
  /// The FMA kernel's T lanes of a row deal its `dim` elements out in
  /// chunks (see gatherSlice) of sliceChunk elements: the widest of 4, 2, 1
  /// dividing a lane's share where T divides `dim`, else dividing `dim` (a
  /// lane's last chunk may then lie past the row).
  static int64_t sliceChunk(int64_t dim, int64_t lanes) {
    return chunkWidth(dim % lanes ? dim : dim / lanes);
  }
  /// The elements a lane holds of a row of `dim`: its chunks, the row's
  /// chunks over `lanes` rounded up.
  static int64_t sliceElements(int64_t dim, int64_t lanes) {
    int64_t w = sliceChunk(dim, lanes);
    return llvm::divideCeil(dim / w, lanes) * w;
  }
  int64_t headSlice() const { return sliceElements(headDim, threadsPerRow); }
  int64_t valueSlice() const { return sliceElements(valueDim, threadsPerRow); }
  /// Elements after each K or V row of `dim` in shared memory: for the
  /// tensor cores, 16 bytes when that makes the row an odd number of
  /// 16-byte chunks, so the 8 rows one ldmatrix reads start in the 8
  /// different 16-byte bank groups (free of bank conflicts).
  int64_t rowPadding(int64_t dim) const {
    return mma && dim / 8 % 2 == 0 ? 8 : 0;
  }
  /// Elements the FMA kernel moves at once of `n` (a K or V row it copies
  /// into shared memory, a lane's slice of a Q or out row): the widest of
  /// 4, 2, 1 dividing it.
  static int64_t chunkWidth(int64_t n) {
    return n % 4 == 0 ? 4 : n % 2 == 0 ? 2 : 1;
  }
  /// The alignment in bytes the kernel's copies need of K and V (of
  /// `elementBytes` elements), which the launcher checks: cp.async's 16
  /// bytes (and the exact kernel's scan of V in 16-byte chunks), or the FMA
  /// kernel's vector loads.
  int64_t kvAlignment(int64_t elementBytes) const {
    return mma || redoTile
               ? 16
               : std::max(chunkWidth(headDim), chunkWidth(valueDim)) *
                     elementBytes;
  }
  /// Elements the kernel reads of a Q row at once (and of an additive
  /// weight's), and writes of an out row: the tensor cores' pairs of a
  /// fragment, or the FMA kernel's chunks of a lane's slice.
  int64_t queryChunk() const {
    return mma ? 2 : sliceChunk(headDim, threadsPerRow);
  }
  int64_t outChunk() const {
    return mma ? 2 : sliceChunk(valueDim, threadsPerRow);
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
    if (combinesSplits) {
      buildCombine(kernel);
      return;
    }
    if (shape.mma)
      buildMma(kernel);
    else
      buildFma(kernel);
    if (redoCheck)
      returnUnlessRedone(kernel);
  }
  /// Makes build() emit the combine kernel of `shape.kvSplits` splits.
  KernelBuilder &combiningSplits() {
    combinesSplits = true;
    return *this;
  }

private:
  /// The kernel's arguments, by name.
  struct KernelArgs {
    Value q, k, v, mask, bias, relBias, additiveWeight, lens, spans, blockMask,
        out, lse, sq, sk, keyTile, valueTile, queryTile;
  };
  KernelArgs unpackArgs(gpu::GPUFuncOp kernel);
  /// The heads of q or k (`operand`): a constant when static, else the
  /// kernel's `argument`.
  Value headCount(Value operand, Value argument) {
    int64_t n = cast<ShapedType>(operand.getType())
                    .getDimSize(getHeadDimPos(op.getLayout()));
    return ShapedType::isDynamic(n) ? argument : index(n);
  }

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
  /// Under a split, blocks x S .. x S + S - 1 (from the last) share query
  /// block x: this block's share becomes splitIndex.
  Value queryBlockIndex() {
    Value blocks = gpu::GridDimOp::create(b, loc, gpu::Dimension::x);
    Value block = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
    Value fromLast = m.sub(m.sub(blocks, index(1)), block);
    if (shape.kvSplits == 1)
      return fromLast;
    splitIndex = rem(fromLast, index(shape.kvSplits));
    return div(fromLast, index(shape.kvSplits));
  }
  /// The query head of this block (grid y), or under packing the first of
  /// its KV head's, and the KV head.
  std::pair<Value, Value> blockHeads() {
    Value y = gpu::BlockIdOp::create(b, loc, gpu::Dimension::y);
    if (shape.packedHeads > 1)
      return {mul(y, index(shape.packedHeads)), y};
    return {y, div(y, div(qHeadCount, kvHeadCount))};
  }
  /// The query row and head of row `p` of the block, whose rows start at
  /// query row `qFirst` of `head` (blockHeads).
  std::pair<Value, Value> blockRow(Value head, Value qFirst, Value p) {
    if (shape.packedHeads == 1)
      return {m.add(qFirst, p), head};
    Value g = index(shape.packedHeads);
    return {m.add(qFirst, div(p, g)), m.add(head, rem(p, g))};
  }

  /// `offset` into a flattened [B, Hq, Sq, rowWidth] output, moved to this
  /// block's split of a scratch buffer of kvSplits of them.
  Value atSplit(Value offset, int64_t rowWidth) {
    if (!splitIndex)
      return offset;
    Value rows = mul(mul(kernelBatchCount, qHeadCount), sqArg);
    return m.add(offset, mul(splitIndex, mul(rows, index(rowWidth))));
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
  /// proves empty are skipped: `skipped` (if given, told the tile and the
  /// state, which it keeps) runs instead of the body. Both branches are the
  /// block's, so barriers in them stay uniform.
  scf::ForOp
  tileLoop(const BlockKeys &keys, int64_t tile, ValueRange initial, Value batch,
           Value head,
           function_ref<SmallVector<Value>(Value, ValueRange, bool)> body,
           function_ref<void(Value, ValueRange)> skipped = nullptr);

  Value mmaSync(Value a, Value bFrag, Value c) {
    return gpu_codegen::mmaSync(b, loc, a, bFrag, c);
  }

  /// 2^x for the tensor cores' softmax by ex2.approx.ftz: one MUFU.EX2,
  /// where math.exp2 (ex2.approx, subnormals kept) takes 3 more SASS
  /// instructions (ptxas, sm_90: 112 against 208 for 32 of them). It flushes
  /// only weights below 2^-126, next to the row max's weight of 1.
  Value exp2Ftz(Value x);
  /// `tiles` 8x8 matrices of a shared f16/bf16 `tile` by ldmatrix, from
  /// this lane's address (row, col), as vector<tiles x 2>.
  Value ldmatrix(Value tile, Value slot, Value row, Value col, int64_t tiles,
                 bool transpose);
  /// The indices of (row, col) of a tensor-core K or V tile: in buffer
  /// `slot` of a double-buffered tile [2, kvTile, dim], else (a null slot)
  /// of the one [kvTile, dim].
  SmallVector<Value> tileIndices(Value slot, Value row, Value col) {
    if (!slot)
      return {row, col};
    return {slot, row, col};
  }
  Value fragmentPair(Value fragments, int64_t which) {
    return gpu_codegen::fragmentPair(b, loc, fragments, which);
  }
  /// The B fragment of a half step (the last 8 of D, see queryKSteps): its
  /// rows 0-7 matrix `which` of an ldmatrix's, rows 8-15 zeros.
  Value halfStepFragment(Value fragments, int64_t which);
  /// acc[rb][n] += probFrags[rb] x tile[16 ks, 16 ks + 16) x [8 n, 8 n + 8)
  /// (of buffer `slot`, see tileIndices) for each row block rb: one 16-key
  /// step of O += P V over the output fragments `acc` (those of each row
  /// block in turn), B fragments by ldmatrix.trans (two 8-wide steps per x4
  /// load), each used by every row block.
  void multiplyValueTile(Value tile, Value slot, ArrayRef<Value> probFrags,
                         int64_t ks, MutableArrayRef<Value> acc);
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
  /// The FMA kernel's steps (FMAKernel.cpp), which share an FmaKernel: this
  /// thread's row and query slice, then per group of keys their scores and
  /// the online softmax, and last the output.
  struct FmaKernel;
  void placeFmaRow(FmaKernel &k);
  void loadFmaQuery(FmaKernel &k);
  /// This row's score of key row `jj` of the K tile, summed over its lanes.
  Value fmaScore(const FmaKernel &k, Value jj);
  /// The state (max, sum, acc) after the keys of the tile from `tileStart`
  /// in the group from `first`, from `carried`.
  SmallVector<Value> fmaKeyGroup(const FmaKernel &k, Value tileStart,
                                 Value first, ValueRange carried, bool whole);
  void storeFmaOutput(const FmaKernel &k, scf::ForOp tiles);
  void buildMma(gpu::GPUFuncOp kernel);
  /// The tensor-core kernel's phases (TensorCoreKernel.cpp), which share an
  /// MmaKernel: this lane's rows and Q, then per key tile its logits, the
  /// online softmax and O += P V, and last the output.
  struct MmaKernel;
  void placeMmaRows(MmaKernel &k);
  void loadQuery(MmaKernel &k);
  /// The indices of Q's A fragment (rb, ks) of this lane in shared memory.
  SmallVector<Value> queryFragmentIndices(const MmaKernel &k, int64_t rb,
                                          int64_t ks);
  Value loadQueryFragment(const MmaKernel &k, int64_t rb, int64_t ks);
  void prepareKeyPadding(MmaKernel &k);
  /// Starts the cp.async copies of the key tile from `tileStart` into buffer
  /// `slot`, unless it lies past the keys or the masks hide it.
  void fetchMmaTile(const MmaKernel &k, Value tileStart, Value slot);
  /// Waits for this thread's copies, then for the block's.
  void landMmaTile();
  /// The base-2 logits of one key tile (see MmaKernel::logitAt).
  SmallVector<Value> mmaLogits(const MmaKernel &k, Value tileStart, Value slot,
                               bool whole);
  /// The online softmax of one tile: the new maxima and sums into `next`,
  /// each row's rescale factor into `alpha` and P as A fragments into
  /// `probFrags`.
  void mmaSoftmax(const MmaKernel &k, ValueRange state, ArrayRef<Value> logits,
                  MutableArrayRef<Value> next, SmallVectorImpl<Value> &alpha,
                  SmallVectorImpl<Value> &probFrags);
  /// The output fragments (and sums by MMA) of `next`: `state`'s rescaled
  /// by `alpha`, plus P V of the tile in buffer `slot`.
  void accumulateValues(const MmaKernel &k, ValueRange state,
                        ArrayRef<Value> alpha, ArrayRef<Value> probFrags,
                        Value slot, MutableArrayRef<Value> next);
  void storeMmaOutput(const MmaKernel &k, scf::ForOp tiles);
  /// The combine kernel of a split (SplitKeysKernel.cpp): arguments (the
  /// partial outputs, their lse, out, [lse], then B, Sq, Sk, Hq, Hkv), a
  /// warp per query row of the block.
  void buildCombine(gpu::GPUFuncOp kernel);

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

  /// `width` elements of `memref` from `offset`, as f32 (the launcher
  /// checks the data's alignment to `width` elements).
  Value loadSlice(Value memref, Value offset, int64_t width) {
    Type element = getElementTypeOrSelf(memref.getType());
    Value slice = vector::LoadOp::create(
        b, loc, VectorType::get({width}, element), memref, offset,
        /*nontemporal=*/false,
        llvm::MaybeAlign(width * element.getIntOrFloatBitWidth() / 8));
    if (element.isF32())
      return slice;
    return arith::ExtFOp::create(
        b, loc, VectorType::get({width}, b.getF32Type()), slice);
  }

  /// The FMA kernel's lanes hold interleaved slices of a row: of the T lanes
  /// of a row, `lane` holds the chunks of w elements (sliceChunk) that start
  /// at columns (c T + lane) w. The T lanes reading a key row of shared
  /// memory then read T adjacent chunks, free of bank conflicts (contiguous
  /// slices of 32 floats would all start in bank 0).
  ///
  /// `lane`'s slice of a row of `dim` elements, as f32: `load(column, w)`
  /// reads the chunk from `column`. A chunk past the row (T not dividing
  /// it) reads column 0, in bounds, and holds zeros, which add nothing to a
  /// dot product.
  Value gatherSlice(Value lane, int64_t dim,
                    function_ref<Value(Value, int64_t)> load) {
    int64_t w = KernelShape::sliceChunk(dim, shape.threadsPerRow);
    int64_t chunks = KernelShape::sliceElements(dim, shape.threadsPerRow) / w;
    auto chunkType = VectorType::get({w}, b.getF32Type());
    Value gathered;
    for (int64_t c = 0; c < chunks; ++c) {
      Value column = sliceColumn(lane, c, w);
      Value inRow = chunkInRow(lane, dim, c);
      if (inRow)
        column = arith::SelectOp::create(b, loc, inRow, column, index(0));
      Value chunk = load(column, w);
      if (inRow)
        chunk = arith::SelectOp::create(
            b, loc, inRow, chunk,
            arith::ConstantOp::create(b, loc,
                                      DenseElementsAttr::get(chunkType, 0.0f)));
      // Concatenated by shuffles (which, unlike strided slices, lower to
      // LLVM directly).
      gathered = c == 0
                     ? chunk
                     : vector::ShuffleOp::create(
                           b, loc, gathered, chunk,
                           llvm::to_vector(llvm::seq<int64_t>(0, (c + 1) * w)))
                           .getResult();
    }
    return gathered;
  }
  /// Stores `lane`'s slice `values` of a row of `dim` by `store(chunk,
  /// column)`, but for a chunk past the row.
  void scatterSlice(Value lane, int64_t dim, Value values,
                    function_ref<void(Value, Value)> store) {
    int64_t slice = cast<VectorType>(values.getType()).getNumElements();
    int64_t w = KernelShape::sliceChunk(dim, shape.threadsPerRow);
    for (int64_t c = 0; c < slice / w; ++c) {
      Value chunk = vector::ShuffleOp::create(
          b, loc, values, values,
          llvm::to_vector(llvm::seq<int64_t>(c * w, (c + 1) * w)));
      Value column = sliceColumn(lane, c, w);
      Value inRow = chunkInRow(lane, dim, c);
      if (!inRow) {
        store(chunk, column);
        continue;
      }
      OpBuilder::InsertionGuard guard(b);
      auto inside = scf::IfOp::create(b, loc, inRow, /*withElseRegion=*/false);
      b.setInsertionPointToStart(&inside.getThenRegion().front());
      store(chunk, column);
    }
  }
  /// Whether `lane`'s chunk `c` of a row of `dim` lies in the row, or null
  /// where every lane's does.
  Value chunkInRow(Value lane, int64_t dim, int64_t c) {
    int64_t t = shape.threadsPerRow;
    int64_t rowChunks = dim / KernelShape::sliceChunk(dim, t);
    if ((c + 1) * t <= rowChunks)
      return {};
    return m.slt(lane, index(rowChunks - c * t));
  }
  /// The dot product of two f32 vectors as FMA chains over 4-wide chunks,
  /// then a sum of the chunk (LLVM fuses no multiply into an add without
  /// contraction flags: a product and a reduction cost twice the FMAs).
  Value chunkedDot(Value x, Value y) {
    int64_t n = cast<VectorType>(x.getType()).getNumElements();
    int64_t w = KernelShape::chunkWidth(n);
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
  Value loadRowSlice(Value memref, Value rowStart, Value lane, int64_t dim) {
    return gatherSlice(lane, dim, [&](Value column, int64_t w) {
      return loadSlice(memref, m.add(rowStart, column), w);
    });
  }
  /// `lane`'s slice of row `row` of a shared K or V tile.
  Value loadTileSlice(Value tile, Value row, Value lane, int64_t dim) {
    return gatherSlice(lane, dim, [&](Value column, int64_t w) -> Value {
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
  /// past `end` as 0) into the shared `tile` [kvTile, dim], chunkWidth
  /// elements a copy.
  void stageTile(Value tile, Value source, Value batch, Value kvHead,
                 Value tileStart, Value end, Value sk, int64_t dim, Value tid);
  /// Whether row r of a K or V tile from `tileStart` holds a key before
  /// `end`, and the offset of the key row it reads (rows past the end read
  /// the last visible key, in bounds).
  std::pair<Value, Value> stagedRow(Value batch, Value kvHead, Value tileStart,
                                    Value r, Value end, Value sk, int64_t dim);
  /// The same as one cp.async group of 16-byte copies into buffer `slot` of
  /// `tile` (see tileIndices; rows past `end` zero-filled, the tile's
  /// element type kept); it lands after a cp.async.wait_group and a barrier.
  void stageTileAsync(Value tile, Value slot, Value source, Value batch,
                      Value kvHead, Value tileStart, Value end, Value sk,
                      int64_t dim, Value tid);

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
  // Under a split: this block's share of its query block's keys.
  Value splitIndex;
  // Whether build() emits the combine kernel of a split.
  bool combinesSplits = false;
};

} // namespace mlir::attn::gpu_codegen

#endif // ATTN_LIB_CONVERSION_ATTNTOGPU_KERNELBUILDER_H
