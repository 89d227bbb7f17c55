// moegemm-bench: kernel configurations on the command line. `--config BMxBNxSTAGES` forces one configuration on
// every moegemm call of a run; `--print-config` shows the planner's own choice for each row, so that configurations
// can be compared within one device run.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "moegemm/config.hpp"
#include "moegemm/gemm.hpp"
#include "suites.hpp"

namespace moegemm::bench {

// "128x192x4" -> KernelConfig{block_m 128, block_n 192, block_k 128, 4 stages, math_warpgroups_for(block_m) math warpgroups,
// cluster 1x1}; "128x192x4x2x1" sets the cluster too (2x1). Throws std::invalid_argument naming --config when the
// text is not three or five positive integers joined by 'x'; whether the kernels accept the values is the library's
// to say (per call).
moegemm::KernelConfig parse_config(const std::string& text);

// The table's short form: "128x192x4", with " c2x1" appended for a cluster, " k2" for a K split and " b32" for a
// forced rasterisation band.
std::string compact_config(const moegemm::KernelConfig& config);

// What the planner picks for the row (moegemm::plan_fp8_gemm_nt, plan_fp8_gemm_wgrad or plan_bf16_gemm, as the
// row's call plans it).
std::optional<moegemm::KernelConfig> planned_config(const Case& c);

// What a row's moegemm calls force: --config's configuration (its K step the row's family's: 128 for FP8, 64 for
// BF16), or with --band alone the planner's for the row, with --band's rasterisation band set; nothing without either.
std::optional<moegemm::KernelConfig> forced_config(const Case& c, const std::optional<moegemm::KernelConfig>& config,
                                                   int raster_band);

// --precompile: the row's kernels compiled into the disk cache (moegemm::precompile_all), no GPU needed; with
// `config` (forced_config's) the kernels of the row's call forced to it, else the planner's.
std::vector<moegemm::PrecompiledKernel> precompile_row(const Case& c,
                                                      const std::optional<moegemm::KernelConfig>& config);

// The row's query, added to a batch for moegemm::precompile_all (--precompile compiles every row's kernels at once),
// with `config` as the query's configuration override.
void add_warmup_query(const Case& c, moegemm::WarmupQueries& queries,
                      const std::optional<moegemm::KernelConfig>& config);

}  // namespace moegemm::bench
