//===- GPUKernel.h - ahead-of-time NVIDIA GPU kernels -----------*- C++ -*-===//
//
// Part of the attn project: an MLIR compiler for attention.
//
// From a function holding one attn.attention to PTX and a cubin for one
// NVIDIA architecture, through attn-gpu-pipeline. Used by attn-compile.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_TARGET_GPUKERNEL_H
#define ATTN_TARGET_GPUKERNEL_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/Error.h"

#include <optional>
#include <string>
#include <vector>

namespace mlir::attn {

struct GPUTargetOptions {
  std::string chip = "sm_90"; // sm_80, sm_90, ...
  std::string toolkit;        // CUDA toolkit dir (empty: CUDA_HOME, default)
  int64_t blockRows = 32;     // query rows per thread block
  int64_t kvTileSize = 32;    // keys per shared-memory tile (FMA kernel)
  int64_t mmaKvTileSize = 0;  // and of the tensor-core kernel (0: its own)
  int64_t mmaBlockRows =
      0; // its rows per block (0: 64, 128 in warps of 32, 16 decoding)
  bool mma = false;           // tensor cores, f16/bf16 (experimental)
  int64_t minBlocksPerSM = 0; // blocks an SM must hold (0: no bound)
  int64_t kvSplits = 0;       // split-K blocks per query block (0: decided)
  bool packGqa = true;        // a KV head's query heads in one block (decoding)
  int64_t kvStages = 1;       // tensor cores' K/V buffers (2: double-buffered)
  int64_t mmaWarpRows = 16;   // and their rows per warp (32: two row blocks)
  bool mmaQueryInShared = false; // and Q in shared memory for any D
  bool mmaRowSums = false;       // and row sums as P times ones on them
};

/// A buffer one launch passes: operand `index` of the kernel function, or
/// scratch buffer `index` of the kernel.
struct GPUBuffer {
  bool scratch = false;
  int64_t index = 0;
};

/// Device memory a kernel needs between its launches (the projected
/// operands of a multi-head or additive attention, split-K's partial rows,
/// linear attention's chunk states): rows x `width` elements
/// of `elementBytes`, the rows being those of operand `rowsOf` (its elements
/// over its last dim) or, when that is -1, the size of symbol `rowsSymbol`.
struct GPUScratch {
  int64_t rowsOf = -1, rowsSymbol = -1, width = 0, elementBytes = 0;
};

/// One launch of a compiled kernel, each buffer as a 1-D memref (allocated,
/// aligned, offset, size, stride), in blocks of `threads` threads:
/// - an attention (`blockRows` > 0): grid (ceil(Sq / blockRows) kvSplits
///   columnBlocks, Hq / packedHeads, B), then B, Sq, Sk, Hq and Hkv;
/// - a projection y [M, N] = x [M, K] w [K, N] (+ bias [N]) (`columns` > 0,
///   `reduction` K, M the rows of its last buffer y): grid
///   (ceil(M / tileRows), ceil(N / tileColumns)), then M, K and N.
struct GPULaunch {
  std::string function;
  std::vector<GPUBuffer> buffers;
  int64_t threads = 0;
  /// Dynamic shared memory of each block (beyond 48 KiB, the launcher opts
  /// in by cuFuncSetAttribute).
  int64_t dynamicSharedBytes = 0;
  int64_t blockRows = 0;
  /// Blocks that share each query block's keys (split-K).
  int64_t kvSplits = 1;
  /// Query heads per block (GQA packing): `blockRows` query rows of each.
  int64_t packedHeads = 1;
  /// Blocks that each compute a slice of Dv's columns of the same rows.
  int64_t columnBlocks = 1;
  /// Whether the attention kernel multiplies on tensor cores (else FMAs).
  bool tensorCores = false;
  /// Keys per K/V tile the attention kernel stages in shared memory.
  int64_t kvTile = 0;
  /// The alignment in bytes each buffer's data needs (what the kernel
  /// reads or writes of it at once: 16 of K and V where cp.async copies
  /// them); empty: none beyond their elements.
  std::vector<int64_t> alignments;
  int64_t reduction = 0, columns = 0, tileRows = 0, tileColumns = 0;
  bool isAttention() const { return blockRows > 0; }
};

/// What ptxas reported of one function of the cubin (`ptxas -v`).
struct GPUFunctionResources {
  std::string name;
  int64_t registers = 0, sharedBytes = 0;
  int64_t stackFrameBytes = 0, spillStoreBytes = 0, spillLoadBytes = 0;
  bool spills() const { return spillStoreBytes || spillLoadBytes; }
};

/// How many blocks of a function one SM holds at once, and what bounds it
/// (`registers`, `shared memory`, `threads` or `blocks`).
struct GPUOccupancy {
  int64_t blocksPerSM = 0;
  std::string limit;
};

/// The theoretical occupancy of `function` launched in blocks of `threads`
/// on `chip`, by the CUDA occupancy calculator's model (registers allocated
/// per warp in units of 256, shared memory in units of 128 bytes plus 1 KiB
/// reserved per block); none for a chip whose limits attn does not know
/// (it knows sm_75, sm_80, sm_86, sm_89, sm_90 and sm_100, with or without
/// an a or f suffix). `dynamicSharedBytes` adds to the function's static
/// shared memory.
std::optional<GPUOccupancy>
theoreticalOccupancy(StringRef chip, const GPUFunctionResources &function,
                     int64_t threads, int64_t dynamicSharedBytes = 0);

/// A compiled kernel: its launches in order, with the scratch buffers they
/// share. A plain attention is one launch of the gpu.func named after the
/// kernel, with the kernel's operands; on tensor cores under a per-row mask,
/// a second one, `NAME_exact`, redoes the blocks whose V holds NaN or Inf
/// where the first would carry it to rows that do not see its key. Split-K,
/// projections and linear attention's chunks add launches around it.
struct GPUKernelBinary {
  std::string ptx, cubin, chip;
  std::vector<GPUScratch> scratch;
  std::vector<GPULaunch> launches;
  /// Each entry function's registers, shared memory and spills.
  std::vector<GPUFunctionResources> resources;
  /// The launch of the attention's own kernel (named after the kernel).
  size_t attentionLaunch = 0;
  /// The resources of `function`, if ptxas reported it.
  const GPUFunctionResources *resourcesOf(StringRef function) const;
  /// The launch of the attention's own kernel.
  const GPULaunch &attention() const;
};

/// Checks `options` before compiling: `chip` is one resolveNVPTXTarget
/// accepts (an architecture LLVM's NVPTX backend knows, from sm_75), and the
/// CUDA toolkit has libdevice and ptxas.
llvm::Error checkGPUTarget(const GPUTargetOptions &options);

/// Lowers a copy of `func` (alone in a new module, renamed `name`) with
/// attn-gpu-pipeline to PTX, and assembles it to a cubin with the toolkit's
/// ptxas (keeping its report of each function's resources); the launches
/// are read from the host function the pipeline leaves. A tensor-core
/// attention kernel that spills at its default key tile is compiled again
/// at half of it, down to 16 keys, keeping the one that spills least
/// (unless `mmaKvTileSize` or `minBlocksPerSM` is given).
FailureOr<GPUKernelBinary> compileGPUKernel(func::FuncOp func, StringRef name,
                                            const GPUTargetOptions &options);

struct KernelSignature;

/// What a launcher embeds: the cubin (machine code for the chip), or the
/// PTX, which the driver compiles for whichever GPU loads it (and which the
/// CPU emulator of lib/Emulator runs).
enum class GPUImage { Cubin, PTX };

/// The C launcher `name` of `binary` (see NAME.h from emitCHeader with
/// KernelDevice::CUDA): checks the DLTensors like a CPU kernel (kDLCUDA, one
/// device), loads the embedded `image` once per CUDA context and queues the
/// kernel on the caller's stream.
std::string emitCUDALauncher(const KernelSignature &signature, StringRef name,
                             const GPUKernelBinary &binary,
                             GPUImage image = GPUImage::Cubin);

} // namespace mlir::attn

#endif // ATTN_TARGET_GPUKERNEL_H
