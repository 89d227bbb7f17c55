#include "validate/checks.hpp"

#include <climits>
#include <cstdio>

namespace moegemm::validate {

void fail(const std::string& argument, const std::string& rule, const std::string& got, ErrorCode code) {
  throw Error(code, argument + ": " + rule + ", got " + got);
}

// The dimensions a view can hold: a rank outside [0, kMaxRank] is reported, never followed past the arrays.
static int stored_dims(const TensorView& v) { return v.rank < 0 ? 0 : (v.rank > kMaxRank ? kMaxRank : v.rank); }

std::string shape_string(const TensorView& v) {
  std::string s = "[";
  for (int i = 0; i < stored_dims(v); ++i) s += (i ? ", " : "") + std::to_string(v.shape[i]);
  return s + (v.rank > kMaxRank ? ", ...]" : "]");
}

std::string strides_string(const TensorView& v) {
  std::string s = "(";
  for (int i = 0; i < stored_dims(v); ++i) s += (i ? ", " : "") + std::to_string(v.strides[i]);
  return s + (v.rank > kMaxRank ? ", ...)" : ")");
}

std::string pointer_string(const void* p) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%#llx", static_cast<unsigned long long>(reinterpret_cast<std::uintptr_t>(p)));
  return p ? buffer : "nullptr";
}

static std::string dim_string(const char* what, std::int64_t value) { return std::string(what) + " = " +
                                                                             std::to_string(value); }

// ---- Single-property checks ---------------------------------------------------------------------------------

void check_rank(const TensorView& v, const char* name, int rank, const char* shape_names) {
  if (v.rank != rank) {
    fail(name, "must have rank " + std::to_string(rank) + " " + shape_names,
         "rank " + std::to_string(v.rank) + " " + shape_string(v));
  }
}

void check_dtype(const TensorView& v, const char* name, DType dtype) {
  if (v.dtype != dtype) fail(name, std::string("must be ") + to_string(dtype), to_string(v.dtype));
}

void check_sizes_non_negative(const TensorView& v, const char* name) {
  for (int i = 0; i < v.rank; ++i) {
    if (v.shape[i] < 0) fail(name, "sizes must be non-negative", "shape " + shape_string(v));
  }
}

void check_sizes_fit_int(const TensorView& v, const char* name) {
  // The planner and the kernels index with 32-bit integers per dimension, and add up to a tile past the last block.
  for (int i = 0; i < v.rank; ++i) {
    if (v.shape[i] > kMaxIndexedExtent) {
      fail(name, "every size must fit in a 32-bit int with room for a tile (at most " +
                     std::to_string(kMaxIndexedExtent) + ")",
           "shape " + shape_string(v));
    }
  }
}

void check_strides_positive(const TensorView& v, const char* name) {
  if (v.numel() == 0) return;  // an empty view reaches no element, whatever its strides (frameworks leave zeros)
  for (int i = 0; i < v.rank; ++i) {
    if (v.shape[i] > 1 && v.strides[i] <= 0) {
      fail(name, "strides of dimensions of size > 1 must be positive", "strides " + strides_string(v));
    }
  }
}

void check_non_null(const TensorView& v, const char* name) {
  if (v.data == nullptr && v.numel() > 0) fail(name, "data must not be null when the tensor has elements",
                                               "nullptr for " + shape_string(v));
}

void check_pointer_aligned(const TensorView& v, const char* name, std::int64_t bytes, const char* why) {
  const auto address = reinterpret_cast<std::uintptr_t>(v.data);
  if (v.numel() > 0 && address % static_cast<std::uintptr_t>(bytes) != 0) {
    fail(name, "data pointer must be " + std::to_string(bytes) + "-byte aligned (" + why + ")",
         pointer_string(v.data));
  }
}

const std::int32_t* check_int32_vector(const TensorView& v, const char* name, std::int64_t size,
                                       const char* size_names) {
  check_rank(v, name, 1, size_names);
  check_dtype(v, name, DType::kInt32);
  if (v.shape[0] != size) {
    fail(name, std::string("must have ") + size_names + " = " + std::to_string(size) + " elements",
         "shape " + shape_string(v));
  }
  if (v.shape[0] > 1 && v.strides[0] != 1) fail(name, "must be contiguous (stride(0) == 1)", "strides " +
                                                strides_string(v));
  check_non_null(v, name);
  check_pointer_aligned(v, name, 4, "int32 loads");
  return static_cast<const std::int32_t*>(v.data);
}

// ---- Matrix operands --------------------------------------------------------------------------------------------

// TMA's limit on a global stride (cuTensorMapEncodeTiled): below 2^40 bytes.
static constexpr std::int64_t kTmaMaxStrideBytes = std::int64_t{1} << 40;

