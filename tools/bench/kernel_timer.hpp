// moegemm-bench: the GPU time of each timed call's kernels, from CUPTI activity records (the CUDA toolkit's
// profiling library, opened at run time), beside the CUDA-event time. Event timing also counts the launch's way
// through the stream and the events' own timestamps, a few microseconds that matter on decode rows of 5-20 us. The
// anchor's table (../shared targets) was measured as kernel time by a profiler: decode rows compare with it like
// for like only in kernel time. Asked for with --kernel-time; without CUPTI the tool says why and runs as before.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace moegemm::bench {

// One kernel as the GPU ran it (CUPTI timestamps, ns).
struct KernelSpan {
  std::uint64_t start_ns = 0, end_ns = 0;
};

class KernelTimer {
 public:
  // Opens CUPTI and registers its record buffers; unavailable() then says why not, if it failed. One per process.
  KernelTimer();
  ~KernelTimer();
  KernelTimer(const KernelTimer&) = delete;
  KernelTimer& operator=(const KernelTimer&) = delete;

  bool available() const { return library_ != nullptr; }
  const std::string& unavailable() const { return why_; }

  // Records every kernel launched between start() and stop(); stop() (after the work has finished: synchronise
  // first) returns them in the order they started.
  void start();
  std::vector<KernelSpan> stop();

 private:
  void* library_ = nullptr;
  std::string why_;
};

}  // namespace moegemm::bench
