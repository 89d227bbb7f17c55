// moegemm-bench: the benchmark suites, i.e. the shape lists of the anchor's own benchmarks (targets.md), plus
// one user-given shape.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace moegemm::bench {

enum class Family {
  kFp8Dense,        // fp8_gemm_nt, 1D2D, BF16 D
  kFp8Contiguous,   // m_grouped_fp8_gemm_nt_contiguous
  kFp8Masked,       // m_grouped_fp8_gemm_nt_masked
  kFp8Wgrad,        // fp8_gemm_nt_1d1d, FP32 D = C + A B^T
  kFp8KGrouped,     // k_grouped_fp8_gemm_nt
  kBf16Dense,       // bf16_gemm
  kBf16Contiguous,  // m_grouped_bf16_gemm_contiguous
  kBf16Masked,      // m_grouped_bf16_gemm_masked
  kBf16KGrouped,    // k_grouped_bf16_gemm_tn
};

struct Case {
  std::string suite;
  Family family = Family::kFp8Dense;
  std::int64_t m = 0, n = 0, k = 0;  // dense: the GEMM; m-grouped: n, k; k-grouped: m, n (K per group drawn)
  int groups = 0;
  std::int64_t expected = 0;  // grouped: expected rows (M-grouped) or tokens (K-grouped) per expert
  std::int64_t capacity = 0;  // masked: rows per expert slab
  bool group_ends = false;    // contiguous: the kGroupEnds ("psum") index form, else kRowToGroup
  int segment_alignment = 128;  // group ends: where each expert's rows start (--segment-alignment; 1: packed)
  bool d_f32 = false;         // FP32 D (else BF16)
  bool accumulate = false;    // D = C + A B^T
  bool in_place = false;      // D = D + A B^T: C is D itself (D holds C's values before each checked call)
  int data_of = -1;           // >= 0: the index of the suite case whose seed (data and sizes) this one shares
  bool a_mn_major = false;    // BF16 operand majors
  bool b_mn_major = false;
  std::string tag;         // "dgrad", "NN", ... for the row label
  std::uint64_t seed = 0;  // data and group sizes of this case

  std::string label() const;  // "m=4096 n=7168 k=2048", "G=8 exp=4096 n=4096 k=2048 ends", ...
};

// Flags that replace a suite's shape list with one case.
struct ShapeOverride {
  std::optional<std::int64_t> m, n, k, expected;
  std::optional<int> groups;
  bool any() const { return m || n || k || expected || groups; }
};

const std::vector<std::string>& known_suites();
// The cases of `suite` (or its one overridden case); throws std::invalid_argument on an unknown suite or an
// incomplete override. Seeds derive from (seed, suite, index), so a case's data does not depend on the others.
// An overridden case takes everything but its shape (family, layout, majors, D type, C, in place) from the suite's
// first case whose label contains `like` (empty: the first case); none: std::invalid_argument.
std::vector<Case> build_suite(const std::string& suite, const ShapeOverride& shape, std::uint64_t seed,
                              const std::string& like = "");

}  // namespace moegemm::bench
