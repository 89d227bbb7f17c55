// The one tile scheduler: which output tile a persistent CTA computes next, and which rows of that tile it may
// store. Every SM90 kernel includes this file unchanged (through NVRTC) and the CPU tests include the same file,
// so the mapping the tests prove is the mapping the kernels run. docs/scheduler.md explains it with an example.
//
// No standard or CUDA headers (NVRTC sees only ours): int, unsigned and long long only.
#pragma once

#include "common/platform.cuh"

namespace moegemm::kernels {

// Expert segments of the contiguous group-ends layout start at multiples of a segment alignment (TileIteratorFor): by
// default this many rows (the public kContiguousAlignment; repeated here because kernels cannot include the public
// headers), 1 for tokens packed without gaps.
inline constexpr int kGroupEndsAlignment = 128;
// The largest segment alignment (a power of two) the group-ends layout accepts.
inline constexpr int kMaxSegmentAlignment = 1024;

// pick_raster_band tries the bands 1, 2, 4, ... up to this.
inline constexpr int kMaxRasterBand = 16;

enum class GroupedKind : int {
  kDense = 0,                 // one GEMM: D [M, N]
  kContiguousRowToGroup = 1,  // D [M_total, N]; routing[r] = expert of row r (-1 or out of range: padding)
  kContiguousGroupEnds = 2,   // D [M_total, N]; routing[g] = exclusive end row of expert g (a running sum)
  kMasked = 3,                // D [G, rows, N]; routing[g] = valid rows of expert g
  kKGrouped = 4,              // D [G, M, N]; routing[g] = K_g, the reduction length of expert g
};

struct SchedulerProblem {
  GroupedKind kind = GroupedKind::kDense;
  int num_groups = 1;  // G (1 for dense)
  int rows = 0;        // dense: M; contiguous: M_total; masked: capacity per group; k-grouped: M
  int n = 0;
  int k = 0;  // dense and m-grouped: K; k-grouped: total K capacity (sum of the K_g is clamped to it)
  int block_m = 128;
  int block_n = 128;
  int band = 8;                  // rasterisation band: m-blocks per band (values below 1 act as 1)
  const int* routing = nullptr;  // int32 [rows] (row-to-group) or [G] (other grouped kinds); unused for dense
  // K-grouped only: experts with K_g = 0 still get their tiles, with an empty reduction, so that the epilogue
  // writes D[g] = C[g] from a C distinct from D (without it they get none, and D[g] is left as it is).
  int kgrouped_empty_experts_store = 0;
};

// One output tile. Rows are in D's flattened row space: [M] dense, [M_total] contiguous, [G * rows] masked,
// [G * M] k-grouped. The tile covers rows [row_begin, row_begin + block_m) and columns [n_begin, n_begin + block_n);
// only rows below row_limit (and that row_action accepts) and columns below n are ever stored.
struct TileWork {
  int group;  // expert whose B the MMA uses; row-to-group: the first pass's expert (-1: no valid row)
  int m_block;  // m-block inside the group's segment
  int n_block;
  int row_begin;
  int row_limit;  // exclusive; never past the group's valid rows
  int a_row;  // row coordinate for loading A ([rows_total, K] m-grouped; [M, K_total] k-grouped)
  int b_row;  // row coordinate of B in a flattened [G * N, K] (k-grouped: [N, K_total])
  int n_begin;
  int k_begin;  // first K index of the reduction (k-grouped: the expert's offset in K_total)
  int k_len;  // reduction length (k-grouped: K_g)
};

struct BlockCoord {
  int m_block;
  int n_block;
};

// The tile at index i (0 <= i < m_blocks * n_blocks) inside one group. Tiles go in bands of `band` m-blocks; inside
// a band the m-block varies fastest, so CTAs running side by side share B tiles (one n-block) and a band's A rows.
MOEGEMM_HD BlockCoord rasterize(int i, int m_blocks, int n_blocks, int band) {
  // One block of rows (decode, and masked experts of a few tokens): what the general case below computes, without
  // its two run-time divisions on the way to a kernel's first copy.
  if (m_blocks == 1) return BlockCoord{0, i};
  band = min_of(max_of(band, 1), max_of(m_blocks, 1));
  const int band_tiles = band * n_blocks;
  const int band_index = i / band_tiles;
  const int band_size = min_of(band, m_blocks - band_index * band);
  const int local = i - band_index * band_tiles;
  return BlockCoord{band_index * band + local % band_size, local / band_size};
}

MOEGEMM_HD bool is_valid_group(int value, int num_groups) { return value >= 0 && value < num_groups; }

// Row-to-group passes. A block of rows may hold several experts (when the caller did not align segments) and
// padding rows. The kernel computes the block once per distinct valid expert, in ascending order; these two
// functions enumerate those experts. They are the specification: a kernel may compute the same values with a
// warp reduction, but must agree with these.
MOEGEMM_HD int first_group_in_rows(const int* routing, int begin, int end, int num_groups) {
  int best = -1;
  for (int r = begin; r < end; ++r) {
    const int g = routing[r];
    if (is_valid_group(g, num_groups) && (best < 0 || g < best)) best = g;
  }
  return best;
}

// The smallest valid expert above `after` present in rows [begin, end), or -1.
MOEGEMM_HD int next_group_in_rows(const int* routing, int begin, int end, int num_groups, int after) {
  int best = -1;
  for (int r = begin; r < end; ++r) {
    const int g = routing[r];
    if (is_valid_group(g, num_groups) && g > after && (best < 0 || g < best)) best = g;
  }
  return best;
}

// What the epilogue does with one row of a tile in one pass.
enum class RowAction : int {
  kSkip = 0,              // not this pass's row, or not a valid row at all: leave D untouched
  kStoreAccumulator = 1,  // store the pass's result (C + A.B^T where C applies)
  kStoreZeros = 2,        // row-to-group padding row: store zeros (once, in the first pass)
};

// The one store decision, shared by the kernels' epilogues and the CPU tests. `row` is in D's flattened row space.
// Every kind but row-to-group has a single pass (pass_group = work.group, first_pass = true).
MOEGEMM_HD RowAction row_action(const SchedulerProblem& p, const TileWork& work, int pass_group, bool first_pass,
                                int row) {
  if (row < work.row_begin || row >= work.row_limit) return RowAction::kSkip;
  if (p.kind != GroupedKind::kContiguousRowToGroup) return RowAction::kStoreAccumulator;
  const int g = p.routing[row];
  if (is_valid_group(g, p.num_groups)) return g == pass_group ? RowAction::kStoreAccumulator : RowAction::kSkip;
  return first_pass ? RowAction::kStoreZeros : RowAction::kSkip;
}

// How an epilogue that stores D through TMA (dense, group-ends and masked tiles) stores the 64-row wave starting at
// row `first_row` of a tile whose rows end at `row_limit`: 64 or more, the copy engine takes the whole 64-row box,
// dropping its rows past D's extents (dense M; masked, each group's capacity); 1 to 63, the threads store that many
// first rows; 0 or less, nothing. For the dense layout row_limit is M itself, so every wave goes whole (and
// row_limit is not read). Together the waves store exactly the rows row_action accepts (tests/cpu/test_scheduler.cpp
// checks it on every simulated tile).
MOEGEMM_HD int tma_wave_rows(GroupedKind kind, int row_limit, int first_row) {
  return kind == GroupedKind::kDense ? 64 : row_limit - first_row;
}

// Whether the 64-row wave starting `wave_row0` rows into a tile holds any of the tile's rows: a wave without rows
// stores nothing (row_action rejects every row of it), so a masked or group-ends 256-row tile runs neither its
// WGMMAs nor its epilogue (sm90/gemm.cuh, kSkipEmptyWaves; tests/cpu/test_scheduler.cpp checks that no accepted row
// lies in such a wave).
MOEGEMM_HD bool wave_has_rows(const TileWork& work, int wave_row0) {
  return work.row_limit > work.row_begin + wave_row0;
}

// The pass after the one for `pass_group`, or -1 when the tile is done. Kernel loop:
//   for (int g = work.group, first = 1;; first = 0) { compute and store pass g; g = next_pass_group(p, work, g);
//                                                     if (g < 0) break; }
MOEGEMM_HD int next_pass_group(const SchedulerProblem& p, const TileWork& work, int pass_group) {
  if (p.kind != GroupedKind::kContiguousRowToGroup || pass_group < 0) return -1;
  return next_group_in_rows(p.routing, work.row_begin, work.row_limit, p.num_groups, pass_group);
}

// Row of B ([G * N, K] flattened) for a pass; meaningful only for pass_group >= 0 (a pass of -1 runs no MMA).
MOEGEMM_HD int pass_b_row(GroupedKind kind, int n, const TileWork& work, int pass_group) {
  if (kind == GroupedKind::kKGrouped || pass_group < 0) return work.n_begin;
  return pass_group * n + work.n_begin;
}
MOEGEMM_HD int pass_b_row(const SchedulerProblem& p, const TileWork& work, int pass_group) {
  return pass_b_row(p.kind, p.n, work, pass_group);
}

// A segment alignment the group-ends layout accepts: a power of two from 1 to kMaxSegmentAlignment.
MOEGEMM_HD constexpr bool is_segment_alignment(int a) {
  return a >= 1 && a <= kMaxSegmentAlignment && (a & (a - 1)) == 0;
}

// The first row of a group-ends segment whose predecessor ended at `previous_end` (0 <= previous_end <= rows),
// never past the rows; with an alignment is_segment_alignment refuses, the rows' end (every segment empty, no
// tiles). Unsigned: the rounding may pass INT_MAX where rows is close to it, never 2^32.
MOEGEMM_HD int segment_begin(int previous_end, int alignment, int rows) {
  if (!is_segment_alignment(alignment)) return rows;
  const unsigned mask = static_cast<unsigned>(alignment) - 1u;
  return static_cast<int>(min_of((static_cast<unsigned>(previous_end) + mask) & ~mask, static_cast<unsigned>(rows)));
}

// Shapes the scheduler cannot work with. The host rejects these before launch with a proper error; on the device
// a malformed problem simply yields no tiles (no division by zero, no routing read).
MOEGEMM_HD bool scheduler_problem_is_well_formed(const SchedulerProblem& p) {
  const bool grouped = p.kind != GroupedKind::kDense;
  if (p.block_m <= 0 || p.block_n <= 0 || p.rows < 0 || p.n < 0 || p.k < 0 || p.num_groups < 0) return false;
  if (p.kind == GroupedKind::kDense && p.num_groups != 1) return false;
  if (grouped && p.num_groups > 0 && p.routing == nullptr) return false;
  return static_cast<int>(p.kind) >= 0 && static_cast<int>(p.kind) <= static_cast<int>(GroupedKind::kKGrouped);
}

// Rows of D's flattened row space: the extent stores are bounded by (G times the first extent where D is 3-D).
MOEGEMM_HD long long flattened_rows(const SchedulerProblem& p) {
  if (p.kind == GroupedKind::kMasked || p.kind == GroupedKind::kKGrouped) {
    return static_cast<long long>(p.num_groups) * p.rows;
  }
  return p.rows;
}

// An upper bound on the number of work items from shapes alone (routing is on the device): grid sizing.
MOEGEMM_HD long long max_work_items(const SchedulerProblem& p) {
  if (!scheduler_problem_is_well_formed(p) || p.num_groups == 0) return 0;
  const long long n_blocks = ceil_div(p.n, p.block_n);
  const long long m_blocks = ceil_div(p.rows, p.block_m);
  switch (p.kind) {
    case GroupedKind::kDense:
    case GroupedKind::kContiguousRowToGroup:
      return m_blocks * n_blocks;
    case GroupedKind::kContiguousGroupEnds:
      // Every tile of a group but its last lies inside the group's rows, and the groups' rows are disjoint (for
      // any segment alignment).
      return (static_cast<long long>(p.rows / p.block_m) + min_of(p.num_groups, p.rows)) * n_blocks;
    case GroupedKind::kMasked:
      return p.num_groups * m_blocks * n_blocks;
    case GroupedKind::kKGrouped:
      // Each expert with tiles has K_g >= 1, and the K_g sum to at most k (unless empty experts store too).
      return (p.kgrouped_empty_experts_store ? p.num_groups : min_of(p.num_groups, p.k)) * m_blocks * n_blocks;
  }
  return 0;
}

// Picks the rasterisation band for a problem whose groups have about m_blocks x n_blocks tiles, run by num_ctas
// persistent CTAs. A wave of W = min(num_ctas, tiles) concurrent tiles touches about mc m-blocks and nc n-blocks;
// it pulls mc * block_m rows of A and nc * block_n rows of B through L2 per K step. The band minimising that
// footprint wins (ties: the smaller band, which leaves fewer partial bands at group ends).
MOEGEMM_HD int pick_raster_band(int m_blocks, int n_blocks, int block_m, int block_n, int num_ctas) {
  if (m_blocks <= 1 || n_blocks <= 0) return 1;
  const long long tiles = static_cast<long long>(m_blocks) * n_blocks;
  const int wave = static_cast<int>(min_of(static_cast<long long>(max_of(num_ctas, 1)), tiles));
  int best_band = 1;
  long long best_cost = -1;
  for (int band = 1; band <= kMaxRasterBand; band *= 2) {
    const int m_in_band = min_of(band, m_blocks);
    const int n_count = min_of(n_blocks, ceil_div(wave, m_in_band));
    const int m_count = min_of(m_blocks, max_of(m_in_band, ceil_div(wave, n_blocks)));
    const long long cost = static_cast<long long>(m_count) * block_m + static_cast<long long>(n_count) * block_n;
    if (best_cost < 0 || cost < best_cost) {
      best_cost = cost;
      best_band = m_in_band;
    }
  }
  return best_band;
}

// The group-ends segment alignment a TileIteratorFor holds: its constant, or (kFixed = 0) the value it was given. A
// constant one stores nothing: an int member, never read, still moved the code of every kernel.
template <int kFixed>
struct SegmentAlignment {
  MOEGEMM_HD explicit SegmentAlignment(int) {}
  MOEGEMM_HD int get() const { return kFixed; }
};
template <>
struct SegmentAlignment<0> {
  MOEGEMM_HD explicit SegmentAlignment(int v) : value(v) {}
  MOEGEMM_HD int get() const { return value; }
  int value;
};

// The work of one persistent CTA: linear items cta, cta + num_ctas, ... over all groups' tiles, group by group.
// Producer and consumer warps each own a copy; both see the same sequence because it depends only on the inputs.
// The iterator keeps a cursor on the current group and only moves it forward: O(G + items) per CTA in total.
//
// A kernel names what it knows at compile time: its layout (kKind, a GroupedKind value) and its tile (kBlockM,
// kBlockN: the problem's block_m and block_n, cluster pairs included). The layout's branches and the divisions by
// the tile's sides then fold away: a dense decode kernel's producer took about 0.6 us from setmaxnreg to its first
// tile, through four run-time integer divisions and the layout dispatched at run time (docs/results/
// 2026-12-04-decode-start.md). A problem that disagrees with those constants yields no tiles. -1 and 0: read from
// the problem (the host and the CPU tests).
//
// The group-ends layout's segment alignment (where each expert's rows start) is a kernel constant too:
// kSegmentAlignment, or with 0 the constructor's argument. Read at run time from a field of the problem, it moved
// the code of every kernel and the group-ends kernels spilled more (256x128: 0 -> 8 bytes; docs/results/
// 2026-12-05-packed-group-ends-prepared.md). A value that is not a power of two from 1 to kMaxSegmentAlignment
// yields no tiles.
template <int kKind = -1, int kBlockM = 0, int kBlockN = 0, int kSegmentAlignment = 0>
class TileIteratorFor {
  static_assert(kSegmentAlignment == 0 || is_segment_alignment(kSegmentAlignment),
                "kSegmentAlignment: 0 (the constructor's) or a power of two from 1 to kMaxSegmentAlignment");

