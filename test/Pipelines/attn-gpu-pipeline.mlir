// The stages of attn-gpu-pipeline. Up to NVVM it needs nothing from CUDA:
// RUN: attn-opt %s --pass-pipeline='builtin.module(attn-convert-to-gpu{mma=true},canonicalize,gpu.module(convert-scf-to-cf,convert-nvgpu-to-nvvm,convert-gpu-to-nvvm,canonicalize))' | FileCheck %s --check-prefix=NVVM
// The whole pipeline embeds PTX for the chip (libdevice from the toolkit):
// RUN: %if ptxas %{ attn-opt %s --attn-gpu-pipeline="chip=sm_80 mma=true toolkit=%cuda_toolkit" | FileCheck %s --check-prefix=PTX %}

// A chip before sm_75, or a PTX ISA older than the chip's, is refused
// (LLVM would abort on the latter):
// RUN: not attn-opt %s --attn-gpu-pipeline="chip=sm_72" 2>&1 | FileCheck %s --check-prefix=OLDCHIP
// RUN: not attn-opt %s --attn-gpu-pipeline="chip=sm_100 features=+ptx80" 2>&1 | FileCheck %s --check-prefix=OLDPTX
// OLDCHIP: error: 'sm_72' is older than the sm_75 attn's GPU kernels need
// OLDPTX: error: 'sm_100' needs PTX ISA 8.6 or newer; features '+ptx80' ask for 8.0

// The kernel in the NVVM dialect (thread and block ids, K/V staging by
// cp.async and a barrier, ldmatrix, tensor-core mma.sync, the row reductions
// as shuffles, exp2 and tanh as libdevice calls); the host function still
// launches it.
// NVVM-LABEL: func.func @softcap_causal
// NVVM: gpu.launch_func @softcap_causal_kernels::@softcap_causal
// NVVM: gpu.module @softcap_causal_kernels
// NVVM: llvm.func @softcap_causal(
// NVVM-SAME: gpu.kernel
// NVVM-SAME: nvvm.kernel
// NVVM-SAME: nvvm.maxntid = array<i32: 128, 1, 1>
// NVVM: nvvm.read.ptx.sreg.tid.x
// NVVM: nvvm.cp.async.shared.global
// NVVM: nvvm.cp.async.commit.group
// NVVM: nvvm.cp.async.wait.group 0
// NVVM: nvvm.barrier0
// NVVM: nvvm.ldmatrix
// NVVM: nvvm.mma.sync
// NVVM: llvm.call @__nv_tanhf
// NVVM: nvvm.shfl.sync bfly
// NVVM: llvm.call @__nv_exp2f
// PTX: gpu.binary @softcap_causal_kernels
// PTX-SAME: chip = "sm_80"
// PTX-SAME: .target sm_80
// PTX-SAME: cp.async.cg.shared.global
// PTX-SAME: ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16
// PTX-SAME: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
func.func @softcap_causal(%q: tensor<1x4x?x64xf16>, %k: tensor<1x4x?x64xf16>,
                          %v: tensor<1x4x?x64xf16>, %o: tensor<1x4x?x64xf16>)
    -> tensor<1x4x?x64xf16> {
  %0 = attn.attention ins(%q, %k, %v : tensor<1x4x?x64xf16>,
                          tensor<1x4x?x64xf16>, tensor<1x4x?x64xf16>)
      outs(%o : tensor<1x4x?x64xf16>)
      {structured_mask = #attn.causal<top_left>}
      score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
        %c = arith.constant 30.0 : f32
        %d = arith.divf %s, %c : f32
        %t = math.tanh %d : f32
        %r = arith.mulf %t, %c : f32
        attn.yield %r : f32
      } -> tensor<1x4x?x64xf16>
  return %0 : tensor<1x4x?x64xf16>
}
