// RUN: attn-opt %s --attn-cpu-pipeline="cpu=skylake-avx512 features=+avx512f,+fma" | FileCheck %s
// RUN: attn-opt %s --attn-cpu-pipeline | FileCheck %s --check-prefix=HOST
// RUN: attn-opt %s --attn-cpu-pipeline="fused=true kv-tile-size=4" | FileCheck %s --check-prefix=FUSED
// RUN: attn-opt %s --attn-cpu-pipeline="fused=false" | FileCheck %s --check-prefix=NAIVE
// RUN: attn-opt %s --attn-cpu-pipeline="ukernels=false" | FileCheck %s --check-prefix=LINALG

// From attn on tensors to the LLVM dialect in one pipeline: every function
// is an llvm.func carrying the target CPU and features, the parallel loops
// are OpenMP work-sharing loops (one level: what a tile allocates and runs
// stays on its thread), each fused tile step calls the micro-kernel
// through its C interface (attn-compile links the C routine in), and
// nothing of the higher dialects is left.

// CHECK-LABEL: llvm.func private @attn_uk_online_step_f32(
// CHECK-SAME: llvm.emit_c_interface
// CHECK: llvm.call @_mlir_ciface_attn_uk_online_step_f32(
// CHECK-SAME: (!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, f32, i64, i64, i64, i64, i64, i64) -> ()
// CHECK: llvm.func @_mlir_ciface_attn_uk_online_step_f32(
// CHECK-LABEL: llvm.func @kernel(
// CHECK-SAME: target_cpu = "skylake-avx512"
// CHECK-SAME: target_features = #llvm.target_features<["+avx512f", "+fma"]>
// CHECK: omp.parallel
// CHECK: omp.wsloop
// CHECK: llvm.call @malloc
// CHECK-NOT: omp.parallel
// CHECK: llvm.call @attn_uk_online_step_f32(
// CHECK: llvm.call @free
// CHECK-NOT: func.func
// CHECK-NOT: linalg.
// CHECK-NOT: memref.
// CHECK-NOT: attn.

// A private kernel writes its destination in place, so bufferization drops
// its result: it returns nothing (attn-compile relies on this).
// CHECK-LABEL: llvm.func @private_kernel(
// CHECK-NOT: -> !llvm.struct
// CHECK-SAME: {
// CHECK: llvm.return{{$}}

// fused=true (the default) lowers the online-softmax loop over key tiles: the 4-key step
// is the loop's stride, and no [Sq, Sk] = 8x8 buffer is allocated.
// FUSED-LABEL: llvm.func @kernel(
// FUSED: llvm.mlir.constant(4 : index) : i64
// FUSED: omp.parallel
// FUSED-NOT: llvm.mlir.constant(256 : index)
// FUSED: llvm.return

// fused=false keeps the naive reference lowering, which materializes the
// [B, Hkv, G, Sq, Sk] = 1x2x2x8x8 = 256-element scores.
// NAIVE-LABEL: llvm.func @kernel(
// NAIVE: llvm.mlir.constant(256 : index) : i64
// NAIVE: llvm.return

// ukernels=false lowers the tile steps through linalg: the exponential is an
// LLVM intrinsic and no micro-kernel is called.
// LINALG-NOT: attn_uk_online_step_f32
// LINALG-LABEL: llvm.func @kernel(
// LINALG: llvm.intr.exp
// LINALG-NOT: attn_uk_online_step_f32

// "host" resolves to the machine's CPU.
// HOST-LABEL: llvm.func @kernel(
// HOST-NOT: target_cpu = "host"
// HOST-SAME: target_cpu = "{{[a-z0-9-]+}}"

func.func @kernel(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x8x16xf32>,
                  %o: tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32> {
  %0 = attn.attention ins(%q, %k, %k : tensor<1x4x8x16xf32>,
                          tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
      outs(%o : tensor<1x4x8x16xf32>)
      {structured_mask = #attn.causal<top_left>} -> tensor<1x4x8x16xf32>
  return %0 : tensor<1x4x8x16xf32>
}

func.func private @private_kernel(%q: tensor<1x4x8x16xf32>,
    %o: tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32> {
  %0 = attn.attention ins(%q, %q, %q : tensor<1x4x8x16xf32>,
                          tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>)
      outs(%o : tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32>
  return %0 : tensor<1x4x8x16xf32>
}
