// FP8 recipe (1, 128, 128): fp8_gemm_nt and the M-grouped contiguous and masked forms.
#include "test_validate_common.hpp"

using namespace moegemm;
using namespace moegemm::validate;
using namespace moegemm::validate::testing;

// ---- Well-formed problems normalise correctly ------------------------------------------------------------------

TEST(ValidateFp8, DenseNormalises) {
  const GemmProblem p = run_dense(fp8_dense());
  EXPECT_EQ(p.family, Family::kFp8GemmNt);
  EXPECT_EQ(p.kernel, Kernel::kFp8_1d2d);
  EXPECT_EQ(p.layout, Layout::kDense);
  EXPECT_EQ(p.m, 250);
  EXPECT_EQ(p.n, 512);
  EXPECT_EQ(p.k, 384);
  EXPECT_EQ(p.num_groups, 1);
  EXPECT_FALSE(p.empty);
  EXPECT_EQ(p.recipe, kRecipe1x128x128);
  EXPECT_EQ(p.a.ptr, fake(kA));
  EXPECT_EQ(p.a.major, Major::kK);
  EXPECT_EQ(p.a.ld, 384);
  EXPECT_EQ(p.b.ld, 384);
  EXPECT_EQ(p.d.ld, 512);
  EXPECT_EQ(p.d.dtype, DType::kBFloat16);
  EXPECT_FALSE(p.has_c);
  EXPECT_EQ(p.sfa.k_stride, 252);  // tma_aligned(250)
  EXPECT_EQ(p.sfa.mn_stride, 1);
  EXPECT_EQ(p.sfa.k_blocks, 3);
  EXPECT_TRUE(p.sfb.k_major);
  EXPECT_EQ(p.sfb.mn, 4);
  EXPECT_EQ(p.sfb.mn_stride, 3);
  EXPECT_EQ(p.expected_m, 250);
}

TEST(ValidateFp8, DenseAcceptsMnMajorSfb) {
  auto x = fp8_dense();
  x.b.scales = TensorView::strided(fake(kSfb), DType::kFloat32, {4, 3}, {1, 4});
  const GemmProblem p = run_dense(x);
  EXPECT_FALSE(p.sfb.k_major);
  EXPECT_EQ(p.sfb.mn_stride, 1);
  EXPECT_EQ(p.sfb.k_stride, 4);
}

TEST(ValidateFp8, DenseWithKNotAMultipleOf128) {
  auto x = fp8_dense(128, 256, 200);  // ceil(200 / 128) = 2 scale blocks; padded strides keep 16-byte rows
  x.a.data = TensorView::strided(fake(kA), DType::kFloat8E4M3, {128, 200}, {208, 1});
  x.b.data = TensorView::strided(fake(kB), DType::kFloat8E4M3, {256, 200}, {208, 1});
  EXPECT_INVALID(run_dense(x), "a.data: K must be a multiple of 16", "got K = 200");
  x = fp8_dense(128, 256, 208);
  const GemmProblem p = run_dense(x);
  EXPECT_EQ(p.sfa.k_blocks, 2);
  EXPECT_EQ(p.sfb.k_blocks, 2);
}

TEST(ValidateFp8, MZeroIsEmpty) {
  const GemmProblem p = run_dense(fp8_dense(0));
  EXPECT_TRUE(p.empty);
  EXPECT_EQ(p.m, 0);
}

TEST(ValidateFp8, ContiguousNormalises) {
  const GemmProblem p = run_contiguous(fp8_contiguous());
  EXPECT_EQ(p.family, Family::kMGroupedFp8Contiguous);
  EXPECT_EQ(p.layout, Layout::kContiguousRowToGroup);
  EXPECT_EQ(p.m, 512);
  EXPECT_EQ(p.num_groups, 4);
  EXPECT_EQ(p.b.group_stride, 512 * 384);
  EXPECT_EQ(p.sfb.group_stride, 4 * 3);
  EXPECT_EQ(p.routing, static_cast<const std::int32_t*>(fake(kIndex)));
  EXPECT_EQ(p.expected_m, 128);  // M_total / G when the hint is 0
}

