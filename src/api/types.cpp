#include "moegemm/types.hpp"

#include <cstdint>
#include <sstream>

#include "moegemm/error.hpp"

namespace moegemm {

std::size_t element_size(DType dtype) noexcept {
  switch (dtype) {
    case DType::kFloat8E4M3: return 1;
    case DType::kBFloat16: return 2;
    case DType::kFloat32: return 4;
    case DType::kInt32: return 4;
  }
  return 0;
}

const char* to_string(DType dtype) noexcept {
  switch (dtype) {
    case DType::kFloat8E4M3: return "float8_e4m3";
    case DType::kBFloat16: return "bfloat16";
    case DType::kFloat32: return "float32";
    case DType::kInt32: return "int32";
  }
  return "unknown";
}

static void fill_shape(TensorView& v, std::initializer_list<std::int64_t> shape) {
  if (shape.size() > static_cast<std::size_t>(kMaxRank)) {
    throw Error(ErrorCode::kInvalidArgument, "TensorView: rank must be at most 4, got " + std::to_string(shape.size()));
  }
  v.rank = static_cast<int>(shape.size());
  int i = 0;
  for (auto s : shape) v.shape[i++] = s;
}

TensorView TensorView::contiguous(void* data, DType dtype, std::initializer_list<std::int64_t> shape) {
  TensorView v;
  v.data = data;
  v.dtype = dtype;
  fill_shape(v, shape);
  std::int64_t stride = 1;
  for (int i = v.rank - 1; i >= 0; --i) {
    v.strides[i] = stride;
    // Past int64 the strides saturate (such a view spans more than any memory; the validators refuse it).
    if (__builtin_mul_overflow(stride, v.shape[i], &stride)) stride = INT64_MAX;
  }
  return v;
}

TensorView TensorView::strided(void* data, DType dtype, std::initializer_list<std::int64_t> shape,
                               std::initializer_list<std::int64_t> strides) {
  if (shape.size() != strides.size()) {
    throw Error(ErrorCode::kInvalidArgument, "TensorView: shape and strides must have the same length");
  }
  TensorView v;
  v.data = data;
  v.dtype = dtype;
  fill_shape(v, shape);
  int i = 0;
  for (auto s : strides) v.strides[i++] = s;
  return v;
}

// The dimensions a view holds: a rank outside [0, kMaxRank] is never followed past the arrays.
static int stored_dims(const TensorView& v) { return v.rank < 0 ? 0 : (v.rank > kMaxRank ? kMaxRank : v.rank); }

std::int64_t TensorView::numel() const noexcept {
  // Any view a caller can build gets an answer without overflow: dimensions past kMaxRank do not exist, a size of
  // zero empties the view, a negative size makes it -1, and a product past int64 saturates.
  const int dims = stored_dims(*this);
  bool negative = false;
  for (int i = 0; i < dims; ++i) {
    if (shape[i] == 0) return 0;
    negative = negative || shape[i] < 0;
  }
  if (negative) return -1;
  std::int64_t n = 1;
  for (int i = 0; i < dims; ++i) {
    if (__builtin_mul_overflow(n, shape[i], &n)) return INT64_MAX;
  }
  return n;
}

std::string TensorView::describe() const {
  std::ostringstream os;
  os << to_string(dtype) << "[";
  const int dims = stored_dims(*this);
  for (int i = 0; i < dims; ++i) os << (i ? ", " : "") << shape[i];
  os << "] strides (";
  for (int i = 0; i < dims; ++i) os << (i ? ", " : "") << strides[i];
  os << ")";
  return os.str();
}

}  // namespace moegemm
