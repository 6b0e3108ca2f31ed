// RUN: attn-opt %s --attn-convert-to-gpu --canonicalize --cse --split-input-file | FileCheck %s
// RUN: attn-opt %s --attn-convert-to-gpu=mma=true --canonicalize --cse --split-input-file | FileCheck %s --check-prefix=TC

// Multi-head attention: scratch buffers for Q, K, V (sized by the rows of
// x_q, x_k, x_v and the widths of their weights) and the heads' output O
// (by the rows of out), three projection launches, the BSHD attention on
// the scratch buffers, the output projection into out (f32: a second
// projection function), then the buffers freed.
// CHECK-LABEL: func.func @mha
// CHECK-SAME: (%[[XQ:[a-z0-9_]+]]: memref<?x?x64xf16>, %[[XK:[a-z0-9_]+]]: memref<?x?x64xf16>, %[[XV:[a-z0-9_]+]]: memref<?x?x64xf16>, %[[WQ:[a-z0-9_]+]]: memref<64x64xf16>, %{{[a-z0-9_]+}}: memref<64x32xf16>, %{{[a-z0-9_]+}}: memref<64x32xf16>, %[[WO:[a-z0-9_]+]]: memref<64x64xf16>, %[[BQ:[a-z0-9_]+]]: memref<64xf16>, %{{[a-z0-9_]+}}: memref<32xf16>, %{{[a-z0-9_]+}}: memref<32xf16>, %[[BO:[a-z0-9_]+]]: memref<64xf16>, %[[LENS:[a-z0-9_]+]]: memref<?xi32>, %[[OUT:[a-z0-9_]+]]: memref<?x?x64xf32>)
// CHECK: %[[Q:.+]] = gpu.alloc (%{{.+}}, %{{.+}}) {attn.rows_of = 0 : i64, attn.width = 64 : i64} : memref<?x?x4x16xf16>
// CHECK: %[[K:.+]] = gpu.alloc (%{{.+}}, %{{.+}}) {attn.rows_of = 1 : i64, attn.width = 32 : i64} : memref<?x?x2x16xf16>
// CHECK: %[[V:.+]] = gpu.alloc (%{{.+}}, %{{.+}}) {attn.rows_of = 2 : i64, attn.width = 32 : i64} : memref<?x?x2x16xf16>
// CHECK: %[[O:.+]] = gpu.alloc (%{{.+}}, %{{.+}}) {attn.rows_of = 12 : i64, attn.width = 64 : i64} : memref<?x?x4x16xf16>
// CHECK: %[[XQFLAT:.+]] = memref.collapse_shape %[[XQ]]
// CHECK: %[[QFLAT:.+]] = memref.collapse_shape %[[Q]]
// CHECK: gpu.launch_func @mha_kernels::@mha_project0 blocks in (%{{.+}}, %c1, %c1) threads in (%c256, %c1, %c1) args(%[[XQFLAT]] : memref<?xf16>, %{{.+}} : memref<?xf16>, %{{.+}} : memref<?xf16>, %[[QFLAT]] : memref<?xf16>, %{{.+}} : index, %c64 : index, %c64 : index) {attn.projection = array<i64: 64, 64, 64, 64>}
// CHECK: %[[KFLAT:.+]] = memref.collapse_shape %[[K]]
// CHECK: gpu.launch_func @mha_kernels::@mha_project0 {{.+}} {attn.projection = array<i64: 64, 32, 64, 64>}
// CHECK: %[[VFLAT:.+]] = memref.collapse_shape %[[V]]
// CHECK: gpu.launch_func @mha_kernels::@mha_project0 {{.+}} {attn.projection = array<i64: 64, 32, 64, 64>}
// CHECK: %[[OFLAT:.+]] = memref.collapse_shape %[[O]]
// CHECK: gpu.launch_func @mha_kernels::@mha blocks in {{.+}} args(%[[QFLAT]] : memref<?xf16>, %[[KFLAT]] : memref<?xf16>, %[[VFLAT]] : memref<?xf16>, %[[LENS]] : memref<?xi32>, %[[OFLAT]] : memref<?xf16>, {{.+}}) {attn.alignments = array<i64: 8, 8, 8, 1, 8>, attn.block_rows = 32 : i64, attn.kv_tile = 32 : i64}
// CHECK: %[[OUTFLAT:.+]] = memref.collapse_shape %[[OUT]]
// CHECK: gpu.launch_func @mha_kernels::@mha_project1 {{.+}} args(%[[OFLAT]] : memref<?xf16>, %{{.+}} : memref<?xf16>, %{{.+}} : memref<?xf16>, %[[OUTFLAT]] : memref<?xf32>, {{.+}}) {attn.projection = array<i64: 64, 64, 64, 64>}
// CHECK: gpu.dealloc %[[Q]]
// CHECK: gpu.dealloc %[[K]]
// CHECK: gpu.dealloc %[[V]]
// CHECK: gpu.dealloc %[[O]]
// CHECK: gpu.module @mha_kernels
// CHECK: gpu.func @mha(%{{.+}}: memref<?xf16>, %{{.+}}: memref<?xf16>, %{{.+}}: memref<?xf16>, %{{.+}}: memref<?xi32>, %{{.+}}: memref<?xf16>, %{{.+}}: index, %{{.+}}: index, %{{.+}}: index, %{{.+}}: index, %{{.+}}: index)
// The projection: a 64 x 64 tile of y per block (4 x 4 outputs a thread),
// 64 x 16 and 16 x 64 slices of x and w staged in shared memory, 16 FMAs
// per 8 shared-memory loads, f32 accumulation, the bias, y's element type.
// CHECK: gpu.func @mha_project0(%[[X:[a-z0-9_]+]]: memref<?xf16>, %[[W:[a-z0-9_]+]]: memref<?xf16>, %[[B:[a-z0-9_]+]]: memref<?xf16>, %[[Y:[a-z0-9_]+]]: memref<?xf16>, %[[M:[a-z0-9_]+]]: index, %[[KK:[a-z0-9_]+]]: index, %[[N:[a-z0-9_]+]]: index) workgroup(%[[XT:[a-z0-9_]+]] : memref<64x16xf32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}, %[[WT:[a-z0-9_]+]] : memref<16x64xf32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}) kernel attributes {known_block_size = array<i32: 256, 1, 1>}
// CHECK: scf.for %{{.+}} = %c0 to %[[KK]] step %c16
// CHECK: memref.load %[[X]]
// CHECK: memref.store %{{.+}}, %[[XT]]
// CHECK: memref.load %[[W]]
// CHECK: memref.store %{{.+}}, %[[WT]]
// CHECK: gpu.barrier
// CHECK: scf.for
// CHECK-COUNT-8: memref.load %{{.+}} : memref<{{64x16|16x64}}xf32, #gpu.address_space<workgroup>>
// CHECK-COUNT-16: math.fma
// CHECK: gpu.barrier
// CHECK: memref.load %[[B]]
// CHECK: arith.truncf %{{.+}} : f32 to f16
// CHECK: memref.store %{{.+}}, %[[Y]]
// CHECK: gpu.func @mha_project1({{.+}}, %{{.+}}: memref<?xf32>, %{{.+}}: index, %{{.+}}: index, %{{.+}}: index)

