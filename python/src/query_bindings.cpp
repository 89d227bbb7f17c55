// The plan and warm-up queries of moegemm/gemm.hpp: what the planner picks for a call shape (plan_*), and its
// kernels compiled into the disk cache ahead of the call (precompile_*, precompile_all), without a GPU.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <initializer_list>
#include <string>
#include <vector>

#include "bindings.hpp"
#include "moegemm/error.hpp"
#include "moegemm/gemm.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace moegemm::python {
namespace {

// plan_bf16_gemm's layout, by the name of the call it stands for.
GemmLayout layout_named(const std::string& name) {
  if (name == "dense") return GemmLayout::kDense;
  if (name == "contiguous") return GemmLayout::kContiguousRowToGroup;
  if (name == "contiguous_group_ends") return GemmLayout::kContiguousGroupEnds;
  if (name == "masked") return GemmLayout::kMasked;
  if (name == "k_grouped") return GemmLayout::kKGrouped;
  throw Error(ErrorCode::kInvalidArgument,
              "layout: must be one of dense, contiguous, contiguous_group_ends, masked, k_grouped, got '" + name + "'");
}

Bf16PlanQuery bf16_query(int m, int n, int k, const std::string& layout, int num_groups, int expected_m,
                         bool a_mn_major, bool b_mn_major, bool fp32_d, bool with_c) {
  Bf16PlanQuery q;
  q.layout = layout_named(layout);
  q.m = m, q.n = n, q.k = k;
  q.num_groups = num_groups;
  q.expected_m = expected_m;
  q.a_mn_major = a_mn_major, q.b_mn_major = b_mn_major;
  q.fp32_d = fp32_d, q.with_c = with_c;
  return q;
}

KernelConfig plan_bf16(int m, int n, int k, const std::string& layout, int num_groups, int expected_m, bool a_mn_major,
                       bool b_mn_major, bool fp32_d, bool with_c) {
  return plan_bf16_gemm(bf16_query(m, n, k, layout, num_groups, expected_m, a_mn_major, b_mn_major, fp32_d, with_c));
}

std::vector<PrecompiledKernel> precompile_bf16(int m, int n, int k, const std::string& layout, int num_groups,
                                               int expected_m, bool a_mn_major, bool b_mn_major, bool fp32_d,
                                               bool with_c, int segment_alignment) {
  Bf16PlanQuery q = bf16_query(m, n, k, layout, num_groups, expected_m, a_mn_major, b_mn_major, fp32_d, with_c);
  q.segment_alignment = segment_alignment;
  nb::gil_scoped_release unlocked;  // compiling takes seconds
  return precompile_bf16_gemm(q);
}

// fp8_gemm_nt's query, by layout name, for planning and precompiling.
GemmLayout fp8_nt_layout(int num_groups, const std::string& layout) {
  return num_groups > 1 ? layout_named(layout) : GemmLayout::kContiguousGroupEnds;
}


// One query of precompile_all: a dict of the keyword arguments the single-query function takes. Every key must be
// one of `known`; m, n and k are required; a value of the wrong type is refused naming its key.
class QueryArgs {
 public:
  QueryArgs(nb::handle item, std::string where, std::initializer_list<const char*> known) : where_(std::move(where)) {
    if (!nb::isinstance<nb::dict>(item)) {
      throw Error(ErrorCode::kInvalidArgument, where_ + ": must be a dict of keyword arguments, got " +
                                                   nb::cast<std::string>(nb::str(item.type())));
    }
    args_ = nb::borrow<nb::dict>(item);
    for (auto [key, value] : args_) {
      const std::string name = nb::isinstance<nb::str>(key) ? nb::cast<std::string>(key) : std::string();
      bool ok = false;
      std::string names;
      for (const char* k : known) {
        ok = ok || name == k;
        names += (names.empty() ? "" : ", ") + std::string(k);
      }
      if (!ok) {
        throw Error(ErrorCode::kInvalidArgument, where_ + ": unknown key '" + nb::cast<std::string>(nb::str(key)) +
                                                     "' (the keys: " + names + ")");
      }
    }
  }
  int integer(const char* key) const {  // required
    if (!args_.contains(key)) throw Error(ErrorCode::kInvalidArgument, where_ + ": needs '" + key + "'");
    return integer(key, 0);
  }
  int integer(const char* key, int fallback) const {
    if (!args_.contains(key)) return fallback;
    nb::handle v = args_[key];
    if (nb::isinstance<bool>(v) || !nb::isinstance<int>(v)) refuse(key, "an int", v);
    return nb::cast<int>(v);
  }
  bool flag(const char* key) const {
    if (!args_.contains(key)) return false;
    nb::handle v = args_[key];
    if (!nb::isinstance<bool>(v)) refuse(key, "a bool", v);
    return nb::cast<bool>(v);
  }
  // The layout by its name (layout_named's rule), a refusal naming the query.
  GemmLayout layout(const char* fallback) const {
    try {
      return layout_named(text("layout", fallback));
    } catch (const Error& e) {
      throw Error(e.code(), where_ + "." + e.message());
    }
  }
  std::string text(const char* key, const char* fallback) const {
    if (!args_.contains(key)) return fallback;
    nb::handle v = args_[key];
    if (!nb::isinstance<nb::str>(v)) refuse(key, "a str", v);
    return nb::cast<std::string>(v);
  }

