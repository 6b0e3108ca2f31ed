/* A compact f32 CPU DLTensor over `data` (for the C tests of the ABI). */
#ifndef ATTN_TEST_CPU_TENSOR_H
#define ATTN_TEST_CPU_TENSOR_H

#include <dlpack/dlpack.h>
#include <string.h>

static DLTensor cpu_tensor(float *data, int ndim, int64_t *shape) {
  DLTensor t;
  memset(&t, 0, sizeof(t));
  t.data = data;
  t.device.device_type = kDLCPU;
  t.ndim = ndim;
  t.dtype.code = kDLFloat;
  t.dtype.bits = 32;
  t.dtype.lanes = 1;
  t.shape = shape;
  return t;
}

#endif /* ATTN_TEST_CPU_TENSOR_H */
