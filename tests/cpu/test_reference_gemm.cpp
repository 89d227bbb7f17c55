// The oracle's reference GEMMs: hand-computed cases, the four operand majors, the grouped forms against per-group
// dense GEMMs, "not written" rows, K-grouped with empty experts, the FP8 wrappers and the error metrics.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "moegemm/error.hpp"
#include "moegemm/reference.hpp"
#include "reference/blocked_gemm.hpp"

using namespace moegemm;
using namespace moegemm::reference;

namespace {

std::vector<double> random_doubles(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<double> x(n);
  for (auto& v : x) v = normal(rng);
  return x;
}

std::size_t at(std::int64_t i) { return static_cast<std::size_t>(i); }

// A [rows, cols] row-major matrix stored transposed ([cols, rows] row-major), i.e. the MN-major copy.
std::vector<double> transposed(const std::vector<double>& x, std::int64_t rows, std::int64_t cols) {
  std::vector<double> t(x.size());
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < cols; ++j) t[at(j * rows + i)] = x[at(i * cols + j)];
  return t;
}

// The plain triple loop, written here independently of the library.
std::vector<double> naive_nt(const double* a, const double* b, std::int64_t m, std::int64_t n, std::int64_t k) {
  std::vector<double> d(at(m * n), 0.0);
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      double sum = 0.0;
      for (std::int64_t kk = 0; kk < k; ++kk) sum += a[i * k + kk] * b[j * k + kk];
      d[at(i * n + j)] = sum;
    }
  return d;
}

void expect_all_near(const std::vector<double>& actual, const std::vector<double>& expected, double tolerance,
                     const std::string& what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  for (std::size_t i = 0; i < actual.size(); ++i)
    ASSERT_NEAR(actual[i], expected[i], tolerance) << what << " at " << i;
}

}  // namespace

TEST(ReferenceGemm, HandComputedTwoByTwo) {
  const std::vector<double> a = {1, 2, 3, 4};
  const std::vector<double> b = {5, 6, 7, 8};  // B [N=2, K=2]: D = A B^T
  const std::vector<double> c = {1, -1, 10, 0};
  EXPECT_EQ(gemm(2, 2, 2, MatrixRef::row_major(a.data(), 2), MatrixRef::row_major(b.data(), 2)),
            (std::vector<double>{17, 23, 39, 53}));
  EXPECT_EQ(gemm(2, 2, 2, MatrixRef::row_major(a.data(), 2), MatrixRef::row_major(b.data(), 2), c.data()),
            (std::vector<double>{18, 22, 49, 53}));
}

TEST(ReferenceGemm, HandComputedThreeByFive) {
  const std::vector<double> a = {1, 0, 0, 0, 0, 1, 1, 1, 1, 1, 0, 2, 0, -1, 3};  // [3, 5]
  const std::vector<double> b = {1, 2, 3, 4, 5, -1, 0, 1, 0, -1};                 // [2, 5]
  EXPECT_EQ(gemm(3, 2, 5, MatrixRef::row_major(a.data(), 5), MatrixRef::row_major(b.data(), 5)),
            (std::vector<double>{1, -1, 15, -1, 15, -3}));
}

