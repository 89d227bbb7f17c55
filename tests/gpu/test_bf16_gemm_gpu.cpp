// Device tests of the BF16 kernel through the public entry points (every major, BF16 or FP32 D, grouped, k-grouped):
// dense shapes with partial K blocks against the double-precision oracle, masked capacities that are not tile
// multiples (the 8-group capacity-32 failure case of the anchor must be exact), contiguous with padding rows,
// bitwise determinism. (The suite names keep "Staged": the names under which docs/results/ recorded them.)
// Bf16AddCGpu: BF16 D = C + A @ B^T with C distinct from D and C aliasing D.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "common/gpu_support.hpp"
#include "moegemm/moegemm.hpp"
#include "moegemm/reference.hpp"

namespace moegemm {
namespace {

using testing::DeviceBuffer;
namespace ref = reference;

constexpr std::uint16_t kPoison = 0xFFFF;

// Random BF16 values on the host (bits) and as doubles, uploaded to the device.
struct Bf16Tensor {
  std::vector<std::uint16_t> bits;
  std::vector<double> values;
  DeviceBuffer device;
  Bf16Tensor(std::size_t count, std::mt19937& rng, float sigma) : bits(count), values(count) {
    std::normal_distribution<float> dist(0.0f, sigma);
    for (std::size_t i = 0; i < count; ++i) {
      bits[i] = ref::float_to_bf16(dist(rng));
      values[i] = ref::bf16_to_float(bits[i]);
    }
    device = DeviceBuffer(count * 2);
    device.upload(bits);
  }
};

// An operand of rows x K values in the major a form asks for: K-major is [rows, K] row-major storage; MN-major is
// [K, rows] row-major storage viewed as [rows, K] with strides (1, rows). The device view and the oracle's view.
TensorView operand_view(Bf16Tensor& t, std::int64_t rows, std::int64_t k, bool mn_major) {
  return mn_major ? TensorView::strided(t.device.get(), DType::kBFloat16, {rows, k}, {1, rows})
                  : TensorView::contiguous(t.device.get(), DType::kBFloat16, {rows, k});
}
ref::MatrixRef operand_ref(const Bf16Tensor& t, std::int64_t rows, std::int64_t k, bool mn_major) {
  return mn_major ? ref::MatrixRef{t.values.data(), 1, rows} : ref::MatrixRef::row_major(t.values.data(), k);
}

void expect_rows(const std::vector<std::uint16_t>& got, const ref::GroupedResult& want, std::int64_t n,
                 const char* what) {
  std::vector<double> g, w;
  long long unwritten = 0, stray = 0;
  for (std::size_t r = 0; r < want.written.size(); ++r) {
    for (std::int64_t c = 0; c < n; ++c) {
      const std::uint16_t bits = got[r * n + c];
      if (want.written[r]) {
        if (bits == kPoison) ++unwritten;
        g.push_back(ref::bf16_to_float(bits));
        w.push_back(want.d[r * n + c]);
      } else if (bits != kPoison) {
        ++stray;
      }
    }
  }
  EXPECT_EQ(unwritten, 0) << what;
  EXPECT_EQ(stray, 0) << what << ": writes outside the valid rows";
  if (!g.empty()) EXPECT_LT(ref::calc_diff(g.data(), w.data(), g.size()), 1e-5) << what;
}

TEST(Bf16StagedGpu, DenseMatchesOracleAndRepeatsBitwise) {
  MOEGEMM_REQUIRE_GPU();
  struct Shape {
    int m, n, k;
  };
  for (const Shape s : {Shape{1, 2112, 7168}, Shape{129, 576, 2112}, Shape{1000, 256, 7168}, Shape{64, 4096, 576},
                        Shape{300, 136, 136}}) {
    std::mt19937 rng(static_cast<unsigned>(s.m * 3 + s.n + s.k));
    Bf16Tensor a(static_cast<std::size_t>(s.m) * s.k, rng, 1.0f), b(static_cast<std::size_t>(s.n) * s.k, rng, 0.5f);
    DeviceBuffer d(static_cast<std::size_t>(s.m) * s.n * 2);
    const TensorView av = TensorView::contiguous(a.device.get(), DType::kBFloat16, {s.m, s.k});
    const TensorView bv = TensorView::contiguous(b.device.get(), DType::kBFloat16, {s.n, s.k});
    const TensorView dv = TensorView::contiguous(d.get(), DType::kBFloat16, {s.m, s.n});
    const auto want = ref::gemm(s.m, s.n, s.k, ref::MatrixRef::row_major(a.values.data(), s.k),
                                ref::MatrixRef::row_major(b.values.data(), s.k));
    std::vector<std::uint16_t> first;
    for (int rep = 0; rep < 3; ++rep) {
      d.fill_bytes(0xFF);
      bf16_gemm(av, bv, dv, nullptr, nullptr);
      MOEGEMM_CUDA_CHECK(cudaDeviceSynchronize());
      const auto got = d.download_as<std::uint16_t>(static_cast<std::size_t>(s.m) * s.n);
      if (rep == 0) {
        expect_rows(got, ref::GroupedResult{want, std::vector<std::uint8_t>(s.m, 1)}, s.n, "bf16 dense");
        first = got;
      }
      EXPECT_EQ(0, std::memcmp(first.data(), got.data(), got.size() * 2));
    }
    EXPECT_TRUE(d.guard_intact());
  }
}

// Masked BF16 against the oracle, on the planner's tile (sized by expected_m, 0: the capacity) or `config`; B K-major,
// or MN-major (each group stored [K, N]).
void run_masked(int groups, int cap, int n, int k, const std::vector<int>& counts, std::mt19937& rng,
                const char* what, const KernelConfig* config = nullptr, bool b_mn_major = false, int expected_m = 0) {
  Bf16Tensor a(static_cast<std::size_t>(groups) * cap * k, rng, 1.0f);
  Bf16Tensor b(static_cast<std::size_t>(groups) * n * k, rng, 0.5f);
  DeviceBuffer d(static_cast<std::size_t>(groups) * cap * n * 2), cnt(groups * sizeof(int));
  d.fill_bytes(0xFF);
  cnt.upload(counts);
  MaskedLayout layout;
  layout.valid_rows = TensorView::contiguous(cnt.get(), DType::kInt32, {groups});
  layout.expected_m = expected_m;
  GemmOptions options;
  options.config = config;
  const std::int64_t group_b = static_cast<std::int64_t>(n) * k;
  m_grouped_bf16_gemm_masked(
      TensorView::contiguous(a.device.get(), DType::kBFloat16, {groups, cap, k}),
      b_mn_major ? TensorView::strided(b.device.get(), DType::kBFloat16, {groups, n, k}, {group_b, 1, n})
                 : TensorView::contiguous(b.device.get(), DType::kBFloat16, {groups, n, k}),
      TensorView::contiguous(d.get(), DType::kBFloat16, {groups, cap, n}), layout, nullptr, options);
  MOEGEMM_CUDA_CHECK(cudaDeviceSynchronize());
  const auto want = ref::m_grouped_masked(
      groups, cap, n, k, {ref::MatrixRef::row_major(a.values.data(), k), cap * k},
      {b_mn_major ? ref::MatrixRef{b.values.data(), 1, n} : ref::MatrixRef::row_major(b.values.data(), k), group_b},
      counts.data());
  expect_rows(d.download_as<std::uint16_t>(static_cast<std::size_t>(groups) * cap * n), want, n, what);
  EXPECT_TRUE(d.guard_intact()) << what;
}

TEST(Bf16StagedGpu, MaskedTargetsFailureCaseIsExact) {
  MOEGEMM_REQUIRE_GPU();
  std::mt19937 rng(2);
  run_masked(8, 32, 256, 256, {0, 1, 16, 31, 32, 1, 32, 32}, rng, "8 groups x 32");
}

TEST(Bf16StagedGpu, MaskedOddCapacitiesStayInsideTheirGroup) {
  MOEGEMM_REQUIRE_GPU();
  std::mt19937 rng(3);
  for (int cap : {1, 17, 63, 65, 127, 129, 200, 257}) {
    run_masked(4, cap, 256, 320, {cap, cap - 1 > 0 ? cap - 1 : 0, 0, cap / 2 + 1}, rng,
               ("capacity " + std::to_string(cap)).c_str());
  }
}

// Row-to-group with padding rows and blocks that mix experts, on the planner's tile or `config`.
void run_row_to_group_mixed(const KernelConfig* config, const char* what) {
  SCOPED_TRACE(what);
  std::mt19937 rng(4);
  const int m_total = 512, groups = 3, n = 384, k = 512;
  std::vector<int> index(m_total, -1);
  for (int r = 0; r < 100; ++r) index[r] = 0;
  for (int r = 128; r < 300; ++r) index[r] = 2;
  for (int r = 300; r < 310; ++r) index[r] = 0;  // three experts in one 128-row block: three passes
  for (int r = 310; r < 320; ++r) index[r] = 1;
  for (int r = 384; r < 500; ++r) index[r] = 1;
  Bf16Tensor a(static_cast<std::size_t>(m_total) * k, rng, 1.0f),
      b(static_cast<std::size_t>(groups) * n * k, rng, 0.5f);
  DeviceBuffer d(static_cast<std::size_t>(m_total) * n * 2), idx(index.size() * sizeof(int));
  d.fill_bytes(0xFF);
  idx.upload(index);
  ContiguousLayout layout;
  layout.form = ContiguousLayout::Form::kRowToGroup;
  layout.index = TensorView::contiguous(idx.get(), DType::kInt32, {m_total});
  GemmOptions options;
  options.config = config;
  m_grouped_bf16_gemm_contiguous(TensorView::contiguous(a.device.get(), DType::kBFloat16, {m_total, k}),
                                         TensorView::contiguous(b.device.get(), DType::kBFloat16, {groups, n, k}),
                                         TensorView::contiguous(d.get(), DType::kBFloat16, {m_total, n}), layout,
                                         nullptr, options);
  MOEGEMM_CUDA_CHECK(cudaDeviceSynchronize());
  const auto want = ref::m_grouped_contiguous_row_to_group(
      m_total, n, k, ref::MatrixRef::row_major(a.values.data(), k),
      {ref::MatrixRef::row_major(b.values.data(), k), static_cast<std::int64_t>(n) * k}, groups, index.data());
  expect_rows(d.download_as<std::uint16_t>(static_cast<std::size_t>(m_total) * n), want, n, what);
  EXPECT_TRUE(d.guard_intact()) << what;
}

TEST(Bf16StagedGpu, ContiguousRowToGroupWithPaddingAndMixedBlocks) {
  MOEGEMM_REQUIRE_GPU();
  run_row_to_group_mixed(nullptr, "bf16 contiguous");
}

// FP32 D of an m x n x k problem (A and B K-major unless a_mn / b_mn), with `config` (nullptr: the planner's):
// D = A B^T into a NaN-poisoned D, D = C + A B^T with C distinct from D, then with C aliasing D (the same bits as C
// distinct); each against the float64 oracle.
void run_fp32_out(int m, int n, int k, unsigned seed, const KernelConfig* config, const std::string& what,
                  bool a_mn = false, bool b_mn = false, int max_sms = 0) {
  SCOPED_TRACE(what);
  std::mt19937 rng(seed);
  Bf16Tensor a(static_cast<std::size_t>(m) * k, rng, 1.0f), b(static_cast<std::size_t>(n) * k, rng, 0.5f);
  std::normal_distribution<float> dist(0.0f, 3.0f);
  std::vector<float> c_host(static_cast<std::size_t>(m) * n);
  for (auto& v : c_host) v = dist(rng);
  std::vector<double> c_ref(c_host.begin(), c_host.end());
  const TensorView av = operand_view(a, m, k, a_mn), bv = operand_view(b, n, k, b_mn);
  const ref::MatrixRef ar = operand_ref(a, m, k, a_mn), br = operand_ref(b, n, k, b_mn);
  DeviceBuffer d(c_host.size() * 4), c(c_host.size() * 4);
  const TensorView dv = TensorView::contiguous(d.get(), DType::kFloat32, {m, n});
  const TensorView cv = TensorView::contiguous(c.get(), DType::kFloat32, {m, n});
  GemmOptions options;
  options.config = config;
  options.max_sms = max_sms;
  auto check = [&](const std::vector<double>& want, const char* what) {
    const auto got = d.download_as<float>(c_host.size());
    std::vector<double> g(got.begin(), got.end());
    for (float v : got) ASSERT_FALSE(std::isnan(v)) << what << ": unwritten element";
    EXPECT_LT(ref::calc_diff(g.data(), want.data(), g.size()), 1e-6) << what;
    EXPECT_TRUE(d.guard_intact()) << what;
  };
  // No C: D = A B^T, D only written.
  d.fill_bytes(0xFF);
  bf16_gemm(av, bv, dv, nullptr, nullptr, options);
  MOEGEMM_CUDA_CHECK(cudaDeviceSynchronize());
  check(ref::gemm(m, n, k, ar, br), "fp32 D, no C");
  // C distinct from D.
  c.upload(c_host);
  d.fill_bytes(0xFF);
  bf16_gemm(av, bv, dv, &cv, nullptr, options);
  MOEGEMM_CUDA_CHECK(cudaDeviceSynchronize());
  check(ref::gemm(m, n, k, ar, br, c_ref.data()), "fp32 D, C distinct");
  const auto distinct = d.download_as<float>(c_host.size());
  // C aliasing D (K >= kFp32ReduceMinK on TMA-stored tiles: the result goes out as a reduce-add into D): the same
  // bits as with C distinct.
  d.upload(c_host);
  bf16_gemm(av, bv, dv, &dv, nullptr, options);
  MOEGEMM_CUDA_CHECK(cudaDeviceSynchronize());
  check(ref::gemm(m, n, k, ar, br, c_ref.data()), "fp32 D, C aliasing D");
  const auto aliased = d.download_as<float>(c_host.size());
  EXPECT_EQ(0, std::memcmp(distinct.data(), aliased.data(), aliased.size() * sizeof(float)))
      << "C aliasing D differs from C distinct";
}

TEST(Bf16StagedGpu, Fp32OutputWithAndWithoutC) {
  MOEGEMM_REQUIRE_GPU();
  run_fp32_out(333, 272, 1000, 11, nullptr, "333x272x1000, planned");
  // Around kFp32ReduceMinK: C aliasing D loads C below it and adds into D by TMA reduce-adds from it on.
  run_fp32_out(256, 320, 1024, 12, nullptr, "256x320x1024, planned");
  run_fp32_out(200, 136, 2048, 13, nullptr, "200x136x2048, planned");
}

// NT, NN, TN and TT: A and B each K-major or MN-major (MN-major views of transposed storage).
TEST(Bf16StagedGpu, AllFourMajorsMatchTheOracle) {
  MOEGEMM_REQUIRE_GPU();
  const int m = 320, n = 384, k = 576;
  for (int form = 0; form < 4; ++form) {
    const bool a_mn = form & 1, b_mn = form & 2;
    std::mt19937 rng(100 + form);
    Bf16Tensor a(static_cast<std::size_t>(m) * k, rng, 1.0f), b(static_cast<std::size_t>(n) * k, rng, 0.5f);
    const TensorView av = operand_view(a, m, k, a_mn), bv = operand_view(b, n, k, b_mn);
    const ref::MatrixRef ar = operand_ref(a, m, k, a_mn), br = operand_ref(b, n, k, b_mn);
    DeviceBuffer d(static_cast<std::size_t>(m) * n * 2);
    d.fill_bytes(0xFF);
    bf16_gemm(av, bv, TensorView::contiguous(d.get(), DType::kBFloat16, {m, n}), nullptr, nullptr);
    MOEGEMM_CUDA_CHECK(cudaDeviceSynchronize());
    expect_rows(d.download_as<std::uint16_t>(static_cast<std::size_t>(m) * n),
                ref::GroupedResult{ref::gemm(m, n, k, ar, br), std::vector<std::uint8_t>(m, 1)}, n,
                ("form " + std::to_string(form)).c_str());
  }
}

TEST(Bf16StagedGpu, MaskedWithMnMajorB) {
  MOEGEMM_REQUIRE_GPU();
  const int groups = 4, cap = 100, n = 256, k = 384;
  std::mt19937 rng(7);
  Bf16Tensor a(static_cast<std::size_t>(groups) * cap * k, rng, 1.0f);
  Bf16Tensor b(static_cast<std::size_t>(groups) * n * k, rng, 0.5f);  // per group [K, N] storage
  std::vector<int> counts = {100, 37, 0, 64};
  DeviceBuffer d(static_cast<std::size_t>(groups) * cap * n * 2), cnt(groups * sizeof(int));
  d.fill_bytes(0xFF);
  cnt.upload(counts);
  MaskedLayout layout;
  layout.valid_rows = TensorView::contiguous(cnt.get(), DType::kInt32, {groups});
  m_grouped_bf16_gemm_masked(
      TensorView::contiguous(a.device.get(), DType::kBFloat16, {groups, cap, k}),
      TensorView::strided(b.device.get(), DType::kBFloat16, {groups, n, k}, {static_cast<std::int64_t>(n) * k, 1, n}),
      TensorView::contiguous(d.get(), DType::kBFloat16, {groups, cap, n}), layout, nullptr);
  MOEGEMM_CUDA_CHECK(cudaDeviceSynchronize());
  const auto want =
      ref::m_grouped_masked(groups, cap, n, k, {ref::MatrixRef::row_major(a.values.data(), k), cap * k},
                            {ref::MatrixRef{b.values.data(), 1, n}, static_cast<std::int64_t>(n) * k}, counts.data());
  expect_rows(d.download_as<std::uint16_t>(static_cast<std::size_t>(groups) * cap * n), want, n, "masked, MN-major B");
}

// K-grouped tn: D[g] = C[g] + A_g^T B_g with experts of 0 tokens, sizes inline or on the device, and a CUDA graph
// replayed after the device sizes changed in place (same total).
TEST(Bf16StagedGpu, KGroupedTnWithEmptyExpertsAndGraphReplay) {
  MOEGEMM_REQUIRE_GPU();
  const int m = 192, n = 320, groups = 4;
  const std::vector<std::int64_t> ks = {256, 0, 128, 384};
  const std::vector<std::int64_t> ks2 = {128, 384, 256, 0};  // same total: the buffers stay valid
  const int sum_k = 768;
  std::mt19937 rng(21);
  Bf16Tensor a(static_cast<std::size_t>(sum_k) * m, rng, 1.0f), b(static_cast<std::size_t>(sum_k) * n, rng, 0.5f);
  std::normal_distribution<float> dist(0.0f, 2.0f);
  std::vector<float> c_host(static_cast<std::size_t>(groups) * m * n);
  for (auto& v : c_host) v = dist(rng);
  std::vector<double> c_ref(c_host.begin(), c_host.end());
  DeviceBuffer d(c_host.size() * 4), c(c_host.size() * 4), ks_dev(groups * sizeof(int));
  const TensorView av = TensorView::contiguous(a.device.get(), DType::kBFloat16, {sum_k, m});
  const TensorView bv = TensorView::contiguous(b.device.get(), DType::kBFloat16, {sum_k, n});
  const TensorView dv = TensorView::contiguous(d.get(), DType::kFloat32, {groups, m, n});
  const TensorView cv = TensorView::contiguous(c.get(), DType::kFloat32, {groups, m, n});
  auto check = [&](const std::vector<std::int64_t>& sizes, const char* what) {
    const auto want = ref::k_grouped_gemm_tn(m, n, sizes, a.values.data(), b.values.data(), c_ref.data());
    const auto got = d.download_as<float>(c_host.size());
    std::vector<double> g(got.begin(), got.end());
    for (float v : got) ASSERT_FALSE(std::isnan(v)) << what;
    EXPECT_LT(ref::calc_diff(g.data(), want.data(), g.size()), 1e-6) << what;
    EXPECT_TRUE(d.guard_intact()) << what;
  };
  KGroupedLayout inline_sizes;
  inline_sizes.ks = ks;
  // C distinct: copied into D first, so the empty expert ends with D[1] = C[1].
  c.upload(c_host);
  d.fill_bytes(0xFF);
  k_grouped_bf16_gemm_tn(av, bv, dv, &cv, inline_sizes, nullptr);
  MOEGEMM_CUDA_CHECK(cudaDeviceSynchronize());
  check(ks, "k-grouped, C distinct, inline sizes");
  // C aliasing D, sizes on the device; then a graph replayed after the sizes change.
  std::vector<int> ks32(ks.begin(), ks.end()), ks2_32(ks2.begin(), ks2.end());
  ks_dev.upload(ks32);
  KGroupedLayout device_sizes;
  device_sizes.ks = ks;
  device_sizes.ks_device = TensorView::contiguous(ks_dev.get(), DType::kInt32, {groups});
  d.upload(c_host);
  k_grouped_bf16_gemm_tn(av, bv, dv, &dv, device_sizes, nullptr);
  MOEGEMM_CUDA_CHECK(cudaDeviceSynchronize());
  check(ks, "k-grouped, C aliasing D, device sizes");

  cudaStream_t stream;
  MOEGEMM_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  {
    // (The eager calls above compiled the kernel.)
    testing::CapturedCall captured(stream,
                                   [&](cudaStream_t s) { k_grouped_bf16_gemm_tn(av, bv, dv, &dv, device_sizes, s); });
    ks_dev.upload(ks2_32);
    d.upload(c_host);
    captured.replay();
    check(ks2, "k-grouped graph replayed after the sizes changed");
  }
  cudaStreamDestroy(stream);
}

// K-grouped tn with experts on both sides of kFp32ReduceMinK: C aliasing D (reduce-adds into D from K = 1024 on)
// gives the bits of C distinct from a NaN-poisoned D, and both match the oracle; on the planner's tile or `config`,
// on at most max_sms SMs (0: all).
// Returns the result with C distinct from D.
std::vector<float> run_k_grouped_tn_c_forms(int m, const KernelConfig* config, int max_sms = 0) {
  const int n = 320, groups = 4;
  const std::vector<std::int64_t> ks = {1024, 0, 384, 2048};
  const int sum_k = 3456;
  std::mt19937 rng(23);
  Bf16Tensor a(static_cast<std::size_t>(sum_k) * m, rng, 1.0f), b(static_cast<std::size_t>(sum_k) * n, rng, 0.5f);
  std::normal_distribution<float> dist(0.0f, 2.0f);
  std::vector<float> c_host(static_cast<std::size_t>(groups) * m * n);
  for (auto& v : c_host) v = dist(rng);
  std::vector<double> c_ref(c_host.begin(), c_host.end());
  const auto want = ref::k_grouped_gemm_tn(m, n, ks, a.values.data(), b.values.data(), c_ref.data());
  DeviceBuffer d(c_host.size() * 4), c(c_host.size() * 4);
  const TensorView av = TensorView::contiguous(a.device.get(), DType::kBFloat16, {sum_k, m});
  const TensorView bv = TensorView::contiguous(b.device.get(), DType::kBFloat16, {sum_k, n});
  const TensorView dv = TensorView::contiguous(d.get(), DType::kFloat32, {groups, m, n});
  const TensorView cv = TensorView::contiguous(c.get(), DType::kFloat32, {groups, m, n});
  KGroupedLayout sizes;
  sizes.ks = ks;
  auto run = [&](bool aliased, std::vector<float>& got) {
    if (aliased) {
      d.upload(c_host);
    } else {
      c.upload(c_host);
      d.fill_bytes(0xFF);
    }
    GemmOptions options;
    options.config = config;
    options.max_sms = max_sms;
    k_grouped_bf16_gemm_tn(av, bv, dv, aliased ? &dv : &cv, sizes, nullptr, options);
    MOEGEMM_CUDA_CHECK(cudaDeviceSynchronize());
    got = d.download_as<float>(c_host.size());
    std::vector<double> g(got.begin(), got.end());
    for (float v : got) EXPECT_FALSE(std::isnan(v));
    EXPECT_LT(ref::calc_diff(g.data(), want.data(), g.size()), 1e-6) << (aliased ? "C aliasing D" : "C distinct");
    EXPECT_TRUE(d.guard_intact());
  };
  std::vector<float> distinct, aliased;
  run(false, distinct);
  run(true, aliased);
  EXPECT_EQ(0, std::memcmp(distinct.data(), aliased.data(), aliased.size() * sizeof(float)))
      << "C aliasing D differs from C distinct";
  return distinct;
}

TEST(Bf16StagedGpu, KGroupedTnCAliasingDGivesTheBitsOfCDistinct) {
  MOEGEMM_REQUIRE_GPU();
  run_k_grouped_tn_c_forms(192, nullptr);
}

// BF16 k-grouped plans a rasterisation band of 4 (plan::with_kgrouped_bf16_band). The band orders the tiles and
// nothing else: on 8 CTAs (many tiles each), bands that divide the experts' 6 m-blocks, that do not, and one taller
// than an expert give the plan's bits.
TEST(Bf16ForcedConfigsGpu, KGroupedRasterBandsGiveThePlansBits) {
  MOEGEMM_REQUIRE_GPU();
  const int m = 704;
  Bf16PlanQuery query;
  query.layout = GemmLayout::kKGrouped;
  query.m = m;
  query.n = 320;
  query.k = 3456;
  query.num_groups = 4;
  query.a_mn_major = query.b_mn_major = true;
  query.fp32_d = true;
  const KernelConfig planned = plan_bf16_gemm(query);
  ASSERT_EQ(planned.raster_band, 4) << planned.to_string();
  const std::vector<float> want = run_k_grouped_tn_c_forms(m, nullptr, 8);
  for (const int band : {1, 3, 16}) {
    KernelConfig config = planned;
    config.raster_band = band;
    SCOPED_TRACE(config.to_string());
    const std::vector<float> got = run_k_grouped_tn_c_forms(m, &config, 8);
    ASSERT_EQ(got.size(), want.size());
    EXPECT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * sizeof(float))) << "band " << band;
  }
}

