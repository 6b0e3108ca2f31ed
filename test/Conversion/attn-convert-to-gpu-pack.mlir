// RUN: attn-opt %s --attn-convert-to-gpu="mma=true" --canonicalize --cse --split-input-file | FileCheck %s
// RUN: attn-opt %s --attn-convert-to-gpu="mma=true pack-gqa=false" --canonicalize --cse --split-input-file | FileCheck %s --check-prefix=OFF
// RUN: attn-opt %s --attn-convert-to-gpu --canonicalize --cse --split-input-file | FileCheck %s --check-prefix=FMA

// GQA packing for decoding: the 4 query heads of each of the 2 KV heads
// share a block of 16 rows (3 query rows of each, row p holding query row
// p / 4 of query head 4 kvHead + p % 4), so the grid's y is the 2 KV heads
// and each key tile is read once for 4 heads. attn.block_rows counts the
// query rows of each head: 16 / 4. Split-K then counts 2 x 2 blocks.
// CHECK-LABEL: func.func @decode
// CHECK-DAG: %[[C2:.+]] = arith.constant 2 : index
// CHECK-DAG: %[[C8:.+]] = arith.constant 8 : index
// CHECK-DAG: %[[C32:.+]] = arith.constant 32 : index
// CHECK: gpu.launch_func @decode_kernels::@decode blocks in (%[[C2]], %[[C2]], %[[C2]]) threads in (%[[C32]], {{.*}}) {attn.alignments = array<i64: 4, 16, 16, 1, 1>, attn.block_rows = 4 : i64, attn.kv_splits = 2 : i64, attn.kv_tile = 64 : i64, attn.packed_heads = 4 : i64, attn.tensor_cores}
// The combine kernel stays a warp per row of each query head.
// CHECK: gpu.launch_func @decode_kernels::@decode_combine blocks in (%{{.+}}, %[[C8]], %[[C2]])
// CHECK-SAME: {attn.block_rows = 4 : i64}
// CHECK: gpu.func @decode
// CHECK-SAME: attn.block_rows = 4 : i64, known_block_size = array<i32: 32, 1, 1>
// Grid y is the KV head; the block's first query head is 4 times it.
// CHECK: %[[Y:.+]] = gpu.block_id y
// CHECK: %[[HEAD:.+]] = arith.muli %[[Y]], %[[C4:.+]] : index
// The lane's first row p = 16 warp + lane / 4: query row 4 x block + p / 4
// of head HEAD + p % 4.
// CHECK: %[[P:.+]] = arith.addi %{{.+}}, %{{.+}} : index
// CHECK: %[[ROW:.+]] = arith.divui %[[P]], %[[C4]] : index
// CHECK: arith.addi %{{.+}}, %[[ROW]] : index
// CHECK: %[[OFFSET:.+]] = arith.remui %[[P]], %[[C4]] : index
// CHECK: arith.addi %[[HEAD]], %[[OFFSET]] : index
// The K and V rows are the KV head's, grid y itself.
// CHECK: arith.muli %{{.+}}, %[[C2]] : index
// CHECK: arith.addi %{{.+}}, %[[Y]] : index
// Unpacked, a block per (query head, batch): grid y is the 8 query heads.
// OFF-LABEL: func.func @decode
// OFF: %[[C8:.+]] = arith.constant 8 : index
// OFF: gpu.launch_func @decode_kernels::@decode blocks in (%{{.+}}, %[[C8]], %{{.+}}) {{.*}} {attn.alignments = array<i64: 4, 16, 16, 1, 1>, attn.block_rows = 16 : i64, attn.kv_splits = 2 : i64, attn.kv_tile = 64 : i64, attn.tensor_cores}
// OFF-NOT: packed_heads
// OFF: return
// The FMA kernel packs the same way, into its 32 rows.
// FMA-LABEL: func.func @decode
// FMA: gpu.launch_func @decode_kernels::@decode blocks in {{.*}} {attn.alignments = array<i64: 8, 8, 8, 1, 1>, attn.block_rows = 8 : i64, attn.kv_splits = 4 : i64, attn.kv_tile = 32 : i64, attn.packed_heads = 4 : i64}
func.func @decode(%q: tensor<2x8x3x64xf16>, %k: tensor<2x2x512x64xf16>,
                  %v: tensor<2x2x512x64xf16>, %o: tensor<2x8x3x64xf16>)
    -> tensor<2x8x3x64xf16> {
  %0 = attn.attention ins(%q, %k, %v : tensor<2x8x3x64xf16>,
                          tensor<2x2x512x64xf16>, tensor<2x2x512x64xf16>)
      outs(%o : tensor<2x8x3x64xf16>) -> tensor<2x8x3x64xf16>
  return %0 : tensor<2x8x3x64xf16>
}

// -----

