// RUN: attn-opt %s --attn-lower-linear-attention=chunk-size=32 --canonicalize --cse --split-input-file | FileCheck %s
// RUN: not attn-opt %s --attn-lower-linear-attention=chunk-size=0 --split-input-file 2>&1 | FileCheck %s --check-prefix=BAD

// No mask: phi(q), phi(k) and v gathered per query head in f32 (key head
// h / 2 for this 4:2 GQA), phi(x) = x > 0 ? x + 1 : exp(x); the state
// S = phi(K)^T V and z = sum_j phi(k_j) per head over key chunks of 32,
// then phi(Q) S / phi(Q) z
// written straight into init in its element type (0 where the denominator
// is not positive).
// CHECK-LABEL: func.func @plain
// CHECK-SAME: (%[[Q:[a-z0-9_]+]]: tensor<1x4x100x16xf16>, %[[K:[a-z0-9_]+]]: tensor<1x2x100x16xf16>, %[[V:[a-z0-9_]+]]: tensor<1x2x100x8xf16>, %[[O:[a-z0-9_]+]]: tensor<1x4x100x8xf16>)
// CHECK: %[[PQ:.+]] = linalg.generic
// CHECK: tensor.extract %[[Q]]
// CHECK: %[[POS:.+]] = arith.cmpf ogt
// CHECK: %[[PLUS:.+]] = arith.addf
// CHECK: %[[EXP:.+]] = math.exp
// CHECK: arith.select %[[POS]], %[[PLUS]], %[[EXP]]
// CHECK: %[[PK:.+]] = linalg.generic
// CHECK: %[[KH:.+]] = arith.divui %{{.+}}, %{{.+}} : index
// CHECK: tensor.extract %[[K]][%{{.+}}, %[[KH]],
// CHECK: %[[PV:.+]] = linalg.generic
// CHECK: tensor.extract %[[V]]
// CHECK: %[[STATE:.+]]:2 = scf.for %[[CHUNK:.+]] = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%[[S:.+]] = %{{.+}}, %[[Z:.+]] = %{{.+}}) -> (tensor<1x4x16x8xf32>, tensor<1x4x16xf32>)
// CHECK: %[[KC:.+]] = tensor.extract_slice %[[PK]][0, 0, %[[CHUNK]], 0]
// CHECK: %[[VC:.+]] = tensor.extract_slice %[[PV]][0, 0, %[[CHUNK]], 0]
// CHECK: %[[NEWS:.+]] = linalg.generic {{.*}} ins(%[[KC]], %[[VC]] : tensor<1x4x?x16xf32>, tensor<1x4x?x8xf32>) outs(%[[S]] : tensor<1x4x16x8xf32>)
// CHECK: %[[NEWZ:.+]] = linalg.generic {{.*}} ins(%[[KC]] : tensor<1x4x?x16xf32>) outs(%[[Z]] : tensor<1x4x16xf32>)
// CHECK: scf.yield %[[NEWS]], %[[NEWZ]]
// CHECK: %[[NUM:.+]] = linalg.generic {{.*}} ins(%[[PQ]], %[[STATE]]#0 :
// CHECK: %[[DEN:.+]] = linalg.generic {{.*}} ins(%[[PQ]], %[[STATE]]#1 :
// CHECK: %[[OUT:.+]] = linalg.generic {{.*}} ins(%[[NUM]], %[[DEN]] : tensor<1x4x100x8xf32>, tensor<1x4x100xf32>) outs(%[[O]] : tensor<1x4x100x8xf16>)
// CHECK: arith.divf
// CHECK: arith.truncf
// CHECK: return %[[OUT]]
func.func @plain(%q: tensor<1x4x100x16xf16>, %k: tensor<1x2x100x16xf16>,
                 %v: tensor<1x2x100x8xf16>, %o: tensor<1x4x100x8xf16>)
    -> tensor<1x4x100x8xf16> {
  %0 = attn.linear_attention ins(%q, %k, %v : tensor<1x4x100x16xf16>,
                                 tensor<1x2x100x16xf16>, tensor<1x2x100x8xf16>)
      outs(%o : tensor<1x4x100x8xf16>) -> tensor<1x4x100x8xf16>
  return %0 : tensor<1x4x100x8xf16>
}

// -----

