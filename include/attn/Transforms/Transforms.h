//===- Transforms.h - attn rewrites as library functions --------*- C++ -*-===//
//
// Part of the attn project: an MLIR compiler for attention.
//
// The passes are thin drivers over these functions, which tools and tests can
// call directly.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_TRANSFORMS_TRANSFORMS_H
#define ATTN_TRANSFORMS_TRANSFORMS_H

#include "attn/IR/AttnOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/Support/Error.h"

namespace llvm {
class Target;
class Triple;
} // namespace llvm

namespace mlir::linalg {
class MatmulOp;
} // namespace mlir::linalg

namespace mlir::attn {

/// Replaces `op` with its input projections, an `attn.attention` in the BSHD
/// layout and the output projection. Returns the new attention op.
FailureOr<AttentionOp> expandMultiHeadAttention(RewriterBase &rewriter,
                                                MultiHeadAttentionOp op);

/// Replaces `op` with the projections of its queries and keys and an
/// `attn.attention` with the additive similarity on them. Returns the new
/// attention op.
FailureOr<AttentionOp> expandAdditiveAttention(RewriterBase &rewriter,
                                               AdditiveAttentionOp op);

/// Replaces `op` with the naive, unfused linalg lowering that materializes the
/// [B, Hq, Sq, Sk] score matrix. Returns the values that replaced the op (the
/// output, then the lse when it has one).
FailureOr<SmallVector<Value>> decomposeAttention(RewriterBase &rewriter,
                                                 AttentionOp op);

/// Replaces `op` with f32 linalg ops (an scf.for over query chunks of
/// `chunkSize` rows under the causal mask). Returns the new result.
FailureOr<Value> lowerLinearAttention(RewriterBase &rewriter,
                                      LinearAttentionOp op, int64_t chunkSize);

/// Replaces `op` with linalg ops that fold its key/value tile into the
/// running (acc, max, sum). Returns their new values.
FailureOr<SmallVector<Value>> decomposeOnlineAttention(RewriterBase &rewriter,
                                                       OnlineAttentionOp op);

/// Registers TilingInterface and PartialReductionOpInterface for
/// attn.online_attention (lib/Transforms/TilingInterfaceImpl.cpp).
void registerTilingInterfaceExternalModels(DialectRegistry &registry);

/// Replaces `op` with a call of the online-step micro-kernel of its element
/// type (attn.ukernel.generic) when the micro-kernel implements it: f32, f16
/// or bf16 q, k and v, no additive similarity, and not both a mask tensor
/// and masks evaluated per position. Masks other than a band go in as an i1
/// tile; a score_mod or rel_bias is applied to the scores micro-kernel's
/// output before the step reads it.
FailureOr<UKernelGenericOp>
lowerOnlineAttentionToUKernel(RewriterBase &rewriter, OnlineAttentionOp op);

/// Replaces `op` (a linalg.matmul on tensors into f32, its inputs f32, f16
/// or bf16 alike: the projections attn-expand-mha and attn-expand-additive
/// write) with an scf.forall over tiles of `rowTile` rows, each a call of the
/// matmul micro-kernel. Returns the loop.
FailureOr<scf::ForallOp> lowerMatmulToUKernel(RewriterBase &rewriter,
                                              linalg::MatmulOp op,
                                              int64_t rowTile);

/// Replaces every linalg op on buffers nested in an scf.parallel under
/// `root` with a nest of scf.for loops. Fails on the first op that cannot be
/// lowered.
LogicalResult lowerNestedLinalgToLoops(RewriterBase &rewriter, Operation *root);

/// Replaces `op` with `sum > 0 ? acc / sum : 0` in the output type, and
/// `sum > 0 ? max + log(sum) : -inf` for its lse. Returns the new values.
FailureOr<SmallVector<Value>>
decomposeFinalizeOnlineAttention(RewriterBase &rewriter,
                                 FinalizeOnlineAttentionOp op);

/// Block skipping: replaces `op` with the same attention over only the keys
/// that some query of it can see, by its structured mask (buildMaskKeyHull;
/// whole-problem positions from its offsets/extents) and, when it holds one
/// batch entry, kv_lens (then dropped: the cut applies it). The cut starts
/// on a whole-problem multiple of `keyTile` (when positive), so the key
/// tiles of the fused loop are those of a fixed grid. K, V and the key
/// dimension of mask and bias are sliced, the key offset advanced. Fails when
/// there is nothing to cut by.
FailureOr<AttentionOp> classifyBlocks(RewriterBase &rewriter, AttentionOp op,
                                      int64_t keyTile = 0);

struct AttentionPosition;

/// How the masks of an attention treat one key tile, as i1 values: `hidden`
/// when they certainly hide every key of it from every query (the tile is
/// skipped); `full` when the rules (structured mask, mask_mod) certainly
/// show every one (the step runs without them); `blocksFull` when every
/// run-time block under the tile is full (the step runs with no mask at
/// all). Null when nothing decides it.
struct KeyTileClass {
  Value hidden, full, blocksFull;
};
/// Classifies the keys [kvStart, kvStart + kvSize) of `op` (whose query
/// block holds `qLen` queries at `position`): by its structured mask
/// (buildMaskTile), by the bounds of its mask_mod region over the tile's
/// box of indices (see boundMaskMod), and by the least and greatest class of
/// the block_mask blocks under it. The fused loop branches on it per key
/// tile.
KeyTileClass classifyKeyTile(OpBuilder &b, Location loc, AttentionOp op,
                             const AttentionPosition &position, Value qLen,
                             Value kvStart, Value kvSize);

/// Replaces `op` with an scf.for over key/value tiles of `kvTileSize` keys
/// carrying (acc, max, sum) through attn.online_attention, and a final
/// attn.finalize_online_attention. Returns the finalize op. With
/// `tileCounters` (memref<i64> globals: all key tiles, visited key tiles),
/// the loop adds its counts to them atomically.
FailureOr<FinalizeOnlineAttentionOp>
fuseOnlineSoftmax(RewriterBase &rewriter, AttentionOp op, int64_t kvTileSize,
                  ArrayRef<memref::GlobalOp> tileCounters = {});

/// Tile sizes of tileAttention.
struct AttentionTileSizes {
  int64_t batch = 1;
  int64_t kvHeads = 1; // with all the query heads that read them
  int64_t queries = 64;
};

/// Replaces `op` with an scf.forall over (batch, key/value head, query block)
/// tiles, each an attn.attention on slices with offsets/extents. Fails for
/// non-positive sizes and for an op that is already a tile.
FailureOr<scf::ForallOp> tileAttention(RewriterBase &rewriter, AttentionOp op,
                                       const AttentionTileSizes &sizes);

/// Replaces `op` with `splits` parallel online_attention ops over key ranges
/// and an exact merge of their partial statistics. Returns the finalize op.
FailureOr<FinalizeOnlineAttentionOp>
splitKeyValue(RewriterBase &rewriter, AttentionOp op, int64_t splits);

/// `cpu`, or the name of this machine's CPU when `cpu` is "host".
std::string resolveHostCPU(StringRef cpu);
/// `features`, or this machine's CPU features ("+avx2,-avx512f,...") when
/// `features` is "host".
std::string resolveHostFeatures(StringRef features);

/// This machine's target (x86-64), initialized, and its triple.
llvm::Expected<const llvm::Target *> getHostTarget(llvm::Triple &triple);

/// Checks a CPU target: `cpu` is `host` or a CPU LLVM's x86 backend knows,
/// and `features` is `host` or a comma-separated list of +name/-name
/// features it knows (LLVM would only warn and ignore them).
llvm::Error checkCPUTarget(StringRef cpu, StringRef features);

} // namespace mlir::attn

#endif // ATTN_TRANSFORMS_TRANSFORMS_H
