//===- CUDADriver.cpp - the CUDA driver API, loaded at run time -----------===//
//
// Part of the attn project: an MLIR compiler for attention.
//
//===----------------------------------------------------------------------===//

#include "attn/Tools/CUDADriver.h"

#include "llvm/Support/DynamicLibrary.h"
#include "llvm/Support/FormatVariadic.h"

#include <vector>

using namespace mlir::attn;

// The few driver types and entry points used, as cuda.h declares them (the
// _v2 names are the ones cuda.h's macros select), so that building attn
// needs no CUDA headers.
using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = void *;
using CUmodule = void *;
using CUfunction = void *;
constexpr int kComputeCapabilityMajor = 75, kComputeCapabilityMinor = 76;
constexpr CUresult kNoBinaryForGPU = 209;
constexpr int kMaxDynamicSharedSizeBytes = 8;
/// Dynamic shared memory a launch takes without opting in.
constexpr unsigned kDefaultSharedBytes = 48 * 1024;

struct CUDADevice::Api {
  CUresult (*cuInit)(unsigned);
  CUresult (*cuDeviceGetCount)(int *);
  CUresult (*cuDeviceGet)(CUdevice *, int);
  CUresult (*cuDeviceGetName)(char *, int, CUdevice);
  CUresult (*cuDeviceGetAttribute)(int *, int, CUdevice);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
  CUresult (*cuDevicePrimaryCtxRelease)(CUdevice);
  CUresult (*cuCtxSetCurrent)(CUcontext);
  CUresult (*cuCtxSynchronize)();
  CUresult (*cuMemAlloc)(CUdeviceptr *, size_t);
  CUresult (*cuMemFree)(CUdeviceptr);
  CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void *, size_t);
  CUresult (*cuMemcpyDtoH)(void *, CUdeviceptr, size_t);
  CUresult (*cuModuleLoadData)(CUmodule *, const void *);
  CUresult (*cuModuleUnload)(CUmodule);
  CUresult (*cuModuleGetFunction)(CUfunction *, CUmodule, const char *);
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned,
                             unsigned, unsigned, unsigned, void *, void **,
                             void **);
  CUresult (*cuFuncSetAttribute)(CUfunction, int, int);
  CUresult (*cuGetErrorString)(CUresult, const char **);

  CUdevice device = 0;
  bool retained = false;
  CUmodule module = nullptr;
  std::vector<CUfunction> functions;
  std::string image; // cuModuleLoadData may keep reading it
  std::vector<CUdeviceptr> allocations;

  /// An error naming the call and the driver's description of `result`.
  llvm::Error check(CUresult result, llvm::StringRef call) const {
    if (result == 0)
      return llvm::Error::success();
    const char *text = nullptr;
    if (cuGetErrorString)
      cuGetErrorString(result, &text);
    return llvm::createStringError(
        llvm::formatv("{0} failed: CUDA error {1} ({2})", call, result,
                      text ? text : "no description"));
  }
};

