// RUN: attn-opt %s --split-input-file --attn-convert-to-gpu="mma=true mma-warp-rows=32" --canonicalize --cse | FileCheck %s

// Wide heads (D or Dv past 128, up to 256) on tensor cores. Their output
// fragments take up to 128 registers a lane, so the kernel keeps warps of
// 16 rows (32 asked here), blocks of 4 warps even when decoding, and 32-key
// tiles; Q, whose fragments would take 64 registers, stays in shared
// memory. At D = Dv = 256: K and V tiles of 32 x 264 (rows padded by 16
// bytes), Q's 64 x 256 f16 as 64 fragments of 32 lanes' 4 registers, 66,560
// bytes of dynamic shared memory.
// CHECK-LABEL: func.func @wide
// CHECK: gpu.launch_func @wide_kernels::@wide blocks in (%c4, %c2, %c1) threads in (%c128, %c1, %c1) dynamic_shared_memory_size %c66560_i32 {{.*}} {attn.alignments = array<i64: 4, 16, 16, 4>, attn.block_rows = 64 : i64, attn.kv_tile = 32 : i64, attn.tensor_cores}
// CHECK-LABEL: gpu.func @wide(
// CHECK-SAME: attn.block_rows = 64
// CHECK: %[[SHARED:.+]] = gpu.dynamic_shared_memory
// CHECK: %[[K:.+]] = memref.view %[[SHARED]][%c0][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<32x264xf16, #gpu.address_space<workgroup>>
// CHECK: %[[V:.+]] = memref.view %[[SHARED]][%c16896][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<32x264xf16, #gpu.address_space<workgroup>>
// CHECK: memref.view %[[SHARED]][%c33792][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<64x32x4xi32, #gpu.address_space<workgroup>>
// CHECK: scf.for
// CHECK: nvgpu.ldmatrix %[[K]]
// CHECK: nvgpu.mma.sync
// CHECK: nvgpu.ldmatrix %[[V]]{{.+}} {numTiles = 4 : i32, transpose = true}
// CHECK: nvgpu.mma.sync
// CHECK: gpu.return
func.func @wide(%q: tensor<1x2x256x256xf16>, %k: tensor<1x2x256x256xf16>,
                %v: tensor<1x2x256x256xf16>, %o: tensor<1x2x256x256xf16>)
    -> tensor<1x2x256x256xf16> {
  %0 = attn.attention ins(%q, %k, %v : tensor<1x2x256x256xf16>,
                          tensor<1x2x256x256xf16>, tensor<1x2x256x256xf16>)
      outs(%o : tensor<1x2x256x256xf16>) -> tensor<1x2x256x256xf16>
  return %0 : tensor<1x2x256x256xf16>
}

// -----

// Decoding: the 4 packed GQA heads of one query row take a block of 4 warps
// (16 rows per head), not one warp, whose share of a tile's copies spilled;
// split-K over the 500 keys.
// CHECK-LABEL: func.func @wide_decode
// CHECK: gpu.launch_func @wide_decode_kernels::@wide_decode blocks in (%c3, %c1, %c1) threads in (%c128, %c1, %c1) dynamic_shared_memory_size %c66560_i32
// CHECK: gpu.launch_func @wide_decode_kernels::@wide_decode_combine
// CHECK-LABEL: gpu.func @wide_decode(
// CHECK-SAME: attn.block_rows = 16
// CHECK: nvvm.mma.sync
func.func @wide_decode(%q: tensor<1x4x1x256xbf16>, %k: tensor<1x1x500x256xbf16>,
                       %v: tensor<1x1x500x256xbf16>, %o: tensor<1x4x1x256xbf16>)
    -> tensor<1x4x1x256xbf16> {
  %0 = attn.attention ins(%q, %k, %v : tensor<1x4x1x256xbf16>,
                          tensor<1x1x500x256xbf16>, tensor<1x1x500x256xbf16>)
      outs(%o : tensor<1x4x1x256xbf16>) -> tensor<1x4x1x256xbf16>
  return %0 : tensor<1x4x1x256xbf16>
}

// -----

// D = 192, Dv = 128 (DeepSeek's MLA prefill shape), causal: 32-key tiles
// and Q fit the 48 KiB of static shared memory; the exact FMA kernel
// follows.
// CHECK-LABEL: func.func @mla
// CHECK: gpu.launch_func @mla_kernels::@mla blocks in (%c4, %c2, %c1) threads in (%c128, %c1, %c1) args(
// CHECK: gpu.launch_func @mla_kernels::@mla_exact
// CHECK-LABEL: gpu.func @mla(
// CHECK-SAME: workgroup(%{{.+}} : memref<32x200xf16, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}, %{{.+}} : memref<32x136xf16, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}, %{{.+}} : memref<48x32x4xi32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64})
// CHECK: nvgpu.mma.sync
// CHECK-LABEL: gpu.func @mla_exact(
func.func @mla(%q: tensor<1x2x256x192xf16>, %k: tensor<1x2x256x192xf16>,
               %v: tensor<1x2x256x128xf16>, %o: tensor<1x2x256x128xf16>)
    -> tensor<1x2x256x128xf16> {
  %0 = attn.attention ins(%q, %k, %v : tensor<1x2x256x192xf16>,
                          tensor<1x2x256x192xf16>, tensor<1x2x256x128xf16>)
      outs(%o : tensor<1x2x256x128xf16>)
      {structured_mask = #attn.causal<top_left>} -> tensor<1x2x256x128xf16>
  return %0 : tensor<1x2x256x128xf16>
}

// -----

// A wide head under a mask beyond bands (here a mask tensor) takes the FMA
// kernel: the tensor-core kernel or its exact companion spilled there. Its
// launch has no attn.tensor_cores (attn-compile's manifest: "mma": false).
// CHECK-LABEL: func.func @wide_masked
// CHECK: gpu.launch_func @wide_masked_kernels::@wide_masked blocks in (%c2, %c2, %c1) threads in (%c256, %c1, %c1) args({{.*}}) {attn.alignments = array<i64: 8, 8, 8, 1, 8>, attn.block_rows = 32 : i64, attn.kv_tile = 24 : i64}{{$}}
// CHECK-NOT: mma.sync
// CHECK-NOT: _exact
func.func @wide_masked(%q: tensor<1x2x64x256xf16>, %k: tensor<1x2x64x256xf16>,
                       %v: tensor<1x2x64x256xf16>, %m: tensor<64x64xi1>,
                       %o: tensor<1x2x64x256xf16>) -> tensor<1x2x64x256xf16> {
  %0 = attn.attention ins(%q, %k, %v : tensor<1x2x64x256xf16>,
                          tensor<1x2x64x256xf16>, tensor<1x2x64x256xf16>)
      mask(%m : tensor<64x64xi1>) outs(%o : tensor<1x2x64x256xf16>)
      -> tensor<1x2x64x256xf16>
  return %0 : tensor<1x2x64x256xf16>
}
