// The 2-CTA cluster split (kernels/common/cluster_split.cuh): the scheduler hands out pair tiles of 2 * block_m
// rows (or, sharing A, 2 * block_n columns) and each CTA takes one half. Checked on randomised layouts: every valid row
// of every pair tile is stored by exactly one half, of its own group, and no half reaches outside its pair's rows.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "common/cluster_split.cuh"

namespace moegemm::kernels {
namespace {

// split(pair, rank) gives a CTA's half of a pair tile, half_rows x half_cols (the rows or the columns of the pair
// halved). Every half stays inside its pair's rows and columns and stores each valid element of the pair once.
template <typename Split>
void check_split(const SchedulerProblem& pair_problem, int half_rows, int half_cols, int num_clusters, Split split,
                 int segment_alignment = kGroupEndsAlignment) {
  const long long rows = flattened_rows(pair_problem);
  std::vector<int> owner(static_cast<std::size_t>(rows) * pair_problem.n, -1);
  std::vector<int> stamps(owner.size(), 0);
  for (int c = 0; c < num_clusters; ++c) {
    TileIterator it(pair_problem, c, num_clusters, segment_alignment);
    TileWork pair;
    while (it.next(pair)) {
      for (int rank = 0; rank < 2; ++rank) {
        const TileWork half = split(pair, rank);
        ASSERT_GE(half.row_begin, pair.row_begin);
        ASSERT_LE(half.row_limit, pair.row_limit < half.row_begin ? half.row_begin : pair.row_limit);
        ASSERT_LE(half.row_limit - half.row_begin, half_rows);
        ASSERT_GE(half.n_begin, pair.n_begin);
        ASSERT_LE(half.n_begin + half_cols, pair.n_begin + pair_problem.block_n);
        for (int r = half.row_begin; r < half.row_begin + half_rows; ++r) {
          if (row_action(pair_problem, half, half.group, true, r) == RowAction::kSkip) continue;
          ASSERT_LT(r, half.row_limit);
          // The epilogue stores columns n_begin .. n_begin + half_cols - 1 below N.
          for (int col = half.n_begin; col < half.n_begin + half_cols && col < pair_problem.n; ++col) {
            const std::size_t i = static_cast<std::size_t>(r) * pair_problem.n + col;
            ++stamps[i];
            owner[i] = half.group;
          }
        }
      }
    }
  }
  // Every row the pair-level scheduler considers valid is stamped exactly once (re-derive validity from a
  // single-CTA run of the same problem with the pair block size).
  std::vector<int> expected(owner.size(), 0);
  TileIterator it(pair_problem, 0, 1, segment_alignment);
  TileWork pair;
  while (it.next(pair)) {
    for (int r = pair.row_begin; r < pair.row_limit; ++r) {
      for (int col = pair.n_begin; col < pair.n_begin + pair_problem.block_n && col < pair_problem.n; ++col) {
        expected[static_cast<std::size_t>(r) * pair_problem.n + col] = 1;
      }
    }
  }
  for (std::size_t i = 0; i < owner.size(); ++i) {
    ASSERT_EQ(stamps[i], expected[i]) << "element " << i;
    // A dense problem has no invalid element: each is stored once.
    if (pair_problem.kind == GroupedKind::kDense) ASSERT_EQ(stamps[i], 1) << "element " << i;
  }
}

TEST(ClusterSplit, DenseMaskedAndGroupEndsAreCoveredExactlyOnce) {
  std::mt19937 rng(123);
  for (int trial = 0; trial < 300; ++trial) {
    const int block_m = (trial % 2) ? 64 : 128;
    SchedulerProblem p;
    p.block_m = 2 * block_m;
    p.block_n = 16 * (1 + static_cast<int>(rng() % 12));
    p.n = 1 + static_cast<int>(rng() % 300);
    p.k = 128;
    p.band = 1 + static_cast<int>(rng() % 16);
    std::vector<int> routing;
    int alignment = kGroupEndsAlignment;
    switch (trial % 3) {
      case 0:
        p.kind = GroupedKind::kDense;
        p.rows = 1 + static_cast<int>(rng() % 700);
        break;
      case 1: {
        p.kind = GroupedKind::kMasked;
        p.num_groups = 1 + static_cast<int>(rng() % 6);
        p.rows = 1 + static_cast<int>(rng() % 400);
        for (int g = 0; g < p.num_groups; ++g) routing.push_back(static_cast<int>(rng() % (p.rows + 40)) - 20);
        break;
      }
      default: {
        p.kind = GroupedKind::kContiguousGroupEnds;
        p.num_groups = 1 + static_cast<int>(rng() % 6);
        alignment = (trial / 3) % 3 == 0 ? kGroupEndsAlignment : (trial / 3) % 3 == 1 ? 1 : 16;  // packed too
        int end = 0;
        for (int g = 0; g < p.num_groups; ++g) {
          end = (end + alignment - 1) / alignment * alignment + static_cast<int>(rng() % 400);
          routing.push_back(end);
        }
        p.rows = end + static_cast<int>(rng() % 100);
        break;
      }
    }
    p.routing = routing.empty() ? nullptr : routing.data();
    check_split(
        p, block_m, p.block_n, 1 + static_cast<int>(rng() % 7),
        [&](const TileWork& pair, int rank) { return cluster_half(pair, rank, block_m); }, alignment);
    if (HasFatalFailure()) return;
  }
}

// The column split of a dense problem (A shared by two CTAs): the scheduler runs with block_n doubled and each CTA
// takes one half of the columns; a half at or past N covers nothing.
TEST(ClusterSplit, DenseColumnHalvesCoverEveryElementOnce) {
  std::mt19937 rng(321);
  for (int trial = 0; trial < 300; ++trial) {
    const int block_n = 16 * (1 + static_cast<int>(rng() % 12));
    SchedulerProblem p;
    p.kind = GroupedKind::kDense;
    p.block_m = (trial % 3 == 0) ? 256 : 128;
    p.block_n = 2 * block_n;
    p.n = 8 * (1 + static_cast<int>(rng() % 80));
    p.rows = 1 + static_cast<int>(rng() % 700);
    p.k = 128;
    p.band = 1 + static_cast<int>(rng() % 16);
    check_split(p, p.block_m, block_n, 1 + static_cast<int>(rng() % 7), [&](const TileWork& pair, int rank) {
      const TileWork half = cluster_half_n(pair, rank, block_n);
      EXPECT_EQ(half.row_begin, pair.row_begin);
      EXPECT_EQ(half.row_limit, pair.row_limit);
      EXPECT_EQ(half.b_row, half.n_begin);
      return half;
    });
    if (HasFatalFailure()) return;
  }
}

}  // namespace
}  // namespace moegemm::kernels
