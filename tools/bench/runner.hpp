// moegemm-bench: runs one case: the moegemm call (checked, then timed) and its cuBLASLt baselines (timed).
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <string>
#include <vector>

#include "cuda_check.hpp"
#include "suites.hpp"

namespace moegemm::bench {

struct Timing {
  std::string name;
  std::string status = "-";  // "ok", "not built", "n/a", "error", "-" (not run)
  std::string detail;        // why not ok; for cuBLASLt block scaling, which operand order ran
  double median_us = 0, min_us = 0, max_us = 0;
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
  std::string error;     // a failure of the tool itself (allocation, CUDA error) for this row
  bool failed() const { return check.status == "FAIL" || moegemm.status == "error" || !error.empty(); }
};

struct RunSettings {
  int iters = 30;
  int warmup = 3;
  bool check = true;
  double check_budget = 1e9;  // multiply-adds of the float64 reference per checked output
};

class Runner {
 public:
  explicit Runner(const RunSettings& settings);
  ~Runner();
  Runner(const Runner&) = delete;
  Runner& operator=(const Runner&) = delete;

  CaseResult run(const Case& c);

 private:
  RunSettings settings_;
  cudaStream_t stream_ = nullptr;
  cublasLtHandle_t lt_ = nullptr;
  DeviceBuffer workspace_;
  DeviceBuffer flush_;
  std::vector<cudaEvent_t> events_;
};

}  // namespace moegemm::bench
