// Device tests of the FP8 1D2D GEMMs (dense, contiguous, masked) against the CPU oracle. Skipped, with the
// reason, where no SM90 device is present; run fully on the H200.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "common/gpu_support.hpp"
#include "cpu/test_jit_support.hpp"
#include "moegemm/moegemm.hpp"
#include "moegemm/reference.hpp"
#include "runtime/kernel_cache.hpp"

namespace moegemm {
namespace {

using testing::CapturedCall;
using testing::DeviceBuffer;
namespace ref = reference;

constexpr std::uint16_t kPoison = 0xFFFF;  // a bf16 NaN: any element left unwritten stays NaN

std::vector<float> random_matrix(std::size_t count, std::mt19937& rng, float scale = 1.0f) {
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(count);
  for (auto& x : v) x = dist(rng);
  return v;
}

// Quantised A ([groups, rows, K] per token) and B ([G, N, K] per block) on the host and the device.
struct Fp8Operands {
  ref::PerTokenFp8 a;
  ref::PerBlockFp8 b;
  DeviceBuffer a_values, a_scales, b_values, b_scales;

  Fp8Operands(std::int64_t a_groups, std::int64_t rows, std::int64_t n, std::int64_t k, std::int64_t b_groups,
              std::mt19937& rng) {
    const auto xa = random_matrix(a_groups * rows * k, rng);
    const auto xb = random_matrix(b_groups * n * k, rng, 0.5f);
    a = a_groups == 1 ? ref::per_token_cast(xa.data(), rows, k)
                      : ref::per_token_cast_grouped(xa.data(), a_groups, rows, k);
    b = b_groups == 1 ? ref::per_block_cast(xb.data(), n, k) : ref::per_block_cast_grouped(xb.data(), b_groups, n, k);
    a_values = DeviceBuffer(a.values.size());
    a_values.upload(a.values);
    a_scales = DeviceBuffer(a.scales.size() * sizeof(float));
    a_scales.upload(a.scales);
    b_values = DeviceBuffer(b.values.size());
    b_values.upload(b.values);
    b_scales = DeviceBuffer(b.scales.size() * sizeof(float));
    b_scales.upload(b.scales);
  }

  Fp8Operand a_operand_2d() const {
    Fp8Operand op;
    op.data = TensorView::contiguous(a_values.get(), DType::kFloat8E4M3, {a.rows, a.cols});
    op.scales =
        TensorView::strided(a_scales.get(), DType::kFloat32, {a.rows, a.scale_blocks()}, {1, a.scale_col_stride});
    return op;
  }
  Fp8Operand a_operand_3d() const {
    Fp8Operand op;
    op.data = TensorView::contiguous(a_values.get(), DType::kFloat8E4M3, {a.groups, a.rows, a.cols});
    op.scales = TensorView::strided(a_scales.get(), DType::kFloat32, {a.groups, a.rows, a.scale_blocks()},
                                    {a.scale_group_stride, 1, a.scale_col_stride});
    return op;
  }
  Fp8Operand b_operand() const {
    Fp8Operand op;
    if (b.groups == 1) {
      op.data = TensorView::contiguous(b_values.get(), DType::kFloat8E4M3, {b.rows, b.cols});
      op.scales = TensorView::contiguous(b_scales.get(), DType::kFloat32, {b.row_blocks(), b.col_blocks()});
    } else {
      op.data = TensorView::contiguous(b_values.get(), DType::kFloat8E4M3, {b.groups, b.rows, b.cols});
      op.scales = TensorView::contiguous(b_scales.get(), DType::kFloat32, {b.groups, b.row_blocks(), b.col_blocks()});
    }
    return op;
  }
};

std::vector<double> bf16_to_double(const std::vector<std::uint16_t>& v) {
  std::vector<double> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) out[i] = ref::bf16_to_float(v[i]);
  return out;
}

// Compares the rows the reference wrote and checks that every other row still holds the poison.
void expect_rows_match(const std::vector<std::uint16_t>& got, const ref::GroupedResult& want, std::int64_t n,
                       const char* what) {
  std::vector<double> got_valid, want_valid;
  std::int64_t unwritten_valid = 0, written_invalid = 0;
  const std::int64_t rows = static_cast<std::int64_t>(want.written.size());
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t c = 0; c < n; ++c) {
      const std::uint16_t bits = got[r * n + c];
      if (want.written[r]) {
        if (bits == kPoison) ++unwritten_valid;
        got_valid.push_back(ref::bf16_to_float(bits));
        want_valid.push_back(want.d[r * n + c]);
      } else if (bits != kPoison) {
        ++written_invalid;
      }
    }
  }
  EXPECT_EQ(unwritten_valid, 0) << what << ": valid elements left unwritten";
  EXPECT_EQ(written_invalid, 0) << what << ": elements written outside the groups' valid rows";
  if (!got_valid.empty()) {
    const double diff = ref::calc_diff(got_valid.data(), want_valid.data(), got_valid.size());
    EXPECT_LT(diff, 1e-3) << what;
    EXPECT_FALSE(std::isnan(diff)) << what;
  }
}

GemmOptions default_options() { return GemmOptions{}; }

// ---- dense -----------------------------------------------------------------------------------------------------

struct DenseShape {
  int m, n, k;
};

class Fp8DenseGpu : public ::testing::TestWithParam<DenseShape> {};

