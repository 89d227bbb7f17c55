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

}  // namespace moegemm::staged
