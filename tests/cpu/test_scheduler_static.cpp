// TileIteratorFor<kind, block_m, block_n>, the scheduler as the kernels compile it (layout and tile as constants):
// the same tiles in the same order as the run-time TileIterator that test_scheduler.cpp proves correct, for every
// layout and a spread of tile shapes; and no tiles at all for a problem that disagrees with the constants.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "common/scheduler.cuh"

namespace moegemm::kernels {
namespace {

int uniform(std::mt19937& rng, int lo, int hi) { return lo + static_cast<int>(rng() % (hi - lo + 1)); }

// A random problem of one layout and tile, with routing values that include out-of-range ones.
SchedulerProblem random_problem(std::mt19937& rng, GroupedKind kind, int block_m, int block_n,
                                std::vector<int>& routing) {
  SchedulerProblem p;
  p.kind = kind;
  p.block_m = block_m;
  p.block_n = block_n;
  p.band = uniform(rng, 0, 17);
  p.n = uniform(rng, 1, 900);
  p.k = uniform(rng, 1, 4096);
  p.num_groups = kind == GroupedKind::kDense ? 1 : uniform(rng, 1, 9);
  p.rows = uniform(rng, 1, 1500);
  p.kgrouped_empty_experts_store = static_cast<int>(rng() % 2);
  routing.clear();
  switch (kind) {
    case GroupedKind::kDense:
      break;
    case GroupedKind::kContiguousRowToGroup:
      for (int r = 0; r < p.rows; ++r) routing.push_back(uniform(rng, -2, p.num_groups));
      break;
    case GroupedKind::kContiguousGroupEnds: {
      int end = 0;
      for (int g = 0; g < p.num_groups; ++g) routing.push_back(end += uniform(rng, -50, 400));
      break;
    }
    case GroupedKind::kMasked:
      for (int g = 0; g < p.num_groups; ++g) routing.push_back(uniform(rng, -5, p.rows + 5));
      break;
    case GroupedKind::kKGrouped:
      for (int g = 0; g < p.num_groups; ++g) routing.push_back(uniform(rng, -128, 1024));
      break;
  }
  p.routing = routing.empty() ? nullptr : routing.data();
  return p;
}

std::string describe(const SchedulerProblem& p, int cta, int ctas) {
  return "kind " + std::to_string(static_cast<int>(p.kind)) + " G " + std::to_string(p.num_groups) + " rows " +
         std::to_string(p.rows) + " n " + std::to_string(p.n) + " k " + std::to_string(p.k) + " tile " +
         std::to_string(p.block_m) + "x" + std::to_string(p.block_n) + " band " + std::to_string(p.band) + " cta " +
         std::to_string(cta) + "/" + std::to_string(ctas);
}

// Returns the number of tiles compared. kAlignment: the group-ends segment alignment, a constant of the compiled
// form and the run-time form's constructor argument.
template <int kKind, int kBlockM, int kBlockN, int kAlignment = kGroupEndsAlignment>
long long expect_same_tiles_as_run_time(std::mt19937& rng, int trials) {
  std::vector<int> routing;
  long long tiles = 0;
  for (int trial = 0; trial < trials; ++trial) {
    const SchedulerProblem p = random_problem(rng, static_cast<GroupedKind>(kKind), kBlockM, kBlockN, routing);
    const int ctas = uniform(rng, 1, 140);
    for (int cta = 0; cta < ctas; ++cta) {
      TileIterator run_time(p, cta, ctas, kAlignment);
      TileIteratorFor<kKind, kBlockM, kBlockN, kAlignment> compiled(p, cta, ctas);
      for (int item = 0;; ++item) {
        TileWork a{}, b{};
        const bool resolve = (item % 2) == 0;  // both forms of next()
        const bool more = run_time.next(a, resolve);
        const bool compiled_more = compiled.next(b, resolve);
        EXPECT_EQ(more, compiled_more) << describe(p, cta, ctas) << " item " << item;
        if (!more || !compiled_more) break;
        ++tiles;
        EXPECT_TRUE(a.group == b.group && a.m_block == b.m_block && a.n_block == b.n_block &&
                    a.row_begin == b.row_begin && a.row_limit == b.row_limit && a.a_row == b.a_row &&
                    a.b_row == b.b_row && a.n_begin == b.n_begin && a.k_begin == b.k_begin && a.k_len == b.k_len)
            << describe(p, cta, ctas) << " item " << item;
      }
    }
  }
  return tiles;
}

template <int kKind>
void expect_same_tiles_for_kind(std::mt19937& rng) {
  // Tiles of the kernels' plans: 64-row decode tiles, 128- and 256-row tiles, pairs (block_m 256 or 512 for the
  // scheduler), widths that are not powers of two.
  // Every shape must have been exercised with tiles, not only with empty problems.
  EXPECT_GT((expect_same_tiles_as_run_time<kKind, 64, 16>(rng, 40)), 1000);
  EXPECT_GT((expect_same_tiles_as_run_time<kKind, 64, 64>(rng, 40)), 1000);
  EXPECT_GT((expect_same_tiles_as_run_time<kKind, 128, 144>(rng, 40)), 200);
  EXPECT_GT((expect_same_tiles_as_run_time<kKind, 128, 192>(rng, 40)), 200);
  EXPECT_GT((expect_same_tiles_as_run_time<kKind, 256, 128>(rng, 40)), 100);
  EXPECT_GT((expect_same_tiles_as_run_time<kKind, 512, 96>(rng, 40)), 100);
}

// Every layout (failures name the problem's kind, shape and CTA).
TEST(SchedulerCompiled, SameTilesAsRunTimeForEveryLayout) {
  std::mt19937 rng(11);
  expect_same_tiles_for_kind<static_cast<int>(GroupedKind::kDense)>(rng);
  expect_same_tiles_for_kind<static_cast<int>(GroupedKind::kContiguousRowToGroup)>(rng);
  expect_same_tiles_for_kind<static_cast<int>(GroupedKind::kContiguousGroupEnds)>(rng);
  expect_same_tiles_for_kind<static_cast<int>(GroupedKind::kMasked)>(rng);
  expect_same_tiles_for_kind<static_cast<int>(GroupedKind::kKGrouped)>(rng);
}

// Group ends with other segment alignments (packed: 1), as the kernels compile them.
TEST(SchedulerCompiled, GroupEndsWithASegmentAlignmentAsTheRunTimeForm) {
  std::mt19937 rng(12);
  constexpr int kEnds = static_cast<int>(GroupedKind::kContiguousGroupEnds);
  EXPECT_GT((expect_same_tiles_as_run_time<kEnds, 256, 128, 1>(rng, 40)), 100);
  EXPECT_GT((expect_same_tiles_as_run_time<kEnds, 128, 192, 1>(rng, 40)), 200);
  EXPECT_GT((expect_same_tiles_as_run_time<kEnds, 64, 64, 16>(rng, 40)), 1000);
  EXPECT_GT((expect_same_tiles_as_run_time<kEnds, 128, 256, 64>(rng, 40)), 200);
  EXPECT_GT((expect_same_tiles_as_run_time<kEnds, 256, 128, 1024>(rng, 40)), 50);
}

// A kernel compiled for one layout and tile, given a problem of another, computes nothing rather than tiles of the
// wrong shape.
TEST(SchedulerCompiled, ProblemThatDisagreesWithTheConstantsYieldsNoTiles) {
  std::mt19937 rng(16);
  std::vector<int> routing;
  constexpr int kDense = static_cast<int>(GroupedKind::kDense);
  constexpr int kMasked = static_cast<int>(GroupedKind::kMasked);
  for (int trial = 0; trial < 20; ++trial) {
    const SchedulerProblem masked = random_problem(rng, GroupedKind::kMasked, 64, 64, routing);
    const SchedulerProblem dense = random_problem(rng, GroupedKind::kDense, 64, 64, routing);
    TileWork w{};
    TileIterator reference(dense, 0, 1);
    ASSERT_TRUE(reference.next(w));  // the problem has tiles
    TileIteratorFor<kDense, 64, 64> right(dense, 0, 1);
    EXPECT_TRUE(right.next(w));
    TileIteratorFor<kDense, 64, 64> wrong_kind(masked, 0, 1);
    EXPECT_FALSE(wrong_kind.next(w));
    TileIteratorFor<kMasked, 64, 64> wrong_kind_too(dense, 0, 1);
    EXPECT_FALSE(wrong_kind_too.next(w));
    TileIteratorFor<kDense, 128, 64> wrong_block_m(dense, 0, 1);
    EXPECT_FALSE(wrong_block_m.next(w));
    TileIteratorFor<kDense, 64, 128> wrong_block_n(dense, 0, 1);
    EXPECT_FALSE(wrong_block_n.next(w));
  }
}

}  // namespace
}  // namespace moegemm::kernels
