// BF16: bf16_gemm in its four majors, the M-grouped forms and the K-grouped TN weight gradient.
#include "test_validate_common.hpp"

using namespace moegemm;
using namespace moegemm::validate;
using namespace moegemm::validate::testing;

// ---- bf16_gemm ----------------------------------------------------------------------------------------------------

TEST(ValidateBf16, NtNormalises) {
  const GemmProblem p = run_bf16(bf16_dense());
  EXPECT_EQ(p.family, Family::kBf16Gemm);
  EXPECT_EQ(p.kernel, Kernel::kBf16);
  EXPECT_FALSE(p.has_scales);
  EXPECT_EQ(p.a.major, Major::kK);
  EXPECT_EQ(p.b.major, Major::kK);
  EXPECT_EQ(p.a.ld, 320);
  EXPECT_EQ(p.m, 256);
  EXPECT_EQ(p.n, 512);
  EXPECT_EQ(p.k, 320);
  EXPECT_FALSE(p.has_c);
  EXPECT_FALSE(p.accumulate_into_d);
}

TEST(ValidateBf16, AllFourMajorsAreViewsOfOneCall) {
  auto x = bf16_dense();
  // NN: B stored [K, N] row-major, seen as [N, K] MN-major.
  x.b = TensorView::strided(fake(kB), DType::kBFloat16, {512, 320}, {1, 512});
  GemmProblem p = run_bf16(x);
  EXPECT_EQ(p.a.major, Major::kK);
  EXPECT_EQ(p.b.major, Major::kMN);
  EXPECT_EQ(p.b.ld, 512);
  // TT: A stored [K, M] as well.
  x.a = TensorView::strided(fake(kA), DType::kBFloat16, {256, 320}, {1, 264});
  p = run_bf16(x);
  EXPECT_EQ(p.a.major, Major::kMN);
  EXPECT_EQ(p.a.ld, 264);
  // TN: B back to K-major.
  x.b = TensorView::contiguous(fake(kB), DType::kBFloat16, {512, 320});
  p = run_bf16(x);
  EXPECT_EQ(p.a.major, Major::kMN);
  EXPECT_EQ(p.b.major, Major::kK);
}

TEST(ValidateBf16, OperandsNeedOneContiguousInnerDimension) {
  auto x = bf16_dense();
  x.a = TensorView::strided(fake(kA), DType::kBFloat16, {256, 320}, {640, 2});
  EXPECT_INVALID(run_bf16(x), "a: must be K-major (stride(-1) == 1) or MN-major (stride(-2) == 1)",
                 "got strides (640, 2)");
}

TEST(ValidateBf16, MnMajorLeadingStrideMustBe16ByteAligned) {
  auto x = bf16_dense(250, 512, 320);
  x.a = TensorView::strided(fake(kA), DType::kBFloat16, {250, 320}, {1, 250});
  EXPECT_INVALID(run_bf16(x), "a: leading stride must be a multiple of 16 bytes", "stride(-1) * 2 B % 16 == 0",
                 "got strides (1, 250)");
}

TEST(ValidateBf16, Float32DIsAccepted) {
  auto x = bf16_dense();
  x.d.dtype = DType::kFloat32;
  x.c.dtype = DType::kFloat32;
  x.use_c = true;
  const GemmProblem p = run_bf16(x);
  EXPECT_EQ(p.d.dtype, DType::kFloat32);
  EXPECT_TRUE(p.has_c);
}

TEST(ValidateBf16, DMustBeBf16OrFloat32) {
  auto x = bf16_dense();
  x.d.dtype = DType::kInt32;
  EXPECT_INVALID(run_bf16(x), "d: must be bfloat16 or float32, got int32");
}

TEST(ValidateBf16, AMustBeBf16) {
  auto x = bf16_dense();
  x.a.dtype = DType::kFloat8E4M3;
  EXPECT_INVALID(run_bf16(x), "a: must be bfloat16, got float8_e4m3");
}

TEST(ValidateBf16, CMayAliasD) {
  auto x = bf16_dense();
  x.c = x.d;
  x.use_c = true;
  EXPECT_TRUE(run_bf16(x).c_aliases_d);
}

TEST(ValidateBf16, CMustHaveTheDtypeOfD) {
  auto x = bf16_dense();
  x.c.dtype = DType::kFloat32;
  x.use_c = true;
  EXPECT_INVALID(run_bf16(x), "c: must have the dtype of d (bfloat16), got float32");
}

