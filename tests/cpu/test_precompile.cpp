// The warm-up API (precompile_*), without a GPU: the planned kernels land in the disk cache under the names the
// calls look up, a second request finds them there, and a cache that would keep nothing is refused before any
// compile; precompile_all compiles a batch's distinct kernels once each, on several threads. (tests/gpu: a precompiled kernel loads inside a graph capture with no eager call first.)
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "launch/gemm_launch.hpp"
#include "moegemm/error.hpp"
#include "moegemm/gemm.hpp"
#include "runtime/kernel_cache.hpp"
#include "sm90/gemm_params.cuh"
#include "test_jit_support.hpp"

namespace moegemm {
namespace {

namespace fs = std::filesystem;

class Precompile : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_FALSE(folder_.path().empty()); }
  test::ScopedCacheFolder folder_;
};

// `request` must throw Error(kInvalidArgument) with `part` in its message.
template <typename Request>
void expect_invalid(Request&& request, const std::string& part) {
  try {
    request();
    ADD_FAILURE() << "expected an error containing: " << part;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

TEST_F(Precompile, FirstRequestCompilesThePlannedKernelIntoTheCacheSecondFindsIt) {
  const KernelConfig plan = plan_fp8_gemm_nt(4096, 7168, 2048);
  const std::vector<PrecompiledKernel> first = precompile_fp8_gemm_nt(4096, 7168, 2048);
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0].config.to_string(), plan.to_string());
  // The name the dense call looks the kernel up by: its 256x128 tile specialised on the call's 16 K blocks.
  ASSERT_EQ(plan.block_m, 256) << plan.to_string();
  EXPECT_EQ(first[0].name, launch::gemm_kernel_key(plan, kernels::GroupedKind::kDense, 0, 0,
                                                   kernels::kGroupEndsAlignment, 2048));
  EXPECT_NE(first[0].name.find("/kb16"), std::string::npos) << first[0].name;
  EXPECT_FALSE(first[0].from_disk);
  EXPECT_GT(first[0].compile_ms, 0.0);
  EXPECT_GT(first[0].registers, 0);  // ptxas's report, kept in the file
  EXPECT_LE(first[0].spill_bytes, jit::kSpillBudgetBytes);
  EXPECT_EQ(fs::path(first[0].path).parent_path(), fs::path(folder_.path()) / "kernels");
  EXPECT_TRUE(fs::exists(first[0].path));

  const jit::JitStats before = jit::jit_stats();
  const std::vector<PrecompiledKernel> second = precompile_fp8_gemm_nt(4096, 7168, 2048);
  ASSERT_EQ(second.size(), 1u);
  EXPECT_TRUE(second[0].from_disk);
  EXPECT_EQ(second[0].path, first[0].path);
  EXPECT_EQ(second[0].registers, first[0].registers);
  EXPECT_EQ(jit::jit_stats().compiles, before.compiles);
}

TEST_F(Precompile, KGroupedWeightGradientsAlsoGetTheirDescriptorStep) {
  const std::vector<PrecompiledKernel> kernels = precompile_fp8_gemm_wgrad(4096, 7168, 4 * 2048, 4);
  ASSERT_EQ(kernels.size(), 2u);
  EXPECT_EQ(kernels[0].name, "sm90_kgrouped_descriptors");
  EXPECT_EQ(kernels[1].config.to_string(), plan_fp8_gemm_wgrad(4096, 7168, 4 * 2048, 4).to_string());
  EXPECT_EQ(kernels[1].name, launch::gemm_kernel_key(kernels[1].config, kernels::GroupedKind::kKGrouped,
                                                     static_cast<int>(kernels::sm90::GemmRecipe::kFp8_1d1d)));
  for (const PrecompiledKernel& k : kernels) EXPECT_TRUE(fs::exists(k.path)) << k.name;
}

TEST_F(Precompile, Bf16QueriesNameTheirRecipeAndMajors) {
  Bf16PlanQuery q;
  q.m = 4096, q.n = 7168, q.k = 2048;
  q.with_c = true;
  q.b_mn_major = true;
  const std::vector<PrecompiledKernel> kernels = precompile_bf16_gemm(q);
  ASSERT_EQ(kernels.size(), 1u);
  EXPECT_EQ(kernels[0].config.to_string(), plan_bf16_gemm(q).to_string());
  EXPECT_EQ(kernels[0].name, launch::gemm_kernel_key(kernels[0].config, kernels::GroupedKind::kDense,
                                                     static_cast<int>(kernels::sm90::GemmRecipe::kBf16AddC), 2));
  EXPECT_TRUE(fs::exists(kernels[0].path));
}

