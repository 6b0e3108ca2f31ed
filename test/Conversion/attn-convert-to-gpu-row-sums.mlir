// RUN: attn-opt %s --attn-convert-to-gpu="mma=true mma-row-sums=true" --canonicalize --cse | FileCheck %s
// RUN: attn-opt %s --attn-convert-to-gpu="mma=true" --canonicalize --cse | FileCheck %s --check-prefix=ADDS

// mma-row-sums: each 16 keys of P add into the row block's sum as one more
// mma, P times a B fragment of ones, so the loop carries a C fragment of
// sums (every column the row's whole sum) in place of the lane's 2 partial
// sums. The rescale branch scales it with the 8 output fragments; after the
// loop a row's sum is read out of it, with no shuffle across the row's 4
// lanes. Whole tiles and partial ones alike: 4 such mma each (64-key tiles).
// CHECK-LABEL: gpu.func @row_sums(
// CHECK: %[[ONES:.+]] = arith.constant dense<1.000000e+00> : vector<2x2xf16>
// CHECK: %[[LOOP:.+]]:11 = scf.for {{.*}} -> (f32, f32, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>)
// CHECK: %[[SCALED:.+]]:9 = scf.if
// CHECK: %[[S0:.+]] = nvgpu.mma.sync(%{{.+}}, %[[ONES]], %[[SCALED]]#8)
// CHECK: %[[S1:.+]] = nvgpu.mma.sync(%{{.+}}, %[[ONES]], %[[S0]])
// CHECK: %[[S2:.+]] = nvgpu.mma.sync(%{{.+}}, %[[ONES]], %[[S1]])
// CHECK: %[[S3:.+]] = nvgpu.mma.sync(%{{.+}}, %[[ONES]], %[[S2]])
// CHECK: scf.yield %{{.+}}, %{{.+}}, %[[S3]],
// CHECK-COUNT-4: nvgpu.mma.sync(%{{.+}}, %[[ONES]],
// CHECK-NOT: nvgpu.mma.sync(%{{.+}}, %[[ONES]],
// CHECK: %[[SUM:.+]] = vector.extract %[[LOOP]]#2[0, 0] : f32 from vector<2x2xf32>
// CHECK-NOT: gpu.shuffle
// CHECK: arith.divf %{{.+}}, %{{.+}} : vector<2xf32>
// CHECK: vector.extract %[[LOOP]]#2[1, 0] : f32 from vector<2x2xf32>
// CHECK-NOT: gpu.shuffle
// CHECK: gpu.return

// Without it, each lane adds its scores' probabilities into 2 f32 sums and
// the row's 4 lanes combine them after the loop (2 shuffles a row).
// ADDS-LABEL: gpu.func @row_sums(
// ADDS-NOT: arith.constant dense<1.000000e+00> : vector<2x2xf16>
// ADDS: scf.for {{.*}} -> (f32, f32, f32, f32, vector<2x2xf32>,
// ADDS: scf.yield
// ADDS-COUNT-4: gpu.shuffle xor
// ADDS: gpu.return
func.func @row_sums(%q: tensor<1x2x256x64xf16>, %k: tensor<1x2x256x64xf16>,
                    %v: tensor<1x2x256x64xf16>, %o: tensor<1x2x256x64xf16>)
    -> tensor<1x2x256x64xf16> {
  %0 = attn.attention ins(%q, %k, %v : tensor<1x2x256x64xf16>,
                          tensor<1x2x256x64xf16>, tensor<1x2x256x64xf16>)
      outs(%o : tensor<1x2x256x64xf16>) -> tensor<1x2x256x64xf16>
  return %0 : tensor<1x2x256x64xf16>
}
