// Epilogue helpers of the SM90 GEMM (sm90/gemm.cuh): the FP32-output store with C and BF16 C added before the
// rounding, both from the accumulators in registers; BF16 D's row addressing; and C loaded into the TMA-store
// staging buffers early in a tile. (The staged stores, bounded or through TMA, live in the kernel: they share its
// staging buffers, barriers and wave loop.)
#pragma once

#include "common/platform.cuh"
#include "common/scheduler.cuh"
#include "sm90/gemm_params.cuh"
#include "sm90/ptx.cuh"

namespace moegemm::kernels::sm90 {

// Epilogue of the FP32-output recipes: D = C + result (or D = result without add_c) in FP32 straight from the
// accumulators (8-byte accesses to column pairs), C read at the same element D is written (so C may be D), rows
// bounded by the scheduler's row_action. The C loads go out 16 pairs at a time before their adds: a load-add-store
// chain per pair paid one L2/HBM round trip per pair (40 of them at block_n 160), about half of the weight-gradient
// kernel's time (docs/results/2026-12-03-kgrouped-bf16c-mainloop.md).
template <int kBlockN>
MOEGEMM_DEVICE void store_fp32_with_c(const GemmParams& params, const SchedulerProblem& prob, const TileWork& w,
                                      int pass_group, bool first_pass, const float (&result)[kBlockN / 2],
                                      int tile_row_lo, int col0) {
  constexpr int kPairs = kBlockN / 4;  // a thread's accumulators come in column pairs
  // Loads in flight per round: 16 pairs (32 registers) keeps the epilogue spill-free next to the accumulators.
  constexpr int kChunk = kPairs < 16 ? kPairs : 16;
#pragma unroll
  for (int first = 0; first < kPairs; first += kChunk) {
    unsigned store_mask = 0;
    float c_pairs[2 * kChunk];
#pragma unroll
    for (int j = 0; j < kChunk; ++j) {
      const int i = 2 * (first + j);
      c_pairs[2 * j] = 0.0f;
      c_pairs[2 * j + 1] = 0.0f;
      if (first + j >= kPairs) continue;
      const int row = w.row_begin + tile_row_lo + ((i >> 1) & 1) * 8;
      const int col = w.n_begin + (i >> 2) * 8 + col0;
      // N is even (validated), so col + 1 < N as well.
      if (col >= prob.n || row_action(prob, w, pass_group, first_pass, row) != RowAction::kStoreAccumulator) continue;
      store_mask |= 1u << j;
      if (params.add_c) {
        const float* c = params.c_f32 != nullptr ? params.c_f32 + static_cast<long long>(row) * params.ldc + col
                                                 : params.d_f32 + static_cast<long long>(row) * params.ldd + col;
        const float2 v = *reinterpret_cast<const float2*>(c);
        c_pairs[2 * j] = v.x;
        c_pairs[2 * j + 1] = v.y;
      }
    }
#pragma unroll
    for (int j = 0; j < kChunk; ++j) {
      if (((store_mask >> j) & 1u) == 0) continue;
      const int i = 2 * (first + j);
      const int row = w.row_begin + tile_row_lo + ((i >> 1) & 1) * 8;
      const int col = w.n_begin + (i >> 2) * 8 + col0;
      float2 v;
      v.x = c_pairs[2 * j] + result[i];
      v.y = c_pairs[2 * j + 1] + result[i + 1];
      *reinterpret_cast<float2*>(params.d_f32 + static_cast<long long>(row) * params.ldd + col) = v;
    }
  }
}

// BF16 D = C + A B^T (recipe kBf16AddC): result += C in FP32, before the epilogue rounds to BF16. Each thread reads
// the bf16 pair at the two elements of D its accumulators i, i + 1 become, for the rows and columns the store loop
// writes. Why C may be D: only this warpgroup writes these elements (its 64 rows of a tile no other CTA has), and
// it writes them only after the named barriers that follow these loads; bar.sync performs a participant's earlier
// loads relative to every participant, so no load sees a new value. Reading 16-byte chunks in the store loop
// instead would need an FP32 staging buffer (twice the shared memory, fewer stages) to add before rounding. A
// warp's 4-byte loads cover 16-byte row segments; the rest of each 32-byte sector is a neighbouring column group's,
// loaded by the same warp right after. Plain (coherent) loads, not the read-only path: this kernel may write C.
template <int kBlockN>
MOEGEMM_DEVICE void add_bf16_c(const GemmParams& params, const SchedulerProblem& prob, const TileWork& w,
                               int pass_group, bool first_pass, float (&result)[kBlockN / 2], int tile_row_lo,
                               int col0) {
  // Accumulator 4j + 2h + e is row lo + 8h, column 8j + col0 + e. Per row half, all loads first (predicated, 0
  // where nothing is stored), then the adds: two memory latencies per tile instead of one per pair. (Both halves
  // at once spill at block_n 192 with 128-row tiles.)
  const int row_lo = w.row_begin + tile_row_lo;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int row = row_lo + 8 * h;
    const bool store = row_action(prob, w, pass_group, first_pass, row) == RowAction::kStoreAccumulator;
    const unsigned short* c_row = params.c_bf16 + static_cast<long long>(row) * params.ldc + w.n_begin + col0;
    u32 c[kBlockN / 8];
#pragma unroll
    for (int j = 0; j < kBlockN / 8; ++j) {
      // N is a multiple of 8 (validated), so a pair is inside N when its group is.
      c[j] = load_global_u32_if(c_row + j * 8, store && w.n_begin + j * 8 < prob.n);
    }
#pragma unroll
    for (int j = 0; j < kBlockN / 8; ++j) {
      result[4 * j + 2 * h] += __uint_as_float(c[j] << 16);                 // column 8j + col0 (lower address)
      result[4 * j + 2 * h + 1] += __uint_as_float(c[j] & 0xffff0000u);  // column 8j + col0 + 1
    }
  }
}

