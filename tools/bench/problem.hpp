// moegemm-bench: one benchmark row made concrete on the device: its inputs (random BF16 cast to FP8 on the GPU),
// the moegemm call, the cuBLASLt baselines, and what the float64 check must compare.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cuda_check.hpp"
#include "device_kernels.hpp"
#include "lt_baseline.hpp"
#include "moegemm/config.hpp"
#include "suites.hpp"

namespace moegemm::bench {

struct BaselineSpec {
  std::string name;         // "cublasLt-pt", "cublasLt-blk", "cublasLt-bf16"
  std::string unavailable;  // why cuBLASLt cannot run it for this shape ("" when it can): reported as n/a
  LtProblem lt;
  // When the baseline computes exactly the checked product: where each reference row lies in its D. Else empty.
  std::vector<RefJob> check_jobs;
  // A small case whose baseline of the same name uses the same layouts: verified once per run, before the first
  // timed call (empty probe_key: no probe). Baselines with the same key share the verdict.
  std::string probe_key;
  Case probe;
};

struct Problem {
  std::vector<DeviceBuffer> buffers;       // everything below points into these
  std::function<void(cudaStream_t)> call;  // the moegemm call; throws moegemm::Error
  void* d = nullptr;
  bool d_f32 = false;
  std::int64_t d_rows = 0;  // D seen as [d_rows, n] row-major
  std::int64_t n = 0;
  std::vector<std::int8_t> row_kinds;  // RowKind of every D row
  RefOperands ref;
  std::vector<RefJob> jobs;    // one per valid output row
  std::vector<char> boundary;  // jobs[i] is a first/last row of an expert: checked first
  double threshold = 1e-3;
  double flops = 0;
  double bytes = 0;
  std::string note;  // "M_total=33024" and similar
  std::vector<BaselineSpec> baselines;
  const void* zero_c = nullptr;  // D-sized zeros: the C of the baselines that do not accumulate
  // In-place rows (Case::in_place): the pristine C (D-sized), copied into D before the checked call instead of
  // poisoning D, and at setup. The reference reads C from here.
  const void* in_place_c = nullptr;
};

// Allocates and fills everything on `stream` (and synchronises). Throws CudaFailure on CUDA errors. `config`
// (when given: forced_config's, its block_k the row family's) overrides the planner in every moegemm call of the
// problem.
std::unique_ptr<Problem> make_problem(const Case& c, const std::optional<moegemm::KernelConfig>& config,
                                      cudaStream_t stream);

// An in-place row's D (Problem::in_place_c set) takes C's pristine values, asynchronously on `stream`.
void load_in_place_c(const Problem& p, cudaStream_t stream);

}  // namespace moegemm::bench
