// Error metrics between a result and its reference, in double.
#include <cmath>
#include <cstddef>
#include <limits>

#include "moegemm/reference.hpp"
#include "reference/checks.hpp"

namespace moegemm::reference {

double calc_diff(const double* x, const double* y, std::size_t n) {
  detail::require(n == 0 || (x != nullptr && y != nullptr), "x, y", "must not be null when n > 0", n);
  double cross = 0.0;
  double squares = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    cross += x[i] * y[i];
    squares += x[i] * x[i] + y[i] * y[i];
  }
  if (squares == 0.0) return 0.0;
  return 1.0 - 2.0 * cross / squares;
}

double relative_l2_error(const double* x, const double* ref, std::size_t n) {
  detail::require(n == 0 || (x != nullptr && ref != nullptr), "x, ref", "must not be null when n > 0", n);
  double error = 0.0;
  double norm = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    const double delta = x[i] - ref[i];
    error += delta * delta;
    norm += ref[i] * ref[i];
  }
  if (error == 0.0) return 0.0;
  if (norm == 0.0) return std::numeric_limits<double>::infinity();
  return std::sqrt(error / norm);
}

}  // namespace moegemm::reference
