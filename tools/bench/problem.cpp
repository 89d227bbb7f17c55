#include "problem.hpp"

#include <algorithm>
#include <optional>
#include <random>

#include "moegemm/gemm.hpp"
#include "moegemm/layouts.hpp"
#include "moegemm/recipe.hpp"
#include "moegemm/types.hpp"

namespace moegemm::bench {
namespace {

using moegemm::DType;
using moegemm::TensorView;
using I64 = std::int64_t;

constexpr float kAccumulatorScale = 32.0f;  // C ~ N(0, 32^2), as the anchor's tests
constexpr double kFp8Threshold = 1e-3;
constexpr double kBf16Threshold = 1e-5;

I64 ceil128(I64 x) { return (x + 127) / 128; }
I64 align128(I64 x) { return ceil128(x) * 128; }
I64 align_to(I64 x, I64 alignment) { return (x + alignment - 1) / alignment * alignment; }
I64 tma_ld(I64 rows) { return moegemm::tma_aligned_size(rows, 4); }

template <typename T>
T* alloc(Problem& p, I64 count) {
  p.buffers.emplace_back(static_cast<std::size_t>(count) * sizeof(T));
  return p.buffers.back().get<T>();
}

template <typename T>
T* upload(Problem& p, const std::vector<T>& host, cudaStream_t stream) {
  T* dev = alloc<T>(p, static_cast<I64>(host.size()));
  CUDA_CHECK(cudaMemcpyAsync(dev, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));  // the host vector may go away
  return dev;
}

// FP8 e4m3 data with per-row x 128-K scales, `groups` slabs of [rows, K]; scales MN-major per slab:
// scale (g, r, kb) at g * ld * kb_count + kb * ld + r with ld = tma_aligned(rows).
struct TokenFp8 {
  std::uint8_t* q = nullptr;
  float* sf = nullptr;
  I64 ld = 0;
};

TokenFp8 token_fp8(Problem& p, I64 groups, I64 rows, I64 k, std::uint64_t seed, cudaStream_t stream) {
  TokenFp8 t;
  t.ld = tma_ld(rows);
  const I64 kb = ceil128(k);
  t.q = alloc<std::uint8_t>(p, groups * rows * k);
  t.sf = alloc<float>(p, groups * t.ld * kb);
  fill_f32(t.sf, groups * t.ld * kb, 1.0f, stream);  // the alignment padding holds a harmless value
  DeviceBuffer staging(static_cast<std::size_t>(groups * rows * k) * 2);
  fill_normal_bf16(staging.get<std::uint16_t>(), groups * rows * k, seed, 1.0f, stream);
  for (I64 g = 0; g < groups; ++g) {
    cast_rows_1x128(staging.get<std::uint16_t>() + g * rows * k, rows, k, k, t.q + g * rows * k, k,
                    t.sf + g * t.ld * kb, 1, t.ld, stream);
  }
  CUDA_CHECK(cudaStreamSynchronize(stream));
  return t;
}

// FP8 e4m3 weights [groups, rows, K] with 128x128 block scales [groups, ceil(rows/128), ceil(K/128)] contiguous.
struct BlockFp8 {
  std::uint8_t* q = nullptr;
  float* sf = nullptr;
};

BlockFp8 block_fp8(Problem& p, I64 groups, I64 rows, I64 k, std::uint64_t seed, cudaStream_t stream) {
  BlockFp8 t;
  const I64 kb = ceil128(k);
  const I64 rb = ceil128(rows);
  t.q = alloc<std::uint8_t>(p, groups * rows * k);
  t.sf = alloc<float>(p, groups * rb * kb);
  DeviceBuffer staging(static_cast<std::size_t>(groups * rows * k) * 2);
  fill_normal_bf16(staging.get<std::uint16_t>(), groups * rows * k, seed, 1.0f, stream);
  for (I64 g = 0; g < groups; ++g) {
    cast_blocks_128x128(staging.get<std::uint16_t>() + g * rows * k, rows, k, k, t.q + g * rows * k, k,
                        t.sf + g * rb * kb, kb, stream);
  }
  CUDA_CHECK(cudaStreamSynchronize(stream));
  return t;
}

std::uint16_t* bf16_random(Problem& p, I64 count, std::uint64_t seed, cudaStream_t stream) {
  auto* x = alloc<std::uint16_t>(p, count);
  fill_normal_bf16(x, count, seed, 1.0f, stream);
  return x;
}

// C ~ N(0, 32^2) in D's dtype.
void* accumulator(Problem& p, I64 count, bool f32, std::uint64_t seed, cudaStream_t stream) {
  if (f32) {
    float* c = alloc<float>(p, count);
    fill_normal_f32(c, count, seed, kAccumulatorScale, stream);
    return c;
  }
  auto* c = alloc<std::uint16_t>(p, count);
  fill_normal_bf16(c, count, seed, kAccumulatorScale, stream);
  return c;
}

void* output(Problem& p, I64 rows, I64 n, bool f32) {
  p.d_f32 = f32;
  p.d_rows = rows;
  p.n = n;
  p.d = f32 ? static_cast<void*>(alloc<float>(p, rows * n)) : static_cast<void*>(alloc<std::uint16_t>(p, rows * n));
  p.row_kinds.assign(static_cast<std::size_t>(rows), static_cast<std::int8_t>(RowKind::kValid));
  return p.d;
}

DType out_dtype(bool f32) { return f32 ? DType::kFloat32 : DType::kBFloat16; }

// An in-place row: D starts as C, and the call gets D as its C.
TensorView c_view(Problem& p, const Case& c, const void* acc, const TensorView& cv, const TensorView& dv,
                  cudaStream_t stream) {
  if (!c.in_place) return cv;
  p.in_place_c = acc;
  load_in_place_c(p, stream);
  CUDA_CHECK(cudaStreamSynchronize(stream));
  return dv;
}
cudaDataType_t lt_dtype(bool f32) { return f32 ? CUDA_R_32F : CUDA_R_16BF; }

void add_job(Problem& p, const RefJob& job, bool boundary) {
  p.jobs.push_back(job);
  p.boundary.push_back(boundary ? 1 : 0);
}

const float* unit_scale(Problem& p, cudaStream_t stream) {
  float* one = alloc<float>(p, 1);
  fill_f32(one, 1, 1.0f, stream);
  return one;
}

// Expert sizes: int(expected * U(0.7, 1.3)), as the anchor's generators.
std::vector<I64> draw_sizes(int groups, I64 expected, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(0.7, 1.3);
  std::vector<I64> sizes(static_cast<std::size_t>(groups));
  for (I64& s : sizes) s = static_cast<I64>(static_cast<double>(expected) * u(rng));
  return sizes;
}

// What every moegemm call of a problem passes in GemmOptions. The lambda that makes the call holds a copy, so it
// owns the KernelConfig that options.config points to.
struct CallOptions {
  std::optional<moegemm::KernelConfig> config;
  moegemm::ScaleRecipe recipe = moegemm::kRecipe1x128x128;
  moegemm::GemmOptions get() const {
    moegemm::GemmOptions options;
    options.recipe = recipe;
    options.config = config ? &*config : nullptr;
    return options;
  }
};

CallOptions call_options(const std::optional<moegemm::KernelConfig>& config,
                         moegemm::ScaleRecipe recipe = moegemm::kRecipe1x128x128) {
  CallOptions o;
  o.config = config;
  o.recipe = recipe;
  return o;
}

// C of a baseline: the accumulator (beta = 1), or zeros of D's size (beta = 0; see LtProblem::c).
void set_addend(Problem& p, const void* c, LtProblem* lt, cudaStream_t stream) {
  if (c != nullptr) {
    lt->c = c;
    lt->beta = 1.0f;
    return;
  }
  if (p.zero_c == nullptr) {
    const std::size_t bytes = static_cast<std::size_t>(p.d_rows * p.n) * (p.d_f32 ? 4 : 2);
    p.buffers.emplace_back(bytes);
    CUDA_CHECK(cudaMemsetAsync(p.buffers.back().get(), 0, bytes, stream));
    p.zero_c = p.buffers.back().get();
  }
  lt->c = p.zero_c;
  lt->beta = 0.0f;
}

// The per-tensor FP8 baseline of one dense GEMM with the same FLOPs (scales of 1: not the checked product).
BaselineSpec per_tensor_baseline(Problem& p, I64 m, I64 n, I64 k, const void* a, const void* b, const void* c,
                                 cudaStream_t stream) {
  const float* one = unit_scale(p, stream);
  BaselineSpec spec;
  spec.name = "cublasLt-pt";
  spec.lt = fp8_per_tensor(m, n, k, a, b, p.d, lt_dtype(p.d_f32), one, one);
  set_addend(p, c, &spec.lt, stream);
  return spec;
}

// Re-lays a scale tensor (scale of (row, kb) at src[row * src_rs + kb * src_ks]) into `layout`, in a buffer with
// the layout's safety margin; the margin and the rounding padding hold 1.0.
float* pack_lt_scales(Problem& p, const LtScaleLayout& layout, const float* src, I64 src_rs, I64 src_ks,
                      cudaStream_t stream) {
  float* dst = alloc<float>(p, layout.alloc);
  fill_f32(dst, layout.alloc, 1.0f, stream);
  copy_strided_f32(dst, layout.row_stride, layout.kb_stride, src, src_rs, src_ks, layout.rows, layout.k_blocks,
                   stream);
  return dst;
}

// The block-scaled baseline of a dense problem: the same product as moegemm's, checked against the same reference
// rows, in cuBLASLt's scale layouts (lt_baseline.hpp). A's scales come MN-major (row, kb) at kb * a.ld + row; B's at
// (row or row block, kb) with strides (b_sf_rs, b_sf_ks). `probe` is a small case of the same family.
BaselineSpec block_baseline(Problem& p, I64 m, I64 n, I64 k, const TokenFp8& a, const void* b_q, const float* b_sf_src,
                            I64 b_sf_rs, I64 b_sf_ks, bool b_per_row, const void* c, const Case& probe,
                            cudaStream_t stream) {
  BaselineSpec spec;
  spec.name = "cublasLt-blk";
  const cudaDataType_t dt = lt_dtype(p.d_f32);
  spec.unavailable = lt_block_scaling_unsupported(m, n, k, dt);
  if (!spec.unavailable.empty()) return spec;
  const float* sfa = pack_lt_scales(p, lt_vec128_layout(m, k), a.sf, 1, a.ld, stream);
  const LtScaleLayout b_layout = b_per_row ? lt_vec128_layout(n, k) : lt_blk128_layout(n, k);
  const float* sfb = pack_lt_scales(p, b_layout, b_sf_src, b_sf_rs, b_sf_ks, stream);
  spec.lt = fp8_block_scaled(m, n, k, a.q, b_q, p.d, dt, sfa, sfb, b_per_row);
  set_addend(p, c, &spec.lt, stream);
  spec.check_jobs = p.jobs;
  spec.probe_key = spec.name + (b_per_row ? " 1D1D" : " 1D2D") + (p.d_f32 ? " f32" : " bf16") + (c ? " +C" : "");
  spec.probe = probe;
  return spec;
}

// The probe of a dense family: small, every documented rule met, and the L4 padding of the 128x128 scales
// exercised (K = 640: 5 blocks, columns 8 apart).
Case probe_case(const Case& c) {
  Case probe = c;
  probe.m = 256;
  probe.n = 384;
  probe.k = 640;
  probe.tag = "probe";
  return probe;
}

// ---- FP8 ----------------------------------------------------------------------------------------------------------

void fp8_dense(Problem& p, const Case& c, const CallOptions& o, cudaStream_t stream) {
  const I64 m = c.m, n = c.n, k = c.k, kb = ceil128(k), nb = ceil128(n);
  const TokenFp8 a = token_fp8(p, 1, m, k, c.seed + 1, stream);
  const BlockFp8 b = block_fp8(p, 1, n, k, c.seed + 2, stream);
  output(p, m, n, false);
  const moegemm::Fp8Operand av{TensorView::contiguous(a.q, DType::kFloat8E4M3, {m, k}),
                               TensorView::strided(a.sf, DType::kFloat32, {m, kb}, {1, a.ld})};
  const moegemm::Fp8Operand bv{TensorView::contiguous(b.q, DType::kFloat8E4M3, {n, k}),
                               TensorView::contiguous(b.sf, DType::kFloat32, {nb, kb})};
  const TensorView dv = TensorView::contiguous(p.d, DType::kBFloat16, {m, n});
  p.call = [av, bv, dv, o](cudaStream_t s) { moegemm::fp8_gemm_nt(av, bv, dv, s, o.get()); };
  p.ref = RefOperands{RefInput::kFp8, a.q, b.q, a.sf, b.sf, 128, nullptr, true, p.d, false, n};
  for (I64 r = 0; r < m; ++r)
    add_job(p, RefJob{r * k, 1, r, a.ld, 0, k, 1, 0, kb, 1, k, -1, r * n, 1}, r == 0 || r == m - 1);
  p.flops = 2.0 * m * n * k;
  p.bytes = double(m * k + n * k) + 4.0 * (m * kb + nb * kb) + 2.0 * m * n;
  p.baselines.push_back(per_tensor_baseline(p, m, n, k, a.q, b.q, nullptr, stream));
  p.baselines.push_back(block_baseline(p, m, n, k, a, b.q, b.sf, kb, 1, false, nullptr, probe_case(c), stream));
}

void fp8_wgrad(Problem& p, const Case& c, const CallOptions& o, cudaStream_t stream) {
  const I64 m = c.m, n = c.n, k = c.k, kb = ceil128(k);
  const TokenFp8 a = token_fp8(p, 1, m, k, c.seed + 1, stream);
  const TokenFp8 b = token_fp8(p, 1, n, k, c.seed + 2, stream);
  void* acc = accumulator(p, m * n, true, c.seed + 3, stream);
  output(p, m, n, true);
  const moegemm::Fp8Operand av{TensorView::contiguous(a.q, DType::kFloat8E4M3, {m, k}),
                               TensorView::strided(a.sf, DType::kFloat32, {m, kb}, {1, a.ld})};
  const moegemm::Fp8Operand bv{TensorView::contiguous(b.q, DType::kFloat8E4M3, {n, k}),
                               TensorView::strided(b.sf, DType::kFloat32, {n, kb}, {1, b.ld})};
  const TensorView dv = TensorView::contiguous(p.d, DType::kFloat32, {m, n});
  const TensorView cv = c_view(p, c, acc, TensorView::contiguous(acc, DType::kFloat32, {m, n}), dv, stream);
  p.call = [av, bv, dv, cv, o](cudaStream_t s) { moegemm::fp8_gemm_nt_1d1d(av, bv, dv, &cv, s, o.get()); };
  p.ref = RefOperands{RefInput::kFp8, a.q, b.q, a.sf, b.sf, 1, acc, true, p.d, true, n};
  for (I64 r = 0; r < m; ++r) {
    add_job(p, RefJob{r * k, 1, r, a.ld, 0, k, 1, 0, 1, b.ld, k, r * n, r * n, 1}, r == 0 || r == m - 1);
  }
  p.flops = 2.0 * m * n * k;
  p.bytes = double(m * k + n * k) + 4.0 * kb * (m + n) + 8.0 * m * n;
  p.baselines.push_back(per_tensor_baseline(p, m, n, k, a.q, b.q, acc, stream));
  p.baselines.push_back(block_baseline(p, m, n, k, a, b.q, b.sf, 1, b.ld, true, acc, probe_case(c), stream));
}

// Expert segments of the contiguous layout: rows [start, start + size) valid, then padding to the next multiple
// of the case's segment alignment (128 but for group ends with --segment-alignment); total is M_total.
struct Segments {
  std::vector<I64> start, size;
  I64 total = 0;
};

Segments contiguous_segments(const Case& c, std::mt19937_64& rng) {
  Segments s;
  for (I64 size : draw_sizes(c.groups, c.expected, rng)) {
    s.start.push_back(s.total);
    s.size.push_back(size);
    s.total += align_to(size, c.segment_alignment);
  }
  return s;
}

// The index in the case's form, and the row kinds: padding rows are zeros in the row-to-expert form and untouched
// gaps in the running-ends form.
moegemm::ContiguousLayout contiguous_layout(Problem& p, const Case& c, const Segments& s, cudaStream_t stream) {
  moegemm::ContiguousLayout layout;
  layout.expected_m_per_group = static_cast<int>(c.expected);
  const auto pad_kind = static_cast<std::int8_t>(c.group_ends ? RowKind::kUntouched : RowKind::kZero);
  for (I64 g = 0; g < c.groups; ++g) {
    for (I64 r = s.start[g] + s.size[g]; r < s.start[g] + align_to(s.size[g], c.segment_alignment); ++r) {
      p.row_kinds[r] = pad_kind;
    }
  }
  if (c.group_ends) {
    layout.form = moegemm::ContiguousLayout::Form::kGroupEnds;
    layout.segment_alignment = c.segment_alignment;
    std::vector<std::int32_t> ends;
    for (I64 g = 0; g < c.groups; ++g) ends.push_back(static_cast<std::int32_t>(s.start[g] + s.size[g]));
    layout.index = TensorView::contiguous(upload(p, ends, stream), DType::kInt32, {c.groups});
  } else {
    layout.form = moegemm::ContiguousLayout::Form::kRowToGroup;
    std::vector<std::int32_t> rows(static_cast<std::size_t>(s.total), -1);
    for (I64 g = 0; g < c.groups; ++g) {
      std::fill_n(rows.begin() + s.start[g], s.size[g], static_cast<std::int32_t>(g));
    }
    layout.index = TensorView::contiguous(upload(p, rows, stream), DType::kInt32, {s.total});
  }
  p.note = "M_total=" + std::to_string(s.total);
  return layout;
}

void fp8_contiguous(Problem& p, const Case& c, const CallOptions& o, cudaStream_t stream) {
  std::mt19937_64 rng(c.seed);
  const Segments s = contiguous_segments(c, rng);
  const I64 m = s.total, n = c.n, k = c.k, kb = ceil128(k), nb = ceil128(n), g_count = c.groups;
  const TokenFp8 a = token_fp8(p, 1, m, k, c.seed + 1, stream);
  const BlockFp8 b = block_fp8(p, g_count, n, k, c.seed + 2, stream);
  output(p, m, n, false);
  const moegemm::ContiguousLayout layout = contiguous_layout(p, c, s, stream);
  const moegemm::Fp8Operand av{TensorView::contiguous(a.q, DType::kFloat8E4M3, {m, k}),
                               TensorView::strided(a.sf, DType::kFloat32, {m, kb}, {1, a.ld})};
  const moegemm::Fp8Operand bv{TensorView::contiguous(b.q, DType::kFloat8E4M3, {g_count, n, k}),
                               TensorView::contiguous(b.sf, DType::kFloat32, {g_count, nb, kb})};
  const TensorView dv = TensorView::contiguous(p.d, DType::kBFloat16, {m, n});
  p.call = [av, bv, dv, layout, o](cudaStream_t st) {
    moegemm::m_grouped_fp8_gemm_nt_contiguous(av, bv, dv, layout, st, o.get());
  };
  p.ref = RefOperands{RefInput::kFp8, a.q, b.q, a.sf, b.sf, 128, nullptr, true, p.d, false, n};
  for (I64 g = 0; g < g_count; ++g) {
    for (I64 r = s.start[g]; r < s.start[g] + s.size[g]; ++r) {
      add_job(p, RefJob{r * k, 1, r, a.ld, g * n * k, k, 1, g * nb * kb, kb, 1, k, -1, r * n, 1},
              r == s.start[g] || r == s.start[g] + s.size[g] - 1);
    }
  }
  p.flops = 2.0 * m * n * k;  // padding rows included, as the anchor counts
  p.bytes = double(m * k + g_count * n * k) + 4.0 * (m * kb + g_count * nb * kb) + 2.0 * m * n;
  p.baselines.push_back(per_tensor_baseline(p, m, n, k, a.q, b.q, nullptr, stream));
}

std::vector<I64> masked_counts(const Case& c, Problem& p) {
  std::mt19937_64 rng(c.seed);
  std::vector<I64> valid = draw_sizes(c.groups, c.expected, rng);
  I64 total = 0;
  for (I64& v : valid) {
    v = std::clamp<I64>(v, 0, c.capacity);
    total += v;
  }
  p.note = "valid=" + std::to_string(total);
  return valid;
}

moegemm::MaskedLayout masked_layout(Problem& p, const Case& c, const std::vector<I64>& valid, cudaStream_t stream) {
  std::vector<std::int32_t> counts(valid.begin(), valid.end());
  for (I64 g = 0; g < c.groups; ++g) {
    for (I64 r = valid[g]; r < c.capacity; ++r)
      p.row_kinds[g * c.capacity + r] = static_cast<std::int8_t>(RowKind::kUntouched);
  }
  moegemm::MaskedLayout layout;
  layout.valid_rows = TensorView::contiguous(upload(p, counts, stream), DType::kInt32, {c.groups});
  layout.expected_m = static_cast<int>(c.expected);
  return layout;
}

void fp8_masked(Problem& p, const Case& c, const CallOptions& o, cudaStream_t stream) {
  const std::vector<I64> valid = masked_counts(c, p);
  const I64 cap = c.capacity, n = c.n, k = c.k, kb = ceil128(k), nb = ceil128(n), g_count = c.groups;
  const TokenFp8 a = token_fp8(p, g_count, cap, k, c.seed + 1, stream);
  const BlockFp8 b = block_fp8(p, g_count, n, k, c.seed + 2, stream);
  output(p, g_count * cap, n, false);
  const moegemm::MaskedLayout layout = masked_layout(p, c, valid, stream);
  const moegemm::Fp8Operand av{TensorView::contiguous(a.q, DType::kFloat8E4M3, {g_count, cap, k}),
                               TensorView::strided(a.sf, DType::kFloat32, {g_count, cap, kb}, {a.ld * kb, 1, a.ld})};
  const moegemm::Fp8Operand bv{TensorView::contiguous(b.q, DType::kFloat8E4M3, {g_count, n, k}),
                               TensorView::contiguous(b.sf, DType::kFloat32, {g_count, nb, kb})};
  const TensorView dv = TensorView::contiguous(p.d, DType::kBFloat16, {g_count, cap, n});
  p.call = [av, bv, dv, layout, o](cudaStream_t st) {
    moegemm::m_grouped_fp8_gemm_nt_masked(av, bv, dv, layout, st, o.get());
  };
  p.ref = RefOperands{RefInput::kFp8, a.q, b.q, a.sf, b.sf, 128, nullptr, true, p.d, false, n};
  I64 total = 0;
  for (I64 g = 0; g < g_count; ++g) {
    for (I64 r = 0; r < valid[g]; ++r) {
      const I64 row = g * cap + r;
      add_job(p, RefJob{row * k, 1, g * a.ld * kb + r, a.ld, g * n * k, k, 1, g * nb * kb, kb, 1, k, -1, row * n, 1},
              r == 0 || r == valid[g] - 1);
    }
    total += valid[g];
  }
  p.flops = 2.0 * total * n * k;  // valid rows only
  p.bytes = double(total * k + g_count * n * k) + 4.0 * (total * kb + g_count * nb * kb) + 2.0 * total * n;
  if (total > 0) p.baselines.push_back(per_tensor_baseline(p, total, n, k, a.q, b.q, nullptr, stream));
}

// K per expert: align(max(1, int(expected * U(0.7, 1.3))), 128), as the anchor's k-grouped generator.
std::vector<I64> expert_ks(const Case& c, Problem& p, I64* total) {
  std::mt19937_64 rng(c.seed);
  std::vector<I64> ks = draw_sizes(c.groups, c.expected, rng);
  *total = 0;
  for (I64& k : ks) {
    k = align128(std::max<I64>(1, k));
    *total += k;
  }
  p.note = "sumK=" + std::to_string(*total);
  return ks;
}

moegemm::KGroupedLayout kgrouped_layout(Problem& p, const std::vector<I64>& ks, cudaStream_t stream) {
  moegemm::KGroupedLayout layout;
  layout.ks = ks;
  std::vector<std::int32_t> device_ks(ks.begin(), ks.end());
  layout.ks_device = TensorView::contiguous(upload(p, device_ks, stream), DType::kInt32, {static_cast<I64>(ks.size())});
  return layout;
}

void fp8_kgrouped(Problem& p, const Case& c, const CallOptions& o, cudaStream_t stream) {
  I64 sum_k = 0;
  const std::vector<I64> ks = expert_ks(c, p, &sum_k);
  const I64 m = c.m, n = c.n, g_count = c.groups, kb_total = sum_k / 128;
  const I64 lda = tma_ld(m), ldb = tma_ld(n);
  auto* a_q = alloc<std::uint8_t>(p, m * sum_k);
  auto* b_q = alloc<std::uint8_t>(p, n * sum_k);
  float* sfa = alloc<float>(p, lda * kb_total);
  float* sfb = alloc<float>(p, ldb * kb_total);
  fill_f32(sfa, lda * kb_total, 1.0f, stream);
  fill_f32(sfb, ldb * kb_total, 1.0f, stream);
  {
    // Each expert's block is a K-major [rows, K_g] matrix cast per row x 128 tokens into its columns of the scales.
    DeviceBuffer a_x(static_cast<std::size_t>(m * sum_k) * 2), b_x(static_cast<std::size_t>(n * sum_k) * 2);
    fill_normal_bf16(a_x.get<std::uint16_t>(), m * sum_k, c.seed + 1, 1.0f, stream);
    fill_normal_bf16(b_x.get<std::uint16_t>(), n * sum_k, c.seed + 2, 1.0f, stream);
    I64 prefix = 0;
    for (I64 kg : ks) {
      cast_rows_1x128(a_x.get<std::uint16_t>() + m * prefix, m, kg, kg, a_q + m * prefix, kg,
                      sfa + (prefix / 128) * lda, 1, lda, stream);
      cast_rows_1x128(b_x.get<std::uint16_t>() + n * prefix, n, kg, kg, b_q + n * prefix, kg,
                      sfb + (prefix / 128) * ldb, 1, ldb, stream);
      prefix += kg;
    }
    CUDA_CHECK(cudaStreamSynchronize(stream));
  }
  void* acc = accumulator(p, g_count * m * n, true, c.seed + 3, stream);
  output(p, g_count * m, n, true);
  const moegemm::KGroupedLayout layout = kgrouped_layout(p, ks, stream);
  const moegemm::Fp8Operand av{TensorView::contiguous(a_q, DType::kFloat8E4M3, {m * sum_k}),
                               TensorView::strided(sfa, DType::kFloat32, {m, kb_total}, {1, lda})};
  const moegemm::Fp8Operand bv{TensorView::contiguous(b_q, DType::kFloat8E4M3, {n * sum_k}),
                               TensorView::strided(sfb, DType::kFloat32, {n, kb_total}, {1, ldb})};
  const TensorView dv = TensorView::contiguous(p.d, DType::kFloat32, {g_count, m, n});
  const TensorView cv =
      c_view(p, c, acc, TensorView::contiguous(acc, DType::kFloat32, {g_count, m, n}), dv, stream);
  p.call = [av, bv, dv, cv, layout, o](cudaStream_t st) {
    moegemm::k_grouped_fp8_gemm_nt(av, bv, dv, &cv, layout, st, o.get());
  };
  p.ref = RefOperands{RefInput::kFp8, a_q, b_q, sfa, sfb, 1, acc, true, p.d, true, n};
  I64 prefix = 0;
  for (I64 g = 0; g < g_count; ++g) {
    const I64 kg = ks[g];
    for (I64 r = 0; r < m; ++r) {
      const I64 row = g * m + r;
      add_job(p,
              RefJob{m * prefix + r * kg, 1, r + (prefix / 128) * lda, lda, n * prefix, kg, 1, (prefix / 128) * ldb, 1,
                     ldb, kg, row * n, row * n, 1},
              r == 0 || r == m - 1);
    }
    prefix += kg;
  }
  p.flops = 2.0 * m * n * sum_k;
  p.bytes = double((m + n) * sum_k) + 4.0 * kb_total * (m + n) + 8.0 * g_count * m * n;
  p.baselines.push_back(per_tensor_baseline(p, m, n, sum_k, a_q, b_q, acc, stream));
}

// ---- BF16 ---------------------------------------------------------------------------------------------------------

BaselineSpec bf16_baseline(Problem& p, I64 m, I64 n, I64 k, const void* a, bool a_mn, const void* b, bool b_mn,
                           const void* c, bool checkable, cudaStream_t stream) {
  BaselineSpec spec;
  spec.name = "cublasLt-bf16";
  spec.lt = bf16_gemm(m, n, k, a, a_mn, b, b_mn, p.d, lt_dtype(p.d_f32));
  set_addend(p, c, &spec.lt, stream);
  if (checkable) spec.check_jobs = p.jobs;
  return spec;
}

void bf16_dense(Problem& p, const Case& c, const CallOptions& o, cudaStream_t stream) {
  const I64 m = c.m, n = c.n, k = c.k;
  auto* a = bf16_random(p, m * k, c.seed + 1, stream);
  auto* b = bf16_random(p, n * k, c.seed + 2, stream);
  void* acc = c.accumulate ? accumulator(p, m * n, c.d_f32, c.seed + 3, stream) : nullptr;
  output(p, m, n, c.d_f32);
  // MN-major operands: [rows, K] views of [K, rows] storage.
  const TensorView av = c.a_mn_major ? TensorView::strided(a, DType::kBFloat16, {m, k}, {1, m})
                                     : TensorView::contiguous(a, DType::kBFloat16, {m, k});
  const TensorView bv = c.b_mn_major ? TensorView::strided(b, DType::kBFloat16, {n, k}, {1, n})
                                     : TensorView::contiguous(b, DType::kBFloat16, {n, k});
  const TensorView dv = TensorView::contiguous(p.d, out_dtype(c.d_f32), {m, n});
  const bool has_c = acc != nullptr;
  const TensorView cv =
      has_c ? c_view(p, c, acc, TensorView::contiguous(acc, out_dtype(c.d_f32), {m, n}), dv, stream) : dv;
  p.call = [av, bv, dv, cv, has_c, o](cudaStream_t st) {
    moegemm::bf16_gemm(av, bv, dv, has_c ? &cv : nullptr, st, o.get());
  };
  p.ref = RefOperands{RefInput::kBf16, a, b, nullptr, nullptr, 1, acc, c.d_f32, p.d, c.d_f32, n};
  for (I64 r = 0; r < m; ++r) {
    add_job(p,
            RefJob{c.a_mn_major ? r : r * k, c.a_mn_major ? m : 1, 0, 0, 0, c.b_mn_major ? 1 : k, c.b_mn_major ? n : 1,
                   0, 0, 0, k, has_c ? r * n : -1, r * n, 1},
            r == 0 || r == m - 1);
  }
  p.threshold = kBf16Threshold;
  p.flops = 2.0 * m * n * k;
  p.bytes = 2.0 * (m * k + n * k) + (c.d_f32 ? 4.0 : 2.0) * m * n * (has_c ? 2 : 1);
  p.baselines.push_back(bf16_baseline(p, m, n, k, a, c.a_mn_major, b, c.b_mn_major, acc, true, stream));
}

void bf16_contiguous(Problem& p, const Case& c, const CallOptions& o, cudaStream_t stream) {
  std::mt19937_64 rng(c.seed);
  const Segments s = contiguous_segments(c, rng);
  const I64 m = s.total, n = c.n, k = c.k, g_count = c.groups;
  auto* a = bf16_random(p, m * k, c.seed + 1, stream);
  auto* b = bf16_random(p, g_count * n * k, c.seed + 2, stream);
  output(p, m, n, false);
  const moegemm::ContiguousLayout layout = contiguous_layout(p, c, s, stream);
  const TensorView av = TensorView::contiguous(a, DType::kBFloat16, {m, k});
  const TensorView bv = c.b_mn_major ? TensorView::strided(b, DType::kBFloat16, {g_count, n, k}, {n * k, 1, n})
                                     : TensorView::contiguous(b, DType::kBFloat16, {g_count, n, k});
  const TensorView dv = TensorView::contiguous(p.d, DType::kBFloat16, {m, n});
  p.call = [av, bv, dv, layout, o](cudaStream_t st) {
    moegemm::m_grouped_bf16_gemm_contiguous(av, bv, dv, layout, st, o.get());
  };
  p.ref = RefOperands{RefInput::kBf16, a, b, nullptr, nullptr, 1, nullptr, false, p.d, false, n};
  for (I64 g = 0; g < g_count; ++g) {
    for (I64 r = s.start[g]; r < s.start[g] + s.size[g]; ++r) {
      add_job(p,
              RefJob{r * k, 1, 0, 0, g * n * k, c.b_mn_major ? 1 : k, c.b_mn_major ? n : 1, 0, 0, 0, k, -1, r * n, 1},
              r == s.start[g] || r == s.start[g] + s.size[g] - 1);
    }
  }
  p.threshold = kBf16Threshold;
  p.flops = 2.0 * m * n * k;
  p.bytes = 2.0 * (m * k + g_count * n * k) + 2.0 * m * n;
  p.baselines.push_back(bf16_baseline(p, m, n, k, a, false, b, c.b_mn_major, nullptr, false, stream));
}

void bf16_masked(Problem& p, const Case& c, const CallOptions& o, cudaStream_t stream) {
  const std::vector<I64> valid = masked_counts(c, p);
  const I64 cap = c.capacity, n = c.n, k = c.k, g_count = c.groups;
  auto* a = bf16_random(p, g_count * cap * k, c.seed + 1, stream);
  auto* b = bf16_random(p, g_count * n * k, c.seed + 2, stream);
  output(p, g_count * cap, n, false);
  const moegemm::MaskedLayout layout = masked_layout(p, c, valid, stream);
  const TensorView av = TensorView::contiguous(a, DType::kBFloat16, {g_count, cap, k});
  const TensorView bv = TensorView::contiguous(b, DType::kBFloat16, {g_count, n, k});
  const TensorView dv = TensorView::contiguous(p.d, DType::kBFloat16, {g_count, cap, n});
  p.call = [av, bv, dv, layout, o](cudaStream_t st) {
    moegemm::m_grouped_bf16_gemm_masked(av, bv, dv, layout, st, o.get());
  };
  p.ref = RefOperands{RefInput::kBf16, a, b, nullptr, nullptr, 1, nullptr, false, p.d, false, n};
  I64 total = 0;
  for (I64 g = 0; g < g_count; ++g) {
    for (I64 r = 0; r < valid[g]; ++r) {
      const I64 row = g * cap + r;
      add_job(p, RefJob{row * k, 1, 0, 0, g * n * k, k, 1, 0, 0, 0, k, -1, row * n, 1}, r == 0 || r == valid[g] - 1);
    }
    total += valid[g];
  }
  p.threshold = kBf16Threshold;
  p.flops = 2.0 * total * n * k;
  p.bytes = 2.0 * (total * k + g_count * n * k) + 2.0 * total * n;
  if (total > 0) p.baselines.push_back(bf16_baseline(p, total, n, k, a, false, b, false, nullptr, false, stream));
}

void bf16_kgrouped(Problem& p, const Case& c, const CallOptions& o, cudaStream_t stream) {
  I64 sum_k = 0;
  const std::vector<I64> ks = expert_ks(c, p, &sum_k);
  const I64 m = c.m, n = c.n, g_count = c.groups;
  auto* a = bf16_random(p, sum_k * m, c.seed + 1, stream);  // [sum K, M]
  auto* b = bf16_random(p, sum_k * n, c.seed + 2, stream);  // [sum K, N]
  void* acc = accumulator(p, g_count * m * n, true, c.seed + 3, stream);
  output(p, g_count * m, n, true);
  const moegemm::KGroupedLayout layout = kgrouped_layout(p, ks, stream);
  const TensorView av = TensorView::contiguous(a, DType::kBFloat16, {sum_k, m});
  const TensorView bv = TensorView::contiguous(b, DType::kBFloat16, {sum_k, n});
  const TensorView dv = TensorView::contiguous(p.d, DType::kFloat32, {g_count, m, n});
  const TensorView cv =
      c_view(p, c, acc, TensorView::contiguous(acc, DType::kFloat32, {g_count, m, n}), dv, stream);
  p.call = [av, bv, dv, cv, layout, o](cudaStream_t st) {
    moegemm::k_grouped_bf16_gemm_tn(av, bv, dv, &cv, layout, st, o.get());
  };
  p.ref = RefOperands{RefInput::kBf16, a, b, nullptr, nullptr, 1, acc, true, p.d, true, n};
  I64 prefix = 0;
  for (I64 g = 0; g < g_count; ++g) {
    for (I64 r = 0; r < m; ++r) {
      const I64 row = g * m + r;
      add_job(p, RefJob{prefix * m + r, m, 0, 0, prefix * n, 1, n, 0, 0, 0, ks[g], row * n, row * n, 1},
              r == 0 || r == m - 1);
    }
    prefix += ks[g];
  }
  p.threshold = kBf16Threshold;
  p.flops = 2.0 * m * n * sum_k;
  p.bytes = 2.0 * (m + n) * sum_k + 8.0 * g_count * m * n;
  p.baselines.push_back(bf16_baseline(p, m, n, sum_k, a, true, b, true, acc, false, stream));
}

}  // namespace

void load_in_place_c(const Problem& p, cudaStream_t stream) {
  CUDA_CHECK(cudaMemcpyAsync(p.d, p.in_place_c, static_cast<std::size_t>(p.d_rows * p.n) * (p.d_f32 ? 4 : 2),
                             cudaMemcpyDeviceToDevice, stream));
}

std::unique_ptr<Problem> make_problem(const Case& c, const std::optional<moegemm::KernelConfig>& config,
                                      cudaStream_t stream) {
  auto p = std::make_unique<Problem>();
  p->buffers.reserve(32);
  // One set of options for the (1,128,128) FP8 and the BF16 calls (BF16 takes no scale recipe); forced_config has
  // already given a forced configuration its family's K step.
  const CallOptions options = call_options(config);
  const CallOptions fp8_1d1d = call_options(config, moegemm::kRecipe1x1x128);
  switch (c.family) {
    case Family::kFp8Dense:
      fp8_dense(*p, c, options, stream);
      break;
    case Family::kFp8Wgrad:
      fp8_wgrad(*p, c, fp8_1d1d, stream);
      break;
    case Family::kFp8Contiguous:
      fp8_contiguous(*p, c, options, stream);
      break;
    case Family::kFp8Masked:
      fp8_masked(*p, c, options, stream);
      break;
    case Family::kFp8KGrouped:
      fp8_kgrouped(*p, c, fp8_1d1d, stream);
      break;
    case Family::kBf16Dense:
      bf16_dense(*p, c, options, stream);
      break;
    case Family::kBf16Contiguous:
      bf16_contiguous(*p, c, options, stream);
      break;
    case Family::kBf16Masked:
      bf16_masked(*p, c, options, stream);
      break;
    case Family::kBf16KGrouped:
      bf16_kgrouped(*p, c, options, stream);
      break;
  }
  CUDA_CHECK(cudaStreamSynchronize(stream));
  return p;
}

}  // namespace moegemm::bench
