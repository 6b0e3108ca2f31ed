//===- CUDADriver.h - the CUDA driver API, loaded at run time ---*- C++ -*-===//
//
// Part of the attn project: an MLIR compiler for attention.
//
// attn-run --target gpu runs kernels through libcuda.so.1, opened when asked
// for, so that attn builds and runs on machines without an NVIDIA driver and
// says clearly that there is no GPU.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_TOOLS_CUDADRIVER_H
#define ATTN_TOOLS_CUDADRIVER_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <memory>
#include <string>

namespace mlir::attn {

/// The first CUDA device, in its primary context, with a module loaded.
class CUDADevice {
public:
  /// Opens libcuda.so.1, initializes it and makes device 0's primary context
  /// current; the error says why when any of it fails (no driver, no GPU).
  static llvm::Expected<std::unique_ptr<CUDADevice>> open();
  ~CUDADevice();

  /// The device's name and architecture ("sm_90").
  std::string name() const;
  std::string chip() const;

  /// Device memory of `bytes` bytes (at least 1), freed with the device.
  llvm::Expected<uint64_t> allocate(size_t bytes);
  llvm::Error copyToDevice(uint64_t device, const void *host, size_t bytes);
  llvm::Error copyToHost(void *host, uint64_t device, size_t bytes);

  /// Loads `cubin` (or, when the driver finds no code for its GPU in it,
  /// `ptx`, which it compiles) and looks up the functions `kernels` in it.
  llvm::Error load(llvm::StringRef cubin, llvm::StringRef ptx,
                   llvm::ArrayRef<std::string> kernels);
  /// Queues loaded function `kernel` with `params` (pointers to each
  /// argument) and `sharedBytes` of dynamic shared memory (opting in
  /// beyond 48 KiB).
  llvm::Error launch(size_t kernel, const unsigned grid[3], unsigned threads,
                     unsigned sharedBytes, llvm::ArrayRef<void *> params);
  /// Waits for every queued launch.
  llvm::Error synchronize();

  struct Api;

private:
  CUDADevice() = default;
  std::unique_ptr<Api> api;
};

} // namespace mlir::attn

#endif // ATTN_TOOLS_CUDADRIVER_H
