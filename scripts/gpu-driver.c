/* gpu-driver: runs one attn GPU kernel through its C launcher and checks it
 * against a naive CPU reference (double precision, on sampled query rows).
 *
 *   gpu-driver LIBRARY NAME SPEC
 *
 * LIBRARY is the launcher built as a shared library (gpu-check.sh does it),
 * NAME its entry point, SPEC the kernel's spec (b=..,hq=..,sq=..,d=..[,hkv,
 * sk,dv,dtype,layout,scale,kind (sdpa, gaussian:SIGMA, additive, additive:A,
 * linear, mha with e=E),lse,mod (alibi, softcap:C, relpos:NB),
 * temperature,kv_lens,spans,block_mask=random:BQ:BK,mask (blocks:FILE
 * read from FILE relative to the working directory)]). With
 * lse=true the kernel's lse output is checked too. kind=additive:A
 * (attn.additive_attention) and kind=mha (attn.multi_head_attention) get
 * their weights too, and the reference projects as the kernel does (f32
 * accumulation rounded to the dtype). Prints one line; exit status
 * 0 when the kernel agrees with the reference, 1 when it does not (or the
 * launcher fails), 2 when this machine cannot run it (no CUDA device, bad
 * arguments).
 *
 * Plain C11 on the CUDA driver API and DLPack: it runs where the kernels
 * run, without MLIR or PyTorch. */

#define _POSIX_C_SOURCE 200809L
#include <cuda.h>
#include <dlfcn.h>
#include <dlpack/dlpack.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Entry points by their number of DLTensors: (q, k, v, out), then with
 * kv_lens or lse, then with both. */
typedef int (*entry4_fn)(DLTensor *, DLTensor *, DLTensor *, DLTensor *,
                         CUstream);
typedef int (*entry5_fn)(DLTensor *, DLTensor *, DLTensor *, DLTensor *,
                         DLTensor *, CUstream);
typedef int (*entry6_fn)(DLTensor *, DLTensor *, DLTensor *, DLTensor *,
                         DLTensor *, DLTensor *, CUstream);
typedef int (*entry7_fn)(DLTensor *, DLTensor *, DLTensor *, DLTensor *,
                         DLTensor *, DLTensor *, DLTensor *, CUstream);
typedef int (*entry8_fn)(DLTensor *, DLTensor *, DLTensor *, DLTensor *,
                         DLTensor *, DLTensor *, DLTensor *, DLTensor *,
                         CUstream);
typedef int (*entry9_fn)(DLTensor *, DLTensor *, DLTensor *, DLTensor *,
                         DLTensor *, DLTensor *, DLTensor *, DLTensor *,
                         DLTensor *, CUstream);
typedef int (*entry10_fn)(DLTensor *, DLTensor *, DLTensor *, DLTensor *,
                          DLTensor *, DLTensor *, DLTensor *, DLTensor *,
                          DLTensor *, DLTensor *, CUstream);
typedef const char *(*error_fn)(int);

/* Calls `entry` on its `n` DLTensors: through the types above, which give
 * every tensor as DLTensor * where the launcher declares its inputs
 * const DLTensor * (the same ABI; clang's -fsanitize=function, which
 * compares the types, is off here). */
#if defined(__clang__)
__attribute__((no_sanitize("function")))
#endif
static int call_entry(void *entry, DLTensor **a, int n) {
  switch (n) {
  case 4:
    return ((entry4_fn)entry)(a[0], a[1], a[2], a[3], 0);
  case 5:
    return ((entry5_fn)entry)(a[0], a[1], a[2], a[3], a[4], 0);
  case 6:
    return ((entry6_fn)entry)(a[0], a[1], a[2], a[3], a[4], a[5], 0);
  case 7:
    return ((entry7_fn)entry)(a[0], a[1], a[2], a[3], a[4], a[5], a[6], 0);
  case 8:
    return ((entry8_fn)entry)(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7],
                              0);
  case 9:
    return ((entry9_fn)entry)(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7],
                              a[8], 0);
  default:
    return ((entry10_fn)entry)(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7],
                               a[8], a[9], 0);
  }
}

enum dtype { F32, F16, BF16 };

/* One term of `mask=`: its name and up to five numbers; blocks:FILE: the
 * block size in n[0] and the file's bitmap, `rows` x `cols` bytes 0/1 (the
 * short rows padded with 0). */
typedef struct {
  char name[24];
  long long n[5];
  char *bits;
  int64_t rows, cols;
} mask_term_t;

#define MAX_TERMS 16

typedef struct {
  int64_t b, hq, hkv, sq, sk, d, dv;
  enum dtype dtype;
  int bshd;
  /* The scale (0: 1/sqrt(d)); kind=gaussian:SIGMA sets it to 1/SIGMA^2 and
   * scores -scale/2 |q - k|^2 instead of scale q.k. */
  double scale;
  int gaussian;
  /* kind=additive: scale sum_d w[h, d] tanh(q[d] + k[d]), a [Hq, D] weight
   * argument after v (and after rel_bias); the scale defaults to 1. */
  int additive;
  /* kind=linear: weights phi(q) . phi(k) (phi = elu + 1) over the visible
   * keys, normalized: a softmax of their logs. */
  int linear;
  /* kind=additive:A (attn.additive_attention): the additive score of
   * q' = q W_q and k' = k W_k (W_q, W_k [D, A]; q' and k' rounded to the
   * dtype, as the kernel stores them) with score weights w_score [A] shared
   * by the heads: operands w_q, w_k, w_score after v; the scale defaults to
   * 1. 0 when absent. */
  int64_t attention_dim;
  /* kind=mha,e=E (attn.multi_head_attention): q, k, v are the activations
   * x_q [B, Sq, E], x_k and x_v [B, Sk, E], followed by w_q [E, Hq D], w_k
   * [E, Hkv D], w_v [E, Hkv Dv] and w_o [Hq Dv, E]; out is [B, Sq, E]. The
   * projections and the heads' output are rounded to the dtype, as the
   * kernel stores them; the attention between them is BSHD. */
  int mha;
  int64_t embed;
  int lse; /* lse=true: the kernel also outputs each row's log-sum-exp */
  /* Score mods: mod=alibi, mod=softcap:C (softcap > 0), temperature=T
   * (dividing the scale), kv_lens=random (an i32 [B] operand). */
  int alibi, kv_lens, spans; /* spans=random: i32 [Hq] after kv_lens */
  /* block_mask=random:BQ:BK: an i8 class per (b, h, query block, key
   * block) after spans; 0 when absent. */
  int64_t block_q, block_k;
  double softcap, temperature;
  /* mod=relpos:NB[:MAX[:uni]]: T5's bucketed relative-position bias, a
   * [Hq, NB] table argument after v. */
  int64_t relpos_buckets, relpos_max;
  int relpos_bidirectional;
  /* The mask: a union (|) of intersections (&) of terms; `joins[t]` is 1
   * when term t starts a new alternative. No terms: no mask. */
  int terms;
  mask_term_t term[MAX_TERMS];
  int joins[MAX_TERMS];
} spec_t;

