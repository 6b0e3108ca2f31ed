/*===- OnlineStepUKernel.c - one online-softmax attention step, f32 -------===*\
|*                                                                            *|
|* Part of the attn project: an MLIR compiler for attention.                  *|
|*                                                                            *|
|* The register-blocked body of the fused CPU kernel (see UKernels.h). It is  *|
|* compiled to bitcode once per vector width (ATTN_UK_VL = 16 for AVX-512, 8  *|
|* for AVX2) and takes the target features of the kernel it is linked into.   *|
|*                                                                            *|
|* Per (batch, kv head) and chunk of NC keys, the key chunk is packed         *|
|* transposed and pre-scaled, so that S = Q K^T is an outer product over the  *|
|* head dim: R query rows x NC keys in R*NV vector accumulators. The online   *|
|* softmax then updates R rows at a time, and P V accumulates R rows x NV     *|
|* vectors of the value dim, again in registers.                              *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#include "attn/Runtime/UKernels.h"

#include <immintrin.h>
#include <math.h>
#include <string.h>

#ifndef ATTN_UK_VL
#define ATTN_UK_VL 16
#endif

enum {
  VL = ATTN_UK_VL, /* f32 lanes per vector */
  NV = 4,          /* vectors per register-block row */
  NC = NV * VL,    /* keys per chunk */
  R = 4,           /* query rows per register block */
  MAX_D = 256,     /* largest head dim the packed key chunk holds */
  AHEAD = 16       /* decoding: K and V rows prefetched this far ahead */
};

typedef float vf __attribute__((vector_size(VL * 4)));
typedef int32_t vi __attribute__((vector_size(VL * 4)));
typedef float vfu __attribute__((vector_size(VL * 4), aligned(4), may_alias));

#define INLINE static inline __attribute__((always_inline))

/* Asks for the cache lines of [p, p + bytes). */
INLINE void prefetchBytes(const char *p, int64_t bytes) {
  for (int64_t at = 0; at < bytes; at += 64)
    __builtin_prefetch(p + at);
}

/* x - 0 is x for every x (x + 0 is not, for -0), so this folds to a plain
 * broadcast. */
INLINE vf splat(float x) {
  vf zero = {0};
  return x - zero;
}
INLINE vf load(const float *p) { return *(const vfu *)p; }
INLINE void store(float *p, vf v) { *(vfu *)p = v; }
INLINE vf select(vi mask, vf a, vf b) {
  return (vf)((mask & (vi)a) | (~mask & (vi)b));
}

/* exp(x) for the softmax's arguments, x <= 0 (a score less the row's max),
 * -inf (a hidden key) or NaN: a Cephes polynomial after x = n ln2 + r, in
 * Horner form to the end (at most 0.89 ulp on [-87.3, 0]). exp(NaN) is NaN,
 * and x below -87.3 (where n < -126), -inf among them, gives exactly 0. Not
 * clamping x for the domain it never sees, and AVX-512's vscalefps for
 * p * 2^n, take it from 24 to 13 instructions. */
INLINE vf vexp(vf x) {
  const float lo = -87.33654f;
  /* Round to nearest by adding 1.5 * 2^23: n lands in the low mantissa. */
  vf t = x * splat(1.44269504088896341f) + splat(12582912.0f);
  vf n = t - splat(12582912.0f);
  vf r = x - n * splat(0.693359375f);
  r = r - n * splat(-2.12194440e-4f);
  vf p = splat(1.9875691500e-4f);
  p = p * r + splat(1.3981999507e-3f);
  p = p * r + splat(8.3334519073e-3f);
  p = p * r + splat(4.1665795894e-2f);
  p = p * r + splat(1.6666665459e-1f);
  p = p * r + splat(5.0000001201e-1f);
  p = p * r + splat(1.0f);
  p = p * r + splat(1.0f);
#if ATTN_UK_VL == 16
  vf e = __builtin_ia32_scalefps512_mask(p, n, p, (uint16_t)-1,
                                         /*_MM_FROUND_CUR_DIRECTION=*/4);
#else
  vf e = p * (vf)(((vi)t - 0x4B400000 + 127) << 23);
#endif
  return select(x < splat(lo), splat(0.0f), e);
}

INLINE float hsum(vf v) {
  float a[VL];
  store(a, v);
  for (int w = VL / 2; w > 0; w /= 2)
    for (int l = 0; l < w; ++l)
      a[l] += a[l + w];
  return a[0];
}

/* The larger of a and b lane by lane, NaN where either is NaN. */
INLINE vf maxNaN(vf a, vf b) { return select((a > b) | (a != a), a, b); }

/* a + b, or with `useMax` maxNaN(a, b). */
INLINE vf combine(vf a, vf b, int useMax) {
  return useMax ? maxNaN(a, b) : a + b;
}

/* The sums (maxima with `useMax`) of R = 4 vectors at once: two rounds fold
 * the halves of two vectors into one, then one (8 lanes) or two (16)
 * combine neighbouring lanes; row r's result ends in lane r * VL / 4. At 16
 * lanes that is 13 shuffles and combines for the 4 rows, against 8 for each
 * row's hsum. */
INLINE void foldRows(const vf v[R], float out[R], int useMax) {
  _Static_assert(R == 4, "foldRows folds 4 rows");
#if ATTN_UK_VL == 16
#define ATTN_UK_LO 0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23
#define ATTN_UK_HI 8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31
#define ATTN_UK_Q0 0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27
#define ATTN_UK_Q1 4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23, 28, 29, 30, 31
#define ATTN_UK_PAIRS 1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14
#elif ATTN_UK_VL == 8
#define ATTN_UK_LO 0, 1, 2, 3, 8, 9, 10, 11
#define ATTN_UK_HI 4, 5, 6, 7, 12, 13, 14, 15
#define ATTN_UK_Q0 0, 1, 4, 5, 8, 9, 12, 13
#define ATTN_UK_Q1 2, 3, 6, 7, 10, 11, 14, 15
#define ATTN_UK_PAIRS 1, 0, 3, 2, 5, 4, 7, 6
#else
#error "foldRows: ATTN_UK_VL must be 8 or 16"
#endif
  vf a = combine(__builtin_shufflevector(v[0], v[1], ATTN_UK_LO),
                 __builtin_shufflevector(v[0], v[1], ATTN_UK_HI), useMax);
  vf c = combine(__builtin_shufflevector(v[2], v[3], ATTN_UK_LO),
                 __builtin_shufflevector(v[2], v[3], ATTN_UK_HI), useMax);
  vf w = combine(__builtin_shufflevector(a, c, ATTN_UK_Q0),
                 __builtin_shufflevector(a, c, ATTN_UK_Q1), useMax);
  w = combine(w, __builtin_shufflevector(w, w, ATTN_UK_PAIRS), useMax);
#if ATTN_UK_VL == 16
  /* Four lanes a row: combine the neighbouring pair too. */
  w = combine(w,
              __builtin_shufflevector(w, w, 2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8,
                                      9, 14, 15, 12, 13),
              useMax);
#endif
#undef ATTN_UK_LO
#undef ATTN_UK_HI
#undef ATTN_UK_Q0
#undef ATTN_UK_Q1
#undef ATTN_UK_PAIRS
  for (int r = 0; r < R; ++r)
    out[r] = w[r * (VL / 4)];
}

INLINE void hsumRows(const vf v[R], float out[R]) { foldRows(v, out, 0); }
INLINE void hmaxRows(const vf v[R], float out[R]) { foldRows(v, out, 1); }

/* maximumf: NaN if either is NaN. */
INLINE float maximum(float a, float b) {
  if (a != a || b != b)
    return a + b;
  return a > b ? a : b;
}

