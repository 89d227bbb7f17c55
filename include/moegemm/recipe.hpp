// moegemm: FP8 scaling recipes and scale-factor formats.
//
// A recipe (gran_m, gran_n, gran_k) says how many rows of A, columns of D (rows of B) and K elements share one
// scale factor. moegemm implements the two recipes DeepSeek-style models use:
//   (1, 128, 128): A per token x 128 K ("1D"), B per 128x128 block ("2D")    -> inference, dgrad
//   (1,   1, 128): A and B per row x 128 K ("1D1D")                            -> weight gradients
// See docs/scale-formats.md for the exact tensor layouts each recipe consumes.
#pragma once

namespace moegemm {

struct ScaleRecipe {
  int gran_m = 1;
  int gran_n = 128;
  int gran_k = 128;
  friend bool operator==(const ScaleRecipe&, const ScaleRecipe&) = default;
};

inline constexpr ScaleRecipe kRecipe1x128x128{1, 128, 128};
inline constexpr ScaleRecipe kRecipe1x1x128{1, 1, 128};

// The element type of scale tensors. FP32 today; UE8M0 (power-of-two exponents packed four per int32, the
// Blackwell format) is reserved so that the enum and the validators already have a place for it.
enum class ScaleFormat : int {
  kFloat32 = 0,
  kUE8M0Packed = 1,  // reserved: rejected with ErrorCode::kUnsupported
};

// Scale tensors are read with TMA, whose global strides must be multiples of 16 bytes: the MN extent of an
// MN-major FP32 scale tensor is padded to a multiple of 4 (16 bytes / sizeof(float)).
inline constexpr long long tma_aligned_size(long long x, long long element_bytes) {
  const long long step = 16 / element_bytes;
  return (x + step - 1) / step * step;
}

}  // namespace moegemm
