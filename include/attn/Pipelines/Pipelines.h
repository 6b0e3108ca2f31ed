//===- Pipelines.h - attn's named pass pipelines ----------------*- C++ -*-===//
//
// Part of the attn project: an MLIR compiler for attention.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_PIPELINES_PIPELINES_H
#define ATTN_PIPELINES_PIPELINES_H

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"
#include "llvm/Support/Error.h"

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

struct GPUPipelineOptions : public PassPipelineOptions<GPUPipelineOptions> {
  PassOptions::Option<std::string> chip{
      *this, "chip",
      llvm::cl::desc("NVIDIA architecture to compile for (sm_80, sm_90, ...)"),
      llvm::cl::init("sm_90")};
  PassOptions::Option<std::string> features{
      *this, "features",
      llvm::cl::desc("PTX features, e.g. +ptx87 (empty: PTX ISA 8.0, or the "
                     "oldest that knows the chip when that is newer)"),
      llvm::cl::init("")};
  PassOptions::Option<std::string> toolkit{
      *this, "toolkit",
      llvm::cl::desc("CUDA toolkit directory, for libdevice and ptxas "
                     "(empty: $CUDA_HOME, else /usr/local/cuda)"),
      llvm::cl::init("")};
  PassOptions::Option<std::string> format{
      *this, "format",
      llvm::cl::desc("What gpu-module-to-binary embeds: isa (PTX), bin "
                     "(cubin, through ptxas) or fatbin"),
      llvm::cl::init("isa")};
  PassOptions::Option<int64_t> blockRows{
      *this, "block-rows", llvm::cl::desc("Query rows per thread block"),
      llvm::cl::init(32)};
  PassOptions::Option<int64_t> kvTileSize{
      *this, "kv-tile-size",
      llvm::cl::desc("Keys per shared-memory tile of the FMA kernel"),
      llvm::cl::init(32)};
  PassOptions::Option<int64_t> mmaKvTileSize{
      *this, "mma-kv-tile-size",
      llvm::cl::desc("Keys per shared-memory tile of the tensor-core kernel "
                     "(0: 64, or 32 under per-score masks other than causal "
                     "and sliding-window ones, a relpos bias, heads wider "
                     "than 128 or, past D = 64, warps of 32 rows)"),
      llvm::cl::init(0)};
  PassOptions::Option<int64_t> mmaBlockRows{
      *this, "mma-block-rows",
      llvm::cl::desc("Query rows per thread block of the tensor-core kernel, "
                     "a warp per mma-warp-rows (0: 64, 128 with warps of 32 "
                     "rows, or 16 for a static Sq <= 16)"),
      llvm::cl::init(0)};
  PassOptions::Option<int64_t> minBlocksPerSM{
      *this, "min-blocks-per-sm",
      llvm::cl::desc("Blocks of the attention kernel each SM must hold at "
                     "once: ptxas caps its registers to fit them (0: no "
                     "bound)"),
      llvm::cl::init(0)};
  PassOptions::Option<int64_t> kvSplits{
      *this, "kv-splits",
      llvm::cl::desc("Blocks sharing each query block's keys, merged by a "
                     "combine kernel (split-K; 0: decided by the sizes, 1: "
                     "no split)"),
      llvm::cl::init(0)};
  PassOptions::Option<int64_t> kvStages{
      *this, "kv-stages",
      llvm::cl::desc("K/V tile buffers of the tensor-core kernel: 1 "
                     "(FlashAttention-2's copy schedule) or 2 "
                     "(double-buffered)"),
      llvm::cl::init(1)};
  PassOptions::Option<int64_t> mmaWarpRows{
      *this, "mma-warp-rows",
      llvm::cl::desc("Query rows per warp of the tensor-core kernel: 16 or 32 "
                     "(two row blocks sharing each K and V fragment, in "
                     "blocks of 128 rows)"),
      llvm::cl::init(16)};
  PassOptions::Option<bool> mmaQueryInShared{
      *this, "mma-query-in-shared",
      llvm::cl::desc("Keep the tensor-core kernel's Q fragments in shared "
                     "memory for any D (fewer registers, more blocks per SM; "
                     "default: only for warps of 32 rows at D > 64)"),
      llvm::cl::init(false)};
  PassOptions::Option<bool> mmaRowSums{
      *this, "mma-row-sums",
      llvm::cl::desc("Accumulate the tensor-core kernel's softmax row sums "
                     "on the tensor cores (P times a column of ones)"),
      llvm::cl::init(false)};
  PassOptions::Option<bool> packGqa{
      *this, "pack-gqa",
      llvm::cl::desc("Pack the query heads sharing a KV head into one block "
                     "where a static query of all of them fits it (GQA "
                     "decoding)"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> mma{
      *this, "mma",
      llvm::cl::desc("Tensor cores for f16/bf16 with D, Dv <= 128 and for "
                     "f16/bf16 projections, on chips from sm_80 (false: the "
                     "FMA kernels)"),
      llvm::cl::init(true)};
};

/// Copies the options that shape the GPU kernels (attn-convert-to-gpu's)
/// between any two option structs that name them alike: the pass's, the
/// pipeline's and GPUTargetOptions.
template <typename To, typename From>
void copyGPUKernelOptions(To &to, const From &from) {
  to.blockRows = from.blockRows;
  to.kvTileSize = from.kvTileSize;
  to.mmaKvTileSize = from.mmaKvTileSize;
  to.mmaBlockRows = from.mmaBlockRows;
  to.mma = from.mma;
  to.minBlocksPerSM = from.minBlocksPerSM;
  to.kvSplits = from.kvSplits;
  to.packGqa = from.packGqa;
  to.kvStages = from.kvStages;
  to.mmaWarpRows = from.mmaWarpRows;
  to.mmaQueryInShared = from.mmaQueryInShared;
  to.mmaRowSums = from.mmaRowSums;
}

/// An NVIDIA architecture attn compiles for, as attn-gpu-pipeline resolves
/// its `chip` and `features` options.
struct NVPTXTarget {
  /// The SM version: 90 for sm_90 and sm_90a.
  unsigned sm = 0;
  /// The PTX features LLVM gets (at least the PTX ISA that knows the chip).
  std::string features;
  /// Whether attn's tensor-core kernels (mma.sync m16n8k16, cp.async,
  /// ldmatrix) run there: sm_80 and newer.
  bool hasTensorCores() const { return sm >= 80; }
};

/// The SM version of `chip`: 90 for sm_90 and sm_90a, none when it is not
/// spelled sm_N.
std::optional<unsigned> parseSMVersion(StringRef chip);

/// Checks `chip`, an NVIDIA architecture LLVM's NVPTX back end knows, from
/// sm_75 on, and resolves `features`: empty gives PTX ISA 8.0, or the
/// oldest ISA that knows the chip when that is newer (8.6 for sm_100, 8.7
/// for sm_120); a +ptxNN older than that is an error, as LLVM would abort.
llvm::Expected<NVPTXTarget> resolveNVPTXTarget(StringRef chip,
                                               StringRef features);

/// attn-gpu-pipeline: from attention kernel functions on tensors to a
/// gpu.binary (PTX or cubin for `chip`) and host functions on memrefs that
/// gpu.launch_func its kernels. Fails through `errorHandler` when `chip` or
/// `features` is not one resolveNVPTXTarget accepts. On chips before sm_80
/// every kernel is an FMA kernel, whatever `mma` says.
LogicalResult
buildGPUPipeline(OpPassManager &pm, const GPUPipelineOptions &options,
                 function_ref<LogicalResult(const Twine &)> errorHandler);

/// The CUDA toolkit directory: `requested` if set, else $CUDA_HOME, else
/// /usr/local/cuda.
std::string getCUDAToolkitPath(StringRef requested);

/// Bytes of L2 cache per core of `cpu`: this machine's (from Linux's sysfs)
/// for "host", else (or when unknown) 1 MiB.
int64_t getL2CacheSize(StringRef cpu);

/// Registers attn-cpu-pipeline with the global pass registry.
void registerAttnPipelines();

/// Adds what attn-opt (and its fuzzer) parse and lower: the attn dialect,
/// every upstream dialect, extension and LLVM IR translation (the pipelines
/// mix linalg, vector, gpu and the LLVM/NVVM targets), and attn's tiling
/// interfaces.
void registerAttnOptDialects(DialectRegistry &registry);

} // namespace mlir::attn

#endif // ATTN_PIPELINES_PIPELINES_H
