// REQUIRES: ptxas
// The C launcher of a GPU kernel, built the way a user builds it (against
// the toolkit's cuda.h, linked against libcuda: here the toolkit's stub,
// which answers every call with CUDA_ERROR_STUB_LIBRARY). It rejects every
// malformed argument with its code before touching CUDA, and a well-formed
// call on a machine without a usable driver with FLASH_ERR_NO_DEVICE; it
// never crashes. The tensor-core kernel (flash_tc) copies K and V 16 bytes
// at a time, the FMA kernel (flash) 4 elements (8 bytes of f16), and both
// read Q and write out 4 elements at once (the exact kernel behind the
// tensor cores' under the causal mask is an FMA kernel): data aligned to
// its element but not to that is refused.

// RUN: rm -rf %t && mkdir -p %t/stub
// RUN: attn-compile --target nvptx --mma=false --spec "b=1,hq=4,hkv=2,sq=64,d=32,dtype=f16,mask=causal" --name flash -o %t
// RUN: attn-compile --target nvptx --mma --spec "b=1,hq=4,hkv=2,sq=64,d=32,dtype=f16,mask=causal" --name flash_tc -o %t
// RUN: %cc -std=c11 -Wall -Wextra -Werror -I%cuda_toolkit/include -I%t %s %t/flash_launch.c %t/flash_tc_launch.c -L%cuda_toolkit/lib64/stubs -lcuda -lpthread -o %t/driver
// RUN: ln -sf %cuda_toolkit/lib64/stubs/libcuda.so %t/stub/libcuda.so.1
// RUN: env LD_LIBRARY_PATH=%t/stub %t/driver | FileCheck %s

// CHECK: null q: 1 (null DLTensor, shape or data pointer)
// CHECK-NEXT: wrong ndim: 2
// CHECK-NEXT: wrong dtype f32: 3
// CHECK-NEXT: cpu tensor: 4 (tensor is on the wrong device
// CHECK-NEXT: out on another gpu: 4
// CHECK-NEXT: static size mismatch: 5
// CHECK-NEXT: non-compact strides: 7
// CHECK-NEXT: misaligned data: 9
// CHECK-NEXT: no driver: 10 (no CUDA driver or device
// CHECK-NEXT: k 8 bytes in, tensor cores: 9 (tensor data is not aligned
// CHECK-NEXT: k 8 bytes in, fma: 10
// CHECK-NEXT: k 4 bytes in, fma: 9
// CHECK-NEXT: v 2 bytes in, fma: 9
// CHECK-NEXT: v 8 bytes in, tensor cores: 9
// CHECK-NEXT: q 4 bytes in, fma: 9
// CHECK-NEXT: q 8 bytes in, fma: 10
// CHECK-NEXT: out 4 bytes in, tensor cores: 9
// CHECK-NEXT: tensor cores, aligned: 10
// CHECK-NEXT: error string of 99: unknown attn status code

#include "flash.h"
#include "flash_tc.h"

#include <stdio.h>

static int64_t qShape[4] = {1, 4, 64, 32}, kvShape[4] = {1, 2, 64, 32};

static DLTensor tensor(int64_t *shape, void *data) {
  DLTensor t = {0};
  t.data = data;
  t.device.device_type = kDLCUDA;
  t.device.device_id = 0;
  t.ndim = 4;
  t.dtype.code = kDLFloat;
  t.dtype.bits = 16;
  t.dtype.lanes = 1;
  t.shape = shape;
  return t;
}

static void report(const char *what, int code) {
  printf("%s: %d (%s)\n", what, code, flash_error_string(code));
}

int main(void) {
  // Device pointers are never dereferenced on the host: any aligned value.
  void *dq = (void *)0x10000, *dk = (void *)0x20000, *dv = (void *)0x30000,
       *dout = (void *)0x40000;
  DLTensor q = tensor(qShape, dq), k = tensor(kvShape, dk),
           v = tensor(kvShape, dv), out = tensor(qShape, dout);

  report("null q", flash(NULL, &k, &v, &out, NULL));
  DLTensor bad = q;
  bad.ndim = 3;
  report("wrong ndim", flash(&bad, &k, &v, &out, NULL));
  bad = q;
  bad.dtype.bits = 32;
  report("wrong dtype f32", flash(&bad, &k, &v, &out, NULL));
  bad = q;
  bad.device.device_type = kDLCPU;
  report("cpu tensor", flash(&bad, &k, &v, &out, NULL));
  bad = out;
  bad.device.device_id = 1;
  report("out on another gpu", flash(&q, &k, &v, &bad, NULL));
  int64_t longer[4] = {1, 4, 65, 32};
  bad = tensor(longer, dq);
  report("static size mismatch", flash(&bad, &k, &v, &out, NULL));
  int64_t strides[4] = {4 * 64 * 64, 64 * 64, 64, 1};
  bad = q;
  bad.strides = strides;
  report("non-compact strides", flash(&bad, &k, &v, &out, NULL));
  bad = q;
  bad.byte_offset = 1;
  report("misaligned data", flash(&bad, &k, &v, &out, NULL));
  report("no driver", flash(&q, &k, &v, &out, NULL));
  bad = k;
  bad.byte_offset = 8;
  report("k 8 bytes in, tensor cores", flash_tc(&q, &bad, &v, &out, NULL));
  report("k 8 bytes in, fma", flash(&q, &bad, &v, &out, NULL));
  bad.byte_offset = 4;
  report("k 4 bytes in, fma", flash(&q, &bad, &v, &out, NULL));
  bad = v;
  bad.byte_offset = 2;
  report("v 2 bytes in, fma", flash(&q, &k, &bad, &out, NULL));
  bad = v;
  bad.byte_offset = 8;
  report("v 8 bytes in, tensor cores", flash_tc(&q, &k, &bad, &out, NULL));
  bad = q;
  bad.byte_offset = 4;
  report("q 4 bytes in, fma", flash(&bad, &k, &v, &out, NULL));
  bad.byte_offset = 8;
  report("q 8 bytes in, fma", flash(&bad, &k, &v, &out, NULL));
  bad = out;
  bad.byte_offset = 4;
  report("out 4 bytes in, tensor cores", flash_tc(&q, &k, &v, &bad, NULL));
  report("tensor cores, aligned", flash_tc(&q, &k, &v, &out, NULL));
  printf("error string of 99: %s\n", flash_error_string(99));
  return 0;
}
