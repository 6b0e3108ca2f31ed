/* gpu-driver: runs one attn GPU kernel through its C launcher and checks it
 * against a naive CPU reference (double precision, on sampled query rows).
 *
 *   gpu-driver LIBRARY NAME SPEC
 *
 * LIBRARY is the launcher built as a shared library (gpu-check.sh does it),
 * NAME its entry point, SPEC the kernel's spec (b=..,hq=..,sq=..,d=..[,hkv,
 * sk,dv,dtype,layout,mask]). Prints one line; exit status 0 when the kernel
 * agrees with the reference, 1 when it does not (or the launcher fails), 2
 * when this machine cannot run it (no CUDA device, bad arguments).
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

typedef int (*entry_fn)(const DLTensor *, const DLTensor *, const DLTensor *,
                        DLTensor *, CUstream);
typedef const char *(*error_fn)(int);

enum dtype { F32, F16, BF16 };

typedef struct {
  int64_t b, hq, hkv, sq, sk, d, dv;
  enum dtype dtype;
  int bshd;
  int mask; /* 0 none, 1 causal, 2 causal bottom-right, 3 window */
  int64_t left, right;
} spec_t;

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
      if (!strcmp(value, "causal"))
        s->mask = 1;
      else if (!strcmp(value, "causal_bottom_right"))
        s->mask = 2;
      else if (sscanf(value, "window:%lld:%lld", (long long *)&s->left,
                      (long long *)&s->right) == 2)
        s->mask = 3;
      else if (strcmp(value, "none"))
        return 0;
    } else if (strcmp(item, "scale") && strcmp(item, "dynamic"))
      return 0;
  }
  if (s->hkv < 0)
    s->hkv = s->hq;
  if (s->sk < 0)
    s->sk = s->sq;
  if (s->dv < 0)
    s->dv = s->d;
  return s->b > 0 && s->hq > 0 && s->hkv > 0 && s->hq % s->hkv == 0 &&
         s->sq > 0 && s->sk >= 0 && s->d > 0 && s->dv > 0;
}

/* Element (batch, head, pos, x) of a [B, H, S, X] (or [B, S, H, X]) tensor. */
static int64_t at(const spec_t *s, int64_t batch, int64_t head, int64_t pos,
                  int64_t x, int64_t heads, int64_t seq, int64_t dim) {
  return s->bshd ? ((batch * seq + pos) * heads + head) * dim + x
                 : ((batch * heads + head) * seq + pos) * dim + x;
}

