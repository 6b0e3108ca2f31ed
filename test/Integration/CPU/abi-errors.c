// The DLPack entry point rejects every malformed argument with its own error
// code, a non-empty message, and without writing `out`. Three kernels: a
// static one (b=1, hq=2, sq=8, d=8, f32), one dynamic in the sequence lengths
// (for a size disagreement between operands) and one dynamic in the head
// counts (for Hq not a multiple of Hkv).

// RUN: rm -rf %t && mkdir -p %t/static %t/dyns %t/dynh
// RUN: attn-compile --spec "b=1,hq=2,sq=8,d=8" --name k_static -o %t/static
// RUN: attn-compile --spec "b=1,hq=2,sq=8,d=8,dynamic=s" --name k_dyns -o %t/dyns
// RUN: attn-compile --spec "b=1,hq=4,hkv=2,sq=8,d=8,dynamic=h" --name k_dynh -o %t/dynh
// RUN: %cc -O1 -Wall -Werror -I%t/static -I%t/dyns -I%t/dynh %s %t/static/k_static.o %t/dyns/k_dyns.o %t/dynh/k_dynh.o %kernel_link_flags -o %t.exe
// RUN: %t.exe | FileCheck %s

// CHECK: valid call: 0 ok
// CHECK-NEXT: null q: 1 ok
// CHECK-NEXT: null shape: 1 ok
// CHECK-NEXT: null data: 1 ok
// CHECK-NEXT: null out data: 1 ok
// CHECK-NEXT: wrong ndim: 2 ok
// CHECK-NEXT: wrong dtype f16: 3 ok
// CHECK-NEXT: wrong dtype int32: 3 ok
// CHECK-NEXT: wrong lanes: 3 ok
// CHECK-NEXT: wrong out dtype: 3 ok
// CHECK-NEXT: wrong device cuda: 4 ok
// CHECK-NEXT: static size mismatch: 5 ok
// CHECK-NEXT: negative size: 5 ok
// CHECK-NEXT: shape mismatch k/v: 6 ok
// CHECK-NEXT: shape mismatch q/out: 6 ok
// CHECK-NEXT: non-compact strides: 7 ok
// CHECK-NEXT: transposed strides: 7 ok
// CHECK-NEXT: heads 3/2: 8 ok
// CHECK-NEXT: heads 4/0: 8 ok
// CHECK-NEXT: misaligned data: 9 ok
// CHECK-NEXT: sizes overflowing bytes: 14 ok
// CHECK-NEXT: empty with overflowing strides: 14 ok
// CHECK-NEXT: byte_offset past the address space: 14 ok
// CHECK-NEXT: valid size-1 strides: 0 ok
// CHECK-NEXT: valid dynamic s: 0 ok
// CHECK-NEXT: valid dynamic h: 0 ok
// CHECK-NEXT: error strings ok
// CHECK-NEXT: all ok

#include "k_dynh.h"
#include "k_dyns.h"
#include "k_static.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define SENTINEL (-12345.0f)
enum { N = 1 * 4 * 8 * 8 }; /* the largest operand used */

/* Backing storage; 64-byte aligned so that byte_offset controls alignment. */
static _Alignas(64) float qbuf[N + 16], kbuf[N + 16], vbuf[N + 16],
    obuf[N + 16];

typedef int (*kernel_fn)(const DLTensor *, const DLTensor *, const DLTensor *,
                         DLTensor *);

static int all_ok = 1;

static DLTensor tensor(float *data, int64_t *shape) {
  DLTensor t;
  memset(&t, 0, sizeof(t));
  t.data = data;
  t.device.device_type = kDLCPU;
  t.device.device_id = 0;
  t.ndim = 4;
  t.dtype.code = kDLFloat;
  t.dtype.bits = 32;
  t.dtype.lanes = 1;
  t.shape = shape;
  t.strides = NULL;
  t.byte_offset = 0;
  return t;
}

static void fill(void) {
  for (int i = 0; i < N + 16; ++i) {
    qbuf[i] = (float)((i * 7) % 13) / 13.0f - 0.5f;
    kbuf[i] = (float)((i * 5) % 11) / 11.0f - 0.5f;
    vbuf[i] = (float)((i * 3) % 17) / 17.0f - 0.5f;
    obuf[i] = SENTINEL;
  }
}

static int out_untouched(void) {
  for (int i = 0; i < N + 16; ++i)
    if (obuf[i] != SENTINEL)
      return 0;
  return 1;
}

/* For a valid call: the first `n` out elements were written, none is NaN. */
static int out_written(int n) {
  for (int i = 0; i < n; ++i)
    if (obuf[i] == SENTINEL || obuf[i] != obuf[i])
      return 0;
  return 1;
}