TEST(ValidateFp8, ContiguousGroupEndsAndHint) {
  auto x = fp8_contiguous();
  x.contiguous.form = ContiguousLayout::Form::kGroupEnds;
  x.contiguous.index = TensorView::contiguous(fake(kIndex), DType::kInt32, {4});
  x.contiguous.expected_m_per_group = 100;
  const GemmProblem p = run_contiguous(x);
  EXPECT_EQ(p.layout, Layout::kContiguousGroupEnds);
  EXPECT_EQ(p.expected_m, 100);
}

TEST(ValidateFp8, MaskedNormalises) {
  const GemmProblem p = run_masked(fp8_masked());
  EXPECT_EQ(p.family, Family::kMGroupedFp8Masked);
  EXPECT_EQ(p.layout, Layout::kMasked);
  EXPECT_EQ(p.m, 30);
  EXPECT_EQ(p.num_groups, 4);
  EXPECT_EQ(p.a.group_stride, 30 * 384);
  EXPECT_EQ(p.d.group_stride, 30 * 512);
  EXPECT_EQ(p.sfa.k_stride, 32);
  EXPECT_EQ(p.sfa.group_stride, 32 * 3);
  EXPECT_EQ(p.expected_m, 30);  // the capacity when the hint is 0
}

TEST(ValidateFp8, MaskedHintIsClampedToCapacity) {
  auto x = fp8_masked();
  x.masked.expected_m = 12;
  EXPECT_EQ(run_masked(x).expected_m, 12);
  x.masked.expected_m = 1000;
  EXPECT_EQ(run_masked(x).expected_m, 30);
}

// Rows of all groups are one int inside the kernels: G x capacity must fit.
TEST(ValidateFp8, MaskedFlattenedRowsMustFitInt) {
  // N = 8 keeps D's group stride (cap x N x 2 B) below TMA's 2^40 bytes, which N = 512 would reach first.
  auto x = fp8_masked(4, std::int64_t{1} << 30, 8, 384);
  EXPECT_INVALID(run_masked(x), "d: G x cap must fit in a 32-bit int", "got G = 4, cap = 1073741824");
}

TEST(ValidateFp8, MaskedZeroCapacityIsEmpty) {
  EXPECT_TRUE(run_masked(fp8_masked(4, 0)).empty);
}

// ---- options.recipe -------------------------------------------------------------------------------------------

TEST(ValidateFp8, Recipe1d1dPointsAtTheOneDOneDEntryPoint) {
  auto x = fp8_dense();
  x.options.recipe = kRecipe1x1x128;
  EXPECT_INVALID(run_dense(x), "options.recipe", "call fp8_gemm_nt_1d1d", "got (1, 1, 128)");
}

TEST(ValidateFp8, Recipe128x128x128IsRejected) {
  auto x = fp8_dense();
  x.options.recipe = {128, 128, 128};
  EXPECT_INVALID(run_dense(x), "options.recipe: must be (1, 128, 128)", "supported recipes", "got (128, 128, 128)");
}

TEST(ValidateFp8, RecipeWithOtherGranularityIsRejected) {
  auto x = fp8_masked();
  x.options.recipe = {1, 128, 64};
  EXPECT_INVALID(run_masked(x), "options.recipe: must be (1, 128, 128)", "got (1, 128, 64)");
}

TEST(ValidateFp8, Recipe1d1dIsNotImplementedForMGrouped) {
  auto x = fp8_contiguous();
  x.options.recipe = kRecipe1x1x128;
  EXPECT_INVALID(run_contiguous(x), "options.recipe", "not implemented for M-grouped GEMMs");
}

// ---- Shapes ---------------------------------------------------------------------------------------------------

TEST(ValidateFp8, KMustBePositive) {
  auto x = fp8_dense(250, 512, 0);
  EXPECT_INVALID(run_dense(x), "a.data: K must be positive, got K = 0");
}