static std::int64_t round_up(std::int64_t x, std::int64_t step) { return (x + step - 1) / step * step; }

Operand check_matrix(const TensorView& v, const MatrixRule& rule) {
  const char* name = rule.name;
  check_rank(v, name, rule.rank, rule.shape_names);
  check_dtype(v, name, rule.dtype);
  check_sizes_non_negative(v, name);
  check_sizes_fit_int(v, name);
  check_strides_positive(v, name);
  check_non_null(v, name);

  const std::int64_t rows = v.size(-2), cols = v.size(-1);
  const std::int64_t groups = rule.rank == 3 ? v.size(0) : 1;
  // A stride of a dimension of size 1 never reaches a second element, so such a dimension counts as contiguous.
  const bool last_contiguous = cols <= 1 || v.stride(-1) == 1;
  const bool second_contiguous = rows <= 1 || v.stride(-2) == 1;
  const bool allow_last = rule.contiguous != Contiguous::kSecondLast;
  const bool allow_second = rule.contiguous != Contiguous::kLast;

  Operand op;
  op.ptr = v.data;
  op.dtype = v.dtype;
  op.rows = rows;
  op.cols = cols;
  if (allow_last && last_contiguous) {
    op.major = Major::kK;
  } else if (allow_second && second_contiguous) {
    op.major = Major::kMN;
  } else {
    std::string rule_text = "must be ";
    if (allow_last) rule_text += std::string(rule.last_word) + " (stride(-1) == 1)";
    if (allow_last && allow_second) rule_text += " or ";
    if (allow_second) rule_text += std::string(rule.second_word) + " (stride(-2) == 1)";
    fail(name, rule_text, "strides " + strides_string(v));
  }

  const std::size_t element_bytes = element_size(v.dtype);
  const std::int64_t step = kTmaAlignmentBytes / static_cast<std::int64_t>(element_bytes);
  // The leading (non-contiguous) dimension and the extent each of its steps must clear.
  const bool k_major = op.major == Major::kK;
  const int leading_dim = k_major ? rule.rank - 2 : rule.rank - 1;
  const std::int64_t leading_size = k_major ? rows : cols;
  const std::int64_t inner_extent = k_major ? cols : rows;
  if (leading_size > 1) {
    op.ld = v.strides[leading_dim];
    if (op.ld < inner_extent) {
      fail(name, "rows must not overlap (stride(" + std::to_string(leading_dim - rule.rank) + ") >= " +
                     std::to_string(inner_extent) + ")",
           "strides " + strides_string(v));
    }
    if (op.ld % step != 0) {
      fail(name, "leading stride must be a multiple of 16 bytes (TMA): stride(" +
                     std::to_string(leading_dim - rule.rank) + ") * " + std::to_string(element_bytes) +
                     " B % 16 == 0",
           "strides " + strides_string(v));
    }
    if (op.ld >= kTmaMaxStrideBytes / static_cast<std::int64_t>(element_bytes)) {
      fail(name, "leading stride must be below 2^40 bytes (TMA): stride(" + std::to_string(leading_dim - rule.rank) +
                     ") * " + std::to_string(element_bytes) + " B < 2^40",
           "strides " + strides_string(v));
    }
  } else {
    op.ld = round_up(inner_extent > 0 ? inner_extent : 1, step);
  }

  if (rule.rank == 3) {
    // At most 2^31 rows of at most 2^40 bytes: the product can pass int64, and then no stride clears it.
    std::int64_t group_extent = 0;
    const bool extent_overflows = __builtin_mul_overflow(leading_size, op.ld, &group_extent);
    if (groups > 1) {
      op.group_stride = v.strides[0];
      if (extent_overflows || op.group_stride < group_extent) {
        const std::string extent = extent_overflows ? std::to_string(leading_size) + " x " + std::to_string(op.ld)
                                                    : std::to_string(group_extent);
        fail(name, "groups must not overlap (stride(0) >= " + extent + ")",
             "strides " + strides_string(v));
      }
      if (op.group_stride % step != 0) {
        fail(name, "group stride must be a multiple of 16 bytes (TMA): stride(0) * " + std::to_string(element_bytes) +
                       " B % 16 == 0",
             "strides " + strides_string(v));
      }
      if (op.group_stride >= kTmaMaxStrideBytes / static_cast<std::int64_t>(element_bytes)) {
        fail(name, "group stride must be below 2^40 bytes (TMA): stride(0) * " + std::to_string(element_bytes) +
                       " B < 2^40",
             "strides " + strides_string(v));
      }
    } else {
      // One group: the stride never reaches a second one, but it goes into a TMA descriptor, which takes less than
      // 2^40 bytes (a larger extent would be a terabyte-sized tensor; the cap keeps the descriptor valid anyway).
      const std::int64_t cap = kTmaMaxStrideBytes / static_cast<std::int64_t>(element_bytes) - step;
      op.group_stride = extent_overflows || group_extent > cap ? cap : group_extent;
    }
  }
  // The bytes the view spans. Below 2^48 for any tensor that exists; the bound keeps every count derived from the
  // problem (rows, tiles, offsets: on the host and in the kernels' 64-bit scheduler) far from overflowing, whatever
  // the sizes (each below 2^31) and strides (each below 2^40 bytes) a caller passes.
  if (v.numel() > 0) {
    const __int128 span = static_cast<__int128>(element_bytes) *
                          (1 + static_cast<__int128>(groups - 1) * op.group_stride +
                           static_cast<__int128>(leading_size - 1) * op.ld + (inner_extent - 1));
    if (span >= (static_cast<__int128>(1) << 48)) {
      fail(name, "must span less than 2^48 bytes (no device memory is that large)",
           "shape " + shape_string(v) + " strides " + strides_string(v));
    }
  }
  check_pointer_aligned(v, name, kTmaAlignmentBytes, "TMA");
  return op;
}