// ---- BF16 D = C + A @ B^T ------------------------------------------------------------------------------------------

// The oracle rounded as the kernel rounds: C + A B^T in double, then once to BF16 (nearest even). The kernel adds in
// FP32, so against this reference only the FP32 accumulation order differs, which moves an element by at most one
// BF16 step and only near a rounding boundary: calc_diff stays far below 1e-5 (against the unrounded oracle the
// BF16 rounding alone contributes up to ~2^-18 per element).
std::vector<double> rounded_to_bf16(const std::vector<double>& v) {
  std::vector<double> r(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) r[i] = ref::bf16_to_float(ref::float_to_bf16(static_cast<float>(v[i])));
  return r;
}

struct AddCCase {
  int m, n, k;
  bool a_mn = false, b_mn = false;
  const KernelConfig* config = nullptr;  // nullptr: the planner's choice
};

// One case: C distinct from a NaN-poisoned D (twice: bitwise repeat; C untouched), then C aliasing D (twice, from a
// fresh copy of C: bitwise equal to the distinct result).
void run_add_c(const AddCCase& s, unsigned seed, const std::string& what) {
  SCOPED_TRACE(what);
  std::mt19937 rng(seed);
  const std::size_t mk = static_cast<std::size_t>(s.m) * s.k, nk = static_cast<std::size_t>(s.n) * s.k;
  const std::size_t mn = static_cast<std::size_t>(s.m) * s.n;
  Bf16Tensor a(mk, rng, 1.0f), b(nk, rng, 0.5f), c(mn, rng, 16.0f);
  const TensorView av = operand_view(a, s.m, s.k, s.a_mn), bv = operand_view(b, s.n, s.k, s.b_mn);
  const ref::MatrixRef ar = operand_ref(a, s.m, s.k, s.a_mn), br = operand_ref(b, s.n, s.k, s.b_mn);
  const ref::GroupedResult want{rounded_to_bf16(ref::gemm(s.m, s.n, s.k, ar, br, c.values.data())),
                                std::vector<std::uint8_t>(s.m, 1)};
  DeviceBuffer d(mn * 2);
  const TensorView dv = TensorView::contiguous(d.get(), DType::kBFloat16, {s.m, s.n});
  const TensorView cv = TensorView::contiguous(c.device.get(), DType::kBFloat16, {s.m, s.n});
  GemmOptions options;
  options.config = s.config;

  std::vector<std::uint16_t> distinct;
  for (int rep = 0; rep < 2; ++rep) {
    d.fill_bytes(0xFF);  // 0xFFFF: a BF16 NaN in every element the kernel fails to write
    bf16_gemm(av, bv, dv, &cv, nullptr, options);
    MOEGEMM_CUDA_CHECK(cudaDeviceSynchronize());
    const auto got = d.download_as<std::uint16_t>(mn);
    if (rep == 0) {
      expect_rows(got, want, s.n, "C distinct");
      distinct = got;
    }
    EXPECT_EQ(0, std::memcmp(distinct.data(), got.data(), mn * 2)) << "C distinct: repeat differs";
  }
  EXPECT_EQ(0, std::memcmp(c.device.download_as<std::uint16_t>(mn).data(), c.bits.data(), mn * 2)) << "C was written";
  for (int rep = 0; rep < 2; ++rep) {
    d.upload(c.bits);
    bf16_gemm(av, bv, dv, &dv, nullptr, options);
    MOEGEMM_CUDA_CHECK(cudaDeviceSynchronize());
    const auto got = d.download_as<std::uint16_t>(mn);
    if (rep == 0) expect_rows(got, want, s.n, "C aliasing D");
    EXPECT_EQ(0, std::memcmp(distinct.data(), got.data(), mn * 2)) << "C aliasing D differs from C distinct";
  }
  EXPECT_TRUE(d.guard_intact());
  EXPECT_TRUE(c.device.guard_intact());
}

