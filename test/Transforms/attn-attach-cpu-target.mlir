// RUN: attn-opt %s --attn-attach-cpu-target="cpu=znver4 features=+avx512f,-avx512bf16" | FileCheck %s
// RUN: attn-opt %s --attn-attach-cpu-target | FileCheck %s --check-prefix=HOST
// RUN: not attn-opt %s --attn-attach-cpu-target="cpu=bogus" 2>&1 | FileCheck %s --check-prefix=BADCPU
// RUN: not attn-opt %s --attn-cpu-pipeline="features=+avx2,avx512f" 2>&1 | FileCheck %s --check-prefix=BADFEATURE

// Definitions and declarations alike get the target; the value replaces an
// existing one.
// CHECK: llvm.func @decl(i64) attributes {target_cpu = "znver4", target_features = #llvm.target_features<["+avx512f", "-avx512bf16"]>}
// CHECK: llvm.func @def() attributes {target_cpu = "znver4", target_features = #llvm.target_features<["+avx512f", "-avx512bf16"]>}

// HOST: llvm.func @decl(i64) attributes {target_cpu = "{{[a-z0-9-]+}}", target_features = #llvm.target_features<[{{.*}}"+{{.+}}
// HOST-NOT: "host"

// A CPU or a feature LLVM does not know is an error (LLVM itself would only
// warn and ignore it), in the pass and in the pipelines that run it.
// BADCPU: error: attn-attach-cpu-target: 'bogus' is not a CPU LLVM knows (e.g. host, skylake-avx512, znver4)
// BADFEATURE: error: attn-attach-cpu-target: 'avx512f' is not a feature LLVM knows, as +name or -name (e.g. +avx512f)
llvm.func @decl(i64)
llvm.func @def() attributes {target_cpu = "x86-64"} {
  llvm.return
}