TEST_P(Fp8DenseGpu, MatchesOracleAndIsBitwiseDeterministic) {
  MOEGEMM_REQUIRE_GPU();
  const auto [m, n, k] = GetParam();
  std::mt19937 rng(1000 + m * 7 + n * 3 + k);
  Fp8Operands ops(1, m, n, k, 1, rng);
  DeviceBuffer d(static_cast<std::size_t>(m) * n * 2);
  d.fill_bytes(0xFF);
  const TensorView dv = TensorView::contiguous(d.get(), DType::kBFloat16, {m, n});
  fp8_gemm_nt(ops.a_operand_2d(), ops.b_operand(), dv, nullptr);
  MOEGEMM_CUDA_CHECK(cudaDeviceSynchronize());
  const auto got = d.download_as<std::uint16_t>(static_cast<std::size_t>(m) * n);
  ref::GroupedResult want{ref::fp8_gemm_1d2d(ops.a, ops.b), std::vector<std::uint8_t>(m, 1)};
  expect_rows_match(got, want, n, "dense");
  EXPECT_TRUE(d.guard_intact()) << "a write landed past the end of D";

  for (int rep = 0; rep < 3; ++rep) {
    d.fill_bytes(0xFF);
    fp8_gemm_nt(ops.a_operand_2d(), ops.b_operand(), dv, nullptr);
    MOEGEMM_CUDA_CHECK(cudaDeviceSynchronize());
    const auto again = d.download_as<std::uint16_t>(static_cast<std::size_t>(m) * n);
    ASSERT_EQ(0, std::memcmp(again.data(), got.data(), got.size() * 2)) << "results differ between calls";
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, Fp8DenseGpu,
                         ::testing::Values(DenseShape{1, 2112, 7168}, DenseShape{1, 576, 7168},
                                           DenseShape{128, 576, 2112}, DenseShape{129, 256, 576},
                                           DenseShape{300, 1024, 1536}, DenseShape{64, 4096, 512},
                                           DenseShape{1000, 512, 256}, DenseShape{17, 136, 144},
                                           DenseShape{2048, 1536, 640}),
                         [](const ::testing::TestParamInfo<DenseShape>& info) {
                           return "m" + std::to_string(info.param.m) + "_n" + std::to_string(info.param.n) + "_k" +
                                  std::to_string(info.param.k);
                         });

// A configuration override: tile, stages and cluster (the warpgroups follow from block_m).
KernelConfig tile_config(int block_m, int block_n, int stages, int cluster_m = 1, int cluster_n = 1) {
  KernelConfig cfg = testing::tile_config(block_m, block_n, 128, stages);
  cfg.cluster_m = cluster_m;
  cfg.cluster_n = cluster_n;
  return cfg;
}

std::string config_name(const KernelConfig& cfg) {
  return "bm " + std::to_string(cfg.block_m) + " bn " + std::to_string(cfg.block_n) + " cluster " +
         std::to_string(cfg.cluster_m) + "x" + std::to_string(cfg.cluster_n);
}

// D = A B^T of a dense problem with `cfg`, into D poisoned first; D's bits into `got`.
void run_dense_with(const Fp8Operands& ops, DeviceBuffer& d, const TensorView& dv, const KernelConfig& cfg,
                    std::vector<std::uint16_t>& got) {
  GemmOptions opt;
  opt.config = &cfg;
  d.fill_bytes(0xFF);
  fp8_gemm_nt(ops.a_operand_2d(), ops.b_operand(), dv, nullptr, opt);
  MOEGEMM_CUDA_CHECK(cudaDeviceSynchronize());
  got = d.download_as<std::uint16_t>(static_cast<std::size_t>(dv.shape[0]) * dv.shape[1]);
}

TEST(Fp8DenseGpu, EveryConfigurationGivesTheSameBits) {
  MOEGEMM_REQUIRE_GPU();
  const int m = 333, n = 768, k = 1024;
  std::mt19937 rng(77);
  Fp8Operands ops(1, m, n, k, 1, rng);
  DeviceBuffer d(static_cast<std::size_t>(m) * n * 2);
  const TensorView dv = TensorView::contiguous(d.get(), DType::kBFloat16, {m, n});
  ref::GroupedResult want{ref::fp8_gemm_1d2d(ops.a, ops.b), std::vector<std::uint8_t>(m, 1)};
  std::vector<KernelConfig> configs;
  for (int cm : {1, 2}) {
    for (int bm : {64, 128}) {
      for (int bn : {16, 32, 48, 64, 96, 128, 144, 160, 192}) configs.push_back(tile_config(bm, bn, 4, cm));
    }
  }
  // 256-row tiles (two waves per warpgroup; block_n <= 128, 3 stages fit): 333 rows are one full and one partial
  // tile. Then pairs of CTAs sharing A along N (1x2 clusters), on 256- and 128-row tiles.
  for (int bn : {16, 32, 48, 64, 96, 128}) configs.push_back(tile_config(256, bn, 3));
  for (int bn : {128, 96, 48}) configs.push_back(tile_config(256, bn, 3, 1, 2));
  for (int bn : {128, 192, 64, 32, 16}) configs.push_back(tile_config(128, bn, 4, 1, 2));
  std::vector<std::uint16_t> first;
  for (const KernelConfig& cfg : configs) {
    std::vector<std::uint16_t> got;
    run_dense_with(ops, d, dv, cfg, got);
    if (HasFatalFailure()) return;
    expect_rows_match(got, want, n, ("config sweep, " + config_name(cfg)).c_str());
    // Every configuration sums each 128-K block in the same order and promotes in the same order.
    if (first.empty()) first = got;
    EXPECT_EQ(0, std::memcmp(first.data(), got.data(), got.size() * 2)) << config_name(cfg);
  }
}

// 256-row tiles on a shape with partial tiles everywhere: rows (600 = 2 x 256 + 88), columns (392: a partial
// 128-column scale block and tile), K (2112: a partial 128-K block). Checked against the oracle, D's guard intact.
// With 1x2 clusters (A shared along N) at block_n 96 and 48 the last pair's second CTA lies wholly past N.
TEST(Fp8DenseGpu, TallTilesOnPartialBlocks) {
  MOEGEMM_REQUIRE_GPU();
  const int m = 600, n = 392, k = 2112;
  std::mt19937 rng(2561);
  Fp8Operands ops(1, m, n, k, 1, rng);
  DeviceBuffer d(static_cast<std::size_t>(m) * n * 2);
  const TensorView dv = TensorView::contiguous(d.get(), DType::kBFloat16, {m, n});
  ref::GroupedResult want{ref::fp8_gemm_1d2d(ops.a, ops.b), std::vector<std::uint8_t>(m, 1)};
  for (int cluster_n : {1, 2}) {
    for (int bn : {128, 96, 48}) {
      const KernelConfig cfg = tile_config(256, bn, 3, 1, cluster_n);
      std::vector<std::uint16_t> got;
      run_dense_with(ops, d, dv, cfg, got);
      if (HasFatalFailure()) return;
      expect_rows_match(got, want, n, ("256-row tiles, " + config_name(cfg)).c_str());
      EXPECT_TRUE(d.guard_intact()) << "a write landed past the end of D";
    }
  }
}

// 128-row tiles on every K-block count from 1 to 5 and a partial last block (K = 576: 4.5 blocks), alone and in
// pairs sharing B: against the oracle into a poisoned D, and bitwise equal to 64-row tiles (every tile shape sums each
// 128-K block in the same order). K loops that handle two K blocks per step have odd and even counts to get right.
TEST(Fp8DenseGpu, RowTilesOf128OnEveryKBlockCountUpTo5) {
  MOEGEMM_REQUIRE_GPU();
  const int m = 200, n = 256;
  for (const int k : {128, 256, 384, 512, 576, 640}) {
    std::mt19937 rng(static_cast<unsigned>(k + 991));
    Fp8Operands ops(1, m, n, k, 1, rng);
    DeviceBuffer d(static_cast<std::size_t>(m) * n * 2);
    const TensorView dv = TensorView::contiguous(d.get(), DType::kBFloat16, {m, n});
    ref::GroupedResult want{ref::fp8_gemm_1d2d(ops.a, ops.b), std::vector<std::uint8_t>(m, 1)};
    std::vector<std::uint16_t> first;
    for (const KernelConfig& cfg : {tile_config(64, 64, 4), tile_config(128, 128, 4), tile_config(128, 64, 4),
                                    tile_config(128, 128, 4, 2), tile_config(128, 96, 4)}) {
      const std::string what = "k " + std::to_string(k) + ", " + config_name(cfg);
      std::vector<std::uint16_t> got;
      run_dense_with(ops, d, dv, cfg, got);
      if (HasFatalFailure()) return;
      expect_rows_match(got, want, n, what.c_str());
      EXPECT_TRUE(d.guard_intact()) << what << ": a write landed past the end of D";
      if (first.empty()) first = got;
      EXPECT_EQ(0, std::memcmp(first.data(), got.data(), got.size() * 2)) << what;
    }
  }
}

// K split across a cluster (k_splits 2 to 4): each rank sums its own slice of the K blocks and rank 0 adds the
// others' partial results in rank order. Decode N = 576 over 7168 K; partial tiles and a partial 128-K block
// (37 x 200 x 2112); two K blocks over four ranks, so that ranks 0 and 2 have none (130 x 64 x 256). Each against
// the oracle into a poisoned D with its guard checked, then bitwise equal on a second call.
TEST(Fp8DenseGpu, KSplitMatchesOracleAndRepeatsBitwise) {
  MOEGEMM_REQUIRE_GPU();
  for (const DenseShape s : {DenseShape{1, 576, 7168}, DenseShape{37, 200, 2112}, DenseShape{130, 64, 256}}) {
    std::mt19937 rng(static_cast<unsigned>(4100 + s.m + s.n + s.k));
    Fp8Operands ops(1, s.m, s.n, s.k, 1, rng);
    DeviceBuffer d(static_cast<std::size_t>(s.m) * s.n * 2);
    const TensorView dv = TensorView::contiguous(d.get(), DType::kBFloat16, {s.m, s.n});
    ref::GroupedResult want{ref::fp8_gemm_1d2d(ops.a, ops.b), std::vector<std::uint8_t>(s.m, 1)};
    // 64-row tiles 16-64 wide over 2-4 ranks; 128-row tiles (two math warpgroups, each pushing its own partials) 64
    // and 32 wide over 2 ranks, the one-block-of-rows plans (plan::with_row_block_tiles).
    std::vector<KernelConfig> configs;
    for (int splits : {2, 3, 4}) {
      for (int bn : {16, 32, 64}) {
        configs.push_back(tile_config(64, bn, 8));
        configs.back().k_splits = splits;
      }
    }
    for (int bn : {64, 32}) {
      configs.push_back(tile_config(128, bn, 6));
      configs.back().k_splits = 2;
    }
    for (const KernelConfig& cfg : configs) {
      const std::string what = std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k) + ", " +
                               std::to_string(cfg.block_m) + "x" + std::to_string(cfg.block_n) + ", K split " +
                               std::to_string(cfg.k_splits);
      std::vector<std::uint16_t> got, again;
      run_dense_with(ops, d, dv, cfg, got);
      if (HasFatalFailure()) return;
      expect_rows_match(got, want, s.n, what.c_str());
      EXPECT_TRUE(d.guard_intact()) << what;
      run_dense_with(ops, d, dv, cfg, again);
      EXPECT_EQ(0, std::memcmp(got.data(), again.data(), got.size() * 2)) << what << ": results differ between calls";
    }
  }
}