TEST(ReferenceGemm, AllFourMajorsAgreeWithTheTripleLoop) {
  const std::int64_t m = 7, n = 5, k = 33;
  const std::vector<double> a = random_doubles(at(m * k), 1);
  const std::vector<double> b = random_doubles(at(n * k), 2);
  const std::vector<double> c = random_doubles(at(m * n), 3);
  const std::vector<double> a_t = transposed(a, m, k);  // [K, M]: MN-major A
  const std::vector<double> b_t = transposed(b, n, k);  // [K, N]: MN-major B
  std::vector<double> expected = naive_nt(a.data(), b.data(), m, n, k);
  for (std::size_t i = 0; i < expected.size(); ++i) expected[i] += c[i];
  const MatrixRef a_k_major = MatrixRef::row_major(a.data(), k), a_mn_major = MatrixRef::col_major(a_t.data(), m);
  const MatrixRef b_k_major = MatrixRef::row_major(b.data(), k), b_mn_major = MatrixRef::col_major(b_t.data(), n);
  const std::vector<double> nt = gemm(m, n, k, a_k_major, b_k_major, c.data());
  expect_all_near(nt, expected, 1e-12, "NT");
  // Same summation order whatever the strides: the other three forms give bit-identical results.
  EXPECT_EQ(gemm(m, n, k, a_k_major, b_mn_major, c.data()), nt) << "NN";
  EXPECT_EQ(gemm(m, n, k, a_mn_major, b_mn_major, c.data()), nt) << "TN";
  EXPECT_EQ(gemm(m, n, k, a_mn_major, b_k_major, c.data()), nt) << "TT";
}

TEST(ReferenceGemm, TiledPathsAddInTheTextbookOrder) {
  // Several 64 x 64 output tiles, ragged 4 x 4 micro tiles at both edges and K split into 256-long chunks: every
  // element must still be exactly 0 + a_0 b_0 + a_1 b_1 + ..., bit for bit, in all four majors.
  const std::int64_t m = 70, n = 67, k = 517;
  const std::vector<double> a = random_doubles(at(m * k), 31);
  const std::vector<double> b = random_doubles(at(n * k), 32);
  const std::vector<double> a_t = transposed(a, m, k), b_t = transposed(b, n, k);
  const std::vector<double> expected = naive_nt(a.data(), b.data(), m, n, k);
  const MatrixRef a_k_major = MatrixRef::row_major(a.data(), k), a_mn_major = MatrixRef::col_major(a_t.data(), m);
  const MatrixRef b_k_major = MatrixRef::row_major(b.data(), k), b_mn_major = MatrixRef::col_major(b_t.data(), n);
  EXPECT_EQ(gemm(m, n, k, a_k_major, b_k_major), expected) << "NT";
  EXPECT_EQ(gemm(m, n, k, a_k_major, b_mn_major), expected) << "NN";
  EXPECT_EQ(gemm(m, n, k, a_mn_major, b_mn_major), expected) << "TN";
  EXPECT_EQ(gemm(m, n, k, a_mn_major, b_k_major), expected) << "TT";
  // A padded row stride (a view of the first k columns of a wider matrix) is honoured too.
  std::vector<double> wide(at(m * (k + 3)), 1e300);
  for (std::int64_t i = 0; i < m; ++i)
    std::copy(a.begin() + i * k, a.begin() + (i + 1) * k, wide.begin() + i * (k + 3));
  EXPECT_EQ(gemm(m, n, k, MatrixRef{wide.data(), k + 3, 1}, b_k_major), expected) << "strided rows";
}

TEST(ReferenceGemm, DenseKernelOverwritesItsOutputAndNothingElse) {
  // The grouped forms write straight into rows of a larger D: the kernel must overwrite (not accumulate into) its
  // m x n window and leave the columns past n of each ldd-wide row alone.
  const std::int64_t m = 9, n = 70, k = 300, ldd = 75;
  const std::vector<double> a = random_doubles(at(m * k), 33);
  const std::vector<double> b = random_doubles(at(n * k), 34);
  std::vector<double> d(at(m * ldd), std::numeric_limits<double>::quiet_NaN());
  detail::product_nt(m, n, k, MatrixRef::row_major(a.data(), k), MatrixRef::row_major(b.data(), k), d.data(), ldd);
  const std::vector<double> expected = naive_nt(a.data(), b.data(), m, n, k);
  for (std::int64_t i = 0; i < m; ++i) {
    for (std::int64_t j = 0; j < n; ++j) ASSERT_EQ(d[at(i * ldd + j)], expected[at(i * n + j)]) << i << ", " << j;
    for (std::int64_t j = n; j < ldd; ++j) ASSERT_TRUE(std::isnan(d[at(i * ldd + j)])) << i << ", " << j;
  }
}

