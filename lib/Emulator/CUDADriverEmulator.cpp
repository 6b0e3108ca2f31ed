//===- CUDADriverEmulator.cpp - libcuda.so.1 on the CPU -------------------===//
//
// Part of the attn project: an MLIR compiler for attention.
//
//===----------------------------------------------------------------------===//
//
// The CUDA driver API entry points attn's launchers, gpu-driver and
// `attn-run --target gpu` call, implemented on the CPU: one emulated device
// (reported as sm_90), device memory in host memory, modules loaded from PTX
// text and launches run by the PTX interpreter, synchronously. A launch that
// faults prints why on stderr and returns CUDA_ERROR_LAUNCH_FAILED, which
// then sticks to the context as on a GPU. A cubin cannot be emulated: its
// load fails with CUDA_ERROR_NO_BINARY_FOR_GPU, whose error string says to
// embed the PTX.
//
//===----------------------------------------------------------------------===//

#include "attn/Emulator/PTX.h"

#include <cuda.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>

using namespace attn::emulator;

namespace {

struct EmulatedModule {
  std::unique_ptr<Module> module;
};

uint64_t allocateDevice(size_t bytes);
void freeDevice(uint64_t address);

struct State {
  std::mutex mutex;
  bool initialized = false;
  DeviceMemory memory;
  /// Host ranges cuMemHostRegister mapped (at their own addresses, as under
  /// unified addressing): in `memory` too, but never freed here.
  std::set<uint64_t> hostRegistered;
  /// Set by a launch that faulted: every later call fails, as on a GPU.
  CUresult sticky = CUDA_SUCCESS;
};

State &state() {
  static State instance;
  return instance;
}

/// The one context, the primary context of device 0.
int primaryContext;
thread_local CUcontext current = nullptr;

constexpr CUdevice kDevice = 0;
constexpr size_t kSharedPerBlock = 48 * 1024;
/// The most shared memory a block may take, opted in: an H100's or H200's.
constexpr size_t kSharedPerBlockOptIn = 227 * 1024;

void report(const char *message) {
  std::fprintf(stderr, "attn CUDA emulator: %s\n", message);
}

/// Appends one line on a launch's profile to the file $ATTN_EMULATOR_PROFILE
/// names: its warp instructions by class, the issue slots per mma.sync, and
/// shared wavefronts and global sectors against the fewest possible (see
/// Profile).
void writeProfile(const char *path, const Kernel &kernel,
                  const Profile &profile) {
  FILE *file = std::fopen(path, "a");
  if (!file) {
    report((std::string("cannot open the profile file ") + path).c_str());
    return;
  }
  auto issued = [&](Opcode op) { return profile.issued[size_t(op)]; };
  uint64_t total = 0;
  for (uint64_t count : profile.issued)
    total += count;
  uint64_t mma = issued(Opcode::Mma), ldmatrix = issued(Opcode::Ldmatrix),
           ex2 = issued(Opcode::Ex2), shfl = issued(Opcode::Shfl),
           bar = issued(Opcode::BarSync) + issued(Opcode::BarRedOr),
           cpAsync = issued(Opcode::CpAsync);
  uint64_t other = total - mma - ldmatrix - ex2 - shfl - bar - cpAsync -
                   profile.globalAccesses - profile.sharedAccesses;
  std::fprintf(
      file,
      "profile kernel=%s blocks=%llu warp_instructions=%llu mma=%llu "
      "ldmatrix=%llu ex2=%llu shfl=%llu bar=%llu cp_async=%llu "
      "ld_st_global=%llu ld_st_shared=%llu other=%llu ",
      kernel.name.c_str(), (unsigned long long)profile.blocks,
      (unsigned long long)total, (unsigned long long)mma,
      (unsigned long long)ldmatrix, (unsigned long long)ex2,
      (unsigned long long)shfl, (unsigned long long)bar,
      (unsigned long long)cpAsync, (unsigned long long)profile.globalAccesses,
      (unsigned long long)profile.sharedAccesses, (unsigned long long)other);
  if (mma)
    std::fprintf(file, "issue_per_mma=%.2f ", double(total) / double(mma));
  std::fprintf(file, "shared_wavefronts=%llu/%llu global_sectors=%llu/%llu\n",
               (unsigned long long)profile.sharedWavefronts,
               (unsigned long long)profile.sharedIdealWavefronts,
               (unsigned long long)profile.globalSectors,
               (unsigned long long)profile.globalIdealSectors);
  std::fclose(file);
}

/// The common checks of every call after cuInit.
CUresult ready() {
  State &s = state();
  if (!s.initialized)
    return CUDA_ERROR_NOT_INITIALIZED;
  return s.sticky;
}

/// Device memory (256-byte aligned, as cudaMalloc's), 0 when out of it.
uint64_t allocateDevice(size_t bytes) {
  void *memory = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
  if (!memory)
    return 0;
  std::lock_guard<std::mutex> lock(state().mutex);
  state().memory.add(reinterpret_cast<uint64_t>(memory), bytes);
  return reinterpret_cast<uint64_t>(memory);
}

void freeDevice(uint64_t address) {
  std::lock_guard<std::mutex> lock(state().mutex);
  state().memory.remove(address);
  std::free(reinterpret_cast<void *>(address));
}

/// A module's .global variable, in device memory.
uint64_t allocateGlobal(const std::vector<uint8_t> &bytes, uint32_t align) {
  if (align > 256 || bytes.empty())
    return 0;
  uint64_t address = allocateDevice(bytes.size());
  if (address)
    std::memcpy(reinterpret_cast<void *>(address), bytes.data(), bytes.size());
  return address;
}

} // namespace

