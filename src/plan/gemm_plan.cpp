#include "plan/gemm_plan.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <sstream>

#include "moegemm/error.hpp"
#include "sm90/gemm_params.cuh"

namespace moegemm::plan {
namespace {

// Blocks of `step` covering `extent`, in 64 bits: the sizes reach INT_MAX (every size must fit an int), so
// `extent + step - 1` must not be computed in int.
long long blocks_of(long long extent, long long step) { return (extent + step - 1) / step; }

// Rates of one H200 SM for the model (docs/heuristics.md): FP8 dense peak 1979 TFLOP/s over 132 SMs; operand
// traffic from L2 about 50 GB/s per SM (the first benchmark run: 128x192 tiles of the large grouped shapes moved
// 6.7 TB/s in total and ran at 0.4-0.5 of the tensor peak, so L2, not the tensor cores, bounded them); HBM about
// 4 TB/s for the whole chip.
constexpr double kFlopsPerSm = 1979e12 / 132;
constexpr double kL2BytesPerSm = 50e9;
constexpr double kHbmBytes = 4.0e12;
// Fixed cost of a tile on an SM (pipeline fill, epilogue), which makes extra waves cost something.
constexpr double kTileOverheadUs = 0.8;
constexpr int kStageCap = 16;
constexpr double kKBlockLatencyUs = 0.3;

static_assert(math_warpgroups_for(64) == kernels::sm90::gemm_math_warpgroups(64) &&
                  math_warpgroups_for(128) == kernels::sm90::gemm_math_warpgroups(128) &&
                  math_warpgroups_for(192) == kernels::sm90::gemm_math_warpgroups(192) &&
                  math_warpgroups_for(256) == kernels::sm90::gemm_math_warpgroups(256),
              "the public rule and the kernel's agree");
static_assert(kernels::sm90::kMaxKSplits == 4, "validate/options.cpp checks k_splits against [1, 4]");
constexpr int kBlockMs[] = {64, 128, 256};
// FP32-D tiles 192 rows high (with_three_warpgroup_tiles): the largest waves x area against the plan's at which they
// are taken, k-grouped (FP8) and dense.
constexpr double kThreeWarpgroupGroupedBound = 1.05;
constexpr double kThreeWarpgroupDenseBound = 0.92;
constexpr int kBlockNs[] = {16, 32, 48, 64, 96, 128, 144, 160, 176, 192};
// Masked: experts of at least this many expected rows run 128-row tiles (less padding in each expert's last tile),
// fewer run 256x128, whose warpgroups skip a 64-row wave without rows. FP8 (with_masked_row_tiles) and BF16 D
// (with_wide_grouped_bf16_tiles) alike.
constexpr int kMasked128RowTilesFromExpectedM = 512;

}  // namespace

int gemm_max_stages(int block_m, int block_n, int recipe, kernels::GroupedKind layout, int k_splits) {
  const bool tma_store = kernels::sm90::gemm_tma_store(recipe, static_cast<int>(layout), block_n);
  int stages = 1;
  while (stages < kStageCap &&
         kernels::sm90::gemm_smem_layout_with(block_m, block_n, stages + 1, recipe, tma_store, k_splits, false,
                                              kernels::sm90::gemm_tile_ring(static_cast<int>(layout)), false)
                 .launch_bytes <=
             kMaxSmemBytes) {
    ++stages;
  }
  return stages;
}

namespace {

// The shared-memory layout the kernel for `recipe` and `layout` gives a configuration (D's staging differs where it
// leaves through TMA, and may be half a buffer: kernels::sm90::gemm_smem_layout).
kernels::sm90::GemmSmemLayout config_smem_layout(const KernelConfig& c, int recipe, kernels::GroupedKind layout,
                                                 bool sfa_shifted) {
  const bool tma_store = kernels::sm90::gemm_tma_store(recipe, static_cast<int>(layout), c.block_n);
  return kernels::sm90::gemm_smem_layout(c.block_m, c.block_n, c.stages, recipe, tma_store, c.k_splits, sfa_shifted,
                                         kernels::sm90::gemm_tile_ring(static_cast<int>(layout)));
}

}  // namespace

bool gemm_half_staged(const KernelConfig& c, int recipe, kernels::GroupedKind layout) {
  return config_smem_layout(c, recipe, layout, false).half_staging;
}

bool half_staging_enabled() {
  const char* value = std::getenv(kHalfStagingVariable);
  return value != nullptr && std::string(value) == "1";
}

int gemm_smem_bytes(const KernelConfig& c, int recipe, kernels::GroupedKind layout, bool sfa_shifted) {
  return config_smem_layout(c, recipe, layout, sfa_shifted).launch_bytes;
}

KernelConfig with_shifted_scales(KernelConfig config, int recipe, kernels::GroupedKind layout, int segment_alignment,
                                 bool forced) {
  if (!kernels::sm90::gemm_sfa_shifted(recipe, static_cast<int>(layout), segment_alignment)) return config;
  config.smem_bytes = gemm_smem_bytes(config, recipe, layout, true);
  while (config.smem_bytes > kMaxSmemBytes) {
    if (forced || config.stages <= 2) {
      throw Error(ErrorCode::kInvalidArgument,
                  "options.config: " + config.to_string() + ": with segments at alignment 1 or 2 A's scales take " +
                      std::to_string(kernels::sm90::kSfaTailRows * 4) +
                      " more bytes a stage, and the tile and stages then need more shared memory than an SM has (" +
                      std::to_string(kMaxSmemBytes) + " bytes): use fewer stages");
    }
    --config.stages;
    config.smem_bytes = gemm_smem_bytes(config, recipe, layout, true);
  }
  return config;
}

namespace {

// `config` on a block_m x block_n tile split k_splits ways, with what follows from the tile: its math warpgroups, the
// deepest pipeline that fits and the shared memory it launches with (laid out for `recipe` and `layout`).
KernelConfig retiled(KernelConfig config, int block_m, int block_n, int k_splits, int recipe,
                     kernels::GroupedKind layout) {
  config.block_m = block_m;
  config.block_n = block_n;
  config.k_splits = k_splits;
  config.math_warpgroups = kernels::sm90::gemm_math_warpgroups(block_m);
  config.stages = gemm_max_stages(block_m, block_n, recipe, layout, k_splits);
  config.smem_bytes = gemm_smem_bytes(config, recipe, layout);
  return config;
}

}  // namespace

namespace {

// CTA tiles of a problem: a cluster of two works on pair tiles (2 * block_m rows, the lower half possibly empty).
long long gemm_tiles_of(const ShapeHint& h, int block_m, int block_n, int cluster_m) {
  const long long pair_rows = static_cast<long long>(block_m) * cluster_m;
  const long long m_blocks = std::max<long long>(1, blocks_of(h.m_per_group, pair_rows)) * cluster_m;
  const long long n_blocks = blocks_of(h.n, block_n);
  // A query (plan_*) may name any sizes: the count saturates at 2^40, past any call's (its D spans less than 2^48
  // bytes, validation) and far enough from int64's end for the waves, areas and times computed from it.
  constexpr long long kMaxTiles = 1ll << 40;
  long long tiles = 0;
  if (__builtin_mul_overflow(m_blocks, n_blocks, &tiles) || __builtin_mul_overflow(tiles, h.num_groups, &tiles) ||
      tiles > kMaxTiles) {
    return kMaxTiles;
  }
  return tiles;
}

// The CTAs that run at once: whole clusters.
long long gemm_slots_of(int num_sms, int cluster_m) { return num_sms / cluster_m * cluster_m; }

}  // namespace

long long gemm_waves_of(const ShapeHint& h, int block_m, int block_n, int cluster_m, int num_sms) {
  const long long slots = gemm_slots_of(num_sms, cluster_m);
  return blocks_of(gemm_tiles_of(h, block_m, block_n, cluster_m), slots);
}

double gemm_modelled_us(const ShapeHint& h, int block_m, int block_n, int cluster_m, int num_sms, int recipe) {
  // BF16 runs at half the FP8 tensor rate and moves two bytes per element, 64 of K per stage.
  const bool bf16 = kernels::sm90::recipe_is_bf16(recipe);
  const double flops_per_sm = bf16 ? kFlopsPerSm / 2 : kFlopsPerSm;
  const double esize = bf16 ? 2.0 : 1.0;
  // Each tile runs block_m full rows through the tensor cores (WGMMA is m64), but TMA fetches only the real rows; in
  // a cluster of two along M, B is fetched once for both CTAs (half of it per CTA on average).
  const double mma_us = 2.0 * block_m * block_n * h.k / flops_per_sm * 1e6;
  const double real_rows = static_cast<double>(std::min<long long>(block_m, h.m_per_group));
  const double load_us = (real_rows + static_cast<double>(block_n) / cluster_m) * h.k * esize / kL2BytesPerSm * 1e6;
  // One K block is a dependent chain (barrier wait, four WGMMAs, wait, promotion): it never takes less than
  // kKBlockLatencyUs, however small the tile (measured: 64x16 tiles ran at 0.3-0.4 us per K block).
  const double num_kb = std::ceil(h.k / static_cast<double>(kernels::sm90::stage_k(recipe)));
  const double per_tile_us = std::max({mma_us, load_us, num_kb * kKBlockLatencyUs}) + kTileOverheadUs;
  // D is written once (two bytes a value); BF16 D with C also reads C.
  const double out_bytes = recipe == static_cast<int>(kernels::sm90::GemmRecipe::kBf16AddC) ? 4.0 : 2.0;
  const double hbm_bytes = static_cast<double>(h.num_groups) *
                           (esize * (h.m_per_group * h.k + 1.0 * h.n * h.k) + out_bytes * h.m_per_group * h.n);
  // Wave by wave: a full wave takes the longer of a tile's time and its tiles' share of HBM; so does the last one,
  // whose fewer tiles leave HBM idle when a tile's own time is the longer (the same taken over the whole problem,
  // as before, called a last wave of a third of the SMs as cheap as a third of a wave: measured, masked expected
  // M 20 with G = 32 and N = 4096, 64x96 tiles whose last wave holds 56 of 1376 ran 3% longer than 64x128 tiles
  // whose last holds 100 of 1024, docs/results/2026-12-04-masked-a-boxes.md).
  const long long tiles = gemm_tiles_of(h, block_m, block_n, cluster_m);
  const long long slots = gemm_slots_of(num_sms, cluster_m);
  const double tile_hbm_us = hbm_bytes / static_cast<double>(tiles) / kHbmBytes * 1e6;
  const long long full_waves = tiles / slots, last_tiles = tiles % slots;
  const double full_wave_us = std::max(per_tile_us, static_cast<double>(slots) * tile_hbm_us);
  const double last_wave_us = last_tiles > 0 ? std::max(per_tile_us, static_cast<double>(last_tiles) * tile_hbm_us) : 0;
  return static_cast<double>(full_waves) * full_wave_us + last_wave_us;
}

namespace {

// layout: 256-row tiles are candidates where gemm_tall_tile_supported allows them, and D may leave through TMA
// stores (gemm_tma_store: a different shared-memory layout, so different stage counts).
KernelConfig choose_fp8_config(const ShapeHint& hint, int num_sms, bool allow_cluster, int recipe,
                               int block_n_multiple, kernels::GroupedKind layout) {
  const int kind = static_cast<int>(layout);
  KernelConfig best;
  double best_us = 0;
  double best_tile_us = 0;
  bool have = false;
  for (int cm : {1, 2}) {
    if (cm == 2 && !allow_cluster) continue;
    for (int bm : kBlockMs) {
      for (int bn : kBlockNs) {
        if (bm == 256 && !kernels::sm90::gemm_tall_tile_supported(recipe, kind, bn, cm)) continue;
        const bool supported = kernels::sm90::gemm_block_n_supported(recipe, bn);
        if (!supported || bn % block_n_multiple != 0) continue;
        // The row-to-group kernel runs 256-row tiles (forced) but the planner keeps them off that layout: on the
        // eight contiguous idx rows they ran 3-13% slower than its 128x192 tiles, and 0-16% slower after its
        // epilogue lost its branches, and 0.4-8% slower again with TMA stores, where group ends gains from them
        // (docs/results/2026-12-03-rtg-tall-and-power.md, runs 5 and 8; 2026-12-05-rtg-tiles-pairs-python.md, run 1).
        if (bm == 256 && layout == kernels::GroupedKind::kContiguousRowToGroup) continue;
        const double us = gemm_modelled_us(hint, bm, bn, cm, num_sms, recipe);
        // Ties (memory-bound shapes all hit the HBM floor) go to the smaller tile, and to no cluster.
        const double tile_us = static_cast<double>(bm) * bn * cm;
        if (!have || us < best_us * 0.999 || (us <= best_us * 1.001 && tile_us < best_tile_us)) {
          have = true;
          best_us = us;
          best_tile_us = tile_us;
          best.block_m = bm;
          best.block_n = bn;
          best.cluster_m = cm;
        }
      }
    }
  }
  best.block_k = kernels::sm90::stage_k(recipe);
  best.cluster_n = 1;
  best.num_sms = num_sms;
  return retiled(best, best.block_m, best.block_n, 1, recipe, layout);
}

}  // namespace

KernelConfig choose_fp8_1d2d_config(const ShapeHint& hint, int num_sms, bool allow_cluster,
                                    kernels::GroupedKind layout) {
  return choose_fp8_config(hint, num_sms, allow_cluster, static_cast<int>(kernels::sm90::GemmRecipe::kFp8_1d2d), 16,
                           layout);
}

KernelConfig with_measured_pair_cluster(KernelConfig config, const ShapeHint& hint) {
  // Measured (docs/results/2026-12-03-producer-chain.md, runs I and J): M = 128 with 64x128 tiles, 4-14% faster in
  // a cluster; 64x64 and narrower, and every 128-row tile, slower.
  const bool one_pair = hint.num_groups == 1 && hint.m_per_group > 64 && hint.m_per_group <= 128;
  if (one_pair && config.block_m == 64 && config.block_n >= 128 && config.cluster_m == 1 && config.num_sms >= 2) {
    config.cluster_m = 2;
  }
  return config;
}

namespace {

// The CTAs that clusters of `splits` CTAs can keep resident at once. Clusters of 3 or 4 must each fit inside one
// GPC, so not every SM can hold one: their CTAs are kept to 85% of the SMs (measured: 36 tiles x 3 = 108 CTAs ran as
// one wave, 32 x 4 = 128 did not and took 34% longer than 32 x 3, docs/results/2026-12-03-split-k.md, run 3). Pairs
// fill every SM (as the 2x1 clusters do).
long long split_cluster_room(int num_sms, int splits) {
  return splits <= 2 ? num_sms : static_cast<long long>(num_sms) * 85 / 100;
}

}  // namespace

KernelConfig with_k_split(KernelConfig config, const ShapeHint& hint, int recipe, kernels::GroupedKind layout,
                          int block_n_multiple) {
  // (An MN-major BF16 B, block_n_multiple 64, keeps its plan: no device test has run a split with it yet.)
  if (hint.num_groups != 1 || config.block_m != 64 || config.block_n > 64 || config.cluster_m != 1 ||
      config.cluster_n != 1 || config.num_sms < 2 || block_n_multiple != 16) {
    return config;
  }
  const long long m_blocks = std::max<long long>(1, blocks_of(hint.m_per_group, 64));
  auto tiles_of = [&](int block_n) { return m_blocks * blocks_of(hint.n, block_n); };
  const int num_kb = static_cast<int>(blocks_of(hint.k, kernels::sm90::stage_k(recipe)));
  auto room = [&](int splits) { return split_cluster_room(config.num_sms, splits); };
  // The most CTAs at work: fewer ranks first, then the narrower tile, among 64-row tiles up to 64 wide with slices
  // of at least 8 K blocks, when that is half as many CTAs again or more (measured: 20-45% faster on the N = 576
  // and 256 rows). The same CTA count on wider split tiles ran -13% to +6% in run 4 and 5-14% faster in run 5: only
  // the clearest case is taken, below.
  const long long engaged = std::min<long long>(tiles_of(config.block_n), config.num_sms);
  long long best = engaged;
  int best_n = config.block_n, best_splits = 1;
  for (int splits = 2; splits <= kernels::sm90::kMaxKSplits; ++splits) {
    if (num_kb / splits < 8) break;
    for (int block_n : {16, 32, 64}) {  // the widths the split device tests run (48 would straddle scale blocks)
      if (block_n % block_n_multiple != 0 || !kernels::sm90::gemm_block_n_supported(recipe, block_n) ||
          !kernels::sm90::gemm_split_k_supported(recipe, static_cast<int>(layout), 64, block_n, splits)) {
        continue;
      }
      const long long ctas = tiles_of(block_n) * splits;
      if (ctas <= room(splits) && ctas > best) {
        best = ctas;
        best_n = block_n;
        best_splits = splits;
      }
    }
  }
  if (best_splits == 1 || 2 * best < 3 * engaged) {
    // A 16-wide tile that already fills the SMs: the 32-wide tile split 2 ways keeps as many CTAs at work, each
    // stage carrying twice the bytes (measured: 1 x 2112 x 7168, FP8 16.0 -> 13.8 us, BF16 21.2 -> 19.2 us,
    // docs/results/2026-12-03-split-k.md, runs 4 and 5; as the plan, checked: 13.3 and 18.2 us, run A of
    // docs/results/2026-12-03-cublas-tiles.md).
    const long long wide = tiles_of(32) * 2;
    if (config.block_n != 16 || 32 % block_n_multiple != 0 || num_kb / 2 < 8 || wide > config.num_sms ||
        wide < engaged || !kernels::sm90::gemm_split_k_supported(recipe, static_cast<int>(layout), 64, 32, 2)) {
      return config;
    }
    best_n = 32;
    best_splits = 2;
  }
  return retiled(config, config.block_m, best_n, best_splits, recipe, layout);
}

KernelConfig with_row_block_tiles(KernelConfig config, const ShapeHint& hint, int recipe, kernels::GroupedKind layout) {
  using kernels::sm90::GemmRecipe;
  const bool fp8 = recipe == static_cast<int>(GemmRecipe::kFp8_1d2d);
  const bool bf16 = recipe == static_cast<int>(GemmRecipe::kBf16) || recipe == static_cast<int>(GemmRecipe::kBf16AddC);
  if ((!fp8 && !bf16) || layout != kernels::GroupedKind::kDense || hint.num_groups != 1 || hint.m_per_group <= 64 ||
      hint.m_per_group > 128 || config.num_sms < 2) {
    return config;
  }
  const int num_kb = static_cast<int>(blocks_of(hint.k, kernels::sm90::stage_k(recipe)));
  auto room = [&](int splits) { return split_cluster_room(config.num_sms, splits); };
  // Measured (docs/results/2026-12-03-cublas-tiles.md, run C): FP8 takes 64- and 32-wide tiles with at most 2 ranks;
  // BF16 64-wide tiles with up to 3 ranks, and (docs/results/2026-12-07-m128-tiles-and-bands.md, runs 1-3) 32-wide
  // tiles with up to 2: on an H100, BF16 128 x 4096 x 7168 on 128x32 alone ran 1.5-2.4% faster than on 128x64 split
  // 2 ways (the same 128 CTAs) in each of 6 rounds, and 128 x 2112 x 7168 on 128x32 split 2 ways (132 CTAs)
  // 6.6-7.7% faster than on 128x64 split 3 ways (99 CTAs) in each of 10.
  const int widths[] = {64, 32};
  const int max_splits = fp8 ? 2 : 3;
  const int max_splits_32 = 2;
  long long best = 0;
  int best_n = 0, best_splits = 0;
  // Ties: fewer ranks, then the wider tile (the order tried). FP8 128 x 4096 x 7168 on 128x32 alone (128 CTAs) ran
  // 7.4% and 7.7% faster than on 128x64 split 2 ways (128 CTAs), in two runs on an H100
  // (docs/results/2026-12-06-wgrad-products-and-m128-pairs.md, runs 2-3): the split (its partials through the
  // cluster) costs more than the second copy of A that the narrower tile reads.
  for (int splits = 1; splits <= max_splits; ++splits) {
    for (int block_n : widths) {
      if (block_n == 32 && splits > max_splits_32) continue;
      if (splits > 1 && (num_kb / splits < 8 ||
                         !kernels::sm90::gemm_split_k_supported(recipe, static_cast<int>(layout), 128, block_n, splits))) {
        continue;
      }
      const long long ctas = blocks_of(hint.n, block_n) * splits;
      if (ctas <= room(splits) && ctas > best) {
        best = ctas;
        best_n = block_n;
        best_splits = splits;
      }
    }
  }
  // The CTAs the plan so far puts to work (a pair's two 64-row tiles are two CTAs, as two tiles alone are).
  const long long m_blocks = blocks_of(hint.m_per_group, config.block_m);
  const long long planned = std::min<long long>(
      m_blocks * blocks_of(hint.n, config.block_n) * std::max(1, config.k_splits), config.num_sms);
  if (best_n == 0 || 4 * best < 3 * planned) return config;
  // FP8: a split tile that puts no more CTAs to work than the plan's own tile with fewer ranks leaves the plan (the
  // tie rule above, applied to the plan's tile too). FP8 128 x 2112 x 7168 so keeps 64x32 alone (132 CTAs), 1.3-2.0%
  // faster than 128x32 split 2 ways (132 CTAs) in each of 10 rounds on an H100
  // (docs/results/2026-12-07-m128-tiles-and-bands.md, runs 2-3). BF16 keeps the row-block tile: on 128 x 2112 x
  // 7168 its 64x32 alone ran 6.4% slower than 128x32 split 2 ways in each of 6 rounds on an H100
  // (docs/results/2026-12-07-tie-rules-and-dgrad-tiles.md, run 1).
  if (fp8 && best_splits > std::max(1, config.k_splits) && best <= planned) return config;
  config.cluster_m = 1;
  config.cluster_n = 1;
  return retiled(config, 128, best_n, best_splits, recipe, layout);
}

KernelConfig with_masked_row_tiles(KernelConfig config, const ShapeHint& hint, kernels::GroupedKind layout) {
  if (layout != kernels::GroupedKind::kMasked || hint.m_per_group < kMasked128RowTilesFromExpectedM ||
      config.block_m != 256 || config.block_n != 128 || config.cluster_m != 1 || config.cluster_n != 1 ||
      config.k_splits != 1) {
    return config;
  }
  return retiled(config, 128, 192, 1, static_cast<int>(kernels::sm90::GemmRecipe::kFp8_1d2d), layout);
}

KernelConfig with_wide_grouped_bf16_tiles(KernelConfig config, const ShapeHint& hint, int recipe,
                                           kernels::GroupedKind layout) {
  using kernels::GroupedKind;
  const bool grouped = layout == GroupedKind::kContiguousRowToGroup || layout == GroupedKind::kContiguousGroupEnds ||
                       layout == GroupedKind::kMasked;
  if (recipe != static_cast<int>(kernels::sm90::GemmRecipe::kBf16) || !grouped || hint.n < 512 ||
      config.block_m * config.block_n < 128 * 192 || config.cluster_m != 1 || config.cluster_n != 1) {
    return config;
  }
  // Masked experts of fewer than 512 expected rows: 256x128 tiles, whose warpgroups skip a 64-row wave without rows
  // (the kernel's kSkipEmptyWaves), compute 192 or 256 rows per expert of 192 where 128x256 computes two 128-row
  // tiles. Measured 3.2-7.9% faster than 128x256 on the four expected-M-192 rows (four rounds); at expected M 1024
  // 256x128 is 2-14% slower (docs/results/2026-12-06-bf16-grouped-tiles.md, runs 1-2).
  if (layout == GroupedKind::kMasked && hint.m_per_group < kMasked128RowTilesFromExpectedM) {
    return retiled(config, 256, 128, 1, recipe, layout);
  }
  return retiled(config, 128, 256, 1, recipe, layout);
}

KernelConfig with_kgrouped_bf16_band(KernelConfig config, int recipe, kernels::GroupedKind layout) {
  if (layout != kernels::GroupedKind::kKGrouped || !kernels::sm90::recipe_is_bf16(recipe) || config.raster_band != 0) {
    return config;
  }
  config.raster_band = kBf16KGroupedBand;
  return config;
}

KernelConfig choose_bf16_config(const ShapeHint& hint, int num_sms, kernels::sm90::GemmRecipe recipe,
                                int block_n_multiple, kernels::GroupedKind layout) {
  if (!kernels::sm90::recipe_is_bf16(static_cast<int>(recipe))) {
    throw Error(ErrorCode::kInternal, "choose_bf16_config: not a BF16 recipe");
  }
  return choose_fp8_config(hint, num_sms, /*allow_cluster=*/false, static_cast<int>(recipe), block_n_multiple, layout);
}

KernelConfig choose_fp8_1d1d_config(const ShapeHint& hint, int num_sms) {
  // (FP32 D: no 256-row tiles.)
  constexpr int kRecipe = static_cast<int>(kernels::sm90::GemmRecipe::kFp8_1d1d);
  KernelConfig config =
      choose_fp8_config(hint, num_sms, /*allow_cluster=*/false, kRecipe, 16, kernels::GroupedKind::kDense);
  // Measured (docs/results/2026-12-03-rtg-and-wgrad-tiles.md, run Z): on dense weight gradients 128x128 tiles,
  // which hold 4 stages beside their FP32 staging buffer, ran 1-13% faster than the model's 128x160 with 3, on every
  // row with three or more waves; the model has no term for pipeline depth. With fewer waves the wider tile's
  // smaller wave count wins (576 x 4096: one wave of 128x160 against two of 128x128, 47 us against 70).
  if (hint.num_groups == 1 && config.block_m == 128 && config.block_n > 128 &&
      gemm_waves_of(hint, config.block_m, config.block_n, config.cluster_m, num_sms) >= 3) {
    config = retiled(config, 128, 128, 1, kRecipe, kernels::GroupedKind::kDense);
  }
  return with_three_warpgroup_tiles(config, hint, num_sms, kRecipe);
}

namespace {

// A tile's time on its SM goes with its area (the tensor work) and the call's with its waves: the rules below that
// swap one tile for another compare waves x tile area.
double waves_times_area(const ShapeHint& hint, int block_m, int block_n, int num_sms) {
  return static_cast<double>(gemm_waves_of(hint, block_m, block_n, 1, num_sms)) * block_m * block_n;
}

}  // namespace

KernelConfig with_short_k_c_tiles(KernelConfig config, const ShapeHint& hint, int num_sms, int recipe,
                                  kernels::GroupedKind layout) {
  if (recipe != static_cast<int>(kernels::sm90::GemmRecipe::kBf16AddC) || layout != kernels::GroupedKind::kDense ||
      hint.k > kShortKWithCMaxK || config.block_m != 256 || config.block_n != 128 || config.cluster_m != 1 ||
      config.cluster_n != 1 || config.k_splits != 1) {
    return config;
  }
  const bool shorter_fits =
      waves_times_area(hint, 128, 192, num_sms) <= 1.02 * waves_times_area(hint, 256, 128, num_sms);
  return shorter_fits ? retiled(config, 128, 192, 1, recipe, layout) : config;
}

KernelConfig with_three_warpgroup_tiles(KernelConfig config, const ShapeHint& hint, int num_sms, int recipe) {
  using kernels::sm90::GemmRecipe;
  const bool fp8 = recipe == static_cast<int>(GemmRecipe::kFp8_1d1d);
  if (!fp8 && (recipe != static_cast<int>(GemmRecipe::kBf16Fp32) || hint.num_groups > 1)) return config;
  if (config.cluster_m != 1 || config.cluster_n != 1 || config.k_splits != 1) return config;
  const double planned = waves_times_area(hint, config.block_m, config.block_n, num_sms);
  // Measured (docs/results/2026-12-04-three-warpgroups.md, runs 2, 3 and 6): FP8 k-grouped 192x128 ran 7% faster
  // than 128x160 (geomean; -1% to +13% per row) at 0.96-1.04x the waves x area. On dense rows 192-row tiles ran 2-14%
  // slower (FP8) and 7-16% slower (BF16) at equal or more waves x area, and won only where they save a partial wave:
  // 2112 x 4096, 5 waves of 128x128 against 3 of 192x128 (FP8 +15%, BF16 +5-7%); 576 x 4096, one wave of 192x96
  // against one of 128x160 (FP8 +8%), one of 192x128 against two of 128x128 (BF16 +26-27%). BF16 k-grouped rows ran
  // 0-9% slower and keep their tile.
  const double bound = hint.num_groups > 1 ? kThreeWarpgroupGroupedBound : kThreeWarpgroupDenseBound;
  // Both widths run on both layouts of the recipe (the configuration is retiled as dense: the same shared memory).
  constexpr int kDense = static_cast<int>(kernels::GroupedKind::kDense);
  constexpr int kKGrouped = static_cast<int>(kernels::GroupedKind::kKGrouped);
  constexpr int kFp8 = static_cast<int>(GemmRecipe::kFp8_1d1d), kBf16 = static_cast<int>(GemmRecipe::kBf16Fp32);
  using kernels::sm90::gemm_three_warpgroups_supported;
  static_assert(
      gemm_three_warpgroups_supported(kFp8, kDense, 96) && gemm_three_warpgroups_supported(kFp8, kDense, 128) &&
      gemm_three_warpgroups_supported(kFp8, kKGrouped, 96) && gemm_three_warpgroups_supported(kFp8, kKGrouped, 128) &&
      gemm_three_warpgroups_supported(kBf16, kDense, 128));
  // The wider tile first: on the FP8 k-grouped rows it beat 192x96 by 0-9%, also where its waves x area was larger.
  // (BF16: 192x128 only; 192x64 measured 11-47% slower but on 576 x 4096, and an MN-major B takes whole 64-wide boxes.)
  for (const int block_n : {128, 96}) {
    if (!fp8 && block_n != 128) continue;
    if (waves_times_area(hint, 192, block_n, num_sms) <= bound * planned) {
      return retiled(config, 192, block_n, 1, recipe, kernels::GroupedKind::kDense);
    }
  }
  return config;
}

namespace {

[[noreturn]] void config_fail(const std::string& rule, const KernelConfig& cfg) {
  throw Error(ErrorCode::kInvalidArgument, "options.config: " + rule + ", got " + cfg.to_string());
}

// The rules every recipe shares: clusters, tile height, K step, stages, shared memory (laid out for the layout's
// epilogue).
void check_common(const KernelConfig& c, int recipe, kernels::GroupedKind layout) {
  // Pairs only. Along N (sharing A): the dense layout, or k-grouped FP8 (recipe (1,1,128)), tiles of 128 rows or
  // more. Along M (sharing B): not row-to-group, whose passes differ between the two CTAs, nor k-grouped.
  const bool pair_along_m = c.cluster_m == 2 && c.cluster_n == 1;
  const bool pair_along_n = c.cluster_m == 1 && c.cluster_n == 2;
  if (!(c.cluster_m == 1 && c.cluster_n == 1) && !pair_along_m && !pair_along_n) {
    config_fail("clusters must be 1x1, 2x1 (two CTAs along M sharing B) or 1x2 (two CTAs along N sharing A)", c);
  }
  // (A K-major here: check_bf16_config names an MN-major A itself.)
  if (pair_along_n &&
      !kernels::sm90::gemm_pair_along_n_supported(recipe, static_cast<int>(layout), c.block_m, false)) {
    config_fail(
        "a 1x2 cluster (A shared along N) needs the dense layout (or k-grouped FP8) and block_m 128 or more, so far",
        c);
  }
  if (pair_along_m &&
      (layout == kernels::GroupedKind::kContiguousRowToGroup || layout == kernels::GroupedKind::kKGrouped)) {
    config_fail("the row-to-group contiguous and k-grouped layouts run without clusters (cluster_m = 1), so far", c);
  }
  if (c.block_m == 256 && !kernels::sm90::gemm_tall_tile_supported(recipe, static_cast<int>(layout), c.block_n,
                                                                   c.cluster_m)) {
    config_fail(
        "256-row tiles need BF16 D (recipe (1,128,128) or BF16 without FP32 output), block_n <= 128 (two waves of "
        "accumulators per warpgroup), cluster_m 1 and the dense, m-grouped contiguous or masked layout, so far",
        c);
  }
  const bool three_warpgroups_ok =
      kernels::sm90::gemm_three_warpgroups_supported(recipe, static_cast<int>(layout), c.block_n) && c.k_splits == 1;
  if (c.block_m == 192 && !three_warpgroups_ok) {
    config_fail(
        "192-row tiles (three math warpgroups) need FP32 D (recipe (1,1,128), or BF16 with FP32 D), the dense or "
        "k-grouped layout, block_n a multiple of 32 up to 128 and no K split, so far",
        c);
  }
  if (c.block_m != 64 && c.block_m != 128 && c.block_m != 192 && c.block_m != 256) {
    config_fail("block_m must be 64, 128, 192 or 256", c);
  }
  if (!kernels::sm90::gemm_split_k_supported(recipe, static_cast<int>(layout), c.block_m, c.block_n, c.k_splits) ||
      (c.k_splits > 1 && (c.cluster_m != 1 || c.cluster_n != 1))) {
    config_fail(
        "a K split (k_splits > 1) needs the dense layout, block_m 64 or 128, block_n <= 64, cluster 1x1 and not recipe "
        "(1,1,128), so far",
        c);
  }
  if (c.block_k != kernels::sm90::stage_k(recipe)) {
    config_fail("block_k must be " + std::to_string(kernels::sm90::stage_k(recipe)) + " (128 bytes of K per stage)", c);
  }
  if (c.stages < 2) config_fail("stages must be at least 2", c);
  if (gemm_smem_bytes(c, recipe, layout) > kMaxSmemBytes) {
    config_fail(
        "the tile and stages need more shared memory than an SM has (" + std::to_string(kMaxSmemBytes) + " bytes)", c);
  }
}

}  // namespace

void check_bf16_config(const KernelConfig& c, kernels::sm90::GemmRecipe recipe, int mn_major,
                       kernels::GroupedKind layout) {
  const int r = static_cast<int>(recipe);
  if (!kernels::sm90::recipe_is_bf16(r)) throw Error(ErrorCode::kInternal, "check_bf16_config: not a BF16 recipe");
  if (!kernels::sm90::gemm_block_n_supported(r, c.block_n)) {
    config_fail(kernels::sm90::recipe_has_fp32_out(r) ? "block_n must be a multiple of 16 in [16, 160] for FP32 D"
                                                      : "block_n must be a multiple of 16 in [16, 192], or 256",
                c);
  }
  const bool a_mn = (mn_major & 1) != 0, b_mn = (mn_major & 2) != 0;
  if (b_mn && c.block_n % 64 != 0) config_fail("an MN-major B needs block_n a multiple of 64 (whole 64-wide boxes)", c);
  // A pair multicasts halves of the shared operand's 128-byte rows (the layout rules are check_common's).
  if (c.cluster_m == 2 && b_mn) config_fail("a 2x1 cluster (B shared along M) needs a K-major B", c);
  if (c.cluster_n == 2 && a_mn) config_fail("a 1x2 cluster (A shared along N) needs a K-major A", c);
  check_common(c, r, layout);
}

void check_fp8_1d1d_config(const KernelConfig& c, kernels::GroupedKind layout) {
  if (!kernels::sm90::fp32_out_block_n_supported(c.block_n)) {
    config_fail("block_n must be a multiple of 16 in [16, 160] for recipe (1,1,128)", c);
  }
  // The pair's A halves are multicast (dense: the shared descriptor; k-grouped: each expert's, its box half the rows).
  if (c.cluster_m != 1) config_fail("recipe (1,1,128) runs without a pair along M (cluster_m 1)", c);
  if (layout != kernels::GroupedKind::kDense && layout != kernels::GroupedKind::kKGrouped) {
    throw Error(ErrorCode::kInternal, "check_fp8_1d1d_config: recipe (1,1,128) is dense or k-grouped");
  }
  check_common(c, static_cast<int>(kernels::sm90::GemmRecipe::kFp8_1d1d), layout);
  if (gemm_half_staged(c, static_cast<int>(kernels::sm90::GemmRecipe::kFp8_1d1d), layout) &&
      !half_staging_enabled()) {
    const int whole = gemm_max_stages(c.block_m, c.block_n, static_cast<int>(kernels::sm90::GemmRecipe::kFp8_1d1d),
                                      layout, c.k_splits);
    config_fail("these stages fit only beside half an FP32 staging buffer (" + std::to_string(whole) +
                    " fit beside a whole one), and half staging has not yet run on a GPU: set " +
                    std::string(kHalfStagingVariable) + "=1 to run it, for measuring it",
                c);
  }
}

void check_fp8_1d2d_config(const KernelConfig& c, kernels::GroupedKind layout) {
  if (!kernels::sm90::fp8_1d2d_block_n_supported(c.block_n)) {
    config_fail(
        "block_n must be a multiple of 16 in [16, 192] with block_n - gcd(block_n, 128) <= 128 (a tile may touch at "
        "most two 128-column scale blocks)",
        c);
  }
  check_common(c, static_cast<int>(kernels::sm90::GemmRecipe::kFp8_1d2d), layout);
}

}  // namespace moegemm::plan