// The kernels rely on it: a dense, masked or group-ends tile always runs a K block (sm90/gemm.cuh, kAlwaysK), and a
// stage that no copy fills would hang its consumers.
TEST(ValidateFp8, KMustBePositiveInEveryMGroupedLayout) {
  auto rtg = fp8_contiguous(512, 4, 512, 0);
  EXPECT_INVALID(run_contiguous(rtg), "a.data: K must be positive, got K = 0");
  auto ends = fp8_contiguous(512, 4, 512, 0);
  ends.contiguous.form = ContiguousLayout::Form::kGroupEnds;
  ends.contiguous.index = TensorView::contiguous(fake(kIndex), DType::kInt32, {4});
  EXPECT_INVALID(run_contiguous(ends), "a.data: K must be positive, got K = 0");
  EXPECT_INVALID(run_masked(fp8_masked(4, 30, 512, 0)), "a.data: K must be positive, got K = 0");
}

TEST(ValidateFp8, KMustBeAMultipleOf16) {
  auto x = fp8_dense(250, 512, 100);
  x.a.data = TensorView::strided(fake(kA), DType::kFloat8E4M3, {250, 100}, {112, 1});
  EXPECT_INVALID(run_dense(x), "a.data: K must be a multiple of 16 (16-byte rows of FP8 A and B)", "got K = 100");
}

TEST(ValidateFp8, NMustBePositive) {
  auto x = fp8_dense(250, 0, 384);
  EXPECT_INVALID(run_dense(x), "b.data: N must be positive, got N = 0");
}

TEST(ValidateFp8, NMustBeAMultipleOf8) {
  auto x = fp8_dense(250, 100, 384);
  x.d = TensorView::strided(fake(kD), DType::kBFloat16, {250, 100}, {104, 1});
  EXPECT_INVALID(run_dense(x), "b.data: N must be a multiple of 8", "got N = 100");
}

TEST(ValidateFp8, KMustAgreeBetweenAAndB) {
  auto x = fp8_dense();
  x.b.data = TensorView::contiguous(fake(kB), DType::kFloat8E4M3, {512, 256});
  EXPECT_INVALID(run_dense(x), "b.data: K must match a.data", "got b.data K = 256, a.data K = 384");
}

TEST(ValidateFp8, DMustHaveRowsOfA) {
  auto x = fp8_dense();
  x.d = TensorView::contiguous(fake(kD), DType::kBFloat16, {256, 512});
  EXPECT_INVALID(run_dense(x), "d: M must match a.data", "got d M = 256, a.data M = 250");
}

TEST(ValidateFp8, DMustHaveColumnsOfB) {
  auto x = fp8_dense();
  x.d = TensorView::contiguous(fake(kD), DType::kBFloat16, {250, 256});
  EXPECT_INVALID(run_dense(x), "d: N must match b.data", "got d N = 256, b.data N = 512");
}

TEST(ValidateFp8, DMustBeBf16) {
  auto x = fp8_dense();
  x.d.dtype = DType::kFloat32;
  EXPECT_INVALID(run_dense(x), "d: must be bfloat16, got float32");
}

TEST(ValidateFp8, DMustBeRowMajor) {
  auto x = fp8_dense();
  x.d = TensorView::strided(fake(kD), DType::kBFloat16, {250, 512}, {1, 256});
  EXPECT_INVALID(run_dense(x), "d: must be row-major (stride(-1) == 1)", "got strides (1, 256)");
}

TEST(ValidateFp8, BMustBeKMajor) {
  auto x = fp8_dense();
  x.b.data = TensorView::strided(fake(kB), DType::kFloat8E4M3, {512, 384}, {1, 512});
  EXPECT_INVALID(run_dense(x), "b.data: must be K-major (stride(-1) == 1)", "got strides (1, 512)");
}

// ---- Scales -----------------------------------------------------------------------------------------------------

TEST(ValidateFp8, SfaShape) {
  auto x = fp8_dense();
  x.a.scales = TensorView::strided(fake(kSfa), DType::kFloat32, {250, 4}, {1, 252});
  EXPECT_INVALID(run_dense(x), "a.scales: must have shape [M, ceil(K / 128)] = [250, 3]", "got shape [250, 4]");
}

