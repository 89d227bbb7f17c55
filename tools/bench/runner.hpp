// moegemm-bench: runs one case: the moegemm call (checked, then timed) and its cuBLASLt baselines (timed).
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "clock_sampler.hpp"
#include "cuda_check.hpp"
#include "kernel_timer.hpp"
#include "moegemm/config.hpp"
#include "suites.hpp"

namespace moegemm::bench {

struct BaselineSpec;

struct Timing {
  std::string name;
  std::string status = "-";  // "ok", "not built", "n/a", "error", "-" (not run)
  std::string detail;        // why not ok
  double median_us = 0, min_us = 0, max_us = 0;
  // The CPU time the timed calls spent before returning (validation, planning, descriptors, the launch): the median
  // over the same calls. What a caller that does not capture a CUDA graph pays on the host per call.
  double host_median_us = 0;
  // --kernel-time: the same calls' GPU time (first kernel's start to last kernel's end, CUPTI), or why there is none.
  std::string kernel_status = "-";  // "ok", "-" (not asked for), or why not
  double kernel_median_us = 0, kernel_min_us = 0;
  // The SM clock and power while the calls were timed (with --interleave, shared by all of a row's implementations).
  ClockSample clock;
  bool ok() const { return status == "ok"; }
};

struct Check {
  std::string status = "-";  // "PASS", "FAIL", "-" (not run)
  double diff = 0;           // calc_diff over the checked rows
  double threshold = 0;
  std::int64_t rows_checked = 0, rows_valid = 0;
  unsigned long long nan_checked = 0;  // NaN among the checked rows
  unsigned long long nan_valid = 0;    // NaN anywhere in the valid rows (unwritten outputs)
  unsigned long long nonzero_pad = 0;  // padding rows (index form) that are not zero
  unsigned long long touched = 0;      // rows outside every expert that lost their poison
  std::string detail;
};

struct CaseResult {
  Case c;
  std::string note;
  double flops = 0, bytes = 0;
  Timing moegemm;
  std::vector<Timing> baselines;
  Check check;
  Check baseline_check;  // the block-scaled or BF16 cuBLASLt output against the same reference (sanity of setup)
  std::optional<moegemm::KernelConfig> plan;  // --print-config: the planner's choice for the row
  std::string error;     // a failure of the tool itself (allocation, CUDA error) for this row
  bool failed() const { return check.status == "FAIL" || moegemm.status == "error" || !error.empty(); }
};

struct RunSettings {
  int iters = 30;
  int warmup = 3;
  bool check = true;
  double check_budget = 1e9;  // multiply-adds of the float64 reference per checked output
  std::optional<moegemm::KernelConfig> config;  // --config: forced on every moegemm call
  // --band: the rasterisation band forced on every moegemm call (KernelConfig::raster_band), on --config's
  // configuration or else on the planner's for each row; 0: none forced.
  int raster_band = 0;
  bool print_config = false;                    // --print-config
  // --interleave: moegemm and the baselines timed call by call in turn (each call after its own L2 flush), so that
  // all of a row's implementations run at the same clocks; by default each is timed in a block of its own.
  bool interleave = false;
  // --kernel-time: each timed call's kernel time from CUPTI records too (Timing::kernel_*).
  bool kernel_time = false;
  // --max-sms: moegemm's calls keep to this many SMs (moegemm::set_num_sms; 0: all of the device's). The baselines
  // use the whole device.
  int max_sms = 0;
  // --l2-persisting-mb: the L2 set-aside for persisting accesses (cudaLimitPersistingL2CacheSize), in MiB, set once
  // for the process before the first call; -1: left as the device has it. The kernels' evict_last copies may only
  // keep lines in that portion.
  int l2_persisting_mb = -1;
};

// The once-per-run verification of a baseline's layouts on a small problem (BaselineSpec::probe).
struct ProbeVerdict {
  bool ok = false;
  std::string detail;  // what ran and its calc_diff, or why the baseline is not used
};

class Runner {
 public:
  explicit Runner(const RunSettings& settings);
  ~Runner();
  Runner(const Runner&) = delete;
  Runner& operator=(const Runner&) = delete;

  CaseResult run(const Case& c);

  // After an error that poisons the CUDA context (an illegal address): nothing more can run in this process.
  bool context_lost() const { return !context_error_.empty(); }
  const std::string& context_error() const { return context_error_; }
  const std::map<std::string, ProbeVerdict>& probes() const { return probes_; }
  // "nvml", or why the rows carry no clock samples.
  std::string clock_sampling() const {
    return sampler_->available() ? std::string("nvml") : "unavailable: " + sampler_->unavailable();
  }
  // "cupti", "off" (not asked for), or why the rows carry no kernel time.
  std::string kernel_timing() const {
    if (!kernel_timer_) return "off";
    return kernel_timer_->available() ? std::string("cupti") : "unavailable: " + kernel_timer_->unavailable();
  }

 private:
  const ProbeVerdict& probe(const BaselineSpec& spec);
  ProbeVerdict run_probe(const BaselineSpec& spec);
  // Records a lost context when `failure` left the device unusable.
  void note_failure(const std::string& failure);

  RunSettings settings_;
  std::map<std::string, ProbeVerdict> probes_;
  std::string context_error_;
  cudaStream_t stream_ = nullptr;
  cublasLtHandle_t lt_ = nullptr;
  DeviceBuffer workspace_;
  DeviceBuffer flush_;
  std::unique_ptr<ClockSampler> sampler_;
  std::unique_ptr<KernelTimer> kernel_timer_;  // with --kernel-time
};

}  // namespace moegemm::bench
