// REQUIRES: cuda-emulator
// The CUDA emulator on hand-written PTX, independent of attn's code
// generation: ldmatrix (x4, x2.trans) and mma.sync m16n8k16 against a naive
// product (fp32 accumulation of f16 inputs: agreement to 1e-5), on device
// memory and on host memory cuMemHostRegister maps, then each
// fault it must stop a launch for, with its message, and the load errors.
// Its profile (ATTN_EMULATOR_PROFILE) counts by hand: 46 warp instructions;
// global 16 + 8 sectors staged in, 2 x 8 stored, all coalesced; shared
// stores of 4 + 2 wavefronts, the x2.trans ldmatrix of B's 16-byte rows 2,
// and the x4 one of A's 32-byte rows 8 where 4 would do: rows r and r + 4
// of each 8x8 matrix share banks.

// RUN: rm -rf %t && mkdir -p %t
// RUN: %cc -std=c11 -Wall -Werror -I%cuda_toolkit/include %s -L%cuda_emulator_dir -lcuda -Wl,-rpath,%cuda_emulator_dir -lm -o %t/emulator
// RUN: %t/emulator mma | FileCheck %s --check-prefix=MMA
// RUN: %t/emulator mapped | FileCheck %s --check-prefixes=MMA,MAPPED
// RUN: env ATTN_EMULATOR_PROFILE=%t/profile %t/emulator mma
// RUN: FileCheck %s --check-prefix=PROFILE < %t/profile
// RUN: env ATTN_EMULATOR_PROFILE=%t/branches.profile %t/emulator branches
// RUN: FileCheck %s --check-prefix=BRANCHES < %t/branches.profile
// RUN: %t/emulator oob 2>&1 | FileCheck %s --check-prefix=OOB
// RUN: %t/emulator misaligned 2>&1 | FileCheck %s --check-prefix=MISALIGNED
// RUN: %t/emulator race 2>&1 | FileCheck %s --check-prefix=RACE
// RUN: %t/emulator inflight 2>&1 | FileCheck %s --check-prefix=INFLIGHT
// RUN: %t/emulator undefined 2>&1 | FileCheck %s --check-prefix=UNDEFINED
// RUN: %t/emulator divergent 2>&1 | FileCheck %s --check-prefix=DIVERGENT
// RUN: %t/emulator members 2>&1 | FileCheck %s --check-prefix=MEMBERS
// RUN: %t/emulator absent 2>&1 | FileCheck %s --check-prefix=ABSENT
// RUN: %t/emulator zerodiv 2>&1 | FileCheck %s --check-prefix=ZERODIV
// RUN: env ATTN_EMULATOR_MAX_STEPS=10000 %t/emulator spin 2>&1 | FileCheck %s --check-prefix=SPIN
// RUN: env ATTN_EMULATOR_MAX_STEPS=ten %t/emulator spin 2>&1 | FileCheck %s --check-prefix=BADSTEPS
// RUN: %t/emulator unsupported 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: %t/emulator forms 2>&1 | FileCheck %s --check-prefix=FORMS
// RUN: %t/emulator bareguard 2>&1 | FileCheck %s --check-prefix=BAREGUARD
// RUN: %t/emulator nobase 2>&1 | FileCheck %s --check-prefix=NOBASE
// RUN: %t/emulator baddirective 2>&1 | FileCheck %s --check-prefix=BADDIRECTIVE
// RUN: %t/emulator cubin 2>&1 | FileCheck %s --check-prefix=CUBIN
// RUN: %t/emulator dynamic | FileCheck %s --check-prefix=DYNAMIC
// RUN: %t/emulator funnel | FileCheck %s --check-prefix=FUNNEL
// RUN: %t/emulator pairs | FileCheck %s --check-prefix=PAIRS
// RUN: %t/emulator permute | FileCheck %s --check-prefix=PERMUTE
// RUN: %t/emulator scalars | FileCheck %s --check-prefix=SCALARS
// The hand-written PTX of pairs, permute and scalars is valid: ptxas takes
// it.
// RUN: %if ptxas-sm_100 %{ %t/emulator print pairs > %t/pairs.ptx %}
// RUN: %if ptxas-sm_100 %{ %ptxas -arch=sm_100 %t/pairs.ptx -o %t/pairs.cubin %}
// RUN: %if ptxas-sm_75 %{ %t/emulator print permute > %t/permute.ptx %}
// RUN: %if ptxas-sm_75 %{ %ptxas -arch=sm_75 %t/permute.ptx -o %t/permute.cubin %}
// RUN: %if ptxas %{ %t/emulator print scalars > %t/scalars.ptx %}
// RUN: %if ptxas %{ %ptxas -arch=sm_90 %t/scalars.ptx -o %t/scalars.cubin %}
// upstream-mma.mlir runs `emulator upstream FILE.ptx` on kernels upstream
// MLIR lowered.

