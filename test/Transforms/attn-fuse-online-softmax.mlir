// RUN: attn-opt %s --attn-fuse-online-softmax="kv-tile-size=32" --canonicalize --cse --split-input-file | FileCheck %s
// RUN: attn-opt %s --attn-fuse-online-softmax="kv-tile-size=32" --attn-decompose --canonicalize --split-input-file | FileCheck %s --check-prefix=LOWERED
// RUN: not attn-opt %s --attn-fuse-online-softmax="kv-tile-size=0" --split-input-file 2>&1 | FileCheck %s --check-prefix=BADTILE
// RUN: attn-opt %s --attn-classify-blocks --attn-fuse-online-softmax="kv-tile-size=32 count-tiles=true" --canonicalize --split-input-file | FileCheck %s --check-prefix=COUNT
// RUN: attn-opt %s --attn-fuse-online-softmax="kv-tile-size=0 l2-cache-size=65536" --canonicalize --split-input-file | FileCheck %s --check-prefix=DERIVED
// RUN: not attn-opt %s --pass-pipeline="builtin.module(func.func(attn-fuse-online-softmax{count-tiles=true}))" --split-input-file 2>&1 | FileCheck %s --check-prefix=COUNTNEST

// Derived from a 64 KiB L2: L2 / (16 (D + Dv)) = 65536 / (16 * 16) = 256 keys.
// DERIVED-LABEL: func.func @bshd_regions
// DERIVED: scf.for %{{.+}} = %{{.+}} to %{{.+}} step %c256

// The attention becomes a loop over key tiles carrying (acc, max, sum),
// starting from (0, -inf, 0), with K, V and the key dimension of the mask
// sliced (the last tile is shorter: min(32, Sk - kv)), and one finalize.
// (Keys no query sees, 64..79 here, are cut off before by
// attn-classify-blocks; this pass loops over the keys it is given.)
// CHECK-LABEL: func.func @causal_with_mask
// CHECK-SAME: (%[[Q:[a-z0-9_]+]]: tensor<1x4x64x16xf32>, %[[K:[a-z0-9_]+]]: tensor<1x2x80x16xf32>, %[[V:[a-z0-9_]+]]: tensor<1x2x80x8xf32>, %[[M:[a-z0-9_]+]]: tensor<64x80xi1>, %[[O:[a-z0-9_]+]]: tensor<1x4x64x8xf16>)
// CHECK-DAG: %[[ZERO:.+]] = arith.constant 0.000000e+00 : f32
// CHECK-DAG: %[[NEGINF:.+]] = arith.constant 0xFF800000 : f32
// CHECK-DAG: %[[C0:.+]] = arith.constant 0 : index
// CHECK-DAG: %[[TILE:.+]] = arith.constant 32 : index
// CHECK-DAG: %[[SQ:.+]] = arith.constant 64 : index
// CHECK-DAG: %[[SK:.+]] = arith.constant 80 : index
// CHECK: %[[ACC0:.+]] = linalg.fill ins(%[[ZERO]] : f32) outs(%{{.+}} : tensor<1x4x64x8xf32>)
// CHECK: %[[MAX0:.+]] = linalg.fill ins(%[[NEGINF]] : f32) outs(%{{.+}} : tensor<1x4x64xf32>)
// CHECK: %[[SUM0:.+]] = linalg.fill ins(%[[ZERO]] : f32) outs(%{{.+}} : tensor<1x4x64xf32>)
// CHECK: %[[LOOP:.+]]:3 = scf.for %[[KV:.+]] = %[[C0]] to %[[SK]] step %[[TILE]] iter_args(%[[ACC:.+]] = %[[ACC0]], %[[MAX:.+]] = %[[MAX0]], %[[SUM:.+]] = %[[SUM0]])
// CHECK: %[[REST:.+]] = arith.subi %[[SK]], %[[KV]] : index
// CHECK: %[[SIZE:.+]] = arith.minsi %[[REST]], %[[TILE]] : index
// CHECK: %[[KT:.+]] = tensor.extract_slice %[[K]][0, 0, %[[KV]], 0] [1, 2, %[[SIZE]], 16] [1, 1, 1, 1]
// CHECK: %[[VT:.+]] = tensor.extract_slice %[[V]][0, 0, %[[KV]], 0] [1, 2, %[[SIZE]], 8] [1, 1, 1, 1]
// CHECK: %[[MT:.+]] = tensor.extract_slice %[[M]][0, %[[KV]]] [64, %[[SIZE]]] [1, 1]
// A tile whose last key the first query already sees (kv + size - 1 <= 0
// here) is fully visible: its step drops the structured mask; the others
// keep it.
// CHECK: %[[END:.+]] = arith.addi %[[KV]], %[[SIZE]] : index
// CHECK: %[[LAST:.+]] = arith.subi %[[END]], %{{.+}} : index
// CHECK: %[[FULL:.+]] = arith.cmpi sle, %[[LAST]], %[[C0]] : index
// CHECK: %[[STEP:.+]]:3 = scf.if %[[FULL]]
// CHECK: %[[ACCF:.+]], %[[MAXF:.+]], %[[SUMF:.+]] = attn.online_attention ins(%[[Q]], %[[KT]], %[[VT]] : tensor<1x4x64x16xf32>, tensor<1x2x?x16xf32>, tensor<1x2x?x8xf32>)
// CHECK-SAME: mask(%[[MT]] : tensor<64x?xi1>)
// CHECK-SAME: offsets(%[[C0]], %[[C0]], %[[C0]], %[[KV]] : index, index, index, index)
// CHECK-SAME: extents(%[[SQ]], %[[SK]] : index, index)
// CHECK-SAME: outs(%[[ACC]], %[[MAX]], %[[SUM]] :
// CHECK-NOT: structured_mask
// CHECK-SAME: -> tensor<1x4x64x8xf32>, tensor<1x4x64xf32>, tensor<1x4x64xf32>
// CHECK: scf.yield %[[ACCF]], %[[MAXF]], %[[SUMF]]
// CHECK: } else {
// CHECK: attn.online_attention
// CHECK-SAME: structured_mask = #attn.causal<top_left>
// CHECK: scf.yield %[[STEP]]#0, %[[STEP]]#1, %[[STEP]]#2
// CHECK: %[[OUT:.+]] = attn.finalize_online_attention ins(%[[LOOP]]#0, %[[LOOP]]#2 : tensor<1x4x64x8xf32>, tensor<1x4x64xf32>) outs(%[[O]] : tensor<1x4x64x8xf16>)
// CHECK: return %[[OUT]]