// BF16 D with C: C follows D's rules (dtype, shape, row-major, 16-byte rows and pointer), aliases D or is disjoint.
TEST(ValidateBf16, DisjointBf16CIsRecorded) {
  auto x = bf16_dense();
  x.use_c = true;
  const GemmProblem p = run_bf16(x);
  EXPECT_TRUE(p.has_c);
  EXPECT_FALSE(p.c_aliases_d);
  EXPECT_EQ(p.c.ptr, fake(kC));
  EXPECT_EQ(p.c.ld, 512);
}

TEST(ValidateBf16, Bf16CMustHaveTheShapeOfD) {
  auto x = bf16_dense();
  x.c = TensorView::contiguous(fake(kC), DType::kBFloat16, {256, 256});
  x.use_c = true;
  EXPECT_INVALID(run_bf16(x), "c: must have the shape of d", "got c [256, 256], d [256, 512]");
}

TEST(ValidateBf16, Bf16CMustBeRowMajor) {
  auto x = bf16_dense();
  x.c = TensorView::strided(fake(kC), DType::kBFloat16, {256, 512}, {1, 256});
  x.use_c = true;
  EXPECT_INVALID(run_bf16(x), "c: must be row-major (stride(-1) == 1)", "got strides (1, 256)");
}

TEST(ValidateBf16, Bf16CRowsMustBe16ByteAligned) {
  auto x = bf16_dense();
  x.c = TensorView::strided(fake(kC), DType::kBFloat16, {256, 512}, {516, 1});
  x.use_c = true;
  EXPECT_INVALID(run_bf16(x), "c: leading stride must be a multiple of 16 bytes", "got strides (516, 1)");
  x.c = TensorView::contiguous(fake(kC + 4), DType::kBFloat16, {256, 512});
  EXPECT_INVALID(run_bf16(x), "c: data pointer must be 16-byte aligned", "got 0x40000004");
}

TEST(ValidateBf16, Bf16CPartiallyOverlappingDIsRejected) {
  auto x = bf16_dense();
  x.c = TensorView::contiguous(fake(kD + 8 * 512 * 2), DType::kBFloat16, {256, 512});  // from D row 8
  x.use_c = true;
  EXPECT_INVALID(run_bf16(x), "c: must either be d itself (same pointer and strides) or not overlap d");
  x.c = TensorView::strided(fake(kD), DType::kBFloat16, {256, 512}, {520, 1});  // D's pointer, other row stride
  EXPECT_INVALID(run_bf16(x), "c: must either be d itself", "strides (520, 1)");
}

TEST(ValidateBf16, Bf16CMustNotBeNull) {
  auto x = bf16_dense();
  x.c = TensorView::contiguous(nullptr, DType::kBFloat16, {256, 512});
  x.use_c = true;
  EXPECT_INVALID(run_bf16(x), "c: data must not be null");
}

// The epilogues store whole column groups: 16-byte alignment of D's rows does not bound N when M == 1 (no row
// stride) or when D is a padded view, so N itself is checked.
TEST(ValidateBf16, NMustBeAMultipleOf8ForBf16D) {
  auto x = bf16_dense(1, 100, 320);
  EXPECT_INVALID(run_bf16(x), "b: N must be a multiple of 8 (the BF16 epilogue stores 8 columns per 16 bytes)",
                 "got N = 100");
  x = bf16_dense(256, 500, 320);
  x.d = TensorView::strided(fake(kD), DType::kBFloat16, {256, 500}, {504, 1});
  EXPECT_INVALID(run_bf16(x), "b: N must be a multiple of 8", "got N = 500");
}

TEST(ValidateBf16, NMustBeEvenForFloat32D) {
  auto x = bf16_dense(1, 129, 320);
  x.d = TensorView::contiguous(fake(kD), DType::kFloat32, {1, 129});
  EXPECT_INVALID(run_bf16(x), "b: N must be a multiple of 2 (the FP32 epilogue stores column pairs)", "got N = 129");
  x.d = TensorView::contiguous(fake(kD), DType::kFloat32, {1, 130});
  x.b = TensorView::contiguous(fake(kB), DType::kBFloat16, {130, 320});
  EXPECT_EQ(run_bf16(x).n, 130);
}

TEST(ValidateBf16, KMustBePositive) {
  EXPECT_INVALID(run_bf16(bf16_dense(256, 512, 0)), "a: K must be positive, got K = 0");
}

