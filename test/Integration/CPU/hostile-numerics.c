// Hostile numbers at the ABI, through every CPU lowering (fused with
// micro-kernels, fused without, and the unfused decomposition), each
// against a double-precision reference over the keys a row sees:
// - NaN and Inf in the keys and values that kv_lens pads away, or that a
//   mask tensor hides, must not reach any output (also in bf16, whose
//   micro-kernel may multiply P V in pairs of keys, where a 0 weight would
//   not hide a NaN);
// - scores of +-1e4 (the softmax is one-hot) stay finite and exact;
// - a row whose keys are all hidden (kv_lens 0) outputs 0, not NaN;
// - f16 queries and keys whose unscaled dot products (up to 2.3e5)
//   overflow f16 are scored in f32;
// - f16 subnormals, infinities and NaN are read exactly: a row that sees one
//   key outputs its value row bit for bit, and subnormal keys and values
//   weigh in elsewhere.

// RUN: rm -rf %t && mkdir -p %t
// RUN: attn-compile --spec "b=2,hq=2,hkv=1,sq=70,d=16,mask=causal,kv_lens=random" --name k_fused -o %t
// RUN: attn-compile --spec "b=2,hq=2,hkv=1,sq=70,d=16,mask=causal,kv_lens=random" --ukernels=false --name k_linalg -o %t
// RUN: attn-compile --spec "b=2,hq=2,hkv=1,sq=70,d=16,mask=causal,kv_lens=random" --fused=false --name k_naive -o %t
// RUN: attn-compile --spec "b=1,hq=1,sq=40,d=64,dtype=f16,mask=causal" --name k_f16 -o %t
// RUN: attn-compile --spec "b=1,hq=1,sq=40,d=64,dtype=f16,mask=causal" --fused=false --name k_f16_naive -o %t
// RUN: attn-compile %S/mask-tensor.mlir --name k_mask -o %t
// RUN: attn-compile %S/mask-tensor.mlir --ukernels=false --name k_mask_linalg -o %t
// RUN: attn-compile %S/mask-tensor.mlir --fused=false --name k_mask_naive -o %t
// RUN: attn-compile %S/Inputs/mask-tensor-bf16.mlir --name k_mask_bf16 -o %t
// RUN: attn-compile %S/Inputs/mask-tensor-bf16.mlir --fused=false --name k_mask_bf16_naive -o %t
// RUN: %cc -O1 -Wall -Werror -I%t %s %t/k_fused.o %t/k_linalg.o %t/k_naive.o %t/k_f16.o %t/k_f16_naive.o %t/k_mask.o %t/k_mask_linalg.o %t/k_mask_naive.o %t/k_mask_bf16.o %t/k_mask_bf16_naive.o %kernel_link_flags -lm -o %t.exe
// RUN: %t.exe | FileCheck %s

// clang-format off
// CHECK-COUNT-3: {{fused|linalg|naive}}: clean ok, NaN/Inf padding ok, scores 1e4 ok, no keys ok
// CHECK-COUNT-3: mask {{fused|linalg|naive}}: NaN/Inf in hidden keys ok
// CHECK: mask bf16 fused: NaN/Inf in hidden keys ok
// CHECK: mask bf16 naive: NaN/Inf in hidden keys ok
// CHECK: f16 fused: overflowing scores ok
// CHECK: f16 naive: overflowing scores ok
// CHECK: f16 fused: subnormals and specials ok
// CHECK: f16 naive: subnormals and specials ok
// CHECK: all ok
// clang-format on

#include "k_f16.h"
#include "k_f16_naive.h"
#include "k_fused.h"
#include "k_linalg.h"
#include "k_mask.h"
#include "k_mask_bf16.h"
#include "k_mask_bf16_naive.h"
#include "k_mask_linalg.h"
#include "k_mask_naive.h"
#include "k_naive.h"

#include "Inputs/cpu-tensor.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { B = 2, HQ = 2, S = 70, D = 16, QN = B * HQ * S * D, KN = B * S * D };

typedef int (*kernel_fn)(const DLTensor *, const DLTensor *, const DLTensor *,
                         const DLTensor *, DLTensor *);

