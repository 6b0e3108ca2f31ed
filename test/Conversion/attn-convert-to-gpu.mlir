// RUN: attn-opt %s --attn-convert-to-gpu --canonicalize --cse --split-input-file | FileCheck %s
// RUN: attn-opt %s --attn-convert-to-gpu="block-rows=16 kv-tile-size=64" --canonicalize --split-input-file | FileCheck %s --check-prefix=SIZES
// RUN: not attn-opt %s --attn-convert-to-gpu="block-rows=0" --split-input-file 2>&1 | FileCheck %s --check-prefix=BADROWS
// RUN: not attn-opt %s --attn-convert-to-gpu="block-rows=4" --split-input-file 2>&1 | FileCheck %s --check-prefix=WARPS
// RUN: attn-opt %s --attn-convert-to-gpu="mma=true mma-kv-tile-size=40" --canonicalize --cse --split-input-file | FileCheck %s --check-prefix=MMA
// RUN: attn-opt %s --attn-convert-to-gpu="mma=true" --split-input-file | FileCheck %s --check-prefix=MMADEFAULT
// RUN: attn-opt %s --attn-convert-to-gpu="mma=true mma-block-rows=128" --canonicalize --cse --split-input-file | FileCheck %s --check-prefix=ROWS128
// RUN: not attn-opt %s --attn-convert-to-gpu="mma=true mma-block-rows=40" --split-input-file 2>&1 | FileCheck %s --check-prefix=BADMMAROWS
// RUN: attn-opt %s --attn-convert-to-gpu="mma=true min-blocks-per-sm=3" --split-input-file | FileCheck %s --check-prefix=MINBLOCKS
// RUN: not attn-opt %s --attn-convert-to-gpu="min-blocks-per-sm=33" --split-input-file 2>&1 | FileCheck %s --check-prefix=BADMINBLOCKS
// RUN: not attn-opt %s --attn-convert-to-gpu="mma=true min-blocks-per-sm=17" --split-input-file 2>&1 | FileCheck %s --check-prefix=MANYBLOCKS

