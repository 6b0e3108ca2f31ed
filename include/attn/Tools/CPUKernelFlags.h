//===- CPUKernelFlags.h - code generation flags of the tools ----*- C++ -*-===//
//
// Part of the attn project: an MLIR compiler for attention.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_TOOLS_CPUKERNELFLAGS_H
#define ATTN_TOOLS_CPUKERNELFLAGS_H

#include "attn/Target/CPUKernel.h"
#include "attn/Target/GPUKernel.h"

#include "llvm/Support/CommandLine.h"

#include <string>

namespace mlir::attn {

/// The category of the code generation flags below, shown by --help.
inline llvm::cl::OptionCategory &codegenOptionCategory() {
  static llvm::cl::OptionCategory category("Code generation options");
  return category;
}

/// The CPU code generation flags attn-compile and attn-run share, so both
/// compile a kernel the same way. Define one instance at file scope: its
/// options register with the command line like any static cl::opt.
struct CPUKernelFlags {
  llvm::cl::opt<std::string> cpu{
      "cpu", llvm::cl::desc("Target CPU (LLVM name), or host"),
      llvm::cl::init("host"), llvm::cl::cat(codegenOptionCategory())};
  llvm::cl::opt<std::string> features{
      "features", llvm::cl::desc("Target features (+avx2,...), or host"),
      llvm::cl::init("host"), llvm::cl::cat(codegenOptionCategory())};
  llvm::cl::opt<bool> fused{
      "fused",
      llvm::cl::desc("Tile and fuse the softmax into an online loop over "
                     "key/value tiles (default); --fused=false: the naive, "
                     "unfused reference lowering"),
      llvm::cl::init(true), llvm::cl::cat(codegenOptionCategory())};
  llvm::cl::opt<bool> ukernels{
      "ukernels",
      llvm::cl::desc("With --fused, run the f32 tile steps in the "
                     "register-blocked C micro-kernel (default); "
                     "--ukernels=false: through linalg"),
      llvm::cl::init(true), llvm::cl::cat(codegenOptionCategory())};
  llvm::cl::opt<int64_t> kvTileSize{
      "kv-tile-size",
      llvm::cl::desc("Keys per tile with --fused (default 0: derived from "
                     "the target's L2 cache); GPU: keys per shared-memory "
                     "tile (default 0: 32, tensor cores 64 or 32)"),
      llvm::cl::init(0), llvm::cl::cat(codegenOptionCategory())};
  llvm::cl::opt<int64_t> queryTileSize{
      "query-tile-size",
      llvm::cl::desc("Queries per parallel tile with --fused (default 0: "
                     "derived from the target's L2 cache); GPU: query rows "
                     "per thread block (default 0: 32, tensor cores 64, or 16 "
                     "when Sq <= 16)"),
      llvm::cl::init(0), llvm::cl::cat(codegenOptionCategory())};