static float q[QN], k[KN], v[KN], out[QN];
static int32_t lens[B];
static int all_ok = 1;

static float uniform(unsigned *state) {
  *state = *state * 1664525u + 1013904223u;
  return (float)(*state >> 8) / 8388608.0f - 1.0f;
}

/* The largest |out - reference| over all rows (infinite for a NaN), the
 * reference softmax-averaging v over keys j <= i, j < lens[b] in double;
 * a row without keys is 0. */
static double max_error(double scale) {
  double worst = 0;
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < HQ; ++h)
      for (int i = 0; i < S; ++i) {
        const float *qi = &q[((b * HQ + h) * S + i) * D];
        int seen = i + 1 < lens[b] ? i + 1 : lens[b];
        double m = -INFINITY, sum = 0, acc[D] = {0};
        for (int j = 0; j < seen; ++j) {
          double s = 0;
          for (int d = 0; d < D; ++d)
            s += (double)qi[d] * k[(b * S + j) * D + d];
          m = fmax(m, s * scale);
        }
        for (int j = 0; j < seen; ++j) {
          double s = 0;
          for (int d = 0; d < D; ++d)
            s += (double)qi[d] * k[(b * S + j) * D + d];
          double p = exp(s * scale - m);
          sum += p;
          for (int d = 0; d < D; ++d)
            acc[d] += p * v[(b * S + j) * D + d];
        }
        for (int d = 0; d < D; ++d) {
          double want = seen ? acc[d] / sum : 0.0;
          double got = out[((b * HQ + h) * S + i) * D + d];
          double err = isnan(got) ? INFINITY : fabs(got - want);
          worst = fmax(worst, err);
        }
      }
  return worst;
}

/* Calls `kernel` on q, k, v, lens; 1 when it succeeded and every output is
 * within `tolerance` of the reference. */
static int run(kernel_fn kernel, double tolerance) {
  int64_t qShape[4] = {B, HQ, S, D}, kShape[4] = {B, 1, S, D},
          lensShape[1] = {B};
  DLTensor tq = cpu_tensor(q, 4, qShape), tk = cpu_tensor(k, 4, kShape),
           tv = cpu_tensor(v, 4, kShape), to = cpu_tensor(out, 4, qShape);
  DLTensor tl = cpu_tensor((float *)lens, 1, lensShape);
  tl.dtype.code = kDLInt;
  for (int x = 0; x < QN; ++x)
    out[x] = NAN;
  if (kernel(&tq, &tk, &tv, &tl, &to) != 0)
    return 0;
  return max_error(1.0 / sqrt((double)D)) <= tolerance;
}

static void check_lowering(const char *name, kernel_fn kernel) {
  unsigned state = 7;
  for (int x = 0; x < QN; ++x)
    q[x] = uniform(&state);
  for (int x = 0; x < KN; ++x) {
    k[x] = uniform(&state);
    v[x] = uniform(&state);
  }
  lens[0] = S;
  lens[1] = 37;
  int clean = run(kernel, 1e-4);

  // Padded keys of batch 1 (j >= 37): NaN and Inf in K and V.
  for (int j = 37; j < S; ++j)
    for (int d = 0; d < D; ++d) {
      k[(S + j) * D + d] = j % 2 ? NAN : INFINITY;
      v[(S + j) * D + d] = j % 3 ? -INFINITY : NAN;
    }
  int padding = run(kernel, 1e-4);

  // Scores up to 100 * 100 * 16 / 4 = 4e4 in magnitude, both signs.
  for (int x = 0; x < QN; ++x)
    q[x] *= 100.0f;
  for (int x = 0; x < KN; ++x)
    if (isfinite(k[x]))
      k[x] *= 100.0f;
  int large = run(kernel, 5e-3);

  lens[0] = lens[1] = 0;
  int none = run(kernel, 0.0);

  printf("%s: clean %s, NaN/Inf padding %s, scores 1e4 %s, no keys %s\n", name,
         clean ? "ok" : "FAILED", padding ? "ok" : "FAILED",
         large ? "ok" : "FAILED", none ? "ok" : "FAILED");
  all_ok &= clean && padding && large && none;
}

