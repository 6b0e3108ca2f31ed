// attn.online_attention tiled by upstream's tile_using_for through its
// TilingInterface (query heads by GQA group, queries, and keys as the
// reduction carried through the loop), and split into parallel key ranges by
// tile_reduction_using_forall through its PartialReductionOpInterface
// (merged into a running state from an earlier step), computes what the
// untiled step does: all are finalized and compared element by element
// (tolerance 1e-5), and the output is checked to be non-trivial.

// RUN: attn-opt %s --transform-preload-library="transform-library-paths=%S/Inputs/tile-online-attention.mlir" --transform-interpreter --canonicalize | FileCheck %s --check-prefix=TILED
// RUN: attn-opt %s --transform-preload-library="transform-library-paths=%S/Inputs/tile-online-attention.mlir" --transform-interpreter --canonicalize --attn-cpu-pipeline="fused=false" | mlir-runner -e main -entry-point-result=void %mlir_runner_libs | FileCheck %s

// The marked step became three loops (heads by 2, queries by 16, keys by 64
// with a shorter last tile of 200 % 64 = 8) around a step on slices that
// knows its place in the whole problem.
// TILED-LABEL: func.func @main
// TILED: scf.for %[[H:.+]] = %{{.+}} to %{{.+}} step %c2
// TILED: scf.for %[[I:.+]] = %{{.+}} to %{{.+}} step %c16
// TILED: scf.for %[[J:.+]] = %{{.+}} to %{{.+}} step %c64
// TILED: attn.online_attention ins({{.*}} : tensor<1x2x16x16xf32>, tensor<1x1x?x16xf32>, tensor<1x1x?x16xf32>) offsets(%{{.+}}, %[[H]], %[[I]], %[[J]] : index, index, index, index) extents(%c64, %c200 : index, index)
// The split step: 4 ranges of 32 of the last 128 keys, each into its own
// partial statistics, merged after the forall.
// TILED: scf.forall (%[[S:.+]]) in (4) shared_outs({{.*}}) -> (tensor<4x1x4x64x16xf32>, tensor<4x1x4x64xf32>, tensor<4x1x4x64xf32>)
// TILED: attn.online_attention ins({{.*}} : tensor<1x4x64x16xf32>, tensor<1x2x32x16xf32>, tensor<1x2x32x16xf32>)
// TILED: tensor.parallel_insert_slice %{{.+}} into %{{.+}}[%[[S]], 0, 0, 0, 0] [1, 1, 4, 64, 16]
// TILED: arith.maximumf

// max |tiled - untiled| <= 1e-5, max |split - untiled| <= 1e-5, and
// sum |untiled| > 1.
// CHECK: 1
// CHECK-NEXT: 1
// CHECK-NEXT: 1

func.func private @printI64(i64)
func.func private @printNewline()

#map4 = affine_map<(b, h, s, d) -> (b, h, s, d)>

