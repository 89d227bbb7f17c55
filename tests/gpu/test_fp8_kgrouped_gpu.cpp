// Device tests of k_grouped_fp8_gemm_nt (recipe (1,1,128), weight gradients of the experts): FP32
// D[g] = C[g] + A_g @ B_g^T, expert g reducing over its own K_g tokens. a.data / b.data hold, per expert in order, a
// K-major [M, K_g] / [N, K_g] block; sfa [M, sum K / 128] and sfb [N, sum K / 128] are MN-major with strides
// (1, tma_aligned(M|N)); C and D are FP32 [G, M, N].
//
// Against the float64 oracle (reference::k_grouped_gemm_nt of the dequantized operands) for every form of C and
// for sizes on the host or the device; a CUDA graph replayed after the device sizes change in place; out-of-range
// device sizes (clamped: negative -> 0, not a multiple of 128 -> rounded down, past the capacity sum(ks) ->
// truncated) never write outside D; and the anchor's failure case (4 experts K = [256, 128, 128, 256],
// M = N = 2048, one all-zero channel whose scale is forced to 1, 1e-4, 1e-8 or 1e-30) bitwise deterministic over
// 10,000 calls, compared on the device by a small kernel compiled through the library's own JIT.
// Skipped, with the reason, where there is no sm_90 device.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "../cpu/test_jit_support.hpp"
#include "common/gpu_support.hpp"
#include "moegemm/moegemm.hpp"
#include "moegemm/reference.hpp"
#include "runtime/kernel_cache.hpp"
#include "runtime/launch.hpp"
#include "plan/gemm_plan.hpp"

namespace moegemm {
namespace {

using testing::CapturedCall;
using testing::DeviceBuffer;
namespace ref = reference;

// The dense 1D1D test's bound (tests/gpu/test_fp8_1d1d_gpu.cpp), tighter than the anchor's 1e-3: the oracle is the
// product of the very FP8 values and scales the kernel reads, so only accumulation order and FP32 rounding differ.
constexpr double kMaxDiff = 1e-6;

GemmOptions options_1d1d() {
  GemmOptions options;
  options.recipe = kRecipe1x1x128;
  return options;
}

std::int64_t sum_of(const std::vector<std::int64_t>& ks) {
  std::int64_t sum = 0;
  for (const std::int64_t k : ks) sum += k;
  return sum;
}

std::string sizes_text(const std::vector<std::int64_t>& ks) {
  std::string s = "{";
  for (std::size_t i = 0; i < ks.size(); ++i) s += (i ? ", " : "") + std::to_string(ks[i]);
  return s + "}";
}

std::vector<float> random_floats(std::size_t count, std::mt19937& rng, float sigma) {
  std::normal_distribution<float> dist(0.0f, sigma);
  std::vector<float> v(count);
  for (auto& x : v) x = dist(rng);
  return v;
}

// Tokens-first activations or gradients x [tokens, channels], N(0, sigma^2) in float.
std::vector<float> random_tokens(std::int64_t tokens, std::int64_t channels, std::mt19937& rng, float sigma) {
  return random_floats(static_cast<std::size_t>(tokens * channels), rng, sigma);
}

// One k-grouped FP8 operand (A with rows = M, or B with rows = N) in device buffers sized for `capacity` tokens
// (the sum of the host sizes), quantized by the library's reference quantizer (per channel x 128 tokens, the
// anchor's per_channel_cast_to_fp8) and packed K-major per expert.
struct KGroupedOperand {
  std::int64_t rows = 0;
  std::int64_t capacity = 0;
  ref::KGroupedFp8 q;
  std::vector<double> dq;  // dequantized, the same concatenated K-major blocks
  DeviceBuffer values, scales;

  KGroupedOperand(std::int64_t rows_, std::int64_t capacity_)
      : rows(rows_),
        capacity(capacity_),
        values(static_cast<std::size_t>(rows_ * capacity_)),
        scales(static_cast<std::size_t>(tma_aligned_size(rows_, 4) * (capacity_ / 128)) * sizeof(float)) {}

  // Quantizes x [capacity, rows] (tokens first) for experts of sizes ks and uploads it into the same buffers.
  // When sum(ks) < capacity, the tokens past it are packed as one more block that belongs to no expert: real
  // FP8 data and scales that a kernel following the sizes never reads (reading them changes the result).
  void set(const std::vector<float>& x, const std::vector<std::int64_t>& ks) {
    std::vector<std::int64_t> packing = ks;
    const std::int64_t used = sum_of(ks);
    if (used < capacity) packing.push_back(capacity - used);
    q = ref::k_grouped_per_channel_cast(x.data(), packing, rows);
    dq = ref::dequantize(q);
    values.upload(q.values);
    scales.upload(q.scales);
  }

