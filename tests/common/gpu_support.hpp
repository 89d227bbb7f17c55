// Helpers for the device tests: skip with a reason where there is no GPU, owned device buffers, checked CUDA calls.
#pragma once

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "moegemm/config.hpp"
#include "moegemm/device.hpp"

namespace moegemm::testing {

// Empty when a usable SM90 device is present, otherwise why not.
std::string gpu_unavailable_reason();

// Throws std::runtime_error("<what>: <error name> <error string>") unless `status` is cudaSuccess; for helpers that
// return values (the MOEGEMM_CUDA_CHECK assertion works only in functions returning void).
void cuda_check(cudaError_t status, const char* what);

#define MOEGEMM_REQUIRE_GPU()                                                     \
  do {                                                                            \
    const std::string why_ = ::moegemm::testing::gpu_unavailable_reason();        \
    if (!why_.empty()) GTEST_SKIP() << "no CUDA device: " << why_;                \
  } while (0)

#define MOEGEMM_CUDA_CHECK(expr)                                                                       \
  do {                                                                                                 \
    const cudaError_t err_ = (expr);                                                                   \
    ASSERT_EQ(err_, cudaSuccess) << #expr << ": " << cudaGetErrorName(err_) << " " << cudaGetErrorString(err_); \
  } while (0)

// A device allocation with a guard zone after it (filled with a pattern), so tests can prove no write landed
// past the end of an output.
class DeviceBuffer {
 public:
  static constexpr std::size_t kGuardBytes = 4096;
  static constexpr unsigned char kGuardByte = 0xA5;

  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept { *this = std::move(o); }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;

  void* get() const { return ptr_; }
  template <typename T>
  T* as() const { return static_cast<T*>(ptr_); }
  std::size_t bytes() const { return bytes_; }

  void upload(const void* host, std::size_t bytes);
  void download(void* host, std::size_t bytes) const;
  template <typename T>
  void upload(const std::vector<T>& v) { upload(v.data(), v.size() * sizeof(T)); }
  template <typename T>
  std::vector<T> download_as(std::size_t count) const {
    std::vector<T> v(count);
    download(v.data(), count * sizeof(T));
    return v;
  }
  void fill_bytes(unsigned char value);  // the whole buffer (not the guard)
  bool guard_intact() const;             // the guard zone still holds kGuardByte everywhere

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

// `call(stream)` captured into a CUDA graph and instantiated; replay() launches the graph on the stream and waits
// for it. Warm the call up eagerly first (or precompile its kernels): a call that would compile inside the capture
// raises kCaptureError. If the call throws during the capture, the capture is ended (the stream usable again) and
// the error rethrown, saying so; CUDA errors throw too (cuda_check).
class CapturedCall {
 public:
  template <typename Call>
  CapturedCall(cudaStream_t stream, Call call) : stream_(stream) {
    cuda_check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
    try {
      call(stream);
    } catch (const std::exception& e) {
      cudaGraph_t partial = nullptr;
      cudaStreamEndCapture(stream, &partial);
      if (partial != nullptr) cudaGraphDestroy(partial);
      throw std::runtime_error(std::string("the call failed during the capture: ") + e.what());
    }
    cudaGraph_t graph = nullptr;
    cuda_check(cudaStreamEndCapture(stream, &graph), "cudaStreamEndCapture");
    const cudaError_t instantiated = cudaGraphInstantiate(&exec_, graph, 0);
    cudaGraphDestroy(graph);  // the instantiated graph does not need it
    cuda_check(instantiated, "cudaGraphInstantiate");
  }
  ~CapturedCall() {
    if (exec_ != nullptr) cudaGraphExecDestroy(exec_);
  }
  CapturedCall(const CapturedCall&) = delete;
  CapturedCall& operator=(const CapturedCall&) = delete;

  cudaGraphExec_t exec() const { return exec_; }
  void replay() {
    cuda_check(cudaGraphLaunch(exec_, stream_), "cudaGraphLaunch");
    cuda_check(cudaStreamSynchronize(stream_), "the replay");
  }

 private:
  cudaStream_t stream_;
  cudaGraphExec_t exec_ = nullptr;
};

// A forced tile configuration (GemmOptions::config): block_m x block_n x block_k with `stages` stages, the math
// warpgroups block_m implies, no cluster, no K split.
inline KernelConfig tile_config(int block_m, int block_n, int block_k, int stages) {
  KernelConfig c;
  c.block_m = block_m;
  c.block_n = block_n;
  c.block_k = block_k;
  c.stages = stages;
  c.math_warpgroups = math_warpgroups_for(block_m);
  return c;
}

}  // namespace moegemm::testing
