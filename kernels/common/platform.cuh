// Host/device portability for the code shared between the kernels (compiled by NVRTC) and the host (compiled
// by the C++ compiler, for planning and for CPU tests). No CUDA or standard headers: NVRTC sees only ours.
#pragma once

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define MOEGEMM_HD __host__ __device__ __forceinline__
#define MOEGEMM_DEVICE __device__ __forceinline__
#else
#define MOEGEMM_HD inline
#define MOEGEMM_DEVICE inline
#endif

namespace moegemm::kernels {

template <typename T>
MOEGEMM_HD constexpr T ceil_div(T a, T b) { return (a + b - 1) / b; }

template <typename T>
MOEGEMM_HD constexpr T align_up(T a, T b) { return ceil_div(a, b) * b; }

template <typename T>
MOEGEMM_HD constexpr T min_of(T a, T b) { return a < b ? a : b; }

template <typename T>
MOEGEMM_HD constexpr T max_of(T a, T b) { return a > b ? a : b; }

// A compile-time int passed as a value (to generic lambdas: the callee's loops then see a constant).
template <int kValue>
struct IntConstant {
  static constexpr int value = kValue;
};

}  // namespace moegemm::kernels