// Causal: a loop over chunks of 32 query rows carries init and the state.
// A chunk reads the state, adds its masked block (key kvStart + j counts
// for row chunk + i when kvStart + j <= chunk + i), writes its rows of init
// and folds the block's keys into the state.
// CHECK-LABEL: func.func @causal
// CHECK-SAME: %[[O:[a-z0-9_]+]]: tensor<1x4x100x8xf32>)
// CHECK-DAG: %[[C32:.+]] = arith.constant 32 : index
// CHECK-DAG: %[[C100:.+]] = arith.constant 100 : index
// CHECK: %[[LOOP:.+]]:3 = scf.for %[[CHUNK:.+]] = %{{.+}} to %[[C100]] step %[[C32]] iter_args(%[[ACC:.+]] = %[[O]], %[[STATE:.+]] = %{{.+}}, %[[NORM:.+]] = %{{.+}}) -> (tensor<1x4x100x8xf32>, tensor<1x4x16x8xf32>, tensor<1x4x16xf32>)
// CHECK: %[[ROWS:.+]] = arith.minsi %{{.+}}, %[[C32]] : index
// CHECK: linalg.generic {{.*}} ins(%{{.+}}, %[[STATE]] :
// CHECK: linalg.generic {{.*}} ins(%{{.+}}, %[[NORM]] :
// CHECK: linalg.generic
// CHECK: %[[ROW:.+]] = arith.addi %{{.+}}, %[[CHUNK]] : index
// CHECK: %[[KEY:.+]] = arith.addi
// CHECK: arith.cmpi sle, %[[KEY]], %[[ROW]] : index
// CHECK: %[[DEST:.+]] = tensor.extract_slice %[[ACC]][0, 0, %[[CHUNK]], 0] [1, 4, %[[ROWS]], 8]
// CHECK: %[[WRITTEN:.+]] = linalg.generic {{.*}} outs(%[[DEST]] : tensor<1x4x?x8xf32>)
// CHECK: %[[INSERTED:.+]] = tensor.insert_slice %[[WRITTEN]] into %[[ACC]][0, 0, %[[CHUNK]], 0] [1, 4, %[[ROWS]], 8]
// CHECK: %[[NEWSTATE:.+]] = linalg.generic {{.*}} outs(%[[STATE]] : tensor<1x4x16x8xf32>)
// CHECK: %[[NEWNORM:.+]] = linalg.generic {{.*}} outs(%[[NORM]] : tensor<1x4x16xf32>)
// CHECK: scf.yield %[[INSERTED]], %[[NEWSTATE]], %[[NEWNORM]]
// CHECK: return %[[LOOP]]#0
func.func @causal(%q: tensor<1x4x100x16xf32>, %k: tensor<1x4x100x16xf32>,
                  %v: tensor<1x4x100x8xf32>, %o: tensor<1x4x100x8xf32>)
    -> tensor<1x4x100x8xf32> {
  %0 = attn.linear_attention ins(%q, %k, %v : tensor<1x4x100x16xf32>,
                                 tensor<1x4x100x16xf32>, tensor<1x4x100x8xf32>)
      outs(%o : tensor<1x4x100x8xf32>)
      {structured_mask = #attn.causal<top_left>} -> tensor<1x4x100x8xf32>
  return %0 : tensor<1x4x100x8xf32>
}

// -----

// Bottom-right in BSHD, Sk > Sq: the keys before the first chunk's block
// (Sk - Sq of them) go into the state before the loop; init's chunk slices
// take the sequence dim of BSHD.
// CHECK-LABEL: func.func @bottom_right_bshd
// CHECK: tensor.extract_slice %{{.+}}[0, 0, 0, 0] [1, 2, 40, 16]
// CHECK: scf.for
// CHECK: tensor.extract_slice %{{.+}}[0, %{{.+}}, 0, 0] [1, %{{.+}}, 2, 16] [1, 1, 1, 1] : tensor<1x60x2x16xf32> to tensor<1x?x2x16xf32>
func.func @bottom_right_bshd(%q: tensor<1x60x2x16xf32>,
                             %k: tensor<1x100x2x16xf32>,
                             %o: tensor<1x60x2x16xf32>)
    -> tensor<1x60x2x16xf32> {
  %0 = attn.linear_attention ins(%q, %k, %k : tensor<1x60x2x16xf32>,
                                 tensor<1x100x2x16xf32>, tensor<1x100x2x16xf32>)
      outs(%o : tensor<1x60x2x16xf32>)
      {layout = #attn.layout<bshd>, structured_mask = #attn.causal<bottom_right>}
      -> tensor<1x60x2x16xf32>
  return %0 : tensor<1x60x2x16xf32>
}

// BAD: error: attn-lower-linear-attention: chunk-size must be positive, got 0
