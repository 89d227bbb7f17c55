#include "launch/gemm_launch.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "common/scheduler.cuh"
#include "launch/kgrouped_descriptors.hpp"
#include "launch/tma.hpp"
#include "moegemm/error.hpp"
#include "moegemm/layouts.hpp"
#include "runtime/kernel_cache.hpp"
#include "runtime/launch.hpp"
#include "sm90/gemm_params.cuh"

namespace moegemm::launch {
namespace {

using kernels::GroupedKind;
using kernels::SchedulerProblem;
using kernels::sm90::GemmParams;
using kernels::sm90::kFp8BlockK;

// The kernels cannot include the public headers: their copies of the layout's constants and rule must agree.
static_assert(kContiguousAlignment == kernels::kGroupEndsAlignment &&
                  kMaxSegmentAlignment == kernels::kMaxSegmentAlignment,
              "include/moegemm/layouts.hpp and kernels/common/scheduler.cuh disagree on the segment alignments");
constexpr bool segment_alignment_rules_agree() {
  for (int a = -2; a <= 2 * kMaxSegmentAlignment + 1; ++a) {
    if (is_valid_segment_alignment(a) != kernels::is_segment_alignment(a)) return false;
  }
  return true;
}
static_assert(segment_alignment_rules_agree(), "the host's and the kernels' segment alignment rules disagree");

// MOEGEMM_LAUNCH_VERBOSE=1: one line per launch on stderr (grid, cluster residency), for tuning.
bool launch_verbose() {
  static const bool verbose = [] {
    const char* v = std::getenv("MOEGEMM_LAUNCH_VERBOSE");
    return v != nullptr && v[0] == '1';
  }();
  return verbose;
}

// The segment alignment a kernel is specialised on: the call's for the group-ends layout, the default otherwise (the
// other layouts do not read it, and one kernel serves them).
int kernel_segment_alignment(GroupedKind layout, int segment_alignment) {
  return layout == GroupedKind::kContiguousGroupEnds ? segment_alignment : kernels::kGroupEndsAlignment;
}

}  // namespace

int gemm_fixed_k_blocks(const KernelConfig& c, GroupedKind layout, int recipe, long long k) {
  // MOEGEMM_JIT_FIXED_K=0: every kernel reads K at run time (experiments: A/B against the specialised kernels).
  static const bool fixed_k_off = [] {
    const char* v = std::getenv("MOEGEMM_JIT_FIXED_K");
    return v != nullptr && std::string(v) == "0";
  }();
  if (fixed_k_off || k <= 0 ||
      !kernels::sm90::gemm_fixed_k_supported(recipe, static_cast<int>(layout), c.block_m, c.k_splits)) {
    return 0;
  }
  return static_cast<int>((k + kFp8BlockK - 1) / kFp8BlockK);
}

std::string gemm_kernel_key(const KernelConfig& c, GroupedKind layout, int recipe, int mn_major,
                            int segment_alignment, long long k) {
  const int alignment = kernel_segment_alignment(layout, segment_alignment);
  const int fixed_kb = gemm_fixed_k_blocks(c, layout, recipe, k);
  return "sm90_fp8_1d2d/bm" + std::to_string(c.block_m) + "/bn" + std::to_string(c.block_n) + "/st" +
         std::to_string(c.stages) + "/layout" + std::to_string(static_cast<int>(layout)) + "/cm" +
         std::to_string(c.cluster_m) + "/recipe" + std::to_string(recipe) + "/mn" + std::to_string(mn_major) +
         (c.cluster_n > 1 ? "/cn" + std::to_string(c.cluster_n) : std::string()) +
         (c.k_splits > 1 ? "/ks" + std::to_string(c.k_splits) : std::string()) +
         (alignment != kernels::kGroupEndsAlignment ? "/sa" + std::to_string(alignment) : std::string()) +
         (fixed_kb > 0 ? "/kb" + std::to_string(fixed_kb) : std::string());
}

jit::KernelSpec gemm_kernel_spec(const KernelConfig& c, GroupedKind layout, int recipe, int mn_major,
                                 int segment_alignment, long long k) {
  const int alignment = kernel_segment_alignment(layout, segment_alignment);
  const int fixed_kb = gemm_fixed_k_blocks(c, layout, recipe, k);
  jit::KernelSpec spec;
  spec.name = gemm_kernel_key(c, layout, recipe, mn_major, segment_alignment, k);
  // The template's trailing parameters (k_splits, the segment alignment, the fixed K blocks) are written only where
  // they differ from their defaults: the default's kernels are named as before.
  std::string trailing;
  if (fixed_kb > 0) {
    trailing = ", " + std::to_string(c.k_splits) + ", " + std::to_string(alignment) + ", " + std::to_string(fixed_kb);
  } else if (alignment != kernels::kGroupEndsAlignment) {
    trailing = ", " + std::to_string(c.k_splits) + ", " + std::to_string(alignment);
  } else if (c.k_splits > 1) {
    trailing = ", " + std::to_string(c.k_splits);
  }
  spec.name_expression =
      "moegemm::kernels::sm90::gemm_kernel<" + std::to_string(c.block_m) + ", " + std::to_string(c.block_n) + ", " +
      std::to_string(c.stages) + ", " + std::to_string(static_cast<int>(layout)) + ", " + std::to_string(c.cluster_m) +
      ", " + std::to_string(recipe) + ", " + std::to_string(mn_major) + ", " + std::to_string(c.cluster_n) +
      trailing + ">";
  spec.source = "#include \"sm90/gemm.cuh\"\n";
  return spec;
}

void launch_gemm(const GemmLaunch& a, const KernelConfig& c, bool pdl, Stream stream) {
  const bool masked = a.layout == GroupedKind::kMasked;
  const int pair = c.cluster_m * c.cluster_n;
  if (pair != 1 && (pair != 2 || a.layout == GroupedKind::kContiguousRowToGroup)) {
    throw Error(ErrorCode::kInternal, "fp8 1d2d: cluster " + std::to_string(c.cluster_m) + "x" +
                                          std::to_string(c.cluster_n) + " for this layout");
  }
  if (!kernels::sm90::gemm_split_k_supported(a.recipe, static_cast<int>(a.layout), c.block_m, c.block_n,
                                             c.k_splits) ||
      (c.k_splits > 1 && pair != 1)) {
    throw Error(ErrorCode::kInternal, "launch: K split " + std::to_string(c.k_splits) + " ways for this configuration");
  }
  // A cluster: a multicast pair, or the CTAs that split one tile's K.
  const int cluster = pair * c.k_splits;
  if (c.cluster_n != 1 && !kernels::sm90::gemm_pair_along_n_supported(a.recipe, static_cast<int>(a.layout), c.block_m,
                                                                       (a.mn_major & 1) != 0)) {
    throw Error(ErrorCode::kInternal, "launch: cluster_n 2 (A shared along N): see gemm_pair_along_n_supported");
  }
  const int num_kb = (a.k + kFp8BlockK - 1) / kFp8BlockK;

  GemmParams p{};
  SchedulerProblem& prob = p.problem;
  prob.kind = a.layout;
  prob.num_groups = a.num_groups;
  prob.rows = a.rows;
  prob.n = a.n;
  prob.k = a.k;
  // With a cluster the scheduler hands out pair tiles of 2 * block_m rows (cluster_m 2) or 2 * block_n columns
  // (cluster_n 2); each CTA takes one half.
  prob.block_m = c.block_m * c.cluster_m;
  prob.block_n = c.block_n * c.cluster_n;
  const int m_blocks = std::max(1, (a.rows + prob.block_m - 1) / prob.block_m);
  const int n_blocks = (a.n + prob.block_n - 1) / prob.block_n;
  // A forced band (KernelConfig::raster_band, experiments) counts pair tiles, as the scheduler's m-blocks do.
  prob.band = c.raster_band > 0 ? c.raster_band
                                : kernels::pick_raster_band(m_blocks, n_blocks, prob.block_m, prob.block_n,
                                                            c.num_sms / cluster);
  prob.routing = a.routing;
  // K-grouped with a C distinct from D (c set): experts with K_g = 0 get tiles too (empty reduction), so D[g] = C[g].
  prob.kgrouped_empty_experts_store = a.layout == GroupedKind::kKGrouped && a.c != nullptr ? 1 : 0;

  p.sfb = a.sfb;
  p.sfb_group_stride = a.sfb_group_stride;
  p.sfb_n_stride = a.sfb_n_stride;
  p.sfb_k_stride = a.sfb_k_stride;
  const bool row_scaled_b = a.recipe == static_cast<int>(kernels::sm90::GemmRecipe::kFp8_1d1d);
  if (kernels::sm90::recipe_has_fp32_out(a.recipe)) {
    p.d_f32 = static_cast<float*>(a.d);
    p.c_f32 = static_cast<const float*>(a.c);
    p.ldc = a.ldc;
    p.add_c = a.add_c ? 1 : 0;
  } else {
    p.d = static_cast<unsigned short*>(a.d);
    if (a.recipe == static_cast<int>(kernels::sm90::GemmRecipe::kBf16AddC)) {
      if (a.c == nullptr) throw Error(ErrorCode::kInternal, "BF16 D with C: launched without C");
      p.c_bf16 = static_cast<const unsigned short*>(a.c);
      p.ldc = a.ldc;
    }
  }
  p.ldd = a.ldd;
  p.d_group_stride = masked ? a.d_group_stride : 0;
  p.d_rows_per_group = masked ? a.rows : 0;

  TmaSpec ta;
  ta.what = "a.data";
  ta.base = a.a;
  // Operand bytes per element and K per stage: FP8 1 and 128, BF16 2 and 64 (both 128-byte stage rows).
  const bool bf16 = kernels::sm90::recipe_is_bf16(a.recipe);
  const std::uint64_t esize = bf16 ? 2 : 1;
  const std::uint32_t stage_k = static_cast<std::uint32_t>(kernels::sm90::stage_k(a.recipe));
  ta.element = bf16 ? TmaElement::kBFloat16 : TmaElement::kUint8;
  ta.swizzle_128b = true;
  if (masked) {
    ta.rank = 3;
    ta.dims[0] = a.k, ta.dims[1] = a.rows, ta.dims[2] = a.num_groups;
    ta.strides_bytes[0] = a.lda * esize, ta.strides_bytes[1] = a.a_group_stride * esize;
  } else {
    ta.rank = 2;
    ta.dims[0] = a.k, ta.dims[1] = a.rows;
    ta.strides_bytes[0] = a.lda * esize;
    if (a.mn_major & 1) ta.dims[0] = a.rows, ta.dims[1] = a.k;  // [K, M] storage: M is the contiguous dim
  }
  // K-grouped FP8 replaces the A descriptor per expert (rows = M there too, but keep its box as the template has it).
  const bool kgrouped_fp8 = a.layout == GroupedKind::kKGrouped && row_scaled_b;
  const int a_rows_boxed =
      kernels::sm90::a_box_rows(a.rows, c.block_m, !masked && !(a.mn_major & 1) && !kgrouped_fp8, pair);
  // Sharing A (cluster_n 2), each CTA fetches half of the tile's rows for both. Masked A: boxes of kMaskedABoxRows
  // rows, as many per stage as the tile's valid rows need (its scales' box and tx_bytes stay at block_m rows; the
  // kernel takes the boxes it skips off tx_bytes).
  const int a_copy_rows = masked ? kernels::sm90::kMaskedABoxRows : a_rows_boxed / c.cluster_n;
  ta.box[0] = stage_k, ta.box[1] = static_cast<std::uint32_t>(a_copy_rows), ta.box[2] = 1;
  if (a.mn_major & 1) ta.box[0] = 64, ta.box[1] = stage_k;  // [64 K][64 M] boxes, block_m / 64 per stage
  // K-grouped FP8: a template for the per-expert descriptors (kgrouped_descriptors.cuh replaces address, K extent
  // and row stride per expert), [rows, 128] K-major uint8 with the kernel's box.
  if (kgrouped_fp8) ta.rank = 2, ta.dims[0] = kFp8BlockK, ta.dims[1] = a.rows, ta.strides_bytes[0] = kFp8BlockK;
  p.tma_a = make_tma_descriptor(ta);
  p.tx_bytes = kernels::sm90::gemm_stage_tx_bytes(a_rows_boxed, c.block_n, a.recipe);
  // Packed FP8 group ends (gemm_sfa_shifted): A's scales come in two boxes, the tile's rows and a 4-row tail.
  const bool sfa_shifted = kernels::sm90::gemm_sfa_shifted(a.recipe, static_cast<int>(a.layout),
                                                           kernel_segment_alignment(a.layout, a.segment_alignment));
  if (sfa_shifted) p.tx_bytes += static_cast<unsigned>(kernels::sm90::kSfaTailRows * 4);

  TmaSpec tb;
  tb.what = "b.data";
  tb.base = a.b;
  tb.element = ta.element;
  tb.swizzle_128b = true;
  tb.rank = 3;
  tb.dims[0] = a.k, tb.dims[1] = a.n, tb.dims[2] = a.num_groups;
  tb.strides_bytes[0] = a.ldb * esize;
  tb.strides_bytes[1] = (a.num_groups > 1 ? a.b_group_stride : a.ldb * a.n) * esize;
  if (a.layout == GroupedKind::kKGrouped) {  // one [sum K, N] matrix shared by every expert's K range
    tb.dims[2] = 1;
    tb.strides_bytes[1] = a.ldb * a.k * esize;
  }
  tb.box[0] = stage_k, tb.box[1] = static_cast<std::uint32_t>(c.block_n / c.cluster_m), tb.box[2] = 1;
  if (a.mn_major & 2) {  // [G][K, N] storage, N contiguous: [64 K][64 N] boxes, block_n / 64 per stage
    tb.dims[0] = a.n, tb.dims[1] = a.k;
    tb.box[0] = 64, tb.box[1] = stage_k;
  }
  if (kgrouped_fp8) tb.rank = 2, tb.dims[0] = kFp8BlockK, tb.dims[1] = a.n, tb.strides_bytes[0] = kFp8BlockK;
  p.tma_b = make_tma_descriptor(tb);

  // Scales read by TMA: MN-major FP32 [k-blocks][mn_stride], one box of `box_mn` entries per stage.
  auto scale_descriptor = [](const char* what, const float* base, std::int64_t mn_stride, std::uint64_t k_rows,
                             int box_mn) {
    TmaSpec t;
    t.what = what;
    t.base = base;
    t.element = TmaElement::kFloat32;
    t.rank = 2;
    t.dims[0] = mn_stride, t.dims[1] = k_rows;
    t.strides_bytes[0] = mn_stride * 4;
    t.box[0] = static_cast<std::uint32_t>(box_mn), t.box[1] = 1;
    return make_tma_descriptor(t);
  };
  if (!bf16) {
    const std::uint64_t k_rows = masked ? static_cast<std::uint64_t>(a.num_groups) * num_kb : num_kb;
    p.tma_sfa = scale_descriptor("a.scales", a.sfa, a.sfa_mn_stride, k_rows, a_rows_boxed);
    if (sfa_shifted) {
      p.tma_sfa_tail = scale_descriptor("a.scales", a.sfa, a.sfa_mn_stride, k_rows, kernels::sm90::kSfaTailRows);
    }
  }
  if (row_scaled_b) p.tma_sfb = scale_descriptor("b.scales", a.sfb, a.sfb_mn_stride, num_kb, c.block_n);
  // D leaves through TMA stores (BF16 D in 64-column boxes, row-limited tiles): bf16 [rows, N], or [G, capacity,
  // N] masked, strides validated multiples of 16 bytes like the pointer, 64x64 boxes with the staging buffer's
  // 128-byte swizzle.
  const bool tma_store = kernels::sm90::gemm_tma_store(a.recipe, static_cast<int>(a.layout), c.block_n);
  if (tma_store) {
    // BF16 D: 64x64 boxes; FP32 D: 32x64 boxes (128 bytes wide either way). Masked D is [G, capacity, N] with its
    // group stride; k-grouped FP32 D is contiguous [G, M, N], so that each expert's boxes stop at its M rows.
    const bool fp32 = kernels::sm90::recipe_has_fp32_out(a.recipe);
    const bool kgrouped = a.layout == GroupedKind::kKGrouped;
    const std::uint64_t esize_d = fp32 ? 4 : 2;
    TmaSpec td;
    td.what = "d";
    td.base = a.d;
    td.element = fp32 ? TmaElement::kFloat32 : TmaElement::kBFloat16;
    td.swizzle_128b = true;
    td.rank = masked || kgrouped ? 3 : 2;
    td.dims[0] = a.n, td.dims[1] = a.rows, td.dims[2] = masked || kgrouped ? a.num_groups : 1;
    td.strides_bytes[0] = a.ldd * esize_d;
    td.strides_bytes[1] = masked ? a.d_group_stride * esize_d : kgrouped ? a.rows * a.ldd * esize_d : 0;
    td.box[0] = fp32 ? 32 : 64, td.box[1] = 64, td.box[2] = 1;
    p.tma_d = make_tma_descriptor(td);
    if (kernels::sm90::gemm_c_prefetch(a.recipe, static_cast<int>(a.layout), c.block_n) && (!fp32 || a.add_c)) {
      // C through the same kind of descriptor as D: C itself, or D when C is D (FP32 D with no distinct C; BF16 C
      // is always passed, D's pointer when it aliases D).
      TmaSpec tc = td;
      tc.what = "c";
      tc.base = a.c != nullptr ? a.c : a.d;
      const std::uint64_t ldc = a.c != nullptr ? a.ldc : a.ldd;
      tc.strides_bytes[0] = ldc * esize_d;
      if (kgrouped) tc.strides_bytes[1] = a.rows * ldc * esize_d;
      p.tma_c = make_tma_descriptor(tc);
    }
    // In place (add_c without a distinct C: the API passes no C when C aliases FP32 D): long-K tiles add into D with
    // TMA reduce-adds (kFp32ReduceMinK).
    if (fp32 && a.add_c && a.c == nullptr) p.reduce_min_k = kernels::sm90::kFp32ReduceMinK;
  }
  const int layout_bytes =
      kernels::sm90::gemm_smem_layout(c.block_m, c.block_n, c.stages, a.recipe, tma_store, c.k_splits, sfa_shifted,
                                      kernels::sm90::gemm_tile_ring(static_cast<int>(a.layout)))
          .launch_bytes;
  if (c.smem_bytes < layout_bytes) {
    throw Error(ErrorCode::kInternal, "launch: configuration sized for " + std::to_string(c.smem_bytes) +
                                          " bytes of shared memory, the kernel needs " + std::to_string(layout_bytes));
  }

  if (a.layout == GroupedKind::kKGrouped && a.routing == nullptr) {
    if (a.host_ks == nullptr || static_cast<int>(a.host_ks->size()) > kernels::sm90::kMaxInlineKGroups) {
      throw Error(ErrorCode::kInternal, "k-grouped launch without device sizes needs at most " +
                                            std::to_string(kernels::sm90::kMaxInlineKGroups) + " host sizes");
    }
    for (std::size_t g = 0; g < a.host_ks->size(); ++g) p.ks_inline[g] = static_cast<int>((*a.host_ks)[g]);
  }
  // The grid is sized from shapes alone; the bound needs a non-null routing pointer, never read for k-grouped.
  SchedulerProblem sizing = prob;
  if (sizing.routing == nullptr && a.layout == GroupedKind::kKGrouped) sizing.routing = p.ks_inline;
  const long long items = kernels::max_work_items(sizing);
  if (items == 0) return;

  const jit::Kernel& kernel = jit::get_kernel(
      gemm_kernel_key(c, a.layout, a.recipe, a.mn_major, a.segment_alignment, a.k),
      [&] { return gemm_kernel_spec(c, a.layout, a.recipe, a.mn_major, a.segment_alignment, a.k); }, stream);
  jit::LaunchConfig lc{};
  lc.block[0] = static_cast<unsigned>((kernels::sm90::gemm_math_warpgroups(c.block_m) + 1) * 128), lc.block[1] = 1,
  lc.block[2] = 1;
  lc.cluster[0] = static_cast<unsigned>(cluster), lc.cluster[1] = lc.cluster[2] = 1;
  lc.shared_bytes = static_cast<unsigned>(c.smem_bytes);
  lc.pdl = pdl;
  // Persistent grid: one CTA per SM, at most one per work item, and only as many clusters as can be resident at
  // once (a cluster that waits for a free pair of SMs would run its whole share of the work after the others).
  long long clusters = std::min<long long>(c.num_sms / cluster, items);
  if (cluster > 1) clusters = std::min<long long>(clusters, std::max(1, jit::max_active_clusters(kernel, lc)));
  lc.grid[0] = static_cast<unsigned>(clusters * cluster), lc.grid[1] = 1, lc.grid[2] = 1;
  if (launch_verbose()) {
    std::fprintf(stderr, "moegemm launch: %s grid %u, cluster %d (at most %d resident), %u bytes shared, %lld items\n",
                 kernel.record.name.c_str(), lc.grid[0], cluster,
                 cluster > 1 ? jit::max_active_clusters(kernel, lc) : -1, lc.shared_bytes, items);
  }
  KGroupedTable table;  // k-grouped FP8 only: the per-expert descriptors, written on the stream before the GEMM
  if (kgrouped_fp8) {
    kernels::sm90::KGroupedDescriptorParams dp{};
    dp.a_template = p.tma_a;
    dp.b_template = p.tma_b;
    dp.a = static_cast<const unsigned char*>(a.a);
    dp.b = static_cast<const unsigned char*>(a.b);
    dp.m = a.rows;
    dp.n = a.n;
    dp.num_groups = a.num_groups;
    dp.capacity = a.k;
    dp.ks_device = a.routing;
    for (int g = 0; g < kernels::sm90::kMaxInlineKGroups; ++g) dp.ks_inline[g] = p.ks_inline[g];
    table = write_kgrouped_descriptors(dp, stream);
    p.kgrouped_tma = table.descriptors;
    p.problem.routing = table.ks;
  }
  void* args[] = {&p};
  try {
    jit::launch(kernel, lc, args, stream);
  } catch (...) {
    release_kgrouped_table(table, stream);
    throw;
  }
  release_kgrouped_table(table, stream);  // stream-ordered: after the GEMM; nothing without a table
}

}  // namespace moegemm::launch