// GQA 8:2, f16, bottom-right causal, dynamic sequence length. The host
// function flattens its memrefs and launches (ceil(Sq / 32), Hq, B) blocks
// of 32 rows x 4 lanes.
// CHECK-LABEL: func.func @causal
// CHECK-SAME: (%[[Q:[a-z0-9_]+]]: memref<2x8x?x128xf16>, %[[K:[a-z0-9_]+]]: memref<2x2x?x128xf16>, %[[V:[a-z0-9_]+]]: memref<2x2x?x128xf16>, %[[O:[a-z0-9_]+]]: memref<2x8x?x128xf16>)
// CHECK-DAG: %[[C8:.+]] = arith.constant 8 : index
// CHECK-DAG: %[[C2:.+]] = arith.constant 2 : index
// CHECK-DAG: %[[C32:.+]] = arith.constant 32 : index
// CHECK-DAG: %[[C128:.+]] = arith.constant 128 : index
// CHECK: %[[QF:.+]] = memref.collapse_shape %[[Q]] {{\[\[}}0, 1, 2, 3]] : memref<2x8x?x128xf16> into memref<?xf16>
// CHECK: %[[SQ:.+]] = memref.dim %[[Q]], %[[C2]]
// CHECK: %[[SK:.+]] = memref.dim %[[K]], %[[C2]]
// CHECK: %[[BLOCKS:.+]] = arith.ceildivui %[[SQ]], %[[C32]] : index
// CHECK: gpu.launch_func @causal_kernels::@causal blocks in (%[[BLOCKS]], %[[C8]], %[[C2]]) threads in (%[[C128]], %{{.+}}, %{{.+}}) args(%[[QF]] : memref<?xf16>, {{.*}}, %[[C2]] : index, %[[SQ]] : index, %[[SK]] : index, %[[C8]] : index, %[[C2]] : index)
// The kernel: K and V tiles of 32 keys in shared memory as f32.
// CHECK: gpu.module @causal_kernels
// CHECK: gpu.func @causal(%{{.+}}: memref<?xf16>, %{{.+}}: memref<?xf16>, %{{.+}}: memref<?xf16>, %{{.+}}: memref<?xf16>, %{{.+}}: index, %[[KSQ:[a-z0-9_]+]]: index, %[[KSK:[a-z0-9_]+]]: index, %{{.+}}: index, %{{.+}}: index)
// CHECK-SAME: workgroup(%[[KT:.+]] : memref<32x128xf32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}, %[[VT:.+]] : memref<32x128xf32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64})
// CHECK-SAME: kernel attributes {attn.block_rows = 32 : i64, known_block_size = array<i32: 128, 1, 1>}
// Query blocks run from the last (under causal the longest first).
// CHECK: %[[GRID:.+]] = gpu.grid_dim x
// CHECK-NEXT: %[[BID:.+]] = gpu.block_id x
// CHECK-NEXT: %[[LASTBLOCK:.+]] = arith.subi %[[GRID]], %{{.+}} : index
// CHECK-NEXT: arith.subi %[[LASTBLOCK]], %[[BID]] : index
// Each lane (L, of the row's 4) holds 32 of the row's 128 query elements,
// scaled: 8 chunks of 4, chunk c from column (4 c + L) 4, so the row's lanes
// read adjacent chunks (no shared-memory bank conflict on K and V).
// CHECK: %[[LANE:.+]] = arith.remui %{{.+}}, %[[C4:.+]] : index
// CHECK: %[[COL0:.+]] = arith.muli %[[LANE]], %[[C4]] : index
// CHECK: %[[AT0:.+]] = arith.addi %[[QROW:.+]], %[[COL0]] : index
// CHECK: %[[Q0:.+]] = vector.load %{{.+}}[%[[AT0]]] {alignment = 8 : i64} : memref<?xf16>, vector<4xf16>
// CHECK: %[[CHUNK1:.+]] = arith.addi %[[LANE]], %[[C4]] : index
// CHECK: %[[COL1:.+]] = arith.muli %[[CHUNK1]], %[[C4]] : index
// CHECK: %[[AT1:.+]] = arith.addi %[[QROW]], %[[COL1]] : index
// CHECK: %[[Q1:.+]] = vector.load %{{.+}}[%[[AT1]]] {alignment = 8 : i64} : memref<?xf16>, vector<4xf16>
// CHECK: vector.shuffle %{{.+}}, %{{.+}} [0, 1, 2, 3, 4, 5, 6, 7] : vector<4xf32>, vector<4xf32>
// CHECK: %[[QX:.+]] = vector.shuffle %{{.+}}, %{{.+}} [0, 1, {{.*}}, 31] : vector<28xf32>, vector<4xf32>
// CHECK: %[[QSCALED:.+]] = arith.mulf %[[QX]], %{{.+}} : vector<32xf32>
// Bottom-right causal: keys up to (last query of the block) + Sk - Sq.
// CHECK: %[[SHIFT:.+]] = arith.subi %[[KSK]], %[[KSQ]] : index
// CHECK: scf.for %[[T:.+]] = %{{.+}} to %[[END:.+]] step %[[C32K:.+]] iter_args(%[[M:.+]] = %{{.+}}, %[[L:.+]] = %{{.+}}, %[[ACC:.+]] = %{{.+}}) -> (f32, f32, vector<32xf32>)
// A tile every row of the block sees whole (up to the first row's diagonal)
// runs all 32 keys with no per-score mask.
// CHECK: %[[WHOLE:.+]] = arith.andi
// CHECK: scf.if %[[WHOLE]] -> (f32, f32, vector<32xf32>) {
// CHECK: gpu.barrier
// CHECK: scf.for %{{.+}} = %{{.+}} to %[[C32K]] step
// CHECK-NOT: arith.cmpi sle
// CHECK: math.exp2
// CHECK: scf.yield
// CHECK: } else {
// The others mask each score.
// K and V are staged 4 elements a copy: a row's 32 chunks on 32 threads,
// each keeping its column and stepping its row by the 4 rows a pass of 128
// threads covers; keys past the visible end store 0.
// CHECK: gpu.barrier
// CHECK: %[[STAGECOL:.+]] = arith.muli %{{.+}}, %[[C4]] : index
// CHECK: %[[FIRSTROW:.+]] = arith.divui %{{.+}}, %[[C32K]] : index
// CHECK: scf.for %[[R:.+]] = %[[FIRSTROW]] to %[[C32K]] step %[[C4]] {
// CHECK: %[[KSTAGED:.+]] = arith.cmpi slt,
// CHECK: %[[K4:.+]] = vector.load %{{.+}}[%{{.+}}] {alignment = 8 : i64} : memref<?xf16>, vector<4xf16>
// CHECK: %[[K4F:.+]] = arith.extf %[[K4]] : vector<4xf16> to vector<4xf32>
// CHECK: %[[K4Z:.+]] = arith.select %[[KSTAGED]], %[[K4F]], %{{.+}} : vector<4xf32>
// CHECK: vector.store %[[K4Z]], %[[KT]][%[[R]], %[[STAGECOL]]] {alignment = 16 : i64} : memref<32x128xf32, #gpu.address_space<workgroup>>, vector<4xf32>
// CHECK: vector.store %{{.+}}, %[[VT]][
// CHECK: gpu.barrier
// Steps of 4 keys, up to the tile's visible keys rounded up to a step; the
// keys past the visible end are hidden.
// CHECK: %[[STEPS:.+]] = arith.ceildivui %{{.+}}, %[[C4]] : index
// CHECK: %[[COUNT:.+]] = arith.muli %[[STEPS]], %[[C4]] : index
// CHECK: scf.for %[[J:.+]] = %{{.+}} to %[[COUNT]] step %[[C4]] iter_args(
// CHECK: %[[KEY:.+]] = arith.addi %{{.+}}, %[[J]] : index
// CHECK: %[[INSIDE:.+]] = arith.cmpi slt, %[[KEY]], %{{.+}} : index
// CHECK: %[[SHOWN:.+]] = arith.andi %{{.+}}, %[[INSIDE]] : i1
// CHECK: vector.load %[[KT]][%[[J]], %[[COL0]]] : memref<32x128xf32, #gpu.address_space<workgroup>>, vector<4xf32>
// CHECK: vector.load %[[KT]][%[[J]], %[[COL1]]] : memref<32x128xf32, #gpu.address_space<workgroup>>, vector<4xf32>
// CHECK: %[[KS:.+]] = vector.shuffle %{{.+}}, %{{.+}} [0, 1, {{.*}}, 31] : vector<28xf32>, vector<4xf32>
// The partial dot product: a chain of FMAs over 4-wide chunks.
// CHECK: %[[Q0:.+]] = vector.shuffle %[[QSCALED]], %[[QSCALED]] [0, 1, 2, 3] : vector<32xf32>, vector<32xf32>
// CHECK: %[[K0:.+]] = vector.shuffle %[[KS]], %[[KS]] [0, 1, 2, 3] : vector<32xf32>, vector<32xf32>
// CHECK: %[[D0:.+]] = arith.mulf %[[Q0]], %[[K0]] : vector<4xf32>
// CHECK: vector.fma %{{.+}}, %{{.+}}, %[[D0]] : vector<4xf32>
// CHECK-COUNT-6: vector.fma %{{.+}}, %{{.+}}, %{{.+}} : vector<4xf32>
// CHECK: %[[PART:.+]] = vector.reduction <add>, %{{.+}} : vector<4xf32> into f32
// The 4 lanes of a row sum their partial dot products.
// CHECK: %[[S1:.+]], %{{.+}} = gpu.shuffle xor %[[PART]], %{{.+}}, %{{.+}} : f32
// CHECK: %[[P1:.+]] = arith.addf %[[PART]], %[[S1]] : f32
// CHECK: %[[S2:.+]], %{{.+}} = gpu.shuffle xor %[[P1]], %{{.+}}, %{{.+}} : f32
// The query holds scale * log2(e), so the score is the base-2 logit.
// CHECK: %[[SCORE:.+]] = arith.addf %[[P1]], %[[S2]] : f32
// CHECK: %[[CAUSAL:.+]] = arith.cmpi sle
// CHECK: %[[SEES:.+]] = arith.andi %[[SHOWN]], %[[CAUSAL]] : i1
// CHECK: %[[LOGIT:.+]] = arith.select %[[SEES]], %[[SCORE]], %{{.+}} : f32
// CHECK: %[[MAX0:.+]] = arith.maximumf %{{.+}}, %[[LOGIT]] : f32
// CHECK: %[[MAX1:.+]] = arith.maximumf %[[MAX0]], %{{.+}} : f32
// CHECK: %[[MAX2:.+]] = arith.maximumf %[[MAX1]], %{{.+}} : f32
// CHECK: %[[MAX:.+]] = arith.maximumf %[[MAX2]], %{{.+}} : f32
// A row that has seen no key yet subtracts 0: exp2(-inf) = 0, no select per
// score. acc is rescaled once per step, and not at all (a branch) while the
// row's max stays put (alpha = 1).
// CHECK: %[[EMPTY:.+]] = arith.cmpf oeq, %[[MAX]], %{{.+}} : f32
// CHECK: %[[BASE:.+]] = arith.select %[[EMPTY]], %{{.+}}, %[[MAX]] : f32
// CHECK: %[[ALPHA:.+]] = math.exp2 %{{.+}} : f32
// CHECK: %[[ONE:.+]] = arith.cmpf oeq, %[[ALPHA]], %{{.+}} : f32
// CHECK-NEXT: %[[SCALED:.+]] = scf.if %[[ONE]] -> (vector<32xf32>) {
// CHECK-NEXT: scf.yield %[[ACC:.+]] : vector<32xf32>
// CHECK-NEXT: } else {
// CHECK-NEXT: %[[ALPHAS:.+]] = vector.broadcast %[[ALPHA]] : f32 to vector<32xf32>
// CHECK-NEXT: %[[PRODUCT:.+]] = arith.mulf %[[ACC]], %[[ALPHAS]] : vector<32xf32>
// CHECK-NEXT: scf.yield %[[PRODUCT]] : vector<32xf32>
// CHECK-NEXT: }
// CHECK: %[[SHIFTED:.+]] = arith.subf %[[LOGIT]], %[[BASE]] : f32
// CHECK: %[[P:.+]] = math.exp2 %[[SHIFTED]] : f32
// CHECK: vector.load %[[VT]][%[[J]], %[[COL0]]]
// CHECK: %[[VS:.+]] = vector.shuffle {{.*}} : vector<28xf32>, vector<4xf32>
// A key with p = 0 adds nothing, not even a NaN value: a branch per key
// (the rows of a warp mostly agree), not a select per element.
// CHECK: %[[SEEN:.+]] = arith.cmpf one, %[[P]], %{{.+}} : f32
// CHECK: scf.if %[[SEEN]] -> (vector<32xf32>) {
// CHECK-NEXT: %[[PB:.+]] = vector.broadcast %[[P]] : f32 to vector<32xf32>
// CHECK-NEXT: %[[FMA:.+]] = vector.fma %[[PB]], %[[VS]], %[[SCALED]] : vector<32xf32>
// CHECK-NEXT: scf.yield %[[FMA]] : vector<32xf32>
// CHECK-NEXT: } else {
// CHECK-NEXT: scf.yield %[[SCALED]] : vector<32xf32>
// CHECK-NEXT: }
// CHECK-COUNT-3: scf.if %{{.+}} -> (vector<32xf32>)
// Rows that saw no key write 0; f16 out.
// CHECK: arith.cmpf oeq
// CHECK: arith.truncf %{{.+}} : vector<32xf32> to vector<32xf16>
// CHECK: scf.if
// CHECK: %[[OUT0:.+]] = vector.shuffle %[[RES:.+]], %[[RES]] [0, 1, 2, 3] : vector<32xf16>, vector<32xf16>
// CHECK: %[[OUTAT:.+]] = arith.addi %{{.+}}, %[[COL0]] : index
// CHECK: vector.store %[[OUT0]], %{{.+}}[%[[OUTAT]]] {alignment = 8 : i64} : memref<?xf16>, vector<4xf16>
// CHECK: vector.shuffle %[[RES]], %[[RES]] [4, 5, 6, 7] : vector<32xf16>, vector<32xf16>
// 64-key tiles of D + Dv = 256 floats would take 64 KiB: cut to the 48 keys
// that fit in 48 KiB of static shared memory.
// SIZES-LABEL: gpu.func @causal
// SIZES-SAME: workgroup(%{{.+}} : memref<48x128xf32, #gpu.address_space<workgroup>>
// SIZES-SAME: known_block_size = array<i32: 64, 1, 1>
// BADROWS: error: attn-convert-to-gpu: block-rows must be in [1, 1024], kv-tile-size positive and mma-kv-tile-size not negative, got 0, 32 and 0
// mma=true: the f16 attention runs on tensor cores: 4 warps of 16 rows
// (grid ceil(Sq / 64)), f16 K/V tiles of whole 16-key steps (40 -> 32) in
// rows padded by 8 elements and aligned to 16 bytes (the launcher checks K
// and V are too), the query as 8 A fragments. K of the first tile is fetched
// by cp.async (32 x 128 / 8 = 512 copies of 16 bytes, 4 per thread) before
// the loop, unguarded when the whole tile is visible (rows past the visible
// keys otherwise copy 0 bytes: zeros); V of a tile while S = Q K^T runs, as 4 (8-key) x 8 (16-dim)
// mma.sync on K fragments of ldmatrix; K of the next tile while O += P V runs
// as 2 (16-key) x 16 (8-dim) mma.sync on V fragments of ldmatrix.trans.
// By default the tensor cores take 64-key tiles under no mask or a band
// (causal here; see evaluatesMasksBeyondBands for the 32-key ones).
// MMADEFAULT: gpu.func @causal({{.*}}) workgroup(%{{.+}} : memref<64x136xf16, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}, %{{.+}} : memref<64x136xf16, #gpu.address_space<workgroup>> {llvm.align = 16 : i64})
// mma-block-rows=128: 8 warps of 16 rows (grid ceil(Sq / 128)); the exact
// kernel's 128 rows of 4 lanes may take 65536 / 512 registers each.
// ROWS128-LABEL: func.func @causal
// ROWS128-DAG: %[[C128:.+]] = arith.constant 128 : index
// ROWS128-DAG: %[[C256:.+]] = arith.constant 256 : index
// ROWS128-DAG: %[[C512:.+]] = arith.constant 512 : index
// ROWS128: %[[BLOCKS:.+]] = arith.ceildivui %{{.+}}, %[[C128]] : index
// ROWS128: gpu.launch_func @causal_kernels::@causal blocks in (%[[BLOCKS]], {{.*}}) threads in (%[[C256]], {{.*}}) {{.*}} {attn.alignments = array<i64: 4, 16, 16, 4>, attn.block_rows = 128 : i64, attn.kv_tile = 64 : i64, attn.tensor_cores}
// ROWS128-NEXT: gpu.launch_func @causal_kernels::@causal_exact blocks in (%[[BLOCKS]], {{.*}}) threads in (%[[C512]], {{.*}}) {{.*}} {attn.alignments = array<i64: 8, 16, 16, 8>, attn.block_rows = 128 : i64, attn.kv_tile = 32 : i64}
// ROWS128: gpu.func @causal(
// ROWS128-SAME: known_block_size = array<i32: 256, 1, 1>
// ROWS128: gpu.func @causal_exact(
// ROWS128-SAME: known_block_size = array<i32: 512, 1, 1>
// ROWS128-SAME: nvvm.maxnreg = 128 : i32
// BADMMAROWS: error: attn-convert-to-gpu: the tensor-core kernel takes a multiple of 16 query rows per block up to 128 (a warp per 16), got 40
// min-blocks-per-sm bounds the attention kernel (ptxas caps its registers
// to fit 3 blocks an SM), not its exact companion (which has its own bound).
// MINBLOCKS: gpu.func @causal(
// MINBLOCKS-SAME: nvvm.minctasm = 3 : i32
// MINBLOCKS: gpu.func @causal_exact(
// MINBLOCKS-NOT: nvvm.minctasm
// MINBLOCKS-SAME: nvvm.maxnreg
// BADMINBLOCKS: error: attn-convert-to-gpu: min-blocks-per-sm must be in [0, 32], got 33
// 17 blocks of 4 warps are 2176 threads.
// MANYBLOCKS: error: attn-convert-to-gpu: 17 blocks of 128 threads do not fit the 2048 threads of an SM
// MMA-LABEL: func.func @causal
// MMA-DAG: %[[C64:.+]] = arith.constant 64 : index
// MMA-DAG: %[[C128:.+]] = arith.constant 128 : index
// MMA: %[[BLOCKS:.+]] = arith.ceildivui %{{.+}}, %[[C64]] : index
// MMA: gpu.launch_func @causal_kernels::@causal blocks in (%[[BLOCKS]], {{.*}}) threads in (%[[C128]], {{.*}}) {{.*}} {attn.alignments = array<i64: 4, 16, 16, 4>, attn.block_rows = 64 : i64, attn.kv_tile = 32 : i64, attn.tensor_cores}
// Under the causal mask the exact FMA kernel follows, over the same blocks.
// MMA-NEXT: gpu.launch_func @causal_kernels::@causal_exact blocks in (%[[BLOCKS]], {{.*}}) threads in (%{{.+}}, {{.*}}) {{.*}} {attn.alignments = array<i64: 8, 16, 16, 8>, attn.block_rows = 64 : i64, attn.kv_tile = 32 : i64}
// MMA: gpu.func @causal({{.*}}) workgroup(%[[KT:.+]] : memref<32x136xf16, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}, %[[VT:.+]] : memref<32x136xf16, #gpu.address_space<workgroup>> {llvm.align = 16 : i64})
// MMA-SAME: attn.block_rows = 64 : i64, known_block_size = array<i32: 128, 1, 1>
// MMA-COUNT-32: vector.load %{{.+}}[%{{.+}}] {alignment = 4 : i64} : memref<?xf16>, vector<2xf16>
// MMA: scf.if
// MMA: %[[TILEEND:.+]] = arith.addi %{{.+}}, %{{.+}} : index
// MMA-NEXT: %[[WHOLETILE:.+]] = arith.cmpi sle, %[[TILEEND]], %{{.+}} : index
// MMA-NEXT: scf.if %[[WHOLETILE]] {
// MMA-COUNT-4: nvgpu.device_async_copy %{{.+}}[%{{.+}}], %[[KT]][%{{.+}}, %{{.+}}], 8 {bypassL1}
// MMA-NEXT: } else {
// MMA-COUNT-4: nvgpu.device_async_copy %{{.+}}[%{{.+}}], %[[KT]][%{{.+}}, %{{.+}}], 8, %{{.+}} {bypassL1}
// MMA-NEXT: }
// MMA-NEXT: nvvm.cp.async.commit.group
// A tile the block sees whole runs without per-score masks, the others with.
// MMA: scf.for
// MMA: scf.if %{{.+}} -> (f32, f32, f32, f32, vector<2x2xf32>
// MMA-NEXT: nvvm.cp.async.wait.group 0
// MMA-NEXT: gpu.barrier
// MMA: scf.if
// MMA-COUNT-4: nvgpu.device_async_copy %{{.+}}[%{{.+}}], %[[VT]][%{{.+}}, %{{.+}}], 8 {bypassL1}
// MMA: } else {
// MMA-COUNT-4: nvgpu.device_async_copy %{{.+}}[%{{.+}}], %[[VT]][%{{.+}}, %{{.+}}], 8, %{{.+}} {bypassL1}
// MMA-NEXT: }
// MMA-NEXT: nvvm.cp.async.commit.group
// MMA: nvgpu.ldmatrix %[[KT]][%{{.+}}, %{{.+}}] {numTiles = 4 : i32, transpose = false}
// MMA-COUNT-32: nvgpu.mma.sync({{.*}}) {mmaShape = [16, 8, 16]} : (vector<4x2xf16>, vector<2x2xf16>, vector<2x2xf32>) -> vector<2x2xf32>
// The row max over a row's 4 lanes, of the raw scores: scaled once, then
// each p = exp2(fma(s, scale, -base)), by ex2.approx.ftz (one MUFU.EX2).
// MMA: gpu.shuffle xor
// MMA: arith.maximumf
// MMA: %[[SCALEDMAX:.+]] = arith.mulf %{{.+}}, %[[SCALE:.+]] : f32
// MMA-NEXT: arith.maximumf %{{.+}}, %[[SCALEDMAX]] : f32
// MMA: %[[NEGBASE:.+]] = arith.negf %{{.+}} : f32
// MMA: %[[SHIFTED:.+]] = math.fma %{{.+}}, %[[SCALE]], %[[NEGBASE]] : f32
// MMA-NEXT: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"(%[[SHIFTED]]) : (f32) -> f32
// MMA: nvvm.cp.async.wait.group 0
// MMA-NEXT: gpu.barrier
// MMA: scf.if
// MMA-COUNT-4: nvgpu.device_async_copy %{{.+}}[%{{.+}}], %[[KT]]
// O's 16 fragments (2 rows x 64 dims per lane) are rescaled unless both of
// the lane's rows kept their max (alpha = 1).
// MMA: %[[ROWKEPT:.+]] = arith.cmpf oeq, %{{.+}}, %{{.+}} : f32
// MMA-NEXT: %[[OTHERKEPT:.+]] = arith.cmpf oeq, %{{.+}}, %{{.+}} : f32
// MMA-NEXT: %[[KEPT:.+]] = arith.andi %[[ROWKEPT]], %[[OTHERKEPT]] : i1
// MMA-NEXT: scf.if %[[KEPT]] -> (vector<2x2xf32>{{(, vector<2x2xf32>)+}}) {
// MMA-NEXT: scf.yield
// MMA-NEXT: } else {
// MMA-NEXT: vector.from_elements
// MMA-COUNT-16: arith.mulf %{{.+}}, %{{.+}} : vector<2x2xf32>
// MMA: nvgpu.ldmatrix %[[VT]][%{{.+}}, %{{.+}}] {numTiles = 4 : i32, transpose = true}
// MMA-COUNT-32: nvgpu.mma.sync({{.*}}) {mmaShape = [16, 8, 16]} : (vector<4x2xf16>, vector<2x2xf16>, vector<2x2xf32>) -> vector<2x2xf32>
// MMA: scf.yield
// MMA-NEXT: } else {
// MMA-NEXT: nvvm.cp.async.wait.group 0
// MMA: nvgpu.mma.sync
// MMA: arith.cmpi sle
// MMA: scf.yield
// Each row's sum over its 4 lanes, then stored 2 elements at a time.
// MMA: gpu.shuffle xor
// MMA: vector.store %{{.+}}, %{{.+}}[%{{.+}}] {alignment = 4 : i64} : memref<?xf16>, vector<2xf16>
// The exact kernel (64 rows of 4 lanes) first reads V of the tensor cores'
// 32-key tiles the block sees partly, 8 values at a time (32 x 128 / 8 = 512
// chunks) as 4 words of two (a half is not finite when its field of
// (~word & 0x7C007C00) - 0x00010001 turns negative), and votes; a block that
// finds no NaN or Inf returns at once.
// MMA: gpu.func @causal_exact(
// MMA-SAME: known_block_size = array<i32: 256, 1, 1>
// MMA-DAG: %[[ALL_ONES:.+]] = arith.constant dense<-1> : vector<4xi32>
// MMA-DAG: %[[EXPONENTS:.+]] = arith.constant dense<2080406528> : vector<4xi32>
// MMA-DAG: %[[LOW_ONES:.+]] = arith.constant dense<65537> : vector<4xi32>
// MMA-DAG: %[[SIGNS:.+]] = arith.constant dense<-2147450880> : vector<4xi32>
// MMA: scf.for %{{.+}} = %{{.+}} to %{{.+}} step %c32 iter_args(%{{.+}} = %c0_i32) -> (i32)
// MMA: scf.for %{{.+}} = %thread_id_x to %c512 step %c256 iter_args
// MMA: %[[CHUNK:.+]] = vector.load %{{.+}}[%{{.+}}] {alignment = 16 : i64} : memref<?xf16>, vector<8xf16>
// MMA-NEXT: %[[WORDS:.+]] = vector.bitcast %[[CHUNK]] : vector<8xf16> to vector<4xi32>
// MMA-NEXT: %[[NOT:.+]] = arith.xori %[[WORDS]], %[[ALL_ONES]]
// MMA-NEXT: %[[CLEAR:.+]] = arith.andi %[[NOT]], %[[EXPONENTS]]
// MMA-NEXT: %[[LESS:.+]] = arith.subi %[[CLEAR]], %[[LOW_ONES]]
// MMA-NEXT: %[[SPECIAL:.+]] = arith.andi %[[LESS]], %[[SIGNS]]
// MMA-NEXT: vector.reduction <or>, %[[SPECIAL]] : vector<4xi32> into i32
// MMA: %[[VOTES:.+]] = nvvm.barrier #nvvm.reduction<or> %{{.+}} -> i32
// MMA: %[[REDO:.+]] = arith.cmpi ne, %[[VOTES]]
// MMA-NEXT: cf.cond_br %[[REDO]], ^bb1, ^bb2
// MMA: ^bb2:
// MMA-NEXT: gpu.return
// f32 stays on the FMA path.
// MMA-LABEL: func.func @regions
// MMA-NOT: nvgpu.mma.sync
// MMA-LABEL: func.func @mask_and_bias
// MMA-NOT: nvgpu.mma.sync

