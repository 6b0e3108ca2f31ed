/*===- KernelABI.c - DLPack argument checking for attn kernels ----*- C -*-===*\
|*                                                                            *|
|* Part of the attn project: an MLIR compiler for attention.                  *|
|*                                                                            *|
|* Compiled to LLVM bitcode at build time and linked (with internal linkage)  *|
|* into every CPU kernel object, so a kernel needs no runtime library. Every  *|
|* path that could read or write out of bounds returns an error code first.   *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#include "attn/Runtime/KernelABI.h"

#include <dlpack/dlpack.h>

static int dtype_matches(const DLDataType *t, const attn_operand_desc *d) {
  if (t->lanes != 1 || t->bits != d->dtype_bits)
    return 0;
  if (t->code == d->dtype_code)
    return 1;
  /* An i1 mask may come as DLPack bool or as uint8. */
  return d->dtype_code == ATTN_DL_BOOL && t->code == kDLUInt;
}

ATTN_RT_API int32_t attn_rt_bind_operands_on(
    int32_t device_type, const void *const *tensors,
    const attn_operand_desc *descs, int64_t n, const int64_t *static_sizes,
    attn_memref_desc *memrefs, int64_t *sizes) {
  int64_t bound[ATTN_NUM_SYMBOLS];
  int64_t i, d;
  for (i = 0; i < ATTN_NUM_SYMBOLS; ++i)
    bound[i] = static_sizes[i];

  /* Pass 1: validate every tensor and bind the sizes, before touching any
   * output descriptor. */
  for (i = 0; i < n; ++i) {
    const DLTensor *t = (const DLTensor *)tensors[i];
    const attn_operand_desc *desc = &descs[i];
    if (!t || (!t->shape && t->ndim > 0))
      return ATTN_ERR_NULL;
    if (t->ndim != desc->ndim)
      return ATTN_ERR_NDIM;
    if (!dtype_matches(&t->dtype, desc))
      return ATTN_ERR_DTYPE;
    /* A GPU kernel runs on one device: the first tensor's. */
    if ((int32_t)t->device.device_type != device_type ||
        (device_type != kDLCPU &&
         t->device.device_id !=
             ((const DLTensor *)tensors[0])->device.device_id))
      return ATTN_ERR_DEVICE;
    for (d = 0; d < desc->ndim; ++d) {
      int64_t size = t->shape[d];
      int64_t sym = desc->dims[d];
      if (size < 0)
        return ATTN_ERR_STATIC_SHAPE;
      if (sym < 0) { /* ATTN_DIM_FIXED(-sym) */
        if (size != -sym)
          return ATTN_ERR_STATIC_SHAPE;
        continue;
      }
      if (desc->blocks[d] > 0)
        continue; /* a block count: checked once every size is bound */
      if (bound[sym] < 0) {
        bound[sym] = size;
        continue;
      }
      if (bound[sym] != size)
        return static_sizes[sym] >= 0 ? ATTN_ERR_STATIC_SHAPE
                                      : ATTN_ERR_SHAPE_MISMATCH;
    }
  }
  if (bound[ATTN_SYM_HKV] == 0 || bound[ATTN_SYM_HQ] % bound[ATTN_SYM_HKV])
    return ATTN_ERR_HEADS;
  for (i = 0; i < n; ++i)
    for (d = 0; d < descs[i].ndim; ++d) {
      int64_t block = descs[i].blocks[d], sym = descs[i].dims[d];
      if (block > 0 && (bound[sym] < 0 ||
                        ((const DLTensor *)tensors[i])->shape[d] !=
                            bound[sym] / block + (bound[sym] % block != 0)))
        return ATTN_ERR_SHAPE_MISMATCH;
    }

  /* Pass 2: layouts and pointers. */
  for (i = 0; i < n; ++i) {
    const DLTensor *t = (const DLTensor *)tensors[i];
    int64_t ndim = t->ndim, numel = 1, span = 1, stride = 1, bytes;
    int64_t elem_bytes = (t->dtype.bits + 7) / 8;
    char *data;
    /* Sizes are non-negative here. The product of the non-zero ones, in
     * bytes, must fit: it bounds the size and every stride below. */
    for (d = 0; d < ndim; ++d) {
      numel *= t->shape[d] > 0 ? 1 : 0;
      if (t->shape[d] > 0 && __builtin_mul_overflow(span, t->shape[d], &span))
        return ATTN_ERR_TOO_LARGE;
    }
    numel *= span;
    if (__builtin_mul_overflow(span, elem_bytes, &bytes))
      return ATTN_ERR_TOO_LARGE;
    if (!t->data && numel > 0)
      return ATTN_ERR_NULL;
    if (t->byte_offset > UINTPTR_MAX - (uintptr_t)t->data)
      return ATTN_ERR_TOO_LARGE;
    data = (char *)((uintptr_t)t->data + t->byte_offset);
    if ((uintptr_t)data % (uintptr_t)elem_bytes)
      return ATTN_ERR_ALIGNMENT;
    memrefs[i].allocated = data;
    memrefs[i].aligned = data;
    memrefs[i].offset = 0;
    for (d = ndim - 1; d >= 0; --d) {
      /* Strides of size-1 dimensions never matter. */
      if (t->strides && t->shape[d] != 1 && t->strides[d] != stride)
        return ATTN_ERR_STRIDES;
      memrefs[i].sizes_and_strides[d] = t->shape[d];
      memrefs[i].sizes_and_strides[ndim + d] = stride;
      stride *= t->shape[d];
    }
  }
  if (sizes)
    for (i = 0; i < ATTN_NUM_SYMBOLS; ++i)
      sizes[i] = bound[i];
  return ATTN_OK;
}

