// RUN: attn-opt %s --split-input-file --attn-convert-to-gpu="mma=true mma-warp-rows=32" --canonicalize --cse | FileCheck %s
// RUN: not attn-opt %s --attn-convert-to-gpu="mma=true mma-warp-rows=24" 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not attn-opt %s --attn-convert-to-gpu="mma=true mma-warp-rows=32 mma-block-rows=48" 2>&1 | FileCheck %s --check-prefix=ROWS

// Warps of 32 rows: two m16n8k16 row blocks a warp, 4 warps (128 threads)
// a block of 128 rows. At D = 128 the Q fragments of a warp's two row
// blocks would take 64 registers, so they go to shared memory after K and
// V (32-key tiles past D = 64, where 64 keys spilled: 8,704 bytes each; Q's
// 128 x 128 f16 as 64 fragments of 32 lanes' 4 registers): 50,176 bytes of
// dynamic shared memory. Each lane stores its 16 fragments once; a tile
// reads them back a 16-wide step of D at a time (one per row block), and
// each x4 ldmatrix of K (two 8-key blocks) feeds 4 MMAs. In the partial tile one more MMA per key block and
// row block adds 0 or -inf to the scores of its keys: A's column 0 all ones
// (held by lanes 0, 4, ...) times a B row of -inf past the keys' end.
// CHECK-LABEL: func.func @shared_query
// CHECK: gpu.launch_func @shared_query_kernels::@shared_query blocks in (%c2, %c2, %c1) threads in (%c128, %c1, %c1) dynamic_shared_memory_size %c50176_i32
// CHECK-LABEL: gpu.func @shared_query(
// CHECK-SAME: attn.block_rows = 128
// CHECK-DAG: %[[ONE:.+]] = arith.constant 1.000000e+00 : f16
// CHECK-DAG: %[[NEG_INF:.+]] = arith.constant 0xFC00 : f16
// CHECK-DAG: %[[ZERO:.+]] = arith.constant 0.000000e+00 : f16
// CHECK: %[[SHARED:.+]] = gpu.dynamic_shared_memory
// CHECK: %[[K:.+]] = memref.view %[[SHARED]][%c0][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<32x136xf16, #gpu.address_space<workgroup>>
// CHECK: memref.view %[[SHARED]][%c8704][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<32x136xf16, #gpu.address_space<workgroup>>
// CHECK: %[[Q:.+]] = memref.view %[[SHARED]][%c17408][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<64x32x4xi32, #gpu.address_space<workgroup>>
// CHECK-COUNT-16: vector.store %{{.+}}, %[[Q]][%{{.+}}, %{{.+}}, %c0] {alignment = 16 : i64} : memref<64x32x4xi32, #gpu.address_space<workgroup>>, vector<4xi32>
// CHECK-NOT: vector.store %{{.+}}, %[[Q]]
// CHECK: %[[LEAD_ONE:.+]] = arith.select %{{.+}}, %[[ONE]], %[[ZERO]] : f16
// CHECK: %[[ONES:.+]] = vector.from_elements %[[LEAD_ONE]], %[[ZERO]], %[[LEAD_ONE]], %[[ZERO]], %[[ZERO]], %[[ZERO]], %[[ZERO]], %[[ZERO]] : vector<4x2xf16>
// CHECK: scf.for
// CHECK: gpu.barrier
// CHECK: vector.load %[[Q]]
// CHECK-NEXT: vector.extract
// CHECK: vector.load %[[Q]]
// CHECK: nvgpu.ldmatrix %[[K]][%{{.+}}, %{{.+}}] {numTiles = 4 : i32, transpose = false}
// CHECK-COUNT-4: nvgpu.mma.sync
// CHECK-NOT: vector.store %{{.+}}, %[[Q]]
// CHECK: %[[BIAS:.+]] = arith.select %{{.+}}, %[[NEG_INF]], %[[ZERO]] : f16
// CHECK-NEXT: %[[BIAS_ROW:.+]] = vector.from_elements %[[BIAS]], %[[ZERO]], %[[ZERO]], %[[ZERO]] : vector<2x2xf16>
// CHECK-NEXT: nvgpu.mma.sync(%[[ONES]], %[[BIAS_ROW]], %{{.+}})
// CHECK-NEXT: nvgpu.mma.sync(%[[ONES]], %[[BIAS_ROW]], %{{.+}})
// CHECK: gpu.return
func.func @shared_query(%q: tensor<1x2x256x128xf16>, %k: tensor<1x2x256x128xf16>,
                        %v: tensor<1x2x256x128xf16>, %o: tensor<1x2x256x128xf16>)
    -> tensor<1x2x256x128xf16> {
  %0 = attn.attention ins(%q, %k, %v : tensor<1x2x256x128xf16>,
                          tensor<1x2x256x128xf16>, tensor<1x2x256x128xf16>)
      outs(%o : tensor<1x2x256x128xf16>) -> tensor<1x2x256x128xf16>
  return %0 : tensor<1x2x256x128xf16>
}