/* Element types of q, k and v (acc and the statistics are f32). */
enum { F32, F16, BF16 };

/* Bytes per element of `kind`. */
INLINE int64_t bytesOf(int kind) { return kind == F32 ? 4 : 2; }

/* IEEE half to float with integer operations only (no F16C, no libcall).
 * A NaN comes out quiet, its payload kept, as from vcvtph2ps. */
INLINE float halfToFloat(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000) << 16;
  uint32_t exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff, bits;
  if (exponent == 0x1f)
    bits = sign | 0x7f800000 | (mantissa << 13) | (mantissa ? 0x400000 : 0);
  else if (exponent != 0)
    bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
  else {
    float subnormal = (float)mantissa * 0x1p-24f;
    memcpy(&bits, &subnormal, 4);
    bits |= sign;
  }
  float f;
  memcpy(&f, &bits, 4);
  return f;
}

/* The float of bf16 `bits`. */
INLINE float bf16Value(uint32_t bits) {
  uint32_t wide = bits << 16;
  float f;
  memcpy(&f, &wide, 4);
  return f;
}

/* Element i of a row of `kind`. */
INLINE float element(int kind, const void *row, int64_t i) {
  if (kind == F32)
    return ((const float *)row)[i];
  uint16_t bits = ((const uint16_t *)row)[i];
  if (kind == F16)
    return halfToFloat(bits);
  return bf16Value(bits);
}

typedef uint32_t vu __attribute__((vector_size(VL * 4)));
typedef uint16_t vhu
    __attribute__((vector_size(VL * 2), aligned(2), may_alias));

/* Elements [i, i + VL) of a unit-stride row of `kind`, as f32. f16 takes
 * vcvtph2ps (AVX-512F, or F16C in the AVX2 build that has it), else vector
 * integer operations (halfToFloat's cases as masks; unsigned, so that no
 * shift overflows). */
INLINE vf loadRow(int kind, const void *row, int64_t i) {
  if (kind == F32)
    return load((const float *)row + i);
  const vhu *halves = (const vhu *)((const uint16_t *)row + i);
#if ATTN_UK_VL == 16
  if (kind == F16)
    return (vf)_mm512_cvtph_ps((__m256i)*halves);
#elif defined(__F16C__)
  if (kind == F16)
    return (vf)_mm256_cvtph_ps((__m128i)*halves);
#endif
  vu bits = __builtin_convertvector(*halves, vu);
  if (kind == BF16)
    return (vf)(bits << 16);
  vu sign = (bits & 0x8000) << 16, exponent = (bits >> 10) & 0x1f;
  vu mantissa = bits & 0x3ff;
  vu normal = sign | ((exponent + 112) << 23) | (mantissa << 13);
  vu special =
      sign | 0x7f800000 | (mantissa << 13) | ((vu)(mantissa != 0) & 0x400000);
  vu subnormal =
      (vu)(__builtin_convertvector(mantissa, vf) * splat(0x1p-24f)) | sign;
  vu isSpecial = (vu)(exponent == 0x1f), isNormal = (vu)(exponent != 0);
  vu finite = (isNormal & normal) | (~isNormal & subnormal);
  return (vf)((isSpecial & special) | (~isSpecial & finite));
}

/* Elements [0, n) of a row of `kind` with element stride `stride`, as f32
 * into `out`: vector conversions for unit stride. */
INLINE void widenRow(int kind, const void *row, int64_t stride, int64_t n,
                     float *out) {
  int64_t i = 0;
  if (stride == 1)
    for (; i + VL <= n; i += VL)
      store(out + i, loadRow(kind, row, i));
  for (; i < n; ++i)
    out[i] = element(kind, row, i * stride);
}

/* A [B, H, S, F] operand: its base and the strides of b, h, s, f, in
 * elements of `bytes` bytes. */
typedef struct {
  char *base;
  int64_t bytes, b, h, s, f;
} view4;

INLINE view4 makeView(const attn_memref4_f32 *m, int64_t bytes, int hPos,
                      int sPos) {
  view4 v = {(char *)m->aligned + m->offset * bytes,
             bytes,
             m->strides[0],
             m->strides[hPos],
             m->strides[sPos],
             m->strides[3]};
  return v;
}

INLINE void *row(view4 v, int64_t b, int64_t h, int64_t s) {
  return v.base + (b * v.b + h * v.h + s * v.s) * v.bytes;
}

INLINE float *statistic(const attn_memref3_f32 *m, int64_t b, int64_t h,
                        int64_t s) {
  return m->aligned + m->offset + b * m->strides[0] + h * m->strides[1] +
         s * m->strides[2];
}

/* A mask (bytes) or bias operand broadcast to [B, Hq, Sq, Sk]: dims of size
 * 1 get stride 0. Absent when base is null. */
typedef struct {
  const char *base;
  int64_t bytes, b, h, i, j;
} broadcast4;

INLINE broadcast4 makeBroadcast(const attn_memref4_f32 *m, int64_t bytes,
                                int present) {
  broadcast4 v = {0, bytes, 0, 0, 0, 0};
  if (!present)
    return v;
  v.base = (const char *)m->aligned + m->offset * bytes;
  int64_t *strides[4] = {&v.b, &v.h, &v.i, &v.j};
  for (int d = 0; d < 4; ++d)
    *strides[d] = m->sizes[d] == 1 ? 0 : m->strides[d];
  return v;
}

INLINE const char *at(broadcast4 v, int64_t b, int64_t h, int64_t i,
                      int64_t j) {
  return v.base + (b * v.b + h * v.h + i * v.i + j * v.j) * v.bytes;
}

/* score + bias, or -inf where the mask hides the key. */
INLINE float maskedScore(int kind, broadcast4 mask, broadcast4 bias,
                         float score, int64_t b, int64_t h, int64_t i,
                         int64_t j) {
  if (mask.base && !*at(mask, b, h, i, j))
    return -INFINITY;
  return bias.base ? score + element(kind, at(bias, b, h, i, j), 0) : score;
}

/* Whether the mask shows any key [j0, j0 + nc) to any of the block's rows
 * (b, hs[r], is[r]). */
INLINE int anyVisible(broadcast4 mask, int64_t b, const int64_t hs[R],
                      const int64_t is[R], int rows, int64_t j0, int64_t nc) {
  for (int r = 0; r < rows; ++r)
    for (int64_t j = 0; j < nc; ++j)
      if (*at(mask, b, hs[r], is[r], j0 + j))
        return 1;
  return 0;
}

/* acc[rows] = acc * alpha + P V over `width` vectors of the value dim from
 * column `col`, for value rows of `kind` (unit stride, `vStride` elements
 * apart); inlined with a constant width, the block stays in registers.
 * With `hidden` (some p is 0), a key adds nothing to the rows that do not
 * see it, even a NaN or Inf value (0 * NaN would be NaN); the step checks
 * that once, so unmasked steps keep the plain loop. */
INLINE void accumulatePV(int kind, float *const accRows[R], int rows,
                         const char *v, int64_t vStride, int64_t nc,
                         const float p[R][NC], const float alpha[R],
                         int64_t col, const int width, int hidden) {
  int64_t bytes = bytesOf(kind);
  vf c[R][NV];
  for (int r = 0; r < R; ++r)
    for (int w = 0; w < width; ++w)
      c[r][w] = load(accRows[r] + col + w * VL) * splat(alpha[r]);
  for (int64_t j = 0; j < nc; ++j) {
    const char *vRow = v + j * vStride * bytes;
    vf vv[NV];
    for (int w = 0; w < width; ++w)
      vv[w] = loadRow(kind, vRow, col + w * VL);
    for (int r = 0; r < R; ++r) {
      if (hidden && p[r][j] == 0.0f)
        continue;
      vf pj = splat(p[r][j]);
      for (int w = 0; w < width; ++w)
        c[r][w] += pj * vv[w];
    }
  }
  for (int r = 0; r < rows; ++r)
    for (int w = 0; w < width; ++w)
      store(accRows[r] + col + w * VL, c[r][w]);
}

