// The planner's choices the entry points share with the plan and warm-up queries (src/api/warmup.cpp): one place,
// so that a query plans and names the very kernel the matching call launches.
#pragma once

#include <cstdint>

#include "moegemm/config.hpp"
#include "plan/gemm_plan.hpp"
#include "sm90/gemm_params.cuh"

namespace moegemm::api {

// Planner hint for k-grouped shapes: M and N per expert, the mean K of sum_k over the experts (at least one K block).
plan::ShapeHint kgrouped_hint(std::int64_t m, std::int64_t n, std::int64_t sum_k, int num_groups);

// The planner's choice for FP8 (1,128,128): the model over the tiles the layout allows; clusters are opt-in
// (options.config) except where measured faster (docs/heuristics.md).
KernelConfig plan_fp8_1d2d(const plan::ShapeHint& hint, int sms, kernels::GroupedKind layout);

// A BF16 call's recipe: FP32 D (with or without C), BF16 D with C, or BF16 D.
kernels::sm90::GemmRecipe bf16_recipe(bool fp32_d, bool with_c);

// Operand majors as the kernel takes them: bit 0 an MN-major A, bit 1 an MN-major B.
constexpr int mn_major_bits(bool a_mn_major, bool b_mn_major) { return (a_mn_major ? 1 : 0) | (b_mn_major ? 2 : 0); }

// The k-grouped BF16 call (tn): A [sum K, M] and B [sum K, N], both MN-major.
constexpr int kKGroupedTnMajors = 3;

// The planner's choice for BF16: the model over the tiles the recipe and the layout allow, then the measured
// refinements (pairs sharing B, K splits, 128-row and three-warpgroup tiles, wide grouped tiles).
KernelConfig plan_bf16(const plan::ShapeHint& hint, int sms, kernels::sm90::GemmRecipe recipe, int mn_major,
                       kernels::GroupedKind layout);

// A configuration override (GemmOptions::config, or a warm-up query's config), checked by its recipe's rules
// (plan::check_*_config: throws, naming the rule) and completed (warpgroups, SMs, shared memory) as the planner
// completes its own choices. The calls and the warm-up queries both take their overrides through these, so that a
// query refuses and compiles exactly what the call would.
KernelConfig fp8_1d2d_override(const KernelConfig& requested, int sms, kernels::GroupedKind layout);
KernelConfig fp8_1d1d_override(const KernelConfig& requested, int sms, kernels::GroupedKind layout);
KernelConfig bf16_override(const KernelConfig& requested, int sms, kernels::sm90::GemmRecipe recipe, int mn_major,
                           kernels::GroupedKind layout);

}  // namespace moegemm::api
