// GemmOptions: max_sms, pdl and a caller's KernelConfig override.
#include "test_validate_common.hpp"

using namespace moegemm;
using namespace moegemm::validate;
using namespace moegemm::validate::testing;

TEST(ValidateOptions, LaunchKnobsAreCarried) {
  auto x = fp8_dense();
  x.options.max_sms = 66;
  x.options.pdl = 1;
  const GemmProblem p = run_dense(x);
  EXPECT_EQ(p.max_sms, 66);
  EXPECT_EQ(p.pdl, 1);
  EXPECT_EQ(p.config, nullptr);
}

TEST(ValidateOptions, MaxSmsMustBeNonNegative) {
  auto x = fp8_dense();
  x.options.max_sms = -2;
  EXPECT_INVALID(run_dense(x), "options.max_sms: must be non-negative", "got -2");
}

TEST(ValidateOptions, PdlMustBeMinusOneZeroOrOne) {
  auto x = bf16_dense();
  x.options.pdl = 2;
  EXPECT_INVALID(run_bf16(x), "options.pdl: must be -1 (process-wide setting), 0 (off) or 1 (on), got 2");
  x.options.pdl = -2;
  EXPECT_INVALID(run_bf16(x), "options.pdl", "got -2");
}

TEST(ValidateOptions, DefaultConfigIsValidForFp8) {
  KernelConfig config;
  EXPECT_NO_THROW(check_config(config, /*fp8=*/true));
  auto x = fp8_contiguous();
  x.options.config = &config;
  EXPECT_EQ(run_contiguous(x).config, &config);
}

TEST(ValidateOptions, BlockMMustBe64Or128Or192Or256) {
  KernelConfig config;
  for (int block_m : {96, 160, 320, 512}) {
    config.block_m = block_m;
    EXPECT_INVALID(check_config(config, true), "options.config: block_m must be 64, 128, 192 or 256",
                   "got block_m = " + std::to_string(block_m));
  }
  config.block_m = 64;
  config.math_warpgroups = 1;
  EXPECT_NO_THROW(check_config(config, true));
  config.block_m = 256;
  config.math_warpgroups = 2;
  EXPECT_NO_THROW(check_config(config, true));
  config.block_m = 192;
  config.math_warpgroups = 3;
  EXPECT_NO_THROW(check_config(config, true));
}

TEST(ValidateOptions, BlockNMustBeAMultipleOf16InRange) {
  KernelConfig config;
  for (int block_n : {0, 8, 24, 272}) {
    config.block_n = block_n;
    EXPECT_INVALID(check_config(config, true), "options.config: block_n must be a multiple of 16 in [16, 256]",
                   "got block_n = " + std::to_string(block_n));
  }
  for (int block_n : {16, 112, 256}) {
    config.block_n = block_n;
    EXPECT_NO_THROW(check_config(config, true));
  }
}

TEST(ValidateOptions, BlockKMustBe128ForFp8) {
  KernelConfig config;
  config.block_k = 64;
  EXPECT_INVALID(check_config(config, true), "options.config: block_k must be 128 for FP8", "got block_k = 64");
  EXPECT_NO_THROW(check_config(config, false));
}

TEST(ValidateOptions, StagesMustBeBetween2And16) {
  KernelConfig config;
  config.stages = 1;
  EXPECT_INVALID(check_config(config, true), "options.config: stages must be in [2, 16]", "got stages = 1");
  config.stages = 17;
  EXPECT_INVALID(check_config(config, true), "options.config: stages must be in [2, 16]", "got stages = 17");
  config.stages = 16;
  EXPECT_NO_THROW(check_config(config, true));
}

TEST(ValidateOptions, MathWarpgroupsFollowBlockM) {
  KernelConfig config;
  config.math_warpgroups = 1;
  EXPECT_INVALID(check_config(config, true), "options.config: math_warpgroups must be math_warpgroups_for(block_m) = 2",
                 "got math_warpgroups = 1");
  config.block_m = 256;
  config.math_warpgroups = 4;
  EXPECT_INVALID(check_config(config, true), "options.config: math_warpgroups must be math_warpgroups_for(block_m) = 2",
                 "got math_warpgroups = 4");
}

TEST(ValidateOptions, ClusterIsAtMostTwoCtas) {
  KernelConfig config;
  config.cluster_m = 2;
  config.cluster_n = 2;
  EXPECT_INVALID(check_config(config, true), "options.config: cluster_m and cluster_n must be 1 or 2",
                 "got cluster_m = 2, cluster_n = 2");
  config.cluster_m = 3;
  config.cluster_n = 1;
  EXPECT_INVALID(check_config(config, true), "options.config: cluster_m and cluster_n", "cluster_m = 3");
  config.cluster_m = 0;
  EXPECT_INVALID(check_config(config, true), "options.config: cluster_m and cluster_n", "cluster_m = 0");
  config.cluster_m = 1;
  config.cluster_n = 2;
  EXPECT_NO_THROW(check_config(config, true));
}

TEST(ValidateOptions, KSplitsAreOneToFour) {
  KernelConfig config;
  config.k_splits = 0;
  EXPECT_INVALID(check_config(config, true), "options.config: k_splits must be in [1, 4]", "got k_splits = 0");
  config.k_splits = 5;
  EXPECT_INVALID(check_config(config, true), "options.config: k_splits must be in [1, 4]", "got k_splits = 5");
  config.k_splits = 4;
  EXPECT_NO_THROW(check_config(config, true));
}

TEST(ValidateOptions, RasterBandMustBeNonNegative) {
  KernelConfig config;
  config.raster_band = -1;
  EXPECT_INVALID(check_config(config, true), "options.config: raster_band must be non-negative",
                 "got raster_band = -1");
  config.raster_band = 0;
  EXPECT_NO_THROW(check_config(config, true));
  config.raster_band = 1000;  // past any problem's m-blocks: one band per group
  EXPECT_NO_THROW(check_config(config, true));
  EXPECT_NE(config.to_string().find("raster band 1000"), std::string::npos) << config.to_string();
}

TEST(ValidateOptions, ConfigCountsMustBeNonNegative) {
  KernelConfig config;
  config.num_sms = -1;
  EXPECT_INVALID(check_config(config, true), "options.config: num_sms must be non-negative", "got num_sms = -1");
  config.num_sms = 0;
  config.smem_bytes = -4;
  EXPECT_INVALID(check_config(config, true), "options.config: smem_bytes must be non-negative");
}

TEST(ValidateOptions, ConfigIsCheckedThroughEveryFamily) {
  KernelConfig bad;
  bad.stages = 0;
  auto f = fp8_k_grouped();
  f.options.config = &bad;
  EXPECT_INVALID(run_k_grouped(f), "options.config: stages");
  KernelConfig bad_bf16 = bad;
  bad_bf16.block_k = 64;
  auto b = bf16_k_grouped();
  b.options.config = &bad_bf16;
  EXPECT_INVALID(run_bf16_k_grouped(b), "options.config: stages");
}
