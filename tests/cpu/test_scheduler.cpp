// The tile scheduler, exhaustively on the CPU: every CTA of a persistent grid is simulated, each tile is "stored"
// through the same row_action the kernels' epilogues use, and the stamps are checked against an ownership map
// written here from the documented semantics (not from the scheduler).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "common/scheduler.cuh"
#include "sm90/gemm_params.cuh"
#include "validate/checks.hpp"

namespace {

using moegemm::kernels::BlockCoord;
using moegemm::kernels::GroupedKind;
using moegemm::kernels::RowAction;
using moegemm::kernels::SchedulerProblem;
using moegemm::kernels::TileIterator;
using moegemm::kernels::TileWork;

constexpr int kNobody = -1;   // a row no tile may touch
constexpr int kPadding = -2;  // a row-to-group padding row: zeros, exactly once

// A problem with its routing array owned by the test.
struct Case {
  SchedulerProblem p;
  std::vector<int> routing;
  std::string name;
  int segment_alignment = moegemm::kernels::kGroupEndsAlignment;  // group ends: the iterator's argument

  SchedulerProblem problem() const {
    SchedulerProblem q = p;
    q.routing = routing.empty() ? nullptr : routing.data();
    return q;
  }
};

// What the documentation says about each flattened row: its owner, the segment its tiles start from, its valid
// end, and (k-grouped) its K range.
struct Expected {
  std::vector<int> owner;               // per flattened row: group, kNobody or kPadding
  std::vector<long long> group_begin;   // per group: first row of its segment (where its m-block 0 starts)
  std::vector<long long> group_end;     // per group: exclusive end of its valid rows
  std::vector<int> k_begin, k_len;      // per group
};

int clamp_int(long long v, long long lo, long long hi) { return static_cast<int>(std::min(std::max(v, lo), hi)); }

Expected expected_for(const Case& c) {
  const SchedulerProblem& p = c.p;
  Expected e;
  const int g_count = p.num_groups;
  long long total_rows = (p.kind == GroupedKind::kMasked || p.kind == GroupedKind::kKGrouped)
                             ? static_cast<long long>(g_count) * p.rows
                             : p.rows;
  e.owner.assign(total_rows, kNobody);
  e.group_begin.assign(g_count, 0);
  e.group_end.assign(g_count, 0);
  e.k_begin.assign(g_count, 0);
  e.k_len.assign(g_count, p.k);
  switch (p.kind) {
    case GroupedKind::kDense:
      std::fill(e.owner.begin(), e.owner.end(), 0);
      e.group_end[0] = p.rows;
      break;
    case GroupedKind::kContiguousRowToGroup:
      for (int r = 0; r < p.rows; ++r) {
        const int v = c.routing[r];
        e.owner[r] = (v >= 0 && v < g_count) ? v : kPadding;
      }
      break;
    case GroupedKind::kContiguousGroupEnds: {
      long long previous_end = 0;
      for (int g = 0; g < g_count; ++g) {
        const long long a = c.segment_alignment;
        const long long start = std::min<long long>((previous_end + a - 1) / a * a, p.rows);
        const long long end = std::min<long long>(std::max<long long>(c.routing[g], start), p.rows);
        for (long long r = start; r < end; ++r) e.owner[r] = g;
        e.group_begin[g] = start;
        e.group_end[g] = end;
        previous_end = end;
      }
      break;
    }
    case GroupedKind::kMasked:
      for (int g = 0; g < g_count; ++g) {
        const int count = clamp_int(c.routing[g], 0, p.rows);
        e.group_begin[g] = static_cast<long long>(g) * p.rows;
        e.group_end[g] = e.group_begin[g] + count;
        for (long long r = e.group_begin[g]; r < e.group_end[g]; ++r) e.owner[r] = g;
      }
      break;
    case GroupedKind::kKGrouped: {
      long long used = 0;
      for (int g = 0; g < g_count; ++g) {
        const int k_g = clamp_int(c.routing[g], 0, p.k - used);
        e.k_begin[g] = static_cast<int>(used);
        e.k_len[g] = k_g;
        used += k_g;
        e.group_begin[g] = static_cast<long long>(g) * p.rows;
        e.group_end[g] = k_g > 0 || p.kgrouped_empty_experts_store ? e.group_begin[g] + p.rows : e.group_begin[g];
        for (long long r = e.group_begin[g]; r < e.group_end[g]; ++r) e.owner[r] = g;
      }
      break;
    }
  }
  return e;
}

bool same_work(const TileWork& a, const TileWork& b) {
  return a.group == b.group && a.m_block == b.m_block && a.n_block == b.n_block && a.row_begin == b.row_begin &&
         a.row_limit == b.row_limit && a.a_row == b.a_row && a.b_row == b.b_row && a.n_begin == b.n_begin &&
         a.k_begin == b.k_begin && a.k_len == b.k_len;
}

std::string describe(const TileWork& w) {
  return "tile{group " + std::to_string(w.group) + ", m " + std::to_string(w.m_block) + ", n " +
         std::to_string(w.n_block) + ", rows [" + std::to_string(w.row_begin) + ", " + std::to_string(w.row_limit) +
         "), a_row " + std::to_string(w.a_row) + ", b_row " + std::to_string(w.b_row) + ", k " +
         std::to_string(w.k_begin) + "+" + std::to_string(w.k_len) + "}";
}

std::vector<TileWork> run_cta(const SchedulerProblem& p, int cta, int num_ctas,
                              int segment_alignment = moegemm::kernels::kGroupEndsAlignment) {
  std::vector<TileWork> out;
  TileIterator it(p, cta, num_ctas, segment_alignment);
  TileWork w;
  while (it.next(w)) out.push_back(w);
  return out;
}

// The distinct valid experts of rows [begin, end), ascending: what the passes of a row-to-group tile must be.
std::vector<int> experts_in(const std::vector<int>& routing, int begin, int end, int num_groups) {
  std::set<int> s;
  for (int r = begin; r < end; ++r) {
    if (routing[r] >= 0 && routing[r] < num_groups) s.insert(routing[r]);
  }
  return {s.begin(), s.end()};
}

// Checks one tile's fields against the documented semantics.
void check_fields(const Case& c, const Expected& e, const TileWork& w) {
  const SchedulerProblem& p = c.p;
  SCOPED_TRACE(describe(w));
  ASSERT_GE(w.n_block, 0);
  ASSERT_EQ(w.n_begin, w.n_block * p.block_n);
  ASSERT_LT(w.n_begin, p.n);
  ASSERT_GE(w.m_block, 0);
  ASSERT_LT(w.row_begin, w.row_limit) << "a tile with no valid row is wasted work";
  ASSERT_EQ(w.row_limit, std::min(w.row_begin + p.block_m, w.row_limit));
  if (p.kind == GroupedKind::kContiguousRowToGroup) {
    ASSERT_EQ(w.row_begin, w.m_block * p.block_m);
    ASSERT_EQ(w.row_limit, std::min(w.row_begin + p.block_m, p.rows));
    const std::vector<int> experts = experts_in(c.routing, w.row_begin, w.row_limit, p.num_groups);
    ASSERT_EQ(w.group, experts.empty() ? -1 : experts.front());
    ASSERT_EQ(w.a_row, w.row_begin);
    if (w.group >= 0) {
      ASSERT_EQ(w.b_row, w.group * p.n + w.n_begin);
    }
    ASSERT_EQ(w.k_begin, 0);
    ASSERT_EQ(w.k_len, p.k);
    return;
  }
  ASSERT_GE(w.group, 0);
  ASSERT_LT(w.group, p.num_groups);
  const int g = w.group;
  ASSERT_EQ(w.row_begin, e.group_begin[g] + static_cast<long long>(w.m_block) * p.block_m);
  ASSERT_EQ(w.row_limit, std::min<long long>(w.row_begin + p.block_m, e.group_end[g]));
  ASSERT_EQ(e.owner[w.row_begin], g);
  ASSERT_EQ(w.k_begin, e.k_begin[g]);
  ASSERT_EQ(w.k_len, e.k_len[g]);
  if (p.kind == GroupedKind::kKGrouped) {
    if (!p.kgrouped_empty_experts_store) ASSERT_GT(w.k_len, 0);
    ASSERT_EQ(w.a_row, w.m_block * p.block_m);
    ASSERT_EQ(w.b_row, w.n_begin);
  } else {
    ASSERT_EQ(w.a_row, w.row_begin);
    ASSERT_EQ(w.b_row, g * p.n + w.n_begin);
  }
}

// A's FP8 scales are MN-major FP32 and the tile's first row is the innermost coordinate of their TMA box, which the
// copy engine needs 16-byte aligned (a multiple of 4 rows; otherwise an illegal instruction, seen on the H200). Every
// tile of every layout starts at such a row, or its kernel loads the scales from the row rounded down to 4
// (kernels::sm90::gemm_sfa_shifted: group ends at a segment alignment of 1 or 2). Tile heights that are multiples of
// 4 are the ones the kernels run (64 to 256).
void check_scale_box_alignment(const Case& c, const TileWork& w) {
  const SchedulerProblem& p = c.p;
  if (p.block_m % 4 != 0) return;
  const long long scale_row = p.kind == GroupedKind::kMasked ? w.a_row - static_cast<long long>(w.group) * p.rows
                                                             : w.a_row;
  const bool shifted = moegemm::kernels::sm90::gemm_sfa_shifted(0, static_cast<int>(p.kind), c.segment_alignment);
  if (!shifted) ASSERT_EQ(scale_row % 4, 0) << describe(w) << ": A's scales' box would start off a 16-byte boundary";
  ASSERT_EQ((scale_row & ~3LL) % 4, 0);
  ASSERT_LE(scale_row - (scale_row & ~3LL), 3) << "the shift a shifted kernel reads its scales from";
}

// Simulates the epilogue of one tile over all its passes, stamping each stored element.
void store_tile(const Case& c, const SchedulerProblem& p, const TileWork& w, std::vector<int>& stamps,
                std::vector<int>& writer, std::vector<int>& zero_stores) {
  using moegemm::kernels::next_pass_group;
  using moegemm::kernels::pass_b_row;
  using moegemm::kernels::row_action;
  const long long total_rows = static_cast<long long>(stamps.size()) / std::max(p.n, 1);
  std::vector<int> passes;
  std::vector<int> touched;  // rows some pass stores (accumulator or zeros), in order, each once
  bool first = true;
  for (int g = w.group;; first = false) {
    passes.push_back(g);
    if (g >= 0) {
      ASSERT_LT(g, p.num_groups);
      ASSERT_EQ(pass_b_row(p, w, g), p.kind == GroupedKind::kKGrouped ? w.n_begin : g * p.n + w.n_begin);
    }
    // The kernel's tile has block_m rows whatever the group's size: the predicate must reject the extra ones.
    for (int row = w.row_begin; row < w.row_begin + p.block_m; ++row) {
      const RowAction action = row_action(p, w, g, first, row);
      if (action == RowAction::kSkip) continue;
      touched.push_back(row);
      ASSERT_GE(row, 0);
      ASSERT_LT(row, total_rows) << "store past the end of D";
      for (int col = w.n_begin; col < std::min(w.n_begin + p.block_n, p.n); ++col) {
        const long long at = static_cast<long long>(row) * p.n + col;
        ++stamps[at];
        writer[at] = action == RowAction::kStoreZeros ? kPadding : g;
        if (action == RowAction::kStoreZeros) ++zero_stores[at];
      }
    }
    const int next = next_pass_group(p, w, g);
    if (next < 0) break;
    ASSERT_GT(next, g) << "passes must ascend";
    g = next;
  }
  if (p.kind == GroupedKind::kContiguousRowToGroup) {
    std::vector<int> expected = experts_in(c.routing, w.row_begin, w.row_limit, p.num_groups);
    if (expected.empty()) expected.push_back(-1);
    ASSERT_EQ(passes, expected) << describe(w);
  } else {
    ASSERT_EQ(passes.size(), 1u);
  }
  // Tiles in 64-row waves may store through TMA: a whole box goes to the copy engine, which drops rows past D's
  // extents (dense and contiguous: the rows of D; masked: each group's capacity), or the threads store the first
  // rows. The rows stored must be exactly those row_action accepts: for row-to-group, those some pass accepts (the
  // passes fill one staging buffer, each its own rows and the first the padding rows' zeros, and the last stores
  // it).
  if (p.kind != GroupedKind::kKGrouped && p.block_m % 64 == 0) {
    const long long extent_end =
        p.kind == GroupedKind::kMasked ? (static_cast<long long>(w.group) + 1) * p.rows : total_rows;
    std::vector<int> stored;
    for (int first = w.row_begin; first < w.row_begin + p.block_m; first += 64) {
      const int rows = moegemm::kernels::tma_wave_rows(p.kind, w.row_limit, first);
      const long long end = rows >= 64 ? std::min<long long>(first + 64, extent_end) : first + std::max(rows, 0);
      for (long long row = first; row < end; ++row) stored.push_back(static_cast<int>(row));
    }
    std::vector<int> accepted = touched;
    std::sort(accepted.begin(), accepted.end());
    ASSERT_TRUE(std::adjacent_find(accepted.begin(), accepted.end()) == accepted.end()) << "a row stored twice";
    ASSERT_EQ(stored, accepted) << "TMA-store waves of " << describe(w);
    // A wave without rows (wave_has_rows) is skipped whole, MMA and store: none of its rows may be one some pass
    // accepts, and a wave said to have rows holds at least one such row (the skip is exact).
    for (int wave_row0 = 0; wave_row0 < p.block_m; wave_row0 += 64) {
      const int first = w.row_begin + wave_row0;
      const bool holds_accepted = std::any_of(accepted.begin(), accepted.end(),
                                              [&](int row) { return row >= first && row < first + 64; });
      ASSERT_EQ(moegemm::kernels::wave_has_rows(w, wave_row0), holds_accepted)
          << "the wave at row " << first << " of " << describe(w);
    }
  }
}

// Every check of the file on one case, for one grid size.
void check_grid(const Case& c, const Expected& e, const std::vector<TileWork>& order, int num_ctas) {
  const SchedulerProblem p = c.problem();
  SCOPED_TRACE(c.name + ", num_ctas " + std::to_string(num_ctas));
  const long long total_rows = static_cast<long long>(e.owner.size());
  std::vector<int> stamps(total_rows * std::max(p.n, 0), 0), writer(stamps.size(), kNobody),
      zero_stores(stamps.size(), 0);
  long long count = 0;
  for (int cta = 0; cta < num_ctas; ++cta) {
    const std::vector<TileWork> seq = run_cta(p, cta, num_ctas, c.segment_alignment);
    // A pure function of the inputs: the same again.
    const std::vector<TileWork> again = run_cta(p, cta, num_ctas, c.segment_alignment);
    ASSERT_EQ(seq.size(), again.size());
    for (size_t j = 0; j < seq.size(); ++j) ASSERT_TRUE(same_work(seq[j], again[j])) << j;
    // CTA `cta` gets exactly items cta, cta + num_ctas, ... of the single-CTA order.
    const long long expected_items =
        static_cast<long long>(order.size()) > cta ? (static_cast<long long>(order.size()) - cta + num_ctas - 1) /
                                                         num_ctas
                                                   : 0;
    ASSERT_EQ(static_cast<long long>(seq.size()), expected_items) << "cta " << cta;
    for (size_t j = 0; j < seq.size(); ++j) {
      ASSERT_TRUE(same_work(seq[j], order[cta + j * num_ctas])) << "cta " << cta << " item " << j;
      check_fields(c, e, seq[j]);
      check_scale_box_alignment(c, seq[j]);
      store_tile(c, p, seq[j], stamps, writer, zero_stores);
      if (::testing::Test::HasFatalFailure()) return;
    }
    count += static_cast<long long>(seq.size());
  }
  ASSERT_LE(count, moegemm::kernels::max_work_items(p));
  if (p.kind == GroupedKind::kDense || p.kind == GroupedKind::kContiguousRowToGroup) {
    ASSERT_EQ(count, moegemm::kernels::max_work_items(p));
  }
  // Plain comparisons first (this loop runs over every element); a report only for the first bad one.
  for (long long r = 0; r < total_rows; ++r) {
    const int owner = e.owner[r];
    for (int col = 0; col < p.n; ++col) {
      const long long at = r * p.n + col;
      const bool ok = owner == kNobody ? stamps[at] == 0
                                       : stamps[at] == 1 && writer[at] == owner &&
                                             zero_stores[at] == (owner == kPadding ? 1 : 0);
      if (ok) continue;
      if (owner == kNobody) {
        FAIL() << "row " << r << " col " << col << " belongs to nobody but was written " << stamps[at]
               << " times, last by group " << writer[at];
      }
      FAIL() << "row " << r << " col " << col << " (owner " << owner << "): written " << stamps[at]
             << " times, last by group " << writer[at] << ", zeros " << zero_stores[at] << " times";
    }
  }
}

// Producer and consumer each run their own iterator, at different paces: the sequences must match.
void check_producer_consumer(const SchedulerProblem& p, int segment_alignment, int cta, int num_ctas,
                             std::mt19937& rng) {
  TileIterator producer(p, cta, num_ctas, segment_alignment), consumer(p, cta, num_ctas, segment_alignment);
  std::vector<TileWork> queue;
  size_t consumed = 0;
  bool producer_done = false;
  while (true) {
    const int ahead = static_cast<int>(rng() % 4);
    for (int i = 0; i < ahead && !producer_done; ++i) {
      TileWork w;
      if (producer.next(w)) {
        queue.push_back(w);
      } else {
        producer_done = true;
      }
    }
    TileWork w;
    const bool got = consumer.next(w);
    if (!got) {
      while (!producer_done) {
        TileWork rest;
        if (producer.next(rest)) {
          queue.push_back(rest);
        } else {
          producer_done = true;
        }
      }
      ASSERT_EQ(consumed, queue.size()) << "producer saw more tiles than the consumer";
      return;
    }
    if (consumed == queue.size()) {
      ASSERT_FALSE(producer_done) << "consumer saw more tiles than the producer";
      TileWork pw;
      ASSERT_TRUE(producer.next(pw));
      queue.push_back(pw);
    }
    ASSERT_TRUE(same_work(queue[consumed], w)) << "item " << consumed;
    ++consumed;
  }
}

void check_case(const Case& c, std::mt19937& rng) {
  const Expected e = expected_for(c);
  const SchedulerProblem p = c.problem();
  ASSERT_EQ(static_cast<long long>(e.owner.size()), moegemm::kernels::flattened_rows(p)) << c.name;
  // The single-CTA order: groups ascending, and inside each group the band rasterisation.
  const std::vector<TileWork> order = run_cta(p, 0, 1, c.segment_alignment);
  int previous_group = -1;
  int index_in_group = 0;
  for (const TileWork& w : order) {
    if (p.kind == GroupedKind::kContiguousRowToGroup) break;
    ASSERT_GE(w.group, previous_group) << c.name << ": groups must be walked in order";
    if (w.group != previous_group) index_in_group = 0;
    previous_group = w.group;
    ASSERT_LT(w.group, p.num_groups) << c.name;
    const int m_blocks = static_cast<int>((e.group_end[w.group] - e.group_begin[w.group] + p.block_m - 1) / p.block_m);
    ASSERT_LT(index_in_group, m_blocks * ((p.n + p.block_n - 1) / p.block_n)) << c.name << ": too many tiles in group";
    const BlockCoord bc =
        moegemm::kernels::rasterize(index_in_group++, m_blocks, (p.n + p.block_n - 1) / p.block_n, p.band);
    ASSERT_EQ(w.m_block, bc.m_block) << c.name;
    ASSERT_EQ(w.n_block, bc.n_block) << c.name;
  }
  for (int num_ctas : {1, 3, 132}) {
    check_grid(c, e, order, num_ctas);
    if (::testing::Test::HasFatalFailure()) return;
  }
  for (int cta : {0, 1, 2}) {
    check_producer_consumer(p, c.segment_alignment, cta, 3, rng);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

int pick(std::mt19937& rng, std::initializer_list<int> values) {
  return *(values.begin() + rng() % values.size());
}

int uniform(std::mt19937& rng, int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); }

void random_tiling(std::mt19937& rng, SchedulerProblem& p, std::initializer_list<int> block_ms) {
  p.block_m = pick(rng, block_ms);
  p.block_n = pick(rng, {16, 32, 64, 128});
  p.n = uniform(rng, 1, 300);
  p.k = uniform(rng, 0, 1) ? 7168 : uniform(rng, 0, 512);
  p.band = pick(rng, {0, 1, 2, 3, 5, 8, 16, 100});
}

std::string shape_name(const char* kind, int trial, const SchedulerProblem& p) {
  return std::string(kind) + " trial " + std::to_string(trial) + " G " + std::to_string(p.num_groups) + " rows " +
         std::to_string(p.rows) + " n " + std::to_string(p.n) + " bm " + std::to_string(p.block_m) + " bn " +
         std::to_string(p.block_n) + " band " + std::to_string(p.band);
}

// A masked count drawn from the interesting classes: zero, full, over and under the capacity, or anything.
int masked_count(std::mt19937& rng, int capacity) {
  switch (rng() % 8) {
    case 0: return 0;
    case 1: return capacity;
    case 2: return capacity + uniform(rng, 1, 1000);
    case 3: return -uniform(rng, 1, 1000);
    case 4: return std::max(capacity - 1, 0);
    case 5: return 1;
    case 6: return rng() % 2 ? INT_MAX : INT_MIN;
    default: return uniform(rng, 0, capacity);
  }
}

TEST(Scheduler, DenseRandom) {
  std::mt19937 rng(1);
  for (int trial = 0; trial < 60; ++trial) {
    Case c;
    c.p.kind = GroupedKind::kDense;
    c.p.num_groups = 1;
    random_tiling(rng, c.p, {16, 32, 64, 128, 192, 256});
    c.p.rows = trial == 0 ? 0 : uniform(rng, 1, 700);
    c.name = shape_name("dense", trial, c.p);
    check_case(c, rng);
    if (HasFatalFailure()) return;
  }
}

TEST(Scheduler, MaskedRandom) {
  std::mt19937 rng(2);
  for (int trial = 0; trial < 150; ++trial) {
    Case c;
    c.p.kind = GroupedKind::kMasked;
    random_tiling(rng, c.p, {64, 128, 256});
    c.p.num_groups = uniform(rng, 1, 9);
    c.p.rows = uniform(rng, 1, 257);
    for (int g = 0; g < c.p.num_groups; ++g) c.routing.push_back(masked_count(rng, c.p.rows));
    c.name = shape_name("masked", trial, c.p);
    check_case(c, rng);
    if (HasFatalFailure()) return;
  }
}

// targets.md failure 2: a store tile past one group's capacity must never land on the next group's rows.
TEST(Scheduler, MaskedAnchorFailureCase) {
  std::mt19937 rng(3);
  for (int block_m : {64, 128}) {
    Case c;
    c.p.kind = GroupedKind::kMasked;
    c.p.num_groups = 8;
    c.p.rows = 32;
    c.p.n = 256;
    c.p.k = 256;
    c.p.block_m = block_m;
    c.p.block_n = 128;
    c.p.band = 8;
    c.routing = {0, 1, 16, 31, 32, 1, 32, 32};
    c.name = "anchor failure case, block_m " + std::to_string(block_m);
    check_case(c, rng);
    if (HasFatalFailure()) return;
    // Spelled out: group 2 (16 valid rows) stores rows [64, 80) only; group 0 has no tile at all.
    const std::vector<TileWork> order = run_cta(c.problem(), 0, 1);
    ASSERT_EQ(order.size(), 7u * 2u);
    for (const TileWork& w : order) {
      ASSERT_NE(w.group, 0);
      if (w.group == 2) {
        ASSERT_EQ(w.row_begin, 64);
        ASSERT_EQ(w.row_limit, 80);
      }
    }
  }
}

// The FP8 side of the same failure: every capacity from 1 to 257, counts near the capacity.
TEST(Scheduler, MaskedEveryCapacityUpTo257) {
  std::mt19937 rng(4);
  for (int block_m : {64, 128, 256}) {
    for (int capacity = 1; capacity <= 257; ++capacity) {
      Case c;
      c.p.kind = GroupedKind::kMasked;
      c.p.num_groups = 4;
      c.p.rows = capacity;
      c.p.n = 256;
      c.p.k = 256;
      c.p.block_m = block_m;
      c.p.block_n = 128;
      c.p.band = 8;
      c.routing = {capacity, capacity - 1, capacity + 1, capacity / 2};
      c.name = "capacity " + std::to_string(capacity) + ", block_m " + std::to_string(block_m);
      check_case(c, rng);
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
}

TEST(Scheduler, GroupEndsRandom) {
  std::mt19937 rng(5);
  for (int trial = 0; trial < 150; ++trial) {
    Case c;
    c.p.kind = GroupedKind::kContiguousGroupEnds;
    // Tiles start at each group's aligned start; block_m dividing 128 keeps them on the global m grid, but the
    // store bounds do not depend on it (96 and 256 are checked too).
    random_tiling(rng, c.p, {16, 32, 64, 128, 96, 256});
    c.p.num_groups = uniform(rng, 1, 10);
    c.p.rows = trial == 0 ? 0 : uniform(rng, 1, 1500);
    // The default 128, packed tokens (1), and other powers of two, some above and below the tile's rows.
    const int alignments[] = {128, 128, 1, 1, 2, 16, 64, 256, 1024};
    c.segment_alignment = alignments[rng() % (sizeof(alignments) / sizeof(alignments[0]))];
    int end = 0;
    for (int g = 0; g < c.p.num_groups; ++g) {
      switch (rng() % 8) {
        case 0: break;                                         // an empty group (running sum unchanged)
        case 1: end = std::max(end - uniform(rng, 1, 300), -5); break;  // non-monotone
        case 2: end = c.p.rows + uniform(rng, 0, 500); break;  // past M_total
        case 3: end = -uniform(rng, 1, 100); break;             // negative
        case 4: end = (end + 127) / 128 * 128 + 128 * uniform(rng, 1, 3); break;  // aligned segment
        default: end += uniform(rng, 1, 400); break;            // unaligned running sum: leaves a gap
      }
      c.routing.push_back(end);
    }
    c.name = shape_name("group ends", trial, c.p) + ", segment alignment " + std::to_string(c.segment_alignment);
    check_case(c, rng);
    if (HasFatalFailure()) return;
  }
}

TEST(Scheduler, RowToGroupRandom) {
  std::mt19937 rng(6);
  for (int trial = 0; trial < 150; ++trial) {
    Case c;
    c.p.kind = GroupedKind::kContiguousRowToGroup;
    random_tiling(rng, c.p, {64, 128});
    c.p.num_groups = uniform(rng, 1, 8);
    c.p.rows = trial == 0 ? 0 : uniform(rng, 1, 1000);
    const int g_count = c.p.num_groups;
    const int mode = trial % 4;
    int expert = 0;
    for (int r = 0; r < c.p.rows; ++r) {
      int v = -1;
      if (mode == 0) {
        // Experts in 128-aligned segments, each ending in padding: the layout callers should send.
        const int segment = r / 128;
        const int in_segment = r % 128;
        v = in_segment < 128 - (segment * 37) % 100 ? segment % g_count : -1;
      } else if (mode == 1) {
        // Sorted but unaligned segments: blocks mix two or more experts.
        if (rng() % 40 == 0) expert = std::min(expert + 1 + static_cast<int>(rng() % 2), g_count);
        v = expert < g_count ? expert : -1;
      } else if (mode == 2) {
        // Anything: padding, out-of-range values in both directions, experts in any order.
        v = uniform(rng, -3, g_count + 2);
        if (rng() % 50 == 0) v = rng() % 2 ? INT_MAX : INT_MIN;
      } else {
        // Every other 64-row block holds no valid expert at all: padding and out-of-range values only (those
        // blocks get a single no-MMA pass of zeros); the others are sparse.
        const int invalid[] = {-1, -1, g_count, g_count + 1, -7, INT_MAX, INT_MIN};
        const bool empty_block = (r / 64) % 2 == 1;
        v = !empty_block && rng() % 3 == 0 ? uniform(rng, 0, g_count - 1) : invalid[rng() % 7];
      }
      c.routing.push_back(v);
    }
    // Guard values past the end: the lowest and highest valid experts, so any read beyond M_total would show up
    // as a wrong first pass or an extra last pass.
    c.name = shape_name("row to group", trial, c.p);
    for (int r = 0; r < 256; ++r) c.routing.push_back(r % 2 ? g_count - 1 : 0);
    check_case(c, rng);
    if (HasFatalFailure()) return;
  }
}

TEST(Scheduler, KGroupedRandom) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 150; ++trial) {
    Case c;
    c.p.kind = GroupedKind::kKGrouped;
    random_tiling(rng, c.p, {64, 128, 192, 256});
    c.p.num_groups = uniform(rng, 1, 10);
    c.p.rows = uniform(rng, 1, 300);
    c.p.k = trial == 0 ? 0 : uniform(rng, 0, 3000);
    c.p.kgrouped_empty_experts_store = trial % 2;
    for (int g = 0; g < c.p.num_groups; ++g) {
      switch (rng() % 6) {
        case 0: c.routing.push_back(0); break;
        case 1: c.routing.push_back(-uniform(rng, 1, 500)); break;
        case 2: c.routing.push_back(c.p.k + uniform(rng, 0, 500)); break;  // alone above the capacity
        default: c.routing.push_back(128 * uniform(rng, 0, 6)); break;
      }
    }
    c.name = shape_name("k-grouped", trial, c.p);
    check_case(c, rng);
    if (HasFatalFailure()) return;
  }
}

// The K sizes of targets.md failure 1 with an empty expert inserted and a capacity that clamps the last one: each
// expert sees its own K range, nothing else.
TEST(Scheduler, KGroupedOffsetsAreRunningSums) {
  std::vector<int> ks = {256, 128, 0, 128, 256};
  SchedulerProblem p;
  p.kind = GroupedKind::kKGrouped;
  p.num_groups = 5;
  p.rows = 256;
  p.n = 256;
  p.k = 640;  // the last expert is clamped from 256 to 128
  p.routing = ks.data();
  const int expected_begin[] = {0, 256, 384, 384, 512};
  const int expected_len[] = {256, 128, 0, 128, 128};
  std::set<int> seen;
  for (const TileWork& w : run_cta(p, 0, 1)) {
    ASSERT_EQ(w.k_begin, expected_begin[w.group]);
    ASSERT_EQ(w.k_len, expected_len[w.group]);
    ASSERT_EQ(w.row_begin, w.group * 256 + w.m_block * 128);
    seen.insert(w.group);
  }
  ASSERT_EQ(seen, (std::set<int>{0, 1, 3, 4}));

  // With empty experts storing (C distinct from D), expert 2 gets its tiles too, with an empty reduction.
  p.kgrouped_empty_experts_store = 1;
  seen.clear();
  for (const TileWork& w : run_cta(p, 0, 1)) {
    ASSERT_EQ(w.k_begin, expected_begin[w.group]);
    ASSERT_EQ(w.k_len, expected_len[w.group]);
    seen.insert(w.group);
  }
  ASSERT_EQ(seen, (std::set<int>{0, 1, 2, 3, 4}));
}

// The cursor only moves forward: a CTA's whole walk costs O(G + items). 200000 one-tile groups over 132 CTAs take
// milliseconds that way; rescanning from group 0 on every next() would take minutes, far past the bound.
TEST(Scheduler, CursorNeverRescansGroups) {
  const int groups = 200000;
  std::vector<int> counts(groups, 1);
  SchedulerProblem p;
  p.kind = GroupedKind::kMasked;
  p.num_groups = groups;
  p.rows = 4;
  p.n = 64;
  p.k = 64;
  p.routing = counts.data();
  const auto start = std::chrono::steady_clock::now();
  long long tiles = 0;
  for (int cta = 0; cta < 132; ++cta) {
    TileIterator it(p, cta, 132);
    TileWork w;
    while (it.next(w)) {
      ++tiles;
      ASSERT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5)) << "after " << tiles << " tiles";
    }
  }
  ASSERT_EQ(tiles, groups);
}

