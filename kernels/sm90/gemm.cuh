// SM90 FP8 GEMM. Recipe (1,128,128): A scaled per row x 128 K, B per 128x128 block, BF16 D, for the dense,
// m-grouped contiguous (both forms) and m-grouped masked layouts. Recipe (1,1,128) (kRecipe = 1, weight gradients):
// A and B scaled per row x 128 K, FP32 D = C + A B^T; dense, and k-grouped (per-expert descriptors written by
// sm90/kgrouped_descriptors.cuh before the launch). BF16 (kRecipe 2, 3): see GemmRecipe.
//
// Structure (persistent, warp-specialised):
//   warpgroup kMathWGs (the last 128 threads): its first warp runs the producer loop and one elected lane issues
//     the TMA loads of A, B and A's scales (and, where b_block_scales_in_stages, copies B's block scales) into a
//     ring of kStages shared-memory stages, each guarded by a "full" and an "empty" mbarrier;
//   warpgroups 0..kMathWGs-1: each owns one or two 64-row waves of the block_m-row tile. Per 128-wide K block it
//     issues four m64nNk32 WGMMAs per wave into a fresh FP32 accumulator, waits, frees the stage, and promotes:
//     result += accumulator * scale_a[row] * scale_b[block] (BF16 accumulates over all of K instead, and on dense
//     tiles of 6+ stages frees each stage one K block later, with that block's WGMMAs still in flight). The
//     epilogue stages D in shared memory and stores it through TMA (row-limited tiles, gemm_tma_store) or with
//     16-byte coalesced writes, row by row, where the scheduler's row_action says so: no store ever reaches a row
//     outside the tile's group, whatever the capacity or the routing values. FP32 D accumulated in place hands long-K
//     tiles' results to TMA reduce-adds instead of loading C (params.reduce_min_k). BF16 with FP32 D on 128-row
//     tiles ping-pongs (gemm_ping_pong): each warpgroup takes every other tile whole, two waves, and the two take
//     turns at their K loops, so that one's epilogue overlaps the other's WGMMAs.
// Tile order comes from the one scheduler (common/scheduler.cuh), run identically by producer and consumers.
// With a K split (kSplitK > 1, decode on narrow N) the CTAs of a cluster walk the same tiles, each over its own
// slice of K, and rank 0 adds the others' partial results (pushed into its shared memory) before its epilogue.
#pragma once

#include "common/cluster_split.cuh"
#include "common/pipeline_cursor.cuh"
#include "common/platform.cuh"
#include "common/scheduler.cuh"
#include "sm90/epilogue.cuh"
#include "sm90/gemm_params.cuh"
#include "sm90/promotion.cuh"
#include "sm90/ptx.cuh"
#include "sm90/tile_passes.cuh"
#include "sm90/wgmma_ops.cuh"

