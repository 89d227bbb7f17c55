// moegemm-bench: the tool's own device kernels (input generation, FP8 casts, poison, float64 reference, checks).
// Declared with plain C++ types so that host files need no CUDA compiler; defined in *.cu files.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace moegemm::bench {

// ---- Inputs -----------------------------------------------------------------------------------------------------
// x[i] = scale * N(0,1) as BF16 (raw bits), from a counter-based hash of (seed, i): the same seed gives the same data.
void fill_normal_bf16(std::uint16_t* x, std::int64_t count, std::uint64_t seed, float scale, cudaStream_t stream);
// x[i] = scale * N(0,1) as FP32.
void fill_normal_f32(float* x, std::int64_t count, std::uint64_t seed, float scale, cudaStream_t stream);

// Per-row x 128-K cast (the "1x128" token cast): for each row r and K block kb, sf = max(amax, 1e-4) / 448 and
// q = e4m3(x / sf). x is [rows, cols] with row stride ld_x; q likewise with ld_q; the scale of (r, kb) goes to
// sf[r * sf_row_stride + kb * sf_kb_stride], so both K-major and MN-major scale tensors can be written.
void cast_rows_1x128(const std::uint16_t* x, std::int64_t rows, std::int64_t cols, std::int64_t ld_x, std::uint8_t* q,
                     std::int64_t ld_q, float* sf, std::int64_t sf_row_stride, std::int64_t sf_kb_stride,
                     cudaStream_t stream);
// Per 128x128 block cast (weights): the scale of block (rb, kb) goes to sf[rb * sf_ld + kb].
void cast_blocks_128x128(const std::uint16_t* x, std::int64_t rows, std::int64_t cols, std::int64_t ld_x,
                         std::uint8_t* q, std::int64_t ld_q, float* sf, std::int64_t sf_ld, cudaStream_t stream);

// dst[r * dst_rs + c * dst_cs] = src[r * src_rs + c * src_cs]: re-lays scale tensors for cuBLASLt.
void copy_strided_f32(float* dst, std::int64_t dst_rs, std::int64_t dst_cs, const float* src, std::int64_t src_rs,
                      std::int64_t src_cs, std::int64_t rows, std::int64_t cols, cudaStream_t stream);
void fill_f32(float* x, std::int64_t count, float value, cudaStream_t stream);

// ---- Poison -----------------------------------------------------------------------------------------------------
// Quiet-NaN patterns that no arithmetic produces (a kernel's NaN is canonical 0x7fc0 / 0x7fffffff), so "still holds
// the poison" can be tested bit for bit.
inline constexpr std::uint16_t kPoisonBf16 = 0x7fa5;
inline constexpr std::uint32_t kPoisonF32 = 0x7fa5a5a5u;
void poison(void* d, std::int64_t count, int element_bytes, cudaStream_t stream);

// ---- Float64 reference ------------------------------------------------------------------------------------------
enum class RefInput : int { kFp8 = 0, kBf16 = 1 };

// The operands one check reads; every reference row (RefJob) says where its data lies inside them.
struct RefOperands {
  RefInput input = RefInput::kFp8;
  const void* a = nullptr;
  const void* b = nullptr;
  const float* sfa = nullptr;  // FP8 only: per row of A x 128 K
  const float* sfb = nullptr;  // FP8 only: per gran_n rows of B x 128 K
  int sfb_gran_n = 128;        // 128: block scales (1D2D), 1: per-row scales (1D1D)
  const void* c = nullptr;     // optional addend
  bool c_is_f32 = true;        // else BF16
  const void* d = nullptr;     // the output under test
  bool d_is_f32 = false;       // else BF16
  std::int64_t n = 0;          // columns of every row
};

// One output row D[row, 0:n] = C[row, :] + sum_k A(k) * B(n, k), with (in elements):
//   A(k)    = a[a_off + k * a_sk]                 * sfa[sfa_off + (k / 128) * sfa_sk]
//   B(n, k) = b[b_off + n * b_sn + k * b_sk]      * sfb[sfb_off + (n / gran_n) * sfb_sn + (k / 128) * sfb_sk]
//   C(n)    = c[c_off + n]  (c_off < 0: none);    D(n) is read at d[d_off + n * d_sn].
struct RefJob {
  std::int64_t a_off, a_sk, sfa_off, sfa_sk;
  std::int64_t b_off, b_sn, b_sk, sfb_off, sfb_sn, sfb_sk;
  std::int64_t k, c_off, d_off, d_sn;
};

struct DiffSums {
  double xy = 0;               // sum of d * ref
  double xx_yy = 0;            // sum of d^2 + ref^2
  unsigned long long nan = 0;  // NaN outputs among the checked rows
};

// Computes ref[j * n + col] in float64 for every job j (jobs on the device), then accumulates DiffSums over the
// jobs' rows of d into *sums (device). ref must hold num_jobs * n doubles.
void reference_rows(const RefOperands& ops, const RefJob* jobs, std::int64_t num_jobs, double* ref,
                    cudaStream_t stream);
void diff_rows(const RefOperands& ops, const RefJob* jobs, std::int64_t num_jobs, const double* ref, DiffSums* sums,
               cudaStream_t stream);

// ---- Whole-output scan ------------------------------------------------------------------------------------------
enum class RowKind : std::int8_t { kValid = 0, kZero = 1, kUntouched = 2 };
struct ScanCounts {
  unsigned long long nan_valid = 0;    // NaN in a valid row: an element the GEMM did not write
  unsigned long long nonzero_pad = 0;  // a padding row that should be zeros is not
  unsigned long long touched = 0;      // a row that must not be written lost its poison
};
// d is [rows, n] row-major; kinds[r] says what row r must hold.
void scan_output(const void* d, bool d_is_f32, std::int64_t rows, std::int64_t n, const std::int8_t* kinds,
                 ScanCounts* counts, cudaStream_t stream);

}  // namespace moegemm::bench
