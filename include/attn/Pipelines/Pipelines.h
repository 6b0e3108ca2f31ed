//===- Pipelines.h - attn's named pass pipelines ----------------*- C++ -*-===//
//
// Part of the attn project: an MLIR compiler for attention.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_PIPELINES_PIPELINES_H
#define ATTN_PIPELINES_PIPELINES_H

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

namespace mlir::attn {

struct CPUPipelineOptions : public PassPipelineOptions<CPUPipelineOptions> {
  PassOptions::Option<std::string> cpu{
      *this, "cpu",
      llvm::cl::desc("Target CPU as LLVM names it (e.g. skylake-avx512), or "
                     "host for this machine"),
      llvm::cl::init("host")};
  PassOptions::Option<std::string> features{
      *this, "features",
      llvm::cl::desc("Target features (e.g. +avx2,+fma), or host for this "
                     "machine"),
      llvm::cl::init("host")};
  PassOptions::Option<bool> fused{
      *this, "fused",
      llvm::cl::desc(
          "Tile (attn-tile) and fuse the softmax into an online loop "
          "over key/value tiles (attn-fuse-online-softmax) instead "
          "of the naive lowering"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> ukernels{
      *this, "ukernels",
      llvm::cl::desc("Run the fused kernel's f32 tile steps in the "
                     "register-blocked C micro-kernel "
                     "(attn-lower-to-ukernels); false: the linalg lowering"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> countTiles{
      *this, "count-tiles",
      llvm::cl::desc("Count the fused loops' key tiles (all and visited) in "
                     "the globals @attn_tiles_total and @attn_tiles_computed "
                     "(attn-run reports them)"),
      llvm::cl::init(false)};
  PassOptions::Option<int64_t> kvTileSize{
      *this, "kv-tile-size",
      llvm::cl::desc("Keys per tile of the fused loop (0: derived from the "
                     "L2 cache, see attn-fuse-online-softmax)"),
      llvm::cl::init(0)};
  PassOptions::Option<int64_t> queryTileSize{
      *this, "query-tile-size",
      llvm::cl::desc("Queries per parallel tile of the fused kernel (0: "
                     "derived from the L2 cache, see attn-tile)"),
      llvm::cl::init(0)};
  PassOptions::Option<int64_t> l2CacheSize{
      *this, "l2-cache-size",
      llvm::cl::desc("Bytes of L2 cache per core the tile sizes derive from "
                     "(0: this machine's with cpu=host, else 1 MiB)"),
      llvm::cl::init(0)};
};

/// attn-cpu-pipeline: from attn ops on tensors to the LLVM dialect. Every
/// function with tensor arguments becomes one that takes memrefs, with its
/// destination (the last argument) written in place; `llvm.emit_c_interface`
/// functions also get a `_mlir_ciface_` wrapper.
void buildCPUPipeline(OpPassManager &pm, const CPUPipelineOptions &options);

/// Bytes of L2 cache per core of `cpu`: this machine's (from Linux's sysfs)
/// for "host", else (or when unknown) 1 MiB.
int64_t getL2CacheSize(StringRef cpu);

/// Registers attn-cpu-pipeline with the global pass registry.
void registerAttnPipelines();

} // namespace mlir::attn

#endif // ATTN_PIPELINES_PIPELINES_H