// Partial K blocks (K % 64 != 0, and K < 64), M and N that are no tile multiple, decode-sized M, long K.
TEST(Bf16AddCGpu, DenseMatchesRoundedOracleWithCDistinctAndAliasingD) {
  MOEGEMM_REQUIRE_GPU();
  const AddCCase cases[] = {{1, 2112, 7168}, {129, 576, 2112}, {333, 272, 1000}, {300, 136, 136}, {256, 384, 40}};
  unsigned seed = 300;
  for (const AddCCase& s : cases) {
    run_add_c(s, seed++, std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k));
  }
}

TEST(Bf16AddCGpu, AllFourMajorsMatchTheRoundedOracle) {
  MOEGEMM_REQUIRE_GPU();
  for (int form = 0; form < 4; ++form) {
    const bool a_mn = form & 1, b_mn = form & 2;
    run_add_c(AddCCase{320, 384, 584, a_mn, b_mn}, 400 + form, "form " + std::to_string(form));
  }
}

// The instances at both ends of the tile range, forced: 128x192 carries C's loads on top of 96 accumulators per
// thread (the compile check's register case), 64x16 the narrowest column groups; and an MN-major B at 128x64.
TEST(Bf16AddCGpu, ForcedTilesMatchTheRoundedOracle) {
  MOEGEMM_REQUIRE_GPU();
  auto config = [](int bm, int bn, int stages) {
    KernelConfig c;
    c.block_m = bm;
    c.block_n = bn;
    c.block_k = 64;
    c.stages = stages;
    c.math_warpgroups = bm / 64;
    return c;
  };
  const KernelConfig wide = config(128, 192, 4), narrow = config(64, 16, 8), mn_b = config(128, 64, 6);
  run_add_c(AddCCase{200, 400, 520, false, false, &wide}, 500, "128x192");
  run_add_c(AddCCase{200, 400, 520, false, false, &narrow}, 501, "64x16");
  run_add_c(AddCCase{200, 384, 520, true, true, &mn_b}, 502, "128x64, TT");
}