// 8 heads of 5 rows: 40 rows, in 3 warps (48 rows, 6 of each head). The
// exact FMA kernel behind the causal mask packs alike, over the same grid.
// CHECK-LABEL: func.func @warps
// CHECK: gpu.launch_func @warps_kernels::@warps blocks in (%[[X:.+]], %[[Y:.+]], %{{.+}}) threads in (%[[C96:.+]], {{.*}}) {attn.alignments = array<i64: 4, 16, 16, 1, 1>, attn.block_rows = 6 : i64, attn.kv_splits = 2 : i64, attn.kv_tile = 64 : i64, attn.packed_heads = 8 : i64, attn.tensor_cores}
// CHECK: gpu.launch_func @warps_kernels::@warps_exact blocks in (%[[X]], %[[Y]], %{{.+}}) threads in (%[[C96]], {{.*}}) {attn.alignments = array<i64: 8, 16, 16, 1, 1>, attn.block_rows = 6 : i64, attn.kv_splits = 2 : i64, attn.kv_tile = 32 : i64, attn.packed_heads = 8 : i64}
// OFF-LABEL: func.func @warps
// OFF: attn.block_rows = 16 : i64
// OFF-NOT: packed_heads
// OFF: return
func.func @warps(%q: tensor<1x16x5x64xf16>, %k: tensor<1x2x512x64xf16>,
                 %v: tensor<1x2x512x64xf16>, %o: tensor<1x16x5x64xf16>)
    -> tensor<1x16x5x64xf16> {
  %0 = attn.attention ins(%q, %k, %v : tensor<1x16x5x64xf16>,
                          tensor<1x2x512x64xf16>, tensor<1x2x512x64xf16>)
      outs(%o : tensor<1x16x5x64xf16>)
      {structured_mask = #attn.causal<bottom_right>} -> tensor<1x16x5x64xf16>
  return %0 : tensor<1x16x5x64xf16>
}

// -----

// Not packed: 3 heads a KV head (16 rows are no multiple of 3), a dynamic
// query length, spans (per head: the keys a block sees would depend on
// it), or 4 heads of 100 rows (more than a block).
// CHECK-LABEL: func.func @three
// CHECK-NOT: packed_heads
// CHECK-LABEL: func.func @dynamic
// CHECK-NOT: packed_heads
// CHECK-LABEL: func.func @spans
// CHECK-NOT: packed_heads
// CHECK-LABEL: func.func @prefill
// CHECK-NOT: packed_heads
// CHECK: return
func.func @three(%q: tensor<1x6x1x64xf16>, %k: tensor<1x2x512x64xf16>,
                 %v: tensor<1x2x512x64xf16>, %o: tensor<1x6x1x64xf16>)
    -> tensor<1x6x1x64xf16> {
  %0 = attn.attention ins(%q, %k, %v : tensor<1x6x1x64xf16>,
                          tensor<1x2x512x64xf16>, tensor<1x2x512x64xf16>)
      outs(%o : tensor<1x6x1x64xf16>) -> tensor<1x6x1x64xf16>
  return %0 : tensor<1x6x1x64xf16>
}
func.func @dynamic(%q: tensor<1x8x?x64xf16>, %k: tensor<1x2x512x64xf16>,
                   %v: tensor<1x2x512x64xf16>, %o: tensor<1x8x?x64xf16>)
    -> tensor<1x8x?x64xf16> {
  %0 = attn.attention ins(%q, %k, %v : tensor<1x8x?x64xf16>,
                          tensor<1x2x512x64xf16>, tensor<1x2x512x64xf16>)
      outs(%o : tensor<1x8x?x64xf16>) -> tensor<1x8x?x64xf16>
  return %0 : tensor<1x8x?x64xf16>
}
func.func @spans(%q: tensor<1x8x1x64xf16>, %k: tensor<1x2x512x64xf16>,
                 %v: tensor<1x2x512x64xf16>, %s: tensor<8xi32>,
                 %o: tensor<1x8x1x64xf16>) -> tensor<1x8x1x64xf16> {
  %0 = attn.attention ins(%q, %k, %v : tensor<1x8x1x64xf16>,
                          tensor<1x2x512x64xf16>, tensor<1x2x512x64xf16>)
      spans(%s : tensor<8xi32>) outs(%o : tensor<1x8x1x64xf16>)
      -> tensor<1x8x1x64xf16>
  return %0 : tensor<1x8x1x64xf16>
}
func.func @prefill(%q: tensor<1x8x100x64xf16>, %k: tensor<1x2x512x64xf16>,
                   %v: tensor<1x2x512x64xf16>, %o: tensor<1x8x100x64xf16>)
    -> tensor<1x8x100x64xf16> {
  %0 = attn.attention ins(%q, %k, %v : tensor<1x8x100x64xf16>,
                          tensor<1x2x512x64xf16>, tensor<1x2x512x64xf16>)
      outs(%o : tensor<1x8x100x64xf16>) -> tensor<1x8x100x64xf16>
  return %0 : tensor<1x8x100x64xf16>
}