/* Reads the bitmap of blocks:PATH into `t` as attn-compile does: `block N`,
 * then a line of 0/1 per query block (character j for key block j, the
 * longest line setting the key blocks); blank lines and lines starting with
 * `#` skipped, each line trimmed. 0 (and a message) when malformed. */
static int read_block_bitmap(const char *path, mask_term_t *t) {
  FILE *f = fopen(path, "r");
  char *line = 0, **lines = 0, *start, *end;
  size_t capacity = 0, count = 0, r;
  const char *why = 0;
  if (!f) {
    fprintf(stderr, "gpu-driver: blocks:%s: cannot read the file\n", path);
    return 0;
  }
  while (!why && getline(&line, &capacity, f) >= 0) {
    char **grown;
    for (start = line; *start && strchr(" \t\n\v\f\r", *start); ++start)
      ;
    for (end = start + strlen(start);
         end > start && strchr(" \t\n\v\f\r", end[-1]); --end)
      ;
    *end = 0;
    if (!*start || *start == '#')
      continue;
    if (!strncmp(start, "block ", 6)) {
      char *rest;
      long long n = strtoll(start + 6, &rest, 10);
      if (t->n[0] || *rest || n < 1 || n > (1ll << 20))
        why = "'block N' must come once, with N in [1, 2^20]";
      t->n[0] = n;
      continue;
    }
    if (!t->n[0])
      why = "the first line must be 'block N'";
    else if (start[strspn(start, "01")])
      why = "a row must be characters 0 or 1";
    else if (!(grown = realloc(lines, (count + 1) * sizeof *lines)) ||
             !(grown[count] = strdup(start)))
      why = "out of host memory";
    else {
      lines = grown;
      if ((int64_t)strlen(lines[count]) > t->cols)
        t->cols = (int64_t)strlen(lines[count]);
      ++count;
    }
  }
  fclose(f);
  free(line);
  if (!why && !count)
    why = "the bitmap needs 1 row";
  t->rows = (int64_t)count;
  if (!why && !(t->bits = calloc((size_t)(t->rows * t->cols) + 1, 1)))
    why = "out of host memory";
  for (r = 0; r < count; ++r) {
    size_t c, len = strlen(lines[r]);
    for (c = 0; !why && c < len; ++c)
      t->bits[r * t->cols + c] = lines[r][c] == '1';
    free(lines[r]);
  }
  free(lines);
  if (why)
    fprintf(stderr, "gpu-driver: blocks:%s: %s\n", path, why);
  return !why;
}

/* Parses `mask=` into `s`; 0 on a malformed or unknown term. */
static int parse_mask(char *value, spec_t *s) {
  char *p = value;
  if (!strcmp(value, "none"))
    return 1;
  while (*p) {
    mask_term_t *t = &s->term[s->terms];
    int n = 0, len = 0;
    if (s->terms == MAX_TERMS)
      return 0;
    s->joins[s->terms] = s->terms == 0 || p[-1] == '|';
    while (p[len] && p[len] != '|' && p[len] != '&' && p[len] != ':')
      ++len;
    if (len == 0 || len >= (int)sizeof t->name)
      return 0;
    memcpy(t->name, p, (size_t)len);
    t->name[len] = 0;
    p += len;
    if (!strcmp(t->name, "blocks") && *p == ':') {
      /* blocks:PATH (relative to the working directory), up to | or &. */
      char saved, *path = ++p;
      p += strcspn(p, "|&");
      saved = *p;
      *p = 0;
      if (!read_block_bitmap(path, t))
        return 0;
      *p = saved;
    }
    while (*p == ':' && n < 5)
      t->n[n++] = strtoll(p + 1, &p, 10);
    if (strcmp(t->name, "causal") && strcmp(t->name, "causal_bottom_right") &&
        strcmp(t->name, "window") && strcmp(t->name, "chunked") &&
        strcmp(t->name, "prefix") && strcmp(t->name, "strided") &&
        strcmp(t->name, "fixed") && strcmp(t->name, "dilated") &&
        strcmp(t->name, "global") && strcmp(t->name, "bigbird") &&
        (strcmp(t->name, "blocks") || !t->bits))
      return 0;
    ++s->terms;
    if (*p == '|' || *p == '&')
      ++p;
    else if (*p)
      return 0;
  }
  return 1;
}

