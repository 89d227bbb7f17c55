// SM90 FP8 GEMM. Recipe (1,128,128): A scaled per row x 128 K, B per 128x128 block, BF16 D, for the dense,
// m-grouped contiguous (both forms) and m-grouped masked layouts. Recipe (1,1,128) (kRecipe = 1, weight gradients):
// A and B scaled per row x 128 K, FP32 D = C + A B^T; dense, and k-grouped (per-expert descriptors written by
// sm90/kgrouped_descriptors.cuh before the launch). BF16 (kRecipe 2, 3): see GemmRecipe.
//
// Structure (persistent, warp-specialised):
//   warpgroup kMathWGs (the last 128 threads): its first warp runs the producer loop and one elected lane issues
//     the TMA loads of A, B and A's scales (and copies B's scales) into a ring of kStages shared-memory stages,
//     each guarded by a "full" and an "empty" mbarrier;
//   warpgroups 0..kMathWGs-1: each owns 64 rows of the block_m-row tile. Per 128-wide K block it issues four
//     m64nNk32 WGMMAs into a fresh FP32 accumulator, waits, frees the stage, and promotes:
//     result += accumulator * scale_a[row] * scale_b[block]. The epilogue stages BF16 rows in shared memory and
//     stores them with 16-byte coalesced writes, row by row, only where the scheduler's row_action says so:
//     no store ever reaches a row outside the tile's group, whatever the capacity or the routing values.
// Tile order comes from the one scheduler (common/scheduler.cuh), run identically by producer and consumers.
#pragma once

#include "common/cluster_split.cuh"
#include "common/platform.cuh"
#include "common/scheduler.cuh"
#include "sm90/gemm_params.cuh"
#include "sm90/ptx.cuh"
#include "sm90/wgmma_ops.cuh"

namespace moegemm::kernels::sm90 {

// A value every lane of the warp holds, taken from lane 0 so that the compiler knows it is warp-uniform. Values
// derived from memory reads (routing, k-grouped sizes) are not provably uniform otherwise, and a main loop under a
// branch or trip count that is not provably uniform leaves the uniform datapath: its WGMMA descriptors are then
// rebuilt in vector registers every K block (scripts/sass_loops.sh shows it as R2UR in the K loop).
MOEGEMM_DEVICE int warp_uniform(int value) { return __shfl_sync(0xffffffffu, value, 0); }

// first_group_in_rows / next_group_in_rows (common/scheduler.cuh, the specification) computed by a whole warp: each
// lane scans every 32nd row, then a min-reduction. One scan yields the two smallest valid groups above `after`,
// so a tile with one or two experts (nearly all of them) needs a single scan: each scan is a global-memory round
// trip on the way into or out of a tile. All 32 lanes must call it; all get the same answer (-1: none).
struct GroupPair {
  int first, second;  // the smallest valid group above `after`, and the next one
};

MOEGEMM_DEVICE GroupPair warp_next_groups_in_rows(const int* routing, int begin, int end, int num_groups, int after) {
  constexpr int kNone = 0x7fffffff;
  int lo = kNone, hi = kNone;  // lo < hi, or hi == kNone
  auto insert = [&](int g) {
    if (g < lo) {
      hi = lo;
      lo = g;
    } else if (g > lo && g < hi) {
      hi = g;
    }
  };
  // Four loads per lane in flight before any is compared: a 128-row tile costs one memory round trip, not four.
  for (int base = begin + static_cast<int>(lane_index()); base < end; base += 4 * 32) {
    int values[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) values[i] = base + 32 * i < end ? routing[base + 32 * i] : -1;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      if (is_valid_group(values[i], num_groups) && values[i] > after) insert(values[i]);
    }
  }
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) {
    const int other_lo = __shfl_xor_sync(0xffffffffu, lo, offset);
    const int other_hi = __shfl_xor_sync(0xffffffffu, hi, offset);
    if (other_lo != kNone) insert(other_lo);
    if (other_hi != kNone) insert(other_hi);
  }
  // Every lane holds the same values now (warp_uniform tells the compiler).
  lo = warp_uniform(lo);
  hi = warp_uniform(hi);
  return {lo == kNone ? -1 : lo, hi == kNone ? -1 : hi};
}

