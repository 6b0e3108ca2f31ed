//===- CPUKernel.h - ahead-of-time CPU kernels on a DLPack ABI --*- C++ -*-===//
//
// Part of the attn project: an MLIR compiler for attention.
//
// From a function holding one attn.attention to an LLVM module whose public
// entry point takes DLTensor pointers, checks them, and runs the kernel. Used
// by attn-compile (object file + header) and attn-run (JIT).
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_TARGET_CPUKERNEL_H
#define ATTN_TARGET_CPUKERNEL_H

#include "attn/Runtime/KernelABI.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/Error.h"
#include "llvm/Target/TargetMachine.h"

#include <memory>
#include <string>

namespace mlir::attn {

/// One argument of a kernel entry point, in ABI order.
struct KernelOperand {
  std::string name; // "q", "k", "v", "mask", "bias", "kv_lens", "out", "lse"
  RankedTensorType type;
  attn_operand_desc desc;
  /// Whether the kernel writes this operand (passed as a non-const DLTensor).
  bool isOutput() const { return name == "out" || name == "lse"; }
};

/// The ABI of a kernel: its DLTensor arguments and the sizes it was compiled
/// for (`staticSizes[s]` is -1 where symbol s is dynamic).
struct KernelSignature {
  SmallVector<KernelOperand> operands;
  int64_t staticSizes[ATTN_NUM_SYMBOLS];
};

/// Checks that `func` is a kernel attn can compile: its arguments are exactly
/// the operands of one attn.attention, in the order (q, k, v, [mask], [bias],
/// [kv_lens], out), and it returns the attention result. Returns the ABI.
FailureOr<KernelSignature> analyzeKernel(func::FuncOp func);

struct CPUTargetOptions {
  std::string cpu = "host";      // an LLVM CPU name, or host
  std::string features = "host"; // "+avx2,+fma", or host
  bool fused = true;             // false: the naive reference lowering
  bool ukernels = true;          // fused f32 tile steps in the C micro-kernel
  bool countTiles = false;       // @attn_tiles_total, @attn_tiles_computed
  int64_t kvTileSize = 0;        // keys per tile when fused (0: from L2)
  int64_t queryTileSize = 0;     // queries per parallel tile (0: from L2)
};

/// Lowers a copy of `func` (alone in a new module) with attn-cpu-pipeline,
/// adds the public entry point `name` and `name_error_string`, translates to
/// LLVM IR, links the argument-checking runtime and optimizes at -O3.
FailureOr<std::unique_ptr<llvm::Module>>
compileCPUKernel(func::FuncOp func, StringRef name,
                 const KernelSignature &signature,
                 const CPUTargetOptions &options, llvm::LLVMContext &llvmCtx);

/// Checks `options` before compiling: `cpu` is `host` or a CPU LLVM's x86
/// backend knows, and `features` is `host` or a comma-separated list of
/// +name/-name features it knows (LLVM would only warn and ignore them).
llvm::Error checkCPUTarget(const CPUTargetOptions &options);

/// The TargetMachine for `options`: PIC, small code model.
llvm::Expected<std::unique_ptr<llvm::TargetMachine>>
createCPUTargetMachine(const CPUTargetOptions &options);

/// Writes `module` as an ELF object file to `path`.
llvm::Error writeObjectFile(llvm::Module &module,
                            const CPUTargetOptions &options, StringRef path);

/// Where a kernel's tensors live: the DLPack device its entry point takes.
enum class KernelDevice { CPU, CUDA };

/// The C header declaring the entry point `name` and its error codes. A CUDA
/// entry point also takes the CUstream to queue on.
std::string emitCHeader(const KernelSignature &signature, StringRef name,
                        StringRef description,
                        KernelDevice device = KernelDevice::CPU);

/// Flags a user links the object with (e.g. "-lm").
SmallVector<std::string> kernelLinkFlags();

} // namespace mlir::attn

#endif // ATTN_TARGET_CPUKERNEL_H
