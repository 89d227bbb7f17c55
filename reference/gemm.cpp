// Reference GEMMs: every product goes through detail::product_nt (one double sum per element, in increasing k);
// the grouped forms run it once per expert's row range and record which rows they produced.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "moegemm/layouts.hpp"
#include "moegemm/reference.hpp"
#include "reference/blocked_gemm.hpp"
#include "reference/checks.hpp"
#include "reference/parallel.hpp"

namespace moegemm::reference {
namespace {

using detail::parallel_for;
using detail::require;

std::size_t to_size(std::int64_t x) { return static_cast<std::size_t>(x); }

// Rows [first, first + count) of a, as a view of their own.
MatrixRef rows_from(MatrixRef a, std::int64_t first) {
  return {a.data + first * a.row_stride, a.row_stride, a.col_stride};
}

void check_sizes(std::int64_t m, std::int64_t n, std::int64_t k) {
  require(m >= 0, "m", "must be >= 0", m);
  require(n >= 0, "n", "must be >= 0", n);
  require(k >= 0, "k", "must be >= 0", k);
}

void check_operand(const double* data, const char* name, bool needed) {
  require(data != nullptr || !needed, name, "must not be null when the GEMM reads it", data);
}

void check_groups(std::int64_t groups, const std::int32_t* index, const char* index_name) {
  require(groups >= 0, "groups", "must be >= 0", groups);
  require(index != nullptr, index_name, "must not be null", index);
}

std::int64_t align_up(std::int64_t x, std::int64_t alignment) { return (x + alignment - 1) / alignment * alignment; }

}  // namespace

std::vector<double> gemm(std::int64_t m, std::int64_t n, std::int64_t k, MatrixRef a, MatrixRef b, const double* c) {
  check_sizes(m, n, k);
  check_operand(a.data, "a.data", m > 0 && n > 0 && k > 0);
  check_operand(b.data, "b.data", m > 0 && n > 0 && k > 0);
  std::vector<double> d(to_size(m * n), 0.0);
  if (k > 0) detail::product_nt(m, n, k, a, b, d.data(), n);
  if (c != nullptr)
    for (std::int64_t e = 0; e < m * n; ++e) d[to_size(e)] = c[e] + d[to_size(e)];
  return d;
}

GroupedResult m_grouped_contiguous_row_to_group(std::int64_t m_total, std::int64_t n, std::int64_t k, MatrixRef a,
                                                BatchedMatrixRef b, std::int64_t groups, const std::int32_t* index) {
  check_sizes(m_total, n, k);
  check_groups(groups, index, "index");
  check_operand(a.data, "a.data", k > 0);
  check_operand(b.matrix.data, "b.matrix.data", k > 0);
  GroupedResult result{std::vector<double>(to_size(m_total * n), 0.0), std::vector<std::uint8_t>(to_size(m_total), 1)};
  // Each run of rows with the same expert is one dense product; padding rows stay 0 and count as written.
  for (std::int64_t first = 0; first < m_total;) {
    const std::int64_t g = index[first];
    std::int64_t last = first + 1;
    while (last < m_total && index[last] == g) ++last;
    if (g >= 0 && g < groups && k > 0) {
      detail::product_nt(last - first, n, k, rows_from(a, first), b[g], result.d.data() + first * n, n);
    }
    first = last;
  }
  return result;
}

GroupedResult m_grouped_contiguous_group_ends(std::int64_t m_total, std::int64_t n, std::int64_t k, MatrixRef a,
                                              BatchedMatrixRef b, std::int64_t groups, const std::int32_t* ends,
                                              std::int64_t segment_alignment) {
  check_sizes(m_total, n, k);
  check_groups(groups, ends, "ends");
  require(segment_alignment >= 1, "segment_alignment", "must be >= 1", segment_alignment);
  check_operand(a.data, "a.data", k > 0);
  check_operand(b.matrix.data, "b.matrix.data", k > 0);
  GroupedResult result{std::vector<double>(to_size(m_total * n), 0.0), std::vector<std::uint8_t>(to_size(m_total), 0)};
  // Starts never decrease (each is at least the previous clamped end), so experts' row ranges are disjoint.
  std::int64_t previous_end = 0;
  for (std::int64_t g = 0; g < groups; ++g) {
    const std::int64_t start = std::min(align_up(previous_end, segment_alignment), m_total);
    const std::int64_t end = std::clamp<std::int64_t>(ends[g], start, m_total);
    if (end > start && k > 0) {
      detail::product_nt(end - start, n, k, rows_from(a, start), b[g], result.d.data() + start * n, n);
    }
    std::fill(result.written.begin() + start, result.written.begin() + end, std::uint8_t{1});
    previous_end = end;
  }
  return result;
}

GroupedResult m_grouped_masked(std::int64_t groups, std::int64_t capacity, std::int64_t n, std::int64_t k,
                               BatchedMatrixRef a, BatchedMatrixRef b, const std::int32_t* counts) {
  check_sizes(capacity, n, k);
  check_groups(groups, counts, "counts");
  check_operand(a.matrix.data, "a.matrix.data", k > 0);
  check_operand(b.matrix.data, "b.matrix.data", k > 0);
  const std::int64_t rows = groups * capacity;
  GroupedResult result{std::vector<double>(to_size(rows * n), 0.0), std::vector<std::uint8_t>(to_size(rows), 0)};
  for (std::int64_t g = 0; g < groups; ++g) {
    const std::int64_t valid = std::clamp<std::int64_t>(counts[g], 0, capacity);
    if (valid > 0 && k > 0) {
      detail::product_nt(valid, n, k, a[g], b[g], result.d.data() + g * capacity * n, n);
    }
    std::fill(result.written.begin() + g * capacity, result.written.begin() + g * capacity + valid, std::uint8_t{1});
  }
  return result;
}

namespace {

// D[g] = C[g] + A_g @ B_g^T for every expert, with make_a / make_b giving expert g's [M, K_g] / [N, K_g] views.
template <typename MakeA, typename MakeB>
std::vector<double> k_grouped(std::int64_t m, std::int64_t n, const std::vector<std::int64_t>& ks, const double* a,
                              const double* b, const double* c, MakeA make_a, MakeB make_b) {
  check_sizes(m, n, 0);
  std::int64_t total_k = 0;
  for (const std::int64_t k : ks) {
    require(k >= 0, "ks", "every entry must be >= 0", k);
    total_k += k;
  }
  check_operand(a, "a", total_k > 0 && m > 0 && n > 0);
  check_operand(b, "b", total_k > 0 && m > 0 && n > 0);
  std::vector<double> d(to_size(static_cast<std::int64_t>(ks.size()) * m * n));
  std::int64_t k_offset = 0;
  for (std::size_t g = 0; g < ks.size(); ++g) {
    const std::int64_t group_offset = static_cast<std::int64_t>(g) * m * n;
    const std::vector<double> dg = gemm(m, n, ks[g], make_a(k_offset, ks[g]), make_b(k_offset, ks[g]),
                                        c != nullptr ? c + group_offset : nullptr);
    std::copy(dg.begin(), dg.end(), d.begin() + group_offset);
    k_offset += ks[g];
  }
  return d;
}

}  // namespace

std::vector<double> k_grouped_gemm_nt(std::int64_t m, std::int64_t n, const std::vector<std::int64_t>& ks,
                                      const double* a, const double* b, const double* c) {
  // Expert g's K-major block starts after all earlier experts' blocks: at rows * (sum of earlier K).
  return k_grouped(
      m, n, ks, a, b, c, [&](std::int64_t k0, std::int64_t kg) { return MatrixRef{a + m * k0, kg, 1}; },
      [&](std::int64_t k0, std::int64_t kg) { return MatrixRef{b + n * k0, kg, 1}; });
}

std::vector<double> k_grouped_gemm_tn(std::int64_t m, std::int64_t n, const std::vector<std::int64_t>& ks,
                                      const double* a, const double* b, const double* c) {
  // Tokens are rows of the [sum K, M] matrix: A_g(i, kk) = a[(k0 + kk) * M + i], an MN-major view.
  return k_grouped(
      m, n, ks, a, b, c, [&](std::int64_t k0, std::int64_t) { return MatrixRef{a + k0 * m, 1, m}; },
      [&](std::int64_t k0, std::int64_t) { return MatrixRef{b + k0 * n, 1, n}; });
}

namespace {

// Both FP8 references: dequantize each operand to its [rows, K] double matrix, then the dense NT GEMM.
template <typename QuantizedA, typename QuantizedB>
std::vector<double> dequantized_gemm(const QuantizedA& a, const QuantizedB& b, const double* c) {
  require(a.groups == 1, "a.groups", "must be 1 (one matrix)", a.groups);
  require(b.groups == 1, "b.groups", "must be 1 (one matrix)", b.groups);
  require(b.cols == a.cols, "b.cols", "must equal a.cols (K)", b.cols);
  const std::vector<double> da = dequantize(a);
  const std::vector<double> db = dequantize(b);
  return gemm(a.rows, b.rows, a.cols, MatrixRef::row_major(da.data(), a.cols), MatrixRef::row_major(db.data(), b.cols),
              c);
}

}  // namespace

std::vector<double> fp8_gemm_1d2d(const PerTokenFp8& a, const PerBlockFp8& b, const double* c) {
  return dequantized_gemm(a, b, c);
}

std::vector<double> fp8_gemm_1d1d(const PerTokenFp8& a, const PerTokenFp8& b, const double* c) {
  return dequantized_gemm(a, b, c);
}

}  // namespace moegemm::reference
