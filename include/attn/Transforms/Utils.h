//===- Utils.h - helpers shared by the attn rewrites ------------*- C++ -*-===//
//
// Part of the attn project: an MLIR compiler for attention.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_TRANSFORMS_UTILS_H
#define ATTN_TRANSFORMS_UTILS_H

#include "attn/IR/AttnOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Builders.h"

namespace mlir::attn {

/// Index arithmetic for loop bounds and tile tests.
struct IndexMath {
  OpBuilder &b;
  Location loc;
  Value constant(int64_t v) {
    return arith::ConstantIndexOp::create(b, loc, v).getResult();
  }
  Value add(Value x, Value y) {
    return arith::AddIOp::create(b, loc, x, y).getResult();
  }
  Value sub(Value x, Value y) {
    return arith::SubIOp::create(b, loc, x, y).getResult();
  }
  Value slt(Value x, Value y) {
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, x, y)
        .getResult();
  }
  Value eq(Value x, Value y) {
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, x, y)
        .getResult();
  }
  Value sle(Value x, Value y) {
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sle, x, y)
        .getResult();
  }
  Value constantBool(bool v) {
    return arith::ConstantIntOp::create(b, loc, v, /*width=*/1).getResult();
  }
  Value both(Value x, Value y) {
    return arith::AndIOp::create(b, loc, x, y).getResult();
  }
  /// A query at whole-problem position i is aligned with key i + shift.
  Value shift(Alignment alignment, ArrayRef<Value> extents) {
    return alignment == Alignment::BottomRight ? sub(extents[1], extents[0])
                                               : constant(0);
  }
};

/// Converts a float scalar to the float type `to`: extf when widening, truncf
/// when narrowing, through f32 between two 16-bit types.
Value convertFloat(OpBuilder &b, Location loc, Value value, Type to);

/// Clones the body of the single-block `region` (score_mod or mask_mod) at
/// the insertion point of `b` with its arguments bound to `args`; returns the
/// value it yields.
Value inlineRegion(OpBuilder &b, Region &region, ValueRange args);

/// A tensor of `sizes` f32 elements, all `value`.
Value createFilledF32(OpBuilder &b, Location loc, ArrayRef<OpFoldResult> sizes,
                      float value);

/// Slices `size` positions from `offset` out of dimension `dim` of `value`.
Value sliceDim(OpBuilder &b, Location loc, Value value, int64_t dim,
               Value offset, Value size);

/// Where `op` sits in the whole problem: its offsets (b, h, q, kv), all 0 when
/// it is not a tile, and the whole (Sq, Sk).
struct AttentionPosition {
  SmallVector<Value, 4> offsets;
  SmallVector<Value, 2> extents;
};
template <typename OpTy>
AttentionPosition getAttentionPosition(OpBuilder &b, Location loc, OpTy op);

/// The f32 score scale of an attention: its `scale` attribute, else
/// 1/sqrt(head dim) (computed at run time when the head dim is dynamic).
Value createScale(OpBuilder &b, Location loc, std::optional<APFloat> scale,
                  OpFoldResult headDim);

/// Running statistics (acc, max, sum) of online attention for `op` before any
/// key: (0, -inf, 0).
SmallVector<Value, 3> createInitialStatistics(OpBuilder &b, Location loc,
                                              AttentionOp op);

/// The operands of one online_attention step of `op` over its keys
/// [kvStart, kvStart + kvSize): K, V and the key dimension of mask and bias
/// sliced, kv_lens (null when the caller's loop bounds already apply it), and
/// the step's whole-problem offsets.
struct OnlineStepOperands {
  Value key, value, mask, bias, kvLens;
  SmallVector<Value, 4> offsets;
};
OnlineStepOperands sliceOnlineStep(OpBuilder &b, Location loc, AttentionOp op,
                                   const AttentionPosition &position,
                                   Value kvStart, Value kvSize);

/// Which masks an online_attention step applies: all of its attention's;
/// all but the rules (structured mask, mask_mod), for a tile the caller
/// knows they show whole; or none, for a tile whose run-time blocks are all
/// full (which show every pair whatever the other masks say).
enum class StepMasks { All, NoRules, None };

/// The online_attention step of `op` on `operands` (regions cloned), folding
/// into `statistics`, with the masks `masks` says.
OnlineAttentionOp createOnlineAttentionStep(OpBuilder &b, Location loc,
                                            AttentionOp op,
                                            const AttentionPosition &position,
                                            const OnlineStepOperands &operands,
                                            ValueRange statistics,
                                            StepMasks masks = StepMasks::All);