// Clusters of two CTAs (B multicast) on the grouped layouts, forced, including odd tile counts where one CTA of
// a pair has no rows.
TEST(Fp8ClusterGpu, MaskedAndGroupEndsWithPairTiles) {
  MOEGEMM_REQUIRE_GPU();
  std::mt19937 rng(404);
  const int groups = 5, cap = 300, n = 384, k = 512;
  Fp8Operands ops(groups, cap, n, k, groups, rng);
  std::vector<int> counts = {300, 129, 0, 1, 257};
  DeviceBuffer d(static_cast<std::size_t>(groups) * cap * n * 2);
  DeviceBuffer cnt(groups * sizeof(int));
  cnt.upload(counts);
  MaskedLayout layout;
  layout.valid_rows = TensorView::contiguous(cnt.get(), DType::kInt32, {groups});
  const auto da = ref::dequantize(ops.a);
  const auto db = ref::dequantize(ops.b);
  const auto want = ref::m_grouped_masked(groups, cap, n, k, {ref::MatrixRef::row_major(da.data(), k), cap * k},
                                          {ref::MatrixRef::row_major(db.data(), k), n * k}, counts.data());
  for (int bm : {64, 128}) {
    for (int bn : {64, 128, 192}) {
      const KernelConfig cfg = tile_config(bm, bn, 4, 2);
      GemmOptions opt;
      opt.config = &cfg;
      d.fill_bytes(0xFF);
      m_grouped_fp8_gemm_nt_masked(ops.a_operand_3d(), ops.b_operand(),
                                   TensorView::contiguous(d.get(), DType::kBFloat16, {groups, cap, n}), layout, nullptr,
                                   opt);
      MOEGEMM_CUDA_CHECK(cudaDeviceSynchronize());
      expect_rows_match(d.download_as<std::uint16_t>(static_cast<std::size_t>(groups) * cap * n), want, n,
                        ("masked cluster bm " + std::to_string(bm) + " bn " + std::to_string(bn)).c_str());
      EXPECT_TRUE(d.guard_intact());
    }
  }
}