typedef int (*mask_kernel_fn)(const DLTensor *, const DLTensor *,
                              const DLTensor *, const DLTensor *, DLTensor *);

/* bf16 bits of x, truncated, and back: inputs are rounded to bf16 this way
 * before the reference sees them. */
static uint16_t to_bf16(float x) {
  uint32_t u;
  memcpy(&u, &x, 4);
  return (uint16_t)(u >> 16);
}

static float from_bf16(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float x;
  memcpy(&x, &u, 4);
  return x;
}

/* Rounds x[0, n) to bf16 in place, their bits into `bits`; a DLTensor of
 * `bits` in place of t's data. */
static void as_bf16(DLTensor *t, float *x, uint16_t *bits, int n) {
  for (int i = 0; i < n; ++i) {
    bits[i] = to_bf16(x[i]);
    x[i] = from_bf16(bits[i]);
  }
  t->data = bits;
  t->dtype.code = kDLBfloat;
  t->dtype.bits = 16;
}

/* mask-tensor.mlir: q [2, 4, 16, 16], k and v [2, 2, 24, 16], an i1 mask
 * [2, 4, 16, 24]. Keys 5 and 17 hidden from every row hold NaN and Inf; the
 * other keys are shown 3 times in 4. With `bf16`, the kernel of
 * Inputs/mask-tensor-bf16.mlir on the same values rounded to bf16, within
 * 8e-3 (rounding its output costs up to 2e-3). */
static void check_mask(const char *name, mask_kernel_fn kernel, int bf16) {
  enum { MB = 2, MH = 4, MKH = 2, MS = 16, MK = 24, MD = 16 };
  enum { QN = MB * MH * MS * MD, KN = MB * MKH * MK * MD };
  static float mq[QN], mk[KN], mv[KN], mo[QN];
  static uint16_t bq[QN], bk[KN], bv[KN], bo[QN];
  static uint8_t mask[MB * MH * MS * MK];
  unsigned state = 5;
  for (int x = 0; x < QN; ++x) {
    mq[x] = uniform(&state);
    mo[x] = NAN;
  }
  for (int x = 0; x < KN; ++x) {
    int j = x / MD % MK, hiddenKey = j == 5 || j == 17;
    mk[x] = hiddenKey ? NAN : uniform(&state);
    mv[x] = hiddenKey ? (x % 2 ? INFINITY : NAN) : uniform(&state);
  }
  for (int x = 0; x < MB * MH * MS * MK; ++x) {
    int j = x % MK;
    mask[x] = j != 5 && j != 17 && uniform(&state) > -0.5f;
  }
  int64_t qShape[4] = {MB, MH, MS, MD}, kShape[4] = {MB, MKH, MK, MD},
          mShape[4] = {MB, MH, MS, MK};
  DLTensor tq = cpu_tensor(mq, 4, qShape), tk = cpu_tensor(mk, 4, kShape),
           tv = cpu_tensor(mv, 4, kShape), to = cpu_tensor(mo, 4, qShape),
           tm = cpu_tensor((float *)mask, 4, mShape);
  tm.dtype.code = kDLUInt;
  tm.dtype.bits = 8;
  if (bf16) {
    as_bf16(&tq, mq, bq, QN);
    as_bf16(&tk, mk, bk, KN);
    as_bf16(&tv, mv, bv, KN);
    as_bf16(&to, mo, bo, QN);
  }
  int ok = kernel(&tq, &tk, &tv, &tm, &to) == 0;
  if (bf16)
    for (int x = 0; x < QN; ++x)
      mo[x] = from_bf16(bo[x]);
  double tolerance = bf16 ? 8e-3 : 1e-4;
  for (int b = 0; ok && b < MB; ++b)
    for (int h = 0; h < MH; ++h)
      for (int i = 0; i < MS; ++i) {
        double s[MK], m = -INFINITY, sum = 0, acc[MD] = {0};
        const float *qi = &mq[((b * MH + h) * MS + i) * MD];
        const uint8_t *shown = &mask[((b * MH + h) * MS + i) * MK];
        int kvh = h / (MH / MKH);
        for (int j = 0; j < MK; ++j) {
          s[j] = 0;
          for (int d = 0; d < MD; ++d)
            s[j] += (double)qi[d] * mk[((b * MKH + kvh) * MK + j) * MD + d];
          s[j] /= 4.0;
          if (shown[j])
            m = fmax(m, s[j]);
        }
        for (int j = 0; j < MK; ++j) {
          if (!shown[j])
            continue;
          double p = exp(s[j] - m);
          sum += p;
          for (int d = 0; d < MD; ++d)
            acc[d] += p * mv[((b * MKH + kvh) * MK + j) * MD + d];
        }
        for (int d = 0; d < MD; ++d) {
          double want = sum > 0 ? acc[d] / sum : 0.0;
          float got = mo[((b * MH + h) * MS + i) * MD + d];
          ok &= !isnan(got) && fabs(got - want) <= tolerance;
        }
      }
  printf("mask %s: NaN/Inf in hidden keys %s\n", name, ok ? "ok" : "FAILED");
  all_ok &= ok;
}

