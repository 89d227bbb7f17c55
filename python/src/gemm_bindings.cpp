// The GEMM entry points of moegemm/gemm.hpp. Each binding converts its tensors (no copies), checks that they share
// one CUDA device, releases the GIL and calls the C++ function, which validates everything else and launches on
// `stream` (an integer cudaStream_t; 0 is the legacy default stream).
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "bindings.hpp"
#include "moegemm/error.hpp"
#include "moegemm/gemm.hpp"
#include "tensor_arg.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace moegemm::python {
namespace {

using Recipe = std::tuple<int, int, int>;

GemmOptions make_options(const Recipe& recipe, int max_sms, int pdl) {
  GemmOptions options;
  options.recipe = ScaleRecipe{std::get<0>(recipe), std::get<1>(recipe), std::get<2>(recipe)};
  options.max_sms = max_sms;
  options.pdl = pdl;
  return options;
}

Stream as_stream(std::uintptr_t stream) { return reinterpret_cast<Stream>(stream); }

std::optional<TensorArg> optional_tensor(nb::handle obj, const char* name) {
  if (obj.is_none()) return std::nullopt;
  return tensor_arg(obj, name);
}

const TensorView* view_or_null(const std::optional<TensorArg>& arg) { return arg ? &arg->view : nullptr; }
const TensorArg* arg_or_null(const std::optional<TensorArg>& arg) { return arg ? &*arg : nullptr; }

ContiguousLayout contiguous_layout(const TensorArg& index, bool group_ends, int expected_m_per_group,
                                   int segment_alignment) {
  ContiguousLayout layout;
  layout.form = group_ends ? ContiguousLayout::Form::kGroupEnds : ContiguousLayout::Form::kRowToGroup;
  layout.index = index.view;
  layout.expected_m_per_group = expected_m_per_group;
  layout.segment_alignment = segment_alignment;
  return layout;
}

KGroupedLayout k_grouped_layout(const std::vector<std::int64_t>& ks, const std::optional<TensorArg>& ks_device) {
  KGroupedLayout layout;
  layout.ks = ks;
  if (ks_device) layout.ks_device = ks_device->view;
  return layout;
}

void fp8_nt(nb::handle a, nb::handle sfa, nb::handle b, nb::handle sfb, nb::handle d, const Recipe& recipe,
            std::uintptr_t stream, int max_sms, int pdl) {
  const TensorArg ta = tensor_arg(a, "a.data"), tsa = tensor_arg(sfa, "a.scales"), tb = tensor_arg(b, "b.data"),
                  tsb = tensor_arg(sfb, "b.scales"), td = tensor_arg(d, "d");
  require_one_cuda_device({&ta, &tsa, &tb, &tsb, &td});
  nb::gil_scoped_release unlocked;
  fp8_gemm_nt({ta.view, tsa.view}, {tb.view, tsb.view}, td.view, as_stream(stream), make_options(recipe, max_sms, pdl));
}

void fp8_contiguous(nb::handle a, nb::handle sfa, nb::handle b, nb::handle sfb, nb::handle d, nb::handle index,
                    bool group_ends, int expected_m_per_group, int segment_alignment, const Recipe& recipe,
                    std::uintptr_t stream, int max_sms, int pdl) {
  const TensorArg ta = tensor_arg(a, "a.data"), tsa = tensor_arg(sfa, "a.scales"), tb = tensor_arg(b, "b.data"),
                  tsb = tensor_arg(sfb, "b.scales"), td = tensor_arg(d, "d"), ti = tensor_arg(index, "layout.index");
  require_one_cuda_device({&ta, &tsa, &tb, &tsb, &td, &ti});
  nb::gil_scoped_release unlocked;
  m_grouped_fp8_gemm_nt_contiguous({ta.view, tsa.view}, {tb.view, tsb.view}, td.view,
                                   contiguous_layout(ti, group_ends, expected_m_per_group, segment_alignment),
                                   as_stream(stream),
                                   make_options(recipe, max_sms, pdl));
}

void fp8_masked(nb::handle a, nb::handle sfa, nb::handle b, nb::handle sfb, nb::handle d, nb::handle valid_rows,
                int expected_m, const Recipe& recipe, std::uintptr_t stream, int max_sms, int pdl) {
  const TensorArg ta = tensor_arg(a, "a.data"), tsa = tensor_arg(sfa, "a.scales"), tb = tensor_arg(b, "b.data"),
                  tsb = tensor_arg(sfb, "b.scales"), td = tensor_arg(d, "d"),
                  tv = tensor_arg(valid_rows, "layout.valid_rows");
  require_one_cuda_device({&ta, &tsa, &tb, &tsb, &td, &tv});
  MaskedLayout layout;
  layout.valid_rows = tv.view;
  layout.expected_m = expected_m;
  nb::gil_scoped_release unlocked;
  m_grouped_fp8_gemm_nt_masked({ta.view, tsa.view}, {tb.view, tsb.view}, td.view, layout, as_stream(stream),
                               make_options(recipe, max_sms, pdl));
}

void fp8_1d1d(nb::handle a, nb::handle sfa, nb::handle b, nb::handle sfb, nb::handle d, nb::handle c,
              std::uintptr_t stream, int max_sms, int pdl) {
  const TensorArg ta = tensor_arg(a, "a.data"), tsa = tensor_arg(sfa, "a.scales"), tb = tensor_arg(b, "b.data"),
                  tsb = tensor_arg(sfb, "b.scales"), td = tensor_arg(d, "d");
  const auto tc = optional_tensor(c, "c");
  require_one_cuda_device({&ta, &tsa, &tb, &tsb, &td, arg_or_null(tc)});
  nb::gil_scoped_release unlocked;
  fp8_gemm_nt_1d1d({ta.view, tsa.view}, {tb.view, tsb.view}, td.view, view_or_null(tc), as_stream(stream),
                   make_options({1, 1, 128}, max_sms, pdl));
}

void fp8_k_grouped(nb::handle a, nb::handle sfa, nb::handle b, nb::handle sfb, nb::handle d,
                   const std::vector<std::int64_t>& ks, nb::handle c, nb::handle ks_device, std::uintptr_t stream,
                   int max_sms, int pdl) {
  const TensorArg ta = tensor_arg(a, "a.data"), tsa = tensor_arg(sfa, "a.scales"), tb = tensor_arg(b, "b.data"),
                  tsb = tensor_arg(sfb, "b.scales"), td = tensor_arg(d, "d");
  const auto tc = optional_tensor(c, "c");
  const auto tk = optional_tensor(ks_device, "layout.ks_device");
  require_one_cuda_device({&ta, &tsa, &tb, &tsb, &td, arg_or_null(tc), arg_or_null(tk)});
  const KGroupedLayout layout = k_grouped_layout(ks, tk);
  nb::gil_scoped_release unlocked;
  k_grouped_fp8_gemm_nt({ta.view, tsa.view}, {tb.view, tsb.view}, td.view, view_or_null(tc), layout,
                        as_stream(stream), make_options({1, 1, 128}, max_sms, pdl));
}

void bf16_dense(nb::handle a, nb::handle b, nb::handle d, nb::handle c, std::uintptr_t stream, int max_sms, int pdl) {
  const TensorArg ta = tensor_arg(a, "a"), tb = tensor_arg(b, "b"), td = tensor_arg(d, "d");
  const auto tc = optional_tensor(c, "c");
  require_one_cuda_device({&ta, &tb, &td, arg_or_null(tc)});
  nb::gil_scoped_release unlocked;
  bf16_gemm(ta.view, tb.view, td.view, view_or_null(tc), as_stream(stream), make_options({1, 128, 128}, max_sms, pdl));
}

void bf16_contiguous(nb::handle a, nb::handle b, nb::handle d, nb::handle index, bool group_ends,
                     int expected_m_per_group, int segment_alignment, std::uintptr_t stream, int max_sms, int pdl) {
  const TensorArg ta = tensor_arg(a, "a"), tb = tensor_arg(b, "b"), td = tensor_arg(d, "d"),
                  ti = tensor_arg(index, "layout.index");
  require_one_cuda_device({&ta, &tb, &td, &ti});
  nb::gil_scoped_release unlocked;
  m_grouped_bf16_gemm_contiguous(ta.view, tb.view, td.view,
                                 contiguous_layout(ti, group_ends, expected_m_per_group, segment_alignment),
                                 as_stream(stream), make_options({1, 128, 128}, max_sms, pdl));
}

void bf16_masked(nb::handle a, nb::handle b, nb::handle d, nb::handle valid_rows, int expected_m,
                 std::uintptr_t stream, int max_sms, int pdl) {
  const TensorArg ta = tensor_arg(a, "a"), tb = tensor_arg(b, "b"), td = tensor_arg(d, "d"),
                  tv = tensor_arg(valid_rows, "layout.valid_rows");
  require_one_cuda_device({&ta, &tb, &td, &tv});
  MaskedLayout layout;
  layout.valid_rows = tv.view;
  layout.expected_m = expected_m;
  nb::gil_scoped_release unlocked;
  m_grouped_bf16_gemm_masked(ta.view, tb.view, td.view, layout, as_stream(stream),
                             make_options({1, 128, 128}, max_sms, pdl));
}

void bf16_k_grouped(nb::handle a, nb::handle b, nb::handle d, const std::vector<std::int64_t>& ks, nb::handle c,
                    nb::handle ks_device, std::uintptr_t stream, int max_sms, int pdl) {
  const TensorArg ta = tensor_arg(a, "a"), tb = tensor_arg(b, "b"), td = tensor_arg(d, "d");
  const auto tc = optional_tensor(c, "c");
  const auto tk = optional_tensor(ks_device, "layout.ks_device");
  require_one_cuda_device({&ta, &tb, &td, arg_or_null(tc), arg_or_null(tk)});
  const KGroupedLayout layout = k_grouped_layout(ks, tk);
  nb::gil_scoped_release unlocked;
  k_grouped_bf16_gemm_tn(ta.view, tb.view, td.view, view_or_null(tc), layout, as_stream(stream),
                         make_options({1, 128, 128}, max_sms, pdl));
}

std::string describe(const KernelConfig& c) {
  return "KernelConfig(block_m=" + std::to_string(c.block_m) + ", block_n=" + std::to_string(c.block_n) +
         ", block_k=" + std::to_string(c.block_k) + ", stages=" + std::to_string(c.stages) +
         ", math_warpgroups=" + std::to_string(c.math_warpgroups) + ", cluster_m=" + std::to_string(c.cluster_m) +
         ", cluster_n=" + std::to_string(c.cluster_n) + ", k_splits=" + std::to_string(c.k_splits) +
         ", raster_band=" + std::to_string(c.raster_band) +
         ", num_sms=" + std::to_string(c.num_sms) +
         ", smem_bytes=" + std::to_string(c.smem_bytes) + ")";
}

}  // namespace

