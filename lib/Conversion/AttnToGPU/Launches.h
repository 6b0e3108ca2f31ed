//===- Launches.h - host functions that launch kernels ----------*- C++ -*-===//
//
// Part of the attn project: an MLIR compiler for attention.
//
//===----------------------------------------------------------------------===//
//
// The host side of every GPU kernel function: the gpu.func a kernel
// function becomes, and the host function on memrefs that launches it.
// Also the entry points of the kernel functions that are not a single
// attention (linear, multi-head and additive attention).
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_LIB_CONVERSION_ATTNTOGPU_LAUNCHES_H
#define ATTN_LIB_CONVERSION_ATTNTOGPU_LAUNCHES_H

#include "attn/IR/AttnOps.h"
#include "attn/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"

namespace mlir::attn::gpu_codegen {

/// Shared memory a block may declare statically.
constexpr int64_t kStaticSharedBytes = 48 * 1024;
/// Shared memory a block may take dynamically, opted in (the launcher's
/// cuFuncSetAttribute) on every chip from sm_80: sm_86 and sm_89 allow
/// 99 KiB, sm_80 163 and sm_90 227.
constexpr int64_t kDynamicSharedBytes = 99 * 1024;
/// Blocks a GPU wants at least: two per SM of an H100 (132 SMs), about as
/// many as fill an A100 (108) twice too.
constexpr int64_t kBlocksToFill = 264;

/// A projection kernel's block: its threads and the rows and columns of y it
/// computes.
struct ProjectionBlock {
  int64_t threads, rows, columns;
};

/// Adds to `module` the gpu.func `name` computing y [M, N] = x [M, K]
/// w [K, N] (+ bias [N]) in f32, stored as y's element type, a tile of y a
/// block (ProjectionKernel.cpp). Its arguments: [x], [w], [bias], y as 1-D
/// memrefs (x and w exactly when `x` is set; null types are absent
/// operands), then M, K and N. Without x and w it writes the bias to every
/// row of y. With `tensorCores`, x and w both f16 or both bf16 multiply on
/// mma.sync.
ProjectionBlock buildProjectionKernel(gpu::GPUModuleOp module, StringRef name,
                                      Location loc, Type x, Type w, Type bias,
                                      Type y, bool tensorCores);

/// A kernel a host function launches, in blocks of `threads`, with
/// `dynamicShared` bytes of dynamic shared memory. `alignments` holds the
/// bytes each of its memref operands' data must be aligned to (what it
/// reads or writes at once, which the launcher checks; none: 1 each).
struct KernelLaunch {
  gpu::GPUFuncOp kernel;
  int64_t threads;
  SmallVector<int64_t> alignments = {};
  int64_t dynamicShared = 0;
  /// Whether it multiplies on tensor cores (`mma.sync`).
  bool tensorCores = false;
  /// Keys per K/V tile in shared memory (0: the kernel stages none).
  int64_t kvTile = 0;
  /// Blocks that each compute a slice of Dv's columns of the same rows
  /// (linear attention): the grid's first dim times this.
  int64_t columnBlocks = 1;
  /// Query heads a block serves, if not the host function's `packedHeads`
  /// (0): linear attention's chunk kernels take a KV head a block.
  int64_t packedHeads = 0;
};

/// The operands of `attention` a kernel takes, in its order: q, k, v,
/// [mask], [bias], [rel_bias], [additive_weight], [kv_lens], [spans],
/// [block_mask], out, [lse].
SmallVector<Value> kernelOperands(AttentionOp attention);

/// `memref` as the 1-D memref<?xT> a kernel takes.
Value flattenForKernel(OpBuilder &b, Location loc, Value memref);

/// The combine kernel of a split-K attention (`splits` blocks per query
/// block), merging rows of `valueDim`, `rows` a block; `lse` when the
/// attention has an lse output.
struct SplitCombine {
  KernelLaunch combine;
  int64_t rows, splits, valueDim;
  bool lse;
};

/// A scratch buffer of f32 that every launch takes after the kernel
/// function's arguments: `width` elements per row of argument `rowsOf` (its
/// elements over its last dim).
struct LaunchScratch {
  int64_t rowsOf, width;
};

/// Replaces `func` by a host function on memrefs that flattens its
/// arguments and launches each kernel in turn over (ceil(Sq / blockRows),
/// Hq / packedHeads, B) blocks with them, [then `scratch`,] then B, Sq, Sk,
/// Hq and Hkv (`blockRows` query rows of each of `packedHeads` heads a
/// block; x times a kernel's `columnBlocks`). With
/// `split`, the kernels run over ceil(Sq / blockRows) x splits blocks with
/// two scratch buffers (partial out and lse, f32) in place of out and lse,
/// and the combine kernel then merges them into out (and lse) over
/// (ceil(Sq / rows), Hq, B) blocks.
void replaceWithKernelLaunches(func::FuncOp func,
                               ArrayRef<KernelLaunch> launches, Layout layout,
                               int64_t blockRows, int64_t packedHeads = 1,
                               const SplitCombine *split = nullptr,
                               const LaunchScratch *scratch = nullptr);

/// The kernel gpu.func `name` at the end of `module`, taking `argTypes`,
/// with `workgroup` buffers in shared memory and `threads` per block.
gpu::GPUFuncOp createKernelFunc(OpBuilder &b, Location loc,
                                gpu::GPUModuleOp module, StringRef name,
                                TypeRange argTypes, TypeRange workgroup,
                                int64_t threads);

/// A gpu.func `name` in `module` (if null, a new gpu.module named after
/// `func`, `<func>_kernels`): each tensor argument of `func` flattened to a
/// 1-D memref (or 1-D memrefs of `bufferElements`, if given), then B, Sq,
/// Sk, Hq and Hkv; `workgroup` buffers in shared memory; `threads` per
/// block.
gpu::GPUFuncOp createKernel(func::FuncOp func, StringRef name,
                            gpu::GPUModuleOp module, TypeRange workgroup,
                            int64_t threads,
                            ArrayRef<Type> bufferElements = {});

/// Asks ptxas to fit `blocks` blocks of `kernel` (of `threads` threads) in
/// an SM (nvvm.minctasm, as CUDA's __launch_bounds__); 0 asks nothing. More
/// than an SM's 2048 threads is an error on `op`.
LogicalResult boundBlocksPerSM(Operation *op, gpu::GPUFuncOp kernel,
                               int64_t threads, int64_t blocks);

/// A kernel function (q, k, v, out) of one attn.linear_attention `op`: one
/// block per (slice of Dv's columns, query head, batch entry[, chunk of
/// rows]) keeping its slice of the state in shared memory, the chunks'
/// states and their prefix sums first computed by kernels of their own
/// (LinearAttentionKernel.cpp), `minBlocksPerSM` of them an SM.
LogicalResult convertLinearAttentionToGPU(func::FuncOp func,
                                          LinearAttentionOp op,
                                          int64_t minBlocksPerSM);

/// A kernel function of one attn.multi_head_attention or
/// attn.additive_attention `op`: projection kernels and scratch buffers
/// around the attention kernel (ProjectedAttention.cpp).
LogicalResult
convertProjectedAttentionToGPU(func::FuncOp func, Operation *op,
                               const ConvertAttnToGPUOptions &options);

} // namespace mlir::attn::gpu_codegen

#endif // ATTN_LIB_CONVERSION_ATTNTOGPU_LAUNCHES_H
