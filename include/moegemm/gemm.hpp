// moegemm: GEMM entry points. Every function validates all of its arguments on the host before any launch
// (throwing moegemm::Error with ErrorCode::kInvalidArgument and a message naming the argument and the rule),
// launches on `stream`, never synchronises, and writes D in place.
//
// Conventions: "NT" means D = A @ B^T with A [M, K] and B [N, K], both K-major (last stride 1).
// Shapes and strides are in elements. D and C are row-major (last stride 1).
#pragma once

#include <optional>
#include <string>
#include <vector>

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

// ---- FP8, recipe (1,1,128): A and B per row x 128 K ("1D1D", weight gradients), FP32 D = C + A @ B^T ----------

// A [M,K], B [N,K] K-major (K a multiple of 128); sfa FP32 [M, K/128] and sfb FP32 [N, K/128], both MN-major with
// strides (1, tma_aligned(M|N)). C FP32 [M,N] (may alias D); nullptr means D += A @ B^T (D is read).
void fp8_gemm_nt_1d1d(const Fp8Operand& a, const Fp8Operand& b, const TensorView& d, const TensorView* c,
                      Stream stream, const GemmOptions& options = {});

// D[g] = C[g] + A_g @ B_g^T for each expert g with K_g tokens (the anchor's k_grouped_fp8_gemm_nt_contiguous form):
// a.data and b.data are 1-D FP8 buffers holding, per expert in order, a K-major [M, K_g] (resp. [N, K_g]) block;
// sfa FP32 [M, sum K_g / 128] and sfb FP32 [N, sum K_g / 128] MN-major; C, D FP32 [G, M, N] contiguous (C may alias
// D). With layout.ks_device the sizes are read on the device (a graph replays with the current values), clamped to
// [0, capacity left] and rounded down to multiples of 128, where the capacity is sum(layout.ks): bad device values
// never make a load or store leave the buffers. Bitwise deterministic: per-expert TMA descriptors are written by a
// stream-ordered step before the GEMM and never change while it runs (docs/layouts.md).
void k_grouped_fp8_gemm_nt(const Fp8Operand& a, const Fp8Operand& b, const TensorView& d, const TensorView* c,
                           const KGroupedLayout& layout, Stream stream, const GemmOptions& options = {});

// ---- BF16: FP32 accumulation, no scales ---------------------------------------------------------------------------

// D[M,N] = C + A @ B^T, with A [M,K] and B [N,K] each K-major (stride[1] == 1) or MN-major (stride[0] == 1): the NT,
// NN, TN and TT forms are views of the same call. D BF16 (N a multiple of 8) or FP32 (N even); C (optional,
// nullptr) of D's dtype, may alias D. FP32 accumulation; with BF16 D, C is added in FP32 before the one rounding.
void bf16_gemm(const TensorView& a, const TensorView& b, const TensorView& d, const TensorView* c, Stream stream,
               const GemmOptions& options = {});

// A [M_total, K] K-major, B [G, N, K] K-major or MN-major, D BF16 [M_total, N].
void m_grouped_bf16_gemm_contiguous(const TensorView& a, const TensorView& b, const TensorView& d,
                                    const ContiguousLayout& layout, Stream stream, const GemmOptions& options = {});

// A [G, cap, K], B [G, N, K] K-major or MN-major, D BF16 [G, cap, N].
void m_grouped_bf16_gemm_masked(const TensorView& a, const TensorView& b, const TensorView& d,
                                const MaskedLayout& layout, Stream stream, const GemmOptions& options = {});

// D[g] = C[g] + A_g^T @ B_g with A [sum K_g, M] and B [sum K_g, N] (MN-major, rows of expert g contiguous);
// C, D FP32 [G, M, N] (C may alias D); K_g multiples of 128, zero allowed (D[g] = C[g]).
void k_grouped_bf16_gemm_tn(const TensorView& a, const TensorView& b, const TensorView& d, const TensorView* c,
                            const KGroupedLayout& layout, Stream stream, const GemmOptions& options = {});

// What the planner picks for an FP8 (1,128,128) shape (for printing and tests; launches nothing): dense when
// num_groups is 1, else `grouped_layout` (m-grouped contiguous in either form, or masked) with expected_m rows per
// expert. The row-to-group form is planned without 256-row tiles (docs/heuristics.md), so its plan may differ
// from the other two.
KernelConfig plan_fp8_gemm_nt(int m, int n, int k, int num_groups = 1, int expected_m = 0,
                              GemmLayout grouped_layout = GemmLayout::kContiguousGroupEnds);

// What the planner picks for an FP8 (1,1,128) weight gradient: dense (num_groups 1) or k-grouped with k the sum of
// the experts' K (planned, as the call is, with the mean K per expert).
KernelConfig plan_fp8_gemm_wgrad(int m, int n, int k, int num_groups = 1);