static int is_visible(const spec_t *s, int64_t i, int64_t j) {
  int64_t shift = s->mask == 2 ? s->sk - s->sq : 0;
  switch (s->mask) {
  case 1:
  case 2:
    return j <= i + shift;
  case 3:
    return j >= i - s->left && j <= i + s->right;
  default:
    return 1;
  }
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

static int make_tensor(tensor_t *t, const spec_t *s, int64_t heads, int64_t seq,
                       int64_t dim, int fill) {
  int64_t n = s->b * heads * seq * dim, i, bytes = s->dtype == F32 ? 4 : 2;
  unsigned char *staging = malloc(n * bytes + 1);
  t->host = malloc(n * sizeof(float) + 1);
  if (!staging || !t->host)
    return 0;
  for (i = 0; i < n; ++i) {
    uint32_t bits;
    t->host[i] = round_to(s->dtype, fill ? uniform() : NAN, &bits);
    memcpy(staging + i * bytes, &bits, bytes); /* little endian */
  }
  if (cuMemAlloc(&t->device, n * bytes + 1) != CUDA_SUCCESS ||
      cuMemcpyHtoD(t->device, staging, n * bytes) != CUDA_SUCCESS)
    return 0;
  free(staging);
  t->shape[0] = s->b;
  t->shape[1] = s->bshd ? seq : heads;
  t->shape[2] = s->bshd ? heads : seq;
  t->shape[3] = dim;
  memset(&t->dl, 0, sizeof t->dl);
  t->dl.data = (void *)(uintptr_t)t->device;
  t->dl.device.device_type = kDLCUDA;
  t->dl.ndim = 4;
  t->dl.dtype.code = s->dtype == BF16 ? kDLBfloat : kDLFloat;
  t->dl.dtype.bits = (uint8_t)(bytes * 8);
  t->dl.dtype.lanes = 1;
  t->dl.shape = t->shape;
  return 1;
}

int main(int argc, char **argv) {
  spec_t s;
  tensor_t q, k, v, out;
  CUdevice device;
  CUcontext context;
  void *lib;
  entry_fn entry;
  error_fn error_string;
  char error_name[256];
  int code, rc;
  double max_err = 0, tolerance;
  int saw_nan = 0;
  int64_t group, r, rows[96], nrows = 0, b, h, j, x;
  unsigned char *result;
  if (argc != 4 || !parse_spec(argv[3], &s)) {
    fprintf(stderr, "usage: gpu-driver LIBRARY NAME SPEC (got a bad spec)\n");
    return 2;
  }
  if ((rc = cuInit(0)) != CUDA_SUCCESS || cuDeviceGet(&device, 0) ||
      cuDevicePrimaryCtxRetain(&context, device) || cuCtxSetCurrent(context)) {
    fprintf(stderr, "gpu-driver: no CUDA device (cuInit: %d)\n", rc);
    return 2;
  }
  lib = dlopen(argv[1], RTLD_NOW);
  snprintf(error_name, sizeof error_name, "%s_error_string", argv[2]);
  entry = lib ? (entry_fn)dlsym(lib, argv[2]) : 0;
  error_string = lib ? (error_fn)dlsym(lib, error_name) : 0;
  if (!entry || !error_string) {
    fprintf(stderr, "gpu-driver: cannot load %s from %s: %s\n", argv[2],
            argv[1], dlerror());
    return 2;
  }
  if (!make_tensor(&q, &s, s.hq, s.sq, s.d, 1) ||
      !make_tensor(&k, &s, s.hkv, s.sk, s.d, 1) ||
      !make_tensor(&v, &s, s.hkv, s.sk, s.dv, 1) ||
      !make_tensor(&out, &s, s.hq, s.sq, s.dv, 0)) {
    fprintf(stderr, "gpu-driver: out of host or device memory\n");
    return 2;
  }
  code = entry(&q.dl, &k.dl, &v.dl, &out.dl, 0);
  if (code || cuCtxSynchronize() != CUDA_SUCCESS) {
    printf("%-16s %s: launcher returned %d (%s)\n", argv[2], argv[3], code,
           error_string(code));
    return 1;
  }
  {
    int64_t n = s.b * s.hq * s.sq * s.dv, bytes = s.dtype == F32 ? 4 : 2;
    result = malloc(n * bytes + 1);
    if (!result || cuMemcpyDtoH(result, out.device, n * bytes)) {
      fprintf(stderr, "gpu-driver: cannot read the output back\n");
      return 2;
    }
    /* Sampled rows: the first and last 32 and 32 others. */
    for (r = 0; r < 32 && r < s.sq; ++r)
      rows[nrows++] = r;
    for (r = s.sq - 32 > 32 ? s.sq - 32 : 32; r < s.sq; ++r)
      rows[nrows++] = r;
    for (r = 0; r < 32 && s.sq > 64; ++r)
      rows[nrows++] = 32 + (int64_t)((uniform() + 1) / 2 * (s.sq - 64 - 1));
    group = s.hq / s.hkv;
    double *scores = malloc((s.sk + 1) * sizeof(double));
    double *acc = malloc(s.dv * sizeof(double));
    for (b = 0; b < s.b; ++b)
      for (h = 0; h < s.hq; ++h)
        for (r = 0; r < nrows; ++r) {
          int64_t i = rows[r], hk = h / group;
          double m = -INFINITY, sum = 0;
          for (j = 0; j < s.sk; ++j) {
            double dot = 0;
            for (x = 0; x < s.d; ++x)
              dot += (double)q.host[at(&s, b, h, i, x, s.hq, s.sq, s.d)] *
                     k.host[at(&s, b, hk, j, x, s.hkv, s.sk, s.d)];
            scores[j] =
                is_visible(&s, i, j) ? dot / sqrt((double)s.d) : -INFINITY;
            if (scores[j] > m)
              m = scores[j];
          }
          for (x = 0; x < s.dv; ++x)
            acc[x] = 0;
          for (j = 0; j < s.sk && m > -INFINITY; ++j) {
            double p = exp(scores[j] - m);
            sum += p;
            for (x = 0; x < s.dv; ++x)
              acc[x] += p * v.host[at(&s, b, hk, j, x, s.hkv, s.sk, s.dv)];
          }
          for (x = 0; x < s.dv; ++x) {
            double want = sum > 0 ? acc[x] / sum : 0;
            double got = from_bits(
                s.dtype, result + at(&s, b, h, i, x, s.hq, s.sq, s.dv) * bytes);
            double err = fabs(got - want);
            if (isnan(err))
              saw_nan = 1;
            else if (err > max_err)
              max_err = err;
          }
        }
  }
  tolerance = s.dtype == F32 ? 1e-4 : s.dtype == F16 ? 1e-2 : 2e-2;
  rc = !saw_nan && max_err <= tolerance ? 0 : 1;
  printf("%-16s %s: max abs error %.3e%s on %lld rows (tolerance %.0e) %s\n",
         argv[2], argv[3], max_err, saw_nan ? " and NaN" : "", (long long)nrows,
         tolerance, rc ? "FAILED" : "ok");
  return rc;
}
