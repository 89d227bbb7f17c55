#include "suites.hpp"

#include <algorithm>
#include <stdexcept>
#include <utility>

namespace moegemm::bench {
namespace {

using NK = std::pair<std::int64_t, std::int64_t>;

// DeepSeek's (N, K) pairs of the anchor's dense benchmark, and its FP32-output pairs (BF16 only).
const std::vector<NK> kDenseNK = {{2112, 7168},  {576, 7168},  {24576, 1536}, {32768, 512},
                                  {7168, 16384}, {4096, 7168}, {7168, 2048}};
const std::vector<NK> kFp32OutNK = {{256, 7168}, {129280, 7168}};
const std::vector<NK> kDgradNK = {{7168, 2112}, {7168, 576}, {1536, 24576}, {512, 32768}};
const std::vector<NK> kGroupedNK = {{6144, 7168}, {7168, 3072}, {4096, 4096}, {4096, 2048}};
const std::vector<std::pair<int, std::int64_t>> kContiguousGroups = {{4, 8192}, {8, 4096}};
const std::vector<std::pair<int, std::int64_t>> kMaskedGroups = {{32, 192}, {6, 1024}, {32, 20}, {6, 20}};
constexpr std::int64_t kMaskedCapacity = 4096;
struct KGroupedRow {
  int groups;
  std::int64_t m, n, expected_k;
};
const std::vector<KGroupedRow> kKGroupedRows = {{4, 4096, 7168, 8192}, {4, 7168, 2048, 8192},  {8, 4096, 7168, 4096},
                                                {8, 7168, 2048, 4096}, {16, 4096, 7168, 2048}, {16, 7168, 2048, 2048}};

std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

std::uint64_t case_seed(std::uint64_t seed, const std::string& suite, std::size_t index) {
  std::uint64_t h = mix(seed);
  for (char c : suite) h = mix(h ^ static_cast<unsigned char>(c));
  return mix(h ^ index);
}

Case dense(const std::string& suite, Family family, std::int64_t m, std::int64_t n, std::int64_t k) {
  Case c;
  c.suite = suite;
  c.family = family;
  c.m = m;
  c.n = n;
  c.k = k;
  return c;
}

// Appends an in-place twin of each case so far with FP32 D += C: the same data (seed), C being D itself (training's
// accumulation into the weight gradient; the anchor's kernels only run this form).
void add_in_place_twins(std::vector<Case>& cases) {
  const std::size_t end = cases.size();
  for (std::size_t i = 0; i < end; ++i) {
    if (!cases[i].accumulate || !cases[i].d_f32) continue;
    Case twin = cases[i];
    twin.in_place = true;
    twin.data_of = static_cast<int>(i);
    cases.push_back(twin);
  }
}

// Appends a packed twin (segment alignment 1: the experts' tokens back to back, no padding rows) of each G = 8
// group-ends case with B K-major: the same experts' sizes and data, so that packed and padded times compare in one
// run.
void add_packed_twins(std::vector<Case>& cases) {
  const std::size_t end = cases.size();
  for (std::size_t i = 0; i < end; ++i) {
    if (!cases[i].group_ends || cases[i].groups != 8 || cases[i].b_mn_major) continue;
    Case twin = cases[i];
    twin.segment_alignment = 1;
    twin.data_of = static_cast<int>(i);
    cases.push_back(twin);
  }
}

std::vector<Case> default_cases(const std::string& suite) {
  std::vector<Case> cases;
  if (suite == "dense") {
    for (std::int64_t m : {1, 128, 4096}) {
      for (auto [n, k] : kDenseNK) cases.push_back(dense(suite, Family::kFp8Dense, m, n, k));
    }
    for (auto [n, k] : kDgradNK) {
      cases.push_back(dense(suite, Family::kFp8Dense, 4096, n, k));
      cases.back().tag = "dgrad";
    }
  } else if (suite == "contiguous") {
    for (auto [g, e] : kContiguousGroups) {
      for (auto [n, k] : kGroupedNK) {
        for (bool ends : {false, true}) {
          Case c = dense(suite, Family::kFp8Contiguous, 0, n, k);
          c.groups = g;
          c.expected = e;
          c.group_ends = ends;
          cases.push_back(c);
        }
      }
    }
    add_packed_twins(cases);
  } else if (suite == "masked") {
    for (auto [g, e] : kMaskedGroups) {
      for (auto [n, k] : kGroupedNK) {
        Case c = dense(suite, Family::kFp8Masked, 0, n, k);
        c.groups = g;
        c.expected = e;
        c.capacity = kMaskedCapacity;
        cases.push_back(c);
      }
    }
  } else if (suite == "wgrad") {
    for (auto [n, k] : kDenseNK) {
      Case c = dense(suite, Family::kFp8Wgrad, n, 4096, k);
      c.d_f32 = true;
      c.accumulate = true;
      cases.push_back(c);
    }
    add_in_place_twins(cases);
  } else if (suite == "kgrouped") {
    for (const KGroupedRow& row : kKGroupedRows) {
      Case c = dense(suite, Family::kFp8KGrouped, row.m, row.n, 0);
      c.groups = row.groups;
      c.expected = row.expected_k;
      c.d_f32 = true;
      c.accumulate = true;
      cases.push_back(c);
    }
    add_in_place_twins(cases);
  } else if (suite == "bf16") {
    // Forward: NT, BF16 D with and without accumulation, then the FP32-output pairs.
    for (std::int64_t m : {1, 128, 4096}) {
      for (auto [n, k] : kDenseNK) {
        for (bool acc : {false, true}) {
          cases.push_back(dense(suite, Family::kBf16Dense, m, n, k));
          cases.back().accumulate = acc;
        }
      }
      for (auto [n, k] : kFp32OutNK) {
        cases.push_back(dense(suite, Family::kBf16Dense, m, n, k));
        cases.back().d_f32 = true;
      }
    }
    // Backward at m = 4096: dgrad (NN: B MN-major), wgrad (TN: both MN-major) with FP32 D += and with BF16 D.
    for (auto [n, k] : kDenseNK) {
      Case dgrad = dense(suite, Family::kBf16Dense, 4096, k, n);
      dgrad.b_mn_major = true;
      dgrad.tag = "NN";
      cases.push_back(dgrad);
      for (bool f32 : {true, false}) {
        Case wgrad = dense(suite, Family::kBf16Dense, n, 4096, k);
        wgrad.a_mn_major = wgrad.b_mn_major = true;
        wgrad.d_f32 = wgrad.accumulate = f32;
        wgrad.tag = "TN";
        cases.push_back(wgrad);
      }
    }
    Case last = dense(suite, Family::kBf16Dense, 4096, kFp32OutNK[0].second, kFp32OutNK[0].first);
    last.b_mn_major = true;
    last.tag = "NN";
    cases.push_back(last);
    // Grouped BF16: contiguous (both index forms, B K-major and MN-major), masked, k-grouped.
    for (auto [g, e] : kContiguousGroups) {
      for (auto [n, k] : kGroupedNK) {
        for (bool ends : {false, true}) {
          for (bool b_mn : {false, true}) {
            Case c = dense(suite, Family::kBf16Contiguous, 0, n, k);
            c.groups = g;
            c.expected = e;
            c.group_ends = ends;
            c.b_mn_major = b_mn;
            cases.push_back(c);
          }
        }
      }
    }
    for (auto [g, e] : kMaskedGroups) {
      for (auto [n, k] : kGroupedNK) {
        Case c = dense(suite, Family::kBf16Masked, 0, n, k);
        c.groups = g;
        c.expected = e;
        c.capacity = kMaskedCapacity;
        cases.push_back(c);
      }
    }
    for (const KGroupedRow& row : kKGroupedRows) {
      Case c = dense(suite, Family::kBf16KGrouped, row.m, row.n, 0);
      c.groups = row.groups;
      c.expected = row.expected_k;
      c.d_f32 = true;
      c.accumulate = true;
      cases.push_back(c);
    }
    // Appended, so that the rows above keep their seeds: FP32 D += (TN weight gradients, k-grouped) in place, then
    // packed contiguous rows.
    add_in_place_twins(cases);
    add_packed_twins(cases);
  } else {
    throw std::invalid_argument("--suite: one of dense, contiguous, masked, wgrad, kgrouped, bf16, got " + suite);
  }
  return cases;
}

template <typename T>
T need(const std::optional<T>& value, const char* flag, const std::string& suite) {
  if (!value) throw std::invalid_argument(std::string(flag) + ": needed for a custom " + suite + " shape");
  return *value;
}

void check_positive(std::int64_t value, const char* flag) {
  if (value <= 0) throw std::invalid_argument(std::string(flag) + ": must be positive, got " + std::to_string(value));
}

// The suite's first case whose label contains `like` (the first case when empty), with the shape replaced by the flags.
Case custom_case(const std::string& suite, const ShapeOverride& s, const std::string& like) {
  const std::vector<Case> cases = default_cases(suite);
  const auto it = std::find_if(cases.begin(), cases.end(),
                               [&](const Case& c) { return c.label().find(like) != std::string::npos; });
  if (it == cases.end()) {
    throw std::invalid_argument("--rows: no row of suite " + suite + " contains \"" + like +
                                "\" to take a custom shape's layout from");
  }
  Case c = *it;
  c.tag = "custom";
  switch (c.family) {
    case Family::kFp8Dense:
    case Family::kFp8Wgrad:
    case Family::kBf16Dense:
      c.m = need(s.m, "--m", suite);
      c.n = need(s.n, "--n", suite);
      c.k = need(s.k, "--k", suite);
      check_positive(c.m, "--m");
      break;
    case Family::kFp8Contiguous:
    case Family::kFp8Masked:
    case Family::kBf16Contiguous:
    case Family::kBf16Masked:
      c.groups = need(s.groups, "--groups", suite);
      c.expected = need(s.expected, "--expected-m", suite);
      c.n = need(s.n, "--n", suite);
      c.k = need(s.k, "--k", suite);
      check_positive(c.groups, "--groups");
      check_positive(c.expected, "--expected-m");
      if ((c.family == Family::kFp8Masked || c.family == Family::kBf16Masked) && c.expected > c.capacity) {
        c.capacity = c.expected * 2;
      }
      break;
    default:  // K-grouped: --expected-m is the expected K per expert
      c.groups = need(s.groups, "--groups", suite);
      c.m = need(s.m, "--m", suite);
      c.n = need(s.n, "--n", suite);
      c.expected = need(s.expected, "--expected-m", suite);
      check_positive(c.groups, "--groups");
      check_positive(c.m, "--m");
      break;
  }
  check_positive(c.n, "--n");
  check_positive(c.k > 0 ? c.k : c.expected, c.k > 0 ? "--k" : "--expected-m");
  return c;
}

}  // namespace

const std::vector<std::string>& known_suites() {
  static const std::vector<std::string> suites = {"dense", "contiguous", "masked", "wgrad", "kgrouped", "bf16"};
  return suites;
}

std::vector<Case> build_suite(const std::string& suite, const ShapeOverride& shape, std::uint64_t seed,
                              const std::string& like) {
  std::vector<Case> cases = shape.any() ? std::vector<Case>{custom_case(suite, shape, like)} : default_cases(suite);
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const std::size_t data = cases[i].data_of >= 0 ? static_cast<std::size_t>(cases[i].data_of) : i;
    cases[i].seed = case_seed(seed, suite, data);
  }
  return cases;
}