TEST(ReferenceGemm, SingleRowAndZeroK) {
  const std::int64_t n = 37, k = 19;
  const std::vector<double> a = random_doubles(at(k), 4);
  const std::vector<double> b = random_doubles(at(n * k), 5);
  expect_all_near(gemm(1, n, k, MatrixRef::row_major(a.data(), k), MatrixRef::row_major(b.data(), k)),
                  naive_nt(a.data(), b.data(), 1, n, k), 1e-12, "m = 1");
  const std::vector<double> c = random_doubles(6, 6);
  EXPECT_EQ(gemm(2, 3, 0, MatrixRef{}, MatrixRef{}, c.data()), c);
  EXPECT_EQ(gemm(2, 3, 0, MatrixRef{}, MatrixRef{}), std::vector<double>(6, 0.0));
}

TEST(ReferenceGemm, BadSizesAreRejectedWithTheArgumentName) {
  const std::vector<double> a(4, 1.0);
  try {
    gemm(-1, 2, 2, MatrixRef::row_major(a.data(), 2), MatrixRef::row_major(a.data(), 2));
    ADD_FAILURE() << "expected moegemm::Error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("m: must be >= 0, got -1"), std::string::npos) << e.what();
  }
  EXPECT_THROW(gemm(2, 2, 2, MatrixRef{}, MatrixRef::row_major(a.data(), 2)), Error);
}

TEST(ReferenceMGrouped, RowToGroupMatchesPerGroupDenseAndZeroesPadding) {
  const std::int64_t groups = 3, n = 6, k = 20;
  // Segments of 100, 50 and 128 real rows, each padded to 128; two padding rows carry out-of-range ids.
  const std::int64_t m_total = 384;
  std::vector<std::int32_t> index(at(m_total), -1);
  const std::int64_t real_rows[3] = {100, 50, 128};
  for (std::int64_t g = 0; g < groups; ++g)
    for (std::int64_t r = 0; r < real_rows[g]; ++r) index[at(g * 128 + r)] = static_cast<std::int32_t>(g);
  index[120] = 7;
  index[200] = -3;
  const std::vector<double> a = random_doubles(at(m_total * k), 7);
  const std::vector<double> b = random_doubles(at(groups * n * k), 8);
  const GroupedResult result = m_grouped_contiguous_row_to_group(
      m_total, n, k, MatrixRef::row_major(a.data(), k), {MatrixRef::row_major(b.data(), k), n * k}, groups,
      index.data());
  ASSERT_EQ(result.d.size(), at(m_total * n));
  for (std::int64_t g = 0; g < groups; ++g) {
    const std::vector<double> dense = naive_nt(a.data() + g * 128 * k, b.data() + g * n * k, 128, n, k);
    for (std::int64_t r = 0; r < 128; ++r) {
      const std::int64_t row = g * 128 + r;
      ASSERT_EQ(result.written[at(row)], 1) << "every row is written in this form, row " << row;
      const bool padding = index[at(row)] < 0 || index[at(row)] >= groups;
      for (std::int64_t j = 0; j < n; ++j) {
        const double expected = padding ? 0.0 : dense[at(r * n + j)];
        ASSERT_NEAR(result.d[at(row * n + j)], expected, 1e-12) << "row " << row << (padding ? " (padding)" : "");
      }
    }
  }
}

