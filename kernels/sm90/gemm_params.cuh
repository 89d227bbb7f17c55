// Parameters and shared-memory layout of the SM90 GEMM kernel (sm90/gemm.cuh). Host code
// includes this file too: the planner sizes shared memory and the launcher fills the parameters from the same
// definitions the kernel uses, so the two cannot drift apart.
#pragma once

#include "common/platform.cuh"
#include "common/scheduler.cuh"
#include "sm90/tma_descriptor.cuh"

namespace moegemm::kernels::sm90 {

inline constexpr int kFp8BlockK = 128;  // one scale block of K; 128 bytes per row: exactly one 128-byte swizzle atom

// What a kernel instance computes (docs/scale-formats.md). The three share the pipeline, the scheduler and the
// bounded epilogues; they differ in operand type, scale handling and output.
enum class GemmRecipe : int {
  kFp8_1d2d = 0,  // FP8, (1,128,128): A per row x 128 K, B per 128x128 block; BF16 D
  kFp8_1d1d = 1,  // FP8, (1,1,128): A and B per row x 128 K (weight gradients); FP32 D = C + A B^T
  kBf16 = 2,      // BF16 A and B (K-major), no scales, FP32 accumulation over all of K; BF16 D
  kBf16Fp32 = 3,  // the same with FP32 D (= C + A B^T, or = A B^T)
  // BF16 D = C + A B^T with a BF16 C (dense; C may be D), added in FP32 before rounding. Its own value rather than
  // a run-time flag, so the kBf16 instances keep exactly their code (no C load, no branch).
  kBf16AddC = 4,
};

MOEGEMM_HD constexpr bool recipe_is_bf16(int recipe) {
  return recipe == static_cast<int>(GemmRecipe::kBf16) || recipe == static_cast<int>(GemmRecipe::kBf16Fp32) ||
         recipe == static_cast<int>(GemmRecipe::kBf16AddC);
}
MOEGEMM_HD constexpr bool recipe_has_fp32_out(int recipe) {
  return recipe == static_cast<int>(GemmRecipe::kFp8_1d1d) || recipe == static_cast<int>(GemmRecipe::kBf16Fp32);
}

// Experts whose K-grouped sizes can travel inside the kernel parameters (more need a device tensor of sizes).
inline constexpr int kMaxInlineKGroups = 128;

struct GemmParams {
  SchedulerProblem problem;  // kind, G, rows (M | M_total | capacity), n, k, tile shape, band, routing
  // Bytes TMA delivers per stage: gemm_stage_tx_bytes() of the rows A's box holds (block_m, or fewer: a_box_rows()).
  // Next to the problem, which the producer reads on the way to its first copy too: at the end of the parameters it
  // was a line of its own, read just before that copy (a decode kernel's first parameter read took 0.36 us:
  // docs/results/2026-12-04-decode-start.md).
  unsigned tx_bytes;
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
  // FP32-output recipes and kBf16AddC only (after the 1D2D fields, so their offsets stay put):
  TmaDescriptor tma_sfb;  // recipe (1,1,128): fp32 [tma_aligned(N), kb], box {block_n, 1}: B's row scales per stage
  float* d_f32;           // FP32 D, row stride ldd
  // C with row stride ldc. The recipe says which member is read; a union keeps the struct, and so the PTX of the
  // instances that read no BF16 C, as it was.
  union {
    const float* c_f32;            // FP32 C (may equal d_f32); nullptr with add_c: C is D itself
    const unsigned short* c_bf16;  // kBf16AddC: BF16 C, never null; equal to d when C aliases D
  };
  long long ldc;
  int add_c;  // 1: D = C + A B^T (read C, or D when c_f32 is null); 0: D = A B^T (D is only written)
  // K-grouped without a device copy of the sizes: K_g travel in the parameters (read where problem.routing is null).
  int ks_inline[kMaxInlineKGroups];
  // K-grouped FP8 (per-expert packed K-major blocks): 2 descriptors per expert (A at 2g, B at 2g + 1), written by
  // the stream-ordered descriptor step (sm90/kgrouped_descriptors.cuh) before this launch; problem.routing then
  // points at that step's sanitised sizes.
  const TmaDescriptor* kgrouped_tma;
  // Kernels that store D through TMA (gemm_tma_store): bf16 [rows, N] with row stride ldd, or [G, capacity, N]
  // (masked), box {64, 64}, 128B swizzle; FP32 D: fp32 [M, N] (dense) or [G, M, N] (k-grouped), box {32, 64}, 128B
  // swizzle.
  TmaDescriptor tma_d;
  // D = C + A B^T storing through TMA (gemm_c_prefetch): C, or D itself when C is D, loaded by TMA into the staging
  // buffers during the tile's mainloop; D's element type, box and swizzle, C's own strides.
  TmaDescriptor tma_c;
  // FP32 D through TMA with C being D (in-place accumulation): tiles whose reduction spans at least this many K
  // elements add their result into D by TMA reduce-add instead of loading C (fp32_reduce_min_k); 0: never.
  int reduce_min_k;
  // FP8 packed group ends (gemm_sfa_shifted): A's scales' 4-row tail box, {4, 1}, loaded after the tile's block_m
  // rows. (Last, so that every other field keeps its offset.)
  TmaDescriptor tma_sfa_tail;
};

// Parameters of the k-grouped FP8 descriptor step (sm90/kgrouped_descriptors.cuh).
struct KGroupedDescriptorParams {
  TmaDescriptor a_template;  // uint8 rank 2 {K, M}, box {128, block_m}, 128B swizzle
  TmaDescriptor b_template;  // uint8 rank 2 {K, N}, box {128, block_n}, 128B swizzle
  const unsigned char* a;    // packed A: expert g's [M, K_g] block at a + M * k_offset(g)
  const unsigned char* b;    // packed B: expert g's [N, K_g] block at b + N * k_offset(g)
  long long m, n;
  int num_groups;
  int capacity;          // sum of the host sizes: the packed buffers hold this many K columns in total
  const int* ks_device;  // int32 [G], or null: sizes in ks_inline
  int ks_inline[kMaxInlineKGroups];
  TmaDescriptor* descriptors;  // out: [2 * G]: A of expert g at 2g, B at 2g + 1
  int* ks_out;                 // out: [G] sanitised K_g, what the GEMM's scheduler reads
};

// Tile widths the kernel supports: multiples of 16 (WGMMA N) up to 192 (the accumulators of two copies of the
// tile, the WGMMA target and the promoted result, must fit in a math thread's 232 registers), such that every tile
// touches at most two 128-column scale blocks of B: block_n - gcd(block_n, 128) <= 128.
MOEGEMM_HD constexpr int gcd_of(int a, int b) { return b == 0 ? a : gcd_of(b, a % b); }
MOEGEMM_HD constexpr bool fp8_1d2d_block_n_supported(int block_n) {
  return block_n >= 16 && block_n <= 192 && block_n % 16 == 0 && block_n - gcd_of(block_n, 128) <= 128;
}

// Recipes with FP32 output: multiples of 16 up to 160 (at 192 the result array, with the per-column scales or the
// FP32 epilogue, no longer stays in registers: 384 bytes of stack in the compile check).
MOEGEMM_HD constexpr bool fp32_out_block_n_supported(int block_n) {
  return block_n >= 16 && block_n <= 160 && block_n % 16 == 0;
}

// BF16 with BF16 output: multiples of 16 up to 192 (no scale blocks to respect), and 256: one m64n256 WGMMA per
// warpgroup and K step, the same 128 accumulator registers as a 256x128 tile's two waves.
MOEGEMM_HD constexpr bool bf16_block_n_supported(int block_n) {
  return block_n >= 16 && block_n % 16 == 0 && (block_n <= 192 || block_n == 256);
}

// Recipe (1,128,128): where each K block's one or two B block scales come from.
// - Copied into the stage by the producer (cp.async, one more arrival on the stage's full barrier), read by the math
//   warps with ld.shared: 64-row tiles (decode), K splits, fixed-K kernels of at most 4 K blocks, and 128-row tiles
//   at most 64 wide with K at run time (the M = 128 plans: each K block of B streams in sooner than a global read one
//   block ahead returns; against that read, on an H100: 128x32x10 +2.8-3.5%, 128x64x8 +0.4-5.2%, while 128x128,
//   128x144 and 128x192 tiles ran 0.8-2.7% slower with the copy; docs/results/2026-12-07-m128-bscale.md).
// - Elsewhere read by the math warps from global memory, issued one K block ahead (b_block_scales_ahead): the stage's
//   full barrier then waits for the TMA bytes alone. On 128- and 256-row tiles this measured +1.7-2.3% on dense
//   M = 4096 (4096 x 4096 x 7168 +4.2-4.4%, 4096 x 7168 x 16384 +5.5-10%), +2.4-2.9% on contiguous and +2.3-3.5% on
//   masked expected M 1024 (H100), but -2% to -4% on 4096 x 32768 x 512 (4 K blocks: the tile's first read is not
//   hidden) (docs/results/2026-12-06-bscale-reads.md, runs 3-5). (ptxas issues the load late, close to its use: a
//   timing probe without any B-scale transfer ran another 1.5-3% faster; a per-warp cp.async slot a block ahead ran
//   2% slower than the copy.) The shared-memory layout keeps the copy's 16 bytes per stage either way.
// Earlier kernels measured the global read slower (docs/results/2026-12-03-bscale-path.md).
MOEGEMM_HD constexpr bool b_block_scales_in_stages(int recipe, int block_m, int block_n, int split_k,
                                                   int fixed_k_blocks) {
  return recipe == static_cast<int>(GemmRecipe::kFp8_1d2d) &&
         (block_m == 64 || split_k > 1 || (fixed_k_blocks > 0 && fixed_k_blocks <= 4) ||
          (block_m == 128 && block_n <= 64 && fixed_k_blocks == 0));
}
MOEGEMM_HD constexpr bool b_block_scales_ahead(int recipe, int block_m, int block_n, int split_k, int fixed_k_blocks) {
  return recipe == static_cast<int>(GemmRecipe::kFp8_1d2d) &&
         !b_block_scales_in_stages(recipe, block_m, block_n, split_k, fixed_k_blocks);
}

// Of those, fixed-K kernels of at most 128 K blocks (the 256-row dense, group-ends and masked kernels) read the
// tile's whole scale row at the tile's start, held across each math warp's lanes (lane l: K blocks l, 32 + l, 64 + l,
// 96 + l; up to four registers per scale block), and take each K block's scales by a shuffle: no memory access for
// them in the K loop. Against the one-ahead read, per group of rows: dense M = 4096 256x128 +0.7% to +1.1%, group
// ends +1.5% to +1.9%, masked expected M 192 +0.7% to +1.1% (H100, docs/results/2026-12-06-bscale-lanes.md,
// runs 1-3). Run-time-K kernels: below.
MOEGEMM_HD constexpr bool b_block_scales_in_lanes(int recipe, int block_m, int block_n, int split_k,
                                                  int fixed_k_blocks) {
  return b_block_scales_ahead(recipe, block_m, block_n, split_k, fixed_k_blocks) && fixed_k_blocks > 0 &&
         fixed_k_blocks <= 128;
}
// Dense kernels with K at run time on tiles wider than 128 columns (128x192, 128x144) hold them across the lanes in
// two 32-block chunks per scale block (the current and the next, loaded at the tile's start; the one after next
// loaded every 32 K blocks in a warp-uniform branch) and take each K block's pair by a shuffle: +0.8% to +2.1% on
// their dense rows (H100, docs/results/2026-12-06-bscale-lanes.md, run 5). On 128x128 and 128x64 tiles the same form
// measured -3.9% (4 K blocks) to +1.4%, and on row-to-group tiles 1-2% slower at K = 2048 (runs 1-2): those keep
// the one-ahead read, as do clustered tiles (cluster_ctas > 1: not measured with it).
MOEGEMM_HD constexpr bool b_block_scales_in_lane_chunks(int recipe, int kind, int block_m, int block_n, int split_k,
                                                        int fixed_k_blocks, int cluster_ctas) {
  return b_block_scales_ahead(recipe, block_m, block_n, split_k, fixed_k_blocks) && fixed_k_blocks == 0 &&
         kind == static_cast<int>(GroupedKind::kDense) && block_n > 128 && cluster_ctas == 1;
}
// Registers per scale block and lane that b_block_scales_in_lanes takes.
MOEGEMM_HD constexpr int b_block_scale_lane_chunks(int fixed_k_blocks) { return (fixed_k_blocks + 31) / 32; }

// Copies of the FP8 (1,128,128) K loop a kernel holds: one for tiles inside one 128-column scale block of B, and
// one per column where a tile can cross into the next block (dispatch_split in sm90/scale_split.cuh: the multiples
// of gcd(block_n, 128) up to 128 and below block_n).
MOEGEMM_HD constexpr int fp8_k_loop_copies(int block_n) {
  const int g = gcd_of(block_n, 128);
  const int highest = block_n - g < 128 ? block_n - g : 128;
  return g >= block_n ? 1 : 1 + highest / g;
}

// K blocks per iteration of the FP8 K loop. Unrolled, the next block's stage wait, scale loads and descriptors have
// no back-edge in front of them, and ptxas issues them among the previous block's last promotion FFMAs
// (docs/results/2026-12-04-k-loop-unroll.md):
// - 4 where the kernel holds one copy of the loop (B scaled per row, or block_n dividing 128): +1-8% on 256x128
//   and 128x128 tiles; 2 and 3 measured lower. Rows with K = 512 and 576 lose 2-4%, and a rolled loop for short
//   K did not win that back.
// - 2 on 192-row tiles (three math warpgroups at 160 registers): k-grouped 2% faster than 4 and 6% faster than 1
//   (docs/results/2026-12-04-three-warpgroups.md, run 3); unrolled 4 times, ptxas spilled the tile's scheduler state.
// - 2 on 128-row tiles with up to three copies (128x192: row-to-group +1-2.4%, dense +1-2%); 64x96 measured level.
// - 1 elsewhere: unrolled, the copies made the code 2-3x larger (128x144, nine copies: -7% at 4, -4% at 2).
MOEGEMM_HD constexpr int fp8_k_loop_unroll(int recipe, int block_m, int block_n) {
  if (recipe_is_bf16(recipe)) return 1;
  const int copies = recipe == static_cast<int>(GemmRecipe::kFp8_1d1d) ? 1 : fp8_k_loop_copies(block_n);
  if (copies == 1) return block_m == 192 ? 2 : 4;
  return block_m == 128 && copies <= 3 ? 2 : 1;
}

// BF16 tiles that keep one K block's WGMMAs in flight and free its stage a block later: no drain of the tensor pipe
// between blocks. Dense and masked tiles with 6 or more stages, no K split (dense 64-row decode tiles +1-3%,
// 64x128x8 FP32-out +8%, masked 64x96x10 +0.5-2%). With 3 stages (256x128) the late release leaves two stages for
// loads, 2-7% slower; 4 and 5 stages measured mixed, and k-grouped 128x128x5 0.5-4% slower
// (docs/results/2026-12-03-promotion-register-reads.md, runs 9 and 10; docs/results/2026-12-04-k-loop-unroll.md).
MOEGEMM_HD constexpr bool bf16_deferred_release(int recipe, int kind, int stages, int split_k) {
  return recipe_is_bf16(recipe) && split_k == 1 && stages >= 6 &&
         (kind == static_cast<int>(GroupedKind::kDense) || kind == static_cast<int>(GroupedKind::kMasked));
}

// Elements of K per pipeline stage: every stage row is 128 bytes (one 128-byte swizzle atom), so 128 FP8 values
// (one scale block) or 64 BF16 values.
MOEGEMM_HD constexpr int stage_k(int recipe) { return recipe_is_bf16(recipe) ? 64 : kFp8BlockK; }

// Consumer warpgroups of a block_m-row tile: one per 64 rows up to three. A 256-row tile (gemm_tall_tile_supported)
// gives each of two warpgroups two 64-row waves: WGMMA is m64, and four warpgroups would leave each too few
// registers for its accumulators. A 192-row tile (gemm_three_warpgroups_supported) runs three warpgroups of one wave.
MOEGEMM_HD constexpr int gemm_math_warpgroups(int block_m) { return block_m == 192 ? 3 : block_m >= 128 ? 2 : 1; }

// Registers per thread after setmaxnreg: the producer warpgroup gives up what the math warpgroups take, within the
// SM's 64K (128 x (producer + warpgroups x math) <= 65536). Three math warpgroups keep 160 each (recipe (1,1,128):
// two FP32 arrays of block_n / 2 for block_n <= 128), the producer 32.
MOEGEMM_HD constexpr int gemm_producer_registers(int math_warpgroups) { return math_warpgroups == 3 ? 32 : 40; }
MOEGEMM_HD constexpr int gemm_math_registers(int math_warpgroups) {
  return math_warpgroups == 1 ? 240 : math_warpgroups == 2 ? 232 : 160;
}
static_assert(128 * (gemm_producer_registers(3) + 3 * gemm_math_registers(3)) <= 65536 &&
                  128 * (gemm_producer_registers(2) + 2 * gemm_math_registers(2)) <= 65536,
              "setmaxnreg: the warpgroups' registers fit in the register file");

// Kernels specialised on the problem's K block count (gemm_kernel's kFixedKBlocks > 0): FP8 (1,128,128) 256-row
// tiles (two math warpgroups of two waves) without a K split, dense, group ends and masked (every tile of the
// problem runs all of K once). The K loop then has a constant trip count and no peeled first block, and runs
// fp8_fixed_k_unroll blocks per iteration, as the anchor's JIT builds its kernels (K a compile-time constant).
// Measured on an H100 against the run-time K loop (docs/results/2026-12-06-bf16-kgrouped-band.md, runs 8-12):
// 256x128 dense rows -0.7% to +4.4% (geomean +1.1%), group ends -0.8% to +4.2% (packed segments +1.7% to +4.2%),
// masked expected M 192 -0.3% to +1.4%. Not taken: 128-row tiles (dense 128x192 -4.3% and -8.7% over four rounds,
// masked 128x192 +0.5% to +1.1%), row-to-group (-1.1% to +2.7%), 64-row tiles and K splits.
MOEGEMM_HD constexpr bool gemm_fixed_k_supported(int recipe, int kind, int block_m, int split_k) {
  return recipe == static_cast<int>(GemmRecipe::kFp8_1d2d) && kind != static_cast<int>(GroupedKind::kKGrouped) &&
         kind != static_cast<int>(GroupedKind::kContiguousRowToGroup) && block_m == 256 && split_k == 1;
}

// K blocks per iteration of a fixed-K loop: 8 where the kernel holds at most two copies of it (256x128, 256x64: the
// loop of runs 8-9 there), else the run-time loop's (256x96, three copies: 1).
MOEGEMM_HD constexpr int fp8_fixed_k_unroll(int block_m, int block_n) {
  return fp8_k_loop_copies(block_n) <= 2 ? 8 : fp8_k_loop_unroll(static_cast<int>(GemmRecipe::kFp8_1d2d), block_m, block_n);
}

// Layouts whose every tile belongs to one group and is bounded by a row limit alone (dense, group ends, masked): a
// tile computes one pass, and its rows past the limit are simply not stored. (Row-to-group tiles run a pass per
// expert present and store rows by their routing; k-grouped tiles have FP32 D.)
MOEGEMM_HD constexpr bool gemm_row_limited_tiles(int kind) {
  return kind == static_cast<int>(GroupedKind::kDense) || kind == static_cast<int>(GroupedKind::kContiguousGroupEnds) ||
         kind == static_cast<int>(GroupedKind::kMasked);
}

MOEGEMM_HD constexpr bool recipe_has_bf16_out(int recipe) {
  return recipe == static_cast<int>(GemmRecipe::kFp8_1d2d) || recipe == static_cast<int>(GemmRecipe::kBf16) ||
         recipe == static_cast<int>(GemmRecipe::kBf16AddC);
}

// The tiles 256 rows high support (the kernel's static check, the planner's candidates and the override check):
// BF16 D (recipe (1,128,128): a math thread holds two block_n-wide result rows and the accumulator; BF16 with or
// without C: two block_n-wide accumulators; the FP32-output epilogues store one wave), block_n at most 128, no
// cluster along M, and the dense, m-grouped contiguous (both forms) or masked layout. A row-to-group tile runs one
// pass per expert in its 256 rows, each storing its expert's rows of both waves into the staging buffers, and the
// last pass stores them (the planner does not pick them for that layout: measured slower, plan/gemm_plan.cpp).
MOEGEMM_HD constexpr bool gemm_tall_tile_supported(int recipe, int kind, int block_n, int cluster_m) {
  return recipe_has_bf16_out(recipe) &&
         (gemm_row_limited_tiles(kind) || kind == static_cast<int>(GroupedKind::kContiguousRowToGroup)) &&
         block_n <= 128 && cluster_m == 1;
}

// The tiles 192 rows high: three math warpgroups of one 64-row wave each, so that while one warpgroup promotes its
// accumulators (recipe (1,1,128): a multiply-add per value and K block, with both operands' scales) two others
// keep WGMMAs queued; for BF16 with FP32 D the tile shape alone (fewer waves on some shapes). FP32 D through the TMA
// epilogue (dense or k-grouped), block_n <= 128 (FP8: two arrays of block_n / 2 FP32 values in
// gemm_math_registers(3)), and a multiple of 32.
MOEGEMM_HD constexpr bool gemm_three_warpgroups_supported(int recipe, int kind, int block_n) {
  return (recipe == static_cast<int>(GemmRecipe::kFp8_1d1d) || recipe == static_cast<int>(GemmRecipe::kBf16Fp32)) &&
         (kind == static_cast<int>(GroupedKind::kDense) || kind == static_cast<int>(GroupedKind::kKGrouped)) &&
         block_n % 32 == 0 && block_n <= 128;
}

// Recipe (1,1,128) FP32 D in place, handed over by reduce-adds (kFp32ReduceMinK), on dense 128-row tiles: the
// epilogue issues one 32-column box and the next tile one more after each of its first K blocks (peeled off its K
// loop), instead of all at once. These tiles hold 4 stages beside the FP32 staging buffer, so from the next tile's
// fifth K block on its loads queued in the copy engine behind the whole result's reduce-adds. Measured against all
// at once (docs/results/2026-12-04-decode-stride.md, runs 7-9): dense weight gradients in place on 128x128 tiles
// 1.3-5.2% faster in each of three runs. Not elsewhere: the k-grouped 192x128 tile gained 0-3% but spills past the
// compile tests' budget with the peeled blocks; the dense 192-row tile spilled and ran 4% slower; BF16 FP32 D (5
// stages) measured level.
MOEGEMM_HD constexpr bool gemm_spread_fp32_reduce(int recipe, int kind, int block_m) {
  return recipe == static_cast<int>(GemmRecipe::kFp8_1d1d) && kind == static_cast<int>(GroupedKind::kDense) &&
         block_m == 128;
}

// FP32 D (weight gradients, D = C + A B^T) through TMA, dense and k-grouped, on tiles of whole 32-column boxes: C's
// tile is loaded by TMA into the staging buffer early in the tile (its bytes arrive while the WGMMAs run), the
// epilogue adds the accumulators to it in shared memory and hands the sum to the copy engine. Before, each thread
// loaded C and stored D itself after the mainloop: 8 bytes per output in and out with no tensor work to hide them,
// which bounds the short-K and many-expert shapes (G = 16 k-grouped moves C and D 16 times). The descriptors are
// [M, N] (dense) and [G, M, N] (k-grouped: each expert's box stops at its M rows), so every wave goes whole.
MOEGEMM_HD constexpr bool gemm_fp32_tma_epilogue(int kind, int block_n) {
  return (kind == static_cast<int>(GroupedKind::kDense) || kind == static_cast<int>(GroupedKind::kKGrouped)) &&
         block_n % 32 == 0;
}

// BF16 with FP32 D through TMA on 128-row tiles (no cluster, no K split): the two math warpgroups ping-pong. Each
// takes every other tile of the CTA whole, as two 64-row waves whose WGMMAs go out interleaved (two independent
// chains; one warpgroup alone drives the tensor cores at about 60% of their rate, docs/results/2026-12-04-fp8-turns.md,
// run 4) with one K block in flight, and skips the other's K blocks in
// the stage ring. A warpgroup starts a K loop once the other is past its last stage wait of the tile before (named
// barrier: a stage's full barrier is waited on by parity, so no warpgroup may wait more than one phase ahead), so
// one warpgroup's epilogue (C added in the staging buffer, the stores or reduce-adds issued) runs while the other's
// WGMMAs keep the tensor cores busy; before, both ran it together with the tensor cores idle. The staging buffer keeps
// one wave per warpgroup: wave 1 follows wave 0 through it (with C, wave 1's C is loaded once wave 0 has left).
// Measured against both warpgroups on one tile (docs/results/2026-12-04-bf16-fp32-tiles.md, runs 3-4): TN FP32 D + C
// with K of 512-2048 5-9% faster, long K level; k-grouped 0.981x the time (geomean of 12 rows over four rounds; G = 16
// in place 5-11% faster, the C-distinct rows of 4096 x 7168 at G = 4 and 8 up to 3% slower). FP8 weight gradients
// promote every K block: one warpgroup alone would leave the tensor cores idle while it promotes.
MOEGEMM_HD constexpr bool gemm_ping_pong(int recipe, int kind, int block_m, int block_n, int cluster_m, int cluster_n,
                                         int split_k) {
  return recipe == static_cast<int>(GemmRecipe::kBf16Fp32) && gemm_fp32_tma_epilogue(kind, block_n) &&
         block_m == 128 && cluster_m == 1 && cluster_n == 1 && split_k == 1;
}

// Byte offset of FP32 D element (row, col) of a 64-row wave in its staging buffer: 32-column boxes of 64 rows x 128
// bytes, 16-byte chunks 128B-swizzled as in tma_staging_offset.
MOEGEMM_HD constexpr int tma_staging_offset_f32(int row, int col) {
  return (col / 32) * (64 * 128) + row * 128 + ((((col % 32) / 4) ^ (row % 8)) * 16) + (col % 4) * 4;
}

// Kernels whose epilogue stores D through TMA: BF16 D on tiles of whole 64-column boxes in a layout of row-limited
// tiles. A warpgroup writes its 64-row wave into a 128B-swizzled staging buffer (conflict-free 4-byte writes), and
// one thread hands it to the copy engine: the warps go on to the next tile while D drains, instead of waiting in
// their own stores when D's writes outrun memory (short-K shapes, where D is as many bytes as the operands). The
// copy engine bounds rows only by D's extents, so a grouped wave that reaches past its group's row limit is stored
// by the threads instead, 16 bytes each from the same staging buffer, row by row below the limit. Row-to-group
// tiles fill the buffer over their passes (each pass its expert's rows, the first also the padding rows' zeros:
// row_action) and the last pass stores it; its rows are bounded by the tile's row limit as for group ends.
MOEGEMM_HD constexpr bool gemm_tma_store(int recipe, int kind, int block_n) {
  if (recipe_has_fp32_out(recipe)) return gemm_fp32_tma_epilogue(kind, block_n);
  return recipe_has_bf16_out(recipe) &&
         (gemm_row_limited_tiles(kind) || kind == static_cast<int>(GroupedKind::kContiguousRowToGroup)) &&
         block_n % 64 == 0;
}

// Byte offset of D element (row, col) of a 64-row wave in its TMA staging buffer: 64-column boxes of 64 rows x 128
// bytes, whose 16-byte chunks are 128B-swizzled (chunk c of row r sits at c ^ (r % 8)), as the descriptor's box
// expects. A warp's quads write 8 rows at once: the 8 rows land in 8 different chunks, so 4-byte writes of a
// warp hit 32 different banks (tests/cpu/test_stage_bytes.cpp checks both).
MOEGEMM_HD constexpr int tma_staging_offset(int row, int col) {
  return (col / 64) * (64 * 128) + row * 128 + ((((col % 64) / 8) ^ (row % 8)) * 16) + (col % 8) * 2;
}

// D = C + A B^T on a tile that stores D through TMA (BF16 D with C; FP32 D when the call adds C): the copy engine
// loads C's tile into the staging buffers while the tile's WGMMAs run (issued after its first K block's), and the
// epilogue adds it from shared memory. Without it each thread loads its C values from global memory in the
// epilogue, two dependent round trips that no tensor work overlaps (C is as many bytes as D).
MOEGEMM_HD constexpr bool recipe_prefetches_c(int recipe) {
  return recipe == static_cast<int>(GemmRecipe::kBf16AddC) || recipe_has_fp32_out(recipe);
}
MOEGEMM_HD constexpr bool gemm_c_prefetch(int recipe, int kind, int block_n) {
  return recipe_prefetches_c(recipe) && gemm_tma_store(recipe, kind, block_n);
}

// D += A B^T in place (FP32 D through TMA, C is D): a tile whose reduction spans at least this many K elements
// hands its result to the copy engine as a reduce-add, and loads no C: its tile of D is read (by the memory system)
// and written once, and the SM's copy engine carries no C into shared memory beside the stages. Shorter tiles load C
// as with a distinct C: when the epilogue's traffic dominates, the reduce-adds are the slower of the two.
// Measured, reduce-add against loading C (docs/results/2026-12-04-fp32-epilogue.md): K = 512 0.71x (FP8) and
// 0.91-0.93x (BF16); K = 1536 1.12-1.17x; K = 2048 1.07-1.14x; longer K 1.00-1.05x.
inline constexpr int kFp32ReduceMinK = 1024;

// 64-row WGMMA waves per math warpgroup: two for 256-row tiles, else one.
MOEGEMM_HD constexpr int gemm_waves(int block_m) { return block_m / (64 * gemm_math_warpgroups(block_m)); }

// Split K (k_splits > 1): the CTAs of a cluster compute the same tile, each over its own slice of the K blocks
// (split_k_begin(num_kb, splits, r) to split_k_begin(num_kb, splits, r + 1)), and ranks 1..splits-1 push their FP32
// partial results into rank 0's shared memory, which adds them in rank order and stores the tile: deterministic,
// and a narrow problem (decode on N = 576: 36 tiles of 64x16) keeps splits times as many SMs streaming B. For the
// dense layout on 64- or 128-row tiles up to 64 wide (the partials take split_k_partial_bytes, at most 32 KiB, per
// extra rank), not recipe (1,1,128).
inline constexpr int kMaxKSplits = 4;

// Pairs of CTAs along N sharing A (1x2 clusters; each CTA multicasts half of the tile's A rows): tiles of 128 rows
// or more, on the dense layout with a K-major A (every FP8 recipe; BF16 with a_mn_major false), or on the k-grouped
// layout with FP8 recipe (1,1,128) (through each expert's descriptor, whose box is half the tile's rows). One rule for
// the kernel's static check, the planner's validation and the launch.
MOEGEMM_HD constexpr bool gemm_pair_along_n_supported(int recipe, int kind, int block_m, bool a_mn_major) {
  return block_m >= 128 && !a_mn_major &&
         (kind == static_cast<int>(GroupedKind::kDense) ||
          (kind == static_cast<int>(GroupedKind::kKGrouped) && recipe == static_cast<int>(GemmRecipe::kFp8_1d1d)));
}
MOEGEMM_HD constexpr int split_k_begin(int num_kb, int splits, int rank) {
  return static_cast<int>(static_cast<long long>(num_kb) * rank / splits);
}
MOEGEMM_HD constexpr bool gemm_split_k_supported(int recipe, int kind, int block_m, int block_n, int splits) {
  return splits == 1 || (splits >= 2 && splits <= kMaxKSplits && kind == static_cast<int>(GroupedKind::kDense) &&
                         (block_m == 64 || block_m == 128) && block_n <= 64 &&
                         recipe != static_cast<int>(GemmRecipe::kFp8_1d1d));
}
// One extra rank's partial results in rank 0's shared memory: per math warpgroup, 128 threads x block_n / 2 FP32
// accumulators (split_k_partial_wg_bytes), one warpgroup's after the other.
MOEGEMM_HD constexpr int split_k_partial_wg_bytes(int block_n) { return 128 * (block_n / 2) * 4; }
MOEGEMM_HD constexpr int split_k_partial_bytes(int block_m, int block_n) {
  return gemm_math_warpgroups(block_m) * split_k_partial_wg_bytes(block_n);
}

// Shared memory of one CTA, in bytes from a 1024-byte aligned base (128B-swizzle atoms need that alignment):
// kStages x [A tile | B tile | A scales | B scales], the BF16 staging of D, the barriers. Staging per math
// warpgroup: with bounded stores one padded 64-row buffer (reused by each of a 256-row tile's waves); with TMA
// stores (tma_store = gemm_tma_store(...)) one swizzled 64-row buffer per wave, 1024-byte aligned, so that a
// wave's buffer is next overwritten a whole tile later.
struct GemmSmemLayout {
  int a_bytes, b_bytes, sfa_bytes;  // per stage
  // Per stage, B's scales: recipe (1,1,128) B's row scales (TMA); recipe (1,128,128) the one or
  // two 128x128-block scales of the tile's columns at this K block (two floats, cp.async; reserved, unused where the
  // math warps read them from global memory: b_block_scales_ahead); otherwise none.
  int sfb_bytes;
  // Bytes per staged D row. Bounded stores: +16 keeps the quad-wise writes bank-conflict free, and the epilogue
  // keeps the row's store decision (RowAction) in those 16 bytes. TMA stores: block_n * 2, in 64-column boxes of
  // 64 rows x 128 bytes (the swizzle, not padding, spreads the writes over the banks).
  int stage_pitch;
  int d_bytes_per_wg;
  int a_offset, b_offset, sfa_offset, sfb_offset, d_offset, barrier_offset;
  int partial_offset;  // split K: ranks 1..splits-1's partial results (in rank 0), split_k_partial_bytes each
  // Row-to-group (gemm_tile_ring): kTileRingSlots slots of 16 bytes, then each slot's full and empty barriers.
  int tile_ring_offset;
  int bytes;         // from the aligned base
  int launch_bytes;  // dynamic shared memory to request: bytes + slack for aligning the base
  // FP32 D through TMA with half a staging buffer per math warpgroup (gemm_half_staging): the epilogue stores the
  // tile in two passes of block_n / 2 columns through it.
  bool half_staging;
};

// Shared memory an SM90 CTA may use: the H100/H200 opt-in limit, 227 KiB.
inline constexpr int kSm90MaxSmemBytes = 232448;

// FP8 group-ends kernels whose experts may start at any row (segment alignment 1 or 2) load A's scales shifted: the
// copy engine faults (an illegal instruction) on a box whose innermost coordinate is not 16-byte aligned, and A's
// scales are MN-major FP32, so a box can only start at a multiple of 4 rows (seen on the H200:
// docs/results/2026-12-05-packed-group-ends-prepared.md). Their tiles load the block_m rows from the tile's first row
// rounded down to 4, then the 4 rows after those in a second box (kSfaTailRows), into a stage region 16 bytes
// longer; the consumers read from the row's shift. (Copying them with 4-byte cp.async instead ran 12-19% slower.)
inline constexpr int kSfaTailRows = 4;
MOEGEMM_HD constexpr bool gemm_sfa_shifted(int recipe, int kind, int segment_alignment) {
  return !recipe_is_bf16(recipe) && kind == static_cast<int>(GroupedKind::kContiguousGroupEnds) &&
         segment_alignment % 4 != 0;
}

// Bytes the TMA boxes of one stage deliver (out-of-bounds elements count too) when A's box holds a_rows rows: A's
// 128-byte rows, B's, A's scales (FP8) and B's row scales (recipe (1,1,128)).
MOEGEMM_HD constexpr unsigned gemm_stage_tx_bytes(int a_rows, int block_n, int recipe) {
  const bool row_scaled_b = recipe == static_cast<int>(GemmRecipe::kFp8_1d1d);
  const bool unscaled = recipe_is_bf16(recipe);
  return static_cast<unsigned>(a_rows * 128 + block_n * 128 + (unscaled ? 0 : a_rows * 4) +
                               (row_scaled_b ? block_n * 4 : 0));
}

// Rows of A's TMA box (and of its scales' box). A K-major A with fewer rows than the tile (decode: M < block_m, one
// row block) gets a box of its rows rounded up to 8 instead of block_m rows: the copy engine spends time on every
// row it zero-fills (dense M = 1 on a 64-row tile: 27.6 us against 18.1 us at M = 64 with the same kernel). WGMMA
// still reads block_m rows of the stage; the rows past the box are stale and reach only accumulator rows past M,
// which no epilogue stores (each output row depends on its own A row alone). Masked slabs are in bounds (capacity
// rows): their scales keep block_m rows and A has boxes of its own (kMaskedABoxRows). MN-major A has [64 K][64 M]
// boxes, and clusters split rows between CTAs: those keep block_m.
MOEGEMM_HD constexpr int a_box_rows(long long a_rows, int block_m, bool k_major_2d, int cluster_m) {
  if (!k_major_2d || cluster_m != 1 || a_rows >= block_m) return block_m;
  return static_cast<int>((a_rows + 7) / 8 * 8);
}

// Masked A arrives in boxes of this many rows, as many as the tile's valid rows need (masked_a_boxes): an expert
// of a few tokens on a 64-row tile takes one box (4 KiB a stage instead of 8). The slab is in bounds (capacity rows),
// so a box of block_m rows would copy the rows past the expert's count from memory. As with a_box_rows, the stage's
// rows past the boxes are stale and reach only accumulator rows at or past the count, which no epilogue stores.
inline constexpr int kMaskedABoxRows = 32;

// Boxes of kMaskedABoxRows rows a masked tile with `valid_rows` rows loads per stage: at least one (the lower half
// of a cluster pair may hold no row and still runs its K loop), at most block_m / kMaskedABoxRows.
MOEGEMM_HD constexpr int masked_a_boxes(int valid_rows, int block_m) {
  const int boxes = (valid_rows + kMaskedABoxRows - 1) / kMaskedABoxRows;
  return boxes < 1 ? 1 : (boxes > block_m / kMaskedABoxRows ? block_m / kMaskedABoxRows : boxes);
}

// Row-to-group kernels: the producer warp, which finds each tile's passes (the experts present in its rows) for its
// own copies anyway, hands them to the consumers through a ring of kTileRingSlots shared-memory slots, one per tile,
// each with a full and an empty barrier. The consumers then no longer scan the routing themselves at each tile's
// start, a global-memory round trip between two tiles' WGMMAs, and the slot says whether the tile's rows are all of
// one expert (TilePasses::uniform), which spares the epilogue its reads of the routing. The producer runs stages
// ahead, so the slot is usually written long before the consumers reach the tile.
inline constexpr int kTileRingSlots = 2;
MOEGEMM_HD constexpr bool gemm_tile_ring(int kind) {
  return kind == static_cast<int>(GroupedKind::kContiguousRowToGroup);
}

// Tiles that may stage their FP32 D in half a buffer (GemmSmemLayout::half_staging): recipe (1,1,128) through TMA,
// one 64-row wave per warpgroup (64-, 128- and 192-row tiles), whole 64-column halves, no K split. With a whole
// buffer a 192x128 tile holds 3 stages beside its 96 KiB of staging; the k-grouped rows ran at 712-989 TFLOPS on the
// H200 with L2 at half its throughput (docs/results/2026-12-07-wgrad-pairs.md), which fits two 40 KiB stages in
// flight at about 2 us each. Half a buffer makes room for a fourth. The epilogue then stores the tile in two
// passes of half its columns: the first pass's C (where loaded) prefetched during the mainloop as a whole tile's is,
// the second's loaded once the first pass has left the buffer; no spread reduce-adds (gemm_spread_fp32_reduce).
MOEGEMM_HD constexpr bool gemm_half_staging_supported(int recipe, int block_m, int block_n, int k_splits,
                                                      bool tma_store) {
  return recipe == static_cast<int>(GemmRecipe::kFp8_1d1d) && tma_store && block_n % 64 == 0 && k_splits == 1 &&
         gemm_waves(block_m) == 1;
}

// Recipe (1,1,128) stores FP32 results straight from the accumulators (no staging buffer) and loads B's row scales
// with each stage; recipe (1,128,128) gets the stage's B block scales by cp.async (not counted in
// gemm_stage_tx_bytes: the copying thread's cp.async arrival on the full barrier covers them). half_staging: FP32 D
// staged half a tile at a time (gemm_half_staging_supported tiles only).
MOEGEMM_HD constexpr GemmSmemLayout gemm_smem_layout_with(int block_m, int block_n, int stages, int recipe,
                                                          bool tma_store, int k_splits, bool sfa_shifted,
                                                          bool tile_ring, bool half_staging) {
  const bool row_scaled_b = recipe == static_cast<int>(GemmRecipe::kFp8_1d1d);
  const bool unscaled = recipe_is_bf16(recipe);
  const bool fp32_out = recipe_has_fp32_out(recipe);
  GemmSmemLayout l{};
  l.a_bytes = block_m * 128;  // 128-byte rows whatever the element type
  l.b_bytes = block_n * 128;
  l.sfa_bytes = unscaled ? 0 : align_up((block_m + (sfa_shifted ? kSfaTailRows : 0)) * 4, 128);
  l.sfb_bytes = row_scaled_b ? align_up(block_n * 4, 128) : recipe == static_cast<int>(GemmRecipe::kFp8_1d2d) ? 16 : 0;
  l.half_staging = half_staging;
  l.stage_pitch = fp32_out ? (tma_store ? (half_staging ? block_n * 2 : block_n * 4) : 0)
                  : tma_store ? block_n * 2
                              : block_n * 2 + 16;
  l.d_bytes_per_wg = 64 * l.stage_pitch * (tma_store ? gemm_waves(block_m) : 1);
  l.a_offset = 0;
  l.b_offset = l.a_offset + stages * l.a_bytes;
  l.sfa_offset = l.b_offset + stages * l.b_bytes;
  l.sfb_offset = l.sfa_offset + stages * l.sfa_bytes;
  l.d_offset = align_up(l.sfb_offset + stages * l.sfb_bytes, tma_store ? 1024 : 128);
  l.partial_offset = l.d_offset + gemm_math_warpgroups(block_m) * l.d_bytes_per_wg;
  if (k_splits > 1) l.partial_offset = align_up(l.partial_offset, 128);
  l.barrier_offset = align_up(l.partial_offset + (k_splits - 1) * split_k_partial_bytes(block_m, block_n), 8);
  l.bytes = l.barrier_offset + 2 * stages * 8;
  // C prefetch (gemm_c_prefetch): one barrier per staging buffer, after the stages' full and empty barriers.
  if (tma_store && recipe_prefetches_c(recipe)) l.bytes += gemm_math_warpgroups(block_m) * gemm_waves(block_m) * 8;
  // Split K: the partials' two barriers (full in rank 0, free in the others), after those.
  if (k_splits > 1) l.bytes += 2 * 8;
  if (tile_ring) {
    l.tile_ring_offset = align_up(l.bytes, 16);
    l.bytes = l.tile_ring_offset + kTileRingSlots * (16 + 2 * 8);
  }
  l.launch_bytes = l.bytes + 1024;
  return l;
}

// The kernel's layout: a whole staging buffer, or half of one where the stages asked for fit only beside half
// (gemm_half_staging_supported tiles). The planner's stage counts (gemm_max_stages) are those that fit beside a whole
// buffer: more stages are an override, for measuring them.
MOEGEMM_HD constexpr GemmSmemLayout gemm_smem_layout(int block_m, int block_n, int stages, int recipe = 0,
                                                     bool tma_store = false, int k_splits = 1, bool sfa_shifted = false,
                                                     bool tile_ring = false) {
  const GemmSmemLayout whole =
      gemm_smem_layout_with(block_m, block_n, stages, recipe, tma_store, k_splits, sfa_shifted, tile_ring, false);
  if (whole.launch_bytes <= kSm90MaxSmemBytes ||
      !gemm_half_staging_supported(recipe, block_m, block_n, k_splits, tma_store)) {
    return whole;
  }
  return gemm_smem_layout_with(block_m, block_n, stages, recipe, tma_store, k_splits, sfa_shifted, tile_ring, true);
}

// The tile widths a recipe's kernel supports (the planner's candidates and the kernel's static check).
MOEGEMM_HD constexpr bool gemm_block_n_supported(int recipe, int block_n) {
  return recipe_has_fp32_out(recipe) ? fp32_out_block_n_supported(block_n)
         : recipe_is_bf16(recipe)    ? bf16_block_n_supported(block_n)
                                     : fp8_1d2d_block_n_supported(block_n);
}

}  // namespace moegemm::kernels::sm90