TEST(ValidateBf16, KMustAgree) {
  auto x = bf16_dense();
  x.b = TensorView::contiguous(fake(kB), DType::kBFloat16, {512, 256});
  EXPECT_INVALID(run_bf16(x), "b: K must match a", "got b K = 256, a K = 320");
}

TEST(ValidateBf16, MZeroIsEmpty) {
  EXPECT_TRUE(run_bf16(bf16_dense(0)).empty);
}

TEST(ValidateBf16, RecipeMustStayDefault) {
  auto x = bf16_dense();
  x.options.recipe = kRecipe1x1x128;
  EXPECT_INVALID(run_bf16(x), "options.recipe: BF16 GEMMs have no scales", "got (1, 1, 128)");
}

// ---- m_grouped_bf16_gemm_contiguous / masked -------------------------------------------------------------------

TEST(ValidateBf16, ContiguousNormalises) {
  auto x = bf16_contiguous();
  x.b = TensorView::strided(fake(kB), DType::kBFloat16, {4, 256, 200}, {256 * 200, 1, 256});  // [G, K, N] storage
  const GemmProblem p = run_bf16_contiguous(x);
  EXPECT_EQ(p.family, Family::kMGroupedBf16Contiguous);
  EXPECT_EQ(p.layout, Layout::kContiguousGroupEnds);
  EXPECT_EQ(p.num_groups, 4);
  EXPECT_EQ(p.m, 512);
  EXPECT_EQ(p.k, 200);  // K % 64 != 0 is fine: only 16-byte rows are needed
  EXPECT_EQ(p.b.major, Major::kMN);
  EXPECT_EQ(p.b.ld, 256);
  EXPECT_EQ(p.b.group_stride, 256 * 200);
}

TEST(ValidateBf16, GroupedAMustBeKMajor) {
  auto x = bf16_contiguous();
  x.a = TensorView::strided(fake(kA), DType::kBFloat16, {512, 200}, {1, 512});
  EXPECT_INVALID(run_bf16_contiguous(x), "a: must be K-major (stride(-1) == 1)", "got strides (1, 512)");
}

TEST(ValidateBf16, GroupedKMustBeAMultipleOf8) {
  auto x = bf16_contiguous(512, 4, 256, 100);
  x.a = TensorView::strided(fake(kA), DType::kBFloat16, {512, 100}, {104, 1});
  x.b = TensorView::strided(fake(kB), DType::kBFloat16, {4, 256, 100}, {256 * 104, 104, 1});
  EXPECT_INVALID(run_bf16_contiguous(x), "a: K must be a multiple of 8 (16-byte rows of BF16 A)", "got K = 100");
}

TEST(ValidateBf16, GroupedNMustBeAMultipleOf8) {
  auto x = bf16_masked(8, 1, 100, 256);  // capacity 1: D has no row stride to check
  EXPECT_INVALID(run_bf16_masked(x), "b: N must be a multiple of 8", "got N = 100");
}

TEST(ValidateBf16, MaskedFlattenedRowsMustFitInt) {
  auto x = bf16_masked(2, std::int64_t{1} << 30, 256, 256);
  EXPECT_INVALID(run_bf16_masked(x), "d: G x cap must fit in a 32-bit int", "got G = 2, cap = 1073741824");
}

TEST(ValidateBf16, KGroupedFlattenedRowsMustFitInt) {
  auto x = bf16_k_grouped(std::int64_t{1} << 30, 256);
  EXPECT_INVALID(run_bf16_k_grouped(x), "d: G x M must fit in a 32-bit int", "got G = 4, M = 1073741824");
}

TEST(ValidateBf16, GroupedDMustBeBf16) {
  auto x = bf16_contiguous();
  x.d.dtype = DType::kFloat32;
  EXPECT_INVALID(run_bf16_contiguous(x), "d: must be bfloat16, got float32");
}

TEST(ValidateBf16, GroupedIndexIsChecked) {
  auto x = bf16_contiguous();
  x.contiguous.index = TensorView::contiguous(fake(kIndex), DType::kInt32, {5});
  EXPECT_INVALID(run_bf16_contiguous(x), "layout.index: must have G", "= 4 elements", "got shape [5]");
}

TEST(ValidateBf16, MaskedNormalises) {
  auto x = bf16_masked();
  x.masked.expected_m = 20;
  const GemmProblem p = run_bf16_masked(x);
  EXPECT_EQ(p.family, Family::kMGroupedBf16Masked);
  EXPECT_EQ(p.layout, Layout::kMasked);
  EXPECT_EQ(p.num_groups, 8);
  EXPECT_EQ(p.m, 32);
  EXPECT_EQ(p.expected_m, 20);
  EXPECT_EQ(p.a.group_stride, 32 * 256);
}