TEST(ReferenceMGrouped, GroupEndsLeavesGapRowsUnwritten) {
  const std::int64_t groups = 3, n = 4, k = 9, m_total = 400;
  const std::vector<std::int32_t> ends = {100, 178, 300};  // experts own [0,100), [128,178), [256,300)
  const std::vector<double> a = random_doubles(at(m_total * k), 9);
  const std::vector<double> b = random_doubles(at(groups * n * k), 10);
  const GroupedResult result = m_grouped_contiguous_group_ends(
      m_total, n, k, MatrixRef::row_major(a.data(), k), {MatrixRef::row_major(b.data(), k), n * k}, groups,
      ends.data());
  const std::int64_t starts[3] = {0, 128, 256};
  std::vector<int> owner(at(m_total), -1);
  for (int g = 0; g < 3; ++g)
    for (std::int64_t r = starts[g]; r < ends[at(g)]; ++r) owner[at(r)] = g;
  for (std::int64_t row = 0; row < m_total; ++row) {
    const int g = owner[at(row)];
    ASSERT_EQ(result.written[at(row)], g >= 0 ? 1 : 0) << "row " << row;
    if (g < 0) continue;
    const std::vector<double> expected = naive_nt(a.data() + row * k, b.data() + g * n * k, 1, n, k);
    for (std::int64_t j = 0; j < n; ++j) ASSERT_NEAR(result.d[at(row * n + j)], expected[at(j)], 1e-12) << row;
  }
}

TEST(ReferenceMGrouped, GroupEndsFollowTheSegmentAlignment) {
  const std::int64_t groups = 4, n = 3, k = 5, m_total = 260;
  const std::vector<std::int32_t> ends = {70, 70, 150, 200};  // expert 1 empty
  const std::vector<double> a = random_doubles(at(m_total * k), 21);
  const std::vector<double> b = random_doubles(at(groups * n * k), 22);
  // Per alignment: each expert's first row (its end is ends[g], none clamped here).
  const std::vector<std::pair<std::int64_t, std::vector<std::int64_t>>> cases = {
      {1, {0, 70, 70, 150}},      // packed: every expert starts where the previous one ended
      {64, {0, 128, 128, 192}},   // expert 1 starts at 128 > its end 70: empty, and its clamped end is 128
      {16, {0, 80, 80, 160}},
  };
  for (const auto& [alignment, starts] : cases) {
    const GroupedResult result = m_grouped_contiguous_group_ends(
        m_total, n, k, MatrixRef::row_major(a.data(), k), {MatrixRef::row_major(b.data(), k), n * k}, groups,
        ends.data(), alignment);
    std::vector<int> owner(at(m_total), -1);
    for (int g = 0; g < groups; ++g)
      for (std::int64_t r = starts[at(g)]; r < ends[at(g)]; ++r) owner[at(r)] = g;
    for (std::int64_t row = 0; row < m_total; ++row) {
      const int g = owner[at(row)];
      ASSERT_EQ(result.written[at(row)], g >= 0 ? 1 : 0) << "alignment " << alignment << ", row " << row;
      if (g < 0) continue;
      const std::vector<double> expected = naive_nt(a.data() + row * k, b.data() + g * n * k, 1, n, k);
      for (std::int64_t j = 0; j < n; ++j) ASSERT_NEAR(result.d[at(row * n + j)], expected[at(j)], 1e-12) << row;
    }
  }
  EXPECT_THROW(m_grouped_contiguous_group_ends(m_total, n, k, MatrixRef::row_major(a.data(), k),
                                               {MatrixRef::row_major(b.data(), k), n * k}, groups, ends.data(), 0),
               Error);
}

TEST(ReferenceMGrouped, GroupEndsAreClampedToStartAndTotal) {
  const std::int64_t groups = 3, n = 2, k = 3, m_total = 300;
  // Expert 1 ends before its aligned start (empty, its end becomes 128); expert 2 then starts at 128 and its end
  // is clamped to m_total.
  const std::vector<std::int32_t> ends = {100, 50, 100000};
  const std::vector<double> a = random_doubles(at(m_total * k), 11);
  const std::vector<double> b = random_doubles(at(groups * n * k), 12);
  const GroupedResult result = m_grouped_contiguous_group_ends(
      m_total, n, k, MatrixRef::row_major(a.data(), k), {MatrixRef::row_major(b.data(), k), n * k}, groups,
      ends.data());
  for (std::int64_t row = 0; row < m_total; ++row) {
    const int g = row < 100 ? 0 : row < 128 ? -1 : 2;
    ASSERT_EQ(result.written[at(row)], g >= 0 ? 1 : 0) << "row " << row;
    if (g < 0) continue;
    const std::vector<double> expected = naive_nt(a.data() + row * k, b.data() + g * n * k, 1, n, k);
    for (std::int64_t j = 0; j < n; ++j) ASSERT_NEAR(result.d[at(row * n + j)], expected[at(j)], 1e-12) << row;
  }
}

