// The normalised description of one GEMM call, produced by the validators (validate.hpp) once every rule has been
// checked. The planner and the launcher read only this: they never look at the caller's TensorViews again, so
// every fact they rely on (majors, strides, group counts, alignment) has been proven on the host first.
#pragma once

#include <cstdint>
#include <vector>

#include "moegemm/config.hpp"
#include "moegemm/layouts.hpp"
#include "moegemm/recipe.hpp"
#include "moegemm/types.hpp"

namespace moegemm::validate {

// Which entry point produced the problem.
enum class Family : int {
  kFp8GemmNt,
  kMGroupedFp8Contiguous,
  kMGroupedFp8Masked,
  kFp8GemmNt1d1d,
  kKGroupedFp8Nt,
  kBf16Gemm,
  kMGroupedBf16Contiguous,
  kMGroupedBf16Masked,
  kKGroupedBf16Tn,
};

// Which kernel template computes it.
enum class Kernel : int { kFp8_1d2d, kFp8_1d1d, kBf16 };

enum class Layout : int { kDense, kContiguousRowToGroup, kContiguousGroupEnds, kMasked, kKGrouped };

// kK: the K dimension is contiguous (stride 1); kMN: the M (or N) dimension is. D and C are always kK (row-major).
enum class Major : int { kK, kMN };

// One matrix operand, [rows, cols] per group. For kK the contiguous dimension is the last one of the caller's view;
// for kMN it is the second to last. Strides are in elements; strides of dimensions of size 1 are normalised (they
// are never used to reach a second element), so the launcher can put them in a TMA descriptor as they are.
struct Operand {
  const void* ptr = nullptr;
  DType dtype = DType::kFloat32;
  Major major = Major::kK;
  std::int64_t rows = 0;          // size of the view's second-to-last dimension (per group)
  std::int64_t cols = 0;          // size of the last dimension
  std::int64_t ld = 0;            // stride of the non-contiguous of the two inner dimensions; 0 for packed buffers
  std::int64_t group_stride = 0;  // elements between groups; 0 for 2-D operands and packed k-grouped buffers
};

// An FP32 scale tensor, logically [mn, k_blocks] (per group when grouped).
struct ScaleOperand {
  const float* ptr = nullptr;
  bool k_major = false;           // true: k-blocks contiguous (k_stride == 1); false: MN-major (mn_stride == 1)
  std::int64_t mn = 0;            // rows (M or N) or, for the 2-D SFB of recipe (1,128,128), ceil(N / 128)
  std::int64_t k_blocks = 0;      // ceil(K / 128) (sum K / 128 for k-grouped)
  std::int64_t mn_stride = 0;     // elements between consecutive MN entries
  std::int64_t k_stride = 0;      // elements between consecutive k-blocks
  std::int64_t group_stride = 0;  // elements between groups (0 when not grouped)
};

struct GemmProblem {
  Family family = Family::kFp8GemmNt;
  Kernel kernel = Kernel::kFp8_1d2d;
  Layout layout = Layout::kDense;

  // m is M (dense), M_total (contiguous), capacity (masked) or M (k-grouped). k is sum K for k-grouped.
  int m = 0, n = 0, k = 0;
  int num_groups = 1;

  Operand a, b, d;
  bool has_c = false;       // a C distinct from D or aliasing it; when false, see accumulate_into_d
  bool c_aliases_d = false; // C is D itself (same pointer, shape and strides): the kernel reduce-adds in place
  Operand c;
  // Without C, the FP32-output families (FP8 1D1D, both K-grouped) compute D += A @ B^T, reading D (gemm.hpp);
  // the others overwrite D.
  bool accumulate_into_d = false;

  bool has_scales = false;
  ScaleRecipe recipe = kRecipe1x128x128;
  ScaleOperand sfa, sfb;

  // M-grouped routing (device pointers, int32).
  const std::int32_t* routing = nullptr;  // contiguous: layout.index; masked: layout.valid_rows
  int expected_m = 0;                     // per-group rows hint, defaults resolved (never 0 unless m == 0)
  int segment_alignment = kContiguousAlignment;  // contiguous group ends: where each expert's segment starts

  // K-grouped sizes (host) and where every expert's K starts in the concatenated K.
  std::vector<std::int64_t> ks;
  std::vector<std::int64_t> k_offsets;           // k_offsets[g] = K_0 + ... + K_{g-1}
  const std::int32_t* ks_device = nullptr;       // optional device copy of ks

  // Nothing to compute (M == 0, capacity 0, or every K_g == 0): no GEMM launch. When has_c && !c_aliases_d the
  // launcher still owes D = C.
  bool empty = false;

  int max_sms = 0;                         // 0: the process-wide setting (the device bound is checked later)
  int pdl = -1;                            // -1: the process-wide setting
  const KernelConfig* config = nullptr;    // caller's override, already checked by check_config
};

}  // namespace moegemm::validate