  Fp8Operand view() const {
    return Fp8Operand{
        TensorView::contiguous(values.get(), DType::kFloat8E4M3, {rows * capacity}),
        TensorView::strided(scales.get(), DType::kFloat32, {rows, capacity / 128}, {1, q.scale_col_stride})};
  }
};

// Expert by expert: no NaN left (every element written), D[g] against the oracle, and an expert with K_g = 0
// bitwise equal to C[g] (what D held before the call when C aliases D or is absent).
void expect_experts_match(const std::vector<float>& got, const std::vector<double>& want, const std::vector<float>& c,
                          std::int64_t m, std::int64_t n, const std::vector<std::int64_t>& ks,
                          const std::string& what) {
  const std::size_t per = static_cast<std::size_t>(m * n);
  ASSERT_EQ(got.size(), per * ks.size());
  ASSERT_EQ(want.size(), got.size());
  for (std::size_t g = 0; g < ks.size(); ++g) {
    const float* dg = got.data() + g * per;
    std::size_t nans = 0;
    for (std::size_t i = 0; i < per; ++i) nans += std::isnan(dg[i]) ? 1 : 0;
    EXPECT_EQ(nans, 0u) << what << ": expert " << g << " (K = " << ks[g] << ") has unwritten (NaN) elements";
    if (ks[g] == 0) {
      EXPECT_EQ(0, std::memcmp(dg, c.data() + g * per, per * sizeof(float)))
          << what << ": expert " << g << " has K = 0 and must keep D = C bit for bit";
    } else {
      const std::vector<double> gd(dg, dg + per);
      const double diff = ref::calc_diff(gd.data(), want.data() + g * per, per);
      EXPECT_LT(diff, kMaxDiff) << what << ": expert " << g << " (K = " << ks[g] << ")";
    }
  }
}

enum class CMode { kDistinct, kAliasesD, kNone };
const char* to_string(CMode mode) {
  switch (mode) {
    case CMode::kDistinct:
      return "C distinct";
    case CMode::kAliasesD:
      return "C aliasing D";
    case CMode::kNone:
      return "no C (D +=)";
  }
  return "?";
}

// ---- 1. against the oracle -----------------------------------------------------------------------------------

struct KGroupedShape {
  std::int64_t m, n;
  std::vector<std::int64_t> ks;
};

// Every shape with C distinct, C aliasing D and no C, sizes on the host and on the device, on the planner's tile or
// on `config`.
void expect_shapes_match_oracle(const std::vector<KGroupedShape>& shapes, const KernelConfig* config) {
  for (const KGroupedShape& s : shapes) {
    const std::int64_t groups = static_cast<std::int64_t>(s.ks.size());
    const std::int64_t sum_k = sum_of(s.ks);
    std::mt19937 rng(static_cast<unsigned>(s.m * 131 + s.n * 7 + sum_k));
    KGroupedOperand a(s.m, sum_k), b(s.n, sum_k);
    a.set(random_tokens(sum_k, s.m, rng, 1.0f), s.ks);
    b.set(random_tokens(sum_k, s.n, rng, 0.5f), s.ks);
    const std::size_t d_count = static_cast<std::size_t>(groups * s.m * s.n);
    const std::vector<float> c_host = random_floats(d_count, rng, 4.0f);
    const std::vector<double> c_ref(c_host.begin(), c_host.end());
    const std::vector<double> want = ref::k_grouped_gemm_nt(s.m, s.n, s.ks, a.dq.data(), b.dq.data(), c_ref.data());

    DeviceBuffer ks_dev(s.ks.size() * sizeof(std::int32_t));
    ks_dev.upload(std::vector<std::int32_t>(s.ks.begin(), s.ks.end()));

    for (const bool device_sizes : {false, true}) {
      KGroupedLayout layout;
      layout.ks = s.ks;
      if (device_sizes) layout.ks_device = TensorView::contiguous(ks_dev.get(), DType::kInt32, {groups});
      std::vector<float> distinct;  // C distinct's D: C aliasing D and no C must give the same bits
      for (const CMode mode : {CMode::kDistinct, CMode::kAliasesD, CMode::kNone}) {
        const std::string what = "M " + std::to_string(s.m) + " N " + std::to_string(s.n) + " ks " + sizes_text(s.ks) +
                                 ", " + to_string(mode) + ", " + (device_sizes ? "device sizes" : "host sizes");
        SCOPED_TRACE(what);
        DeviceBuffer d(d_count * sizeof(float)), c(d_count * sizeof(float));
        if (mode == CMode::kDistinct) {
          c.upload(c_host);
          d.fill_bytes(0xFF);  // NaN: every element must be written, the K = 0 experts included
        } else {
          d.upload(c_host);  // C is D (aliased, or implied when no C is given)
        }
        const TensorView dv = TensorView::contiguous(d.get(), DType::kFloat32, {groups, s.m, s.n});
        const TensorView cv =
            TensorView::contiguous(mode == CMode::kDistinct ? c.get() : d.get(), DType::kFloat32, {groups, s.m, s.n});
        GemmOptions options = options_1d1d();
        options.config = config;
        k_grouped_fp8_gemm_nt(a.view(), b.view(), dv, mode == CMode::kNone ? nullptr : &cv, layout, nullptr, options);
        MOEGEMM_CUDA_CHECK(cudaDeviceSynchronize());
        const auto got = d.download_as<float>(d_count);
        expect_experts_match(got, want, c_host, s.m, s.n, s.ks, what);
        EXPECT_TRUE(d.guard_intact()) << "a write landed past the end of D";
        if (mode == CMode::kDistinct) {
          distinct = got;
        } else {
          EXPECT_EQ(0, std::memcmp(distinct.data(), got.data(), d_count * sizeof(float))) << "differs from C distinct";
        }
        if (mode == CMode::kDistinct) {
          const auto c_after = c.download_as<float>(d_count);
          EXPECT_EQ(0, std::memcmp(c_after.data(), c_host.data(), d_count * sizeof(float))) << "C was modified";
          EXPECT_TRUE(c.guard_intact());
        }
      }
    }
  }
}

TEST(Fp8KGroupedGpu, MatchesOracle) {
  MOEGEMM_REQUIRE_GPU();
  expect_shapes_match_oracle(
      {
          {256, 512, {256, 128, 0, 384}},
          {200, 136, {128, 512, 256}},      // M not a multiple of 64, N not a multiple of 16
          {128, 256, {0, 128, 0, 256, 0}},  // empty experts first, between and last
          // Experts on both sides of kFp32ReduceMinK: with C aliasing D (or no C), reduce-adds from 1024 on.
          {192, 320, {1024, 384, 0, 2048}},
      },
      nullptr);
}

// The 192-row tiles of three math warpgroups (the planner's choice for the large k-grouped shapes), forced on
// shapes whose M ends inside a tile (400 = 2 x 192 + 16; 136 < 192) and whose N ends inside one.
TEST(Fp8KGroupedGpu, ThreeWarpgroupTilesMatchOracle) {
  MOEGEMM_REQUIRE_GPU();
  for (const int block_n : {128, 96}) {
    const KernelConfig config = testing::tile_config(192, block_n, 128, 3);
    SCOPED_TRACE("192x" + std::to_string(block_n));
    expect_shapes_match_oracle({{400, 320, {1024, 384, 0, 2048}}, {136, 200, {128, 512, 256}}}, &config);
  }
}

// Pairs of CTAs sharing A along N (1x2 clusters; each multicasts half of A's rows through the expert's descriptor):
// M ending inside a tile and inside a half (400 = 2 x 192 + 16; 136 < 96 + 96), N ending inside the pair's second CTA
// (320 = 256 + 64, 200 = 128 + 72) and before it (104: that CTA only loads A's half for its peer), empty experts.
TEST(Fp8KGroupedGpu, PairsSharingAMatchOracle) {
  MOEGEMM_REQUIRE_GPU();
  for (const int block_m : {192, 128}) {
    KernelConfig config = testing::tile_config(block_m, 128, 128, 3);
    config.cluster_n = 2;
    SCOPED_TRACE(std::to_string(block_m) + "x128, cluster 1x2");
    expect_shapes_match_oracle(
        {{400, 320, {1024, 384, 0, 2048}}, {136, 200, {128, 512, 256}}, {136, 104, {0, 256, 128}}}, &config);
  }
}

// One stage more than fits beside a whole FP32 staging buffer (half staging, behind its switch): the epilogue stores
// each tile in two passes of 64 columns, each loading its own C. N ending in the last tile's first half (320 = 2 x 128
// + 64: the second pass lies wholly outside D), inside its second half (200 = 128 + 72) and in the only tile's second
// half (104); M ending inside a tile; experts on both sides of kFp32ReduceMinK and empty ones.
TEST(Fp8KGroupedGpu, HalfStagingMatchesOracle) {
  MOEGEMM_REQUIRE_GPU();
  test::ScopedEnv half_staging(plan::kHalfStagingVariable, std::string("1"));
  for (const auto& [block_m, stages] : {std::pair{192, 4}, std::pair{128, 5}}) {
    const KernelConfig config = testing::tile_config(block_m, 128, 128, stages);
    ASSERT_TRUE(plan::gemm_half_staged(config, static_cast<int>(kernels::sm90::GemmRecipe::kFp8_1d1d),
                                       kernels::GroupedKind::kKGrouped));
    SCOPED_TRACE(std::to_string(block_m) + "x128x" + std::to_string(stages) + ", half staging");
    expect_shapes_match_oracle(
        {{400, 320, {1024, 384, 0, 2048}}, {136, 200, {128, 512, 256}}, {136, 104, {0, 256, 128}}}, &config);
  }
}

// 128-row tiles (the weight-gradient kernels' two-warpgroup form) on experts of 1 to 5 K blocks and none, with 128
// and 64 columns: K loops that handle two K blocks per step have odd and even counts to get right.
TEST(Fp8KGroupedGpu, RowTilesOf128OnEveryKBlockCountUpTo5) {
  MOEGEMM_REQUIRE_GPU();
  for (const int block_n : {128, 64}) {
    const KernelConfig config = testing::tile_config(128, block_n, 128, 4);
    SCOPED_TRACE("128x" + std::to_string(block_n));
    expect_shapes_match_oracle({{200, 320, {128, 256, 0, 384, 512, 640}}}, &config);
  }
}

// Forced rasterisation bands (KernelConfig::raster_band; docs/scheduler.md): every tile of every expert is computed
// once whatever the band, including bands that do not divide the experts' m-blocks and one taller than an expert.
TEST(Fp8KGroupedGpu, ForcedRasterBandsMatchOracle) {
  MOEGEMM_REQUIRE_GPU();
  for (const int band : {1, 3, 11, 64}) {
    KernelConfig config = testing::tile_config(64, 64, 128, 4);
    config.raster_band = band;
    SCOPED_TRACE("64x64, band " + std::to_string(band));
    expect_shapes_match_oracle({{700, 320, {256, 0, 384}}}, &config);  // 11 x 5 tiles per expert
  }
}

// ---- 2. CUDA graph replayed after the device sizes change --------------------------------------------------------

TEST(Fp8KGroupedGpu, GraphReplayAfterSizesChange) {
  MOEGEMM_REQUIRE_GPU();
  const std::int64_t m = 256, n = 384, groups = 4;
  const std::vector<std::int64_t> ks1 = {256, 128, 128, 256};
  const std::vector<std::int64_t> ks2 = {128, 384, 0, 256};  // same total: the same buffers hold it
  const std::int64_t sum_k = sum_of(ks1);
  ASSERT_EQ(sum_of(ks2), sum_k);
  std::mt19937 rng(77);
  KGroupedOperand a(m, sum_k), b(n, sum_k);
  a.set(random_tokens(sum_k, m, rng, 1.0f), ks1);
  b.set(random_tokens(sum_k, n, rng, 0.5f), ks1);
  const std::size_t d_count = static_cast<std::size_t>(groups * m * n);
  const std::vector<float> c_host = random_floats(d_count, rng, 4.0f);
  const std::vector<double> c_ref(c_host.begin(), c_host.end());
  DeviceBuffer d(d_count * sizeof(float)), c(d_count * sizeof(float)), ks_dev(groups * sizeof(std::int32_t));
  c.upload(c_host);
  ks_dev.upload(std::vector<std::int32_t>(ks1.begin(), ks1.end()));
  const TensorView dv = TensorView::contiguous(d.get(), DType::kFloat32, {groups, m, n});
  const TensorView cv = TensorView::contiguous(c.get(), DType::kFloat32, {groups, m, n});
  KGroupedLayout captured_layout;  // host sizes ks1 (the capacity), sizes read from ks_dev
  captured_layout.ks = ks1;
  captured_layout.ks_device = TensorView::contiguous(ks_dev.get(), DType::kInt32, {groups});

  cudaStream_t stream = nullptr;
  MOEGEMM_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  // Warm up eagerly (a call that would compile inside the capture raises kCaptureError), and check it.
  d.fill_bytes(0xFF);
  MOEGEMM_CUDA_CHECK(cudaDeviceSynchronize());
  k_grouped_fp8_gemm_nt(a.view(), b.view(), dv, &cv, captured_layout, stream, options_1d1d());
  MOEGEMM_CUDA_CHECK(cudaStreamSynchronize(stream));
  expect_experts_match(d.download_as<float>(d_count),
                       ref::k_grouped_gemm_nt(m, n, ks1, a.dq.data(), b.dq.data(), c_ref.data()), c_host, m, n, ks1,
                       "eager warm-up, sizes ks1");

  CapturedCall captured(stream, [&](cudaStream_t s) {
    k_grouped_fp8_gemm_nt(a.view(), b.view(), dv, &cv, captured_layout, s, options_1d1d());
  });

  // New sizes and new inputs, re-packed for them, written in place into the buffers the graph reads.
  a.set(random_tokens(sum_k, m, rng, 1.0f), ks2);
  b.set(random_tokens(sum_k, n, rng, 0.5f), ks2);
  ks_dev.upload(std::vector<std::int32_t>(ks2.begin(), ks2.end()));
  d.fill_bytes(0xFF);
  MOEGEMM_CUDA_CHECK(cudaDeviceSynchronize());  // the uploads and the fill (legacy stream) before `stream` reads them
  captured.replay();
  const auto replayed = d.download_as<float>(d_count);
  const std::vector<double> want2 = ref::k_grouped_gemm_nt(m, n, ks2, a.dq.data(), b.dq.data(), c_ref.data());
  expect_experts_match(replayed, want2, c_host, m, n, ks2, "graph replayed after the sizes changed to ks2");
  EXPECT_TRUE(d.guard_intact());

  // A fresh eager call on the same inputs: with the host sizes updated too, and with the captured layout (host ks1,
  // the device holding ks2: the kernel reads the sizes from the device). Both bitwise equal to the replay.
  KGroupedLayout fresh_layout = captured_layout;
  fresh_layout.ks = ks2;
  for (const KGroupedLayout* layout : {&fresh_layout, &captured_layout}) {
    const char* what = layout == &fresh_layout ? "eager, host sizes ks2" : "eager, host sizes ks1, device ks2";
    d.fill_bytes(0xFF);
    MOEGEMM_CUDA_CHECK(cudaDeviceSynchronize());
    k_grouped_fp8_gemm_nt(a.view(), b.view(), dv, &cv, *layout, stream, options_1d1d());
    MOEGEMM_CUDA_CHECK(cudaStreamSynchronize(stream));
    const auto eager = d.download_as<float>(d_count);
    EXPECT_EQ(0, std::memcmp(replayed.data(), eager.data(), d_count * sizeof(float)))
        << what << ": differs from the graph replay";
    expect_experts_match(eager, want2, c_host, m, n, ks2, what);
  }
  EXPECT_TRUE(d.guard_intact());
  cudaStreamDestroy(stream);
}

// In place (C aliasing D), captured with experts on both sides of kFp32ReduceMinK and replayed after the device
// sizes moved them across it: each tile decides from the size it reads whether it loads C or adds into D by TMA
// reduce-adds. The replay equals a fresh eager call bit for bit, and the oracle.
TEST(Fp8KGroupedGpu, InPlaceGraphReplayAcrossTheReduceThreshold) {
  MOEGEMM_REQUIRE_GPU();
  const std::int64_t m = 128, n = 256, groups = 3;
  const std::vector<std::int64_t> ks1 = {1024, 256, 768};
  const std::vector<std::int64_t> ks2 = {256, 1280, 512};  // same total
  const std::int64_t sum_k = sum_of(ks1);
  ASSERT_EQ(sum_of(ks2), sum_k);
  std::mt19937 rng(78);
  KGroupedOperand a(m, sum_k), b(n, sum_k);
  a.set(random_tokens(sum_k, m, rng, 1.0f), ks1);
  b.set(random_tokens(sum_k, n, rng, 0.5f), ks1);
  const std::size_t d_count = static_cast<std::size_t>(groups * m * n);
  const std::vector<float> c_host = random_floats(d_count, rng, 4.0f);
  const std::vector<double> c_ref(c_host.begin(), c_host.end());
  DeviceBuffer d(d_count * sizeof(float)), ks_dev(groups * sizeof(std::int32_t));
  ks_dev.upload(std::vector<std::int32_t>(ks1.begin(), ks1.end()));
  const TensorView dv = TensorView::contiguous(d.get(), DType::kFloat32, {groups, m, n});
  KGroupedLayout layout;
  layout.ks = ks1;
  layout.ks_device = TensorView::contiguous(ks_dev.get(), DType::kInt32, {groups});

  cudaStream_t stream = nullptr;
  MOEGEMM_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  d.upload(c_host);  // D starts as C
  MOEGEMM_CUDA_CHECK(cudaDeviceSynchronize());
  k_grouped_fp8_gemm_nt(a.view(), b.view(), dv, &dv, layout, stream, options_1d1d());  // eager warm-up
  MOEGEMM_CUDA_CHECK(cudaStreamSynchronize(stream));
  expect_experts_match(d.download_as<float>(d_count),
                       ref::k_grouped_gemm_nt(m, n, ks1, a.dq.data(), b.dq.data(), c_ref.data()), c_host, m, n, ks1,
                       "in place, eager, sizes ks1");

  CapturedCall captured(stream, [&](cudaStream_t s) {
    k_grouped_fp8_gemm_nt(a.view(), b.view(), dv, &dv, layout, s, options_1d1d());
  });

  a.set(random_tokens(sum_k, m, rng, 1.0f), ks2);
  b.set(random_tokens(sum_k, n, rng, 0.5f), ks2);
  ks_dev.upload(std::vector<std::int32_t>(ks2.begin(), ks2.end()));
  d.upload(c_host);
  MOEGEMM_CUDA_CHECK(cudaDeviceSynchronize());
  captured.replay();
  const auto replayed = d.download_as<float>(d_count);
  expect_experts_match(replayed, ref::k_grouped_gemm_nt(m, n, ks2, a.dq.data(), b.dq.data(), c_ref.data()), c_host,
                       m, n, ks2, "in place, graph replayed after the sizes changed to ks2");
  d.upload(c_host);
  MOEGEMM_CUDA_CHECK(cudaDeviceSynchronize());
  k_grouped_fp8_gemm_nt(a.view(), b.view(), dv, &dv, layout, stream, options_1d1d());
  MOEGEMM_CUDA_CHECK(cudaStreamSynchronize(stream));
  const auto eager = d.download_as<float>(d_count);
  EXPECT_EQ(0, std::memcmp(replayed.data(), eager.data(), d_count * sizeof(float)))
      << "in place: the replay differs from an eager call";
  EXPECT_TRUE(d.guard_intact());
  cudaStreamDestroy(stream);
}

// ---- 3. out-of-range device sizes ----------------------------------------------------------------------------

// The sizes a kernel must use for device values `raw` with capacity sum(host ks): negative -> 0, not a multiple
// of 128 -> rounded down, and each expert truncated to what is left of the capacity after the experts before it.
std::vector<std::int64_t> effective_sizes(const std::vector<std::int32_t>& raw, std::int64_t capacity) {
  std::vector<std::int64_t> eff;
  std::int64_t offset = 0;
  for (const std::int32_t v : raw) {
    std::int64_t k = v < 0 ? 0 : static_cast<std::int64_t>(v) / 128 * 128;
    if (k > capacity - offset) k = capacity - offset;
    eff.push_back(k);
    offset += k;
  }
  return eff;
}

// D inside a larger allocation: kPad sentinel bytes before it and after it (plus DeviceBuffer's own guard zone
// after the whole slab), so that a write anywhere near D, before or after, shows.
struct FencedOutput {
  static constexpr std::size_t kPad = 64 * 1024;
  static constexpr unsigned char kFence = 0x5A;
  std::size_t bytes;
  DeviceBuffer slab;

