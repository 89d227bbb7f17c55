// The plan and warm-up queries: what the planner picks for a call shape (plan_*), and its kernels compiled into the
// disk cache ahead of the call (precompile_*, precompile_all), without a GPU and without launching.
#include <algorithm>
#include <atomic>
#include <exception>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include "api/planning.hpp"
#include "launch/gemm_launch.hpp"
#include "launch/kgrouped_descriptors.hpp"
#include "moegemm/device.hpp"
#include "moegemm/error.hpp"
#include "moegemm/gemm.hpp"
#include "runtime/kernel_cache.hpp"
#include "validate/validate.hpp"

namespace moegemm {

using api::bf16_recipe;
using api::bf16_override;
using api::fp8_1d1d_override;
using api::fp8_1d2d_override;
using api::kgrouped_hint;
using api::kKGroupedTnMajors;
using api::mn_major_bits;
using api::plan_bf16;
using api::plan_fp8_1d2d;

namespace {

// The SMs a plan query assumes: the process-wide cap, else the device's, else an H200's 132.
int planning_sms() {
  int sms = get_num_sms();
  if (sms <= 0) {
    const DeviceInfo info = device_info();
    sms = info.available ? info.sm_count : 132;
  }
  return sms;
}

// An m-grouped (or dense: num_groups 1) query's hint: rows per expert are expected_m, or ceil(m / G) as the calls'
// validation defaults them (contiguous: ceil(M_total / G); masked: m is G x capacity), so that a query with no hint
// plans, and precompiles, the kernel the call without one launches.
plan::ShapeHint m_grouped_query_hint(int m, int n, int k, int num_groups, int expected_m) {
  plan::ShapeHint h;
  h.n = n;
  h.k = k;
  h.num_groups = std::max(1, num_groups);
  h.m_per_group =
      h.num_groups > 1
          ? std::max<long long>(1, expected_m > 0 ? expected_m
                                                  : (static_cast<long long>(m) + h.num_groups - 1) / h.num_groups)
          : m;
  return h;
}

// The GEMM kernel a plan query stands for: the planner's configuration and how the matching call names the
// kernel (layout, recipe, operand majors), so that a query's precompiled kernel is the one the call loads.
struct PlannedKernel {
  KernelConfig config;
  kernels::GroupedKind layout = kernels::GroupedKind::kDense;
  kernels::sm90::GemmRecipe recipe = kernels::sm90::GemmRecipe::kFp8_1d2d;
  int mn_major = 0;
  int segment_alignment = kContiguousAlignment;  // group ends: the call's layout.segment_alignment
  long long k = 0;  // the problem's K, where the kernel is specialised on it (launch::gemm_fixed_k_blocks)
};

// `config`: a call's configuration override (the query's), checked as the call checks it; else the planner's.
PlannedKernel planned_fp8_nt(int m, int n, int k, int num_groups, int expected_m, GemmLayout grouped_layout,
                             int segment_alignment = kContiguousAlignment,
                             const std::optional<KernelConfig>& config = std::nullopt) {
  if (grouped_layout != GemmLayout::kContiguousRowToGroup && grouped_layout != GemmLayout::kContiguousGroupEnds &&
      grouped_layout != GemmLayout::kMasked) {
    throw Error(ErrorCode::kInvalidArgument,
                "grouped_layout: must be an m-grouped layout (contiguous row-to-group or group ends, or masked), got " +
                    std::to_string(static_cast<int>(grouped_layout)));
  }
  const plan::ShapeHint h = m_grouped_query_hint(m, n, k, num_groups, expected_m);
  PlannedKernel planned;
  planned.layout =
      h.num_groups == 1 ? kernels::GroupedKind::kDense : static_cast<kernels::GroupedKind>(grouped_layout);
  planned.config = config ? fp8_1d2d_override(*config, planning_sms(), planned.layout)
                          : plan_fp8_1d2d(h, planning_sms(), planned.layout);
  validate::check_segment_alignment(segment_alignment, planned.layout == kernels::GroupedKind::kContiguousGroupEnds,
                                    "segment_alignment");
  planned.segment_alignment = segment_alignment;
  planned.k = k;
  // As the call plans it: packed FP8 group ends need 16 more bytes of shared memory a stage.
  planned.config =
      plan::with_shifted_scales(planned.config, 0, planned.layout, segment_alignment, config.has_value());
  return planned;
}

PlannedKernel planned_fp8_wgrad(int m, int n, int k, int num_groups,
                                const std::optional<KernelConfig>& config = std::nullopt) {
  const plan::ShapeHint h = num_groups > 1 ? kgrouped_hint(m, n, k, num_groups) : plan::ShapeHint{m, n, k, 1};
  PlannedKernel planned;
  planned.layout = num_groups > 1 ? kernels::GroupedKind::kKGrouped : kernels::GroupedKind::kDense;
  planned.recipe = kernels::sm90::GemmRecipe::kFp8_1d1d;
  planned.config = config ? fp8_1d1d_override(*config, planning_sms(), planned.layout)
                          : plan::choose_fp8_1d1d_config(h, planning_sms());
  return planned;
}

PlannedKernel planned_bf16(const Bf16PlanQuery& q) {
  using kernels::sm90::GemmRecipe;
  PlannedKernel planned;
  planned.layout = static_cast<kernels::GroupedKind>(q.layout);
  validate::check_segment_alignment(q.segment_alignment, planned.layout == kernels::GroupedKind::kContiguousGroupEnds,
                                    "query.segment_alignment");
  planned.segment_alignment = q.segment_alignment;
  const int sms = planning_sms();
  if (planned.layout == kernels::GroupedKind::kKGrouped) {
    planned.recipe = GemmRecipe::kBf16Fp32;
    planned.mn_major = kKGroupedTnMajors;
  } else {
    planned.recipe = bf16_recipe(q.fp32_d, q.with_c);
    planned.mn_major = mn_major_bits(q.a_mn_major, q.b_mn_major);
  }
  if (q.config) {
    planned.config = bf16_override(*q.config, sms, planned.recipe, planned.mn_major, planned.layout);
    return planned;
  }
  const plan::ShapeHint h =
      planned.layout == kernels::GroupedKind::kKGrouped
          ? kgrouped_hint(q.m, q.n, q.k, q.num_groups)
          : m_grouped_query_hint(q.m, q.n, q.k, planned.layout == kernels::GroupedKind::kDense ? 1 : q.num_groups,
                                 q.expected_m);
  planned.config = plan_bf16(h, sms, planned.recipe, planned.mn_major, planned.layout);
  return planned;
}

PrecompiledKernel precompiled(const jit::KernelSpec& spec, const KernelConfig& config) {
  const jit::CachedKernelFile file = jit::precompile_to_disk(spec);
  PrecompiledKernel out;
  out.name = spec.name;
  out.config = config;
  out.path = file.path;
  out.from_disk = file.from_disk;
  out.compile_ms = file.compile_ms;
  out.registers = file.usage.known ? file.usage.registers : 0;
  out.spill_bytes = file.usage.spill_store_bytes;
  return out;
}

// A kernel a planned call launches, before it is compiled.
struct KernelToCompile {
  jit::KernelSpec spec;
  KernelConfig config;
};

// Every kernel the planned call launches: the k-grouped FP8 call's descriptor step first, then the GEMM.
std::vector<KernelToCompile> kernels_of(const PlannedKernel& p) {
  std::vector<KernelToCompile> out;
  if (p.layout == kernels::GroupedKind::kKGrouped && p.recipe == kernels::sm90::GemmRecipe::kFp8_1d1d) {
    out.push_back({launch::kgrouped_descriptor_kernel_spec(), KernelConfig{}});
  }
  out.push_back(
      {launch::gemm_kernel_spec(p.config, p.layout, static_cast<int>(p.recipe), p.mn_major, p.segment_alignment, p.k),
       p.config});
  return out;
}

std::vector<PrecompiledKernel> precompile_planned(const PlannedKernel& p) {
  std::vector<PrecompiledKernel> out;
  for (const KernelToCompile& k : kernels_of(p)) out.push_back(precompiled(k.spec, k.config));
  return out;
}

// Plans one query of a batch; a refusal names the query ("queries.fp8_nt[3]: ...").
template <typename Plan>
PlannedKernel planned_query(const char* list, std::size_t index, Plan plan) {
  try {
    return plan();
  } catch (const Error& e) {
    throw Error(e.code(), std::string("queries.") + list + "[" + std::to_string(index) + "]: " + e.message());
  }
}

// Compiles `kernels` on up to `threads` threads (each takes the next kernel not yet taken); the first failure in
// kernel order is rethrown once every thread has finished, so a failure never leaves a thread running.
std::vector<PrecompiledKernel> compile_in_parallel(const std::vector<KernelToCompile>& kernels, int threads) {
  std::vector<PrecompiledKernel> out(kernels.size());
  std::vector<std::exception_ptr> errors(kernels.size());
  std::atomic<std::size_t> next{0};
  auto work = [&] {
    for (std::size_t i = next++; i < kernels.size(); i = next++) {
      try {
        out[i] = precompiled(kernels[i].spec, kernels[i].config);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    }
  };
  const int wanted = threads > 0 ? threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const std::size_t helpers = std::min<std::size_t>(static_cast<std::size_t>(wanted), kernels.size());
  std::vector<std::thread> pool;
  for (std::size_t t = 1; t < helpers; ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  for (const std::exception_ptr& e : errors) {
    if (e) std::rethrow_exception(e);
  }
  return out;
}

}  // namespace

KernelConfig plan_fp8_gemm_wgrad(int m, int n, int k, int num_groups) {
  return planned_fp8_wgrad(m, n, k, num_groups).config;
}

KernelConfig plan_bf16_gemm(const Bf16PlanQuery& q) { return planned_bf16(q).config; }

KernelConfig plan_fp8_gemm_nt(int m, int n, int k, int num_groups, int expected_m, GemmLayout grouped_layout) {
  return planned_fp8_nt(m, n, k, num_groups, expected_m, grouped_layout).config;
}

std::vector<PrecompiledKernel> precompile_fp8_gemm_nt(int m, int n, int k, int num_groups, int expected_m,
                                                      GemmLayout grouped_layout, int segment_alignment) {
  return precompile_planned(planned_fp8_nt(m, n, k, num_groups, expected_m, grouped_layout, segment_alignment));
}

std::vector<PrecompiledKernel> precompile_fp8_gemm_wgrad(int m, int n, int k, int num_groups) {
  return precompile_planned(planned_fp8_wgrad(m, n, k, num_groups));
}

std::vector<PrecompiledKernel> precompile_bf16_gemm(const Bf16PlanQuery& query) {
  return precompile_planned(planned_bf16(query));
}

std::vector<PrecompiledKernel> precompile_all(const WarmupQueries& queries, int threads) {
  if (threads < 0) {
    throw Error(ErrorCode::kInvalidArgument,
                "threads: must be 0 (one per hardware thread) or a positive count, got " + std::to_string(threads));
  }
  std::vector<PlannedKernel> planned;
  planned.reserve(queries.fp8_nt.size() + queries.fp8_wgrad.size() + queries.bf16.size());
  for (std::size_t i = 0; i < queries.fp8_nt.size(); ++i) {
    const Fp8NtQuery& q = queries.fp8_nt[i];
    planned.push_back(planned_query("fp8_nt", i, [&] {
      return planned_fp8_nt(q.m, q.n, q.k, q.num_groups, q.expected_m, q.grouped_layout, q.segment_alignment,
                            q.config);
    }));
  }
  for (std::size_t i = 0; i < queries.fp8_wgrad.size(); ++i) {
    const Fp8WgradQuery& q = queries.fp8_wgrad[i];
    planned.push_back(planned_query("fp8_wgrad", i, [&] {
      return planned_fp8_wgrad(q.m, q.n, q.k, q.num_groups, q.config);
    }));
  }
  for (std::size_t i = 0; i < queries.bf16.size(); ++i) {
    planned.push_back(planned_query("bf16", i, [&] { return planned_bf16(queries.bf16[i]); }));
  }
  // One entry per kernel name: the name is the kernel's key, and it determines its source and options.
  std::vector<KernelToCompile> distinct;
  std::set<std::string> names;
  for (const PlannedKernel& p : planned) {
    for (KernelToCompile& k : kernels_of(p)) {
      if (names.insert(k.spec.name).second) distinct.push_back(std::move(k));
    }
  }
  return compile_in_parallel(distinct, threads);
}

}  // namespace moegemm