 public:
  MOEGEMM_HD TileIteratorFor(const SchedulerProblem& p, int cta, int num_ctas,
                             int segment_alignment = kGroupEndsAlignment)
      : p_(p), item_(cta), stride_(num_ctas), segment_alignment_(segment_alignment) {
    const bool as_compiled = (kKind < 0 || static_cast<int>(p.kind) == kKind) &&
                             (kBlockM <= 0 || p.block_m == kBlockM) && (kBlockN <= 0 || p.block_n == kBlockN);
    if (!as_compiled || !scheduler_problem_is_well_formed(p) || cta < 0 || num_ctas <= 0) {
      item_ = 0;  // with no segments, next() stops at once
      stride_ = 1;
      return;
    }
    n_blocks_ = ceil_div(p.n, block_n());
    const bool one_segment = kind() == GroupedKind::kDense || kind() == GroupedKind::kContiguousRowToGroup;
    segments_ = one_segment ? 1 : p.num_groups;
    if (n_blocks_ == 0 || p.num_groups == 0) segments_ = 0;
  }

  // Fills `work` with this CTA's next tile; false when there is none left. With resolve_passes = false a
  // row-to-group tile's group is left at kUnresolvedGroup: the caller computes the same value (and b_row) itself,
  // e.g. a whole warp at once, and must agree with first_group_in_rows.
  static constexpr int kUnresolvedGroup = -2;
  MOEGEMM_HD bool next(TileWork& work, bool resolve_passes = true) {
    while (item_ >= segment_first_ + segment_items_) {
      if (segment_ + 1 >= segments_) return false;
      segment_first_ += segment_items_;
      enter_segment(segment_ + 1);
    }
    const int local = static_cast<int>(item_ - segment_first_);
    item_ += stride_;

    const BlockCoord c = rasterize(local, m_blocks_, n_blocks_, p_.band);
    work.m_block = c.m_block;
    work.n_block = c.n_block;
    work.n_begin = c.n_block * block_n();
    work.row_begin = row_begin_ + c.m_block * block_m();
    work.row_limit = min_of(work.row_begin + block_m(), row_end_);
    work.a_row = a_row_base_ + c.m_block * block_m();
    work.k_begin = k_begin_;
    work.k_len = k_len_;
    if (kind() == GroupedKind::kContiguousRowToGroup) {
      if (!resolve_passes) {
        work.group = kUnresolvedGroup;
        work.b_row = work.n_begin;
        return true;
      }
      work.group = first_group_in_rows(p_.routing, work.row_begin, work.row_limit, p_.num_groups);
    } else {
      work.group = segment_;
    }
    work.b_row = pass_b_row(kind(), p_.n, work, work.group);
    return true;
  }

