// TileIterator::next(work, /*resolve_passes=*/false), used by kernels that find row-to-group passes with a whole
// warp: the same tiles in the same order, with only the row-to-group first-pass group left unresolved.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "common/scheduler.cuh"

namespace moegemm::kernels {
namespace {

TEST(SchedulerUnresolved, SameTilesOnlyTheRowToGroupGroupDeferred) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    SchedulerProblem p;
    p.kind = trial % 2 ? GroupedKind::kContiguousRowToGroup : GroupedKind::kMasked;
    p.num_groups = 1 + static_cast<int>(rng() % 5);
    p.rows = 1 + static_cast<int>(rng() % 600);
    p.n = 16 + static_cast<int>(rng() % 500);
    p.k = 256;
    p.block_m = trial % 4 < 2 ? 64 : 128;
    p.block_n = 16 * (1 + static_cast<int>(rng() % 12));
    p.band = 1 + static_cast<int>(rng() % 9);
    std::vector<int> routing(p.kind == GroupedKind::kMasked ? p.num_groups : p.rows);
    for (auto& r : routing) r = static_cast<int>(rng() % (p.num_groups + 3)) - 1;
    if (p.kind == GroupedKind::kMasked) {
      for (auto& r : routing) r = static_cast<int>(rng() % (p.rows + 1));
    }
    p.routing = routing.data();
    const int ctas = 1 + static_cast<int>(rng() % 9);
    for (int cta = 0; cta < ctas; ++cta) {
      TileIterator resolved(p, cta, ctas), deferred(p, cta, ctas);
      TileWork a, b;
      while (true) {
        const bool more_a = resolved.next(a);
        const bool more_b = deferred.next(b, false);
        ASSERT_EQ(more_a, more_b);
        if (!more_a) break;
        EXPECT_EQ(a.m_block, b.m_block);
        EXPECT_EQ(a.n_block, b.n_block);
        EXPECT_EQ(a.row_begin, b.row_begin);
        EXPECT_EQ(a.row_limit, b.row_limit);
        EXPECT_EQ(a.a_row, b.a_row);
        EXPECT_EQ(a.n_begin, b.n_begin);
        if (p.kind == GroupedKind::kContiguousRowToGroup) {
          EXPECT_EQ(b.group, TileIterator::kUnresolvedGroup);
          EXPECT_EQ(a.group, first_group_in_rows(p.routing, a.row_begin, a.row_limit, p.num_groups));
        } else {
          EXPECT_EQ(a.group, b.group);
          EXPECT_EQ(a.b_row, b.b_row);
        }
      }
    }
  }
}

}  // namespace
}  // namespace moegemm::kernels
