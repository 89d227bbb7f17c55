#include "common/gpu_support.hpp"

#include <stdexcept>

namespace moegemm::testing {

std::string gpu_unavailable_reason() {
  const DeviceInfo info = device_info();
  if (!info.available) return info.reason.empty() ? "unknown reason" : info.reason;
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) return "the CUDA runtime sees no device";
  return "";
}

void cuda_check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    throw std::runtime_error(std::string(what) + ": " + cudaGetErrorName(status) + " " + cudaGetErrorString(status));
  }
}

DeviceBuffer::DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
  cuda_check(cudaMalloc(&ptr_, bytes + kGuardBytes), "cudaMalloc");
  cuda_check(cudaMemset(static_cast<char*>(ptr_) + bytes, kGuardByte, kGuardBytes), "cudaMemset(guard)");
}

DeviceBuffer::~DeviceBuffer() {
  if (ptr_) cudaFree(ptr_);
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    if (ptr_) cudaFree(ptr_);
    ptr_ = o.ptr_;
    bytes_ = o.bytes_;
    o.ptr_ = nullptr;
    o.bytes_ = 0;
  }
  return *this;
}

void DeviceBuffer::upload(const void* host, std::size_t bytes) {
  if (bytes > bytes_) throw std::runtime_error("DeviceBuffer::upload: too many bytes");
  cuda_check(cudaMemcpy(ptr_, host, bytes, cudaMemcpyHostToDevice), "cudaMemcpy(H2D)");
  // A pageable H2D cudaMemcpy may return before its DMA lands, and the legacy stream does not order work on
  // non-blocking streams: a graph replayed on one right after an upload raced with it (seen once on the H200).
  cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize after upload");
}

void DeviceBuffer::download(void* host, std::size_t bytes) const {
  if (bytes > bytes_) throw std::runtime_error("DeviceBuffer::download: too many bytes");
  cuda_check(cudaMemcpy(host, ptr_, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy(D2H)");
}

void DeviceBuffer::fill_bytes(unsigned char value) {
  cuda_check(cudaMemset(ptr_, value, bytes_), "cudaMemset");
  cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize after memset");  // complete, as upload (see there)
}

bool DeviceBuffer::guard_intact() const {
  std::vector<unsigned char> g(kGuardBytes);
  cuda_check(cudaMemcpy(g.data(), static_cast<char*>(ptr_) + bytes_, kGuardBytes, cudaMemcpyDeviceToHost),
        "cudaMemcpy(guard)");
  for (unsigned char b : g) {
    if (b != kGuardByte) return false;
  }
  return true;
}

}  // namespace moegemm::testing