TEST_F(Precompile, GroupEndsQueriesNameTheirSegmentAlignment) {
  // Packed segments compile their own kernel, named as the call with layout.segment_alignment = 1 looks it up.
  const std::vector<PrecompiledKernel> packed =
      precompile_fp8_gemm_nt(8192, 4096, 7168, 8, 0, GemmLayout::kContiguousGroupEnds, 1);
  ASSERT_EQ(packed.size(), 1u);
  EXPECT_EQ(packed[0].name, launch::gemm_kernel_key(packed[0].config, kernels::GroupedKind::kContiguousGroupEnds, 0,
                                                    0, 1, 7168));
  EXPECT_NE(packed[0].name.find("/sa1"), std::string::npos) << packed[0].name;
  EXPECT_TRUE(fs::exists(packed[0].path));
  // The default alignment keeps the kernel's name (and kernel) of before.
  const std::vector<PrecompiledKernel> aligned = precompile_fp8_gemm_nt(8192, 4096, 7168, 8);
  EXPECT_EQ(aligned[0].name, launch::gemm_kernel_key(aligned[0].config, kernels::GroupedKind::kContiguousGroupEnds,
                                                     0, 0, kernels::kGroupEndsAlignment, 7168));
  EXPECT_EQ(aligned[0].name.find("/sa"), std::string::npos) << aligned[0].name;
  // A BF16 query the same way.
  Bf16PlanQuery q;
  q.layout = GemmLayout::kContiguousGroupEnds;
  q.m = 8192, q.n = 4096, q.k = 7168, q.num_groups = 8;
  q.segment_alignment = 64;
  const std::vector<PrecompiledKernel> bf16 = precompile_bf16_gemm(q);
  ASSERT_EQ(bf16.size(), 1u);
  EXPECT_NE(bf16[0].name.find("/sa64"), std::string::npos) << bf16[0].name;
}

TEST_F(Precompile, SegmentAlignmentIsCheckedAsTheCallChecksIt) {
  const jit::JitStats before = jit::jit_stats();
  expect_invalid([] { precompile_fp8_gemm_nt(8192, 4096, 7168, 8, 0, GemmLayout::kContiguousGroupEnds, 3); },
                 "segment_alignment: must be a power of two from 1 to 1024 (group ends), got 3");
  // Masked (and a dense query, num_groups 1) do not read it.
  expect_invalid([] { precompile_fp8_gemm_nt(8192, 4096, 7168, 8, 0, GemmLayout::kMasked, 64); },
                 "segment_alignment: is read by the group-ends form only");
  expect_invalid([] { precompile_fp8_gemm_nt(4096, 4096, 7168, 1, 0, GemmLayout::kContiguousGroupEnds, 1); },
                 "segment_alignment: is read by the group-ends form only");
  Bf16PlanQuery q;
  q.m = 4096, q.n = 4096, q.k = 7168;
  q.segment_alignment = 1;
  expect_invalid([&] { precompile_bf16_gemm(q); }, "query.segment_alignment: is read by the group-ends form only");
  EXPECT_EQ(jit::jit_stats().compiles, before.compiles);
}

