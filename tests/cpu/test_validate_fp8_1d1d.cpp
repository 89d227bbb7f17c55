// FP8 recipe (1, 1, 128): fp8_gemm_nt_1d1d and k_grouped_fp8_gemm_nt, including the C / D aliasing rules.
#include "test_validate_common.hpp"

using namespace moegemm;
using namespace moegemm::validate;
using namespace moegemm::validate::testing;

// ---- fp8_gemm_nt_1d1d -----------------------------------------------------------------------------------------

TEST(ValidateFp8_1d1d, Normalises) {
  const GemmProblem p = run_1d1d(fp8_1d1d());
  EXPECT_EQ(p.family, Family::kFp8GemmNt1d1d);
  EXPECT_EQ(p.kernel, Kernel::kFp8_1d1d);
  EXPECT_EQ(p.recipe, kRecipe1x1x128);  // the default options recipe is read as "not given"
  EXPECT_EQ(p.m, 250);
  EXPECT_EQ(p.n, 130);
  EXPECT_EQ(p.k, 512);
  EXPECT_EQ(p.d.dtype, DType::kFloat32);
  EXPECT_EQ(p.sfa.k_stride, 252);
  EXPECT_EQ(p.sfb.k_stride, 132);
  EXPECT_EQ(p.sfb.mn, 130);
  EXPECT_EQ(p.sfb.k_blocks, 4);
  EXPECT_FALSE(p.has_c);
  EXPECT_TRUE(p.accumulate_into_d);
  EXPECT_FALSE(p.empty);
}

TEST(ValidateFp8_1d1d, ExplicitRecipeIsAccepted) {
  auto x = fp8_1d1d();
  x.options.recipe = kRecipe1x1x128;
  EXPECT_EQ(run_1d1d(x).recipe, kRecipe1x1x128);
}

TEST(ValidateFp8_1d1d, OtherRecipesAreRejected) {
  auto x = fp8_1d1d();
  x.options.recipe = {128, 128, 128};
  EXPECT_INVALID(run_1d1d(x), "options.recipe: must be (1, 1, 128)", "got (128, 128, 128)");
}

TEST(ValidateFp8_1d1d, KMustBeAMultipleOf128) {
  auto x = fp8_1d1d(250, 130, 400);
  EXPECT_INVALID(run_1d1d(x), "a.data: K must be a multiple of 128", "got K = 400");
}

// The epilogue writes column pairs: an odd N would write one column past the row, into a padded view's gap or,
// with M == 1, past D.
TEST(ValidateFp8_1d1d, NMustBeEven) {
  auto x = fp8_1d1d(1, 129, 512);
  EXPECT_INVALID(run_1d1d(x), "b.data: N must be a multiple of 2 (the FP32 epilogue stores column pairs)",
                 "got N = 129");
}

TEST(ValidateFp8_1d1d, DMustBeFloat32) {
  auto x = fp8_1d1d();
  x.d.dtype = DType::kBFloat16;
  EXPECT_INVALID(run_1d1d(x), "d: must be float32, got bfloat16");
}

TEST(ValidateFp8_1d1d, SfbIsPerRowAndMnMajor) {
  auto x = fp8_1d1d();
  x.b.scales = TensorView::contiguous(fake(kSfb), DType::kFloat32, {2, 4});
  EXPECT_INVALID(run_1d1d(x), "b.scales: must have shape [N, K / 128] = [130, 4]", "got shape [2, 4]");
  x.b.scales = TensorView::strided(fake(kSfb), DType::kFloat32, {130, 4}, {1, 130});
  EXPECT_INVALID(run_1d1d(x), "b.scales: must be MN-major and TMA-aligned: strides exactly (1, 132)",
                 "got strides (1, 130)");
}

TEST(ValidateFp8_1d1d, SfaIsPerRowAndMnMajor) {
  auto x = fp8_1d1d();
  x.a.scales = TensorView::contiguous(fake(kSfa), DType::kFloat32, {250, 4});
  EXPECT_INVALID(run_1d1d(x), "a.scales: must be MN-major and TMA-aligned: strides exactly (1, 252)");
}

TEST(ValidateFp8_1d1d, CAliasingDIsInPlace) {
  auto x = fp8_1d1d();
  x.c = x.d;
  x.use_c = true;
  const GemmProblem p = run_1d1d(x);
  EXPECT_TRUE(p.has_c);
  EXPECT_TRUE(p.c_aliases_d);
  EXPECT_FALSE(p.accumulate_into_d);
}

TEST(ValidateFp8_1d1d, DisjointCIsRecorded) {
  auto x = fp8_1d1d();
  x.use_c = true;
  const GemmProblem p = run_1d1d(x);
  EXPECT_TRUE(p.has_c);
  EXPECT_FALSE(p.c_aliases_d);
  EXPECT_EQ(p.c.ptr, fake(kC));
  EXPECT_EQ(p.c.ld, 132);
}

