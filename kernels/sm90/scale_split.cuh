// Where a tile's columns cross from one of B's 128-column scale blocks into the next (recipe (1,128,128)), and the
// dispatch that hands that column to the K loop as a compile-time constant. Host-compilable: tested on the CPU
// (tests/cpu/test_scale_split.cpp).
#pragma once

#include "common/platform.cuh"
#include "sm90/gemm_params.cuh"

namespace moegemm::kernels::sm90 {

// The tile-relative column where the tile's second scale block starts, or block_n when the tile stays inside one
// block (or the next block has no columns below n). n_begin is a multiple of block_n, so the split is
// 128 - n_begin % 128 = 128 - j * gcd(block_n, 128) for some j >= 0.
MOEGEMM_HD constexpr int b_scale_split(int block_n, int n_begin, int n) {
  const int split = 128 - n_begin % 128;
  return split < block_n && (n_begin / 128 + 1) * 128 < n ? split : block_n;
}

// The values below block_n that a split can take, largest first; the last, gcd(block_n, 128), without a compare.
template <int kBlockN, int kCandidate = 128, typename F>
MOEGEMM_DEVICE void dispatch_split_below(int split, F&& f) {
  constexpr int kGcd = gcd_of(kBlockN, 128);
  if constexpr (kCandidate >= kBlockN) {
    dispatch_split_below<kBlockN, kCandidate - kGcd>(split, f);
  } else if constexpr (kCandidate == kGcd) {
    f(IntConstant<kCandidate>{});
  } else {
    if (split == kCandidate) {
      f(IntConstant<kCandidate>{});
      return;
    }
    dispatch_split_below<kBlockN, kCandidate - kGcd>(split, f);
  }
}

// Calls f(IntConstant<split>) once, with a split from b_scale_split as a compile-time constant, so the K loop
// inside f has no split logic at all. Every path calls f: a path without a call (a split value no branch matched)
// would carry the previous tile's result registers into this one as far as the compiler can tell, and the FP8
// kernels, whose first K block sets the result, would then keep both alive (ptxas spilled them at 256x128).
template <int kBlockN, typename F>
MOEGEMM_DEVICE void dispatch_split(int split, F&& f) {
  if constexpr (gcd_of(kBlockN, 128) >= kBlockN) {
    f(IntConstant<kBlockN>{});  // every split is at least gcd(block_n, 128) >= block_n: one scale block per tile
  } else {
    if (split >= kBlockN) {
      f(IntConstant<kBlockN>{});
      return;
    }
    dispatch_split_below<kBlockN>(split, f);
  }
}

}  // namespace moegemm::kernels::sm90
