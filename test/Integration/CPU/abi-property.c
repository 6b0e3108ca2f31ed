// A property test of the DLPack entry point: 2000 calls, each a random
// perturbation of a valid call (batch and sequence lengths are dynamic, so
// many perturbed calls are valid too): shapes (0, negative, huge, wrong
// rank), strides, dtypes, devices, null pointers, misaligned data and byte
// offsets. Every tensor ends where a PROT_NONE page begins, so a read or
// write past its end faults. Each call either returns an error code and
// leaves `out` untouched, or returns 0 with every output row equal to a
// naive reference over the tensors it was given.

// RUN: rm -rf %t && mkdir -p %t
// RUN: attn-compile --spec "b=2,hq=4,hkv=2,sq=24,d=8,mask=causal,kv_lens=random,dynamic=bs" --name k_prop -o %t
// RUN: %cc -O1 -Wall -Werror -I%t %s %t/k_prop.o %kernel_link_flags -lm -o %t.exe
// RUN: %t.exe | FileCheck %s

// CHECK: 2000 calls: {{[1-9][0-9]*}} valid and correct, {{[1-9][0-9]*}} refused, 0 wrong
// CHECK-NEXT: codes seen: 1 2 3 4 5 6 7 9

#define _DEFAULT_SOURCE
#include "k_prop.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

enum { HQ = 4, HKV = 2, D = 8, MAX_S = 40, MAX_B = 3 };

static unsigned state = 12345;
static unsigned next(void) {
  state = state * 1103515245u + 12345u;
  return state >> 8;
}
static float uniform(void) { return (float)(next() % 2001) / 1000.0f - 1.0f; }

/* `bytes` of memory ending exactly where an inaccessible page begins. */
static char *guarded(size_t bytes) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  size_t span = (bytes + page - 1) / page * page;
  char *base = mmap(NULL, span + page, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED)
    return NULL;
  mprotect(base + span, page, PROT_NONE);
  return base + span - bytes;
}

/* One operand: its DLTensor, shape and strides, over guarded memory. */
typedef struct {
  DLTensor t;
  int64_t shape[6], strides[6];
  char *memory;
  size_t bytes;
} operand_t;

static void make(operand_t *o, int ndim, const int64_t *shape, int bits,
                 int code) {
  int64_t n = 1;
  memset(&o->t, 0, sizeof o->t);
  for (int d = 0; d < ndim; ++d)
    n *= o->shape[d] = shape[d];
  o->bytes = (size_t)n * (size_t)(bits / 8);
  /* An empty tensor still gets a valid (never read) pointer. */
  o->memory = guarded(o->bytes ? o->bytes : 1);
  o->t.data = o->memory;
  o->t.device.device_type = kDLCPU;
  o->t.ndim = ndim;
  o->t.dtype.code = (uint8_t)code;
  o->t.dtype.bits = (uint8_t)bits;
  o->t.dtype.lanes = 1;
  o->t.shape = o->shape;
}

static void release(operand_t *o) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  size_t bytes = o->bytes ? o->bytes : 1;
  size_t span = (bytes + page - 1) / page * page;
  munmap(o->memory + bytes - span, span + page);
}

/* Whether output row (b, h, i) is the softmax attention over keys j <= i,
 * j < lens[b] of the memory behind the operands. */
static int row_correct(const operand_t *q, const operand_t *k,
                       const operand_t *v, const operand_t *lens,
                       const operand_t *out, int64_t b, int64_t h, int64_t i) {
  int64_t sq = q->shape[2], sk = k->shape[2];
  const float *qf = (const float *)q->memory, *kf = (const float *)k->memory,
              *vf = (const float *)v->memory;
  const float *of = (const float *)out->memory;
  int32_t len = ((const int32_t *)lens->memory)[b];
  int64_t seen = i + 1 < len ? i + 1 : len, kvh = h / (HQ / HKV);
  if (seen > sk)
    seen = sk;
  double m = -INFINITY, sum = 0, acc[D] = {0};
  const float *qi = qf + ((b * HQ + h) * sq + i) * D;
  for (int pass = 0; pass < 2; ++pass)
    for (int64_t j = 0; j < seen; ++j) {
      const float *kj = kf + ((b * HKV + kvh) * sk + j) * D;
      double s = 0;
      for (int d = 0; d < D; ++d)
        s += (double)qi[d] * kj[d];
      s /= sqrt((double)D);
      if (pass == 0) {
        m = fmax(m, s);
        continue;
      }
      double p = exp(s - m);
      sum += p;
      for (int d = 0; d < D; ++d)
        acc[d] += p * vf[((b * HKV + kvh) * sk + j) * D + d];
    }
  for (int d = 0; d < D; ++d) {
    double want = seen > 0 ? acc[d] / sum : 0.0;
    float got = of[((b * HQ + h) * sq + i) * D + d];
    if (!(fabs(got - want) <= 1e-4))
      return 0;
  }
  return 1;
}

