// The named checks every validator is built from. Each one throws moegemm::Error with a message of the form
// "<argument>: <rule>, got <value>", so the caller learns which argument broke which rule.
#pragma once

#include <cstdint>
#include <string>

#include "moegemm/error.hpp"
#include "moegemm/gemm.hpp"
#include "validate/problem.hpp"

namespace moegemm::validate {

[[noreturn]] void fail(const std::string& argument, const std::string& rule, const std::string& got,
                       ErrorCode code = ErrorCode::kInvalidArgument);

std::string shape_string(const TensorView& v);    // "[4096, 7168]"
std::string strides_string(const TensorView& v);  // "(7168, 1)"
std::string pointer_string(const void* p);        // "0x10001"

inline constexpr std::int64_t kTmaAlignmentBytes = 16;
// The largest size (and G x rows of the grouped layouts, and sum K) a call may have: the kernels and their scheduler
// index rows, columns and K with 32-bit ints, and add up to a tile's extent (at most 512 rows of a pair, 256 columns)
// and its boxes past the last block; 2^31 - 2^16 leaves that room (tests/cpu/test_scheduler.cpp,
// TheLargestAcceptedExtentsStayInInt).
inline constexpr std::int64_t kMaxIndexedExtent = (std::int64_t{1} << 31) - (std::int64_t{1} << 16);

// ---- Single-property checks ---------------------------------------------------------------------------------
void check_rank(const TensorView& v, const char* name, int rank, const char* shape_names);
void check_dtype(const TensorView& v, const char* name, DType dtype);
void check_sizes_non_negative(const TensorView& v, const char* name);
void check_sizes_fit_int(const TensorView& v, const char* name);
void check_strides_positive(const TensorView& v, const char* name);
void check_non_null(const TensorView& v, const char* name);
void check_pointer_aligned(const TensorView& v, const char* name, std::int64_t bytes, const char* why);
// A rank-1 int32 device tensor of `size` elements, stride 1 (routing tensors, ks_device).
const std::int32_t* check_int32_vector(const TensorView& v, const char* name, std::int64_t size,
                                       const char* size_names);

// ---- Matrix operands --------------------------------------------------------------------------------------------
// Which of the two inner dimensions of a matrix view may be the contiguous one.
enum class Contiguous { kLast, kSecondLast, kEither };

struct MatrixRule {
  const char* name;         // "a.data"
  DType dtype;
  int rank;                 // 2, or 3 for [G, rows, cols]
  const char* shape_names;  // "[M, K]"
  Contiguous contiguous;
  const char* last_word;    // how the docs call "last dimension contiguous": "K-major", "row-major"
  const char* second_word;  // and "second-to-last contiguous": "MN-major"
};

// Rank, dtype, sizes, strides, null pointer, majorness, row and group overlap, 16-byte alignment of the pointer,
// the leading stride and the group stride. Returns the operand with its major (kK: last dimension contiguous) and
// normalised strides.
Operand check_matrix(const TensorView& v, const MatrixRule& rule);

// ---- Scale tensors ------------------------------------------------------------------------------------------------
// FP32 scales; int32 (packed UE8M0) is reported as unsupported rather than as a wrong dtype.
void check_scale_dtype(const TensorView& v, const char* name);

// [mn, k_blocks] (or [G, mn, k_blocks] when groups > 0), MN-major with the MN extent padded to a multiple of 4:
// strides exactly (1, tma_aligned(mn)) and group stride tma_aligned(mn) * k_blocks, read with TMA.
ScaleOperand check_scales_mn_major_tma(const TensorView& v, const char* name, std::int64_t groups, std::int64_t mn,
                                       std::int64_t k_blocks, const char* shape_names);

// [mn_blocks, k_blocks] (or grouped), packed: K-major (strides (k_blocks, 1)) or MN-major (strides (1, mn_blocks)),
// groups packed. Read with plain loads (the 2-D SFB of recipe (1,128,128)).
ScaleOperand check_scales_packed(const TensorView& v, const char* name, std::int64_t groups, std::int64_t mn_blocks,
                                 std::int64_t k_blocks, const char* shape_names);

// ---- Shapes and problem-wide rules ---------------------------------------------------------------------------------
// `what` names the dimension ("K"); both arguments are named in the message.
void check_same_extent(const char* name, const char* what, std::int64_t value, const char* other_name,
                       std::int64_t other_value);
void check_positive(const char* name, const char* what, std::int64_t value);
// The kernels index D's rows as one flattened int (G x rows for masked and k-grouped layouts).
void check_flattened_rows_fit_int(const char* name, std::int64_t groups, std::int64_t rows, const char* rows_name);

void check_multiple_of(const char* name, const char* what, std::int64_t value, std::int64_t multiple,
                       const char* why);

// Optional C: same dtype and shape as D, either D itself (same pointer and strides) or disjoint from it. Fills
// has_c, c_aliases_d and c.
void check_c(const TensorView* c, const TensorView& d, const Operand& d_operand, const MatrixRule& rule,
             GemmProblem& problem);

// options.max_sms, options.pdl and options.config; copies them into the problem.
void check_launch_options(const GemmOptions& options, bool fp8, GemmProblem& problem);

// The problem's rows and columns once every check passed (their sizes fit int); the expected rows per group start
// at M (an m-grouped caller's hint replaces it later); empty: nothing to compute, no launch.
void set_rows_and_columns(GemmProblem& problem, std::int64_t m, std::int64_t n, bool empty);

// options.recipe for the (1,128,128) families; `dense` says whether fp8_gemm_nt_1d1d is the alternative to name.
void check_recipe_1d2d(const ScaleRecipe& recipe, bool dense);
// options.recipe for the (1,1,128) families: the default (1,128,128) is read as "not given".
void check_recipe_1d1d(const ScaleRecipe& recipe);
// options.recipe for BF16: there are no scales, so anything but the default is a caller's mistake.
void check_recipe_none(const ScaleRecipe& recipe);

// ---- Grouped layouts ------------------------------------------------------------------------------------------------
void check_contiguous_layout(const ContiguousLayout& layout, std::int64_t m_total, std::int64_t groups,
                             GemmProblem& problem);
void check_masked_layout(const MaskedLayout& layout, std::int64_t groups, std::int64_t capacity,
                         GemmProblem& problem);
// layout.ks and layout.ks_device; fills ks, k_offsets, k (sum), num_groups and ks_device. Returns sum K.
std::int64_t check_k_grouped_layout(const KGroupedLayout& layout, GemmProblem& problem);

}  // namespace moegemm::validate