static int parse_spec(const char *text, spec_t *s) {
  char buf[512], *save = 0, *item;
  memset(s, 0, sizeof *s);
  s->hkv = s->sk = s->dv = -1;
  if (strlen(text) >= sizeof buf)
    return 0;
  strcpy(buf, text);
  for (item = strtok_r(buf, ",", &save); item; item = strtok_r(0, ",", &save)) {
    char *value = strchr(item, '=');
    if (!value)
      return 0;
    *value++ = 0;
    if (!strcmp(item, "b"))
      s->b = atoll(value);
    else if (!strcmp(item, "hq"))
      s->hq = atoll(value);
    else if (!strcmp(item, "hkv"))
      s->hkv = atoll(value);
    else if (!strcmp(item, "sq"))
      s->sq = atoll(value);
    else if (!strcmp(item, "sk"))
      s->sk = atoll(value);
    else if (!strcmp(item, "d"))
      s->d = atoll(value);
    else if (!strcmp(item, "dv"))
      s->dv = atoll(value);
    else if (!strcmp(item, "dtype"))
      s->dtype = !strcmp(value, "f16")    ? F16
                 : !strcmp(value, "bf16") ? BF16
                                          : F32;
    else if (!strcmp(item, "layout"))
      s->bshd = !strcmp(value, "bshd");
    else if (!strcmp(item, "mask")) {
      if (!parse_mask(value, s))
        return 0;
    } else if (!strcmp(item, "lse"))
      s->lse = !strcmp(value, "true");
    else if (!strcmp(item, "mod") && !strcmp(value, "alibi"))
      s->alibi = 1;
    else if (!strcmp(item, "mod") && !strncmp(value, "relpos:", 7)) {
      char *rest;
      s->relpos_buckets = strtoll(value + 7, &rest, 10);
      s->relpos_max = *rest == ':' ? strtoll(rest + 1, &rest, 10) : 128;
      s->relpos_bidirectional = strcmp(rest, ":uni") != 0;
      if (s->relpos_buckets < 2 || (*rest && s->relpos_bidirectional))
        return 0;
    } else if (!strcmp(item, "mod") && !strncmp(value, "softcap:", 8)) {
      if ((s->softcap = strtod(value + 8, 0)) <= 0)
        return 0;
    } else if (!strcmp(item, "temperature")) {
      if ((s->temperature = strtod(value, 0)) <= 0)
        return 0;
    } else if (!strcmp(item, "kv_lens") && strcmp(value, "none"))
      s->kv_lens = !strcmp(value, "random") ? 1 : 2;
    else if (!strcmp(item, "spans") && strcmp(value, "none"))
      s->spans = !strcmp(value, "random") ? 1 : 2;
    else if (!strcmp(item, "block_mask") && strcmp(value, "none")) {
      char *rest;
      if (strncmp(value, "random:", 7))
        return 0;
      s->block_q = strtoll(value + 7, &rest, 10);
      if (*rest != ':' || (s->block_k = strtoll(rest + 1, &rest, 10)) <= 0 ||
          *rest || s->block_q <= 0)
        return 0;
    } else if (!strcmp(item, "scale"))
      s->scale = strtod(value, 0);
    else if (!strcmp(item, "kind") && !strncmp(value, "gaussian:", 9)) {
      double sigma = strtod(value + 9, 0);
      s->gaussian = 1;
      s->scale = sigma > 0 ? 1.0 / (sigma * sigma) : 0;
    } else if (!strcmp(item, "kind") && !strcmp(value, "additive"))
      s->additive = 1;
    else if (!strcmp(item, "kind") && !strcmp(value, "linear"))
      s->linear = 1;
    else if (!strcmp(item, "kind") && !strncmp(value, "additive:", 9)) {
      char *rest;
      s->attention_dim = strtoll(value + 9, &rest, 10);
      if (s->attention_dim <= 0 || *rest)
        return 0;
    } else if (!strcmp(item, "kind") && !strcmp(value, "mha"))
      s->mha = 1;
    else if (!strcmp(item, "e"))
      s->embed = atoll(value);
    else if (strcmp(item, "dynamic") &&
             (strcmp(item, "kind") || strcmp(value, "sdpa")))
      return 0;
  }
  if (s->hkv < 0)
    s->hkv = s->hq;
  if (s->sk < 0)
    s->sk = s->sq;
  if (s->dv < 0)
    s->dv = s->d;
  if (s->scale <= 0 && !s->gaussian)
    s->scale = s->additive || s->attention_dim ? 1.0 : 1.0 / sqrt((double)s->d);
  if (s->temperature > 0)
    s->scale /= s->temperature;
  return s->b > 0 && s->hq > 0 && s->hkv > 0 && s->hq % s->hkv == 0 &&
         s->sq > 0 && s->sk >= 0 && s->d > 0 && s->dv > 0 && s->scale > 0 &&
         s->kv_lens < 2 && s->spans < 2 && (s->embed > 0) == s->mha;
}

/* Element (batch, head, pos, x) of a [B, H, S, X] (or [B, S, H, X]) tensor. */
static int64_t at(const spec_t *s, int64_t batch, int64_t head, int64_t pos,
                  int64_t x, int64_t heads, int64_t seq, int64_t dim) {
  return s->bshd ? ((batch * seq + pos) * heads + head) * dim + x
                 : ((batch * heads + head) * seq + pos) * dim + x;
}

/* Whether term `t` shows key j to query i (definitions of the README). */
static int term_shows(const spec_t *s, const mask_term_t *t, int64_t i,
                      int64_t j) {
  int64_t d = i - j, a = t->n[0], b = t->n[1];
  if (!strcmp(t->name, "causal"))
    return j <= i;
  if (!strcmp(t->name, "causal_bottom_right"))
    return j <= i + s->sk - s->sq;
  if (!strcmp(t->name, "window"))
    return j >= i - a && j <= i + b;
  if (!strcmp(t->name, "chunked"))
    return i / a == j / a;
  if (!strcmp(t->name, "prefix"))
    return j < a || j <= i;
  if (!strcmp(t->name, "strided"))
    return j <= i && (d < a || d % a == 0);
  if (!strcmp(t->name, "fixed"))
    return j <= i && (j / a == i / a || j % a >= a - b);
  if (!strcmp(t->name, "dilated"))
    return j <= i && d < a * b && d % b == 0;
  if (!strcmp(t->name, "bigbird")) {
    int64_t bi = i / a, bj = j / a, r;
    uint64_t blocks = (uint64_t)((s->sk + a - 1) / a);
    if (llabs(bi - bj) <= b / 2 || bi < t->n[2] || bj < t->n[2])
      return 1;
    for (r = 0; r < t->n[3]; ++r) {
      uint64_t x = (uint64_t)t->n[4] * 0x9E3779B97F4A7C15ull +
                   (uint64_t)bi * 0xBF58476D1CE4E5B9ull +
                   (uint64_t)r * 0x94D049BB133111EBull;
      x ^= x >> 31;
      x *= 0xD6E8FEB86659FD93ull;
      x ^= x >> 32;
      if ((int64_t)(x % (blocks ? blocks : 1)) == bj)
        return 1;
    }
    return 0;
  }
  if (t->bits) {
    /* blocks:FILE: rows and columns past the file's hide. */
    int64_t bi = i / a, bj = j / a;
    return bi < t->rows && bj < t->cols && t->bits[bi * t->cols + bj];
  }
  return i < a || j < a; /* global */
}

/* T5's relative_position_bucket of j - i, as Hugging Face computes it (f32
 * logarithms). */
