#include "runtime/driver.hpp"

#include <dlfcn.h>

#include <mutex>

#include "moegemm/error.hpp"

namespace moegemm::jit {
namespace {

struct DriverState {
  Driver driver;
  bool ok = false;
  std::string why_not;
};

// Resolves entry points by name and version through the driver's own cuGetProcAddress.
class EntryPoints {
 public:
  explicit EntryPoints(void* library) {
    get_v2_ = reinterpret_cast<PFN_cuGetProcAddress_v12000>(dlsym(library, "cuGetProcAddress_v2"));
    if (!get_v2_) get_v1_ = reinterpret_cast<PFN_cuGetProcAddress_v11030>(dlsym(library, "cuGetProcAddress"));
  }
  bool usable() const { return get_v2_ || get_v1_; }

  // Every symbol is asked for as of CUDA 12.0, the oldest driver moegemm supports: the PFN types of Driver are
  // the signatures of that version (cuCtxGetDevice, for one, changed in 13.0).
  template <typename Fn>
  bool get(Fn& fn, const char* symbol) const {
    constexpr int kCudaVersion = 12000;
    void* address = nullptr;
    CUresult result;
    if (get_v2_) {
      CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
      result = get_v2_(symbol, &address, kCudaVersion, CU_GET_PROC_ADDRESS_LEGACY_STREAM, &status);
      if (status != CU_GET_PROC_ADDRESS_SUCCESS) address = nullptr;
    } else {
      result = get_v1_(symbol, &address, kCudaVersion, CU_GET_PROC_ADDRESS_LEGACY_STREAM);
    }
    fn = result == CUDA_SUCCESS ? reinterpret_cast<Fn>(address) : nullptr;
    return fn != nullptr;
  }

