// REQUIRES: ptxas
// The launcher of a multi-head attention: its four projections, the
// attention between them and the scratch buffers for Q, K, V and the heads'
// output are its business; its caller passes the same DLTensors as to the
// CPU kernel. Built against the toolkit's stub libcuda (every call fails),
// it refuses malformed weights and activations with their codes before any
// CUDA call and a well-formed call with ATTN_ERR_NO_DEVICE.

// RUN: rm -rf %t && mkdir -p %t/stub
// RUN: attn-compile --target nvptx --mma=false --spec "b=2,hq=4,hkv=2,sq=40,d=16,dtype=f16,kind=mha,e=64,kv_lens=random,mask=causal,dynamic=bs" --name mha -o %t
// RUN: FileCheck %s --check-prefix=MANIFEST < %t/manifest.json
// RUN: %cc -std=c11 -Wall -Wextra -Werror -I%cuda_toolkit/include -I%t %s %t/mha_launch.c -L%cuda_toolkit/lib64/stubs -lcuda -lpthread -o %t/driver
// RUN: ln -sf %cuda_toolkit/lib64/stubs/libcuda.so %t/stub/libcuda.so.1
// RUN: env LD_LIBRARY_PATH=%t/stub %t/driver | FileCheck %s

// Projections of x_q, x_k and x_v, the attention, the output projection.
// MANIFEST: "launches": [
// MANIFEST-NEXT: "mha_project0",
// MANIFEST-NEXT: "mha_project0",
// MANIFEST-NEXT: "mha_project0",
// MANIFEST-NEXT: "mha",
// MANIFEST-NEXT: "mha_project0"
// MANIFEST-NEXT: ],

// CHECK: w_q of 64 x 32: 5 (tensor size disagrees
// CHECK-NEXT: x_k of embedding 32: 5
// CHECK-NEXT: x_v of another length: 6 (tensor sizes disagree
// CHECK-NEXT: kv_lens f16: 3
// CHECK-NEXT: no driver: 10 (no CUDA driver or device
// CHECK-NEXT: error string of 13: no device memory for the kernel's scratch buffers

#include "mha.h"

#include <stdio.h>

static DLTensor tensor(int ndim, int64_t *shape, void *data, int bits) {
  DLTensor t = {0};
  t.data = data;
  t.device.device_type = kDLCUDA;
  t.ndim = ndim;
  t.dtype.code = bits == 32 ? kDLInt : kDLFloat;
  t.dtype.bits = bits;
  t.dtype.lanes = 1;
  t.shape = shape;
  return t;
}

static void report(const char *what, int code) {
  printf("%s: %d (%s)\n", what, code, mha_error_string(code));
}

int main(void) {
  // Device pointers are never dereferenced on the host: any aligned value.
  void *at = (void *)0x10000;
  int64_t x[3] = {2, 40, 64}, xShort[3] = {2, 30, 64}, xNarrow[3] = {2, 40, 32};
  int64_t wq[2] = {64, 64}, wkv[2] = {64, 32}, wo[2] = {64, 64};
  int64_t wqNarrow[2] = {64, 32}, lens[1] = {2};
  DLTensor xq = tensor(3, x, at, 16), xk = tensor(3, x, at, 16),
           xv = tensor(3, x, at, 16), w_q = tensor(2, wq, at, 16),
           w_k = tensor(2, wkv, at, 16), w_v = tensor(2, wkv, at, 16),
           w_o = tensor(2, wo, at, 16), kv = tensor(1, lens, at, 32),
           out = tensor(3, x, at, 16);

  w_q.shape = wqNarrow;
  report("w_q of 64 x 32",
         mha(&xq, &xk, &xv, &w_q, &w_k, &w_v, &w_o, &kv, &out, 0));
  w_q.shape = wq;
  xk.shape = xNarrow;
  report("x_k of embedding 32",
         mha(&xq, &xk, &xv, &w_q, &w_k, &w_v, &w_o, &kv, &out, 0));
  xk.shape = x;
  xv.shape = xShort;
  report("x_v of another length",
         mha(&xq, &xk, &xv, &w_q, &w_k, &w_v, &w_o, &kv, &out, 0));
  xv.shape = x;
  kv.dtype.code = kDLFloat;
  kv.dtype.bits = 16;
  report("kv_lens f16",
         mha(&xq, &xk, &xv, &w_q, &w_k, &w_v, &w_o, &kv, &out, 0));
  kv = tensor(1, lens, at, 32);
  report("no driver", mha(&xq, &xk, &xv, &w_q, &w_k, &w_v, &w_o, &kv, &out, 0));
  printf("error string of 13: %s\n", mha_error_string(13));
  return 0;
}