static int64_t relpos_bucket(const spec_t *s, int64_t relative) {
  int64_t buckets = s->relpos_buckets, bucket = 0, n, exact, large;
  if (s->relpos_bidirectional) {
    buckets /= 2;
    bucket = relative > 0 ? buckets : 0;
    n = relative < 0 ? -relative : relative;
  } else {
    n = relative < 0 ? -relative : 0;
  }
  exact = buckets / 2;
  if (n < exact)
    return bucket + n;
  large = exact + (int64_t)(logf((float)n / (float)exact) /
                            (float)log((double)s->relpos_max / exact) *
                            (float)(buckets - exact));
  return bucket + (large < buckets - 1 ? large : buckets - 1);
}

static int is_visible(const spec_t *s, int64_t i, int64_t j) {
  int t = 0, any = s->terms == 0;
  while (t < s->terms && !any) {
    int all = 1;
    do
      all = all && term_shows(s, &s->term[t], i, j);
    while (++t < s->terms && !s->joins[t]);
    any = all;
  }
  return any;
}

/* IEEE half from float, rounding to nearest even (portable: no _Float16). */
static uint16_t float_to_half(float f) {
  uint32_t x, sign, mant, half, rem, shift, mid;
  int32_t exponent;
  memcpy(&x, &f, 4);
  sign = (x >> 16) & 0x8000;
  exponent = (int32_t)((x >> 23) & 0xff) - 127 + 15;
  mant = x & 0x7fffff;
  if (((x >> 23) & 0xff) == 0xff)
    return (uint16_t)(sign | 0x7c00 | (mant ? 0x200 : 0));
  if (exponent >= 31)
    return (uint16_t)(sign | 0x7c00);
  if (exponent <= 0) {
    if (exponent < -10)
      return (uint16_t)sign;
    mant |= 0x800000;
    shift = (uint32_t)(14 - exponent);
    half = mant >> shift;
    rem = mant & ((1u << shift) - 1);
    mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1)))
      ++half;
    return (uint16_t)(sign | half);
  }
  half = sign | ((uint32_t)exponent << 10) | (mant >> 13);
  rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (half & 1)))
    ++half; /* a carry into the exponent is the right rounding */
  return (uint16_t)half;
}

static float half_to_float(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000) << 16, exponent = (h >> 10) & 0x1f,
           mant = h & 0x3ff, x;
  float f;
  if (exponent == 0x1f)
    x = sign | 0x7f800000 | (mant << 13);
  else if (exponent)
    x = sign | ((exponent - 15 + 127) << 23) | (mant << 13);
  else if (!mant)
    x = sign;
  else {
    int e = -1;
    do {
      ++e;
      mant <<= 1;
    } while (!(mant & 0x400));
    x = sign | ((uint32_t)(127 - 15 - e) << 23) | ((mant & 0x3ff) << 13);
  }
  memcpy(&f, &x, 4);
  return f;
}

/* Rounds to the element type and back, and the element's bits. */
static float round_to(enum dtype t, float x, uint32_t *bits) {
  if (t == F16) {
    uint16_t h = float_to_half(x);
    *bits = h;
    return half_to_float(h);
  }
  if (t == BF16) {
    uint32_t u;
    memcpy(&u, &x, 4);
    if ((u & 0x7fffffff) > 0x7f800000) { /* NaN stays NaN */
      *bits = (u >> 16) | 0x40;
      return x;
    }
    u += 0x7fff + ((u >> 16) & 1); /* round to nearest even */
    *bits = u >> 16;
    u &= 0xffff0000u;
    memcpy(&x, &u, 4);
    return x;
  }
  memcpy(bits, &x, 4);
  return x;
}

static float from_bits(enum dtype t, const unsigned char *p) {
  float x;
  if (t == F16)
    return half_to_float((uint16_t)(p[0] | p[1] << 8));
  if (t == BF16) {
    uint32_t u = (uint32_t)p[0] << 16 | (uint32_t)p[1] << 24;
    memcpy(&x, &u, 4);
    return x;
  }
  memcpy(&x, p, 4);
  return x;
}

/* A tensor of n elements: host values (after rounding), device copy. */
typedef struct {
  float *host;
  CUdeviceptr device;
  int64_t shape[4];
  DLTensor dl;
} tensor_t;

static uint64_t rng = 88172645463325252ull;
static float uniform(void) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return (float)((rng >> 11) * (1.0 / 9007199254740992.0)) * 2.0f - 1.0f;
}

/* A dense row-major tensor of `ndim` (at most 4) dims `shape` and element
 * type `type`: uniform in [-bound, bound] when `fill`, else NaN. */
static int make_plain(tensor_t *t, enum dtype type, int ndim,
                      const int64_t *shape, int fill, float bound) {
  int64_t n = 1, i, bytes = type == F32 ? 4 : 2;
  unsigned char *staging;
  for (i = 0; i < ndim; ++i)
    n *= t->shape[i] = shape[i];
  staging = malloc(n * bytes + 1);
  t->host = malloc(n * sizeof(float) + 1);
  if (!staging || !t->host)
    return 0;
  for (i = 0; i < n; ++i) {
    uint32_t bits;
    t->host[i] = round_to(type, fill ? uniform() * bound : NAN, &bits);
    memcpy(staging + i * bytes, &bits, bytes); /* little endian */
  }
  if (cuMemAlloc(&t->device, n * bytes + 1) != CUDA_SUCCESS ||
      cuMemcpyHtoD(t->device, staging, n * bytes) != CUDA_SUCCESS)
    return 0;
  free(staging);
  memset(&t->dl, 0, sizeof t->dl);
  t->dl.data = (void *)(uintptr_t)t->device;
  t->dl.device.device_type = kDLCUDA;
  t->dl.ndim = ndim;
  t->dl.dtype.code = type == BF16 ? kDLBfloat : kDLFloat;
  t->dl.dtype.bits = (uint8_t)(bytes * 8);
  t->dl.dtype.lanes = 1;
  t->dl.shape = t->shape;
  return 1;
}

/* A [B, H, S, X] (or [B, S, H, X]) tensor of the spec's dtype: uniform in
 * [-1, 1] when `fill`, else NaN. */
static int make_tensor(tensor_t *t, const spec_t *s, int64_t heads, int64_t seq,
                       int64_t dim, int fill) {
  int64_t shape[4] = {s->b, s->bshd ? seq : heads, s->bshd ? heads : seq, dim};
  return make_plain(t, s->dtype, 4, shape, fill, 1.0f);
}