// ---- Scale tensors ------------------------------------------------------------------------------------------------

void check_scale_dtype(const TensorView& v, const char* name) {
  if (v.dtype == DType::kInt32) {
    fail(name, "UE8M0 packed scales are not supported on SM90 yet (pass FP32 scales)", "int32",
         ErrorCode::kUnsupported);
  }
  check_dtype(v, name, DType::kFloat32);
}

static void check_scale_shape(const TensorView& v, const char* name, std::int64_t groups, std::int64_t mn,
                              std::int64_t k_blocks, const char* shape_names) {
  const int rank = groups > 0 ? 3 : 2;
  check_rank(v, name, rank, shape_names);
  check_scale_dtype(v, name);
  check_sizes_non_negative(v, name);
  const bool ok = v.size(-2) == mn && v.size(-1) == k_blocks && (groups == 0 || v.size(0) == groups);
  if (!ok) {
    std::string want = "[";
    if (groups > 0) want += std::to_string(groups) + ", ";
    want += std::to_string(mn) + ", " + std::to_string(k_blocks) + "]";
    fail(name, std::string("must have shape ") + shape_names + " = " + want, "shape " + shape_string(v));
  }
}

// Whether the view's strides equal `want` on every dimension of size > 1.
static bool strides_match(const TensorView& v, const std::int64_t* want) {
  for (int i = 0; i < v.rank; ++i) {
    if (v.shape[i] > 1 && v.strides[i] != want[i]) return false;
  }
  return true;
}

static std::string strides_text(const std::int64_t* s, int rank) {
  std::string t = "(";
  for (int i = 0; i < rank; ++i) t += (i ? ", " : "") + std::to_string(s[i]);
  return t + ")";
}

ScaleOperand check_scales_mn_major_tma(const TensorView& v, const char* name, std::int64_t groups, std::int64_t mn,
                                       std::int64_t k_blocks, const char* shape_names) {
  check_scale_shape(v, name, groups, mn, k_blocks, shape_names);
  const std::int64_t padded = tma_aligned_size(mn, 4);
  const std::int64_t grouped[3] = {padded * k_blocks, 1, padded};
  const std::int64_t* want = groups > 0 ? grouped : grouped + 1;
  if (!strides_match(v, want)) {
    fail(name,
         std::string("must be MN-major and TMA-aligned: strides exactly ") + strides_text(want, v.rank) +
             (groups > 0 ? " (tma_aligned(cap) * k_blocks, 1, tma_aligned(cap))" : " (1, tma_aligned(MN))"),
         "strides " + strides_string(v));
  }
  check_non_null(v, name);
  check_pointer_aligned(v, name, kTmaAlignmentBytes, "TMA");
  ScaleOperand s;
  s.ptr = static_cast<const float*>(v.data);
  s.k_major = false;
  s.mn = mn;
  s.k_blocks = k_blocks;
  s.mn_stride = 1;
  s.k_stride = padded;
  s.group_stride = groups > 0 ? padded * k_blocks : 0;
  return s;
}