// The first element of row `row` (D's flattened row space) of BF16 D: masked D is [G, capacity, N], each group's
// slab at its own stride; every other layout's rows are global.
template <bool kMasked>
MOEGEMM_DEVICE unsigned short* bf16_d_row(const GemmParams& params, int group, int row) {
  const int g = kMasked ? group : 0;
  return params.d + g * params.d_group_stride + (row - static_cast<long long>(g) * params.d_rows_per_group) * params.ldd;
}

// Called by the one thread of a warpgroup that tracks its stores: once the copy engine has read the previous
// tile's D out of the warpgroup's wave buffers, loads this tile's C into them, one barrier per buffer (c_bar, 8
// bytes apart). Boxes are 128 bytes wide: 64 BF16 or 32 FP32 columns (kDBytes 2 or 4); n0, r0 and g0 are the box
// coordinates of the warpgroup's first wave in C's descriptor (g0: k-grouped only).
template <int kBlockN, int kWaves, int kWaveRows, int kDBytes, bool kKGrouped>
MOEGEMM_DEVICE void load_c_into_staging(const GemmParams& params, u32 c_bar, u32 buffers, int n0, int r0, int g0) {
  constexpr int kBoxCols = 128 / kDBytes;
  bulk_wait_group_read<0>();
#pragma unroll
  for (int v = 0; v < kWaves; ++v) {
    const u32 bar = c_bar + v * 8;
    mbarrier_arrive_expect_tx(bar, 64 * kBlockN * kDBytes);
#pragma unroll
    for (int b = 0; b < kBlockN / kBoxCols; ++b) {
      const u32 dst = buffers + v * (64 * kBlockN * kDBytes) + b * (64 * 128);
      if constexpr (kKGrouped) {
        tma_load_3d(dst, &params.tma_c, bar, n0 + kBoxCols * b, r0 + v * kWaveRows, g0);
      } else {
        tma_load_2d(dst, &params.tma_c, bar, n0 + kBoxCols * b, r0 + v * kWaveRows);
      }
    }
  }
}

}  // namespace moegemm::kernels::sm90
