/*===- KernelABI.h - the DLPack ABI of attn CPU kernels -----------*- C -*-===*\
|*                                                                            *|
|* Part of the attn project: an MLIR compiler for attention.                  *|
|*                                                                            *|
|* Shared by the C runtime that is linked into every kernel object and by the *|
|* compiler that emits the entry point calling it: plain C, fixed-width       *|
|* fields, no padding.                                                        *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#ifndef ATTN_RUNTIME_KERNELABI_H
#define ATTN_RUNTIME_KERNELABI_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Return codes of a kernel entry point. Documented in the generated header. */
enum attn_status {
  ATTN_OK = 0,
  ATTN_ERR_NULL = 1,           /* a DLTensor, its shape or its data is null */
  ATTN_ERR_NDIM = 2,           /* wrong number of dimensions */
  ATTN_ERR_DTYPE = 3,          /* wrong element type (or lanes != 1) */
  ATTN_ERR_DEVICE = 4,         /* not a CPU tensor */
  ATTN_ERR_STATIC_SHAPE = 5,   /* a size disagrees with the compiled size */
  ATTN_ERR_SHAPE_MISMATCH = 6, /* sizes disagree between operands */
  ATTN_ERR_STRIDES = 7,        /* not compact row-major */
  ATTN_ERR_HEADS = 8,          /* query heads not a multiple of kv heads */
  ATTN_ERR_ALIGNMENT = 9,      /* data pointer not aligned to its element
                                  (GPU launchers: K and V as the kernel
                                  copies them) */
  /* GPU launchers only. */
  ATTN_ERR_NO_DEVICE = 10,     /* no CUDA driver or device */
  ATTN_ERR_MODULE = 11,        /* the kernel's cubin did not load, or its
                                  dynamic shared memory is refused */
  ATTN_ERR_LAUNCH = 12,        /* the launch failed or exceeds the grid */
  ATTN_ERR_OUT_OF_MEMORY = 13, /* no device memory for the scratch buffers */
  /* Any kernel. */
  ATTN_ERR_TOO_LARGE = 14, /* a tensor's size in bytes overflows */
  ATTN_NUM_STATUS = 15
};

/* The problem sizes every operand dimension is bound to. */
enum attn_symbol {
  ATTN_SYM_B = 0,
  ATTN_SYM_HQ = 1,
  ATTN_SYM_HKV = 2,
  ATTN_SYM_SQ = 3,
  ATTN_SYM_SK = 4,
  ATTN_SYM_D = 5,
  ATTN_SYM_DV = 6,
  ATTN_SYM_NB = 7, /* relative-position buckets of a rel_bias table */
  ATTN_NUM_SYMBOLS = 8
};

/* An operand dimension of fixed size n (> 0), e.g. a weight's: its size must
 * be n. ATTN_DIM_BROADCAST is the broadcast dimension, of size 1. */
#define ATTN_DIM_FIXED(n) (-(int64_t)(n))
#define ATTN_DIM_BROADCAST ATTN_DIM_FIXED(1)
/* The DLPack type code of booleans (DLPack >= 0.8; older headers lack it). */
#define ATTN_DL_BOOL 6

#define ATTN_MAX_RANK 4

/* What the kernel expects of one DLTensor argument. */
typedef struct attn_operand_desc {
  int64_t ndim;
  int64_t dtype_code; /* DLDataTypeCode; booleans accept kDLUInt too */
  int64_t dtype_bits;
  int64_t dims[ATTN_MAX_RANK]; /* an attn_symbol or ATTN_DIM_FIXED(n) */
  /* 0, or a block size: the dimension then counts blocks, ceil(size of
   * symbol dims[d] / blocks[d]) (checked, never bound). */
  int64_t blocks[ATTN_MAX_RANK];
} attn_operand_desc;

/* A ranked memref descriptor as MLIR's LLVM lowering lays it out. */
typedef struct attn_memref_desc {
  void *allocated;
  void *aligned;
  int64_t offset;
  int64_t sizes_and_strides[2 * ATTN_MAX_RANK];
} attn_memref_desc;

/* Linkage of the runtime's functions: a GPU launcher, which carries this
 * source text, makes them static. */
#ifndef ATTN_RT_API
#define ATTN_RT_API
#endif

/* Checks `n` tensors against their descriptions (every one on a device of
 * `device_type`, a DLDeviceType), binds the problem sizes (`static_sizes[s]`
 * is the compiled size of symbol s, or -1 when dynamic) into `sizes` when
 * not null, and fills one memref descriptor per tensor. Returns an
 * attn_status. */
ATTN_RT_API int32_t attn_rt_bind_operands_on(
    int32_t device_type, const void *const *tensors,
    const attn_operand_desc *descs, int64_t n, const int64_t *static_sizes,
    attn_memref_desc *memrefs, int64_t *sizes);

/* attn_rt_bind_operands_on for CPU tensors, as CPU kernels call it. */
ATTN_RT_API int32_t attn_rt_bind_operands(const void *const *tensors,
                                          const attn_operand_desc *descs,
                                          int64_t n,
                                          const int64_t *static_sizes,
                                          attn_memref_desc *memrefs);

/* A human-readable description of an attn_status. */
ATTN_RT_API const char *attn_rt_status_string(int32_t status);

#ifdef __cplusplus
}
#endif

#endif /* ATTN_RUNTIME_KERNELABI_H */