// ---- masked ----------------------------------------------------------------------------------------------------

void run_masked_case(int groups, int capacity, int n, int k, const std::vector<int>& counts, std::mt19937& rng,
                     const char* what, const KernelConfig* config = nullptr) {
  Fp8Operands ops(groups, capacity, n, k, groups, rng);
  DeviceBuffer d(static_cast<std::size_t>(groups) * capacity * n * 2);
  d.fill_bytes(0xFF);
  DeviceBuffer cnt(groups * sizeof(int));
  cnt.upload(counts);
  MaskedLayout layout;
  layout.valid_rows = TensorView::contiguous(cnt.get(), DType::kInt32, {groups});
  layout.expected_m = capacity;
  const TensorView dv = TensorView::contiguous(d.get(), DType::kBFloat16, {groups, capacity, n});
  GemmOptions opt;
  opt.config = config;
  m_grouped_fp8_gemm_nt_masked(ops.a_operand_3d(), ops.b_operand(), dv, layout, nullptr, opt);
  MOEGEMM_CUDA_CHECK(cudaDeviceSynchronize());
  const auto got = d.download_as<std::uint16_t>(static_cast<std::size_t>(groups) * capacity * n);
  const auto da = ref::dequantize(ops.a);
  const auto db = ref::dequantize(ops.b);
  const ref::BatchedMatrixRef ar{ref::MatrixRef::row_major(da.data(), k), static_cast<std::int64_t>(capacity) * k};
  const ref::BatchedMatrixRef br{ref::MatrixRef::row_major(db.data(), k), static_cast<std::int64_t>(n) * k};
  const auto want = ref::m_grouped_masked(groups, capacity, n, k, ar, br, counts.data());
  expect_rows_match(got, want, n, what);
  EXPECT_TRUE(d.guard_intact()) << what << ": a write landed past the end of D";
}

TEST(Fp8MaskedGpu, EveryCapacityFrom1To257StaysInsideItsGroup) {
  MOEGEMM_REQUIRE_GPU();
  std::mt19937 rng(2024);
  for (int cap = 1; cap <= 257; ++cap) {
    // Counts near and at capacity, plus an empty group: the anchor's failure was a tail tile of one group
    // landing on the next group's first rows.
    std::vector<int> counts = {cap, std::max(0, cap - 1), 0, std::max(1, cap / 2)};
    run_masked_case(4, cap, 256, 256, counts, rng, ("capacity " + std::to_string(cap)).c_str());
    if (::testing::Test::HasFailure()) break;
  }
}

TEST(Fp8MaskedGpu, TargetsFailureCaseEightGroupsCapacity32) {
  MOEGEMM_REQUIRE_GPU();
  std::mt19937 rng(8);
  run_masked_case(8, 32, 256, 256, {0, 1, 16, 31, 32, 1, 32, 32}, rng, "8 groups x 32");
}