 private:
  PFN_cuGetProcAddress_v12000 get_v2_ = nullptr;
  PFN_cuGetProcAddress_v11030 get_v1_ = nullptr;
};

template <typename Fn>
Fn exported(void* library, const char* symbol) {
  return reinterpret_cast<Fn>(dlsym(library, symbol));
}

// Names for the results of a failed cuInit, for drivers (the stub) whose cuGetErrorName does not answer.
const char* fallback_name(CUresult result) {
  switch (result) {
    case CUDA_ERROR_NO_DEVICE: return "CUDA_ERROR_NO_DEVICE";
    case CUDA_ERROR_STUB_LIBRARY: return "CUDA_ERROR_STUB_LIBRARY";
    case CUDA_ERROR_SYSTEM_DRIVER_MISMATCH: return "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH";
    case CUDA_ERROR_NOT_INITIALIZED: return "CUDA_ERROR_NOT_INITIALIZED";
    case CUDA_ERROR_OPERATING_SYSTEM: return "CUDA_ERROR_OPERATING_SYSTEM";
    default: return nullptr;
  }
}

std::string describe_with(const Driver& d, CUresult result) {
  const char* name = nullptr;
  const char* text = nullptr;
  if (d.cuGetErrorName && d.cuGetErrorName(result, &name) != CUDA_SUCCESS) name = nullptr;
  if (d.cuGetErrorString && d.cuGetErrorString(result, &text) != CUDA_SUCCESS) text = nullptr;
  if (!name) name = fallback_name(result);
  std::string out = name ? name : "CUDA error " + std::to_string(static_cast<int>(result));
  if (text) out += std::string(" (") + text + ")";
  return out;
}

// Opens and initialises the driver into state; on failure state.why_not says why and state.ok stays false.
void open_driver(DriverState& state) {
  void* library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);  // kept open for the life of the process
  if (!library) {
    state.why_not = "no CUDA driver (libcuda.so.1 not found)";
    return;
  }
  EntryPoints entry(library);
  if (!entry.usable()) {
    state.why_not = "the CUDA driver is too old: libcuda.so.1 has no cuGetProcAddress (CUDA 11.3 or newer needed)";
    return;
  }
  Driver& d = state.driver;
  // Error descriptions first: they work before cuInit and make the next messages readable. These three never
  // changed signature, so the exported symbols serve where cuGetProcAddress refuses (the toolkit's stub library).
  if (!entry.get(d.cuGetErrorName, "cuGetErrorName")) {
    d.cuGetErrorName = exported<PFN_cuGetErrorName_v6000>(library, "cuGetErrorName");
  }
  if (!entry.get(d.cuGetErrorString, "cuGetErrorString")) {
    d.cuGetErrorString = exported<PFN_cuGetErrorString_v6000>(library, "cuGetErrorString");
  }
  if (!entry.get(d.cuInit, "cuInit")) d.cuInit = exported<PFN_cuInit_v2000>(library, "cuInit");
  if (!d.cuInit) {
    state.why_not = "the CUDA driver does not export cuInit";
    return;
  }
  CUresult init = d.cuInit(0);
  if (init != CUDA_SUCCESS) {
    state.why_not = "cuInit failed: " + describe_with(d, init);
    return;
  }
  if (!entry.get(d.cuDriverGetVersion, "cuDriverGetVersion") || d.cuDriverGetVersion(&d.version) != CUDA_SUCCESS) {
    state.why_not = "cuDriverGetVersion failed";
    return;
  }
  if (d.version < 12000) {
    state.why_not = "the CUDA driver supports CUDA " + std::to_string(d.version / 1000) + "." +
                    std::to_string(d.version % 1000 / 10) + "; moegemm needs 12.0 or newer (TMA descriptors)";
    return;
  }
  const char* missing = nullptr;
  auto need = [&](auto& fn, const char* symbol) {
    if (!entry.get(fn, symbol) && !missing) missing = symbol;
  };
  need(d.cuDeviceGet, "cuDeviceGet");
  need(d.cuDeviceGetCount, "cuDeviceGetCount");
  need(d.cuDeviceGetAttribute, "cuDeviceGetAttribute");
  need(d.cuDeviceGetName, "cuDeviceGetName");
  need(d.cuCtxGetCurrent, "cuCtxGetCurrent");
  need(d.cuCtxGetDevice, "cuCtxGetDevice");
  need(d.cuCtxSetCurrent, "cuCtxSetCurrent");
  need(d.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
  need(d.cuModuleLoadData, "cuModuleLoadData");
  need(d.cuModuleUnload, "cuModuleUnload");
  need(d.cuModuleGetFunction, "cuModuleGetFunction");
  need(d.cuFuncSetAttribute, "cuFuncSetAttribute");
  need(d.cuFuncGetAttribute, "cuFuncGetAttribute");
  need(d.cuLaunchKernelEx, "cuLaunchKernelEx");
  need(d.cuOccupancyMaxActiveClusters, "cuOccupancyMaxActiveClusters");
  need(d.cuStreamIsCapturing, "cuStreamIsCapturing");
  need(d.cuThreadExchangeStreamCaptureMode, "cuThreadExchangeStreamCaptureMode");
  need(d.cuTensorMapEncodeTiled, "cuTensorMapEncodeTiled");
  need(d.cuMemcpyAsync, "cuMemcpyAsync");
  need(d.cuMemAllocAsync, "cuMemAllocAsync");
  need(d.cuMemFreeAsync, "cuMemFreeAsync");
  need(d.cuMemsetD8Async, "cuMemsetD8Async");
  need(d.cuMemsetD32Async, "cuMemsetD32Async");
  need(d.cuPointerGetAttribute, "cuPointerGetAttribute");
  if (!d.cuGetErrorName) missing = "cuGetErrorName";
  if (!d.cuGetErrorString) missing = "cuGetErrorString";
  if (missing) {
    state.why_not = std::string("the CUDA driver (") + std::to_string(d.version) + ") does not provide " + missing;
    return;
  }
  int count = 0;
  CUresult counted = d.cuDeviceGetCount(&count);
  if (counted != CUDA_SUCCESS) {
    state.why_not = "cuDeviceGetCount failed: " + describe_with(d, counted);
    return;
  }
  if (count == 0) {
    state.why_not = "no CUDA device (the driver reports 0 devices)";
    return;
  }
  state.ok = true;
}

const DriverState& state() {
  static const DriverState kState = [] {
    DriverState s;
    open_driver(s);
    return s;
  }();
  return kState;
}

}  // namespace

const Driver& driver() {
  const DriverState& s = state();
  if (!s.ok) throw Error(ErrorCode::kNoDevice, s.why_not);
  return s.driver;
}

bool driver_available(std::string* why) noexcept {
  try {
    const DriverState& s = state();
    if (!s.ok && why) *why = s.why_not;
    return s.ok;
  } catch (...) {  // only an allocation failure can get here
    if (why) *why = "the CUDA driver could not be opened";
    return false;
  }
}

std::string describe_result(CUresult result) {
  const DriverState& s = state();
  return describe_with(s.driver, result);
}

void check(CUresult result, const char* call) {
  if (result == CUDA_SUCCESS) return;
  throw Error(ErrorCode::kCudaError, std::string(call) + " failed: " + describe_result(result));
}

CUcontext ensure_context() {
  const Driver& d = driver();
  CUcontext context = nullptr;
  check(d.cuCtxGetCurrent(&context), "cuCtxGetCurrent");
  if (context) return context;
  CUdevice device = 0;
  check(d.cuDeviceGet(&device, 0), "cuDeviceGet");
  // Retained once per thread that needed it and never released: the primary context lives as long as the
  // process, like the CUDA runtime's.
  check(d.cuDevicePrimaryCtxRetain(&context, device), "cuDevicePrimaryCtxRetain");
  check(d.cuCtxSetCurrent(context), "cuCtxSetCurrent");
  return context;
}

RelaxedCaptureScope::RelaxedCaptureScope() : previous_(CU_STREAM_CAPTURE_MODE_RELAXED) {
  check(driver().cuThreadExchangeStreamCaptureMode(&previous_), "cuThreadExchangeStreamCaptureMode");
}

RelaxedCaptureScope::~RelaxedCaptureScope() {
  CUstreamCaptureMode restore = previous_;
  driver().cuThreadExchangeStreamCaptureMode(&restore);  // cannot fail after the first exchange succeeded
}

}  // namespace moegemm::jit