extern "C" {

CUresult CUDAAPI cuInit(unsigned int flags) {
  if (flags)
    return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(state().mutex);
  state().initialized = true;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGetErrorString(CUresult error, const char **text) {
  if (!text)
    return CUDA_ERROR_INVALID_VALUE;
  switch (error) {
  case CUDA_SUCCESS:
    *text = "no error";
    break;
  case CUDA_ERROR_INVALID_VALUE:
    *text = "invalid argument";
    break;
  case CUDA_ERROR_OUT_OF_MEMORY:
    *text = "out of memory";
    break;
  case CUDA_ERROR_NOT_INITIALIZED:
    *text = "initialization error";
    break;
  case CUDA_ERROR_NO_DEVICE:
    *text = "no CUDA-capable device is detected";
    break;
  case CUDA_ERROR_INVALID_DEVICE:
    *text = "invalid device ordinal";
    break;
  case CUDA_ERROR_NO_BINARY_FOR_GPU:
    *text = "no kernel image is available for execution on the device "
            "(the CUDA emulator runs PTX, not cubins: attn-compile "
            "--embed=ptx)";
    break;
  case CUDA_ERROR_INVALID_PTX:
    *text = "a PTX JIT compilation failed";
    break;
  case CUDA_ERROR_NOT_FOUND:
    *text = "named symbol not found";
    break;
  case CUDA_ERROR_LAUNCH_FAILED:
    *text = "unspecified launch failure";
    break;
  case CUDA_ERROR_INVALID_HANDLE:
    *text = "invalid resource handle";
    break;
  default:
    *text = "unknown error";
    return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGetErrorName(CUresult error, const char **name) {
  return cuGetErrorString(error, name);
}

CUresult CUDAAPI cuDeviceGetCount(int *count) {
  if (!count)
    return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = ready())
    return r;
  *count = 1;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGet(CUdevice *device, int ordinal) {
  if (!device)
    return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = ready())
    return r;
  if (ordinal != 0)
    return CUDA_ERROR_INVALID_DEVICE;
  *device = kDevice;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetName(char *name, int length, CUdevice device) {
  if (!name || length <= 0)
    return CUDA_ERROR_INVALID_VALUE;
  if (device != kDevice)
    return CUDA_ERROR_INVALID_DEVICE;
  std::snprintf(name, length, "attn CUDA emulator (on the CPU)");
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetAttribute(int *value, CUdevice_attribute attribute,
                                      CUdevice device) {
  if (!value)
    return CUDA_ERROR_INVALID_VALUE;
  if (device != kDevice)
    return CUDA_ERROR_INVALID_DEVICE;
  switch (attribute) {
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
    *value = 9;
    break;
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
    *value = 0;
    break;
  case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
    *value = 1024;
    break;
  case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK:
    *value = static_cast<int>(kSharedPerBlock);
    break;
  case CU_DEVICE_ATTRIBUTE_WARP_SIZE:
    *value = 32;
    break;
  case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
    *value = 1;
    break;
  default:
    *value = 0;
    break;
  }
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext *context, CUdevice device) {
  if (!context)
    return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = ready())
    return r;
  if (device != kDevice)
    return CUDA_ERROR_INVALID_DEVICE;
  *context = reinterpret_cast<CUcontext>(&primaryContext);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice device) {
  return device == kDevice ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

CUresult CUDAAPI cuCtxSetCurrent(CUcontext context) {
  if (context && context != reinterpret_cast<CUcontext>(&primaryContext))
    return CUDA_ERROR_INVALID_CONTEXT;
  current = context;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxGetCurrent(CUcontext *context) {
  if (!context)
    return CUDA_ERROR_INVALID_VALUE;
  if (!state().initialized)
    return CUDA_ERROR_NOT_INITIALIZED;
  *context = current;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxSynchronize(void) {
  if (CUresult r = ready())
    return r;
  return current ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

CUresult CUDAAPI cuMemAlloc(CUdeviceptr *pointer, size_t bytes) {
  if (!pointer || !bytes)
    return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = ready())
    return r;
  if (!current)
    return CUDA_ERROR_INVALID_CONTEXT;
  *pointer = allocateDevice(bytes);
  return *pointer ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

CUresult CUDAAPI cuMemFree(CUdeviceptr pointer) {
  if (CUresult r = ready())
    return r;
  if (!state().memory.contains(pointer) ||
      state().hostRegistered.count(pointer))
    return CUDA_ERROR_INVALID_VALUE;
  freeDevice(pointer);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemAllocAsync(CUdeviceptr *pointer, size_t bytes, CUstream) {
  return cuMemAlloc(pointer, bytes);
}

CUresult CUDAAPI cuMemFreeAsync(CUdeviceptr pointer, CUstream) {
  return cuMemFree(pointer);
}

// Host memory the device may access, at the same address (unified
// addressing): what lets a host framework's tensors (torch's CPU ones in a
// test of scripts/gpu-check.py) stand in for device tensors.
CUresult CUDAAPI cuMemHostRegister(void *pointer, size_t bytes, unsigned) {
  if (!pointer || !bytes)
    return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = ready())
    return r;
  auto address = reinterpret_cast<uint64_t>(pointer);
  std::lock_guard<std::mutex> lock(state().mutex);
  if (state().memory.contains(address))
    return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
  state().memory.add(address, bytes);
  state().hostRegistered.insert(address);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemHostUnregister(void *pointer) {
  if (CUresult r = ready())
    return r;
  auto address = reinterpret_cast<uint64_t>(pointer);
  std::lock_guard<std::mutex> lock(state().mutex);
  if (!state().hostRegistered.erase(address))
    return CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
  state().memory.remove(address);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemHostGetDevicePointer(CUdeviceptr *device, void *pointer,
                                           unsigned flags) {
  if (!device || !pointer || flags)
    return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = ready())
    return r;
  auto address = reinterpret_cast<uint64_t>(pointer);
  std::lock_guard<std::mutex> lock(state().mutex);
  if (!state().memory.covers(address, 1))
    return CUDA_ERROR_INVALID_VALUE;
  *device = address;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemcpyHtoD(CUdeviceptr destination, const void *source,
                              size_t bytes) {
  if (CUresult r = ready())
    return r;
  if (!source || !state().memory.covers(destination, bytes))
    return CUDA_ERROR_INVALID_VALUE;
  std::memcpy(reinterpret_cast<void *>(destination), source, bytes);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemcpyDtoH(void *destination, CUdeviceptr source,
                              size_t bytes) {
  if (CUresult r = ready())
    return r;
  if (!destination || !state().memory.covers(source, bytes))
    return CUDA_ERROR_INVALID_VALUE;
  std::memcpy(destination, reinterpret_cast<const void *>(source), bytes);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuModuleLoadData(CUmodule *module, const void *image) {
  if (!module || !image)
    return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = ready())
    return r;
  if (!current)
    return CUDA_ERROR_INVALID_CONTEXT;
  const char *text = static_cast<const char *>(image);
  // A cubin holds no code for this device, like one for another
  // architecture (callers may then load the PTX, as attn-run does).
  static const char kELF[] = "\x7f"
                             "ELF";
  if (std::memcmp(text, kELF, 4) == 0)
    return CUDA_ERROR_NO_BINARY_FOR_GPU;
  std::string error;
  std::unique_ptr<Module> parsed = parsePTX(text, allocateGlobal, error);
  if (!parsed) {
    report(("cannot load the PTX: " + error).c_str());
    return CUDA_ERROR_INVALID_PTX;
  }
  *module = reinterpret_cast<CUmodule>(new EmulatedModule{std::move(parsed)});
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuModuleUnload(CUmodule module) {
  if (!module)
    return CUDA_ERROR_INVALID_HANDLE;
  auto *emulated = reinterpret_cast<EmulatedModule *>(module);
  for (uint64_t address : emulated->module->globals)
    freeDevice(address);
  delete emulated;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuModuleGetFunction(CUfunction *function, CUmodule module,
                                     const char *name) {
  if (!function || !module || !name)
    return CUDA_ERROR_INVALID_VALUE;
  Module &parsed = *reinterpret_cast<EmulatedModule *>(module)->module;
  auto it = parsed.kernels.find(name);
  if (it == parsed.kernels.end())
    return CUDA_ERROR_NOT_FOUND;
  *function = reinterpret_cast<CUfunction>(&it->second);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuFuncSetAttribute(CUfunction function,
                                    CUfunction_attribute attribute, int value) {
  if (CUresult r = ready())
    return r;
  if (!function)
    return CUDA_ERROR_INVALID_HANDLE;
  Kernel &kernel = *reinterpret_cast<Kernel *>(function);
  // The only attribute attn's launchers set.
  if (attribute != CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES ||
      value < 0 || kernel.staticShared + size_t(value) > kSharedPerBlockOptIn)
    return CUDA_ERROR_INVALID_VALUE;
  kernel.maxDynamicShared = static_cast<uint32_t>(value);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuLaunchKernel(CUfunction function, unsigned gridX,
                                unsigned gridY, unsigned gridZ, unsigned blockX,
                                unsigned blockY, unsigned blockZ,
                                unsigned sharedBytes, CUstream, void **params,
                                void **extra) {
  if (CUresult r = ready())
    return r;
  if (!current)
    return CUDA_ERROR_INVALID_CONTEXT;
  if (!function)
    return CUDA_ERROR_INVALID_HANDLE;
  const Kernel &kernel = *reinterpret_cast<const Kernel *>(function);
  uint64_t threads = uint64_t(blockX) * blockY * blockZ;
  // A GPU's grid: at most 2^31 - 1 blocks in x, 65535 in y and z.
  if (extra || !gridX || !gridY || !gridZ || gridX > INT32_MAX ||
      gridY > 65535 || gridZ > 65535 || !threads || threads > 1024 ||
      (kernel.maxThreads && threads > kernel.maxThreads) ||
      (kernel.staticShared + sharedBytes > kSharedPerBlock &&
       sharedBytes > kernel.maxDynamicShared) ||
      (!params && !kernel.parameters.empty()))
    return CUDA_ERROR_INVALID_VALUE;
  std::vector<uint8_t> buffer(kernel.parameterBytes);
  for (size_t i = 0; i < kernel.parameters.size(); ++i) {
    if (!params[i])
      return CUDA_ERROR_INVALID_VALUE;
    std::memcpy(buffer.data() + kernel.parameters[i].offset, params[i],
                kernel.parameters[i].size);
  }
  LaunchShape shape;
  shape.grid[0] = gridX, shape.grid[1] = gridY, shape.grid[2] = gridZ;
  shape.block[0] = blockX, shape.block[1] = blockY, shape.block[2] = blockZ;
  shape.dynamicShared = sharedBytes;
  if (const char *limit = std::getenv("ATTN_EMULATOR_MAX_STEPS")) {
    char *end = nullptr;
    unsigned long long steps = std::strtoull(limit, &end, 10);
    if (!*limit || *end || !steps || *limit == '-') {
      report("ATTN_EMULATOR_MAX_STEPS is not a positive integer");
      return CUDA_ERROR_INVALID_VALUE;
    }
    shape.maxBlockSteps = steps;
  }
  const char *profilePath = std::getenv("ATTN_EMULATOR_PROFILE");
  Profile profile;
  std::string fault = runKernel(kernel, shape, buffer, state().memory,
                                profilePath ? &profile : nullptr);
  if (!fault.empty()) {
    report(("launch failed: " + fault).c_str());
    state().sticky = CUDA_ERROR_LAUNCH_FAILED;
    return CUDA_ERROR_LAUNCH_FAILED;
  }
  if (profilePath)
    writeProfile(profilePath, kernel, profile);
  return CUDA_SUCCESS;
}

} // extern "C"