TEST(Fp8MaskedGpu, CountsOutOfRangeAreClampedNotFollowed) {
  MOEGEMM_REQUIRE_GPU();
  std::mt19937 rng(9);
  // -5 and 1000000 must behave as 0 and capacity; nothing outside D is touched (guard checked).
  Fp8Operands ops(3, 40, 128, 256, 3, rng);
  std::vector<int> counts = {-5, 1000000, 17};
  DeviceBuffer d(3 * 40 * 128 * 2);
  d.fill_bytes(0xFF);
  DeviceBuffer cnt(3 * sizeof(int));
  cnt.upload(counts);
  MaskedLayout layout;
  layout.valid_rows = TensorView::contiguous(cnt.get(), DType::kInt32, {3});
  m_grouped_fp8_gemm_nt_masked(ops.a_operand_3d(), ops.b_operand(),
                               TensorView::contiguous(d.get(), DType::kBFloat16, {3, 40, 128}), layout, nullptr);
  MOEGEMM_CUDA_CHECK(cudaDeviceSynchronize());
  const auto got = d.download_as<std::uint16_t>(3 * 40 * 128);
  std::vector<int> clamped = {0, 40, 17};
  const auto da = ref::dequantize(ops.a);
  const auto db = ref::dequantize(ops.b);
  const auto want = ref::m_grouped_masked(3, 40, 128, 256, {ref::MatrixRef::row_major(da.data(), 256), 40 * 256},
                                          {ref::MatrixRef::row_major(db.data(), 256), 128 * 256}, clamped.data());
  expect_rows_match(got, want, 128, "clamped counts");
  EXPECT_TRUE(d.guard_intact());
}

// Replays `exec` (a captured masked call) into D poisoned first, then runs the same call eagerly: the two must be
// bitwise equal, and the replay must match the oracle for `counts` with nothing written past them.
void expect_masked_replay_matches_eager(cudaGraphExec_t exec, cudaStream_t stream, DeviceBuffer& d,
                                        const Fp8Operands& ops, const TensorView& dv, const MaskedLayout& layout,
                                        int groups, int cap, int n, int k, const std::vector<int>& counts,
                                        const char* what) {
  const std::size_t count = static_cast<std::size_t>(groups) * cap * n;
  d.fill_bytes(0xFF);
  MOEGEMM_CUDA_CHECK(cudaGraphLaunch(exec, stream));
  MOEGEMM_CUDA_CHECK(cudaStreamSynchronize(stream));
  const auto replayed = d.download_as<std::uint16_t>(count);
  d.fill_bytes(0xFF);
  m_grouped_fp8_gemm_nt_masked(ops.a_operand_3d(), ops.b_operand(), dv, layout, stream);
  MOEGEMM_CUDA_CHECK(cudaStreamSynchronize(stream));
  const auto eager = d.download_as<std::uint16_t>(count);
  EXPECT_EQ(0, std::memcmp(replayed.data(), eager.data(), eager.size() * 2)) << what;
  const auto da = ref::dequantize(ops.a);
  const auto db = ref::dequantize(ops.b);
  const auto want = ref::m_grouped_masked(groups, cap, n, k, {ref::MatrixRef::row_major(da.data(), k), cap * k},
                                          {ref::MatrixRef::row_major(db.data(), k), n * k}, counts.data());
  expect_rows_match(replayed, want, n, what);
}

TEST(Fp8MaskedGpu, GraphReplayAfterCountsChangeMatchesEager) {
  MOEGEMM_REQUIRE_GPU();
  const int groups = 6, cap = 96, n = 512, k = 768;
  std::mt19937 rng(31);
  Fp8Operands ops(groups, cap, n, k, groups, rng);
  DeviceBuffer d(static_cast<std::size_t>(groups) * cap * n * 2);
  DeviceBuffer cnt(groups * sizeof(int));
  std::vector<int> counts1 = {96, 3, 50, 0, 64, 95};
  std::vector<int> counts2 = {1, 96, 0, 77, 65, 32};
  cnt.upload(counts1);
  MaskedLayout layout;
  layout.valid_rows = TensorView::contiguous(cnt.get(), DType::kInt32, {groups});
  const TensorView dv = TensorView::contiguous(d.get(), DType::kBFloat16, {groups, cap, n});
  cudaStream_t stream;
  MOEGEMM_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  m_grouped_fp8_gemm_nt_masked(ops.a_operand_3d(), ops.b_operand(), dv, layout, stream);  // warm-up: compiles
  MOEGEMM_CUDA_CHECK(cudaStreamSynchronize(stream));
  {
    CapturedCall captured(stream, [&](cudaStream_t s) {
      m_grouped_fp8_gemm_nt_masked(ops.a_operand_3d(), ops.b_operand(), dv, layout, s);
    });
    // New routing written in place, then replay.
    cnt.upload(counts2);
    expect_masked_replay_matches_eager(captured.exec(), stream, d, ops, dv, layout, groups, cap, n, k, counts2,
                                       "graph replay");
  }
  cudaStreamDestroy(stream);
}

