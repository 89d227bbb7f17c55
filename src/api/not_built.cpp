// GEMM families whose kernels are not built yet. Each entry point fails loudly with ErrorCode::kUnsupported,
// naming the missing piece, rather than pretending to work. Files that implement a family remove it from here.
#include "moegemm/error.hpp"
#include "moegemm/gemm.hpp"

namespace moegemm {

[[noreturn]] static void not_built(const char* what) {
  throw Error(ErrorCode::kUnsupported, std::string(what) + ": the SM90 kernel for this GEMM is not built yet");
}

void k_grouped_fp8_gemm_nt(const Fp8Operand&, const Fp8Operand&, const TensorView&, const TensorView*,
                           const KGroupedLayout&, Stream, const GemmOptions&) {
  not_built("k_grouped_fp8_gemm_nt");
}

}  // namespace moegemm