// MMA: mma: max error {{.*}} ok
// Host memory registered: taken at its own address, not freed by cuMemFree
// (1: invalid value), refused twice (712, 713).
// MAPPED: mapped: register again 712, free 1, unregister 0, again 713
// PROFILE: profile kernel=mma_tile blocks=1 warp_instructions=46 mma=1 ldmatrix=2 ex2=0 shfl=0 bar=1 cp_async=0 ld_st_global=4 ld_st_shared=2 other=36 issue_per_mma=46.00 shared_wavefronts=16/12 global_sectors=40/40
// A divergent branch costs the warp both paths: lanes 0-15 run 5
// instructions, lanes 16-31 run 7, the warp issues all 8 (not the lanes'
// mean, 6).
// BRANCHES: profile kernel=branches blocks=1 warp_instructions=8 mma=0
// OOB: launch failed: oob: block (0, 0, 0), thread 0, PTX line {{[0-9]+}}: global store of 4 bytes outside every allocation
// OOB: oob: launch 719, then cuMemAlloc 719
// MISALIGNED: thread 0, PTX line {{[0-9]+}}: misaligned global load of 4 bytes
// RACE: thread 1, PTX line {{[0-9]+}}: shared-memory race: byte 0 read after thread 0 wrote it with no barrier between
// A cp.async in flight across a barrier still writes its bytes until its
// wait: another thread reading them there races with it.
// INFLIGHT: thread 1, PTX line {{[0-9]+}}: shared-memory race: byte 0 read after thread 0 wrote it with no barrier between
// A register read before any write holds all ones (a GPU's is undefined,
// 0 would hide the bug): as an offset it misaligns the store.
// UNDEFINED: thread 0, PTX line {{[0-9]+}}: misaligned global store of 4 bytes
// DIVERGENT: divergent warp: lanes wait at different collectives
// The whole warp reaches a shfl.sync whose member mask names half of it;
// half the warp reaches one that reads from the other half.
// MEMBERS: thread 0, PTX line {{[0-9]+}}: shfl.sync's member mask does not match the lanes that reach it
// ABSENT: thread 0, PTX line {{[0-9]+}}: shfl.sync reads lane 16, which does not take part
// ZERODIV: integer division by zero
// A loop around a barrier never runs long between barriers: the block's
// budget stops it.
// SPIN: launch failed: spin: block (0, 0, 0), thread {{[0-9]+}}, PTX line {{[0-9]+}}: more than 10000 instructions in the block: a runaway loop
// SPIN: spin: launch 719
// BADSTEPS: ATTN_EMULATOR_MAX_STEPS is not a positive integer
// BADSTEPS: spin: launch 1,
// UNKNOWN: cannot load the PTX: line 6: unsupported instruction 'tex.1d.v4.f32.s32'
// UNKNOWN: unsupported: load 218, a PTX JIT compilation failed
// Forms of the opcodes the emulator runs that it does not: one kernel each,
// refused on load, at least one per family of the decoder (arithmetic,
// conversions, memory, control and warp).
// FORMS: line 6: unsupported instruction 'rcp.f32'
// FORMS: line 6: unsupported instruction 'rem.f32'
// FORMS: line 6: unsupported instruction 'mad.wide.u32'
// FORMS: line 6: unsupported instruction 'shf.l.b32'
// FORMS: line 6: unsupported instruction 'setp.s32'
// FORMS: line 6: unsupported instruction 'cvt.rz.f32.f16'
// FORMS: line 6: unsupported instruction 'cvta.shared.u64'
// FORMS: line 6: unsupported instruction 'ld.local.u32'
// FORMS: line 6: unsupported instruction 'cp.async.bulk.shared.global'
// FORMS: line 6: unsupported instruction 'ldmatrix.sync.aligned.m8n8.shared.b16'
// FORMS: line 6: unsupported instruction 'shfl.sync.rotate.b32'
// FORMS: line 6: unsupported instruction 'bar.arrive.b32'
// FORMS: line 6: unsupported instruction 'mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32'
// FORMS: forms: 13 refused, 0 loaded
// Malformed PTX the fuzzer found (it crashed the parser): refused.
// BAREGUARD: cannot load the PTX: line 7: a guard with no instruction: '@%p1'
// BAREGUARD: bareguard: load 218, a PTX JIT compilation failed
// NOBASE: cannot load the PTX: line 7: an address with no base: '[+4]'
// NOBASE: nobase: load 218, a PTX JIT compilation failed
// BADDIRECTIVE: cannot load the PTX: line {{[0-9]+}}: '12x' after an .entry's parameters is not a directive's number
// BADDIRECTIVE: baddirective: load 218, a PTX JIT compilation failed
// CUBIN: cubin: load 209, no kernel image is available for execution on the device (the CUDA emulator runs PTX, not cubins: attn-compile --embed=ptx)
// Dynamic shared memory beyond 48 KiB needs the function's opt-in
// (cuFuncSetAttribute), up to an H100's 227 KiB; any other attribute is
// refused (1: invalid value), as is a grid beyond a GPU's.
// LLVM emits shf.r.wrap for rotates (x urem 6 == 0, say): the four funnel
// shifts against a C reference, shift amounts from 0 past 64.
// FUNNEL: funnel: 128 results, 0 wrong
// PAIRS: pairs: 256 results, 0 wrong
// PERMUTE: permute: 64 results, 0 wrong
// SCALARS: scalars: 64 results, 0 wrong
// DYNAMIC: dynamic: 64 KiB 1, opt in 0, 64 KiB 0, 65 KiB 1, opt in 228 KiB 1, other attribute 1
// DYNAMIC-NEXT: grid: x 2^31 1, y 65536 1, z 65536 1

#include <cuda.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