// The warm-up path: precompile_fp8_gemm_nt writes the masked call's kernel into an empty cache folder; with no
// kernel in memory and no eager call, the call is then captured into a graph (it loads the file there instead of
// compiling) and the replay matches an eager call bit for bit and the oracle.
TEST(Fp8MaskedGpu, PrecompiledKernelLoadsInsideACaptureWithoutAnEagerCall) {
  MOEGEMM_REQUIRE_GPU();
  const int groups = 4, cap = 80, n = 384, k = 640;
  test::ScopedCacheFolder folder;
  ASSERT_FALSE(folder.path().empty());
  std::mt19937 rng(37);
  Fp8Operands ops(groups, cap, n, k, groups, rng);
  DeviceBuffer d(static_cast<std::size_t>(groups) * cap * n * 2);
  DeviceBuffer cnt(groups * sizeof(int));
  const std::vector<int> counts = {80, 1, 0, 57};
  cnt.upload(counts);
  MaskedLayout layout;
  layout.valid_rows = TensorView::contiguous(cnt.get(), DType::kInt32, {groups});
  const TensorView dv = TensorView::contiguous(d.get(), DType::kBFloat16, {groups, cap, n});

  const std::vector<PrecompiledKernel> kernels =
      precompile_fp8_gemm_nt(groups * cap, n, k, groups, 0, GemmLayout::kMasked);
  ASSERT_EQ(kernels.size(), 1u);
  MOEGEMM_CUDA_CHECK(cudaDeviceSynchronize());
  jit::unload_all_kernels();  // as in a fresh process: nothing in memory
  const jit::JitStats before = jit::jit_stats();

  cudaStream_t stream;
  MOEGEMM_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  // No eager call first: the capture must load the precompiled file.
  CapturedCall captured(stream, [&](cudaStream_t s) {
    m_grouped_fp8_gemm_nt_masked(ops.a_operand_3d(), ops.b_operand(), dv, layout, s);
  });
  const jit::JitStats after = jit::jit_stats();
  EXPECT_EQ(after.compiles, before.compiles) << "the captured call compiled";
  EXPECT_EQ(after.disk_hits, before.disk_hits + 1) << "the captured call did not load the precompiled file";
  bool loaded = false;
  for (const jit::KernelRecord& r : jit::loaded_kernels()) {
    if (r.key == kernels[0].name) loaded = r.from_disk && r.disk_path == kernels[0].path;
  }
  EXPECT_TRUE(loaded) << kernels[0].name << " was not loaded from " << kernels[0].path;

  expect_masked_replay_matches_eager(captured.exec(), stream, d, ops, dv, layout, groups, cap, n, k, counts,
                                     "precompiled, captured");
  cudaStreamDestroy(stream);  // (the graph needs no stream once instantiated)
}

// ---- contiguous ------------------------------------------------------------------------------------------------

void run_contiguous_case(int groups, int n, int k, const std::vector<int>& index, bool group_ends, int m_total,
                         std::mt19937& rng, const char* what, const KernelConfig* config = nullptr,
                         int segment_alignment = kContiguousAlignment) {
  Fp8Operands ops(1, m_total, n, k, groups, rng);
  DeviceBuffer d(static_cast<std::size_t>(m_total) * n * 2);
  d.fill_bytes(0xFF);
  DeviceBuffer idx(index.size() * sizeof(int));
  idx.upload(index);
  ContiguousLayout layout;
  layout.form = group_ends ? ContiguousLayout::Form::kGroupEnds : ContiguousLayout::Form::kRowToGroup;
  layout.index = TensorView::contiguous(idx.get(), DType::kInt32, {static_cast<std::int64_t>(index.size())});
  layout.segment_alignment = segment_alignment;
  GemmOptions opt;
  opt.config = config;
  m_grouped_fp8_gemm_nt_contiguous(ops.a_operand_2d(), ops.b_operand(),
                                   TensorView::contiguous(d.get(), DType::kBFloat16, {m_total, n}), layout, nullptr,
                                   opt);
  MOEGEMM_CUDA_CHECK(cudaDeviceSynchronize());
  const auto got = d.download_as<std::uint16_t>(static_cast<std::size_t>(m_total) * n);
  const auto da = ref::dequantize(ops.a);
  const auto db = ref::dequantize(ops.b);
  const ref::MatrixRef ar = ref::MatrixRef::row_major(da.data(), k);
  const ref::BatchedMatrixRef br{ref::MatrixRef::row_major(db.data(), k), static_cast<std::int64_t>(n) * k};
  const auto want = group_ends ? ref::m_grouped_contiguous_group_ends(m_total, n, k, ar, br, groups, index.data(),
                                                                     segment_alignment)
                               : ref::m_grouped_contiguous_row_to_group(m_total, n, k, ar, br, groups, index.data());
  expect_rows_match(got, want, n, what);
  EXPECT_TRUE(d.guard_intact()) << what;
}

// Running-sum ends of experts of `sizes` rows whose segments start at multiples of `alignment`; `m_total` gets the
// rows they need plus `tail` rows no expert owns.
std::vector<int> group_ends_for(const std::vector<int>& sizes, int alignment, int tail, int& m_total) {
  std::vector<int> ends;
  int start = 0;
  for (int s : sizes) {
    ends.push_back(start + s);
    start = (start + s + alignment - 1) / alignment * alignment;
  }
  m_total = ends.empty() ? tail : ends.back() + tail;
  return ends;
}

TEST(Fp8ContiguousGpu, GroupEndsWithGapsAndEmptyExperts) {
  MOEGEMM_REQUIRE_GPU();
  std::mt19937 rng(5);
  // Experts of 300, 0, 1, 129 and 40 rows; each starts at the next multiple of 128 after the previous end.
  const std::vector<int> sizes = {300, 0, 1, 129, 40};
  std::vector<int> ends;
  int start = 0;
  for (int s : sizes) {
    ends.push_back(start + s);
    start = (start + s + 127) / 128 * 128;
  }
  run_contiguous_case(5, 384, 512, ends, true, start + 64, rng, "group ends");
}