// The documented order, written independently: bands of `band` m-blocks, n outer, m inner inside a band.
TEST(Scheduler, RasterisationIsTheDocumentedBijection) {
  for (int m_blocks = 1; m_blocks <= 12; ++m_blocks) {
    for (int n_blocks = 1; n_blocks <= 12; ++n_blocks) {
      for (int band = 0; band <= 14; ++band) {
        const int b = std::max(band, 1);
        std::vector<BlockCoord> expected;
        for (int band_start = 0; band_start < m_blocks; band_start += b) {
          for (int nb = 0; nb < n_blocks; ++nb) {
            for (int mb = band_start; mb < std::min(band_start + b, m_blocks); ++mb) expected.push_back({mb, nb});
          }
        }
        std::vector<int> hits(m_blocks * n_blocks, 0);
        for (int i = 0; i < m_blocks * n_blocks; ++i) {
          const BlockCoord c = moegemm::kernels::rasterize(i, m_blocks, n_blocks, band);
          ASSERT_GE(c.m_block, 0);
          ASSERT_LT(c.m_block, m_blocks);
          ASSERT_GE(c.n_block, 0);
          ASSERT_LT(c.n_block, n_blocks);
          ++hits[c.m_block * n_blocks + c.n_block];
          ASSERT_EQ(c.m_block, expected[i].m_block) << m_blocks << "x" << n_blocks << " band " << band << " i " << i;
          ASSERT_EQ(c.n_block, expected[i].n_block) << m_blocks << "x" << n_blocks << " band " << band << " i " << i;
        }
        for (int h : hits) ASSERT_EQ(h, 1);
      }
    }
  }
}