/* acc = acc * alpha + P V for the block's rows and a value chunk of `kind`
 * (see accumulatePV), in vector steps and scalar tail columns. */
INLINE void accumulateValues(int kind, float *const accRows[R], int rows,
                             const char *v, int64_t vStride, int64_t nc,
                             int64_t Dv, const float p[R][NC],
                             const float alpha[R]) {
  int hidden = 0;
  for (int r = 0; r < rows; ++r)
    for (int64_t j = 0; j < nc; ++j)
      hidden |= p[r][j] == 0.0f;
  int64_t col = 0;
  /* Constant `hidden` arguments: two inlined copies. */
  for (; col + NV * VL <= Dv; col += NV * VL)
    if (hidden)
      accumulatePV(kind, accRows, rows, v, vStride, nc, p, alpha, col, NV, 1);
    else
      accumulatePV(kind, accRows, rows, v, vStride, nc, p, alpha, col, NV, 0);
  for (; col + VL <= Dv; col += VL)
    accumulatePV(kind, accRows, rows, v, vStride, nc, p, alpha, col, 1, hidden);
  int64_t bytes = bytesOf(kind);
  for (; col < Dv; ++col)
    for (int r = 0; r < rows; ++r) {
      float a = accRows[r][col] * alpha[r];
      for (int64_t j = 0; j < nc; ++j)
        if (p[r][j] != 0.0f)
          a += p[r][j] * element(kind, v + j * vStride * bytes, col);
      accRows[r][col] = a;
    }
}

/* q.k, or q.k - |k|^2 / 2 for a Gaussian similarity, over D elements. */
INLINE float rawScore(int kind, const void *qRow, int64_t qStride,
                      const void *kRow, int64_t kStride, int64_t D,
                      int gaussian) {
  float s = 0;
  for (int64_t d = 0; d < D; ++d) {
    float kd = element(kind, kRow, d * kStride);
    float qd = element(kind, qRow, d * qStride);
    s += kd * (gaussian ? qd - 0.5f * kd : qd);
  }
  return s;
}

/* x, a VL x VL block, transposed: log2(VL) perfect shuffles (row i zipped
 * with row i + VL / 2 into rows 2i and 2i + 1) transpose it. */
INLINE void transposeBlock(vf x[VL]) {
#if ATTN_UK_VL == 16
#define ATTN_UK_ZIP_LO 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23
#define ATTN_UK_ZIP_HI                                                         \
  8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31
#elif ATTN_UK_VL == 8
#define ATTN_UK_ZIP_LO 0, 8, 1, 9, 2, 10, 3, 11
#define ATTN_UK_ZIP_HI 4, 12, 5, 13, 6, 14, 7, 15
#else
#error "transposeBlock: ATTN_UK_VL must be 8 or 16"
#endif
  for (int round = 1; round < VL; round *= 2) {
    vf y[VL];
    for (int i = 0; i < VL / 2; ++i) {
      y[2 * i] = __builtin_shufflevector(x[i], x[i + VL / 2], ATTN_UK_ZIP_LO);
      y[2 * i + 1] =
          __builtin_shufflevector(x[i], x[i + VL / 2], ATTN_UK_ZIP_HI);
    }
    for (int i = 0; i < VL; ++i)
      x[i] = y[i];
  }
#undef ATTN_UK_ZIP_LO
#undef ATTN_UK_ZIP_HI
}

/* Packs keys [j0, j0 + nc) of (b, hk) transposed and scaled into kt
 * [D, NC] (zeros past nc), with the Gaussian -|k|^2 / 2 * scale per key in
 * keyBias (else 0). Unit-stride keys go VL x VL blocks at a time through
 * registers (LLVM's own vectorization of the scalar loop scattered, which
 * took 7 % of an f32 prefill step on Zen 4); other strides and the head
 * dims past the last whole vector go element by element. */
INLINE void packKeyChunk(int kind, view4 k, int64_t b, int64_t hk, int64_t j0,
                         int64_t nc, int64_t D, float scale, int gaussian,
                         float *kt, float *keyBias) {
  vf norm[NV] = {{0}};
  int64_t d = 0;
  if (k.f == 1)
    for (; d + VL <= D; d += VL)
      for (int w = 0; w < NV; ++w) {
        vf x[VL];
        for (int l = 0; l < VL; ++l) {
          int64_t j = w * VL + l;
          x[l] = j < nc ? loadRow(kind, row(k, b, hk, j0 + j), d) : splat(0);
        }
        transposeBlock(x);
        for (int e = 0; e < VL; ++e) {
          if (gaussian)
            norm[w] += x[e] * x[e];
          store(kt + (d + e) * NC + w * VL, x[e] * splat(scale));
        }
      }
  for (int64_t j = 0; j < NC; ++j) {
    const void *kRow = row(k, b, hk, j0 + (j < nc ? j : 0));
    float tailNorm = 0;
    for (int64_t e = d; e < D; ++e) {
      float ke = j < nc ? element(kind, kRow, e * k.f) : 0.0f;
      kt[e * NC + j] = ke * scale;
      tailNorm += ke * ke;
    }
    keyBias[j] =
        gaussian ? -0.5f * scale * (norm[j / VL][j % VL] + tailNorm) : 0.0f;
  }
}

/* The next R query rows of a KV head's group, head-major (all M rows of a
 * head, then the next head's) from the cursor (*h, *i), which advances past
 * them; heads end before hEnd. Rows past the group's end repeat its last.
 * Returns how many are real. A block may take rows of two heads: decoding's
 * one row per head fills it with the group's heads, so each K and V element
 * is loaded once for all of them. (A cursor: a division per row made
 * prefill 2-3 % slower here.) */
INLINE int blockRows(int64_t hEnd, int64_t M, int64_t *h, int64_t *i,
                     int64_t hs[R], int64_t is[R]) {
  int rows = 0;
  for (int r = 0; r < R; ++r) {
    if (*h == hEnd) {
      hs[r] = hs[r - 1];
      is[r] = is[r - 1];
      continue;
    }
    hs[r] = *h;
    is[r] = *i;
    ++rows;
    if (++*i == M) {
      *i = 0;
      ++*h;
    }
  }
  return rows;
}

/* Query rows (b, hs[r], is[r]): pointers into q (f32, stride *qStride) or,
 * converted, into qt. */
INLINE void loadQueryRows(int kind, view4 q, int64_t b, const int64_t hs[R],
                          const int64_t is[R], int64_t D, float qt[R][MAX_D],
                          const float *qRows[R], int64_t *qStride) {
  *qStride = kind == F32 ? q.f : 1;
  for (int r = 0; r < R; ++r) {
    qRows[r] = row(q, b, hs[r], is[r]);
    if (kind != F32) {
      for (int64_t d = 0; d < D; ++d)
        qt[r][d] = element(kind, qRows[r], d * q.f);
      qRows[r] = qt[r];
    }
  }
}