// After decomposition nothing of [Sq, Sk] = [64, 80] is left: the largest
// score tensor is [64, 32] per head.
// LOWERED-LABEL: func.func @causal_with_mask
// LOWERED: scf.for
// LOWERED-NOT: x64x80x
// LOWERED: tensor<1x2x2x64x?xf32>
// LOWERED-NOT: x64x80x
// LOWERED: return
func.func @causal_with_mask(%q: tensor<1x4x64x16xf32>, %k: tensor<1x2x80x16xf32>,
    %v: tensor<1x2x80x8xf32>, %m: tensor<64x80xi1>, %o: tensor<1x4x64x8xf16>)
    -> tensor<1x4x64x8xf16> {
  %0 = attn.attention ins(%q, %k, %v : tensor<1x4x64x16xf32>,
                          tensor<1x2x80x16xf32>, tensor<1x2x80x8xf32>)
      mask(%m : tensor<64x80xi1>) outs(%o : tensor<1x4x64x8xf16>)
      {structured_mask = #attn.causal<top_left>} -> tensor<1x4x64x8xf16>
  return %0 : tensor<1x4x64x8xf16>
}

// -----

// BSHD slices the sequence dimension 1; a bias broadcast along keys is not
// sliced; kv_lens and the regions go to every step unchanged.
// CHECK-LABEL: func.func @bshd_regions
// CHECK-SAME: (%[[Q:[a-z0-9_]+]]: tensor<2x?x4x8xf32>, %[[K:[a-z0-9_]+]]: tensor<2x?x4x8xf32>, %[[B:[a-z0-9_]+]]: tensor<2x4x?x1xf32>, %[[L:[a-z0-9_]+]]: tensor<2xi32>
// CHECK: %[[SK:.+]] = tensor.dim %[[K]], %{{.+}} : tensor<2x?x4x8xf32>
// CHECK: scf.for %[[KV:.+]] = %{{.+}} to %[[SK]]
// CHECK: %[[KT:.+]] = tensor.extract_slice %[[K]][0, %[[KV]], 0, 0] [2, %{{.+}}, 4, 8] [1, 1, 1, 1]
// CHECK: attn.online_attention ins(%[[Q]], %[[KT]], %{{.+}} : {{.*}}) bias(%[[B]] : tensor<2x4x?x1xf32>) kv_lens(%[[L]] : tensor<2xi32>)
// CHECK-SAME: layout = #attn.layout<bshd>
// CHECK-SAME: score_mod {
// CHECK: math.tanh
// CHECK: } mask_mod {
// CHECK: arith.cmpi ne
// CHECK: attn.finalize_online_attention {{.*}} {layout = #attn.layout<bshd>}
func.func @bshd_regions(%q: tensor<2x?x4x8xf32>, %k: tensor<2x?x4x8xf32>,
    %b: tensor<2x4x?x1xf32>, %l: tensor<2xi32>, %o: tensor<2x?x4x8xf32>)
    -> tensor<2x?x4x8xf32> {
  %0 = attn.attention ins(%q, %k, %k : tensor<2x?x4x8xf32>,
                          tensor<2x?x4x8xf32>, tensor<2x?x4x8xf32>)
      bias(%b : tensor<2x4x?x1xf32>) kv_lens(%l : tensor<2xi32>)
      outs(%o : tensor<2x?x4x8xf32>) {layout = #attn.layout<bshd>}
      score_mod {
      ^bb0(%s: f32, %bi: index, %h: index, %i: index, %j: index):
        %t = math.tanh %s : f32
        attn.yield %t : f32
      }
      mask_mod {
      ^bb0(%bi: index, %h: index, %i: index, %j: index):
        %ne = arith.cmpi ne, %i, %j : index
        attn.yield %ne : i1
      } -> tensor<2x?x4x8xf32>
  return %0 : tensor<2x?x4x8xf32>
}

// BADTILE: error: attn-fuse-online-softmax: kv-tile-size must be positive, got 0 (0 needs l2-cache-size)

// -----

// count-tiles: before the loop, ceil(Sk / tile) key tiles (the whole key
// range, from extents) are added to @attn_tiles_total and ceil(keys / tile)
// (the tiles the loop visits, after attn-classify-blocks cut the keys to
// min(kv_lens[0], 256)) to @attn_tiles_computed.
// COUNT-DAG: memref.global "public" @attn_tiles_total : memref<i64> = dense<0>
// COUNT-DAG: memref.global "public" @attn_tiles_computed : memref<i64> = dense<0>
// COUNT-LABEL: func.func @counted
// COUNT-DAG: %[[C8:.+]] = arith.constant 8 : i64
// COUNT-DAG: %[[C32:.+]] = arith.constant 32 : index
// COUNT: tensor.extract_slice %{{.+}}[0, 0, 0, 0] [1, 2, %[[KEYS:.+]], 8]
// COUNT: %[[TOTAL:.+]] = memref.get_global @attn_tiles_total : memref<i64>
// COUNT: memref.atomic_rmw addi %[[C8]], %[[TOTAL]][] : (i64, memref<i64>) -> i64
// COUNT: %[[POS:.+]] = arith.maxsi %[[KEYS]]
// COUNT: %[[N:.+]] = arith.ceildivsi %[[POS]], %[[C32]] : index
// COUNT: %[[DONE:.+]] = memref.get_global @attn_tiles_computed : memref<i64>
// COUNT: %[[NI:.+]] = arith.index_cast %[[N]] : index to i64
// COUNT: memref.atomic_rmw addi %[[NI]], %[[DONE]][] : (i64, memref<i64>) -> i64
// COUNT: scf.for %{{.+}} = %{{.+}} to %[[KEYS]] step %[[C32]]
// COUNTNEST: count-tiles needs the pass to run on a module
func.func @counted(%q: tensor<1x2x16x8xf32>, %k: tensor<1x2x256x8xf32>,
                   %lens: tensor<1xi32>, %o: tensor<1x2x16x8xf32>)
    -> tensor<1x2x16x8xf32> {
  %0 = attn.attention ins(%q, %k, %k : tensor<1x2x16x8xf32>,
                          tensor<1x2x256x8xf32>, tensor<1x2x256x8xf32>)
      kv_lens(%lens : tensor<1xi32>)
      outs(%o : tensor<1x2x16x8xf32>) -> tensor<1x2x16x8xf32>
  return %0 : tensor<1x2x16x8xf32>
}

// -----

// A mask_mod region made of modelled ops (here: key j visible iff
// j / 48 == 0) is bounded per key tile by interval arithmetic over the
// tile's indices: the tile is skipped (the statistics pass through) unless
// the region may show a key, and runs without the region when it certainly
// shows every key. With count-tiles, a skipped tile is taken back from
// @attn_tiles_computed.
// CHECK-LABEL: func.func @mask_mod_tiles
// CHECK-DAG: %[[C1:.+]] = arith.constant 1 : index
// CHECK-DAG: %[[C48:.+]] = arith.constant 48 : index
// CHECK-DAG: %[[C0:.+]] = arith.constant 0 : index
// CHECK: scf.for %[[KV:.+]] = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%[[ACC:.+]] = %{{.+}}, %[[MAX:.+]] = %{{.+}}, %[[SUM:.+]] = %{{.+}})
// CHECK: %[[SIZE:.+]] = arith.minsi
// The quotient interval [kv / 48, (kv + size - 1) / 48].
// CHECK: %[[END:.+]] = arith.addi %[[KV]], %[[SIZE]] : index
// CHECK: %[[LAST:.+]] = arith.subi %[[END]], %[[C1]] : index
// CHECK: %[[QLO:.+]] = arith.divsi %[[KV]], %[[C48]] : index
// CHECK: %[[QHI:.+]] = arith.divsi %[[LAST]], %[[C48]] : index
// Certainly 0: a single quotient, and it is 0.
// CHECK: %[[SINGLE:.+]] = arith.cmpi eq, %[[QLO]], %[[QHI]] : index
// CHECK: %[[ISZERO:.+]] = arith.cmpi eq, %[[QLO]], %[[C0]] : index
// CHECK: %[[SHOWS:.+]] = arith.andi %[[SINGLE]], %[[ISZERO]] : i1
// Possibly 0: lo <= 0 <= hi.
// CHECK: %[[BELOW:.+]] = arith.cmpi sle, %[[QLO]], %[[C0]] : index
// CHECK: %[[ABOVE:.+]] = arith.cmpi sge, %[[QHI]], %[[C0]] : index
// CHECK: %[[MAYSHOW:.+]] = arith.andi %[[BELOW]], %[[ABOVE]] : i1
// CHECK: %[[R:.+]]:3 = scf.if %[[MAYSHOW]]
// CHECK: scf.if %[[SHOWS]]
// CHECK: attn.online_attention
// CHECK-NOT: mask_mod
// CHECK: } else {
// CHECK: attn.online_attention
// CHECK-SAME: mask_mod {
// CHECK: arith.divui
// CHECK: } else {
// CHECK-NEXT: scf.yield %[[ACC]], %[[MAX]], %[[SUM]]
// CHECK: scf.yield %[[R]]#0, %[[R]]#1, %[[R]]#2
// COUNT-LABEL: func.func @mask_mod_tiles
// COUNT-DAG: %[[MINUS1:.+]] = arith.constant -1 : i64
// COUNT: scf.if
// COUNT: } else {
// COUNT: %[[DONE:.+]] = memref.get_global @attn_tiles_computed : memref<i64>
// COUNT: memref.atomic_rmw addi %[[MINUS1]], %[[DONE]][] : (i64, memref<i64>) -> i64
func.func @mask_mod_tiles(%q: tensor<1x2x64x16xf32>, %k: tensor<1x2x128x16xf32>,
    %v: tensor<1x2x128x16xf32>, %o: tensor<1x2x64x16xf32>)
    -> tensor<1x2x64x16xf32> {
  %0 = attn.attention ins(%q, %k, %v : tensor<1x2x64x16xf32>,
                          tensor<1x2x128x16xf32>, tensor<1x2x128x16xf32>)
      outs(%o : tensor<1x2x64x16xf32>)
      mask_mod {
      ^bb0(%b: index, %h: index, %i: index, %j: index):
        %c48 = arith.constant 48 : index
        %dj = arith.divui %j, %c48 : index
        %c0 = arith.constant 0 : index
        %first = arith.cmpi eq, %dj, %c0 : index
        attn.yield %first : i1
      } -> tensor<1x2x64x16xf32>
  return %0 : tensor<1x2x64x16xf32>
}

// -----

// i32 arithmetic (whose wrap-around the intervals do not model) leaves the
// tiles unclassified: one step per tile, with the region.
// CHECK-LABEL: func.func @mask_mod_i32
// CHECK: scf.for
// CHECK-NOT: scf.if
// CHECK: attn.online_attention
// CHECK-SAME: mask_mod {
// CHECK-NOT: scf.if
// CHECK: attn.finalize_online_attention
func.func @mask_mod_i32(%q: tensor<1x2x64x16xf32>, %k: tensor<1x2x128x16xf32>,
    %v: tensor<1x2x128x16xf32>, %o: tensor<1x2x64x16xf32>)
    -> tensor<1x2x64x16xf32> {
  %0 = attn.attention ins(%q, %k, %v : tensor<1x2x64x16xf32>,
                          tensor<1x2x128x16xf32>, tensor<1x2x128x16xf32>)
      outs(%o : tensor<1x2x64x16xf32>)
      mask_mod {
      ^bb0(%b: index, %h: index, %i: index, %j: index):
        %j32 = arith.index_cast %j : index to i32
        %c48 = arith.constant 48 : i32
        %first = arith.cmpi slt, %j32, %c48 : i32
        attn.yield %first : i1
      } -> tensor<1x2x64x16xf32>
  return %0 : tensor<1x2x64x16xf32>
}

// -----

// An lse output: the finalize also takes the loop's running max and the
// lse init.
// CHECK-LABEL: func.func @lse
// CHECK: %[[LOOP:.+]]:3 = scf.for
// CHECK: %[[OUT:.+]], %[[LSE:.+]] = attn.finalize_online_attention ins(%[[LOOP]]#0, %[[LOOP]]#2 : {{.*}}) max(%[[LOOP]]#1 : tensor<1x4x64xf32>) outs(%{{.+}}) lse(%{{.+}} : tensor<1x4x64xf32>)
// CHECK: return %[[OUT]], %[[LSE]]
func.func @lse(%q: tensor<1x4x64x16xf32>, %o: tensor<1x4x64x16xf32>,
               %l: tensor<1x4x64xf32>)
    -> (tensor<1x4x64x16xf32>, tensor<1x4x64xf32>) {
  %0:2 = attn.attention ins(%q, %q, %q : tensor<1x4x64x16xf32>,
                            tensor<1x4x64x16xf32>, tensor<1x4x64x16xf32>)
      outs(%o : tensor<1x4x64x16xf32>) lse(%l : tensor<1x4x64xf32>)
      -> tensor<1x4x64x16xf32>, tensor<1x4x64xf32>
  return %0#0, %0#1 : tensor<1x4x64x16xf32>, tensor<1x4x64xf32>
}

// -----

// A run-time block mask: per key tile, the least and greatest class of the
// blocks under it (loops over heads, query blocks and key blocks). A tile of
// empty blocks, or of no full block where causal hides it all, is skipped;
// a tile of full blocks steps with no mask at all; a tile causal shows whole
// steps without the causal rule but keeps the block mask; the rest apply
// everything.
// CHECK-LABEL: func.func @block_mask
// CHECK-DAG: %[[ZERO:.+]] = arith.constant 0 : i8
// CHECK-DAG: %[[TWO:.+]] = arith.constant 2 : i8
// CHECK: scf.for %[[KV:.+]] = %{{.+}} to %{{.+}} step %{{.+}} iter_args(
// CHECK: %[[CLASSES:.+]]:2 = scf.for %{{.+}} iter_args(%{{.+}} = %[[TWO]], %{{.+}} = %[[ZERO]]) -> (i8, i8)
// CHECK: scf.for
// CHECK: scf.for
// CHECK: %[[C:.+]] = tensor.extract %{{.+}} : tensor<1x2x4x4xi8>
// CHECK: arith.minsi %{{.+}}, %[[C]] : i8
// CHECK: arith.maxsi %{{.+}}, %[[C]] : i8
// CHECK: %[[EMPTY:.+]] = arith.cmpi sle, %[[CLASSES]]#1, %[[ZERO]] : i8
// CHECK: %[[NOFULL:.+]] = arith.cmpi slt, %[[CLASSES]]#1, %[[TWO]] : i8
// CHECK: %[[NOFULLHIDDEN:.+]] = arith.andi %[[NOFULL]]
// CHECK: %[[SKIP:.+]] = arith.ori %[[EMPTY]], %[[NOFULLHIDDEN]] : i1
// CHECK: %[[FULL:.+]] = arith.cmpi sge, %[[CLASSES]]#0, %[[TWO]] : i8
// CHECK: scf.if %[[SKIP]]
// CHECK: } else {
// CHECK: scf.if %[[FULL]]
// CHECK-NEXT: attn.online_attention ins(%{{.+}}) offsets(
// CHECK-SAME: outs(%{{.+}}) -> tensor
// CHECK: } else {
// CHECK: scf.if
// CHECK-NEXT: attn.online_attention ins(%{{.+}}) block_mask(%{{.+}} : tensor<1x2x4x4xi8>) offsets(
// CHECK-SAME: {block_sizes = array<i64: 16, 16>} -> tensor
// CHECK: } else {
// CHECK-NEXT: attn.online_attention ins(%{{.+}}) block_mask(%{{.+}} : tensor<1x2x4x4xi8>) offsets(
// CHECK-SAME: {block_sizes = array<i64: 16, 16>, structured_mask = #attn.causal<top_left>}
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