namespace moegemm::kernels::sm90 {

// kClusterM = 2: pairs of CTAs along M share each B tile, CTA 0 loading it with TMA multicast into both CTAs'
// shared memory (half the L2 traffic for B). The scheduler's problem then has block_m = 2 * kBlockM.
// kClusterN = 2 (dense: recipe (1,128,128), recipe (1,1,128), or BF16 with A K-major; k-grouped: recipe (1,1,128)):
// pairs along N share each A tile, each CTA multicasting half of its rows (k-grouped: through the expert's
// descriptor, whose box is half the tile's rows); the scheduler's problem has block_n = 2 * kBlockN.
// kMnMajor (BF16 only): bit 0 = A is MN-major ([K, M] storage, M contiguous), bit 1 = B is MN-major ([K, N]).
// MN-major tiles arrive as TMA boxes of [64 K][64 MN] (8 KiB each, one 128-byte swizzle width of MN) and are read
// by WGMMA with the transpose flag.
// kSplitK > 1 (dense, 64- or 128-row tiles up to 64 wide): the kSplitK CTAs of a cluster compute the same tile over their
// own slices of K, and rank 0 adds the others' partial results in rank order before its epilogue
// (gemm_split_k_supported, sm90/gemm_params.cuh).
// kSegmentAlignment (contiguous group ends): each expert's rows start at the previous expert's end rounded up to it
// (a power of two; 1: packed). The other layouts keep the default.
// kFixedKBlocks > 0 (gemm_fixed_k_supported): the problem's K blocks, ceil(K / 128), as a compile-time constant;
// 0: read from the parameters.
template <int kBlockM, int kBlockN, int kStages, int kKind, int kClusterM, int kRecipe = 0, int kMnMajor = 0,
          int kClusterN = 1, int kSplitK = 1, int kSegmentAlignment = kGroupEndsAlignment, int kFixedKBlocks = 0>
__global__ void __launch_bounds__((gemm_math_warpgroups(kBlockM) + 1) * 128, 1) gemm_kernel(const __grid_constant__ GemmParams params) {
  constexpr bool kRowScaledB = kRecipe == static_cast<int>(GemmRecipe::kFp8_1d1d);
  constexpr bool kUnscaled = recipe_is_bf16(kRecipe);
  constexpr bool kBf16DeferredPlain = bf16_deferred_release(kRecipe, kKind, kStages, kSplitK);
  constexpr bool kFixedK = kFixedKBlocks > 0;
  static_assert(!kFixedK || gemm_fixed_k_supported(kRecipe, kKind, kBlockM, kSplitK),
                "a fixed K block count for a kernel that does not take one");
  constexpr int kUnrollK = kFixedK ? fp8_fixed_k_unroll(kBlockM, kBlockN) : fp8_k_loop_unroll(kRecipe, kBlockM, kBlockN);
  constexpr bool kFp32Out = recipe_has_fp32_out(kRecipe);
  constexpr bool kAddBf16C = kRecipe == static_cast<int>(GemmRecipe::kBf16AddC);
  constexpr bool kBlockScaledB = !kRowScaledB && !kUnscaled;  // recipe (1,128,128)
  // B's block scales: copied into each stage by the producer (b_block_scales_in_stages), or read by the math warps
  // from global memory (b_block_scales_ahead): the tile's whole row at its start, held across the warp's lanes
  // (b_block_scales_in_lanes: fixed-K kernels), 32-block chunks of it across the lanes (b_block_scales_in_lane_chunks:
  // dense run-time-K kernels on wide tiles), or one K block ahead.
  constexpr bool kBScalesInStages = b_block_scales_in_stages(kRecipe, kBlockM, kBlockN, kSplitK, kFixedKBlocks);
  constexpr bool kBScalesInLanes = b_block_scales_in_lanes(kRecipe, kBlockM, kBlockN, kSplitK, kFixedKBlocks);
  constexpr bool kBScalesInLaneChunks =
      b_block_scales_in_lane_chunks(kRecipe, kKind, kBlockM, kBlockN, kSplitK, kFixedKBlocks, kClusterM * kClusterN);
  constexpr bool kBScalesAhead = b_block_scales_ahead(kRecipe, kBlockM, kBlockN, kSplitK, kFixedKBlocks) &&
                                 !kBScalesInLanes && !kBScalesInLaneChunks;
  constexpr int kSfbLaneChunks = kBScalesInLanes ? b_block_scale_lane_chunks(kFixedKBlocks) : 1;
  // A's scales loaded from the tile's first row rounded down to 4, with a tail box (gemm_sfa_shifted: FP8 packed group
  // ends), and read from the row's shift.
  constexpr bool kSfaShifted = gemm_sfa_shifted(kRecipe, kKind, kSegmentAlignment);
  constexpr int kStageK = stage_k(kRecipe);  // K elements per stage
  constexpr int kRowBytes = 128;             // bytes per stage row: one 128-byte swizzle atom
  static_assert(kBlockM == 64 || kBlockM == 128 || kBlockM == 192 || kBlockM == 256,
                "block_m must be 64, 128, 192 or 256");
  static_assert(kBlockM != 192 || (gemm_three_warpgroups_supported(kRecipe, kKind, kBlockN) && kSplitK == 1),
                "192-row tiles: see gemm_three_warpgroups_supported (sm90/gemm_params.cuh)");
  static_assert(kBlockM != 256 || gemm_tall_tile_supported(kRecipe, kKind, kBlockN, kClusterM),
                "256-row tiles: see gemm_tall_tile_supported (sm90/gemm_params.cuh)");
  static_assert(gemm_block_n_supported(kRecipe, kBlockN), "block_n: see gemm_block_n_supported (sm90/gemm_params.cuh)");
  static_assert(!kRowScaledB || ((kKind == 0 || kKind == static_cast<int>(GroupedKind::kKGrouped)) && kClusterM == 1),
                "recipe (1,1,128): dense or k-grouped, no pair along M, so far");
  static_assert(!kUnscaled || kClusterM == 1 || (kMnMajor & 2) == 0,
                "BF16 pairs along M: B K-major (B multicast in boxes of half its 128-byte rows)");
  static_assert(!kAddBf16C || kKind == static_cast<int>(GroupedKind::kDense), "BF16 D with C: dense only");
  constexpr bool kMnMajorA = (kMnMajor & 1) != 0;
  constexpr bool kMnMajorB = (kMnMajor & 2) != 0;
  constexpr u32 kMnChunkBytes = 64 * 128;  // one [64 K rows][64 MN values] BF16 box
  static_assert(kMnMajor == 0 || kUnscaled, "MN-major operands: BF16 only (FP8 WGMMA reads K-major operands)");
  constexpr bool kKGrouped = kKind == static_cast<int>(GroupedKind::kKGrouped);
  constexpr bool kRowToGroup = kKind == static_cast<int>(GroupedKind::kContiguousRowToGroup);
  static_assert(!kMnMajorA || kKind == static_cast<int>(GroupedKind::kDense) || kKGrouped,
                "MN-major A: dense or k-grouped only");
  // K-grouped BF16 (the tn form): A [sum K, M] and B [sum K, N], both MN-major, one descriptor each; an expert's K
  // range is a coordinate offset, so nothing depends on the sizes but the scheduler, which reads them each launch.
  // K-grouped FP8 (1,1,128): per-expert K-major blocks packed back to back, through per-expert descriptors that a
  // stream-ordered step wrote before this launch (params.kgrouped_tma); the scales are one MN-major tensor each,
  // the expert's K range a coordinate offset.
  constexpr bool kKGroupedFp8 = kKGrouped && kRowScaledB;
  static_assert(!kKGrouped || kKGroupedFp8 || (kUnscaled && kFp32Out && kMnMajor == 3 && kClusterM == 1),
                "k-grouped: BF16 with FP32 D and MN-major A and B, or FP8 (1,1,128); no cluster, so far");
  static_assert(!kMnMajorB || kBlockN % 64 == 0, "MN-major B: block_n a multiple of 64 (whole 64-wide boxes)");
  // BF16 D in whole 64-column boxes, row-limited tiles: D leaves through TMA stores (gemm_tma_store).
  constexpr bool kTmaStore = gemm_tma_store(kRecipe, kKind, kBlockN);
  // BF16 D with C, or FP32 D, on such tiles: C arrives in the staging buffers by TMA during the mainloop
  // (gemm_c_prefetch); FP32 D only when the call adds C (params.add_c).
  constexpr bool kCPrefetch = gemm_c_prefetch(kRecipe, kKind, kBlockN);
  // FP32 D through TMA (gemm_fp32_tma_epilogue): its own epilogue, below.
  constexpr bool kFp32Tma = kFp32Out && kTmaStore;
  static_assert(gemm_split_k_supported(kRecipe, kKind, kBlockM, kBlockN, kSplitK) &&
                    (kSplitK == 1 || (kClusterM == 1 && kClusterN == 1)),
                "split K: see gemm_split_k_supported (sm90/gemm_params.cuh); no multicast pair besides");
  // Row-to-group: the producer hands each tile's passes to the consumers (gemm_tile_ring).
  constexpr bool kTileRing = gemm_tile_ring(kKind);
  constexpr GemmSmemLayout kSmem =
      gemm_smem_layout(kBlockM, kBlockN, kStages, kRecipe, kTmaStore, kSplitK, kSfaShifted, kTileRing);
  // Half staging (gemm_half_staging_supported): the FP32 epilogue stores the tile in two passes of kStagedCols
  // columns through this warpgroup's buffer (the first pass's C prefetched, the second's loaded between the passes);
  // no spread reduce-adds.
  constexpr bool kHalfStaging = kSmem.half_staging;
  constexpr int kStagedCols = kHalfStaging ? kBlockN / 2 : kBlockN;
  constexpr bool kSpreadFp32Reduce = kFp32Tma && !kHalfStaging && gemm_spread_fp32_reduce(kRecipe, kKind, kBlockM);
  constexpr int kMathWGs = gemm_math_warpgroups(kBlockM);
  // Ping-pong (gemm_ping_pong: BF16 with FP32 D on 128-row tiles): each math warpgroup computes every other tile of
  // the CTA whole, as two 64-row waves, so that one warpgroup's epilogue runs while the other's WGMMAs keep the tensor
  // cores busy.
  constexpr bool kPingPong = gemm_ping_pong(kRecipe, kKind, kBlockM, kBlockN, kClusterM, kClusterN, kSplitK);
  static_assert(!kPingPong || (kFp32Tma && !kSpreadFp32Reduce), "ping-pong: the FP32 TMA epilogue, not spread");
  // 64-row WGMMA waves per consumer warpgroup: wave v of warpgroup w holds tile rows v * kWaveRows + w * 64 on
  // (ping-pong: rows v * 64 on of the warpgroup's own tile).
  constexpr int kWaveRows = kPingPong ? 64 : 64 * kMathWGs;
  constexpr int kStagingWaves = gemm_waves(kBlockM);  // waves a warpgroup's staging holds (the shared-memory layout)
  constexpr int kWaves = kPingPong ? 2 : kStagingWaves;
  // Ping-pong tiles keep one K block's WGMMAs in flight too: one warpgroup alone feeds the tensor cores.
  constexpr bool kBf16Deferred = kBf16DeferredPlain || kPingPong;
  static_assert(kWaves == 1 || kWaves == 2, "the epilogue stores one or two waves");
  static_assert(!kHalfStaging || (kFp32Tma && !kPingPong && kWaves == 1 && kSplitK == 1),
                "half staging: the FP32 TMA epilogue of one wave per warpgroup (gemm_half_staging_supported)");
  // A warpgroup's second wave (tile rows kWaveRows + 64 w on) when the tile's rows end before it (row_limit: a masked
  // expert's count, an expert's end): no WGMMA, no promotion and no store for it (wave_has_rows). Masked and
  // group-ends tiles, where an expert's last tile often ends early (measured: docs/results/2026-12-06-empty-waves.md);
  // dense tiles keep the kernels measured before it (a second K loop changes their code, and only a last block of
  // rows could use it). Row-to-group tiles run passes over all their rows and keep both waves.
  constexpr bool kSkipEmptyWaves =
      kWaves == 2 && !kPingPong && (kKind == static_cast<int>(GroupedKind::kMasked) ||
                                    kKind == static_cast<int>(GroupedKind::kContiguousGroupEnds));
  // (No C prefetch on those layouts: its loads would fill both waves' buffers, and each wave wait for its own.)
  static_assert(!(kSkipEmptyWaves && kCPrefetch));
  constexpr GroupedKind kLayout = static_cast<GroupedKind>(kKind);
  constexpr bool kMasked = kLayout == GroupedKind::kMasked;
  static_assert(kClusterM == 1 || kClusterM == 2, "clusters of 1 or 2 CTAs");
  static_assert(kClusterN == 1 || (kClusterN == 2 && kClusterM == 1 &&
                                   gemm_pair_along_n_supported(kRecipe, kKind, kBlockM, kMnMajorA)),
                "A shared along N: see gemm_pair_along_n_supported (sm90/gemm_params.cuh)");
  constexpr int kPairSize = kClusterM * kClusterN;  // CTAs that share (multicast) the stages' operands
  constexpr int kClusterSize = kPairSize * kSplitK;
  // Row-to-group tiles run one pass per expert present, which differs between the two CTAs of a pair.
  static_assert(kClusterM == 1 || kLayout != GroupedKind::kContiguousRowToGroup, "no multicast for row-to-group");
  static_assert(kClusterM == 1 || kBlockN % 16 == 0, "B multicast as two half-tile boxes: 8-row swizzle atoms");

  extern __shared__ unsigned char smem_raw[];
  unsigned char* smem = reinterpret_cast<unsigned char*>((reinterpret_cast<u64>(smem_raw) + 1023) & ~u64(1023));
  u64* full_bar = reinterpret_cast<u64*>(smem + kSmem.barrier_offset);
  u64* empty_bar = full_bar + kStages;
  // Split K: the partials' two barriers follow the stages' and the C prefetch's.
  constexpr int kSplitBarrier = 2 * kStages + (kCPrefetch ? kMathWGs * kStagingWaves : 0);

  SchedulerProblem kgrouped_problem = params.problem;  // k-grouped: sizes from the parameters when not on the device
  if constexpr (kKGrouped) {
    if (kgrouped_problem.routing == nullptr) kgrouped_problem.routing = params.ks_inline;
  }
  const SchedulerProblem& prob = kKGrouped ? kgrouped_problem : params.problem;
  // (The host launches a fixed-K kernel only for a problem of that many K blocks: gemm_launch.cpp.)
  const int num_kb = kFixedK ? kFixedKBlocks : ceil_div(prob.k, kStageK);
  // K blocks of a tile: the problem's, or (k-grouped) its expert's.
  auto tile_k_blocks = [&](const TileWork& t) { return kKGrouped ? ceil_div(t.k_len, kStageK) : num_kb; };
  const int warpgroup = static_cast<int>(threadIdx.x / 128);
  const u32 lane = lane_index();

  if (threadIdx.x == kMathWGs * 128) {
    tma_prefetch_descriptor(&params.tma_a);
    tma_prefetch_descriptor(&params.tma_b);
    if constexpr (!kUnscaled) tma_prefetch_descriptor(&params.tma_sfa);
    if constexpr (kSfaShifted) tma_prefetch_descriptor(&params.tma_sfa_tail);
    if constexpr (kRowScaledB) tma_prefetch_descriptor(&params.tma_sfb);
    if constexpr (kTmaStore) tma_prefetch_descriptor(&params.tma_d);
    for (int s = 0; s < kStages; ++s) {
      // Arrivals per phase: the issuer's arrive.expect_tx, and its cp.async arrival when it copies B's scales.
      mbarrier_init(&full_bar[s], kBScalesInStages ? 2 : 1);
      // One arrival per consumer warp of the pair (ping-pong: of the warpgroup whose tile the stage holds).
      mbarrier_init(&empty_bar[s], (kPingPong ? 1 : kMathWGs) * 4 * kPairSize);
    }
    if constexpr (kCPrefetch) {
      // One per staging buffer: the issuer's arrive.expect_tx, completed by the C tile's bytes.
      for (int b = 0; b < kMathWGs * kStagingWaves; ++b) mbarrier_init(&empty_bar[kStages + b], 1);
    }
    if constexpr (kTileRing) {
      // Each slot's full barrier: the producer warp's one arrival; its empty barrier: one per consumer warp.
      u64* ring_bar = reinterpret_cast<u64*>(smem + kSmem.tile_ring_offset + kTileRingSlots * 16);
      for (int s = 0; s < kTileRingSlots; ++s) {
        mbarrier_init(&ring_bar[s], 1);
        mbarrier_init(&ring_bar[kTileRingSlots + s], kMathWGs * 4);
      }
    }
    if constexpr (kSplitK > 1) {
      // Rank 0's "partials full": every consumer thread of the other ranks; the others' "partials free": rank 0's.
      mbarrier_init(&full_bar[kSplitBarrier], (kSplitK - 1) * kMathWGs * 128);
      mbarrier_init(&full_bar[kSplitBarrier + 1], kMathWGs * 128);
    }
    fence_barrier_init();
  }
  // The peer multicasts into this CTA's stages and arrives on its barriers: both must be initialised first.
  if constexpr (kClusterSize > 1) {
    cluster_sync();
  } else {
    __syncthreads();
  }
  // With programmatic dependent launch, everything above overlapped the previous kernel; inputs are read below.
  grid_dependency_wait();

  const u32 cluster_rank = kClusterSize > 1 ? cluster_cta_rank() : 0u;
  const int cluster_id = static_cast<int>(blockIdx.x) / kClusterSize;
  const int num_clusters = static_cast<int>(gridDim.x) / kClusterSize;
  // This CTA's K blocks: all of them, or its rank's slice with split K (the dense layout's K is the same per tile).
  const int split_rank = kSplitK > 1 ? static_cast<int>(cluster_rank) : 0;
  const int split_kb_begin = split_k_begin(num_kb, kSplitK, split_rank);
  const int split_kb_end = split_k_begin(num_kb, kSplitK, split_rank + 1);
  // The scheduler, with this kernel's layout and (pair) tile as constants (the host's problem says the same).
  static_assert(kSegmentAlignment == kGroupEndsAlignment || kKind == static_cast<int>(GroupedKind::kContiguousGroupEnds),
                "a segment alignment other than the default: the group-ends layout only");
  using Tiles = TileIteratorFor<kKind, kBlockM * kClusterM, kBlockN * kClusterN, kSegmentAlignment>;
  // This CTA's part of a pair tile (the pair itself without a cluster).
  auto cta_tile = [&](const TileWork& pair) {
    if constexpr (kClusterM > 1) return cluster_half(pair, static_cast<int>(cluster_rank), kBlockM);
    if constexpr (kClusterN > 1) return cluster_half_n(pair, static_cast<int>(cluster_rank), kBlockN);
    return pair;
  };

  if (warpgroup == kMathWGs) {
    // ---------------------------------------------------------------- producer
    setmaxnreg_dec<gemm_producer_registers(kMathWGs)>();
    // The whole first warp walks the tiles (row-to-group passes are found by the warp) and runs the K loops; one
    // elected lane issues the copies.
    if (threadIdx.x / 32 == kMathWGs * 4) {
      // Shared-memory addresses of stage 0: a stage's are one multiply-add away. (The consumers compute their own:
      // computed once before the roles split, they stayed live into the 40-register producer and made it spill.)
      const u32 smem_base = smem_addr(smem);
      const u32 full_bar0 = smem_base + kSmem.barrier_offset;
      const u32 empty_bar0 = full_bar0 + kStages * 8;
      const u32 a_stage0 = smem_base + kSmem.a_offset;
      const u32 b_stage0 = smem_base + kSmem.b_offset;
      const u32 sfa_stage0 = smem_base + kSmem.sfa_offset;
      const u32 sfb_stage0 = smem_base + kSmem.sfb_offset;
      PipelineCursor cur;
      Tiles tiles(prob, cluster_id, num_clusters);
      TileWork pair;
      u32 ring_tiles = 0;  // kTileRing: tiles handed over so far (slot and phase follow, as in the consumers)
      while (tiles.next(pair, false)) {
        const TileWork w = cta_tile(pair);
        TilePasses<kLayout> passes;
        passes.start(prob, w);
        if constexpr (kTileRing) {
          // Hand the passes to the consumers: the slot is free once every consumer warp has read it.
          const u32 slot_addr = smem_base + kSmem.tile_ring_offset + (ring_tiles & 1) * 16;
          const u32 full_addr = smem_base + kSmem.tile_ring_offset + kTileRingSlots * 16 + (ring_tiles & 1) * 8;
          mbarrier_wait(full_addr + kTileRingSlots * 8, ((ring_tiles >> 1) & 1) ^ 1u);  // the slot's empty barrier
          if (elect_one()) {
            u32 word0, word1;
            TilePasses<kLayout>::pack(passes, word0, word1);
            store_shared_v2_u32(slot_addr, word0, word1);
            mbarrier_arrive(full_addr);  // release: the slot's words before the arrival
          }
          __syncwarp();
          ++ring_tiles;
        }
        do {
          const int g = passes.current;
          if (g >= 0) {
            // The whole warp runs the K loop on warp-uniform values, so that the copies' coordinates and addresses
            // live in uniform registers; one elected lane issues. (Run by lane 0 alone inside a branch, each copy
            // was wrapped in a loop over active lanes: about 75 instructions per stage instead of about 50.
            // Measured: decode rows unchanged to 6% faster, docs/results/2026-12-03-producer-chain.md.)
            const int tile_kb = kFixedK ? num_kb : warp_uniform(tile_k_blocks(w));
            const int k_base = warp_uniform(kKGrouped ? w.k_begin : 0);  // the expert's offset in the concatenated K
            const int a_row = warp_uniform(w.a_row);
            const int n_begin = warp_uniform(w.n_begin);
            // Masked: the A boxes this tile's valid rows need, and the stage's bytes without the boxes it skips.
            const int a_boxes =
                kMasked ? warp_uniform(masked_a_boxes(w.row_limit - w.row_begin, kBlockM)) : kBlockM / kMaskedABoxRows;
            const u32 stage_tx =
                kMasked ? params.tx_bytes - static_cast<u32>((kBlockM - a_boxes * kMaskedABoxRows) * kRowBytes)
                        : params.tx_bytes;
            BScaleBlocks b_scales{};
            if constexpr (kBScalesInStages) b_scales = b_scale_blocks<kBlockN, (kClusterN > 1)>(params, prob, w, g);
            if constexpr (kKGroupedFp8) {
              // The descriptors were written by the preceding kernel through the generic proxy. Every lane
              // acquires: whichever lane elect.sync picks below issues the copies.
              tma_descriptor_acquire(params.kgrouped_tma + 2 * g);
              tma_descriptor_acquire(params.kgrouped_tma + 2 * g + 1);
            }
            const int kb_first = kSplitK > 1 ? warp_uniform(split_kb_begin) : 0;
            const int kb_end = kSplitK > 1 ? warp_uniform(split_kb_end) : tile_kb;
            for (int kb = kb_first; kb < kb_end; ++kb) {
              const u32 stage = static_cast<u32>(cur.stage);
              mbarrier_wait(empty_bar0 + stage * 8, cur.phase ^ 1u);
              const u32 bar = full_bar0 + stage * 8;
              const u32 a_dst = a_stage0 + stage * kSmem.a_bytes;
              const u32 b_dst = b_stage0 + stage * kSmem.b_bytes;
              const u32 sfa_dst = sfa_stage0 + stage * kSmem.sfa_bytes;
              const u32 sfb_dst = sfb_stage0 + stage * kSmem.sfb_bytes;
              const int k_coord = kb * kStageK;
              if (elect_one()) {
                mbarrier_arrive_expect_tx(bar, stage_tx);
                if constexpr (kKGroupedFp8) {
                  // Expert g's own [M, K_g] / [N, K_g] blocks: K from 0 inside them; its scales start at k_base / 128.
                  const TmaDescriptor* desc_a = params.kgrouped_tma + 2 * g;
                  if constexpr (kClusterN > 1) {
                    // A pair along N: each CTA fetches its half of the tile's rows for both (the box is that half).
                    constexpr int kHalf = kBlockM / 2;
                    tma_load_2d_multicast(a_dst + cluster_rank * kHalf * kRowBytes, desc_a, bar, 0x3, k_coord,
                                          a_row + static_cast<int>(cluster_rank) * kHalf);
                  } else {
                    tma_load_2d(a_dst, desc_a, bar, k_coord, a_row);
                  }
                  tma_load_2d(b_dst, desc_a + 1, bar, k_coord, n_begin);
                  tma_load_2d(sfa_dst, &params.tma_sfa, bar, a_row, k_base / kStageK + kb);
                  tma_load_2d(sfb_dst, &params.tma_sfb, bar, n_begin, k_base / kStageK + kb);
                } else {
                  if constexpr (kMasked) {
                    const int row_in_group = a_row - g * prob.rows;
                    for (int c = 0; c < a_boxes; ++c) {
                      tma_load_3d(a_dst + c * (kMaskedABoxRows * kRowBytes), &params.tma_a, bar, k_coord,
                                  row_in_group + c * kMaskedABoxRows, g);
                    }
                    if constexpr (!kUnscaled) tma_load_2d(sfa_dst, &params.tma_sfa, bar, row_in_group, g * num_kb + kb);
                  } else {
                    if constexpr (kMnMajorA) {
#pragma unroll
                      for (int c = 0; c < kBlockM / 64; ++c) {
                        tma_load_2d(a_dst + c * kMnChunkBytes, &params.tma_a, bar, a_row + 64 * c, k_base + k_coord);
                      }
                    } else if constexpr (kClusterN > 1) {
                      // Each CTA of the pair fetches its half of the tile's rows for both CTAs.
                      constexpr int kHalf = kBlockM / 2;
                      tma_load_2d_multicast(a_dst + cluster_rank * kHalf * kRowBytes, &params.tma_a, bar, 0x3, k_coord,
                                            a_row + static_cast<int>(cluster_rank) * kHalf);
                    } else {
                      tma_load_2d(a_dst, &params.tma_a, bar, k_coord, a_row);
                    }
                    if constexpr (kSfaShifted) {
                      const int sfa_row = a_row & ~3;  // a 16-byte-aligned innermost coordinate
                      tma_load_2d(sfa_dst, &params.tma_sfa, bar, sfa_row, kb);
                      tma_load_2d(sfa_dst + kBlockM * 4, &params.tma_sfa_tail, bar, sfa_row + kBlockM, kb);
                    } else if constexpr (!kUnscaled) {
                      tma_load_2d(sfa_dst, &params.tma_sfa, bar, a_row, kb);
                    }
                  }
                  // B rows of expert g's [N, K] slab (the 3-D descriptor adds g). With a cluster along M, CTA 0
                  // fetches the whole tile for both CTAs (two boxes of half its rows) and CTA 1 none of it: each
                  // stage then waits on one producer's copy, not on both. (Each CTA fetching one half measured
                  // 0.5-1.5% slower, docs/results/2026-12-05-rtg-tiles-pairs-python.md, run 5.)
                  if constexpr (kClusterM > 1) {
                    constexpr int kHalf = kBlockN / 2;
                    if (cluster_rank == 0) {
                      tma_load_3d_multicast(b_dst, &params.tma_b, bar, 0x3, k_coord, n_begin, g);
                      tma_load_3d_multicast(b_dst + kHalf * kRowBytes, &params.tma_b, bar, 0x3, k_coord,
                                            n_begin + kHalf, g);
                    }
                  } else {
                    if constexpr (kMnMajorB) {
#pragma unroll
                      for (int c = 0; c < kBlockN / 64; ++c) {
                        tma_load_3d(b_dst + c * kMnChunkBytes, &params.tma_b, bar, n_begin + 64 * c, k_base + k_coord,
                                    kKGrouped ? 0 : g);
                      }
                    } else {
                      tma_load_3d(b_dst, &params.tma_b, bar, k_coord, n_begin, g);
                    }
                  }
                  if constexpr (kRowScaledB) tma_load_2d(sfb_dst, &params.tma_sfb, bar, n_begin, kb);
                  if constexpr (kBScalesInStages) {
                    // Tiles inside one scale block copy the same value twice (second_offset 0).
                    const float* sfb_src = b_scales.first + kb * params.sfb_k_stride;
                    cp_async_4(sfb_dst, sfb_src);
                    cp_async_4(sfb_dst + 4, sfb_src + b_scales.second_offset);
                    cp_async_mbarrier_arrive(bar);
                  }
                }
              }
              __syncwarp();
              cur.advance<kStages>();
            }
          }
        } while (passes.advance(prob, w));
      }
    }
    __syncwarp();  // reconverge the first warp before the warp-aligned cluster barrier
  } else {
    // ------------------------------------------------------------------ consumers
    setmaxnreg_inc<gemm_math_registers(kMathWGs)>();
    const u32 warp_in_wg = (threadIdx.x / 32) % 4;
    const u32 tid_in_wg = threadIdx.x % 128;
    const int row_lo = static_cast<int>(warp_in_wg * 16 + lane / 4);  // accumulator rows of this thread: row_lo, +8
    unsigned char* d_stage = smem + kSmem.d_offset + warpgroup * kSmem.d_bytes_per_wg;
    const u32 d_stage_addr = smem_addr(d_stage);
    constexpr int kAcc = kBlockN / 2;
    // Shared-memory addresses of stage 0 as plain integers: a stage's are one multiply-add away. The warpgroup
    // index is broadcast from lane 0 so that the compiler knows it is warp-uniform (descriptors then live in
    // uniform registers).
    const u32 wg_uniform = kMathWGs == 1 ? 0u : static_cast<u32>(warp_uniform(warpgroup));
    const u32 smem_base = smem_addr(smem);
    const u32 full_bar_addr = smem_base + kSmem.barrier_offset;
    const u32 empty_bar_addr = full_bar_addr + kStages * 8;
    const u32 a_addr0 =
        smem_base + kSmem.a_offset + (kPingPong ? 0u : wg_uniform) * (kMnMajorA ? kMnChunkBytes : 64 * kRowBytes);
    const u32 b_addr0 = smem_base + kSmem.b_offset;
    const u32 desc_a_lo0 = smem_desc_sw128_lo(a_addr0, kMnMajorA ? kMnChunkBytes : 16);
    const u32 desc_b_lo0 = smem_desc_sw128_lo(b_addr0, kMnMajorB ? kMnChunkBytes : 16);
    const u32 sfa_addr = smem_base + kSmem.sfa_offset + (wg_uniform * 64 + static_cast<u32>(row_lo)) * 4;
    // B's scales in stage 0: recipe (1,1,128) this thread's column pair; recipe (1,128,128) the two block scales.
    const u32 sfb_stage_addr = smem_base + kSmem.sfb_offset + (kRowScaledB ? (lane % 4) * 2 * 4 : 0);

    // A consumer warp is done with a stage: one arrival on its empty barrier per warp.
    auto release_stage = [&](u32 stage) {
      if constexpr (kPairSize > 1) {
        // The stage is refilled by multicasts into both CTAs: release it to both producers, lane i arriving on
        // CTA i's barrier, both at once. (Lane 0 arriving on the two in turn cost the pairs 4-7% against the same
        // tile alone; two lanes brought them level: docs/results/2026-12-05-rtg-tiles-pairs-python.md, run 5.)
        if (lane < static_cast<u32>(kPairSize)) {
          mbarrier_arrive_remote(cluster_map_shared(empty_bar_addr + stage * 8, lane));
        }
      } else if (lane == 0) {
        mbarrier_arrive(empty_bar_addr + stage * 8);
      }
    };
    PipelineCursor cur;
    Tiles tiles(prob, cluster_id, num_clusters);
    TileWork pair;
    // kSpreadFp32Reduce (gemm_spread_fp32_reduce): a tile's in-place FP32 result leaves as one reduce-add of 32
    // columns at its epilogue and one more in each of the next tile's first K blocks after its first, so that the
    // next tile's loads do not queue behind all of them in the copy engine. spread_next: the next box of the staging
    // buffer to hand over (kSpreadBoxes: none left). The next epilogue, a tile that loads C into the buffer, and the
    // end of the kernel hand over the rest before they wait for the buffer. (The k-grouped form below ran in the device
    // tests of docs/results/2026-12-04-decode-stride.md, runs 7-8; gemm_spread_fp32_reduce keeps it off for now.)
    constexpr int kSpreadBoxes = kSpreadFp32Reduce ? kBlockN / 32 : 0;
    constexpr int kSpreadPeel = kSpreadBoxes > 1 ? kSpreadBoxes - 1 : 0;  // K blocks that hand one over each
    int spread_next = kSpreadBoxes, spread_n0 = 0, spread_r0 = 0, spread_g0 = 0;
    // FP32 D through TMA: 32-column box b of this warpgroup's staging buffer to D (tile columns from n0, rows from
    // r0, expert g0 when k-grouped), stored, or added to D where the tile reduces into it. Issued by the elected lane
    // of the warpgroup's first warp, which commits the bulk group.
    auto fp32_box_out = [&](int b, int n0, int r0, int g0, bool reduce) {
      const u32 box = d_stage_addr + b * (64 * 128);
      if constexpr (kKGrouped) {
        if (reduce) {
          tma_reduce_add_3d(&params.tma_d, box, n0 + 32 * b, r0, g0);
        } else {
          tma_store_3d(&params.tma_d, box, n0 + 32 * b, r0, g0);
        }
      } else if (reduce) {
        tma_reduce_add_2d(&params.tma_d, box, n0 + 32 * b, r0);
      } else {
        tma_store_2d(&params.tma_d, box, n0 + 32 * b, r0);
      }
    };
    const bool spread_warp = kSpreadFp32Reduce && warp_uniform(static_cast<int>(warp_in_wg)) == 0;
    auto spread_one = [&]() {
      if (spread_next < kSpreadBoxes) {
        if (spread_warp) {
          if (elect_one()) {  // the thread that commits (and later waits for) this warpgroup's bulk groups
            fp32_box_out(spread_next, spread_n0, spread_r0, spread_g0, true);
            bulk_commit_group();
          }
          __syncwarp();
        }
        ++spread_next;
      }
    };
    auto spread_flush = [&]() {
      while (spread_next < kSpreadBoxes) spread_one();
    };
    float acc[kAcc];
    float result[kWaves][kAcc];
    // C prefetch: this warpgroup's barriers (one per wave buffer) and the phase its loads complete next.
    const u32 c_bar_addr = empty_bar_addr + (kStages + static_cast<u32>(warpgroup) * kStagingWaves) * 8;
    u32 c_phase = 0;
    u32 split_phase = 0;  // split K: the phase of this tile's partials barrier
    // The first row of this warpgroup's 64 rows of a tile in D's (and C's) descriptor: [rows, N], or [G, M, N] when
    // k-grouped (the expert's own rows).
    auto box_row = [&](const TileWork& t) {
      return t.row_begin + (kPingPong ? 0 : warpgroup * 64) - (kKGrouped ? t.group * prob.rows : 0);
    };
    int tile_count = 0;  // ping-pong: the CTA's tiles so far (this warpgroup takes every other one)
    // Ping-pong: named barrier kTurnBarrier + w lets warpgroup w start its next K loop: the other warpgroup arrives
    // when it has finished the K loop of the tile before.
    constexpr u32 kTurnBarrier = 3;
    // kTileRing: tiles taken from the ring so far (slot and phase follow). Its addresses are the stage barriers' plus
    // a constant: two more values live through the K loop (a cursor and a base address) added spills.
    static_assert(kTileRingSlots == 2, "the ring's slot and phase from the tile count");
    u32 ring_tiles = 0;
    while (tiles.next(pair, false)) {
      const TileWork w = cta_tile(pair);
      TilePasses<kLayout> passes;
      if constexpr (kTileRing) {
        // The passes the producer found for this tile (gemm_tile_ring), instead of a scan of the routing here.
        const u32 slot_addr = full_bar_addr + (kSmem.tile_ring_offset - kSmem.barrier_offset) + (ring_tiles & 1) * 16;
        const u32 full_addr = full_bar_addr + (kSmem.tile_ring_offset + kTileRingSlots * 16 - kSmem.barrier_offset) +
                              (ring_tiles & 1) * 8;
        mbarrier_wait(full_addr, (ring_tiles >> 1) & 1);
        u32 word0, word1;
        load_shared_v2_u32(slot_addr, word0, word1);
        passes.unpack(word0, word1);  // lane 0's words (a shuffle): read before lane 0 frees the slot
        if (lane == 0) mbarrier_arrive(full_addr + kTileRingSlots * 8);  // the slot's empty barrier
        ++ring_tiles;
      } else {
        passes.start(prob, w);
      }
      // kSfaShifted: the stage holds A's scales from the tile's first row rounded down to 4; row r's is r's shift on.
      const u32 sfa_shift = kSfaShifted ? static_cast<u32>(warp_uniform(w.a_row) & 3) * 4 : 0u;
      if constexpr (kPingPong) {
        // The other warpgroup's tile: its K blocks pass through the stages, in order, to that warpgroup.
        const bool mine = (tile_count & 1) == static_cast<int>(wg_uniform);
        ++tile_count;
        if (!mine) {
          if (passes.current >= 0) cur.advance_by<kStages>(tile_k_blocks(w));
          continue;
        }
        // Its K loop starts once the other warpgroup's previous K loop is done (kTurnBarrier): a stage's full
        // barrier is waited on by parity, so no warpgroup may wait on one more than a phase ahead of its loads.
        if (tile_count > 1) named_barrier_sync(kTurnBarrier + wg_uniform, 256);
      }
      // FP32 D in place (C is D) on a tile with enough K: the result goes out as a TMA reduce-add, and no C comes in
      // (params.reduce_min_k, kFp32ReduceMinK).
      const bool reduce_into_d =
          kFp32Tma && params.reduce_min_k > 0 && (kKGrouped ? w.k_len : prob.k) >= params.reduce_min_k;
      // The tile's C goes into this warpgroup's wave buffers while its WGMMAs run (load_c_into_staging), issued
      // by the thread that tracks the stores: lane 0 of the first warp, elected in a warp-uniform branch, with the
      // whole-warp shuffles before the election. It is issued once the tile's first K block's WGMMAs are out (or,
      // without a K block, before the epilogue): its wait for the copy engine to have read the previous tile's D out
      // of the buffers then overlaps them instead of holding the warpgroup at the tile's start (BF16
      // 4096 x 32768 x 512 + C +8%, FP8 weight gradients +0.6-3%, long K level: docs/results/
      // 2026-12-04-late-c-landed.md). The whole-warp shuffles run here, at the tile's start: in the first K block
      // they made ptxas build that block's WGMMA descriptors in vector registers.
      if constexpr (kSpreadFp32Reduce) {
        if (!reduce_into_d) spread_flush();  // this tile's C comes into the staging buffer
      }
      // Whether the tile has the K blocks (after its first) to hand over the previous tile's other reduce-adds.
      const int spread_blocks =
          kSpreadFp32Reduce
              ? warp_uniform(tile_k_blocks(w) > kSpreadPeel ? kSpreadPeel : 0)
              : 0;
      const bool c_issuer = kCPrefetch && (!kFp32Out || (params.add_c && !reduce_into_d)) && split_rank == 0 &&
                            warp_uniform(static_cast<int>(warp_in_wg)) == 0;
      const int c_n0 = warp_uniform(w.n_begin), c_r0 = warp_uniform(box_row(w));
      const int c_g0 = kKGrouped ? warp_uniform(w.group) : 0;
      // kSkipEmptyWaves: whether this warpgroup's second wave has rows of the tile (the same for every pass).
      const bool second_wave_rows =
          !kSkipEmptyWaves ||
          warp_uniform(static_cast<int>(wave_has_rows(w, kWaveRows + static_cast<int>(wg_uniform) * 64))) != 0;
      // One pass per tile (row-to-group tiles, which can take several, load no C): the load is issued once.
      static_assert(!(kCPrefetch && kRowToGroup));
      auto issue_c_prefetch = [&]() {
        if (c_issuer) {
          if (elect_one()) {
            load_c_into_staging<kStagedCols, kStagingWaves, kWaveRows, kFp32Out ? 4 : 2, kKGrouped>(
                params, c_bar_addr, d_stage_addr, c_n0, c_r0, c_g0);
          }
          __syncwarp();
        }
      };
      for (int first = 1;; first = 0) {
        const int g = passes.current;
        const int tile_kb = tile_k_blocks(w);
        const int kb_first = kSplitK > 1 ? split_kb_begin : 0;
        const int kb_end = kSplitK > 1 ? split_kb_end : tile_kb;
        // Dense, masked and group-ends tiles always run a K block (K > 0 is validated, their group is valid): said
        // at compile time, the zeroing below disappears from their code.
        constexpr bool kAlwaysK = !kRowToGroup && !kKGrouped && kSplitK == 1;
        const bool any_k = kAlwaysK || (g >= 0 && kb_first < kb_end);
        if constexpr (kCPrefetch) {
          if (!any_k) issue_c_prefetch();  // no K block to issue it after: the epilogue stores C alone
        }
        // FP8: the tile's first K block can set the result (kAssign), so that it needs no zeroing per tile
        // (one register-zeroing instruction per two accumulators, between two tiles' WGMMAs). BF16's first WGMMA
        // ignores it too (scale-d 0) but reads its registers: without the zeroing the previous tile's result would
        // stay live through the epilogue (ptxas spills at 256x128 and 128x256). Recipe (1,128,128) on tiles of 128
        // and 256 rows only: on 64-row tiles the peeled first block moved descriptors into vector registers in the
        // K loop (8 R2UR per K block on the masked 64x128 pair), with a K split (decode) it cost a local-memory
        // access there, and recipe (1,1,128) measured level (dense) to slower (k-grouped, G = 16); with the peel its
        // steady K loop grows from 38 to 47 instructions before the WGMMA wait (128x128 weight gradient, SASS).
        // A fixed-K loop starts from zeroed results instead: with the peeled block in front of the constant loop it
        // measured 1-3% slower than without (docs/results/2026-12-06-bf16-kgrouped-band.md, run 8).
        constexpr bool kFirstBlockSets = kBlockScaledB && kSplitK == 1 && kMathWGs == 2 && !kFixedK;
        if (!kFirstBlockSets || !any_k) {
          // Without a K block (a pass without an expert, a k-grouped expert without K, an empty K slice) the result
          // is zero. (Plain assignments: with kFirstBlockSets the compiler hoisted them out of this branch.)
#pragma unroll
          for (int v = 0; v < kWaves; ++v) {
            if constexpr (kFirstBlockSets) {
              zero_registers(result[v]);
            } else {
#pragma unroll
              for (int i = 0; i < kAcc; ++i) result[v][i] = 0.0f;
            }
          }
        }
        if (any_k) {
          u32 deferred_stage = 0;  // kBf16Deferred: the stage of the K block whose WGMMAs are still in flight
          const BScaleBlocks b_scales = b_scale_blocks<kBlockN, (kClusterN > 1)>(params, prob, w, g);  // (1,128,128)
          // kBScalesAhead: the next K block's one or two B scales, loaded while this block runs.
          float scale_b_next0 = 1.0f, scale_b_next1 = 1.0f;
          auto load_b_scales = [&](int kb, float& s0, float& s1) {
            const float* src = b_scales.first + kb * params.sfb_k_stride;
            s0 = __ldg(src);
            s1 = __ldg(src + b_scales.second_offset);
          };
          // kBScalesInLaneChunks: lane l holds K blocks kb_first + l ([0]) and 32 further ([1]); a lane past the tile's
          // last block reads its first block's again (a valid address).
          float sfb_chunk0[2], sfb_chunk1[2];
          auto load_lane_chunk = [&](int chunk_first, float& s0, float& s1) {
            const int k = chunk_first + static_cast<int>(lane);
            load_b_scales(k < kb_end ? k : kb_first, s0, s1);
          };
          if constexpr (kBScalesInLaneChunks) {
#pragma unroll
            for (int c = 0; c < 2; ++c) load_lane_chunk(kb_first + c * 32, sfb_chunk0[c], sfb_chunk1[c]);
          } else if constexpr (kBScalesAhead) {
            load_b_scales(kb_first, scale_b_next0, scale_b_next1);
          }
          // kBScalesInLanes: lane l holds K blocks l, 32 + l, ... (block 0's again past the last: a valid address).
          float sfb_lanes0[kSfbLaneChunks], sfb_lanes1[kSfbLaneChunks];
          if constexpr (kBScalesInLanes) {
#pragma unroll
            for (int c = 0; c < kSfbLaneChunks; ++c) {
              const int k = c * 32 + static_cast<int>(lane);
              load_b_scales(k < kFixedKBlocks ? k : 0, sfb_lanes0[c], sfb_lanes1[c]);
            }
          }
          auto k_loop = [&](auto split_constant, auto waves_constant) {
            constexpr int kSplit = decltype(split_constant)::value;
            // The waves that have rows: kWaves, or 1 (kSkipEmptyWaves).
            constexpr int kRunWaves = decltype(waves_constant)::value;
            // One K block of a kind: 0 any, 1 (kAssign: FP8, the tile's first block) sets result instead of adding
            // to it, 2 (kIssueC: kCPrefetch, the tile's first block) issues the tile's C load after its WGMMAs.
            auto k_block = [&](int kb, auto kind_constant) {
              constexpr bool kAssign = decltype(kind_constant)::value == 1;
              constexpr bool kIssueC = decltype(kind_constant)::value == 2;
              constexpr bool kSpreadBox = decltype(kind_constant)::value == 3;
              const u32 stage = static_cast<u32>(cur.stage);
              float sa_lo[kWaves], sa_hi[kWaves], scale_b0 = 1.0f, scale_b1 = 1.0f;
              if constexpr (kBScalesInLanes) {
                // A fixed-K kernel's tiles start at K block 0. The chunk is picked by compares (no local memory).
                float v0 = sfb_lanes0[0], v1 = sfb_lanes1[0];
#pragma unroll
                for (int c = 1; c < kSfbLaneChunks; ++c) {
                  if (kb >= c * 32) {
                    v0 = sfb_lanes0[c];
                    v1 = sfb_lanes1[c];
                  }
                }
                scale_b0 = __shfl_sync(0xffffffffu, v0, kb & 31);
                scale_b1 = __shfl_sync(0xffffffffu, v1, kb & 31);
              } else if constexpr (kBScalesInLaneChunks) {
                const int rel = kb - kb_first;
                if (rel > 0 && (rel & 31) == 0) {
                  sfb_chunk0[0] = sfb_chunk0[1];
                  sfb_chunk1[0] = sfb_chunk1[1];
                  load_lane_chunk(kb + 32, sfb_chunk0[1], sfb_chunk1[1]);
                }
                scale_b0 = __shfl_sync(0xffffffffu, sfb_chunk0[0], rel & 31);
                scale_b1 = __shfl_sync(0xffffffffu, sfb_chunk1[0], rel & 31);
              } else if constexpr (kBScalesAhead) {
                scale_b0 = scale_b_next0;
                scale_b1 = scale_b_next1;
                // The next block's (this block's again after the tile's last: an address inside B's scales).
                load_b_scales(kb + 1 < kb_end ? kb + 1 : kb, scale_b_next0, scale_b_next1);
              }
              mbarrier_wait(full_bar_addr + stage * 8, cur.phase);
#pragma unroll
              for (int v = 0; v < kRunWaves; ++v) {
                sa_lo[v] = 1.0f;
                sa_hi[v] = 1.0f;
                if constexpr (!kUnscaled) {
                  const u32 sfa_wave = sfa_addr + sfa_shift + stage * kSmem.sfa_bytes + v * kWaveRows * 4;
                  sa_lo[v] = load_shared_f32(sfa_wave);
                  sa_hi[v] = load_shared_f32(sfa_wave + 8 * 4);
                }
              }
              if constexpr (kBScalesInStages) {
                scale_b0 = load_shared_f32(sfb_stage_addr + stage * kSmem.sfb_bytes);
                scale_b1 = load_shared_f32(sfb_stage_addr + stage * kSmem.sfb_bytes + 4);
              }
              // Descriptors of this stage: one add on the low word of stage 0's (smem_desc_sw128_lo). One WGMMA
              // covers 32 bytes of K (32 FP8 or 16 BF16 values): +32 on a K-major tile's address, +16 rows of 128
              // bytes on an MN-major one.
              constexpr u32 kStepA = kMnMajorA ? 16 * 128 : 32;
              constexpr u32 kStepB = kMnMajorB ? 16 * 128 : 32;
              const u32 desc_a_lo = desc_a_lo0 + stage * (kSmem.a_bytes >> 4);
              const u32 desc_b_lo = desc_b_lo0 + stage * (kSmem.b_bytes >> 4);
              if constexpr (kUnscaled) {
                // BF16 accumulates over all of K straight into each wave's result: every wave's WGMMAs go out
                // together, one wait, and the stage is free.
#pragma unroll
                for (int v = 0; v < kRunWaves; ++v) fence_registers(result[v]);
                wgmma_fence();
                if constexpr (kPingPong) {
                  // One warpgroup's two waves as two chains, interleaved. (Chosen because one chain alone looked
                  // half-rate; run 4 of docs/results/2026-12-04-fp8-turns.md later put one FP8 warpgroup alone at 60%
                  // of the tensor rate with one chain or two: the limit is the warpgroup's, the order unmeasured.)
#pragma unroll
                  for (int kk = 0; kk < 4; ++kk) {
                    const u64 desc_b = smem_desc_sw128_from_lo(desc_b_lo + kk * (kStepB >> 4));
#pragma unroll
                    for (int v = 0; v < kRunWaves; ++v) {
                      const u64 desc_a = smem_desc_sw128_from_lo(desc_a_lo + v * ((kWaveRows * kRowBytes) >> 4) +
                                                                 kk * (kStepA >> 4));
                      wgmma_bf16<kBlockN, kMnMajorA ? 1 : 0, kMnMajorB ? 1 : 0>(result[v], desc_a, desc_b,
                                                                                (kb > kb_first || kk > 0) ? 1 : 0);
                    }
                  }
                } else {
#pragma unroll
                  for (int v = 0; v < kRunWaves; ++v) {
                    const u32 desc_a_wave = desc_a_lo + v * ((kWaveRows * kRowBytes) >> 4);
#pragma unroll
                    for (int kk = 0; kk < 4; ++kk) {
                      const u64 desc_a = smem_desc_sw128_from_lo(desc_a_wave + kk * (kStepA >> 4));
                      const u64 desc_b = smem_desc_sw128_from_lo(desc_b_lo + kk * (kStepB >> 4));
                      wgmma_bf16<kBlockN, kMnMajorA ? 1 : 0, kMnMajorB ? 1 : 0>(result[v], desc_a, desc_b,
                                                                                (kb > kb_first || kk > 0) ? 1 : 0);
                    }
                  }
                }
                wgmma_commit();
                if constexpr (kIssueC) issue_c_prefetch();
#pragma unroll
                for (int v = 0; v < kRunWaves; ++v) fence_registers(result[v]);
                // Deferred: this block's WGMMAs stay in flight; the previous block's are done and its stage is free.
                wgmma_wait<kBf16Deferred ? 1 : 0>();
#pragma unroll
                for (int v = 0; v < kRunWaves; ++v) fence_registers(result[v]);
                if constexpr (kBf16Deferred) {
                  if (kb > kb_first) release_stage(deferred_stage);
                  deferred_stage = stage;
                } else {
                  release_stage(stage);
                }
                cur.advance<kStages>();
              } else {
                // FP8: one wave after the other through the one accumulator (a fresh one per K block, promoted
                // with that block's scales), each promoted into its own result rows (as in a 128-row tile, the
                // other warpgroup's WGMMAs keep the tensor cores busy meanwhile).
#pragma unroll
                for (int v = 0; v < kRunWaves; ++v) {
                  const u32 desc_a_wave = desc_a_lo + v * ((kWaveRows * kRowBytes) >> 4);
                  fence_registers(acc);
                  wgmma_fence();
#pragma unroll
                  for (int kk = 0; kk < 4; ++kk) {
                    const u64 desc_a = smem_desc_sw128_from_lo(desc_a_wave + kk * (kStepA >> 4));
                    const u64 desc_b = smem_desc_sw128_from_lo(desc_b_lo + kk * (kStepB >> 4));
                    wgmma_e4m3<kBlockN>(acc, desc_a, desc_b, kk > 0 ? 1 : 0);
                  }
                  wgmma_commit();
                  if constexpr (kIssueC) issue_c_prefetch();
                  if constexpr (kSpreadBox) {
                    if (v == 0) spread_one();
                  }
                  fence_registers(acc);
                  wgmma_wait<0>();
                  fence_registers(acc);
                  if (v == kRunWaves - 1) {
                    if constexpr (kRowScaledB) {
                      // B's scales live in this stage: promote before releasing it.
                      promote_row_scaled<kBlockN, kAssign>(result[0], acc, sa_lo[0], sa_hi[0],
                                                           sfb_stage_addr + stage * kSmem.sfb_bytes);
                    }
                    release_stage(stage);
                    cur.advance<kStages>();
                  }
                  if constexpr (kBlockScaledB) {
                    const PromotionScales scales{sa_lo[v] * scale_b0, sa_hi[v] * scale_b0, sa_lo[v] * scale_b1,
                                                 sa_hi[v] * scale_b1};
                    promote<kAcc, kSplit, kAssign>(result[v], acc, scales);
                  }
                }
              }
            };
            // The tile's first K block runs on its own where it differs from the others: it sets the FP8 result
            // (kFirstBlockSets: kind 1), or it issues the tile's C load after its WGMMAs (kCPrefetch: kind 2; C is
            // added to FP32 or BF16 results, never to an FP8 (1,128,128) tile's).
            static_assert(!(kCPrefetch && kFirstBlockSets));
            constexpr int kFirstKind = kCPrefetch ? 2 : kFirstBlockSets ? 1 : 0;
            if constexpr (kFirstKind != 0) k_block(kb_first, IntConstant<kFirstKind>{});
            constexpr int kPeeled = kFirstKind != 0 ? 1 : 0;
            int kb_loop = kb_first + kPeeled;
            if constexpr (kSpreadFp32Reduce) {
              // The blocks that hand over the previous tile's other reduce-adds, one each (kind 3), run on their own
              // too: inside the K loop the branch on spread_next made ptxas build the WGMMA descriptors in vector
              // registers (2-4 R2UR per K block).
              // (A tile without that many leaves them to its epilogue: spread_blocks, made warp-uniform at the tile's
              // start.)
              if (spread_blocks != 0) {
#pragma unroll
                for (int b = 0; b < kSpreadPeel; ++b) k_block(kb_loop + b, IntConstant<3>{});
              }
              kb_loop += spread_blocks;
              // The stage and phase from lane 0: after the branch ptxas otherwise moved the loop's stage address
              // through R2UR in one copy of the K loop (seen in the k-grouped kernel, when it took the spread too).
              cur.stage = warp_uniform(cur.stage);
              cur.phase = static_cast<u32>(warp_uniform(static_cast<int>(cur.phase)));
            }
            if constexpr (kUnrollK > 1) {  // K blocks per iteration: fp8_k_loop_unroll
#pragma unroll kUnrollK
              for (int kb = kb_loop; kb < kb_end; ++kb) k_block(kb, IntConstant<0>{});
            } else {  // no pragma: the compiler's choice (unroll 1 changed some)
              for (int kb = kb_loop; kb < kb_end; ++kb) k_block(kb, IntConstant<0>{});
            }
          };
          // The K loop with the waves that have rows, both as compile-time constants (a run-time wave count in the
          // loop would be a branch per wave and K block).
          auto k_loop_waves = [&](auto split_constant) {
            if constexpr (kSkipEmptyWaves) {
              if (second_wave_rows) {
                k_loop(split_constant, IntConstant<kWaves>{});
              } else {
                k_loop(split_constant, IntConstant<1>{});
              }
            } else {
              k_loop(split_constant, IntConstant<kWaves>{});
            }
          };
          if constexpr (kRowScaledB || kUnscaled) {
            k_loop_waves(IntConstant<kBlockN>{});
          } else {
            dispatch_split<kBlockN>(b_scales.split, k_loop_waves);
          }
          // Ping-pong: every warp of this warpgroup is past its last stage wait of the tile: the other warpgroup may
          // start its next K loop.
          if constexpr (kPingPong) named_barrier_arrive(kTurnBarrier + (1u - wg_uniform), 256);
          if constexpr (kBf16Deferred) {
            // The last block's WGMMAs, and its stage.
            wgmma_wait<0>();
#pragma unroll
            for (int v = 0; v < kWaves; ++v) fence_registers(result[v]);
            release_stage(deferred_stage);
          }
          // (BF16: a k-grouped expert without K leaves result at zero, so its tile stores C alone.)
        }
        if constexpr (kPingPong) {
          if (!any_k) named_barrier_arrive(kTurnBarrier + (1u - wg_uniform), 256);  // a tile without K blocks
        }

        if constexpr (kSplitK > 1) {
          // Ranks 1.. push their partial results into rank 0's buffer (slot rank - 1, 8 bytes per thread and
          // accumulator pair, conflict-free) once rank 0 has read their previous tile's, and announce them; rank 0
          // adds them in rank order (the same sums every call), frees the slots and runs the epilogue alone.
          constexpr u32 kSlotBytes = split_k_partial_bytes(kBlockM, kBlockN);  // one rank's partials
          constexpr u32 kPairStride = 128 * 8;  // between a thread's accumulator pairs
          const u32 partials =
              smem_base + kSmem.partial_offset + warpgroup * split_k_partial_wg_bytes(kBlockN) + tid_in_wg * 8;
          const u32 full_addr = full_bar_addr + kSplitBarrier * 8, free_addr = full_addr + 8;
          if (split_rank != 0) {
            mbarrier_wait_acquire_cluster(free_addr, split_phase ^ 1u);
            const u32 dst = cluster_map_shared(partials + (split_rank - 1) * kSlotBytes, 0);
#pragma unroll
            for (int i = 0; i < kAcc; i += 2) {
              store_cluster_v2_f32(dst + (i / 2) * kPairStride, result[0][i], result[0][i + 1]);
            }
            mbarrier_arrive_release_cluster(cluster_map_shared(full_addr, 0));
            split_phase ^= 1u;
            if (!passes.advance(prob, w)) break;
            continue;
          }
          mbarrier_wait_acquire_cluster(full_addr, split_phase);
#pragma unroll
          for (int r = 1; r < kSplitK; ++r) {
#pragma unroll
            for (int i = 0; i < kAcc; i += 2) {
              float p0, p1;
              load_shared_v2_f32(partials + (r - 1) * kSlotBytes + (i / 2) * kPairStride, p0, p1);
              result[0][i] += p0;
              result[0][i + 1] += p1;
            }
          }
#pragma unroll
          for (int r = 1; r < kSplitK; ++r) mbarrier_arrive_release_cluster(cluster_map_shared(free_addr, r));
          split_phase ^= 1u;
        }
        if constexpr (kFp32Tma) {
          // D = C + result in the staging buffer (C arrived by TMA; without C the buffer must first be free of the
          // previous tile's D), then one TMA store per 32-column box; or, in place, the result alone and one TMA
          // reduce-add per box. Rows past M (per expert when k-grouped) and columns past N lie outside the
          // descriptor: not written.
          const bool store_warp = warp_uniform(static_cast<int>(warp_in_wg)) == 0;
          const bool load_c = params.add_c && !reduce_into_d;
          // Ping-pong: wave 1 follows wave 0 through the one buffer, once the copy engine has read wave 0 out of it
          // (with C, wave 1's C is loaded into it then: the other warpgroup's WGMMAs run meanwhile). Half staging:
          // pass 1 stores the columns from kStagedCols on the same way (pass 0's C was prefetched as a whole tile's
          // is; pass 1's is loaded once pass 0 has left the buffer).
          // (The exit at the loop's end rather than a counted loop or a lambda per wave: those changed the code of
          // the kernels that store one wave.)
          for (int v = 0;; ++v) {
            // This pass's first column (half staging) and first row (ping-pong's wave 1) past the tile's.
            const int pass_col = kHalfStaging ? v * kStagedCols : 0;
            const int pass_row = kHalfStaging ? 0 : v * 64;
            if (v == 0 && load_c) {
              mbarrier_wait(c_bar_addr, c_phase);
              c_phase ^= 1u;
            } else {
              if constexpr (kSpreadFp32Reduce) spread_flush();  // the buffer's previous boxes, before the wait
              if (store_warp) {
                if (v != 0 && load_c) {  // the second pass's C, loaded once the first has left the buffer
                  const int n0 = warp_uniform(w.n_begin) + pass_col, r0 = warp_uniform(box_row(w)) + pass_row;
                  const int g0 = warp_uniform(w.group);
                  if (elect_one()) {
                    load_c_into_staging<kStagedCols, 1, 64, 4, kKGrouped>(params, c_bar_addr, d_stage_addr, n0, r0,
                                                                          g0);
                  }
                } else {
                  if (elect_one()) bulk_wait_group_read<0>();
                }
                __syncwarp();
              }
              if (v != 0 && load_c) {
                mbarrier_wait(c_bar_addr, c_phase);
                c_phase ^= 1u;
              } else {
                named_barrier_sync(1 + warpgroup, 128);
              }
            }
#pragma unroll
            for (int i = 0; i < kAcc / (kHalfStaging ? 2 : 1); i += 2) {
              const int row = row_lo + ((i >> 1) & 1) * 8;
              const int col = (i >> 2) * 8 + static_cast<int>(lane % 4) * 2;
              const u32 addr = d_stage_addr + static_cast<u32>(tma_staging_offset_f32(row, col));
              float c0 = 0.0f, c1 = 0.0f;
              if (load_c) load_shared_v2_f32(addr, c0, c1);
              // (A select, not result[v]: v is the loop's, and a run-time index would put the results in local memory.)
              constexpr int kSecond = kHalfStaging ? kAcc / 2 : 0;  // the second pass's first accumulator
              const float r0 = v == 0 ? result[0][i] : result[kWaves - 1][i + kSecond];
              const float r1 = v == 0 ? result[0][i + 1] : result[kWaves - 1][i + 1 + kSecond];
              store_shared_v2_f32(addr, c0 + r0, c1 + r1);
            }
            fence_proxy_async_shared();  // the writes, before the copy engine reads them
            named_barrier_sync(1 + warpgroup, 128);
            if (kSpreadFp32Reduce && reduce_into_d) {  // the first box now, the others during the next tile
              spread_n0 = warp_uniform(w.n_begin);
              spread_r0 = warp_uniform(box_row(w));
              spread_g0 = warp_uniform(w.group);
              spread_next = 0;
              spread_one();
            } else if (store_warp) {
              const int n0 = warp_uniform(w.n_begin) + pass_col, r0 = warp_uniform(box_row(w)) + pass_row;
              const int g0 = warp_uniform(w.group);
              if (elect_one()) {
#pragma unroll
                for (int b = 0; b < kStagedCols / 32; ++b) fp32_box_out(b, n0, r0, g0, reduce_into_d);
                bulk_commit_group();
              }
              __syncwarp();
            }
            if (!(kPingPong || kHalfStaging) || v == 1) break;
          }
          if (!passes.advance(prob, w)) break;
          continue;
        }
        if constexpr (kFp32Out) {
          store_fp32_with_c<kBlockN>(params, prob, w, g, first != 0, result[0], warpgroup * 64 + row_lo,
                                     static_cast<int>(lane % 4) * 2);
          if (!passes.advance(prob, w)) break;
          continue;
        }
        // ---- epilogue: this warpgroup's 64-row waves, through shared memory, bounded by the scheduler's row_action
        // (or, with TMA stores, by D's extents and the row limit: tma_wave_rows). A 256-row tile stores its two waves
        // one after the other, through one staging buffer, or one buffer per wave with TMA stores. (The wave is a
        // compile-time constant: a loop over waves, left rolled by the compiler, put the results in local memory.)
        auto store_wave = [&](auto wave_constant) {
          constexpr int v = decltype(wave_constant)::value;
          const int wave_row0 = v * kWaveRows + warpgroup * 64;  // this wave's first row in the tile
          if constexpr (kSkipEmptyWaves && v == 1) {
            if (!second_wave_rows) {
              // No rows, no MMA (k_loop_waves): nothing to store. With TMA stores the wave still commits its (empty)
              // bulk group: the buffer waits below count one group per wave and tile.
              if constexpr (kTmaStore) {
                if (warp_uniform(static_cast<int>(warp_in_wg)) == 0) {
                  if (elect_one()) bulk_commit_group();
                  __syncwarp();
                }
              }
              return;
            }
          }
          if constexpr (kAddBf16C && !kCPrefetch) {
            add_bf16_c<kBlockN>(params, prob, w, g, first != 0, result[v], wave_row0 + row_lo,
                                static_cast<int>(lane % 4) * 2);
          }
          if constexpr (kTmaStore) {
            // This wave's own buffer: the copy engine must have read what it was given from it a tile ago (the
            // kWaves - 1 stores committed since then may still be reading theirs).
            // One thread of the warpgroup, always the same one (bulk groups are per thread), tracks the stores:
            // lane 0 of its first warp, elected inside a warp-uniform branch (a branch on the thread index made
            // the compiler build the K loop's WGMMA descriptors in vector registers: 16 R2UR per K block).
            const u32 buf = d_stage_addr + v * (64 * kBlockN * 2);
            const bool store_warp = warp_uniform(static_cast<int>(warp_in_wg)) == 0;
            // Row-to-group: the passes of a tile fill one buffer, each thread always the same elements (no barrier
            // between passes); the first waits for the buffer, the last stores it.
            const bool first_pass = !kRowToGroup || first != 0;
            const bool last_pass = !kRowToGroup || passes.current < 0 || passes.upcoming < 0;
            if constexpr (kCPrefetch) {
              // The buffer holds this tile's C (its previous D was read out before C was loaded).
              mbarrier_wait(c_bar_addr + v * 8, c_phase);
            } else if (first_pass) {
              // Each wave's store is its own bulk group, committed in wave order: with both waves' groups of the
              // previous tile outstanding, at most kWaves - 1 pending means this wave's buffer was read. A
              // row-to-group tile commits nothing until its last pass, so its first pass may reach wave 1 with the
              // previous tile's wave-1 group still the only one pending: it waits for every group instead.
              if (store_warp) {
                if (elect_one()) bulk_wait_group_read<kRowToGroup ? 0 : kWaves - 1>();
                __syncwarp();
              }
              named_barrier_sync(1 + warpgroup, 128);
            }
            // Row-to-group: what this pass stores in each of the thread's two rows (row_action: its expert's rows,
            // zeros for padding rows in the first pass, else nothing), as a store predicate and a mask that zeroes
            // the value: one predicated store per element, no branch (branches here made the loop four times longer:
            // 1122 instructions per warp and tile against 309 for group ends, Nsight Compute, same tile).
            bool store_lo = true, store_hi = true;
            u32 keep_lo = ~0u, keep_hi = ~0u;
            if constexpr (kRowToGroup) {
              const RowAction act_lo = passes.row_action_in(prob, w, first != 0, w.row_begin + wave_row0 + row_lo);
              const RowAction act_hi =
                  passes.row_action_in(prob, w, first != 0, w.row_begin + wave_row0 + row_lo + 8);
              store_lo = act_lo != RowAction::kSkip;
              store_hi = act_hi != RowAction::kSkip;
              keep_lo = act_lo == RowAction::kStoreZeros ? 0u : ~0u;
              keep_hi = act_hi == RowAction::kStoreZeros ? 0u : ~0u;
            }
            // Swizzled 64-column boxes (tma_staging_offset): conflict-free 4-byte accesses. With C, each thread reads
            // C at exactly the elements it then overwrites with D: D = C + A B^T in FP32, rounded once.
#pragma unroll
            for (int i = 0; i < kAcc; i += 2) {
              const int row = row_lo + ((i >> 1) & 1) * 8;
              const int col = (i >> 2) * 8 + static_cast<int>(lane % 4) * 2;
              const u32 addr = buf + static_cast<u32>(tma_staging_offset(row, col));
              if constexpr (kCPrefetch) {
                const u32 c = load_shared_u32(addr);
                result[v][i] += __uint_as_float(c << 16);                // column col (lower address)
                result[v][i + 1] += __uint_as_float(c & 0xffff0000u);  // column col + 1
              }
              if constexpr (kRowToGroup) {
                const bool hi = ((i >> 1) & 1) != 0;  // compile-time in the unrolled loop
                store_shared_u32_if(addr, pack_bf16x2(result[v][i], result[v][i + 1]) & (hi ? keep_hi : keep_lo),
                                    hi ? store_hi : store_lo);
              } else {
                store_shared_u32(addr, pack_bf16x2(result[v][i], result[v][i + 1]));
              }
            }
            if (!last_pass) return;
            fence_proxy_async_shared();  // the writes, before the copy engine reads them
            named_barrier_sync(1 + warpgroup, 128);
            // Rows of this wave the tile may store (tma_wave_rows): the copy engine bounds them by D's extents (M, N;
            // masked: the capacity), which is the row limit of a dense tile but not of a grouped one. (Dense: no
            // shuffle for a row limit the decision does not read.)
            const int wave_first_row = warp_uniform(w.row_begin + wave_row0);
            const int wave_rows = tma_wave_rows(
                kLayout, kLayout == GroupedKind::kDense ? 0 : warp_uniform(w.row_limit), wave_first_row);
            if (wave_rows >= 64) {
              if (store_warp) {
                // (Whole-warp shuffles here, before the election: inside it one lane is active.)
                const int n0 = warp_uniform(w.n_begin);
                const int g = kMasked ? warp_uniform(w.group) : 0;
                if (elect_one()) {
#pragma unroll
                  for (int b = 0; b < kBlockN / 64; ++b) {
                    if constexpr (kMasked) {  // D [G, capacity, N]
                      tma_store_3d(&params.tma_d, buf + b * (64 * 128), n0 + 64 * b, wave_first_row - g * prob.rows,
                                   g);
                    } else {
                      tma_store_2d(&params.tma_d, buf + b * (64 * 128), n0 + 64 * b, wave_first_row);
                    }
                  }
                  bulk_commit_group();
                }
                __syncwarp();
              }
            } else if (wave_rows > 0) {
              // A grouped wave that reaches past its group's rows: 16 bytes per thread from the staging buffer,
              // rows below the limit only. (The next writes to this buffer follow a barrier of the warpgroup.)
              // (D's row addressing as in bf16_d_row, with the group's base kept out of the loop.)
              constexpr int kChunksPerRow = kBlockN / 8;
              const int group_of_rows = kMasked ? w.group : 0;
              unsigned short* d_base = params.d + group_of_rows * params.d_group_stride;
              const long long row_origin = static_cast<long long>(group_of_rows) * params.d_rows_per_group;
              for (int c = static_cast<int>(tid_in_wg); c < 64 * kChunksPerRow; c += 128) {
                const int r = c / kChunksPerRow;
                const int col = w.n_begin + (c % kChunksPerRow) * 8;
                if (r >= wave_rows || col >= prob.n) continue;
                u32 v0, v1, v2, v3;
                load_shared_v4(buf + static_cast<u32>(tma_staging_offset(r, (c % kChunksPerRow) * 8)), v0, v1, v2, v3);
                store_global_v4(d_base + (wave_first_row + r - row_origin) * params.ldd + col, v0, v1, v2, v3);
              }
            }
            if constexpr (kWaves > 1 && !kRowToGroup) {
              if (wave_rows < 64 && store_warp) {
                // A wave stored by the threads, or not at all, commits an empty bulk group: the wait for this buffer
                // in the next tile (at most kWaves - 1 pending) counts one group per wave, and without this one it
                // would let wave 0 rewrite its buffer while the copy engine may still be reading the previous tile's
                // store. (One wave, or row-to-group, waits for every group: nothing to count.)
                if (elect_one()) bulk_commit_group();
                __syncwarp();
              }
            }
            return;
          }
          named_barrier_sync(1 + warpgroup, 128);  // the previous pass's reads of the staging buffer are done
          // What the store loop does with each of the warpgroup's 64 rows, decided once per row and kept in the row's
          // padding bytes of the staging buffer (after its block_n values). For row-to-group this reads the routing:
          // 64 loads in flight together instead of one dependent load per store iteration (12 at block_n 192).
          const u32 action_offset = kBlockN * 2;
          if (tid_in_wg < 64) {
            const int row = w.row_begin + wave_row0 + static_cast<int>(tid_in_wg);
            store_shared_u32(d_stage_addr + tid_in_wg * kSmem.stage_pitch + action_offset,
                             static_cast<u32>(passes.row_action_in(prob, w, first != 0, row)));
          }
#pragma unroll
          for (int i = 0; i < kAcc; i += 2) {
            const int row = row_lo + ((i >> 1) & 1) * 8;
            const int col = (i >> 2) * 8 + static_cast<int>(lane % 4) * 2;
            store_shared_u32(d_stage_addr + row * kSmem.stage_pitch + col * 2,
                             pack_bf16x2(result[v][i], result[v][i + 1]));
          }
          named_barrier_sync(1 + warpgroup, 128);
          constexpr int kChunksPerRow = kBlockN / 8;  // 16-byte chunks of 8 bf16
          for (int c = static_cast<int>(tid_in_wg); c < 64 * kChunksPerRow; c += 128) {
            const int r = c / kChunksPerRow;
            const int col = w.n_begin + (c % kChunksPerRow) * 8;
            const int row = w.row_begin + wave_row0 + r;
            if (col >= prob.n) continue;
            const RowAction action =
                static_cast<RowAction>(load_shared_u32(d_stage_addr + r * kSmem.stage_pitch + action_offset));
            if (action == RowAction::kSkip) continue;
            u32 v0 = 0, v1 = 0, v2 = 0, v3 = 0;
            if (action == RowAction::kStoreAccumulator) {
              load_shared_v4(d_stage_addr + r * kSmem.stage_pitch + (c % kChunksPerRow) * 16, v0, v1, v2, v3);
            }
            store_global_v4(bf16_d_row<kMasked>(params, w.group, row) + col, v0, v1, v2, v3);
          }
        };
        store_wave(IntConstant<0>{});
        if constexpr (kWaves > 1) store_wave(IntConstant<1>{});
        if constexpr (kCPrefetch) c_phase ^= 1u;
        if (!passes.advance(prob, w)) break;
      }
    }
    if constexpr (kSpreadFp32Reduce) spread_flush();
    if constexpr (kPingPong) {
      // The CTA's last tile was the other warpgroup's: its turn arrival for this one is still pending.
      if (tile_count > 0 && ((tile_count - 1) & 1) != static_cast<int>(wg_uniform)) {
        named_barrier_sync(kTurnBarrier + wg_uniform, 256);
      }
    }
    // The copy engine reads the staging buffers until its stores complete: none may be pending at exit.
    if constexpr (kTmaStore) {
      if (threadIdx.x % 128 == 0) bulk_wait_group<0>();  // the thread that committed them
    }
  }  // consumers
  // No CTA may exit while its peer can still arrive on its barriers or multicast into its shared memory.
  if constexpr (kClusterSize > 1) cluster_sync();
}

}  // namespace moegemm::kernels::sm90