/* s = Q (K * scale)^T + keyBias for R query rows and a packed key chunk. */
INLINE void blockScores(const float *const qRows[R], int64_t qStride,
                        const float *kt, const float *keyBias, int64_t D,
                        float s[R][NC]) {
  vf c[R][NV] = {{{0}}};
  for (int64_t d = 0; d < D; ++d) {
    vf kv[NV];
    for (int w = 0; w < NV; ++w)
      kv[w] = load(kt + d * NC + w * VL);
    for (int r = 0; r < R; ++r) {
      vf qd = splat(qRows[r][d * qStride]);
      for (int w = 0; w < NV; ++w)
        c[r][w] += qd * kv[w];
    }
  }
  for (int r = 0; r < R; ++r)
    for (int w = 0; w < NV; ++w)
      store(&s[r][w * VL], c[r][w] + load(keyBias + w * VL));
}

/* bf16 pairs. With AVX512-BF16, bf16 steps multiply in pairs: vdpbf16ps
 * adds two exact bf16 products into each f32 lane, 32 multiply-adds an
 * instruction against an FMA's 16, at the same rate here. Q K^T pairs
 * consecutive head-dim elements; P V pairs consecutive keys, with P rounded
 * to bf16 (the tensor-core kernels' P V; the row sums keep P in f32). */
#if ATTN_UK_VL == 16 && defined(__AVX512BF16__)
#define ATTN_UK_BF16_PAIRS 1
/* acc + a.lo * b.lo + a.hi * b.hi per lane, for bf16 pairs a and b. */
INLINE vf dotPairs(vf acc, vu a, vu b) {
  return (vf)_mm512_dpbf16_ps((__m512)acc, (__m512bh)a, (__m512bh)b);
}
/* lo and hi rounded to bf16 (to nearest even), consecutive: lane l holds
 * elements 2l and 2l + 1 of the 2 * VL. */
INLINE vu roundPairs(vf lo, vf hi) {
  return (vu)_mm512_cvtne2ps_pbh((__m512)hi, (__m512)lo);
}
#else
#define ATTN_UK_BF16_PAIRS 0
/* No step takes the pairs without AVX512-BF16 (ATTN_UK_BF16_PAIRS is 0:
 * every call is dead code). */
INLINE vf dotPairs(vf acc, vu a, vu b) {
  (void)acc, (void)a, (void)b;
  __builtin_unreachable();
}
INLINE vu roundPairs(vf lo, vf hi) {
  (void)lo, (void)hi;
  __builtin_unreachable();
}
#endif

typedef uint32_t u32u __attribute__((aligned(2), may_alias));
typedef uint32_t vuu
    __attribute__((vector_size(VL * 4), aligned(4), may_alias));

INLINE vu splatPair(uint32_t x) {
  vu zero = {0};
  return x + zero;
}
INLINE uint32_t pairOf(uint32_t lo, uint32_t hi) { return lo | hi << 16; }

/* Elements [0, n) of a bf16 row with element stride `stride` as pairs of
 * consecutive elements, a zero past n. */
INLINE void rowPairs(const uint16_t *row, int64_t stride, int64_t n,
                     uint32_t *out) {
  for (int64_t d = 0; d < n; d += 2)
    out[d / 2] = pairOf(row[d * stride], d + 1 < n ? row[(d + 1) * stride] : 0);
}

/* Packs keys [j0, j0 + nc) of (b, hk) as pairs of head-dim elements,
 * transposed: kp[(d / 2) * NC + j] holds k[j][d] and k[j][d + 1] (zeros
 * past nc and D), unscaled, with the Gaussian -|k|^2 / 2 * scale per key in
 * keyBias (else 0). */
INLINE void packKeyPairs(view4 k, int64_t b, int64_t hk, int64_t j0, int64_t nc,
                         int64_t D, float scale, int gaussian, uint32_t *kp,
                         float *keyBias) {
  for (int64_t j = 0; j < NC; ++j) {
    const uint16_t *kRow = row(k, b, hk, j0 + (j < nc ? j : 0));
    float norm = 0;
    for (int64_t d = 0; d < D; d += 2) {
      uint32_t lo = j < nc ? kRow[d * k.f] : 0;
      uint32_t hi = j < nc && d + 1 < D ? kRow[(d + 1) * k.f] : 0;
      kp[d / 2 * NC + j] = pairOf(lo, hi);
      norm += bf16Value(lo) * bf16Value(lo) + bf16Value(hi) * bf16Value(hi);
    }
    keyBias[j] = gaussian ? -0.5f * scale * norm : 0.0f;
  }
}

/* s = (Q K^T) * scale + keyBias for R rows of pairs (unaligned) and a key
 * chunk packed in pairs. */
