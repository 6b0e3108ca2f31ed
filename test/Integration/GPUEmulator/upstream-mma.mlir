// REQUIRES: cuda-emulator
// The CUDA emulator's ldmatrix and mma.sync against fragments it did not
// place: upstream MLIR's convert-vector-to-gpu{use-nvgpu} (VectorToGPU with
// NVGPU's MMAUtils, the path IREE's CUDA backend takes to mma.sync)
// distributes each m16n8k16 product below over one warp, and the emulator
// must compute D = C + A B exactly (emulator.c's `upstream`: inputs in 1/8
// steps, so fp32 holds every product and sum; tolerance 1e-6). attn's own
// kernels and emulator.c's hand-written PTX place fragments by one reading
// of the PTX ISA; this pins that reading to upstream's.
//
// - fragments_f16: A, B and C loaded lane by lane from global memory at the
//   coordinates of upstream's lane -> fragment maps (the mma.sync layouts).
// - ldmatrix_f16: A and B (n by k, as attn stages K) staged in shared
//   memory, read by ldmatrix x4 and x2 (the ldmatrix layouts).
// - ldmatrix_trans_f16: B stored k by n (as attn stages V), read by
//   ldmatrix x2.trans.
// upstream has no bf16 path through nvgpu.mma.sync; bf16 fragments have
// the f16 layout (PTX ISA, m16n8k16), only their element type differs.

// RUN: rm -rf %t && mkdir -p %t
// RUN: attn-opt %s --pass-pipeline='builtin.module(gpu.module(gpu.func(convert-vector-to-gpu{use-nvgpu=true}),convert-scf-to-cf,expand-strided-metadata,lower-affine,convert-nvgpu-to-nvvm,convert-gpu-to-nvvm,canonicalize,cse,reconcile-unrealized-casts),nvvm-attach-target{chip=sm_90 O=3},gpu-module-to-binary{format=isa toolkit=%cuda_toolkit})' -o %t/binary.mlir
// RUN: %python %S/Inputs/assembly-of.py %t/binary.mlir > %t/mma.ptx
// RUN: FileCheck %s --check-prefix=PTX < %t/mma.ptx
// RUN: %cc -std=c11 -Wall -Werror -I%cuda_toolkit/include %S/emulator.c -L%cuda_emulator_dir -lcuda -Wl,-rpath,%cuda_emulator_dir -lm -o %t/emulator
// RUN: %t/emulator upstream %t/mma.ptx | FileCheck %s

// PTX-LABEL: .entry fragments_f16(
// PTX-NOT: ldmatrix
// PTX: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
// PTX-LABEL: .entry ldmatrix_f16(
// PTX: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// PTX: ldmatrix.sync.aligned.m8n8.x2.shared.b16
// PTX: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
// PTX-LABEL: .entry ldmatrix_trans_f16(
// PTX: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// PTX: ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16
// PTX: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32

// CHECK: fragments_f16: max error 0 ok
// CHECK: ldmatrix_f16: max error 0 ok
// CHECK: ldmatrix_trans_f16: max error 0 ok

#mk = affine_map<(m, n, k) -> (m, k)>
#nk = affine_map<(m, n, k) -> (n, k)>
#mn = affine_map<(m, n, k) -> (m, n)>
#transposed = affine_map<(d0, d1) -> (d1, d0)>

