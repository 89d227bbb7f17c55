#include "errors.hpp"

#include <nanobind/stl/string.h>

#include <string>

#include "moegemm/error.hpp"

namespace nb = nanobind;

namespace moegemm::python {
namespace {

// kInvalidArgument surfaces as moegemm.InvalidArgumentError, a ValueError that is also a RuntimeError: code written
// against the anchor, which raises RuntimeError for every failed check, keeps catching it.
PyObject* invalid_argument_type = nullptr;

PyObject* python_type_for(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument: return invalid_argument_type;
    case ErrorCode::kUnsupported: return PyExc_NotImplementedError;
    default: return PyExc_RuntimeError;
  }
}

void translate(const std::exception_ptr& pending, void*) {
  try {
    std::rethrow_exception(pending);
  } catch (const Error& e) {
    PyErr_SetString(python_type_for(e.code()), e.what());
  }
}

}  // namespace

void register_error_translation(nb::module_& m) {
  nb::object bases = nb::make_tuple(nb::handle(PyExc_ValueError), nb::handle(PyExc_RuntimeError));
  invalid_argument_type = PyErr_NewException("moegemm._moegemm.InvalidArgumentError", bases.ptr(), nullptr);
  if (invalid_argument_type == nullptr) throw nb::python_error();
  m.attr("InvalidArgumentError") = nb::handle(invalid_argument_type);  // the module keeps its own reference
  nb::register_exception_translator(translate);
  // Lets the tests check the mapping of every code, including those no CPU-only call can produce.
  m.def(
      "_raise_error",
      [](int code, const std::string& message) { throw Error(static_cast<ErrorCode>(code), message); },
      nb::arg("code"), nb::arg("message"),
      "Throw moegemm::Error(code, message) from C++ (tests the exception mapping).");
}

}  // namespace moegemm::python
