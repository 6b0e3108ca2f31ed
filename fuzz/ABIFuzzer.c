/*===- ABIFuzzer.c - libFuzzer target: DLTensors at the kernel ABI -*- C
-*-===*\
|*                                                                            *|
|* Part of the attn project: an MLIR compiler for attention.                  *|
|*                                                                            *|
|* The input picks one of a few real operand lists (an attention with a mask, *|
|* key lengths and a block mask; a multi-head attention with fixed weights)   *|
|* and describes each DLTensor: null or not, its rank, shape, strides (none,  *|
|* compact or not), dtype, device, byte offset and data pointer. Every shape  *|
|* and stride array is allocated at its exact size, so ASan sees any read    *|
|* past the rank. The runtime must return an error, or success with          *|
|* descriptors this file's own checks agree with.                            *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#include "attn/Runtime/KernelABI.h"

#include <dlpack/dlpack.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_OPERANDS 8
#define S(x) ATTN_SYM_##x
#define F(n) ATTN_DIM_FIXED(n)

/* (q, k, v, mask [1, Hq, Sq, Sk] bool, kv_lens [B] i32, block_mask [B, 1,
 * Sq/16, Sk/32] i8, out) in f16, D = 64 static. */
static const attn_operand_desc kAttention[] = {
    {4, kDLFloat, 16, {S(B), S(HQ), S(SQ), S(D)}, {0}},
    {4, kDLFloat, 16, {S(B), S(HKV), S(SK), S(D)}, {0}},
    {4, kDLFloat, 16, {S(B), S(HKV), S(SK), S(DV)}, {0}},
    {4, ATTN_DL_BOOL, 8, {F(1), S(HQ), S(SQ), S(SK)}, {0}},
    {1, kDLInt, 32, {S(B)}, {0}},
    {4, kDLInt, 8, {S(B), F(1), S(SQ), S(SK)}, {0, 0, 16, 32}},
    {4, kDLFloat, 16, {S(B), S(HQ), S(SQ), S(DV)}, {0}},
};
static const int64_t kAttentionSizes[ATTN_NUM_SYMBOLS] = {-1, -1, -1, -1,
                                                          -1, 64, -1, -1};
/* (x_q, x_k, x_v, w_q, w_k, w_v, w_o, out) in f32: E = 32, Hq = 4, Hkv = 2,
 * D = Dv = 8. */
static const attn_operand_desc kMultiHead[] = {
    {3, kDLFloat, 32, {S(B), S(SQ), F(32)}, {0}},
    {3, kDLFloat, 32, {S(B), S(SK), F(32)}, {0}},
    {3, kDLFloat, 32, {S(B), S(SK), F(32)}, {0}},
    {2, kDLFloat, 32, {F(32), F(32)}, {0}},
    {2, kDLFloat, 32, {F(32), F(16)}, {0}},
    {2, kDLFloat, 32, {F(32), F(16)}, {0}},
    {2, kDLFloat, 32, {F(32), F(32)}, {0}},
    {3, kDLFloat, 32, {S(B), S(SQ), F(32)}, {0}},
};
static const int64_t kMultiHeadSizes[ATTN_NUM_SYMBOLS] = {-1, 4, 2, -1,
                                                          -1, 8, 8, -1};

/* The input, a byte at a time (zeros once it runs out). */
typedef struct {
  const uint8_t *data;
  size_t size;
} input_t;

static uint8_t byte(input_t *in) {
  uint8_t b = 0;
  if (in->size) {
    b = *in->data++;
    --in->size;
  }
  return b;
}

/* A size: mostly small, sometimes 0, negative or huge. */
static int64_t size_value(input_t *in, int64_t valid) {
  uint8_t b = byte(in);
  switch (b >> 5) {
  case 0:
  case 1:
  case 2:
    return valid; /* what the descriptor asks for */
  case 3:
    return b & 7;
  case 4:
    return -(int64_t)(b & 3) - 1;
  case 5:
    return (int64_t)1 << (32 + (b & 31) % 31);
  default:
    return (int64_t)(b & 31) * 1000003;
  }
}

[[noreturn]] static void finding(const char *what, int64_t operand) {
  fprintf(stderr, "attn-abi-fuzzer: %s (operand %lld)\n", what,
          (long long)operand);
  abort();
}

