//===- AttnToGPU.h - attention kernels as gpu.func --------------*- C++ -*-===//
//
// Part of the attn project: an MLIR compiler for attention.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_CONVERSION_ATTNTOGPU_H
#define ATTN_CONVERSION_ATTNTOGPU_H

#include "attn/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::attn {

/// Replaces the kernel function `func` ((q, k, v, [mask], [bias], [kv_lens],
/// out) on tensors, returning its one attn.attention) with a gpu.func in a
/// new gpu.module `<name>_kernels` and a host function of the same name on
/// memrefs that launches it over (ceil(Sq / blockRows), Hq, B) blocks. K and V
/// pass through shared memory in tiles of `kvTileSize` keys. With `mma`, an
/// f16 or bf16 attention with D, Dv <= 256 runs on tensor cores (mma.sync
/// m16n8k16) in blocks of warps of 16 or 32 rows instead, in tiles of
/// `mmaKvTileSize` keys. A function (q, k, v, out) of one
/// attn.linear_attention gets a block per (slice of Dv's columns, query head,
/// batch entry[, chunk of rows]) that keeps its slice of the linear
/// attention's state in shared memory, after kernels that compute each
/// chunk's own state and their prefix sums when there are chunks. Fails with a
/// diagnostic on an attention the GPU path does not take.
LogicalResult convertAttentionToGPU(func::FuncOp func,
                                    const ConvertAttnToGPUOptions &options);

/// The registers each thread of a block of `threads` may take when the block
/// has an SM's 64 Ki to itself: in ptxas's steps of 8, at most 255.
inline int64_t blockRegisterBudget(int64_t threads) {
  return std::min<int64_t>(255, 65536 / std::max<int64_t>(threads, 1) / 8 * 8);
}

} // namespace mlir::attn

#endif // ATTN_CONVERSION_ATTNTOGPU_H
