// One MoE layer's FP8 GEMMs through moegemm's C++ API, from a program that only installed the library:
//  1. what the planner picks for the layer's calls (no GPU needed);
//  2. the kernels compiled ahead into the disk cache (precompile_*: no GPU needed), so that a later call, even one
//     captured into a CUDA graph, loads them instead of compiling;
//  3. a bad argument, refused before anything runs, with the argument and the rule named;
//  4. on an SM90 GPU: the experts' tokens packed back to back (group ends, segment_alignment 1: no padding rows),
//     one m-grouped contiguous FP8 GEMM, and a few output rows checked against a double-precision product.
// Without a GPU it stops after step 3 and says why; the exit status is 0 either way unless a step fails.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

#include "moegemm/moegemm.hpp"
#include "moegemm/reference.hpp"

namespace {

constexpr int kN = 512, kK = 1024, kGroups = 4;
const std::vector<int> kTokensPerExpert = {300, 0, 77, 129};  // experts' rows, packed: M_total = 506

int packed_rows() {
  int m = 0;
  for (int rows : kTokensPerExpert) m += rows;
  return m;
}

bool cuda_ok(cudaError_t status, const char* what) {
  if (status == cudaSuccess) return true;
  std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(status));
  return false;
}

int run_on_gpu() {
  using namespace moegemm;
  std::vector<int> ends;
  int m_total = 0;
  for (int rows : kTokensPerExpert) ends.push_back(m_total += rows);  // the running sums: each expert's end
  const int kb = kK / 128, nb = kN / 128;
  const long long sfa_ld = tma_aligned_size(m_total, 4);  // MN-major A scales: M padded to 16 bytes

  // Random e4m3 operands with scales of powers of two (any FP32 scale works; these keep the example's check exact).
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> value(-2.0f, 2.0f);
  std::vector<std::uint8_t> a(static_cast<std::size_t>(m_total) * kK), b(static_cast<std::size_t>(kGroups) * kN * kK);
  for (auto& x : a) x = reference::float_to_e4m3(value(rng));
  for (auto& x : b) x = reference::float_to_e4m3(value(rng));
  std::vector<float> sfa(static_cast<std::size_t>(sfa_ld) * kb), sfb(static_cast<std::size_t>(kGroups) * nb * kb);
  for (auto& s : sfa) s = std::ldexp(1.0f, static_cast<int>(rng() % 5) - 2);
  for (auto& s : sfb) s = std::ldexp(1.0f, static_cast<int>(rng() % 5) - 2);

  void *da, *db, *dsfa, *dsfb, *dd, *dends;
  const std::size_t d_bytes = static_cast<std::size_t>(m_total) * kN * 2;
  if (!cuda_ok(cudaMalloc(&da, a.size()), "cudaMalloc") || !cuda_ok(cudaMalloc(&db, b.size()), "cudaMalloc") ||
      !cuda_ok(cudaMalloc(&dsfa, sfa.size() * 4), "cudaMalloc") ||
      !cuda_ok(cudaMalloc(&dsfb, sfb.size() * 4), "cudaMalloc") || !cuda_ok(cudaMalloc(&dd, d_bytes), "cudaMalloc") ||
      !cuda_ok(cudaMalloc(&dends, ends.size() * 4), "cudaMalloc")) {
    return 1;
  }
  cudaMemcpy(da, a.data(), a.size(), cudaMemcpyHostToDevice);
  cudaMemcpy(db, b.data(), b.size(), cudaMemcpyHostToDevice);
  cudaMemcpy(dsfa, sfa.data(), sfa.size() * 4, cudaMemcpyHostToDevice);
  cudaMemcpy(dsfb, sfb.data(), sfb.size() * 4, cudaMemcpyHostToDevice);
  cudaMemcpy(dends, ends.data(), ends.size() * 4, cudaMemcpyHostToDevice);

  const Fp8Operand av{TensorView::contiguous(da, DType::kFloat8E4M3, {m_total, kK}),
                      TensorView::strided(dsfa, DType::kFloat32, {m_total, kb}, {1, sfa_ld})};
  const Fp8Operand bv{TensorView::contiguous(db, DType::kFloat8E4M3, {kGroups, kN, kK}),
                      TensorView::contiguous(dsfb, DType::kFloat32, {kGroups, nb, kb})};
  ContiguousLayout layout;
  layout.form = ContiguousLayout::Form::kGroupEnds;
  layout.index = TensorView::contiguous(dends, DType::kInt32, {kGroups});
  layout.segment_alignment = 1;  // packed: expert g starts where expert g - 1 ended
  m_grouped_fp8_gemm_nt_contiguous(av, bv, TensorView::contiguous(dd, DType::kBFloat16, {m_total, kN}), layout,
                                   nullptr);
  if (!cuda_ok(cudaDeviceSynchronize(), "the GEMM")) return 1;
  std::vector<std::uint16_t> d(static_cast<std::size_t>(m_total) * kN);
  cudaMemcpy(d.data(), dd, d_bytes, cudaMemcpyDeviceToHost);

  // Each expert's first and last row against a double-precision product of the dequantised operands.
  double worst = 0;
  int start = 0;
  for (int g = 0; g < kGroups; ++g) {
    for (int r : {start, ends[g] - 1}) {
      if (r < start || r >= ends[g]) continue;
      for (int n = 0; n < kN; ++n) {
        double want = 0;
        for (int k = 0; k < kK; ++k) {
          const double x = reference::e4m3_to_float(a[static_cast<std::size_t>(r) * kK + k]) * sfa[k / 128 * sfa_ld + r];
          const std::size_t bi = (static_cast<std::size_t>(g) * kN + n) * kK + k;
          const double y = reference::e4m3_to_float(b[bi]) * sfb[(static_cast<std::size_t>(g) * nb + n / 128) * kb + k / 128];
          want += x * y;
        }
        const double got = reference::bf16_to_float(d[static_cast<std::size_t>(r) * kN + n]);
        worst = std::max(worst, std::abs(got - want) / std::max(1.0, std::abs(want)));
      }
    }
    start = ends[g];
  }
  std::printf("packed contiguous GEMM: %d experts, %d rows (no padding), largest relative error %.2e\n", kGroups,
              m_total, worst);
  for (void* p : {da, db, dsfa, dsfb, dd, dends}) cudaFree(p);
  return worst < 1e-2 ? 0 : 1;  // BF16 output: about 3 significant digits
}

}  // namespace

