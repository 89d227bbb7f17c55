// Compile checks of the SM90 kernels through the library's own NVRTC path, on the CPU: every layout and a spread
// of tile shapes must compile for sm_90a, and the consumer warpgroups must not spill.
#include <gtest/gtest.h>

#include <cstdlib>
#include <algorithm>
#include <fstream>
#include <string>

#include "launch/gemm_launch.hpp"
#include "plan/gemm_plan.hpp"
#include "runtime/nvrtc_compiler.hpp"
#include "sm90/gemm_params.cuh"
#include "test_jit_support.hpp"

namespace moegemm {
namespace {

// With MOEGEMM_TEST_CUBIN_DIR set, each compiled kernel is written there (<name>.cubin and the ptxas report,
// <name>.log) for reading its SASS: scripts/sass_loops.sh summarises the K loops of every configuration.
void keep_for_inspection(const std::string& name, const jit::CompiledBinary& bin) {
  const char* folder = std::getenv("MOEGEMM_TEST_CUBIN_DIR");
  if (folder == nullptr || *folder == 0) return;
  std::string file = name;
  for (char& ch : file) {
    if (ch == '/') ch = '_';
  }
  const std::string base = std::string(folder) + "/" + file;
  std::ofstream(base + ".cubin", std::ios::binary)
      .write(reinterpret_cast<const char*>(bin.cubin.data()), static_cast<std::streamsize>(bin.cubin.size()));
  std::ofstream(base + ".log") << bin.log;
}

struct Case {
  int block_m, block_n;
  kernels::GroupedKind layout;
  int cluster_m = 1;
  int recipe = 0;    // kernels::sm90::GemmRecipe
  int mn_major = 0;  // BF16: bit 0 A, bit 1 B
  int cluster_n = 1;
  int k_splits = 1;
  int segment_alignment = kernels::kGroupEndsAlignment;  // group ends only
  long long k = 0;  // the problem's K for a kernel specialised on it (launch::gemm_fixed_k_blocks); 0: any K
  int stages = 0;   // 0: as many as fit beside a whole staging buffer (the planner's count)
};

// A case's configuration with as many stages as fit, checked as the planner checks its own.
KernelConfig case_config(const Case& c) {
  KernelConfig cfg;
  cfg.block_m = c.block_m;
  cfg.block_n = c.block_n;
  cfg.math_warpgroups = math_warpgroups_for(c.block_m);
  cfg.k_splits = c.k_splits;
  cfg.stages = c.stages > 0 ? c.stages : plan::gemm_max_stages(c.block_m, c.block_n, c.recipe, c.layout, c.k_splits);
  cfg.cluster_m = c.cluster_m;
  cfg.cluster_n = c.cluster_n;
  cfg.block_k = kernels::sm90::stage_k(c.recipe);
  if (c.recipe == 0) {
    plan::check_fp8_1d2d_config(cfg, c.layout);
  } else if (c.recipe == 1) {
    // Half staging is checked as for a call with its switch set (plan::kHalfStagingVariable).
    test::ScopedEnv half_staging(plan::kHalfStagingVariable, std::string("1"));
    plan::check_fp8_1d1d_config(cfg, c.layout);
  } else {
    plan::check_bf16_config(cfg, static_cast<kernels::sm90::GemmRecipe>(c.recipe), c.mn_major, c.layout);
  }
  return cfg;
}

class Fp8KernelCompiles : public ::testing::TestWithParam<Case> {};

TEST_P(Fp8KernelCompiles, ForSm90aWithinRegisterBudget) {
  const Case c = GetParam();
  const KernelConfig cfg = case_config(c);
  const jit::KernelSpec spec =
      launch::gemm_kernel_spec(cfg, c.layout, c.recipe, c.mn_major, c.segment_alignment, c.k);
  // A case with K names a kernel specialised on its K blocks (and only such cases do).
  EXPECT_EQ(spec.name.find("/kb") != std::string::npos, launch::gemm_fixed_k_blocks(cfg, c.layout, c.recipe, c.k) > 0)
      << spec.name;
  const jit::CompiledBinary bin = jit::compile_cubin(spec.name, spec.source, spec.name_expression);
  ASSERT_FALSE(bin.cubin.empty());
  ASSERT_TRUE(bin.usage.known) << bin.log;
  // The launch-time register count is the warp-specialised cap ((threads, 1) launch bounds); setmaxnreg moves
  // registers from the producer to the consumers inside the kernel.
  EXPECT_GT(bin.usage.registers, 0);
  // (65536 registers over the CTA's threads, in steps of 8, at most 255.)
  const int threads = (math_warpgroups_for(c.block_m) + 1) * 128;
  EXPECT_LE(bin.usage.registers, std::min(255, 65536 / threads / 8 * 8));
  // A few bytes of stack for the producer's scheduler state are tolerated (it runs with 40 registers); the
  // accumulators must never go to local memory, which would show as hundreds of bytes.
  EXPECT_LE(bin.usage.spill_store_bytes, jit::kSpillBudgetBytes) << spec.name << "\n" << bin.log;
  // An accumulator array placed in local memory shows as stack without spills (seen at block_n 192 with the
  // per-column promotion): bound the stack frame too.
  EXPECT_LE(bin.usage.local_bytes, 64) << spec.name << "\n" << bin.log;
  keep_for_inspection(spec.name, bin);
  RecordProperty("registers", bin.usage.registers);
  RecordProperty("spill_stores", bin.usage.spill_store_bytes);
  RecordProperty("compile_ms", static_cast<int>(bin.compile_ms));
}

INSTANTIATE_TEST_SUITE_P(
    Configs, Fp8KernelCompiles,
    ::testing::Values(
        Case{128, 128, kernels::GroupedKind::kDense}, Case{128, 192, kernels::GroupedKind::kDense},
        // 256-row tiles (two waves of accumulators per warpgroup): the widest, and one with a scale-block split.
        Case{256, 128, kernels::GroupedKind::kDense}, Case{256, 96, kernels::GroupedKind::kDense},
        // A shared along N by a pair of CTAs (1x2 cluster): 256- and 128-row tiles.
        Case{256, 128, kernels::GroupedKind::kDense, 1, 0, 0, 2},
        Case{128, 192, kernels::GroupedKind::kDense, 1, 0, 0, 2},
        // The planner's tile for the large contiguous rows, in both index forms (row-to-group spilled in its
        // consumers at this width before its pass groups were made warp-uniform).
        Case{128, 192, kernels::GroupedKind::kContiguousRowToGroup},
        Case{128, 192, kernels::GroupedKind::kContiguousGroupEnds}, Case{64, 16, kernels::GroupedKind::kDense},
        Case{128, 144, kernels::GroupedKind::kContiguousGroupEnds},
        Case{128, 160, kernels::GroupedKind::kContiguousRowToGroup}, Case{64, 96, kernels::GroupedKind::kMasked},
        Case{128, 192, kernels::GroupedKind::kDense, 2}, Case{128, 160, kernels::GroupedKind::kMasked, 2},
        Case{64, 128, kernels::GroupedKind::kContiguousGroupEnds, 2},
        // Recipe (1,1,128), the weight-gradient kernel.
        Case{128, 128, kernels::GroupedKind::kDense, 1, 1}, Case{128, 160, kernels::GroupedKind::kDense, 1, 1},
        Case{64, 64, kernels::GroupedKind::kDense, 1, 1},
        // Recipe (1,1,128) k-grouped: per-expert descriptors from the descriptor step.
        Case{128, 128, kernels::GroupedKind::kKGrouped, 1, 1}, Case{128, 160, kernels::GroupedKind::kKGrouped, 1, 1},
        // Recipe (1,1,128) on 192-row tiles: three math warpgroups at 160 registers each, the producer at 32.
        Case{192, 128, kernels::GroupedKind::kDense, 1, 1}, Case{192, 128, kernels::GroupedKind::kKGrouped, 1, 1},
        Case{192, 96, kernels::GroupedKind::kKGrouped, 1, 1},
        Case{192, 128, kernels::GroupedKind::kDense, 1, 3, 3}, Case{192, 64, kernels::GroupedKind::kDense, 1, 3, 3},
        Case{192, 128, kernels::GroupedKind::kKGrouped, 1, 3, 3}, Case{192, 64, kernels::GroupedKind::kKGrouped, 1, 3, 3},
        Case{192, 128, kernels::GroupedKind::kDense, 1, 3, 0},
        // Recipe (1,1,128) with A shared along N by a pair (each CTA multicasts half of A's rows): k-grouped through
        // the per-expert descriptors, and dense.
        Case{192, 128, kernels::GroupedKind::kKGrouped, 1, 1, 0, 2}, Case{128, 128, kernels::GroupedKind::kKGrouped, 1, 1, 0, 2},
        Case{192, 128, kernels::GroupedKind::kDense, 1, 1, 0, 2}, Case{128, 128, kernels::GroupedKind::kDense, 1, 1, 0, 2},
        // Recipe (1,1,128) with one stage more than fits beside a whole FP32 staging buffer (half staging): the
        // k-grouped 192x128 tile with 4, 128x128 with 5.
        Case{192, 128, kernels::GroupedKind::kKGrouped, 1, 1, 0, 1, 1, kernels::kGroupEndsAlignment, 0, 4},
        Case{128, 128, kernels::GroupedKind::kDense, 1, 1, 0, 1, 1, kernels::kGroupEndsAlignment, 0, 5},
        Case{128, 128, kernels::GroupedKind::kKGrouped, 1, 1, 0, 1, 1, kernels::kGroupEndsAlignment, 0, 5},
        // BF16: dense, masked and row-to-group.
        Case{128, 192, kernels::GroupedKind::kDense, 1, 2}, Case{128, 128, kernels::GroupedKind::kMasked, 1, 2},
        Case{64, 64, kernels::GroupedKind::kContiguousRowToGroup, 1, 2},
        Case{128, 160, kernels::GroupedKind::kDense, 1, 3}, Case{64, 128, kernels::GroupedKind::kDense, 1, 3},
        // BF16 with MN-major operands (TT dense, MN-major B masked, TN with FP32 D).
        Case{128, 128, kernels::GroupedKind::kDense, 1, 2, 3}, Case{128, 192, kernels::GroupedKind::kMasked, 1, 2, 2},
        Case{64, 128, kernels::GroupedKind::kDense, 1, 3, 1},
        // BF16 k-grouped (tn): MN-major A and B, FP32 D.
        Case{128, 128, kernels::GroupedKind::kKGrouped, 1, 3, 3},
        Case{64, 64, kernels::GroupedKind::kKGrouped, 1, 3, 3},
        // BF16 D = C + A B^T (dense): the widest tile (C's loads on top of 96 accumulators), MN-major operands,
        // the narrowest tile.
        Case{128, 192, kernels::GroupedKind::kDense, 1, 4}, Case{128, 192, kernels::GroupedKind::kDense, 1, 4, 3},
        // BF16 128x176 (N = 2112 in 12 tiles; stores without TMA, block_n not a multiple of 64), with and without C.
        Case{128, 176, kernels::GroupedKind::kDense, 1, 2}, Case{128, 176, kernels::GroupedKind::kDense, 1, 4},
        Case{64, 128, kernels::GroupedKind::kDense, 1, 4, 1}, Case{64, 16, kernels::GroupedKind::kDense, 1, 4},
        // 256-row tiles and TMA stores on the grouped layouts: both contiguous forms and masked, FP8 and BF16.
        Case{256, 128, kernels::GroupedKind::kContiguousGroupEnds}, Case{256, 128, kernels::GroupedKind::kMasked},
        Case{256, 128, kernels::GroupedKind::kContiguousRowToGroup},
        Case{256, 128, kernels::GroupedKind::kContiguousRowToGroup, 1, 2},
        Case{256, 64, kernels::GroupedKind::kMasked}, Case{128, 192, kernels::GroupedKind::kMasked},
        Case{256, 128, kernels::GroupedKind::kMasked, 1, 2, 2},
        Case{256, 128, kernels::GroupedKind::kContiguousGroupEnds, 1, 2},
        // BF16 pairs sharing B along M (dense with an MN-major A, masked, group ends, FP32 D, with C).
        Case{128, 192, kernels::GroupedKind::kDense, 2, 2, 1}, Case{128, 128, kernels::GroupedKind::kMasked, 2, 2},
        Case{128, 192, kernels::GroupedKind::kContiguousGroupEnds, 2, 2},
        Case{128, 160, kernels::GroupedKind::kDense, 2, 3}, Case{64, 128, kernels::GroupedKind::kDense, 2, 4},
        // BF16 256-row tiles (two accumulators per warpgroup): every major, with C, and A shared along N.
        Case{256, 128, kernels::GroupedKind::kDense, 1, 2}, Case{256, 128, kernels::GroupedKind::kDense, 1, 2, 3},
        Case{256, 128, kernels::GroupedKind::kDense, 1, 4}, Case{256, 64, kernels::GroupedKind::kDense, 1, 4, 1},
        Case{256, 128, kernels::GroupedKind::kDense, 1, 2, 2, 2},
        // K split across a cluster (decode on narrow N): FP8, BF16, BF16 with C, FP32 D, an MN-major A.
        Case{64, 16, kernels::GroupedKind::kDense, 1, 0, 0, 1, 3},
        Case{64, 64, kernels::GroupedKind::kDense, 1, 0, 0, 1, 4},
        Case{64, 16, kernels::GroupedKind::kDense, 1, 2, 0, 1, 3},
        Case{64, 16, kernels::GroupedKind::kDense, 1, 4, 0, 1, 3},
        Case{64, 16, kernels::GroupedKind::kDense, 1, 3, 0, 1, 4},
        Case{64, 64, kernels::GroupedKind::kDense, 1, 3, 1, 1, 2},
        Case{128, 64, kernels::GroupedKind::kDense, 1, 0, 0, 1, 2},
        Case{128, 64, kernels::GroupedKind::kDense, 1, 2, 0, 1, 3},
        // BF16 128x256 (one m64n256 WGMMA per warpgroup): NT, TT, with C, masked and group ends.
        Case{128, 256, kernels::GroupedKind::kDense, 1, 2}, Case{128, 256, kernels::GroupedKind::kDense, 1, 2, 3},
        Case{128, 256, kernels::GroupedKind::kDense, 1, 4}, Case{128, 256, kernels::GroupedKind::kMasked, 1, 2},
        Case{128, 256, kernels::GroupedKind::kContiguousGroupEnds, 1, 2},
        Case{128, 256, kernels::GroupedKind::kContiguousRowToGroup, 1, 2},
        Case{128, 256, kernels::GroupedKind::kMasked, 1, 2, 2},
        // Group ends with other segment alignments: packed tokens (1) on the FP8 contiguous plan's tiles, 64 on
        // BF16's.
        Case{256, 128, kernels::GroupedKind::kContiguousGroupEnds, 1, 0, 0, 1, 1, 1},
        Case{128, 192, kernels::GroupedKind::kContiguousGroupEnds, 1, 0, 0, 1, 1, 1},
        Case{128, 256, kernels::GroupedKind::kContiguousGroupEnds, 1, 2, 0, 1, 1, 64},
        // FP8 kernels specialised on the problem's K blocks (kFixedKBlocks, 256-row tiles): dense with few blocks
        // (K = 576: 5) and a partial last one (K = 2112: 17), the scale-block split (256x96), a pair sharing A,
        // packed group ends, masked.
        Case{256, 128, kernels::GroupedKind::kDense, 1, 0, 0, 1, 1, kernels::kGroupEndsAlignment, 7168},
        Case{256, 128, kernels::GroupedKind::kDense, 1, 0, 0, 1, 1, kernels::kGroupEndsAlignment, 576},
        Case{256, 96, kernels::GroupedKind::kDense, 1, 0, 0, 1, 1, kernels::kGroupEndsAlignment, 2112},
        Case{256, 128, kernels::GroupedKind::kDense, 1, 0, 0, 2, 1, kernels::kGroupEndsAlignment, 7168},
        Case{256, 128, kernels::GroupedKind::kContiguousGroupEnds, 1, 0, 0, 1, 1, 1, 4096},
        Case{256, 128, kernels::GroupedKind::kMasked, 1, 0, 0, 1, 1, kernels::kGroupEndsAlignment, 7168},
        // Not specialised: 128-row tiles, row-to-group, 64-row tiles (one math warpgroup) and K splits keep the
        // run-time loop.
        Case{128, 192, kernels::GroupedKind::kDense, 1, 0, 0, 1, 1, kernels::kGroupEndsAlignment, 2112},
        Case{128, 192, kernels::GroupedKind::kMasked, 2, 0, 0, 1, 1, kernels::kGroupEndsAlignment, 3072},
        Case{256, 128, kernels::GroupedKind::kContiguousRowToGroup, 1, 0, 0, 1, 1, kernels::kGroupEndsAlignment, 7168},
        Case{64, 96, kernels::GroupedKind::kMasked, 1, 0, 0, 1, 1, kernels::kGroupEndsAlignment, 7168},
        Case{128, 64, kernels::GroupedKind::kDense, 1, 0, 0, 1, 2, kernels::kGroupEndsAlignment, 7168}),
    [](const ::testing::TestParamInfo<Case>& info) {
      return "bm" + std::to_string(info.param.block_m) + "_bn" + std::to_string(info.param.block_n) + "_layout" +
             std::to_string(static_cast<int>(info.param.layout)) + "_cm" + std::to_string(info.param.cluster_m) +
             "_recipe" + std::to_string(info.param.recipe) + "_mn" + std::to_string(info.param.mn_major) +
             (info.param.cluster_n > 1 ? "_cn" + std::to_string(info.param.cluster_n) : std::string()) +
             (info.param.k_splits > 1 ? "_ks" + std::to_string(info.param.k_splits) : std::string()) +
             (info.param.segment_alignment != kernels::kGroupEndsAlignment
                  ? "_sa" + std::to_string(info.param.segment_alignment)
                  : std::string()) +
             (info.param.k > 0 ? "_k" + std::to_string(info.param.k) : std::string()) +
             (info.param.stages > 0 ? "_st" + std::to_string(info.param.stages) : std::string());
    });

// BF16 dense and masked tiles of 6 or more stages keep one K block's WGMMAs in flight (wgmma.wait_group 1 in the K
// loop, the stage freed a block later); tiles with fewer stages, other layouts and K splits wait for every block
// (bf16_deferred_release; measured: docs/results/2026-12-03-promotion-register-reads.md, runs 9 and 10, and
// docs/results/2026-12-04-k-loop-unroll.md).
struct DeferCase {
  Case tile;
  bool deferred;
};

class Bf16DeferredRelease : public ::testing::TestWithParam<DeferCase> {};

TEST_P(Bf16DeferredRelease, FollowsTheStageRule) {
  const Case c = GetParam().tile;
  const KernelConfig cfg = case_config(c);
  // Each case isolates one condition: unsplit dense and masked tiles by their stage count; the others have 6+
  // stages, so only their layout or K split keeps them from deferring.
  const bool deferring_layout =
      c.layout == kernels::GroupedKind::kDense || c.layout == kernels::GroupedKind::kMasked;
  if (deferring_layout && c.k_splits == 1) {
    ASSERT_EQ(cfg.stages >= 6, GetParam().deferred) << cfg.stages << " stages";
  } else {
    ASSERT_GE(cfg.stages, 6);
  }
  EXPECT_EQ(kernels::sm90::bf16_deferred_release(c.recipe, static_cast<int>(c.layout), cfg.stages, c.k_splits),
            GetParam().deferred);
  const jit::KernelSpec spec = launch::gemm_kernel_spec(cfg, c.layout, c.recipe, c.mn_major);
  const std::string ptx = jit::compile_ptx(spec.name, spec.source, spec.name_expression);
  ASSERT_NE(ptx.find("wgmma.wait_group.sync.aligned 0;"), std::string::npos) << spec.name;
  EXPECT_EQ(ptx.find("wgmma.wait_group.sync.aligned 1;") != std::string::npos, GetParam().deferred)
      << spec.name << " (" << cfg.stages << " stages)";
}

std::string case_name(const Case& c) {
  return "bm" + std::to_string(c.block_m) + "_bn" + std::to_string(c.block_n) + "_layout" +
         std::to_string(static_cast<int>(c.layout)) + "_recipe" + std::to_string(c.recipe) + "_ks" +
         std::to_string(c.k_splits);
}

INSTANTIATE_TEST_SUITE_P(
    Tiles, Bf16DeferredRelease,
    ::testing::Values(DeferCase{Case{64, 128, kernels::GroupedKind::kDense, 1, 2}, true},
                      DeferCase{Case{64, 128, kernels::GroupedKind::kDense, 1, 3}, true},
                      DeferCase{Case{256, 128, kernels::GroupedKind::kDense, 1, 2}, false},
                      DeferCase{Case{128, 192, kernels::GroupedKind::kDense, 1, 2}, false},
                      DeferCase{Case{64, 96, kernels::GroupedKind::kMasked, 1, 2}, true},
                      DeferCase{Case{128, 256, kernels::GroupedKind::kMasked, 1, 2}, false},
                      DeferCase{Case{64, 64, kernels::GroupedKind::kContiguousRowToGroup, 1, 2}, false},
                      DeferCase{Case{64, 64, kernels::GroupedKind::kKGrouped, 1, 3, 3}, false},
                      DeferCase{Case{64, 32, kernels::GroupedKind::kDense, 1, 2, 0, 1, 2}, false}),
    [](const ::testing::TestParamInfo<DeferCase>& info) { return case_name(info.param.tile); });

// FP8 K loops run four K blocks per iteration where the kernel holds one copy of the loop (B scaled per row, or
// block_n dividing 128), two on 128-row tiles with up to three copies, one elsewhere (fp8_k_loop_unroll). Seen in
// the PTX as WGMMA commit groups per copy of the K loop and 64-row wave: a rolled copy holds one K block (two with
// the peeled first block); one unrolled by U holds U, plus the peeled block or the remainder.
// WGMMA commit groups in a kernel's PTX: one per 64-row wave and compiled K block.
int wgmma_commit_groups(const jit::KernelSpec& spec) {
  const std::string ptx = jit::compile_ptx(spec.name, spec.source, spec.name_expression);
  int commits = 0;
  for (size_t at = ptx.find("wgmma.commit_group.sync.aligned"); at != std::string::npos;
       at = ptx.find("wgmma.commit_group.sync.aligned", at + 1)) {
    ++commits;
  }
  return commits;
}

struct UnrollCase {
  Case tile;
  int loop_copies;  // copies of the K loop in the kernel: one per B scale split (dispatch_split)
  int unroll;
};

class Fp8KLoopUnroll : public ::testing::TestWithParam<UnrollCase> {};

TEST_P(Fp8KLoopUnroll, FollowsTheTileRule) {
  const Case c = GetParam().tile;
  const KernelConfig cfg = case_config(c);
  if (c.recipe == 0) EXPECT_EQ(kernels::sm90::fp8_k_loop_copies(c.block_n), GetParam().loop_copies);
  EXPECT_EQ(kernels::sm90::fp8_k_loop_unroll(c.recipe, c.block_m, c.block_n), GetParam().unroll);
  const jit::KernelSpec spec = launch::gemm_kernel_spec(cfg, c.layout, c.recipe, c.mn_major);
  const int commits = wgmma_commit_groups(spec);
  const int waves = kernels::sm90::gemm_waves(c.block_m);  // one commit group per 64-row wave and K block
  const int per_copy = commits / (GetParam().loop_copies * waves);
  if (GetParam().unroll > 1) {
    EXPECT_GE(per_copy, GetParam().unroll + 1) << spec.name << ": " << commits << " commit groups";
  } else {
    EXPECT_LE(per_copy, 2) << spec.name << ": " << commits << " commit groups";
  }
}

INSTANTIATE_TEST_SUITE_P(
    Tiles, Fp8KLoopUnroll,
    ::testing::Values(UnrollCase{Case{256, 128, kernels::GroupedKind::kDense}, 1, 4},
                      UnrollCase{Case{256, 128, kernels::GroupedKind::kMasked}, 1, 4},
                      UnrollCase{Case{128, 128, kernels::GroupedKind::kDense}, 1, 4},
                      UnrollCase{Case{64, 64, kernels::GroupedKind::kDense, 1, 0, 0, 1, 4}, 1, 4},
                      UnrollCase{Case{128, 160, kernels::GroupedKind::kDense, 1, 1}, 1, 4},
                      UnrollCase{Case{128, 128, kernels::GroupedKind::kKGrouped, 1, 1}, 1, 4},
                      UnrollCase{Case{192, 128, kernels::GroupedKind::kKGrouped, 1, 1}, 1, 2},
                      UnrollCase{Case{128, 192, kernels::GroupedKind::kDense}, 3, 2},
                      UnrollCase{Case{128, 192, kernels::GroupedKind::kContiguousRowToGroup}, 3, 2},
                      UnrollCase{Case{128, 160, kernels::GroupedKind::kContiguousRowToGroup}, 5, 1},
                      UnrollCase{Case{128, 144, kernels::GroupedKind::kContiguousGroupEnds}, 9, 1},
                      UnrollCase{Case{64, 96, kernels::GroupedKind::kMasked}, 3, 1}),
    [](const ::testing::TestParamInfo<UnrollCase>& info) { return case_name(info.param.tile); });

// Which kernels are specialised on the problem's K blocks (launch::gemm_fixed_k_blocks, gemm_fixed_k_supported):
// FP8 (1,128,128) 256-row tiles without a K split on the dense, group-ends and masked layouts, with ceil(K / 128)
// blocks; every other kernel, and a query without K, reads K at run time.
TEST(FixedKBlocks, OnlyFp8TallTilesOfLayoutsThatShareK) {
  using kernels::GroupedKind;
  auto fixed = [](int block_m, int block_n, GroupedKind layout, long long k, int recipe = 0, int k_splits = 1) {
    KernelConfig c;
    c.block_m = block_m;
    c.block_n = block_n;
    c.k_splits = k_splits;
    return launch::gemm_fixed_k_blocks(c, layout, recipe, k);
  };
  EXPECT_EQ(fixed(256, 128, GroupedKind::kDense, 7168), 56);
  EXPECT_EQ(fixed(256, 128, GroupedKind::kDense, 2112), 17);  // a partial last block counts
  EXPECT_EQ(fixed(256, 128, GroupedKind::kDense, 128), 1);
  EXPECT_EQ(fixed(256, 96, GroupedKind::kContiguousGroupEnds, 576), 5);
  EXPECT_EQ(fixed(256, 128, GroupedKind::kMasked, 16384), 128);
  EXPECT_EQ(fixed(256, 128, GroupedKind::kDense, 0), 0);
  EXPECT_EQ(fixed(256, 128, GroupedKind::kContiguousRowToGroup, 7168), 0);
  EXPECT_EQ(fixed(256, 128, GroupedKind::kKGrouped, 7168), 0);
  EXPECT_EQ(fixed(128, 192, GroupedKind::kDense, 7168), 0);
  EXPECT_EQ(fixed(128, 128, GroupedKind::kMasked, 7168), 0);
  EXPECT_EQ(fixed(64, 96, GroupedKind::kMasked, 7168), 0);
  EXPECT_EQ(fixed(128, 64, GroupedKind::kDense, 7168, 0, 2), 0);
  for (int recipe : {1, 2, 3, 4}) EXPECT_EQ(fixed(256, 128, GroupedKind::kDense, 7168, recipe), 0) << recipe;
}

// A fixed-K kernel's K loop: no peeled first block and, where the loop has one copy, 8 K blocks per iteration with
// no remainder when the count divides by 8. Seen in the PTX as WGMMA commit groups (one per 64-row wave and K
// block): 256x128 with 56 blocks holds exactly one iteration's 8 x 2; the run-time kernel (1 + 4 + 1) x 2, its
// peeled block, 4 blocks per iteration and a rolled remainder.
TEST(FixedKBlocks, TheLoopIsUnrolledWithoutPeelOrRemainder) {
  const Case dense{256, 128, kernels::GroupedKind::kDense};
  const KernelConfig cfg = case_config(dense);
  const jit::KernelSpec fixed =
      launch::gemm_kernel_spec(cfg, dense.layout, 0, 0, kernels::kGroupEndsAlignment, 7168);
  const jit::KernelSpec run_time = launch::gemm_kernel_spec(cfg, dense.layout, 0, 0);
  ASSERT_NE(fixed.name, run_time.name);
  EXPECT_EQ(kernels::sm90::fp8_fixed_k_unroll(256, 128), 8);
  EXPECT_EQ(wgmma_commit_groups(fixed), 8 * 2) << fixed.name;
  EXPECT_EQ(wgmma_commit_groups(run_time), (1 + 4 + 1) * 2) << run_time.name;
}

// The stream-ordered step that writes the k-grouped FP8 descriptors (tensormap.replace is sm_90a-only).
TEST(KGroupedDescriptorKernel, CompilesForSm90a) {
  const jit::CompiledBinary bin =
      jit::compile_cubin("sm90_kgrouped_descriptors", "#include \"sm90/kgrouped_descriptors.cuh\"\n",
                         "moegemm::kernels::sm90::kgrouped_descriptor_kernel");
  ASSERT_FALSE(bin.cubin.empty()) << bin.log;
  EXPECT_EQ(bin.usage.spill_store_bytes, 0) << bin.log;
}

}  // namespace
}  // namespace moegemm
