// Parameters and shared-memory layout of the SM90 FP8 1D2D GEMM kernel (sm90/fp8_gemm_1d2d.cuh). Host code
// includes this file too: the planner sizes shared memory and the launcher fills the parameters from the same
// definitions the kernel uses, so the two cannot drift apart.
#pragma once

#include "common/platform.cuh"
#include "common/scheduler.cuh"
#include "sm90/tma_descriptor.cuh"

namespace moegemm::kernels::sm90 {

inline constexpr int kFp8BlockK = 128;  // one scale block of K; 128 bytes per row: exactly one 128-byte swizzle atom

struct Fp8Gemm1d2dParams {
  SchedulerProblem problem;  // kind, G, rows (M | M_total | capacity), n, k, tile shape, band, routing
  // Scales of B: element (g, n_block128, k_block) at sfb + g*sfb_group_stride + nb*sfb_n_stride + kb*sfb_k_stride.
  const float* sfb;
  long long sfb_group_stride, sfb_n_stride, sfb_k_stride;
  // D (bf16): flattened row r of group g at d + g*d_group_stride + (r - g*d_rows_per_group)*ldd. For every layout but
  // masked, d_rows_per_group = 0 and d_group_stride = 0 (rows are global).
  unsigned short* d;
  long long ldd, d_group_stride, d_rows_per_group;
  TmaDescriptor tma_a;    // uint8 [K, rows] (2-D) or [K, capacity, G] (3-D, masked), box {128, block_m}, 128B swizzle
  TmaDescriptor tma_b;    // uint8 [K, N, G], box {128, block_n, 1}, 128B swizzle
  TmaDescriptor tma_sfa;  // fp32 [tma_aligned(rows), kb] or [tma_aligned(capacity), G*kb] (masked), box {block_m, 1}
};

// Tile widths the kernel supports: multiples of 16 (WGMMA N) up to 192 (the accumulators of two copies of the
// tile, the WGMMA target and the promoted result, must fit in a math thread's 232 registers), such that every tile
// touches at most two 128-column scale blocks of B: block_n - gcd(block_n, 128) <= 128.
MOEGEMM_HD constexpr int gcd_of(int a, int b) { return b == 0 ? a : gcd_of(b, a % b); }
MOEGEMM_HD constexpr bool fp8_1d2d_block_n_supported(int block_n) {
  return block_n >= 16 && block_n <= 192 && block_n % 16 == 0 && block_n - gcd_of(block_n, 128) <= 128;
}

// Shared memory of one CTA, in bytes from a 1024-byte aligned base (128B-swizzle atoms need that alignment):
// kStages x [A tile | B tile | A scales], one BF16 staging buffer of 64 rows per math warpgroup, the barriers.
struct Fp8Gemm1d2dSmemLayout {
  int a_bytes, b_bytes, sfa_bytes;  // per stage
  int stage_pitch;                  // bytes per staged D row: +16 keeps the quad-wise writes bank-conflict free
  int d_bytes_per_wg;
  int a_offset, b_offset, sfa_offset, d_offset, barrier_offset;
  int bytes;          // from the aligned base
  int launch_bytes;   // dynamic shared memory to request: bytes + slack for aligning the base
  unsigned tx_bytes;  // bytes TMA delivers per stage (full boxes: out-of-bounds elements count too)
};

MOEGEMM_HD constexpr Fp8Gemm1d2dSmemLayout fp8_1d2d_smem_layout(int block_m, int block_n, int stages) {
  Fp8Gemm1d2dSmemLayout l{};
  l.a_bytes = block_m * kFp8BlockK;
  l.b_bytes = block_n * kFp8BlockK;
  l.sfa_bytes = align_up(block_m * 4, 128);
  l.stage_pitch = block_n * 2 + 16;
  l.d_bytes_per_wg = 64 * l.stage_pitch;
  l.a_offset = 0;
  l.b_offset = l.a_offset + stages * l.a_bytes;
  l.sfa_offset = l.b_offset + stages * l.b_bytes;
  l.d_offset = align_up(l.sfa_offset + stages * l.sfa_bytes, 128);
  l.barrier_offset = align_up(l.d_offset + (block_m / 64) * l.d_bytes_per_wg, 8);
  l.bytes = l.barrier_offset + 2 * stages * 8;
  l.launch_bytes = l.bytes + 1024;
  l.tx_bytes = static_cast<unsigned>(l.a_bytes + l.b_bytes + block_m * 4);
  return l;
}

}  // namespace moegemm::kernels::sm90