INLINE void blockScoresPairs(const uint32_t *const qPairs[R],
                             const uint32_t *kp, const float *keyBias,
                             int64_t D, float scale, float s[R][NC]) {
  vf c[R][NV] = {{{0}}};
  for (int64_t dp = 0; dp < (D + 1) / 2; ++dp) {
    vu kv[NV];
    for (int w = 0; w < NV; ++w)
      kv[w] = *(const vuu *)(kp + dp * NC + w * VL);
    for (int r = 0; r < R; ++r) {
      vu qd = splatPair(((const u32u *)qPairs[r])[dp]);
      for (int w = 0; w < NV; ++w)
        c[r][w] = dotPairs(c[r][w], qd, kv[w]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int w = 0; w < NV; ++w)
      store(&s[r][w * VL], c[r][w] * splat(scale) + load(keyBias + w * VL));
}

/* blockScoresPairs for the query rows (b, hs[r], is[r]): read in place for
 * unit stride and even D, else copied with a zero past D. */
INLINE void queryScoresPairs(view4 q, int64_t b, const int64_t hs[R],
                             const int64_t is[R], int64_t D, const uint32_t *kp,
                             const float *keyBias, float scale,
                             float s[R][NC]) {
  uint32_t qp[R][MAX_D / 2];
  const uint32_t *qPairs[R];
  for (int r = 0; r < R; ++r) {
    const uint16_t *qRow = row(q, b, hs[r], is[r]);
    if (q.f == 1 && D % 2 == 0) {
      qPairs[r] = (const u32u *)qRow;
      continue;
    }
    rowPairs(qRow, q.f, D, qp[r]);
    qPairs[r] = qp[r];
  }
  blockScoresPairs(qPairs, kp, keyBias, D, scale, s);
}

/* Packs values [j0, j0 + nc) of (b, hk) as pairs of keys: vp[(j / 2) * Dv +
 * e] holds v[j][e] and v[j + 1][e] (zero past nc). Returns whether every
 * value is finite: a 0 weight then adds exactly 0. */
INLINE int packValuePairs(view4 v, int64_t b, int64_t hk, int64_t j0,
                          int64_t nc, int64_t Dv, uint32_t *vp) {
  vu exponents = {0};
  uint32_t tailExponents = 0;
  for (int64_t j = 0; j < nc; j += 2) {
    const uint16_t *lo = row(v, b, hk, j0 + j);
    const uint16_t *hi = j + 1 < nc ? row(v, b, hk, j0 + j + 1) : 0;
    uint32_t *out = vp + j / 2 * Dv;
    int64_t e = 0;
    if (v.f == 1)
      for (; e + VL <= Dv; e += VL) {
        vu a = __builtin_convertvector(*(const vhu *)(lo + e), vu);
        vu h =
            hi ? __builtin_convertvector(*(const vhu *)(hi + e), vu) : (vu){0};
        exponents |=
            (vu)((a & 0x7f80) == 0x7f80) | (vu)((h & 0x7f80) == 0x7f80);
        *(vuu *)(out + e) = a | h << 16;
      }
    for (; e < Dv; ++e) {
      uint32_t a = lo[e * v.f], h = hi ? hi[e * v.f] : 0;
      tailExponents |= (a & 0x7f80) == 0x7f80 || (h & 0x7f80) == 0x7f80;
      out[e] = pairOf(a, h);
    }
  }
  for (int l = 0; l < VL; ++l)
    tailExponents |= exponents[l];
  return !tailExponents;
}

/* acc[rows] = acc * alpha + P V over `width` vectors of the value dim from
 * column `col`, for value pairs packed by packValuePairs and P as bf16 pairs
 * of keys. */
INLINE void accumulatePairs(float *const accRows[R], int rows,
                            const uint32_t *vp, int64_t ncPairs, int64_t Dv,
                            const uint32_t pp[R][NC / 2], const float alpha[R],
                            int64_t col, const int width) {
  vf c[R][NV];
  for (int r = 0; r < R; ++r)
    for (int w = 0; w < width; ++w)
      c[r][w] = load(accRows[r] + col + w * VL) * splat(alpha[r]);
  for (int64_t jp = 0; jp < ncPairs; ++jp) {
    vu vv[NV];
    for (int w = 0; w < width; ++w)
      vv[w] = *(const vuu *)(vp + jp * Dv + col + w * VL);
    for (int r = 0; r < R; ++r) {
      vu pj = splatPair(pp[r][jp]);
      for (int w = 0; w < width; ++w)
        c[r][w] = dotPairs(c[r][w], pj, vv[w]);
    }
  }
  for (int r = 0; r < rows; ++r)
    for (int w = 0; w < width; ++w)
      store(accRows[r] + col + w * VL, c[r][w]);
}

/* acc = acc * alpha + P V with P rounded to bf16 and the value chunk in
 * pairs, in vector steps and scalar tail columns. */
INLINE void accumulateValuePairs(float *const accRows[R], int rows,
                                 const uint32_t *vp, int64_t nc, int64_t Dv,
                                 const float p[R][NC], const float alpha[R]) {
  _Static_assert(NC % (2 * VL) == 0, "P rounds 2 * VL weights at a time");
  /* Lane j holds the weights of keys 2j and 2j + 1. */
  uint32_t pp[R][NC / 2];
  for (int r = 0; r < R; ++r)
    for (int j = 0; j < NC; j += 2 * VL)
      *(vuu *)(pp[r] + j / 2) = roundPairs(load(&p[r][j]), load(&p[r][j + VL]));
  int64_t ncPairs = (nc + 1) / 2, col = 0;
  for (; col + NV * VL <= Dv; col += NV * VL)
    accumulatePairs(accRows, rows, vp, ncPairs, Dv, pp, alpha, col, NV);
  for (; col + VL <= Dv; col += VL)
    accumulatePairs(accRows, rows, vp, ncPairs, Dv, pp, alpha, col, 1);
  for (; col < Dv; ++col)
    for (int r = 0; r < rows; ++r) {
      float a = accRows[r][col] * alpha[r];
      for (int64_t jp = 0; jp < ncPairs; ++jp) {
        uint32_t v = vp[jp * Dv + col], w = pp[r][jp];
        a += bf16Value(w & 0xffff) * bf16Value(v & 0xffff) +
             bf16Value(w >> 16) * bf16Value(v >> 16);
      }
      accRows[r][col] = a;
    }
}

/* Packs a key chunk for packedScores: transposed and scaled (packKeyChunk),
 * or in bf16 pairs with `pairs` (packKeyPairs). */
INLINE void packKeys(int kind, int pairs, view4 k, int64_t b, int64_t hk,
                     int64_t j0, int64_t nc, int64_t D, float scale,
                     int gaussian, float *kt, uint32_t *kp, float *keyBias) {
  if (pairs)
    return packKeyPairs(k, b, hk, j0, nc, D, scale, gaussian, kp, keyBias);
  packKeyChunk(kind, k, b, hk, j0, nc, D, scale, gaussian, kt, keyBias);
}

/* Packs a value chunk that several blocks read: as f32 rows [nc, Dv] in vt,
 * or in bf16 pairs in vp with `pairs`. Returns 0 when the pairs hold a NaN
 * or Inf, which a 0 weight would not hide from them: the chunk is then read
 * in place by the guarded loop. */
INLINE int packValues(int kind, int pairs, view4 v, int64_t b, int64_t hk,
                      int64_t j0, int64_t nc, int64_t Dv, float *vt,
                      uint32_t *vp) {
  if (pairs)
    return packValuePairs(v, b, hk, j0, nc, Dv, vp);
  for (int64_t j = 0; j < nc; ++j)
    widenRow(kind, row(v, b, hk, j0 + j), v.f, Dv, vt + j * Dv);
  return 1;
}

/* acc = acc * alpha + P V for the value chunk packValues packed. */
INLINE void accumulatePacked(int pairs, float *const accRows[R], int rows,
                             const float *vt, const uint32_t *vp, int64_t nc,
                             int64_t Dv, const float p[R][NC],
                             const float alpha[R]) {
  if (pairs)
    return accumulateValuePairs(accRows, rows, vp, nc, Dv, p, alpha);
  accumulateValues(F32, accRows, rows, (const char *)vt, Dv, nc, Dv, p, alpha);
}

/* s = Q (K * scale)^T + keyBias for the query rows (b, hs[r], is[r]) and the
 * key chunk packKeys packed. */
INLINE void packedScores(int kind, int pairs, view4 q, int64_t b,
                         const int64_t hs[R], const int64_t is[R], int64_t D,
                         const float *kt, const uint32_t *kp,
                         const float *keyBias, float scale, float qt[R][MAX_D],
                         float s[R][NC]) {
  if (pairs)
    return queryScoresPairs(q, b, hs, is, D, kp, keyBias, scale, s);
  const float *qRows[R];
  int64_t qStride;
  loadQueryRows(kind, q, b, hs, is, D, qt, qRows, &qStride);
  blockScores(qRows, qStride, kt, keyBias, D, s);
}

/* s = Q K^T * scale + keyBias for `rows` query rows (f32, unit stride) and
 * keys [j0, j0 + nc) of (b, hk) read in place as dot products: for one or
 * two rows per head (decoding), cheaper than packing each chunk transposed
 * for a block or two. Each key and value is read once from memory, with
 * too little work per key to hide a miss: at key j the K and V rows of key
 * j + AHEAD (within the tile's N) are prefetched (V is read after the
 * chunk's scores, so its lines have longer to arrive). */
INLINE void directScoresOf(int kind, view4 k, view4 v, int64_t b, int64_t hk,
                           int64_t j0, int64_t nc, int64_t N,
                           const float *const qRows[R], const int rows,
                           int64_t D, int64_t Dv, float scale, int gaussian,
                           float s[R][NC]) {
  for (int64_t j = 0; j < nc; ++j) {
    const void *kRow = row(k, b, hk, j0 + j);
    if (j0 + j + AHEAD < N) {
      prefetchBytes(row(k, b, hk, j0 + j + AHEAD), D * k.bytes);
      prefetchBytes(row(v, b, hk, j0 + j + AHEAD), Dv * v.bytes);
    }
    vf acc[R] = {{0}}, norm = {0};
    float tail[R] = {0}, tailNorm = 0;
    int64_t d = 0;
    for (; d + VL <= D; d += VL) {
      vf kv = loadRow(kind, kRow, d);
      if (gaussian)
        norm += kv * kv;
      for (int r = 0; r < rows; ++r)
        acc[r] += load(qRows[r] + d) * kv;
    }
    for (; d < D; ++d) {
      float kd = element(kind, kRow, d);
      tailNorm += kd * kd;
      for (int r = 0; r < rows; ++r)
        tail[r] += qRows[r][d] * kd;
    }
    float keyBias = gaussian ? -0.5f * scale * (hsum(norm) + tailNorm) : 0.0f;
    float dot[R];
    if (rows == R)
      hsumRows(acc, dot);
    else
      for (int r = 0; r < rows; ++r)
        dot[r] = hsum(acc[r]);
    for (int r = 0; r < rows; ++r)
      s[r][j] = (dot[r] + tail[r]) * scale + keyBias;
  }
}

INLINE void directScores(int kind, view4 k, view4 v, int64_t b, int64_t hk,
                         int64_t j0, int64_t nc, int64_t N,
                         const float *const qRows[R], int rows, int64_t D,
                         int64_t Dv, float scale, int gaussian,
                         float s[R][NC]) {
  /* A constant row count for full blocks keeps the accumulators in
   * registers. */
  if (rows == R)
    directScoresOf(kind, k, v, b, hk, j0, nc, N, qRows, R, D, Dv, scale,
                   gaussian, s);
  else
    directScoresOf(kind, k, v, b, hk, j0, nc, N, qRows, rows, D, Dv, scale,
                   gaussian, s);
}

/* The scaled score of (b, h, i, j): read from `scores` when given, else
 * computed from q and k. */
INLINE float scaledScore(int kind, view4 q, view4 k, broadcast4 scores,
                         int64_t b, int64_t h, int64_t groups, int64_t i,
                         int64_t j, int64_t D, float scale, int gaussian) {
  if (scores.base)
    return *(const float *)at(scores, b, h, i, j);
  return scale * rawScore(kind, row(q, b, h, i), q.f, row(k, b, h / groups, j),
                          k.f, D, gaussian);
}

/* Scalar form of the step, for strides the vector path cannot load and head
 * dims its packed chunk cannot hold. */
INLINE void
onlineStepScalar(int kind, view4 q, view4 k, view4 v, broadcast4 mask,
                 broadcast4 bias, broadcast4 scores, view4 acc,
                 const attn_memref3_f32 *max, const attn_memref3_f32 *sum,
                 int64_t B, int64_t Hq, int64_t groups, int64_t M, int64_t N,
                 int64_t D, int64_t Dv, float scale, int gaussian, int64_t qPos,
                 int64_t kvPos, int64_t bandLo, int64_t bandHi) {
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < Hq; ++h)
      for (int64_t i = 0; i < M; ++i) {
        float *aRow = row(acc, b, h, i);
        float *mx = statistic(max, b, h, i), *sm = statistic(sum, b, h, i);
        int64_t diff0 = kvPos - (qPos + i);
        float newMax = *mx;
        for (int64_t j = 0; j < N; ++j) {
          if (diff0 + j < bandLo || diff0 + j > bandHi)
            continue;
          float s = scaledScore(kind, q, k, scores, b, h, groups, i, j, D,
                                scale, gaussian);
          newMax =
              maximum(newMax, maskedScore(kind, mask, bias, s, b, h, i, j));
        }
        float alpha = newMax == -INFINITY ? 0.0f : expf(*mx - newMax);
        float rowSum = 0;
        for (int64_t e = 0; e < Dv; ++e)
          aRow[e * acc.f] *= alpha;
        for (int64_t j = 0; j < N && newMax != -INFINITY; ++j) {
          if (diff0 + j < bandLo || diff0 + j > bandHi)
            continue;
          const void *vRow = row(v, b, h / groups, j);
          float s = scaledScore(kind, q, k, scores, b, h, groups, i, j, D,
                                scale, gaussian);
          float score = maskedScore(kind, mask, bias, s, b, h, i, j);
          if (score == -INFINITY)
            continue;
          float p = expf(score - newMax);
          rowSum += p;
          for (int64_t e = 0; e < Dv; ++e)
            aRow[e * acc.f] += p * element(kind, vRow, e * v.f);
        }
        *sm = *sm * alpha + rowSum;
        *mx = newMax;
      }
}

/* The online softmax of a block's rows (`rows` of R) over a chunk's scores
 * s, hidden keys at -inf: p = exp(s - newMax), alpha = exp(max - newMax),
 * and each row's max and sum updated. The rows' max, sum and alpha are
 * reduced together (foldRows, one exp for the 4 alphas): one row at a time,
 * the softmax took a fifth of an f32 prefill step on Zen 4, 15 % so. Rows
 * past `rows` get p = 0 and alpha = 0. */
INLINE void onlineSoftmax(float s[R][NC], int rows, float *const mx[R],
                          float *const sm[R], float p[R][NC], float alpha[R]) {
  vf vmax[R];
  for (int r = 0; r < R; ++r) {
    vmax[r] = splat(-INFINITY);
    for (int w = 0; w < NV && r < rows; ++w)
      vmax[r] = maxNaN(load(&s[r][w * VL]), vmax[r]);
  }
  float tileMax[R], newMax[R];
  hmaxRows(vmax, tileMax);
  vf shift = splat(0.0f); /* max - newMax per row, in lanes 0..R-1 */
  for (int r = 0; r < rows; ++r) {
    newMax[r] = maximum(*mx[r], tileMax[r]);
    shift[r] = *mx[r] - newMax[r];
  }
  vf shiftExp = vexp(shift);
  vf rowSum[R];
  for (int r = 0; r < R; ++r) {
    rowSum[r] = splat(0.0f);
    if (r >= rows || newMax[r] == -INFINITY) {
      alpha[r] = 0;
      for (int w = 0; w < NV; ++w)
        store(&p[r][w * VL], splat(0.0f));
      continue;
    }
    alpha[r] = shiftExp[r];
    for (int w = 0; w < NV; ++w) {
      vf e = vexp(load(&s[r][w * VL]) - newMax[r]);
      rowSum[r] += e;
      store(&p[r][w * VL], e);
    }
  }
  float sums[R];
  hsumRows(rowSum, sums);
  for (int r = 0; r < rows; ++r) {
    *sm[r] = *sm[r] * alpha[r] + sums[r];
    *mx[r] = newMax[r];
  }
}

/* The step for q, k and v of element type `kind`; inlined into one entry
 * point per type, so `kind` is a constant. */
INLINE void onlineStep(int kind, const attn_memref4_f32 *qm,
                       const attn_memref4_f32 *km, const attn_memref4_f32 *vm,
                       const attn_memref4_f32 *maskm,
                       const attn_memref4_f32 *biasm,
                       const attn_memref4_f32 *scoresm,
                       const attn_memref4_f32 *accm,
                       const attn_memref3_f32 *max, const attn_memref3_f32 *sum,
                       float scale, int64_t layout, int64_t qPos, int64_t kvPos,
                       int64_t bandLo, int64_t bandHi, int64_t flags) {
  int hPos = layout == ATTN_UK_BSHD ? 2 : 1;
  int sPos = layout == ATTN_UK_BSHD ? 1 : 2;
  int64_t bytes = bytesOf(kind);
  view4 q = makeView(qm, bytes, hPos, sPos),
        k = makeView(km, bytes, hPos, sPos);
  view4 v = makeView(vm, bytes, hPos, sPos);
  view4 acc = makeView(accm, 4, hPos, sPos);
  broadcast4 mask = makeBroadcast(maskm, 1, flags & ATTN_UK_HAS_MASK);
  broadcast4 bias = makeBroadcast(biasm, bytes, flags & ATTN_UK_HAS_BIAS);
  broadcast4 scores = makeBroadcast(scoresm, 4, flags & ATTN_UK_GIVEN_SCORES);
  int64_t B = qm->sizes[0], Hq = qm->sizes[hPos], M = qm->sizes[sPos];
  int64_t D = qm->sizes[3], Hkv = km->sizes[hPos], N = km->sizes[sPos];
  int64_t Dv = vm->sizes[3];
  if (B == 0 || M == 0 || N == 0 || Hkv == 0)
    return;
  int64_t groups = Hq / Hkv;
  int gaussian = (flags & ATTN_UK_GAUSSIAN) != 0;
  /* f32 values are read in place (unit stride); others may be converted per
   * chunk into a buffer of MAX_D columns. */
  if ((kind == F32 && v.f != 1) || acc.f != 1 || D > MAX_D ||
      (kind != F32 && Dv > MAX_D) || (scores.base && scores.j > 1))
    return onlineStepScalar(kind, q, k, v, mask, bias, scores, acc, max, sum, B,
                            Hq, groups, M, N, D, Dv, scale, gaussian, qPos,
                            kvPos, bandLo, bandHi);

  /* bf16 with AVX512-BF16: the key chunk in pairs [D / 2, NC], the value
   * chunk in pairs [NC / 2, Dv] (one element elsewhere: no step reads them). */
  uint32_t kp[ATTN_UK_BF16_PAIRS ? MAX_D / 2 * NC : 1];
  uint32_t vp[ATTN_UK_BF16_PAIRS ? NC / 2 * MAX_D : 1];
  float kt[MAX_D * NC]; /* the key chunk, transposed and scaled: [D, NC] */
  float vt[NC * MAX_D]; /* f16/bf16: the value chunk as f32, [NC, Dv] */
  float qt[R][MAX_D];   /* f16/bf16: the block's query rows as f32 */
  float keyBias[NC];    /* Gaussian: -|k|^2 / 2 * scale per key, else 0 */
  float s[R][NC], p[R][NC], alpha[R];
  /* Decoding (one or two query rows per head), and steps whose group holds
   * a few blocks of rows (speculative decoding: a few rows per head), read
   * K rows in place instead of packing each chunk transposed, which costs
   * more than those few blocks' products: measured, up to 4 blocks in f32
   * (3-4 rows per head of a 4-head group 1.2-1.5x faster, 4 rows of one
   * head 1.6x, 8 rows of 2 heads 1.3x), up to 2 in bf16 with pairs, whose
   * packed products are twice as fast (3-4 blocks there were 0.85-1.05x). */
  int directBlocks = ATTN_UK_BF16_PAIRS && kind == BF16 ? 2 : 4;
  int direct = (M <= 2 || groups * M <= directBlocks * R) && k.f == 1 &&
               (kind != F32 || q.f == 1);
  /* f16/bf16 value chunks are widened to f32 once when several blocks read
   * them, else read in place. */
  int widened = kind != F32 && (v.f != 1 || groups * M > R);
  /* bf16 with AVX512-BF16: packed chunks are pairs instead (see
   * packKeyPairs). */
  int keyPairs = ATTN_UK_BF16_PAIRS && kind == BF16 && !scores.base && !direct;
  int valuePairs = ATTN_UK_BF16_PAIRS && kind == BF16 && widened;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t hk = 0; hk < Hkv; ++hk)
      for (int64_t j0 = 0; j0 < N; j0 += NC) {
        int64_t nc = N - j0 < NC ? N - j0 : NC;
        if (!scores.base && !direct)
          packKeys(kind, keyPairs, k, b, hk, j0, nc, D, scale, gaussian, kt, kp,
                   keyBias);
        int packed = widened &&
                     packValues(kind, valuePairs, v, b, hk, j0, nc, Dv, vt, vp);
        for (int64_t h = hk * groups, i = 0; h < (hk + 1) * groups;) {
          int64_t hs[R], is[R];
          int rows = blockRows((hk + 1) * groups, M, &h, &i, hs, is);
          /* A chunk the band hides from all these rows changes nothing
           * (max, sum and acc stay): skip it. Row i sees chunk keys
           * [bandLo - d, bandHi - d] with d = kvPos + j0 - (qPos + i). */
          int inBand = 0;
          for (int r = 0; r < rows; ++r) {
            int64_t d = kvPos + j0 - qPos - is[r];
            inBand |= bandHi - d >= 0 && bandLo - d < nc;
          }
          if (!inBand)
            continue;
          /* So is a chunk the mask hides from all of them. */
          if (mask.base && !anyVisible(mask, b, hs, is, rows, j0, nc))
            continue;
          /* Rows past the end repeat the last row and are not stored. */
          float *accRows[R];
          for (int r = 0; r < R; ++r)
            accRows[r] = row(acc, b, hs[r], is[r]);

          /* S = Q (K * scale)^T + keyBias, R x NC, or the given scores
           * (keys past nc are hidden below). */
          if (scores.base) {
            for (int r = 0; r < rows; ++r)
              memcpy(s[r], at(scores, b, hs[r], is[r], j0),
                     (size_t)nc * sizeof(float));
          } else if (direct) {
            const float *qRows[R];
            int64_t qStride;
            loadQueryRows(kind, q, b, hs, is, D, qt, qRows, &qStride);
            directScores(kind, k, v, b, hk, j0, nc, N, qRows, rows, D, Dv,
                         scale, gaussian, s);
          } else
            packedScores(kind, keyPairs, q, b, hs, is, D, kt, kp, keyBias,
                         scale, qt, s);

          /* Hidden keys score -inf. */
          float *mx[R], *sm[R];
          for (int r = 0; r < rows; ++r) {
            mx[r] = statistic(max, b, hs[r], is[r]);
            sm[r] = statistic(sum, b, hs[r], is[r]);
            int64_t diff0 = kvPos + j0 - (qPos + is[r]);
            int64_t first = bandLo - diff0, end = bandHi - diff0 + 1;
            first = first < 0 ? 0 : first > nc ? nc : first;
            end = end < first ? first : end > nc ? nc : end;
            for (int64_t j = 0; j < first; ++j)
              s[r][j] = -INFINITY;
            for (int64_t j = end; j < NC; ++j)
              s[r][j] = -INFINITY;
            if (mask.base || bias.base)
              for (int64_t j = first; j < end; ++j)
                s[r][j] = maskedScore(kind, mask, bias, s[r][j], b, hs[r],
                                      is[r], j0 + j);
          }
          onlineSoftmax(s, rows, mx, sm, p, alpha);

          /* acc = acc * alpha + P V. */
          if (packed)
            accumulatePacked(valuePairs, accRows, rows, vt, vp, nc, Dv, p,
                             alpha);
          else
            accumulateValues(kind, accRows, rows, row(v, b, hk, j0), v.s, nc,
                             Dv, p, alpha);
        }
      }
}

