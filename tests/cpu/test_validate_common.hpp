// Shared pieces of the validation tests: well-formed argument sets for every family (built on fake, aligned
// addresses that are never dereferenced) and an assertion that a call fails with a given code and message parts.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <string>

#include "moegemm/error.hpp"
#include "moegemm/gemm.hpp"
#include "validate/validate.hpp"

namespace moegemm::validate::testing {

// Distinct, widely spaced fake device addresses: no two tensors of a test overlap unless a test says so.
inline void* fake(std::uintptr_t address) { return reinterpret_cast<void*>(address); }
inline constexpr std::uintptr_t kA = 0x10000000, kSfa = 0x18000000, kB = 0x20000000, kSfb = 0x28000000,
                                kD = 0x30000000, kC = 0x40000000, kIndex = 0x50000000, kKsDevice = 0x58000000;

inline std::int64_t tma4(std::int64_t x) { return tma_aligned_size(x, 4); }

// Runs `call`, which must throw moegemm::Error with `code` and a message containing every part.
inline void expect_error(const std::function<void()>& call, ErrorCode code, std::initializer_list<std::string> parts) {
  try {
    call();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    const std::string message = e.what();
    for (const auto& part : parts) {
      EXPECT_NE(message.find(part), std::string::npos) << "message \"" << message << "\" lacks \"" << part << "\"";
    }
    return;
  }
  ADD_FAILURE() << "no moegemm::Error was thrown";
}

#define EXPECT_INVALID(call, ...)                                                              \
  do {                                                                                         \
    SCOPED_TRACE(#call);                                                                       \
    ::moegemm::validate::testing::expect_error([&] { (void)(call); },                          \
                                               ::moegemm::ErrorCode::kInvalidArgument, {__VA_ARGS__}); \
  } while (0)

#define EXPECT_UNSUPPORTED(call, ...)                                                          \
  do {                                                                                         \
    SCOPED_TRACE(#call);                                                                       \
    ::moegemm::validate::testing::expect_error([&] { (void)(call); },                          \
                                               ::moegemm::ErrorCode::kUnsupported, {__VA_ARGS__}); \
  } while (0)

// ---- FP8 argument sets ------------------------------------------------------------------------------------------

struct Fp8Args {
  Fp8Operand a, b;
  TensorView d;
  TensorView c;
  bool use_c = false;
  ContiguousLayout contiguous;
  MaskedLayout masked;
  KGroupedLayout kgrouped;
  GemmOptions options;
  const TensorView* c_ptr() const { return use_c ? &c : nullptr; }
};

inline std::int64_t blocks(std::int64_t x) { return (x + 127) / 128; }

// fp8_gemm_nt: M = 250 (not a multiple of 4, so the SFA padding is visible), N = 512, K = 384.
inline Fp8Args fp8_dense(std::int64_t m = 250, std::int64_t n = 512, std::int64_t k = 384) {
  Fp8Args x;
  x.a.data = TensorView::contiguous(fake(kA), DType::kFloat8E4M3, {m, k});
  x.a.scales = TensorView::strided(fake(kSfa), DType::kFloat32, {m, blocks(k)}, {1, tma4(m)});
  x.b.data = TensorView::contiguous(fake(kB), DType::kFloat8E4M3, {n, k});
  x.b.scales = TensorView::contiguous(fake(kSfb), DType::kFloat32, {blocks(n), blocks(k)});
  x.d = TensorView::contiguous(fake(kD), DType::kBFloat16, {m, n});
  return x;
}

// m_grouped_fp8_gemm_nt_contiguous: M_total = 512 rows, G = 4 experts.
inline Fp8Args fp8_contiguous(std::int64_t m = 512, std::int64_t groups = 4, std::int64_t n = 512,
                              std::int64_t k = 384) {
  Fp8Args x = fp8_dense(m, n, k);
  x.b.data = TensorView::contiguous(fake(kB), DType::kFloat8E4M3, {groups, n, k});
  x.b.scales = TensorView::contiguous(fake(kSfb), DType::kFloat32, {groups, blocks(n), blocks(k)});
  x.contiguous.form = ContiguousLayout::Form::kRowToGroup;
  x.contiguous.index = TensorView::contiguous(fake(kIndex), DType::kInt32, {m});
  return x;
}

// m_grouped_fp8_gemm_nt_masked: G = 4 slabs of capacity 30 rows (not a multiple of any tile).
inline Fp8Args fp8_masked(std::int64_t groups = 4, std::int64_t cap = 30, std::int64_t n = 512,
                          std::int64_t k = 384) {
  Fp8Args x;
  x.a.data = TensorView::contiguous(fake(kA), DType::kFloat8E4M3, {groups, cap, k});
  x.a.scales = TensorView::strided(fake(kSfa), DType::kFloat32, {groups, cap, blocks(k)},
                                   {tma4(cap) * blocks(k), 1, tma4(cap)});
  x.b.data = TensorView::contiguous(fake(kB), DType::kFloat8E4M3, {groups, n, k});
  x.b.scales = TensorView::contiguous(fake(kSfb), DType::kFloat32, {groups, blocks(n), blocks(k)});
  x.d = TensorView::contiguous(fake(kD), DType::kBFloat16, {groups, cap, n});
  x.masked.valid_rows = TensorView::contiguous(fake(kIndex), DType::kInt32, {groups});
  return x;
}

// fp8_gemm_nt_1d1d: M = 250, N = 130 (both padded in the scales), K = 512.
inline Fp8Args fp8_1d1d(std::int64_t m = 250, std::int64_t n = 130, std::int64_t k = 512) {
  Fp8Args x;
  x.a.data = TensorView::contiguous(fake(kA), DType::kFloat8E4M3, {m, k});
  x.a.scales = TensorView::strided(fake(kSfa), DType::kFloat32, {m, k / 128}, {1, tma4(m)});
  x.b.data = TensorView::contiguous(fake(kB), DType::kFloat8E4M3, {n, k});
  x.b.scales = TensorView::strided(fake(kSfb), DType::kFloat32, {n, k / 128}, {1, tma4(n)});
  // FP32 rows of 130 columns are not 16-byte multiples: D and C rows are padded to 132.
  x.d = TensorView::strided(fake(kD), DType::kFloat32, {m, n}, {tma4(n), 1});
  x.c = TensorView::strided(fake(kC), DType::kFloat32, {m, n}, {tma4(n), 1});
  return x;
}

// k_grouped_fp8_gemm_nt: 3 experts with K = 256, 0, 128 tokens; M = 256, N = 128.
inline Fp8Args fp8_k_grouped(std::int64_t m = 256, std::int64_t n = 128) {
  Fp8Args x;
  x.kgrouped.ks = {256, 0, 128};
  const std::int64_t sum_k = 384, groups = 3;
  x.a.data = TensorView::contiguous(fake(kA), DType::kFloat8E4M3, {m * sum_k});
  x.a.scales = TensorView::strided(fake(kSfa), DType::kFloat32, {m, sum_k / 128}, {1, tma4(m)});
  x.b.data = TensorView::contiguous(fake(kB), DType::kFloat8E4M3, {n * sum_k});
  x.b.scales = TensorView::strided(fake(kSfb), DType::kFloat32, {n, sum_k / 128}, {1, tma4(n)});
  x.d = TensorView::contiguous(fake(kD), DType::kFloat32, {groups, m, n});
  x.c = TensorView::contiguous(fake(kC), DType::kFloat32, {groups, m, n});
  return x;
}

// ---- BF16 argument sets -----------------------------------------------------------------------------------------

struct Bf16Args {
  TensorView a, b, d, c;
  bool use_c = false;
  ContiguousLayout contiguous;
  MaskedLayout masked;
  KGroupedLayout kgrouped;
  GemmOptions options;
  const TensorView* c_ptr() const { return use_c ? &c : nullptr; }
};

// bf16_gemm NT: M = 256, N = 512, K = 320 (not a multiple of 64: BF16 needs only 16-byte rows).
inline Bf16Args bf16_dense(std::int64_t m = 256, std::int64_t n = 512, std::int64_t k = 320) {
  Bf16Args x;
  x.a = TensorView::contiguous(fake(kA), DType::kBFloat16, {m, k});
  x.b = TensorView::contiguous(fake(kB), DType::kBFloat16, {n, k});
  x.d = TensorView::contiguous(fake(kD), DType::kBFloat16, {m, n});
  x.c = TensorView::contiguous(fake(kC), DType::kBFloat16, {m, n});
  return x;
}

// m_grouped_bf16_gemm_contiguous: M_total = 512, G = 4, N = 256, K = 200.
inline Bf16Args bf16_contiguous(std::int64_t m = 512, std::int64_t groups = 4, std::int64_t n = 256,
                                std::int64_t k = 200) {
  Bf16Args x;
  x.a = TensorView::contiguous(fake(kA), DType::kBFloat16, {m, k});
  x.b = TensorView::contiguous(fake(kB), DType::kBFloat16, {groups, n, k});
  x.d = TensorView::contiguous(fake(kD), DType::kBFloat16, {m, n});
  x.contiguous.form = ContiguousLayout::Form::kGroupEnds;
  x.contiguous.index = TensorView::contiguous(fake(kIndex), DType::kInt32, {groups});
  return x;
}

// m_grouped_bf16_gemm_masked: G = 8, capacity 32, N = K = 256.
inline Bf16Args bf16_masked(std::int64_t groups = 8, std::int64_t cap = 32, std::int64_t n = 256,
                            std::int64_t k = 256) {
  Bf16Args x;
  x.a = TensorView::contiguous(fake(kA), DType::kBFloat16, {groups, cap, k});
  x.b = TensorView::contiguous(fake(kB), DType::kBFloat16, {groups, n, k});
  x.d = TensorView::contiguous(fake(kD), DType::kBFloat16, {groups, cap, n});
  x.masked.valid_rows = TensorView::contiguous(fake(kIndex), DType::kInt32, {groups});
  return x;
}

// k_grouped_bf16_gemm_tn: experts with K = 128, 256, 0, 128 tokens; M = 512, N = 256.
inline Bf16Args bf16_k_grouped(std::int64_t m = 512, std::int64_t n = 256) {
  Bf16Args x;
  x.kgrouped.ks = {128, 256, 0, 128};
  const std::int64_t sum_k = 512, groups = 4;
  x.a = TensorView::contiguous(fake(kA), DType::kBFloat16, {sum_k, m});
  x.b = TensorView::contiguous(fake(kB), DType::kBFloat16, {sum_k, n});
  x.d = TensorView::contiguous(fake(kD), DType::kFloat32, {groups, m, n});
  x.c = TensorView::contiguous(fake(kC), DType::kFloat32, {groups, m, n});
  return x;
}

// Each family's validator called with an argument set.
inline GemmProblem run_dense(const Fp8Args& x) { return check_fp8_gemm_nt(x.a, x.b, x.d, x.options); }
inline GemmProblem run_contiguous(const Fp8Args& x) {
  return check_m_grouped_fp8_gemm_nt_contiguous(x.a, x.b, x.d, x.contiguous, x.options);
}
inline GemmProblem run_masked(const Fp8Args& x) {
  return check_m_grouped_fp8_gemm_nt_masked(x.a, x.b, x.d, x.masked, x.options);
}
inline GemmProblem run_1d1d(const Fp8Args& x) { return check_fp8_gemm_nt_1d1d(x.a, x.b, x.d, x.c_ptr(), x.options); }
inline GemmProblem run_k_grouped(const Fp8Args& x) {
  return check_k_grouped_fp8_gemm_nt(x.a, x.b, x.d, x.c_ptr(), x.kgrouped, x.options);
}
inline GemmProblem run_bf16(const Bf16Args& x) { return check_bf16_gemm(x.a, x.b, x.d, x.c_ptr(), x.options); }
inline GemmProblem run_bf16_contiguous(const Bf16Args& x) {
  return check_m_grouped_bf16_gemm_contiguous(x.a, x.b, x.d, x.contiguous, x.options);
}
inline GemmProblem run_bf16_masked(const Bf16Args& x) {
  return check_m_grouped_bf16_gemm_masked(x.a, x.b, x.d, x.masked, x.options);
}
inline GemmProblem run_bf16_k_grouped(const Bf16Args& x) {
  return check_k_grouped_bf16_gemm_tn(x.a, x.b, x.d, x.c_ptr(), x.kgrouped, x.options);
}

}  // namespace moegemm::validate::testing