TEST(Scheduler, BandPickerStaysInRange) {
  using moegemm::kernels::pick_raster_band;
  for (int m_blocks = 0; m_blocks <= 64; ++m_blocks) {
    for (int n_blocks : {0, 1, 2, 5, 16, 56, 256}) {
      for (int ctas : {1, 78, 132}) {
        const int band = pick_raster_band(m_blocks, n_blocks, 128, 128, ctas);
        ASSERT_GE(band, 1);
        ASSERT_LE(band, std::max(m_blocks, 1));
        ASSERT_LE(band, moegemm::kernels::kMaxRasterBand);
      }
    }
  }
  // A full H200 wave over a large square-tiled output: 8 m-blocks x 17 n-blocks, the smallest footprint.
  EXPECT_EQ(pick_raster_band(32, 56, 128, 128, 132), 8);
  // Wide tiles: fewer n-blocks per wave, so a taller band pays off.
  EXPECT_EQ(pick_raster_band(64, 64, 64, 256, 132), 16);
  // One m-block or one CTA: nothing to share.
  EXPECT_EQ(pick_raster_band(1, 56, 128, 128, 132), 1);
  EXPECT_EQ(pick_raster_band(32, 56, 128, 128, 1), 1);
}

TEST(Scheduler, MalformedProblemsYieldNothing) {
  std::vector<int> counts = {5, 5};
  SchedulerProblem good;
  good.kind = GroupedKind::kMasked;
  good.num_groups = 2;
  good.rows = 8;
  good.n = 64;
  good.k = 64;
  good.routing = counts.data();
  ASSERT_EQ(run_cta(good, 0, 1).size(), 2u);
  SchedulerProblem p = good;
  p.block_m = 0;
  EXPECT_TRUE(run_cta(p, 0, 1).empty());
  EXPECT_EQ(moegemm::kernels::max_work_items(p), 0);
  p = good;
  p.routing = nullptr;
  EXPECT_TRUE(run_cta(p, 0, 1).empty());
  p = good;
  p.rows = -1;
  EXPECT_TRUE(run_cta(p, 0, 1).empty());
  EXPECT_TRUE(run_cta(good, -1, 1).empty());
  EXPECT_TRUE(run_cta(good, 0, 0).empty());
  p = good;
  p.kind = GroupedKind::kDense;  // dense with G != 1
  EXPECT_TRUE(run_cta(p, 0, 1).empty());
  // Group ends: the segment alignment must be a power of two from 1 to kMaxSegmentAlignment.
  std::vector<int> ends = {5, 8};
  SchedulerProblem ge = good;
  ge.kind = GroupedKind::kContiguousGroupEnds;
  ge.routing = ends.data();
  ASSERT_EQ(run_cta(ge, 0, 1, 1).size(), 2u);
  for (int bad : {0, -128, 3, 96, 2 * moegemm::kernels::kMaxSegmentAlignment}) {
    EXPECT_TRUE(run_cta(ge, 0, 1, bad).empty()) << "segment_alignment " << bad;
  }
  // Other layouts do not read it.
  EXPECT_EQ(run_cta(good, 0, 1, 0).size(), 2u);
}