static void expect(const char *label, int got, int want, const char *msg,
                   int untouched) {
  int ok = got == want && msg && msg[0] != '\0' && untouched;
  printf("%s: %d %s", label, got, ok ? "ok" : "FAILED");
  if (!ok)
    printf(" (want %d, message \"%s\", out %s)", want, msg ? msg : "(null)",
           untouched ? "untouched" : "WRITTEN");
  printf("\n");
  all_ok &= ok;
}

int main(void) {
  int64_t shape[4] = {1, 2, 8, 8};
  DLTensor q, k, v, o;
  int rc;

#define RESET()                                                                \
  do {                                                                         \
    fill();                                                                    \
    q = tensor(qbuf, shape);                                                   \
    k = tensor(kbuf, shape);                                                   \
    v = tensor(vbuf, shape);                                                   \
    o = tensor(obuf, shape);                                                   \
  } while (0)
#define BAD(label, call, want, errstr)                                         \
  do {                                                                         \
    rc = (call);                                                               \
    expect(label, rc, want, errstr(rc), out_untouched());                      \
  } while (0)

  /* A valid call succeeds and writes out (and nothing past it). */
  RESET();
  rc = k_static(&q, &k, &v, &o);
  expect("valid call", rc, K_STATIC_OK, k_static_error_string(rc),
         out_written(2 * 8 * 8) && obuf[2 * 8 * 8] == SENTINEL);

  RESET();
  BAD("null q", k_static(NULL, &k, &v, &o), K_STATIC_ERR_NULL,
      k_static_error_string);

  RESET();
  q.shape = NULL;
  BAD("null shape", k_static(&q, &k, &v, &o), K_STATIC_ERR_NULL,
      k_static_error_string);

  RESET();
  v.data = NULL;
  BAD("null data", k_static(&q, &k, &v, &o), K_STATIC_ERR_NULL,
      k_static_error_string);

  RESET();
  o.data = NULL;
  BAD("null out data", k_static(&q, &k, &v, &o), K_STATIC_ERR_NULL,
      k_static_error_string);

  RESET();
  {
    int64_t shape3[3] = {2, 8, 8};
    k.ndim = 3;
    k.shape = shape3;
    BAD("wrong ndim", k_static(&q, &k, &v, &o), K_STATIC_ERR_NDIM,
        k_static_error_string);
  }

  RESET();
  q.dtype.bits = 16; /* f16 */
  BAD("wrong dtype f16", k_static(&q, &k, &v, &o), K_STATIC_ERR_DTYPE,
      k_static_error_string);

  RESET();
  k.dtype.code = kDLInt; /* int32: right width, wrong kind */
  BAD("wrong dtype int32", k_static(&q, &k, &v, &o), K_STATIC_ERR_DTYPE,
      k_static_error_string);

  RESET();
  v.dtype.lanes = 4;
  BAD("wrong lanes", k_static(&q, &k, &v, &o), K_STATIC_ERR_DTYPE,
      k_static_error_string);

  RESET();
  o.dtype.code = kDLBfloat;
  o.dtype.bits = 16;
  BAD("wrong out dtype", k_static(&q, &k, &v, &o), K_STATIC_ERR_DTYPE,
      k_static_error_string);

  RESET();
  k.device.device_type = kDLCUDA;
  BAD("wrong device cuda", k_static(&q, &k, &v, &o), K_STATIC_ERR_DEVICE,
      k_static_error_string);

  RESET();
  {
    int64_t shape7[4] = {1, 2, 7, 8}; /* Sq = 7, compiled for 8 */
    q.shape = shape7;
    BAD("static size mismatch", k_static(&q, &k, &v, &o),
        K_STATIC_ERR_STATIC_SHAPE, k_static_error_string);
  }

  RESET();
  {
    int64_t shapeneg[4] = {1, 2, -8, 8}; /* dynamic Sq, negative */
    q.shape = shapeneg;
    BAD("negative size", k_dyns(&q, &k, &v, &o), K_DYNS_ERR_STATIC_SHAPE,
        k_dyns_error_string);
  }

  RESET();
  {
    int64_t shape6[4] = {1, 2, 6, 8}; /* v has Sk = 6, k has Sk = 8 */
    v.shape = shape6;
    BAD("shape mismatch k/v", k_dyns(&q, &k, &v, &o), K_DYNS_ERR_SHAPE_MISMATCH,
        k_dyns_error_string);
  }

  RESET();
  {
    int64_t shape5[4] = {1, 2, 5, 8}; /* out has Sq = 5, q has Sq = 8 */
    o.shape = shape5;
    BAD("shape mismatch q/out", k_dyns(&q, &k, &v, &o),
        K_DYNS_ERR_SHAPE_MISMATCH, k_dyns_error_string);
  }

  RESET();
  {
    /* Rows padded to 16 floats: a valid view of qbuf, but not compact. */
    int64_t strides[4] = {2 * 8 * 16, 8 * 16, 16, 1};
    q.strides = strides;
    BAD("non-compact strides", k_static(&q, &k, &v, &o), K_STATIC_ERR_STRIDES,
        k_static_error_string);
  }

  RESET();
  {
    /* S and D swapped (a transposed view): same extent, still rejected. */
    int64_t strides[4] = {2 * 8 * 8, 8 * 8, 1, 8};
    k.strides = strides;
    BAD("transposed strides", k_static(&q, &k, &v, &o), K_STATIC_ERR_STRIDES,
        k_static_error_string);
  }

  RESET();
  {
    int64_t qshape[4] = {1, 3, 8, 8}, kvshape[4] = {1, 2, 8, 8};
    q.shape = qshape;
    o.shape = qshape;
    k.shape = kvshape;
    v.shape = kvshape;
    BAD("heads 3/2", k_dynh(&q, &k, &v, &o), K_DYNH_ERR_HEADS,
        k_dynh_error_string);
  }

  RESET();
  {
    int64_t qshape[4] = {1, 4, 8, 8}, kvshape[4] = {1, 0, 8, 8};
    q.shape = qshape;
    o.shape = qshape;
    k.shape = kvshape;
    v.shape = kvshape;
    BAD("heads 4/0", k_dynh(&q, &k, &v, &o), K_DYNH_ERR_HEADS,
        k_dynh_error_string);
  }

  RESET();
  q.byte_offset = 1; /* f32 data at an odd address */
  BAD("misaligned data", k_static(&q, &k, &v, &o), K_STATIC_ERR_ALIGNMENT,
      k_static_error_string);

  /* Sizes whose product in bytes overflows int64 (found by attn-abi-fuzzer:
   * it was signed overflow before), consistent across q and out. */
  RESET();
  {
    int64_t huge[4] = {1, 2, (int64_t)1 << 60, 8};
    q.shape = huge;
    o.shape = huge;
    BAD("sizes overflowing bytes", k_dyns(&q, &k, &v, &o), K_DYNS_ERR_TOO_LARGE,
        k_dyns_error_string);
  }
  RESET();
  {
    /* Sk = 2^62 and Sq = 0: nothing to compute, but k's strides overflow. */
    int64_t qEmpty[4] = {1, 2, 0, 8}, kvHuge[4] = {1, 2, (int64_t)1 << 62, 8};
    q.shape = qEmpty;
    o.shape = qEmpty;
    k.shape = kvHuge;
    v.shape = kvHuge;
    BAD("empty with overflowing strides", k_dyns(&q, &k, &v, &o),
        K_DYNS_ERR_TOO_LARGE, k_dyns_error_string);
  }
  RESET();
  q.byte_offset = UINT64_MAX - 3;
  BAD("byte_offset past the address space", k_static(&q, &k, &v, &o),
      K_STATIC_ERR_TOO_LARGE, k_static_error_string);

  /* Valid calls that must not be rejected. */
  RESET();
  {
    /* Strides of size-1 dimensions do not matter; the others are compact. */
    int64_t strides[4] = {12345, 64, 8, 1};
    q.strides = strides;
    o.strides = strides;
    rc = k_static(&q, &k, &v, &o);
    expect("valid size-1 strides", rc, K_STATIC_OK, k_static_error_string(rc),
           out_written(2 * 8 * 8) && obuf[2 * 8 * 8] == SENTINEL);
  }

  RESET();
  {
    int64_t qshape[4] = {1, 2, 5, 8}, kvshape[4] = {1, 2, 11, 8};
    q.shape = qshape;
    o.shape = qshape;
    k.shape = kvshape;
    v.shape = kvshape;
    rc = k_dyns(&q, &k, &v, &o);
    expect("valid dynamic s", rc, K_DYNS_OK, k_dyns_error_string(rc),
           out_written(2 * 5 * 8) && obuf[2 * 5 * 8] == SENTINEL);
  }

  RESET();
  {
    int64_t qshape[4] = {1, 4, 8, 8}, kvshape[4] = {1, 1, 8, 8};
    q.shape = qshape;
    o.shape = qshape;
    k.shape = kvshape;
    v.shape = kvshape;
    rc = k_dynh(&q, &k, &v, &o);
    expect("valid dynamic h", rc, K_DYNH_OK, k_dynh_error_string(rc),
           out_written(4 * 8 * 8) && obuf[4 * 8 * 8] == SENTINEL);
  }

  /* Every code has its own non-empty message; unknown codes get one too. */
  {
    int ok = 1;
    for (int c = 0; c <= 14; ++c) {
      const char *s = k_static_error_string(c);
      ok &= s && s[0] != '\0';
      for (int d = 0; d < c; ++d)
        ok &= strcmp(s, k_static_error_string(d)) != 0;
    }
    ok &= k_static_error_string(1000) && k_static_error_string(1000)[0];
    ok &= k_static_error_string(-1) && k_static_error_string(-1)[0];
    printf("error strings %s\n", ok ? "ok" : "FAILED");
    all_ok &= ok;
  }

  printf("%s\n", all_ok ? "all ok" : "SOME FAILED");
  return all_ok ? 0 : 1;
}