/* f16 to and from float (values here are small integers: exact). */
static uint16_t to_half(float f) {
  int i = (int)f, sign = i < 0;
  unsigned m = (unsigned)(sign ? -i : i);
  if (!m)
    return 0;
  int e = 31 - __builtin_clz(m);
  return (uint16_t)((sign << 15) | ((e + 15) << 10) |
                    ((m << (10 - e)) & 0x3ff));
}

static float from_half(uint16_t h) {
  int e = (h >> 10) & 31;
  float m = (float)(h & 0x3ff);
  float value = e ? ldexpf(1024.0f + m, e - 25) : ldexpf(m, -24);
  return h >> 15 ? -value : value;
}

typedef int (*kernel3_fn)(const DLTensor *, const DLTensor *, const DLTensor *,
                          DLTensor *);

/* The f16 kernels' problem: one head of FS rows, D = FD, causal. */
enum { FS = 40, FD = 64, FN = FS * FD };

/* f16 bits to double, infinities and NaN included. */
static double half_value(uint16_t h) {
  if ((h & 0x7c00) == 0x7c00)
    return h & 0x3ff ? NAN : h >> 15 ? -INFINITY : INFINITY;
  return from_half(h);
}

/* Runs the f16 `kernel` on hq, hk, hv into ho; 1 when it returns 0. */
static int run_f16(kernel3_fn kernel, uint16_t *hq, uint16_t *hk, uint16_t *hv,
                   uint16_t *ho) {
  int64_t shape[4] = {1, 1, FS, FD};
  DLTensor tq = cpu_tensor((float *)hq, 4, shape),
           tk = cpu_tensor((float *)hk, 4, shape),
           tv = cpu_tensor((float *)hv, 4, shape),
           to = cpu_tensor((float *)ho, 4, shape);
  tq.dtype.bits = tk.dtype.bits = tv.dtype.bits = to.dtype.bits = 16;
  return kernel(&tq, &tk, &tv, &to) == 0;
}

/* Row i of the f16 problem in double: out[d] for each d. */
static void f16_reference_row(int i, const uint16_t *hq, const uint16_t *hk,
                              const uint16_t *hv, double out[FD]) {
  double m = -INFINITY, sum = 0, s[FS];
  for (int j = 0; j <= i; ++j) {
    s[j] = 0;
    for (int d = 0; d < FD; ++d)
      s[j] += half_value(hq[i * FD + d]) * half_value(hk[j * FD + d]);
    s[j] /= 8.0;
    m = fmax(m, s[j]);
  }
  for (int d = 0; d < FD; ++d)
    out[d] = 0;
  for (int j = 0; j <= i; ++j) {
    double p = exp(s[j] - m);
    sum += p;
    for (int d = 0; d < FD; ++d)
      out[d] += p * half_value(hv[j * FD + d]);
  }
  for (int d = 0; d < FD; ++d)
    out[d] /= sum;
}

