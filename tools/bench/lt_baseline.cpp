#include "lt_baseline.hpp"

#include <algorithm>
#include <stdexcept>

#include "cuda_check.hpp"

namespace moegemm::bench {
namespace {

void lt_check(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS) {
    throw CudaFailure(std::string(what) + " failed: cuBLAS status " + std::to_string(static_cast<int>(status)));
  }
}

template <typename T>
void set_attr(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr, const T& value, const char* what) {
  lt_check(cublasLtMatmulDescSetAttribute(desc, attr, &value, sizeof(value)), what);
}

}  // namespace

LtGemm::~LtGemm() { release(); }

void LtGemm::release() noexcept {
  if (a_ != nullptr) cublasLtMatrixLayoutDestroy(a_);
  if (b_ != nullptr) cublasLtMatrixLayoutDestroy(b_);
  if (c_ != nullptr) cublasLtMatrixLayoutDestroy(c_);
  if (d_ != nullptr) cublasLtMatrixLayoutDestroy(d_);
  if (op_ != nullptr) cublasLtMatmulDescDestroy(op_);
  a_ = b_ = c_ = d_ = nullptr;
  op_ = nullptr;
}

bool LtGemm::prepare(cublasLtHandle_t handle, const LtProblem& p, void* workspace, std::string* why) {
  try {
    return prepare_or_throw(handle, p, workspace, why);
  } catch (const CudaFailure& e) {  // a descriptor cuBLASLt refuses: this baseline is not offered for the shape
    if (why != nullptr) *why = e.what();
    release();
    return false;
  }
}

bool LtGemm::prepare_or_throw(cublasLtHandle_t handle, const LtProblem& p, void* workspace, std::string* why) {
  release();
  handle_ = handle;
  problem_ = p;
  workspace_ = workspace;
  lt_check(cublasLtMatmulDescCreate(&op_, CUBLAS_COMPUTE_32F, CUDA_R_32F), "cublasLtMatmulDescCreate");
  set_attr(op_, CUBLASLT_MATMUL_DESC_TRANSA, p.op_a, "TRANSA");
  set_attr(op_, CUBLASLT_MATMUL_DESC_TRANSB, p.op_b, "TRANSB");
  if (p.a_scale_mode >= 0) {
    const auto a_mode = static_cast<std::int32_t>(p.a_scale_mode);
    const auto b_mode = static_cast<std::int32_t>(p.b_scale_mode);
    set_attr(op_, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, a_mode, "A_SCALE_MODE");
    set_attr(op_, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, b_mode, "B_SCALE_MODE");
    set_attr(op_, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, p.a_scale, "A_SCALE_POINTER");
    set_attr(op_, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, p.b_scale, "B_SCALE_POINTER");
  }
  const bool a_n = p.op_a == CUBLAS_OP_N;
  const bool b_n = p.op_b == CUBLAS_OP_N;
  lt_check(cublasLtMatrixLayoutCreate(&a_, p.ab_type, a_n ? p.m : p.k, a_n ? p.k : p.m, p.lda), "layout A");
  lt_check(cublasLtMatrixLayoutCreate(&b_, p.ab_type, b_n ? p.k : p.n, b_n ? p.n : p.k, p.ldb), "layout B");
  lt_check(cublasLtMatrixLayoutCreate(&c_, p.d_type, p.m, p.n, p.ldd), "layout C");
  lt_check(cublasLtMatrixLayoutCreate(&d_, p.d_type, p.m, p.n, p.ldd), "layout D");

  cublasLtMatmulPreference_t pref = nullptr;
  lt_check(cublasLtMatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate");
  const std::size_t workspace_bytes = kLtWorkspaceBytes;
  const cublasStatus_t pref_status = cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes, sizeof(workspace_bytes));
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  cublasStatus_t status = pref_status;
  if (status == CUBLAS_STATUS_SUCCESS) {
    status = cublasLtMatmulAlgoGetHeuristic(handle, op_, a_, b_, c_, d_, pref, 1, &result, &found);
  }
  cublasLtMatmulPreferenceDestroy(pref);
  if (status != CUBLAS_STATUS_SUCCESS || found == 0) {
    if (why != nullptr) {
      *why = status != CUBLAS_STATUS_SUCCESS ? "heuristic status " + std::to_string(static_cast<int>(status))
                                             : "no algorithm";
    }
    release();
    return false;
  }
  algo_ = result.algo;
  return true;
}

void LtGemm::run(cudaStream_t stream) const {
  if (op_ == nullptr) throw std::logic_error("LtGemm::run before a successful prepare");
  const void* c = problem_.c != nullptr ? problem_.c : problem_.d;
  lt_check(cublasLtMatmul(handle_, op_, &alpha_, problem_.a, a_, problem_.b, b_, &problem_.beta, c, c_, problem_.d,
                          d_, &algo_, workspace_, kLtWorkspaceBytes, stream),
           "cublasLtMatmul");
  // A kernel that failed to launch leaves D untouched and says so only here.
  const cudaError_t launch = cudaGetLastError();
  if (launch != cudaSuccess) {
    throw CudaFailure(std::string("cublasLtMatmul launch failed: ") + cudaGetErrorString(launch));
  }
}

