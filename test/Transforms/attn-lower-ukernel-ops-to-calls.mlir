// RUN: attn-opt %s --one-shot-bufferize="bufferize-function-boundaries" --attn-lower-ukernel-ops-to-calls --split-input-file | FileCheck %s
// RUN: not attn-opt %s --attn-lower-ukernel-ops-to-calls --split-input-file 2>&1 | FileCheck %s --check-prefix=TENSOR

// One-shot bufferization turns the micro-kernel op on tensors into the same
// op on the buffers, updating its outputs in place; the call lowering then
// casts every memref to a fully dynamic strided type and calls one private
// declaration that takes the C interface. Two call sites with different
// static shapes share it.
// CHECK-LABEL: func.func private @attn_uk_online_step_f32(
// CHECK-SAME: memref<?x?x?x?xf32, strided<[?, ?, ?, ?], offset: ?>>,
// CHECK-SAME: memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, f32, i64)
// CHECK-SAME: attributes {llvm.emit_c_interface}
// CHECK-LABEL: func.func @step(
// CHECK-SAME: %[[Q:[a-z0-9_]+]]: memref<1x2x8x16xf32
// CHECK-SAME: %[[ACC:[a-z0-9_]+]]: memref<1x2x8x16xf32
// CHECK-SAME: %[[S:[a-z0-9_]+]]: memref<1x2x8xf32
// CHECK-SAME: %[[X:[a-z0-9_]+]]: f32, %[[L:[a-z0-9_]+]]: i64
// CHECK: %[[QC:.+]] = memref.cast %[[Q]] : memref<1x2x8x16xf32, strided<[?, ?, ?, ?], offset: ?>> to memref<?x?x?x?xf32, strided<[?, ?, ?, ?], offset: ?>>
// CHECK: %[[AC:.+]] = memref.cast %[[ACC]]
// CHECK: %[[SC:.+]] = memref.cast %[[S]]
// CHECK: call @attn_uk_online_step_f32(%[[QC]], %[[AC]], %[[SC]], %[[X]], %[[L]])
// CHECK-NOT: attn.ukernel.generic
// CHECK: call @attn_uk_online_step_f32(
// CHECK-NOT: memref.copy
// CHECK: return
func.func @step(%q: tensor<1x2x8x16xf32>, %acc: tensor<1x2x8x16xf32>,
                %s: tensor<1x2x8xf32>, %x: f32, %l: i64,
                %q2: tensor<1x1x4x16xf32>, %acc2: tensor<1x1x4x16xf32>,
                %s2: tensor<1x1x4xf32>)
    -> (tensor<1x2x8x16xf32>, tensor<1x2x8xf32>, tensor<1x1x4x16xf32>,
        tensor<1x1x4xf32>) {
  %r:2 = attn.ukernel.generic "attn_uk_online_step_f32"
      ins(%q : tensor<1x2x8x16xf32>)
      outs(%acc, %s : tensor<1x2x8x16xf32>, tensor<1x2x8xf32>)
      (%x, %l : f32, i64) -> tensor<1x2x8x16xf32>, tensor<1x2x8xf32>
  %r2:2 = attn.ukernel.generic "attn_uk_online_step_f32"
      ins(%q2 : tensor<1x1x4x16xf32>)
      outs(%acc2, %s2 : tensor<1x1x4x16xf32>, tensor<1x1x4xf32>)
      (%x, %l : f32, i64) -> tensor<1x1x4x16xf32>, tensor<1x1x4xf32>
  return %r#0, %r#1, %r2#0, %r2#1 : tensor<1x2x8x16xf32>, tensor<1x2x8xf32>,
                                    tensor<1x1x4x16xf32>, tensor<1x1x4xf32>
}

// -----

// The output is read after the call, so bufferization updates a copy: the
// micro-kernel never writes a buffer something else still reads.
// CHECK-LABEL: func.func @copy_when_read_later(
// CHECK-SAME: %[[A:[a-z0-9_]+]]: memref<4x4x4x4xf32
// CHECK: %[[ALLOC:.+]] = memref.alloc() {{.*}} : memref<4x4x4x4xf32>
// CHECK: memref.copy %[[A]], %[[ALLOC]]
// CHECK: %[[C:.+]] = memref.cast %[[ALLOC]]
// CHECK: call @attn_uk_online_step_f32(%{{.+}}, %[[C]])
func.func @copy_when_read_later(%a: tensor<4x4x4x4xf32>)
    -> (tensor<4x4x4x4xf32>, tensor<4x4x4x4xf32>) {
  %r = attn.ukernel.generic "attn_uk_online_step_f32"
      ins(%a : tensor<4x4x4x4xf32>) outs(%a : tensor<4x4x4x4xf32>)
      -> tensor<4x4x4x4xf32>
  return %r, %a : tensor<4x4x4x4xf32>, tensor<4x4x4x4xf32>
}

// -----

// TENSOR: error: 'attn.ukernel.generic' op must be bufferized before it becomes a call
func.func @on_tensors(%a: tensor<4xf32>) -> tensor<4xf32> {
  %r = attn.ukernel.generic "k" outs(%a : tensor<4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}
