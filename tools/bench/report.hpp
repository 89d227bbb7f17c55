// moegemm-bench: the printed table and the JSON record of a run.
#pragma once

#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "runner.hpp"

namespace moegemm::bench {

struct RunInfo {
  std::string device_name;
  int sm_count = 0;
  int cc_major = 0, cc_minor = 0;
  int clock_khz = 0, memory_clock_khz = 0;  // 0 when not readable
  long long l2_bytes = 0;
  int runtime_version = 0, driver_version = 0;
  long long cublaslt_version = 0;
  std::string clock_sampling;  // Runner::clock_sampling()
  std::string kernel_timing;   // Runner::kernel_timing()
  std::string commit;
  std::string kernel_sources;       // "built in", or the MOEGEMM_KERNEL_DIR folder the kernels were compiled from
  std::string kernel_sources_hash;  // their hash (part of every disk key)
  std::string command_line;
  unsigned long long seed = 0;
  RunSettings settings;
};

double tflops(double flops, const Timing& t);
double gbps(double bytes, const Timing& t);

// One line per row as it completes (for logs).
void print_progress(std::ostream& os, const CaseResult& r);
// The tables, one per suite, with a footer of failures, geometric-mean speedups and failed baseline probes.
void print_tables(std::ostream& os, const std::vector<CaseResult>& results,
                  const std::map<std::string, ProbeVerdict>& probes);
void write_json(std::ostream& os, const RunInfo& info, const std::vector<CaseResult>& results,
                const std::map<std::string, ProbeVerdict>& probes);

}  // namespace moegemm::bench