TEST(ValidateFp8, SfaMustBeMnMajor) {
  auto x = fp8_dense();
  x.a.scales = TensorView::contiguous(fake(kSfa), DType::kFloat32, {250, 3});
  EXPECT_INVALID(run_dense(x), "a.scales: must be MN-major and TMA-aligned: strides exactly (1, 252)",
                 "got strides (3, 1)");
}

TEST(ValidateFp8, SfaMustBeTmaPadded) {
  auto x = fp8_dense();
  x.a.scales = TensorView::strided(fake(kSfa), DType::kFloat32, {250, 3}, {1, 250});
  EXPECT_INVALID(run_dense(x), "a.scales: must be MN-major and TMA-aligned", "(1, tma_aligned(MN))",
                 "got strides (1, 250)");
}

TEST(ValidateFp8, SfaWithOneBlockIgnoresTheBlockStride) {
  auto x = fp8_dense(250, 512, 128);
  x.a.scales = TensorView::contiguous(fake(kSfa), DType::kFloat32, {250, 1});  // strides (1, 1)
  EXPECT_EQ(run_dense(x).sfa.k_stride, 252);
}

TEST(ValidateFp8, SfaPointerMustBe16ByteAligned) {
  auto x = fp8_dense();
  x.a.scales.data = fake(kSfa + 4);
  EXPECT_INVALID(run_dense(x), "a.scales: data pointer must be 16-byte aligned (TMA)", "got 0x18000004");
}

TEST(ValidateFp8, SfaMustNotBeNull) {
  auto x = fp8_dense();
  x.a.scales.data = nullptr;
  EXPECT_INVALID(run_dense(x), "a.scales: data must not be null");
}

TEST(ValidateFp8, SfaMustBeFloat32) {
  auto x = fp8_dense();
  x.a.scales.dtype = DType::kBFloat16;
  EXPECT_INVALID(run_dense(x), "a.scales: must be float32, got bfloat16");
}

TEST(ValidateFp8, PackedUe8m0ScalesAreUnsupported) {
  auto x = fp8_dense();
  x.a.scales.dtype = DType::kInt32;
  EXPECT_UNSUPPORTED(run_dense(x), "a.scales: UE8M0 packed scales are not supported on SM90 yet");
  x = fp8_dense();
  x.b.scales.dtype = DType::kInt32;
  EXPECT_UNSUPPORTED(run_dense(x), "b.scales: UE8M0 packed scales are not supported on SM90 yet");
}

TEST(ValidateFp8, SfbShape) {
  auto x = fp8_dense();
  x.b.scales = TensorView::contiguous(fake(kSfb), DType::kFloat32, {512, 3});
  EXPECT_INVALID(run_dense(x), "b.scales: must have shape [ceil(N / 128), ceil(K / 128)] = [4, 3]",
                 "got shape [512, 3]");
}

TEST(ValidateFp8, SfbMustBePacked) {
  auto x = fp8_dense();
  x.b.scales = TensorView::strided(fake(kSfb), DType::kFloat32, {4, 3}, {4, 1});
  EXPECT_INVALID(run_dense(x), "b.scales: must be packed K-major, strides (3, 1), or packed MN-major, strides (1, 4)",
                 "got strides (4, 1)");
}

TEST(ValidateFp8, SfbPointerMustBeFloatAligned) {
  auto x = fp8_dense();
  x.b.scales.data = fake(kSfb + 2);
  EXPECT_INVALID(run_dense(x), "b.scales: data pointer must be 4-byte aligned", "got 0x28000002");
  x.b.scales.data = fake(kSfb + 4);  // plain loads: 4 bytes are enough
  EXPECT_NO_THROW(run_dense(x));
}

TEST(ValidateFp8, GroupedSfbGroupsMustBePacked) {
  auto x = fp8_contiguous();
  x.b.scales = TensorView::strided(fake(kSfb), DType::kFloat32, {4, 4, 3}, {16, 3, 1});
  EXPECT_INVALID(run_contiguous(x), "b.scales: must be packed K-major, strides (12, 3, 1)", "got strides (16, 3, 1)");
}

