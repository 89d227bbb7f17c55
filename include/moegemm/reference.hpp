// moegemm: the CPU oracle. Exact FP8 e4m3 / BF16 codecs, the FP8 quantizers in the layouts the kernels consume,
// and reference GEMMs that accumulate in double. Everything runs on host memory; nothing here needs a GPU.
// It is what the test suite checks the kernels against, and it is public so that users can do the same.
// docs/reference.md describes it in more words.
//
// Conventions: matrices are row-major unless a MatrixRef says otherwise; shapes count elements; quantization
// groups are kScaleBlock = 128 elements along K. Bad arguments throw moegemm::Error(kInvalidArgument).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "moegemm/layouts.hpp"

namespace moegemm::reference {

// ---- Codecs -------------------------------------------------------------------------------------------------

// FP8 e4m3 "fn": 1 sign, 4 exponent (bias 7), 3 mantissa bits; no infinities; NaN = 0x7f / 0xff; largest finite
// 448 (0x7e); smallest normal 2^-6 (0x08); subnormals m * 2^-9 for m = 1..7.
inline constexpr float kE4m3Max = 448.0f;

// What float_to_e4m3 does with magnitudes beyond the largest finite value.
enum class Fp8Saturation : int {
  // Saturate: finite values that round past 448, and infinities, become +-448; NaN stays NaN. This is CUDA's
  // __NV_SATFINITE conversion (cvt.rn.satfinite), the one the quantizers use.
  kFinite = 0,
  // torch's plain tensor.to(torch.float8_e4m3fn): round to nearest even first, and whatever lands past 448 is
  // NaN. So |x| <= 464 (the tie between 448 and the non-existent 480) gives +-448, |x| > 464 gives NaN, and so
  // do infinities. Use it to reproduce torch bit for bit.
  kTorch = 1,
};

// float -> e4m3 bits, rounding to nearest, ties to even (also in the subnormal range). Keeps the sign of zero.
std::uint8_t float_to_e4m3(float x, Fp8Saturation saturation = Fp8Saturation::kFinite) noexcept;
// e4m3 bits -> float (exact: every e4m3 value is a float). 0x7f / 0xff give a quiet NaN.
float e4m3_to_float(std::uint8_t code) noexcept;

// float -> bfloat16 bits, rounding to nearest even; NaN stays a (quiet) NaN of the same sign; overflow gives inf.
std::uint16_t float_to_bf16(float x) noexcept;
// bfloat16 bits -> float (exact).
float bf16_to_float(std::uint16_t bits) noexcept;

// ---- Quantizers ---------------------------------------------------------------------------------------------
// Every 128-element group gets scale = max(amax, amax_floor) / 448 and values e4m3(x / scale) (saturating).
// amax is taken over the group's real elements only, so a partial last group (K = 2112, 576) is not diluted.

inline constexpr int kScaleBlock = 128;
inline constexpr float kDefaultAmaxFloor = 1e-4f;  // the anchor's clamp: all-zero groups get a finite scale

// Per row x 128 columns (recipe 1x128 along K): the layout of SFA (both recipes) and of SFB in the 1D1D recipe.
// values: [groups, rows, cols] e4m3, row-major.
// scales: logical [groups, rows, ceil(cols/128)], MN-major and TMA-aligned: element (g, r, kb) is at
//   g * scale_group_stride + kb * scale_col_stride + r, with scale_col_stride = tma_aligned_size(rows, 4) and
//   scale_group_stride = scale_col_stride * ceil(cols/128). Padding entries (r in [rows, scale_col_stride)) are 0.
struct PerTokenFp8 {
  std::int64_t groups = 1;
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  std::vector<std::uint8_t> values;
  std::vector<float> scales;
  std::int64_t scale_col_stride = 0;
  std::int64_t scale_group_stride = 0;

  std::int64_t scale_blocks() const noexcept { return (cols + kScaleBlock - 1) / kScaleBlock; }
  float scale(std::int64_t g, std::int64_t r, std::int64_t kb) const {
    return scales[static_cast<std::size_t>(g * scale_group_stride + kb * scale_col_stride + r)];
  }
};

// Per 128 x 128 block (the 1D2D recipe's SFB). values: [groups, rows, cols] row-major; scales: row-major
// [groups, ceil(rows/128), ceil(cols/128)] (K-major, groups packed).
struct PerBlockFp8 {
  std::int64_t groups = 1;
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  std::vector<std::uint8_t> values;
  std::vector<float> scales;

  std::int64_t row_blocks() const noexcept { return (rows + kScaleBlock - 1) / kScaleBlock; }
  std::int64_t col_blocks() const noexcept { return (cols + kScaleBlock - 1) / kScaleBlock; }
  float scale(std::int64_t g, std::int64_t rb, std::int64_t kb) const {
    return scales[static_cast<std::size_t>((g * row_blocks() + rb) * col_blocks() + kb)];
  }
};

// Per channel x 128 tokens, tokens first (the anchor's per_channel_cast_to_fp8, used for weight gradients):
// values [tokens, channels] row-major; scales [tokens/128, channels] row-major.
struct PerChannelFp8 {
  std::int64_t tokens = 0;
  std::int64_t channels = 0;
  std::vector<std::uint8_t> values;
  std::vector<float> scales;