TEST_F(Precompile, ABatchCompilesEachDistinctKernelOnceInTheOrderTheQueriesNameThem) {
  // A sweep over M of one dense shape (repeats included), a k-grouped pair that shares its descriptor step, and a
  // BF16 query: the kernels each query would precompile on its own, each once, in first-named order.
  WarmupQueries batch;
  for (int m : {1, 64, 1, 129, 256, 1024, 4096, 4096, 200}) batch.fp8_nt.push_back({m, 2112, 7168});
  batch.fp8_wgrad.push_back({4096, 7168, 4 * 2048, 4});
  batch.fp8_wgrad.push_back({4096, 7168, 4 * 4096, 4});
  Bf16PlanQuery bf16;
  bf16.m = 4096, bf16.n = 7168, bf16.k = 2048;
  batch.bf16.push_back(bf16);

  std::vector<std::string> expected;
  auto name = [&](const std::string& n) {
    if (std::find(expected.begin(), expected.end(), n) == expected.end()) expected.push_back(n);
  };
  for (const Fp8NtQuery& q : batch.fp8_nt) {
    name(launch::gemm_kernel_key(plan_fp8_gemm_nt(q.m, q.n, q.k), kernels::GroupedKind::kDense, 0, 0,
                                 kernels::kGroupEndsAlignment, q.k));
  }
  const size_t dense_kernels = expected.size();
  ASSERT_GE(dense_kernels, 3u) << "the sweep should span several tiles";
  for (const Fp8WgradQuery& q : batch.fp8_wgrad) {
    name("sm90_kgrouped_descriptors");
    name(launch::gemm_kernel_key(plan_fp8_gemm_wgrad(q.m, q.n, q.k, q.num_groups), kernels::GroupedKind::kKGrouped,
                                 static_cast<int>(kernels::sm90::GemmRecipe::kFp8_1d1d)));
  }
  name(launch::gemm_kernel_key(plan_bf16_gemm(bf16), kernels::GroupedKind::kDense,
                               static_cast<int>(kernels::sm90::GemmRecipe::kBf16)));

  const jit::JitStats before = jit::jit_stats();
  const std::vector<PrecompiledKernel> first = precompile_all(batch, 3);
  std::vector<std::string> names;
  for (const PrecompiledKernel& k : first) {
    names.push_back(k.name);
    EXPECT_FALSE(k.from_disk) << k.name;
    EXPECT_TRUE(fs::exists(k.path)) << k.name;
    EXPECT_LE(k.spill_bytes, jit::kSpillBudgetBytes) << k.name;
  }
  EXPECT_EQ(names, expected);
  EXPECT_EQ(jit::jit_stats().compiles - before.compiles, expected.size());
  // Each is the file the single query precompiles (found there now, not compiled again).
  const std::vector<PrecompiledKernel> single = precompile_fp8_gemm_nt(129, 2112, 7168);
  ASSERT_EQ(single.size(), 1u);
  EXPECT_TRUE(single[0].from_disk);
  EXPECT_NE(std::find(names.begin(), names.end(), single[0].name), names.end());

  const jit::JitStats middle = jit::jit_stats();
  const std::vector<PrecompiledKernel> second = precompile_all(batch);
  ASSERT_EQ(second.size(), first.size());
  for (size_t i = 0; i < second.size(); ++i) {
    EXPECT_TRUE(second[i].from_disk) << second[i].name;
    EXPECT_EQ(second[i].path, first[i].path);
  }
  EXPECT_EQ(jit::jit_stats().compiles, middle.compiles);
}

TEST_F(Precompile, AQueryWithAConfigStandsForTheCallThatForcesIt) {
  // The planner takes 256x128 here; a call forcing 128x192x4 launches that tile's kernel, and the query with the
  // same config precompiles it (completed as the call completes it: warpgroups, SMs, shared memory).
  KernelConfig forced;
  forced.block_m = 128, forced.block_n = 192, forced.stages = 4;
  ASSERT_EQ(plan_fp8_gemm_nt(4096, 4096, 7168).block_m, 256);
  WarmupQueries batch;
  batch.fp8_nt.push_back({4096, 4096, 7168, 1, 0, GemmLayout::kContiguousGroupEnds, kContiguousAlignment, forced});
  batch.fp8_nt.push_back({4096, 4096, 7168});  // the plan: another kernel
  const std::vector<PrecompiledKernel> kernels = precompile_all(batch, 2);
  ASSERT_EQ(kernels.size(), 2u);
  EXPECT_EQ(kernels[0].config.block_m, 128);
  EXPECT_EQ(kernels[0].config.block_n, 192);
  EXPECT_EQ(kernels[0].config.math_warpgroups, 2);
  EXPECT_GT(kernels[0].config.num_sms, 0);
  EXPECT_GT(kernels[0].config.smem_bytes, 0);
  EXPECT_EQ(kernels[0].name, launch::gemm_kernel_key(kernels[0].config, kernels::GroupedKind::kDense, 0, 0,
                                                     kernels::kGroupEndsAlignment, 7168));
  EXPECT_NE(kernels[0].name.find("/bm128/bn192/st4/"), std::string::npos) << kernels[0].name;
  EXPECT_NE(kernels[1].name, kernels[0].name);
  // BF16 (128 bytes of K per stage: block_k 64): the plan query answers with the forced configuration too.
  Bf16PlanQuery bf16;
  bf16.m = 4096, bf16.n = 4096, bf16.k = 7168;
  bf16.config = forced;
  bf16.config->block_k = 64;
  const KernelConfig planned = plan_bf16_gemm(bf16);
  EXPECT_EQ(planned.block_m, 128);
  EXPECT_EQ(planned.block_n, 192);
  EXPECT_GT(planned.smem_bytes, 0);
}