std::string Case::label() const {
  auto s = [](std::int64_t v) { return std::to_string(v); };
  std::string out;
  switch (family) {
    case Family::kFp8Dense:
    case Family::kFp8Wgrad:
    case Family::kBf16Dense:
      out = "m=" + s(m) + " n=" + s(n) + " k=" + s(k);
      break;
    case Family::kFp8Contiguous:
    case Family::kBf16Contiguous:
      out = "G=" + s(groups) + " exp=" + s(expected) + " n=" + s(n) + " k=" + s(k) + (group_ends ? " ends" : " idx");
      if (group_ends && segment_alignment != 128) out += " sa" + s(segment_alignment);
      break;
    case Family::kFp8Masked:
    case Family::kBf16Masked:
      out = "G=" + s(groups) + " exp=" + s(expected) + " n=" + s(n) + " k=" + s(k);
      break;
    case Family::kFp8KGrouped:
    case Family::kBf16KGrouped:
      out = "G=" + s(groups) + " m=" + s(m) + " n=" + s(n) + " expK=" + s(expected);
      break;
  }
  if (family == Family::kBf16Dense || family == Family::kBf16Contiguous) {
    out += std::string(" ") + (a_mn_major ? "T" : "N") + (b_mn_major ? "N" : "T");
  }
  if (family == Family::kBf16Dense) out += std::string(d_f32 ? " f32" : " bf16") + (accumulate ? " +C" : "");
  if (!tag.empty() && tag != "NN" && tag != "TN") out += " " + tag;
  if (in_place) out += " in-place";
  return out;
}

}  // namespace moegemm::bench
