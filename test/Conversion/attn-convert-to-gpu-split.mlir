// RUN: attn-opt %s --attn-convert-to-gpu="mma=true pack-gqa=false" --canonicalize --cse --split-input-file | FileCheck %s
// RUN: attn-opt %s --attn-convert-to-gpu="mma=true kv-splits=1 pack-gqa=false" --split-input-file | FileCheck %s --check-prefix=NOSPLIT
// RUN: attn-opt %s --attn-convert-to-gpu="kv-splits=3 pack-gqa=false" --canonicalize --cse --split-input-file | FileCheck %s --check-prefix=FORCED
// RUN: not attn-opt %s --attn-convert-to-gpu="kv-splits=33" --split-input-file 2>&1 | FileCheck %s --check-prefix=BADSPLITS

// (GQA packing, off here, is attn-convert-to-gpu-pack.mlir's.)
// Split-K for decoding. One f16 query row per (batch, head): blocks of one
// warp (16 rows), and 4 of them would leave a GPU idle, so 16 blocks (264 /
// 4 rounded up is 66, 4096 keys are 16 runs of 4 tiles of 64) share each
// query block's keys.
// Each writes its rows' partial output and lse (f32) into its slice of two
// scratch buffers, sized per row of q (1 x 4 x 1): 16 x 64 and 16 floats.
// The combine kernel, a warp per row and 4 rows a block, merges them into
// out and lse.
// CHECK-LABEL: func.func @decode
// CHECK-SAME: (%{{[a-z0-9_]+}}: memref<1x4x1x64xf16>, %{{[a-z0-9_]+}}: memref<1x1x4096x64xf16>, %{{[a-z0-9_]+}}: memref<1x1x4096x64xf16>, %{{[a-z0-9_]+}}: memref<1x4x1x64xf16>, %{{[a-z0-9_]+}}: memref<1x4x1xf32>)
// CHECK-DAG: %[[C1:.+]] = arith.constant 1 : index
// CHECK-DAG: %[[C4:.+]] = arith.constant 4 : index
// CHECK-DAG: %[[C16:.+]] = arith.constant 16 : index
// CHECK-DAG: %[[C32:.+]] = arith.constant 32 : index
// CHECK-DAG: %[[C128:.+]] = arith.constant 128 : index
// CHECK-DAG: %[[C4096:.+]] = arith.constant 4096 : index
// CHECK-DAG: %[[LF:.+]] = memref.cast %{{.+}} : memref<4xf32> to memref<?xf32>
// CHECK-DAG: %[[C64:.+]] = arith.constant 64 : index
// CHECK: %[[PARTIAL:.+]] = gpu.alloc (%[[C4096]]) {attn.rows_of = 0 : i64, attn.width = 1024 : i64} : memref<?xf32>
// CHECK: %[[PARTIALLSE:.+]] = gpu.alloc (%[[C64]]) {attn.rows_of = 0 : i64, attn.width = 16 : i64} : memref<?xf32>
// CHECK: gpu.launch_func @decode_kernels::@decode blocks in (%[[C16]], %[[C4]], %[[C1]]) threads in (%[[C32]], %[[C1]], %[[C1]]) args({{.*}}, %[[PARTIAL]] : memref<?xf32>, %[[PARTIALLSE]] : memref<?xf32>, %[[C1]] : index, %[[C1]] : index, %[[C4096]] : index, %[[C4]] : index, %[[C1]] : index) {attn.alignments = array<i64: 4, 16, 16, 1, 1>, attn.block_rows = 16 : i64, attn.kv_splits = 16 : i64, attn.kv_tile = 64 : i64, attn.tensor_cores}
// CHECK-NEXT: gpu.launch_func @decode_kernels::@decode_combine blocks in (%[[C1]], %[[C4]], %[[C1]]) threads in (%[[C128]], %[[C1]], %[[C1]]) args(%[[PARTIAL]] : memref<?xf32>, %[[PARTIALLSE]] : memref<?xf32>, %{{.+}} : memref<?xf16>, %[[LF]] : memref<?xf32>, {{.*}}) {attn.block_rows = 4 : i64}
// CHECK-NEXT: gpu.dealloc %[[PARTIAL]]
// CHECK-NEXT: gpu.dealloc %[[PARTIALLSE]]
// The attention kernel writes f32 partial outputs and an lse.
// CHECK: gpu.func @decode(%{{.+}}: memref<?xf16>, %{{.+}}: memref<?xf16>, %{{.+}}: memref<?xf16>, %{{.+}}: memref<?xf32>, %{{.+}}: memref<?xf32>, %{{.+}}: index,
// Block x of 16 per query block takes split x mod 16 (from the last).
// CHECK: %[[GRID:.+]] = gpu.grid_dim x
// CHECK: %[[LAST:.+]] = arith.subi %[[GRID]]
// CHECK: %[[FROMLAST:.+]] = arith.subi %[[LAST]]
// CHECK: %[[SPLIT:.+]] = arith.remui %[[FROMLAST]], %[[K16:.+]] : index
// CHECK: arith.divui %[[FROMLAST]], %[[K16]] : index
// Its run of whole 64-key tiles: ceil(ceil(keys / 16) / 64) 64 keys.
// CHECK: %[[PER:.+]] = arith.ceildivui %{{.+}}, %[[K16]] : index
// CHECK: %[[TILES:.+]] = arith.ceildivui %[[PER]], %{{.+}} : index
// CHECK: %[[SPAN:.+]] = arith.muli %[[TILES]], %{{.+}} : index
// CHECK: arith.muli %[[SPLIT]], %[[SPAN]] : index
// CHECK: gpu.func @decode_combine(%{{.+}}: memref<?xf32>, %{{.+}}: memref<?xf32>, %{{.+}}: memref<?xf16>, %{{.+}}: memref<?xf32>, %{{.+}}: index, %{{.+}}: index, %{{.+}}: index, %{{.+}}: index, %{{.+}}: index)
// CHECK-SAME: attn.block_rows = 4 : i64, known_block_size = array<i32: 128, 1, 1>
// The splits' lse, max, and the weights exp2((lse_s - max) log2 e).
// CHECK-COUNT-16: memref.load %{{.+}}[%{{.+}}] : memref<?xf32>
// CHECK-COUNT-16: math.exp2
// CHECK: scf.for
// CHECK-COUNT-16: arith.mulf
// CHECK: arith.truncf %{{.+}} : f32 to f16
// NOSPLIT-LABEL: func.func @decode
// NOSPLIT-NOT: gpu.alloc
// NOSPLIT-NOT: _combine
// NOSPLIT: return
// FORCED-LABEL: func.func @decode
// FORCED: attn.kv_splits = 3 : i64
// FORCED: @decode_combine
// BADSPLITS: error: attn-convert-to-gpu: kv-splits must be in [0, 32], got 33
func.func @decode(%q: tensor<1x4x1x64xf16>, %k: tensor<1x1x4096x64xf16>,
                  %v: tensor<1x1x4096x64xf16>, %o: tensor<1x4x1x64xf16>,
                  %l: tensor<1x4x1xf32>)
    -> (tensor<1x4x1x64xf16>, tensor<1x4x1xf32>) {
  %0, %1 = attn.attention ins(%q, %k, %v : tensor<1x4x1x64xf16>,
                              tensor<1x1x4096x64xf16>, tensor<1x1x4096x64xf16>)
      outs(%o : tensor<1x4x1x64xf16>) lse(%l : tensor<1x4x1xf32>)
      -> tensor<1x4x1x64xf16>, tensor<1x4x1xf32>
  return %0, %1 : tensor<1x4x1x64xf16>, tensor<1x4x1xf32>
}

