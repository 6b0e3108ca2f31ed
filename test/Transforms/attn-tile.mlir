// RUN: attn-opt %s --attn-tile="query-tile-size=16" --canonicalize --split-input-file | FileCheck %s
// RUN: not attn-opt %s --attn-tile="query-tile-size=0" --split-input-file 2>&1 | FileCheck %s --check-prefix=BADTILE
// RUN: not attn-opt %s --attn-tile="batch-tile-size=-1" --split-input-file 2>&1 | FileCheck %s --check-prefix=NEGATIVE
// RUN: attn-opt %s --attn-tile="query-tile-size=0 l2-cache-size=1048576" --canonicalize --split-input-file | FileCheck %s --check-prefix=DERIVED
// RUN: attn-opt %s --attn-tile="query-tile-size=0 l2-cache-size=1048576 parallelism=4" --canonicalize --split-input-file | FileCheck %s --check-prefix=PARALLEL

// Derived from a 1 MiB L2: min(Bc, D + Dv) = min(1024, 16 + 16) = 32 queries,
// so the 32 queries of @gqa are one tile.
// DERIVED-LABEL: func.func @gqa
// DERIVED: scf.forall (%{{.+}}, %{{.+}}) in (2, 2)
// With 4 threads to keep busy, 2 x 2 tiles are too few: the query tile halves
// to 16, giving 8.
// PARALLEL-LABEL: func.func @gqa
// PARALLEL: scf.forall (%{{.+}}, %{{.+}}, %{{.+}}) = (0, 0, 0) to (2, 2, 32) step (1, 1, 16)

