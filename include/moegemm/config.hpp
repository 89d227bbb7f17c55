// moegemm: kernel configurations. The planner picks one per shape (docs/heuristics.md); callers may override it
// for experiments through GemmOptions::config.
#pragma once

#include <string>

namespace moegemm {

struct KernelConfig {
  int block_m = 128;
  int block_n = 128;
  int block_k = 128;
  int stages = 4;
  int math_warpgroups = 2;  // consumer warpgroups: math_warpgroups_for(block_m)
  int cluster_m = 1;        // CTAs of a cluster along M: they share (multicast) the B tile
  int cluster_n = 1;        // CTAs of a cluster along N: they share (multicast) the A tile
  // CTAs of a cluster that compute the same tile, each over its own slice of K, rank 0 adding the others' partial
  // results in rank order (deterministic). Dense layout, block_m 64 or 128, block_n <= 64, cluster 1x1, up to 4; for
  // problems with fewer tiles than SMs (decode on narrow N).
  int k_splits = 1;
  // Tile order inside a group (docs/scheduler.md, "Rasterisation inside a group"): m-blocks per band. 0 (the
  // planner's choice): picked at launch from the problem's blocks (pick_raster_band); a positive value forces it
  // (values past the group's m-blocks act as one band per group). No kernel depends on it: no recompilation.
  int raster_band = 0;
  int num_sms = 0;          // persistent grid size
  int smem_bytes = 0;       // dynamic shared memory the configuration needs
  std::string to_string() const;
};

// The layouts a planning query names (the entry points they stand for: fp8_gemm_nt / bf16_gemm, the contiguous
// m-grouped forms, the masked m-grouped form, the k-grouped forms).
enum class GemmLayout : int {
  kDense = 0,
  kContiguousRowToGroup = 1,
  kContiguousGroupEnds = 2,
  kMasked = 3,
  kKGrouped = 4,
};

// Consumer warpgroups of a tile block_m rows high: one for 64 rows, two for 128 or 256 (a 256-row tile gives each
// warpgroup two 64-row waves), three for 192 (FP32 D: FP8 recipe (1,1,128), or BF16 with FP32 D).
constexpr int math_warpgroups_for(int block_m) { return block_m == 192 ? 3 : block_m >= 128 ? 2 : 1; }

}  // namespace moegemm
