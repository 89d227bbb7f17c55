// Kernels that are built and compile-checked but not yet verified on a device. Their public entry points keep
// raising ErrorCode::kUnsupported; the device tests call these instead, and once a device run has recorded them
// passing (docs/results/), the public entry point switches over. Not installed, not part of the public API.
#pragma once

#include "moegemm/gemm.hpp"

namespace moegemm::staged {

// fp8_gemm_nt_1d1d (include/moegemm/gemm.hpp): recipe (1,1,128), FP32 D = C + A @ B^T (C may alias D; nullptr:
// D += A @ B^T). Dense only.
void fp8_gemm_nt_1d1d(const Fp8Operand& a, const Fp8Operand& b, const TensorView& d, const TensorView* c,
                      Stream stream, const GemmOptions& options = {});

// BF16 with A and B each K-major or MN-major (the NT, NN, TN and TT forms; grouped: B either way), BF16 D without
// C or FP32 D with or without C (C may alias D), in every M-grouped layout; BF16 D with C throws
// ErrorCode::kUnsupported. Same arguments as the entry points of gemm.hpp.
void bf16_gemm(const TensorView& a, const TensorView& b, const TensorView& d, const TensorView* c, Stream stream,
               const GemmOptions& options = {});
void m_grouped_bf16_gemm_contiguous(const TensorView& a, const TensorView& b, const TensorView& d,
                                    const ContiguousLayout& layout, Stream stream, const GemmOptions& options = {});
void m_grouped_bf16_gemm_masked(const TensorView& a, const TensorView& b, const TensorView& d,
                                const MaskedLayout& layout, Stream stream, const GemmOptions& options = {});

// D[g] = C[g] + A_g^T @ B_g (the tn form, include/moegemm/gemm.hpp): A [sum K, M] and B [sum K, N] BF16, FP32 D
// [G, M, N] contiguous; sizes from layout.ks_device when given (read at run time: safe to capture in a graph and
// replay after they change), else from layout.ks through the kernel parameters (at most 128 experts).
void k_grouped_bf16_gemm_tn(const TensorView& a, const TensorView& b, const TensorView& d, const TensorView* c,
                            const KGroupedLayout& layout, Stream stream, const GemmOptions& options = {});

}  // namespace moegemm::staged