// GQA 4:1: a tile is one batch entry, one key/value head with its 4 query
// heads, and 16 queries; sizes divide, so every tile is static. K and V are
// sliced by key/value head, never copied; the tile records its position.
// CHECK-LABEL: func.func @gqa
// CHECK-SAME: (%[[Q:[a-z0-9_]+]]: tensor<2x8x32x16xf32>, %[[K:[a-z0-9_]+]]: tensor<2x2x48x16xf32>, %[[M:[a-z0-9_]+]]: tensor<32x48xi1>, %[[L:[a-z0-9_]+]]: tensor<2xi32>, %[[O:[a-z0-9_]+]]: tensor<2x8x32x16xf32>)
// CHECK-DAG: %[[C0:.+]] = arith.constant 0 : index
// CHECK-DAG: %[[C4:.+]] = arith.constant 4 : index
// CHECK-DAG: %[[SQ:.+]] = arith.constant 32 : index
// CHECK-DAG: %[[SK:.+]] = arith.constant 48 : index
// CHECK: %[[R:.+]] = scf.forall (%[[B:.+]], %[[H:.+]], %[[I:.+]]) = (0, 0, 0) to (2, 2, 32) step (1, 1, 16) shared_outs(%[[OUT:.+]] = %[[O]]) -> (tensor<2x8x32x16xf32>)
// CHECK: %[[HQ:.+]] = arith.muli %[[H]], %[[C4]] : index
// CHECK-DAG: %[[OT:.+]] = tensor.extract_slice %[[OUT]][%[[B]], %[[HQ]], %[[I]], 0] [1, 4, 16, 16] [1, 1, 1, 1]
// CHECK-DAG: %[[QT:.+]] = tensor.extract_slice %[[Q]][%[[B]], %[[HQ]], %[[I]], 0] [1, 4, 16, 16] [1, 1, 1, 1]
// CHECK-DAG: %[[KT:.+]] = tensor.extract_slice %[[K]][%[[B]], %[[H]], 0, 0] [1, 1, 48, 16] [1, 1, 1, 1]
// CHECK-DAG: %[[VT:.+]] = tensor.extract_slice %[[K]][%[[B]], %[[H]], 0, 0] [1, 1, 48, 16] [1, 1, 1, 1]
// CHECK-DAG: %[[MT:.+]] = tensor.extract_slice %[[M]][%[[I]], 0] [16, 48] [1, 1]
// CHECK-DAG: %[[LT:.+]] = tensor.extract_slice %[[L]][%[[B]]] [1] [1]
// CHECK: %[[T:.+]] = attn.attention ins(%[[QT]], %[[KT]], %[[VT]] : tensor<1x4x16x16xf32>, tensor<1x1x48x16xf32>, tensor<1x1x48x16xf32>)
// CHECK-SAME: mask(%[[MT]] : tensor<16x48xi1>) kv_lens(%[[LT]] : tensor<1xi32>)
// CHECK-SAME: offsets(%[[B]], %[[HQ]], %[[I]], %[[C0]] : index, index, index, index)
// CHECK-SAME: extents(%[[SQ]], %[[SK]] : index, index)
// CHECK-SAME: outs(%[[OT]] : tensor<1x4x16x16xf32>)
// CHECK-SAME: structured_mask = #attn.causal<bottom_right>
// CHECK: scf.forall.in_parallel
// CHECK: tensor.parallel_insert_slice %[[T]] into %[[OUT]][%[[B]], %[[HQ]], %[[I]], 0] [1, 4, 16, 16] [1, 1, 1, 1]
// CHECK: return %[[R]]
func.func @gqa(%q: tensor<2x8x32x16xf32>, %k: tensor<2x2x48x16xf32>,
               %m: tensor<32x48xi1>, %l: tensor<2xi32>,
               %o: tensor<2x8x32x16xf32>) -> tensor<2x8x32x16xf32> {
  %0 = attn.attention ins(%q, %k, %k : tensor<2x8x32x16xf32>,
                          tensor<2x2x48x16xf32>, tensor<2x2x48x16xf32>)
      mask(%m : tensor<32x48xi1>) kv_lens(%l : tensor<2xi32>)
      outs(%o : tensor<2x8x32x16xf32>)
      {structured_mask = #attn.causal<bottom_right>} -> tensor<2x8x32x16xf32>
  return %0 : tensor<2x8x32x16xf32>
}

// -----

// A query count the tile does not divide (40 = 16 + 16 + 8) clamps the last
// tile; unknown head counts leave heads untiled (the canonicalizer then drops
// the single-trip dimensions of the loop). BSHD slices dimension 1.
// CHECK-LABEL: func.func @ragged_dynamic_heads
// CHECK-SAME: (%[[Q:[a-z0-9_]+]]: tensor<1x40x?x8xf32>
// CHECK-DAG: %[[C16:.+]] = arith.constant 16 : index
// CHECK-DAG: %[[C40:.+]] = arith.constant 40 : index
// CHECK: %[[HQ:.+]] = tensor.dim %[[Q]], %{{.+}} : tensor<1x40x?x8xf32>
// CHECK: scf.forall (%[[I:.+]]) = (0) to (40) step (16)
// CHECK: %[[REST:.+]] = arith.subi %[[C40]], %[[I]] : index
// CHECK: %[[SIZE:.+]] = arith.minsi %[[REST]], %[[C16]] : index
// CHECK: tensor.extract_slice %[[Q]][0, %[[I]], 0, 0] [1, %[[SIZE]], %[[HQ]], 8]
// CHECK: attn.attention {{.*}}layout = #attn.layout<bshd>
func.func @ragged_dynamic_heads(%q: tensor<1x40x?x8xf32>, %k: tensor<1x40x?x8xf32>,
                                %o: tensor<1x40x?x8xf32>) -> tensor<1x40x?x8xf32> {
  %0 = attn.attention ins(%q, %k, %k : tensor<1x40x?x8xf32>,
                          tensor<1x40x?x8xf32>, tensor<1x40x?x8xf32>)
      outs(%o : tensor<1x40x?x8xf32>) {layout = #attn.layout<bshd>}
      -> tensor<1x40x?x8xf32>
  return %0 : tensor<1x40x?x8xf32>
}

// BADTILE: error: attn-tile: batch-tile-size, head-tile-size, query-tile-size and parallelism must be positive, l2-cache-size non-negative (query-tile-size=0 needs l2-cache-size), got 1, 1, 0, 1, 0
// NEGATIVE: error: attn-tile: {{.+}}, got -1, 1, 64, 1, 0

// -----

// An lse output is tiled with the output: a second shared output, sliced by
// (batch, head, query) and inserted by the same tile.
// CHECK-LABEL: func.func @lse
// CHECK: scf.forall {{.*}} shared_outs(%[[OUT:.+]] = %{{.+}}, %[[LSE:.+]] = %{{.+}}) -> (tensor<1x4x64x16xf32>, tensor<1x4x64xf32>)
// CHECK: %[[LSETILE:.+]] = tensor.extract_slice %[[LSE]][0, %{{.+}}, %{{.+}}] [1, 1, 16] [1, 1, 1] : tensor<1x4x64xf32> to tensor<1x1x16xf32>
// CHECK: %{{.+}}, %[[TILELSE:.+]] = attn.attention {{.*}} lse(%[[LSETILE]] : tensor<1x1x16xf32>)
// CHECK: tensor.parallel_insert_slice %[[TILELSE]] into %[[LSE]][0, %{{.+}}, %{{.+}}] [1, 1, 16] [1, 1, 1]
func.func @lse(%q: tensor<1x4x64x16xf32>, %o: tensor<1x4x64x16xf32>,
               %l: tensor<1x4x64xf32>)
    -> (tensor<1x4x64x16xf32>, tensor<1x4x64xf32>) {
  %0:2 = attn.attention ins(%q, %q, %q : tensor<1x4x64x16xf32>,
                            tensor<1x4x64x16xf32>, tensor<1x4x64x16xf32>)
      outs(%o : tensor<1x4x64x16xf32>) lse(%l : tensor<1x4x64xf32>)
      -> tensor<1x4x64x16xf32>, tensor<1x4x64xf32>
  return %0#0, %0#1 : tensor<1x4x64x16xf32>, tensor<1x4x64xf32>
}