/* x [rows, in] W [in, out] accumulated in double, then rounded to `type` as
 * the kernel stores it (an f32 accumulator rounded to the dtype). Only the
 * rows whose position (row / div) % mod is marked in `wanted` (every row
 * when it is null); the others are 0. Null when out of memory. */
static float *project(const float *x, const float *w, int64_t rows, int64_t in,
                      int64_t out, enum dtype type, const char *wanted,
                      int64_t div, int64_t mod) {
  float *result = calloc((size_t)(rows * out) + 1, sizeof(float));
  double *sum = malloc((size_t)out * sizeof(double) + 1);
  int64_t r, c, e;
  for (r = 0; result && sum && r < rows; ++r) {
    if (wanted && !wanted[(r / div) % mod])
      continue;
    for (c = 0; c < out; ++c)
      sum[c] = 0;
    for (e = 0; e < in; ++e)
      for (c = 0; c < out; ++c)
        sum[c] += (double)x[r * in + e] * w[e * out + c];
    for (c = 0; c < out; ++c) {
      uint32_t bits;
      result[r * out + c] = round_to(type, (float)sum[c], &bits);
    }
  }
  if (!sum) {
    free(result);
    result = 0;
  }
  free(sum);
  return result;
}

/* n random i32 lengths in [0, max] on the device (kv_lens, spans), described
 * by `dl` over `shape`; their host copy, or null. */
static int32_t *make_lengths(DLTensor *dl, int64_t *shape, int64_t n,
                             int64_t max) {
  CUdeviceptr device;
  int32_t *host = malloc(n * sizeof(int32_t) + 1);
  int64_t i;
  if (!host || cuMemAlloc(&device, n * sizeof(int32_t) + 1))
    return 0;
  for (i = 0; i < n; ++i)
    host[i] = (int32_t)((uniform() + 1) / 2 * (max + 1)) % (int32_t)(max + 1);
  if (cuMemcpyHtoD(device, host, n * sizeof(int32_t)))
    return 0;
  shape[0] = n;
  memset(dl, 0, sizeof *dl);
  dl->data = (void *)(uintptr_t)device;
  dl->device.device_type = kDLCUDA;
  dl->ndim = 1;
  dl->dtype.code = kDLInt;
  dl->dtype.bits = 32;
  dl->dtype.lanes = 1;
  dl->shape = shape;
  return host;
}

/* A random f32 [Hq, cols] table (rel_bias, additive_weight): a
 * [1, Hq, cols, 1] tensor's middle dims. */
static int make_head_table(tensor_t *t, const spec_t *s, int64_t cols) {
  spec_t rows = *s;
  rows.b = 1;
  rows.dtype = F32;
  rows.bshd = 0;
  if (!make_tensor(t, &rows, s->hq, cols, 1, 1))
    return 0;
  t->dl.ndim = 2;
  t->dl.shape = t->shape + 1;
  return 1;
}

/* The comparison of a kernel's outputs with the reference: the largest
 * error and whether a NaN came where a number is due, and, to tell a layout
 * bug (wrong rows or columns of an mma fragment) from a numerical one in a
 * single GPU run, the values off by more than `tolerance` binned by row and
 * column mod 16, and the worst of them. */
typedef struct {
  double tolerance, max_err, worst_err, got, want;
  int saw_nan;
  int64_t off, compared, by_row[16], by_col[16], b, h, i, x;
} misses_t;

static void compare(misses_t *m, double got, double want, int64_t b, int64_t h,
                    int64_t i, int64_t x) {
  /* Equal values (infinities too) agree; a NaN expected (a row that sees a
   * hostile key) must be NaN. */
  double err = got == want || (isnan(want) && isnan(got)) ? 0
               : isnan(got) || isnan(want)                ? INFINITY
                                                          : fabs(got - want);
  if (isnan(got) && !isnan(want))
    m->saw_nan = 1;
  else if (err > m->max_err)
    m->max_err = err;
  ++m->compared;
  if (!(err > m->tolerance))
    return;
  ++m->off;
  ++m->by_row[i % 16];
  if (x >= 0)
    ++m->by_col[x % 16];
  if (m->off == 1 || err > m->worst_err) {
    m->worst_err = err;
    m->got = got, m->want = want;
    m->b = b, m->h = h, m->i = i, m->x = x;
  }
}

static void print_misses(const misses_t *m) {
  int n;
  if (!m->off)
    return;
  printf("  %lld of %lld values off; worst at b=%lld h=%lld row %lld ",
         (long long)m->off, (long long)m->compared, (long long)m->b,
         (long long)m->h, (long long)m->i);
  if (m->x < 0)
    printf("lse");
  else
    printf("col %lld", (long long)m->x);
  printf(": got %g, want %g\n  by row mod 16:", m->got, m->want);
  for (n = 0; n < 16; ++n)
    printf(" %lld", (long long)m->by_row[n]);
  printf("\n  by col mod 16:");
  for (n = 0; n < 16; ++n)
    printf(" %lld", (long long)m->by_col[n]);
  printf("\n");
}

