// FP8 1D2D entry points: validate -> plan -> launch. No logic beyond wiring lives here.
#include "moegemm/gemm.hpp"

#include <algorithm>

#include "launch/gemm_launch.hpp"
#include "launch/kgrouped_descriptors.hpp"
#include "moegemm/device.hpp"
#include "moegemm/error.hpp"
#include "plan/gemm_plan.hpp"
#include "runtime/driver.hpp"
#include "runtime/kernel_cache.hpp"
#include "sm90/gemm_params.cuh"
#include "validate/validate.hpp"

namespace moegemm {
namespace {

// The SM budget of one call: the caller's cap, else the process-wide one, else every SM of the device.
int resolve_num_sms(int requested) {
  const DeviceInfo info = device_info();
  if (!info.available) throw Error(ErrorCode::kNoDevice, info.reason);
  if (info.major != 9) {
    throw Error(ErrorCode::kUnsupported, "moegemm's kernels need an SM90 (Hopper) GPU, found compute capability " +
                                             std::to_string(info.major) + "." + std::to_string(info.minor) + " (" +
                                             info.name + ")");
  }
  int sms = requested > 0 ? requested : get_num_sms();
  if (sms <= 0) sms = info.sm_count;
  if (sms > info.sm_count) {
    throw Error(ErrorCode::kInvalidArgument, "options.max_sms: must be at most the device's " +
                                                 std::to_string(info.sm_count) + " SMs, got " + std::to_string(sms));
  }
  return sms;
}

bool resolve_pdl(int requested) { return requested < 0 ? get_pdl() : requested != 0; }

// The caller's configuration override, checked by `check` and completed (warpgroups, SMs, shared memory).
template <typename Check>
KernelConfig checked_override(const KernelConfig& requested, int sms, int recipe, kernels::GroupedKind layout,
                              Check check) {
  KernelConfig config = requested;
  check(config);
  config.math_warpgroups = kernels::sm90::gemm_math_warpgroups(config.block_m);
  config.num_sms = sms;
  config.smem_bytes = plan::gemm_smem_bytes(config, recipe, layout);
  return config;
}

launch::GemmLaunch to_launch(const validate::GemmProblem& p) {
  launch::GemmLaunch l;
  switch (p.layout) {
    case validate::Layout::kDense:
      l.layout = kernels::GroupedKind::kDense;
      break;
    case validate::Layout::kContiguousRowToGroup:
      l.layout = kernels::GroupedKind::kContiguousRowToGroup;
      break;
    case validate::Layout::kContiguousGroupEnds:
      l.layout = kernels::GroupedKind::kContiguousGroupEnds;
      break;
    case validate::Layout::kMasked:
      l.layout = kernels::GroupedKind::kMasked;
      break;
    case validate::Layout::kKGrouped:
      l.layout = kernels::GroupedKind::kKGrouped;
      break;
  }
  l.rows = p.m;
  l.n = p.n;
  l.k = p.k;
  l.num_groups = p.num_groups;
  l.a = p.a.ptr;
  l.lda = p.a.ld;
  l.a_group_stride = p.a.group_stride;
  l.b = p.b.ptr;
  l.ldb = p.b.ld;
  l.b_group_stride = p.b.group_stride;
  l.sfa = p.sfa.ptr;
  l.sfa_mn_stride = p.sfa.k_stride;  // MN-major: consecutive k-blocks are tma_aligned(rows) apart
  l.sfb = p.sfb.ptr;
  l.sfb_group_stride = p.sfb.group_stride;
  l.sfb_n_stride = p.sfb.mn_stride;
  l.sfb_k_stride = p.sfb.k_stride;
  l.d = const_cast<void*>(p.d.ptr);
  l.ldd = p.d.ld;
  l.d_group_stride = p.d.group_stride;
  l.routing = p.routing;
  l.segment_alignment = p.segment_alignment;
  return l;
}

plan::ShapeHint shape_hint(const validate::GemmProblem& p) {
  plan::ShapeHint h;
  h.n = p.n;
  h.k = p.k;
  if (p.layout == validate::Layout::kDense) {
    h.m_per_group = p.m;
    h.num_groups = 1;
  } else {
    h.m_per_group = std::max(1, p.expected_m);
    h.num_groups = p.num_groups;
  }
  return h;
}

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

void run_fp8_1d2d(const validate::GemmProblem& p, Stream stream) {
  if (p.empty) return;
  const int sms = resolve_num_sms(p.max_sms);
  KernelConfig config;
  if (p.config != nullptr) {
    const kernels::GroupedKind layout = to_launch(p).layout;
    config = checked_override(*p.config, sms, 0, layout,
                              [&](const KernelConfig& c) { plan::check_fp8_1d2d_config(c, layout); });
  } else {
    config = plan_fp8_1d2d(shape_hint(p), sms, to_launch(p).layout);
  }
  launch::launch_gemm(to_launch(p), config, resolve_pdl(p.pdl), stream);
}

}  // namespace

void fp8_gemm_nt(const Fp8Operand& a, const Fp8Operand& b, const TensorView& d, Stream stream,
                 const GemmOptions& options) {
  run_fp8_1d2d(validate::check_fp8_gemm_nt(a, b, d, options), stream);
}

void m_grouped_fp8_gemm_nt_contiguous(const Fp8Operand& a, const Fp8Operand& b, const TensorView& d,
                                      const ContiguousLayout& layout, Stream stream, const GemmOptions& options) {
  run_fp8_1d2d(validate::check_m_grouped_fp8_gemm_nt_contiguous(a, b, d, layout, options), stream);
}

void m_grouped_fp8_gemm_nt_masked(const Fp8Operand& a, const Fp8Operand& b, const TensorView& d,
                                  const MaskedLayout& layout, Stream stream, const GemmOptions& options) {
  run_fp8_1d2d(validate::check_m_grouped_fp8_gemm_nt_masked(a, b, d, layout, options), stream);
}

void fp8_gemm_nt_1d1d(const Fp8Operand& a, const Fp8Operand& b, const TensorView& d, const TensorView* c, Stream stream,
                      const GemmOptions& options) {
  const validate::GemmProblem p = validate::check_fp8_gemm_nt_1d1d(a, b, d, c, options);
  if (p.empty) return;
  const int sms = resolve_num_sms(p.max_sms);
  KernelConfig config;
  if (p.config != nullptr) {
    config = checked_override(*p.config, sms, static_cast<int>(kernels::sm90::GemmRecipe::kFp8_1d1d),
                              kernels::GroupedKind::kDense, [](const KernelConfig& c) { plan::check_fp8_1d1d_config(c); });
  } else {
    config = plan::choose_fp8_1d1d_config(shape_hint(p), sms);
  }
  launch::GemmLaunch l = to_launch(p);
  l.recipe = static_cast<int>(kernels::sm90::GemmRecipe::kFp8_1d1d);
  l.sfb_mn_stride = p.sfb.k_stride;  // MN-major row scales: consecutive k-blocks are tma_aligned(N) apart
  // C distinct from D is read where D is written; C aliasing D, or no C (D += A B^T), reads D itself.
  l.c = p.has_c && !p.c_aliases_d ? p.c.ptr : nullptr;
  l.ldc = p.has_c && !p.c_aliases_d ? p.c.ld : 0;
  l.add_c = true;
  launch::launch_gemm(l, config, resolve_pdl(p.pdl), stream);
}

namespace {

// K-grouped D is stored as a flattened [G * M, N]: D must be contiguous (checked before any device query).
void check_kgrouped_output(const validate::GemmProblem& p, const TensorView& d, const TensorView* c,
                           const char* family) {
  const std::int64_t m = p.m, n = p.n, groups = p.num_groups;
  if (p.d.ld != n || p.d.group_stride != m * n) {
    throw Error(ErrorCode::kUnsupported,
                std::string(family) + ": d must be contiguous [G, M, N] so far, got " + d.describe());
  }
  const bool copy_c = p.has_c && !p.c_aliases_d;
  if (copy_c && (p.c.ld != n || p.c.group_stride != m * n)) {
    throw Error(ErrorCode::kUnsupported,
                std::string(family) + ": c must be contiguous [G, M, N] so far, got " + c->describe());
  }
  if (p.ks_device == nullptr && groups > kernels::sm90::kMaxInlineKGroups) {
    throw Error(ErrorCode::kUnsupported, std::string(family) + ": more than " +
                                             std::to_string(kernels::sm90::kMaxInlineKGroups) +
                                             " experts need layout.ks_device");
  }
}

// K-grouped C: a C distinct from D is read by the epilogue where D is written (D = C + A B^T), and experts with
// K_g = 0 get tiles with an empty reduction, so they store D[g] = C[g]; C aliasing D, or no C, accumulates onto D
// and leaves empty experts' D as it is. C and D are contiguous [G, M, N] (check_kgrouped_output), so the kernel's
// flattened rows address both.
// An empty k-grouped problem (no rows, or every K_g = 0) launches nothing; with a distinct C it still owes D = C.
void copy_c_if_empty(const validate::GemmProblem& p, Stream stream) {
  const std::int64_t count = static_cast<std::int64_t>(p.num_groups) * p.m * p.n;
  if (p.empty && p.has_c && !p.c_aliases_d && count > 0) {
    jit::check(
        jit::driver().cuMemcpyAsync(reinterpret_cast<CUdeviceptr>(p.d.ptr), reinterpret_cast<CUdeviceptr>(p.c.ptr),
                                    static_cast<std::size_t>(count) * sizeof(float), static_cast<CUstream>(stream)),
        "cuMemcpyAsync(d <- c)");
  }
}

void set_kgrouped_c(const validate::GemmProblem& p, launch::GemmLaunch& l) {
  const bool distinct_c = p.has_c && !p.c_aliases_d;
  l.add_c = true;
  l.c = distinct_c ? static_cast<const float*>(p.c.ptr) : nullptr;
  l.ldc = distinct_c ? p.n : 0;
}

plan::ShapeHint kgrouped_hint(const validate::GemmProblem& p) { return kgrouped_hint(p.m, p.n, p.k, p.num_groups); }

}  // namespace

void k_grouped_fp8_gemm_nt(const Fp8Operand& a, const Fp8Operand& b, const TensorView& d, const TensorView* c,
                           const KGroupedLayout& layout, Stream stream, const GemmOptions& options) {
  const validate::GemmProblem p = validate::check_k_grouped_fp8_gemm_nt(a, b, d, c, layout, options);
  constexpr int kMaxGroups = 4096;  // the descriptor step keeps two ints per expert in shared memory
  if (p.num_groups > kMaxGroups) {
    throw Error(ErrorCode::kUnsupported, "k_grouped_fp8_gemm_nt: at most " + std::to_string(kMaxGroups) +
                                             " experts so far, got " + std::to_string(p.num_groups));
  }
  check_kgrouped_output(p, d, c, "k_grouped_fp8_gemm_nt");
  const int sms = resolve_num_sms(p.max_sms);
  copy_c_if_empty(p, stream);
  if (p.empty) return;
  constexpr int kRecipe = static_cast<int>(kernels::sm90::GemmRecipe::kFp8_1d1d);
  KernelConfig config;
  if (p.config != nullptr) {
    config =
        checked_override(*p.config, sms, kRecipe, kernels::GroupedKind::kKGrouped,
                         [](const KernelConfig& cfg) { plan::check_fp8_1d1d_config(cfg); });
  } else {
    config = plan::choose_fp8_1d1d_config(kgrouped_hint(p), sms);
  }
  launch::GemmLaunch l = to_launch(p);
  l.recipe = kRecipe;
  l.sfb_mn_stride = p.sfb.k_stride;  // MN-major row scales: consecutive k-blocks are tma_aligned(N) apart
  l.routing = p.ks_device;
  l.host_ks = &p.ks;
  set_kgrouped_c(p, l);
  launch::launch_gemm(l, config, resolve_pdl(p.pdl), stream);
}

namespace {

// A BF16 call's recipe: FP32 D (with or without C), BF16 D with C, or BF16 D. The calls and the plan queries both
// name their kernels through it.
kernels::sm90::GemmRecipe bf16_recipe(bool fp32_d, bool with_c) {
  using kernels::sm90::GemmRecipe;
  return fp32_d ? GemmRecipe::kBf16Fp32 : with_c ? GemmRecipe::kBf16AddC : GemmRecipe::kBf16;
}

// Operand majors as the kernel takes them: bit 0 an MN-major A, bit 1 an MN-major B.
int mn_major_bits(bool a_mn_major, bool b_mn_major) { return (a_mn_major ? 1 : 0) | (b_mn_major ? 2 : 0); }

// The k-grouped BF16 call (tn): A [sum K, M] and B [sum K, N], both MN-major.
constexpr int kKGroupedTnMajors = 3;

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
  }
  return config;
}

