// The planner's choices shared by the entry points (src/api/gemm.cpp) and the plan and warm-up queries
// (src/api/warmup.cpp).
#include "api/planning.hpp"

#include <algorithm>

namespace moegemm::api {

// Planner hint for k-grouped shapes: M and N per expert, the mean K of sum_k over the experts (at least one K block).
plan::ShapeHint kgrouped_hint(std::int64_t m, std::int64_t n, std::int64_t sum_k, int num_groups) {
  plan::ShapeHint hint;
  hint.m_per_group = m;
  hint.n = n;
  hint.k = static_cast<int>(std::max<std::int64_t>(128, sum_k / std::max(1, num_groups)));
  hint.num_groups = std::max(1, num_groups);
  return hint;
}

// The planner's choice for FP8 (1,128,128) (the calls and plan_fp8_gemm_nt): the model over the tiles the layout
// allows; clusters are opt-in (options.config) except where measured faster (docs/heuristics.md).
KernelConfig plan_fp8_1d2d(const plan::ShapeHint& hint, int sms, kernels::GroupedKind layout) {
  const KernelConfig config = plan::choose_fp8_1d2d_config(hint, sms, /*allow_cluster=*/false, layout);
  if (layout != kernels::GroupedKind::kDense) return plan::with_masked_row_tiles(config, hint, layout);
  constexpr int kRecipe = static_cast<int>(kernels::sm90::GemmRecipe::kFp8_1d2d);
  return plan::with_row_block_tiles(
      plan::with_k_split(plan::with_measured_pair_cluster(config, hint), hint, kRecipe, layout), hint, kRecipe, layout);
}

// A BF16 call's recipe: FP32 D (with or without C), BF16 D with C, or BF16 D. The calls and the plan queries both
// name their kernels through it.
kernels::sm90::GemmRecipe bf16_recipe(bool fp32_d, bool with_c) {
  using kernels::sm90::GemmRecipe;
  return fp32_d ? GemmRecipe::kBf16Fp32 : with_c ? GemmRecipe::kBf16AddC : GemmRecipe::kBf16;
}

// The planner's choice for BF16 (the calls and plan_bf16_gemm): the model over the tiles the recipe and the layout
// allow, then pairs sharing B where they were measured faster (M = 65-128, 64-row tiles at least 128 wide: the FP8
// rule, measured for BF16 D too; docs/results/2026-12-03-bf16-pairs-tall.md), which need a K-major B.
KernelConfig plan_bf16(const plan::ShapeHint& hint, int sms, kernels::sm90::GemmRecipe recipe, int mn_major,
                       kernels::GroupedKind layout) {
  const int block_n_multiple = (mn_major & 2) ? 64 : 16;  // an MN-major B comes in whole 64-wide boxes
  KernelConfig config = plan::choose_bf16_config(hint, sms, recipe, block_n_multiple, layout);
  const bool fp32_out = kernels::sm90::recipe_has_fp32_out(static_cast<int>(recipe));
  if (layout == kernels::GroupedKind::kDense) {
    config = plan::with_short_k_c_tiles(config, hint, sms, static_cast<int>(recipe), layout);
    if (!(mn_major & 2) && !fp32_out) config = plan::with_measured_pair_cluster(config, hint);
    config = plan::with_k_split(config, hint, static_cast<int>(recipe), layout, block_n_multiple);
    // (K-major A and B only: no 128-row split has run with an MN-major operand on the device.)
    if (mn_major == 0) config = plan::with_row_block_tiles(config, hint, static_cast<int>(recipe), layout);
    config = plan::with_three_warpgroup_tiles(config, hint, sms, static_cast<int>(recipe));
  } else {
    config = plan::with_wide_grouped_bf16_tiles(config, hint, static_cast<int>(recipe), layout);
    config = plan::with_kgrouped_bf16_band(config, static_cast<int>(recipe), layout);
  }
  return config;
}

namespace {

KernelConfig completed(const KernelConfig& checked, int sms, int recipe, kernels::GroupedKind layout) {
  KernelConfig config = checked;
  config.math_warpgroups = kernels::sm90::gemm_math_warpgroups(config.block_m);
  config.num_sms = sms;
  config.smem_bytes = plan::gemm_smem_bytes(config, recipe, layout);
  return config;
}

}  // namespace

KernelConfig fp8_1d2d_override(const KernelConfig& requested, int sms, kernels::GroupedKind layout) {
  plan::check_fp8_1d2d_config(requested, layout);
  return completed(requested, sms, static_cast<int>(kernels::sm90::GemmRecipe::kFp8_1d2d), layout);
}

KernelConfig fp8_1d1d_override(const KernelConfig& requested, int sms, kernels::GroupedKind layout) {
  plan::check_fp8_1d1d_config(requested, layout);
  return completed(requested, sms, static_cast<int>(kernels::sm90::GemmRecipe::kFp8_1d1d), layout);
}

KernelConfig bf16_override(const KernelConfig& requested, int sms, kernels::sm90::GemmRecipe recipe, int mn_major,
                           kernels::GroupedKind layout) {
  plan::check_bf16_config(requested, recipe, mn_major, layout);
  return completed(requested, sms, static_cast<int>(recipe), layout);
}

}  // namespace moegemm::api