TEST(ValidateFp8_1d1d, CPartiallyOverlappingDIsRejected) {
  auto x = fp8_1d1d();
  x.c = TensorView::strided(fake(kD + 16 * 132 * 4), DType::kFloat32, {250, 130}, {132, 1});  // from D row 16
  x.use_c = true;
  EXPECT_INVALID(run_1d1d(x), "c: must either be d itself (same pointer and strides) or not overlap d",
                 "got c at 0x30002100");
}

TEST(ValidateFp8_1d1d, CAtDWithOtherStridesIsRejected) {
  auto x = fp8_1d1d();
  x.c = TensorView::strided(fake(kD), DType::kFloat32, {250, 130}, {136, 1});
  x.use_c = true;
  EXPECT_INVALID(run_1d1d(x), "c: must either be d itself", "strides (136, 1)");
}

TEST(ValidateFp8_1d1d, CMustHaveTheShapeOfD) {
  auto x = fp8_1d1d();
  x.c = TensorView::contiguous(fake(kC), DType::kFloat32, {250, 128});
  x.use_c = true;
  EXPECT_INVALID(run_1d1d(x), "c: must have the shape of d", "got c [250, 128], d [250, 130]");
}

TEST(ValidateFp8_1d1d, CMustHaveTheDtypeOfD) {
  auto x = fp8_1d1d();
  x.c.dtype = DType::kBFloat16;
  x.use_c = true;
  EXPECT_INVALID(run_1d1d(x), "c: must have the dtype of d (float32), got bfloat16");
}

TEST(ValidateFp8_1d1d, CMustBeRowMajor) {
  auto x = fp8_1d1d();
  x.c = TensorView::strided(fake(kC), DType::kFloat32, {250, 130}, {1, 252});
  x.use_c = true;
  EXPECT_INVALID(run_1d1d(x), "c: must be row-major (stride(-1) == 1)");
}

// ---- k_grouped_fp8_gemm_nt ------------------------------------------------------------------------------------

// Rows of all experts are one int inside the kernels.
TEST(ValidateFp8KGrouped, FlattenedRowsMustFitInt) {
  auto x = fp8_k_grouped(std::int64_t{1} << 30, 128);
  EXPECT_INVALID(run_k_grouped(x), "d: G x M must fit in a 32-bit int", "got G = 3, M = 1073741824");
}

TEST(ValidateFp8KGrouped, NMustBeEven) {
  auto x = fp8_k_grouped(256, 127);
  EXPECT_INVALID(run_k_grouped(x), "d: N must be a multiple of 2 (the FP32 epilogue stores column pairs)",
                 "got N = 127");
}

TEST(ValidateFp8KGrouped, Normalises) {
  auto x = fp8_k_grouped();
  x.kgrouped.ks_device = TensorView::contiguous(fake(kKsDevice), DType::kInt32, {3});
  x.c = x.d;
  x.use_c = true;
  const GemmProblem p = run_k_grouped(x);
  EXPECT_EQ(p.family, Family::kKGroupedFp8Nt);
  EXPECT_EQ(p.kernel, Kernel::kFp8_1d1d);
  EXPECT_EQ(p.layout, Layout::kKGrouped);
  EXPECT_EQ(p.recipe, kRecipe1x1x128);
  EXPECT_EQ(p.num_groups, 3);
  EXPECT_EQ(p.m, 256);
  EXPECT_EQ(p.n, 128);
  EXPECT_EQ(p.k, 384);
  EXPECT_EQ(p.ks, (std::vector<std::int64_t>{256, 0, 128}));
  EXPECT_EQ(p.k_offsets, (std::vector<std::int64_t>{0, 256, 256}));
  EXPECT_EQ(p.ks_device, static_cast<const std::int32_t*>(fake(kKsDevice)));
  EXPECT_EQ(p.a.rows, 256);
  EXPECT_EQ(p.a.cols, 384);
  EXPECT_EQ(p.d.group_stride, 256 * 128);
  EXPECT_EQ(p.sfa.k_blocks, 3);
  EXPECT_TRUE(p.c_aliases_d);
  EXPECT_FALSE(p.empty);
}

TEST(ValidateFp8KGrouped, KsMustNotBeEmpty) {
  auto x = fp8_k_grouped();
  x.kgrouped.ks.clear();
  EXPECT_INVALID(run_k_grouped(x), "layout.ks: must not be empty (one K per expert), got 0 experts");
}

TEST(ValidateFp8KGrouped, KsMustBeMultiplesOf128) {
  auto x = fp8_k_grouped();
  x.kgrouped.ks = {256, 100, 28};
  EXPECT_INVALID(run_k_grouped(x), "layout.ks: every K_g must be a multiple of 128", "16-byte aligned",
                 "got ks[1] = 100");
}

TEST(ValidateFp8KGrouped, KsMustBeNonNegative) {
  auto x = fp8_k_grouped();
  x.kgrouped.ks = {512, -128, 0};
  EXPECT_INVALID(run_k_grouped(x), "layout.ks: every K_g must be non-negative", "got ks[1] = -128");
}

