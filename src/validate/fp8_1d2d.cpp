// FP8 with recipe (1, 128, 128): fp8_gemm_nt and the two M-grouped forms. A per token x 128 K (TMA-read, MN-major
// SFA), B per 128 x 128 block (SFB read with plain loads), BF16 D, no C.
#include "validate/checks.hpp"
#include "validate/validate.hpp"

namespace moegemm::validate {
namespace {

enum class Grouping { kDense, kContiguous, kMasked };

GemmProblem check_1d2d(Family family, Grouping grouping, const Fp8Operand& a, const Fp8Operand& b,
                       const TensorView& d, const GemmOptions& options) {
  GemmProblem p;
  p.family = family;
  p.kernel = Kernel::kFp8_1d2d;
  check_recipe_1d2d(options.recipe, grouping == Grouping::kDense);
  p.recipe = kRecipe1x128x128;
  p.has_scales = true;
  check_launch_options(options, /*fp8=*/true, p);

  const bool masked = grouping == Grouping::kMasked;
  const int ad_rank = masked ? 3 : 2;
  const int b_rank = grouping == Grouping::kDense ? 2 : 3;
  const char* a_shape = masked ? "[G, cap, K]" : "[M, K]";
  const char* b_shape = b_rank == 3 ? "[G, N, K]" : "[N, K]";
  const char* d_shape = masked ? "[G, cap, N]" : "[M, N]";

  // Shapes first, so that a size rule is reported as such rather than as the stride rule it implies.
  check_rank(a.data, "a.data", ad_rank, a_shape);
  check_rank(b.data, "b.data", b_rank, b_shape);
  check_rank(d, "d", ad_rank, d_shape);
  check_sizes_non_negative(a.data, "a.data");
  check_sizes_non_negative(b.data, "b.data");
  check_sizes_non_negative(d, "d");
  const std::int64_t m = a.data.size(-2), k = a.data.size(-1), n = b.data.size(-2);
  check_positive("a.data", "K", k);
  check_multiple_of("a.data", "K", k, 16, "16-byte rows of FP8 A and B");
  check_positive("b.data", "N", n);
  check_multiple_of("b.data", "N", n, 8, "the BF16 epilogue stores 8 columns per 16 bytes");
  check_same_extent("b.data", "K", b.data.size(-1), "a.data", k);
  check_same_extent("d", masked ? "cap" : "M", d.size(-2), "a.data", m);
  check_same_extent("d", "N", d.size(-1), "b.data", n);
  std::int64_t groups = 1;
  if (masked) {
    groups = a.data.size(0);
    check_positive("a.data", "G", groups);
    check_same_extent("b.data", "G", b.data.size(0), "a.data", groups);
    check_same_extent("d", "G", d.size(0), "a.data", groups);
  } else if (grouping == Grouping::kContiguous) {
    groups = b.data.size(0);
    check_positive("b.data", "G", groups);
  }

  p.a = check_matrix(a.data, {"a.data", DType::kFloat8E4M3, ad_rank, a_shape, Contiguous::kLast, "K-major", ""});
  p.b = check_matrix(b.data, {"b.data", DType::kFloat8E4M3, b_rank, b_shape, Contiguous::kLast, "K-major", ""});
  p.d = check_matrix(d, {"d", DType::kBFloat16, ad_rank, d_shape, Contiguous::kLast, "row-major", ""});

  const std::int64_t k_blocks = (k + 127) / 128, n_blocks = (n + 127) / 128;
  p.sfa = masked ? check_scales_mn_major_tma(a.scales, "a.scales", groups, m, k_blocks, "[G, cap, ceil(K / 128)]")
                 : check_scales_mn_major_tma(a.scales, "a.scales", 0, m, k_blocks, "[M, ceil(K / 128)]");
  p.sfb = b_rank == 3 ? check_scales_packed(b.scales, "b.scales", groups, n_blocks, k_blocks,
                                            "[G, ceil(N / 128), ceil(K / 128)]")
                      : check_scales_packed(b.scales, "b.scales", 0, n_blocks, k_blocks,
                                            "[ceil(N / 128), ceil(K / 128)]");

  p.k = static_cast<int>(k);
  p.num_groups = static_cast<int>(groups);
  set_rows_and_columns(p, m, n, m == 0);
  return p;
}

}  // namespace

GemmProblem check_fp8_gemm_nt(const Fp8Operand& a, const Fp8Operand& b, const TensorView& d,
                              const GemmOptions& options) {
  return check_1d2d(Family::kFp8GemmNt, Grouping::kDense, a, b, d, options);
}

GemmProblem check_m_grouped_fp8_gemm_nt_contiguous(const Fp8Operand& a, const Fp8Operand& b, const TensorView& d,
                                                   const ContiguousLayout& layout, const GemmOptions& options) {
  GemmProblem p = check_1d2d(Family::kMGroupedFp8Contiguous, Grouping::kContiguous, a, b, d, options);
  check_contiguous_layout(layout, p.m, p.num_groups, p);
  return p;
}

GemmProblem check_m_grouped_fp8_gemm_nt_masked(const Fp8Operand& a, const Fp8Operand& b, const TensorView& d,
                                               const MaskedLayout& layout, const GemmOptions& options) {
  GemmProblem p = check_1d2d(Family::kMGroupedFp8Masked, Grouping::kMasked, a, b, d, options);
  check_masked_layout(layout, p.num_groups, p.m, p);
  return p;
}

}  // namespace moegemm::validate