// The passes over one tile: the scheduler's group, or for row-to-group the experts present in ascending order,
// found by the warp. `upcoming` caches the pass after `current` when the last scan saw it.
template <GroupedKind kLayout>
struct TilePasses {
  int current = -1;
  int upcoming = -1;

  MOEGEMM_DEVICE void start(const SchedulerProblem& p, const TileWork& w) {
    if constexpr (kLayout == GroupedKind::kContiguousRowToGroup) {
      const GroupPair groups = warp_next_groups_in_rows(p.routing, w.row_begin, w.row_limit, p.num_groups, -1);
      current = groups.first;
      upcoming = groups.second;
    } else {
      current = warp_uniform(w.group);
    }
  }

  // Moves to the next pass; false when the tile is done.
  MOEGEMM_DEVICE bool advance(const SchedulerProblem& p, const TileWork& w) {
    if constexpr (kLayout == GroupedKind::kContiguousRowToGroup) {
      if (current < 0 || upcoming < 0) return false;
      // A third expert can only follow the second if it also lies in these rows: scan again from the second.
      const GroupPair groups = warp_next_groups_in_rows(p.routing, w.row_begin, w.row_limit, p.num_groups, upcoming);
      current = upcoming;
      upcoming = groups.first;
      return true;
    } else {
      return false;
    }
  }
};

// Promotion of one K block: result += acc * scale_a[row] * scale_b[column block]. A thread's accumulator i sits in
// row half (i >> 1) & 1 and 8-column group i >> 2, both compile-time; whether that group lies before the tile's
// split into two scale blocks is compile-time too once the split is a template argument, so the loop is one FMA
// per accumulator (a run-time split costs a compare and two selects per accumulator, three times the work).
struct PromotionScales {
  float lo0, hi0, lo1, hi1;  // rows lo/hi (= +8) x scale blocks before/after the split
};

