// FP8 with recipe (1, 1, 128): fp8_gemm_nt_1d1d and k_grouped_fp8_gemm_nt. A and B per row x 128 K, both scale
// tensors MN-major and TMA-read, FP32 D that the kernel reduce-adds into (D = C + A @ B^T).
#include "validate/checks.hpp"
#include "validate/validate.hpp"

namespace moegemm::validate {
namespace {

void start_1d1d(Family family, const GemmOptions& options, GemmProblem& p) {
  p.family = family;
  p.kernel = Kernel::kFp8_1d1d;
  check_recipe_1d1d(options.recipe);
  p.recipe = kRecipe1x1x128;
  p.has_scales = true;
  check_launch_options(options, /*fp8=*/true, p);
}

// A rank-1 FP8 buffer of `numel` elements holding every expert's K-major block back to back.
Operand check_packed_fp8(const TensorView& v, const char* name, std::int64_t numel, const char* numel_names,
                         std::int64_t rows, std::int64_t sum_k) {
  check_rank(v, name, 1, "[numel] (every expert's K-major block back to back)");
  check_dtype(v, name, DType::kFloat8E4M3);
  check_sizes_non_negative(v, name);
  if (v.shape[0] != numel) {
    fail(name, std::string("must have ") + numel_names + " = " + std::to_string(numel) + " elements",
         "shape " + shape_string(v));
  }
  if (v.shape[0] > 1 && v.strides[0] != 1) {
    fail(name, "must be contiguous (stride(0) == 1)", "strides " + strides_string(v));
  }
  check_non_null(v, name);
  check_pointer_aligned(v, name, kTmaAlignmentBytes, "TMA");
  Operand op;
  op.ptr = v.data;
  op.dtype = v.dtype;
  op.major = Major::kK;
  op.rows = rows;
  op.cols = sum_k;  // expert g's block starts at rows * k_offsets[g] and has row stride ks[g]
  return op;
}

const MatrixRule kDRule2d{"d", DType::kFloat32, 2, "[M, N]", Contiguous::kLast, "row-major", ""};
const MatrixRule kCRule2d{"c", DType::kFloat32, 2, "[M, N]", Contiguous::kLast, "row-major", ""};
const MatrixRule kDRule3d{"d", DType::kFloat32, 3, "[G, M, N]", Contiguous::kLast, "row-major", ""};
const MatrixRule kCRule3d{"c", DType::kFloat32, 3, "[G, M, N]", Contiguous::kLast, "row-major", ""};

}  // namespace

GemmProblem check_fp8_gemm_nt_1d1d(const Fp8Operand& a, const Fp8Operand& b, const TensorView& d,
                                   const TensorView* c, const GemmOptions& options) {
  GemmProblem p;
  start_1d1d(Family::kFp8GemmNt1d1d, options, p);

  check_rank(a.data, "a.data", 2, "[M, K]");
  check_rank(b.data, "b.data", 2, "[N, K]");
  check_rank(d, "d", 2, "[M, N]");
  check_sizes_non_negative(a.data, "a.data");
  check_sizes_non_negative(b.data, "b.data");
  check_sizes_non_negative(d, "d");
  const std::int64_t m = a.data.size(0), k = a.data.size(1), n = b.data.size(0);
  check_positive("a.data", "K", k);
  check_multiple_of("a.data", "K", k, 128, "recipe (1, 1, 128) has one scale per 128 K for both A and B");
  check_positive("b.data", "N", n);
  // Checked on N itself: with M == 1, or a D view with a padded row stride, the stride cannot catch an odd N.
  check_multiple_of("b.data", "N", n, 2, "the FP32 epilogue stores column pairs");
  check_same_extent("b.data", "K", b.data.size(1), "a.data", k);
  check_same_extent("d", "M", d.size(0), "a.data", m);
  check_same_extent("d", "N", d.size(1), "b.data", n);

  p.a = check_matrix(a.data, {"a.data", DType::kFloat8E4M3, 2, "[M, K]", Contiguous::kLast, "K-major", ""});
  p.b = check_matrix(b.data, {"b.data", DType::kFloat8E4M3, 2, "[N, K]", Contiguous::kLast, "K-major", ""});
  p.d = check_matrix(d, kDRule2d);
  check_c(c, d, p.d, kCRule2d, p);
  p.accumulate_into_d = c == nullptr;

  p.sfa = check_scales_mn_major_tma(a.scales, "a.scales", 0, m, k / 128, "[M, K / 128]");
  p.sfb = check_scales_mn_major_tma(b.scales, "b.scales", 0, n, k / 128, "[N, K / 128]");

  p.k = static_cast<int>(k);
  set_rows_and_columns(p, m, n, m == 0);
  return p;
}

GemmProblem check_k_grouped_fp8_gemm_nt(const Fp8Operand& a, const Fp8Operand& b, const TensorView& d,
                                        const TensorView* c, const KGroupedLayout& layout,
                                        const GemmOptions& options) {
  GemmProblem p;
  start_1d1d(Family::kKGroupedFp8Nt, options, p);
  const std::int64_t sum_k = check_k_grouped_layout(layout, p);
  const std::int64_t groups = p.num_groups;

  // D carries M and N: A and B are flat buffers.
  check_rank(d, "d", 3, "[G, M, N]");
  check_sizes_non_negative(d, "d");
  check_same_extent("d", "G", d.size(0), "layout.ks", groups);
  const std::int64_t m = d.size(1), n = d.size(2);
  check_flattened_rows_fit_int("d", groups, m, "M");
  check_positive("d", "N", n);
  check_multiple_of("d", "N", n, 2, "the FP32 epilogue stores column pairs");
  p.d = check_matrix(d, kDRule3d);
  check_c(c, d, p.d, kCRule3d, p);
  p.accumulate_into_d = c == nullptr;

  p.a = check_packed_fp8(a.data, "a.data", m * sum_k, "M * sum K", m, sum_k);
  p.b = check_packed_fp8(b.data, "b.data", n * sum_k, "N * sum K", n, sum_k);
  p.sfa = check_scales_mn_major_tma(a.scales, "a.scales", 0, m, sum_k / 128, "[M, sum K / 128]");
  p.sfb = check_scales_mn_major_tma(b.scales, "b.scales", 0, n, sum_k / 128, "[N, sum K / 128]");

  set_rows_and_columns(p, m, n, m == 0 || sum_k == 0);
  return p;
}

}  // namespace moegemm::validate