// ---- forced configurations: CTA pairs and 256-row tiles ------------------------------------------------------------

KernelConfig bf16_config(int bm, int bn, int stages, int cluster_m = 1, int cluster_n = 1) {
  KernelConfig c = testing::tile_config(bm, bn, 64, stages);
  c.cluster_m = cluster_m;
  c.cluster_n = cluster_n;
  return c;
}

// Group ends with segments starting anywhere (segment_alignment 1, packed) or at multiples of 64: tiles start
// mid-block and stop at their expert's end; the planner's tile and forced ones (128x256 and 256x128 with TMA
// stores, 64-row tiles with an MN-major B, a multicast pair). Exact against the float64 oracle (BF16 inputs).
TEST(Bf16ForcedConfigsGpu, ContiguousGroupEndsWithAnySegmentAlignment) {
  MOEGEMM_REQUIRE_GPU();
  std::mt19937 rng(7);
  const int groups = 6, n = 384, k = 320;
  const std::vector<int> sizes = {200, 0, 1, 129, 256, 70};
  for (int alignment : {1, 64}) {
    std::vector<int> ends;
    int start = 0;
    for (int s : sizes) {
      ends.push_back(start + s);
      start = (start + s + alignment - 1) / alignment * alignment;
    }
    const int m_total = ends.back() + 21;
    Bf16Tensor a(static_cast<std::size_t>(m_total) * k, rng, 1.0f),
        b(static_cast<std::size_t>(groups) * n * k, rng, 0.5f);
    Bf16Tensor b_mn(static_cast<std::size_t>(groups) * n * k, rng, 0.5f);  // B as [G, K, N]
    DeviceBuffer d(static_cast<std::size_t>(m_total) * n * 2), idx(groups * sizeof(int));
    idx.upload(ends);
    ContiguousLayout layout;
    layout.form = ContiguousLayout::Form::kGroupEnds;
    layout.index = TensorView::contiguous(idx.get(), DType::kInt32, {groups});
    layout.segment_alignment = alignment;
    const TensorView av = TensorView::contiguous(a.device.get(), DType::kBFloat16, {m_total, k});
    const TensorView dv = TensorView::contiguous(d.get(), DType::kBFloat16, {m_total, n});
    const auto want_k = ref::m_grouped_contiguous_group_ends(
        m_total, n, k, ref::MatrixRef::row_major(a.values.data(), k),
        {ref::MatrixRef::row_major(b.values.data(), k), static_cast<std::int64_t>(n) * k}, groups, ends.data(),
        alignment);
    // B MN-major: element (n, k) of expert g at g * K * N + k * N + n.
    const auto want_mn = ref::m_grouped_contiguous_group_ends(
        m_total, n, k, ref::MatrixRef::row_major(a.values.data(), k),
        {ref::MatrixRef{b_mn.values.data(), 1, n}, static_cast<std::int64_t>(n) * k}, groups, ends.data(),
        alignment);
    struct Run {
      std::optional<KernelConfig> config;
      bool b_mn_major;
    };
    const std::vector<Run> runs = {{std::nullopt, false}, {bf16_config(128, 256, 3), false},
                                   {bf16_config(256, 128, 3), false}, {bf16_config(64, 128, 6), true},
                                   {bf16_config(128, 192, 4, 2), false}};
    for (const Run& run : runs) {
      const std::string what = "segment alignment " + std::to_string(alignment) + ", " +
                               (run.config ? run.config->to_string() : std::string("planner")) +
                               (run.b_mn_major ? ", B MN-major" : "");
      GemmOptions options;
      options.config = run.config ? &*run.config : nullptr;
      const TensorView bv =
          run.b_mn_major ? TensorView::strided(b_mn.device.get(), DType::kBFloat16, {groups, n, k},
                                               {static_cast<std::int64_t>(n) * k, 1, n})
                         : TensorView::contiguous(b.device.get(), DType::kBFloat16, {groups, n, k});
      d.fill_bytes(0xFF);
      m_grouped_bf16_gemm_contiguous(av, bv, dv, layout, nullptr, options);
      MOEGEMM_CUDA_CHECK(cudaDeviceSynchronize());
      expect_rows(d.download_as<std::uint16_t>(static_cast<std::size_t>(m_total) * n),
                  run.b_mn_major ? want_mn : want_k, n, what.c_str());
      EXPECT_TRUE(d.guard_intact()) << what;
    }
  }
}