template <int kAcc, int kSplit>
MOEGEMM_DEVICE void promote(float (&result)[kAcc], const float (&acc)[kAcc], const PromotionScales& s) {
#pragma unroll
  for (int i = 0; i < kAcc; ++i) {
    const bool first_block = (i >> 2) * 8 < kSplit;
    const bool hi = (i >> 1) & 1;
    result[i] += acc[i] * (first_block ? (hi ? s.hi0 : s.lo0) : (hi ? s.hi1 : s.lo1));
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
  const int n_scale_block = w.n_begin / 128;
  const int split = 128 - (w.n_begin - n_scale_block * 128);
  const bool two_blocks = split < kBlockN && (n_scale_block + 1) * 128 < prob.n;
  return {params.sfb + group * params.sfb_group_stride + n_scale_block * params.sfb_n_stride,
          two_blocks ? params.sfb_n_stride : 0, two_blocks ? split : kBlockN};
}

template <int kValue>
struct IntConstant {
  static constexpr int value = kValue;
};

// split = 128 - n_begin % 128 takes only the values 128 - j * gcd(block_n, 128); those >= block_n mean the whole
// tile is in one scale block. Calls f(IntConstant<split>) with the run-time split as a compile-time constant, once
// per tile, so the K loop inside f has no split logic at all.
template <int kBlockN, int kCandidate = 128 - gcd_of(kBlockN, 128), typename F>
MOEGEMM_DEVICE void dispatch_split_chain(int split, F&& f) {
  if constexpr (kCandidate > 0) {
    if constexpr (kCandidate < kBlockN) {
      if (split == kCandidate) {
        f(IntConstant<kCandidate>{});
        return;
      }
    }
    dispatch_split_chain<kBlockN, kCandidate - gcd_of(kBlockN, 128)>(split, f);
  }
}

template <int kBlockN, typename F>
MOEGEMM_DEVICE void dispatch_split(int split, F&& f) {
  if (split >= kBlockN) {
    f(IntConstant<kBlockN>{});
  } else if (split == 128) {
    f(IntConstant<128>{});
  } else {
    dispatch_split_chain<kBlockN>(split, f);
  }
}

// Promotion for recipe (1,1,128): result += acc * scale_a[row] * scale_b[column], with B's scales for the tile's
// block_n columns in shared memory. A thread's accumulators 4j..4j+3 sit in columns 8j + col0 + {0, 1} of rows
// lo/hi, so each 8-column group needs one float2 of B's scales; sfb_addr is the shared address of column col0.
template <int kBlockN>
MOEGEMM_DEVICE void promote_row_scaled(float (&result)[kBlockN / 2], const float (&acc)[kBlockN / 2], float sa_lo,
                                       float sa_hi, u32 sfb_addr) {
#pragma unroll
  for (int j = 0; j < kBlockN / 8; ++j) {
    float sb0, sb1;
    load_shared_v2_f32(sfb_addr + j * 8 * 4, sb0, sb1);
    result[4 * j + 0] += acc[4 * j + 0] * (sa_lo * sb0);
    result[4 * j + 1] += acc[4 * j + 1] * (sa_lo * sb1);
    result[4 * j + 2] += acc[4 * j + 2] * (sa_hi * sb0);
    result[4 * j + 3] += acc[4 * j + 3] * (sa_hi * sb1);
  }
}

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

// Per-stage ring position, identical in producer and consumers.
struct PipelineCursor {
  int stage = 0;
  u32 phase = 0;
  template <int kStages>
  MOEGEMM_DEVICE void advance() {
    if (++stage == kStages) {
      stage = 0;
      phase ^= 1u;
    }
  }
};

// kClusterM = 2: pairs of CTAs along M share each B tile, each loading half of it with TMA multicast into both
// CTAs' shared memory (half the L2 traffic for B). The scheduler's problem then has block_m = 2 * kBlockM.
// kClusterN = 2 (dense, recipe (1,128,128)): pairs along N share each A tile the same way; the scheduler's problem
// has block_n = 2 * kBlockN.
// kMnMajor (BF16 only): bit 0 = A is MN-major ([K, M] storage, M contiguous), bit 1 = B is MN-major ([K, N]).
// MN-major tiles arrive as TMA boxes of [64 K][64 MN] (8 KiB each, one 128-byte swizzle width of MN) and are read
// by WGMMA with the transpose flag.
template <int kBlockM, int kBlockN, int kStages, int kKind, int kClusterM, int kRecipe = 0, int kMnMajor = 0,
          int kClusterN = 1>
__global__ void __launch_bounds__((gemm_math_warpgroups(kBlockM) + 1) * 128, 1) gemm_kernel(const __grid_constant__ GemmParams params) {
  constexpr bool kRowScaledB = kRecipe == static_cast<int>(GemmRecipe::kFp8_1d1d);
  constexpr bool kUnscaled = recipe_is_bf16(kRecipe);
  constexpr bool kFp32Out = recipe_has_fp32_out(kRecipe);
  constexpr bool kAddBf16C = kRecipe == static_cast<int>(GemmRecipe::kBf16AddC);
  constexpr bool kBlockScaledB = !kRowScaledB && !kUnscaled;  // recipe (1,128,128)
  // B's block scales: copied into each stage by the producer (b_block_scales_in_stages).
  constexpr bool kBScalesInStages = b_block_scales_in_stages(kRecipe);
  constexpr int kStageK = stage_k(kRecipe);  // K elements per stage
  constexpr int kRowBytes = 128;             // bytes per stage row: one 128-byte swizzle atom
  static_assert(kBlockM == 64 || kBlockM == 128 || kBlockM == 256, "block_m must be 64, 128 or 256");
  static_assert(kBlockM != 256 || gemm_tall_tile_supported(kRecipe, kKind, kBlockN, kClusterM),
                "256-row tiles: see gemm_tall_tile_supported (sm90/gemm_params.cuh)");
  static_assert(gemm_block_n_supported(kRecipe, kBlockN), "block_n: see gemm_block_n_supported (sm90/gemm_params.cuh)");
  static_assert(!kRowScaledB || ((kKind == 0 || kKind == static_cast<int>(GroupedKind::kKGrouped)) && kClusterM == 1),
                "recipe (1,1,128): dense or k-grouped, no cluster, so far");
  static_assert(!kUnscaled || kClusterM == 1 || (kMnMajor & 2) == 0,
                "BF16 pairs along M: B K-major (each CTA multicasts half of B's 128-byte rows)");
  static_assert(!kAddBf16C || kKind == static_cast<int>(GroupedKind::kDense), "BF16 D with C: dense only");
  constexpr bool kMnMajorA = (kMnMajor & 1) != 0;
  constexpr bool kMnMajorB = (kMnMajor & 2) != 0;
  constexpr u32 kMnChunkBytes = 64 * 128;  // one [64 K rows][64 MN values] BF16 box
  static_assert(kMnMajor == 0 || kUnscaled, "MN-major operands: BF16 only (FP8 WGMMA reads K-major operands)");
  constexpr bool kKGrouped = kKind == static_cast<int>(GroupedKind::kKGrouped);
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
  constexpr GemmSmemLayout kSmem = gemm_smem_layout(kBlockM, kBlockN, kStages, kRecipe, kTmaStore);
  constexpr int kMathWGs = gemm_math_warpgroups(kBlockM);
  // 64-row WGMMA waves per consumer warpgroup: wave v of warpgroup w holds tile rows v * kWaveRows + w * 64 on.
  constexpr int kWaveRows = 64 * kMathWGs;
  constexpr int kWaves = kBlockM / kWaveRows;
  static_assert(kWaves == 1 || kWaves == 2, "the epilogue stores one or two waves");
  static_assert(kWaves == gemm_waves(kBlockM), "the shared-memory layout sizes the staging by gemm_waves");
  constexpr GroupedKind kLayout = static_cast<GroupedKind>(kKind);
  constexpr bool kMasked = kLayout == GroupedKind::kMasked;
  static_assert(kClusterM == 1 || kClusterM == 2, "clusters of 1 or 2 CTAs");
  static_assert(kClusterN == 1 || (kClusterN == 2 && kClusterM == 1 && (kBlockScaledB || (kUnscaled && !kMnMajorA)) &&
                                   kKind == static_cast<int>(GroupedKind::kDense) && kBlockM >= 128),
                "A shared along N: pairs, dense, recipe (1,128,128) or BF16 with A K-major, 128- or 256-row tiles");
  constexpr int kClusterSize = kClusterM * kClusterN;
  // Row-to-group tiles run one pass per expert present, which differs between the two CTAs of a pair.
  static_assert(kClusterM == 1 || kLayout != GroupedKind::kContiguousRowToGroup, "no multicast for row-to-group");
  static_assert(kClusterM == 1 || kBlockN % 16 == 0, "each CTA multicasts half of the B tile: 8-row swizzle atoms");

  extern __shared__ unsigned char smem_raw[];
  unsigned char* smem = reinterpret_cast<unsigned char*>((reinterpret_cast<u64>(smem_raw) + 1023) & ~u64(1023));
  u64* full_bar = reinterpret_cast<u64*>(smem + kSmem.barrier_offset);
  u64* empty_bar = full_bar + kStages;

  SchedulerProblem kgrouped_problem = params.problem;  // k-grouped: sizes from the parameters when not on the device
  if constexpr (kKGrouped) {
    if (kgrouped_problem.routing == nullptr) kgrouped_problem.routing = params.ks_inline;
  }
  const SchedulerProblem& prob = kKGrouped ? kgrouped_problem : params.problem;
  const int num_kb = ceil_div(prob.k, kStageK);
  const int warpgroup = static_cast<int>(threadIdx.x / 128);
  const u32 lane = lane_index();

  if (threadIdx.x == kMathWGs * 128) {
    tma_prefetch_descriptor(&params.tma_a);
    tma_prefetch_descriptor(&params.tma_b);
    if constexpr (!kUnscaled) tma_prefetch_descriptor(&params.tma_sfa);
    if constexpr (kRowScaledB) tma_prefetch_descriptor(&params.tma_sfb);
    if constexpr (kTmaStore) tma_prefetch_descriptor(&params.tma_d);
    for (int s = 0; s < kStages; ++s) {
      // Arrivals per phase: the issuer's arrive.expect_tx, and its cp.async arrival when it copies B's scales.
      mbarrier_init(&full_bar[s], kBScalesInStages ? 2 : 1);
      mbarrier_init(&empty_bar[s], kMathWGs * 4 * kClusterSize);  // one arrival per consumer warp of the cluster
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
  // This CTA's part of a pair tile (the pair itself without a cluster).
  auto cta_tile = [&](const TileWork& pair) {
    if constexpr (kClusterM > 1) return cluster_half(pair, static_cast<int>(cluster_rank), kBlockM);
    if constexpr (kClusterN > 1) return cluster_half_n(pair, static_cast<int>(cluster_rank), kBlockN);
    return pair;
  };

  if (warpgroup == kMathWGs) {
    // ---------------------------------------------------------------- producer
    setmaxnreg_dec<40>();
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
      TileIterator tiles(prob, cluster_id, num_clusters);
      TileWork pair;
      while (tiles.next(pair, false)) {
        const TileWork w = cta_tile(pair);
        TilePasses<kLayout> passes;
        passes.start(prob, w);
        do {
          const int g = passes.current;
          if (g >= 0) {
            // The whole warp runs the K loop on warp-uniform values, so that the copies' coordinates and addresses
            // live in uniform registers; one elected lane issues. (Run by lane 0 alone inside a branch, each copy
            // was wrapped in a loop over active lanes: about 75 instructions per stage instead of about 50.
            // Measured: decode rows unchanged to 6% faster, docs/results/2026-12-03-producer-chain.md.)
            const int tile_kb = warp_uniform(kKGrouped ? ceil_div(w.k_len, kStageK) : num_kb);
            const int k_base = warp_uniform(kKGrouped ? w.k_begin : 0);  // the expert's offset in the concatenated K
            const int a_row = warp_uniform(w.a_row);
            const int n_begin = warp_uniform(w.n_begin);
            BScaleBlocks b_scales{};
            if constexpr (kBScalesInStages) b_scales = b_scale_blocks<kBlockN, (kClusterN > 1)>(params, prob, w, g);
            if constexpr (kKGroupedFp8) {
              // The descriptors were written by the preceding kernel through the generic proxy. Every lane
              // acquires: whichever lane elect.sync picks below issues the copies.
              tma_descriptor_acquire(params.kgrouped_tma + 2 * g);
              tma_descriptor_acquire(params.kgrouped_tma + 2 * g + 1);
            }
            for (int kb = 0; kb < tile_kb; ++kb) {
              const u32 stage = static_cast<u32>(cur.stage);
              mbarrier_wait(empty_bar0 + stage * 8, cur.phase ^ 1u);
              const u32 bar = full_bar0 + stage * 8;
              const u32 a_dst = a_stage0 + stage * kSmem.a_bytes;
              const u32 b_dst = b_stage0 + stage * kSmem.b_bytes;
              const u32 sfa_dst = sfa_stage0 + stage * kSmem.sfa_bytes;
              const u32 sfb_dst = sfb_stage0 + stage * kSmem.sfb_bytes;
              const int k_coord = kb * kStageK;
              if (elect_one()) {
                mbarrier_arrive_expect_tx(bar, params.tx_bytes);
                if constexpr (kKGroupedFp8) {
                  // Expert g's own [M, K_g] / [N, K_g] blocks: K from 0 inside them; its scales start at k_base / 128.
                  const TmaDescriptor* desc_a = params.kgrouped_tma + 2 * g;
                  tma_load_2d(a_dst, desc_a, bar, k_coord, a_row);
                  tma_load_2d(b_dst, desc_a + 1, bar, k_coord, n_begin);
                  tma_load_2d(sfa_dst, &params.tma_sfa, bar, a_row, k_base / kStageK + kb);
                  tma_load_2d(sfb_dst, &params.tma_sfb, bar, n_begin, k_base / kStageK + kb);
                } else {
                  if constexpr (kMasked) {
                    const int row_in_group = a_row - g * prob.rows;
                    tma_load_3d(a_dst, &params.tma_a, bar, k_coord, row_in_group, g);
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
                    if constexpr (!kUnscaled) tma_load_2d(sfa_dst, &params.tma_sfa, bar, a_row, kb);
                  }
                  // B rows of expert g's [N, K] slab (the 3-D descriptor adds g). With a cluster, each CTA fetches
                  // its half of the tile's rows for both CTAs.
                  if constexpr (kClusterM > 1) {
                    constexpr int kHalf = kBlockN / 2;
                    tma_load_3d_multicast(b_dst + cluster_rank * kHalf * kRowBytes, &params.tma_b, bar, 0x3, k_coord,
                                          n_begin + static_cast<int>(cluster_rank) * kHalf, g);
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
    setmaxnreg_inc<kMathWGs == 1 ? 240 : 232>();
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
    const u32 a_addr0 = smem_base + kSmem.a_offset + wg_uniform * (kMnMajorA ? kMnChunkBytes : 64 * kRowBytes);
    const u32 b_addr0 = smem_base + kSmem.b_offset;
    const u32 desc_a_lo0 = smem_desc_sw128_lo(a_addr0, kMnMajorA ? kMnChunkBytes : 16);
    const u32 desc_b_lo0 = smem_desc_sw128_lo(b_addr0, kMnMajorB ? kMnChunkBytes : 16);
    const u32 sfa_addr = smem_base + kSmem.sfa_offset + (wg_uniform * 64 + static_cast<u32>(row_lo)) * 4;
    // B's scales in stage 0: recipe (1,1,128) this thread's column pair; recipe (1,128,128) the two block scales.
    const u32 sfb_stage_addr = smem_base + kSmem.sfb_offset + (kRowScaledB ? (lane % 4) * 2 * 4 : 0);

    // A consumer warp is done with a stage: one arrival on its empty barrier per warp.
    auto release_stage = [&](u32 stage) {
      if (lane == 0) {
        if constexpr (kClusterSize > 1) {
          // The stage is refilled by multicasts from both CTAs: release it to both producers.
          mbarrier_arrive_cluster(&empty_bar[stage], 0);
          mbarrier_arrive_cluster(&empty_bar[stage], 1);
        } else {
          mbarrier_arrive(empty_bar_addr + stage * 8);
        }
      }
    };
    PipelineCursor cur;
    TileIterator tiles(prob, cluster_id, num_clusters);
    TileWork pair;
    float acc[kAcc];
    float result[kWaves][kAcc];
    while (tiles.next(pair, false)) {
      const TileWork w = cta_tile(pair);
      TilePasses<kLayout> passes;
      passes.start(prob, w);
      for (int first = 1;; first = 0) {
        const int g = passes.current;
#pragma unroll
        for (int v = 0; v < kWaves; ++v) {
#pragma unroll
          for (int i = 0; i < kAcc; ++i) result[v][i] = 0.0f;
        }
        if (g >= 0) {
          const int tile_kb = kKGrouped ? ceil_div(w.k_len, kStageK) : num_kb;
          const BScaleBlocks b_scales = b_scale_blocks<kBlockN, (kClusterN > 1)>(params, prob, w, g);  // (1,128,128)
          auto k_loop = [&](auto split_constant) {
            constexpr int kSplit = decltype(split_constant)::value;
            for (int kb = 0; kb < tile_kb; ++kb) {
              const u32 stage = static_cast<u32>(cur.stage);
              mbarrier_wait(full_bar_addr + stage * 8, cur.phase);
              float sa_lo[kWaves], sa_hi[kWaves], scale_b0 = 1.0f, scale_b1 = 1.0f;
#pragma unroll
              for (int v = 0; v < kWaves; ++v) {
                sa_lo[v] = 1.0f;
                sa_hi[v] = 1.0f;
                if constexpr (!kUnscaled) {
                  const u32 sfa_wave = sfa_addr + stage * kSmem.sfa_bytes + v * kWaveRows * 4;
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
                for (int v = 0; v < kWaves; ++v) fence_registers(result[v]);
                wgmma_fence();
#pragma unroll
                for (int v = 0; v < kWaves; ++v) {
                  const u32 desc_a_wave = desc_a_lo + v * ((kWaveRows * kRowBytes) >> 4);
#pragma unroll
                  for (int kk = 0; kk < 4; ++kk) {
                    const u64 desc_a = smem_desc_sw128_from_lo(desc_a_wave + kk * (kStepA >> 4));
                    const u64 desc_b = smem_desc_sw128_from_lo(desc_b_lo + kk * (kStepB >> 4));
                    wgmma_bf16<kBlockN, kMnMajorA ? 1 : 0, kMnMajorB ? 1 : 0>(result[v], desc_a, desc_b,
                                                                              (kb > 0 || kk > 0) ? 1 : 0);
                  }
                }
                wgmma_commit();
#pragma unroll
                for (int v = 0; v < kWaves; ++v) fence_registers(result[v]);
                wgmma_wait<0>();
#pragma unroll
                for (int v = 0; v < kWaves; ++v) fence_registers(result[v]);
                release_stage(stage);
                cur.advance<kStages>();
              } else {
                // FP8: one wave after the other through the one accumulator (a fresh one per K block, promoted
                // with that block's scales), each promoted into its own result rows (as in a 128-row tile, the
                // other warpgroup's WGMMAs keep the tensor cores busy meanwhile).
#pragma unroll
                for (int v = 0; v < kWaves; ++v) {
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
                  fence_registers(acc);
                  wgmma_wait<0>();
                  fence_registers(acc);
                  if (v == kWaves - 1) {
                    if constexpr (kRowScaledB) {
                      // B's scales live in this stage: promote before releasing it.
                      promote_row_scaled<kBlockN>(result[0], acc, sa_lo[0], sa_hi[0],
                                                  sfb_stage_addr + stage * kSmem.sfb_bytes);
                    }
                    release_stage(stage);
                    cur.advance<kStages>();
                  }
                  if constexpr (kBlockScaledB) {
                    const PromotionScales scales{sa_lo[v] * scale_b0, sa_hi[v] * scale_b0, sa_lo[v] * scale_b1,
                                                 sa_hi[v] * scale_b1};
                    promote<kAcc, kSplit>(result[v], acc, scales);
                  }
                }
              }
            }
          };
          if constexpr (kRowScaledB || kUnscaled) {
            k_loop(IntConstant<kBlockN>{});
          } else {
            dispatch_split<kBlockN>(b_scales.split, k_loop);
          }
          // (BF16: a k-grouped expert without K leaves result at zero, so its tile stores C alone.)
        }

        if constexpr (kFp32Out) {
          store_fp32_with_c<kBlockN>(params, prob, w, g, first != 0, result[0], warpgroup * 64 + row_lo,
                                     static_cast<int>(lane % 4) * 2);
          if (!passes.advance(prob, w)) break;
          continue;
        }
        // ---- epilogue: this warpgroup's 64-row waves, through shared memory, bounded by the scheduler's row_action.
        // A 256-row tile stores its two waves one after the other through the same staging buffer. (The wave is a
        // compile-time constant: a loop over waves, left rolled by the compiler, put the results in local memory.)
        auto store_wave = [&](auto wave_constant) {
          constexpr int v = decltype(wave_constant)::value;
          const int wave_row0 = v * kWaveRows + warpgroup * 64;  // this wave's first row in the tile
          if constexpr (kAddBf16C) {
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
            if (store_warp) {
              if (elect_one()) bulk_wait_group_read<kWaves - 1>();
              __syncwarp();
            }
            named_barrier_sync(1 + warpgroup, 128);
            // Swizzled 64-column boxes (tma_staging_offset): conflict-free 4-byte writes.
#pragma unroll
            for (int i = 0; i < kAcc; i += 2) {
              const int row = row_lo + ((i >> 1) & 1) * 8;
              const int col = (i >> 2) * 8 + static_cast<int>(lane % 4) * 2;
              store_shared_u32(buf + static_cast<u32>(tma_staging_offset(row, col)),
                               pack_bf16x2(result[v][i], result[v][i + 1]));
            }
            fence_proxy_async_shared();  // the writes, before the copy engine reads them
            named_barrier_sync(1 + warpgroup, 128);
            // Rows of this wave the tile may store: the copy engine bounds them by D's extents (M, N; masked: the
            // capacity), which is the row limit of a dense tile but not of a grouped one.
            const int wave_first_row = warp_uniform(w.row_begin + wave_row0);
            const int wave_rows = kLayout == GroupedKind::kDense ? 64 : warp_uniform(w.row_limit) - wave_first_row;
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
                             static_cast<u32>(row_action(prob, w, g, first != 0, row)));
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
        if (!passes.advance(prob, w)) break;
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