/// A one-result linalg.generic into `init` whose last `numReductions` loops
/// are reductions (the loop count is that of `maps`).
Value createGeneric(OpBuilder &b, Location loc, ValueRange inputs, Value init,
                    ArrayRef<AffineMap> maps, unsigned numReductions,
                    function_ref<void(OpBuilder &, Location, ValueRange)> body);

/// The indexing map from `numLoops` loops to the listed ones, in order.
AffineMap getLoopsMap(MLIRContext *ctx, unsigned numLoops,
                      ArrayRef<unsigned> loops);

/// The rel_bias column (an index) of query i and key j under `relpos`: T5's
/// bucket of j - i, by comparisons with the attribute's thresholds.
Value buildRelPosBucket(OpBuilder &b, Location loc, RelPosAttr relpos, Value i,
                        Value j);

/// Whether the pair (b, h, i, j) (whole-problem indices) is visible under a
/// run-time `blockMask` (i8 tensor, blocks of `blockSizes` = [bq, bk]) when
/// the other masks say `visibleByOthers`: its block's class 2 (or more)
/// shows it, 1 leaves it to the others, 0 (or less) hides it. Broadcast
/// dimensions read index 0.
Value buildBlockMaskVisible(OpBuilder &b, Location loc, Value blockMask,
                            ArrayRef<int64_t> blockSizes, ValueRange indices,
                            Value visibleByOthers);

/// Linear attention's feature map phi(x) = elu(x) + 1 of an f32: x + 1 for
/// x > 0, else exp(x). Positive, so every row's denominator is too.
Value createLinearFeatureMap(OpBuilder &b, Location loc, Value x);

/// `x @ w + bias` for x [..., K], w [K, N] and an optional bias [N],
/// accumulating in f32, into `dest` [..., N] (a new tensor of `elementType`
/// when `dest` is null).
Value createProjection(OpBuilder &b, Location loc, Value x, Value w, Value bias,
                       Type elementType, Value dest = {});

/// The finalize_online_attention that ends `op` from its final `statistics`
/// (acc, max, sum): into op's init, and its lse init when op has one.
FinalizeOnlineAttentionOp createFinalize(OpBuilder &b, Location loc,
                                         AttentionOp op, ValueRange statistics);

/// What a mask_mod region yields over a whole box of indices, as i1 values:
/// `hidesAll` is true when it certainly yields false for every index,
/// `showsAll` when it certainly yields true for every one. Computed by
/// interval arithmetic over the region's ops (sound, not always tight: false
/// means unknown).
struct MaskModBounds {
  Value hidesAll, showsAll;
};
/// The bounds of `maskMod` when its arguments (b, h, q_idx, kv_idx) range
/// over the inclusive [first, last] of `argRanges`. Fails, creating nothing,
/// when the region uses an op the intervals do not model: anything but
/// integer constants, index casts, add/sub/mul, division and remainder by a
/// positive constant, min/max, cmpi, select and i1 and/or/xor, on index, i64
/// and i1 values.
FailureOr<MaskModBounds>
boundMaskMod(OpBuilder &b, Location loc, Region &maskMod,
             ArrayRef<std::pair<Value, Value>> argRanges);

/// Tile sizes of the fused kernel derived from the L2 cache per core, by the
/// rule of ONNX Runtime's flash attention: key tiles of
/// Bc = L2 / (16 (D + Dv)) keys (K and V tiles take a quarter of L2), rounded
/// down to whole 64-key chunks of the micro-kernel and kept within [64, 1024]
/// (and under a sliding window, to at most half its width); query tiles of
/// Br = min(Bc, D + Dv, 128). A dynamic D or Dv counts as 64.
int64_t deriveKeyTileSize(AttentionOp op, int64_t l2CacheSize);
/// With static sizes, the query tile also halves (down to 16) while there are
/// fewer than 2 (batch, kv head, query tile) tiles per thread of
/// `parallelism`.
int64_t deriveQueryTileSize(AttentionOp op, int64_t l2CacheSize,
                            int64_t parallelism = 1);

/// Merges partial online statistics `parts` (acc, max, sum, each with a
/// leading dimension of partials, e.g. one per key range) into the running
/// `state` (acc, max, sum): with M = max(max, max_s max_s), every sum and acc
/// (the state's too) is scaled by exp(its max - M), 0 where all keys were
/// hidden, and added. acc is in `layout`. Returns the merged (acc, max, sum).
SmallVector<Value, 3> mergePartialStatistics(OpBuilder &b, Location loc,
                                             Layout layout, ValueRange parts,
                                             ValueRange state);

} // namespace mlir::attn

#endif // ATTN_TRANSFORMS_UTILS_H
