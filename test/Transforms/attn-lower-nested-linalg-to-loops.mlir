// RUN: attn-opt %s --attn-lower-nested-linalg-to-loops --canonicalize | FileCheck %s

// A linalg op inside a parallel loop (a tile of the fused kernel) becomes a
// nest of sequential scf.for loops, innermost dimension last; one outside
// any parallel loop is left for convert-linalg-to-parallel-loops, and so is
// a linalg op still on tensors.
// CHECK-LABEL: func.func @nested
// CHECK: scf.parallel
// CHECK-NEXT: %[[TILE:.+]] = memref.subview
// CHECK-NOT: linalg.generic
// CHECK: scf.for %[[I:.+]] = %c0 to %c4 step %c1
// CHECK-NEXT: scf.for %[[J:.+]] = %c0 to %c16 step %c1
// CHECK-NEXT: %[[X:.+]] = memref.load %[[TILE]][%[[I]], %[[J]]]
// CHECK-NEXT: %[[Y:.+]] = arith.mulf %[[X]], %[[X]]
// CHECK-NEXT: memref.store %[[Y]], %[[TILE]][%[[I]], %[[J]]]
// CHECK: scf.reduce
// CHECK: linalg.generic
// CHECK-SAME: outs(%{{.+}} : memref<2x4x16xf32>)
// CHECK: linalg.generic
// CHECK-SAME: outs(%{{.+}} : tensor<4xf32>)
#id2 = affine_map<(i, j) -> (i, j)>
#id3 = affine_map<(t, i, j) -> (t, i, j)>
#id1 = affine_map<(i) -> (i)>
func.func @nested(%buf: memref<2x4x16xf32>, %t: tensor<4xf32>) -> tensor<4xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  scf.parallel (%tile) = (%c0) to (%c2) step (%c1) {
    %view = memref.subview %buf[%tile, 0, 0] [1, 4, 16] [1, 1, 1]
        : memref<2x4x16xf32> to memref<4x16xf32, strided<[16, 1], offset: ?>>
    linalg.generic {indexing_maps = [#id2],
                    iterator_types = ["parallel", "parallel"]}
        outs(%view : memref<4x16xf32, strided<[16, 1], offset: ?>>) {
    ^bb0(%x: f32):
      %y = arith.mulf %x, %x : f32
      linalg.yield %y : f32
    }
    scf.reduce
  }
  linalg.generic {indexing_maps = [#id3],
                  iterator_types = ["parallel", "parallel", "parallel"]}
      outs(%buf : memref<2x4x16xf32>) {
  ^bb0(%x: f32):
    %y = arith.addf %x, %x : f32
    linalg.yield %y : f32
  }
  %r = linalg.generic {indexing_maps = [#id1], iterator_types = ["parallel"]}
      outs(%t : tensor<4xf32>) {
  ^bb0(%x: f32):
    %y = arith.negf %x : f32
    linalg.yield %y : f32
  } -> tensor<4xf32>
  return %r : tensor<4xf32>
}
