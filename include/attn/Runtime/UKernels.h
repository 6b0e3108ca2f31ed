/*===- UKernels.h - attn's CPU micro-kernels -----------------------*- C
-*-===*\
|*                                                                            *|
|* Part of the attn project: an MLIR compiler for attention.                  *|
|*                                                                            *|
|* Micro-kernels are small C routines compiled to LLVM bitcode at build time  *|
|* and linked into the kernels that call them (as IREE's ukernels): the       *|
|* compiler keeps tiling, masking, fusion and the loop structure, and hands   *|
|* the innermost tile step to a routine that is register blocked by hand.     *|
|* `attn-lower-to-ukernels` emits the calls; the operands arrive as MLIR      *|
|* strided memref descriptors (`llvm.emit_c_interface`).                      *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#ifndef ATTN_RUNTIME_UKERNELS_H
#define ATTN_RUNTIME_UKERNELS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* An MLIR memref<?x?x?x?xf32, strided<[?, ?, ?, ?], offset: ?>> descriptor. */
typedef struct attn_memref4_f32 {
  float *allocated;
  float *aligned;
  int64_t offset;
  int64_t sizes[4];
  int64_t strides[4];
} attn_memref4_f32;

/* An MLIR memref<?x?xf32, strided<[?, ?], offset: ?>> descriptor. */
typedef struct attn_memref2_f32 {
  float *allocated;
  float *aligned;
  int64_t offset;
  int64_t sizes[2];
  int64_t strides[2];
} attn_memref2_f32;

/* An MLIR memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>> descriptor. */
typedef struct attn_memref3_f32 {
  float *allocated;
  float *aligned;
  int64_t offset;
  int64_t sizes[3];
  int64_t strides[3];
} attn_memref3_f32;

/* Values of the `layout` argument: the order of q, k, v and acc dims. */
enum attn_uk_layout { ATTN_UK_BHSD = 0, ATTN_UK_BSHD = 1 };

/* Bits of the `flags` argument: which of mask (i1 bytes) and bias (the type
 * of q) are given. Both are [B, Hq, Sq, Sk] with size-1 dims broadcast; an
 * absent one is a dummy descriptor that is not read. ATTN_UK_GAUSSIAN makes
 * the score (q.k - |k|^2 / 2) * scale (the op's Gaussian similarity).
 * ATTN_UK_GIVEN_SCORES makes the step read its scores (f32 [B, Hq, Sq, Sk],
 * scale applied) from the `scores` operand instead of computing them: the
 * output of attn_uk_scores_* after a score_mod, as compiled code applies it
 * between the two. */
enum attn_uk_flags {
  ATTN_UK_HAS_MASK = 1,
  ATTN_UK_HAS_BIAS = 2,
  ATTN_UK_GAUSSIAN = 4,
  ATTN_UK_GIVEN_SCORES = 8
};

/* One step of `attn.online_attention` on f32 q, k and v, with an optional
 * mask and bias and without kv_lens or regions (see the op's documentation
 * for the math): folds keys and values into the running (acc, max, sum) in
 * place.
 *
 * q [B, Hq, Sq, D], k [B, Hkv, Sk, D], v [B, Hkv, Sk, Dv], acc [B, Hq, Sq, Dv]
 * (or BSHD), max and sum [B, Hq, Sq]. Score = q.k * scale (but see flags).
 * Query row i sits at whole-problem position q_pos + i, key j at kv_pos + j,
 * and key j is visible to row i when
 * band_lo <= (kv_pos + j) - (q_pos + i) <= band_hi (the band of a causal or
 * sliding-window mask; +-2^62 for none). */
#define ATTN_UK_ONLINE_STEP_F32 "attn_uk_online_step_f32"
#define ATTN_UK_ONLINE_STEP_F16 "attn_uk_online_step_f16"
#define ATTN_UK_ONLINE_STEP_BF16 "attn_uk_online_step_bf16"
#define ATTN_UK_ONLINE_STEP_SIGNATURE(suffix)                                  \
  void _mlir_ciface_attn_uk_online_step_##suffix(                              \
      const attn_memref4_f32 *q, const attn_memref4_f32 *k,                    \
      const attn_memref4_f32 *v, const attn_memref4_f32 *mask,                 \
      const attn_memref4_f32 *bias, const attn_memref4_f32 *scores,            \
      const attn_memref4_f32 *acc, const attn_memref3_f32 *max,                \
      const attn_memref3_f32 *sum, float scale, int64_t layout, int64_t q_pos, \
      int64_t kv_pos, int64_t band_lo, int64_t band_hi, int64_t flags)
ATTN_UK_ONLINE_STEP_SIGNATURE(f32);

/* The same step with f16 or bf16 q, k, v and bias (acc, max and sum stay
 * f32): the descriptors' pointers then point at 2-byte elements. Elements
 * are widened to f32 as the chunk is packed. */
ATTN_UK_ONLINE_STEP_SIGNATURE(f16);
ATTN_UK_ONLINE_STEP_SIGNATURE(bf16);

/* The scores of one step, for a step whose score_mod (or relative-position
 * bias) runs between the products and the softmax: scores[b, h, i, j] =
 * q_i.k_j * scale (or the Gaussian score, by `flags`) into an f32
 * [B, Hq, Sq, Sk] tensor, with q, k and layout as the online step takes
 * them. */
#define ATTN_UK_SCORES_F32 "attn_uk_scores_f32"
#define ATTN_UK_SCORES_F16 "attn_uk_scores_f16"
#define ATTN_UK_SCORES_BF16 "attn_uk_scores_bf16"
#define ATTN_UK_SCORES_SIGNATURE(suffix)                                       \
  void _mlir_ciface_attn_uk_scores_##suffix(                                   \
      const attn_memref4_f32 *q, const attn_memref4_f32 *k,                    \
      const attn_memref4_f32 *scores, float scale, int64_t layout,             \
      int64_t flags)
ATTN_UK_SCORES_SIGNATURE(f32);
ATTN_UK_SCORES_SIGNATURE(f16);
ATTN_UK_SCORES_SIGNATURE(bf16);

/* out[M, N] += x[M, K] w[K, N] with x and w f32, f16 or bf16 and out f32
 * (`linalg.matmul` on them, as the projections of multi-head and additive
 * attention are written), or out = x w with ATTN_UK_MATMUL_OVERWRITE in
 * `flags` (a matmul into zeros: out is not read): w is packed in chunks of
 * 64 columns and x read 4 rows at a time into register accumulators, as the
 * online step's scores. */
enum attn_uk_matmul_flags { ATTN_UK_MATMUL_OVERWRITE = 1 };
#define ATTN_UK_MATMUL_F32 "attn_uk_matmul_f32"
#define ATTN_UK_MATMUL_F16 "attn_uk_matmul_f16"
#define ATTN_UK_MATMUL_BF16 "attn_uk_matmul_bf16"
#define ATTN_UK_MATMUL_SIGNATURE(suffix)                                       \
  void _mlir_ciface_attn_uk_matmul_##suffix(                                   \
      const attn_memref2_f32 *x, const attn_memref2_f32 *w,                    \
      const attn_memref2_f32 *out, int64_t flags)
ATTN_UK_MATMUL_SIGNATURE(f32);
ATTN_UK_MATMUL_SIGNATURE(f16);
ATTN_UK_MATMUL_SIGNATURE(bf16);

#ifdef __cplusplus
}
#endif

#endif /* ATTN_RUNTIME_UKERNELS_H */