TEST(ValidateFp8, MaskedSfaStrides) {
  auto x = fp8_masked();
  x.a.scales = TensorView::strided(fake(kSfa), DType::kFloat32, {4, 30, 3}, {90, 1, 30});
  EXPECT_INVALID(run_masked(x), "a.scales: must be MN-major and TMA-aligned: strides exactly (96, 1, 32)",
                 "tma_aligned(cap)", "got strides (90, 1, 30)");
}

TEST(ValidateFp8, MaskedSfaShape) {
  auto x = fp8_masked();
  x.a.scales = TensorView::strided(fake(kSfa), DType::kFloat32, {3, 30, 3}, {96, 1, 32});
  EXPECT_INVALID(run_masked(x), "a.scales: must have shape [G, cap, ceil(K / 128)] = [4, 30, 3]");
}

// ---- M-grouped contiguous -------------------------------------------------------------------------------------

TEST(ValidateFp8, ContiguousBMustBeGrouped) {
  auto x = fp8_contiguous();
  x.b.data = TensorView::contiguous(fake(kB), DType::kFloat8E4M3, {512, 384});
  EXPECT_INVALID(run_contiguous(x), "b.data: must have rank 3 [G, N, K]");
}

TEST(ValidateFp8, ContiguousNeedsAGroup) {
  auto x = fp8_contiguous(512, 0);
  EXPECT_INVALID(run_contiguous(x), "b.data: G must be positive, got G = 0");
}

TEST(ValidateFp8, RowToGroupIndexHasOneEntryPerRow) {
  auto x = fp8_contiguous();
  x.contiguous.index = TensorView::contiguous(fake(kIndex), DType::kInt32, {4});
  EXPECT_INVALID(run_contiguous(x), "layout.index: must have M_total (kRowToGroup: one per row) = 512 elements",
                 "got shape [4]");
}

TEST(ValidateFp8, GroupEndsIndexHasOneEntryPerGroup) {
  auto x = fp8_contiguous();
  x.contiguous.form = ContiguousLayout::Form::kGroupEnds;
  EXPECT_INVALID(run_contiguous(x), "layout.index: must have G (kGroupEnds: one end per expert) = 4 elements",
                 "got shape [512]");
}

TEST(ValidateFp8, IndexMustBeInt32) {
  auto x = fp8_contiguous();
  x.contiguous.index.dtype = DType::kFloat32;
  EXPECT_INVALID(run_contiguous(x), "layout.index: must be int32, got float32");
}

TEST(ValidateFp8, IndexMustBeRankOne) {
  auto x = fp8_contiguous();
  x.contiguous.index = TensorView::contiguous(fake(kIndex), DType::kInt32, {4, 128});
  EXPECT_INVALID(run_contiguous(x), "layout.index: must have rank 1", "got rank 2");
}

TEST(ValidateFp8, IndexMustBeContiguous) {
  auto x = fp8_contiguous();
  x.contiguous.index = TensorView::strided(fake(kIndex), DType::kInt32, {512}, {2});
  EXPECT_INVALID(run_contiguous(x), "layout.index: must be contiguous (stride(0) == 1)", "got strides (2)");
}

TEST(ValidateFp8, IndexMustNotBeNull) {
  auto x = fp8_contiguous();
  x.contiguous.index.data = nullptr;
  EXPECT_INVALID(run_contiguous(x), "layout.index: data must not be null");
}

TEST(ValidateFp8, LayoutFormMustBeKnown) {
  auto x = fp8_contiguous();
  x.contiguous.form = static_cast<ContiguousLayout::Form>(7);
  EXPECT_INVALID(run_contiguous(x), "layout.form: must be kRowToGroup or kGroupEnds, got 7");
}

