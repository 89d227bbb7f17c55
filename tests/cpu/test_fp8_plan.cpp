// The FP8 1D2D planner: every configuration it picks is one the kernel supports, fits in shared memory, and
// follows the documented preferences; and an entry point with valid arguments on a machine without a device fails
// with kNoDevice after validation (never with a crash).
#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "common/gpu_support.hpp"
#include "moegemm/moegemm.hpp"
#include "plan/gemm_plan.hpp"
#include "sm90/gemm_params.cuh"
#include "test_jit_support.hpp"
#include "test_validate_common.hpp"

namespace moegemm {
namespace {

TEST(Fp8Plan, EveryChoiceIsARunnableConfiguration) {
  for (long long m : {1LL, 7LL, 64LL, 128LL, 129LL, 1000LL, 4096LL, 32768LL}) {
    for (int n : {16, 136, 576, 2112, 4096, 7168, 24576, 129280}) {
      for (int k : {128, 576, 2112, 7168, 16384}) {
        for (int groups : {1, 6, 32}) {
          for (int sms : {1, 7, 66, 132}) {
            plan::ShapeHint hint{m, n, k, groups};
            for (kernels::GroupedKind layout : {kernels::GroupedKind::kDense, kernels::GroupedKind::kMasked,
                                                kernels::GroupedKind::kContiguousRowToGroup}) {
              const bool dense = layout == kernels::GroupedKind::kDense;
              if (dense && groups != 1) continue;
              const KernelConfig c = plan::choose_fp8_1d2d_config(hint, sms, /*allow_cluster=*/false, layout);
              EXPECT_NO_THROW(plan::check_fp8_1d2d_config(c, layout)) << c.to_string();
              EXPECT_EQ(c.cluster_m, 1) << "clusters are opt-in";
              EXPECT_EQ(c.num_sms, sms);
              EXPECT_EQ(c.math_warpgroups, math_warpgroups_for(c.block_m));
              EXPECT_EQ(c.smem_bytes, plan::gemm_smem_bytes(c, 0, layout));
              EXPECT_LE(c.smem_bytes, plan::kMaxSmemBytes);
              EXPECT_GE(c.stages, 3) << c.to_string();
            }
          }
        }
      }
    }
  }
}

TEST(Fp8Plan, ShapesGetTheDocumentedKindOfTile) {
  // Large: two math warpgroups and a wide tile; decode: one warpgroup.
  const KernelConfig large = plan::choose_fp8_1d2d_config({4096, 7168, 7168, 1}, 132, false, kernels::GroupedKind::kDense);
  EXPECT_GE(large.block_m, 128);
  EXPECT_EQ(large.math_warpgroups, 2);
  EXPECT_GE(large.block_n, 128);
  const KernelConfig decode = plan::choose_fp8_1d2d_config({1, 7168, 16384, 1}, 132, false, kernels::GroupedKind::kDense);
  EXPECT_EQ(decode.block_m, 64);
}

TEST(Fp8Plan, TallTilesForLargeDenseProblems) {
  // 256x128 tiles (3 stages) where a 4096-row problem has many 128-column tiles: fewer waves and less operand
  // traffic per output than 128x192 (docs/heuristics.md).
  for (int nk : {0, 1, 2, 3}) {
    const int n[] = {24576, 7168, 4096, 7168};
    const int k[] = {1536, 16384, 7168, 2048};
    const KernelConfig c = plan::choose_fp8_1d2d_config({4096, n[nk], k[nk], 1}, 132, false, kernels::GroupedKind::kDense);
    EXPECT_EQ(c.block_m, 256) << c.to_string();
    EXPECT_EQ(c.block_n, 128) << c.to_string();
    EXPECT_EQ(c.math_warpgroups, 2);
    EXPECT_EQ(c.stages, 3);
    // The row-to-group layout is planned without them (RowToGroupIsPlannedWithoutTallTiles).
    EXPECT_EQ(plan::choose_fp8_1d2d_config({4096, n[nk], k[nk], 4}, 132, false, kernels::GroupedKind::kContiguousRowToGroup).block_m,
              128);
  }
  // Few rows or few columns: 128-row tiles still.
  EXPECT_LE(plan::choose_fp8_1d2d_config({128, 7168, 16384, 1}, 132, false, kernels::GroupedKind::kDense).block_m, 128);
  EXPECT_LE(plan::choose_fp8_1d2d_config({4096, 576, 7168, 1}, 132, false, kernels::GroupedKind::kDense).block_m, 128);
}

TEST(Bf16Plan, TallTilesWhereTheModelAndTheMeasurementAgree) {
  using kernels::sm90::GemmRecipe;
  // Measured (docs/results/2026-12-03-bf16-pairs-tall.md): 256x128 +13% at 4096x4096x7168, +1-2% or level on the
  // other rows with many 128-column tiles; 21-36% slower where few tiles make their waves uneven (N = 2112, 576).
  for (GemmRecipe r : {GemmRecipe::kBf16, GemmRecipe::kBf16AddC}) {
    for (int nk : {0, 1, 2, 3}) {
      const int n[] = {4096, 24576, 32768, 7168};
      const int k[] = {7168, 1536, 512, 2048};
      const KernelConfig c = plan::choose_bf16_config({4096, n[nk], k[nk], 1}, 132, r, 16, kernels::GroupedKind::kDense);
      EXPECT_EQ(c.block_m, 256) << c.to_string();
      EXPECT_EQ(c.block_n, 128) << c.to_string();
      EXPECT_EQ(c.stages, 3);
      // Row-to-group problems are planned without them (as for FP8).
      EXPECT_LE(plan::choose_bf16_config({4096, n[nk], k[nk], 4}, 132, r, 16, kernels::GroupedKind::kContiguousRowToGroup).block_m,
                128);
    }
    EXPECT_LE(plan::choose_bf16_config({4096, 2112, 7168, 1}, 132, r, 16, kernels::GroupedKind::kDense).block_m, 128);
    EXPECT_LE(plan::choose_bf16_config({4096, 576, 7168, 1}, 132, r, 16, kernels::GroupedKind::kDense).block_m, 128);
  }
  // FP32 D stores one wave per warpgroup: never 256 rows.
  EXPECT_LE(plan::choose_bf16_config({4096, 4096, 7168, 1}, 132, GemmRecipe::kBf16Fp32, 16, kernels::GroupedKind::kDense).block_m,
            128);
}

// N = 2112 with BF16 D, with and without C: 128x176 (12 column tiles, 384 tiles, 2.91 waves of 132) instead of
// 128x192 (11 tiles, 352, 2.67 waves: three waves either way, of larger tiles). Measured 4.8-5.8% faster
// (docs/results/2026-12-04-what-bounds-the-k-loop.md, run 7). FP8 (1,128,128) never takes 176: at some column
// offsets such a tile touches three of B's 128-column scale blocks.
TEST(Bf16Plan, NarrowerTilesFill2112Columns) {
  using kernels::sm90::GemmRecipe;
  for (GemmRecipe r : {GemmRecipe::kBf16, GemmRecipe::kBf16AddC}) {
    const KernelConfig c = plan::choose_bf16_config({4096, 2112, 7168, 1}, 132, r, 16, kernels::GroupedKind::kDense);
    EXPECT_EQ(c.block_m, 128) << c.to_string();
    EXPECT_EQ(c.block_n, 176) << c.to_string();
  }
  EXPECT_FALSE(kernels::sm90::gemm_block_n_supported(static_cast<int>(GemmRecipe::kFp8_1d2d), 176));
  EXPECT_NE(plan::choose_fp8_1d2d_config({4096, 2112, 7168, 1}, 132, false, kernels::GroupedKind::kDense).block_n, 176);
}

// BF16 D = C + A B^T at short K: 128x192 (4 stages) instead of 256x128, measured 2.6-4.4% faster at K = 1536 and 512
// and 6% slower at K = 2048 (docs/results/2026-12-04-what-bounds-the-k-loop.md, runs 13-14). Without C, and at
// longer K, the model's tile stays.
TEST(Bf16Plan, ShortKWithCTakes128x192) {
  using kernels::sm90::GemmRecipe;
  constexpr auto kDense = kernels::GroupedKind::kDense;
  auto planned = [&](const plan::ShapeHint& h, GemmRecipe r) {
    return plan::with_short_k_c_tiles(plan::choose_bf16_config(h, 132, r, 16, kDense), h, 132, static_cast<int>(r),
                                      kDense);
  };
  for (const plan::ShapeHint h : {plan::ShapeHint{4096, 24576, 1536, 1}, plan::ShapeHint{4096, 32768, 512, 1}}) {
    const KernelConfig c = planned(h, GemmRecipe::kBf16AddC);
    EXPECT_EQ(c.block_m, 128) << c.to_string();
    EXPECT_EQ(c.block_n, 192) << c.to_string();
    EXPECT_EQ(c.stages, 4) << c.to_string();
    EXPECT_EQ(planned(h, GemmRecipe::kBf16).block_m, 256) << "without C the model's tile stays";
  }
  EXPECT_EQ(planned({4096, 7168, 2048, 1}, GemmRecipe::kBf16AddC).block_m, 256) << "K = 2048 measured slower";
}

// The row-to-group kernel runs 256-row tiles when forced (the device tests do), but the planner keeps them off that
// layout: measured 3-13% slower than 128x192 on the contiguous idx rows, where group ends gains from them. The public
// query plans the layout it is given.
TEST(Fp8Plan, RowToGroupIsPlannedWithoutTallTiles) {
  using kernels::GroupedKind;
  for (int nk : {0, 1, 2, 3}) {
    const int n[] = {6144, 7168, 4096, 4096};
    const int k[] = {7168, 3072, 4096, 2048};
    for (long long rows : {4096LL, 8192LL}) {  // the contiguous suite's experts
      const plan::ShapeHint h{rows, n[nk], k[nk], 4};
      EXPECT_EQ(plan::choose_fp8_1d2d_config(h, 132, false, GroupedKind::kContiguousGroupEnds).block_m, 256);
      const KernelConfig idx = plan::choose_fp8_1d2d_config(h, 132, false, GroupedKind::kContiguousRowToGroup);
      EXPECT_EQ(idx.block_m, 128) << idx.to_string();
      EXPECT_NO_THROW(plan::check_fp8_1d2d_config(idx, GroupedKind::kContiguousRowToGroup));
      if (!device_info().available) {
        EXPECT_EQ(plan_fp8_gemm_nt(static_cast<int>(4 * rows), n[nk], k[nk], 4, static_cast<int>(rows),
                                   GemmLayout::kContiguousRowToGroup)
                      .to_string(),
                  idx.to_string());
      }
    }
  }
  // A forced 256-row tile passes the configuration check on row-to-group (FP8 (1,128,128), block_n <= 128).
  KernelConfig tall = plan::choose_fp8_1d2d_config({4096, 4096, 2048, 4}, 132, false, GroupedKind::kContiguousGroupEnds);
  ASSERT_EQ(tall.block_m, 256);
  EXPECT_NO_THROW(plan::check_fp8_1d2d_config(tall, GroupedKind::kContiguousRowToGroup));
  if (!device_info().available) {
    EXPECT_THROW(plan_fp8_gemm_nt(4096, 4096, 4096, 4, 1024, GemmLayout::kKGrouped), Error);
  }
}

// Masked FP8 with an expected M of 512 and up: 128x192 where the model plans 256x128 (measured 1-4% faster at
// expected M 1024, 2-3% slower at 192, which keeps its plan); the public query returns what the call runs.
TEST(Fp8Plan, MaskedRowTilesFromExpectedM512) {
  using kernels::GroupedKind;
  for (int nk : {0, 1, 2, 3}) {
    const int n[] = {6144, 7168, 4096, 4096};
    const int k[] = {7168, 3072, 4096, 2048};
    const plan::ShapeHint large{1024, n[nk], k[nk], 6}, small{192, n[nk], k[nk], 32};
    const KernelConfig model = plan::choose_fp8_1d2d_config(large, 132, false, GroupedKind::kMasked);
    ASSERT_EQ(model.block_m, 256) << model.to_string();
    const KernelConfig c = plan::with_masked_row_tiles(model, large, GroupedKind::kMasked);
    EXPECT_EQ(c.block_m, 128);
    EXPECT_EQ(c.block_n, 192);
    EXPECT_NO_THROW(plan::check_fp8_1d2d_config(c, GroupedKind::kMasked)) << c.to_string();
    EXPECT_EQ(c.smem_bytes, plan::gemm_smem_bytes(c, 0, GroupedKind::kMasked));
    const KernelConfig kept = plan::choose_fp8_1d2d_config(small, 132, false, GroupedKind::kMasked);
    EXPECT_EQ(plan::with_masked_row_tiles(kept, small, GroupedKind::kMasked).to_string(), kept.to_string());
    // Other layouts keep the model's tile.
    const KernelConfig ends = plan::choose_fp8_1d2d_config(large, 132, false, GroupedKind::kContiguousGroupEnds);
    EXPECT_EQ(plan::with_masked_row_tiles(ends, large, GroupedKind::kContiguousGroupEnds).to_string(), ends.to_string());
    if (!device_info().available) {
      EXPECT_EQ(plan_fp8_gemm_nt(6 * 4096, n[nk], k[nk], 6, 1024, GemmLayout::kMasked).to_string(), c.to_string());
      EXPECT_EQ(plan_fp8_gemm_nt(32 * 4096, n[nk], k[nk], 32, 192, GemmLayout::kMasked).to_string(), kept.to_string());
    }
  }
}

// The model adds up the waves one by one: a memory-bound problem whose last wave holds a few tiles pays a whole
// tile's time for it, one whose last wave is full pays only its share of HBM; problems of one wave or less model as
// before (the longer of a tile's time and the HBM floor). Masked expected M 20, G = 32, N = 4096: 64x96 tiles leave
// 56 of 1376 in the last wave, 64x128 100 of 1024; measured 64x128 3% faster (docs/results/
// 2026-12-04-masked-a-boxes.md, runs 1-3), and the planner takes it.
TEST(Fp8Plan, ThinLastWaveCostsATile) {
  using kernels::GroupedKind;
  const plan::ShapeHint decode{20, 4096, 4096, 32};
  EXPECT_EQ(plan::gemm_waves_of(decode, 64, 96, 1, 132), 11);
  EXPECT_EQ(plan::gemm_waves_of(decode, 64, 128, 1, 132), 8);
  const double us96 = plan::gemm_modelled_us(decode, 64, 96, 1, 132);
  const double us128 = plan::gemm_modelled_us(decode, 64, 128, 1, 132);
  // HBM floor: 32 x (20 x 4096 + 4096 x 4096 + 2 x 20 x 4096) bytes at 4 TB/s.
  const double floor_us = 32.0 * (20.0 * 4096 + 4096.0 * 4096 + 2.0 * 20 * 4096) / 4.0e12 * 1e6;
  EXPECT_NEAR(us128, floor_us, 1e-6 * floor_us);  // the last wave's 100 tiles draw their share of HBM
  EXPECT_GT(us96, floor_us * 1.02);                // 56 tiles cannot
  const KernelConfig c = plan::choose_fp8_1d2d_config(decode, 132, false, GroupedKind::kMasked);
  EXPECT_EQ(c.block_m, 64);
  EXPECT_EQ(c.block_n, 128) << c.to_string();
  // Whole waves only (33 experts: 8 waves of 64x128 tiles): the floor, as the old model gave.
  const plan::ShapeHint whole{20, 4096, 4096, 33};
  const double whole_floor_us = 33.0 * (20.0 * 4096 + 4096.0 * 4096 + 2.0 * 20 * 4096) / 4.0e12 * 1e6;
  EXPECT_NEAR(plan::gemm_modelled_us(whole, 64, 128, 1, 132), whole_floor_us, 1e-6 * whole_floor_us);
}

// The public plan queries return what the calls run: the same choice functions, the same hints.
TEST(PlanQueries, MatchThePlannersChoiceForEachFamily) {
  using kernels::GroupedKind;
  using kernels::sm90::GemmRecipe;
  const int sms = 132;
  if (device_info().available) GTEST_SKIP() << "a CUDA device is present: the queries would plan for its SM count";
  auto same = [](const KernelConfig& a, const KernelConfig& b) {
    return a.block_m == b.block_m && a.block_n == b.block_n && a.stages == b.stages && a.cluster_m == b.cluster_m &&
           a.cluster_n == b.cluster_n && a.smem_bytes == b.smem_bytes;
  };
  // BF16 dense with BF16 D: 256x128 at 4096^2 x 7168; one 128-row tile per 64 columns at M = 128 (112 CTAs).
  Bf16PlanQuery q;
  q.m = 4096, q.n = 4096, q.k = 7168;
  EXPECT_TRUE(same(plan_bf16_gemm(q), plan::choose_bf16_config({4096, 4096, 7168, 1}, sms, GemmRecipe::kBf16, 16,
                                                                GroupedKind::kDense)));
  EXPECT_EQ(plan_bf16_gemm(q).block_m, 256);
  q.m = 128, q.n = 7168, q.k = 16384;
  EXPECT_EQ(plan_bf16_gemm(q).block_m, 128) << plan_bf16_gemm(q).to_string();
  EXPECT_EQ(plan_bf16_gemm(q).block_n, 64) << plan_bf16_gemm(q).to_string();
  q.b_mn_major = true;  // pairs need a K-major B; MN-major B takes whole 64-column boxes
  EXPECT_EQ(plan_bf16_gemm(q).cluster_m, 1);
  EXPECT_EQ(plan_bf16_gemm(q).block_n % 64, 0);
  // FP32 D and C: their recipes.
  Bf16PlanQuery f;
  f.m = 4096, f.n = 4096, f.k = 7168, f.fp32_d = true;
  EXPECT_TRUE(same(plan_bf16_gemm(f), plan::choose_bf16_config({4096, 4096, 7168, 1}, sms, GemmRecipe::kBf16Fp32, 16,
                                                                GroupedKind::kDense)));
  // K-grouped tn: mean K per expert, MN-major operands, FP32 D.
  Bf16PlanQuery g;
  g.layout = GemmLayout::kKGrouped, g.m = 4096, g.n = 7168, g.k = 32768, g.num_groups = 16;
  EXPECT_TRUE(same(plan_bf16_gemm(g), plan::choose_bf16_config({4096, 7168, 2048, 16}, sms, GemmRecipe::kBf16Fp32, 64,
                                                                GroupedKind::kKGrouped)));
  // Masked with expected rows per expert.
  Bf16PlanQuery m;
  m.layout = GemmLayout::kMasked, m.m = 32 * 4096, m.n = 6144, m.k = 7168, m.num_groups = 32, m.expected_m = 192;
  const plan::ShapeHint masked_hint{192, 6144, 7168, 32};
  EXPECT_TRUE(same(plan_bf16_gemm(m), plan::with_wide_grouped_bf16_tiles(
                                          plan::choose_bf16_config(masked_hint, sms, GemmRecipe::kBf16, 16,
                                                                   GroupedKind::kMasked),
                                          masked_hint, static_cast<int>(GemmRecipe::kBf16), GroupedKind::kMasked)));
  EXPECT_EQ(plan_bf16_gemm(m).block_m, 256);  // masked, expected M < 512: 256x128 (with_wide_grouped_bf16_tiles)
  EXPECT_EQ(plan_bf16_gemm(m).block_n, 128);
  // FP8 weight gradients, dense and k-grouped.
  EXPECT_TRUE(same(plan_fp8_gemm_wgrad(4096, 4096, 7168), plan::choose_fp8_1d1d_config({4096, 4096, 7168, 1}, sms)));
  EXPECT_TRUE(same(plan_fp8_gemm_wgrad(4096, 7168, 32768, 16), plan::choose_fp8_1d1d_config({4096, 7168, 2048, 16}, sms)));
}

TEST(Fp8Plan, PairClusterOnlyWhereMeasured) {
  // M = 128 on wide tiles: the pair shares B (measured 4-14% faster).
  for (int n : {7168, 24576}) {
    const plan::ShapeHint hint{128, n, 16384, 1};
    const KernelConfig c = plan::with_measured_pair_cluster(plan::choose_fp8_1d2d_config(hint, 132, false, kernels::GroupedKind::kDense), hint);
    if (c.block_m == 64 && c.block_n >= 128) {
      EXPECT_EQ(c.cluster_m, 2) << c.to_string();
      EXPECT_NO_THROW(plan::check_fp8_1d2d_config(c, kernels::GroupedKind::kDense));
    } else {
      EXPECT_EQ(c.cluster_m, 1) << c.to_string();
    }
  }
  const KernelConfig wide =
      plan::with_measured_pair_cluster(plan::choose_fp8_1d2d_config({128, 7168, 16384, 1}, 132, false, kernels::GroupedKind::kDense), {128, 7168, 16384, 1});
  EXPECT_EQ(wide.block_n, 128);
  EXPECT_EQ(wide.cluster_m, 2);
  // Not for narrow tiles, one row, more than one pair, several groups, or a single SM.
  const plan::ShapeHint narrow{128, 2112, 7168, 1};
  EXPECT_EQ(plan::with_measured_pair_cluster(plan::choose_fp8_1d2d_config(narrow, 132, false, kernels::GroupedKind::kDense), narrow).cluster_m, 1);
  for (const plan::ShapeHint& hint : {plan::ShapeHint{1, 7168, 16384, 1}, plan::ShapeHint{64, 7168, 16384, 1},
                                      plan::ShapeHint{256, 7168, 16384, 1}, plan::ShapeHint{128, 7168, 16384, 6}}) {
    EXPECT_EQ(plan::with_measured_pair_cluster(plan::choose_fp8_1d2d_config(hint, 132, false, kernels::GroupedKind::kDense), hint).cluster_m, 1)
        << hint.m_per_group << " rows, " << hint.num_groups << " groups";
  }
  const plan::ShapeHint pair{128, 7168, 16384, 1};
  EXPECT_EQ(plan::with_measured_pair_cluster(plan::choose_fp8_1d2d_config(pair, 1, false, kernels::GroupedKind::kDense), pair).cluster_m, 1);
}

TEST(Fp8Plan, DenseWeightGradientsTake128x128WhereMeasured) {
  // Dense FP8 weight gradients (FP32 D): 128x128 with 4 stages where the model's wider 3-stage tile runs three or
  // more waves (measured 1-16% faster, docs/results/2026-12-03-rtg-and-wgrad-tiles.md), unless a 192-row tile saves
  // a partial wave (below).
  constexpr int kRecipe = static_cast<int>(kernels::sm90::GemmRecipe::kFp8_1d1d);
  for (long long m : {24576LL, 32768LL, 7168LL, 4096LL}) {
    const KernelConfig c = plan::choose_fp8_1d1d_config({m, 4096, 7168, 1}, 132);
    EXPECT_EQ(c.block_m, 128) << m;
    EXPECT_EQ(c.block_n, 128) << m;
    EXPECT_EQ(c.stages, plan::gemm_max_stages(128, 128, kRecipe, kernels::GroupedKind::kDense));
    EXPECT_EQ(c.stages, 4);
    EXPECT_EQ(c.smem_bytes, plan::gemm_smem_bytes(c, kRecipe, kernels::GroupedKind::kDense));
    EXPECT_NO_THROW(plan::check_fp8_1d1d_config(c, kernels::GroupedKind::kDense));
  }
  // The plan query answers the same.
  EXPECT_EQ(plan_fp8_gemm_wgrad(24576, 4096, 1536).block_n, 128);
}

TEST(Fp8Plan, WeightGradientsTake192RowTilesWhereMeasured) {
  // Three math warpgroups (docs/results/2026-12-04-three-warpgroups.md): every k-grouped row of the suite on
  // 192x128 (7% faster than 128x160 on average, -1% to +13% per row), and the two dense rows where a 192-row tile
  // saves a partial wave.
  constexpr int kRecipe = static_cast<int>(kernels::sm90::GemmRecipe::kFp8_1d1d);
  auto expect_tile = [&](const plan::ShapeHint& hint, int block_m, int block_n, int stages) {
    const KernelConfig c = plan::choose_fp8_1d1d_config(hint, 132);
    EXPECT_EQ(c.block_m, block_m) << c.to_string();
    EXPECT_EQ(c.block_n, block_n) << c.to_string();
    EXPECT_EQ(c.stages, stages) << c.to_string();
    EXPECT_EQ(c.math_warpgroups, math_warpgroups_for(block_m));
    EXPECT_EQ(c.smem_bytes, plan::gemm_smem_bytes(c, kRecipe, kernels::GroupedKind::kDense));
    EXPECT_NO_THROW(plan::check_fp8_1d1d_config(c, kernels::GroupedKind::kDense));
  };
  for (const int groups : {4, 8, 16}) {
    const long long k = 32768 / groups;
    expect_tile({4096, 7168, static_cast<int>(k), groups}, 192, 128, 3);
    expect_tile({7168, 2048, static_cast<int>(k), groups}, 192, 128, 3);
  }
  expect_tile({2112, 4096, 7168, 1}, 192, 128, 3);  // 3 waves against 5 of 128x128
  expect_tile({576, 4096, 7168, 1}, 192, 96, 4);    // one wave of a smaller tile than 128x160
  // Where 192-row tiles would add work (a small k-grouped problem: one wave of 64x64 tiles), the model's tile.
  const KernelConfig small = plan::choose_fp8_1d1d_config({256, 512, 256, 4}, 132);
  EXPECT_EQ(small.block_m, 64) << small.to_string();
  EXPECT_EQ(plan::with_three_warpgroup_tiles(small, {256, 512, 256, 4}, 132, kRecipe).block_m, 64);
}

// One block of rows (M = 65..128, dense, FP8 (1,128,128) or BF16 D): a 128-row tile at the width and split that put
// the most CTAs to work without passing the SMs (ties: fewer ranks, then the wider tile), when that is at least 3/4
// of what the plan engaged; FP8 keeps the plan when the 128-row tile is split and engages no more CTAs than it.
// Measured on the suite rows (docs/results/2026-12-03-cublas-tiles.md, run C; docs/results/2026-12-07-m128-tiles-and-
// bands.md, runs 1-3).
TEST(Fp8Plan, RowBlockTilesForOneBlockOfRows) {
  using kernels::GroupedKind;
  using kernels::sm90::GemmRecipe;
  constexpr int kFp8 = static_cast<int>(GemmRecipe::kFp8_1d2d);
  constexpr int kBf16 = static_cast<int>(GemmRecipe::kBf16);
  auto planned = [](plan::ShapeHint h, int recipe, GroupedKind layout = GroupedKind::kDense) {
    KernelConfig c = recipe == kFp8 ? plan::choose_fp8_1d2d_config(h, 132, false, layout)
                                    : plan::choose_bf16_config(h, 132, static_cast<GemmRecipe>(recipe), 16, layout);
    if (layout != GroupedKind::kDense) return plan::with_row_block_tiles(c, h, recipe, layout);
    if (recipe == kFp8) c = plan::with_measured_pair_cluster(c, h);
    return plan::with_row_block_tiles(plan::with_k_split(c, h, recipe, layout), h, recipe, layout);
  };
  auto expect_tile = [](const KernelConfig& c, int bm, int bn, int splits) {
    EXPECT_EQ(c.block_m, bm) << c.to_string();
    EXPECT_EQ(c.block_n, bn) << c.to_string();
    EXPECT_EQ(c.k_splits, splits) << c.to_string();
    EXPECT_EQ(c.cluster_m, 1) << c.to_string();
  };
  // 66 tiles of 128x32 x 2 ranks would put 132 CTAs to work, as many as the plan's 132 tiles of 64x32 alone: the
  // plan stays (FP8: fewer ranks on a tie, the plan's own tile included).
  expect_tile(planned({128, 2112, 7168, 1}, kFp8), 64, 32, 1);
  expect_tile(planned({128, 1536, 7168, 1}, kFp8), 64, 32, 1);     // 96 CTAs either way: the plan's, without a split
  expect_tile(planned({128, 3200, 7168, 1}, kFp8), 128, 32, 1);    // 100 CTAs either way, no split either way
  expect_tile(planned({128, 4096, 7168, 1}, kFp8), 128, 32, 1);    // 128 CTAs: of two ties, the one without a split
  expect_tile(planned({128, 7168, 2048, 1}, kFp8), 128, 64, 1);    // 112 tiles (a split would pass the SMs)
  expect_tile(planned({100, 7168, 16384, 1}, kFp8), 128, 64, 1);   // partial rows: the same block
  expect_tile(planned({128, 576, 7168, 1}, kFp8), 64, 32, 3);      // 36 CTAs against 108: the split decode plan
  EXPECT_EQ(planned({128, 24576, 1536, 1}, kFp8).block_n, 192);    // 384 tiles of 64 pass the SMs: plan kept
  expect_tile(planned({128, 2112, 7168, 1}, kBf16), 128, 32, 2);   // BF16: 132 CTAs against 64 wide split 3 ways' 99
  expect_tile(planned({128, 4096, 7168, 1}, kBf16), 128, 32, 1);   // 128 CTAs: 32 wide alone before 64 split 2 ways
  expect_tile(planned({128, 7168, 2048, 1}, kBf16), 128, 64, 1);   // 32 wide would pass the SMs
  // Outside its rows, recipes and layout: unchanged.
  EXPECT_EQ(planned({64, 4096, 7168, 1}, kFp8).block_m, 64);
  EXPECT_NE(planned({129, 4096, 7168, 1}, kFp8).block_n, 32);
  const plan::ShapeHint fp32{128, 4096, 7168, 1};
  const KernelConfig fp32_plan = plan::choose_bf16_config(fp32, 132, GemmRecipe::kBf16Fp32, 16, GroupedKind::kDense);
  EXPECT_EQ(plan::with_row_block_tiles(fp32_plan, fp32, static_cast<int>(GemmRecipe::kBf16Fp32), GroupedKind::kDense)
                .to_string(),
            fp32_plan.to_string());
  const plan::ShapeHint grouped{128, 4096, 7168, 8};
  const KernelConfig masked = plan::choose_fp8_1d2d_config(grouped, 132, false, GroupedKind::kMasked);
  EXPECT_EQ(plan::with_row_block_tiles(masked, grouped, kFp8, GroupedKind::kMasked).to_string(), masked.to_string());
}

TEST(Bf16Plan, Fp32OutputTakes192RowTilesWhereTheySaveAPartialWave) {
  // BF16 with FP32 D (docs/results/2026-12-04-three-warpgroups.md, run 6): 192x128 on the two TN weight-gradient
  // rows where it saves a partial wave (576 x 4096: +26-27%, 2112 x 4096: +5-7%); the other rows and k-grouped keep
  // their tile (7-16% and 0-9% slower on 192x128).
  constexpr int kRecipe = static_cast<int>(kernels::sm90::GemmRecipe::kBf16Fp32);
  auto tn = [](int m, int n, int k) {
    Bf16PlanQuery q;
    q.m = m;
    q.n = n;
    q.k = k;
    q.a_mn_major = q.b_mn_major = true;
    q.fp32_d = true;
    return plan_bf16_gemm(q);
  };
  for (const int m : {576, 2112}) {
    const KernelConfig c = tn(m, 4096, 7168);
    EXPECT_EQ(c.block_m, 192) << c.to_string();
    EXPECT_EQ(c.block_n, 128) << c.to_string();
    EXPECT_EQ(c.math_warpgroups, 3);
    EXPECT_EQ(c.stages, plan::gemm_max_stages(192, 128, kRecipe, kernels::GroupedKind::kDense));
    EXPECT_NO_THROW(plan::check_bf16_config(c, kernels::sm90::GemmRecipe::kBf16Fp32, 3, kernels::GroupedKind::kDense));
  }
  for (const auto& [m, k] : {std::pair{24576, 1536}, std::pair{32768, 512}, std::pair{7168, 16384},
                             std::pair{4096, 7168}, std::pair{7168, 2048}}) {
    EXPECT_NE(tn(m, 4096, k).block_m, 192) << m << " x " << k;
  }
  Bf16PlanQuery kq;
  kq.layout = GemmLayout::kKGrouped;
  kq.m = 4096;
  kq.n = 7168;
  kq.k = 16 * 2048;
  kq.num_groups = 16;
  EXPECT_NE(plan_bf16_gemm(kq).block_m, 192);
}

// BF16 D on the m-grouped layouts: where the model plans a large tile, 128x256 (measured faster on those rows,
// docs/results/2026-12-03-cublas-tiles.md, runs E and F); dense, FP32 D, small tiles and narrow N keep their plan.
TEST(Bf16Plan, WideTilesForLargeGroupedTiles) {
  using kernels::GroupedKind;
  using kernels::sm90::GemmRecipe;
  constexpr int kBf16 = static_cast<int>(GemmRecipe::kBf16);
  auto wide = [](plan::ShapeHint h, GroupedKind layout, GemmRecipe recipe = GemmRecipe::kBf16) {
    const KernelConfig c = plan::choose_bf16_config(h, 132, recipe, 16, layout);
    return std::make_pair(c, plan::with_wide_grouped_bf16_tiles(c, h, static_cast<int>(recipe), layout));
  };
  for (GroupedKind layout :
       {GroupedKind::kMasked, GroupedKind::kContiguousGroupEnds, GroupedKind::kContiguousRowToGroup}) {
    const auto [before, after] = wide({layout == GroupedKind::kMasked ? 1024 : 192, 6144, 7168, 32}, layout);
    EXPECT_GE(before.block_m * before.block_n, 128 * 192) << before.to_string();
    EXPECT_EQ(after.block_m, 128) << after.to_string();
    EXPECT_EQ(after.block_n, 256) << after.to_string();
    EXPECT_EQ(after.stages, plan::gemm_max_stages(128, 256, kBf16, layout));
    EXPECT_NO_THROW(plan::check_bf16_config(after, GemmRecipe::kBf16, 0, layout));
    EXPECT_NO_THROW(plan::check_bf16_config(after, GemmRecipe::kBf16, 2, layout));
  }
  // Masked experts of fewer than 512 expected rows: 256x128, which skips a warpgroup's wave without rows
  // (docs/results/2026-12-06-bf16-grouped-tiles.md); from 512 on, 128x256.
  for (int expected : {192, 511, 512}) {
    const auto [before, after] = wide({expected, 6144, 7168, 32}, GroupedKind::kMasked);
    EXPECT_GE(before.block_m * before.block_n, 128 * 192) << before.to_string();
    EXPECT_EQ(after.block_m, expected < 512 ? 256 : 128) << expected << ": " << after.to_string();
    EXPECT_EQ(after.block_n, expected < 512 ? 128 : 256) << expected << ": " << after.to_string();
    EXPECT_EQ(after.stages, plan::gemm_max_stages(after.block_m, after.block_n, kBf16, GroupedKind::kMasked));
    EXPECT_NO_THROW(plan::check_bf16_config(after, GemmRecipe::kBf16, 0, GroupedKind::kMasked));
    EXPECT_NO_THROW(plan::check_bf16_config(after, GemmRecipe::kBf16, 2, GroupedKind::kMasked));
  }
  const auto [small, small_after] = wide({20, 6144, 7168, 32}, GroupedKind::kMasked);  // decode: 64-row tiles
  EXPECT_EQ(small_after.to_string(), small.to_string());
  const auto [narrow, narrow_after] = wide({4096, 256, 7168, 8}, GroupedKind::kMasked);
  EXPECT_EQ(narrow_after.to_string(), narrow.to_string());
  const auto [dense, dense_after] = wide({4096, 4096, 7168, 1}, GroupedKind::kDense);
  EXPECT_EQ(dense_after.to_string(), dense.to_string());
  const auto [kg, kg_after] = wide({4096, 7168, 2048, 16}, GroupedKind::kKGrouped, GemmRecipe::kBf16Fp32);
  EXPECT_EQ(kg_after.to_string(), kg.to_string());
  // The widths the kernel takes: 256 with BF16 D (with or without C), not 208-240, not with FP32 D.
  KernelConfig c = dense_after;
  c.block_m = 128;
  c.math_warpgroups = 2;
  c.block_n = 256;
  c.stages = plan::gemm_max_stages(128, 256, kBf16, GroupedKind::kDense);
  c.smem_bytes = plan::gemm_smem_bytes(c, kBf16, GroupedKind::kDense);
  EXPECT_NO_THROW(plan::check_bf16_config(c, GemmRecipe::kBf16, 0, GroupedKind::kDense));
  EXPECT_NO_THROW(plan::check_bf16_config(c, GemmRecipe::kBf16AddC, 3, GroupedKind::kDense));
  EXPECT_THROW(plan::check_bf16_config(c, GemmRecipe::kBf16Fp32, 0, GroupedKind::kDense), Error);
  c.block_n = 224;
  EXPECT_THROW(plan::check_bf16_config(c, GemmRecipe::kBf16, 0, GroupedKind::kDense), Error);
}

// BF16 k-grouped plans a rasterisation band of 4 (plan::with_kgrouped_bf16_band, measured on the twelve BF16
// k-grouped suite rows); the other BF16 layouts and FP8 k-grouped leave the band to the launch (0).
TEST(Bf16Plan, KGroupedTakesBand4) {
  for (const auto& [m, n] : {std::pair{4096, 7168}, std::pair{7168, 2048}, std::pair{704, 320}}) {
    Bf16PlanQuery kq;
    kq.layout = GemmLayout::kKGrouped;
    kq.m = m;
    kq.n = n;
    kq.k = 8 * 4096;
    kq.num_groups = 8;
    kq.a_mn_major = kq.b_mn_major = true;
    kq.fp32_d = true;
    const KernelConfig c = plan_bf16_gemm(kq);
    EXPECT_EQ(c.raster_band, plan::kBf16KGroupedBand) << m << " x " << n << ": " << c.to_string();
    EXPECT_NE(c.to_string().find("raster band 4"), std::string::npos) << c.to_string();
  }
  for (GemmLayout layout : {GemmLayout::kDense, GemmLayout::kMasked, GemmLayout::kContiguousGroupEnds,
                            GemmLayout::kContiguousRowToGroup}) {
    Bf16PlanQuery q;
    q.layout = layout;
    q.m = 4096;
    q.n = 7168;
    q.k = 2048;
    q.num_groups = layout == GemmLayout::kDense ? 1 : 8;
    EXPECT_EQ(plan_bf16_gemm(q).raster_band, 0) << static_cast<int>(layout);
  }
  EXPECT_EQ(plan_fp8_gemm_wgrad(4096, 7168, 8 * 4096, 8).raster_band, 0);
  // A band already set (an override passed through the rule) is kept.
  KernelConfig forced;
  forced.raster_band = 2;
  EXPECT_EQ(plan::with_kgrouped_bf16_band(forced, static_cast<int>(kernels::sm90::GemmRecipe::kBf16Fp32),
                                          kernels::GroupedKind::kKGrouped)
                .raster_band,
            2);
}

// Split K: a dense problem whose 64-row tiles leave SMs idle takes the tile width (16-64) and rank count (2-4, 8 K
// blocks a slice at least, clusters of 3 or 4 in 85% of the SMs) that put the most CTAs to work, when that is at
// least 1.5 times as many as the planned tile alone (decode on N = 576 and 256); everything else runs unsplit.
TEST(Fp8Plan, KSplitOnlyWhereTilesLeaveSmsIdle) {
  using kernels::GroupedKind;
  constexpr int kFp8 = static_cast<int>(kernels::sm90::GemmRecipe::kFp8_1d2d);
  constexpr int kBf16Fp32 = static_cast<int>(kernels::sm90::GemmRecipe::kBf16Fp32);
  auto planned = [](plan::ShapeHint h, int recipe, int sms = 132) {
    const KernelConfig c =
        recipe == kFp8 ? plan::choose_fp8_1d2d_config(h, sms, false, GroupedKind::kDense)
                       : plan::choose_bf16_config(h, sms, static_cast<kernels::sm90::GemmRecipe>(recipe), 16,
                                                  GroupedKind::kDense);
    return plan::with_k_split(c, h, recipe, GroupedKind::kDense);
  };
  const KernelConfig decode = planned({1, 576, 7168, 1}, kFp8);  // 36 tiles of 64x16 -> 108 CTAs
  EXPECT_EQ(decode.block_n, 16);
  EXPECT_EQ(decode.k_splits, 3) << decode.to_string();
  EXPECT_NO_THROW(plan::check_fp8_1d2d_config(decode, GroupedKind::kDense));
  EXPECT_EQ(decode.smem_bytes, plan::gemm_smem_bytes(decode, kFp8, GroupedKind::kDense));
  const KernelConfig m128 = planned({128, 576, 7168, 1}, kFp8);  // 72 tiles of 64x16 -> 36 of 64x32 x 3
  EXPECT_EQ(m128.block_n, 32);
  EXPECT_EQ(m128.k_splits, 3) << m128.to_string();
  EXPECT_NO_THROW(plan::check_fp8_1d2d_config(m128, GroupedKind::kDense));
  EXPECT_EQ(planned({1, 256, 7168, 1}, kBf16Fp32).k_splits, 4);    // 16 tiles -> 64 CTAs
  EXPECT_EQ(planned({128, 256, 7168, 1}, kBf16Fp32).k_splits, 3);  // 32 tiles: x 4 = 128 is past 85% of the SMs
  // 36 of 40 SMs at work already: no more CTAs to gain, but the 16-wide tile widens to 32 split 2 ways (36 CTAs).
  const KernelConfig few_sms = planned({1, 576, 7168, 1}, kFp8, 40);
  EXPECT_EQ(few_sms.block_n, 32);
  EXPECT_EQ(few_sms.k_splits, 2) << few_sms.to_string();
  EXPECT_EQ(planned({1, 576, 1024, 1}, kFp8).k_splits, 1);         // 8 K blocks: too short to split
  // 132 tiles of 64x16 fill the SMs: 66 tiles of 64x32 split 2 ways keep 132 CTAs at work.
  const KernelConfig wide = planned({1, 2112, 7168, 1}, kFp8);
  EXPECT_EQ(wide.block_n, 32);
  EXPECT_EQ(wide.k_splits, 2) << wide.to_string();
  EXPECT_NO_THROW(plan::check_fp8_1d2d_config(wide, GroupedKind::kDense));
  EXPECT_EQ(planned({1, 4096, 7168, 1}, kFp8).k_splits, 1);        // 128 tiles of 64x32
  EXPECT_EQ(planned({128, 2112, 7168, 1}, kFp8).k_splits, 1);      // 132 tiles of 64x32 (with_row_block_tiles splits)
  EXPECT_EQ(planned({4096, 576, 7168, 1}, kFp8).k_splits, 1);
  // An MN-major BF16 B (whole 64-wide boxes) keeps its plan: no split has run with it on the device yet.
  const plan::ShapeHint narrow{1, 576, 7168, 1};
  const KernelConfig mn_b_plan =
      plan::choose_bf16_config(narrow, 132, kernels::sm90::GemmRecipe::kBf16, 64, GroupedKind::kDense);
  const KernelConfig mn_b = plan::with_k_split(mn_b_plan, narrow, static_cast<int>(kernels::sm90::GemmRecipe::kBf16),
                                               GroupedKind::kDense, 64);
  EXPECT_EQ(mn_b.k_splits, 1) << mn_b.to_string();
  EXPECT_EQ(mn_b.block_n, mn_b_plan.block_n);
  // Grouped problems and 128-row tiles are left alone.
  plan::ShapeHint grouped{20, 576, 7168, 6};
  KernelConfig masked = plan::choose_fp8_1d2d_config(grouped, 132, false, GroupedKind::kMasked);
  EXPECT_EQ(plan::with_k_split(masked, grouped, kFp8, GroupedKind::kMasked).k_splits, 1);
  // Overrides: a split needs the dense layout, 64-row tiles at most 64 wide, no pair.
  KernelConfig c = decode;
  EXPECT_THROW(plan::check_fp8_1d2d_config(c, GroupedKind::kMasked), Error);
  c.block_n = 96;
  EXPECT_THROW(plan::check_fp8_1d2d_config(c, GroupedKind::kDense), Error);
  c = decode;
  c.cluster_m = 2;
  EXPECT_THROW(plan::check_fp8_1d2d_config(c, GroupedKind::kDense), Error);
  c = decode;
  c.k_splits = 5;
  EXPECT_THROW(plan::check_fp8_1d2d_config(c, GroupedKind::kDense), Error);
}

TEST(Fp8Plan, OverridesAreChecked) {
  KernelConfig c;
  c.block_m = 96;
  EXPECT_THROW(plan::check_fp8_1d2d_config(c, kernels::GroupedKind::kDense), Error);
  c = KernelConfig{};
  c.block_n = 176;  // would touch three scale blocks at some offsets
  EXPECT_THROW(plan::check_fp8_1d2d_config(c, kernels::GroupedKind::kDense), Error);
  c = KernelConfig{};
  c.block_n = 192;
  c.stages = 8;  // does not fit in shared memory
  try {
    plan::check_fp8_1d2d_config(c, kernels::GroupedKind::kDense);
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("options.config"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("shared memory"), std::string::npos) << e.what();
  }
  // A 1x2 cluster (A shared along N) needs 128- or 256-row tiles; 2x2 is not a pair.
  c = KernelConfig{};
  c.cluster_n = 2;
  EXPECT_NO_THROW(plan::check_fp8_1d2d_config(c, kernels::GroupedKind::kDense));
  c.block_m = 256;
  c.stages = 3;
  EXPECT_NO_THROW(plan::check_fp8_1d2d_config(c, kernels::GroupedKind::kDense));
  c.block_m = 64;
  c.math_warpgroups = 1;
  EXPECT_THROW(plan::check_fp8_1d2d_config(c, kernels::GroupedKind::kDense), Error);
  c = KernelConfig{};
  c.cluster_m = 2;
  c.cluster_n = 2;
  EXPECT_THROW(plan::check_fp8_1d2d_config(c, kernels::GroupedKind::kDense), Error);
  c = KernelConfig{};
  c.block_m = 256;
  c.stages = 3;
  c.cluster_m = 2;  // 256-row tiles share A, not B, so far
  EXPECT_THROW(plan::check_fp8_1d2d_config(c, kernels::GroupedKind::kDense), Error);
  // 192-row tiles (three math warpgroups): FP32 D only, block_n a multiple of 32 up to 128.
  const KernelConfig three = testing::tile_config(192, 128, 128, 3);
  EXPECT_NO_THROW(plan::check_fp8_1d1d_config(three, kernels::GroupedKind::kDense));
  EXPECT_INVALID(plan::check_fp8_1d2d_config(three, kernels::GroupedKind::kDense), "192-row tiles");
  EXPECT_INVALID(plan::check_fp8_1d1d_config(testing::tile_config(192, 160, 128, 3), kernels::GroupedKind::kDense), "192-row tiles");
  EXPECT_INVALID(plan::check_fp8_1d1d_config(testing::tile_config(192, 112, 128, 3), kernels::GroupedKind::kDense), "192-row tiles");
  // Recipe (1,1,128) pairs share A along N only (dense and k-grouped), on tiles of 128 rows or more.
  KernelConfig wgrad_pair = three;
  wgrad_pair.cluster_n = 2;
  EXPECT_NO_THROW(plan::check_fp8_1d1d_config(wgrad_pair, kernels::GroupedKind::kDense));
  EXPECT_NO_THROW(plan::check_fp8_1d1d_config(wgrad_pair, kernels::GroupedKind::kKGrouped));
  wgrad_pair.cluster_n = 1, wgrad_pair.cluster_m = 2;
  EXPECT_INVALID(plan::check_fp8_1d1d_config(wgrad_pair, kernels::GroupedKind::kKGrouped), "cluster_m 1");
  KernelConfig narrow_pair = testing::tile_config(64, 128, 128, 3);
  narrow_pair.cluster_n = 2;
  EXPECT_INVALID(plan::check_fp8_1d1d_config(narrow_pair, kernels::GroupedKind::kKGrouped), "block_m 128 or more");
  // Other layouts keep A unshared (k-grouped BF16 reads an MN-major A).
  KernelConfig bf16_kgrouped_pair = testing::tile_config(128, 128, 64, 3);
  bf16_kgrouped_pair.cluster_n = 2;
  EXPECT_INVALID(plan::check_bf16_config(bf16_kgrouped_pair, kernels::sm90::GemmRecipe::kBf16Fp32, 3,
                                         kernels::GroupedKind::kKGrouped),
                 "1x2 cluster");
  const KernelConfig bf16_three = testing::tile_config(192, 128, 64, 3);
  EXPECT_NO_THROW(plan::check_bf16_config(bf16_three, kernels::sm90::GemmRecipe::kBf16Fp32, 3,
                                          kernels::GroupedKind::kKGrouped));
  EXPECT_INVALID(plan::check_bf16_config(bf16_three, kernels::sm90::GemmRecipe::kBf16, 0, kernels::GroupedKind::kDense),
                 "192-row tiles");
  EXPECT_INVALID(
      plan::check_bf16_config(bf16_three, kernels::sm90::GemmRecipe::kBf16Fp32, 0, kernels::GroupedKind::kMasked),
      "192-row tiles");
}

// One stage more than fits beside a whole FP32 staging buffer (half staging, GemmSmemLayout::half_staging) is an
// override that has not yet run on a GPU: refused, naming the switch, unless the switch is set; the planner never
// asks for it, and configurations that do not need it are unaffected by the switch.
TEST(Fp8Plan, HalfStagingOnlyBehindItsSwitch) {
  const auto kgrouped = kernels::GroupedKind::kKGrouped;
  const auto dense = kernels::GroupedKind::kDense;
  const int recipe = static_cast<int>(kernels::sm90::GemmRecipe::kFp8_1d1d);
  EXPECT_EQ(plan::gemm_max_stages(192, 128, recipe, kgrouped), 3);
  EXPECT_EQ(plan::gemm_max_stages(128, 128, recipe, dense), 4);
  const KernelConfig h4 = testing::tile_config(192, 128, 128, 4), h5 = testing::tile_config(128, 128, 128, 5);
  const KernelConfig whole = testing::tile_config(192, 128, 128, 3);
  EXPECT_TRUE(plan::gemm_half_staged(h4, recipe, kgrouped));
  EXPECT_TRUE(plan::gemm_half_staged(h5, recipe, dense));
  EXPECT_FALSE(plan::gemm_half_staged(whole, recipe, kgrouped));
  {
    test::ScopedEnv off(plan::kHalfStagingVariable, std::nullopt);
    EXPECT_INVALID(plan::check_fp8_1d1d_config(h4, kgrouped), plan::kHalfStagingVariable);
    EXPECT_INVALID(plan::check_fp8_1d1d_config(h5, dense), "half an FP32 staging buffer", "(4 fit beside a whole one)");
    EXPECT_NO_THROW(plan::check_fp8_1d1d_config(whole, kgrouped));
  }
  {
    test::ScopedEnv on(plan::kHalfStagingVariable, std::string("1"));
    EXPECT_NO_THROW(plan::check_fp8_1d1d_config(h4, kgrouped));
    EXPECT_NO_THROW(plan::check_fp8_1d1d_config(h5, dense));
    EXPECT_NO_THROW(plan::check_fp8_1d1d_config(whole, kgrouped));
    // Still refused where even half a buffer leaves too little room, or where the tile cannot stage half.
    EXPECT_INVALID(plan::check_fp8_1d1d_config(testing::tile_config(192, 128, 128, 5), kgrouped), "more shared memory");
    EXPECT_INVALID(plan::check_fp8_1d1d_config(testing::tile_config(192, 96, 128, 5), kgrouped), "more shared memory");
  }
  // Every planned weight-gradient configuration stages a whole buffer.
  for (const long long m : {256LL, 2048LL, 4096LL, 7168LL}) {
    for (const int n : {512, 2048, 4096, 7168}) {
      for (const int groups : {1, 4, 16}) {
        const KernelConfig planned = plan::choose_fp8_1d1d_config(plan::ShapeHint{m, n, 4096, groups}, 132);
        EXPECT_FALSE(plan::gemm_half_staged(planned, recipe, groups > 1 ? kgrouped : dense)) << planned.to_string();
      }
    }
  }
}

TEST(Fp8EntryPoint, ValidArgumentsWithoutADeviceFailWithNoDevice) {
  if (device_info().available) GTEST_SKIP() << "a CUDA device is present: fake pointers must not reach it";
  void* fake = reinterpret_cast<void*>(0x100000);
  const int m = 256, n = 512, k = 1024;
  Fp8Operand a{TensorView::contiguous(fake, DType::kFloat8E4M3, {m, k}),
               TensorView::strided(fake, DType::kFloat32, {m, k / 128}, {1, m})};
  Fp8Operand b{TensorView::contiguous(fake, DType::kFloat8E4M3, {n, k}),
               TensorView::contiguous(fake, DType::kFloat32, {n / 128, k / 128})};
  try {
    fp8_gemm_nt(a, b, TensorView::contiguous(fake, DType::kBFloat16, {m, n}), nullptr);
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNoDevice) << e.what();
  }
  // A broken argument is reported as such first, device or not.
  try {
    fp8_gemm_nt(a, b, TensorView::contiguous(fake, DType::kFloat32, {m, n}), nullptr);
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
  }
}

}  // namespace
}  // namespace moegemm

