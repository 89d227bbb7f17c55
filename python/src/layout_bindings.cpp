// Layout constants and helpers (moegemm/recipe.hpp, moegemm/layouts.hpp), and a window onto tensor conversion.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include <cstdint>
#include <string>

#include "bindings.hpp"
#include "moegemm/error.hpp"
#include "moegemm/layouts.hpp"
#include "moegemm/recipe.hpp"
#include "tensor_arg.hpp"

namespace nb = nanobind;

namespace moegemm::python {
namespace {

long long checked_tma_aligned_size(long long x, long long element_bytes) {
  if (element_bytes <= 0 || 16 % element_bytes != 0) {
    throw Error(ErrorCode::kInvalidArgument,
                "element_size: must divide 16 (1, 2, 4, 8 or 16), got " + std::to_string(element_bytes));
  }
  if (x < 0) throw Error(ErrorCode::kInvalidArgument, "x: must be >= 0, got " + std::to_string(x));
  return tma_aligned_size(x, element_bytes);
}

// What the GEMMs would see for `obj`: lets tests check the zero-copy conversion without a device.
nb::dict tensor_view_of(nb::handle obj, const std::string& name) {
  TensorArg arg = tensor_arg(obj, name.c_str());
  nb::list shape, strides;
  for (int i = 0; i < arg.view.rank; ++i) {
    shape.append(arg.view.shape[i]);
    strides.append(arg.view.strides[i]);
  }
  nb::dict out;
  out["dtype"] = to_string(arg.view.dtype);
  out["shape"] = nb::tuple(shape);
  out["strides"] = nb::tuple(strides);
  out["data"] = reinterpret_cast<std::uintptr_t>(arg.view.data);
  out["device"] = device_type_name(arg.device_type);
  out["device_id"] = arg.device_id;
  out["describe"] = arg.view.describe();
  return out;
}

}  // namespace

void bind_layouts(nb::module_& m) {
  m.attr("CONTIGUOUS_ALIGNMENT") = kContiguousAlignment;
  m.attr("MAX_SEGMENT_ALIGNMENT") = kMaxSegmentAlignment;
  m.def("tma_aligned_size", &checked_tma_aligned_size, nb::arg("x"), nb::arg("element_size"),
        "x rounded up to a multiple of 16 / element_size (the TMA global-stride rule).");
  m.def("_tensor_view", &tensor_view_of, nb::arg("tensor").none(), nb::arg("name") = "tensor",
        "The TensorView the GEMMs would read for `tensor`, as a dict (for tests and debugging).");
}

}  // namespace moegemm::python
