#include "reference/blocked_gemm.hpp"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "reference/parallel.hpp"

namespace moegemm::reference::detail {
namespace {

constexpr std::int64_t kTileRows = 64;  // a tile of A and of B, kChunk long, stays in L2 while it is reused
constexpr std::int64_t kTileCols = 64;
constexpr std::int64_t kChunk = 256;
constexpr std::int64_t kMicroRows = 4;  // kMicroRows x kMicroCols independent accumulators hide the add latency
constexpr std::int64_t kMicroCols = 4;

std::size_t to_size(std::int64_t x) { return static_cast<std::size_t>(x); }

// A packed copy of A (m x k) with K contiguous: row i at i * k.
std::vector<double> pack_rows(MatrixRef a, std::int64_t m, std::int64_t k) {
  std::vector<double> packed(to_size(m * k));
  parallel_for(m, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t i = begin; i < end; ++i)
      for (std::int64_t kk = 0; kk < k; ++kk) packed[to_size(i * k + kk)] = a.at(i, kk);
  });
  return packed;
}

// B (n x k) in panels of kMicroCols rows, interleaved along K: element (j, kk) at
// (j / kMicroCols) * k * kMicroCols + kk * kMicroCols + j % kMicroCols, the last panel padded with zeros. The
// kMicroCols values one k step needs are adjacent, so the compiler can keep them in one vector register.
std::vector<double> pack_panels(MatrixRef b, std::int64_t n, std::int64_t k) {
  const std::int64_t panels = (n + kMicroCols - 1) / kMicroCols;
  std::vector<double> packed(to_size(panels * k * kMicroCols), 0.0);
  parallel_for(panels, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t p = begin; p < end; ++p)
      for (std::int64_t c = 0; c < kMicroCols && p * kMicroCols + c < n; ++c)
        for (std::int64_t kk = 0; kk < k; ++kk)
          packed[to_size((p * k + kk) * kMicroCols + c)] = b.at(p * kMicroCols + c, kk);
  });
  return packed;
}

// acc (rows x kMicroCols, rows <= kMicroRows) += A rows [k0, k1) x one B panel, term by term in increasing k.
template <int kRows>
void micro_tile(const double* a, std::int64_t lda, const double* panel, std::int64_t k0, std::int64_t k1,
                double (&acc)[kMicroRows][kMicroCols]) {
  double sum[kRows][kMicroCols];  // a local copy: provably not aliased by a or panel, so it stays in registers
  for (int r = 0; r < kRows; ++r)
    for (int c = 0; c < kMicroCols; ++c) sum[r][c] = acc[r][c];
  for (std::int64_t kk = k0; kk < k1; ++kk) {
    const double* bv = panel + kk * kMicroCols;
    for (int r = 0; r < kRows; ++r) {
      const double av = a[r * lda + kk];
      for (int c = 0; c < kMicroCols; ++c) sum[r][c] += av * bv[c];
    }
  }
  for (int r = 0; r < kRows; ++r)
    for (int c = 0; c < kMicroCols; ++c) acc[r][c] = sum[r][c];
}

}  // namespace

void product_nt(std::int64_t m, std::int64_t n, std::int64_t k, MatrixRef a, MatrixRef b, double* d,
                std::int64_t ldd) {
  if (m <= 0 || n <= 0) return;
  if (k <= 0) {
    for (std::int64_t i = 0; i < m; ++i) std::fill(d + i * ldd, d + i * ldd + n, 0.0);
    return;
  }
  const std::vector<double> pa = pack_rows(a, m, k);
  const std::vector<double> pb = pack_panels(b, n, k);
  const std::int64_t tiles_m = (m + kTileRows - 1) / kTileRows;
  const std::int64_t tiles_n = (n + kTileCols - 1) / kTileCols;
  // One thread owns each output tile for the whole K loop, so no element is shared between threads.
  parallel_for(tiles_m * tiles_n, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t t = begin; t < end; ++t) {
      const std::int64_t i0 = t / tiles_n * kTileRows, i1 = std::min(m, i0 + kTileRows);
      const std::int64_t j0 = t % tiles_n * kTileCols, j1 = std::min(n, j0 + kTileCols);
      for (std::int64_t i = i0; i < i1; ++i) std::fill(d + i * ldd + j0, d + i * ldd + j1, 0.0);
      for (std::int64_t k0 = 0; k0 < k; k0 += kChunk) {
        const std::int64_t k1 = std::min(k, k0 + kChunk);
        for (std::int64_t i = i0; i < i1; i += kMicroRows) {
          const std::int64_t rows = std::min(kMicroRows, i1 - i);
          const double* a_rows = pa.data() + i * k;
          for (std::int64_t j = j0; j < j1; j += kMicroCols) {
            const std::int64_t cols = std::min(kMicroCols, j1 - j);
            const double* panel = pb.data() + j / kMicroCols * k * kMicroCols;
            // The partial sums live in d between K chunks; padded panel columns are computed and dropped.
            double acc[kMicroRows][kMicroCols] = {};
            for (std::int64_t r = 0; r < rows; ++r)
              for (std::int64_t c = 0; c < cols; ++c) acc[r][c] = d[(i + r) * ldd + j + c];
            if (rows == kMicroRows) {
              micro_tile<kMicroRows>(a_rows, k, panel, k0, k1, acc);
            } else {
              for (std::int64_t r = 0; r < rows; ++r) {
                double single[kMicroRows][kMicroCols] = {};
                for (int c = 0; c < kMicroCols; ++c) single[0][c] = acc[r][c];
                micro_tile<1>(a_rows + r * k, k, panel, k0, k1, single);
                for (int c = 0; c < kMicroCols; ++c) acc[r][c] = single[0][c];
              }
            }
            for (std::int64_t r = 0; r < rows; ++r)
              for (std::int64_t c = 0; c < cols; ++c) d[(i + r) * ldd + j + c] = acc[r][c];
          }
        }
      }
    }
  });
}

}  // namespace moegemm::reference::detail