// Grouped tiles whose D leaves through TMA (block_n a multiple of 64) on waves wholly inside a group, and through
// the threads on a wave that reaches past its group's rows; 256-row tiles among them. Expert sizes around one and
// two waves and tiles, each segment starting at the next multiple of 128.
TEST(Fp8ContiguousGpu, GroupEndsWithTmaStoresAndTallTiles) {
  MOEGEMM_REQUIRE_GPU();
  std::mt19937 rng(55);
  const std::vector<int> sizes = {300, 0, 1, 129, 64, 256, 65, 383};
  std::vector<int> ends;
  int start = 0;
  for (int s : sizes) {
    ends.push_back(start + s);
    start = (start + s + 127) / 128 * 128;
  }
  for (const KernelConfig& cfg : {tile_config(256, 128, 3), tile_config(256, 64, 3), tile_config(128, 192, 4),
                                  tile_config(64, 128, 6), tile_config(128, 128, 4, 2)}) {
    run_contiguous_case(static_cast<int>(sizes.size()), 384, 640, ends, true, start + 64, rng,
                        ("group ends, " + config_name(cfg)).c_str(), &cfg);
  }
}

// Segments that start anywhere (layout.segment_alignment 1: tokens packed with no padding rows; 16 and 64 too):
// tiles start mid-block, a block of rows holds the end of one expert and the start of the next, and each tile's
// stores stop at its expert's end. Expert sizes around waves and tiles, empty ones among them; the planner's tile
// and forced ones (256-row, TMA stores on 64-wide boxes, threads' stores, a multicast pair).
TEST(Fp8ContiguousGpu, GroupEndsWithAnySegmentAlignment) {
  MOEGEMM_REQUIRE_GPU();
  std::mt19937 rng(58);
  const std::vector<int> sizes = {300, 0, 1, 129, 64, 256, 65, 383, 7};
  for (int alignment : {1, 16, 64}) {
    int m_total = 0;
    const std::vector<int> ends = group_ends_for(sizes, alignment, 37, m_total);
    const std::string what = "segment alignment " + std::to_string(alignment);
    run_contiguous_case(static_cast<int>(sizes.size()), 384, 640, ends, true, m_total, rng, what.c_str(), nullptr,
                        alignment);
    for (const KernelConfig& cfg : {tile_config(256, 128, 3), tile_config(128, 192, 4), tile_config(64, 128, 6),
                                    tile_config(128, 128, 4, 2)}) {
      run_contiguous_case(static_cast<int>(sizes.size()), 384, 640, ends, true, m_total, rng,
                          (what + ", " + config_name(cfg)).c_str(), &cfg, alignment);
    }
  }
  // Device ends out of range, packed: a decreasing end (an empty expert), one past M_total and a negative one are
  // clamped as the oracle clamps them; nothing lands outside the experts' rows or past D.
  const std::vector<int> bad_ends = {150, 90, 400, 100000, -7, 500};
  run_contiguous_case(static_cast<int>(bad_ends.size()), 256, 384, bad_ends, true, 450, rng,
                      "segment alignment 1, ends out of range", nullptr, 1);
}

// Packed segments under a CUDA graph: captured once, replayed after the ends changed in place (other sizes, the
// same M_total), equal to an eager call bit for bit and to the oracle; the rows no expert owns keep their poison.
TEST(Fp8ContiguousGpu, PackedGroupEndsGraphReplayAfterEndsChange) {
  MOEGEMM_REQUIRE_GPU();
  std::mt19937 rng(59);
  const int groups = 5, n = 512, k = 768, m_total = 700;
  Fp8Operands ops(1, m_total, n, k, groups, rng);
  const std::vector<int> ends1 = {100, 100, 357, 600, 690};
  const std::vector<int> ends2 = {3, 250, 251, 400, 650};
  DeviceBuffer d(static_cast<std::size_t>(m_total) * n * 2), idx(groups * sizeof(int));
  idx.upload(ends1);
  ContiguousLayout layout;
  layout.form = ContiguousLayout::Form::kGroupEnds;
  layout.index = TensorView::contiguous(idx.get(), DType::kInt32, {groups});
  layout.segment_alignment = 1;
  const TensorView dv = TensorView::contiguous(d.get(), DType::kBFloat16, {m_total, n});
  cudaStream_t stream;
  MOEGEMM_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  m_grouped_fp8_gemm_nt_contiguous(ops.a_operand_2d(), ops.b_operand(), dv, layout, stream);  // warm-up: compiles
  MOEGEMM_CUDA_CHECK(cudaStreamSynchronize(stream));
  CapturedCall captured(stream, [&](cudaStream_t s) {
    m_grouped_fp8_gemm_nt_contiguous(ops.a_operand_2d(), ops.b_operand(), dv, layout, s);
  });
  idx.upload(ends2);
  d.fill_bytes(0xFF);
  captured.replay();
  const auto replayed = d.download_as<std::uint16_t>(static_cast<std::size_t>(m_total) * n);
  d.fill_bytes(0xFF);
  m_grouped_fp8_gemm_nt_contiguous(ops.a_operand_2d(), ops.b_operand(), dv, layout, stream);
  MOEGEMM_CUDA_CHECK(cudaStreamSynchronize(stream));
  const auto eager = d.download_as<std::uint16_t>(static_cast<std::size_t>(m_total) * n);
  EXPECT_EQ(0, std::memcmp(replayed.data(), eager.data(), eager.size() * 2)) << "replay differs from eager";
  const auto da = ref::dequantize(ops.a);
  const auto db = ref::dequantize(ops.b);
  const auto want = ref::m_grouped_contiguous_group_ends(
      m_total, n, k, ref::MatrixRef::row_major(da.data(), k),
      {ref::MatrixRef::row_major(db.data(), k), static_cast<std::int64_t>(n) * k}, groups, ends2.data(), 1);
  expect_rows_match(replayed, want, n, "packed group ends, graph replay");
  EXPECT_TRUE(d.guard_intact());
  cudaStreamDestroy(stream);  // (the graph needs no stream once instantiated)
}