#define DEFINE_ONLINE_STEP(suffix, kind)                                       \
  ATTN_UK_ONLINE_STEP_SIGNATURE(suffix) {                                      \
    onlineStep(kind, q, k, v, mask, bias, scores, acc, max, sum, scale,        \
               layout, q_pos, kv_pos, band_lo, band_hi, flags);                \
  }
DEFINE_ONLINE_STEP(f32, F32)
DEFINE_ONLINE_STEP(f16, F16)
DEFINE_ONLINE_STEP(bf16, BF16)

/* The scores of one step (see UKernels.h): the products of the online step,
 * stored instead of folded. */
INLINE void stepScores(int kind, const attn_memref4_f32 *qm,
                       const attn_memref4_f32 *km,
                       const attn_memref4_f32 *scoresm, float scale,
                       int64_t layout, int64_t flags) {
  int hPos = layout == ATTN_UK_BSHD ? 2 : 1;
  int sPos = layout == ATTN_UK_BSHD ? 1 : 2;
  int64_t bytes = bytesOf(kind);
  view4 q = makeView(qm, bytes, hPos, sPos),
        k = makeView(km, bytes, hPos, sPos);
  view4 out = makeView(scoresm, 4, 1, 2);
  int64_t B = qm->sizes[0], Hq = qm->sizes[hPos], M = qm->sizes[sPos];
  int64_t D = qm->sizes[3], Hkv = km->sizes[hPos], N = km->sizes[sPos];
  if (B == 0 || M == 0 || N == 0 || Hkv == 0)
    return;
  int64_t groups = Hq / Hkv;
  int gaussian = (flags & ATTN_UK_GAUSSIAN) != 0;
  if (D > MAX_D || out.f != 1) {
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < Hq; ++h)
        for (int64_t i = 0; i < M; ++i)
          for (int64_t j = 0; j < N; ++j)
            *((float *)row(out, b, h, i) + j * out.f) =
                scale * rawScore(kind, row(q, b, h, i), q.f,
                                 row(k, b, h / groups, j), k.f, D, gaussian);
    return;
  }
  float kt[MAX_D * NC], qt[R][MAX_D], keyBias[NC], s[R][NC];
  uint32_t kp[ATTN_UK_BF16_PAIRS ? MAX_D / 2 * NC : 1];
  int keyPairs = ATTN_UK_BF16_PAIRS && kind == BF16;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t hk = 0; hk < Hkv; ++hk)
      for (int64_t j0 = 0; j0 < N; j0 += NC) {
        int64_t nc = N - j0 < NC ? N - j0 : NC;
        packKeys(kind, keyPairs, k, b, hk, j0, nc, D, scale, gaussian, kt, kp,
                 keyBias);
        for (int64_t h = hk * groups, i = 0; h < (hk + 1) * groups;) {
          int64_t hs[R], is[R];
          int rows = blockRows((hk + 1) * groups, M, &h, &i, hs, is);
          packedScores(kind, keyPairs, q, b, hs, is, D, kt, kp, keyBias, scale,
                       qt, s);
          for (int r = 0; r < rows; ++r)
            memcpy((float *)row(out, b, hs[r], is[r]) + j0, s[r],
                   (size_t)nc * sizeof(float));
        }
      }
}