// 4 rows of 4 lanes would shuffle in a partial warp.
// WARPS: error: attn-convert-to-gpu: 4 rows of 4 lanes do not fill whole warps
func.func @causal(%q: tensor<2x8x?x128xf16>, %k: tensor<2x2x?x128xf16>,
                  %v: tensor<2x2x?x128xf16>, %o: tensor<2x8x?x128xf16>)
    -> tensor<2x8x?x128xf16> {
  %0 = attn.attention ins(%q, %k, %v : tensor<2x8x?x128xf16>,
                          tensor<2x2x?x128xf16>, tensor<2x2x?x128xf16>)
      outs(%o : tensor<2x8x?x128xf16>)
      {structured_mask = #attn.causal<bottom_right>} -> tensor<2x8x?x128xf16>
  return %0 : tensor<2x8x?x128xf16>
}

// -----

// kv_lens trims each batch entry's key loop; regions are inlined per score;
// D = 6 fits one lane per row (no shuffle); BSHD addressing.
// CHECK-LABEL: func.func @regions
// CHECK: gpu.func @regions(%{{.+}}: memref<?xf32>, %{{.+}}: memref<?xf32>, %{{.+}}: memref<?xf32>, %[[LENS:[a-z0-9_]+]]: memref<?xi32>, %{{.+}}: memref<?xf32>, %{{.+}}: index, %{{.+}}: index, %{{.+}}: index, %{{.+}}: index, %{{.+}}: index)
// CHECK-SAME: known_block_size = array<i32: 32, 1, 1>
// CHECK: %[[BATCH:.+]] = gpu.block_id z
// CHECK: %[[LEN:.+]] = memref.load %[[LENS]][%[[BATCH]]] : memref<?xi32>
// CHECK: %[[LENIDX:.+]] = arith.index_cast %[[LEN]] : i32 to index
// CHECK: arith.minsi %{{.+}}, %[[LENIDX]] : index
// A key tile the mask_mod's interval bounds prove hidden from the whole block
// is skipped by the whole block (the state passes through).
// CHECK: scf.for %{{.+}} = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%[[M:.+]] = %{{.+}}, %[[L:.+]] = %{{.+}}, %[[A:.+]] = %{{.+}})
// CHECK: scf.if %{{.+}} -> (f32, f32, vector<6xf32>) {
// CHECK-NEXT: scf.yield %[[M]], %[[L]], %[[A]] : f32, f32, vector<6xf32>
// CHECK-NEXT: } else {
// CHECK-NEXT: gpu.barrier
// CHECK-NOT: gpu.shuffle
// CHECK: math.tanh
// CHECK: arith.cmpi ne
// CHECK: math.exp2
func.func @regions(%q: tensor<3x?x2x6xf32>, %k: tensor<3x?x2x6xf32>,
                   %v: tensor<3x?x2x6xf32>, %lens: tensor<3xi32>,
                   %o: tensor<3x?x2x6xf32>) -> tensor<3x?x2x6xf32> {
  %0 = attn.attention ins(%q, %k, %v : tensor<3x?x2x6xf32>,
                          tensor<3x?x2x6xf32>, tensor<3x?x2x6xf32>)
      kv_lens(%lens : tensor<3xi32>) outs(%o : tensor<3x?x2x6xf32>)
      {layout = #attn.layout<bshd>}
      score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
        %t = math.tanh %s : f32
        attn.yield %t : f32
      }
      mask_mod {
      ^bb0(%b: index, %h: index, %i: index, %j: index):
        %ne = arith.cmpi ne, %i, %j : index
        attn.yield %ne : i1
      } -> tensor<3x?x2x6xf32>
  return %0 : tensor<3x?x2x6xf32>
}

// -----

// A mask broadcast over batch and heads ([Sq, Sk] rows of Sk) and a bias
// broadcast over heads ([B, 1, Sq, 1]: one value per row, key stride 0):
// each row's offset uses its clamped row index, each key its index clamped
// to Sk - 1; the bias is added after the scale, the mask hides.
// CHECK-LABEL: func.func @mask_and_bias
// CHECK: gpu.func @mask_and_bias(%{{.+}}: memref<?xf32>, %{{.+}}: memref<?xf32>, %{{.+}}: memref<?xf32>, %[[MASK:[a-z0-9_]+]]: memref<?xi1>, %[[BIAS:[a-z0-9_]+]]: memref<?xf16>, %{{.+}}: memref<?xf32>, %{{.+}}: index, %[[SQ:[a-z0-9_]+]]: index, %[[SK:[a-z0-9_]+]]: index, %{{.+}}: index, %{{.+}}: index)
// CHECK: %[[SAFE:.+]] = arith.select %{{.+}}, %{{.+}}, %{{.+}} : index
// CHECK: %[[MROW:.+]] = arith.muli %[[SAFE]], %[[SK]] : index
// CHECK: %[[BROW:.+]] = arith.addi %[[SAFE]], %{{.+}} : index
// CHECK: scf.for
// CHECK: scf.for %[[J:[a-z0-9_]+]] =
// CHECK: %[[KEY:.+]] = arith.addi %{{.+}}, %[[J]] : index
// CHECK: %[[SAFEKEY:.+]] = arith.minsi %[[KEY]], %{{.+}} : index
// CHECK: %[[B:.+]] = memref.load %[[BIAS]][%[[BROW]]] : memref<?xf16>
// CHECK: %[[BX:.+]] = arith.extf %[[B]] : f16 to f32
// CHECK: arith.addf %{{.+}}, %[[BX]] : f32
// CHECK: %[[MAT:.+]] = arith.addi %[[MROW]], %[[SAFEKEY]] : index
// CHECK: %[[M:.+]] = memref.load %[[MASK]][%[[MAT]]] : memref<?xi1>
// CHECK: arith.andi %{{.+}}, %[[M]] : i1
func.func @mask_and_bias(%q: tensor<2x4x?x32xf32>, %k: tensor<2x4x?x32xf32>,
                         %v: tensor<2x4x?x32xf32>, %m: tensor<?x?xi1>,
                         %bias: tensor<2x1x?x1xf16>, %o: tensor<2x4x?x32xf32>)
    -> tensor<2x4x?x32xf32> {
  %0 = attn.attention ins(%q, %k, %v : tensor<2x4x?x32xf32>,
                          tensor<2x4x?x32xf32>, tensor<2x4x?x32xf32>)
      mask(%m : tensor<?x?xi1>) bias(%bias : tensor<2x1x?x1xf16>)
      outs(%o : tensor<2x4x?x32xf32>) -> tensor<2x4x?x32xf32>
  return %0 : tensor<2x4x?x32xf32>
}

// -----

// D = 40, an odd multiple of 8, on tensor cores: two 16-wide steps and a
// half one. Its A fragment holds Q's columns 32-39 (two pairs a lane) and
// zeros; per key block, K's columns 32-39 come by one x1 ldmatrix into B's
// rows 0-7, rows 8-15 zeros.
// MMA-LABEL: func.func @half_step
// MMA: gpu.func @half_step({{.*}}) workgroup(%[[KT:.+]] : memref<32x40xf16, #gpu.address_space<workgroup>> {{.+}}, %{{.+}} : memref<32x40xf16,
// MMA-DAG: %[[C32:.+]] = arith.constant 32 : index
// MMA-DAG: %[[ZEROB:.+]] = arith.constant dense<0.000000e+00> : vector<2x2xf16>
// MMA-DAG: %[[ZEROA:.+]] = arith.constant dense<0.000000e+00> : vector<4x2xf16>
// MMA-COUNT-8: vector.load %{{.+}}[%{{.+}}] {alignment = 4 : i64} : memref<?xf16>, vector<2xf16>
// MMA: %[[Q0:.+]] = vector.load %{{.+}}[%{{.+}}] {alignment = 4 : i64} : memref<?xf16>, vector<2xf16>
// MMA-NEXT: %[[HALFA0:.+]] = vector.insert %[[Q0]], %[[ZEROA]] [0] : vector<2xf16> into vector<4x2xf16>
// MMA: %[[Q1:.+]] = vector.load %{{.+}}[%{{.+}}] {alignment = 4 : i64} : memref<?xf16>, vector<2xf16>
// MMA-NEXT: %[[HALFA:.+]] = vector.insert %[[Q1]], %[[HALFA0]] [1] : vector<2xf16> into vector<4x2xf16>
// MMA-NOT: vector.insert {{.+}} into vector<4x2xf16>
// MMA: nvgpu.ldmatrix %[[KT]][%{{.+}}, %{{.+}}] {numTiles = 4 : i32, transpose = false}
// MMA-COUNT-2: nvgpu.mma.sync
// MMA-NEXT: %[[KHALF:.+]] = nvgpu.ldmatrix %[[KT]][%{{.+}}, %[[C32]]] {numTiles = 1 : i32, transpose = false} : memref<32x40xf16, #gpu.address_space<workgroup>> -> vector<1x2xf16>
// MMA-NEXT: %[[ROWS:.+]] = vector.extract %[[KHALF]][0] : vector<2xf16> from vector<1x2xf16>
// MMA-NEXT: %[[HALFB:.+]] = vector.insert %[[ROWS]], %[[ZEROB]] [0] : vector<2xf16> into vector<2x2xf16>
// MMA-NEXT: nvgpu.mma.sync(%[[HALFA]], %[[HALFB]], %{{.+}}) {mmaShape = [16, 8, 16]}
func.func @half_step(%q: tensor<1x2x?x40xf16>, %k: tensor<1x2x?x40xf16>,
                     %v: tensor<1x2x?x40xf16>, %o: tensor<1x2x?x40xf16>)
    -> tensor<1x2x?x40xf16> {
  %0 = attn.attention ins(%q, %k, %v : tensor<1x2x?x40xf16>,
                          tensor<1x2x?x40xf16>, tensor<1x2x?x40xf16>)
      outs(%o : tensor<1x2x?x40xf16>) -> tensor<1x2x?x40xf16>
  return %0 : tensor<1x2x?x40xf16>
}

// -----

// Dynamic head counts come in as arguments: the key/value head of query head
// h is h / (Hq / Hkv), and the flattened offsets multiply by Hq or Hkv.
// CHECK-LABEL: func.func @dynamic_heads
// CHECK-SAME: (%[[Q:[a-z0-9_]+]]: memref<1x?x16x32xf32>, %[[K:[a-z0-9_]+]]: memref<1x?x16x32xf32>
// CHECK: %[[HQ:.+]] = memref.dim %[[Q]], %{{.+}} : memref<1x?x16x32xf32>
// CHECK: %[[HKV:.+]] = memref.dim %[[K]], %{{.+}} : memref<1x?x16x32xf32>
// CHECK: gpu.launch_func @dynamic_heads_kernels::@dynamic_heads blocks in (%{{.+}}, %[[HQ]], %{{.+}}) {{.*}} %[[HQ]] : index, %[[HKV]] : index)
// CHECK: gpu.func @dynamic_heads({{.*}}, %[[KHQ:[a-z0-9_]+]]: index, %[[KHKV:[a-z0-9_]+]]: index)
// CHECK: %[[HEAD:.+]] = gpu.block_id y
// CHECK: %[[GROUP:.+]] = arith.divui %[[KHQ]], %[[KHKV]] : index
// CHECK: arith.divui %[[HEAD]], %[[GROUP]] : index
func.func @dynamic_heads(%q: tensor<1x?x16x32xf32>, %k: tensor<1x?x16x32xf32>,
                         %v: tensor<1x?x16x32xf32>, %o: tensor<1x?x16x32xf32>)
    -> tensor<1x?x16x32xf32> {
  %0 = attn.attention ins(%q, %k, %v : tensor<1x?x16x32xf32>,
                          tensor<1x?x16x32xf32>, tensor<1x?x16x32xf32>)
      outs(%o : tensor<1x?x16x32xf32>) -> tensor<1x?x16x32xf32>
  return %0 : tensor<1x?x16x32xf32>
}

// -----

// D = 66 and Dv = 38, which no power of two over 2 divides: 4 lanes a row
// still (slices of 18 and 10, not 33 and 19 on 2 lanes), each holding
// round-robin chunks of 2. Lane 0 alone holds a 9th chunk of q and k, lanes
// 0-2 a 5th of v and out; a chunk past the row reads column 0 and holds
// zeros, and is not stored.
// CHECK-LABEL: func.func @uneven_slices
// CHECK: %[[C128:.+]] = arith.constant 128 : index
// CHECK: threads in (%[[C128]], %{{.+}}, %{{.+}})
// CHECK: gpu.func @uneven_slices
// CHECK-SAME: workgroup(%[[KT:.+]] : memref<32x66xf32, #gpu.address_space<workgroup>> {{.+}}, %[[VT:.+]] : memref<32x38xf32,
// CHECK-DAG: %[[C0:.+]] = arith.constant 0 : index
// CHECK-DAG: %[[C1:.+]] = arith.constant 1 : index
// CHECK-DAG: %[[C3:.+]] = arith.constant 3 : index
// CHECK-DAG: %[[C4:.+]] = arith.constant 4 : index
// CHECK-DAG: %[[ZEROS:.+]] = arith.constant dense<0.000000e+00> : vector<2xf32>
// CHECK: %[[LANE:.+]] = arith.remui %{{.+}}, %[[C4]] : index
// CHECK: %[[NINTH:.+]] = arith.cmpi slt, %[[LANE]], %[[C1]] : index
// CHECK: %[[QCOL:.+]] = arith.select %[[NINTH]], %{{.+}}, %[[C0]] : index
// CHECK: %[[QAT:.+]] = arith.addi %{{.+}}, %[[QCOL]] : index
// CHECK: %[[Q9:.+]] = vector.load %{{.+}}[%[[QAT]]] {{.+}} vector<2xf32>
// CHECK: %[[Q9Z:.+]] = arith.select %[[NINTH]], %[[Q9]], %[[ZEROS]] : vector<2xf32>
// CHECK: vector.shuffle %{{.+}}, %[[Q9Z]] {{.+}} : vector<16xf32>, vector<2xf32>
// CHECK: arith.mulf %{{.+}}, %{{.+}} : vector<18xf32>
// CHECK: %[[K9:.+]] = vector.load %[[KT]][%{{.+}}, %[[QCOL]]] : memref<32x66xf32, {{.+}}>, vector<2xf32>
// CHECK: arith.select %[[NINTH]], %[[K9]], %[[ZEROS]] : vector<2xf32>
// CHECK: %[[FIFTH:.+]] = arith.cmpi slt, %[[LANE]], %[[C3]] : index
// CHECK: %[[VCOL:.+]] = arith.select %[[FIFTH]], %{{.+}}, %[[C0]] : index
// CHECK: %[[V5:.+]] = vector.load %[[VT]][%{{.+}}, %[[VCOL]]] : memref<32x38xf32, {{.+}}>, vector<2xf32>
// CHECK: arith.select %[[FIFTH]], %[[V5]], %[[ZEROS]] : vector<2xf32>
// CHECK-COUNT-4: vector.store %{{.+}} : memref<?xf32>, vector<2xf32>
// CHECK: %[[STORE5:.+]] = arith.cmpi slt, %[[LANE]], %[[C3]] : index
// CHECK-NEXT: scf.if %[[STORE5]] {
// CHECK: vector.store %{{.+}} : memref<?xf32>, vector<2xf32>
func.func @uneven_slices(%q: tensor<1x2x?x66xf32>, %k: tensor<1x2x?x66xf32>,
                         %v: tensor<1x2x?x38xf32>, %o: tensor<1x2x?x38xf32>)
    -> tensor<1x2x?x38xf32> {
  %0 = attn.attention ins(%q, %k, %v : tensor<1x2x?x66xf32>,
                          tensor<1x2x?x66xf32>, tensor<1x2x?x38xf32>)
      outs(%o : tensor<1x2x?x38xf32>) -> tensor<1x2x?x38xf32>
  return %0 : tensor<1x2x?x38xf32>
}

// -----

// A sparse pattern: the block's keys start at its chunk (floor(qFirst / 64)
// * 64), a key tile the chunks prove hidden is skipped whole (the branch is
// the block's), one every row sees whole runs without the per-score test,
// and the rest test chunk(i) == chunk(j) per score.
// CHECK-LABEL: gpu.func @chunked
// CHECK: arith.floordivsi %{{.+}}, %[[C64:.+]] : index
// CHECK: scf.for
// CHECK: %[[HIDDEN:.+]] = arith.ori
// CHECK: scf.if %[[HIDDEN]]
// CHECK: } else {
// CHECK: scf.if %{{.+}} -> (f32, f32, vector<32xf32>) {
// CHECK-NOT: arith.floordivsi
// CHECK: } else {
// CHECK: arith.floordivsi
// CHECK: arith.cmpi eq
func.func @chunked(%q: tensor<1x2x?x32xf32>, %k: tensor<1x2x?x32xf32>,
                   %v: tensor<1x2x?x32xf32>, %o: tensor<1x2x?x32xf32>)
    -> tensor<1x2x?x32xf32> {
  %0 = attn.attention ins(%q, %k, %v : tensor<1x2x?x32xf32>,
                          tensor<1x2x?x32xf32>, tensor<1x2x?x32xf32>)
      outs(%o : tensor<1x2x?x32xf32>)
      {structured_mask = #attn.chunked<size = 64>} -> tensor<1x2x?x32xf32>
  return %0 : tensor<1x2x?x32xf32>
}

// -----

// Gaussian similarity: each lane scores k . (q scale - k scale / 2) over its
// slice, one fma more than a dot product. It runs the FMA kernel even under
// mma=true: the tensor-core fragments do not give the key norms.
// CHECK-LABEL: gpu.func @gaussian
// Both scales hold log2(e): 0.25 * 1.4427 and half of it, negated.
// CHECK-DAG: %[[HALF:.+]] = arith.constant dense<-0.180336878> : vector<32xf32>
// CHECK-DAG: %[[SCALE:.+]] = arith.constant dense<0.360673755> : vector<32xf32>
// CHECK: %[[QSCALED:.+]] = arith.mulf %{{.+}}, %[[SCALE]] : vector<32xf32>
// CHECK: scf.for
// CHECK: %[[KS:.+]] = vector.shuffle {{.*}} : vector<28xf32>, vector<4xf32>
// CHECK: %[[QSIDE:.+]] = vector.fma %[[KS]], %[[HALF]], %[[QSCALED]] : vector<32xf32>
// CHECK: %[[QSIDE0:.+]] = vector.shuffle %[[QSIDE]], %[[QSIDE]] [0, 1, 2, 3]
// CHECK: %[[KS0:.+]] = vector.shuffle %[[KS]], %[[KS]] [0, 1, 2, 3]
// CHECK: arith.mulf %[[QSIDE0]], %[[KS0]] : vector<4xf32>
// MMA-LABEL: gpu.func @gaussian
// MMA-NOT: nvgpu.mma.sync
// MMA: vector.fma
func.func @gaussian(%q: tensor<1x2x?x64xf16>, %k: tensor<1x2x?x64xf16>,
                    %v: tensor<1x2x?x64xf16>, %o: tensor<1x2x?x64xf16>)
    -> tensor<1x2x?x64xf16> {
  %0 = attn.attention ins(%q, %k, %v : tensor<1x2x?x64xf16>,
                          tensor<1x2x?x64xf16>, tensor<1x2x?x64xf16>)
      outs(%o : tensor<1x2x?x64xf16>)
      {scale = 0.25 : f32, similarity = #attn.similarity<gaussian>}
      -> tensor<1x2x?x64xf16>
  return %0 : tensor<1x2x?x64xf16>
}

// -----

// An lse output: the kernel takes it after out and stores each valid row's
// (max + log2(sum)) ln 2 from its base-2 statistics, -inf for a row that saw
// no key, at [b, h, i] of the flat [B, Hq, Sq]. On tensor cores one lane of
// the row's quad stores it.
// CHECK-LABEL: func.func @lse
// CHECK: gpu.launch_func @lse_kernels::@lse {{.*}} args({{.*}} : memref<?xf16>, {{.*}} : memref<?xf16>, {{.*}} : memref<?xf16>, {{.*}} : memref<?xf16>, {{.*}} : memref<?xf32>,
// CHECK-LABEL: gpu.func @lse
// CHECK-SAME: %[[LSE:[a-z0-9_]+]]: memref<?xf32>, %{{.+}}: index
// CHECK: %[[LOG:.+]] = math.log2 %{{.+}} : f32
// CHECK: %[[BASE2:.+]] = arith.addf %{{.+}}, %[[LOG]] : f32
// CHECK: %[[NATURAL:.+]] = arith.mulf %[[BASE2]], %{{.+}} : f32
// CHECK: %[[VALUE:.+]] = arith.select %{{.+}}, %[[NATURAL]], %{{.+}} : f32
// CHECK: memref.store %[[VALUE]], %[[LSE]][%{{.+}}] : memref<?xf32>
// MMA-LABEL: gpu.func @lse
// MMA: nvgpu.mma.sync
// MMA-COUNT-2: math.log2
func.func @lse(%q: tensor<1x2x?x64xf16>, %k: tensor<1x2x?x64xf16>,
               %v: tensor<1x2x?x64xf16>, %o: tensor<1x2x?x64xf16>,
               %l: tensor<1x2x?xf32>)
    -> (tensor<1x2x?x64xf16>, tensor<1x2x?xf32>) {
  %0:2 = attn.attention ins(%q, %k, %v : tensor<1x2x?x64xf16>,
                            tensor<1x2x?x64xf16>, tensor<1x2x?x64xf16>)
      outs(%o : tensor<1x2x?x64xf16>) lse(%l : tensor<1x2x?xf32>)
      {structured_mask = #attn.causal<top_left>}
      -> tensor<1x2x?x64xf16>, tensor<1x2x?xf32>
  return %0#0, %0#1 : tensor<1x2x?x64xf16>, tensor<1x2x?xf32>
}

// -----

// A relative-position bias: the table is an argument after v, read per
// score at h * NB + bucket(j - i).
// CHECK-LABEL: gpu.func @relpos
// CHECK-SAME: (%{{.+}}: memref<?xf32>, %{{.+}}: memref<?xf32>, %{{.+}}: memref<?xf32>, %[[TABLE:[a-z0-9_]+]]: memref<?xf32>, %{{.+}}: memref<?xf32>,
// CHECK: arith.cmpi sge
// CHECK: %[[B:.+]] = memref.load %[[TABLE]][%{{.+}}] : memref<?xf32>
// CHECK: arith.addf %{{.+}}, %[[B]] : f32
func.func @relpos(%q: tensor<1x2x?x32xf32>, %k: tensor<1x2x?x32xf32>,
                  %v: tensor<1x2x?x32xf32>, %t: tensor<2x32xf32>,
                  %o: tensor<1x2x?x32xf32>) -> tensor<1x2x?x32xf32> {
  %0 = attn.attention ins(%q, %k, %v : tensor<1x2x?x32xf32>,
                          tensor<1x2x?x32xf32>, tensor<1x2x?x32xf32>)
      rel_bias(%t : tensor<2x32xf32>) outs(%o : tensor<1x2x?x32xf32>)
      {relpos = #attn.relpos<buckets = 32, max_distance = 128,
                             bidirectional = true>}
      -> tensor<1x2x?x32xf32>
  return %0 : tensor<1x2x?x32xf32>
}

// -----

// Additive similarity on the FMA kernel (also under mma=true): each lane
// sums w tanh(q + k) over its slice, w its slice of the head's weights,
// scaled.
// CHECK-LABEL: gpu.func @additive
// CHECK: scf.for
// CHECK: %[[KS:.+]] = vector.shuffle {{.*}} : vector<28xf32>, vector<4xf32>
// CHECK: %[[SUM:.+]] = arith.addf %{{.+}}, %[[KS]] : vector<32xf32>
// CHECK: %[[T:.+]] = math.tanh %[[SUM]] : vector<32xf32>
// CHECK: %[[W0:.+]] = vector.shuffle %[[W:.+]], %[[W]] [0, 1, 2, 3]
// CHECK: %[[T0:.+]] = vector.shuffle %[[T]], %[[T]] [0, 1, 2, 3]
// CHECK: arith.mulf %[[W0]], %[[T0]] : vector<4xf32>
// MMA-LABEL: gpu.func @additive
// MMA-NOT: nvgpu.mma.sync
// MMA: math.tanh
func.func @additive(%q: tensor<1x2x?x64xf16>, %k: tensor<1x2x?x64xf16>,
                    %v: tensor<1x2x?x64xf16>, %w: tensor<2x64xf32>,
                    %o: tensor<1x2x?x64xf16>) -> tensor<1x2x?x64xf16> {
  %0 = attn.attention ins(%q, %k, %v : tensor<1x2x?x64xf16>,
                          tensor<1x2x?x64xf16>, tensor<1x2x?x64xf16>)
      additive_weight(%w : tensor<2x64xf32>) outs(%o : tensor<1x2x?x64xf16>)
      {scale = 1.0 : f32, similarity = #attn.similarity<additive>}
      -> tensor<1x2x?x64xf16>
  return %0 : tensor<1x2x?x64xf16>
}

// -----

// Adaptive spans: the block's key loop starts at its first row minus its
// head's span (keys before are never loaded); each score still tests them,
// and no key tile runs whole.
// CHECK-LABEL: gpu.func @spans
// CHECK-SAME: %[[S:[a-z0-9_]+]]: memref<?xi32>, %{{.+}}: memref<?xf32>,
// CHECK: %[[BLOCKSPAN:.+]] = memref.load %[[S]][%[[HEAD:.+]]] : memref<?xi32>
// CHECK: %[[W:.+]] = arith.index_cast %[[BLOCKSPAN]] : i32 to index
// CHECK: %[[FROM:.+]] = arith.subi %{{.+}}, %[[W]] : index
// CHECK: arith.maxsi %[[FROM]], %{{.+}} : index
// CHECK: scf.for
// CHECK: %[[SPAN:.+]] = memref.load %[[S]][%[[HEAD]]] : memref<?xi32>
// CHECK: arith.index_cast %[[SPAN]] : i32 to index
// CHECK: arith.cmpi sle
func.func @spans(%q: tensor<1x2x?x32xf32>, %k: tensor<1x2x?x32xf32>,
                 %v: tensor<1x2x?x32xf32>, %s: tensor<2xi32>,
                 %o: tensor<1x2x?x32xf32>) -> tensor<1x2x?x32xf32> {
  %0 = attn.attention ins(%q, %k, %v : tensor<1x2x?x32xf32>,
                          tensor<1x2x?x32xf32>, tensor<1x2x?x32xf32>)
      spans(%s : tensor<2xi32>) outs(%o : tensor<1x2x?x32xf32>)
      -> tensor<1x2x?x32xf32>
  return %0 : tensor<1x2x?x32xf32>
}

// -----

// A run-time block mask (heads broadcast): the key loop covers every key
// (full blocks show keys the causal rule hides); per key tile the least and
// greatest class of its blocks skip the tile (all empty, or none full while
// causal hides it) or run it whole (all full, keys in range); each score of
// the other tiles reads its block's class.
// CHECK-LABEL: gpu.func @block_mask
// CHECK-SAME: %[[M:[a-z0-9_]+]]: memref<?xi8>, %{{[a-z0-9_]+}}: memref<?xf32>, %{{[a-z0-9_]+}}: index, %[[SQ:[a-z0-9_]+]]: index, %[[SK:[a-z0-9_]+]]: index
// CHECK-DAG: %[[QBLOCKS:.+]] = arith.ceildivui %[[SQ]], %c64 : index
// CHECK-DAG: %[[KBLOCKS:.+]] = arith.ceildivui %[[SK]], %c32 : index
// CHECK: scf.for %{{.+}} = %c0 to %[[SK]] step %c32
// CHECK: %[[RANGE:.+]]:2 = scf.for %{{.+}} iter_args(%{{.+}} = %c2_i8, %{{.+}} = %c0_i8) -> (i8, i8)
// CHECK: scf.for
// CHECK: memref.load %[[M]][%{{.+}}] : memref<?xi8>
// CHECK: %[[NOFULL:.+]] = arith.cmpi slt, %[[RANGE]]#1, %c2_i8 : i8
// CHECK: %[[EMPTY:.+]] = arith.cmpi slt, %[[RANGE]]#1, %c1_i8 : i8
// CHECK: %[[HIDDEN:.+]] = arith.andi %[[NOFULL]], %{{.+}} : i1
// CHECK: %[[SKIP:.+]] = arith.ori %[[EMPTY]], %[[HIDDEN]] : i1
// CHECK: scf.if %[[SKIP]]
// CHECK: } else {
// CHECK: %[[LEAST:.+]]:2 = scf.for
// CHECK: %[[FULL:.+]] = arith.cmpi sge, %[[LEAST]]#0, %c2_i8 : i8
// CHECK: %[[WHOLE:.+]] = arith.andi %{{.+}}, %[[FULL]] : i1
// CHECK: scf.if %[[WHOLE]]
// CHECK: } else {
// CHECK: %[[C:.+]] = memref.load %[[M]][%{{.+}}] : memref<?xi8>
// CHECK-DAG: arith.cmpi eq, %[[C]], %c1_i8 : i8
// CHECK-DAG: arith.cmpi sge, %[[C]], %c2_i8 : i8
func.func @block_mask(%q: tensor<1x2x?x32xf32>, %k: tensor<1x2x?x32xf32>,
                      %v: tensor<1x2x?x32xf32>, %m: tensor<1x1x?x?xi8>,
                      %o: tensor<1x2x?x32xf32>) -> tensor<1x2x?x32xf32> {
  %0 = attn.attention ins(%q, %k, %v : tensor<1x2x?x32xf32>,
                          tensor<1x2x?x32xf32>, tensor<1x2x?x32xf32>)
      block_mask(%m : tensor<1x1x?x?xi8>) outs(%o : tensor<1x2x?x32xf32>)
      {block_sizes = array<i64: 64, 32>,
       structured_mask = #attn.causal<top_left>} -> tensor<1x2x?x32xf32>
  return %0 : tensor<1x2x?x32xf32>
}

// -----

// Linear attention, causal, GQA 2:1: blocks of 128 threads per (slice of
// Dv, head, batch entry, chunk of 256 rows), 2 slices of 16 columns and
// chunks of rows (B Hq = 2 blocks leave a GPU idle; 16 columns at least;
// Sq is dynamic: 256 rows a chunk). In shared memory: the slice of the
// state S [D * 16] and z [D]; phi(k) of the staged keys, then phi(q) of a
// group of 16 rows [16 * D]; V's slice of the staged keys [16 * 16]; the
// group's scores [16 * 16]; phi(k) of the keys beyond the state [15 * (D +
// 1)]. The host allocates the chunks' states, 3 floats per row of k (B Sk
// Hkv rows hold B Hkv floor(Sk / 256) chunks of 2 slices of D * 16 + D
// floats), and launches three kernels over the same chunks and slices. The
// first (a block per KV head: the 2 query heads share its states) folds
// each chunk of 256 keys that the last chunk's first row sees into a state
// of its own, the grid's chunks taking them in turn, and stores it. The
// second (likewise) adds to each chunk's state those before it, each block
// a share of the entries.
// The third starts from the prefix sum of the whole chunks its chunk's
// first row sees, and per group of its rows: fold the keys its
// first row sees 16 at a time (stage phi(k) and V, a barrier, add them to
// the entries each thread owns, a barrier), stage its phi(q) and the keys
// its later rows see beyond those, a barrier, score those, a barrier, write
// its rows as (phi(q) S + scores V) / (phi(q) z + sum of scores) (0 without
// keys), a barrier.
// CHECK-LABEL: func.func @linear
// CHECK: %[[SK:.+]] = memref.dim %arg1, %c2
// CHECK: %[[SIZE:.+]] = arith.muli %[[SK]], %c3 : index
// CHECK: %[[STATES:.+]] = gpu.alloc (%[[SIZE]]) {attn.rows_of = 1 : i64, attn.width = 3 : i64} : memref<?xf32>
// CHECK: %[[CHUNKS:.+]] = arith.ceildivui %{{.+}}, %c256 : index
// CHECK: %[[X:.+]] = arith.muli %[[CHUNKS]], %c2 : index
// CHECK: gpu.launch_func @linear_kernels::@linear_chunk_states blocks in (%[[X]], %c1, %c1) threads in (%c128, %c1, %c1)
// CHECK-SAME: %[[STATES]] : memref<?xf32>
// CHECK-SAME: attn.block_rows = 256 : i64, attn.column_blocks = 2 : i64, attn.packed_heads = 2 : i64
// CHECK-NEXT: gpu.launch_func @linear_kernels::@linear_chunk_prefixes blocks in (%[[X]], %c1, %c1) threads in (%c128, %c1, %c1)
// CHECK-SAME: %[[STATES]] : memref<?xf32>
// CHECK-SAME: attn.block_rows = 256 : i64, attn.column_blocks = 2 : i64, attn.packed_heads = 2 : i64
// CHECK-NEXT: gpu.launch_func @linear_kernels::@linear blocks in (%[[X]], %c2, %c1) threads in (%c128, %c1, %c1)
// CHECK-SAME: %[[STATES]] : memref<?xf32>
// CHECK-SAME: attn.block_rows = 256 : i64, attn.column_blocks = 2 : i64}
// CHECK-NEXT: gpu.dealloc %[[STATES]]
// CHECK-LABEL: gpu.func @linear_chunk_states
// CHECK-SAME: workgroup(%[[CS:[a-z0-9_]+]] : memref<256xf32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}, %[[CZ:[a-z0-9_]+]] : memref<16xf32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}, %{{[a-z0-9_]+}} : memref<256xf32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}, %{{[a-z0-9_]+}} : memref<256xf32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}) kernel
// CHECK: %[[CSLICE:.+]] = arith.remui %block_id_x, %c2 : index
// CHECK: %[[CCHUNK:.+]] = arith.divui %block_id_x, %c2 : index
// CHECK-NOT: scf.if
// CHECK: %[[GRIDCHUNKS:.+]] = arith.ceildivui %arg6, %c256 : index
// CHECK: %[[LASTCHUNK:.+]] = arith.subi %[[GRIDCHUNKS]], %c1 : index
// CHECK: %[[LASTROW:.+]] = arith.muli %[[LASTCHUNK]], %c256 : index
// CHECK: %[[LASTSEEN:.+]] = arith.minsi %{{.+}}, %arg7 : index
// CHECK: %[[NEEDED:.+]] = arith.divui %[[LASTSEEN]], %c256 : index
// CHECK: scf.for %[[C:.+]] = %[[CCHUNK]] to %[[NEEDED]] step %[[GRIDCHUNKS]] {
// CHECK: memref.store %{{.+}}, %[[CS]]
// CHECK: memref.store %{{.+}}, %[[CZ]]
// CHECK-NOT: gpu.barrier
// CHECK: scf.for %{{.+}} = %{{.+}} to %{{.+}} step %c16 {
// CHECK: %[[KVROWS:.+]] = arith.muli %block_id_z, %arg9 : index
// CHECK: arith.addi %[[KVROWS]], %block_id_y : index
// CHECK: gpu.barrier
// CHECK: gpu.barrier
// CHECK: }
// CHECK: memref.load %[[CS]]
// CHECK: memref.store %{{.+}}, %arg4
// CHECK: memref.load %[[CZ]]
// CHECK: memref.store %{{.+}}, %arg4
// CHECK: gpu.return
// CHECK-LABEL: gpu.func @linear_chunk_prefixes
// CHECK-NOT: workgroup
// CHECK: %[[PCHUNK:.+]] = arith.divui %block_id_x, %c2 : index
// CHECK-NOT: scf.if
// CHECK: %[[PGRID:.+]] = arith.ceildivui %arg6, %c256 : index
// CHECK: %[[PNEEDED:.+]] = arith.divui %{{.+}}, %c256 : index
// CHECK: %[[SHARE:.+]] = arith.ceildivui %c272, %[[PGRID]] : index
// CHECK: %[[PFROM:.+]] = arith.muli %[[PCHUNK]], %[[SHARE]] : index
// CHECK: %[[PEND:.+]] = arith.addi %[[PFROM]], %[[SHARE]] : index
// CHECK: %[[PTO:.+]] = arith.minsi %[[PEND]], %c272 : index
// CHECK: %[[PFIRST:.+]] = arith.addi %[[PFROM]], %thread_id_x : index
// CHECK: scf.for %{{.+}} = %[[PFIRST]] to %[[PTO]] step %c128 {
// CHECK: scf.for %{{.+}} = %c0 to %[[PNEEDED]] step %c1 iter_args(%[[RUNNING:.+]] = %{{.+}}) -> (f32) {
// CHECK: %[[CHUNKSTATE:.+]] = memref.load %arg4
// CHECK: %[[PREFIX:.+]] = arith.addf %[[RUNNING]], %[[CHUNKSTATE]] : f32
// CHECK: memref.store %[[PREFIX]], %arg4
// CHECK: scf.yield %[[PREFIX]] : f32
// CHECK: gpu.return
// CHECK-LABEL: gpu.func @linear(
// CHECK-SAME: workgroup(%[[S:[a-z0-9_]+]] : memref<256xf32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}, %[[Z:[a-z0-9_]+]] : memref<16xf32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}, %[[PHIS:[a-z0-9_]+]] : memref<256xf32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}, %[[VALUES:[a-z0-9_]+]] : memref<256xf32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}, %[[SCORES:[a-z0-9_]+]] : memref<256xf32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}, %[[BEYOND:[a-z0-9_]+]] : memref<255xf32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64})
// CHECK: %[[SLICE:.+]] = arith.remui %block_id_x, %c2 : index
// CHECK: %[[CHUNK:.+]] = arith.divui %block_id_x, %c2 : index
// CHECK: %[[BASE:.+]] = arith.muli %[[SLICE]], %c16 : index
// CHECK: %[[FIRSTROW:.+]] = arith.muli %[[CHUNK]], %c256 : index
// CHECK: %[[CHUNKEND:.+]] = arith.addi %[[FIRSTROW]], %c256 : index
// CHECK: %[[ENDROW:.+]] = arith.minsi %[[CHUNKEND]], %arg6 : index
// CHECK: %[[FIRSTSEEN:.+]] = arith.minsi %{{.+}}, %arg7 : index
// CHECK: %[[SEENCHUNKS:.+]] = arith.divui %[[FIRSTSEEN]], %c256 : index
// CHECK: %[[ATLEASTONE:.+]] = arith.maxsi %[[SEENCHUNKS]], %c1 : index
// CHECK: %[[LAST:.+]] = arith.subi %[[ATLEASTONE]], %c1 : index
// CHECK: scf.for %{{.+}} = %thread_id_x to %c256 step %c128 {
// CHECK: scf.for %{{.+}} = %[[LAST]] to %[[SEENCHUNKS]] step %c1
// CHECK: memref.load %arg4
// CHECK: memref.store %{{.+}}, %[[S]]
// CHECK: scf.for %{{.+}} = %[[LAST]] to %[[SEENCHUNKS]] step %c1
// CHECK: memref.load %arg4
// CHECK: memref.store %{{.+}}, %[[Z]]
// CHECK-NOT: gpu.barrier
// CHECK: %[[PREFIX:.+]] = arith.muli %[[SEENCHUNKS]], %c256 : index
// CHECK: scf.for %[[FIRST:.+]] = %[[FIRSTROW]] to %[[ENDROW]] step %c16 iter_args(%[[FOLDED:.+]] = %[[PREFIX]]) -> (index)
// CHECK: %[[SEEN:.+]] = arith.minsi %{{.+}}, %{{.+}} : index
// CHECK: %[[NEXT:.+]] = arith.maxsi %[[FOLDED]], %[[SEEN]] : index
// CHECK: scf.for %{{.+}} = %[[FOLDED]] to %[[NEXT]] step %c16
// CHECK: math.exp
// CHECK: memref.store %{{.+}}, %[[PHIS]]
// CHECK: arith.addi %[[BASE]], %{{.+}} : index
// CHECK: memref.store %{{.+}}, %[[VALUES]]
// CHECK: gpu.barrier
// CHECK: memref.load %[[VALUES]]
// CHECK: memref.load %[[PHIS]]
// CHECK: memref.store %{{.+}}, %[[S]]
// CHECK: memref.store %{{.+}}, %[[Z]]
// CHECK: gpu.barrier
// CHECK: memref.store %{{.+}}, %[[PHIS]]
// CHECK: scf.for %{{.+}} = %thread_id_x to %c240 step %c128
// CHECK: math.exp
// CHECK: arith.muli %{{.+}}, %c17 : index
// CHECK: memref.store %{{.+}}, %[[BEYOND]]
// CHECK: memref.store %{{.+}}, %[[VALUES]]
// CHECK: gpu.barrier
// CHECK: memref.load %[[BEYOND]]
// CHECK: memref.load %[[PHIS]]
// CHECK: memref.store %{{.+}}, %[[SCORES]]
// CHECK: gpu.barrier
// CHECK: %[[SUMS:.+]]:2 = scf.for %{{.+}} = %c0 to %c16 step %c1
// CHECK: %[[ALL:.+]]:2 = scf.for %{{.+}} = %c0 to %{{.+}} step %c1 iter_args(%{{.+}} = %[[SUMS]]#0, %{{.+}} = %[[SUMS]]#1)
// CHECK: memref.load %[[SCORES]]
// CHECK: memref.load %[[VALUES]]
// CHECK: %[[SEENKEY:.+]] = arith.cmpf ogt, %[[ALL]]#1, %{{.+}} : f32
// CHECK: %[[RATIO:.+]] = arith.divf %[[ALL]]#0, %[[ALL]]#1 : f32
// CHECK: arith.select %[[SEENKEY]], %[[RATIO]], %{{.+}} : f32
// CHECK: arith.truncf
// CHECK: gpu.barrier
// CHECK: scf.yield %[[NEXT]] : index
func.func @linear(%q: tensor<1x2x?x16xf16>, %k: tensor<1x1x?x16xf16>,
                  %v: tensor<1x1x?x32xf16>, %o: tensor<1x2x?x32xf16>)
    -> tensor<1x2x?x32xf16> {
  %0 = attn.linear_attention ins(%q, %k, %v : tensor<1x2x?x16xf16>,
                                 tensor<1x1x?x16xf16>, tensor<1x1x?x32xf16>)
      outs(%o : tensor<1x2x?x32xf16>) {structured_mask = #attn.causal<top_left>}
      -> tensor<1x2x?x32xf16>
  return %0 : tensor<1x2x?x32xf16>
}

// -----

// Linear attention whose state [D, Dv] = [128, 97] f32 exceeds 48 KiB:
// blocks of 49 columns of Dv, 2 a (head, batch entry) (the fewest equal
// slices that fit beside z [128] and, for groups of 8 rows, phi(q) [8 *
// 128], V's slice of 8 keys [8 * 49] and scores [8 * 8]: 128 x 49 + 128 +
// 1024 + 392 + 64 floats; B is dynamic, so no more slices or chunks for
// parallelism), the last skipping the columns past Dv. Each thread zeroes
// the entries it owns (no barrier: the fold's staging has one before any
// other thread reads them). Without a mask it folds every key, 8 at a time,
// then writes the rows a group at a time.
// CHECK-LABEL: func.func @linear_chunks
// CHECK: gpu.launch_func @linear_chunks_kernels::@linear_chunks blocks in (%{{.+}}, %c2, %dim)
// CHECK-SAME: attn.column_blocks = 2 : i64
// CHECK-LABEL: gpu.func @linear_chunks
// CHECK-SAME: workgroup(%[[S:[a-z0-9_]+]] : memref<6272xf32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}, %[[Z:[a-z0-9_]+]] : memref<128xf32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}, %[[PHIS:[a-z0-9_]+]] : memref<1024xf32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}, %[[VALUES:[a-z0-9_]+]] : memref<392xf32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}, %{{[a-z0-9_]+}} : memref<64xf32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64})
// CHECK: %[[BASE:.+]] = arith.muli %block_id_x, %c49 : index
// CHECK: scf.for %{{.+}} = %thread_id_x to %c6272 step %c128
// CHECK: memref.store %{{.+}}, %[[S]]
// CHECK-NOT: gpu.barrier
// CHECK: scf.for %{{.+}} = %c0 to %{{.+}} step %c8 {
// CHECK: memref.store %{{.+}}, %[[PHIS]]
// CHECK: %[[COLUMN:.+]] = arith.addi %[[BASE]], %{{.+}} : index
// CHECK: arith.cmpi ult, %[[COLUMN]], %c97 : index
// CHECK: memref.store %{{.+}}, %[[VALUES]]
// CHECK: gpu.barrier
// CHECK: %[[E:.+]] = arith.remui %{{.+}}, %c49 : index
// CHECK: %[[STATECOLUMN:.+]] = arith.addi %[[BASE]], %[[E]] : index
// CHECK: %[[INSIDE:.+]] = arith.cmpi ult, %[[STATECOLUMN]], %c97 : index
// CHECK: scf.if %[[INSIDE]] {
// CHECK: memref.store %{{.+}}, %[[S]]
// CHECK: memref.store %{{.+}}, %[[Z]]
// CHECK: gpu.barrier
// CHECK: scf.for %{{.+}} = %c0 to %{{.+}} step %c8 {
// CHECK: memref.store %{{.+}}, %[[PHIS]]
// CHECK: gpu.barrier
// CHECK: arith.cmpi ult, %{{.+}}, %c97 : index
// CHECK: arith.divf
// CHECK: gpu.barrier
// CHECK-NEXT: }
// CHECK-NEXT: gpu.return
func.func @linear_chunks(%q: tensor<?x2x?x128xf32>, %k: tensor<?x2x?x128xf32>,
                         %v: tensor<?x2x?x97xf32>, %o: tensor<?x2x?x97xf32>)
    -> tensor<?x2x?x97xf32> {
  %0 = attn.linear_attention ins(%q, %k, %v : tensor<?x2x?x128xf32>,
                                 tensor<?x2x?x128xf32>, tensor<?x2x?x97xf32>)
      outs(%o : tensor<?x2x?x97xf32>) -> tensor<?x2x?x97xf32>
  return %0 : tensor<?x2x?x97xf32>
}
