// GemmOptions rules: the recipe each family implements, the launch knobs, and a caller's KernelConfig override.
#include "validate/checks.hpp"
#include "validate/validate.hpp"

namespace moegemm::validate {

static std::string recipe_string(const ScaleRecipe& r) {
  std::string s = "(";
  s += std::to_string(r.gran_m);
  s += ", ";
  s += std::to_string(r.gran_n);
  s += ", ";
  s += std::to_string(r.gran_k);
  return s + ")";
}

void check_recipe_1d2d(const ScaleRecipe& recipe, bool dense) {
  if (recipe == kRecipe1x128x128) return;
  if (recipe == kRecipe1x1x128) {
    fail("options.recipe",
         dense ? "(1, 1, 128) is the weight-gradient recipe with FP32 D: call fp8_gemm_nt_1d1d (or "
                 "k_grouped_fp8_gemm_nt) for it; this entry point supports only (1, 128, 128)"
               : "(1, 1, 128) is not implemented for M-grouped GEMMs (dense: fp8_gemm_nt_1d1d, K-grouped: "
                 "k_grouped_fp8_gemm_nt); this entry point supports only (1, 128, 128)",
         recipe_string(recipe));
  }
  // Anything else (notably (128, 128, 128), which DeepGEMM accepted and then read out of bounds) is rejected.
  fail("options.recipe",
       "must be (1, 128, 128) for this entry point (supported recipes: (1, 128, 128); (1, 1, 128) through "
       "fp8_gemm_nt_1d1d and k_grouped_fp8_gemm_nt)",
       recipe_string(recipe));
}

void check_recipe_1d1d(const ScaleRecipe& recipe) {
  // GemmOptions defaults to (1, 128, 128); an entry point that only exists for (1, 1, 128) reads it as "not set".
  if (recipe == kRecipe1x1x128 || recipe == kRecipe1x128x128) return;
  fail("options.recipe",
       "must be (1, 1, 128) for this entry point (or left at the default, which it reads as (1, 1, 128); "
       "(1, 128, 128) is served by fp8_gemm_nt and the M-grouped GEMMs)",
       recipe_string(recipe));
}

void check_recipe_none(const ScaleRecipe& recipe) {
  if (recipe == kRecipe1x128x128) return;
  fail("options.recipe", "BF16 GEMMs have no scales: leave the default (1, 128, 128)", recipe_string(recipe));
}

static std::string field(const char* name, int value) { return std::string(name) + " = " + std::to_string(value); }

void check_config(const KernelConfig& config, bool fp8) {
  const char* name = "options.config";
  if (config.block_m != 64 && config.block_m != 128 && config.block_m != 192 && config.block_m != 256) {
    fail(name, "block_m must be 64, 128, 192 or 256 (consumer warpgroups of 64-row waves)",
         field("block_m", config.block_m));
  }
  if (config.block_n < 16 || config.block_n > 256 || config.block_n % 16 != 0) {
    fail(name, "block_n must be a multiple of 16 in [16, 256] (WGMMA N)", field("block_n", config.block_n));
  }
  const int block_k = fp8 ? 128 : 64;
  if (config.block_k != block_k) {
    fail(name,
         fp8 ? "block_k must be 128 for FP8 (one scale block per stage)"
             : "block_k must be 64 for BF16 (one 128-byte swizzle row per stage)",
         field("block_k", config.block_k));
  }
  if (config.stages < 2 || config.stages > 16) {
    fail(name, "stages must be in [2, 16]", field("stages", config.stages));
  }
  if (config.math_warpgroups != math_warpgroups_for(config.block_m)) {
    fail(
        name,
        "math_warpgroups must be math_warpgroups_for(block_m) = " + std::to_string(math_warpgroups_for(config.block_m)),
        field("math_warpgroups", config.math_warpgroups));
  }
  const bool cluster_ok = (config.cluster_m == 1 || config.cluster_m == 2) &&
                          (config.cluster_n == 1 || config.cluster_n == 2) && config.cluster_m * config.cluster_n <= 2;
  if (!cluster_ok) {
    fail(name, "cluster_m and cluster_n must be 1 or 2 with cluster_m * cluster_n <= 2",
         "cluster_m = " + std::to_string(config.cluster_m) + ", cluster_n = " + std::to_string(config.cluster_n));
  }
  if (config.k_splits < 1 || config.k_splits > 4) {
    fail(name, "k_splits must be in [1, 4] (CTAs of a cluster splitting one tile's K)",
         field("k_splits", config.k_splits));
  }
  if (config.raster_band < 0) {
    fail(name, "raster_band must be non-negative (0: picked at launch; else m-blocks per rasterisation band)",
         field("raster_band", config.raster_band));
  }
  if (config.num_sms < 0)
    fail(name, "num_sms must be non-negative (0: the planner's choice)", field("num_sms", config.num_sms));
  if (config.smem_bytes < 0) fail(name, "smem_bytes must be non-negative", field("smem_bytes", config.smem_bytes));
}

void set_rows_and_columns(GemmProblem& problem, std::int64_t m, std::int64_t n, bool empty) {
  problem.m = static_cast<int>(m);
  problem.n = static_cast<int>(n);
  problem.expected_m = problem.m;
  problem.empty = empty;
}

void check_launch_options(const GemmOptions& options, bool fp8, GemmProblem& problem) {
  if (options.max_sms < 0) {
    fail("options.max_sms", "must be non-negative (0: the process-wide setting)", std::to_string(options.max_sms));
  }
  if (options.pdl < -1 || options.pdl > 1) {
    fail("options.pdl", "must be -1 (process-wide setting), 0 (off) or 1 (on)", std::to_string(options.pdl));
  }
  if (options.config != nullptr) check_config(*options.config, fp8);
  problem.max_sms = options.max_sms;
  problem.pdl = options.pdl;
  problem.config = options.config;
}

}  // namespace moegemm::validate