// Pairs sharing B along M (2x1) or A along N (1x2), 256-row tiles (two accumulators per warpgroup) and 256-wide
// tiles (one m64n256 WGMMA per warpgroup and K step; N = 392 leaves a partial one), in every
// form they take, on a shape that leaves partial tiles, a pair with an empty half and a partial K block: each
// against the oracle, and bitwise equal to the planner's configuration (the same K order per element).
TEST(Bf16ForcedConfigsGpu, PairsAndTallTilesMatchTheOracleAndThePlannersBits) {
  MOEGEMM_REQUIRE_GPU();
  const int m = 600, n = 392, k = 584;
  const KernelConfig pair_m = bf16_config(128, 192, 4, 2), pair_m_narrow = bf16_config(64, 128, 6, 2),
                     tall = bf16_config(256, 128, 3), tall_pair_n = bf16_config(256, 128, 3, 1, 2),
                     pair_n = bf16_config(128, 128, 4, 1, 2), wide = bf16_config(128, 256, 3),
                     narrow_176 = bf16_config(128, 176, 4),  // N = 392: two whole tiles and 40 columns
                     narrow_32 = bf16_config(128, 32, 10);   // one block of rows' tile alone (with_row_block_tiles)
  struct Run {
    const KernelConfig* config;
    const char* name;
    bool a_mn_ok, b_mn_ok;  // the majors the configuration takes
  };
  const Run runs[] = {{&pair_m, "128x192 2x1", true, false},  {&pair_m_narrow, "64x128 2x1", true, false},
                      {&tall, "256x128", true, true},          {&tall_pair_n, "256x128 1x2", false, true},
                      {&pair_n, "128x128 1x2", false, true},   {&wide, "128x256", true, true},
                      {&narrow_176, "128x176", true, false},   {&narrow_32, "128x32", false, false}};
  for (int form = 0; form < 4; ++form) {
    const bool a_mn = form & 1, b_mn = form & 2;
    std::mt19937 rng(700 + form);
    Bf16Tensor a(static_cast<std::size_t>(m) * k, rng, 1.0f), b(static_cast<std::size_t>(n) * k, rng, 0.5f);
    const TensorView av = operand_view(a, m, k, a_mn), bv = operand_view(b, n, k, b_mn);
    const ref::MatrixRef ar = operand_ref(a, m, k, a_mn), br = operand_ref(b, n, k, b_mn);
    const ref::GroupedResult want{ref::gemm(m, n, k, ar, br), std::vector<std::uint8_t>(m, 1)};
    DeviceBuffer d(static_cast<std::size_t>(m) * n * 2);
    const TensorView dv = TensorView::contiguous(d.get(), DType::kBFloat16, {m, n});
    auto run = [&](const KernelConfig* config) {
      GemmOptions options;
      options.config = config;
      d.fill_bytes(0xFF);
      bf16_gemm(av, bv, dv, nullptr, nullptr, options);
      EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      return d.download_as<std::uint16_t>(static_cast<std::size_t>(m) * n);
    };
    const auto planned = run(nullptr);
    for (const Run& r : runs) {
      if ((a_mn && !r.a_mn_ok) || (b_mn && !r.b_mn_ok)) continue;
      const std::string what = std::string(r.name) + ", form " + std::to_string(form);
      const auto got = run(r.config);
      expect_rows(got, want, n, what.c_str());
      EXPECT_EQ(0, std::memcmp(planned.data(), got.data(), got.size() * 2)) << what << ": differs from the planner's";
    }
    EXPECT_TRUE(d.guard_intact());
  }
}

