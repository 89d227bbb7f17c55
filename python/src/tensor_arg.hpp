// Python objects -> moegemm::TensorView without copies: DLPack producers (torch, numpy, ...), the buffer protocol,
// or __cuda_array_interface__. The view borrows memory; TensorArg keeps the exporting object alive for the call.
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>

#include <initializer_list>

#include "moegemm/types.hpp"

namespace moegemm::python {

struct TensorArg {
  TensorView view;
  const char* name = "";
  int device_type = 0;  // DLPack device type (1 CPU, 2 CUDA, 13 CUDA managed)
  int device_id = -1;   // -1: unknown (__cuda_array_interface__ does not carry it)
  nanobind::ndarray<> array;  // holds the DLPack/buffer export alive
  nanobind::object owner;     // holds a __cuda_array_interface__ exporter alive
};

// Throws moegemm::Error(kInvalidArgument, "<name>: <rule>, got <value>") when `obj` is not a tensor moegemm reads:
// rank 1 to 4, dtype float8_e4m3fn (or uint8 holding its bits), bfloat16, float32 or int32.
TensorArg tensor_arg(nanobind::handle obj, const char* name);

// Every argument must live in CUDA memory of one device: the GEMMs launch kernels that read them.
void require_one_cuda_device(std::initializer_list<const TensorArg*> args);

const char* device_type_name(int dlpack_device_type) noexcept;

}  // namespace moegemm::python