llvm::Expected<std::unique_ptr<CUDADevice>> CUDADevice::open() {
  std::string error;
  llvm::sys::DynamicLibrary library =
      llvm::sys::DynamicLibrary::getPermanentLibrary("libcuda.so.1", &error);
  if (!library.isValid())
    return llvm::createStringError(
        "cannot load libcuda.so.1 (no NVIDIA driver on this machine): " +
        error);
  std::unique_ptr<CUDADevice> device(new CUDADevice());
  device->api = std::make_unique<Api>();
  Api &api = *device->api;
  std::string missing;
  auto resolve = [&](auto &fn, const char *symbol) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(
        library.getAddressOfSymbol(symbol));
    if (!fn)
      missing += std::string(missing.empty() ? "" : ", ") + symbol;
  };
  resolve(api.cuInit, "cuInit");
  resolve(api.cuDeviceGetCount, "cuDeviceGetCount");
  resolve(api.cuDeviceGet, "cuDeviceGet");
  resolve(api.cuDeviceGetName, "cuDeviceGetName");
  resolve(api.cuDeviceGetAttribute, "cuDeviceGetAttribute");
  resolve(api.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
  resolve(api.cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2");
  resolve(api.cuCtxSetCurrent, "cuCtxSetCurrent");
  resolve(api.cuCtxSynchronize, "cuCtxSynchronize");
  resolve(api.cuMemAlloc, "cuMemAlloc_v2");
  resolve(api.cuMemFree, "cuMemFree_v2");
  resolve(api.cuMemcpyHtoD, "cuMemcpyHtoD_v2");
  resolve(api.cuMemcpyDtoH, "cuMemcpyDtoH_v2");
  resolve(api.cuModuleLoadData, "cuModuleLoadData");
  resolve(api.cuModuleUnload, "cuModuleUnload");
  resolve(api.cuModuleGetFunction, "cuModuleGetFunction");
  resolve(api.cuLaunchKernel, "cuLaunchKernel");
  resolve(api.cuFuncSetAttribute, "cuFuncSetAttribute");
  resolve(api.cuGetErrorString, "cuGetErrorString");
  if (!missing.empty())
    return llvm::createStringError("libcuda.so.1 lacks " + missing);

  if (llvm::Error error = api.check(api.cuInit(0), "cuInit"))
    return llvm::createStringError(
        "the NVIDIA driver does not start (no usable GPU): " +
        llvm::toString(std::move(error)));
  int count = 0;
  if (llvm::Error error =
          api.check(api.cuDeviceGetCount(&count), "cuDeviceGetCount"))
    return std::move(error);
  if (count == 0)
    return llvm::createStringError("the NVIDIA driver reports no GPU");
  CUcontext context = nullptr;
  if (llvm::Error error =
          api.check(api.cuDeviceGet(&api.device, 0), "cuDeviceGet"))
    return std::move(error);
  if (llvm::Error error =
          api.check(api.cuDevicePrimaryCtxRetain(&context, api.device),
                    "cuDevicePrimaryCtxRetain"))
    return std::move(error);
  api.retained = true;
  if (llvm::Error error =
          api.check(api.cuCtxSetCurrent(context), "cuCtxSetCurrent"))
    return std::move(error);
  return device;
}

CUDADevice::~CUDADevice() {
  if (!api || !api->retained)
    return;
  for (CUdeviceptr pointer : api->allocations)
    api->cuMemFree(pointer);
  if (api->module)
    api->cuModuleUnload(api->module);
  api->cuDevicePrimaryCtxRelease(api->device);
}

std::string CUDADevice::name() const {
  char text[256] = {0};
  api->cuDeviceGetName(text, sizeof(text) - 1, api->device);
  return text;
}

std::string CUDADevice::chip() const {
  int major = 0, minor = 0;
  api->cuDeviceGetAttribute(&major, kComputeCapabilityMajor, api->device);
  api->cuDeviceGetAttribute(&minor, kComputeCapabilityMinor, api->device);
  return llvm::formatv("sm_{0}{1}", major, minor);
}

llvm::Expected<uint64_t> CUDADevice::allocate(size_t bytes) {
  CUdeviceptr pointer = 0;
  if (llvm::Error error = api->check(
          api->cuMemAlloc(&pointer, bytes ? bytes : 1), "cuMemAlloc"))
    return std::move(error);
  api->allocations.push_back(pointer);
  return pointer;
}

llvm::Error CUDADevice::copyToDevice(uint64_t device, const void *host,
                                     size_t bytes) {
  if (!bytes)
    return llvm::Error::success();
  return api->check(api->cuMemcpyHtoD(device, host, bytes), "cuMemcpyHtoD");
}

llvm::Error CUDADevice::copyToHost(void *host, uint64_t device, size_t bytes) {
  if (!bytes)
    return llvm::Error::success();
  return api->check(api->cuMemcpyDtoH(host, device, bytes), "cuMemcpyDtoH");
}

llvm::Error CUDADevice::load(llvm::StringRef cubin, llvm::StringRef ptx,
                             llvm::ArrayRef<std::string> kernels) {
  api->image = cubin.str();
  CUresult result = api->cuModuleLoadData(&api->module, api->image.data());
  // No machine code for this GPU (another architecture, or the CPU
  // emulator): the driver compiles the PTX instead.
  if (result == kNoBinaryForGPU && !ptx.empty()) {
    api->image = ptx.str();
    result = api->cuModuleLoadData(&api->module, api->image.c_str());
  }
  if (llvm::Error error = api->check(result, "cuModuleLoadData"))
    return error;
  for (const std::string &kernel : kernels) {
    CUfunction function = nullptr;
    if (llvm::Error error = api->check(
            api->cuModuleGetFunction(&function, api->module, kernel.c_str()),
            "cuModuleGetFunction"))
      return error;
    api->functions.push_back(function);
  }
  return llvm::Error::success();
}

llvm::Error CUDADevice::launch(size_t kernel, const unsigned grid[3],
                               unsigned threads, unsigned sharedBytes,
                               llvm::ArrayRef<void *> params) {
  CUfunction function = api->functions[kernel];
  if (sharedBytes > kDefaultSharedBytes)
    if (llvm::Error error = api->check(
            api->cuFuncSetAttribute(function, kMaxDynamicSharedSizeBytes,
                                    static_cast<int>(sharedBytes)),
            "cuFuncSetAttribute"))
      return error;
  std::vector<void *> args(params.begin(), params.end());
  return api->check(api->cuLaunchKernel(function, grid[0], grid[1], grid[2],
                                        threads, 1, 1, sharedBytes, nullptr,
                                        args.data(), nullptr),
                    "cuLaunchKernel");
}

llvm::Error CUDADevice::synchronize() {
  return api->check(api->cuCtxSynchronize(), "cuCtxSynchronize");
}
