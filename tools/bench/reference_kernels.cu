// moegemm-bench: the float64 reference and the output checks. Written to be obviously right, not fast: each output
// element is one warp's double-precision dot product over the dequantised inputs.
#include <cuda_fp8.h>

#include <algorithm>

#include "cuda_check.hpp"
#include "device_kernels.hpp"

namespace moegemm::bench {
namespace {

constexpr int kColsPerBlock = 8;  // one warp per output column

__device__ __forceinline__ double bf16_at(const void* p, std::int64_t i) {
  const unsigned bits = static_cast<const std::uint16_t*>(p)[i];
  return static_cast<double>(__uint_as_float(bits << 16));
}

__device__ __forceinline__ double e4m3_at(const void* p, std::int64_t i) {
  __nv_fp8_e4m3 v;
  v.__x = static_cast<const __nv_fp8_storage_t*>(p)[i];
  return static_cast<double>(static_cast<float>(v));
}

__device__ __forceinline__ double output_at(const void* p, bool is_f32, std::int64_t i) {
  return is_f32 ? static_cast<double>(static_cast<const float*>(p)[i]) : bf16_at(p, i);
}

template <RefInput kInput>
__global__ void reference_kernel(RefOperands ops, const RefJob* jobs, std::int64_t num_jobs, double* ref) {
  const int lane = threadIdx.x % 32;
  const std::int64_t col = static_cast<std::int64_t>(blockIdx.x) * kColsPerBlock + threadIdx.x / 32;
  if (col >= ops.n) return;
  for (std::int64_t j = blockIdx.y; j < num_jobs; j += gridDim.y) {
    const RefJob job = jobs[j];
    double acc = 0.0;
    for (std::int64_t k = lane; k < job.k; k += 32) {
      const std::int64_t ai = job.a_off + k * job.a_sk;
      const std::int64_t bi = job.b_off + col * job.b_sn + k * job.b_sk;
      if constexpr (kInput == RefInput::kFp8) {
        const double sa = ops.sfa[job.sfa_off + (k / 128) * job.sfa_sk];
        const double sb = ops.sfb[job.sfb_off + (col / ops.sfb_gran_n) * job.sfb_sn + (k / 128) * job.sfb_sk];
        acc += (e4m3_at(ops.a, ai) * sa) * (e4m3_at(ops.b, bi) * sb);
      } else {
        acc += bf16_at(ops.a, ai) * bf16_at(ops.b, bi);
      }
    }
    for (int offset = 16; offset > 0; offset /= 2) acc += __shfl_xor_sync(0xffffffffu, acc, offset);
    if (lane == 0) {
      if (job.c_off >= 0) acc += output_at(ops.c, ops.c_is_f32, job.c_off + col);
      ref[j * ops.n + col] = acc;
    }
  }
}

__global__ void diff_kernel(RefOperands ops, const RefJob* jobs, std::int64_t num_jobs, const double* ref,
                            DiffSums* sums) {
  __shared__ double s_xy[256];
  __shared__ double s_xx[256];
  double xy = 0.0;
  double xx_yy = 0.0;
  unsigned long long nan = 0;
  for (std::int64_t j = blockIdx.y; j < num_jobs; j += gridDim.y) {
    const RefJob job = jobs[j];
    for (std::int64_t col = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; col < ops.n;
         col += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
      const double x = output_at(ops.d, ops.d_is_f32, job.d_off + col * job.d_sn);
      const double y = ref[j * ops.n + col];
      nan += isnan(x) ? 1 : 0;
      xy += x * y;
      xx_yy += x * x + y * y;
    }
  }
  s_xy[threadIdx.x] = xy;
  s_xx[threadIdx.x] = xx_yy;
  __syncthreads();
  for (int half = blockDim.x / 2; half > 0; half /= 2) {
    if (static_cast<int>(threadIdx.x) < half) {
      s_xy[threadIdx.x] += s_xy[threadIdx.x + half];
      s_xx[threadIdx.x] += s_xx[threadIdx.x + half];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    atomicAdd(&sums->xy, s_xy[0]);
    atomicAdd(&sums->xx_yy, s_xx[0]);
  }
  if (nan != 0) atomicAdd(&sums->nan, nan);
}

__global__ void scan_kernel(const void* d, bool d_is_f32, std::int64_t rows, std::int64_t n, const std::int8_t* kinds,
                            ScanCounts* counts) {
  unsigned long long nan_valid = 0, nonzero_pad = 0, touched = 0;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < rows * n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const auto kind = static_cast<RowKind>(kinds[i / n]);
    std::uint32_t bits;
    bool poisoned;
    float value;
    if (d_is_f32) {
      bits = static_cast<const std::uint32_t*>(d)[i];
      poisoned = bits == kPoisonF32;
      value = __uint_as_float(bits);
    } else {
      bits = static_cast<const std::uint16_t*>(d)[i];
      poisoned = bits == kPoisonBf16;
      value = __uint_as_float(bits << 16);
    }
    if (kind == RowKind::kValid) nan_valid += isnan(value) ? 1 : 0;
    if (kind == RowKind::kZero) nonzero_pad += value == 0.0f ? 0 : 1;  // NaN compares unequal: counted
    if (kind == RowKind::kUntouched) touched += poisoned ? 0 : 1;
  }
  if (nan_valid != 0) atomicAdd(&counts->nan_valid, nan_valid);
  if (nonzero_pad != 0) atomicAdd(&counts->nonzero_pad, nonzero_pad);
  if (touched != 0) atomicAdd(&counts->touched, touched);
}

unsigned job_grid(std::int64_t num_jobs) { return static_cast<unsigned>(std::clamp<std::int64_t>(num_jobs, 1, 65535)); }

}  // namespace

void reference_rows(const RefOperands& ops, const RefJob* jobs, std::int64_t num_jobs, double* ref,
                    cudaStream_t stream) {
  if (num_jobs == 0 || ops.n == 0) return;
  const dim3 grid(static_cast<unsigned>((ops.n + kColsPerBlock - 1) / kColsPerBlock), job_grid(num_jobs));
  if (ops.input == RefInput::kFp8) {
    reference_kernel<RefInput::kFp8><<<grid, 32 * kColsPerBlock, 0, stream>>>(ops, jobs, num_jobs, ref);
  } else {
    reference_kernel<RefInput::kBf16><<<grid, 32 * kColsPerBlock, 0, stream>>>(ops, jobs, num_jobs, ref);
  }
  CUDA_CHECK_LAUNCH();
}

void diff_rows(const RefOperands& ops, const RefJob* jobs, std::int64_t num_jobs, const double* ref, DiffSums* sums,
               cudaStream_t stream) {
  if (num_jobs == 0 || ops.n == 0) return;
  const dim3 grid(static_cast<unsigned>(std::min<std::int64_t>((ops.n + 255) / 256, 64)), job_grid(num_jobs));
  diff_kernel<<<grid, 256, 0, stream>>>(ops, jobs, num_jobs, ref, sums);
  CUDA_CHECK_LAUNCH();
}

void scan_output(const void* d, bool d_is_f32, std::int64_t rows, std::int64_t n, const std::int8_t* kinds,
                 ScanCounts* counts, cudaStream_t stream) {
  if (rows == 0 || n == 0) return;
  const std::int64_t blocks = std::clamp<std::int64_t>((rows * n + 255) / 256, 1, 1 << 16);
  scan_kernel<<<static_cast<unsigned>(blocks), 256, 0, stream>>>(d, d_is_f32, rows, n, kinds, counts);
  CUDA_CHECK_LAUNCH();
}

}  // namespace moegemm::bench