// What the planner picks for a BF16 call (for printing and tests; launches nothing).
struct Bf16PlanQuery {
  GemmLayout layout = GemmLayout::kDense;
  int m = 0, n = 0, k = 0;  // dense: the GEMM; m-grouped: M_total (or capacity x G); k-grouped: M, N and sum K
  int num_groups = 1;
  int expected_m = 0;  // m-grouped: expected rows per expert (0: ceil(m / num_groups), as the call's default)
  bool a_mn_major = false, b_mn_major = false;
  bool fp32_d = false;  // FP32 D (k-grouped: always)
  bool with_c = false;  // D = C + A B^T with BF16 D (dense only)
  int segment_alignment = kContiguousAlignment;  // group ends: the call's layout.segment_alignment (precompile_*)
  // A call's GemmOptions::config: the query then stands for that call (its kernel, checked by the call's rules and
  // completed as the call completes it) instead of the planner's choice.
  std::optional<KernelConfig> config;
};
KernelConfig plan_bf16_gemm(const Bf16PlanQuery& query);

// ---- Warm-up ---------------------------------------------------------------------------------------------------
// Kernels are compiled on first use (and cached on disk). A call that would compile while `stream` is being
// captured into a CUDA graph fails with ErrorCode::kCaptureError instead: run the same call once eagerly first, or
// precompile it.
//
// precompile_*: compile the kernels that a call matching the query would launch (the planner's choice, the one the
// matching plan_* query returns) into the disk cache, or find them there, without a GPU and without launching.
// A later call then loads them from disk instead of compiling, even while its stream is being captured into a
// graph. Run them at start-up, or on a build machine with MOEGEMM_CACHE_DIR naming the folder to ship. The files
// fit the library build and NVRTC version that wrote them, and the plan fits the SM count: the process-wide cap
// (set_num_sms), else the device's, else an H200's 132. Throw ErrorCode::kUnsupported when nothing would be kept
// on disk (MOEGEMM_JIT_DISK_CACHE=0, no cache folder, or a folder that cannot be written).
struct PrecompiledKernel {
  std::string name;        // the kernel and its configuration, e.g. "sm90_fp8_1d2d/bm256/bn128/st3/layout0/..."
  KernelConfig config;     // the plan (for the GEMM kernel; the k-grouped FP8 descriptor step has none)
  std::string path;        // its file in the cache folder
  bool from_disk = false;  // the file was there already: nothing was compiled
  double compile_ms = 0;   // NVRTC time (for a file found on disk: when it was compiled)
  int registers = 0;        // per thread, from ptxas's report in NVRTC's log (0 when the log held none)
  int spill_bytes = 0;      // bytes of registers spilled to local memory per thread (ptxas's spill stores)
};
// The kernels of fp8_gemm_nt (num_groups 1) or of the m-grouped call `grouped_layout`, as plan_fp8_gemm_nt.
// segment_alignment: the group-ends call's layout.segment_alignment (a kernel is specialised on it); the default for
// the other layouts.
std::vector<PrecompiledKernel> precompile_fp8_gemm_nt(int m, int n, int k, int num_groups = 1, int expected_m = 0,
                                                      GemmLayout grouped_layout = GemmLayout::kContiguousGroupEnds,
                                                      int segment_alignment = kContiguousAlignment);
// The kernels of fp8_gemm_nt_1d1d (num_groups 1) or k_grouped_fp8_gemm_nt (k the sum of the experts' K), as
// plan_fp8_gemm_wgrad; the k-grouped form has two (its per-expert descriptor step and the GEMM).
std::vector<PrecompiledKernel> precompile_fp8_gemm_wgrad(int m, int n, int k, int num_groups = 1);
// The kernels of the BF16 call the query stands for, as plan_bf16_gemm.
std::vector<PrecompiledKernel> precompile_bf16_gemm(const Bf16PlanQuery& query);

// ---- Warm-up of many call shapes at once -------------------------------------------------------------------------
// A service's shapes, one query per call shape it will make (for example one per batch size it captures a graph
// for). precompile_all plans every query first (a bad one throws, naming it, before anything compiles), then
// compiles each distinct kernel once, on up to `threads` CPU threads at a time (0: one per hardware thread), and
// returns the distinct kernels in the order the queries first name them. Kernels are specialised on tile and layout,
// not on M or N (on K only the 256-row FP8 (1,128,128) kernels), so a sweep over M names a few kernels
// (docs/api.md). A query with a config stands for the call with that GemmOptions::config, so that a call forcing
// a configuration can be warmed up too. Disk cache rules as precompile_*.
struct Fp8NtQuery {  // precompile_fp8_gemm_nt's arguments
  int m = 0, n = 0, k = 0;
  int num_groups = 1;
  int expected_m = 0;
  GemmLayout grouped_layout = GemmLayout::kContiguousGroupEnds;
  int segment_alignment = kContiguousAlignment;
  std::optional<KernelConfig> config;  // a call's GemmOptions::config (as Bf16PlanQuery::config)
};
struct Fp8WgradQuery {  // precompile_fp8_gemm_wgrad's arguments
  int m = 0, n = 0, k = 0;
  int num_groups = 1;
  std::optional<KernelConfig> config;  // a call's GemmOptions::config (as Bf16PlanQuery::config)
};
struct WarmupQueries {
  std::vector<Fp8NtQuery> fp8_nt;
  std::vector<Fp8WgradQuery> fp8_wgrad;
  std::vector<Bf16PlanQuery> bf16;
};
std::vector<PrecompiledKernel> precompile_all(const WarmupQueries& queries, int threads = 0);

}  // namespace moegemm
