// The one dense kernel under every reference GEMM: cache-blocked and register-tiled, yet each output element is
// still 0 + a_0 b_0 + a_1 b_1 + ... added in increasing k, exactly like the textbook loop. Blocking over k only
// parks the partial sum in memory between chunks, so results are bit-identical whatever the tiling, the thread
// count or the operand majors.
#pragma once

#include <cstdint>

#include "moegemm/reference.hpp"

namespace moegemm::reference::detail {

// d[i * ldd + j] = sum_k A(i, k) * B(j, k) for i < m, j < n (overwrites d).
void product_nt(std::int64_t m, std::int64_t n, std::int64_t k, MatrixRef a, MatrixRef b, double* d,
                std::int64_t ldd);

}  // namespace moegemm::reference::detail
