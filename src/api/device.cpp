#include "moegemm/device.hpp"

#include <atomic>
#include <map>
#include <mutex>

#include "moegemm/error.hpp"
#include "runtime/driver.hpp"

namespace moegemm {
namespace {

std::atomic<int> g_num_sms{0};
std::atomic<bool> g_pdl{false};

int attribute(const jit::Driver& d, CUdevice device, CUdevice_attribute which, const char* what) {
  int value = 0;
  jit::check(d.cuDeviceGetAttribute(&value, which, device), what);
  return value;
}

DeviceInfo query(const jit::Driver& d, CUdevice device, int ordinal) {
  DeviceInfo info;
  info.ordinal = ordinal;
  char name[256] = {};
  jit::check(d.cuDeviceGetName(name, sizeof(name) - 1, device), "cuDeviceGetName");
  info.name = name;
  info.major = attribute(d, device, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, "cuDeviceGetAttribute(major)");
  info.minor = attribute(d, device, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, "cuDeviceGetAttribute(minor)");
  info.sm_count = attribute(d, device, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, "cuDeviceGetAttribute(SM count)");
  info.smem_per_block_optin = attribute(d, device, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
                                        "cuDeviceGetAttribute(shared memory per block, opt-in)");
  info.l2_bytes = attribute(d, device, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, "cuDeviceGetAttribute(L2 size)");
  if (info.major == 9 && info.minor == 0) {
    info.available = true;
  } else {
    info.reason = "device " + std::to_string(ordinal) + " (" + info.name + ") has compute capability " +
                  std::to_string(info.major) + "." + std::to_string(info.minor) +
                  "; moegemm's kernels need 9.0 (sm_90a)";
  }
  return info;
}

// Attributes never change, so each device is asked once.
DeviceInfo cached_info(const jit::Driver& d, CUdevice device) {
  static std::mutex mutex;
  static std::map<CUdevice, DeviceInfo> known;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = known.find(device);
  if (it != known.end()) return it->second;
  int count = 0;
  jit::check(d.cuDeviceGetCount(&count), "cuDeviceGetCount");
  int ordinal = -1;
  for (int i = 0; i < count && ordinal < 0; ++i) {
    CUdevice candidate = 0;
    jit::check(d.cuDeviceGet(&candidate, i), "cuDeviceGet");
    if (candidate == device) ordinal = i;
  }
  DeviceInfo info = query(d, device, ordinal);
  known.emplace(device, info);
  return info;
}

}  // namespace

DeviceInfo device_info() noexcept {
  DeviceInfo info;
  try {
    std::string why;
    if (!jit::driver_available(&why)) {
      info.reason = why;
      return info;
    }
    const jit::Driver& d = jit::driver();
    CUcontext context = nullptr;
    CUdevice device = 0;
    jit::check(d.cuCtxGetCurrent(&context), "cuCtxGetCurrent");
    if (context) {
      jit::check(d.cuCtxGetDevice(&device), "cuCtxGetDevice");
    } else {
      jit::check(d.cuDeviceGet(&device, 0), "cuDeviceGet");
    }
    return cached_info(d, device);
  } catch (const std::exception& e) {
    info = DeviceInfo{};
    info.reason = e.what();
  } catch (...) {
    info = DeviceInfo{};
    info.reason = "unknown failure while querying the CUDA device";
  }
  return info;
}

void set_num_sms(int num_sms) {
  if (num_sms < 0) {
    throw Error(ErrorCode::kInvalidArgument, "num_sms: must be >= 0 (0 = all SMs), got " + std::to_string(num_sms));
  }
  DeviceInfo info = device_info();
  if (info.sm_count > 0 && num_sms > info.sm_count) {
    throw Error(ErrorCode::kInvalidArgument, "num_sms: must be at most the SM count of " + info.name + " (" +
                                                 std::to_string(info.sm_count) + "), got " + std::to_string(num_sms));
  }
  g_num_sms.store(num_sms, std::memory_order_relaxed);
}

int get_num_sms() noexcept { return g_num_sms.load(std::memory_order_relaxed); }

void set_pdl(bool enable) noexcept { g_pdl.store(enable, std::memory_order_relaxed); }

bool get_pdl() noexcept { return g_pdl.load(std::memory_order_relaxed); }

const char* version() noexcept { return MOEGEMM_VERSION; }

}  // namespace moegemm