/* The checks the runtime must have made, redone: run only on success. */
static void check_success(DLTensor *const *tensors,
                          const attn_operand_desc *descs, int64_t n,
                          const int64_t *static_sizes,
                          const attn_memref_desc *memrefs,
                          const int64_t *sizes) {
  int64_t i, d;
  for (i = 0; i < ATTN_NUM_SYMBOLS; ++i)
    if (static_sizes[i] >= 0 && sizes[i] != static_sizes[i])
      finding("a bound size differs from its static size", i);
  if (sizes[S(HKV)] >= 0 &&
      (sizes[S(HKV)] == 0 || sizes[S(HQ)] % sizes[S(HKV)]))
    finding("accepted heads that do not divide", -1);
  for (i = 0; i < n; ++i) {
    const DLTensor *t = tensors[i];
    const attn_operand_desc *desc = &descs[i];
    int64_t stride = 1;
    if (!t || t->ndim != desc->ndim || t->dtype.lanes != 1 ||
        t->dtype.bits != desc->dtype_bits || t->device.device_type != kDLCPU)
      finding("accepted a tensor of the wrong kind", i);
    for (d = desc->ndim - 1; d >= 0; --d) {
      int64_t want = desc->dims[d] < 0 ? -desc->dims[d] : sizes[desc->dims[d]];
      if (desc->blocks[d])
        want = (want + desc->blocks[d] - 1) / desc->blocks[d];
      if (t->shape[d] != want)
        finding("accepted a wrong size", i);
      if (t->strides && t->shape[d] != 1 && t->strides[d] != stride)
        finding("accepted non-compact strides", i);
      if (memrefs[i].sizes_and_strides[d] != t->shape[d] ||
          memrefs[i].sizes_and_strides[desc->ndim + d] != stride)
        finding("described a tensor wrongly", i);
      stride *= t->shape[d];
    }
    if ((uintptr_t)memrefs[i].aligned != (uintptr_t)t->data + t->byte_offset)
      finding("pointed at the wrong data", i);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  input_t in = {data, size};
  int multi_head = byte(&in) & 1;
  const attn_operand_desc *descs = multi_head ? kMultiHead : kAttention;
  const int64_t *static_sizes = multi_head ? kMultiHeadSizes : kAttentionSizes;
  int64_t n = multi_head ? 8 : 7, i, d;
  /* Valid sizes to start from: B, Hq, Hkv, Sq, Sk, D, Dv. */
  int64_t valid[ATTN_NUM_SYMBOLS] = {2, 4, 2, 33, 65, 64, 64, 0};
  DLTensor storage[MAX_OPERANDS];
  DLTensor *tensors[MAX_OPERANDS];
  int64_t *shapes[MAX_OPERANDS] = {0}, *strides[MAX_OPERANDS] = {0};
  attn_memref_desc memrefs[MAX_OPERANDS];
  int64_t sizes[ATTN_NUM_SYMBOLS];
  int32_t status;
  if (multi_head) {
    valid[S(HQ)] = 4;
    valid[S(HKV)] = 2;
    valid[S(D)] = valid[S(DV)] = 8;
  }
  /* The dynamic sizes every tensor agrees on: small, 0 or huge. */
  valid[S(B)] = size_value(&in, valid[S(B)]);
  valid[S(SQ)] = size_value(&in, valid[S(SQ)]);
  valid[S(SK)] = size_value(&in, valid[S(SK)]);
  for (i = 0; i < n; ++i) {
    const attn_operand_desc *desc = &descs[i];
    DLTensor *t = &storage[i];
    uint8_t flags = byte(&in);
    int64_t ndim = desc->ndim;
    memset(t, 0, sizeof *t);
    tensors[i] = (flags & 0x7) == 7 ? NULL : t;
    if (flags & 0x8)
      ndim = byte(&in) % 6;
    t->ndim = (int32_t)ndim;
    shapes[i] = malloc(sizeof(int64_t) * (size_t)(ndim ? ndim : 1));
    for (d = 0; d < ndim; ++d) {
      int64_t sym = d < desc->ndim ? desc->dims[d] : -1;
      int64_t want = sym < 0 ? -sym : valid[sym];
      if (d < desc->ndim && desc->blocks[d])
        want = (want + desc->blocks[d] - 1) / desc->blocks[d];
      shapes[i][d] = size_value(&in, want);
    }
    t->shape = (flags & 0x10) && !ndim ? NULL : shapes[i];
    if (flags & 0x20) {
      int64_t stride = 1;
      strides[i] = malloc(sizeof(int64_t) * (size_t)(ndim ? ndim : 1));
      for (d = ndim - 1; d >= 0; --d) {
        strides[i][d] = byte(&in) < 200 ? stride : size_value(&in, stride);
        stride *= shapes[i][d] > 0 && shapes[i][d] < 4096 ? shapes[i][d] : 1;
      }
      t->strides = strides[i];
    }
    t->dtype.code = (uint8_t)desc->dtype_code;
    t->dtype.bits = (uint8_t)desc->dtype_bits;
    t->dtype.lanes = 1;
    if (flags & 0x40) {
      t->dtype.code = byte(&in) % 8;
      t->dtype.bits = byte(&in);
      t->dtype.lanes = byte(&in) % 3;
    }
    t->device.device_type = kDLCPU;
    if (flags & 0x80) {
      t->device.device_type = (DLDeviceType)(byte(&in) % 16);
      t->device.device_id = byte(&in) % 3;
    }
    /* Data: null, 64-byte aligned or odd, at some byte offset. The data is
     * never read. */
    switch (byte(&in) % 4) {
    case 0:
      t->data = NULL;
      break;
    case 1:
      t->data = (void *)(uintptr_t)0x100001;
      break;
    default:
      t->data = (void *)(uintptr_t)0x100000;
    }
    t->byte_offset = byte(&in) < 220 ? 0 : (uint64_t)byte(&in) * 2;
  }
  status = attn_rt_bind_operands_on(kDLCPU, (const void *const *)tensors, descs,
                                    n, static_sizes, memrefs, sizes);
  if (status < 0 || status >= ATTN_NUM_STATUS)
    finding("returned an unknown status", status);
  if (status == ATTN_OK)
    check_success(tensors, descs, n, static_sizes, memrefs, sizes);
  for (i = 0; i < n; ++i) {
    free(shapes[i]);
    free(strides[i]);
  }
  return 0;
}