// The BF16 kernel: A and B K-major or MN-major (NT, NN, TN, TT; grouped: B either way); BF16 D with or without C
// (dense only: the m-grouped forms take no C), or FP32 D with or without C.
void run_bf16(const validate::GemmProblem& p, Stream stream) {
  using kernels::sm90::GemmRecipe;
  const int mn_major = mn_major_bits(p.a.major == validate::Major::kMN, p.b.major == validate::Major::kMN);
  if (p.empty) return;
  const int sms = resolve_num_sms(p.max_sms);
  const bool fp32_out = p.d.dtype == DType::kFloat32;
  const GemmRecipe recipe = bf16_recipe(fp32_out, p.has_c);
  KernelConfig config;
  if (p.config != nullptr) {
    const kernels::GroupedKind layout = to_launch(p).layout;
    config = checked_override(*p.config, sms, static_cast<int>(recipe), layout, [&](const KernelConfig& c) {
      plan::check_bf16_config(c, recipe, mn_major, layout);
    });
  } else {
    config = plan_bf16(shape_hint(p), sms, recipe, mn_major, to_launch(p).layout);
  }
  launch::GemmLaunch l = to_launch(p);
  l.recipe = static_cast<int>(recipe);
  l.mn_major = mn_major;
  if (fp32_out) {
    l.add_c = p.has_c || p.accumulate_into_d;
    l.c = p.has_c && !p.c_aliases_d ? p.c.ptr : nullptr;
    l.ldc = p.has_c && !p.c_aliases_d ? p.c.ld : 0;
  } else if (p.has_c) {
    // BF16 C is always passed: when it aliases D it is D's pointer and row stride (validated as the same).
    l.c = p.c.ptr;
    l.ldc = p.c.ld;
  }
  launch::launch_gemm(l, config, resolve_pdl(p.pdl), stream);
}

}  // namespace