// The same for masked slabs: counts at, around and past each wave and tile boundary, capacities that are no tile
// multiple; the anchor's failure case (8 groups of capacity 32) on 256-row tiles.
TEST(Fp8MaskedGpu, TmaStoresAndTallTilesStayInsideTheirGroup) {
  MOEGEMM_REQUIRE_GPU();
  std::mt19937 rng(56);
  for (const KernelConfig& cfg : {tile_config(256, 128, 3), tile_config(256, 64, 3), tile_config(128, 128, 4)}) {
    for (int cap : {1, 63, 64, 65, 200, 256, 257, 300}) {
      run_masked_case(4, cap, 256, 384, {cap, cap - 1 > 0 ? cap - 1 : 0, 0, cap / 2 + 1}, rng,
                      ("capacity " + std::to_string(cap) + ", " + config_name(cfg)).c_str(), &cfg);
    }
  }
  const KernelConfig tall = tile_config(256, 128, 3);
  run_masked_case(8, 32, 256, 256, {0, 1, 16, 31, 32, 1, 32, 32}, rng, "8 groups x 32, 256x128", &tall);
}

// The decode tiles the planner picks for masked experts of a few tokens (64 rows, 96 to 192 wide; FP8 has no 176,
// gemm_block_n_supported), and 112 (used by the benchmark sweeps): counts on both sides of the 32-row A boxes
// (masked_a_boxes) and of the tile, a capacity that is no multiple of either, N leaving a partial tile at every
// width, a partial last K block.
TEST(Fp8MaskedGpu, DecodeTilesCopyOnlyTheRowsTheExpertHas) {
  MOEGEMM_REQUIRE_GPU();
  std::mt19937 rng(57);
  const std::vector<int> counts = {0, 1, 20, 31, 32, 33, 63, 64, 65, 100};
  for (const auto& [bn, st] :
       {std::pair{96, 10}, std::pair{112, 9}, std::pair{128, 8}, std::pair{160, 7}, std::pair{192, 6}}) {
    const KernelConfig cfg = tile_config(64, bn, st);
    run_masked_case(static_cast<int>(counts.size()), 100, 400, 576, counts, rng, config_name(cfg).c_str(), &cfg);
  }
}

TEST(Fp8ContiguousGpu, RowToGroupWithPaddingMixedBlocksAndBadIndices) {
  MOEGEMM_REQUIRE_GPU();
  std::mt19937 rng(6);
  const int m_total = 640, groups = 4;
  std::vector<int> index(m_total, -1);
  // Aligned segments, then deliberately misaligned ones (experts mixed inside a 128-row block), plus
  // out-of-range values that must act as padding.
  for (int r = 0; r < 200; ++r) index[r] = 0;
  for (int r = 256; r < 300; ++r) index[r] = 1;
  for (int r = 300; r < 340; ++r) index[r] = 2;  // same block as expert 1
  for (int r = 340; r < 350; ++r) index[r] = 1;  // back to 1: not sorted inside the block
  for (int r = 350; r < 360; ++r) index[r] = 0;  // a third and a fourth expert in that block: the kernel's
  index[370] = 3;                                // pass search has to look past the two it finds per scan
  for (int r = 384; r < 500; ++r) index[r] = 3;
  index[400] = 7;   // >= groups: padding
  index[401] = -9;  // < -1: padding
  for (int r = 512; r < 640; ++r) index[r] = 2;
  run_contiguous_case(groups, 256, 384, index, false, m_total, rng, "row to group");
  // Forced tiles: D through TMA over one pass or several (128x128, 64x192 and 128x192: whole 64-column boxes),
  // and by the threads (128x96); with M_total = 600 the last tile's second wave has 24 rows (stored by threads
  // from the staging buffer). 256-row tiles: two waves per warpgroup, the middle tile [256, 512) with four passes
  // (experts 0-3; the first also zeroes the padding rows), each filling both waves' buffers before the last stores them; with M_total = 600
  // the last tile's first waves hold 64 and 24 rows and its second waves none.
  for (int rows : {640, 600}) {
    for (const auto& [bm, bn, st] : {std::tuple{128, 128, 4}, std::tuple{64, 192, 6}, std::tuple{128, 192, 4},
                                     std::tuple{128, 96, 5}, std::tuple{256, 128, 3}, std::tuple{256, 64, 3}}) {
      const KernelConfig cfg = tile_config(bm, bn, st);
      const std::vector<int> head(index.begin(), index.begin() + rows);
      const std::string what =
          "row to group " + std::to_string(bm) + "x" + std::to_string(bn) + ", M " + std::to_string(rows);
      run_contiguous_case(groups, 384, 384, head, false, rows, rng, what.c_str(), &cfg);
    }
  }
}

}  // namespace
}  // namespace moegemm
