// The passes of one tile of the SM90 GEMM (sm90/gemm.cuh): the scheduler's group, or for row-to-group the experts
// present in the tile's rows, found by a whole warp; and warp_uniform, which tells the compiler a value is the same
// in every lane.
#pragma once

#include "common/platform.cuh"
#include "common/scheduler.cuh"
#include "sm90/gemm_params.cuh"
#include "sm90/ptx.cuh"

namespace moegemm::kernels::sm90 {

// A value every lane of the warp holds, taken from lane 0 so that the compiler knows it is warp-uniform. Values
// derived from memory reads (routing, k-grouped sizes) are not provably uniform otherwise, and a main loop under a
// branch or trip count that is not provably uniform leaves the uniform datapath: its WGMMA descriptors are then
// rebuilt in vector registers every K block (scripts/sass_loops.sh shows it as R2UR in the K loop).
MOEGEMM_DEVICE int warp_uniform(int value) { return __shfl_sync(0xffffffffu, value, 0); }

// first_group_in_rows / next_group_in_rows (common/scheduler.cuh, the specification) computed by a whole warp: each
// lane scans every 32nd row, then a min-reduction. One scan yields the two smallest valid groups above `after`,
// so a tile with one or two experts (nearly all of them) needs a single scan: each scan is a global-memory round
// trip on the way into or out of a tile. All 32 lanes must call it; all get the same answer (-1: none).
struct GroupPair {
  int first, second;  // the smallest valid group above `after`, and the next one
  bool padding;       // some row of [begin, end) holds no valid group
};

MOEGEMM_DEVICE GroupPair warp_next_groups_in_rows(const int* routing, int begin, int end, int num_groups, int after) {
  constexpr int kNone = 0x7fffffff;
  int lo = kNone, hi = kNone;  // lo < hi, or hi == kNone
  bool padding = false;
  // Branch-free (selects and min): written with if/else, each insertion compiled to a branch with its own
  // convergence barrier, about ten instructions, fourteen of them per scan in every warp of the tile.
  auto insert = [&](int g) {  // g == kNone: no change
    g = g == lo ? kNone : g;         // already held
    hi = min_of(hi, max_of(lo, g));  // the second smallest of lo, hi, g
    lo = min_of(lo, g);
  };
  // Four loads per lane in flight before any is compared: a 128-row tile costs one memory round trip, not four.
  for (int base = begin + static_cast<int>(lane_index()); base < end; base += 4 * 32) {
    int values[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) values[i] = base + 32 * i < end ? routing[base + 32 * i] : -1;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const bool valid = is_valid_group(values[i], num_groups);
      padding = padding || (!valid && base + 32 * i < end);
      insert(valid && values[i] > after ? values[i] : kNone);
    }
  }
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) {
    const int other_lo = __shfl_xor_sync(0xffffffffu, lo, offset);
    const int other_hi = __shfl_xor_sync(0xffffffffu, hi, offset);
    insert(other_lo);
    insert(other_hi);
  }
  // Every lane holds the same values now (warp_uniform tells the compiler).
  lo = warp_uniform(lo);
  hi = warp_uniform(hi);
  return {lo == kNone ? -1 : lo, hi == kNone ? -1 : hi, __any_sync(0xffffffffu, padding)};
}

// The passes over one tile: the scheduler's group, or for row-to-group the experts present in ascending order,
// found by the warp. `upcoming` caches the pass after `current` when the last scan saw it; negative: none, and
// kUniformTile says besides that every row of the tile is of expert `current` (one pass, no padding row), so that
// each row's store decision follows from the tile's rows alone (row_action_in): row-to-group epilogues then read no
// routing. (Kept in `upcoming` rather than a flag of its own: one more value live through the K loop made the BF16
// 256x128 row-to-group kernel spill.) The other layouts' row_action reads no routing either.
template <GroupedKind kLayout>
struct TilePasses {
  static constexpr int kUniformTile = -2;
  int current = -1;
  int upcoming = -1;

  MOEGEMM_DEVICE bool uniform() const {
    return kLayout != GroupedKind::kContiguousRowToGroup || upcoming == kUniformTile;
  }

  MOEGEMM_DEVICE void start(const SchedulerProblem& p, const TileWork& w) {
    if constexpr (kLayout == GroupedKind::kContiguousRowToGroup) {
      const GroupPair groups = warp_next_groups_in_rows(p.routing, w.row_begin, w.row_limit, p.num_groups, -1);
      current = groups.first;
      upcoming = current >= 0 && groups.second < 0 && !groups.padding ? kUniformTile : groups.second;
    } else {
      current = warp_uniform(w.group);
    }
  }

  // The tile ring's slot (gemm_tile_ring): what start() found, packed by the producer warp that ran it.
  MOEGEMM_DEVICE static void pack(const TilePasses& t, u32& word0, u32& word1) {
    word0 = static_cast<u32>(t.current);
    word1 = static_cast<u32>(t.upcoming);
  }
  MOEGEMM_DEVICE void unpack(u32 word0, u32 word1) {
    current = warp_uniform(static_cast<int>(word0));
    upcoming = warp_uniform(static_cast<int>(word1));
  }

  // row_action (common/scheduler.cuh) for this pass: on a uniform tile from the row's place alone.
  MOEGEMM_DEVICE RowAction row_action_in(const SchedulerProblem& p, const TileWork& w, bool first_pass,
                                         int row) const {
    if (uniform())
      return row >= w.row_begin && row < w.row_limit ? RowAction::kStoreAccumulator : RowAction::kSkip;
    return row_action(p, w, current, first_pass, row);
  }

  // Moves to the next pass; false when the tile is done.
  MOEGEMM_DEVICE bool advance(const SchedulerProblem& p, const TileWork& w) {
    if constexpr (kLayout == GroupedKind::kContiguousRowToGroup) {
      if (current < 0 || upcoming < 0) return false;
      // A third expert can only follow the second if it also lies in these rows: scan again from the second.
      const GroupPair groups = warp_next_groups_in_rows(p.routing, w.row_begin, w.row_limit, p.num_groups, upcoming);
      current = upcoming;
      upcoming = groups.first;
      return true;
    } else {
      return false;
    }
  }
};

}  // namespace moegemm::kernels::sm90