ScaleOperand check_scales_packed(const TensorView& v, const char* name, std::int64_t groups, std::int64_t mn_blocks,
                                 std::int64_t k_blocks, const char* shape_names) {
  check_scale_shape(v, name, groups, mn_blocks, k_blocks, shape_names);
  const std::int64_t packed = mn_blocks * k_blocks;
  const std::int64_t k_major_grouped[3] = {packed, k_blocks, 1};
  const std::int64_t mn_major_grouped[3] = {packed, 1, mn_blocks};
  const int skip = groups > 0 ? 0 : 1;
  ScaleOperand s;
  if (strides_match(v, k_major_grouped + skip)) {
    s.k_major = true;
    s.mn_stride = k_blocks;
    s.k_stride = 1;
  } else if (strides_match(v, mn_major_grouped + skip)) {
    s.k_major = false;
    s.mn_stride = 1;
    s.k_stride = mn_blocks;
  } else {
    fail(name,
         std::string("must be packed K-major, strides ") + strides_text(k_major_grouped + skip, v.rank) +
             ", or packed MN-major, strides " + strides_text(mn_major_grouped + skip, v.rank),
         "strides " + strides_string(v));
  }
  check_non_null(v, name);
  check_pointer_aligned(v, name, 4, "FP32 loads");
  s.ptr = static_cast<const float*>(v.data);
  s.mn = mn_blocks;
  s.k_blocks = k_blocks;
  s.group_stride = groups > 0 ? packed : 0;
  return s;
}

// ---- Shapes and problem-wide rules ---------------------------------------------------------------------------------

void check_same_extent(const char* name, const char* what, std::int64_t value, const char* other_name,
                       std::int64_t other_value) {
  if (value != other_value) {
    fail(name, std::string(what) + " must match " + other_name,
         std::string(name) + " " + dim_string(what, value) + ", " + other_name + " " + dim_string(what, other_value));
  }
}

void check_positive(const char* name, const char* what, std::int64_t value) {
  if (value <= 0) fail(name, std::string(what) + " must be positive", dim_string(what, value));
}

void check_flattened_rows_fit_int(const char* name, std::int64_t groups, std::int64_t rows, const char* rows_name) {
  if (groups > 0 && rows > kMaxIndexedExtent / groups) {
    fail(name, std::string("G x ") + rows_name + " must fit in a 32-bit int with room for a tile (at most " +
                   std::to_string(kMaxIndexedExtent) + ": the kernels index rows of all groups as one int)",
         "got G = " + std::to_string(groups) + ", " + rows_name + " = " + std::to_string(rows));
  }
}

void check_multiple_of(const char* name, const char* what, std::int64_t value, std::int64_t multiple,
                       const char* why) {
  if (value % multiple != 0) {
    fail(name, std::string(what) + " must be a multiple of " + std::to_string(multiple) + " (" + why + ")",
         dim_string(what, value));
  }
}

// The bytes [first, last] a view can touch (numel > 0 and strides non-negative, as checked before).
static void byte_span(const TensorView& v, std::uintptr_t& first, std::uintptr_t& last) {
  std::int64_t extent = 0;
  for (int i = 0; i < v.rank; ++i) extent += (v.shape[i] - 1) * v.strides[i];
  first = reinterpret_cast<std::uintptr_t>(v.data);
  last = first + static_cast<std::uintptr_t>((extent + 1) * static_cast<std::int64_t>(element_size(v.dtype))) - 1;
}

void check_c(const TensorView* c, const TensorView& d, const Operand& d_operand, const MatrixRule& rule,
             GemmProblem& problem) {
  if (c == nullptr) return;
  problem.has_c = true;
  if (c->dtype != d.dtype) fail("c", std::string("must have the dtype of d (") + to_string(d.dtype) + ")",
                                to_string(c->dtype));
  problem.c = check_matrix(*c, rule);
  if (c->rank != d.rank) fail("c", "must have the shape of d", "c " + shape_string(*c) + ", d " + shape_string(d));
  for (int i = 0; i < d.rank; ++i) {
    if (c->shape[i] != d.shape[i]) fail("c", "must have the shape of d", "c " + shape_string(*c) + ", d " +
                                        shape_string(d));
  }
  if (c->numel() == 0) return;
  const bool same_layout = problem.c.ld == d_operand.ld && problem.c.group_stride == d_operand.group_stride &&
                           problem.c.major == d_operand.major;
  if (c->data == d.data && same_layout) {
    problem.c_aliases_d = true;
    return;
  }
  std::uintptr_t c_first, c_last, d_first, d_last;
  byte_span(*c, c_first, c_last);
  byte_span(d, d_first, d_last);
  if (c_first <= d_last && d_first <= c_last) {
    fail("c", "must either be d itself (same pointer and strides) or not overlap d",
         "c at " + pointer_string(c->data) + " strides " + strides_string(*c) + ", d at " + pointer_string(d.data) +
             " strides " + strides_string(d));
  }
}

}  // namespace moegemm::validate
