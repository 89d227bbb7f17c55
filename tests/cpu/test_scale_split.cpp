// The split of B's scale blocks over a tile (kernels/sm90/scale_split.cuh): for every FP8 (1,128,128) tile width
// and every tile of a row of columns, the dispatch calls the K loop exactly once, with the split the tile has. Its
// last case runs without a compare, so a split value outside the assumed set would show here as a wrong value.
#include <gtest/gtest.h>

#include <set>
#include <utility>

#include "sm90/scale_split.cuh"

namespace moegemm {
namespace {

using kernels::sm90::b_scale_split;
using kernels::sm90::dispatch_split;

template <int kBlockN>
void check_width(int n) {
  for (int n_begin = 0; n_begin < n; n_begin += kBlockN) {
    const int split = b_scale_split(kBlockN, n_begin, n);
    int calls = 0, seen = -1;
    dispatch_split<kBlockN>(split, [&](auto split_constant) {
      ++calls;
      seen = decltype(split_constant)::value;
    });
    ASSERT_EQ(calls, 1) << "block_n " << kBlockN << " n_begin " << n_begin;
    ASSERT_EQ(seen, split) << "block_n " << kBlockN << " n_begin " << n_begin;
    // The split is a column inside the tile where a new 128-column block starts, or block_n.
    if (split < kBlockN) {
      EXPECT_EQ((n_begin + split) % 128, 0) << "block_n " << kBlockN << " n_begin " << n_begin;
      EXPECT_LT(n_begin + split, n);
    }
  }
}

template <int... kWidths>
void check_widths(std::integer_sequence<int, kWidths...>, int n) {
  (
      [&] {
        if constexpr (kernels::sm90::fp8_1d2d_block_n_supported(16 * (kWidths + 1))) check_width<16 * (kWidths + 1)>(n);
      }(),
      ...);
}

TEST(ScaleSplit, DispatchCallsTheLoopOnceWithTheTilesSplit) {
  for (int n : {16, 128, 200, 576, 2048, 2112, 4096, 7168, 24576 + 48}) {
    check_widths(std::make_integer_sequence<int, 12>{}, n);
  }
}

// fp8_k_loop_copies (the unroll rule's measure of code size) counts the K loop's instantiations: the tile width
// itself and every split a tile of that width can have.
template <int... kWidths>
void check_copies(std::integer_sequence<int, kWidths...>) {
  (
      [&] {
        constexpr int kBlockN = 16 * (kWidths + 1);
        if constexpr (kernels::sm90::fp8_1d2d_block_n_supported(kBlockN)) {
          std::set<int> splits{kBlockN};
          const int n = 128 * kBlockN;  // every residue of n_begin modulo 128
          for (int n_begin = 0; n_begin < n; n_begin += kBlockN) splits.insert(b_scale_split(kBlockN, n_begin, n));
          EXPECT_EQ(static_cast<int>(splits.size()), kernels::sm90::fp8_k_loop_copies(kBlockN)) << kBlockN;
        }
      }(),
      ...);
}

TEST(ScaleSplit, LoopCopiesAreTheSplitsATileCanHave) {
  check_copies(std::make_integer_sequence<int, 12>{});
  EXPECT_EQ(kernels::sm90::fp8_k_loop_copies(128), 1);
  EXPECT_EQ(kernels::sm90::fp8_k_loop_copies(192), 3);
  EXPECT_EQ(kernels::sm90::fp8_k_loop_copies(144), 9);
}

TEST(ScaleSplit, TilesInsideOneBlockOrAtTheLastColumnsHaveNoSplit) {
  EXPECT_EQ(b_scale_split(192, 0, 4096), 128);     // columns 0-191: the second block starts at 128
  EXPECT_EQ(b_scale_split(192, 192, 4096), 64);    // columns 192-383: at 256
  EXPECT_EQ(b_scale_split(192, 3840, 3968), 192);  // n = 3968: the block starting at 3968 has no columns
  EXPECT_EQ(b_scale_split(64, 64, 4096), 64);      // columns 64-127: inside one block
  EXPECT_EQ(b_scale_split(160, 0, 128), 160);      // no columns past 128: one block
  EXPECT_EQ(b_scale_split(128, 384, 4096), 128);
}

}  // namespace
}  // namespace moegemm
