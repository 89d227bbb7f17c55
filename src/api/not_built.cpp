// GEMM families whose kernels are not built yet. Each entry point fails loudly with ErrorCode::kUnsupported,
// naming the missing piece, rather than pretending to work. Files that implement a family remove it from here.
#include "moegemm/error.hpp"
#include "moegemm/gemm.hpp"

namespace moegemm {

[[noreturn]] static void not_built(const char* what) {
  throw Error(ErrorCode::kUnsupported, std::string(what) + ": the SM90 kernel for this GEMM is not built yet");
}

void fp8_gemm_nt_1d1d(const Fp8Operand&, const Fp8Operand&, const TensorView&, const TensorView*, Stream,
                      const GemmOptions&) {
  not_built("fp8_gemm_nt_1d1d");
}
void k_grouped_fp8_gemm_nt(const Fp8Operand&, const Fp8Operand&, const TensorView&, const TensorView*,
                           const KGroupedLayout&, Stream, const GemmOptions&) {
  not_built("k_grouped_fp8_gemm_nt");
}
void bf16_gemm(const TensorView&, const TensorView&, const TensorView&, const TensorView*, Stream, const GemmOptions&) {
  not_built("bf16_gemm");
}
void m_grouped_bf16_gemm_contiguous(const TensorView&, const TensorView&, const TensorView&, const ContiguousLayout&,
                                    Stream, const GemmOptions&) {
  not_built("m_grouped_bf16_gemm_contiguous");
}
void m_grouped_bf16_gemm_masked(const TensorView&, const TensorView&, const TensorView&, const MaskedLayout&, Stream,
                                const GemmOptions&) {
  not_built("m_grouped_bf16_gemm_masked");
}
void k_grouped_bf16_gemm_tn(const TensorView&, const TensorView&, const TensorView&, const TensorView*,
                            const KGroupedLayout&, Stream, const GemmOptions&) {
  not_built("k_grouped_bf16_gemm_tn");
}

}  // namespace moegemm
