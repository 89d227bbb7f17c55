// The GEMM entry points: validate -> plan -> launch. No logic beyond wiring lives here (the planner's choices:
// api/planning.cpp; the plan and warm-up queries: api/warmup.cpp).
#include "moegemm/gemm.hpp"

#include <algorithm>

#include "api/planning.hpp"
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

using api::bf16_recipe;
using api::bf16_override;
using api::fp8_1d1d_override;
using api::fp8_1d2d_override;
using api::kKGroupedTnMajors;
using api::mn_major_bits;
using api::plan_bf16;
using api::plan_fp8_1d2d;

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

void run_fp8_1d2d(const validate::GemmProblem& p, Stream stream) {
  if (p.empty) return;
  const int sms = resolve_num_sms(p.max_sms);
  KernelConfig config;
  const kernels::GroupedKind layout = to_launch(p).layout;
  if (p.config != nullptr) {
    config = fp8_1d2d_override(*p.config, sms, layout);
  } else {
    config = plan_fp8_1d2d(shape_hint(p), sms, layout);
  }
  config = plan::with_shifted_scales(config, 0, layout, p.segment_alignment, p.config != nullptr);
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
    config = fp8_1d1d_override(*p.config, sms, kernels::GroupedKind::kDense);
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

plan::ShapeHint kgrouped_hint(const validate::GemmProblem& p) {
  return api::kgrouped_hint(p.m, p.n, p.k, p.num_groups);
}

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
    config = fp8_1d1d_override(*p.config, sms, kernels::GroupedKind::kKGrouped);
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
    config = bf16_override(*p.config, sms, recipe, mn_major, layout);
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
    config = bf16_override(*p.config, sms, kernels::sm90::GemmRecipe::kBf16Fp32, kKGroupedTnMajors,
                           kernels::GroupedKind::kKGrouped);
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

}  // namespace moegemm