// On tensor cores (mma=true), f16 x and w: 4 warps a block over a 128 x 64
// tile of y, each warp 32 rows as two row blocks sharing every B fragment.
// Where K and N are multiples of 8 and x and w aligned, slices of 32 of the
// reduction arrive by cp.async (16-byte chunks, four of x and two of w a
// thread), double-buffered: slice s + 1 is copied into the other slot while
// slice s is multiplied; otherwise element by element into slot 0, in a
// second loop. Rows are padded to 40 and 72 elements; each 16 of a slice is
// two ldmatrix of A and four ldmatrix.trans of B for 16 mma.sync a warp;
// then the 64 outputs of a lane, the bias added, stored as y's element type.
// TC-LABEL: func.func @mha
// TC: gpu.launch_func @mha_kernels::@mha_project0 blocks in (%{{.+}}, %c1, %c1) threads in (%c128, %c1, %c1) {{.+}} {attn.projection = array<i64: 64, 64, 128, 64>}
// TC: gpu.launch_func @mha_kernels::@mha_project1 {{.+}} threads in (%c128, %c1, %c1) {{.+}} {attn.projection = array<i64: 64, 64, 128, 64>}
// TC: gpu.func @mha_project0(%[[X:[a-z0-9_]+]]: memref<?xf16>, %[[W:[a-z0-9_]+]]: memref<?xf16>, %[[B:[a-z0-9_]+]]: memref<?xf16>, %[[Y:[a-z0-9_]+]]: memref<?xf16>, %{{.+}}: index, %[[KK:[a-z0-9_]+]]: index, %{{.+}}: index) workgroup(%[[XT:[a-z0-9_]+]] : memref<2x128x40xf16, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}, %[[WT:[a-z0-9_]+]] : memref<2x32x72xf16, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}) kernel attributes {known_block_size = array<i32: 128, 1, 1>}
// TC: memref.extract_aligned_pointer_as_index %[[X]]
// TC: memref.extract_aligned_pointer_as_index %[[W]]
// TC: scf.if
// TC-COUNT-4: nvgpu.device_async_copy %[[X]][%{{.+}}], %[[XT]][%c0, %{{.+}}, %{{.+}}], 8, %{{.+}} {bypassL1}
// TC-COUNT-2: nvgpu.device_async_copy %[[W]][%{{.+}}], %[[WT]][%c0, %{{.+}}, %{{.+}}], 8, %{{.+}} {bypassL1}
// TC: nvvm.cp.async.commit.group
// TC: scf.for %{{.+}} = %c0 to %[[KK]] step %c32 iter_args({{.+}}, %[[SLOT:[a-z0-9_]+]] = %c0)
// TC: %[[OTHER:.+]] = arith.subi %c1, %[[SLOT]]
// TC-COUNT-4: nvgpu.device_async_copy %[[X]][%{{.+}}], %[[XT]][%[[OTHER]], %{{.+}}, %{{.+}}], 8, %{{.+}} {bypassL1}
// TC-COUNT-2: nvgpu.device_async_copy %[[W]][%{{.+}}], %[[WT]][%[[OTHER]], %{{.+}}, %{{.+}}], 8, %{{.+}} {bypassL1}
// TC: nvvm.cp.async.commit.group
// TC-NEXT: nvvm.cp.async.wait.group 1
// TC-NEXT: gpu.barrier
// TC-COUNT-2: nvgpu.ldmatrix %[[XT]][%[[SLOT]], %{{.+}}, %{{.+}}] {numTiles = 4 : i32, transpose = false}
// TC: nvgpu.ldmatrix %[[WT]][%[[SLOT]], %{{.+}}, %{{.+}}] {numTiles = 4 : i32, transpose = true}
// TC-COUNT-16: nvgpu.mma.sync
// TC: nvgpu.ldmatrix %[[XT]][%[[SLOT]], %{{.+}}, %{{.+}}] {numTiles = 4 : i32, transpose = false}
// TC-COUNT-16: nvgpu.mma.sync
// TC-NEXT: gpu.barrier
// TC-NEXT: scf.yield {{.+}}, %[[OTHER]] :
// TC: nvvm.cp.async.wait.group 0
// TC: } else {
// TC: scf.for %{{.+}} = %c0 to %[[KK]] step %c32
// TC: scf.for %{{.+}} = %c0 to %c32 step %c1
// TC: memref.load %[[X]]
// TC: memref.store %{{.+}}, %[[XT]][%c0,
// TC: scf.for %{{.+}} = %c0 to %c16 step %c1
// TC: memref.load %[[W]]
// TC: memref.store %{{.+}}, %[[WT]][%c0,
// TC: gpu.barrier
// TC-COUNT-32: nvgpu.mma.sync
// TC-NEXT: gpu.barrier
// Where N is even and y aligned to 4 bytes, a lane stores its two columns
// of a row at once (32 stores for 64 values); otherwise element by element.
// TC: memref.extract_aligned_pointer_as_index %[[Y]]
// TC: scf.if
// TC: memref.load %[[B]]
// TC: arith.truncf %{{.+}} : vector<2xf32> to vector<2xf16>
// TC-COUNT-32: vector.store %{{.+}}, %[[Y]][%{{.+}}] {alignment = 4 : i64} : memref<?xf16>, vector<2xf16>
// TC-NOT: vector.store
// TC: } else {
// TC: memref.load %[[B]]
// TC: arith.truncf %{{.+}} : f32 to f16
// TC-COUNT-64: memref.store %{{.+}}, %[[Y]]
// TC-NOT: memref.store
// TC-NOT: vector.store
// TC: gpu.return
// TC: gpu.func @mha_project1({{.+}}, %{{.+}}: memref<?xf32>, %{{.+}}: index, %{{.+}}: index, %{{.+}}: index) workgroup