  float scale(std::int64_t tb, std::int64_t c) const {
    return scales[static_cast<std::size_t>(tb * channels + c)];
  }
};

// The anchor's SM90 k-grouped FP8 operand: per expert g (with K_g tokens, a multiple of 128), a K-major
// [channels, K_g] block, the blocks concatenated in expert order (expert g starts at channels * sum_{h<g} K_h);
// scales logical [channels, sum K / 128], MN-major: element (c, kb) at c + kb * scale_col_stride with
// scale_col_stride = tma_aligned_size(channels, 4) (padding 0). Scale block kb belongs to the expert whose
// tokens it covers.
struct KGroupedFp8 {
  std::vector<std::int64_t> ks;
  std::int64_t channels = 0;
  std::vector<std::uint8_t> values;
  std::vector<float> scales;
  std::int64_t scale_col_stride = 0;

  float scale(std::int64_t c, std::int64_t kb) const {
    return scales[static_cast<std::size_t>(kb * scale_col_stride + c)];
  }
};

// x [rows, cols] -> per token (row) x 128 cols. cols need not be a multiple of 128.
PerTokenFp8 per_token_cast(const float* x, std::int64_t rows, std::int64_t cols,
                           float amax_floor = kDefaultAmaxFloor);
// x [groups, rows, cols] -> per group, per token x 128 cols (masked SFA, [G, cap, ceil(K/128)] per group).
PerTokenFp8 per_token_cast_grouped(const float* x, std::int64_t groups, std::int64_t rows, std::int64_t cols,
                                   float amax_floor = kDefaultAmaxFloor);

// x [rows, cols] -> per 128x128 block. Partial edge blocks use their real elements only.
PerBlockFp8 per_block_cast(const float* x, std::int64_t rows, std::int64_t cols,
                           float amax_floor = kDefaultAmaxFloor);
// x [groups, rows, cols] -> per group, per 128x128 block (grouped B [G, N, K]).
PerBlockFp8 per_block_cast_grouped(const float* x, std::int64_t groups, std::int64_t rows, std::int64_t cols,
                                   float amax_floor = kDefaultAmaxFloor);

// x [tokens, channels] (tokens first) -> per channel x 128 tokens. tokens must be a multiple of 128.
PerChannelFp8 per_channel_cast(const float* x, std::int64_t tokens, std::int64_t channels,
                               float amax_floor = kDefaultAmaxFloor);
// The K-major form the SM90 1D1D kernels consume: values [channels, tokens] row-major, scales MN-major
// [channels, tokens/128] with stride tma_aligned(channels). Values and scales are moved, not re-quantized.
PerTokenFp8 to_k_major(const PerChannelFp8& q);

// x [sum K, channels] (tokens first, experts' tokens consecutive) -> the anchor's k-grouped FP8 operand.
// Every ks[g] must be >= 0 and a multiple of 128; ks[g] = 0 is an expert with no tokens.
KGroupedFp8 k_grouped_per_channel_cast(const float* x, const std::vector<std::int64_t>& ks, std::int64_t channels,
                                       float amax_floor = kDefaultAmaxFloor);

// Back to real numbers, in the layout of the values: element * its scale, in double.
std::vector<double> dequantize(const PerTokenFp8& q);    // [groups, rows, cols]
std::vector<double> dequantize(const PerBlockFp8& q);    // [groups, rows, cols]
std::vector<double> dequantize(const PerChannelFp8& q);  // [tokens, channels]
std::vector<double> dequantize(const KGroupedFp8& q);    // concatenated K-major [channels, K_g] blocks

// ---- Reference GEMMs (double accumulation, multi-threaded) -----------------------------------------------------
// Every output element is 0 + a_0 b_0 + a_1 b_1 + ... in increasing k, in double (then + C), whatever the
// operand majors or the thread count (std::thread::hardware_concurrency()): results are reproducible bit for bit.

// A strided read-only matrix: element (i, j) is data[i * row_stride + j * col_stride]. With A [M,K] and B [N,K],
// K-major means col_stride == 1 and MN-major means row_stride == 1; so all of NT/NN/TN/TT are plain views.
struct MatrixRef {
  const double* data = nullptr;
  std::int64_t row_stride = 0;
  std::int64_t col_stride = 1;

  static MatrixRef row_major(const double* data, std::int64_t cols) { return {data, cols, 1}; }
  static MatrixRef col_major(const double* data, std::int64_t rows) { return {data, 1, rows}; }
  double at(std::int64_t i, std::int64_t j) const { return data[i * row_stride + j * col_stride]; }
};

// A stack of matrices: matrix g is `matrix` shifted by g * batch_stride elements.
struct BatchedMatrixRef {
  MatrixRef matrix;
  std::int64_t batch_stride = 0;