  llvm::cl::opt<bool> mma{
      "mma",
      llvm::cl::desc("GPU: run f16/bf16 attentions with D, Dv <= 128, and "
                     "f16/bf16 projections, on tensor cores (the default; "
                     "--mma=false: the FMA kernels)"),
      llvm::cl::init(true), llvm::cl::cat(codegenOptionCategory())};
  llvm::cl::opt<int64_t> minBlocksPerSM{
      "min-blocks-per-sm",
      llvm::cl::desc("GPU: blocks of the attention kernel each SM must hold "
                     "at once; ptxas caps its registers to fit them (as "
                     "CUDA's __launch_bounds__; default 0: no bound)"),
      llvm::cl::init(0), llvm::cl::cat(codegenOptionCategory())};
  llvm::cl::opt<int64_t> kvSplits{
      "kv-splits",
      llvm::cl::desc("GPU: blocks sharing each query block's keys, merged by "
                     "a combine kernel (split-K, for decoding; default 0: "
                     "where the query fits one block and the grid is small; "
                     "1: never; at most 32)"),
      llvm::cl::init(0), llvm::cl::cat(codegenOptionCategory())};
  llvm::cl::opt<int64_t> kvStages{
      "kv-stages",
      llvm::cl::desc("GPU: K/V tile buffers of the tensor-core kernel: 1 (the "
                     "default: FlashAttention-2's copy schedule) or 2 "
                     "(double-buffered: the next tile's K and V copied while "
                     "a tile runs; the key tile shrinks to fit)"),
      llvm::cl::init(1), llvm::cl::cat(codegenOptionCategory())};
  llvm::cl::opt<int64_t> mmaWarpRows{
      "mma-warp-rows",
      llvm::cl::desc("GPU: query rows per warp of the tensor-core kernel: 16 "
                     "(the default) or 32 (two row blocks sharing each K and "
                     "V fragment read, in blocks of 128 rows, as "
                     "FlashAttention-2; decoding keeps 16)"),
      llvm::cl::init(16), llvm::cl::cat(codegenOptionCategory())};
  llvm::cl::opt<bool> mmaQueryInShared{
      "mma-query-in-shared",
      llvm::cl::desc("GPU: keep the tensor-core kernel's Q fragments in "
                     "shared memory for any D, read back a step of D per "
                     "tile (fewer registers, more blocks per SM; default: "
                     "only for warps of 32 rows at D > 64)"),
      llvm::cl::init(false), llvm::cl::cat(codegenOptionCategory())};
  llvm::cl::opt<bool> mmaRowSums{
      "mma-row-sums",
      llvm::cl::desc("GPU: accumulate the tensor-core kernel's softmax row "
                     "sums on the tensor cores, as P times a column of ones "
                     "(fewer instructions, two more registers per 16 rows "
                     "of a warp)"),
      llvm::cl::init(false), llvm::cl::cat(codegenOptionCategory())};
  llvm::cl::opt<bool> packGqa{
      "pack-gqa",
      llvm::cl::desc("GPU: one block computes all the query heads sharing a "
                     "KV head, reading each key tile once for them, where a "
                     "static query of all of them fits the block (GQA "
                     "decoding; the default; --pack-gqa=false: a head a "
                     "block)"),
      llvm::cl::init(true), llvm::cl::cat(codegenOptionCategory())};

  /// What is wrong with the values given, or an empty string. (The GPU
  /// passes check --min-blocks-per-sm against the kernel's threads.)
  std::string check() const {
    if (kvTileSize < 0 || queryTileSize < 0)
      return "--kv-tile-size and --query-tile-size must be positive (or 0: "
             "derived from the L2 cache)";
    if (kvSplits < 0 || kvSplits > 32)
      return "--kv-splits must be in [0, 32], got " + std::to_string(kvSplits);
    if (kvStages != 1 && kvStages != 2)
      return "--kv-stages must be 1 or 2, got " + std::to_string(kvStages);
    if (mmaWarpRows != 16 && mmaWarpRows != 32)
      return "--mma-warp-rows must be 16 or 32, got " +
             std::to_string(mmaWarpRows);
    return "";
  }

  /// The GPU options for `chip`: the tile flags map to the block rows and
  /// the shared-memory key tile of either kernel (0 keeps the defaults).
  GPUTargetOptions gpuOptions(StringRef chip, StringRef toolkit = "") const {
    GPUTargetOptions options;
    options.chip = chip.str();
    options.toolkit = toolkit.str();
    if (kvTileSize > 0)
      options.kvTileSize = options.mmaKvTileSize = kvTileSize;
    if (queryTileSize > 0)
      options.blockRows = options.mmaBlockRows = queryTileSize;
    options.mma = mma;
    options.minBlocksPerSM = minBlocksPerSM;
    options.kvSplits = kvSplits;
    options.packGqa = packGqa;
    options.kvStages = kvStages;
    options.mmaWarpRows = mmaWarpRows;
    options.mmaQueryInShared = mmaQueryInShared;
    options.mmaRowSums = mmaRowSums;
    return options;
  }

  CPUTargetOptions options() const {
    CPUTargetOptions options;
    options.cpu = cpu;
    options.features = features;
    options.fused = fused;
    options.ukernels = ukernels;
    options.kvTileSize = kvTileSize;
    options.queryTileSize = queryTileSize;
    return options;
  }
};

} // namespace mlir::attn

#endif // ATTN_TOOLS_CPUKERNELFLAGS_H
