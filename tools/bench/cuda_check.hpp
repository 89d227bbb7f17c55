// moegemm-bench: CUDA/cuBLASLt status checks and an owning device buffer. Every CUDA call of the tool goes
// through CUDA_CHECK so that a failing call names itself instead of corrupting later numbers.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <stdexcept>
#include <string>

namespace moegemm::bench {

class CudaFailure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

inline void cuda_check(cudaError_t status, const char* what, const char* file, int line) {
  if (status != cudaSuccess) {
    throw CudaFailure(std::string(what) + " failed at " + file + ":" + std::to_string(line) + ": " +
                      cudaGetErrorString(status));
  }
}

#define CUDA_CHECK(call) ::moegemm::bench::cuda_check((call), #call, __FILE__, __LINE__)
// After a kernel launch: launch errors surface at once, execution errors at the next synchronisation.
#define CUDA_CHECK_LAUNCH() ::moegemm::bench::cuda_check(cudaGetLastError(), "kernel launch", __FILE__, __LINE__)

// Device memory owned by one object; moves, never copies.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t bytes) { allocate(bytes); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& other) noexcept : ptr_(other.ptr_), bytes_(other.bytes_) {
    other.ptr_ = nullptr;
    other.bytes_ = 0;
  }
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    if (this != &other) {
      release();
      ptr_ = other.ptr_;
      bytes_ = other.bytes_;
      other.ptr_ = nullptr;
      other.bytes_ = 0;
    }
    return *this;
  }
  ~DeviceBuffer() { release(); }

  void allocate(std::size_t bytes) {
    release();
    // Zero-byte tensors (an expert with no tokens) still get a distinct, valid address.
    CUDA_CHECK(cudaMalloc(&ptr_, bytes == 0 ? 16 : bytes));
    bytes_ = bytes;
  }
  template <typename T = void>
  T* get() const {
    return static_cast<T*>(ptr_);
  }
  std::size_t bytes() const { return bytes_; }

 private:
  void release() noexcept {
    if (ptr_ != nullptr) cudaFree(ptr_);
    ptr_ = nullptr;
    bytes_ = 0;
  }
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

}  // namespace moegemm::bench
