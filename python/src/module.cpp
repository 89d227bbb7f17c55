// moegemm._moegemm: the C++ library seen from Python. Tensors come in as DLPack/buffer/__cuda_array_interface__
// objects and are never copied; streams come in as integers (cudaStream_t values); outputs are written in place.
#include <nanobind/nanobind.h>

#include "bindings.hpp"
#include "errors.hpp"

NB_MODULE(_moegemm, m) {
  m.doc() = "moegemm: FP8 and BF16 GEMMs for dense and Mixture-of-Experts layers on NVIDIA Hopper (sm_90a)";
  moegemm::python::register_error_translation(m);
  moegemm::python::bind_device(m);
  moegemm::python::bind_layouts(m);
  moegemm::python::bind_gemm(m);
  moegemm::python::bind_queries(m);
}