// One warp: A (16x16 f16, row-major) and B (16x8 f16, row-major, k by n)
// staged in shared memory, D = A B (16x8 f32, row-major) from the
// fragments PTX documents for ldmatrix and mma.m16n8k16.
static const char *kMmaPTX =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry mma_tile(.param .u64 pa, .param .u64 pb, .param .u64 "
    "pd)\n.maxntid 32, 1, 1\n{\n"
    "  .reg .b32 %r<32>;\n  .reg .b64 %rd<16>;\n"
    "  .shared .align 16 .b8 sa[512];\n  .shared .align 16 .b8 sb[256];\n"
    "  ld.param.b64 %rd1, [pa];\n  ld.param.b64 %rd2, [pb];\n"
    "  ld.param.b64 %rd3, [pd];\n  mov.u32 %r1, %tid.x;\n"
    // Each lane stages 16 bytes of A and 8 of B.
    "  mul.wide.u32 %rd4, %r1, 16;\n  add.s64 %rd5, %rd1, %rd4;\n"
    "  ld.global.v4.b32 {%r2, %r3, %r4, %r5}, [%rd5];\n"
    "  mov.b64 %rd6, sa;\n  add.s64 %rd7, %rd6, %rd4;\n"
    "  st.shared.v4.b32 [%rd7], {%r2, %r3, %r4, %r5};\n"
    "  mul.wide.u32 %rd8, %r1, 8;\n  add.s64 %rd9, %rd2, %rd8;\n"
    "  ld.global.v2.b32 {%r6, %r7}, [%rd9];\n"
    "  mov.b64 %rd10, sb;\n  add.s64 %rd11, %rd10, %rd8;\n"
    "  st.shared.v2.b32 [%rd11], {%r6, %r7};\n  bar.sync 0;\n"
    // Lane l gives row l % 8 of A's 8x8 matrix l / 8: rows 8 (m % 2) + r,
    // columns from 8 (m / 2).
    "  and.b32 %r8, %r1, 7;\n  shr.u32 %r9, %r1, 3;\n  and.b32 %r10, %r9, 1;\n"
    "  shl.b32 %r10, %r10, 3;\n  add.s32 %r11, %r8, %r10;\n"
    "  shr.u32 %r12, %r9, 1;\n  shl.b32 %r12, %r12, 4;\n"
    "  shl.b32 %r13, %r11, 5;\n  add.s32 %r14, %r13, %r12;\n"
    "  cvt.u64.u32 %rd12, %r14;\n  add.s64 %rd13, %rd6, %rd12;\n"
    "  ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%r15, %r16, %r17, %r18}, "
    "[%rd13];\n"
    // Lanes 0..15 give B's rows: transposed, the column-major fragment.
    "  and.b32 %r19, %r1, 15;\n  shl.b32 %r20, %r19, 4;\n"
    "  cvt.u64.u32 %rd14, %r20;\n  add.s64 %rd15, %rd10, %rd14;\n"
    "  ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%r21, %r22}, "
    "[%rd15];\n"
    "  mov.b32 %r23, 0f00000000;\n"
    "  mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%r24, %r25, %r26, "
    "%r27}, {%r15, %r16, %r17, %r18}, {%r21, %r22}, {%r23, %r23, %r23, "
    "%r23};\n"
    // D: c0, c1 at row g = l / 4, columns 2 (l % 4) + 0, 1; c2, c3 8 rows
    // down.
    "  shr.u32 %r28, %r1, 2;\n  and.b32 %r29, %r1, 3;\n"
    "  shl.b32 %r30, %r28, 3;\n  shl.b32 %r31, %r29, 1;\n"
    "  add.s32 %r30, %r30, %r31;\n  mul.wide.u32 %rd4, %r30, 4;\n"
    "  add.s64 %rd4, %rd3, %rd4;\n"
    "  st.global.v2.b32 [%rd4], {%r24, %r25};\n"
    "  st.global.v2.b32 [%rd4+256], {%r26, %r27};\n  ret;\n}\n";

// Kernels that must fault, one per case (each run in its own process: a
// fault sticks to the context, as on a GPU).
static const char *kFaultPTX =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry oob(.param .u64 p)\n{\n  .reg .b64 %rd<3>;\n"
    "  .reg .b32 %r<2>;\n  ld.param.b64 %rd1, [p];\n  mov.b32 %r1, 7;\n"
    "  st.global.b32 [%rd1+4096], %r1;\n  ret;\n}\n"
    ".visible .entry misaligned(.param .u64 p)\n{\n  .reg .b64 %rd<3>;\n"
    "  .reg .b32 %r<2>;\n  ld.param.b64 %rd1, [p];\n"
    "  ld.global.b32 %r1, [%rd1+2];\n  ret;\n}\n"
    ".visible .entry race(.param .u64 p)\n{\n  .reg .pred %p<2>;\n"
    "  .reg .b32 %r<4>;\n  .reg .b64 %rd<2>;\n"
    "  .shared .align 4 .b8 s[128];\n  mov.u32 %r1, %tid.x;\n"
    "  mov.b64 %rd1, s;\n  setp.ne.s32 %p1, %r1, 0;\n"
    "  @%p1 bra $L_read;\n  st.shared.b32 [%rd1], %r1;\n"
    "$L_read:\n  ld.shared.b32 %r2, [%rd1];\n  ret;\n}\n"
    ".visible .entry inflight(.param .u64 p)\n{\n  .reg .pred %p<2>;\n"
    "  .reg .b32 %r<4>;\n  .reg .b64 %rd<3>;\n"
    "  .shared .align 16 .b8 t[64];\n  mov.u32 %r1, %tid.x;\n"
    "  ld.param.b64 %rd1, [p];\n  mov.b64 %rd2, t;\n"
    "  setp.ne.s32 %p1, %r1, 0;\n  @%p1 bra $L_wait;\n"
    "  cp.async.cg.shared.global [%rd2], [%rd1], 16;\n"
    "  cp.async.commit_group;\n$L_wait:\n  bar.sync 0;\n"
    "  @%p1 ld.shared.b32 %r2, [%rd2];\n  bar.sync 0;\n"
    "  cp.async.wait_group 0;\n  ret;\n}\n"
    ".visible .entry undefined(.param .u64 p)\n{\n  .reg .b64 %rd<4>;\n"
    "  .reg .b32 %r<3>;\n  ld.param.b64 %rd1, [p];\n"
    "  cvt.u64.u32 %rd2, %r2;\n  add.s64 %rd3, %rd1, %rd2;\n"
    "  mov.b32 %r1, 7;\n  st.global.b32 [%rd3], %r1;\n  ret;\n}\n"
    ".visible .entry divergent(.param .u64 p)\n{\n  .reg .pred %p<2>;\n"
    "  .reg .b32 %r<4>;\n  mov.u32 %r1, %tid.x;\n"
    "  setp.lt.u32 %p1, %r1, 16;\n  @%p1 bra $L_low;\n"
    "  shfl.sync.bfly.b32 %r2, %r1, 1, 31, -1;\n  ret;\n"
    "$L_low:\n  shfl.sync.bfly.b32 %r3, %r1, 2, 31, -1;\n  ret;\n}\n"
    ".visible .entry members(.param .u64 p)\n{\n  .reg .b32 %r<3>;\n"
    "  mov.u32 %r1, %tid.x;\n  shfl.sync.bfly.b32 %r2, %r1, 1, 31, 65535;\n"
    "  ret;\n}\n"
    ".visible .entry absent(.param .u64 p)\n{\n  .reg .pred %p<2>;\n"
    "  .reg .b32 %r<3>;\n  mov.u32 %r1, %tid.x;\n"
    "  setp.ge.u32 %p1, %r1, 16;\n  @%p1 bra $L_out;\n"
    "  shfl.sync.bfly.b32 %r2, %r1, 16, 31, 65535;\n$L_out:\n  ret;\n}\n"
    ".visible .entry zerodiv(.param .u64 p)\n{\n  .reg .b32 %r<4>;\n"
    "  mov.u32 %r1, %tid.x;\n  div.u32 %r2, 5, %r1;\n  ret;\n}\n"
    ".visible .entry spin(.param .u64 p)\n{\n"
    "$L_top:\n  bar.sync 0;\n  bra $L_top;\n}\n";

// Half a warp takes one path, half the other.
static const char *kBranchesPTX =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry branches(.param .u64 p)\n{\n  .reg .pred %p<2>;\n"
    "  .reg .b32 %r<4>;\n  mov.u32 %r1, %tid.x;\n"
    "  setp.lt.u32 %p1, %r1, 16;\n  @%p1 bra $L_low;\n"
    "  add.u32 %r2, %r1, 1;\n  add.u32 %r2, %r2, 1;\n  bra $L_done;\n"
    "$L_low:\n  add.u32 %r2, %r1, 2;\n$L_done:\n  ret;\n}\n";

static const char *kUnsupportedPTX =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry tex(.param .u64 p)\n{\n"
    "  tex.1d.v4.f32.s32 {%f1, %f2, %f3, %f4}, [t, {%r1}];\n  ret;\n}\n";

// Each refused by its family of the decoder: rcp without .approx or .rn,
// rem of floats, a wide mad, a funnel shift with no mode, a setp with no
// comparison, a cvt rounding towards zero, cvta to shared, a local load, a
// bulk copy, ldmatrix with no count, a shuffle mode PTX lacks, a barrier
// arrive, the tensor cores' k8 shape.
static const char *const kRefusedForms[] = {
    "rcp.f32",
    "rem.f32",
    "mad.wide.u32",
    "shf.l.b32",
    "setp.s32",
    "cvt.rz.f32.f16",
    "cvta.shared.u64",
    "ld.local.u32",
    "cp.async.bulk.shared.global",
    "ldmatrix.sync.aligned.m8n8.shared.b16",
    "shfl.sync.rotate.b32",
    "bar.arrive.b32",
    "mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32",
};

static int runRefusedForms(void) {
  int refused = 0, loaded = 0;
  for (size_t i = 0; i < sizeof kRefusedForms / sizeof *kRefusedForms; ++i) {
    char ptx[256];
    snprintf(ptx, sizeof ptx,
             ".version 8.0\n.target sm_90\n.address_size 64\n"
             ".visible .entry form()\n{\n  %s;\n  ret;\n}\n",
             kRefusedForms[i]);
    CUmodule module;
    if (cuModuleLoadData(&module, ptx) == CUDA_SUCCESS) {
      ++loaded;
      cuModuleUnload(module);
    } else {
      ++refused;
    }
  }
  printf("forms: %d refused, %d loaded\n", refused, loaded);
  return loaded != 0;
}

static const char *kBareGuardPTX =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry bareguard(.param .u64 p)\n{\n  .reg .pred %p<2>;\n"
    "  @%p1;\n  ret;\n}\n";

static const char *kBadDirectivePTX =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry baddirective(.param .u64 p)\n.maxntid 12x, 1, 1\n"
    ".minnctapersm 3\n{\n  ret;\n}\n";

static const char *kNoBasePTX =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry nobase(.param .u64 p)\n{\n  .reg .b32 %r<2>;\n"
    "  ld.global.u32 %r1, [+4];\n  ret;\n}\n";

// Thread i: out[4i..4i+3] = shf.{l,r}.{wrap,clamp}.b32 of in[3i..3i+2].
static const char *kFunnelPTX =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry funnel(.param .u64 in, .param .u64 out)\n{\n"
    "  .reg .b32 %r<9>;\n  .reg .b64 %rd<6>;\n"
    "  ld.param.u64 %rd1, [in];\n  ld.param.u64 %rd2, [out];\n"
    "  mov.u32 %r1, %tid.x;\n  mul.wide.u32 %rd3, %r1, 12;\n"
    "  add.s64 %rd4, %rd1, %rd3;\n  ld.global.u32 %r2, [%rd4];\n"
    "  ld.global.u32 %r3, [%rd4+4];\n  ld.global.u32 %r4, [%rd4+8];\n"
    "  shf.l.wrap.b32 %r5, %r2, %r3, %r4;\n"
    "  shf.r.wrap.b32 %r6, %r2, %r3, %r4;\n"
    "  shf.l.clamp.b32 %r7, %r2, %r3, %r4;\n"
    "  shf.r.clamp.b32 %r8, %r2, %r3, %r4;\n"
    "  mul.wide.u32 %rd3, %r1, 16;\n  add.s64 %rd5, %rd2, %rd3;\n"
    "  st.global.v4.u32 [%rd5], {%r5, %r6, %r7, %r8};\n  ret;\n}\n";

// sm_100's packed f32 pairs (PTX ISA 8.6), which LLVM writes for sm_100
// and sm_120: thread i computes add, sub, mul and fma .rn.f32x2 of the
// pairs in[6i..6i+5] into out[8i..8i+7]; the low word is element 0.
static const char *kPairsPTX =
    ".version 8.6\n.target sm_100\n.address_size 64\n"
    ".visible .entry pairs(.param .u64 in, .param .u64 out)\n{\n"
    "  .reg .b32 %r<2>;\n  .reg .b64 %rd<14>;\n"
    "  ld.param.u64 %rd1, [in];\n  ld.param.u64 %rd2, [out];\n"
    "  mov.u32 %r1, %tid.x;\n  mul.wide.u32 %rd3, %r1, 24;\n"
    "  add.s64 %rd4, %rd1, %rd3;\n  ld.global.u64 %rd5, [%rd4];\n"
    "  ld.global.u64 %rd6, [%rd4+8];\n  ld.global.u64 %rd7, [%rd4+16];\n"
    "  add.rn.f32x2 %rd8, %rd5, %rd6;\n  sub.rn.f32x2 %rd9, %rd5, %rd6;\n"
    "  mul.rn.f32x2 %rd10, %rd5, %rd6;\n"
    "  fma.rn.f32x2 %rd11, %rd5, %rd6, %rd7;\n"
    "  mul.wide.u32 %rd3, %r1, 32;\n  add.s64 %rd12, %rd2, %rd3;\n"
    "  st.global.v2.u64 [%rd12], {%rd8, %rd9};\n"
    "  st.global.v2.u64 [%rd12+16], {%rd10, %rd11};\n  ret;\n}\n";

// prmt.b32 (default mode), which LLVM writes to pack two bf16 before sm_80:
// thread i: out[2i] = prmt(in[3i], in[3i + 1], in[3i + 2]) and out[2i + 1]
// with LLVM's selector 0x7632U (an immediate with its U suffix).
static const char *kPermutePTX =
    ".version 8.0\n.target sm_75\n.address_size 64\n"
    ".visible .entry permute(.param .u64 in, .param .u64 out)\n{\n"
    "  .reg .b32 %r<7>;\n  .reg .b64 %rd<6>;\n"
    "  ld.param.u64 %rd1, [in];\n  ld.param.u64 %rd2, [out];\n"
    "  mov.u32 %r1, %tid.x;\n  mul.wide.u32 %rd3, %r1, 12;\n"
    "  add.s64 %rd4, %rd1, %rd3;\n  ld.global.u32 %r2, [%rd4];\n"
    "  ld.global.u32 %r3, [%rd4+4];\n  ld.global.u32 %r4, [%rd4+8];\n"
    "  prmt.b32 %r5, %r2, %r3, %r4;\n"
    "  prmt.b32 %r6, %r2, %r3, 0x7632U;\n"
    "  mul.wide.u32 %rd3, %r1, 8;\n  add.s64 %rd5, %rd2, %rd3;\n"
    "  st.global.v2.u32 [%rd5], {%r5, %r6};\n  ret;\n}\n";

// Shared variables of one element of a type (LLVM's print of a one-element
// array), laid out by their size: `word`'s 4 bytes before `tail`, which a
// one-byte `word` would overlap; and `.pragma "nounroll"` on a loop (LLVM's
// mark on a loop it must not unroll). Thread 0 stores in[0] to `word`, 0xff
// to `tail` and in[1] to `half`; after a barrier, thread i writes
// out[2i] = word and out[2i + 1] = half + 3 (the loop adds 1 three times).
static const char *kScalarsPTX =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry scalars(.param .u64 in, .param .u64 out)\n{\n"
    "  .reg .pred %p<3>;\n  .reg .b16 %rs<3>;\n  .reg .b32 %r<8>;\n"
    "  .reg .b64 %rd<6>;\n"
    "  .shared .align 4 .f32 word;\n  .shared .b8 tail;\n"
    "  .shared .align 2 .b16 half;\n"
    "  ld.param.u64 %rd1, [in];\n  ld.param.u64 %rd2, [out];\n"
    "  mov.u32 %r1, %tid.x;\n  setp.ne.u32 %p1, %r1, 0;\n"
    "  @%p1 bra $L_wait;\n  ld.global.b32 %r2, [%rd1];\n"
    "  st.shared.b32 [word], %r2;\n  mov.b16 %rs1, 255;\n"
    "  st.shared.b8 [tail], %rs1;\n  ld.global.b16 %rs2, [%rd1+4];\n"
    "  st.shared.b16 [half], %rs2;\n"
    "$L_wait:\n  bar.sync 0;\n  ld.shared.b32 %r3, [word];\n"
    "  ld.shared.u16 %r4, [half];\n  mov.u32 %r5, 0;\n"
    "$L_loop:\n  .pragma \"nounroll\";\n  add.u32 %r4, %r4, 1;\n"
    "  add.u32 %r5, %r5, 1;\n  setp.lt.u32 %p2, %r5, 3;\n"
    "  @%p2 bra $L_loop;\n"
    "  mul.wide.u32 %rd3, %r1, 8;\n  add.s64 %rd4, %rd2, %rd3;\n"
    "  st.global.v2.b32 [%rd4], {%r3, %r4};\n  ret;\n}\n";

static uint16_t toHalf(float x) {
  _Float16 h = (_Float16)x;
  uint16_t bits;
  memcpy(&bits, &h, 2);
  return bits;
}

static int check(CUresult r, const char *what) {
  if (r != CUDA_SUCCESS)
    fprintf(stderr, "emulator test: %s failed: %d\n", what, (int)r);
  return r == CUDA_SUCCESS;
}

// Runs entry `name` of `ptx` on one warp with its (in, out) device copies
// of `in` and `out`; 0 on success.
static int runWarp(const char *ptx, const char *name, const void *in,
                   size_t inBytes, void *out, size_t outBytes) {
  CUmodule module;
  CUfunction f;
  CUdeviceptr din, dout;
  if (!check(cuModuleLoadData(&module, ptx), "load") ||
      !check(cuModuleGetFunction(&f, module, name), "function") ||
      !check(cuMemAlloc(&din, inBytes), "alloc") ||
      !check(cuMemAlloc(&dout, outBytes), "alloc") ||
      !check(cuMemcpyHtoD(din, in, inBytes), "copy"))
    return 1;
  void *params[] = {&din, &dout};
  return !check(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, 0, params, 0),
                "launch") ||
         !check(cuMemcpyDtoH(out, dout, outBytes), "copy back");
}

// The PTX ISA's definition: n = c mod 32 (wrap) or min(c, 32) (clamp) of
// the 64-bit {b, a}; shf.l keeps the high word, shf.r the low one.
static uint32_t funnel(uint32_t a, uint32_t b, uint32_t c, int left,
                       int clamp) {
  uint32_t n = clamp ? (c < 32 ? c : 32) : c & 31;
  if (n == 0)
    return left ? b : a;
  if (n == 32)
    return left ? a : b;
  return left ? (b << n) | (a >> (32 - n)) : (a >> n) | (b << (32 - n));
}

static int runFunnel(void) {
  static uint32_t in[32 * 3], out[32 * 4];
  static const uint32_t amounts[] = {0, 1, 5, 16, 31, 32, 33, 63, 64, 255};
  uint32_t seed = 12345;
  for (int i = 0; i < 32; ++i) {
    for (int j = 0; j < 2; ++j)
      in[3 * i + j] = seed = seed * 1664525u + 1013904223u;
    in[3 * i + 2] = i < 10 ? amounts[i] : (seed >> 8) % 80;
  }
  if (runWarp(kFunnelPTX, "funnel", in, sizeof in, out, sizeof out))
    return 1;
  int wrong = 0;
  for (int i = 0; i < 32; ++i)
    for (int k = 0; k < 4; ++k)
      wrong += out[4 * i + k] != funnel(in[3 * i], in[3 * i + 1], in[3 * i + 2],
                                        k % 2 == 0, k >= 2);
  printf("funnel: 128 results, %d wrong\n", wrong);
  return wrong != 0;
}

// The PTX ISA's definition: byte i of the result is byte (s & 7) of
// {b, a} (a's bytes 0-3), s = selector bits [4i, 4i + 4), or that byte's
// sign bit replicated when s & 8.
static uint32_t permute(uint32_t a, uint32_t b, uint32_t c) {
  uint8_t bytes[8];
  for (int i = 0; i < 4; ++i) {
    bytes[i] = (uint8_t)(a >> (8 * i));
    bytes[4 + i] = (uint8_t)(b >> (8 * i));
  }
  uint32_t result = 0;
  for (int i = 0; i < 4; ++i) {
    uint32_t s = (c >> (4 * i)) & 0xf, byte = bytes[s & 7];
    if (s & 8)
      byte = byte & 0x80 ? 0xff : 0;
    result |= byte << (8 * i);
  }
  return result;
}

static int runPermute(void) {
  static uint32_t in[32 * 3], out[32 * 2];
  uint32_t seed = 4242;
  for (int i = 0; i < 32 * 3; ++i)
    in[i] = seed = seed * 1664525u + 1013904223u;
  in[2] = 0x7632; // LLVM's selector, once as a register
  if (runWarp(kPermutePTX, "permute", in, sizeof in, out, sizeof out))
    return 1;
  int wrong = 0;
  for (int i = 0; i < 32; ++i)
    wrong += (out[2 * i] != permute(in[3 * i], in[3 * i + 1], in[3 * i + 2])) +
             (out[2 * i + 1] != permute(in[3 * i], in[3 * i + 1], 0x7632));
  printf("permute: 64 results, %d wrong\n", wrong);
  return wrong != 0;
}

static int runScalars(void) {
  uint32_t in[2] = {0x12345678u, 0xbeefu}, out[32 * 2];
  if (runWarp(kScalarsPTX, "scalars", in, sizeof in, out, sizeof out))
    return 1;
  int wrong = 0;
  for (int i = 0; i < 32; ++i)
    wrong += (out[2 * i] != in[0]) + (out[2 * i + 1] != in[1] + 3);
  printf("scalars: 64 results, %d wrong\n", wrong);
  return wrong != 0;
}

static int runPairs(void) {
  static float in[32 * 6], out[32 * 8];
  uint32_t seed = 777;
  for (int i = 0; i < 32 * 6; ++i) {
    seed = seed * 1664525u + 1013904223u;
    in[i] = ((float)(seed >> 8) / (float)(1 << 24) - 0.5f) * 8.0f;
  }
  if (runWarp(kPairsPTX, "pairs", in, sizeof in, out, sizeof out))
    return 1;
  int wrong = 0;
  for (int i = 0; i < 32; ++i)
    for (int e = 0; e < 2; ++e) {
      float a = in[6 * i + e], b = in[6 * i + 2 + e], c = in[6 * i + 4 + e];
      const float *o = out + 8 * i + e;
      wrong += (o[0] != a + b) + (o[2] != a - b) + (o[4] != a * b) +
               (o[6] != fmaf(a, b, c));
    }
  printf("pairs: 256 results, %d wrong\n", wrong);
  return wrong != 0;
}

// With `mapped`, on host arrays registered by cuMemHostRegister (the
// device reaches them at their host addresses) instead of device copies.
static int runMma(int mapped) {
  static uint16_t a[16 * 16], b[16 * 8];
  static float d[16 * 8];
  float af[16 * 16], bf[16 * 8], error = 0;
  CUdeviceptr da, db, dd;
  CUmodule module;
  CUfunction f;
  for (int i = 0; i < 16 * 16; ++i) {
    af[i] = (float)((i * 37 % 23) - 11) / 8;
    a[i] = toHalf(af[i]);
  }
  for (int i = 0; i < 16 * 8; ++i) {
    bf[i] = (float)((i * 53 % 19) - 9) / 4;
    b[i] = toHalf(bf[i]);
  }
  if (!check(cuModuleLoadData(&module, kMmaPTX), "load") ||
      !check(cuModuleGetFunction(&f, module, "mma_tile"), "function"))
    return 1;
  if (mapped) {
    if (!check(cuMemHostRegister(a, sizeof a, 0), "register") ||
        !check(cuMemHostRegister(b, sizeof b, 0), "register") ||
        !check(cuMemHostRegister(d, sizeof d, 0), "register") ||
        !check(cuMemHostGetDevicePointer(&da, a, 0), "device pointer") ||
        !check(cuMemHostGetDevicePointer(&db, b, 0), "device pointer") ||
        !check(cuMemHostGetDevicePointer(&dd, d, 0), "device pointer"))
      return 1;
  } else if (!check(cuMemAlloc(&da, sizeof a), "alloc") ||
             !check(cuMemAlloc(&db, sizeof b), "alloc") ||
             !check(cuMemAlloc(&dd, sizeof d), "alloc") ||
             !check(cuMemcpyHtoD(da, a, sizeof a), "copy") ||
             !check(cuMemcpyHtoD(db, b, sizeof b), "copy"))
    return 1;
  void *params[] = {&da, &db, &dd};
  if (!check(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, 0, params, 0), "launch") ||
      (!mapped && !check(cuMemcpyDtoH(d, dd, sizeof d), "copy back")))
    return 1;
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 8; ++j) {
      double sum = 0;
      for (int k = 0; k < 16; ++k)
        sum += (double)af[i * 16 + k] * bf[k * 8 + j];
      error = fmaxf(error, (float)fabs(sum - d[i * 8 + j]));
    }
  printf("mma: max error %g %s\n", error, error <= 1e-5 ? "ok" : "FAILED");
  if (mapped)
    printf("mapped: register again %d, free %d, unregister %d, again %d\n",
           (int)cuMemHostRegister(a, sizeof a, 0), (int)cuMemFree(da),
           (int)cuMemHostUnregister(a), (int)cuMemHostUnregister(a));
  return error > 1e-5;
}

// The kernels of upstream-mma.mlir (one warp each, m16n8k16, fragments
// placed by upstream MLIR) in the PTX file `path`, each checked against
// D = C + A B. Inputs are multiples of 1/8 in [-2, 2): every product and sum
// is exact in fp32, so any error beyond 1e-6 is a misplaced element.
enum { M = 16, N = 8, K = 16 };

// A 2-D memref argument as MLIR passes it: allocated and aligned pointers,
// offset, sizes, strides.
typedef struct {
  CUdeviceptr allocated, aligned;
  int64_t offset, sizes[2], strides[2];
} Memref2D;

static Memref2D memref(CUdeviceptr p, int64_t rows, int64_t cols) {
  Memref2D d = {p, p, 0, {rows, cols}, {cols, 1}};
  return d;
}

static void pushMemref(void **params, int *count, Memref2D *d) {
  params[(*count)++] = &d->allocated;
  params[(*count)++] = &d->aligned;
  params[(*count)++] = &d->offset;
  params[(*count)++] = &d->sizes[0];
  params[(*count)++] = &d->sizes[1];
  params[(*count)++] = &d->strides[0];
  params[(*count)++] = &d->strides[1];
}

// `bStoredKN`: B is stored k by n (16x8) rather than n by k (8x16).
static int runUpstreamKernel(CUmodule module, const char *name, int bStoredKN) {
  uint16_t a[M * K], b[K * N];
  float af[M * K], bf[K * N], c[M * N], d[M * N], error = 0;
  for (int i = 0; i < M * K; ++i) {
    af[i] = (float)((i * 37 + 5) % 32 - 16) / 8;
    a[i] = toHalf(af[i]);
  }
  for (int i = 0; i < K * N; ++i) {
    bf[i] = (float)((i * 53 + 3) % 32 - 16) / 8;
    b[i] = toHalf(bf[i]);
  }
  for (int i = 0; i < M * N; ++i)
    c[i] = (float)(i % 7) - 3;
  CUfunction f;
  CUdeviceptr da, db, dc;
  if (!check(cuModuleGetFunction(&f, module, name), name) ||
      !check(cuMemAlloc(&da, sizeof a), "alloc") ||
      !check(cuMemAlloc(&db, sizeof b), "alloc") ||
      !check(cuMemAlloc(&dc, sizeof c), "alloc") ||
      !check(cuMemcpyHtoD(da, a, sizeof a), "copy") ||
      !check(cuMemcpyHtoD(db, b, sizeof b), "copy") ||
      !check(cuMemcpyHtoD(dc, c, sizeof c), "copy"))
    return 1;
  Memref2D ma = memref(da, M, K),
           mb = bStoredKN ? memref(db, K, N) : memref(db, N, K),
           mc = memref(dc, M, N);
  void *params[21];
  int count = 0;
  pushMemref(params, &count, &ma);
  pushMemref(params, &count, &mb);
  pushMemref(params, &count, &mc);
  if (!check(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, 0, params, 0), "launch") ||
      !check(cuMemcpyDtoH(d, dc, sizeof d), "copy back"))
    return 1;
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      double sum = c[i * N + j];
      for (int k = 0; k < K; ++k)
        sum +=
            (double)af[i * K + k] * (bStoredKN ? bf[k * N + j] : bf[j * K + k]);
      error = fmaxf(error, (float)fabs(sum - d[i * N + j]));
    }
  printf("%s: max error %g %s\n", name, error, error <= 1e-6 ? "ok" : "FAILED");
  cuMemFree(da);
  cuMemFree(db);
  cuMemFree(dc);
  return error > 1e-6;
}

static int runUpstream(const char *path) {
  static char ptx[1 << 20];
  CUmodule module;
  FILE *file = fopen(path, "r");
  if (!file) {
    fprintf(stderr, "emulator test: cannot read %s\n", path);
    return 1;
  }
  size_t size = fread(ptx, 1, sizeof ptx - 1, file);
  fclose(file);
  ptx[size] = 0;
  if (!check(cuModuleLoadData(&module, ptx), "load"))
    return 1;
  int failed = runUpstreamKernel(module, "fragments_f16", 0);
  failed |= runUpstreamKernel(module, "ldmatrix_f16", 0);
  failed |= runUpstreamKernel(module, "ldmatrix_trans_f16", 1);
  return failed;
}

int main(int argc, char **argv) {
  CUdevice device;
  CUcontext context;
  CUmodule module;
  CUfunction f;
  CUdeviceptr p = 0;
  const char *name = argc > 1 ? argv[1] : "";
  if (!check(cuInit(0), "cuInit") || !check(cuDeviceGet(&device, 0), "get") ||
      !check(cuDevicePrimaryCtxRetain(&context, device), "retain") ||
      !check(cuCtxSetCurrent(context), "set"))
    return 1;
  if (!strcmp(name, "mma") || !strcmp(name, "mapped"))
    return runMma(!strcmp(name, "mapped"));
  if (!strcmp(name, "funnel"))
    return runFunnel();
  if (!strcmp(name, "pairs"))
    return runPairs();
  if (!strcmp(name, "permute"))
    return runPermute();
  if (!strcmp(name, "scalars"))
    return runScalars();
  if (!strcmp(name, "forms"))
    return runRefusedForms();
  if (!strcmp(name, "print") && argc > 2) {
    const char *ptx = !strcmp(argv[2], "pairs")     ? kPairsPTX
                      : !strcmp(argv[2], "scalars") ? kScalarsPTX
                                                    : kPermutePTX;
    return fputs(ptx, stdout) < 0;
  }
  if (!strcmp(name, "upstream") && argc > 2)
    return runUpstream(argv[2]);
  // Modules the emulator must refuse to load.
  static const char cubin[] = "\x7f"
                              "ELF fake";
  const char *refused = !strcmp(name, "unsupported")    ? kUnsupportedPTX
                        : !strcmp(name, "cubin")        ? cubin
                        : !strcmp(name, "bareguard")    ? kBareGuardPTX
                        : !strcmp(name, "nobase")       ? kNoBasePTX
                        : !strcmp(name, "baddirective") ? kBadDirectivePTX
                                                        : NULL;
  if (refused) {
    const char *text = "";
    CUresult r = cuModuleLoadData(&module, refused);
    cuGetErrorString(r, &text);
    printf("%s: load %d, %s\n", name, (int)r, text);
    return r == CUDA_SUCCESS;
  }
  if (!strcmp(name, "dynamic")) {
    void *params[] = {&p};
    if (!check(cuModuleLoadData(&module, kBranchesPTX), "load") ||
        !check(cuModuleGetFunction(&f, module, "branches"), "function"))
      return 1;
    CUresult before = cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 65536, 0, params, 0);
    CUresult opt = cuFuncSetAttribute(
        f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 65536);
    CUresult after = cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 65536, 0, params, 0);
    CUresult beyond = cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 66560, 0, params, 0);
    CUresult most = cuFuncSetAttribute(
        f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 228 * 1024);
    CUresult other = cuFuncSetAttribute(
        f, CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, 100);
    printf("dynamic: 64 KiB %d, opt in %d, 64 KiB %d, 65 KiB %d, opt in 228 "
           "KiB %d, other attribute %d\n",
           (int)before, (int)opt, (int)after, (int)beyond, (int)most,
           (int)other);
    // A GPU's grid limits: 2^31 - 1 blocks in x, 65535 in y and z.
    CUresult wideX =
        cuLaunchKernel(f, 2147483648u, 1, 1, 32, 1, 1, 0, 0, params, 0);
    CUresult wideY = cuLaunchKernel(f, 1, 65536, 1, 32, 1, 1, 0, 0, params, 0);
    CUresult wideZ = cuLaunchKernel(f, 1, 1, 65536, 32, 1, 1, 0, 0, params, 0);
    printf("grid: x 2^31 %d, y 65536 %d, z 65536 %d\n", (int)wideX, (int)wideY,
           (int)wideZ);
    return after != CUDA_SUCCESS;
  }
  if (!strcmp(name, "branches")) {
    void *params[] = {&p};
    return !check(cuModuleLoadData(&module, kBranchesPTX), "load") ||
           !check(cuModuleGetFunction(&f, module, name), "function") ||
           !check(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, 0, params, 0),
                  "launch");
  }
  if (!check(cuModuleLoadData(&module, kFaultPTX), "load") ||
      !check(cuModuleGetFunction(&f, module, name), "function") ||
      !check(cuMemAlloc(&p, 16), "alloc"))
    return 1;
  void *params[] = {&p};
  CUresult launch = cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, 0, params, 0);
  CUresult after = cuMemAlloc(&p, 16);
  printf("%s: launch %d, then cuMemAlloc %d\n", name, (int)launch, (int)after);
  return launch == CUDA_SUCCESS;
}
