// Host-side validation of every GEMM entry point (include/moegemm/gemm.hpp). Each check_<family> takes the entry
// point's arguments (less the stream), checks every rule the kernels rely on (docs/validation.md lists them) and
// returns the normalised problem the planner and the launcher consume. A broken rule throws moegemm::Error:
// kInvalidArgument ("<argument>: <rule>, got <value>") or kUnsupported for valid input this build cannot run.
// Nothing is dereferenced: device pointers are only inspected for null and alignment.
#pragma once

#include "moegemm/gemm.hpp"
#include "validate/problem.hpp"

namespace moegemm::validate {

GemmProblem check_fp8_gemm_nt(const Fp8Operand& a, const Fp8Operand& b, const TensorView& d,
                              const GemmOptions& options = {});

GemmProblem check_m_grouped_fp8_gemm_nt_contiguous(const Fp8Operand& a, const Fp8Operand& b, const TensorView& d,
                                                   const ContiguousLayout& layout, const GemmOptions& options = {});

GemmProblem check_m_grouped_fp8_gemm_nt_masked(const Fp8Operand& a, const Fp8Operand& b, const TensorView& d,
                                               const MaskedLayout& layout, const GemmOptions& options = {});

GemmProblem check_fp8_gemm_nt_1d1d(const Fp8Operand& a, const Fp8Operand& b, const TensorView& d,
                                   const TensorView* c, const GemmOptions& options = {});

GemmProblem check_k_grouped_fp8_gemm_nt(const Fp8Operand& a, const Fp8Operand& b, const TensorView& d,
                                        const TensorView* c, const KGroupedLayout& layout,
                                        const GemmOptions& options = {});

GemmProblem check_bf16_gemm(const TensorView& a, const TensorView& b, const TensorView& d, const TensorView* c,
                            const GemmOptions& options = {});

GemmProblem check_m_grouped_bf16_gemm_contiguous(const TensorView& a, const TensorView& b, const TensorView& d,
                                                 const ContiguousLayout& layout, const GemmOptions& options = {});

GemmProblem check_m_grouped_bf16_gemm_masked(const TensorView& a, const TensorView& b, const TensorView& d,
                                             const MaskedLayout& layout, const GemmOptions& options = {});

GemmProblem check_k_grouped_bf16_gemm_tn(const TensorView& a, const TensorView& b, const TensorView& d,
                                         const TensorView* c, const KGroupedLayout& layout,
                                         const GemmOptions& options = {});

// The options rules shared by every family (max_sms, pdl, config); `fp8` selects the block_k the config must use.
// Exposed for the planner, which re-checks a config it is handed by other paths.
void check_config(const KernelConfig& config, bool fp8);

// A contiguous layout's segment alignment (ContiguousLayout::segment_alignment, and the precompile queries'): a power
// of two from 1 to kMaxSegmentAlignment for the group-ends form, the default for every other layout (nothing else
// reads it). `argument` names it in the error.
void check_segment_alignment(int alignment, bool group_ends, const std::string& argument);

}  // namespace moegemm::validate