void bf16_gemm(const TensorView& a, const TensorView& b, const TensorView& d, const TensorView* c, Stream stream,
               const GemmOptions& options) {
  run_bf16(validate::check_bf16_gemm(a, b, d, c, options), stream);
}

void m_grouped_bf16_gemm_contiguous(const TensorView& a, const TensorView& b, const TensorView& d,
                                    const ContiguousLayout& layout, Stream stream, const GemmOptions& options) {
  run_bf16(validate::check_m_grouped_bf16_gemm_contiguous(a, b, d, layout, options), stream);
}

void m_grouped_bf16_gemm_masked(const TensorView& a, const TensorView& b, const TensorView& d,
                                const MaskedLayout& layout, Stream stream, const GemmOptions& options) {
  run_bf16(validate::check_m_grouped_bf16_gemm_masked(a, b, d, layout, options), stream);
}

void k_grouped_bf16_gemm_tn(const TensorView& a, const TensorView& b, const TensorView& d, const TensorView* c,
                            const KGroupedLayout& layout, Stream stream, const GemmOptions& options) {
  const validate::GemmProblem p = validate::check_k_grouped_bf16_gemm_tn(a, b, d, c, layout, options);
  check_kgrouped_output(p, d, c, "k-grouped BF16");
  const int sms = resolve_num_sms(p.max_sms);
  copy_c_if_empty(p, stream);
  if (p.empty) return;
  constexpr int kRecipe = static_cast<int>(kernels::sm90::GemmRecipe::kBf16Fp32);
  KernelConfig config;
  if (p.config != nullptr) {
    config = checked_override(*p.config, sms, kRecipe, kernels::GroupedKind::kKGrouped, [](const KernelConfig& cfg) {
      plan::check_bf16_config(cfg, kernels::sm90::GemmRecipe::kBf16Fp32, kKGroupedTnMajors,
                              kernels::GroupedKind::kKGrouped);
    });
  } else {
    config = plan_bf16(kgrouped_hint(p), sms, kernels::sm90::GemmRecipe::kBf16Fp32, kKGroupedTnMajors,
                       kernels::GroupedKind::kKGrouped);
  }
  launch::GemmLaunch l = to_launch(p);
  l.recipe = kRecipe;
  l.mn_major = kKGroupedTnMajors;
  l.routing = p.ks_device;
  l.host_ks = &p.ks;
  set_kgrouped_c(p, l);
  launch::launch_gemm(l, config, resolve_pdl(p.pdl), stream);
}

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
      h.num_groups > 1 ? std::max(1, expected_m > 0 ? expected_m : (m + h.num_groups - 1) / h.num_groups) : m;
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
};