TEST_F(Precompile, AQueryWhoseConfigTheCallWouldRefuseIsNamed) {
  const jit::JitStats before = jit::jit_stats();
  KernelConfig bad;
  bad.block_m = 128, bad.block_n = 176, bad.stages = 4;  // touches three scale blocks of B
  WarmupQueries batch;
  batch.fp8_nt.push_back({4096, 4096, 7168});
  batch.fp8_nt.push_back({4096, 4096, 7168, 1, 0, GemmLayout::kContiguousGroupEnds, kContiguousAlignment, bad});
  expect_invalid([&] { precompile_all(batch); },
                 "queries.fp8_nt[1]: options.config: block_n must be a multiple of 16 in [16, 192] with block_n");
  batch.fp8_nt.pop_back();
  KernelConfig pair = bad;
  pair.block_n = 128, pair.cluster_m = 2;
  batch.fp8_wgrad.push_back({4096, 4096, 7168, 1, pair});
  expect_invalid([&] { precompile_all(batch); },
                 "queries.fp8_wgrad[0]: options.config: recipe (1,1,128) runs without a pair along M (cluster_m 1)");
  EXPECT_EQ(jit::jit_stats().compiles, before.compiles);
}

TEST_F(Precompile, ABatchNamesItsBadQueryBeforeCompilingAnything) {
  const jit::JitStats before = jit::jit_stats();
  WarmupQueries batch;
  batch.fp8_nt.push_back({4096, 4096, 7168});
  batch.fp8_nt.push_back({8192, 4096, 7168, 8, 0, GemmLayout::kContiguousGroupEnds, 3});
  expect_invalid([&] { precompile_all(batch); },
                 "queries.fp8_nt[1]: segment_alignment: must be a power of two from 1 to 1024 (group ends), got 3");
  batch.fp8_nt.pop_back();
  Bf16PlanQuery q;
  q.m = 4096, q.n = 4096, q.k = 7168;
  q.segment_alignment = 1;
  batch.bf16.push_back(q);
  expect_invalid([&] { precompile_all(batch); },
                 "queries.bf16[0]: query.segment_alignment: is read by the group-ends form only");
  batch.bf16.clear();
  expect_invalid([&] { precompile_all(batch, -1); }, "threads: must be 0 (one per hardware thread) or a positive");
  EXPECT_EQ(jit::jit_stats().compiles, before.compiles);
  // An empty batch compiles nothing.
  EXPECT_TRUE(precompile_all(WarmupQueries{}).empty());
}

TEST_F(Precompile, RefusesBeforeCompilingWhenNothingWouldBeKept) {
  const jit::JitStats before = jit::jit_stats();
  // The request under `env` must throw kUnsupported with `reason` in its message.
  auto expect_refused = [](const char* env, const char* value, const char* reason) {
    test::ScopedEnv scoped(env, std::string(value));
    try {
      precompile_fp8_gemm_nt(128, 512, 256);
      ADD_FAILURE() << "precompile with " << env << "=" << value << " did not throw";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
      EXPECT_NE(std::string(e.what()).find(reason), std::string::npos) << e.what();
    }
  };
  expect_refused("MOEGEMM_JIT_DISK_CACHE", "0", "MOEGEMM_JIT_DISK_CACHE=0");
  expect_refused("MOEGEMM_CACHE_DIR", "/proc/moegemm-no-such-folder", "cannot be written");
  EXPECT_EQ(jit::jit_stats().compiles, before.compiles);
}

}  // namespace
}  // namespace moegemm
