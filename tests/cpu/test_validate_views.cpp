// The generic rules every tensor view obeys (rank, dtype, sizes, strides, null data, overlap, 16-byte alignment),
// exercised through the FP8 and BF16 validators.
#include <climits>

#include "test_validate_common.hpp"
#include "validate/checks.hpp"

using namespace moegemm;
using namespace moegemm::validate;
using namespace moegemm::validate::testing;

TEST(ValidateViews, RankMustMatch) {
  auto x = fp8_dense();
  x.a.data = TensorView::contiguous(fake(kA), DType::kFloat8E4M3, {1, 250, 384});
  EXPECT_INVALID(run_dense(x), "a.data: must have rank 2 [M, K]", "got rank 3 [1, 250, 384]");
}

TEST(ValidateViews, DtypeMustMatch) {
  auto x = fp8_dense();
  x.a.data.dtype = DType::kBFloat16;
  EXPECT_INVALID(run_dense(x), "a.data: must be float8_e4m3, got bfloat16");
}

TEST(ValidateViews, SizesMustBeNonNegative) {
  auto x = fp8_dense();
  x.b.data = TensorView::strided(fake(kB), DType::kFloat8E4M3, {-8, 384}, {384, 1});
  EXPECT_INVALID(run_dense(x), "b.data: sizes must be non-negative", "got shape [-8, 384]");
}

TEST(ValidateViews, SizesMustFitInInt) {
  const std::int64_t huge = std::int64_t{INT_MAX} + 1;
  auto x = bf16_dense(huge, 512, 320);
  EXPECT_INVALID(run_bf16(x), "a: every size must fit in a 32-bit int", "[2147483648, 320]");
}

TEST(ValidateViews, DataMustNotBeNullWhenNonEmpty) {
  auto x = fp8_dense();
  x.b.data.data = nullptr;
  EXPECT_INVALID(run_dense(x), "b.data: data must not be null when the tensor has elements", "got nullptr");
}

TEST(ValidateViews, NullDataIsFineWithoutElements) {
  auto x = fp8_dense(0);
  x.a.data.data = nullptr;
  x.a.scales.data = nullptr;
  x.d.data = nullptr;
  const GemmProblem p = run_dense(x);
  EXPECT_TRUE(p.empty);
  EXPECT_EQ(p.m, 0);
}

TEST(ValidateViews, StridesOfRealDimensionsMustBePositive) {
  auto x = fp8_dense();
  x.b.data = TensorView::strided(fake(kB), DType::kFloat8E4M3, {512, 384}, {0, 1});
  EXPECT_INVALID(run_dense(x), "b.data: strides of dimensions of size > 1 must be positive", "got strides (0, 1)");
  x.b.data = TensorView::strided(fake(kB), DType::kFloat8E4M3, {512, 384}, {384, -1});
  EXPECT_INVALID(run_dense(x), "b.data: strides of dimensions of size > 1 must be positive", "(384, -1)");
}

TEST(ValidateViews, KMajorIsRequiredForFp8) {
  auto x = fp8_dense(256, 512, 4096);
  x.a.data = TensorView::strided(fake(kA), DType::kFloat8E4M3, {256, 4096}, {1, 256});
  EXPECT_INVALID(run_dense(x), "a.data: must be K-major (stride(-1) == 1), got strides (1, 256)");
}

TEST(ValidateViews, RowsMustNotOverlap) {
  auto x = fp8_dense();
  x.a.data = TensorView::strided(fake(kA), DType::kFloat8E4M3, {250, 384}, {368, 1});
  EXPECT_INVALID(run_dense(x), "a.data: rows must not overlap (stride(-2) >= 384)", "got strides (368, 1)");
}

TEST(ValidateViews, MnMajorRowsMustNotOverlap) {
  auto x = bf16_dense();
  x.a = TensorView::strided(fake(kA), DType::kBFloat16, {256, 320}, {1, 248});
  EXPECT_INVALID(run_bf16(x), "a: rows must not overlap (stride(-1) >= 256)", "got strides (1, 248)");
}