// Near INT_MAX rows the rounding of a segment's start must not overflow: it stays at the rows' end.
TEST(Scheduler, SegmentBeginNeverPassesTheRows) {
  using moegemm::kernels::segment_begin;
  EXPECT_EQ(segment_begin(0, 128, 1000), 0);
  EXPECT_EQ(segment_begin(1, 128, 1000), 128);
  EXPECT_EQ(segment_begin(200, 1, 1000), 200);
  EXPECT_EQ(segment_begin(200, 64, 1000), 256);
  EXPECT_EQ(segment_begin(999, 1024, 1000), 1000);
  EXPECT_EQ(segment_begin(INT_MAX - 5, 1024, INT_MAX), INT_MAX);
  EXPECT_EQ(segment_begin(INT_MAX, 1, INT_MAX), INT_MAX);
  EXPECT_EQ(segment_begin(0, 1024, INT_MAX), 0);
  // An alignment the layout refuses: every segment starts (and ends) at the rows' end.
  EXPECT_EQ(segment_begin(0, 3, 1000), 1000);
  EXPECT_EQ(segment_begin(0, 0, 1000), 1000);
}

}  // namespace

namespace {

// The last tile of a problem (the one whose arithmetic reaches furthest), as the CTA that runs it sees it.
TileWork last_tile(const SchedulerProblem& p, long long items) {
  TileIterator it(p, static_cast<int>(items - 1), static_cast<int>(items));
  TileWork w{};
  EXPECT_TRUE(it.next(w));
  return w;
}

// The largest extents the validators accept (rows of all groups, N, K) keep the scheduler's int arithmetic in range:
// the last tile of each layout starts inside the problem and ends at its last row or column. (At INT_MAX itself
// ceil_div and row_begin + block_m passed int: the validators' bound leaves room for a pair tile and its boxes.)
// Rows and columns are taken one at a time, so that a CTA index (an int) can name the last tile.
TEST(Scheduler, TheLargestAcceptedExtentsStayInInt) {
  const int big = static_cast<int>(moegemm::validate::kMaxIndexedExtent);
  for (const int block_m : {64, 128, 256, 512}) {
    for (const int block_n : {16, 136, 256}) {
      SCOPED_TRACE("block " + std::to_string(block_m) + "x" + std::to_string(block_n));
      SchedulerProblem tall;  // dense, every row, one n-block
      tall.rows = big;
      tall.n = block_n;
      tall.k = big;
      tall.block_m = block_m;
      tall.block_n = block_n;
      TileWork w = last_tile(tall, moegemm::kernels::max_work_items(tall));
      EXPECT_EQ(w.row_limit, big);
      EXPECT_GT(w.row_begin, big - block_m - 1);
      SchedulerProblem wide = tall;  // dense, one m-block, every column
      wide.rows = block_m;
      wide.n = big - big % 8;
      w = last_tile(wide, moegemm::kernels::max_work_items(wide));
      EXPECT_LT(w.n_begin, wide.n);
      EXPECT_GE(w.n_begin, wide.n - block_n);

      // Masked: two experts of half the rows each, both full.
      std::vector<int> counts = {big / 2, big / 2};
      SchedulerProblem masked = tall;
      masked.kind = GroupedKind::kMasked;
      masked.num_groups = 2;
      masked.rows = big / 2;
      masked.routing = counts.data();
      const TileWork m = last_tile(masked, moegemm::kernels::max_work_items(masked));
      EXPECT_EQ(m.group, 1);
      EXPECT_EQ(m.row_limit, 2 * masked.rows);
      EXPECT_GT(m.row_begin, 2 * masked.rows - block_m - 1);

      // Group ends: one expert owning every row.
      std::vector<int> ends = {big};
      SchedulerProblem ge = tall;
      ge.kind = GroupedKind::kContiguousGroupEnds;
      ge.routing = ends.data();
      const TileWork e = last_tile(ge, (static_cast<long long>(big) + block_m - 1) / block_m);
      EXPECT_EQ(e.row_limit, big);
      EXPECT_GT(e.row_begin, big - block_m - 1);

      // K-grouped: two experts sharing the whole K, M of half the rows.
      std::vector<int> ks = {big / 2, big - big / 2};
      SchedulerProblem kg = masked;
      kg.kind = GroupedKind::kKGrouped;
      kg.routing = ks.data();
      const TileWork g = last_tile(kg, moegemm::kernels::max_work_items(kg));
      EXPECT_EQ(g.k_begin, big / 2);
      EXPECT_EQ(g.k_begin + g.k_len, big);
      EXPECT_EQ(g.row_limit, 2 * kg.rows);
    }
  }
}

}  // namespace
