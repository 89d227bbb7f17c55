// Scale promotion of the SM90 GEMM (sm90/gemm.cuh): how a K block's FP32 accumulators are scaled into the result,
// for recipe (1,128,128) (a per-row A scale and one or two 128x128 B block scales per tile, the split a compile-time
// constant) and recipe (1,1,128) (per-row A and per-column B scales from the stage).
#pragma once

#include "common/platform.cuh"
#include "common/scheduler.cuh"
#include "sm90/gemm_params.cuh"
#include "sm90/ptx.cuh"
#include "sm90/scale_split.cuh"

namespace moegemm::kernels::sm90 {

// Promotion of one K block: result += acc * scale_a[row] * scale_b[column block]. A thread's accumulator i sits in
// row half (i >> 1) & 1 and 8-column group i >> 2, both compile-time; whether that group lies before the tile's
// split into two scale blocks is compile-time too once the split is a template argument, so the loop is one FMA
// per accumulator (a run-time split costs a compare and two selects per accumulator, three times the work).
struct PromotionScales {
  float lo0, hi0, lo1, hi1;  // rows lo/hi (= +8) x scale blocks before/after the split
};

// kAssign: the tile's first K block sets result instead of adding to it, so result needs no zeroing per tile (one
// register-zeroing instruction per two accumulators, between two tiles' WGMMAs).
template <bool kAssign>
MOEGEMM_DEVICE void promote_into(float& result, float acc, float scale) {
  if constexpr (kAssign) {
    result = acc * scale;
  } else {
    result += acc * scale;
  }
}

template <int kAcc, int kSplit, bool kAssign = false>
MOEGEMM_DEVICE void promote(float (&result)[kAcc], const float (&acc)[kAcc], const PromotionScales& s) {
#pragma unroll
  for (int i = 0; i < kAcc; ++i) {
    const bool first_block = (i >> 2) * 8 < kSplit;
    const bool hi = (i >> 1) & 1;
    promote_into<kAssign>(result[i], acc[i], first_block ? (hi ? s.hi0 : s.lo0) : (hi ? s.hi1 : s.lo1));
  }
}

// The one or two 128x128 scale blocks of B that a tile's columns touch (recipe (1,128,128)): the first block's
// K-block-0 scale at `first`, the second's `second_offset` floats further (0 when the tile stays inside one block,
// so both reads are valid). `split` is the tile-relative column where the second block starts (block_n: none).
// The producer (which copies the scales into each stage) and the consumers compute it identically.
struct BScaleBlocks {
  const float* first;
  long long second_offset;
  int split;
};

// A tile at or past N (the second CTA of a column pair on the last, odd tile) reads the last block's scales with
// no split: it stores nothing, and its scale addresses stay inside B's scales.
template <int kBlockN, bool kMayPassN = false>
MOEGEMM_DEVICE BScaleBlocks b_scale_blocks(const GemmParams& params, const SchedulerProblem& prob, const TileWork& w,
                                           int group) {
  if constexpr (kMayPassN) {
    if (w.n_begin >= prob.n) {
      return {params.sfb + group * params.sfb_group_stride + (prob.n - 1) / 128 * params.sfb_n_stride, 0, kBlockN};
    }
  }
  const int split = b_scale_split(kBlockN, w.n_begin, prob.n);
  return {params.sfb + group * params.sfb_group_stride + w.n_begin / 128 * params.sfb_n_stride,
          split < kBlockN ? params.sfb_n_stride : 0, split};
}

// Promotion for recipe (1,1,128): result += acc * scale_a[row] * scale_b[column], with B's scales for the tile's
// block_n columns in shared memory. A thread's accumulators 4j..4j+3 sit in columns 8j + col0 + {0, 1} of rows
// lo/hi, so each 8-column group needs one float2 of B's scales; sfb_addr is the shared address of column col0.
template <int kBlockN, bool kAssign = false>
MOEGEMM_DEVICE void promote_row_scaled(float (&result)[kBlockN / 2], const float (&acc)[kBlockN / 2], float sa_lo,
                                       float sa_hi, u32 sfb_addr) {
#pragma unroll
  for (int j = 0; j < kBlockN / 8; ++j) {
    float sb0, sb1;
    load_shared_v2_f32(sfb_addr + j * 8 * 4, sb0, sb1);
    promote_into<kAssign>(result[4 * j + 0], acc[4 * j + 0], sa_lo * sb0);
    promote_into<kAssign>(result[4 * j + 1], acc[4 * j + 1], sa_lo * sb1);
    promote_into<kAssign>(result[4 * j + 2], acc[4 * j + 2], sa_hi * sb0);
    promote_into<kAssign>(result[4 * j + 3], acc[4 * j + 3], sa_hi * sb1);
  }
}

}  // namespace moegemm::kernels::sm90