TEST(ValidateViews, LeadingStrideMustBe16ByteAligned) {
  auto x = fp8_dense();
  x.a.data = TensorView::strided(fake(kA), DType::kFloat8E4M3, {250, 384}, {392, 1});
  EXPECT_INVALID(run_dense(x), "a.data: leading stride must be a multiple of 16 bytes (TMA)", "got strides (392, 1)");
  auto y = bf16_dense();
  y.d = TensorView::strided(fake(kD), DType::kBFloat16, {256, 512}, {516, 1});
  EXPECT_INVALID(run_bf16(y), "d: leading stride must be a multiple of 16 bytes", "stride(-2) * 2 B % 16 == 0");
}

TEST(ValidateViews, DataPointerMustBe16ByteAligned) {
  auto x = fp8_dense();
  x.b.data.data = fake(kB + 8);
  EXPECT_INVALID(run_dense(x), "b.data: data pointer must be 16-byte aligned (TMA)", "got 0x20000008");
}

TEST(ValidateViews, GroupsMustNotOverlap) {
  auto x = fp8_masked(4, 30, 512, 384);
  x.a.data = TensorView::strided(fake(kA), DType::kFloat8E4M3, {4, 30, 384}, {29 * 384, 384, 1});
  EXPECT_INVALID(run_masked(x), "a.data: groups must not overlap (stride(0) >= 11520)");
}

TEST(ValidateViews, GroupStrideMustBe16ByteAligned) {
  auto x = fp8_masked(4, 30, 512, 384);
  x.d = TensorView::strided(fake(kD), DType::kBFloat16, {4, 30, 512}, {30 * 512 + 4, 512, 1});
  EXPECT_INVALID(run_masked(x), "d: group stride must be a multiple of 16 bytes (TMA)", "(15364, 512, 1)");
}

TEST(ValidateViews, PaddedRowsAndGroupsAreAccepted) {
  auto x = fp8_masked(4, 30, 512, 384);
  x.d = TensorView::strided(fake(kD), DType::kBFloat16, {4, 30, 512}, {32 * 520, 520, 1});
  const GemmProblem p = run_masked(x);
  EXPECT_EQ(p.d.ld, 520);
  EXPECT_EQ(p.d.group_stride, 32 * 520);
}

TEST(ValidateViews, StridesOfSizeOneDimensionsAreIgnoredAndNormalised) {
  // A [1, K] view made by transposing a [K, 1] tensor has strides (1, 1): still K-major, one row.
  auto x = bf16_dense(1, 512, 320);
  x.a = TensorView::strided(fake(kA), DType::kBFloat16, {1, 320}, {1, 1});
  x.d = TensorView::strided(fake(kD), DType::kBFloat16, {1, 512}, {7, 1});
  const GemmProblem p = run_bf16(x);
  EXPECT_EQ(p.a.major, Major::kK);
  EXPECT_EQ(p.a.ld, 320);  // normalised: the inner extent rounded up to 16 bytes
  EXPECT_EQ(p.d.ld, 512);
}

TEST(ValidateViews, NormalisedLeadingStrideIsRoundedToSixteenBytes) {
  auto x = fp8_masked(1, 1, 512, 400);  // K = 400: 16-byte rows, the stride of the single row is normalised
  x.a.data = TensorView::strided(fake(kA), DType::kFloat8E4M3, {1, 1, 400}, {3, 5, 1});
  const GemmProblem p = run_masked(x);
  EXPECT_EQ(p.a.ld, 400);
  EXPECT_EQ(p.a.group_stride, 400);
  EXPECT_EQ(p.num_groups, 1);
}

TEST(ValidateViews, RankPastTheViewsArraysIsReportedWithoutReadingPastThem) {
  auto x = fp8_dense();
  x.a.data.rank = kMaxRank + 3;
  EXPECT_INVALID(run_dense(x), "a.data: must have rank 2 [M, K]", "got rank 7 [250, 384, 0, 0, ...]");
  x = fp8_dense();
  x.b.data.rank = -1;
  EXPECT_INVALID(run_dense(x), "b.data: must have rank 2 [N, K]", "got rank -1 []");
}