 private:
  [[noreturn]] void refuse(const char* key, const char* what, nb::handle v) const {
    throw Error(ErrorCode::kInvalidArgument, where_ + "." + key + ": must be " + what + ", got " +
                                                 nb::cast<std::string>(nb::repr(v)));
  }
  std::string where_;
  nb::dict args_;
};

WarmupQueries warmup_queries(nb::handle fp8_nt, nb::handle fp8_wgrad, nb::handle bf16) {
  WarmupQueries q;
  std::size_t i = 0;
  for (nb::handle item : fp8_nt) {
    const QueryArgs a(item, "fp8_nt[" + std::to_string(i++) + "]",
                      {"m", "n", "k", "num_groups", "expected_m", "layout", "segment_alignment"});
    const int groups = a.integer("num_groups", 1);
    q.fp8_nt.push_back({a.integer("m"), a.integer("n"), a.integer("k"), groups, a.integer("expected_m", 0),
                        groups > 1 ? a.layout("contiguous_group_ends") : GemmLayout::kContiguousGroupEnds,
                        a.integer("segment_alignment", kContiguousAlignment)});
  }
  i = 0;
  for (nb::handle item : fp8_wgrad) {
    const QueryArgs a(item, "fp8_wgrad[" + std::to_string(i++) + "]", {"m", "n", "k", "num_groups"});
    q.fp8_wgrad.push_back({a.integer("m"), a.integer("n"), a.integer("k"), a.integer("num_groups", 1)});
  }
  i = 0;
  for (nb::handle item : bf16) {
    const QueryArgs a(item, "bf16[" + std::to_string(i++) + "]",
                      {"m", "n", "k", "layout", "num_groups", "expected_m", "a_mn_major", "b_mn_major", "fp32_d",
                       "with_c", "segment_alignment"});
    Bf16PlanQuery b;
    b.layout = a.layout("dense");
    b.m = a.integer("m"), b.n = a.integer("n"), b.k = a.integer("k");
    b.num_groups = a.integer("num_groups", 1);
    b.expected_m = a.integer("expected_m", 0);
    b.a_mn_major = a.flag("a_mn_major"), b.b_mn_major = a.flag("b_mn_major");
    b.fp32_d = a.flag("fp32_d"), b.with_c = a.flag("with_c");
    b.segment_alignment = a.integer("segment_alignment", kContiguousAlignment);
    q.bf16.push_back(b);
  }
  return q;
}

}  // namespace