#define DEFINE_SCORES(suffix, kind)                                            \
  ATTN_UK_SCORES_SIGNATURE(suffix) {                                           \
    stepScores(kind, q, k, scores, scale, layout, flags);                      \
  }
DEFINE_SCORES(f32, F32)
DEFINE_SCORES(f16, F16)
DEFINE_SCORES(bf16, BF16)

/* out += x w (see UKernels.h). Per block of KC rows of w and MB rows of x:
 * the x block is widened to f32 once (f32 rows with unit stride are read in
 * place), then each chunk of NC columns of w is packed as the online step
 * packs a key chunk and accumulated by the same R x NC register block. */
INLINE void matmul(int kind, const attn_memref2_f32 *xm,
                   const attn_memref2_f32 *wm, const attn_memref2_f32 *outm,
                   int64_t flags) {
  enum { KC = MAX_D, MB = 64 };
  int64_t bytes = bytesOf(kind);
  const char *x = (const char *)xm->aligned + xm->offset * bytes;
  const char *w = (const char *)wm->aligned + wm->offset * bytes;
  float *out = outm->aligned + outm->offset;
  int64_t M = xm->sizes[0], K = xm->sizes[1], N = wm->sizes[1];
  int64_t xs = xm->strides[0], xd = xm->strides[1];
  int64_t ws = wm->strides[0], wj = wm->strides[1];
  int64_t os = outm->strides[0], oj = outm->strides[1];
  int inPlace = kind == F32 && xd == 1;
  /* The first block of K stores its sums when out is not to be read. */
  int overwrite = (flags & ATTN_UK_MATMUL_OVERWRITE) != 0;
  if (overwrite && K == 0)
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j)
        out[i * os + j * oj] = 0.0f;
  static const float noBias[NC];
  float wt[KC * NC], xb[MB][KC], s[R][NC];
  /* bf16 with AVX512-BF16: w and x in pairs of consecutive k (see
   * packKeyPairs), zero-padded. */
  uint32_t wp[ATTN_UK_BF16_PAIRS ? KC / 2 * NC : 1];
  uint32_t xp[ATTN_UK_BF16_PAIRS ? MB : 1][KC / 2];
  int pairs = ATTN_UK_BF16_PAIRS && kind == BF16;
  for (int64_t k0 = 0; k0 < K; k0 += KC) {
    int64_t kc = K - k0 < KC ? K - k0 : KC;
    for (int64_t m0 = 0; m0 < M; m0 += MB) {
      int64_t mb = M - m0 < MB ? M - m0 : MB;
      if (pairs)
        for (int64_t i = 0; i < mb; ++i)
          rowPairs((const uint16_t *)x + (m0 + i) * xs + k0 * xd, xd, kc,
                   xp[i]);
      if (!inPlace && !pairs)
        for (int64_t i = 0; i < mb; ++i)
          widenRow(kind, x + ((m0 + i) * xs + k0 * xd) * bytes, xd, kc, xb[i]);
      for (int64_t j0 = 0; j0 < N; j0 += NC) {
        int64_t nc = N - j0 < NC ? N - j0 : NC;
        if (pairs)
          for (int64_t d = 0; d < kc; d += 2) {
            const uint16_t *lo = (const uint16_t *)w + (k0 + d) * ws + j0 * wj;
            const uint16_t *hi = d + 1 < kc ? lo + ws : 0;
            for (int64_t j = 0; j < NC; ++j)
              wp[d / 2 * NC + j] =
                  j < nc ? pairOf(lo[j * wj], hi ? hi[j * wj] : 0) : 0;
          }
        for (int64_t d = 0; d < kc && !pairs; ++d) {
          float *packed = wt + d * NC;
          widenRow(kind, w + ((k0 + d) * ws + j0 * wj) * bytes, wj, nc, packed);
          for (int64_t j = nc; j < NC; ++j)
            packed[j] = 0.0f;
        }
        for (int64_t i0 = 0; i0 < mb; i0 += R) {
          int rows = mb - i0 < R ? (int)(mb - i0) : R;
          /* Rows past the end repeat the last row and are not stored. */
          if (pairs) {
            const uint32_t *xPairs[R];
            for (int r = 0; r < R; ++r)
              xPairs[r] = xp[i0 + (r < rows ? r : rows - 1)];
            blockScoresPairs(xPairs, wp, noBias, kc, 1.0f, s);
          } else {
            const float *xRows[R];
            for (int r = 0; r < R; ++r) {
              int64_t i = i0 + (r < rows ? r : rows - 1);
              xRows[r] =
                  inPlace ? (const float *)x + (m0 + i) * xs + k0 : xb[i];
            }
            blockScores(xRows, 1, wt, noBias, kc, s);
          }
          for (int r = 0; r < rows; ++r) {
            float *outRow = out + (m0 + i0 + r) * os + j0 * oj;
            if (overwrite && k0 == 0)
              for (int64_t j = 0; j < nc; ++j)
                outRow[j * oj] = s[r][j];
            else if (oj == 1)
              for (int64_t j = 0; j < nc; ++j)
                outRow[j] += s[r][j];
            else
              for (int64_t j = 0; j < nc; ++j)
                outRow[j * oj] += s[r][j];
          }
        }
      }
    }
  }
}

#define DEFINE_MATMUL(suffix, kind)                                            \
  ATTN_UK_MATMUL_SIGNATURE(suffix) { matmul(kind, x, w, out, flags); }
DEFINE_MATMUL(f32, F32)
DEFINE_MATMUL(f16, F16)
DEFINE_MATMUL(bf16, BF16)
