// Launching the SM90 FP8 1D2D kernel: kernel source and cache key for a configuration, TMA descriptors for the
// operands, the persistent grid, and the launch on the caller's stream.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/scheduler.cuh"
#include "moegemm/config.hpp"
#include "moegemm/types.hpp"
#include "runtime/kernel_cache.hpp"

namespace moegemm::launch {

// Everything the kernel needs, already validated. Strides in elements.
struct GemmLaunch {
  kernels::GroupedKind layout = kernels::GroupedKind::kDense;
  int rows = 0;  // dense M, contiguous M_total, masked capacity
  int n = 0, k = 0, num_groups = 1;
  const void* a = nullptr;
  std::int64_t lda = 0, a_group_stride = 0;  // a_group_stride: masked only
  const void* b = nullptr;
  std::int64_t ldb = 0, b_group_stride = 0;
  const float* sfa = nullptr;
  std::int64_t sfa_mn_stride = 0;  // tma_aligned(rows): elements between k-blocks
  const float* sfb = nullptr;
  std::int64_t sfb_group_stride = 0, sfb_n_stride = 0, sfb_k_stride = 0;
  void* d = nullptr;
  std::int64_t ldd = 0, d_group_stride = 0;
  const int* routing = nullptr;
  int segment_alignment = kernels::kGroupEndsAlignment;  // contiguous group ends: the kernel's kSegmentAlignment
  // Recipe (1,1,128): B's row scales (MN-major, k-blocks tma_aligned(N) apart).
  int recipe = 0;  // kernels::sm90::GemmRecipe
  std::int64_t sfb_mn_stride = 0;
  // C, of D's dtype, row stride ldc. FP32-output recipes: D = C + A B^T with add_c (C = c, or D itself when c is
  // null), else D = A B^T. kBf16AddC: D = C + A B^T, c never null (it is d when C aliases D).
  const void* c = nullptr;
  std::int64_t ldc = 0;
  bool add_c = false;
  int mn_major = 0;  // BF16: bit 0 = A is MN-major ([K, M], lda between K rows), bit 1 = B is MN-major ([G][K, N])
  // K-grouped: the sizes on the host (they travel in the kernel parameters when `routing` is null; at most
  // kernels::sm90::kMaxInlineKGroups experts).
  const std::vector<std::int64_t>* host_ks = nullptr;
};

// The problem's K blocks (ceil(k / 128)) where the kernel for `config` is specialised on them
// (kernels::sm90::gemm_fixed_k_supported: FP8 (1,128,128) 256-row tiles without a K split, dense, group ends and
// masked), else 0 (also for k 0, and with MOEGEMM_JIT_FIXED_K=0).
int gemm_fixed_k_blocks(const KernelConfig& config, kernels::GroupedKind layout, int recipe, long long k);

// The translation unit, kernel name expression and in-memory cache key of one kernel configuration (the key is
// a short string that determines the source, so a hit never hashes sources). Exposed for compile checks.
// segment_alignment: the group-ends layout's (docs/layouts.md); the other layouts ignore it. k: the problem's K,
// which the kernel is specialised on where gemm_fixed_k_blocks says so (0: a kernel for any K).
std::string gemm_kernel_key(const KernelConfig& config, kernels::GroupedKind layout, int recipe = 0, int mn_major = 0,
                            int segment_alignment = kernels::kGroupEndsAlignment, long long k = 0);
jit::KernelSpec gemm_kernel_spec(const KernelConfig& config, kernels::GroupedKind layout, int recipe = 0,
                                 int mn_major = 0, int segment_alignment = kernels::kGroupEndsAlignment,
                                 long long k = 0);

void launch_gemm(const GemmLaunch& args, const KernelConfig& config, bool pdl, Stream stream);

}  // namespace moegemm::launch