// -----

// At D = 64 the two row blocks' fragments take 32 registers: Q stays in
// them, K and V tiles in static shared memory, no Q buffer.
// CHECK-LABEL: func.func @register_query
// CHECK: gpu.launch_func @register_query_kernels::@register_query blocks in (%c3, %c2, %c1) threads in (%c128, %c1, %c1) args(
// CHECK-LABEL: gpu.func @register_query(
// CHECK-SAME: workgroup(%{{.+}} : memref<64x72xbf16, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}, %{{.+}} : memref<64x72xbf16, #gpu.address_space<workgroup>> {llvm.align = 16 : i64})
// CHECK-SAME: attn.block_rows = 128
// CHECK-NOT: xi32, #gpu.address_space<workgroup>>
// CHECK: gpu.return
func.func @register_query(%q: tensor<1x2x300x64xbf16>, %k: tensor<1x2x300x64xbf16>,
                          %v: tensor<1x2x300x64xbf16>, %o: tensor<1x2x300x64xbf16>)
    -> tensor<1x2x300x64xbf16> {
  %0 = attn.attention ins(%q, %k, %v : tensor<1x2x300x64xbf16>,
                          tensor<1x2x300x64xbf16>, tensor<1x2x300x64xbf16>)
      outs(%o : tensor<1x2x300x64xbf16>) -> tensor<1x2x300x64xbf16>
  return %0 : tensor<1x2x300x64xbf16>
}

// -----

// Decoding would compute rows past Sq in warps of 32: it keeps a warp of 16
// rows a block (and splits the keys).
// CHECK-LABEL: func.func @decode
// CHECK: gpu.launch_func @decode_kernels::@decode blocks in (%{{.+}}, %c2, %c1) threads in (%c32, %c1, %c1)
// CHECK-LABEL: gpu.func @decode(
// CHECK-SAME: attn.block_rows = 16
func.func @decode(%q: tensor<1x2x1x128xf16>, %k: tensor<1x2x4096x128xf16>,
                  %v: tensor<1x2x4096x128xf16>, %o: tensor<1x2x1x128xf16>)
    -> tensor<1x2x1x128xf16> {
  %0 = attn.attention ins(%q, %k, %v : tensor<1x2x1x128xf16>,
                          tensor<1x2x4096x128xf16>, tensor<1x2x4096x128xf16>)
      outs(%o : tensor<1x2x1x128xf16>) -> tensor<1x2x1x128xf16>
  return %0 : tensor<1x2x1x128xf16>
}

// -----

// Packed GQA heads keep the rows that hold them: 4 heads of 16 rows, 64
// rows in 2 warps of 32.
// CHECK-LABEL: func.func @packed
// CHECK: gpu.launch_func @packed_kernels::@packed blocks in (%{{.+}}, %c2, %c1) threads in (%c64, %c1, %c1)
// CHECK-SAME: attn.block_rows = 16 : i64
// CHECK-SAME: attn.packed_heads = 4 : i64
func.func @packed(%q: tensor<1x8x16x64xf16>, %k: tensor<1x2x512x64xf16>,
                  %v: tensor<1x2x512x64xf16>, %o: tensor<1x8x16x64xf16>)
    -> tensor<1x8x16x64xf16> {
  %0 = attn.attention ins(%q, %k, %v : tensor<1x8x16x64xf16>,
                          tensor<1x2x512x64xf16>, tensor<1x2x512x64xf16>)
      outs(%o : tensor<1x8x16x64xf16>) -> tensor<1x8x16x64xf16>
  return %0 : tensor<1x8x16x64xf16>
}

// BAD: error: attn-convert-to-gpu: mma-warp-rows must be 16 or 32, got 24
// ROWS: error: attn-convert-to-gpu: the tensor-core kernel takes a multiple of 32 query rows per block up to 128 (a warp per 32), got 48