// FP32 D on 192-row tiles of three math warpgroups (the planner's choice where they save a partial wave), forced:
// dense in the NT and TN forms with every form of C, M ending inside a tile (400 = 2 x 192 + 16; 136 < 192; an
// MN-major operand needs 16-byte strides, so M and N multiples of 8) and K on both sides of kFp32ReduceMinK;
// k-grouped tn (MN-major A and B) likewise.
TEST(Bf16ForcedConfigsGpu, ThreeWarpgroupTilesWithFp32D) {
  MOEGEMM_REQUIRE_GPU();
  const KernelConfig three = bf16_config(192, 128, 3);
  for (const bool tn : {false, true}) {
    const std::string form = tn ? "TN" : "NT";
    run_fp32_out(400, 320, 2048, 41, &three, "400x320x2048 " + form + ", 192x128", tn, tn);
    run_fp32_out(136, 136, 1000, 42, &three, "136x136x1000 " + form + ", 192x128", tn, tn);
  }
  SCOPED_TRACE("k-grouped tn, 192x128");
  run_k_grouped_tn_c_forms(400, &three);
}

// FP32 D on 128x128 tiles (the planner's for most BF16 weight gradients), forced, on two and three SMs: every CTA
// runs many tiles in a row, an even and an odd number per CTA, so that the tiles of each math warpgroup follow one
// another through the same staging buffer. Dense NT and TN with every form of C, M and N ending inside a tile, K on
// both sides of kFp32ReduceMinK; k-grouped tn with an empty expert likewise.
TEST(Bf16ForcedConfigsGpu, ManyFp32TilesPerCtaInARow) {
  MOEGEMM_REQUIRE_GPU();
  const KernelConfig square = bf16_config(128, 128, 5);
  for (const int sms : {2, 3}) {
    for (const bool tn : {false, true}) {
      const std::string form = std::string(tn ? "TN" : "NT") + ", 128x128 on " + std::to_string(sms) + " SMs";
      run_fp32_out(520, 392, 1152, 51, &square, "520x392x1152 " + form, tn, tn, sms);  // 5 x 4 tiles
      run_fp32_out(264, 136, 1000, 52, &square, "264x136x1000 " + form, tn, tn, sms);   // 3 x 2 tiles
    }
    SCOPED_TRACE("k-grouped tn, 128x128 on " + std::to_string(sms) + " SMs");
    run_k_grouped_tn_c_forms(400, &square, sms);  // 4 x 3 tiles per expert with K
  }
}