func.func @mha(%xq: tensor<?x?x64xf16>, %xk: tensor<?x?x64xf16>,
               %xv: tensor<?x?x64xf16>, %wq: tensor<64x64xf16>,
               %wk: tensor<64x32xf16>, %wv: tensor<64x32xf16>,
               %wo: tensor<64x64xf16>, %bq: tensor<64xf16>,
               %bk: tensor<32xf16>, %bv: tensor<32xf16>,
               %bo: tensor<64xf16>, %lens: tensor<?xi32>,
               %init: tensor<?x?x64xf32>) -> tensor<?x?x64xf32> {
  %0 = attn.multi_head_attention
      ins(%xq, %xk, %xv : tensor<?x?x64xf16>, tensor<?x?x64xf16>,
                          tensor<?x?x64xf16>)
      weights(%wq, %wk, %wv, %wo : tensor<64x64xf16>, tensor<64x32xf16>,
                                   tensor<64x32xf16>, tensor<64x64xf16>)
      proj_biases(%bq, %bk, %bv, %bo : tensor<64xf16>, tensor<32xf16>,
                                       tensor<32xf16>, tensor<64xf16>)
      kv_lens(%lens : tensor<?xi32>)
      outs(%init : tensor<?x?x64xf32>)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64,
       structured_mask = #attn.causal<top_left>}
      -> tensor<?x?x64xf32>
  return %0 : tensor<?x?x64xf32>
}