int main(void) {
  int valid = 0, refused = 0, wrong = 0, seen[16] = {0};
  for (int call = 0; call < 2000; ++call) {
    int64_t b = next() % MAX_B + 1, sq = next() % MAX_S + 1,
            sk = next() % MAX_S + 1;
    if (next() % 8 == 0)
      b = 0;
    int64_t qs[4] = {b, HQ, sq, D}, ks[4] = {b, HKV, sk, D}, ls[1] = {b};
    operand_t ops[5];
    make(&ops[0], 4, qs, 32, kDLFloat);
    make(&ops[1], 4, ks, 32, kDLFloat);
    make(&ops[2], 4, ks, 32, kDLFloat);
    make(&ops[3], 1, ls, 32, kDLInt);
    make(&ops[4], 4, qs, 32, kDLFloat);
    for (int o = 0; o < 3; ++o)
      for (size_t x = 0; x < ops[o].bytes / 4; ++x)
        ((float *)ops[o].t.data)[x] = uniform();
    for (int64_t x = 0; x < b; ++x)
      ((int32_t *)ops[3].t.data)[x] = (int32_t)(next() % (sk + 2));
    for (size_t x = 0; x < ops[4].bytes / 4; ++x)
      ((float *)ops[4].t.data)[x] = 1234.5f;

    /* Up to two perturbations of random operands. */
    DLTensor *args[5];
    for (int o = 0; o < 5; ++o)
      args[o] = &ops[o].t;
    int perturbations = next() % 3, grown = 0;
    for (int p = 0; p < perturbations; ++p) {
      operand_t *o = &ops[next() % 5];
      int d = o->t.ndim ? (int)(next() % o->t.ndim) : 0;
      switch (next() % 12) {
      case 0:
        args[o - ops] = NULL;
        break;
      case 1:
        o->t.data = NULL;
        break;
      case 2:
        o->t.ndim = (int32_t)(next() % 6);
        break;
      case 3:
        o->shape[d] = -(int64_t)(next() % 3) - 1;
        break;
      case 4:
        /* A size the memory does not back, in one tensor: every size is
         * bound by two, so the other one contradicts it. */
        o->shape[d] += !grown;
        grown = 1;
        break;
      case 5:
        o->shape[d] = (int64_t)1 << 40;
        break;
      case 6:
        o->t.dtype.bits = o->t.dtype.bits == 32 ? 16 : 32;
        break;
      case 7:
        o->t.dtype.code = (uint8_t)(next() % 6);
        break;
      case 8:
        o->t.device.device_type = kDLCUDA;
        break;
      case 9:
        o->t.data = o->memory + 2; /* misaligned */
        break;
      case 10:
        /* The same data through byte_offset: still valid. */
        o->t.data = o->memory - 64;
        o->t.byte_offset = 64;
        break;
      default:
        o->t.strides = o->strides;
        for (int x = 0; x < o->t.ndim && x < 6; ++x)
          o->strides[x] = 1;
        break;
      }
    }
    /* What the memory really holds, before the call reads any of it. */
    int64_t shape_q[4], shape_k[4];
    memcpy(shape_q, ops[0].shape, sizeof shape_q);
    memcpy(shape_k, ops[1].shape, sizeof shape_k);

    int status = k_prop(args[0], args[1], args[2], args[3], args[4]);
    if (status) {
      ++refused;
      seen[status & 15] = 1;
      /* Nothing written. */
      for (size_t x = 0; x < ops[4].bytes / 4; ++x)
        if (((float *)ops[4].memory)[x] != 1234.5f) {
          ++wrong;
          break;
        }
    } else {
      ++valid;
      /* Only calls whose tensors describe their memory may succeed. */
      int ok = shape_q[0] == b && shape_q[2] == sq && shape_k[2] == sk;
      for (int o = 0; ok && o < 5; ++o)
        ok = args[o] && ops[o].t.data && ops[o].t.dtype.bits == 32 &&
             ops[o].t.device.device_type == kDLCPU;
      for (int64_t bb = 0; ok && bb < b; ++bb)
        for (int64_t h = 0; ok && h < HQ; ++h)
          for (int64_t i = 0; ok && i < sq; ++i)
            ok = row_correct(&ops[0], &ops[1], &ops[2], &ops[3], &ops[4], bb, h,
                             i);
      wrong += !ok;
    }
    for (int o = 0; o < 5; ++o)
      release(&ops[o]);
  }
  printf("2000 calls: %d valid and correct, %d refused, %d wrong\n", valid,
         refused, wrong);
  printf("codes seen:");
  for (int c = 1; c < 16; ++c)
    if (seen[c])
      printf(" %d", c);
  printf("\n");
  return wrong != 0;
}