TEST(ReferenceMGrouped, MaskedRowsPastCountAreNotWritten) {
  const std::int64_t groups = 4, capacity = 20, n = 5, k = 11;
  const std::vector<std::int32_t> counts = {5, 0, 25, -3};  // 25 is clamped to 20, -3 to 0
  const std::int64_t valid[4] = {5, 0, 20, 0};
  const std::vector<double> a = random_doubles(at(groups * capacity * k), 13);
  const std::vector<double> b = random_doubles(at(groups * n * k), 14);
  const GroupedResult result =
      m_grouped_masked(groups, capacity, n, k, {MatrixRef::row_major(a.data(), k), capacity * k},
                       {MatrixRef::row_major(b.data(), k), n * k}, counts.data());
  ASSERT_EQ(result.d.size(), at(groups * capacity * n));
  for (std::int64_t g = 0; g < groups; ++g) {
    const std::vector<double> dense = naive_nt(a.data() + g * capacity * k, b.data() + g * n * k, capacity, n, k);
    for (std::int64_t r = 0; r < capacity; ++r) {
      const std::int64_t row = g * capacity + r;
      ASSERT_EQ(result.written[at(row)], r < valid[g] ? 1 : 0) << "group " << g << ", row " << r;
      for (std::int64_t j = 0; j < n; ++j)
        ASSERT_NEAR(result.d[at(row * n + j)], r < valid[g] ? dense[at(r * n + j)] : 0.0, 1e-12);
    }
  }
}

TEST(ReferenceMGrouped, MaskedAcceptsMnMajorB) {
  const std::int64_t groups = 2, capacity = 8, n = 3, k = 6;
  const std::vector<std::int32_t> counts = {8, 3};
  const std::vector<double> a = random_doubles(at(groups * capacity * k), 15);
  const std::vector<double> b = random_doubles(at(groups * n * k), 16);
  std::vector<double> b_mn_major(b.size());  // per group [K, N]
  for (std::int64_t g = 0; g < groups; ++g) {
    const std::vector<double> bg(b.begin() + g * n * k, b.begin() + (g + 1) * n * k);
    const std::vector<double> t = transposed(bg, n, k);
    std::copy(t.begin(), t.end(), b_mn_major.begin() + g * n * k);
  }
  const BatchedMatrixRef a_ref{MatrixRef::row_major(a.data(), k), capacity * k};
  const GroupedResult k_major =
      m_grouped_masked(groups, capacity, n, k, a_ref, {MatrixRef::row_major(b.data(), k), n * k}, counts.data());
  const GroupedResult mn_major = m_grouped_masked(groups, capacity, n, k, a_ref,
                                                  {MatrixRef::col_major(b_mn_major.data(), n), n * k}, counts.data());
  EXPECT_EQ(k_major.d, mn_major.d);
  EXPECT_EQ(k_major.written, mn_major.written);
}