  explicit FencedOutput(std::size_t bytes_) : bytes(bytes_), slab(bytes_ + 2 * kPad) { slab.fill_bytes(kFence); }
  float* d() const { return reinterpret_cast<float*>(slab.as<char>() + kPad); }
  bool fences_intact() const {
    std::vector<unsigned char> pad(kPad);
    for (const std::size_t at : {std::size_t{0}, kPad + bytes}) {
      testing::cuda_check(cudaMemcpy(pad.data(), slab.as<char>() + at, kPad, cudaMemcpyDeviceToHost), "cudaMemcpy(fence)");
      for (const unsigned char byte : pad) {
        if (byte != kFence) return false;
      }
    }
    return slab.guard_intact();
  }
};

template <typename T>
bool device_equals(const DeviceBuffer& buffer, const std::vector<T>& host) {
  const auto now = buffer.download_as<T>(host.size());
  return std::memcmp(now.data(), host.data(), host.size() * sizeof(T)) == 0 && buffer.guard_intact();
}

TEST(Fp8KGroupedGpu, OutOfRangeDeviceSizesNeverWriteOutsideD) {
  MOEGEMM_REQUIRE_GPU();
  const std::int64_t m = 192, n = 160, groups = 3;
  const std::vector<std::int64_t> host_ks = {256, 128, 384};
  const std::int64_t capacity = sum_of(host_ks);
  const std::vector<std::vector<std::int32_t>> cases = {
      {-128, 256, 128},             // negative -> 0
      {INT_MIN, -1, 384},           // negatives, the most negative int32 included
      {512, 512, 512},              // sum past the capacity: {512, 256, 0}
      {INT_MAX, INT_MAX, INT_MAX},  // no overflow: {768, 0, 0}
      {256, 128, 512},              // the last expert one block past the capacity
      {200, 300, 129},              // not multiples of 128: {128, 256, 128}
      {127, 1000, -5},              // {0, 768, 0}
      {0, 0, 0},                    // nothing to do: D = C
  };
  std::mt19937 rng(4242);
  KGroupedOperand a(m, capacity), b(n, capacity);
  const std::size_t d_count = static_cast<std::size_t>(groups * m * n);
  const std::vector<float> c_host = random_floats(d_count, rng, 4.0f);
  const std::vector<double> c_ref(c_host.begin(), c_host.end());
  DeviceBuffer c(d_count * sizeof(float)), ks_dev(groups * sizeof(std::int32_t));
  c.upload(c_host);
  KGroupedLayout layout;
  layout.ks = host_ks;
  layout.ks_device = TensorView::contiguous(ks_dev.get(), DType::kInt32, {groups});

  for (const auto& raw : cases) {
    const std::vector<std::int64_t> eff = effective_sizes(raw, capacity);
    // Packed for the sizes the kernel must use; the tokens past them are real data no expert owns.
    a.set(random_tokens(capacity, m, rng, 1.0f), eff);
    b.set(random_tokens(capacity, n, rng, 0.5f), eff);
    ks_dev.upload(raw);
    const std::vector<double> want = ref::k_grouped_gemm_nt(m, n, eff, a.dq.data(), b.dq.data(), c_ref.data());
    for (const CMode mode : {CMode::kDistinct, CMode::kNone}) {
      std::string what = "device sizes {";
      for (std::size_t i = 0; i < raw.size(); ++i) what += (i ? ", " : "") + std::to_string(raw[i]);
      what += "} (effective " + sizes_text(eff) + "), " + to_string(mode);
      SCOPED_TRACE(what);
      FencedOutput out(d_count * sizeof(float));
      if (mode == CMode::kDistinct) {
        testing::cuda_check(cudaMemset(out.d(), 0xFF, out.bytes), "cudaMemset(D)");
      } else {
        testing::cuda_check(cudaMemcpy(out.d(), c_host.data(), out.bytes, cudaMemcpyHostToDevice), "cudaMemcpy(D)");
      }
      const TensorView dv = TensorView::contiguous(out.d(), DType::kFloat32, {groups, m, n});
      const TensorView cv = TensorView::contiguous(c.get(), DType::kFloat32, {groups, m, n});
      k_grouped_fp8_gemm_nt(a.view(), b.view(), dv, mode == CMode::kDistinct ? &cv : nullptr, layout, nullptr,
                            options_1d1d());
      MOEGEMM_CUDA_CHECK(cudaDeviceSynchronize());  // a fault (out-of-bounds access) surfaces here
      std::vector<float> got(d_count);
      testing::cuda_check(cudaMemcpy(got.data(), out.d(), out.bytes, cudaMemcpyDeviceToHost), "cudaMemcpy(D)");
      expect_experts_match(got, want, c_host, m, n, eff, what);
      EXPECT_TRUE(out.fences_intact()) << "a write landed outside D";
      // Only D may change: operands, scales, C and the sizes are as uploaded.
      EXPECT_TRUE(device_equals(a.values, a.q.values)) << "A modified";
      EXPECT_TRUE(device_equals(a.scales, a.q.scales)) << "SFA modified";
      EXPECT_TRUE(device_equals(b.values, b.q.values)) << "B modified";
      EXPECT_TRUE(device_equals(b.scales, b.q.scales)) << "SFB modified";
      EXPECT_TRUE(device_equals(c, c_host)) << "C modified";
      EXPECT_TRUE(device_equals(ks_dev, raw)) << "ks_device modified";
    }
  }
}

// ---- 4. the anchor's failure case: bitwise deterministic over 10,000 calls -----------------------------------------

// Adds to *count the number of 32-bit words in which a and b differ. Compiled at run time through the library's
// JIT: the tests are plain C++ (g++, cudart_static) and cannot hold device code.
jit::KernelSpec mismatch_counter_spec() {
  jit::KernelSpec spec;
  spec.name = "test_count_mismatches";
  spec.name_expression = "moegemm_tests::count_mismatches<256>";
  spec.source = R"(
namespace moegemm_tests {
struct alignas(16) Words { unsigned x, y, z, w; };
template <int kThreads>
__global__ void __launch_bounds__(kThreads) count_mismatches(const unsigned* a, const unsigned* b, long long n,
                                                              unsigned long long* count) {
  unsigned long long local = 0;
  const long long first = static_cast<long long>(blockIdx.x) * kThreads + threadIdx.x;
  const long long step = static_cast<long long>(gridDim.x) * kThreads;
  const long long n4 = n / 4;
  const Words* a4 = reinterpret_cast<const Words*>(a);
  const Words* b4 = reinterpret_cast<const Words*>(b);
  for (long long i = first; i < n4; i += step) {
    const Words x = a4[i], y = b4[i];
    local += (x.x != y.x) + (x.y != y.y) + (x.z != y.z) + (x.w != y.w);
  }
  for (long long i = n4 * 4 + first; i < n; i += step) local += a[i] != b[i];
  for (int offset = 16; offset > 0; offset /= 2) local += __shfl_down_sync(0xffffffffu, local, offset);
  if (threadIdx.x % 32 == 0 && local != 0) atomicAdd(count, local);
}
}  // namespace moegemm_tests
)";
  return spec;
}

// An accumulating device counter of differing words between two buffers; compare() only enqueues on the stream.
class MismatchCounter {
 public:
  explicit MismatchCounter(cudaStream_t stream)
      : stream_(stream),
        count_(sizeof(unsigned long long)),
        kernel_(&jit::get_kernel(
            "tests.kgrouped.count_mismatches", [] { return mismatch_counter_spec(); }, stream)) {
    const int sms = device_info().sm_count;
    blocks_ = static_cast<unsigned>(sms > 0 ? 4 * sms : 528);
    reset();
  }
  void reset() {
    testing::cuda_check(cudaMemsetAsync(count_.get(), 0, sizeof(unsigned long long), stream_), "cudaMemsetAsync(counter)");
  }
  void compare(const void* a, const void* b, std::size_t words) {
    const void* pa = a;
    const void* pb = b;
    long long n = static_cast<long long>(words);
    void* pc = count_.get();
    void* args[] = {&pa, &pb, &n, &pc};
    jit::LaunchConfig config;
    config.grid[0] = blocks_;
    config.block[0] = 256;
    jit::launch(*kernel_, config, args, stream_);
  }
  unsigned long long read() {
    unsigned long long value = 0;
    testing::cuda_check(cudaMemcpyAsync(&value, count_.get(), sizeof(value), cudaMemcpyDeviceToHost, stream_),
            "cudaMemcpyAsync(counter)");
    testing::cuda_check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
    return value;
  }