PlannedKernel planned_fp8_nt(int m, int n, int k, int num_groups, int expected_m, GemmLayout grouped_layout,
                             int segment_alignment = kContiguousAlignment) {
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
  planned.config = plan_fp8_1d2d(h, planning_sms(), planned.layout);
  validate::check_segment_alignment(segment_alignment, planned.layout == kernels::GroupedKind::kContiguousGroupEnds,
                                    "segment_alignment");
  planned.segment_alignment = segment_alignment;
  return planned;
}

PlannedKernel planned_fp8_wgrad(int m, int n, int k, int num_groups) {
  const plan::ShapeHint h = num_groups > 1 ? kgrouped_hint(m, n, k, num_groups) : plan::ShapeHint{m, n, k, 1};
  PlannedKernel planned;
  planned.config = plan::choose_fp8_1d1d_config(h, planning_sms());
  planned.layout = num_groups > 1 ? kernels::GroupedKind::kKGrouped : kernels::GroupedKind::kDense;
  planned.recipe = kernels::sm90::GemmRecipe::kFp8_1d1d;
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
    planned.config =
        plan_bf16(kgrouped_hint(q.m, q.n, q.k, q.num_groups), sms, planned.recipe, planned.mn_major, planned.layout);
    return planned;
  }
  const plan::ShapeHint h = m_grouped_query_hint(
      q.m, q.n, q.k, planned.layout == kernels::GroupedKind::kDense ? 1 : q.num_groups, q.expected_m);
  planned.recipe = bf16_recipe(q.fp32_d, q.with_c);
  planned.mn_major = mn_major_bits(q.a_mn_major, q.b_mn_major);
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

// Every kernel the planned call launches: the k-grouped FP8 call's descriptor step first, then the GEMM.
std::vector<PrecompiledKernel> precompile_planned(const PlannedKernel& p) {
  std::vector<PrecompiledKernel> out;
  if (p.layout == kernels::GroupedKind::kKGrouped && p.recipe == kernels::sm90::GemmRecipe::kFp8_1d1d) {
    out.push_back(precompiled(launch::kgrouped_descriptor_kernel_spec(), KernelConfig{}));
  }
  out.push_back(precompiled(
      launch::gemm_kernel_spec(p.config, p.layout, static_cast<int>(p.recipe), p.mn_major, p.segment_alignment),
      p.config));
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

}  // namespace moegemm