// -----

// Additive attention: Q = q W_q and K = k W_k into scratch buffers shaped
// like q and k with A columns, the score weights broadcast to the [Hq, A]
// f32 table (a projection without x and w, sized by the symbol Hq), then
// the additive-similarity attention on the FMA kernel.
// CHECK-LABEL: func.func @additive
// CHECK-SAME: (%[[Q:[a-z0-9_]+]]: memref<2x?x16x8xf16>, %[[K:[a-z0-9_]+]]: memref<2x?x16x8xf16>, %[[V:[a-z0-9_]+]]: memref<2x?x16x8xf16>, %{{[a-z0-9_]+}}: memref<8x32xf16>, %{{[a-z0-9_]+}}: memref<8x32xf16>, %[[W:[a-z0-9_]+]]: memref<32xf16>, %[[OUT:[a-z0-9_]+]]: memref<2x?x16x8xf16>)
// CHECK: %[[HQ:.+]] = memref.dim %[[Q]], %c1
// CHECK: %[[QP:.+]] = gpu.alloc (%[[HQ]]) {attn.rows_of = 0 : i64, attn.width = 32 : i64} : memref<2x?x16x32xf16>
// CHECK: %[[KP:.+]] = gpu.alloc (%{{.+}}) {attn.rows_of = 1 : i64, attn.width = 32 : i64} : memref<2x?x16x32xf16>
// CHECK: %[[TABLE:.+]] = gpu.alloc (%[[HQ]]) {attn.rows_symbol = 1 : i64, attn.width = 32 : i64} : memref<?x32xf32>
// CHECK: gpu.launch_func @additive_kernels::@additive_project0 {{.+}} {attn.projection = array<i64: 8, 32, 64, 64>}
// CHECK: gpu.launch_func @additive_kernels::@additive_project0 {{.+}} {attn.projection = array<i64: 8, 32, 64, 64>}
// CHECK: %[[WFLAT:.+]] = memref.cast %[[W]]
// CHECK: %[[TFLAT:.+]] = memref.collapse_shape %[[TABLE]]
// CHECK: gpu.launch_func @additive_kernels::@additive_project1 {{.+}} args(%[[WFLAT]] : memref<?xf16>, %[[TFLAT]] : memref<?xf32>, %{{.+}} : index, %c0 : index, %c32 : index) {attn.projection = array<i64: 0, 32, 64, 64>}
// CHECK: gpu.launch_func @additive_kernels::@additive blocks in {{.+}} args(%{{.+}} : memref<?xf16>, %{{.+}} : memref<?xf16>, %{{.+}} : memref<?xf16>, %[[TFLAT]] : memref<?xf32>, %{{.+}} : memref<?xf16>, {{.+}}) {attn.alignments = array<i64: 8, 8, 8, 16, 8>, attn.block_rows = 32 : i64, attn.kv_tile = 32 : i64}
// CHECK: gpu.dealloc %[[TABLE]]
// TC-LABEL: func.func @additive
// TC-COUNT-2: gpu.launch_func @additive_kernels::@additive_project0 {{.+}} threads in (%c128, %c1, %c1)
// TC: gpu.launch_func @additive_kernels::@additive_project1 {{.+}} threads in (%c256, %c1, %c1)
// Without x and w: the bias (in f32) on every row, no shared memory.
// CHECK: gpu.func @additive_project1(%[[BIAS:[a-z0-9_]+]]: memref<?xf16>, %[[YT:[a-z0-9_]+]]: memref<?xf32>, %{{.+}}: index, %{{.+}}: index, %{{.+}}: index) kernel
// CHECK-NOT: scf.for
// CHECK: memref.load %[[BIAS]]
// CHECK: arith.extf
// CHECK: memref.store %{{.+}}, %[[YT]]
// CHECK: gpu.return

func.func @additive(%q: tensor<2x?x16x8xf16>, %k: tensor<2x?x16x8xf16>,
                    %v: tensor<2x?x16x8xf16>, %wq: tensor<8x32xf16>,
                    %wk: tensor<8x32xf16>, %w: tensor<32xf16>,
                    %o: tensor<2x?x16x8xf16>) -> tensor<2x?x16x8xf16> {
  %0 = attn.additive_attention
      ins(%q, %k, %v : tensor<2x?x16x8xf16>, tensor<2x?x16x8xf16>,
                       tensor<2x?x16x8xf16>)
      weights(%wq, %wk, %w : tensor<8x32xf16>, tensor<8x32xf16>,
                             tensor<32xf16>)
      outs(%o : tensor<2x?x16x8xf16>)
      {structured_mask = #attn.causal<top_left>} -> tensor<2x?x16x8xf16>
  return %0 : tensor<2x?x16x8xf16>
}