TEST(ReferenceKGrouped, NtFormMatchesPerExpertDenseAndEmptyExpertGivesC) {
  const std::int64_t m = 4, n = 3;
  const std::vector<std::int64_t> ks = {3, 0, 5};
  const std::int64_t total_k = 8;
  const std::vector<double> a = random_doubles(at(m * total_k), 17);  // per expert a K-major [M, K_g] block
  const std::vector<double> b = random_doubles(at(n * total_k), 18);
  const std::vector<double> c = random_doubles(at(3 * m * n), 19);
  const std::vector<double> d = k_grouped_gemm_nt(m, n, ks, a.data(), b.data(), c.data());
  ASSERT_EQ(d.size(), at(3 * m * n));
  std::int64_t k_offset = 0;
  for (std::int64_t g = 0; g < 3; ++g) {
    std::vector<double> expected = naive_nt(a.data() + m * k_offset, b.data() + n * k_offset, m, n, ks[at(g)]);
    for (std::int64_t e = 0; e < m * n; ++e) expected[at(e)] += c[at(g * m * n + e)];
    const std::vector<double> dg(d.begin() + g * m * n, d.begin() + (g + 1) * m * n);
    expect_all_near(dg, expected, 1e-12, "expert " + std::to_string(g));
    k_offset += ks[at(g)];
  }
  EXPECT_TRUE(std::equal(d.begin() + m * n, d.begin() + 2 * m * n, c.begin() + m * n)) << "K_1 = 0: D[1] == C[1]";
  const std::vector<double> d_no_c = k_grouped_gemm_nt(m, n, ks, a.data(), b.data());
  for (std::int64_t e = m * n; e < 2 * m * n; ++e) EXPECT_EQ(d_no_c[at(e)], 0.0);
}

TEST(ReferenceKGrouped, TnFormEqualsNtFormOnTheSameData) {
  const std::int64_t m = 5, n = 4;
  const std::vector<std::int64_t> ks = {0, 7, 2};
  const std::int64_t total_k = 9;
  const std::vector<double> a_tn = random_doubles(at(total_k * m), 20);  // [sum K, M]
  const std::vector<double> b_tn = random_doubles(at(total_k * n), 21);  // [sum K, N]
  const std::vector<double> c = random_doubles(at(3 * m * n), 22);
  // Re-lay the same numbers as the nt form: per expert, the transpose of its [K_g, M] slab.
  std::vector<double> a_nt(a_tn.size()), b_nt(b_tn.size());
  std::int64_t k_offset = 0;
  for (const std::int64_t k : ks) {
    for (std::int64_t t = 0; t < k; ++t) {
      for (std::int64_t i = 0; i < m; ++i) a_nt[at(m * k_offset + i * k + t)] = a_tn[at((k_offset + t) * m + i)];
      for (std::int64_t j = 0; j < n; ++j) b_nt[at(n * k_offset + j * k + t)] = b_tn[at((k_offset + t) * n + j)];
    }
    k_offset += k;
  }
  const std::vector<double> tn = k_grouped_gemm_tn(m, n, ks, a_tn.data(), b_tn.data(), c.data());
  EXPECT_EQ(tn, k_grouped_gemm_nt(m, n, ks, a_nt.data(), b_nt.data(), c.data()));
  EXPECT_TRUE(std::equal(tn.begin(), tn.begin() + m * n, c.begin())) << "K_0 = 0: D[0] == C[0]";
  EXPECT_THROW(k_grouped_gemm_tn(m, n, {3, -1}, a_tn.data(), b_tn.data()), Error);
}

TEST(ReferenceFp8Gemm, OneDTwoDIsTheDenseGemmOfTheDequantizedOperands) {
  const std::int64_t m = 9, n = 130, k = 320;
  std::vector<float> a(at(m * k)), b(at(n * k));
  std::vector<double> a_exact(a.size()), b_exact(b.size());
  const std::vector<double> ra = random_doubles(a.size(), 23), rb = random_doubles(b.size(), 24);
  for (std::size_t i = 0; i < a.size(); ++i) a_exact[i] = a[i] = static_cast<float>(ra[i]);
  for (std::size_t i = 0; i < b.size(); ++i) b_exact[i] = b[i] = static_cast<float>(rb[i]);
  const PerTokenFp8 qa = per_token_cast(a.data(), m, k);
  const PerBlockFp8 qb = per_block_cast(b.data(), n, k);
  const std::vector<double> d = fp8_gemm_1d2d(qa, qb);
  const std::vector<double> da = dequantize(qa), db = dequantize(qb);
  EXPECT_EQ(d, gemm(m, n, k, MatrixRef::row_major(da.data(), k), MatrixRef::row_major(db.data(), k)));
  // Against the unquantized product the FP8 error is small but present (the anchor's bar is 1e-3).
  const std::vector<double> exact = naive_nt(a_exact.data(), b_exact.data(), m, n, k);
  const double diff = calc_diff(d.data(), exact.data(), d.size());
  EXPECT_LT(diff, 1e-3);
  EXPECT_GT(diff, 0.0);
  EXPECT_THROW(fp8_gemm_1d2d(qa, per_block_cast(b.data(), n, k - 64)), Error);
}