TEST(ValidateViews, NumelNeverOverflows) {
  const std::int64_t big = INT_MAX;
  EXPECT_EQ(TensorView::contiguous(fake(kA), DType::kBFloat16, {big, big, big}).numel(), INT64_MAX);
  EXPECT_EQ(TensorView::contiguous(fake(kA), DType::kBFloat16, {big, 0, big}).numel(), 0);
  EXPECT_EQ(TensorView::contiguous(fake(kA), DType::kBFloat16, {big, -3, big}).numel(), -1);
  TensorView v = TensorView::contiguous(fake(kA), DType::kBFloat16, {2, 3, 4, 5});
  v.rank = 9;  // dimensions past kMaxRank do not exist
  EXPECT_EQ(v.numel(), 120);
}

TEST(ValidateViews, StridesMustStayBelowTheTmaLimit) {
  // TMA takes global strides below 2^40 bytes (cuTensorMapEncodeTiled): refused here, not at the launch.
  auto x = bf16_dense();
  x.b = TensorView::strided(fake(kB), DType::kBFloat16, {512, 320}, {std::int64_t{1} << 39, 1});
  EXPECT_INVALID(run_bf16(x), "b: leading stride must be below 2^40 bytes (TMA)", "(549755813888, 1)");
  auto g = bf16_masked();
  g.b = TensorView::strided(fake(kB), DType::kBFloat16, {8, 256, 256}, {std::int64_t{1} << 39, 256, 1});
  EXPECT_INVALID(run_bf16_masked(g), "b: group stride must be below 2^40 bytes (TMA)");
}

TEST(ValidateViews, GroupExtentPastInt64IsAnOverlapNotAnOverflow) {
  // 2^30 rows of 2^38 elements: one group's extent passes int64, so no group stride clears it.
  const std::int64_t cap = std::int64_t{1} << 30;
  auto g = bf16_masked(8, cap, 256, 256);
  g.a = TensorView::strided(fake(kA), DType::kBFloat16, {8, cap, 256}, {INT64_MAX - 7, std::int64_t{1} << 38, 1});
  EXPECT_INVALID(run_bf16_masked(g), "a: groups must not overlap (stride(0) >= 1073741824 x 274877906944)");
}

TEST(ValidateViews, ATensorMustSpanLessThan2To48Bytes) {
  // Sizes and strides each within their rules (1024 groups 2^39 bytes apart), but a span of 2^49 bytes: refused, so
  // that no count derived from the problem can overflow on the host or in the kernels.
  auto g = bf16_masked(1024, 32, 256, 256);
  g.a = TensorView::strided(fake(kA), DType::kBFloat16, {1024, 32, 256}, {std::int64_t{1} << 38, 256, 1});
  EXPECT_INVALID(run_bf16_masked(g), "a: must span less than 2^48 bytes");
  g.a = TensorView::strided(fake(kA), DType::kBFloat16, {1024, 32, 256}, {std::int64_t{1} << 36, 256, 1});
  EXPECT_NO_THROW(run_bf16_masked(g));  // 2^47 bytes
}

TEST(ValidateViews, SizesLeaveRoomForATilePastTheLastBlock) {
  // The kernels add up to a tile's extent to a 32-bit row or column index (tests/cpu/test_scheduler.cpp,
  // TheLargestAcceptedExtentsStayInInt): INT_MAX itself is refused, kMaxIndexedExtent accepted.
  EXPECT_INVALID(run_bf16(bf16_dense(INT_MAX, 512, 320)), "a: every size must fit in a 32-bit int with room for a tile",
                 "at most 2147418112");
  EXPECT_NO_THROW(run_bf16(bf16_dense(kMaxIndexedExtent, 512, 320)));
}

TEST(ValidateViews, GroupedBRowsOfAllExpertsFitInt) {
  // 2 experts x N = 2^30: each view within its rules, but expert 1's first row of B (G x N) passes the bound.
  EXPECT_INVALID(run_bf16_masked(bf16_masked(2, 32, std::int64_t{1} << 30, 256)), "b: G x N must fit in a 32-bit int");
  auto x = fp8_contiguous(512, 2, std::int64_t{1} << 30, 128);
  EXPECT_INVALID(run_contiguous(x), "b.data: G x N must fit in a 32-bit int");
}