  MatrixRef operator[](std::int64_t g) const {
    return {matrix.data + g * batch_stride, matrix.row_stride, matrix.col_stride};
  }
};

// D [M,N] row-major = C + A[M,K] @ B[N,K]^T. c: row-major [M,N] or nullptr (zero). K = 0 gives D = C.
std::vector<double> gemm(std::int64_t m, std::int64_t n, std::int64_t k, MatrixRef a, MatrixRef b,
                         const double* c = nullptr);

// A grouped result: d is row-major, written[r] says whether row r was produced (1) or left alone (0, d row 0).
struct GroupedResult {
  std::vector<double> d;
  std::vector<std::uint8_t> written;
};

// M-grouped contiguous, row-to-group index: a [m_total, K], b[g] [N, K] for g < groups, index int32 [m_total].
// Row r uses expert index[r]; index[r] outside [0, groups) (-1 and any other out-of-range value) is a padding
// row: D row 0, still written (the anchor's test compares padding rows against 0).
GroupedResult m_grouped_contiguous_row_to_group(std::int64_t m_total, std::int64_t n, std::int64_t k, MatrixRef a,
                                                BatchedMatrixRef b, std::int64_t groups, const std::int32_t* index);

// M-grouped contiguous, group-ends index (running sums) int32 [groups]: expert g owns rows
// [start_g, end_g) with start_0 = 0, start_g = min(align(end_{g-1}, segment_alignment), m_total) and end_g = ends[g]
// clamped to [start_g, m_total] (so end_{g-1} is the previous expert's clamped end). Rows owned by no expert (the
// alignment gaps, the tail) are not written. segment_alignment >= 1 (1: packed segments, no gaps).
GroupedResult m_grouped_contiguous_group_ends(std::int64_t m_total, std::int64_t n, std::int64_t k, MatrixRef a,
                                              BatchedMatrixRef b, std::int64_t groups, const std::int32_t* ends,
                                              std::int64_t segment_alignment = kContiguousAlignment);

// M-grouped masked: a[g] [capacity, K], b[g] [N, K], counts int32 [groups] clamped to [0, capacity]. D is
// [groups, capacity, N] row-major; row r of expert g (written index g * capacity + r) is written iff r < count.
GroupedResult m_grouped_masked(std::int64_t groups, std::int64_t capacity, std::int64_t n, std::int64_t k,
                               BatchedMatrixRef a, BatchedMatrixRef b, const std::int32_t* counts);

// K-grouped, the anchor's SM90 FP8 "nt" form: D[g] = C[g] + A_g @ B_g^T, with a holding per expert a K-major
// [M, K_g] block (concatenated, expert g at M * sum_{h<g} K_h) and b likewise [N, K_g] blocks. c: [G, M, N] or
// nullptr (zero). Returns D [G, M, N]. K_g may be 0 (then D[g] = C[g]); any K_g >= 0 is accepted.
std::vector<double> k_grouped_gemm_nt(std::int64_t m, std::int64_t n, const std::vector<std::int64_t>& ks,
                                      const double* a, const double* b, const double* c = nullptr);

// K-grouped, the BF16 "tn" form: a [sum K, M] and b [sum K, N] row-major (MN-major operands), expert g owning
// token rows [sum_{h<g} K_h, sum_{h<=g} K_h). D[g] = C[g] + A_g^T @ B_g.
std::vector<double> k_grouped_gemm_tn(std::int64_t m, std::int64_t n, const std::vector<std::int64_t>& ks,
                                      const double* a, const double* b, const double* c = nullptr);

// FP8 references: dequantize, then gemm (NT). The 1D2D recipe: a per token, b per 128x128 block (one group each);
// the 1D1D recipe: a and b per row x 128 K (e.g. to_k_major of per_channel_cast). c as in gemm.
std::vector<double> fp8_gemm_1d2d(const PerTokenFp8& a, const PerBlockFp8& b, const double* c = nullptr);
std::vector<double> fp8_gemm_1d1d(const PerTokenFp8& a, const PerTokenFp8& b, const double* c = nullptr);

// ---- Metrics --------------------------------------------------------------------------------------------------

// The anchor's metric: 1 - 2 sum(x y) / sum(x^2 + y^2), in double; 0 when the denominator is 0. It is 0 for
// x == y, about 0.5 * |x - y|^2 / |y|^2 for close vectors, and 1 for x = 0 against any nonzero y.
double calc_diff(const double* x, const double* y, std::size_t n);

// |x - ref|_2 / |ref|_2; 0 when x == ref (also both zero), +inf when ref is zero and x is not.
double relative_l2_error(const double* x, const double* ref, std::size_t n);

}  // namespace moegemm::reference
