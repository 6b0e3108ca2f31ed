// RUN: attn-opt %s --attn-approximate-math | FileCheck %s

// math.tanh, scalar or vector, becomes arithmetic: no math.tanh (which LLVM
// would turn into a call of tanhf) is left, only the clamp, the rational
// polynomial and its selects. Other math ops stay.
// CHECK-LABEL: func.func @tanh
// CHECK-NOT: math.tanh
// CHECK: arith.divf
// CHECK: arith.select
// CHECK: math.exp %{{.+}} : f32
// CHECK-NOT: math.tanh
// CHECK: arith.divf {{.*}} : vector<8xf32>
// CHECK-NOT: math.tanh
// CHECK: return
func.func @tanh(%x: f32, %v: vector<8xf32>) -> (f32, f32, vector<8xf32>) {
  %t = math.tanh %x : f32
  %e = math.exp %x : f32
  %w = math.tanh %v : vector<8xf32>
  return %t, %e, %w : f32, f32, vector<8xf32>
}
