// RUN: attn-opt %s --attn-attach-cpu-target="cpu=znver4 features=+avx512f,-avx512bf16" | FileCheck %s
// RUN: attn-opt %s --attn-attach-cpu-target | FileCheck %s --check-prefix=HOST

// Definitions and declarations alike get the target; the value replaces an
// existing one.
// CHECK: llvm.func @decl(i64) attributes {target_cpu = "znver4", target_features = #llvm.target_features<["+avx512f", "-avx512bf16"]>}
// CHECK: llvm.func @def() attributes {target_cpu = "znver4", target_features = #llvm.target_features<["+avx512f", "-avx512bf16"]>}

// HOST: llvm.func @decl(i64) attributes {target_cpu = "{{[a-z0-9-]+}}", target_features = #llvm.target_features<[{{.*}}"+{{.+}}
// HOST-NOT: "host"
llvm.func @decl(i64)
llvm.func @def() attributes {target_cpu = "x86-64"} {
  llvm.return
}