TEST(ReferenceFp8Gemm, OneDOneDWithAccumulator) {
  const std::int64_t tokens = 256, m = 6, n = 5;
  std::vector<float> x(at(tokens * m)), y(at(tokens * n));  // tokens-first activations and gradients
  const std::vector<double> rx = random_doubles(x.size(), 25), ry = random_doubles(y.size(), 26);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(rx[i]);
  for (std::size_t i = 0; i < y.size(); ++i) y[i] = static_cast<float>(ry[i]);
  const PerTokenFp8 qa = to_k_major(per_channel_cast(x.data(), tokens, m));
  const PerTokenFp8 qb = to_k_major(per_channel_cast(y.data(), tokens, n));
  const std::vector<double> c = random_doubles(at(m * n), 27);
  const std::vector<double> d = fp8_gemm_1d1d(qa, qb, c.data());
  const std::vector<double> da = dequantize(qa), db = dequantize(qb);
  std::vector<double> expected = naive_nt(da.data(), db.data(), m, n, tokens);
  for (std::size_t i = 0; i < expected.size(); ++i) expected[i] += c[i];
  expect_all_near(d, expected, 1e-9, "1D1D");
  std::vector<double> exact(at(m * n), 0.0);  // C + X^T Y in double from the unquantized values
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      double sum = c[at(i * n + j)];
      for (std::int64_t t = 0; t < tokens; ++t) sum += double(x[at(t * m + i)]) * y[at(t * n + j)];
      exact[at(i * n + j)] = sum;
    }
  EXPECT_LT(calc_diff(d.data(), exact.data(), d.size()), 1e-3);
}

TEST(ReferenceMetrics, CalcDiffValues) {
  const std::vector<double> x = {1, 2}, y = {1, 3};
  EXPECT_DOUBLE_EQ(calc_diff(x.data(), y.data(), 2), 1.0 / 15.0);  // 1 - 2*7/15
  EXPECT_EQ(calc_diff(x.data(), x.data(), 2), 0.0);
  const std::vector<double> e0 = {1, 0}, e1 = {0, 1}, zero = {0, 0}, minus = {-1, -2};
  EXPECT_EQ(calc_diff(e0.data(), e1.data(), 2), 1.0);
  EXPECT_EQ(calc_diff(zero.data(), x.data(), 2), 1.0);
  EXPECT_EQ(calc_diff(x.data(), minus.data(), 2), 2.0);
  EXPECT_EQ(calc_diff(zero.data(), zero.data(), 2), 0.0);
  EXPECT_EQ(calc_diff(nullptr, nullptr, 0), 0.0);
}

TEST(ReferenceMetrics, RelativeL2Error) {
  const std::vector<double> x = {2, 0}, ref = {1, 0}, zero = {0, 0}, y = {3, 4}, y_off = {3, 5};
  EXPECT_EQ(relative_l2_error(x.data(), ref.data(), 2), 1.0);
  EXPECT_DOUBLE_EQ(relative_l2_error(y_off.data(), y.data(), 2), 0.2);
  EXPECT_EQ(relative_l2_error(y.data(), y.data(), 2), 0.0);
  EXPECT_EQ(relative_l2_error(zero.data(), zero.data(), 2), 0.0);
  EXPECT_EQ(relative_l2_error(x.data(), zero.data(), 2), std::numeric_limits<double>::infinity());
}