ATTN_RT_API int32_t attn_rt_bind_operands(const void *const *tensors,
                                          const attn_operand_desc *descs,
                                          int64_t n,
                                          const int64_t *static_sizes,
                                          attn_memref_desc *memrefs) {
  return attn_rt_bind_operands_on(kDLCPU, tensors, descs, n, static_sizes,
                                  memrefs, 0);
}

ATTN_RT_API const char *attn_rt_status_string(int32_t status) {
  switch (status) {
  case ATTN_OK:
    return "success";
  case ATTN_ERR_NULL:
    return "null DLTensor, shape or data pointer";
  case ATTN_ERR_NDIM:
    return "tensor has the wrong number of dimensions";
  case ATTN_ERR_DTYPE:
    return "tensor has the wrong dtype (or lanes != 1)";
  case ATTN_ERR_DEVICE:
    return "tensor is on the wrong device (a CPU kernel takes kDLCPU "
           "tensors, a GPU kernel kDLCUDA tensors all on one device)";
  case ATTN_ERR_STATIC_SHAPE:
    return "tensor size disagrees with the size the kernel was compiled for";
  case ATTN_ERR_SHAPE_MISMATCH:
    return "tensor sizes disagree between operands";
  case ATTN_ERR_STRIDES:
    return "tensor is not compact row-major (unsupported strides)";
  case ATTN_ERR_HEADS:
    return "query heads are not a positive multiple of key/value heads";
  case ATTN_ERR_ALIGNMENT:
    return "tensor data is not aligned to its element size (K and V of a "
           "tensor-core GPU kernel: to 16 bytes)";
  case ATTN_ERR_NO_DEVICE:
    return "no CUDA driver or device (cuInit or the device's context failed)";
  case ATTN_ERR_MODULE:
    return "the kernel's cubin did not load (wrong GPU architecture or an "
           "old driver), or the GPU refuses its dynamic shared memory";
  case ATTN_ERR_LAUNCH:
    return "the CUDA launch failed, or the problem exceeds the grid";
  case ATTN_ERR_TOO_LARGE:
    return "tensor too large: its size in bytes, or its data pointer plus "
           "byte_offset, overflows";
  case ATTN_ERR_OUT_OF_MEMORY:
    return "no device memory for the kernel's scratch buffers (the projected "
           "operands of a multi-head or additive attention)";
  default:
    return "unknown attn status code";
  }
}
