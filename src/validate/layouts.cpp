// Rules of the grouped layouts (include/moegemm/layouts.hpp). The routing values themselves live on the device and
// are never read here; the kernels clamp or skip out-of-range values.
#include <climits>

#include "validate/checks.hpp"
#include "validate/validate.hpp"

namespace moegemm::validate {

void check_segment_alignment(int alignment, bool group_ends, const std::string& argument) {
  if (group_ends) {
    // A power of two: the kernels round each start with a mask (common/scheduler.cuh, segment_begin).
    if (!is_valid_segment_alignment(alignment)) {
      fail(argument, "must be a power of two from 1 to " + std::to_string(kMaxSegmentAlignment) + " (group ends)",
           std::to_string(alignment));
    }
  } else if (alignment != kContiguousAlignment) {
    fail(argument,
         "is read by the group-ends form only; leave it at kContiguousAlignment (" +
             std::to_string(kContiguousAlignment) + ") for the other layouts (a row-to-group index places every row)",
         std::to_string(alignment));
  }
}

// Expert g's first row of B (g x N) is an int in the scheduler (pass_b_row): the m-grouped layouts' G x N fits.
static void check_b_rows_of_all_experts(std::int64_t groups, const GemmProblem& problem) {
  check_flattened_rows_fit_int(problem.kernel == Kernel::kBf16 ? "b" : "b.data", groups, problem.n, "N");
}

void check_contiguous_layout(const ContiguousLayout& layout, std::int64_t m_total, std::int64_t groups,
                             GemmProblem& problem) {
  check_b_rows_of_all_experts(groups, problem);
  using Form = ContiguousLayout::Form;
  if (layout.form == Form::kRowToGroup) {
    problem.layout = Layout::kContiguousRowToGroup;
    problem.routing = check_int32_vector(layout.index, "layout.index", m_total, "M_total (kRowToGroup: one per row)");
  } else if (layout.form == Form::kGroupEnds) {
    problem.layout = Layout::kContiguousGroupEnds;
    problem.routing = check_int32_vector(layout.index, "layout.index", groups, "G (kGroupEnds: one end per expert)");
  } else {
    fail("layout.form", "must be kRowToGroup or kGroupEnds", std::to_string(static_cast<int>(layout.form)));
  }
  check_segment_alignment(layout.segment_alignment, layout.form == Form::kGroupEnds, "layout.segment_alignment");
  problem.segment_alignment = layout.segment_alignment;
  if (layout.expected_m_per_group < 0) {
    fail("layout.expected_m_per_group", "must be non-negative (0: M_total / G)",
         std::to_string(layout.expected_m_per_group));
  }
  const std::int64_t fallback = m_total > 0 ? (m_total + groups - 1) / groups : 0;
  problem.expected_m = layout.expected_m_per_group > 0 ? layout.expected_m_per_group : static_cast<int>(fallback);
}

void check_masked_layout(const MaskedLayout& layout, std::int64_t groups, std::int64_t capacity,
                         GemmProblem& problem) {
  problem.layout = Layout::kMasked;
  check_b_rows_of_all_experts(groups, problem);
  check_flattened_rows_fit_int("d", groups, capacity, "cap");
  problem.routing = check_int32_vector(layout.valid_rows, "layout.valid_rows", groups, "G");
  if (layout.expected_m < 0) {
    fail("layout.expected_m", "must be non-negative (0: the capacity)", std::to_string(layout.expected_m));
  }
  // A hint above the capacity describes rows that cannot exist; the planner sees at most the capacity.
  const std::int64_t hint = layout.expected_m > 0 && layout.expected_m < capacity ? layout.expected_m : capacity;
  problem.expected_m = static_cast<int>(hint);
}

std::int64_t check_k_grouped_layout(const KGroupedLayout& layout, GemmProblem& problem) {
  problem.layout = Layout::kKGrouped;
  const auto groups = static_cast<std::int64_t>(layout.ks.size());
  if (groups == 0) fail("layout.ks", "must not be empty (one K per expert)", "0 experts");
  if (groups > INT_MAX) fail("layout.ks", "must have at most INT_MAX experts", std::to_string(groups) + " experts");
  std::int64_t sum = 0;
  problem.k_offsets.clear();
  for (std::int64_t g = 0; g < groups; ++g) {
    const std::int64_t k = layout.ks[static_cast<std::size_t>(g)];
    const std::string got = "ks[" + std::to_string(g) + "] = " + std::to_string(k);
    if (k < 0) fail("layout.ks", "every K_g must be non-negative", got);
    // 128 tokens share one scale; it also makes M * K_g and N * K_g multiples of 16 bytes for any M and N, so every
    // expert's block of a packed operand starts 16-byte aligned, as TMA needs.
    if (k % 128 != 0) {
      fail("layout.ks", "every K_g must be a multiple of 128 (one scale block per 128 tokens; keeps every expert's "
                        "block 16-byte aligned)", got);
    }
    problem.k_offsets.push_back(sum);
    sum += k;
    if (sum > kMaxIndexedExtent) {
      fail("layout.ks",
           "sum K must fit in a 32-bit int with room for a tile (at most " + std::to_string(kMaxIndexedExtent) + ")",
           "sum K > " + std::to_string(kMaxIndexedExtent));
    }
  }
  problem.ks = layout.ks;
  problem.num_groups = static_cast<int>(groups);
  problem.k = static_cast<int>(sum);
  if (!layout.ks_device.empty()) {
    problem.ks_device = check_int32_vector(layout.ks_device, "layout.ks_device", groups, "G = layout.ks.size()");
  }
  return sum;
}

}  // namespace moegemm::validate