void bind_gemm(nb::module_& m) {
  nb::class_<KernelConfig>(m, "KernelConfig")
      .def(nb::init<>())
      .def_rw("block_m", &KernelConfig::block_m)
      .def_rw("block_n", &KernelConfig::block_n)
      .def_rw("block_k", &KernelConfig::block_k)
      .def_rw("stages", &KernelConfig::stages)
      .def_rw("math_warpgroups", &KernelConfig::math_warpgroups)
      .def_rw("cluster_m", &KernelConfig::cluster_m)
      .def_rw("cluster_n", &KernelConfig::cluster_n)
      .def_rw("k_splits", &KernelConfig::k_splits)
      .def_rw("raster_band", &KernelConfig::raster_band)
      .def_rw("num_sms", &KernelConfig::num_sms)
      .def_rw("smem_bytes", &KernelConfig::smem_bytes)
      .def("__repr__", &describe);

  const Recipe default_recipe{1, 128, 128};
  m.def("fp8_gemm_nt", &fp8_nt, "a"_a, "sfa"_a, "b"_a, "sfb"_a, "d"_a, nb::kw_only(), "recipe"_a = default_recipe,
        "stream"_a = 0, "max_sms"_a = 0, "pdl"_a = -1,
        "D[M,N] = A[M,K] @ B[N,K]^T, FP8 recipe (1,128,128), BF16 D (written in place).");
  m.def("m_grouped_fp8_gemm_nt_contiguous", &fp8_contiguous, "a"_a, "sfa"_a, "b"_a, "sfb"_a, "d"_a, "index"_a,
        nb::kw_only(), "group_ends"_a = false, "expected_m_per_group"_a = 0,
        "segment_alignment"_a = kContiguousAlignment, "recipe"_a = default_recipe, "stream"_a = 0, "max_sms"_a = 0,
        "pdl"_a = -1,
        "M-grouped contiguous FP8 GEMM; index is row->group (int32 [M_total]) or, with group_ends, end rows [G] "
        "(expert g's rows start at the previous end rounded up to segment_alignment; 1: packed).");
  m.def("m_grouped_fp8_gemm_nt_masked", &fp8_masked, "a"_a, "sfa"_a, "b"_a, "sfb"_a, "d"_a, "valid_rows"_a,
        "expected_m"_a = 0, nb::kw_only(), "recipe"_a = default_recipe, "stream"_a = 0, "max_sms"_a = 0,
        "pdl"_a = -1, "M-grouped masked FP8 GEMM: A [G, cap, K], D [G, cap, N], valid_rows int32 [G] on the device.");
  m.def("fp8_gemm_nt_1d1d", &fp8_1d1d, "a"_a, "sfa"_a, "b"_a, "sfb"_a, "d"_a, "c"_a.none() = nb::none(),
        nb::kw_only(), "stream"_a = 0, "max_sms"_a = 0, "pdl"_a = -1,
        "FP32 D = C + A @ B^T, FP8 recipe (1,1,128); c=None accumulates into D.");
  m.def("k_grouped_fp8_gemm_nt", &fp8_k_grouped, "a"_a, "sfa"_a, "b"_a, "sfb"_a, "d"_a, "ks"_a,
        "c"_a.none() = nb::none(), "ks_device"_a.none() = nb::none(), nb::kw_only(), "stream"_a = 0,
        "max_sms"_a = 0, "pdl"_a = -1,
        "D[g] = C[g] + A_g @ B_g^T over per-expert K (1-D FP8 buffers of K-major blocks, recipe (1,1,128)).");
  m.def("bf16_gemm", &bf16_dense, "a"_a, "b"_a, "d"_a, "c"_a.none() = nb::none(), nb::kw_only(),
        "stream"_a = 0, "max_sms"_a = 0, "pdl"_a = -1,
        "D = C + A @ B^T; A, B each K-major or MN-major; D BF16 or FP32.");
  m.def("m_grouped_bf16_gemm_contiguous", &bf16_contiguous, "a"_a, "b"_a, "d"_a, "index"_a, nb::kw_only(),
        "group_ends"_a = false, "expected_m_per_group"_a = 0, "segment_alignment"_a = kContiguousAlignment,
        "stream"_a = 0, "max_sms"_a = 0, "pdl"_a = -1, "M-grouped contiguous BF16 GEMM (index as for FP8).");
  m.def("m_grouped_bf16_gemm_masked", &bf16_masked, "a"_a, "b"_a, "d"_a, "valid_rows"_a, "expected_m"_a = 0,
        nb::kw_only(), "stream"_a = 0, "max_sms"_a = 0, "pdl"_a = -1, "M-grouped masked BF16 GEMM.");
  m.def("k_grouped_bf16_gemm_tn", &bf16_k_grouped, "a"_a, "b"_a, "d"_a, "ks"_a, "c"_a.none() = nb::none(),
        "ks_device"_a.none() = nb::none(), nb::kw_only(), "stream"_a = 0, "max_sms"_a = 0, "pdl"_a = -1,
        "D[g] = C[g] + A_g^T @ B_g with A [sum K_g, M], B [sum K_g, N].");
}

}  // namespace moegemm::python