TEST(ValidateFp8KGrouped, ANumelIsMTimesSumK) {
  auto x = fp8_k_grouped();
  x.a.data = TensorView::contiguous(fake(kA), DType::kFloat8E4M3, {256 * 256});
  EXPECT_INVALID(run_k_grouped(x), "a.data: must have M * sum K = 98304 elements", "got shape [65536]");
}

TEST(ValidateFp8KGrouped, BNumelIsNTimesSumK) {
  auto x = fp8_k_grouped();
  x.b.data = TensorView::contiguous(fake(kB), DType::kFloat8E4M3, {128 * 512});
  EXPECT_INVALID(run_k_grouped(x), "b.data: must have N * sum K = 49152 elements");
}

TEST(ValidateFp8KGrouped, OperandsAreFlat) {
  auto x = fp8_k_grouped();
  x.a.data = TensorView::contiguous(fake(kA), DType::kFloat8E4M3, {256, 384});
  EXPECT_INVALID(run_k_grouped(x), "a.data: must have rank 1", "got rank 2");
}

TEST(ValidateFp8KGrouped, OperandsAreContiguous) {
  auto x = fp8_k_grouped();
  x.b.data = TensorView::strided(fake(kB), DType::kFloat8E4M3, {128 * 384}, {2});
  EXPECT_INVALID(run_k_grouped(x), "b.data: must be contiguous (stride(0) == 1)");
}

TEST(ValidateFp8KGrouped, OperandPointersAreAligned) {
  auto x = fp8_k_grouped();
  x.a.data.data = fake(kA + 1);
  EXPECT_INVALID(run_k_grouped(x), "a.data: data pointer must be 16-byte aligned");
}

TEST(ValidateFp8KGrouped, DHasOneSlabPerExpert) {
  auto x = fp8_k_grouped();
  x.d = TensorView::contiguous(fake(kD), DType::kFloat32, {2, 256, 128});
  EXPECT_INVALID(run_k_grouped(x), "d: G must match layout.ks", "got d G = 2, layout.ks G = 3");
  x.d = TensorView::contiguous(fake(kD), DType::kFloat32, {256, 128});
  EXPECT_INVALID(run_k_grouped(x), "d: must have rank 3 [G, M, N]");
}

TEST(ValidateFp8KGrouped, ScalesCoverSumK) {
  auto x = fp8_k_grouped();
  x.a.scales = TensorView::strided(fake(kSfa), DType::kFloat32, {256, 2}, {1, 256});
  EXPECT_INVALID(run_k_grouped(x), "a.scales: must have shape [M, sum K / 128] = [256, 3]");
}

TEST(ValidateFp8KGrouped, KsDeviceMustMatchKs) {
  auto x = fp8_k_grouped();
  x.kgrouped.ks_device = TensorView::contiguous(fake(kKsDevice), DType::kInt32, {4});
  EXPECT_INVALID(run_k_grouped(x), "layout.ks_device: must have G = layout.ks.size() = 3 elements");
  x.kgrouped.ks_device = TensorView::contiguous(fake(kKsDevice), DType::kFloat32, {3});
  EXPECT_INVALID(run_k_grouped(x), "layout.ks_device: must be int32");
}

TEST(ValidateFp8KGrouped, AllExpertsEmptyIsEmpty) {
  auto x = fp8_k_grouped();
  x.kgrouped.ks = {0, 0, 0};
  x.a.data = TensorView::contiguous(fake(kA), DType::kFloat8E4M3, {0});
  x.b.data = TensorView::contiguous(fake(kB), DType::kFloat8E4M3, {0});
  x.a.scales = TensorView::strided(fake(kSfa), DType::kFloat32, {256, 0}, {1, 256});
  x.b.scales = TensorView::strided(fake(kSfb), DType::kFloat32, {128, 0}, {1, 128});
  x.use_c = true;  // D = C still has to happen: the problem says so
  const GemmProblem p = run_k_grouped(x);
  EXPECT_TRUE(p.empty);
  EXPECT_TRUE(p.has_c);
  EXPECT_FALSE(p.c_aliases_d);
}

TEST(ValidateFp8KGrouped, RecipeMustBe1d1d) {
  auto x = fp8_k_grouped();
  x.options.recipe = {1, 128, 64};
  EXPECT_INVALID(run_k_grouped(x), "options.recipe: must be (1, 1, 128)");
}

TEST(ValidateFp8KGrouped, SumKMustFitInInt) {
  auto x = fp8_k_grouped();
  x.kgrouped.ks = {std::int64_t{1} << 30, std::int64_t{1} << 30, 128};
  EXPECT_INVALID(run_k_grouped(x), "layout.ks: sum K must fit in a 32-bit int");
}

TEST(ValidateFp8KGrouped, OperandsAreFp8) {
  auto x = fp8_k_grouped();
  x.b.data.dtype = DType::kBFloat16;
  EXPECT_INVALID(run_k_grouped(x), "b.data: must be float8_e4m3, got bfloat16");
}

TEST(ValidateFp8KGrouped, OperandsMustNotBeNull) {
  auto x = fp8_k_grouped();
  x.a.data.data = nullptr;
  EXPECT_INVALID(run_k_grouped(x), "a.data: data must not be null");
}