TEST(ValidateFp8, GroupEndsTakeAPowerOfTwoSegmentAlignment) {
  auto x = fp8_contiguous();
  x.contiguous.form = ContiguousLayout::Form::kGroupEnds;
  x.contiguous.index = TensorView::contiguous(fake(kIndex), DType::kInt32, {4});
  EXPECT_EQ(run_contiguous(x).segment_alignment, kContiguousAlignment);  // the default
  for (int alignment : {1, 2, 64, 256, kMaxSegmentAlignment}) {
    x.contiguous.segment_alignment = alignment;
    EXPECT_EQ(run_contiguous(x).segment_alignment, alignment);
  }
  for (int alignment : {0, -128, 3, 96, 2 * kMaxSegmentAlignment}) {
    x.contiguous.segment_alignment = alignment;
    EXPECT_INVALID(run_contiguous(x), "layout.segment_alignment: must be a power of two from 1 to 1024 (group ends)",
                   "got " + std::to_string(alignment));
  }
}

TEST(ValidateFp8, RowToGroupKeepsTheDefaultSegmentAlignment) {
  auto x = fp8_contiguous();
  x.contiguous.segment_alignment = 64;
  EXPECT_INVALID(run_contiguous(x), "layout.segment_alignment: is read by the group-ends form only", "got 64");
}

TEST(ValidateFp8, ExpectedMPerGroupMustBeNonNegative) {
  auto x = fp8_contiguous();
  x.contiguous.expected_m_per_group = -1;
  EXPECT_INVALID(run_contiguous(x), "layout.expected_m_per_group: must be non-negative", "got -1");
}

TEST(ValidateFp8, ContiguousMZeroIsEmpty) {
  const GemmProblem p = run_contiguous(fp8_contiguous(0));
  EXPECT_TRUE(p.empty);
  EXPECT_EQ(p.expected_m, 0);
}

// ---- M-grouped masked -----------------------------------------------------------------------------------------

TEST(ValidateFp8, MaskedGroupsMustAgree) {
  auto x = fp8_masked();
  x.b.data = TensorView::contiguous(fake(kB), DType::kFloat8E4M3, {3, 512, 384});
  EXPECT_INVALID(run_masked(x), "b.data: G must match a.data", "got b.data G = 3, a.data G = 4");
  x = fp8_masked();
  x.d = TensorView::contiguous(fake(kD), DType::kBFloat16, {5, 30, 512});
  EXPECT_INVALID(run_masked(x), "d: G must match a.data", "got d G = 5, a.data G = 4");
}

TEST(ValidateFp8, MaskedCapacityMustAgree) {
  auto x = fp8_masked();
  x.d = TensorView::contiguous(fake(kD), DType::kBFloat16, {4, 32, 512});
  EXPECT_INVALID(run_masked(x), "d: cap must match a.data", "got d cap = 32, a.data cap = 30");
}

TEST(ValidateFp8, MaskedNeedsAGroup) {
  EXPECT_INVALID(run_masked(fp8_masked(0)), "a.data: G must be positive, got G = 0");
}

TEST(ValidateFp8, ValidRowsHasOneEntryPerGroup) {
  auto x = fp8_masked();
  x.masked.valid_rows = TensorView::contiguous(fake(kIndex), DType::kInt32, {3});
  EXPECT_INVALID(run_masked(x), "layout.valid_rows: must have G = 4 elements", "got shape [3]");
}

TEST(ValidateFp8, ValidRowsMustBeInt32AndContiguous) {
  auto x = fp8_masked();
  x.masked.valid_rows.dtype = DType::kFloat32;
  EXPECT_INVALID(run_masked(x), "layout.valid_rows: must be int32");
  x = fp8_masked();
  x.masked.valid_rows = TensorView::strided(fake(kIndex), DType::kInt32, {4}, {4});
  EXPECT_INVALID(run_masked(x), "layout.valid_rows: must be contiguous");
}

TEST(ValidateFp8, ExpectedMMustBeNonNegative) {
  auto x = fp8_masked();
  x.masked.expected_m = -3;
  EXPECT_INVALID(run_masked(x), "layout.expected_m: must be non-negative", "got -3");
}
