// Which path each FP8 (1,128,128) kernel takes for B's block scales (sm90/gemm_params.cuh): every configuration takes
// exactly one, and the tiles whose path was chosen by measurement keep it, so that a change to the rule shows here
// before it changes a measured kernel.
#include <gtest/gtest.h>

#include <string>

#include "sm90/gemm_params.cuh"

namespace moegemm {
namespace {

using kernels::GroupedKind;
using kernels::sm90::GemmRecipe;

enum class BScalePath { kInStages, kInLanes, kInLaneChunks, kAhead, kNone };

const char* name(BScalePath p) {
  switch (p) {
    case BScalePath::kInStages: return "in stages";
    case BScalePath::kInLanes: return "in lanes";
    case BScalePath::kInLaneChunks: return "in lane chunks";
    case BScalePath::kAhead: return "one block ahead";
    case BScalePath::kNone: return "none";
  }
  return "?";
}

// The path as gemm_kernel derives it from the rules (kBScalesInStages, kBScalesInLanes, kBScalesInLaneChunks,
// kBScalesAhead), failing the test when two or none hold for a block-scaled recipe.
BScalePath path_of(int recipe, GroupedKind kind, int block_m, int block_n, int split_k, int fixed_k_blocks,
                   int cluster_ctas = 1) {
  using namespace kernels::sm90;
  const int k = static_cast<int>(kind);
  const bool stages = b_block_scales_in_stages(recipe, block_m, block_n, split_k, fixed_k_blocks);
  const bool lanes = b_block_scales_in_lanes(recipe, block_m, block_n, split_k, fixed_k_blocks);
  const bool chunks =
      b_block_scales_in_lane_chunks(recipe, k, block_m, block_n, split_k, fixed_k_blocks, cluster_ctas);
  const bool ahead = b_block_scales_ahead(recipe, block_m, block_n, split_k, fixed_k_blocks) && !lanes && !chunks;
  const int count = int{stages} + int{lanes} + int{chunks} + int{ahead};
  if (recipe != static_cast<int>(GemmRecipe::kFp8_1d2d)) {
    EXPECT_EQ(count, 0) << "recipe " << recipe << " has no block scales of B";
    return BScalePath::kNone;
  }
  EXPECT_EQ(count, 1) << block_m << "x" << block_n << " split " << split_k << " fixed " << fixed_k_blocks;
  return stages ? BScalePath::kInStages
                : lanes ? BScalePath::kInLanes : chunks ? BScalePath::kInLaneChunks : BScalePath::kAhead;
}

constexpr int kFp8 = static_cast<int>(GemmRecipe::kFp8_1d2d);

TEST(BScalePaths, EveryBlockScaledKernelTakesExactlyOne) {
  for (const GroupedKind kind : {GroupedKind::kDense, GroupedKind::kMasked, GroupedKind::kContiguousGroupEnds,
                                 GroupedKind::kContiguousRowToGroup}) {
    for (const int block_m : {64, 128, 256}) {
      for (int block_n = 16; block_n <= 192; block_n += 16) {
        for (const int split_k : {1, 2, 4}) {
          for (const int fixed : {0, 3, 4, 5, 56, 128, 129}) {
            for (const int cluster : {1, 2}) path_of(kFp8, kind, block_m, block_n, split_k, fixed, cluster);
          }
        }
      }
    }
  }
  // Recipes without block scales of B take none.
  for (const GemmRecipe r : {GemmRecipe::kFp8_1d1d, GemmRecipe::kBf16, GemmRecipe::kBf16Fp32, GemmRecipe::kBf16AddC}) {
    EXPECT_EQ(path_of(static_cast<int>(r), GroupedKind::kDense, 128, 128, 1, 0), BScalePath::kNone);
  }
}

TEST(BScalePaths, MeasuredTilesKeepTheirPath) {
  struct Pin {
    GroupedKind kind;
    int block_m, block_n, split_k, fixed_k_blocks, cluster_ctas;
    BScalePath want;
    const char* why;
  };
  const Pin pins[] = {
      // M = 128 plans, K at run time: copied into the stages (docs/results/2026-12-07-m128-bscale.md,
      // 2026-12-07-wgrad-pairs.md: on H100s 0.4-5.2% faster per round than the one-ahead read).
      {GroupedKind::kDense, 128, 32, 1, 0, 1, BScalePath::kInStages, "128x32 (M = 128 plan)"},
      {GroupedKind::kDense, 128, 64, 1, 0, 1, BScalePath::kInStages, "128x64 (M = 128 plan)"},
      // Decode and K splits: in the stages.
      {GroupedKind::kDense, 64, 16, 1, 0, 1, BScalePath::kInStages, "64-row decode tile"},
      {GroupedKind::kMasked, 64, 128, 1, 0, 1, BScalePath::kInStages, "64-row masked tile"},
      {GroupedKind::kDense, 128, 64, 2, 0, 1, BScalePath::kInStages, "K split"},
      {GroupedKind::kDense, 256, 128, 1, 4, 1, BScalePath::kInStages, "fixed K of 4 blocks"},
      // 128-row tiles of 128 columns or more with K at run time: the one-ahead read (the copy 0.8-2.7% slower).
      {GroupedKind::kDense, 128, 128, 1, 0, 1, BScalePath::kAhead, "128x128 dense"},
      {GroupedKind::kMasked, 128, 192, 1, 0, 1, BScalePath::kAhead, "128x192 masked"},
      {GroupedKind::kContiguousRowToGroup, 128, 192, 1, 0, 1, BScalePath::kAhead, "128x192 row-to-group"},
      {GroupedKind::kDense, 128, 192, 1, 0, 2, BScalePath::kAhead, "128x192 dense pair"},
      // Dense run-time-K tiles wider than 128: 32-block chunks across the lanes (docs/results/2026-12-06-bscale-lanes.md).
      {GroupedKind::kDense, 128, 192, 1, 0, 1, BScalePath::kInLaneChunks, "128x192 dense"},
      {GroupedKind::kDense, 128, 144, 1, 0, 1, BScalePath::kInLaneChunks, "128x144 dense"},
      // Fixed-K 256-row kernels of 5 to 128 K blocks: the tile's whole scale row across the lanes.
      {GroupedKind::kDense, 256, 128, 1, 56, 1, BScalePath::kInLanes, "256x128, K = 7168"},
      {GroupedKind::kMasked, 256, 128, 1, 56, 1, BScalePath::kInLanes, "256x128 masked, K = 7168"},
      {GroupedKind::kContiguousGroupEnds, 256, 128, 1, 128, 1, BScalePath::kInLanes, "256x128 group ends, K = 16384"},
      {GroupedKind::kDense, 256, 128, 1, 129, 1, BScalePath::kAhead, "256x128, K past 128 blocks"},
  };
  for (const Pin& p : pins) {
    const BScalePath got = path_of(kFp8, p.kind, p.block_m, p.block_n, p.split_k, p.fixed_k_blocks, p.cluster_ctas);
    EXPECT_EQ(got, p.want) << p.why << ": " << name(got) << ", expected " << name(p.want);
  }
}

}  // namespace
}  // namespace moegemm