 private:
  cudaStream_t stream_;
  DeviceBuffer count_;
  const jit::Kernel* kernel_;
  unsigned blocks_ = 0;
};

double l2_norm(const double* x, std::size_t n) {
  double s = 0;
  for (std::size_t i = 0; i < n; ++i) s += x[i] * x[i];
  return std::sqrt(s);
}

// The anchor's wgrad failure case. In D[g] = A_g @ B_g^T = grad_y_g^T @ x_g (the weight gradient [out, in] of
// expert g), A is grad_y: grad_y is tokens-first [sum K, M] with M = output channels, and A_g is its K-major
// [M, K_g] transpose. So channel (column) 0 of grad_y is row 0 of A, and its per-channel x 128-token scales are
// sfa[0, kb]; an all-zero channel makes row 0 of D[g] exactly C[g]'s row 0. It sits in expert 1, the first of the
// two 128-token experts (tokens 256..383, scale block kb = 2), and its scale sfa[0, 2] (the quantizer's
// amax-floor value 1e-4 / 448 for an all-zero group) is overwritten with each constant in turn.
TEST(Fp8KGroupedGpu, DeterministicOnTheAnchorFailureCase) {
  MOEGEMM_REQUIRE_GPU();
  // Per scale value, the first included. MOEGEMM_TEST_DETERMINISM_CALLS lowers it for runs under
  // compute-sanitizer (where 40,000 calls would take hours); the test says so when it does.
  int kCalls = 10000;
  if (const char* env = std::getenv("MOEGEMM_TEST_DETERMINISM_CALLS"); env != nullptr && std::atoi(env) >= 2) {
    kCalls = std::atoi(env);
    std::printf("DeterministicOnTheAnchorFailureCase: %d calls per scale value (MOEGEMM_TEST_DETERMINISM_CALLS)\n",
                kCalls);
  }
  const int kCheckEvery = std::min(1000, kCalls);  // read the counter this often, to say where a mismatch began
  const std::int64_t m = 2048, n = 2048, groups = 4;
  const std::vector<std::int64_t> ks = {256, 128, 128, 256};
  const std::int64_t sum_k = sum_of(ks);
  const std::int64_t zero_expert = 1, zero_channel = 0, zero_token_begin = 256, zero_token_end = 384;
  const std::int64_t zero_block = zero_token_begin / 128;

  // BF16 inputs: values drawn in float, then rounded to bfloat16 (what the anchor's bf16 tensors hold).
  std::mt19937 rng(20240607);
  std::normal_distribution<float> unit(0.0f, 1.0f);
  std::vector<float> grad_y(static_cast<std::size_t>(sum_k * m)), act(static_cast<std::size_t>(sum_k * n));
  for (auto& v : grad_y) v = ref::bf16_to_float(ref::float_to_bf16(unit(rng) * 1e-7f));
  for (auto& v : act) v = ref::bf16_to_float(ref::float_to_bf16(unit(rng) * 0.4f));
  for (std::int64_t t = zero_token_begin; t < zero_token_end; ++t)
    grad_y[static_cast<std::size_t>(t * m + zero_channel)] = 0.0f;

  KGroupedOperand a(m, sum_k), b(n, sum_k);
  a.set(grad_y, ks);  // the library's reference quantizer: per channel x 128 tokens, amax floor 1e-4
  b.set(act, ks);
  // The zero channel really is zero in A's expert-1 block (row 0 of the K-major [M, 128] block).
  for (std::int64_t t = 0; t < zero_token_end - zero_token_begin; ++t) {
    const std::uint8_t code = a.q.values[static_cast<std::size_t>(m * zero_token_begin + zero_channel * 128 + t)];
    ASSERT_TRUE(code == 0x00 || code == 0x80) << "token " << t;
  }
  const std::size_t zero_scale_at = static_cast<std::size_t>(zero_block * a.q.scale_col_stride + zero_channel);

  // C distinct and zero: every call computes D = A @ B^T from the same inputs.
  const std::size_t d_count = static_cast<std::size_t>(groups * m * n);
  const std::size_t per = static_cast<std::size_t>(m * n);
  const std::vector<double> want = ref::k_grouped_gemm_nt(m, n, ks, a.dq.data(), b.dq.data());  // 0 * scale = 0
  const double want_norm = l2_norm(want.data(), want.size());
  ASSERT_GT(want_norm, 0.0);

  DeviceBuffer d(d_count * sizeof(float)), first(d_count * sizeof(float)), c(d_count * sizeof(float));
  c.fill_bytes(0);
  const TensorView dv = TensorView::contiguous(d.get(), DType::kFloat32, {groups, m, n});
  const TensorView cv = TensorView::contiguous(c.get(), DType::kFloat32, {groups, m, n});
  // Sizes on the host and on the device, as the anchor's k_grouped_fp8_gemm_nt_contiguous(..., ks, ks_tensor) call
  // (and this library's Python drop-in) passes them.
  DeviceBuffer ks_dev(ks.size() * sizeof(std::int32_t));
  ks_dev.upload(std::vector<std::int32_t>(ks.begin(), ks.end()));
  KGroupedLayout layout;
  layout.ks = ks;
  layout.ks_device = TensorView::contiguous(ks_dev.get(), DType::kInt32, {groups});
  cudaStream_t stream = nullptr;
  MOEGEMM_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  MismatchCounter counter(stream);

  for (const float scale : {1.0f, 1e-4f, 1e-8f, 1e-30f}) {
    std::ostringstream what;
    what << "the zero channel's scale set to " << scale;
    SCOPED_TRACE(what.str());
    std::vector<float> sfa = a.q.scales;
    sfa[zero_scale_at] = scale;
    a.scales.upload(sfa);
    MOEGEMM_CUDA_CHECK(cudaDeviceSynchronize());

    // The first call, checked on the host.
    MOEGEMM_CUDA_CHECK(cudaMemsetAsync(d.get(), 0xFF, d.bytes(), stream));
    k_grouped_fp8_gemm_nt(a.view(), b.view(), dv, &cv, layout, stream, options_1d1d());
    MOEGEMM_CUDA_CHECK(cudaStreamSynchronize(stream));
    const auto got = d.download_as<float>(d_count);
    std::vector<double> got_d(got.begin(), got.end());
    std::size_t non_finite = 0;
    for (const float v : got) non_finite += std::isfinite(v) ? 0 : 1;
    ASSERT_EQ(non_finite, 0u) << "NaN or infinity in the first output";
    const double got_norm = l2_norm(got_d.data(), got_d.size());
    EXPECT_LE(std::fabs(got_norm - want_norm), 0.01 * want_norm)
        << "norm " << got_norm << " against the float64 reference's " << want_norm;
    for (std::size_t g = 0; g < static_cast<std::size_t>(groups); ++g) {
      EXPECT_LT(ref::calc_diff(got_d.data() + g * per, want.data() + g * per, per), kMaxDiff) << "expert " << g;
    }
    const float* zero_row = got.data() + zero_expert * per + zero_channel * n;
    std::size_t nonzero = 0;
    for (std::int64_t j = 0; j < n; ++j) nonzero += zero_row[j] == 0.0f ? 0 : 1;
    EXPECT_EQ(nonzero, 0u) << "row " << zero_channel << " of D[" << zero_expert
                           << "] comes from an all-zero channel and C = 0: it must be 0";
    MOEGEMM_CUDA_CHECK(cudaMemcpyAsync(first.get(), d.get(), d.bytes(), cudaMemcpyDeviceToDevice, stream));

    // The counter itself can fail: equal buffers count 0, one flipped word counts 1.
    counter.reset();
    counter.compare(first.get(), d.get(), d_count);
    ASSERT_EQ(counter.read(), 0u) << "the comparison kernel counts mismatches between equal buffers";
    const float flipped = got[12345] + 1.0f;
    MOEGEMM_CUDA_CHECK(cudaMemcpyAsync(d.as<float>() + 12345, &flipped, sizeof(float), cudaMemcpyHostToDevice, stream));
    counter.compare(first.get(), d.get(), d_count);
    ASSERT_EQ(counter.read(), 1u) << "the comparison kernel missed (or over-counted) one changed word";
    counter.reset();

    // The other 9,999 calls, each into a NaN-poisoned D, each compared with the first on the device.
    for (int call = 1; call < kCalls; ++call) {
      MOEGEMM_CUDA_CHECK(cudaMemsetAsync(d.get(), 0xFF, d.bytes(), stream));
      k_grouped_fp8_gemm_nt(a.view(), b.view(), dv, &cv, layout, stream, options_1d1d());
      counter.compare(first.get(), d.get(), d_count);
      if ((call + 1) % kCheckEvery == 0 || call + 1 == kCalls) {
        const unsigned long long mismatches = counter.read();
        ASSERT_EQ(mismatches, 0u) << mismatches << " words differ from the first output, accumulated over calls 2.."
                                  << call + 1 << " of " << kCalls;
      }
    }
    EXPECT_TRUE(d.guard_intact());
  }
  EXPECT_TRUE(device_equals(c, std::vector<float>(d_count, 0.0f))) << "C was modified";
  cudaStreamDestroy(stream);
}

}  // namespace
}  // namespace moegemm