namespace {

std::int64_t ceil_div(std::int64_t x, std::int64_t y) { return (x + y - 1) / y; }
std::int64_t round_up(std::int64_t x, std::int64_t y) { return ceil_div(x, y) * y; }

// The safety margin of every scale buffer: a kernel that reads a whole tile of scales past a tensor's edge still
// reads inside the allocation (and reads the padding value, 1.0, not another buffer's NaN poison).
std::int64_t padded_alloc(std::int64_t rows, std::int64_t k_blocks) {
  return round_up(std::max<std::int64_t>(rows, 1), 128) * round_up(std::max<std::int64_t>(k_blocks, 1), 4) + 128;
}

}  // namespace

LtScaleLayout lt_vec128_layout(std::int64_t rows, std::int64_t k) {
  LtScaleLayout l;
  l.rows = rows;
  l.k_blocks = ceil_div(k, 128);
  l.row_stride = 1;
  l.kb_stride = rows;  // exactly the row count: the documented (and PyTorch-checked) stride
  l.alloc = padded_alloc(rows, l.k_blocks);
  return l;
}

LtScaleLayout lt_blk128_layout(std::int64_t rows, std::int64_t k) {
  LtScaleLayout l;
  l.rows = ceil_div(rows, 128);
  l.k_blocks = ceil_div(k, 128);
  l.row_stride = round_up(l.k_blocks, 4);  // L4
  l.kb_stride = 1;
  l.alloc = padded_alloc(l.rows, l.row_stride);
  return l;
}

std::string lt_block_scaling_unsupported(std::int64_t m, std::int64_t n, std::int64_t k, cudaDataType_t d_type) {
  const std::int64_t d_bytes = d_type == CUDA_R_32F ? 4 : 2;
  if (m % 4 != 0 || n % 4 != 0) return "block scaling needs M and N multiples of 4";
  if (k % 16 != 0) return "FP8 needs K a multiple of 16";
  if ((n * d_bytes) % 16 != 0) return "D's leading dimension must be a multiple of 16 bytes";
  return {};
}

LtProblem fp8_per_tensor(std::int64_t m, std::int64_t n, std::int64_t k, const void* a, const void* b, void* d,
                         cudaDataType_t d_type, const float* a_scale, const float* b_scale) {
  LtProblem p;
  p.ab_type = CUDA_R_8F_E4M3;
  p.d_type = d_type;
  p.op_a = CUBLAS_OP_T;  // our B [N, K] K-major = column-major K x N, transposed to N x K
  p.op_b = CUBLAS_OP_N;  // our A [M, K] K-major = column-major K x M
  p.m = static_cast<std::uint64_t>(n);
  p.n = static_cast<std::uint64_t>(m);
  p.k = static_cast<std::uint64_t>(k);
  p.lda = k;
  p.ldb = k;
  p.ldd = n;
  p.a = b;
  p.b = a;
  p.d = d;
  p.a_scale_mode = CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F;
  p.b_scale_mode = CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F;
  p.a_scale = b_scale;
  p.b_scale = a_scale;
  return p;
}

LtProblem fp8_block_scaled(std::int64_t m, std::int64_t n, std::int64_t k, const void* a, const void* b, void* d,
                           cudaDataType_t d_type, const float* sfa, const float* sfb, bool b_per_row) {
  // The per-tensor call's operands, with cuBLASLt's A (our weights) scaled per 128x128 block (or per row x 128 K
  // in 1D1D) and its B (our activations) per row x 128 K, as torch._scaled_mm sets up the same recipe.
  LtProblem p = fp8_per_tensor(m, n, k, a, b, d, d_type, nullptr, nullptr);
  p.a_scale_mode = b_per_row ? CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F : CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F;
  p.b_scale_mode = CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F;
  p.a_scale = sfb;
  p.b_scale = sfa;
  return p;
}

LtProblem bf16_gemm(std::int64_t m, std::int64_t n, std::int64_t k, const void* a, bool a_mn_major, const void* b,
                    bool b_mn_major, void* d, cudaDataType_t d_type) {
  LtProblem p;
  p.ab_type = CUDA_R_16BF;
  p.d_type = d_type;
  // cuBLASLt's A is our B: K-major [N, K] is column-major K x N (op T); MN-major is column-major N x K (op N).
  p.op_a = b_mn_major ? CUBLAS_OP_N : CUBLAS_OP_T;
  p.lda = b_mn_major ? n : k;
  // cuBLASLt's B is our A: K-major [M, K] is column-major K x M (op N); MN-major is column-major M x K (op T).
  p.op_b = a_mn_major ? CUBLAS_OP_T : CUBLAS_OP_N;
  p.ldb = a_mn_major ? m : k;
  p.m = static_cast<std::uint64_t>(n);
  p.n = static_cast<std::uint64_t>(m);
  p.k = static_cast<std::uint64_t>(k);
  p.ldd = n;
  p.a = b;
  p.b = a;
  p.d = d;
  return p;
}

}  // namespace moegemm::bench
