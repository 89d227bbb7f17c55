// moegemm-bench: the vendor baselines, through cuBLASLt (top heuristic, 32 MiB workspace).
//
// cuBLASLt is column-major. A row-major D[M, N] = A[M, K] @ B[N, K]^T is the column-major D^T = B . A^T, so every
// baseline passes our B (the weights) as cuBLASLt's A with op T (the "TN" form FP8 needs on Hopper) and our A (the
// activations) as its B with op N; cuBLASLt's D (N x M, column-major, ld N) is then our row-major D[M, N]. The
// scale tensors swap with the operands: cuBLASLt's A scales are the weights' scales.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

namespace moegemm::bench {

inline constexpr std::size_t kLtWorkspaceBytes = 32ull << 20;

// One cublasLtMatmul in cuBLASLt's own (column-major) terms.
struct LtProblem {
  cudaDataType_t ab_type = CUDA_R_8F_E4M3;
  cudaDataType_t d_type = CUDA_R_16BF;
  cublasOperation_t op_a = CUBLAS_OP_T;
  cublasOperation_t op_b = CUBLAS_OP_N;
  std::uint64_t m = 0, n = 0, k = 0;  // D is m x n
  std::int64_t lda = 0, ldb = 0, ldd = 0;
  const void* a = nullptr;
  const void* b = nullptr;
  void* d = nullptr;
  // C has D's type and layout. beta = 1 adds it; with beta = 0 it should not be read, but it still points at
  // finite values (a zero buffer) so that a kernel that reads it anyway cannot turn D's NaN poison into its output.
  const void* c = nullptr;  // nullptr: C is D (in place)
  float beta = 0.0f;
  int a_scale_mode = -1;  // -1: no scale pointer (BF16); else a cublasLtMatmulMatrixScale_t
  int b_scale_mode = -1;
  const void* a_scale = nullptr;
  const void* b_scale = nullptr;
};

class LtGemm {
 public:
  LtGemm() = default;
  LtGemm(const LtGemm&) = delete;
  LtGemm& operator=(const LtGemm&) = delete;
  ~LtGemm();

  // Builds descriptors and asks the heuristic; false (and *why) when cuBLASLt offers no algorithm for it.
  bool prepare(cublasLtHandle_t handle, const LtProblem& problem, void* workspace, std::string* why);
  // Throws CudaFailure when cublasLtMatmul does not return success or the launch left an error behind.
  void run(cudaStream_t stream) const;

 private:
  bool prepare_or_throw(cublasLtHandle_t handle, const LtProblem& problem, void* workspace, std::string* why);
  void release() noexcept;
  cublasLtHandle_t handle_ = nullptr;
  cublasLtMatmulDesc_t op_ = nullptr;
  cublasLtMatrixLayout_t a_ = nullptr, b_ = nullptr, c_ = nullptr, d_ = nullptr;
  cublasLtMatmulAlgo_t algo_{};
  LtProblem problem_{};
  void* workspace_ = nullptr;
  float alpha_ = 1.0f;
};

// ---- Block-scaling scale tensors (cuBLAS 12.9+, Hopper only) ------------------------------------------------------
//
// The layouts, from the cuBLAS documentation ("128-Element 1D and 128x128 2D Block Scaling for FP8 Data Types",
// "Scaling factors layouts"), in cuBLASLt's terms where op(A) is M x K, op(B) is K x N and L = ceil(K / 128):
//   VEC128_32F      A: M-major M x L (scale of (row i, block kb) at kb * M + i); B: N-major N x L, likewise.
//   BLK128x128_32F  K-major, columns L4 = round_up(L, 4) apart: A: L4 x ceil(M/128), scale of (block rb, block kb)
//                   at rb * L4 + kb; B: L4 x ceil(N/128), likewise.
//   M and N multiples of 4; scale pointers 16-byte aligned.
// PyTorch's torch._scaled_mm uses exactly these (aten/src/ATen/native/cuda/Blas.cpp: 1x128 scales [rows, L] with
// strides (1, rows); 128x128 scales [ceil(rows/128), L] with strides (L4, 1); cuBLASLt's A is mat2 with its scales)
// and NVIDIA's CUDALibrarySamples cuBLASLt/LtBlk128x128Fp8Matmul sizes them ceil(K/128) * rows and
// round_up(ceil(K/128), 4) * ceil(rows/128) floats.
//
// `rows` is the operand's non-K extent (our N for the weights, our M for the activations).
struct LtScaleLayout {
  std::int64_t row_stride = 0;  // floats between the scales of consecutive rows (VEC128) or row blocks (BLK128x128)
  std::int64_t kb_stride = 0;   // floats between the scales of consecutive K blocks
  std::int64_t rows = 0;        // rows of scales: the operand's rows (VEC128) or row blocks (BLK128x128)
  std::int64_t k_blocks = 0;    // L
  std::int64_t alloc = 0;       // floats to allocate: both extents rounded up (to 128 and 4) for a safety margin
};
LtScaleLayout lt_vec128_layout(std::int64_t rows, std::int64_t k);
LtScaleLayout lt_blk128_layout(std::int64_t rows, std::int64_t k);

// Why cuBLASLt block scaling cannot run row-major D[M, N] = A[M, K] @ B[N, K]^T with this D type, or "" when it
// can: the documented rules (M, N multiples of 4) and the 16-byte alignment of leading dimensions FP8 kernels need.
std::string lt_block_scaling_unsupported(std::int64_t m, std::int64_t n, std::int64_t k, cudaDataType_t d_type);

// Row-major D[M, N] = A[M, K] (K-major) @ B[N, K]^T (K-major), FP8 e4m3 with one FP32 scale per tensor.
LtProblem fp8_per_tensor(std::int64_t m, std::int64_t n, std::int64_t k, const void* a, const void* b, void* d,
                         cudaDataType_t d_type, const float* a_scale, const float* b_scale);
// The same product with block scales: sfa in the VEC128 layout of [M, K]; sfb in the BLK128x128 layout of [N, K],
// or in the VEC128 layout when b_per_row (the 1D1D recipe).
LtProblem fp8_block_scaled(std::int64_t m, std::int64_t n, std::int64_t k, const void* a, const void* b, void* d,
                           cudaDataType_t d_type, const float* sfa, const float* sfb, bool b_per_row);
// Row-major BF16 D[M, N] = A @ B^T with A [M, K] and B [N, K] each K-major or MN-major (FP32 compute).
LtProblem bf16_gemm(std::int64_t m, std::int64_t n, std::int64_t k, const void* a, bool a_mn_major, const void* b,
                    bool b_mn_major, void* d, cudaDataType_t d_type);

}  // namespace moegemm::bench
