// moegemm: GEMM entry points. Every function validates all of its arguments on the host before any launch
// (throwing moegemm::Error with ErrorCode::kInvalidArgument and a message naming the argument and the rule),
// launches on `stream`, never synchronises, and writes D in place.
//
// Conventions: "NT" means D = A @ B^T with A [M, K] and B [N, K], both K-major (last stride 1).
// Shapes and strides are in elements. D and C are row-major (last stride 1).
#pragma once

#include <string>

#include "moegemm/config.hpp"
#include "moegemm/layouts.hpp"
#include "moegemm/recipe.hpp"
#include "moegemm/types.hpp"

namespace moegemm {

// An FP8 operand: e4m3 values and their FP32 scale factors (docs/scale-formats.md).
struct Fp8Operand {
  TensorView data;
  TensorView scales;
};

struct GemmOptions {
  ScaleRecipe recipe = kRecipe1x128x128;
  int max_sms = 0;                       // 0: the process-wide setting (set_num_sms)
  int pdl = -1;                          // -1: the process-wide setting, 0: off, 1: programmatic dependent launch
  const KernelConfig* config = nullptr;  // override the planner (experiments); validated like any argument
};

// ---- FP8, recipe (1,128,128): A per token x 128 K, B per 128x128 block, BF16 D ----------------------------

// D[M,N] = A[M,K] @ B[N,K]^T.  sfa: FP32 [M, ceil(K/128)] MN-major, strides (1, tma_aligned(M)).
// sfb: FP32 [ceil(N/128), ceil(K/128)] contiguous.
void fp8_gemm_nt(const Fp8Operand& a, const Fp8Operand& b, const TensorView& d, Stream stream,
                 const GemmOptions& options = {});

// A [M_total, K], B [G, N, K], D [M_total, N]; sfa [M_total, ceil(K/128)] MN-major; sfb [G, ceil(N/128), ceil(K/128)].
void m_grouped_fp8_gemm_nt_contiguous(const Fp8Operand& a, const Fp8Operand& b, const TensorView& d,
                                      const ContiguousLayout& layout, Stream stream,
                                      const GemmOptions& options = {});

// A [G, cap, K], B [G, N, K], D [G, cap, N]; sfa [G, cap, ceil(K/128)] MN-major per group; sfb as contiguous.
void m_grouped_fp8_gemm_nt_masked(const Fp8Operand& a, const Fp8Operand& b, const TensorView& d,
                                  const MaskedLayout& layout, Stream stream, const GemmOptions& options = {});

// What the planner picks for a dense FP8 shape (for printing and tests; launches nothing).
KernelConfig plan_fp8_gemm_nt(int m, int n, int k, int num_groups = 1, int expected_m = 0);

// ---- Warm-up ---------------------------------------------------------------------------------------------------
// Kernels are compiled on first use (and cached on disk). A call that would compile while `stream` is being
// captured into a CUDA graph fails with ErrorCode::kCaptureError instead: run the same call once eagerly first.

}  // namespace moegemm
