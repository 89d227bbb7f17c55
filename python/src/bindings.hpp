// The parts of moegemm._moegemm, one registration function per file.
#pragma once

#include <nanobind/nanobind.h>

namespace moegemm::python {

void bind_device(nanobind::module_& m);
void bind_gemm(nanobind::module_& m);
void bind_layouts(nanobind::module_& m);
void bind_queries(nanobind::module_& m);  // after bind_gemm (KernelConfig)

}  // namespace moegemm::python
