// Reference GEMMs: every output element is one double sum over k in increasing order, so results do not depend on
// the thread count; threads split the output rows (or elements) statically.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "moegemm/layouts.hpp"
#include "moegemm/reference.hpp"
#include "reference/checks.hpp"
#include "reference/parallel.hpp"

namespace moegemm::reference {
namespace {

using detail::parallel_for;
using detail::require;

std::size_t to_size(std::int64_t x) { return static_cast<std::size_t>(x); }

double dot(MatrixRef a, std::int64_t i, MatrixRef b, std::int64_t j, std::int64_t k) {
  const double* pa = a.data + i * a.row_stride;
  const double* pb = b.data + j * b.row_stride;
  double sum = 0.0;
  for (std::int64_t kk = 0; kk < k; ++kk) sum += pa[kk * a.col_stride] * pb[kk * b.col_stride];
  return sum;
}

// out[0..n) = A row i @ B^T (B with n rows).
void row_times_transpose(MatrixRef a, std::int64_t i, MatrixRef b, std::int64_t n, std::int64_t k, double* out) {
  for (std::int64_t j = 0; j < n; ++j) out[j] = dot(a, i, b, j, k);
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
  // Splitting elements rather than rows keeps every thread busy for m = 1 as well.
  parallel_for(m * n, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t e = begin; e < end; ++e) {
      const std::int64_t i = e / n;
      const std::int64_t j = e % n;
      d[to_size(e)] = (c != nullptr ? c[e] : 0.0) + dot(a, i, b, j, k);
    }
  });
  return d;
}

GroupedResult m_grouped_contiguous_row_to_group(std::int64_t m_total, std::int64_t n, std::int64_t k, MatrixRef a,
                                                BatchedMatrixRef b, std::int64_t groups, const std::int32_t* index) {
  check_sizes(m_total, n, k);
  check_groups(groups, index, "index");
  check_operand(a.data, "a.data", k > 0);
  check_operand(b.matrix.data, "b.matrix.data", k > 0);
  GroupedResult result{std::vector<double>(to_size(m_total * n), 0.0), std::vector<std::uint8_t>(to_size(m_total), 1)};
  parallel_for(m_total, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t r = begin; r < end; ++r) {
      const std::int64_t g = index[r];
      if (g < 0 || g >= groups) continue;  // padding: the row stays 0, and counts as written
      row_times_transpose(a, r, b[g], n, k, result.d.data() + r * n);
    }
  });
  return result;
}

GroupedResult m_grouped_contiguous_group_ends(std::int64_t m_total, std::int64_t n, std::int64_t k, MatrixRef a,
                                              BatchedMatrixRef b, std::int64_t groups, const std::int32_t* ends) {
  check_sizes(m_total, n, k);
  check_groups(groups, ends, "ends");
  check_operand(a.data, "a.data", k > 0);
  check_operand(b.matrix.data, "b.matrix.data", k > 0);
  // owner[r] = the expert that owns row r, or -1. Starts never decrease, so experts' row ranges are disjoint.
  std::vector<std::int64_t> owner(to_size(m_total), -1);
  std::int64_t previous_end = 0;
  for (std::int64_t g = 0; g < groups; ++g) {
    const std::int64_t start = std::min(align_up(previous_end, kContiguousAlignment), m_total);
    const std::int64_t end = std::clamp<std::int64_t>(ends[g], start, m_total);
    for (std::int64_t r = start; r < end; ++r) owner[to_size(r)] = g;
    previous_end = end;
  }
  GroupedResult result{std::vector<double>(to_size(m_total * n), 0.0), std::vector<std::uint8_t>(to_size(m_total), 0)};
  parallel_for(m_total, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t r = begin; r < end; ++r) {
      const std::int64_t g = owner[to_size(r)];
      if (g < 0) continue;
      row_times_transpose(a, r, b[g], n, k, result.d.data() + r * n);
      result.written[to_size(r)] = 1;
    }
  });
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
  parallel_for(rows, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t flat_row = begin; flat_row < end; ++flat_row) {
      const std::int64_t g = flat_row / capacity;
      const std::int64_t r = flat_row % capacity;
      const std::int64_t valid = std::clamp<std::int64_t>(counts[g], 0, capacity);
      if (r >= valid) continue;
      row_times_transpose(a[g], r, b[g], n, k, result.d.data() + flat_row * n);
      result.written[to_size(flat_row)] = 1;
    }
  });
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