// Deterministic inputs: sin(0.37 * flat index + phase).
func.func @inputs(%init: tensor<?x?x?x?xf32>, %phase: f32) -> tensor<?x?x?x?xf32> {
  %r = linalg.generic {indexing_maps = [#map4],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      outs(%init : tensor<?x?x?x?xf32>) {
  ^bb0(%out: f32):
    %b = linalg.index 0 : index
    %h = linalg.index 1 : index
    %s = linalg.index 2 : index
    %d = linalg.index 3 : index
    %c7 = arith.constant 7 : index
    %c131 = arith.constant 131 : index
    %c1009 = arith.constant 1009 : index
    %x0 = arith.muli %h, %c1009 : index
    %x1 = arith.muli %s, %c131 : index
    %x2 = arith.muli %d, %c7 : index
    %x3 = arith.addi %x0, %x1 : index
    %x4 = arith.addi %x3, %x2 : index
    %x5 = arith.addi %x4, %b : index
    %i = arith.index_cast %x5 : index to i64
    %f = arith.sitofp %i : i64 to f32
    %c = arith.constant 0.37 : f32
    %y = arith.mulf %f, %c : f32
    %z = arith.addf %y, %phase : f32
    %v = math.sin %z : f32
    linalg.yield %v : f32
  } -> tensor<?x?x?x?xf32>
  return %r : tensor<?x?x?x?xf32>
}

func.func @main() {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %c200 = arith.constant 200 : index
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %p0 = arith.constant 0.0 : f32
  %p1 = arith.constant 1.1 : f32
  %p2 = arith.constant 2.3 : f32
  %eq = tensor.empty(%c1, %c4, %c64, %c16) : tensor<?x?x?x?xf32>
  %ek = tensor.empty(%c1, %c2, %c200, %c16) : tensor<?x?x?x?xf32>
  %qd = call @inputs(%eq, %p0) : (tensor<?x?x?x?xf32>, f32) -> tensor<?x?x?x?xf32>
  %kd = call @inputs(%ek, %p1) : (tensor<?x?x?x?xf32>, f32) -> tensor<?x?x?x?xf32>
  %vd = call @inputs(%ek, %p2) : (tensor<?x?x?x?xf32>, f32) -> tensor<?x?x?x?xf32>
  %q = tensor.cast %qd : tensor<?x?x?x?xf32> to tensor<1x4x64x16xf32>
  %k = tensor.cast %kd : tensor<?x?x?x?xf32> to tensor<1x2x200x16xf32>
  %v = tensor.cast %vd : tensor<?x?x?x?xf32> to tensor<1x2x200x16xf32>

  %ea = tensor.empty() : tensor<1x4x64x16xf32>
  %er = tensor.empty() : tensor<1x4x64xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%ea : tensor<1x4x64x16xf32>) -> tensor<1x4x64x16xf32>
  %max = linalg.fill ins(%ninf : f32) outs(%er : tensor<1x4x64xf32>) -> tensor<1x4x64xf32>
  %sum = linalg.fill ins(%zero : f32) outs(%er : tensor<1x4x64xf32>) -> tensor<1x4x64xf32>

  // Bottom-right causal with Sq = 64 < Sk = 200: every tile of keys sees a
  // different part of the band.
  %r:3 = attn.online_attention ins(%q, %k, %v : tensor<1x4x64x16xf32>,
                                   tensor<1x2x200x16xf32>, tensor<1x2x200x16xf32>)
      outs(%acc, %max, %sum : tensor<1x4x64x16xf32>, tensor<1x4x64xf32>, tensor<1x4x64xf32>)
      {structured_mask = #attn.causal<bottom_right>}
      -> tensor<1x4x64x16xf32>, tensor<1x4x64xf32>, tensor<1x4x64xf32>
  %t:3 = attn.online_attention ins(%q, %k, %v : tensor<1x4x64x16xf32>,
                                   tensor<1x2x200x16xf32>, tensor<1x2x200x16xf32>)
      outs(%acc, %max, %sum : tensor<1x4x64x16xf32>, tensor<1x4x64xf32>, tensor<1x4x64xf32>)
      {structured_mask = #attn.causal<bottom_right>, tile}
      -> tensor<1x4x64x16xf32>, tensor<1x4x64xf32>, tensor<1x4x64xf32>
  // The first 72 keys unsplit, then the other 128 split, from its state.
  %c72 = arith.constant 72 : index
  %c0 = arith.constant 0 : index
  %k1 = tensor.extract_slice %k[0, 0, 0, 0] [1, 2, 72, 16] [1, 1, 1, 1]
      : tensor<1x2x200x16xf32> to tensor<1x2x72x16xf32>
  %v1 = tensor.extract_slice %v[0, 0, 0, 0] [1, 2, 72, 16] [1, 1, 1, 1]
      : tensor<1x2x200x16xf32> to tensor<1x2x72x16xf32>
  %k2 = tensor.extract_slice %k[0, 0, 72, 0] [1, 2, 128, 16] [1, 1, 1, 1]
      : tensor<1x2x200x16xf32> to tensor<1x2x128x16xf32>
  %v2 = tensor.extract_slice %v[0, 0, 72, 0] [1, 2, 128, 16] [1, 1, 1, 1]
      : tensor<1x2x200x16xf32> to tensor<1x2x128x16xf32>
  %c200b = arith.constant 200 : index
  %a:3 = attn.online_attention ins(%q, %k1, %v1 : tensor<1x4x64x16xf32>,
                                   tensor<1x2x72x16xf32>, tensor<1x2x72x16xf32>)
      offsets(%c0, %c0, %c0, %c0 : index, index, index, index)
      extents(%c64, %c200b : index, index)
      outs(%acc, %max, %sum : tensor<1x4x64x16xf32>, tensor<1x4x64xf32>, tensor<1x4x64xf32>)
      {structured_mask = #attn.causal<bottom_right>}
      -> tensor<1x4x64x16xf32>, tensor<1x4x64xf32>, tensor<1x4x64xf32>
  %p:3 = attn.online_attention ins(%q, %k2, %v2 : tensor<1x4x64x16xf32>,
                                   tensor<1x2x128x16xf32>, tensor<1x2x128x16xf32>)
      offsets(%c0, %c0, %c0, %c72 : index, index, index, index)
      extents(%c64, %c200b : index, index)
      outs(%a#0, %a#1, %a#2 : tensor<1x4x64x16xf32>, tensor<1x4x64xf32>, tensor<1x4x64xf32>)
      {structured_mask = #attn.causal<bottom_right>, split}
      -> tensor<1x4x64x16xf32>, tensor<1x4x64xf32>, tensor<1x4x64xf32>

  %o1 = attn.finalize_online_attention ins(%r#0, %r#2 : tensor<1x4x64x16xf32>, tensor<1x4x64xf32>)
      outs(%ea : tensor<1x4x64x16xf32>) -> tensor<1x4x64x16xf32>
  %eb = tensor.empty() : tensor<1x4x64x16xf32>
  %o2 = attn.finalize_online_attention ins(%t#0, %t#2 : tensor<1x4x64x16xf32>, tensor<1x4x64xf32>)
      outs(%eb : tensor<1x4x64x16xf32>) -> tensor<1x4x64x16xf32>

  %ec = tensor.empty() : tensor<1x4x64x16xf32>
  %o3 = attn.finalize_online_attention ins(%p#0, %p#2 : tensor<1x4x64x16xf32>, tensor<1x4x64xf32>)
      outs(%ec : tensor<1x4x64x16xf32>) -> tensor<1x4x64x16xf32>

  // max |o1 - o2|, max |o1 - o3| and sum |o1|.
  %e0 = tensor.empty() : tensor<f32>
  %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %stats:3 = linalg.generic {
      indexing_maps = [#map4, #map4, #map4, affine_map<(b, h, s, d) -> ()>,
                       affine_map<(b, h, s, d) -> ()>,
                       affine_map<(b, h, s, d) -> ()>],
      iterator_types = ["reduction", "reduction", "reduction", "reduction"]}
      ins(%o1, %o2, %o3 : tensor<1x4x64x16xf32>, tensor<1x4x64x16xf32>,
                          tensor<1x4x64x16xf32>)
      outs(%z0, %z0, %z0 : tensor<f32>, tensor<f32>, tensor<f32>) {
  ^bb0(%x: f32, %y: f32, %z: f32, %m: f32, %m3: f32, %s: f32):
    %d = arith.subf %x, %y : f32
    %ad = math.absf %d : f32
    %m2 = arith.maximumf %m, %ad : f32
    %d3 = arith.subf %x, %z : f32
    %ad3 = math.absf %d3 : f32
    %m4 = arith.maximumf %m3, %ad3 : f32
    %ax = math.absf %x : f32
    %s2 = arith.addf %s, %ax : f32
    linalg.yield %m2, %m4, %s2 : f32, f32, f32
  } -> (tensor<f32>, tensor<f32>, tensor<f32>)
  %maxdiff = tensor.extract %stats#0[] : tensor<f32>
  %splitdiff = tensor.extract %stats#1[] : tensor<f32>
  %total = tensor.extract %stats#2[] : tensor<f32>
  %tol = arith.constant 1.0e-5 : f32
  %one = arith.constant 1.0 : f32
  %close = arith.cmpf ole, %maxdiff, %tol : f32
  %splitclose = arith.cmpf ole, %splitdiff, %tol : f32
  %si = arith.extui %splitclose : i1 to i64
  %nontrivial = arith.cmpf ogt, %total, %one : f32
  %ci = arith.extui %close : i1 to i64
  %ni = arith.extui %nontrivial : i1 to i64
  call @printI64(%ci) : (i64) -> ()
  call @printNewline() : () -> ()
  call @printI64(%si) : (i64) -> ()
  call @printNewline() : () -> ()
  call @printI64(%ni) : (i64) -> ()
  call @printNewline() : () -> ()
  return
}
