// Launches the kernels of upstream-mma.mlir (one warp each) on the CUDA
// emulator and checks D = C + A B against a naive product. Inputs are
// multiples of 1/8 in [-2, 2): every product and sum is exact in fp32, so
// any error beyond 1e-6 is a misplaced fragment element.

#include <cuda.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

enum { M = 16, N = 8, K = 16 };

static uint16_t toHalf(float x) {
  _Float16 h = (_Float16)x;
  uint16_t bits;
  memcpy(&bits, &h, 2);
  return bits;
}

static int check(CUresult r, const char *what) {
  if (r != CUDA_SUCCESS)
    fprintf(stderr, "upstream-mma: %s failed: %d\n", what, (int)r);
  return r == CUDA_SUCCESS;
}

// A 2-D memref argument as MLIR passes it: allocated and aligned pointers,
// offset, sizes, strides.
typedef struct {
  CUdeviceptr allocated, aligned;
  int64_t offset, sizes[2], strides[2];
} Memref2D;

static Memref2D memref(CUdeviceptr p, int64_t rows, int64_t cols) {
  Memref2D d = {p, p, 0, {rows, cols}, {cols, 1}};
  return d;
}

static void pushMemref(void **params, int *count, Memref2D *d) {
  params[(*count)++] = &d->allocated;
  params[(*count)++] = &d->aligned;
  params[(*count)++] = &d->offset;
  params[(*count)++] = &d->sizes[0];
  params[(*count)++] = &d->sizes[1];
  params[(*count)++] = &d->strides[0];
  params[(*count)++] = &d->strides[1];
}

// `bStoredKN`: B is stored k by n (16x8) rather than n by k (8x16).
static int runKernel(CUmodule module, const char *name, int bStoredKN) {
  uint16_t a[M * K], b[K * N];
  float af[M * K], bf[K * N], c[M * N], d[M * N], error = 0;
  for (int i = 0; i < M * K; ++i) {
    af[i] = (float)((i * 37 + 5) % 32 - 16) / 8;
    a[i] = toHalf(af[i]);
  }
  for (int i = 0; i < K * N; ++i) {
    bf[i] = (float)((i * 53 + 3) % 32 - 16) / 8;
    b[i] = toHalf(bf[i]);
  }
  for (int i = 0; i < M * N; ++i)
    c[i] = (float)(i % 7) - 3;
  CUfunction f;
  CUdeviceptr da, db, dc;
  if (!check(cuModuleGetFunction(&f, module, name), name) ||
      !check(cuMemAlloc(&da, sizeof a), "alloc") ||
      !check(cuMemAlloc(&db, sizeof b), "alloc") ||
      !check(cuMemAlloc(&dc, sizeof c), "alloc") ||
      !check(cuMemcpyHtoD(da, a, sizeof a), "copy") ||
      !check(cuMemcpyHtoD(db, b, sizeof b), "copy") ||
      !check(cuMemcpyHtoD(dc, c, sizeof c), "copy"))
    return 1;
  Memref2D ma = memref(da, M, K),
           mb = bStoredKN ? memref(db, K, N) : memref(db, N, K),
           mc = memref(dc, M, N);
  void *params[21];
  int count = 0;
  pushMemref(params, &count, &ma);
  pushMemref(params, &count, &mb);
  pushMemref(params, &count, &mc);
  if (!check(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, 0, params, 0), "launch") ||
      !check(cuMemcpyDtoH(d, dc, sizeof d), "copy back"))
    return 1;
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      double sum = c[i * N + j];
      for (int k = 0; k < K; ++k)
        sum +=
            (double)af[i * K + k] * (bStoredKN ? bf[k * N + j] : bf[j * K + k]);
      error = fmaxf(error, (float)fabs(sum - d[i * N + j]));
    }
  printf("%s: max error %g %s\n", name, error, error <= 1e-6 ? "ok" : "FAILED");
  cuMemFree(da);
  cuMemFree(db);
  cuMemFree(dc);
  return error > 1e-6;
}

int main(int argc, char **argv) {
  static char ptx[1 << 20];
  CUdevice device;
  CUcontext context;
  CUmodule module;
  FILE *file = argc > 1 ? fopen(argv[1], "r") : NULL;
  if (!file) {
    fprintf(stderr, "usage: upstream-mma FILE.ptx\n");
    return 2;
  }
  size_t size = fread(ptx, 1, sizeof ptx - 1, file);
  fclose(file);
  ptx[size] = 0;
  if (!check(cuInit(0), "cuInit") || !check(cuDeviceGet(&device, 0), "get") ||
      !check(cuDevicePrimaryCtxRetain(&context, device), "retain") ||
      !check(cuCtxSetCurrent(context), "set") ||
      !check(cuModuleLoadData(&module, ptx), "load"))
    return 1;
  int failed = runKernel(module, "fragments_f16", 0);
  failed |= runKernel(module, "ldmatrix_f16", 0);
  failed |= runKernel(module, "ldmatrix_trans_f16", 1);
  return failed;
}