// The forms the pairs and tall tiles reject, with the rule in the message, before any launch.
TEST(Bf16ForcedConfigsGpu, UnsupportedPairsAndTallTilesAreRejected) {
  MOEGEMM_REQUIRE_GPU();
  const int m = 256, n = 256, k = 128;
  DeviceBuffer a(m * k * 2), b(n * k * 2), d(m * n * 4);
  const TensorView a_k = TensorView::contiguous(a.get(), DType::kBFloat16, {m, k});
  const TensorView a_mn = TensorView::strided(a.get(), DType::kBFloat16, {m, k}, {1, m});
  const TensorView b_k = TensorView::contiguous(b.get(), DType::kBFloat16, {n, k});
  const TensorView b_mn = TensorView::strided(b.get(), DType::kBFloat16, {n, k}, {1, n});
  const TensorView d16 = TensorView::contiguous(d.get(), DType::kBFloat16, {m, n});
  const TensorView d32 = TensorView::contiguous(d.get(), DType::kFloat32, {m, n});
  auto message = [&](const TensorView& av, const TensorView& bv, const TensorView& dv, const KernelConfig& c) {
    GemmOptions options;
    options.config = &c;
    try {
      bf16_gemm(av, bv, dv, nullptr, nullptr, options);
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message(a_k, b_mn, d16, bf16_config(128, 128, 4, 2)).find("K-major B"), std::string::npos);
  EXPECT_NE(message(a_mn, b_k, d16, bf16_config(128, 128, 4, 1, 2)).find("K-major A"), std::string::npos);
  EXPECT_NE(message(a_k, b_k, d32, bf16_config(256, 128, 3)).find("256-row tiles"), std::string::npos);
  EXPECT_NE(message(a_k, b_k, d16, bf16_config(256, 192, 3)).find("256-row tiles"), std::string::npos);
}

// K split across a cluster (k_splits 2 to 4): BF16 D, BF16 D with C (distinct and aliasing D), FP32 D with C, an
// MN-major A (where M gives its rows 16-byte strides); decode-sized and partial shapes, a partial 64-K block, ranks
// without a K block (K = 128 over 4).
TEST(Bf16ForcedConfigsGpu, KSplitMatchesTheOracleAndRepeatsBitwise) {
  MOEGEMM_REQUIRE_GPU();
  struct Shape {
    int m, n, k;
  };
  for (const Shape s : {Shape{1, 576, 7168}, Shape{37, 200, 1000}, Shape{40, 200, 1000}, Shape{128, 64, 128}}) {
    for (int form : {0, 1}) {  // A K-major, A MN-major
      if (form == 1 && s.m % 8 != 0) continue;  // an MN-major A of M rows has a leading stride of 2 * M bytes
      std::mt19937 rng(static_cast<unsigned>(900 + s.m + s.n + s.k + form));
      Bf16Tensor a(static_cast<std::size_t>(s.m) * s.k, rng, 1.0f), b(static_cast<std::size_t>(s.n) * s.k, rng, 0.5f);
      const TensorView av = operand_view(a, s.m, s.k, form == 1), bv = operand_view(b, s.n, s.k, false);
      const ref::GroupedResult want{
          ref::gemm(s.m, s.n, s.k, operand_ref(a, s.m, s.k, form == 1), operand_ref(b, s.n, s.k, false)),
          std::vector<std::uint8_t>(s.m, 1)};
      DeviceBuffer d(static_cast<std::size_t>(s.m) * s.n * 2);
      const TensorView dv = TensorView::contiguous(d.get(), DType::kBFloat16, {s.m, s.n});
      // 64x16 tiles split 2, 3 and 4 ways, 64x32 split 2; 128x64 tiles (two math warpgroups) split 2 and 3 ways and
      // 128x32 split 2 ways (the one-block-of-rows plans, plan::with_row_block_tiles).
      std::vector<KernelConfig> configs;
      for (int splits : {2, 3, 4}) {
        configs.push_back(bf16_config(64, 16, 8));
        configs.back().k_splits = splits;
      }
      configs.push_back(bf16_config(64, 32, 16));  // the decode candidate 64x32 split 2 ways
      configs.back().k_splits = 2;
      configs.push_back(bf16_config(128, 64, 6));
      configs.back().k_splits = 3;
      configs.push_back(bf16_config(128, 64, 7));
      configs.back().k_splits = 2;
      configs.push_back(bf16_config(128, 32, 9));  // the one-block-of-rows plan at N = 2112
      configs.back().k_splits = 2;
      for (const KernelConfig& cfg : configs) {
        GemmOptions options;
        options.config = &cfg;
        const std::string what = std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k) +
                                 ", form " + std::to_string(form) + ", " + std::to_string(cfg.block_m) + "x" +
                                 std::to_string(cfg.block_n) + ", K split " + std::to_string(cfg.k_splits);
        std::vector<std::uint16_t> first;
        for (int rep = 0; rep < 2; ++rep) {
          d.fill_bytes(0xFF);
          bf16_gemm(av, bv, dv, nullptr, nullptr, options);
          MOEGEMM_CUDA_CHECK(cudaDeviceSynchronize());
          const auto got = d.download_as<std::uint16_t>(static_cast<std::size_t>(s.m) * s.n);
          if (rep == 0) {
            expect_rows(got, want, s.n, what.c_str());
            first = got;
          }
          EXPECT_EQ(0, std::memcmp(first.data(), got.data(), got.size() * 2)) << what << ": repeat differs";
        }
        EXPECT_TRUE(d.guard_intact()) << what;
      }
    }
  }
  // With C (BF16 D), through the C-prefetching tile width, and FP32 D with C.
  KernelConfig with_c = bf16_config(64, 64, 8);
  with_c.k_splits = 3;
  run_add_c(AddCCase{37, 200, 1000, false, false, &with_c}, 950, "64x64, K split 3");
  KernelConfig narrow_c = bf16_config(64, 16, 8);
  narrow_c.k_splits = 4;
  run_add_c(AddCCase{1, 576, 7168, false, false, &narrow_c}, 951, "64x16, K split 4");
  const KernelConfig row_block_32 = bf16_config(128, 32, 10);  // the one-block-of-rows tile alone, with C
  run_add_c(AddCCase{100, 200, 1000, false, false, &row_block_32}, 953, "128x32 alone");
  // FP32 D, with and without C (distinct and aliasing D): the per-thread epilogue (64x16) and the TMA one (64x64).
  for (const int bn : {16, 64}) {
    KernelConfig cfg = bf16_config(64, bn, 8);
    cfg.k_splits = bn == 16 ? 4 : 2;
    run_fp32_out(37, 200, 1000, 952, &cfg,
                 "FP32 D, 64x" + std::to_string(bn) + ", K split " + std::to_string(cfg.k_splits));
  }
}

