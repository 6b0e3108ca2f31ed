// RUN: attn-opt %s --attn-convert-to-gpu="mma=true mma-query-in-shared=true" --canonicalize --cse | FileCheck %s
// RUN: attn-opt %s --attn-convert-to-gpu="mma=true" --canonicalize --cse | FileCheck %s --check-prefix=REGS

// mma-query-in-shared: the 16-row warps keep Q in shared memory too, after K
// and V (64-key tiles of 17,408 bytes each; Q's 64 x 128 f16 as 32
// fragments of 32 lanes' 4 registers, 16,384 bytes): 51,200 bytes of
// dynamic shared memory. Each lane stores its 8 fragments once and a tile
// reads them back one 16-wide step of D at a time (8 loads in the whole
// tiles' path, 8 in the partial ones'). The partial tiles keep their per-score test (no
// padding MMA: that is for 32-row warps).
// CHECK-LABEL: func.func @query_in_shared
// CHECK: gpu.launch_func @query_in_shared_kernels::@query_in_shared blocks in (%c4, %c2, %c1) threads in (%c128, %c1, %c1) dynamic_shared_memory_size %c51200_i32
// CHECK-LABEL: gpu.func @query_in_shared(
// CHECK-SAME: attn.block_rows = 64
// CHECK-NOT: arith.constant 0xFC00 : f16
// CHECK: %[[SHARED:.+]] = gpu.dynamic_shared_memory
// CHECK: %[[Q:.+]] = memref.view %[[SHARED]][%c34816][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<32x32x4xi32, #gpu.address_space<workgroup>>
// CHECK-COUNT-8: vector.store %{{.+}}, %[[Q]][%{{.+}}, %{{.+}}, %c0] {alignment = 16 : i64} : memref<32x32x4xi32, #gpu.address_space<workgroup>>, vector<4xi32>
// CHECK-NOT: vector.store %{{.+}}, %[[Q]]
// CHECK: scf.for
// CHECK-COUNT-16: vector.load %[[Q]]
// CHECK-NOT: vector.load %[[Q]]
// CHECK-NOT: vector.store %{{.+}}, %[[Q]]
// CHECK: gpu.return

// Without it, Q's fragments stay in registers: no i32 view, K and V in
// static shared memory.
// REGS-LABEL: func.func @query_in_shared
// REGS-NOT: dynamic_shared_memory_size
// REGS-LABEL: gpu.func @query_in_shared(
// REGS-NOT: xi32, #gpu.address_space<workgroup>>
// REGS: gpu.return
func.func @query_in_shared(%q: tensor<1x2x256x128xf16>, %k: tensor<1x2x256x128xf16>,
                           %v: tensor<1x2x256x128xf16>, %o: tensor<1x2x256x128xf16>)
    -> tensor<1x2x256x128xf16> {
  %0 = attn.attention ins(%q, %k, %v : tensor<1x2x256x128xf16>,
                          tensor<1x2x256x128xf16>, tensor<1x2x256x128xf16>)
      outs(%o : tensor<1x2x256x128xf16>) -> tensor<1x2x256x128xf16>
  return %0 : tensor<1x2x256x128xf16>
}
