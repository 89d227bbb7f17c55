// Device tests of the recipe (1,1,128) kernel (weight gradients, FP32 D = C + A @ B^T) through fp8_gemm_nt_1d1d:
// against the CPU oracle with C distinct from D, C aliasing D and no C (D += A @ B^T), bitwise determinism across
// calls and tile configurations. (The suite names keep "Staged": the names under which docs/results/ recorded them.)
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "../cpu/test_jit_support.hpp"
#include "common/gpu_support.hpp"
#include "moegemm/moegemm.hpp"
#include "moegemm/reference.hpp"
#include "plan/gemm_plan.hpp"

namespace moegemm {
namespace {

using testing::DeviceBuffer;
namespace ref = reference;

struct RowScaledOperand {
  ref::PerTokenFp8 q;
  DeviceBuffer values, scales;
  RowScaledOperand(std::int64_t rows, std::int64_t k, std::mt19937& rng, float sigma) {
    std::normal_distribution<float> dist(0.0f, sigma);
    std::vector<float> x(static_cast<std::size_t>(rows * k));
    for (auto& v : x) v = dist(rng);
    q = ref::per_token_cast(x.data(), rows, k);
    values = DeviceBuffer(q.values.size());
    values.upload(q.values);
    scales = DeviceBuffer(q.scales.size() * sizeof(float));
    scales.upload(q.scales);
  }
  Fp8Operand view() const {
    return Fp8Operand{TensorView::contiguous(values.get(), DType::kFloat8E4M3, {q.rows, q.cols}),
                      TensorView::strided(scales.get(), DType::kFloat32, {q.rows, q.scale_blocks()},
                                          {1, q.scale_col_stride})};
  }
};

enum class CMode { kDistinct, kAliasesD, kNone };

void run_case(int m, int n, int k, CMode mode, const KernelConfig* config, std::vector<float>* out = nullptr) {
  std::mt19937 rng(static_cast<unsigned>(m * 31 + n * 7 + k + static_cast<int>(mode)));
  RowScaledOperand a(m, k, rng, 1.0f), b(n, k, rng, 0.5f);
  std::normal_distribution<float> dist(0.0f, 4.0f);
  std::vector<float> c_host(static_cast<std::size_t>(m) * n);
  for (auto& v : c_host) v = dist(rng);
  DeviceBuffer d(c_host.size() * sizeof(float)), c(c_host.size() * sizeof(float));
  if (mode == CMode::kDistinct) {
    c.upload(c_host);
    d.fill_bytes(0xFF);  // NaN: every element must be written
  } else {
    d.upload(c_host);  // C is D (aliased, or implied when no C is given)
  }
  const TensorView dv = TensorView::contiguous(d.get(), DType::kFloat32, {m, n});
  const TensorView cv = TensorView::contiguous(mode == CMode::kDistinct ? c.get() : d.get(), DType::kFloat32, {m, n});
  GemmOptions options;
  options.recipe = kRecipe1x1x128;
  options.config = config;
  fp8_gemm_nt_1d1d(a.view(), b.view(), dv, mode == CMode::kNone ? nullptr : &cv, nullptr, options);
  MOEGEMM_CUDA_CHECK(cudaDeviceSynchronize());
  const auto got = d.download_as<float>(c_host.size());
  std::vector<double> c_ref(c_host.begin(), c_host.end());
  const auto want = ref::fp8_gemm_1d1d(a.q, b.q, c_ref.data());
  std::vector<double> got_d(got.begin(), got.end());
  for (std::size_t i = 0; i < got.size(); ++i) ASSERT_FALSE(std::isnan(got[i])) << "element " << i << " not written";
  EXPECT_LT(ref::calc_diff(got_d.data(), want.data(), got.size()), 1e-6);
  EXPECT_TRUE(d.guard_intact());
  if (out) *out = got;
}

TEST(Fp8WgradStagedGpu, MatchesOracleForEveryFormOfC) {
  MOEGEMM_REQUIRE_GPU();
  for (CMode mode : {CMode::kDistinct, CMode::kAliasesD, CMode::kNone}) {
    run_case(576, 512, 1024, mode, nullptr);
    run_case(129, 136, 384, mode, nullptr);
    run_case(2112, 256, 2048, mode, nullptr);
  }
}

// The 192-row tiles of three math warpgroups, forced: M ending inside a tile (400 = 2 x 192 + 16, 129 < 192), N inside
// one, K on both sides of kFp32ReduceMinK.
TEST(Fp8WgradStagedGpu, ThreeWarpgroupTilesMatchOracleForEveryFormOfC) {
  MOEGEMM_REQUIRE_GPU();
  for (const int block_n : {128, 96}) {
    const KernelConfig cfg = testing::tile_config(192, block_n, 128, 3);
    SCOPED_TRACE("192x" + std::to_string(block_n));
    for (CMode mode : {CMode::kDistinct, CMode::kAliasesD, CMode::kNone}) {
      run_case(400, 320, 2048, mode, &cfg);
      run_case(129, 136, 512, mode, &cfg);
    }
  }
}

// Pairs of CTAs sharing A along N (1x2 clusters): N ending inside a pair's second CTA (320 = 256 + 64) or before it
// (104 < 128: that CTA only loads A's half for its peer), M ending inside a tile (400) and inside a half (129).
TEST(Fp8WgradStagedGpu, PairsSharingAMatchOracleForEveryFormOfC) {
  MOEGEMM_REQUIRE_GPU();
  for (const int block_m : {192, 128}) {
    KernelConfig cfg = testing::tile_config(block_m, 128, 128, 3);
    cfg.cluster_n = 2;
    SCOPED_TRACE(std::to_string(block_m) + "x128, cluster 1x2");
    for (CMode mode : {CMode::kDistinct, CMode::kAliasesD, CMode::kNone}) {
      run_case(400, 320, 2048, mode, &cfg);
      run_case(129, 104, 512, mode, &cfg);
    }
  }
}

// One stage more than fits beside a whole FP32 staging buffer (half staging, behind its switch): each tile stored
// in two passes of 64 columns, each loading its own C. N ending in the last tile's first half (320 = 2 x 128 + 64),
// inside its second half (200) and in the only tile's second half (104); M ending inside a tile; K on both sides of
// kFp32ReduceMinK (in place: loads of C below it, reduce-adds from it on). 128x128 with 5 stages is the dense
// candidate; 192x128 with 4 the k-grouped one, run dense too.
TEST(Fp8WgradStagedGpu, HalfStagingMatchesOracleForEveryFormOfC) {
  MOEGEMM_REQUIRE_GPU();
  test::ScopedEnv half_staging(plan::kHalfStagingVariable, std::string("1"));
  for (const auto& [block_m, stages] : {std::pair{128, 5}, std::pair{192, 4}}) {
    const KernelConfig cfg = testing::tile_config(block_m, 128, 128, stages);
    ASSERT_TRUE(plan::gemm_half_staged(cfg, static_cast<int>(kernels::sm90::GemmRecipe::kFp8_1d1d),
                                       kernels::GroupedKind::kDense));
    SCOPED_TRACE(std::to_string(block_m) + "x128x" + std::to_string(stages) + ", half staging");
    for (CMode mode : {CMode::kDistinct, CMode::kAliasesD, CMode::kNone}) {
      run_case(400, 320, 2048, mode, &cfg);
      run_case(129, 200, 512, mode, &cfg);
      run_case(136, 104, 1024, mode, &cfg);
    }
  }
}

// One set of inputs. run_c_distinct: D = C + A B^T with C distinct from a NaN-poisoned D, checked against the
// oracle (kept in `distinct`); run_in_place: the same product with C aliasing D (D holding C first), D into `out`.
// (Void: the CUDA checks are gtest assertions.)
struct CDistinctThenInPlace {
  int m, n;
  RowScaledOperand a, b;
  std::vector<float> c_host, distinct;
  DeviceBuffer d, c;
  CDistinctThenInPlace(int m_, int n_, int k, std::mt19937& rng)
      : m(m_), n(n_), a(m_, k, rng, 1.0f), b(n_, k, rng, 0.5f), c_host(static_cast<std::size_t>(m_) * n_),
        d(c_host.size() * sizeof(float)), c(c_host.size() * sizeof(float)) {
    std::normal_distribution<float> dist(0.0f, 4.0f);
    for (auto& v : c_host) v = dist(rng);
  }
  TensorView d_view() const { return TensorView::contiguous(d.get(), DType::kFloat32, {m, n}); }
  void run_c_distinct(const GemmOptions& options) {
    c.upload(c_host);
    d.fill_bytes(0xFF);
    const TensorView cv = TensorView::contiguous(c.get(), DType::kFloat32, {m, n});
    fp8_gemm_nt_1d1d(a.view(), b.view(), d_view(), &cv, nullptr, options);
    MOEGEMM_CUDA_CHECK(cudaDeviceSynchronize());
    distinct = d.download_as<float>(c_host.size());
    std::vector<double> c_ref(c_host.begin(), c_host.end());
    const auto want = ref::fp8_gemm_1d1d(a.q, b.q, c_ref.data());
    const std::vector<double> got(distinct.begin(), distinct.end());
    EXPECT_LT(ref::calc_diff(got.data(), want.data(), got.size()), 1e-6);
  }
  void run_in_place(const GemmOptions& options, std::vector<float>& out) {
    d.upload(c_host);
    const TensorView dv = d_view();
    fp8_gemm_nt_1d1d(a.view(), b.view(), dv, &dv, nullptr, options);
    MOEGEMM_CUDA_CHECK(cudaDeviceSynchronize());
    EXPECT_TRUE(d.guard_intact());
    out = d.download_as<float>(c_host.size());
  }
};

// C aliasing D gives the bits of C distinct. C aliasing D adds into D by TMA reduce-adds on tiles with K >=
// kFp32ReduceMinK (1024) and loads C below it.
TEST(Fp8WgradStagedGpu, CAliasingDGivesTheBitsOfCDistinct) {
  MOEGEMM_REQUIRE_GPU();
  for (const int k : {512, 1024, 2048}) {
    for (const auto [m, n] : {std::pair{256, 320}, std::pair{200, 136}}) {
      SCOPED_TRACE("m " + std::to_string(m) + " n " + std::to_string(n) + " k " + std::to_string(k));
      std::mt19937 rng(static_cast<unsigned>(m * 17 + n * 5 + k));
      GemmOptions options;
      options.recipe = kRecipe1x1x128;
      CDistinctThenInPlace run(m, n, k, rng);
      ASSERT_NO_FATAL_FAILURE(run.run_c_distinct(options));
      std::vector<float> aliased;
      ASSERT_NO_FATAL_FAILURE(run.run_in_place(options, aliased));
      EXPECT_EQ(0, std::memcmp(run.distinct.data(), aliased.data(), aliased.size() * sizeof(float)))
          << "C aliasing D differs from C distinct";
    }
  }
}

// In place on 128-row tiles, each of a CTA's tiles hands the previous tile's reduce-adds to the copy engine during
// its first K blocks (gemm_spread_fp32_reduce). Two SMs make every CTA run many tiles in a row: D must hold the bits
// of C distinct (which loads C and stores D whole), with all SMs and with two.
TEST(Fp8WgradStagedGpu, InPlaceAcrossManyTilesPerCtaGivesTheBitsOfCDistinct) {
  MOEGEMM_REQUIRE_GPU();
  const KernelConfig cfg = testing::tile_config(128, 128, 128, 4);
  for (const int k : {1024, 1152, 2048}) {
    SCOPED_TRACE("k " + std::to_string(k));
    std::mt19937 rng(static_cast<unsigned>(k * 13 + 7));
    GemmOptions options;
    options.recipe = kRecipe1x1x128;
    options.config = &cfg;
    CDistinctThenInPlace run(640, 384, k, rng);  // 5 x 3 tiles
    ASSERT_NO_FATAL_FAILURE(run.run_c_distinct(options));
    for (const int sms : {0, 2}) {
      options.max_sms = sms;
      std::vector<float> aliased;
      ASSERT_NO_FATAL_FAILURE(run.run_in_place(options, aliased));
      EXPECT_EQ(0, std::memcmp(run.distinct.data(), aliased.data(), aliased.size() * sizeof(float)))
          << "in place on " << sms << " SMs (0: all) differs from C distinct";
    }
  }
}

TEST(Fp8WgradStagedGpu, BitwiseEqualAcrossCallsAndConfigurations) {
  MOEGEMM_REQUIRE_GPU();
  std::vector<float> first;
  for (int bm : {64, 128, 192}) {
    for (int bn : {16, 64, 96, 128, 160}) {
      if (bm == 192 && bn != 96 && bn != 128) continue;  // three warpgroups: block_n 96 or 128 (multiples of 32)
      // 3 stages fit every tile here, including 128x160 and 192x128 with their FP32 staging buffers.
      const KernelConfig cfg = testing::tile_config(bm, bn, 128, 3);
      for (int rep = 0; rep < 2; ++rep) {
        std::vector<float> got;
        run_case(300, 320, 768, CMode::kDistinct, &cfg, &got);
        if (first.empty()) first = got;
        EXPECT_EQ(0, std::memcmp(first.data(), got.data(), got.size() * sizeof(float))) << "bm " << bm << " bn " << bn;
      }
    }
  }
}

// The rasterisation band orders the tiles only: forced bands (KernelConfig::raster_band) give the bits of the band
// the launch picks (raster_band 0), on 64-row tiles (11 m-blocks) and 128-row ones (6).
TEST(Fp8WgradStagedGpu, ForcedRasterBandsGiveTheBitsOfThePickedBand) {
  MOEGEMM_REQUIRE_GPU();
  for (const int bm : {64, 128}) {
    KernelConfig cfg = testing::tile_config(bm, 64, 128, 4);
    std::vector<float> picked;
    run_case(700, 640, 512, CMode::kDistinct, &cfg, &picked);
    for (const int band : {1, 2, 5, 11, 64}) {
      cfg.raster_band = band;
      std::vector<float> got;
      run_case(700, 640, 512, CMode::kDistinct, &cfg, &got);
      EXPECT_EQ(0, std::memcmp(picked.data(), got.data(), got.size() * sizeof(float)))
          << "bm " << bm << " band " << band;
    }
  }
}

}  // namespace
}  // namespace moegemm
