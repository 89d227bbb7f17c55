// moegemm: grouped (Mixture-of-Experts) layouts. Experts ("groups") share N and K; they differ in rows (M-grouped)
// or in the reduction length (K-grouped). Routing tensors live on the device and are read there: no host sync.
// docs/layouts.md has a worked example of each.
#pragma once

#include <cstdint>
#include <vector>

#include "moegemm/types.hpp"

namespace moegemm {

// The default start alignment of experts' segments in the contiguous layout: the kernels' tile rows, so that no
// block of rows holds two experts. (The group-ends form takes others: ContiguousLayout::segment_alignment.)
inline constexpr int kContiguousAlignment = 128;
// The largest ContiguousLayout::segment_alignment.
inline constexpr int kMaxSegmentAlignment = 1024;
// A segment alignment the group-ends form accepts: a power of two from 1 to kMaxSegmentAlignment.
inline constexpr bool is_valid_segment_alignment(int alignment) {
  return alignment >= 1 && alignment <= kMaxSegmentAlignment && (alignment & (alignment - 1)) == 0;
}

// M-grouped contiguous: the tokens of all experts concatenated in A [M_total, K] and D [M_total, N].
struct ContiguousLayout {
  enum class Form : int {
    // index: int32 [M_total]; index[r] = expert of row r, or -1 for a padding row (D row written as zeros).
    // Segments should start at multiples of kContiguousAlignment; where a block of 128 rows holds several
    // experts, it is computed once per expert present (exact, slower). Values >= num_groups, or below -1, are
    // treated as padding (never followed into memory).
    kRowToGroup = 0,
    // index: int32 [G]; index[g] = exclusive end row of expert g (a running sum). Expert g owns rows
    // [align(index[g-1], segment_alignment), index[g]) (0 for g = 0); gap rows belong to nobody and are
    // not written. Ends are clamped to [start, M_total].
    kGroupEnds = 1,
  };
  Form form = Form::kRowToGroup;
  TensorView index;            // int32, contiguous, device
  int expected_m_per_group = 0;  // heuristic hint only; 0 lets the planner use ceil(M_total / G)
  // kGroupEnds: where each expert's segment starts, a power of two from 1 to kMaxSegmentAlignment. 1 packs the
  // tokens of all experts with no padding rows between them (expert g starts at index[g-1]); the default leaves
  // the gaps of the anchor's layout. kRowToGroup: must stay at the default (the index says where every row goes).
  int segment_alignment = kContiguousAlignment;
};

// M-grouped masked: one padded slab per expert, A [G, capacity, K], D [G, capacity, N]. Expert g's valid rows are
// [0, valid_rows[g]), read on the device (values clamped to [0, capacity]); rows at or past the count are never
// written, so D keeps whatever the caller put there.
struct MaskedLayout {
  TensorView valid_rows;  // int32 [G], contiguous, device
  int expected_m = 0;     // heuristic hint: expected valid rows per expert (0: capacity)
};

// K-grouped (weight gradients): expert g reduces over its own K_g tokens.
struct KGroupedLayout {
  std::vector<std::int64_t> ks;  // per-expert K on the host (multiples of 128, zero allowed)
  TensorView ks_device;          // optional int32 [G] device copy; when given, the kernel reads sizes from it
};

}  // namespace moegemm