TEST(ValidateBf16, MaskedGroupsMustAgree) {
  auto x = bf16_masked();
  x.a = TensorView::contiguous(fake(kA), DType::kBFloat16, {7, 32, 256});
  EXPECT_INVALID(run_bf16_masked(x), "a: G must match b", "got a G = 7, b G = 8");
}

TEST(ValidateBf16, MaskedValidRowsAreChecked) {
  auto x = bf16_masked();
  x.masked.valid_rows.data = fake(kIndex + 2);
  EXPECT_INVALID(run_bf16_masked(x), "layout.valid_rows: data pointer must be 4-byte aligned");
}

TEST(ValidateBf16, GroupedConfigNeedsBf16BlockK) {
  auto x = bf16_masked();
  KernelConfig config;  // block_k 128 is the FP8 value
  x.options.config = &config;
  EXPECT_INVALID(run_bf16_masked(x), "options.config: block_k must be 64 for BF16", "got block_k = 128");
  config.block_k = 64;
  EXPECT_EQ(run_bf16_masked(x).config, &config);
}

// ---- k_grouped_bf16_gemm_tn ---------------------------------------------------------------------------------------

TEST(ValidateBf16KGrouped, Normalises) {
  auto x = bf16_k_grouped();
  const GemmProblem p = run_bf16_k_grouped(x);
  EXPECT_EQ(p.family, Family::kKGroupedBf16Tn);
  EXPECT_EQ(p.layout, Layout::kKGrouped);
  EXPECT_EQ(p.num_groups, 4);
  EXPECT_EQ(p.m, 512);
  EXPECT_EQ(p.n, 256);
  EXPECT_EQ(p.k, 512);
  EXPECT_EQ(p.k_offsets, (std::vector<std::int64_t>{0, 128, 384, 384}));
  EXPECT_EQ(p.a.major, Major::kMN);
  EXPECT_EQ(p.b.major, Major::kMN);
  EXPECT_EQ(p.a.ld, 512);
  EXPECT_EQ(p.b.ld, 256);
  EXPECT_TRUE(p.accumulate_into_d);
}

TEST(ValidateBf16KGrouped, AMustCoverSumK) {
  auto x = bf16_k_grouped();
  x.a = TensorView::contiguous(fake(kA), DType::kBFloat16, {384, 512});
  EXPECT_INVALID(run_bf16_k_grouped(x), "a: sum K must match layout.ks", "got a sum K = 384, layout.ks sum K = 512");
}

TEST(ValidateBf16KGrouped, AMustBeRowMajorSumKByM) {
  auto x = bf16_k_grouped();
  x.a = TensorView::strided(fake(kA), DType::kBFloat16, {512, 512}, {1, 512});
  EXPECT_INVALID(run_bf16_k_grouped(x), "a: must be row-major (stride(-1) == 1)");
}

TEST(ValidateBf16KGrouped, DMustBeFloat32) {
  auto x = bf16_k_grouped();
  x.d.dtype = DType::kBFloat16;
  EXPECT_INVALID(run_bf16_k_grouped(x), "d: must be float32, got bfloat16");
}

TEST(ValidateBf16KGrouped, DMustMatchMAndN) {
  auto x = bf16_k_grouped();
  x.d = TensorView::contiguous(fake(kD), DType::kFloat32, {4, 256, 256});
  EXPECT_INVALID(run_bf16_k_grouped(x), "d: M must match a", "got d M = 256, a M = 512");
}

TEST(ValidateBf16KGrouped, KsRulesApply) {
  auto x = bf16_k_grouped();
  x.kgrouped.ks = {128, 192, 64, 128};
  EXPECT_INVALID(run_bf16_k_grouped(x), "layout.ks: every K_g must be a multiple of 128", "got ks[1] = 192");
}

TEST(ValidateBf16KGrouped, CPartialOverlapIsRejected) {
  auto x = bf16_k_grouped();
  x.c = TensorView::contiguous(fake(kD + 512 * 256 * 4), DType::kFloat32, {4, 512, 256});  // starts at D[1]
  x.use_c = true;
  EXPECT_INVALID(run_bf16_k_grouped(x), "c: must either be d itself");
}
