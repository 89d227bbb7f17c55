// moegemm-bench: the vendor baselines, through cuBLASLt (top heuristic, 32 MiB workspace).
//
// cuBLASLt is column-major. A row-major D[M, N] = A[M, K] @ B[N, K]^T is the column-major D^T = B . A^T, so the
// per-tensor baseline passes our B as cuBLASLt's A (op T: the "TN" form FP8 needs on Hopper) and our A as its B.
// The block-scaled baseline keeps the roles the 1x128 / 128x128 scale modes are defined for (cuBLASLt's A is the
// activation with VEC128 scales, its B the weight with BLK128x128 scales), which makes its output D^T: same FLOPs and
// bytes, transposed storage.
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
  const void* c = nullptr;  // beta = 1 when given (same type and layout as D), else beta = 0
  int a_scale_mode = -1;    // -1: no scale pointer (BF16); else a cublasLtMatmulMatrixScale_t
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
  float alpha_ = 1.0f, beta_ = 0.0f;
};

// Row-major D[M, N] = A[M, K] (K-major) @ B[N, K]^T (K-major), FP8 e4m3 with one FP32 scale per tensor.
LtProblem fp8_per_tensor(std::int64_t m, std::int64_t n, std::int64_t k, const void* a, const void* b, void* d,
                         cudaDataType_t d_type, const void* c, const float* a_scale, const float* b_scale);
// The same product with block scales: sfa in cuBLASLt's VEC128 layout, sfb in its BLK128x128 layout, or VEC128 when
// b_per_row (the 1D1D recipe). By default cuBLASLt's A is the activation and D comes out transposed ([N, M]
// row-major); weights_first swaps the roles (the weight is cuBLASLt's A) and D is row-major [M, N].
LtProblem fp8_block_scaled(std::int64_t m, std::int64_t n, std::int64_t k, const void* a, const void* b, void* d,
                           cudaDataType_t d_type, const void* c, const float* sfa, const float* sfb, bool b_per_row,
                           bool weights_first);
// Row-major BF16 D[M, N] = C + A @ B^T with A [M, K] and B [N, K] each K-major or MN-major (FP32 compute).
LtProblem bf16_gemm(std::int64_t m, std::int64_t n, std::int64_t k, const void* a, bool a_mn_major, const void* b,
                    bool b_mn_major, void* d, cudaDataType_t d_type, const void* c);

// cuBLASLt's scale-tensor layouts on Hopper (cuBLAS 12.9+ block scaling), in floats, for an operand stored with its
// K dimension contiguous ("inner") and `outer` rows:
//   VEC128:      scale of (row, kb) at kb * outer + row            -> ceil(K/128) * outer floats
//   BLK128x128:  scale of (rb, kb)  at rb * round_up(ceil(K/128), 4) + kb
inline std::int64_t lt_blk_ld(std::int64_t k) { return ((k + 127) / 128 + 3) / 4 * 4; }

}  // namespace moegemm::bench
