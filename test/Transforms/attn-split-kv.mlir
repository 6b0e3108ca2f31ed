// RUN: attn-opt %s --attn-split-kv="splits=4" --canonicalize --split-input-file | FileCheck %s
// RUN: attn-opt %s --attn-split-kv --canonicalize --split-input-file | FileCheck %s --check-prefix=AUTO
// RUN: not attn-opt %s --attn-split-kv="splits=-1" --split-input-file 2>&1 | FileCheck %s --check-prefix=BAD

// Decoding one query against 1000 keys with one key/value head: four
// parallel ranges of ceil(1000 / 4) = 250 keys, each an online_attention from
// a fresh (0, -inf, 0) over keys [250 s, min(250 s + 250, 1000)) at its
// whole-problem key offset; the partials land in [4, ...] tensors and merge
// by max, exp-weighted sums and one finalize.
// CHECK-LABEL: func.func @mqa_decode
// CHECK-SAME: (%[[Q:[a-z0-9_]+]]: tensor<1x8x1x64xf32>, %[[K:[a-z0-9_]+]]: tensor<1x1x1000x64xf32>, %[[O:[a-z0-9_]+]]: tensor<1x8x1x64xf32>)
// CHECK-DAG: %[[C250:.+]] = arith.constant 250 : index
// CHECK-DAG: %[[C1000:.+]] = arith.constant 1000 : index
// CHECK: %[[P:.+]]:3 = scf.forall (%[[S:.+]]) in (4) shared_outs(%{{.+}} = %{{.+}}, %{{.+}} = %{{.+}}, %{{.+}} = %{{.+}}) -> (tensor<4x1x8x1x64xf32>, tensor<4x1x8x1xf32>, tensor<4x1x8x1xf32>)
// CHECK: %[[START:.+]] = arith.muli %[[S]], %[[C250]] : index
// CHECK: %[[KT:.+]] = tensor.extract_slice %[[K]][0, 0, %[[START]], 0]
// CHECK: attn.online_attention ins(%[[Q]], %[[KT]], %{{[a-z0-9_]+}} :
// CHECK-SAME: offsets(%{{.+}}, %{{.+}}, %{{.+}}, %[[START]] : index, index, index, index)
// CHECK-SAME: extents(%{{.+}}, %[[C1000]] : index, index)
// CHECK: scf.forall.in_parallel
// CHECK-COUNT-3: tensor.parallel_insert_slice
// CHECK: %[[M:.+]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%[[P]]#1 :
// CHECK: arith.maximumf
// CHECK: %[[SUM:.+]] = linalg.generic {{.*}} ins(%[[P]]#2, %[[P]]#1, %[[M]] :
// CHECK: math.exp
// CHECK: %[[ACC:.+]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%[[P]]#0, %[[P]]#1, %[[M]] :
// CHECK: %[[OUT:.+]] = attn.finalize_online_attention ins(%[[ACC]], %[[SUM]] : {{.*}}) outs(%[[O]] :
// CHECK: return %[[OUT]]

// Automatically: B x Hkv = 1 cannot keep 2 threads busy and there are at
// least 2 x 256 keys, so it splits into min(8, 1000 / 256) = 3 ranges.
// AUTO-LABEL: func.func @mqa_decode
// AUTO: scf.forall (%{{.+}}) in (3)
func.func @mqa_decode(%q: tensor<1x8x1x64xf32>, %k: tensor<1x1x1000x64xf32>,
                      %o: tensor<1x8x1x64xf32>) -> tensor<1x8x1x64xf32> {
  %0 = attn.attention ins(%q, %k, %k : tensor<1x8x1x64xf32>,
                          tensor<1x1x1000x64xf32>, tensor<1x1x1000x64xf32>)
      outs(%o : tensor<1x8x1x64xf32>) -> tensor<1x8x1x64xf32>
  return %0 : tensor<1x8x1x64xf32>
}

// -----

// Enough (batch x key/value head) work, or many queries: not split
// automatically.
// AUTO-LABEL: func.func @prefill
// AUTO-NOT: scf.forall
// AUTO: attn.attention
func.func @prefill(%q: tensor<1x8x512x64xf32>, %k: tensor<1x1x1000x64xf32>,
                   %o: tensor<1x8x512x64xf32>) -> tensor<1x8x512x64xf32> {
  %0 = attn.attention ins(%q, %k, %k : tensor<1x8x512x64xf32>,
                          tensor<1x1x1000x64xf32>, tensor<1x1x1000x64xf32>)
      outs(%o : tensor<1x8x512x64xf32>) -> tensor<1x8x512x64xf32>
  return %0 : tensor<1x8x512x64xf32>
}

// BAD: error: attn-split-kv: splits must be >= 0, parallelism and min-keys-per-split > 0

// -----

// Dynamic sizes: the partial tensors take their sizes from the operands, and
// the in_parallel block holds nothing but the inserts (this used to put
// tensor.dim ops inside it).
// CHECK-LABEL: func.func @dynamic_decode
// CHECK: scf.forall (%{{.+}}) in (4) shared_outs({{.*}}) -> (tensor<4x?x8x1x16xf32>, tensor<4x?x8x1xf32>, tensor<4x?x8x1xf32>)
// CHECK: scf.forall.in_parallel {
// CHECK-NEXT: tensor.parallel_insert_slice
// CHECK-NEXT: tensor.parallel_insert_slice
// CHECK-NEXT: tensor.parallel_insert_slice
// CHECK-NEXT: }
// AUTO-LABEL: func.func @dynamic_decode
// AUTO-NOT: scf.forall
func.func @dynamic_decode(%q: tensor<?x8x1x16xf32>, %k: tensor<?x1x?x16xf32>,
                          %o: tensor<?x8x1x16xf32>) -> tensor<?x8x1x16xf32> {
  %0 = attn.attention ins(%q, %k, %k : tensor<?x8x1x16xf32>,
                          tensor<?x1x?x16xf32>, tensor<?x1x?x16xf32>)
      outs(%o : tensor<?x8x1x16xf32>)
      {structured_mask = #attn.causal<bottom_right>} -> tensor<?x8x1x16xf32>
  return %0 : tensor<?x8x1x16xf32>
}

// -----

// An lse output: the merged max and sum make it.
// CHECK-LABEL: func.func @lse
// CHECK: %[[PARTS:.+]]:3 = scf.forall
// CHECK: %{{.+}}, %[[LSE:.+]] = attn.finalize_online_attention {{.*}} max(%{{.+}} : tensor<1x4x1xf32>) {{.*}} lse(%{{.+}} : tensor<1x4x1xf32>)
// CHECK: return %{{.+}}, %[[LSE]]
// AUTO-LABEL: func.func @lse
// AUTO: scf.forall
func.func @lse(%q: tensor<1x4x1x16xf32>, %k: tensor<1x1x4096x16xf32>,
               %o: tensor<1x4x1x16xf32>, %l: tensor<1x4x1xf32>)
    -> (tensor<1x4x1x16xf32>, tensor<1x4x1xf32>) {
  %0:2 = attn.attention ins(%q, %k, %k : tensor<1x4x1x16xf32>,
                            tensor<1x1x4096x16xf32>, tensor<1x1x4096x16xf32>)
      outs(%o : tensor<1x4x1x16xf32>) lse(%l : tensor<1x4x1xf32>)
      -> tensor<1x4x1x16xf32>, tensor<1x4x1xf32>
  return %0#0, %0#1 : tensor<1x4x1x16xf32>, tensor<1x4x1xf32>
}