// C's loads per wave of a 256-row tile, C through a pair of CTAs, and C on a 128x176 tile (stores without TMA).
TEST(Bf16ForcedConfigsGpu, TallTilesAndPairsWithCMatchTheRoundedOracle) {
  MOEGEMM_REQUIRE_GPU();
  const KernelConfig tall = bf16_config(256, 128, 3), pair_m = bf16_config(128, 192, 4, 2),
                     narrow_176 = bf16_config(128, 176, 4);
  run_add_c(AddCCase{600, 392, 584, false, false, &tall}, 800, "256x128");
  run_add_c(AddCCase{600, 392, 584, false, false, &narrow_176}, 803, "128x176");
  run_add_c(AddCCase{600, 384, 584, true, true, &tall}, 801, "256x128, TT");
  run_add_c(AddCCase{600, 392, 584, false, false, &pair_m}, 802, "128x192 2x1");
}

// Masked slabs through CTA pairs: capacities below, at and past a pair tile, and the anchor's failure case.
TEST(Bf16ForcedConfigsGpu, MaskedPairsStayInsideTheirGroup) {
  MOEGEMM_REQUIRE_GPU();
  const KernelConfig pair_m = bf16_config(128, 128, 4, 2), pair_m_narrow = bf16_config(64, 64, 8, 2);
  std::mt19937 rng(9);
  run_masked(8, 32, 256, 256, {0, 1, 16, 31, 32, 1, 32, 32}, rng, "8 groups x 32, 64x64 2x1", &pair_m_narrow);
  for (int cap : {1, 129, 257, 300}) {
    run_masked(4, cap, 256, 320, {cap, cap - 1 > 0 ? cap - 1 : 0, 0, cap / 2 + 1}, rng,
               ("capacity " + std::to_string(cap) + ", 128x128 2x1").c_str(), &pair_m);
  }
}

// The masked decode tiles of BF16 (64 rows, 96 to 192 wide: the planner's, and 112, which was measured against them
// in docs/results/2026-12-07-masked-112.md), as Fp8MaskedGpu's test of them:
// counts on both sides of the 32-row A boxes and of the tile, N leaving a partial tile at every width.
TEST(Bf16ForcedConfigsGpu, MaskedDecodeTilesCopyOnlyTheRowsTheExpertHas) {
  MOEGEMM_REQUIRE_GPU();
  std::mt19937 rng(11);
  const std::vector<int> counts = {0, 1, 20, 31, 32, 33, 63, 64, 65, 100};
  for (const auto& [bn, st] : {std::pair{96, 10}, std::pair{112, 9}, std::pair{128, 8}, std::pair{160, 7},
                               std::pair{176, 6}, std::pair{192, 6}}) {
    const KernelConfig cfg = bf16_config(64, bn, st);
    run_masked(static_cast<int>(counts.size()), 100, 400, 320, counts, rng,
               ("64x" + std::to_string(bn)).c_str(), &cfg);
  }
}

// 128x256 tiles (one m64n256 WGMMA per warpgroup) on the grouped layouts: masked capacities below, at and past a
// tile (N = 320 leaves a partial 256-wide tile), the anchor's 8 x 32 case, and row-to-group with mixed blocks; and
// 256x128 tiles on row-to-group.
TEST(Bf16ForcedConfigsGpu, WideTilesOnGroupedLayoutsStayInsideTheirGroup) {
  MOEGEMM_REQUIRE_GPU();
  const KernelConfig wide = bf16_config(128, 256, 3);
  std::mt19937 rng(10);
  run_masked(8, 32, 256, 256, {0, 1, 16, 31, 32, 1, 32, 32}, rng, "8 groups x 32, 128x256", &wide);
  for (int cap : {1, 129, 257, 300}) {
    run_masked(4, cap, 320, 320, {cap, cap - 1 > 0 ? cap - 1 : 0, 0, cap / 2 + 1}, rng,
               ("capacity " + std::to_string(cap) + ", 128x256").c_str(), &wide);
  }
  run_row_to_group_mixed(&wide, "bf16 contiguous, 128x256");
  // 256-row tiles on row-to-group: two waves per warpgroup, the tile [256, 512) in three passes.
  const KernelConfig tall = bf16_config(256, 128, 3);
  run_row_to_group_mixed(&tall, "bf16 contiguous, 256x128");
}

// Masked 256x128 tiles, which the planner picks for experts of fewer than 512 expected rows: a warpgroup whose second
// 64-row wave has no rows of the expert skips it (kSkipEmptyWaves). Counts on each side of the waves' edges (64, 128,
// 192, 256 rows of a tile), with B K-major and MN-major, forced and planned.
TEST(Bf16ForcedConfigsGpu, TallMaskedTilesSkipEmptyWavesAndStayInsideTheirGroup) {
  MOEGEMM_REQUIRE_GPU();
  const KernelConfig tall = bf16_config(256, 128, 3);
  std::mt19937 rng(11);
  for (bool mn_major : {false, true}) {
    const std::string major = mn_major ? ", MN-major B" : ", K-major B";
    run_masked(8, 300, 256, 320, {0, 1, 63, 64, 65, 129, 193, 300}, rng, ("capacity 300, 256x128" + major).c_str(),
               &tall, mn_major);
    run_masked(6, 257, 384, 192, {192, 191, 128, 127, 257, 256}, rng, ("capacity 257, 256x128" + major).c_str(),
               &tall, mn_major);
    // The planner's tile for expected M 192 (256x128, Bf16Plan.WideTilesForLargeGroupedTiles).
    Bf16PlanQuery q;
    q.layout = GemmLayout::kMasked, q.m = 8 * 256, q.n = 1536, q.k = 128, q.num_groups = 8, q.expected_m = 192;
    q.b_mn_major = mn_major;
    const KernelConfig planned = plan_bf16_gemm(q);
    EXPECT_TRUE(planned.block_m == 256 && planned.block_n == 128) << planned.to_string();
    run_masked(8, 256, 1536, 128, {192, 150, 0, 256, 1, 64, 65, 200}, rng, ("planned, expected M 192" + major).c_str(),
               nullptr, mn_major, 192);
  }
}

}  // namespace
}  // namespace moegemm