gpu.module @upstream_mma {
  gpu.func @fragments_f16(%a: memref<16x16xf16>, %b: memref<8x16xf16>,
                          %c: memref<16x8xf32>) kernel {
    %c0 = arith.constant 0 : index
    %h = arith.constant 0.0 : f16
    %f = arith.constant 0.0 : f32
    %A = vector.transfer_read %a[%c0, %c0], %h {in_bounds = [true, true]}
      : memref<16x16xf16>, vector<16x16xf16>
    %B = vector.transfer_read %b[%c0, %c0], %h {in_bounds = [true, true]}
      : memref<8x16xf16>, vector<8x16xf16>
    %C = vector.transfer_read %c[%c0, %c0], %f {in_bounds = [true, true]}
      : memref<16x8xf32>, vector<16x8xf32>
    %D = vector.contract {indexing_maps = [#mk, #nk, #mn],
                          iterator_types = ["parallel", "parallel", "reduction"],
                          kind = #vector.kind<add>} %A, %B, %C
      : vector<16x16xf16>, vector<8x16xf16> into vector<16x8xf32>
    vector.transfer_write %D, %c[%c0, %c0] {in_bounds = [true, true]}
      : vector<16x8xf32>, memref<16x8xf32>
    gpu.return
  }

  // Lanes below 16 copy a column of A and lanes below 8 one of B: no
  // division, which convert-vector-to-gpu would take for part of the product.
  gpu.func @ldmatrix_f16(%a: memref<16x16xf16>, %b: memref<8x16xf16>,
                         %c: memref<16x8xf32>)
      workgroup(%sa: memref<16x16xf16, #gpu.address_space<workgroup>>,
                %sb: memref<8x16xf16, #gpu.address_space<workgroup>>) kernel {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    %c16 = arith.constant 16 : index
    %h = arith.constant 0.0 : f16
    %f = arith.constant 0.0 : f32
    %lane = gpu.thread_id x
    %copies = arith.cmpi ult, %lane, %c16 : index
    scf.if %copies {
      scf.for %r = %c0 to %c16 step %c1 {
        %x = memref.load %a[%r, %lane] : memref<16x16xf16>
        memref.store %x, %sa[%r, %lane]
          : memref<16x16xf16, #gpu.address_space<workgroup>>
      }
      scf.for %r = %c0 to %c8 step %c1 {
        %x = memref.load %b[%r, %lane] : memref<8x16xf16>
        memref.store %x, %sb[%r, %lane]
          : memref<8x16xf16, #gpu.address_space<workgroup>>
      }
    }
    gpu.barrier
    %A = vector.transfer_read %sa[%c0, %c0], %h {in_bounds = [true, true]}
      : memref<16x16xf16, #gpu.address_space<workgroup>>, vector<16x16xf16>
    %B = vector.transfer_read %sb[%c0, %c0], %h {in_bounds = [true, true]}
      : memref<8x16xf16, #gpu.address_space<workgroup>>, vector<8x16xf16>
    %C = vector.transfer_read %c[%c0, %c0], %f {in_bounds = [true, true]}
      : memref<16x8xf32>, vector<16x8xf32>
    %D = vector.contract {indexing_maps = [#mk, #nk, #mn],
                          iterator_types = ["parallel", "parallel", "reduction"],
                          kind = #vector.kind<add>} %A, %B, %C
      : vector<16x16xf16>, vector<8x16xf16> into vector<16x8xf32>
    vector.transfer_write %D, %c[%c0, %c0] {in_bounds = [true, true]}
      : vector<16x8xf32>, memref<16x8xf32>
    gpu.return
  }

  gpu.func @ldmatrix_trans_f16(%a: memref<16x16xf16>, %b: memref<16x8xf16>,
                               %c: memref<16x8xf32>)
      workgroup(%sa: memref<16x16xf16, #gpu.address_space<workgroup>>,
                %sb: memref<16x8xf16, #gpu.address_space<workgroup>>) kernel {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    %c16 = arith.constant 16 : index
    %h = arith.constant 0.0 : f16
    %f = arith.constant 0.0 : f32
    %lane = gpu.thread_id x
    %copiesA = arith.cmpi ult, %lane, %c16 : index
    scf.if %copiesA {
      scf.for %r = %c0 to %c16 step %c1 {
        %x = memref.load %a[%r, %lane] : memref<16x16xf16>
        memref.store %x, %sa[%r, %lane]
          : memref<16x16xf16, #gpu.address_space<workgroup>>
      }
    }
    %copiesB = arith.cmpi ult, %lane, %c8 : index
    scf.if %copiesB {
      scf.for %r = %c0 to %c16 step %c1 {
        %x = memref.load %b[%r, %lane] : memref<16x8xf16>
        memref.store %x, %sb[%r, %lane]
          : memref<16x8xf16, #gpu.address_space<workgroup>>
      }
    }
    gpu.barrier
    %A = vector.transfer_read %sa[%c0, %c0], %h {in_bounds = [true, true]}
      : memref<16x16xf16, #gpu.address_space<workgroup>>, vector<16x16xf16>
    %B = vector.transfer_read %sb[%c0, %c0], %h
      {in_bounds = [true, true], permutation_map = #transposed}
      : memref<16x8xf16, #gpu.address_space<workgroup>>, vector<8x16xf16>
    %C = vector.transfer_read %c[%c0, %c0], %f {in_bounds = [true, true]}
      : memref<16x8xf32>, vector<16x8xf32>
    %D = vector.contract {indexing_maps = [#mk, #nk, #mn],
                          iterator_types = ["parallel", "parallel", "reduction"],
                          kind = #vector.kind<add>} %A, %B, %C
      : vector<16x16xf16>, vector<8x16xf16> into vector<16x8xf32>
    vector.transfer_write %D, %c[%c0, %c0] {in_bounds = [true, true]}
      : vector<16x8xf32>, memref<16x8xf32>
    gpu.return
  }
}
