// moegemm::Error -> Python: kInvalidArgument -> ValueError, kUnsupported -> NotImplementedError, every other code
// (no device, CUDA, compile, capture, internal) -> RuntimeError. The message is the C++ what().
#pragma once

#include <nanobind/nanobind.h>

namespace moegemm::python {

void register_error_translation(nanobind::module_& m);

}  // namespace moegemm::python
