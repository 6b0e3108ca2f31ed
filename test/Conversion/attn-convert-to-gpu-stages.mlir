// RUN: attn-opt %s --attn-convert-to-gpu="mma=true kv-stages=2" --canonicalize --cse | FileCheck %s
// RUN: attn-opt %s --attn-convert-to-gpu="mma=true" --canonicalize --cse | FileCheck %s --check-prefix=ONE
// RUN: not attn-opt %s --attn-convert-to-gpu="mma=true kv-stages=3" 2>&1 | FileCheck %s --check-prefix=BAD

// Double-buffered K and V on tensor cores: at D = 128 two 64-key tiles of K
// and two of V (rows padded to 136), [2, 64, 136] each, 68 KiB in all: more
// than a block declares statically, so they are views of dynamic shared
// memory (V after K) and the launch asks for its 69,632 bytes (a launcher
// opts in beyond 48 KiB). The tile loop carries the buffer its next tile
// lands in (0 first). A tile waits for its copies, then one barrier (every
// warp is done with the tile before, whose buffers the next tile's K and V
// now fill), and both copies are in flight while the whole tile runs from
// the other buffers: no other barrier.
// CHECK-LABEL: func.func @causal
// CHECK: gpu.launch_func @causal_kernels::@causal {{.*}} dynamic_shared_memory_size %c69632_i32
// CHECK: gpu.launch_func @causal_kernels::@causal_exact
// CHECK-NOT: dynamic_shared_memory_size
// CHECK-SAME: args(
// CHECK-LABEL: gpu.func @causal(
// CHECK-NOT: workgroup(
// CHECK-SAME: kernel attributes
// CHECK: %[[SHARED:.+]] = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
// CHECK-NEXT: %[[K:.+]] = memref.view %[[SHARED]][%c0][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<2x64x136xf16, #gpu.address_space<workgroup>>
// CHECK-NEXT: %[[V:.+]] = memref.view %[[SHARED]][%c34816][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<2x64x136xf16, #gpu.address_space<workgroup>>
// CHECK: nvgpu.device_async_copy %{{.+}}, %[[K]][%[[C0:.+]], %{{.+}}, %{{.+}}]
// CHECK: nvgpu.device_async_copy %{{.+}}, %[[V]][%[[C0]], %{{.+}}, %{{.+}}]
// CHECK: scf.for %{{.+}} = %{{.+}} to %{{.+}} step %c64 iter_args({{.*}}, %[[SLOT:.+]] = %[[C0]]) -> ({{.*}}, index)
// CHECK: %[[OTHER:.+]] = arith.subi %c1, %[[SLOT]] : index
// CHECK-NEXT: nvvm.cp.async.wait.group 0
// CHECK-NEXT: gpu.barrier
// CHECK: nvgpu.device_async_copy %{{.+}}, %[[K]][%[[OTHER]], %{{.+}}, %{{.+}}]
// CHECK: nvvm.cp.async.commit.group
// CHECK: nvgpu.device_async_copy %{{.+}}, %[[V]][%[[OTHER]], %{{.+}}, %{{.+}}]
// CHECK: nvvm.cp.async.commit.group
// CHECK-NOT: gpu.barrier
// CHECK: nvgpu.ldmatrix %[[K]][%[[SLOT]],
// CHECK-NOT: gpu.barrier
// CHECK: nvgpu.ldmatrix %[[V]][%[[SLOT]],
// CHECK-NOT: gpu.barrier
// CHECK: scf.yield {{.*}}, %[[OTHER]] : {{.*}}, index
// With one K and one V buffer (the default), 64-key tiles and two barriers
// a tile: V copied after the first, the next K after the second.
// ONE-LABEL: gpu.func @causal
// ONE-SAME: workgroup(%[[K:.+]] : memref<64x136xf16, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}, %[[V:.+]] : memref<64x136xf16, #gpu.address_space<workgroup>> {llvm.align = 16 : i64})
// ONE: scf.for %{{.+}} = %{{.+}} to %{{.+}} step %c64
// ONE: gpu.barrier
// ONE: nvgpu.device_async_copy %{{.+}}, %[[V]][
// ONE: nvgpu.ldmatrix %[[K]]
// ONE: gpu.barrier
// ONE: nvgpu.device_async_copy %{{.+}}, %[[K]][
// ONE: nvgpu.ldmatrix %[[V]]
// BAD: error: attn-convert-to-gpu: kv-stages must be 1 or 2, got 3
func.func @causal(%q: tensor<1x2x256x128xf16>, %k: tensor<1x2x256x128xf16>,
                  %v: tensor<1x2x256x128xf16>, %o: tensor<1x2x256x128xf16>)
    -> tensor<1x2x256x128xf16> {
  %0 = attn.attention ins(%q, %k, %v : tensor<1x2x256x128xf16>,
                          tensor<1x2x256x128xf16>, tensor<1x2x256x128xf16>)
      outs(%o : tensor<1x2x256x128xf16>)
      {structured_mask = #attn.causal<top_left>} -> tensor<1x2x256x128xf16>
  return %0 : tensor<1x2x256x128xf16>
}