static void check_f16(const char *name, kernel3_fn kernel) {
  static uint16_t hq[FN], hk[FN], hv[FN], ho[FN];
  unsigned state = 11;
  // q, k in {-60, ..., 60}: |q . k| up to 2.3e5 > 65504; v in {-1, 0, 1}.
  for (int x = 0; x < FN; ++x) {
    hq[x] = to_half((float)(int)(uniform(&state) * 60.0f));
    hk[x] = to_half((float)(int)(uniform(&state) * 60.0f));
    hv[x] = to_half((float)(int)(uniform(&state) * 1.5f));
  }
  int ok = run_f16(kernel, hq, hk, hv, ho);
  for (int i = 0; ok && i < FS; ++i) {
    double want[FD];
    f16_reference_row(i, hq, hk, hv, want);
    for (int d = 0; d < FD; ++d) {
      float got = from_half(ho[i * FD + d]);
      ok &= !isnan(got) && fabs(got - want[d]) <= 1e-2;
    }
  }
  printf("f16 %s: overflowing scores %s\n", name, ok ? "ok" : "FAILED");
  all_ok &= ok;
}

/* The f16 kernel on subnormal, infinite and NaN inputs. Row 0 sees key 0
 * alone (weight 1), so its output must be value row 0 exactly: there go
 * subnormals, the normal extremes, infinities and NaN. Other keys and values
 * are subnormal in every other row: with queries up to 60, a flushed key
 * would move its score by up to 0.03, a flushed value its output by 6e-5.
 * Columns where value row 0 is not finite are not compared past row 0. */
static void check_f16_values(const char *name, kernel3_fn kernel) {
  static const uint16_t row0[] = {
      0x0001, 0x8001, 0x0002, 0x0155, 0x82aa, 0x03ff, 0x83ff, 0x0400,
      0x8400, 0x0401, 0x3c00, 0xbc00, 0x3555, 0x7bff, 0xfbff, 0x7c00,
      0xfc00, 0x7e00, 0x0000, 0x0200, 0x8100, 0x0080, 0x0010, 0x8008};
  enum { N0 = sizeof(row0) / sizeof(row0[0]) };
  static uint16_t hq[FN], hk[FN], hv[FN], ho[FN];
  unsigned state = 23;
  for (int x = 0; x < FN; ++x) {
    int row = x / FD;
    uint16_t tiny = (uint16_t)((unsigned)((uniform(&state) + 1) * 511) |
                               (uniform(&state) < 0 ? 0x8000 : 0));
    hq[x] = to_half((float)(int)(uniform(&state) * 60.0f));
    hk[x] = row % 2 ? tiny : to_half((float)(int)(uniform(&state) * 2.0f));
    hv[x] = row % 2 ? tiny : to_half((float)(int)(uniform(&state) * 1.5f));
  }
  for (int d = 0; d < FD; ++d)
    hv[d] = row0[d % N0];
  int ok = run_f16(kernel, hq, hk, hv, ho);
  for (int d = 0; ok && d < FD; ++d) {
    double want = half_value(hv[d]), got = half_value(ho[d]);
    ok &= isnan(want) ? isnan(got) : got == want;
  }
  for (int i = 1; ok && i < FS; ++i) {
    double want[FD];
    f16_reference_row(i, hq, hk, hv, want);
    for (int d = 0; d < FD; ++d) /* within f16's rounding, 2^-11 */
      if (isfinite(half_value(hv[d])))
        ok &= fabs(half_value(ho[i * FD + d]) - want[d]) <=
              2e-3 * fmax(1, fabs(want[d]));
  }
  printf("f16 %s: subnormals and specials %s\n", name, ok ? "ok" : "FAILED");
  all_ok &= ok;
}

int main(void) {
  check_lowering("fused", k_fused);
  check_lowering("linalg", k_linalg);
  check_lowering("naive", k_naive);
  check_mask("fused", k_mask, 0);
  check_mask("linalg", k_mask_linalg, 0);
  check_mask("naive", k_mask_naive, 0);
  check_mask("bf16 fused", k_mask_bf16, 1);
  check_mask("bf16 naive", k_mask_bf16_naive, 1);
  check_f16("fused", k_f16);
  check_f16("naive", k_f16_naive);
  check_f16_values("fused", k_f16);
  check_f16_values("naive", k_f16_naive);
  printf(all_ok ? "all ok\n" : "FAILED\n");
  return !all_ok;
}
