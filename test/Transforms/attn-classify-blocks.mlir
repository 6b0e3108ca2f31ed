// RUN: attn-opt %s --attn-classify-blocks --canonicalize --cse --split-input-file | FileCheck %s
// RUN: attn-opt %s --attn-classify-blocks=kv-tile-size=16 --canonicalize --cse --split-input-file | FileCheck %s --check-prefix=GRID
// RUN: not attn-opt %s --attn-classify-blocks=kv-tile-size=-1 --split-input-file 2>&1 | FileCheck %s --check-prefix=NEGATIVE
// NEGATIVE: error: attn-classify-blocks: kv-tile-size and l2-cache-size must be non-negative, got -1 and 0

// A query tile [q, q + 16) under a window (left 8, right 2) can only see keys
// [q - 8, q + 18), clamped to [0, Sk): K and V are cut to them and the key
// offset advances, so no later lowering ever visits the rest.
// CHECK-LABEL: func.func @window_tile
// CHECK-SAME: %[[K:[a-z0-9_]+]]: tensor<1x2x256x8xf32>
// CHECK-SAME: %[[QOFF:[a-z0-9_]+]]: index)
// CHECK-DAG: %[[C8:.+]] = arith.constant 8 : index
// CHECK-DAG: %[[C18:.+]] = arith.constant 18 : index
// CHECK-DAG: %[[C0:.+]] = arith.constant 0 : index
// CHECK-DAG: %[[SK:.+]] = arith.constant 256 : index
// CHECK-DAG: %[[LO:.+]] = arith.subi %[[QOFF]], %[[C8]] : index
// CHECK-DAG: %[[HI:.+]] = arith.addi %[[QOFF]], %[[C18]] : index
// CHECK: %[[B0:.+]] = arith.maxsi %[[LO]], %[[C0]] : index
// CHECK: %[[BEGIN:.+]] = arith.minsi %[[B0]], %[[SK]] : index
// CHECK: %[[E0:.+]] = arith.maxsi %[[HI]], %[[BEGIN]] : index
// CHECK: %[[END:.+]] = arith.minsi %[[E0]], %[[SK]] : index
// CHECK: %[[SIZE:.+]] = arith.subi %[[END]], %[[BEGIN]] : index
// CHECK: %[[KT:.+]] = tensor.extract_slice %[[K]][0, 0, %[[BEGIN]], 0] [1, 2, %[[SIZE]], 8] [1, 1, 1, 1]
// CHECK: attn.attention ins(%{{.+}}, %[[KT]], %[[KT]] : tensor<1x2x16x8xf32>, tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>) offsets(%[[C0]], %[[C0]], %[[QOFF]], %[[BEGIN]] : index, index, index, index) extents(%[[SK]], %[[SK]] : index, index)
// CHECK-SAME: structured_mask = #attn.sliding_window<left = 8, right = 2>
func.func @window_tile(%q: tensor<1x2x16x8xf32>, %k: tensor<1x2x256x8xf32>,
                       %o: tensor<1x2x16x8xf32>, %qoff: index)
    -> tensor<1x2x16x8xf32> {
  %c0 = arith.constant 0 : index
  %c256 = arith.constant 256 : index
  %0 = attn.attention ins(%q, %k, %k : tensor<1x2x16x8xf32>,
                          tensor<1x2x256x8xf32>, tensor<1x2x256x8xf32>)
      offsets(%c0, %c0, %qoff, %c0 : index, index, index, index)
      extents(%c256, %c256 : index, index)
      outs(%o : tensor<1x2x16x8xf32>)
      {structured_mask = #attn.sliding_window<left = 8, right = 2>}
      -> tensor<1x2x16x8xf32>
  return %0 : tensor<1x2x16x8xf32>
}

// -----

// Bottom-right causal, query tile [32, 48) of Sq = 64 against Sk = 100 keys
// with a mask tensor: keys up to 48 + (100 - 64) = 84; the mask's key
// dimension is cut with K.
// CHECK-LABEL: func.func @causal_bottom_right
// CHECK-SAME: %[[M:[a-z0-9_]+]]: tensor<16x100xi1>
// CHECK: %[[MT:.+]] = tensor.extract_slice %[[M]][0, 0] [16, 84] [1, 1] : tensor<16x100xi1> to tensor<16x84xi1>
// CHECK: attn.attention ins({{.*}} : tensor<1x1x16x8xf32>, tensor<1x1x84x8xf32>, tensor<1x1x84x8xf32>) mask(%[[MT]] : tensor<16x84xi1>)
func.func @causal_bottom_right(%q: tensor<1x1x16x8xf32>,
                               %k: tensor<1x1x100x8xf32>,
                               %m: tensor<16x100xi1>,
                               %o: tensor<1x1x16x8xf32>)
    -> tensor<1x1x16x8xf32> {
  %c0 = arith.constant 0 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  %c100 = arith.constant 100 : index
  %0 = attn.attention ins(%q, %k, %k : tensor<1x1x16x8xf32>,
                          tensor<1x1x100x8xf32>, tensor<1x1x100x8xf32>)
      mask(%m : tensor<16x100xi1>)
      offsets(%c0, %c0, %c32, %c0 : index, index, index, index)
      extents(%c64, %c100 : index, index)
      outs(%o : tensor<1x1x16x8xf32>)
      {structured_mask = #attn.causal<bottom_right>}
      -> tensor<1x1x16x8xf32>
  return %0 : tensor<1x1x16x8xf32>
}

// -----

// An attention of one batch entry ends its keys at kv_lens[0] (relative to
// its key offset) and drops kv_lens, which the cut now applies. With several
// batch entries, or without a band or lengths, nothing is cut.
// CHECK-LABEL: func.func @kv_lens_tile
// CHECK-SAME: %[[K:[a-z0-9_]+]]: tensor<1x2x256x8xf32>, %[[LENS:[a-z0-9_]+]]: tensor<1xi32>, %[[KVOFF:[a-z0-9_]+]]: index
// CHECK: %[[LEN:.+]] = tensor.extract %[[LENS]][%{{.+}}] : tensor<1xi32>
// CHECK: %[[LENI:.+]] = arith.index_cast %[[LEN]] : i32 to index
// CHECK: %[[REL:.+]] = arith.subi %[[LENI]], %[[KVOFF]] : index
// CHECK: tensor.extract_slice %[[K]][0, 0, 0, 0] [1, 2, %{{.+}}, 8]
// CHECK: attn.attention
// CHECK-NOT: kv_lens
// CHECK-SAME: offsets(
// CHECK-LABEL: func.func @kv_lens_batch2
// CHECK-NOT: tensor.extract_slice
// CHECK: attn.attention
// CHECK-SAME: kv_lens(
// CHECK-LABEL: func.func @nothing_to_cut
// CHECK-NOT: tensor.extract_slice
// CHECK: attn.attention ins(%{{.+}}, %{{.+}}, %{{.+}} : tensor<1x2x16x8xf32>, tensor<1x2x256x8xf32>, tensor<1x2x256x8xf32>)
func.func @kv_lens_tile(%q: tensor<1x2x16x8xf32>, %k: tensor<1x2x256x8xf32>,
                        %lens: tensor<1xi32>, %kvoff: index,
                        %o: tensor<1x2x16x8xf32>) -> tensor<1x2x16x8xf32> {
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %c512 = arith.constant 512 : index
  %0 = attn.attention ins(%q, %k, %k : tensor<1x2x16x8xf32>,
                          tensor<1x2x256x8xf32>, tensor<1x2x256x8xf32>)
      kv_lens(%lens : tensor<1xi32>)
      offsets(%c0, %c0, %c0, %kvoff : index, index, index, index)
      extents(%c16, %c512 : index, index)
      outs(%o : tensor<1x2x16x8xf32>) -> tensor<1x2x16x8xf32>
  return %0 : tensor<1x2x16x8xf32>
}
func.func @kv_lens_batch2(%q: tensor<2x2x16x8xf32>, %k: tensor<2x2x256x8xf32>,
                          %lens: tensor<2xi32>, %o: tensor<2x2x16x8xf32>)
    -> tensor<2x2x16x8xf32> {
  %0 = attn.attention ins(%q, %k, %k : tensor<2x2x16x8xf32>,
                          tensor<2x2x256x8xf32>, tensor<2x2x256x8xf32>)
      kv_lens(%lens : tensor<2xi32>)
      outs(%o : tensor<2x2x16x8xf32>) -> tensor<2x2x16x8xf32>
  return %0 : tensor<2x2x16x8xf32>
}
func.func @nothing_to_cut(%q: tensor<1x2x16x8xf32>, %k: tensor<1x2x256x8xf32>,
                          %o: tensor<1x2x16x8xf32>) -> tensor<1x2x16x8xf32> {
  %0 = attn.attention ins(%q, %k, %k : tensor<1x2x16x8xf32>,
                          tensor<1x2x256x8xf32>, tensor<1x2x256x8xf32>)
      outs(%o : tensor<1x2x16x8xf32>) -> tensor<1x2x16x8xf32>
  return %0 : tensor<1x2x16x8xf32>
}

// -----

// Chunks of 32: query tile [40, 56) sees its chunk's keys [32, 64) only,
// and those whole, so the canonicalizer drops the mask of the cut tile (at
// its constant offsets).
// CHECK-LABEL: func.func @chunked_tile
// CHECK: %[[KT:.+]] = tensor.extract_slice %{{.+}}[0, 0, 32, 0] [1, 1, 32, 8] [1, 1, 1, 1] : tensor<1x1x128x8xf32> to tensor<1x1x32x8xf32>
// CHECK: attn.attention ins(%{{.+}}, %[[KT]], %[[KT]] : {{.*}}) offsets(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} : index, index, index, index)
// CHECK-NOT: structured_mask
// CHECK: return
func.func @chunked_tile(%q: tensor<1x1x16x8xf32>, %k: tensor<1x1x128x8xf32>,
                        %o: tensor<1x1x16x8xf32>) -> tensor<1x1x16x8xf32> {
  %c0 = arith.constant 0 : index
  %c40 = arith.constant 40 : index
  %c128 = arith.constant 128 : index
  %0 = attn.attention ins(%q, %k, %k : tensor<1x1x16x8xf32>,
                          tensor<1x1x128x8xf32>, tensor<1x1x128x8xf32>)
      offsets(%c0, %c0, %c40, %c0 : index, index, index, index)
      extents(%c128, %c128 : index, index)
      outs(%o : tensor<1x1x16x8xf32>)
      {structured_mask = #attn.chunked<size = 32>} -> tensor<1x1x16x8xf32>
  return %0 : tensor<1x1x16x8xf32>
}

// -----

// Global tokens: rows past the 4 global ones see keys [0, 4) only; with
// kv-tile-size=16 a window cut starting at key 20 (query 40 - 20) starts on
// the tile grid instead, at key 16.
// CHECK-LABEL: func.func @global_rows
// CHECK: tensor.extract_slice %{{.+}}[0, 0, 0, 0] [1, 1, 4, 8] [1, 1, 1, 1] : tensor<1x1x128x8xf32> to tensor<1x1x4x8xf32>
// GRID-LABEL: func.func @global_rows
// GRID-LABEL: func.func @window_on_grid
// GRID: tensor.extract_slice %{{.+}}[0, 0, 16, 0] [1, 1, 40, 8] [1, 1, 1, 1] : tensor<1x1x128x8xf32> to tensor<1x1x40x8xf32>
func.func @global_rows(%q: tensor<1x1x16x8xf32>, %k: tensor<1x1x128x8xf32>,
                       %o: tensor<1x1x16x8xf32>) -> tensor<1x1x16x8xf32> {
  %c0 = arith.constant 0 : index
  %c40 = arith.constant 40 : index
  %c128 = arith.constant 128 : index
  %0 = attn.attention ins(%q, %k, %k : tensor<1x1x16x8xf32>,
                          tensor<1x1x128x8xf32>, tensor<1x1x128x8xf32>)
      offsets(%c0, %c0, %c40, %c0 : index, index, index, index)
      extents(%c128, %c128 : index, index)
      outs(%o : tensor<1x1x16x8xf32>)
      {structured_mask = #attn.global<tokens = 4>} -> tensor<1x1x16x8xf32>
  return %0 : tensor<1x1x16x8xf32>
}
func.func @window_on_grid(%q: tensor<1x1x16x8xf32>, %k: tensor<1x1x128x8xf32>,
                          %o: tensor<1x1x16x8xf32>) -> tensor<1x1x16x8xf32> {
  %c0 = arith.constant 0 : index
  %c40 = arith.constant 40 : index
  %c128 = arith.constant 128 : index
  %0 = attn.attention ins(%q, %k, %k : tensor<1x1x16x8xf32>,
                          tensor<1x1x128x8xf32>, tensor<1x1x128x8xf32>)
      offsets(%c0, %c0, %c40, %c0 : index, index, index, index)
      extents(%c128, %c128 : index, index)
      outs(%o : tensor<1x1x16x8xf32>)
      {structured_mask = #attn.sliding_window<left = 20, right = 0>}
      -> tensor<1x1x16x8xf32>
  return %0 : tensor<1x1x16x8xf32>
}

// -----

// Adaptive spans: the keys start at the first query minus the widest span of
// the tile's heads (an scf.for over them); the spans stay on the cut, which
// still applies them per score.
// CHECK-LABEL: func.func @spans
// CHECK: %[[WIDEST:.+]] = scf.for %{{.+}} = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%[[W:.+]] = %{{.+}}) -> (index)
// CHECK: tensor.extract %{{.+}}[%{{.+}}] : tensor<4xi32>
// CHECK: arith.maxsi %[[W]]
// CHECK: %[[FROM:.+]] = arith.subi %{{.+}}, %[[WIDEST]] : index
// CHECK: arith.maxsi %{{.+}}, %{{.+}} : index
// CHECK: attn.attention {{.*}} spans(%{{.+}} : tensor<4xi32>)
func.func @spans(%q: tensor<1x2x16x8xf32>, %k: tensor<1x2x64x8xf32>,
                 %s: tensor<4xi32>, %o: tensor<1x2x16x8xf32>, %h: index,
                 %i: index) -> tensor<1x2x16x8xf32> {
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %0 = attn.attention ins(%q, %k, %k : tensor<1x2x16x8xf32>,
                          tensor<1x2x64x8xf32>, tensor<1x2x64x8xf32>)
      spans(%s : tensor<4xi32>)
      offsets(%c0, %h, %i, %c0 : index, index, index, index)
      extents(%c64, %c64 : index, index)
      outs(%o : tensor<1x2x16x8xf32>) -> tensor<1x2x16x8xf32>
  return %0 : tensor<1x2x16x8xf32>
}

// -----

// A block mask's full blocks show keys the causal mask hides: no cut (the
// fused loop skips its tiles one by one).
// CHECK-LABEL: func.func @block_mask
// CHECK-NOT: tensor.extract_slice
// CHECK: attn.attention ins(%{{.+}} : tensor<1x2x16x8xf32>, tensor<1x2x64x8xf32>, tensor<1x2x64x8xf32>) block_mask(
// GRID-LABEL: func.func @block_mask
// GRID-NOT: tensor.extract_slice
func.func @block_mask(%q: tensor<1x2x16x8xf32>, %k: tensor<1x2x64x8xf32>,
                      %m: tensor<1x2x4x4xi8>, %o: tensor<1x2x16x8xf32>,
                      %i: index) -> tensor<1x2x16x8xf32> {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %0 = attn.attention ins(%q, %k, %k : tensor<1x2x16x8xf32>,
                          tensor<1x2x64x8xf32>, tensor<1x2x64x8xf32>)
      block_mask(%m : tensor<1x2x4x4xi8>)
      offsets(%c0, %c0, %i, %c0 : index, index, index, index)
      extents(%c64, %c64 : index, index)
      outs(%o : tensor<1x2x16x8xf32>)
      {block_sizes = array<i64: 16, 16>,
       structured_mask = #attn.causal<top_left>} -> tensor<1x2x16x8xf32>
  return %0 : tensor<1x2x16x8xf32>
}