int main() {
  using namespace moegemm;
  std::printf("moegemm %s\n", version());
  try {
    // 1. Plans: a dense projection, the packed prefill GEMM (8 experts of about 512 tokens), a masked decode GEMM.
    std::printf("dense 4096x7168x2048: %s\n", plan_fp8_gemm_nt(4096, 7168, 2048).to_string().c_str());
    std::printf("contiguous 8 x 512 tokens: %s\n",
                plan_fp8_gemm_nt(8 * 512, 4096, 7168, 8, 512, GemmLayout::kContiguousGroupEnds).to_string().c_str());
    std::printf("masked 32 x 64 capacity: %s\n",
                plan_fp8_gemm_nt(32 * 64, 4096, 7168, 32, 20, GemmLayout::kMasked).to_string().c_str());
    // 2. Warm-up: the packed call's kernel (segment alignment 1), into the disk cache (MOEGEMM_CACHE_DIR, else the
    //    user's cache folder).
    for (const PrecompiledKernel& k : precompile_fp8_gemm_nt(packed_rows(), kN, kK, kGroups, 0,
                                                             GemmLayout::kContiguousGroupEnds, 1)) {
      std::printf("precompiled %s (%s, %d registers, %d bytes spilled)\n", k.name.c_str(),
                  k.from_disk ? "found in the cache" : "compiled", k.registers, k.spill_bytes);
    }
  } catch (const Error& e) {
    std::fprintf(stderr, "unexpected error: %s\n", e.what());
    return 1;
  }
  // 3. A bad argument: K = 1000 is no multiple of 16, so A's rows would not be 16-byte aligned for TMA.
  try {
    const Fp8Operand a{TensorView::contiguous(nullptr, DType::kFloat8E4M3, {64, 1000}),
                       TensorView::strided(nullptr, DType::kFloat32, {64, 8}, {1, 64})};
    const Fp8Operand b{TensorView::contiguous(nullptr, DType::kFloat8E4M3, {256, 1000}),
                       TensorView::contiguous(nullptr, DType::kFloat32, {2, 8})};
    fp8_gemm_nt(a, b, TensorView::contiguous(nullptr, DType::kBFloat16, {64, 256}), nullptr);
    std::fprintf(stderr, "a bad argument was accepted\n");
    return 1;
  } catch (const Error& e) {
    std::printf("refused before launch: %s\n", e.what());
  }
  // 4. The GEMM itself, where there is a GPU.
  const DeviceInfo device = device_info();
  if (!device.available) {
    std::printf("no GEMM run: %s\n", device.reason.c_str());
    return 0;
  }
  try {
    return run_on_gpu();
  } catch (const Error& e) {
    std::fprintf(stderr, "the GEMM failed: %s\n", e.what());
    return 1;
  }
}
