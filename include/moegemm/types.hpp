// moegemm: framework-free tensor views. A view borrows memory; it never owns or copies it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>

namespace moegemm {

enum class DType : int {
  kFloat8E4M3 = 0,  // OCP FP8 e4m3 "fn" (no infinities, NaN = 0x7f/0xff, max 448)
  kBFloat16 = 1,
  kFloat32 = 2,
  kInt32 = 3,
};

std::size_t element_size(DType dtype) noexcept;
const char* to_string(DType dtype) noexcept;

// A CUDA stream (CUstream / cudaStream_t), passed as an opaque handle so that the public headers need no CUDA
// header. nullptr is the legacy default stream.
using Stream = void*;

inline constexpr int kMaxRank = 4;

// A strided view of device (or, for the reference, host) memory. Shapes and strides count elements.
struct TensorView {
  void* data = nullptr;
  DType dtype = DType::kFloat32;
  int rank = 0;
  std::int64_t shape[kMaxRank] = {0, 0, 0, 0};
  std::int64_t strides[kMaxRank] = {0, 0, 0, 0};

  // Row-major (contiguous) view of the given shape.
  static TensorView contiguous(void* data, DType dtype, std::initializer_list<std::int64_t> shape);
  // View with explicit strides (same length as shape).
  static TensorView strided(void* data, DType dtype, std::initializer_list<std::int64_t> shape,
                            std::initializer_list<std::int64_t> strides);

  std::int64_t numel() const noexcept;  // 0 if a size is 0, -1 if one is negative, INT64_MAX past int64
  std::int64_t size(int dim) const { return shape[dim < 0 ? dim + rank : dim]; }
  std::int64_t stride(int dim) const { return strides[dim < 0 ? dim + rank : dim]; }
  bool empty() const noexcept { return data == nullptr && rank == 0; }
  std::string describe() const;  // "bf16[4096, 7168] strides (7168, 1)"
};

}  // namespace moegemm
