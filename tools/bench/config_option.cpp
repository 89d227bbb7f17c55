#include "config_option.hpp"

#include <algorithm>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "moegemm/gemm.hpp"

namespace moegemm::bench {
namespace {

constexpr int kFp8BlockK = 128;
constexpr int kBf16BlockK = 64;

bool is_bf16(Family f) {
  return f == Family::kBf16Dense || f == Family::kBf16Contiguous || f == Family::kBf16Masked ||
         f == Family::kBf16KGrouped;
}

int positive_part(const std::string& part, const std::string& text) {
  std::size_t used = 0;
  long value = 0;
  try {
    value = std::stol(part, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (part.empty() || used != part.size() || value <= 0 || value > 4096) {
    throw std::invalid_argument("--config: must be positive integers joined by 'x' (e.g. 128x192x4), got " + text);
  }
  return static_cast<int>(value);
}

}  // namespace

moegemm::KernelConfig parse_config(const std::string& text) {
  std::vector<std::string> parts;
  std::stringstream ss(text);
  std::string part;
  while (std::getline(ss, part, 'x')) parts.push_back(part);
  if ((parts.size() != 3 && parts.size() != 5 && parts.size() != 6) || text.back() == 'x') {
    throw std::invalid_argument(
        "--config: must be BMxBNxSTAGES, BMxBNxSTAGESxCMxCN or BMxBNxSTAGESxCMxCNxKSPLITS (e.g. 128x192x4), got " +
        text);
  }
  moegemm::KernelConfig config;
  config.block_m = positive_part(parts[0], text);
  config.block_n = positive_part(parts[1], text);
  config.block_k = kFp8BlockK;
  config.stages = positive_part(parts[2], text);
  config.math_warpgroups = math_warpgroups_for(config.block_m);
  config.cluster_m = parts.size() >= 5 ? positive_part(parts[3], text) : 1;
  config.cluster_n = parts.size() >= 5 ? positive_part(parts[4], text) : 1;
  config.k_splits = parts.size() == 6 ? positive_part(parts[5], text) : 1;
  return config;
}

std::string compact_config(const moegemm::KernelConfig& config) {
  std::string out =
      std::to_string(config.block_m) + "x" + std::to_string(config.block_n) + "x" + std::to_string(config.stages);
  if (config.cluster_m != 1 || config.cluster_n != 1) {
    out += " c" + std::to_string(config.cluster_m) + "x" + std::to_string(config.cluster_n);
  }
  if (config.k_splits != 1) out += " k" + std::to_string(config.k_splits);
  if (config.raster_band != 0) out += " b" + std::to_string(config.raster_band);
  return out;
}

namespace {

// The row's planner query, handed to its family's function: `fp8_nt` (plan_ or precompile_fp8_gemm_nt's
// arguments, the segment alignment last), `wgrad` (..._fp8_gemm_wgrad's) or `bf16` (a Bf16PlanQuery).
template <typename Fp8Nt, typename Wgrad, typename Bf16>
auto with_query(const Case& c, Fp8Nt fp8_nt, Wgrad wgrad, Bf16 bf16) {
  const auto i = [](std::int64_t v) { return static_cast<int>(v); };
  switch (c.family) {
    case Family::kFp8Dense:
      return fp8_nt(i(c.m), i(c.n), i(c.k), 1, 0, moegemm::GemmLayout::kContiguousGroupEnds, c.segment_alignment);
    case Family::kFp8Contiguous:
    case Family::kFp8Masked:
      // The calls pass expected rows per expert as the layout's hint, which is what the planner sizes tiles by.
      return fp8_nt(i(c.expected * c.groups), i(c.n), i(c.k), c.groups, i(c.expected),
                    c.family == Family::kFp8Masked ? moegemm::GemmLayout::kMasked
                    : c.group_ends                 ? moegemm::GemmLayout::kContiguousGroupEnds
                                                   : moegemm::GemmLayout::kContiguousRowToGroup,
                    c.segment_alignment);  // 128 but on group-ends rows
    case Family::kFp8Wgrad:
      return wgrad(i(c.m), i(c.n), i(c.k), 1);
    case Family::kFp8KGrouped:
      // The suite draws K per expert around `expected`: the plan of the mean.
      return wgrad(i(c.m), i(c.n), i(c.expected * c.groups), c.groups);
    case Family::kBf16Dense:
    case Family::kBf16Contiguous:
    case Family::kBf16Masked:
    case Family::kBf16KGrouped:
      break;
  }
  moegemm::Bf16PlanQuery q;
  q.a_mn_major = c.a_mn_major;
  q.b_mn_major = c.b_mn_major;
  q.fp32_d = c.d_f32;
  q.with_c = c.accumulate && !c.d_f32;
  q.num_groups = std::max(1, c.groups);
  q.expected_m = i(c.expected);
  q.n = i(c.n);
  q.k = i(c.k);
  q.m = i(c.m);
  q.segment_alignment = c.segment_alignment;  // 128 but on group-ends rows
  if (c.family == Family::kBf16Dense) {
    q.layout = moegemm::GemmLayout::kDense;
  } else if (c.family == Family::kBf16Contiguous) {
    q.layout = c.group_ends ? moegemm::GemmLayout::kContiguousGroupEnds : moegemm::GemmLayout::kContiguousRowToGroup;
    q.m = i(c.expected * c.groups);
  } else if (c.family == Family::kBf16Masked) {
    q.layout = moegemm::GemmLayout::kMasked;
    q.m = i(c.capacity * c.groups);
  } else {
    q.layout = moegemm::GemmLayout::kKGrouped;
    q.k = i(c.expected * c.groups);
  }
  return bf16(q);
}

}  // namespace

std::optional<moegemm::KernelConfig> planned_config(const Case& c) {
  return with_query(
      c,
      // The plan does not depend on the segment alignment (the kernel does: precompile_row).
      [](int m, int n, int k, int g, int e, moegemm::GemmLayout l, int) {
        return moegemm::plan_fp8_gemm_nt(m, n, k, g, e, l);
      },
      [](int m, int n, int k, int g) { return moegemm::plan_fp8_gemm_wgrad(m, n, k, g); },
      [](const moegemm::Bf16PlanQuery& q) { return moegemm::plan_bf16_gemm(q); });
}

std::optional<moegemm::KernelConfig> forced_config(const Case& c, const std::optional<moegemm::KernelConfig>& config,
                                                   int raster_band) {
  std::optional<moegemm::KernelConfig> forced = config;
  // --config's K step is FP8's; a BF16 row's stage holds 64 K. Set here only: the calls (make_problem) and
  // --precompile's queries both take this configuration.
  if (forced) forced->block_k = is_bf16(c.family) ? kBf16BlockK : kFp8BlockK;
  if (raster_band == 0) return forced;
  if (!forced) forced = planned_config(c);
  if (!forced) throw std::invalid_argument("--band: the planner has no configuration for this row");
  forced->raster_band = raster_band;
  return forced;
}

std::vector<moegemm::PrecompiledKernel> precompile_row(const Case& c,
                                                      const std::optional<moegemm::KernelConfig>& config) {
  moegemm::WarmupQueries queries;
  add_warmup_query(c, queries, config);
  return moegemm::precompile_all(queries, 1);
}

void add_warmup_query(const Case& c, moegemm::WarmupQueries& queries,
                      const std::optional<moegemm::KernelConfig>& config) {
  with_query(
      c,
      [&](int m, int n, int k, int g, int e, moegemm::GemmLayout l, int segment_alignment) {
        queries.fp8_nt.push_back({m, n, k, g, e, l, segment_alignment, config});
        return 0;
      },
      [&](int m, int n, int k, int g) {
        queries.fp8_wgrad.push_back({m, n, k, g, config});
        return 0;
      },
      [&](moegemm::Bf16PlanQuery q) {
        q.config = config;
        queries.bf16.push_back(q);
        return 0;
      });
}

}  // namespace moegemm::bench
