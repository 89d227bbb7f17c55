// The CUDA driver, opened at run time (dlopen of libcuda.so.1, entry points from cuGetProcAddress), so the
// library loads on machines without a driver and reports "no CUDA device" as an Error instead of failing to load.
#pragma once

#include <cuda.h>
#include <cudaTypedefs.h>

#include <string>

namespace moegemm::jit {

// Entry points as of CUDA 12.0 (the PFN types name the version each signature dates from), with the legacy
// default stream semantics for stream functions, which the CUDA runtime uses by default.
struct Driver {
  int version = 0;  // cuDriverGetVersion, e.g. 13000
  PFN_cuInit_v2000 cuInit = nullptr;
  PFN_cuDriverGetVersion_v2020 cuDriverGetVersion = nullptr;
  PFN_cuDeviceGet_v2000 cuDeviceGet = nullptr;
  PFN_cuDeviceGetCount_v2000 cuDeviceGetCount = nullptr;
  PFN_cuDeviceGetAttribute_v2000 cuDeviceGetAttribute = nullptr;
  PFN_cuDeviceGetName_v2000 cuDeviceGetName = nullptr;
  PFN_cuCtxGetCurrent_v4000 cuCtxGetCurrent = nullptr;
  PFN_cuCtxGetDevice_v2000 cuCtxGetDevice = nullptr;
  PFN_cuCtxSetCurrent_v4000 cuCtxSetCurrent = nullptr;
  PFN_cuDevicePrimaryCtxRetain_v7000 cuDevicePrimaryCtxRetain = nullptr;
  PFN_cuModuleLoadData_v2000 cuModuleLoadData = nullptr;
  PFN_cuModuleUnload_v2000 cuModuleUnload = nullptr;
  PFN_cuModuleGetFunction_v2000 cuModuleGetFunction = nullptr;
  PFN_cuFuncSetAttribute_v9000 cuFuncSetAttribute = nullptr;
  PFN_cuFuncGetAttribute_v2020 cuFuncGetAttribute = nullptr;
  PFN_cuLaunchKernelEx_v11060 cuLaunchKernelEx = nullptr;
  PFN_cuOccupancyMaxActiveClusters_v11070 cuOccupancyMaxActiveClusters = nullptr;
  PFN_cuStreamIsCapturing_v10000 cuStreamIsCapturing = nullptr;
  PFN_cuThreadExchangeStreamCaptureMode_v10010 cuThreadExchangeStreamCaptureMode = nullptr;
  PFN_cuTensorMapEncodeTiled_v12000 cuTensorMapEncodeTiled = nullptr;
  PFN_cuMemcpyAsync_v4000 cuMemcpyAsync = nullptr;
  PFN_cuMemAllocAsync_v11020 cuMemAllocAsync = nullptr;  // stream-ordered scratch (k-grouped descriptor tables)
  PFN_cuMemFreeAsync_v11020 cuMemFreeAsync = nullptr;
  PFN_cuMemsetD8Async_v3020 cuMemsetD8Async = nullptr;
  PFN_cuMemsetD32Async_v3020 cuMemsetD32Async = nullptr;
  PFN_cuGetErrorName_v6000 cuGetErrorName = nullptr;
  PFN_cuGetErrorString_v6000 cuGetErrorString = nullptr;
  PFN_cuPointerGetAttribute_v4000 cuPointerGetAttribute = nullptr;
};

// The process's driver, initialised (cuInit) on first use. Throws Error(kNoDevice, why) where there is none.
const Driver& driver();

// Whether driver() succeeds; never throws. *why (if given) receives the reason when it does not.
bool driver_available(std::string* why = nullptr) noexcept;

// "CUDA_ERROR_INVALID_VALUE (invalid argument)" for a result code.
std::string describe_result(CUresult result);

// Throws Error(kCudaError, "<call> failed: <error name> (<error string>)") unless result is CUDA_SUCCESS.
void check(CUresult result, const char* call);

// The calling thread's context; when none is current, retains the primary context of device 0 and makes it
// current (what the CUDA runtime does on its first call), so modules and launches have a context.
CUcontext ensure_context();

// Within its scope the calling thread may make "potentially unsafe" calls (module loads, attribute changes)
// while a stream is being captured in global or thread-local mode; those do not touch the captured stream.
class RelaxedCaptureScope {
 public:
  RelaxedCaptureScope();
  ~RelaxedCaptureScope();
  RelaxedCaptureScope(const RelaxedCaptureScope&) = delete;
  RelaxedCaptureScope& operator=(const RelaxedCaptureScope&) = delete;

 private:
  CUstreamCaptureMode previous_;
};

}  // namespace moegemm::jit
