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

#include <string>

namespace mlir::attn {

struct GPUTargetOptions {
  std::string chip = "sm_90"; // sm_80, sm_90, ...
  std::string toolkit;        // CUDA toolkit dir (empty: CUDA_HOME, default)
  int64_t blockRows = 32;     // query rows per thread block
  int64_t kvTileSize = 32;    // keys per shared-memory tile
  bool mma = false;           // tensor cores, f16/bf16 (experimental)
};

/// A compiled kernel: the gpu.func `name` (arguments: q, k, v, [mask], [bias],
/// [kv_lens], out as 1-D memrefs, then B, Sq, Sk, Hq, Hkv), launched over
/// (ceil(Sq / blockRows), Hq, B) blocks of `threads` threads.
struct GPUKernelBinary {
  std::string ptx, cubin, chip;
  int64_t blockRows = 0, threads = 0;
  /// The alignment in bytes the kernel needs of K and V data (16 where
  /// cp.async copies them).
  int64_t kvAlignment = 1;
};

/// Checks `options` before compiling: `chip` is an architecture LLVM's NVPTX
/// backend knows, and the CUDA toolkit has libdevice and ptxas.
llvm::Error checkGPUTarget(const GPUTargetOptions &options);

/// Lowers a copy of `func` (alone in a new module, renamed `name`) with
/// attn-gpu-pipeline to PTX, and assembles it to a cubin with the toolkit's
/// ptxas.
FailureOr<GPUKernelBinary> compileGPUKernel(func::FuncOp func, StringRef name,
                                            const GPUTargetOptions &options);

struct KernelSignature;

/// The C launcher `name` of `binary` (see NAME.h from emitCHeader with
/// KernelDevice::CUDA): checks the DLTensors like a CPU kernel (kDLCUDA, one
/// device), loads the embedded cubin once per CUDA context and queues the
/// kernel on the caller's stream.
std::string emitCUDALauncher(const KernelSignature &signature, StringRef name,
                             const GPUKernelBinary &binary);

} // namespace mlir::attn

#endif // ATTN_TARGET_GPUKERNEL_H
