//===- GPULauncher.cpp - plain C launchers on the CUDA driver API ---------===//
//
// Part of the attn project: an MLIR compiler for attention.
//
// The launcher attn-compile writes next to a cubin: C99 on the CUDA driver
// API and DLPack, no MLIR, LLVM or CUDA runtime library. It carries the
// argument-checking runtime's source (lib/Runtime/KernelABI.c, made static)
// and the cubin's bytes (or the PTX text), so it compiles alone against
// cuda.h and links against libcuda.
//
//===----------------------------------------------------------------------===//

#include "attn/Target/CPUKernel.h"
#include "attn/Target/GPUKernel.h"

#include "llvm/Support/FormatVariadic.h"

#include <map>

using namespace mlir;
using namespace mlir::attn;

#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wc23-extensions"
static const char kABIHeader[] = {
#embed "KernelABI.h"
    , 0};
static const char kABISource[] = {
#embed "KernelABI.c"
    , 0};
#pragma clang diagnostic pop

/// `bytes` as a C initializer list, 16 per line.
static std::string byteArray(StringRef bytes) {
  std::string text;
  for (size_t i = 0; i < bytes.size(); ++i) {
    if (i % 16 == 0)
      text += "\n   ";
    text += llvm::formatv(" {0},", static_cast<unsigned char>(bytes[i]));
  }
  return text;
}

/// The C expression of launch buffer `buffer`'s data pointer and its number
/// of elements.
static std::pair<std::string, std::string> bufferExprs(GPUBuffer buffer) {
  if (buffer.scratch)
    return {llvm::formatv("(void *)(uintptr_t)scratch[{0}]", buffer.index),
            llvm::formatv("scratch_numel[{0}]", buffer.index)};
  return {llvm::formatv("memrefs[{0}].aligned", buffer.index),
          llvm::formatv("numel[{0}]", buffer.index)};
}

