// RUN: attn-opt %s --attn-expand-bf16-conversions | FileCheck %s

// f32 -> bf16, scalar or vector, becomes integer arithmetic (no truncf for
// LLVM to turn into a call of __truncsfbf2): round to nearest even by adding
// 0x7fff plus the kept bit 16, keep the high half, and a quiet NaN (0x7fc0)
// for NaN. bf16 -> f32 is a shift; other conversions stay.
// CHECK-LABEL: func.func @conversions
// CHECK-SAME: (%[[X:.+]]: f32, %[[V:.+]]: vector<16xf32>
// CHECK-DAG: %[[ONE:.+]] = arith.constant 1 : i32
// CHECK-DAG: %[[SIXTEEN:.+]] = arith.constant 16 : i32
// CHECK-DAG: %[[QNAN:.+]] = arith.constant 32704 : i16
// CHECK-DAG: %[[BIAS:.+]] = arith.constant 32767 : i32
// CHECK: %[[ISNAN:.+]] = arith.cmpf une, %[[X]], %[[X]] : f32
// CHECK: %[[BITS:.+]] = arith.bitcast %[[X]] : f32 to i32
// CHECK: %[[HIGH:.+]] = arith.shrui %[[BITS]], %[[SIXTEEN]]
// CHECK: %[[ODD:.+]] = arith.andi %[[HIGH]], %[[ONE]]
// CHECK: %[[ROUND:.+]] = arith.addi %[[ODD]], %[[BIAS]]
// CHECK: %[[SUM:.+]] = arith.addi %[[BITS]], %[[ROUND]]
// CHECK: %[[KEPT:.+]] = arith.shrui %[[SUM]], %[[SIXTEEN]]
// CHECK: %[[HALF:.+]] = arith.trunci %[[KEPT]] : i32 to i16
// CHECK: %[[SEL:.+]] = arith.select %[[ISNAN]], %[[QNAN]], %[[HALF]]
// CHECK: %[[T:.+]] = arith.bitcast %[[SEL]] : i16 to bf16
// CHECK: arith.bitcast %[[V]] : vector<16xf32> to vector<16xi32>
// CHECK: %[[W:.+]] = arith.bitcast %{{.+}} : vector<16xi16> to vector<16xbf16>
// CHECK: arith.shli
// CHECK: %[[E:.+]] = arith.bitcast %{{.+}} : i32 to f32
// CHECK: %[[N:.+]] = arith.truncf %[[X]] : f32 to f16
// CHECK: return %[[T]], %[[W]], %[[E]], %[[N]]
func.func @conversions(%x: f32, %v: vector<16xf32>)
    -> (bf16, vector<16xbf16>, f32, f16) {
  %t = arith.truncf %x : f32 to bf16
  %w = arith.truncf %v : vector<16xf32> to vector<16xbf16>
  %e = arith.extf %t : bf16 to f32
  %n = arith.truncf %x : f32 to f16
  return %t, %w, %e, %n : bf16, vector<16xbf16>, f32, f16
}
