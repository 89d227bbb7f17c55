// moegemm-bench: the GPU's SM clock and board power while a row is timed, read through NVML (the driver's library,
// opened at run time; without it the tool runs as before and records why there is no sample). Under sustained load
// the H200 lowers its clock (docs/results/2026-12-03-rtg-tall-and-power.md), and a few percent of clock move every
// figure: the samples say at which clock a row ran.
#pragma once

#include <atomic>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace moegemm::bench {

// What the sampler saw during one timed span: every millisecond, the SM clock (MHz) and board power (W).
struct ClockSample {
  int samples = 0;
  double sm_mhz_mean = 0, sm_mhz_min = 0, sm_mhz_max = 0;
  double power_w_mean = 0;
};

class ClockSampler {
 public:
  // Opens NVML for the CUDA device `device`; unavailable() then says why not, if it failed.
  explicit ClockSampler(int device);
  ~ClockSampler();
  ClockSampler(const ClockSampler&) = delete;
  ClockSampler& operator=(const ClockSampler&) = delete;

  bool available() const { return handle_ != nullptr; }
  const std::string& unavailable() const { return why_; }

  // Samples on a thread of its own from start() until stop(); stop() returns what it saw (no samples when
  // unavailable, or when the span was shorter than one period). start() first ends a span still running (one that a
  // failed timing left open), so every span starts empty.
  void start();
  ClockSample stop();

 private:
  void sample_loop();

  void* library_ = nullptr;
  void* handle_ = nullptr;  // nvmlDevice_t
  int (*get_clock_)(void*, int, unsigned*) = nullptr;
  int (*get_power_)(void*, unsigned*) = nullptr;
  int (*shutdown_)() = nullptr;
  std::string why_;
  std::thread thread_;
  std::atomic<bool> running_{false};
  std::mutex mutex_;
  std::vector<unsigned> mhz_, milliwatts_;
};

}  // namespace moegemm::bench