namespace moegemm {
namespace {

// The weight-gradient and BF16 entry points validate first, say which forms are not built yet, and stop at
// "no CUDA device" only after that (BF16 D with C, aliasing D or not, is built: it reaches the device check).
TEST(WgradAndBf16EntryPoints, RejectUnbuiltFormsBeforeLookingForADevice) {
  if (device_info().available) GTEST_SKIP() << "a CUDA device is present: fake pointers must not reach it";
  void* fake = reinterpret_cast<void*>(0x100000);
  const TensorView a = TensorView::contiguous(fake, DType::kBFloat16, {256, 512});
  const TensorView a_mn = TensorView::strided(fake, DType::kBFloat16, {256, 512}, {1, 256});
  const TensorView b = TensorView::contiguous(fake, DType::kBFloat16, {384, 512});
  const TensorView d = TensorView::contiguous(fake, DType::kBFloat16, {256, 384});
  const TensorView c = TensorView::contiguous(reinterpret_cast<void*>(0x4000000), DType::kBFloat16, {256, 384});
  const TensorView d32 = TensorView::contiguous(fake, DType::kFloat32, {256, 384});
  auto code_of = [](auto&& call) {
    try {
      call();
    } catch (const Error& e) {
      return e.code();
    }
    return ErrorCode::kInternal;  // no error at all: the test fails below
  };
  EXPECT_EQ(code_of([&] { bf16_gemm(a_mn, b, d, nullptr, nullptr); }), ErrorCode::kNoDevice);
  EXPECT_EQ(code_of([&] { bf16_gemm(a, b, d, &d, nullptr); }), ErrorCode::kNoDevice);
  EXPECT_EQ(code_of([&] { bf16_gemm(a_mn, b, d, &c, nullptr); }), ErrorCode::kNoDevice);
  EXPECT_EQ(code_of([&] { bf16_gemm(a, b, d, &d32, nullptr); }), ErrorCode::kInvalidArgument);  // C's dtype
  EXPECT_EQ(code_of([&] { bf16_gemm(a, b, d, nullptr, nullptr); }), ErrorCode::kNoDevice);
  EXPECT_EQ(code_of([&] { bf16_gemm(a, b, d32, &d32, nullptr); }), ErrorCode::kNoDevice);

  const int m = 256, n = 384, k = 512;
  Fp8Operand fa{TensorView::contiguous(fake, DType::kFloat8E4M3, {m, k}),
                TensorView::strided(fake, DType::kFloat32, {m, k / 128}, {1, m})};
  Fp8Operand fb{TensorView::contiguous(fake, DType::kFloat8E4M3, {n, k}),
                TensorView::strided(fake, DType::kFloat32, {n, k / 128}, {1, n})};
  GemmOptions wgrad;
  wgrad.recipe = kRecipe1x1x128;
  EXPECT_EQ(code_of([&] { fp8_gemm_nt_1d1d(fa, fb, d32, &d32, nullptr, wgrad); }), ErrorCode::kNoDevice);
  EXPECT_EQ(code_of([&] { fp8_gemm_nt_1d1d(fa, fb, d, nullptr, nullptr, wgrad); }),
            ErrorCode::kInvalidArgument);  // BF16 D: recipe (1,1,128) writes FP32
  EXPECT_EQ(code_of([&] { k_grouped_fp8_gemm_nt(fa, fb, d32, &d32, KGroupedLayout{}, nullptr, wgrad); }),
            ErrorCode::kInvalidArgument);  // no experts
  // Two experts of K 256 each: packed A [M * 512] and B [N * 512], D [2, M, N].
  Fp8Operand ka{TensorView::contiguous(fake, DType::kFloat8E4M3, {m * k}),
                TensorView::strided(fake, DType::kFloat32, {m, k / 128}, {1, m})};
  Fp8Operand kb{TensorView::contiguous(fake, DType::kFloat8E4M3, {n * k}),
                TensorView::strided(fake, DType::kFloat32, {n, k / 128}, {1, n})};
  const TensorView kd = TensorView::contiguous(fake, DType::kFloat32, {2, m, n});
  KGroupedLayout two{{256, 256}, {}};
  EXPECT_EQ(code_of([&] { k_grouped_fp8_gemm_nt(ka, kb, kd, &kd, two, nullptr, wgrad); }), ErrorCode::kNoDevice);
  const TensorView kd_padded = TensorView::strided(fake, DType::kFloat32, {2, m, n}, {m * (n + 8), n + 8, 1});
  EXPECT_EQ(code_of([&] { k_grouped_fp8_gemm_nt(ka, kb, kd_padded, nullptr, two, nullptr, wgrad); }),
            ErrorCode::kUnsupported);  // D must be contiguous so far, said before looking for a device
}

}  // namespace
}  // namespace moegemm