 private:
  MOEGEMM_HD GroupedKind kind() const { return kKind >= 0 ? static_cast<GroupedKind>(kKind) : p_.kind; }
  MOEGEMM_HD int block_m() const { return kBlockM > 0 ? kBlockM : p_.block_m; }
  MOEGEMM_HD int block_n() const { return kBlockN > 0 ? kBlockN : p_.block_n; }
  MOEGEMM_HD int alignment() const { return segment_alignment_.get(); }

  // Moves the cursor to segment s (the next one): its rows, m-blocks and K range, from the previous segment's.
  MOEGEMM_HD void enter_segment(int s) {
    segment_ = s;
    const int bm = block_m();
    int begin = 0, end = p_.rows;
    a_row_base_ = 0;
    k_begin_ = 0;
    k_len_ = p_.k;
    switch (kind()) {
      case GroupedKind::kDense:
      case GroupedKind::kContiguousRowToGroup:
        break;
      case GroupedKind::kContiguousGroupEnds:
        begin = segment_begin(carry_, alignment(), p_.rows);
        end = min_of(max_of(p_.routing[s], begin), p_.rows);
        carry_ = end;
        a_row_base_ = begin;
        break;
      case GroupedKind::kMasked:
        begin = s * p_.rows;
        end = begin + min_of(max_of(p_.routing[s], 0), p_.rows);
        a_row_base_ = begin;
        break;
      case GroupedKind::kKGrouped:
        k_begin_ = carry_;
        k_len_ = min_of(max_of(p_.routing[s], 0), p_.k - carry_);
        carry_ += k_len_;
        begin = s * p_.rows;
        end = k_len_ > 0 || p_.kgrouped_empty_experts_store ? begin + p_.rows : begin;
        break;
    }
    row_begin_ = begin;
    row_end_ = end;
    m_blocks_ = ceil_div(end - begin, bm);
    segment_items_ = static_cast<long long>(m_blocks_) * n_blocks_;
  }

  SchedulerProblem p_;
  long long item_;   // this CTA's next linear work item
  long long stride_;
  SegmentAlignment<kSegmentAlignment> segment_alignment_;
  int segments_ = 0;  // dense and row-to-group: 1; other kinds: G
  int n_blocks_ = 0;
  // Cursor: the current segment (group), where its items start, and its geometry.
  int segment_ = -1;
  long long segment_first_ = 0;
  long long segment_items_ = 0;
  int row_begin_ = 0;
  int row_end_ = 0;
  int m_blocks_ = 0;
  int a_row_base_ = 0;
  int k_begin_ = 0;
  int k_len_ = 0;
  int carry_ = 0;  // group ends: previous group's end; k-grouped: K consumed by previous experts
};

// The layout and tile read from the problem.
using TileIterator = TileIteratorFor<>;

}  // namespace moegemm::kernels
