// BF16 GEMMs (FP32 accumulation, no scales): bf16_gemm in all four majors, the M-grouped forms, and the K-grouped
// weight gradient D[g] = C[g] + A_g^T @ B_g.
#include "validate/checks.hpp"
#include "validate/validate.hpp"

namespace moegemm::validate {
namespace {

void start_bf16(Family family, const GemmOptions& options, GemmProblem& p) {
  p.family = family;
  p.kernel = Kernel::kBf16;
  check_recipe_none(options.recipe);
  p.has_scales = false;
  check_launch_options(options, /*fp8=*/false, p);
}

enum class Grouping { kContiguous, kMasked };

GemmProblem check_m_grouped(Family family, Grouping grouping, const TensorView& a, const TensorView& b,
                            const TensorView& d, const GemmOptions& options) {
  GemmProblem p;
  start_bf16(family, options, p);
  const bool masked = grouping == Grouping::kMasked;
  const int ad_rank = masked ? 3 : 2;
  const char* a_shape = masked ? "[G, cap, K]" : "[M_total, K]";
  const char* d_shape = masked ? "[G, cap, N]" : "[M_total, N]";

  check_rank(a, "a", ad_rank, a_shape);
  check_rank(b, "b", 3, "[G, N, K]");
  check_rank(d, "d", ad_rank, d_shape);
  check_sizes_non_negative(a, "a");
  check_sizes_non_negative(b, "b");
  check_sizes_non_negative(d, "d");
  const std::int64_t m = a.size(-2), k = a.size(-1), n = b.size(1), groups = b.size(0);
  check_positive("a", "K", k);
  check_multiple_of("a", "K", k, 8, "16-byte rows of BF16 A");
  check_positive("b", "N", n);
  check_multiple_of("b", "N", n, 8, "the BF16 epilogue stores 8 columns per 16 bytes");
  check_positive("b", "G", groups);
  check_same_extent("b", "K", b.size(2), "a", k);
  check_same_extent("d", masked ? "cap" : "M_total", d.size(-2), "a", m);
  check_same_extent("d", "N", d.size(-1), "b", n);
  if (masked) {
    check_same_extent("a", "G", a.size(0), "b", groups);
    check_same_extent("d", "G", d.size(0), "b", groups);
  }

  p.a = check_matrix(a, {"a", DType::kBFloat16, ad_rank, a_shape, Contiguous::kLast, "K-major", ""});
  p.b = check_matrix(b, {"b", DType::kBFloat16, 3, "[G, N, K]", Contiguous::kEither, "K-major", "MN-major"});
  p.d = check_matrix(d, {"d", DType::kBFloat16, ad_rank, d_shape, Contiguous::kLast, "row-major", ""});

  p.k = static_cast<int>(k);
  p.num_groups = static_cast<int>(groups);
  set_rows_and_columns(p, m, n, m == 0);
  return p;
}

}  // namespace

GemmProblem check_bf16_gemm(const TensorView& a, const TensorView& b, const TensorView& d, const TensorView* c,
                            const GemmOptions& options) {
  GemmProblem p;
  start_bf16(Family::kBf16Gemm, options, p);

  check_rank(a, "a", 2, "[M, K]");
  check_rank(b, "b", 2, "[N, K]");
  check_rank(d, "d", 2, "[M, N]");
  check_sizes_non_negative(a, "a");
  check_sizes_non_negative(b, "b");
  check_sizes_non_negative(d, "d");
  const std::int64_t m = a.size(0), k = a.size(1), n = b.size(0);
  check_positive("a", "K", k);
  check_positive("b", "N", n);
  check_same_extent("b", "K", b.size(1), "a", k);
  check_same_extent("d", "M", d.size(0), "a", m);
  check_same_extent("d", "N", d.size(1), "b", n);
  if (d.dtype != DType::kBFloat16 && d.dtype != DType::kFloat32) {
    fail("d", "must be bfloat16 or float32", to_string(d.dtype));
  }
  // The epilogues write (and read C in) whole column groups; a row's 16-byte alignment alone does not bound N when
  // M == 1 or D is a padded view.
  if (d.dtype == DType::kBFloat16) {
    check_multiple_of("b", "N", n, 8, "the BF16 epilogue stores 8 columns per 16 bytes");
  } else {
    check_multiple_of("b", "N", n, 2, "the FP32 epilogue stores column pairs");
  }

  p.a = check_matrix(a, {"a", DType::kBFloat16, 2, "[M, K]", Contiguous::kEither, "K-major", "MN-major"});
  p.b = check_matrix(b, {"b", DType::kBFloat16, 2, "[N, K]", Contiguous::kEither, "K-major", "MN-major"});
  const MatrixRule d_rule{"d", d.dtype, 2, "[M, N]", Contiguous::kLast, "row-major", ""};
  p.d = check_matrix(d, d_rule);
  MatrixRule c_rule = d_rule;
  c_rule.name = "c";
  check_c(c, d, p.d, c_rule, p);

  p.k = static_cast<int>(k);
  set_rows_and_columns(p, m, n, m == 0);
  return p;
}

GemmProblem check_m_grouped_bf16_gemm_contiguous(const TensorView& a, const TensorView& b, const TensorView& d,
                                                 const ContiguousLayout& layout, const GemmOptions& options) {
  GemmProblem p = check_m_grouped(Family::kMGroupedBf16Contiguous, Grouping::kContiguous, a, b, d, options);
  check_contiguous_layout(layout, p.m, p.num_groups, p);
  return p;
}

GemmProblem check_m_grouped_bf16_gemm_masked(const TensorView& a, const TensorView& b, const TensorView& d,
                                             const MaskedLayout& layout, const GemmOptions& options) {
  GemmProblem p = check_m_grouped(Family::kMGroupedBf16Masked, Grouping::kMasked, a, b, d, options);
  check_masked_layout(layout, p.num_groups, p.m, p);
  return p;
}

GemmProblem check_k_grouped_bf16_gemm_tn(const TensorView& a, const TensorView& b, const TensorView& d,
                                         const TensorView* c, const KGroupedLayout& layout,
                                         const GemmOptions& options) {
  GemmProblem p;
  start_bf16(Family::kKGroupedBf16Tn, options, p);
  const std::int64_t sum_k = check_k_grouped_layout(layout, p);
  const std::int64_t groups = p.num_groups;

  check_rank(a, "a", 2, "[sum K, M]");
  check_rank(b, "b", 2, "[sum K, N]");
  check_rank(d, "d", 3, "[G, M, N]");
  check_sizes_non_negative(a, "a");
  check_sizes_non_negative(b, "b");
  check_sizes_non_negative(d, "d");
  const std::int64_t m = a.size(1), n = b.size(1);
  check_flattened_rows_fit_int("d", groups, m, "M");
  check_same_extent("a", "sum K", a.size(0), "layout.ks", sum_k);
  check_same_extent("b", "sum K", b.size(0), "layout.ks", sum_k);
  check_positive("b", "N", n);
  check_same_extent("d", "G", d.size(0), "layout.ks", groups);
  check_same_extent("d", "M", d.size(1), "a", m);
  check_same_extent("d", "N", d.size(2), "b", n);

  // Row-major [sum K, M]: the reduction dimension is the strided one, so every expert's rows are one contiguous,
  // 16-byte aligned slab (its offset is k_offsets[g] * ld).
  p.a = check_matrix(a, {"a", DType::kBFloat16, 2, "[sum K, M]", Contiguous::kLast, "row-major", ""});
  p.b = check_matrix(b, {"b", DType::kBFloat16, 2, "[sum K, N]", Contiguous::kLast, "row-major", ""});
  p.a.major = Major::kMN;
  p.b.major = Major::kMN;
  const MatrixRule d_rule{"d", DType::kFloat32, 3, "[G, M, N]", Contiguous::kLast, "row-major", ""};
  p.d = check_matrix(d, d_rule);
  MatrixRule c_rule = d_rule;
  c_rule.name = "c";
  check_c(c, d, p.d, c_rule, p);
  p.accumulate_into_d = c == nullptr;

  set_rows_and_columns(p, m, n, m == 0 || sum_k == 0);
  return p;
}

}  // namespace moegemm::validate