// A query without a hint plans as the call without one does (validation's default: ceil(M_total / G) rows per
// expert), so that precompile_* compiles the kernel the call will load. Rows counts that G does not divide are the
// ones where floor and ceil part.
namespace moegemm {
namespace {
TEST(Fp8Plan, NoHintMeansTheCallsDefaultOfRowsPerExpert) {
  int differ_from_floor = 0;
  for (int groups : {3, 4, 8}) {
    for (int m = groups; m <= 1200; m += 7) {
      const int ceil_rows = (m + groups - 1) / groups;
      const KernelConfig no_hint = plan_fp8_gemm_nt(m, 4096, 7168, groups, 0, GemmLayout::kContiguousGroupEnds);
      EXPECT_EQ(no_hint.to_string(),
                plan_fp8_gemm_nt(m, 4096, 7168, groups, ceil_rows, GemmLayout::kContiguousGroupEnds).to_string())
          << "m " << m << ", G " << groups;
      if (no_hint.to_string() !=
          plan_fp8_gemm_nt(m, 4096, 7168, groups, m / groups, GemmLayout::kContiguousGroupEnds).to_string()) {
        ++differ_from_floor;
      }
    }
  }
  // The check above can fail: on some of these shapes floor(m / G) rows plan another tile.
  EXPECT_GT(differ_from_floor, 0);
}
}  // namespace
}  // namespace moegemm