/// The statements that queue `launch` (function `index` of the loaded
/// ones), jumping to `done` when it fails.
static std::string emitLaunch(StringRef name, const GPULaunch &launch,
                              size_t index) {
  std::string data, numel;
  for (GPUBuffer buffer : launch.buffers) {
    auto [pointer, count] = bufferExprs(buffer);
    data += (data.empty() ? "" : ", ") + pointer;
    numel += (numel.empty() ? "" : ", ") + count;
  }
  std::string scalars, grid;
  if (launch.isAttention()) {
    scalars = "sizes[ATTN_SYM_B], sizes[ATTN_SYM_SQ], sizes[ATTN_SYM_SK], "
              "sizes[ATTN_SYM_HQ], sizes[ATTN_SYM_HKV]";
    grid = llvm::formatv(
        "(sizes[ATTN_SYM_SQ] + {0}) / {1}{2}, sizes[ATTN_SYM_HQ]{3}, "
        "sizes[ATTN_SYM_B]",
        launch.blockRows - 1, launch.blockRows,
        launch.kvSplits * launch.columnBlocks > 1
            ? llvm::formatv(" * {0}", launch.kvSplits * launch.columnBlocks)
                  .str()
            : "",
        launch.packedHeads > 1
            ? llvm::formatv(" / {0}", launch.packedHeads).str()
            : "");
  } else {
    // M: the rows of y, its last buffer.
    std::string rows = llvm::formatv(
        "{0} / {1}", bufferExprs(launch.buffers.back()).second, launch.columns);
    scalars =
        llvm::formatv("{0}, {1}, {2}", rows, launch.reduction, launch.columns);
    grid = llvm::formatv(
        "({0} + {1}) / {2}, {3}, 1", rows, launch.tileRows - 1, launch.tileRows,
        (launch.columns + launch.tileColumns - 1) / launch.tileColumns);
  }
  return llvm::formatv(R"(  {{
    /* {1} */
    void *data[] = {{{2}};
    int64_t numel_of[] = {{{3}}, scalars[] = {{{4}};
    status = {0}_launch(functions[{5}], {6}, {7}, {10}, data, numel_of, {8},
                        scalars, {9}, stream);
    if (status != ATTN_OK)
      goto done;
  }
)",
                       name, launch.function, data, numel, scalars, index, grid,
                       launch.threads, launch.buffers.size(),
                       launch.isAttention() ? 5 : 3, launch.dynamicSharedBytes);
}

std::string mlir::attn::emitCUDALauncher(const KernelSignature &signature,
                                         StringRef name,
                                         const GPUKernelBinary &binary,
                                         GPUImage image) {
  // The runtime's source, with its own include of the header replaced by
  // the header's text.
  std::string source = kABISource;
  StringRef include = "#include \"attn/Runtime/KernelABI.h\"\n";
  size_t at = source.find(include.str());
  if (at != std::string::npos)
    source.replace(at, include.size(), "");

  std::string params, tensors, descs;
  for (const KernelOperand &operand : signature.operands) {
    params += llvm::formatv("{0}{1}DLTensor *{2}", params.empty() ? "" : ", ",
                            operand.isOutput() ? "" : "const ", operand.name);
    tensors +=
        llvm::formatv("{0}{1}", tensors.empty() ? "" : ", ", operand.name);
    const attn_operand_desc &d = operand.desc;
    descs += llvm::formatv("    {{{0}, {1}, {2}, {{{3}, {4}, {5}, {6}}, {{{7}, "
                           "{8}, {9}, {10}}},\n",
                           d.ndim, d.dtype_code, d.dtype_bits, d.dims[0],
                           d.dims[1], d.dims[2], d.dims[3], d.blocks[0],
                           d.blocks[1], d.blocks[2], d.blocks[3]);
  }
  std::string staticSizes;
  for (int64_t s = 0; s < ATTN_NUM_SYMBOLS; ++s)
    staticSizes +=
        llvm::formatv("{0}{1}", s ? ", " : "", signature.staticSizes[s]);
  size_t n = signature.operands.size();

  // The functions the launches call, each once (with the dynamic shared
  // memory they take), and the launches.
  std::vector<std::string> functions;
  std::vector<int64_t> dynamicShared;
  std::string launches;
  size_t maxBuffers = 0;
  for (const GPULaunch &launch : binary.launches) {
    auto it = llvm::find(functions, launch.function);
    size_t index = it - functions.begin();
    if (it == functions.end()) {
      functions.push_back(launch.function);
      dynamicShared.push_back(launch.dynamicSharedBytes);
    }
    launches += emitLaunch(name, launch, index);
    maxBuffers = std::max(maxBuffers, launch.buffers.size());
  }
  std::string functionNames, sharedBytes;
  for (auto [function, bytes] : llvm::zip_equal(functions, dynamicShared)) {
    functionNames += llvm::formatv("\"{0}\", ", function);
    sharedBytes += llvm::formatv("{0}, ", bytes);
  }

  // Each operand's data aligned to the most any launch reads or writes of
  // it at once (the tensor cores' and the exact kernel behind them read the
  // same K and V), a power of 2.
  std::map<int64_t, int64_t> alignments;
  for (const GPULaunch &launch : binary.launches)
    for (auto [buffer, bytes] : llvm::zip(launch.buffers, launch.alignments))
      if (!buffer.scratch)
        alignments[buffer.index] =
            std::max(alignments[buffer.index], int64_t(bytes));
  std::string alignment;
  for (auto [index, bytes] : alignments)
    if (bytes > 1)
      alignment +=
          llvm::formatv("  if ((uintptr_t)memrefs[{0}].aligned % {1})\n"
                        "    return ATTN_ERR_ALIGNMENT;\n",
                        index, bytes);
  if (!alignment.empty())
    alignment =
        "  /* The kernels read and write these in chunks this large. */\n" +
        alignment;

  // Scratch buffers: their sizes, allocated on the stream.
  size_t numScratch = binary.scratch.size();
  std::string scratchSizes;
  for (auto [i, scratch] : llvm::enumerate(binary.scratch))
    scratchSizes += llvm::formatv(
        "  scratch_numel[{0}] = {1} * {2};\n  scratch_bytes[{0}] = {3};\n", i,
        scratch.rowsOf >= 0
            ? llvm::formatv("{0}_rows(tensors[{1}])", name, scratch.rowsOf)
                  .str()
            : llvm::formatv("sizes[{0}]", scratch.rowsSymbol).str(),
        scratch.width, scratch.elementBytes);

  return llvm::formatv(
      R"(/* Generated by attn-compile. Do not edit.
 *
 * The launcher of {0}: checks its DLTensor arguments, loads the embedded
 * {16} once per CUDA context and queues the kernel's launches. Build it
 * with
 *   cc -std=c11 -c {0}_launch.c -I<cuda>/include
 * and link the program with -lcuda -lpthread.
 */
#define ATTN_RT_API static __attribute__((unused))
{1}
{2}
#include "{0}.h"

#include <pthread.h>

/* The {16} of kernel `{0}`{17}. */
static const unsigned char {0}_image[] = {{{3}
};

static const attn_operand_desc {0}_descs[{4}] = {{
{5}};
static const int64_t {0}_static_sizes[ATTN_NUM_SYMBOLS] = {{{6}};

/* The functions the launches call, and the dynamic shared memory each
 * takes (beyond 48 KiB by opting in with cuFuncSetAttribute). */
#define {0}_NUM_FUNCTIONS {7}
static const char *const {0}_function_names[{0}_NUM_FUNCTIONS] = {{{8}};
static const int {0}_dynamic_shared[{0}_NUM_FUNCTIONS] = {{{18}};

/* The functions, per CUDA context the module was loaded in. */
#define {0}_MAX_CONTEXTS 16
static struct {{
  CUcontext context;
  CUfunction functions[{0}_NUM_FUNCTIONS];
} {0}_loaded[{0}_MAX_CONTEXTS];
static int {0}_num_loaded;
static pthread_mutex_t {0}_lock = PTHREAD_MUTEX_INITIALIZER;

/* The functions in the current context (made the device's primary context
 * when there is none), loading the module there the first time. */
static int {0}_functions(int device_id, CUfunction *functions) {{
  CUcontext context = 0;
  CUmodule module;
  CUdevice device;
  int i, f, status = ATTN_OK;
  if (cuInit(0) != CUDA_SUCCESS)
    return ATTN_ERR_NO_DEVICE;
  if (cuCtxGetCurrent(&context) != CUDA_SUCCESS)
    return ATTN_ERR_NO_DEVICE;
  if (!context) {{
    if (cuDeviceGet(&device, device_id) != CUDA_SUCCESS ||
        cuDevicePrimaryCtxRetain(&context, device) != CUDA_SUCCESS ||
        cuCtxSetCurrent(context) != CUDA_SUCCESS)
      return ATTN_ERR_NO_DEVICE;
  }
  pthread_mutex_lock(&{0}_lock);
  for (i = 0; i < {0}_num_loaded; ++i)
    if ({0}_loaded[i].context == context)
      break;
  if (i == {0}_num_loaded) {{
    if ({0}_num_loaded == {0}_MAX_CONTEXTS ||
        cuModuleLoadData(&module, {0}_image) != CUDA_SUCCESS)
      status = ATTN_ERR_MODULE;
    for (f = 0; status == ATTN_OK && f < {0}_NUM_FUNCTIONS; ++f)
      if (cuModuleGetFunction(&{0}_loaded[i].functions[f], module,
                              {0}_function_names[f]) != CUDA_SUCCESS ||
          ({0}_dynamic_shared[f] > 48 * 1024 &&
           cuFuncSetAttribute({0}_loaded[i].functions[f],
                              CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                              {0}_dynamic_shared[f]) != CUDA_SUCCESS)) {{
        cuModuleUnload(module);
        status = ATTN_ERR_MODULE;
      }
    if (status == ATTN_OK) {{
      {0}_loaded[i].context = context;
      ++{0}_num_loaded;
    }
  }
  if (status == ATTN_OK)
    for (f = 0; f < {0}_NUM_FUNCTIONS; ++f)
      functions[f] = {0}_loaded[i].functions[f];
  pthread_mutex_unlock(&{0}_lock);
  return status;
}

/* The rows of a tensor: its elements over its last dim. */
static __attribute__((unused)) int64_t {0}_rows(const void *tensor) {{
  const DLTensor *t = (const DLTensor *)tensor;
  int64_t rows = 1;
  int d;
  for (d = 0; d + 1 < t->ndim; ++d)
    rows *= t->shape[d];
  return rows;
}

/* Queues `function` over `grid` (an empty grid: nothing to do) with each
 * buffer as a 1-D memref (allocated, aligned, offset, size, stride), then
 * the scalars. */
static int {0}_launch(CUfunction function, int64_t grid_x, int64_t grid_y,
                      int64_t grid_z, unsigned threads, unsigned shared_bytes,
                      void *const *data, const int64_t *numel, int buffers,
                      const int64_t *scalars, int count, CUstream stream) {{
  static const int64_t zero = 0, one = 1;
  void *params[5 * {9} + 5];
  int i;
  if (!grid_x || !grid_y || !grid_z)
    return ATTN_OK;
  if (grid_x > 2147483647 || grid_y > 65535 || grid_z > 65535)
    return ATTN_ERR_LAUNCH;
  for (i = 0; i < buffers; ++i) {{
    params[5 * i] = (void *)&data[i];
    params[5 * i + 1] = (void *)&data[i];
    params[5 * i + 2] = (void *)&zero;
    params[5 * i + 3] = (void *)&numel[i];
    params[5 * i + 4] = (void *)&one;
  }
  for (i = 0; i < count; ++i)
    params[5 * buffers + i] = (void *)&scalars[i];
  if (cuLaunchKernel(function, (unsigned)grid_x, (unsigned)grid_y,
                     (unsigned)grid_z, threads, 1, 1, shared_bytes, stream,
                     params, 0) != CUDA_SUCCESS)
    return ATTN_ERR_LAUNCH;
  return ATTN_OK;
}

int {0}({10}, CUstream stream) {{
  const void *tensors[{4}] = {{{11}};
  attn_memref_desc memrefs[{4}];
  int64_t sizes[ATTN_NUM_SYMBOLS], numel[{4}];
  CUfunction functions[{0}_NUM_FUNCTIONS];
  /* Scratch buffers, allocated on the stream for this call. */
  CUdeviceptr scratch[{12} + 1];
  int64_t scratch_numel[{12} + 1], scratch_bytes[{12} + 1];
  int i, d, allocated = 0, status = attn_rt_bind_operands_on(
      kDLCUDA, tensors, {0}_descs, {4}, {0}_static_sizes, memrefs, sizes);
  if (status != ATTN_OK)
    return status;
{13}  /* Nothing to compute: CUDA refuses empty grids. */
  if (sizes[ATTN_SYM_B] == 0 || sizes[ATTN_SYM_HQ] == 0 ||
      sizes[ATTN_SYM_SQ] == 0 || sizes[ATTN_SYM_DV] == 0)
    return ATTN_OK;
  status = {0}_functions(((const DLTensor *)tensors[0])->device.device_id,
                         functions);
  if (status != ATTN_OK)
    return status;
  for (i = 0; i < {4}; ++i) {{
    const DLTensor *t = (const DLTensor *)tensors[i];
    numel[i] = 1;
    for (d = 0; d < t->ndim; ++d)
      numel[i] *= t->shape[d];
  }
{14}  for (; allocated < {12}; ++allocated)
    if (cuMemAllocAsync(&scratch[allocated],
                        (size_t)(scratch_numel[allocated] *
                                     scratch_bytes[allocated] +
                                 1),
                        stream) != CUDA_SUCCESS) {{
      status = ATTN_ERR_OUT_OF_MEMORY;
      goto done;
    }
{15}done:
  for (i = 0; i < allocated; ++i)
    cuMemFreeAsync(scratch[i], stream);
  return status;
}

const char *{0}_error_string(int code) {{
  return attn_rt_status_string(code);
}
)",
      name, kABIHeader, source,
      // The driver reads PTX up to its terminating NUL.
      image == GPUImage::PTX
          ? byteArray(StringRef(binary.ptx.c_str(), binary.ptx.size() + 1))
          : byteArray(binary.cubin),
      n, descs, staticSizes, functions.size(), functionNames, maxBuffers,
      params, tensors, numScratch, alignment, scratchSizes, launches,
      image == GPUImage::PTX ? "PTX" : "cubin",
      image == GPUImage::PTX ? " (the driver compiles it for its GPU)" : "",
      sharedBytes);
}