// -----

// Left whole: 100 query rows (2 blocks of 64), or a dynamic key length.
// CHECK-LABEL: func.func @prefill
// CHECK-NOT: gpu.alloc
// CHECK: return
// CHECK-LABEL: func.func @dynamic
// CHECK-NOT: gpu.alloc
// CHECK: return
// FORCED-LABEL: func.func @prefill
// FORCED: attn.kv_splits = 3 : i64
// FORCED: @prefill_combine
func.func @prefill(%q: tensor<1x4x100x64xf16>, %k: tensor<1x4x4096x64xf16>,
                   %v: tensor<1x4x4096x64xf16>, %o: tensor<1x4x100x64xf16>)
    -> tensor<1x4x100x64xf16> {
  %0 = attn.attention ins(%q, %k, %v : tensor<1x4x100x64xf16>,
                          tensor<1x4x4096x64xf16>, tensor<1x4x4096x64xf16>)
      outs(%o : tensor<1x4x100x64xf16>) -> tensor<1x4x100x64xf16>
  return %0 : tensor<1x4x100x64xf16>
}
func.func @dynamic(%q: tensor<1x4x1x64xf16>, %k: tensor<1x4x?x64xf16>,
                   %v: tensor<1x4x?x64xf16>, %o: tensor<1x4x1x64xf16>)
    -> tensor<1x4x1x64xf16> {
  %0 = attn.attention ins(%q, %k, %v : tensor<1x4x1x64xf16>,
                          tensor<1x4x?x64xf16>, tensor<1x4x?x64xf16>)
      outs(%o : tensor<1x4x1x64xf16>) -> tensor<1x4x1x64xf16>
  return %0 : tensor<1x4x1x64xf16>
}