namespace moegemm {
namespace {

// Packed FP8 group ends (segment alignment 1 or 2): A's scales take 16 more bytes a stage. A planned configuration
// keeps its tile and drops stages only where it no longer fits; a forced one that no longer fits is refused, naming
// the rule; one that fits keeps its stages.
TEST(Fp8Plan, ShiftedScalesKeepTheTileAndFitInSharedMemory) {
  using kernels::GroupedKind;
  int dropped = 0;
  for (int block_m : {64, 128, 256}) {
    for (int block_n = 16; block_n <= 192; block_n += 16) {
      const int stages = plan::gemm_max_stages(block_m, block_n, 0, GroupedKind::kContiguousGroupEnds);
      KernelConfig c;
      c.block_m = block_m, c.block_n = block_n, c.stages = stages;
      c.math_warpgroups = kernels::sm90::gemm_math_warpgroups(block_m);
      const KernelConfig shifted = plan::with_shifted_scales(c, 0, GroupedKind::kContiguousGroupEnds, 1, false);
      EXPECT_EQ(shifted.block_m, block_m);
      EXPECT_EQ(shifted.block_n, block_n);
      EXPECT_LE(shifted.smem_bytes, plan::kMaxSmemBytes);
      EXPECT_EQ(shifted.smem_bytes, plan::gemm_smem_bytes(shifted, 0, GroupedKind::kContiguousGroupEnds, true));
      EXPECT_GE(shifted.stages, stages - 1);
      if (shifted.stages < stages) {
        ++dropped;
        try {
          plan::with_shifted_scales(c, 0, GroupedKind::kContiguousGroupEnds, 1, true);
          ADD_FAILURE() << c.to_string() << ": a forced configuration that no longer fits was accepted";
        } catch (const Error& e) {
          EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
          EXPECT_NE(std::string(e.what()).find("options.config: "), std::string::npos) << e.what();
          EXPECT_NE(std::string(e.what()).find("use fewer stages"), std::string::npos) << e.what();
        }
      } else {
        EXPECT_NO_THROW(plan::with_shifted_scales(c, 0, GroupedKind::kContiguousGroupEnds, 1, true));
      }
    }
  }
  EXPECT_GT(dropped, 0) << "some full-depth tiles should need one stage fewer (the rule is exercised)";
  // Every other call keeps its configuration, shared memory included.
  KernelConfig full;
  full.block_m = 128, full.block_n = 96;
  full.stages = plan::gemm_max_stages(128, 96, 0, GroupedKind::kContiguousGroupEnds);
  full.smem_bytes = plan::gemm_smem_bytes(full, 0, GroupedKind::kContiguousGroupEnds);
  for (int alignment : {4, 16, 128}) {
    const KernelConfig same = plan::with_shifted_scales(full, 0, GroupedKind::kContiguousGroupEnds, alignment, true);
    EXPECT_EQ(same.to_string(), full.to_string()) << alignment;
  }
  for (GroupedKind kind : {GroupedKind::kDense, GroupedKind::kMasked, GroupedKind::kContiguousRowToGroup}) {
    EXPECT_EQ(plan::with_shifted_scales(full, 0, kind, 1, true).to_string(), full.to_string());
  }
}

}  // namespace
}  // namespace moegemm
