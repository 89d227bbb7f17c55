// moegemm-bench: input generation and FP8 casts on the GPU (the same recipe as the anchor's tests: amax over each
// scale group, clamped to 1e-4, scale = amax / 448, value = e4m3(x * 448 / amax)).
#include <cuda_bf16.h>
#include <cuda_fp8.h>

#include <algorithm>

#include "cuda_check.hpp"
#include "device_kernels.hpp"

namespace moegemm::bench {
namespace {

constexpr float kFp8Max = 448.0f;
constexpr float kAmaxFloor = 1e-4f;

__device__ __forceinline__ std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Box-Muller on two 24-bit uniforms of one hash: a standard normal sample per index.
__device__ __forceinline__ float normal_at(std::uint64_t seed, std::int64_t i) {
  const std::uint64_t h = splitmix64(seed ^ splitmix64(static_cast<std::uint64_t>(i)));
  const float u1 = (static_cast<float>(h >> 40) + 1.0f) * (1.0f / 16777217.0f);  // (0, 1]
  const float u2 = static_cast<float>((h >> 16) & 0xffffffull) * (1.0f / 16777216.0f);
  return sqrtf(-2.0f * logf(u1)) * cospif(2.0f * u2);
}

__device__ __forceinline__ float bf16_bits_to_float(std::uint16_t bits) {
  return __uint_as_float(static_cast<unsigned>(bits) << 16);
}

__device__ __forceinline__ std::uint8_t to_e4m3(float x) {
  return static_cast<std::uint8_t>(__nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3));
}

unsigned grid_for(std::int64_t work, int threads) {
  const std::int64_t blocks = (work + threads - 1) / threads;
  return static_cast<unsigned>(std::clamp<std::int64_t>(blocks, 1, 1 << 20));
}

__global__ void fill_normal_bf16_kernel(std::uint16_t* x, std::int64_t count, std::uint64_t seed, float scale) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    x[i] = __bfloat16_as_ushort(__float2bfloat16_rn(scale * normal_at(seed, i)));
  }
}

__global__ void fill_normal_f32_kernel(float* x, std::int64_t count, std::uint64_t seed, float scale) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    x[i] = scale * normal_at(seed, i);
  }
}

// One warp per (row, 128-wide K block); each lane owns 4 consecutive elements.
__global__ void cast_rows_kernel(const std::uint16_t* x, std::int64_t rows, std::int64_t cols, std::int64_t ld_x,
                                 std::uint8_t* q, std::int64_t ld_q, float* sf, std::int64_t sf_rs,
                                 std::int64_t sf_ks) {
  const std::int64_t kblocks = (cols + 127) / 128;
  const int lane = threadIdx.x % 32;
  const std::int64_t warps_total = static_cast<std::int64_t>(gridDim.x) * (blockDim.x / 32);
  for (std::int64_t w = blockIdx.x * static_cast<std::int64_t>(blockDim.x / 32) + threadIdx.x / 32; w < rows * kblocks;
       w += warps_total) {
    const std::int64_t r = w / kblocks;
    const std::int64_t kb = w % kblocks;
    float v[4];
    float amax = 0.0f;
    for (int j = 0; j < 4; ++j) {
      const std::int64_t col = kb * 128 + lane * 4 + j;
      v[j] = col < cols ? bf16_bits_to_float(x[r * ld_x + col]) : 0.0f;
      amax = fmaxf(amax, fabsf(v[j]));
    }
    for (int offset = 16; offset > 0; offset /= 2) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, offset));
    amax = fmaxf(amax, kAmaxFloor);
    for (int j = 0; j < 4; ++j) {
      const std::int64_t col = kb * 128 + lane * 4 + j;
      if (col < cols) q[r * ld_q + col] = to_e4m3(v[j] * (kFp8Max / amax));
    }
    if (lane == 0) sf[r * sf_rs + kb * sf_ks] = amax / kFp8Max;
  }
}

// One block of 256 threads per 128x128 tile: amax over the tile, then the cast.
__global__ void cast_blocks_kernel(const std::uint16_t* x, std::int64_t rows, std::int64_t cols, std::int64_t ld_x,
                                   std::uint8_t* q, std::int64_t ld_q, float* sf, std::int64_t sf_ld) {
  __shared__ float warp_amax[8];
  const std::int64_t kb = blockIdx.x;
  const std::int64_t rb = blockIdx.y;
  float amax = 0.0f;
  for (int idx = threadIdx.x; idx < 128 * 128; idx += blockDim.x) {
    const std::int64_t r = rb * 128 + idx / 128;
    const std::int64_t c = kb * 128 + idx % 128;
    if (r < rows && c < cols) amax = fmaxf(amax, fabsf(bf16_bits_to_float(x[r * ld_x + c])));
  }
  for (int offset = 16; offset > 0; offset /= 2) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, offset));
  if (threadIdx.x % 32 == 0) warp_amax[threadIdx.x / 32] = amax;
  __syncthreads();
  amax = kAmaxFloor;
  for (int w = 0; w < static_cast<int>(blockDim.x / 32); ++w) amax = fmaxf(amax, warp_amax[w]);
  for (int idx = threadIdx.x; idx < 128 * 128; idx += blockDim.x) {
    const std::int64_t r = rb * 128 + idx / 128;
    const std::int64_t c = kb * 128 + idx % 128;
    if (r < rows && c < cols) q[r * ld_q + c] = to_e4m3(bf16_bits_to_float(x[r * ld_x + c]) * (kFp8Max / amax));
  }
  if (threadIdx.x == 0) sf[rb * sf_ld + kb] = amax / kFp8Max;
}

