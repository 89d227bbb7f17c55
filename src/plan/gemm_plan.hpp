// Configuration choice for the SM90 FP8 1D2D kernel: tile shape and pipeline depth from a small cost model
// (docs/heuristics.md), or a caller's override checked against what the kernel supports.
#pragma once

#include <string>

#include "moegemm/config.hpp"
#include "sm90/gemm_params.cuh"

namespace moegemm::plan {

// What the planner knows of a problem. For grouped layouts the per-group rows are a hint (expected_m), since the
// real counts live on the device.
struct ShapeHint {
  long long m_per_group = 0;  // rows each group computes (dense: M)
  int n = 0, k = 0;
  int num_groups = 1;
};

// Shared memory an SM90 CTA may use (the H100/H200 opt-in limit, 227 KiB).
inline constexpr int kMaxSmemBytes = kernels::sm90::kSm90MaxSmemBytes;

// allow_cluster: whether the layout can run 2-CTA clusters (not row-to-group, whose passes differ per CTA).
// layout: decides whether 256-row tiles are candidates (gemm_tall_tile_supported) and whether D leaves through TMA
// (gemm_tma_store: its staging layout changes the stage count).
KernelConfig choose_fp8_1d2d_config(const ShapeHint& hint, int num_sms, bool allow_cluster,
                                    kernels::GroupedKind layout);

// The one case where a 2-CTA cluster (B shared by a pair of 64-row tiles) was measured faster than the planner's
// tile alone (docs/heuristics.md): a dense problem whose rows fill exactly one pair of 64-row tiles (65 to 128
// rows) on tiles at least 128 wide, where B is nearly all of the operand traffic. Returns `config` with cluster_m
// 2 in that case, unchanged otherwise. Dense layout only; `hint` as for choose_fp8_1d2d_config.
KernelConfig with_measured_pair_cluster(KernelConfig config, const ShapeHint& hint);

// Split K (KernelConfig::k_splits) for a dense problem whose 64-row tiles up to 64 wide leave SMs idle: the 64-row
// tile width (16, 32 or 64) and rank count (2 to kMaxKSplits, each slice at least 8 K
// blocks; clusters of 3 or 4 in 85% of the SMs) that put the most CTAs to work, when that is at least 1.5 times as
// many as the planned tile alone; else, for a 16-wide tile that already fills the SMs, the 32-wide tile split 2 ways
// (as many CTAs, twice the bytes per stage). Decode on narrow N (M = 1, N = 576: 36 tiles of 64x16 on 132 SMs) is
// bound by each CTA's chain of K blocks, not by memory. Returns `config` unchanged where it does not apply; `config`
// must carry num_sms.
KernelConfig with_k_split(KernelConfig config, const ShapeHint& hint, int recipe, kernels::GroupedKind layout,
                          int block_n_multiple = 16);

// One block of rows (a dense problem of 65 to 128 rows), FP8 (1,128,128) or BF16 with BF16 D: a 128-row tile, so
// that both math warpgroups share each B tile instead of two 64-row tiles each loading it, at the width and K split
// (FP8: 64 or 32 wide, 1 or 2 ranks; BF16: 64 wide, 1 to 3 ranks; slices of at least 8 K blocks; clusters of 3 in 85%
// of the SMs) that put the most CTAs to work without passing the SMs, when that is at least three quarters of the
// CTAs the plan so far engages (docs/heuristics.md; measured in docs/results/2026-12-03-cublas-tiles.md, run C).
// Returns `config` unchanged otherwise (N too wide for one wave of 64-wide tiles, or a split decode plan with far
// more CTAs, as 128 x 576). Callers apply it after with_k_split, with K-major operands; `config` must carry num_sms.
KernelConfig with_row_block_tiles(KernelConfig config, const ShapeHint& hint, int recipe, kernels::GroupedKind layout);

// FP8 (1,128,128) on the masked layout with an expected M of at least 512, where the model planned 256x128 tiles:
// 128x192. An expert's valid rows vary around the expected M, so that its last tile is on average half padding,
// which the model (it counts the expected M exactly) does not see; 128-row tiles halve that padding. Measured
// 1-4% faster at expected M 1024 and 2-3% slower at 192, where one 256-row tile holds every expert's rows
// (docs/results/2026-12-04-fp32-epilogue.md, run 8). Returns `config` unchanged otherwise.
KernelConfig with_masked_row_tiles(KernelConfig config, const ShapeHint& hint, kernels::GroupedKind layout);

// BF16 (BF16 D) on the m-grouped layouts, where the model planned a large tile (256x128 or 128x192) and N is at
// least 512: 128x256, one m64n256 WGMMA per warpgroup and K step. The model does not consider it. It was measured
// 1-8% faster on the contiguous (both forms) and masked rows of expected M 192 and up, and level to 5% either way on
// dense rows, which keep their plan (docs/results/2026-12-03-cublas-tiles.md, runs E and F). Masked rows of fewer
// than 512 expected rows take 256x128 instead, whose warpgroups skip a wave without rows: 3-8% faster than 128x256
// at expected M 192 (docs/results/2026-12-06-bf16-grouped-tiles.md). Returns `config` unchanged otherwise.
KernelConfig with_wide_grouped_bf16_tiles(KernelConfig config, const ShapeHint& hint, int recipe,
                                          kernels::GroupedKind layout);

// BF16 k-grouped (A [sum K, M] and B [sum K, N], both MN-major): tiles in rasterisation bands of kBf16KGroupedBand
// m-blocks instead of the launch's footprint minimum (pick_raster_band), whose model ties on these problems and so
// takes band 1 at M = 7168, N = 2048 and band 8 at M = 4096, N = 7168. Band 4 measured 8% and 10% faster (geomean of
// the twelve BF16 k-grouped suite rows, two runs on an H100; rows 0.97-1.28). FP8 k-grouped (K-major operands)
// and the other suites measured level at bands 2-8 and keep the launch's pick
// (docs/results/2026-12-06-bf16-grouped-tiles.md, runs 10-13; docs/results/2026-12-06-bf16-kgrouped-band.md).
// Returns `config` unchanged for other layouts and recipes, and where a band is set already.
inline constexpr int kBf16KGroupedBand = 4;
KernelConfig with_kgrouped_bf16_band(KernelConfig config, int recipe, kernels::GroupedKind layout);

// Recipe (1,1,128) (weight gradients): the same model over the tiles that recipe's kernel supports, then
// with_three_warpgroup_tiles.
KernelConfig choose_fp8_1d1d_config(const ShapeHint& hint, int num_sms);

// FP32 D (recipe (1,1,128), or BF16 kBf16Fp32 on one group): a 192-row tile (three math warpgroups: 192x128, else
// 192x96 for FP8) instead of `config` where its waves x tile area is at most kThreeWarpgroupGroupedBound (1.05,
// k-grouped FP8: hint.num_groups > 1) or kThreeWarpgroupDenseBound (0.92, dense) times the planned tile's. In recipe
// (1,1,128) the three warpgroups keep WGMMAs queued while one promotes, which measured 7% faster (geomean) on the
// k-grouped rows; on dense rows the 128-row tiles' deeper pipeline made up for that, and 192-row tiles (FP8 and BF16)
// won only where they saved a partial wave. Returns `config` otherwise (other recipes, clusters, K splits, BF16
// k-grouped).
KernelConfig with_three_warpgroup_tiles(KernelConfig config, const ShapeHint& hint, int num_sms, int recipe);

// BF16 D = C + A B^T (kBf16AddC), dense, K at most kShortKWithCMaxK: 128x192 (the deepest pipeline it holds)
// instead of the model's 256x128, where its waves x tile area is at most 1.02 times the plan's. Such short tiles
// spend much of their time reading C and storing D; 128x192 measured 2.6-4.4% faster on 24576 x 1536 and
// 32768 x 512 at M = 4096 (four interleaved rounds) and 6% slower at K = 2048
// (docs/results/2026-12-04-what-bounds-the-k-loop.md, runs 13-14). Returns `config` otherwise.
inline constexpr int kShortKWithCMaxK = 1536;
KernelConfig with_short_k_c_tiles(KernelConfig config, const ShapeHint& hint, int num_sms, int recipe,
                                  kernels::GroupedKind layout);

// BF16 (no scales): the same model at the BF16 rate over the tiles that kernel supports. recipe: kBf16 (BF16 D),
// kBf16Fp32 (FP32 D) or kBf16AddC (BF16 D = C + A B^T). block_n_multiple: 64 when B is MN-major (whole 64-wide
// TMA boxes). layout: where 256-row tiles are candidates (gemm_tall_tile_supported) and D leaves through TMA
// (gemm_tma_store, which changes the shared-memory layout and so the stage count).
KernelConfig choose_bf16_config(const ShapeHint& hint, int num_sms, kernels::sm90::GemmRecipe recipe,
                                int block_n_multiple, kernels::GroupedKind layout);

// Throw Error(kInvalidArgument, "options.config: ...") when the kernel cannot run `config`.
void check_fp8_1d2d_config(const KernelConfig& config, kernels::GroupedKind layout);
void check_fp8_1d1d_config(const KernelConfig& config, kernels::GroupedKind layout);
// BF16: also the rules of the operands' majors (mn_major: bit 0 A, bit 1 B MN-major) and the layout.
void check_bf16_config(const KernelConfig& config, kernels::sm90::GemmRecipe recipe, int mn_major,
                       kernels::GroupedKind layout);

// Dynamic shared memory a configuration launches with, laid out as the kernel for `recipe`
// (kernels::sm90::GemmRecipe as int) and `layout` lays it out (D's staging differs where it leaves through TMA:
// kernels::sm90::gemm_tma_store).
int gemm_smem_bytes(const KernelConfig& config, int recipe, kernels::GroupedKind layout, bool sfa_shifted = false);

// Whether a configuration stages its FP32 D half a tile at a time (kernels::sm90::GemmSmemLayout::half_staging:
// more stages than fit beside a whole staging buffer, on a tile that allows it).
bool gemm_half_staged(const KernelConfig& config, int recipe, kernels::GroupedKind layout);

// Half staging has not yet run on a GPU: check_fp8_1d1d_config refuses such a configuration unless this variable
// is "1" (the device tests and measurements of it set it). To be removed once its device tests have passed.
inline constexpr const char* kHalfStagingVariable = "MOEGEMM_EXPERIMENTAL_HALF_STAGING";
bool half_staging_enabled();

// The configuration as a call at `segment_alignment` runs it: unchanged, but for FP8 packed group ends
// (kernels::sm90::gemm_sfa_shifted: segment alignment 1 or 2), whose A's scales take 16 more bytes a stage. Those get
// their shared memory recomputed so; a planned one (`forced` false) drops stages until it fits, a forced one that no
// longer fits is refused (Error kInvalidArgument, "options.config: ...").
KernelConfig with_shifted_scales(KernelConfig config, int recipe, kernels::GroupedKind layout, int segment_alignment,
                                 bool forced);

// The deepest pipeline that fits in shared memory for a tile shape (capped: more stages stop paying), beside a whole
// staging buffer: a configuration with more stages on a tile that can stage half of D (kernels::sm90::
// gemm_half_staging_supported) is an override, not a plan.
int gemm_max_stages(int block_m, int block_n, int recipe, kernels::GroupedKind layout, int k_splits = 1);

// Waves of tiles a configuration runs on num_sms SMs (a cluster of two takes pair tiles), as the model counts them.
long long gemm_waves_of(const ShapeHint& hint, int block_m, int block_n, int cluster_m, int num_sms);

// Modelled time of a configuration in microseconds (exposed for tests and for printing the choice).
double gemm_modelled_us(const ShapeHint& hint, int block_m, int block_n, int cluster_m, int num_sms, int recipe = 0);

}  // namespace moegemm::plan