int main(int argc, char **argv) {
  misses_t misses = {0};
  spec_t s;
  tensor_t q, k, v, out, lse;
  CUdevice device;
  CUcontext context;
  void *lib;
  void *entry;
  error_fn error_string;
  char error_name[256];
  int code, rc;
  double tolerance, largest = 0;
  int64_t group, r, rows[96], nrows = 0, b, h, j, x;
  unsigned char *result;
  float *lse_result = 0;
  int32_t *lens = 0, *spans = 0;
  DLTensor spans_dl;
  int64_t spans_shape[1];
  int8_t *blocks = 0;
  DLTensor blocks_dl;
  int64_t blocks_shape[4], query_blocks = 0, key_blocks = 0;
  tensor_t table, weight;
  /* kind=mha: w_q, w_k, w_v, w_o; kind=additive:A: w_q, w_k, w_score (in
   * w_v). */
  tensor_t wq, wk, wv, wo;
  /* The q, k, v the attention reads (the projections of kind=mha and
   * kind=additive:A), in the layout of `view`, q and k of `qk_dim` features;
   * kind=mha: the heads' output of the sampled rows, rounded. */
  const float *qh, *kh, *vh;
  float *projected[3] = {0, 0, 0}, *heads = 0;
  spec_t view;
  int64_t qk_dim;
  char *sampled;
  DLTensor lens_dl;
  int64_t lens_shape[1];
  double *slopes = 0;
  int hostile = 0;
  /* gpu-driver --visible SPEC: the visible (query, key) pairs, no GPU. */
  if (argc == 3 && !strcmp(argv[1], "--visible") && parse_spec(argv[2], &s)) {
    int64_t i, count = 0;
    for (i = 0; i < s.sq; ++i)
      for (j = 0; j < s.sk; ++j)
        count += is_visible(&s, i, j);
    printf("visible %lld\n", (long long)count);
    return 0;
  }
  /* gpu-driver --hostile ...: V of key Sk / 2 is NaN, and V of key Sk - 1
   * in its last column alone (a kernel that looks for non-finite values must
   * find a lone one); the rows that see them must give NaN there, the others
   * their finite value. */
  if (argc == 5 && !strcmp(argv[1], "--hostile")) {
    hostile = 1;
    ++argv, --argc;
  }
  if (argc != 4 || !parse_spec(argv[3], &s)) {
    fprintf(stderr, "usage: gpu-driver [--hostile] LIBRARY NAME SPEC (got a "
                    "bad spec)\n");
    return 2;
  }
  if (hostile && (s.mha || s.linear || s.attention_dim)) {
    /* Their V is a projection, or no softmax weighs it. */
    printf("%-16s %s: hostile V: not for this kind\n", argv[2], argv[3]);
    return 0;
  }
  if ((rc = cuInit(0)) != CUDA_SUCCESS || cuDeviceGet(&device, 0) ||
      cuDevicePrimaryCtxRetain(&context, device) || cuCtxSetCurrent(context)) {
    fprintf(stderr, "gpu-driver: no CUDA device (cuInit: %d)\n", rc);
    return 2;
  }
  lib = dlopen(argv[1], RTLD_NOW);
  snprintf(error_name, sizeof error_name, "%s_error_string", argv[2]);
  entry = lib ? dlsym(lib, argv[2]) : 0;
  error_string = lib ? (error_fn)dlsym(lib, error_name) : 0;
  if (!entry || !error_string) {
    fprintf(stderr, "gpu-driver: cannot load %s from %s: %s\n", argv[2],
            argv[1], dlerror());
    return 2;
  }
  if (s.mha) {
    /* Activations uniform in [-1, 1], each weight uniform in
     * [-sqrt(3 / fan_in), sqrt(3 / fan_in)]: Q, K, V and out keep the
     * activations' variance (1/3), so scores and outputs are of the size of
     * plain attention's (|out| < ~2), whatever E. */
    int64_t xq[3] = {s.b, s.sq, s.embed}, xkv[3] = {s.b, s.sk, s.embed},
            shape_q[2] = {s.embed, s.hq * s.d},
            shape_k[2] = {s.embed, s.hkv * s.d},
            shape_v[2] = {s.embed, s.hkv * s.dv},
            shape_o[2] = {s.hq * s.dv, s.embed};
    float in_bound = (float)sqrt(3.0 / (double)s.embed),
          out_bound = (float)sqrt(3.0 / (double)(s.hq * s.dv));
    rc = make_plain(&q, s.dtype, 3, xq, 1, 1.0f) &&
         make_plain(&k, s.dtype, 3, xkv, 1, 1.0f) &&
         make_plain(&v, s.dtype, 3, xkv, 1, 1.0f) &&
         make_plain(&wq, s.dtype, 2, shape_q, 1, in_bound) &&
         make_plain(&wk, s.dtype, 2, shape_k, 1, in_bound) &&
         make_plain(&wv, s.dtype, 2, shape_v, 1, in_bound) &&
         make_plain(&wo, s.dtype, 2, shape_o, 1, out_bound) &&
         make_plain(&out, s.dtype, 3, xq, 0, 0.0f);
  } else {
    rc = make_tensor(&q, &s, s.hq, s.sq, s.d, 1) &&
         make_tensor(&k, &s, s.hkv, s.sk, s.d, 1) &&
         make_tensor(&v, &s, s.hkv, s.sk, s.dv, 1) &&
         make_tensor(&out, &s, s.hq, s.sq, s.dv, 0);
  }
  if (rc && s.attention_dim) {
    /* W_q, W_k uniform in [-sqrt(3 / D), sqrt(3 / D)] (q' and k' keep the
     * variance of q and k, tanh does not saturate), w_score in [-1, 1]. */
    int64_t shape_w[2] = {s.d, s.attention_dim};
    float bound = (float)sqrt(3.0 / (double)s.d);
    rc = make_plain(&wq, s.dtype, 2, shape_w, 1, bound) &&
         make_plain(&wk, s.dtype, 2, shape_w, 1, bound) &&
         make_plain(&wv, s.dtype, 1, &s.attention_dim, 1, 1.0f);
  }
  if (!rc) {
    fprintf(stderr, "gpu-driver: out of host or device memory\n");
    return 2;
  }
  if (hostile) {
    int64_t bytes = s.dtype == F32 ? 4 : 2, keys[2] = {s.sk / 2, s.sk - 1};
    uint32_t nan_bits;
    round_to(s.dtype, NAN, &nan_bits);
    for (b = 0; b < s.b; ++b)
      for (h = 0; h < s.hkv; ++h)
        for (j = 0; j < 2; ++j)
          for (x = j ? s.dv - 1 : 0; x < s.dv; ++x) {
            int64_t e = at(&s, b, h, keys[j], x, s.hkv, s.sk, s.dv);
            v.host[e] = NAN;
            if (cuMemcpyHtoD(v.device + e * bytes, &nan_bits, bytes))
              return 2;
          }
  }
  if (s.lse) {
    /* [B, Hq, Sq] f32 in every layout: a [B, Hq, Sq, 1] tensor's first three
     * dims. */
    spec_t rows = s;
    rows.dtype = F32;
    rows.bshd = 0;
    if (!make_tensor(&lse, &rows, s.hq, s.sq, 1, 0)) {
      fprintf(stderr, "gpu-driver: out of host or device memory\n");
      return 2;
    }
    lse.dl.ndim = 3;
  }
  /* Valid keys per batch entry and spans per head, uniform in [0, Sk]. */
  if ((s.kv_lens && !(lens = make_lengths(&lens_dl, lens_shape, s.b, s.sk))) ||
      (s.spans && !(spans = make_lengths(&spans_dl, spans_shape, s.hq, s.sk))))
    return 2;
  if (s.block_q) {
    /* 30 % empty, 40 % partial, 30 % full blocks, as attn-run draws them. */
    CUdeviceptr device;
    int64_t n;
    query_blocks = (s.sq + s.block_q - 1) / s.block_q;
    key_blocks = (s.sk + s.block_k - 1) / s.block_k;
    n = s.b * s.hq * query_blocks * key_blocks;
    blocks = malloc(n + 1);
    if (!blocks || cuMemAlloc(&device, n + 1))
      return 2;
    for (x = 0; x < n; ++x) {
      int draw = (int)((uniform() + 1) / 2 * 10) % 10;
      blocks[x] = (int8_t)(draw < 3 ? 0 : draw < 7 ? 1 : 2);
    }
    if (cuMemcpyHtoD(device, blocks, n))
      return 2;
    blocks_shape[0] = s.b;
    blocks_shape[1] = s.hq;
    blocks_shape[2] = query_blocks;
    blocks_shape[3] = key_blocks;
    memset(&blocks_dl, 0, sizeof blocks_dl);
    blocks_dl.data = (void *)(uintptr_t)device;
    blocks_dl.device.device_type = kDLCUDA;
    blocks_dl.ndim = 4;
    blocks_dl.dtype.code = kDLInt;
    blocks_dl.dtype.bits = 8;
    blocks_dl.dtype.lanes = 1;
    blocks_dl.shape = blocks_shape;
  }
  if (s.alibi) {
    /* The standard slopes: 2^(-8 (h + 1) / n) for the largest power of two
     * n <= Hq, then every other slope of 2n for the heads past n. */
    int64_t n = 1;
    while (2 * n <= s.hq)
      n *= 2;
    slopes = malloc(s.hq * sizeof(double));
    for (h = 0; h < s.hq; ++h)
      slopes[h] = h < n ? pow(2.0, -8.0 * (h + 1) / n)
                        : pow(2.0, -4.0 * (2 * (h - n) + 1) / n);
  }
  if ((s.relpos_buckets && !make_head_table(&table, &s, s.relpos_buckets)) ||
      (s.additive && !make_head_table(&weight, &s, s.d)))
    return 2;
  /* Operands in the kernel's order: q, k, v (kind=mha: x_q, x_k, x_v),
   * [rel_bias], [additive_weight], [w_q, w_k, w_v, w_o] (kind=mha),
   * [w_q, w_k, w_score] (kind=additive:A), [kv_lens], [spans],
   * [block_mask], out, [lse]. */
  {
    DLTensor *a[10] = {&q.dl, &k.dl, &v.dl};
    int na = 3;
    if (s.relpos_buckets)
      a[na++] = &table.dl;
    if (s.additive)
      a[na++] = &weight.dl;
    if (s.mha || s.attention_dim) {
      a[na++] = &wq.dl;
      a[na++] = &wk.dl;
      a[na++] = &wv.dl;
    }
    if (s.mha)
      a[na++] = &wo.dl;
    if (s.kv_lens)
      a[na++] = &lens_dl;
    if (s.spans)
      a[na++] = &spans_dl;
    if (s.block_q)
      a[na++] = &blocks_dl;
    a[na++] = &out.dl;
    if (s.lse)
      a[na++] = &lse.dl;
    code = call_entry(entry, a, na);
  }
  if (code || cuCtxSynchronize() != CUDA_SUCCESS) {
    printf("%-16s %s: launcher returned %d (%s)\n", argv[2], argv[3], code,
           error_string(code));
    return 1;
  }
  {
    int64_t n = s.mha ? s.b * s.sq * s.embed : s.b * s.hq * s.sq * s.dv,
            bytes = s.dtype == F32 ? 4 : 2;
    result = malloc(n * bytes + 1);
    if (!result || cuMemcpyDtoH(result, out.device, n * bytes)) {
      fprintf(stderr, "gpu-driver: cannot read the output back\n");
      return 2;
    }
    if (s.lse) {
      size_t rows_bytes = (size_t)(s.b * s.hq * s.sq) * sizeof(float);
      lse_result = malloc(rows_bytes);
      if (!lse_result || cuMemcpyDtoH(lse_result, lse.device, rows_bytes)) {
        fprintf(stderr, "gpu-driver: cannot read the lse back\n");
        return 2;
      }
    }
    tolerance = s.dtype == F32 ? 1e-4 : s.dtype == F16 ? 1e-2 : 2e-2;
    /* kind=mha scales it below: bins of the unscaled one. */
    misses.tolerance = tolerance;
    /* Sampled rows: the first and last 32 and 32 others. */
    for (r = 0; r < 32 && r < s.sq; ++r)
      rows[nrows++] = r;
    for (r = s.sq - 32 > 32 ? s.sq - 32 : 32; r < s.sq; ++r)
      rows[nrows++] = r;
    for (r = 0; r < 32 && s.sq > 64; ++r)
      rows[nrows++] = 32 + (int64_t)((uniform() + 1) / 2 * (s.sq - 64 - 1));
    group = s.hq / s.hkv;
    /* The projections (kind=mha: Q of the sampled rows, K and V; kind=
     * additive:A: q' of the sampled rows and k'), rounded to the dtype. */
    sampled = calloc((size_t)s.sq + 1, 1);
    for (r = 0; sampled && r < nrows; ++r)
      sampled[rows[r]] = 1;
    view = s;
    qh = q.host, kh = k.host, vh = v.host;
    qk_dim = s.d;
    if (s.mha) {
      view.bshd = 1; /* [B, S, H * D] is [B, S, H, D] */
      qh = projected[0] = project(q.host, wq.host, s.b * s.sq, s.embed,
                                  s.hq * s.d, s.dtype, sampled, 1, s.sq);
      kh = projected[1] = project(k.host, wk.host, s.b * s.sk, s.embed,
                                  s.hkv * s.d, s.dtype, 0, 1, 1);
      vh = projected[2] = project(v.host, wv.host, s.b * s.sk, s.embed,
                                  s.hkv * s.dv, s.dtype, 0, 1, 1);
      heads = malloc((size_t)(s.b * nrows * s.hq * s.dv) * sizeof(float) + 1);
    } else if (s.attention_dim) {
      /* The projections act on the feature dim: the layout stays. */
      qk_dim = s.attention_dim;
      qh = projected[0] =
          project(q.host, wq.host, s.b * s.hq * s.sq, s.d, qk_dim, s.dtype,
                  sampled, s.bshd ? s.hq : 1, s.sq);
      kh = projected[1] = project(k.host, wk.host, s.b * s.hkv * s.sk, s.d,
                                  qk_dim, s.dtype, 0, 1, 1);
    }
    if (!sampled || !qh || !kh || !vh || (s.mha && !heads)) {
      fprintf(stderr, "gpu-driver: out of host memory\n");
      return 2;
    }
    double *scores = malloc((s.sk + 1) * sizeof(double));
    double *acc = malloc(s.dv * sizeof(double));
    for (b = 0; b < s.b; ++b)
      for (h = 0; h < s.hq; ++h)
        for (r = 0; r < nrows; ++r) {
          int64_t i = rows[r], hk = h / group;
          double m = -INFINITY, sum = 0;
          /* Additive scores: the weights of head h. */
          const float *w = s.additive        ? weight.host + h * s.d
                           : s.attention_dim ? wv.host
                                             : 0;
          for (j = 0; j < s.sk; ++j) {
            double dot = 0, distance = 0, query_norm = 0;
            for (x = 0; x < qk_dim; ++x) {
              double qx = qh[at(&view, b, h, i, x, s.hq, s.sq, qk_dim)];
              double kx = kh[at(&view, b, hk, j, x, s.hkv, s.sk, qk_dim)];
              /* Additive: the dot product is of w and tanh(q + k);
               * linear: of phi(q) and phi(k). */
              if (s.linear)
                dot +=
                    (qx > 0 ? qx + 1 : exp(qx)) * (kx > 0 ? kx + 1 : exp(kx));
              else
                dot += w ? w[x] * tanh(qx + kx) : qx * kx;
              distance += (qx - kx) * (qx - kx);
              query_norm += qx * qx;
            }
            /* The Gaussian score keeps the op's per-row shift (see
             * attn.attention), which only the lse shows. */
            scores[j] = s.linear     ? log(dot)
                        : s.gaussian ? -0.5 * s.scale * (distance - query_norm)
                                     : s.scale * dot;
            if (s.softcap > 0)
              scores[j] = s.softcap * tanh(scores[j] / s.softcap);
            if (s.alibi)
              scores[j] += slopes[h] * (double)(j - i);
            if (s.relpos_buckets)
              scores[j] +=
                  table.host[h * s.relpos_buckets + relpos_bucket(&s, j - i)];
            int shown = is_visible(&s, i, j) && !(lens && j >= lens[b]) &&
                        !(spans && j < i - spans[h]);
            if (blocks) {
              /* Class 2 shows, 1 leaves it to the other masks, 0 hides. */
              int c = blocks[((b * s.hq + h) * query_blocks + i / s.block_q) *
                                 key_blocks +
                             j / s.block_k];
              shown = c >= 2 || (c == 1 && shown);
            }
            if (!shown)
              scores[j] = -INFINITY;
            if (scores[j] > m)
              m = scores[j];
          }
          for (x = 0; x < s.dv; ++x)
            acc[x] = 0;
          int may_turn_nan = 0;
          for (j = 0; j < s.sk && m > -INFINITY; ++j) {
            double p = exp(scores[j] - m);
            /* A key of weight 0 adds nothing, even a NaN value. A weight
             * under 1e-30 may be 0 in the kernel's f32 (ex2 flushes past
             * 1e-38: the FMA kernel skips the key) and still turn the row
             * NaN on tensor cores (0 times NaN): either is right. */
            if (p == 0)
              continue;
            if (p < 1e-30) {
              int nan_value = 0;
              for (x = 0; x < s.dv; ++x)
                nan_value |=
                    isnan(vh[at(&view, b, hk, j, x, s.hkv, s.sk, s.dv)]);
              if (nan_value) {
                may_turn_nan = 1;
                continue;
              }
            }
            sum += p;
            for (x = 0; x < s.dv; ++x)
              acc[x] += p * vh[at(&view, b, hk, j, x, s.hkv, s.sk, s.dv)];
          }
          if (s.lse) {
            /* Equal infinities (a row without keys) agree. */
            double want = sum > 0 ? m + log(sum) : -INFINITY;
            double got = lse_result[(b * s.hq + h) * s.sq + i];
            compare(&misses, got, want, b, h, i, -1);
          }
          for (x = 0; x < s.dv && s.mha; ++x) {
            /* Kind=mha: the heads' output, rounded, for the projection. */
            uint32_t bits;
            heads[((b * nrows + r) * s.hq + h) * s.dv + x] =
                round_to(s.dtype, (float)(sum > 0 ? acc[x] / sum : 0), &bits);
          }
          for (x = 0; x < s.dv && !s.mha; ++x) {
            double want = sum > 0 ? acc[x] / sum : 0;
            double got = from_bits(
                s.dtype, result + at(&s, b, h, i, x, s.hq, s.sq, s.dv) * bytes);
            compare(&misses, may_turn_nan && isnan(got) ? want : got, want, b,
                    h, i, x);
          }
        }
    /* Kind=mha: out [B, Sq, E] = heads [B, Sq, Hq Dv] W_o. */
    for (b = 0; s.mha && b < s.b; ++b)
      for (r = 0; r < nrows; ++r)
        for (x = 0; x < s.embed; ++x) {
          int64_t merged = s.hq * s.dv, e;
          const float *row = heads + (b * nrows + r) * merged;
          double want = 0, got;
          for (e = 0; e < merged; ++e)
            want += (double)row[e] * wo.host[e * s.embed + x];
          got = from_bits(
              s.dtype, result + ((b * s.sq + rows[r]) * s.embed + x) * bytes);
          compare(&misses, got, want, b, -1, rows[r], x);
          if (fabs(want) > largest)
            largest = fabs(want);
        }
  }
  /* Kind=mha: times the largest expected output where it passes 1 (these
   * inputs give |out| < ~2): the error of out (its own rounding, and the
   * heads' output's, which W_o of unit gain passes on) grows with its size.
   * attn-run's check scales its tolerance alike. */
  if (s.mha && largest > 1)
    tolerance *= largest;
  rc = !misses.saw_nan && misses.max_err <= tolerance ? 0 : 1;
  printf("%-16s %s: %smax abs error %.3e%s on %lld rows (tolerance %.2g) %s\n",
         argv[2], argv[3], hostile ? "hostile V: " : "", misses.max_err,
         misses.saw_nan ? " and NaN" : "", (long long)nrows, tolerance,
         rc ? "FAILED" : "ok");
  if (rc)
    print_misses(&misses);
  return rc;
}