__global__ void copy_strided_kernel(float* dst, std::int64_t dst_rs, std::int64_t dst_cs, const float* src,
                                    std::int64_t src_rs, std::int64_t src_cs, std::int64_t rows, std::int64_t cols) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < rows * cols;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t r = i / cols;
    const std::int64_t c = i % cols;
    dst[r * dst_rs + c * dst_cs] = src[r * src_rs + c * src_cs];
  }
}

__global__ void fill_f32_kernel(float* x, std::int64_t count, float value) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    x[i] = value;
  }
}

template <typename T>
__global__ void poison_kernel(T* d, std::int64_t count, T pattern) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    d[i] = pattern;
  }
}

}  // namespace

void fill_normal_bf16(std::uint16_t* x, std::int64_t count, std::uint64_t seed, float scale, cudaStream_t stream) {
  fill_normal_bf16_kernel<<<grid_for(count, 256), 256, 0, stream>>>(x, count, seed, scale);
  CUDA_CHECK_LAUNCH();
}

void fill_normal_f32(float* x, std::int64_t count, std::uint64_t seed, float scale, cudaStream_t stream) {
  fill_normal_f32_kernel<<<grid_for(count, 256), 256, 0, stream>>>(x, count, seed, scale);
  CUDA_CHECK_LAUNCH();
}

void cast_rows_1x128(const std::uint16_t* x, std::int64_t rows, std::int64_t cols, std::int64_t ld_x, std::uint8_t* q,
                     std::int64_t ld_q, float* sf, std::int64_t sf_row_stride, std::int64_t sf_kb_stride,
                     cudaStream_t stream) {
  if (rows == 0 || cols == 0) return;
  const std::int64_t warps = rows * ((cols + 127) / 128);
  cast_rows_kernel<<<grid_for(warps * 32, 256), 256, 0, stream>>>(x, rows, cols, ld_x, q, ld_q, sf, sf_row_stride,
                                                                  sf_kb_stride);
  CUDA_CHECK_LAUNCH();
}

void cast_blocks_128x128(const std::uint16_t* x, std::int64_t rows, std::int64_t cols, std::int64_t ld_x,
                         std::uint8_t* q, std::int64_t ld_q, float* sf, std::int64_t sf_ld, cudaStream_t stream) {
  if (rows == 0 || cols == 0) return;
  const dim3 grid(static_cast<unsigned>((cols + 127) / 128), static_cast<unsigned>((rows + 127) / 128));
  cast_blocks_kernel<<<grid, 256, 0, stream>>>(x, rows, cols, ld_x, q, ld_q, sf, sf_ld);
  CUDA_CHECK_LAUNCH();
}

void copy_strided_f32(float* dst, std::int64_t dst_rs, std::int64_t dst_cs, const float* src, std::int64_t src_rs,
                      std::int64_t src_cs, std::int64_t rows, std::int64_t cols, cudaStream_t stream) {
  copy_strided_kernel<<<grid_for(rows * cols, 256), 256, 0, stream>>>(dst, dst_rs, dst_cs, src, src_rs, src_cs, rows,
                                                                      cols);
  CUDA_CHECK_LAUNCH();
}

void fill_f32(float* x, std::int64_t count, float value, cudaStream_t stream) {
  fill_f32_kernel<<<grid_for(count, 256), 256, 0, stream>>>(x, count, value);
  CUDA_CHECK_LAUNCH();
}

void poison(void* d, std::int64_t count, int element_bytes, cudaStream_t stream) {
  if (element_bytes == 2) {
    poison_kernel<std::uint16_t>
        <<<grid_for(count, 256), 256, 0, stream>>>(static_cast<std::uint16_t*>(d), count, kPoisonBf16);
  } else {
    poison_kernel<std::uint32_t>
        <<<grid_for(count, 256), 256, 0, stream>>>(static_cast<std::uint32_t*>(d), count, kPoisonF32);
  }
  CUDA_CHECK_LAUNCH();
}

}  // namespace moegemm::bench