void bind_queries(nb::module_& m) {
  m.def(
      "plan_fp8_gemm_nt",
      [](int m, int n, int k, int num_groups, int expected_m, const std::string& layout) {
        return plan_fp8_gemm_nt(m, n, k, num_groups, expected_m, fp8_nt_layout(num_groups, layout));
      },
      "m"_a, "n"_a, "k"_a, "num_groups"_a = 1, "expected_m"_a = 0, nb::kw_only(), "layout"_a = "contiguous_group_ends",
      "The kernel configuration the planner picks for an FP8 (1,128,128) shape: dense when num_groups is 1, else "
      "the m-grouped layout (contiguous, contiguous_group_ends or masked) with expected_m rows per expert "
      "(launches nothing).");
  m.def("plan_fp8_gemm_wgrad", &plan_fp8_gemm_wgrad, "m"_a, "n"_a, "k"_a, "num_groups"_a = 1,
        "The configuration the planner picks for an FP8 (1,1,128) weight gradient: dense, or k-grouped with k the "
        "sum of the experts' K (launches nothing).");
  m.def("plan_bf16_gemm", &plan_bf16, "m"_a, "n"_a, "k"_a, nb::kw_only(), "layout"_a = "dense", "num_groups"_a = 1,
        "expected_m"_a = 0, "a_mn_major"_a = false, "b_mn_major"_a = false, "fp32_d"_a = false, "with_c"_a = false,
        "The configuration the planner picks for a BF16 call (layout: dense, contiguous, contiguous_group_ends, "
        "masked, k_grouped; k-grouped: k is the sum of the experts' K). Launches nothing.");

  nb::class_<PrecompiledKernel>(m, "PrecompiledKernel")
      .def_ro("name", &PrecompiledKernel::name)
      .def_ro("config", &PrecompiledKernel::config)
      .def_ro("path", &PrecompiledKernel::path)
      .def_ro("from_disk", &PrecompiledKernel::from_disk)
      .def_ro("compile_ms", &PrecompiledKernel::compile_ms)
      .def_ro("registers", &PrecompiledKernel::registers)
      .def_ro("spill_bytes", &PrecompiledKernel::spill_bytes)
      .def("__repr__", [](const PrecompiledKernel& p) {
        return "PrecompiledKernel(name='" + p.name + "', from_disk=" + (p.from_disk ? "True" : "False") +
               ", path='" + p.path + "')";
      });
  // (Each compiles its call's kernels into the disk cache, or finds them there, without a GPU and without
  // launching: a later call, even one being captured into a CUDA graph, then loads them instead of compiling.)
  m.def(
      "precompile_fp8_gemm_nt",
      [](int m, int n, int k, int num_groups, int expected_m, const std::string& layout, int segment_alignment) {
        const GemmLayout grouped = fp8_nt_layout(num_groups, layout);
        nb::gil_scoped_release unlocked;
        return precompile_fp8_gemm_nt(m, n, k, num_groups, expected_m, grouped, segment_alignment);
      },
      "m"_a, "n"_a, "k"_a, "num_groups"_a = 1, "expected_m"_a = 0, nb::kw_only(), "layout"_a = "contiguous_group_ends",
      "segment_alignment"_a = kContiguousAlignment,
      "Compiles the kernels of the FP8 (1,128,128) call that plan_fp8_gemm_nt plans into the disk cache (or finds "
      "them there), without a GPU: a later call, even inside a CUDA graph capture, loads them instead of compiling "
      "(segment_alignment: the group-ends call's).");
  m.def(
      "precompile_fp8_gemm_wgrad",
      [](int m, int n, int k, int num_groups) {
        nb::gil_scoped_release unlocked;
        return precompile_fp8_gemm_wgrad(m, n, k, num_groups);
      },
      "m"_a, "n"_a, "k"_a, "num_groups"_a = 1,
      "Compiles the kernels of the FP8 (1,1,128) weight-gradient call that plan_fp8_gemm_wgrad plans (k-grouped: "
      "also its descriptor step) into the disk cache, without a GPU.");
  m.def("precompile_bf16_gemm", &precompile_bf16, "m"_a, "n"_a, "k"_a, nb::kw_only(), "layout"_a = "dense",
        "num_groups"_a = 1, "expected_m"_a = 0, "a_mn_major"_a = false, "b_mn_major"_a = false, "fp32_d"_a = false,
        "with_c"_a = false, "segment_alignment"_a = kContiguousAlignment,
        "Compiles the kernels of the BF16 call that plan_bf16_gemm plans into the disk cache, without a GPU "
        "(segment_alignment: the group-ends call's).");
  m.def(
      "precompile_all",
      [](nb::iterable fp8_nt, nb::iterable fp8_wgrad, nb::iterable bf16, int threads) {
        const WarmupQueries queries = warmup_queries(fp8_nt, fp8_wgrad, bf16);
        nb::gil_scoped_release unlocked;
        return precompile_all(queries, threads);
      },
      nb::kw_only(), "fp8_nt"_a = nb::tuple(), "fp8_wgrad"_a = nb::tuple(), "bf16"_a = nb::tuple(), "threads"_a = 0,
      "Compiles the distinct kernels of many call shapes at once, each once, on up to `threads` CPU threads (0: one "
      "per hardware thread); returns them in the order the queries first name them. Each query is a dict of the "
      "keyword arguments of precompile_fp8_gemm_nt, precompile_fp8_gemm_wgrad or precompile_bf16_gemm; a bad one "
      "is refused, named, before anything compiles.");
}

}  // namespace moegemm::python
