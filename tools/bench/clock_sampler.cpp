#include "clock_sampler.hpp"

#include <cuda_runtime.h>
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <numeric>

namespace moegemm::bench {
namespace {

// NVML's C interface, the few entry points used here (nvml.h: nvmlReturn_t is an enum, NVML_SUCCESS 0;
// NVML_CLOCK_SM 1; nvmlDevice_t an opaque pointer).
constexpr int kNvmlSuccess = 0;
constexpr int kNvmlClockSm = 1;
constexpr auto kPeriod = std::chrono::milliseconds(1);

template <typename F>
F symbol(void* library, const char* name) {
  return reinterpret_cast<F>(dlsym(library, name));
}

}  // namespace

ClockSampler::ClockSampler(int device) {
  char bus_id[32] = {};
  if (cudaDeviceGetPCIBusId(bus_id, sizeof(bus_id), device) != cudaSuccess) {
    cudaGetLastError();
    why_ = "no PCI bus id for the CUDA device";
    return;
  }
  library_ = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (library_ == nullptr) {
    why_ = "libnvidia-ml.so.1 not found";
    return;
  }
  const auto init = symbol<int (*)()>(library_, "nvmlInit_v2");
  const auto by_bus = symbol<int (*)(const char*, void**)>(library_, "nvmlDeviceGetHandleByPciBusId_v2");
  get_clock_ = symbol<int (*)(void*, int, unsigned*)>(library_, "nvmlDeviceGetClockInfo");
  get_power_ = symbol<int (*)(void*, unsigned*)>(library_, "nvmlDeviceGetPowerUsage");
  shutdown_ = symbol<int (*)()>(library_, "nvmlShutdown");
  if (init == nullptr || by_bus == nullptr || get_clock_ == nullptr || get_power_ == nullptr || shutdown_ == nullptr) {
    why_ = "libnvidia-ml.so.1 lacks an entry point";
    return;
  }
  if (init() != kNvmlSuccess) {
    why_ = "nvmlInit_v2 failed";
    shutdown_ = nullptr;
    return;
  }
  void* handle = nullptr;
  unsigned mhz = 0;
  if (by_bus(bus_id, &handle) != kNvmlSuccess || get_clock_(handle, kNvmlClockSm, &mhz) != kNvmlSuccess) {
    why_ = std::string("NVML does not report the SM clock of ") + bus_id;
    return;
  }
  handle_ = handle;
}

ClockSampler::~ClockSampler() {
  if (running_) stop();
  if (shutdown_ != nullptr) shutdown_();
  if (library_ != nullptr) dlclose(library_);
}

void ClockSampler::start() {
  if (!available()) return;
  stop();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    mhz_.clear();
    milliwatts_.clear();
  }
  running_ = true;
  thread_ = std::thread([this] { sample_loop(); });
}

void ClockSampler::sample_loop() {
  while (running_) {
    unsigned mhz = 0, mw = 0;
    const bool clock_ok = get_clock_(handle_, kNvmlClockSm, &mhz) == kNvmlSuccess;
    const bool power_ok = get_power_(handle_, &mw) == kNvmlSuccess;
    if (clock_ok) {
      std::lock_guard<std::mutex> lock(mutex_);
      mhz_.push_back(mhz);
      if (power_ok) milliwatts_.push_back(mw);
    }
    std::this_thread::sleep_for(kPeriod);
  }
}

ClockSample ClockSampler::stop() {
  ClockSample s;
  if (!running_) return s;
  running_ = false;
  thread_.join();
  std::lock_guard<std::mutex> lock(mutex_);
  if (mhz_.empty()) return s;
  s.samples = static_cast<int>(mhz_.size());
  s.sm_mhz_mean = std::accumulate(mhz_.begin(), mhz_.end(), 0.0) / static_cast<double>(mhz_.size());
  s.sm_mhz_min = *std::min_element(mhz_.begin(), mhz_.end());
  s.sm_mhz_max = *std::max_element(mhz_.begin(), mhz_.end());
  if (!milliwatts_.empty()) {
    s.power_w_mean =
        std::accumulate(milliwatts_.begin(), milliwatts_.end(), 0.0) / 1e3 / static_cast<double>(milliwatts_.size());
  }
  return s;
}

}  // namespace moegemm::bench
