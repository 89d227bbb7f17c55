#include "tensor_arg.hpp"

#include <cstdint>
#include <string>
#include <utility>

#include "moegemm/error.hpp"

namespace nb = nanobind;

namespace moegemm::python {
namespace {

constexpr int kDlCpu = 1;
constexpr int kDlCuda = 2;
constexpr int kDlCudaHost = 3;
constexpr int kDlCudaManaged = 13;

[[noreturn]] void invalid(const char* name, const std::string& rule) {
  throw Error(ErrorCode::kInvalidArgument, std::string(name) + ": " + rule);
}

std::string dlpack_dtype_name(nb::dlpack::dtype dt) {
  using Code = nb::dlpack::dtype_code;
  std::string base;
  switch (static_cast<Code>(dt.code)) {
    case Code::Int: base = "int"; break;
    case Code::UInt: base = "uint"; break;
    case Code::Float: base = "float"; break;
    case Code::Bfloat: base = "bfloat"; break;
    case Code::Bool: return "bool";
    case Code::Complex: base = "complex"; break;
    default: return "dlpack dtype code " + std::to_string(dt.code) + " (" + std::to_string(dt.bits) + " bits)";
  }
  return base + std::to_string(dt.bits);
}

constexpr const char* kDtypeRule =
    "dtype must be float8_e4m3fn (or uint8 holding its bits), bfloat16, float32 or int32";

DType dtype_from_dlpack(nb::dlpack::dtype dt, const char* name) {
  using Code = nb::dlpack::dtype_code;
  if (dt.lanes == 1) {
    const auto code = static_cast<Code>(dt.code);
    if (code == Code::Float && dt.bits == 32) return DType::kFloat32;
    if (code == Code::Int && dt.bits == 32) return DType::kInt32;
    if (code == Code::Bfloat && dt.bits == 16) return DType::kBFloat16;
    if (code == Code::Float8_E4M3FN && dt.bits == 8) return DType::kFloat8E4M3;
    if (code == Code::UInt && dt.bits == 8) return DType::kFloat8E4M3;
  }
  invalid(name, std::string(kDtypeRule) + ", got " + dlpack_dtype_name(dt));
}

void set_rank(TensorView& view, std::size_t rank, const char* name) {
  if (rank < 1 || rank > static_cast<std::size_t>(kMaxRank)) {
    invalid(name, "rank must be 1 to " + std::to_string(kMaxRank) + ", got " + std::to_string(rank));
  }
  view.rank = static_cast<int>(rank);
}

TensorArg from_ndarray(nb::handle obj, const char* name) {
  nb::ndarray<> array;
  if (!nb::try_cast(obj, array)) {
    invalid(name, "could not be read through DLPack or the buffer protocol (detach torch tensors that require grad), "
                  "got " + nb::cast<std::string>(nb::str(obj.type().attr("__name__"))));
  }
  TensorArg arg;
  arg.name = name;
  arg.view.dtype = dtype_from_dlpack(array.dtype(), name);
  set_rank(arg.view, array.ndim(), name);
  for (int i = 0; i < arg.view.rank; ++i) {
    arg.view.shape[i] = static_cast<std::int64_t>(array.shape(i));
    arg.view.strides[i] = array.stride(i);
  }
  arg.view.data = array.data();
  arg.device_type = array.device_type();
  arg.device_id = array.device_id();
  arg.array = std::move(array);
  return arg;
}

DType dtype_from_typestr(const std::string& typestr, const char* name) {
  // Byte order is irrelevant for one-byte codes ('|u1') and native ('<') on the hosts CUDA runs on.
  if (typestr == "<f4") return DType::kFloat32;
  if (typestr == "<i4") return DType::kInt32;
  if (typestr == "|u1" || typestr == "<u1") return DType::kFloat8E4M3;
  invalid(name, std::string(kDtypeRule) + ", got __cuda_array_interface__ typestr '" + typestr + "'");
}

TensorArg from_cuda_array_interface(nb::handle obj, const char* name) {
  nb::dict cai = nb::cast<nb::dict>(obj.attr("__cuda_array_interface__"));
  TensorArg arg;
  arg.name = name;
  arg.view.dtype = dtype_from_typestr(nb::cast<std::string>(cai["typestr"]), name);
  nb::tuple shape = nb::cast<nb::tuple>(cai["shape"]);
  set_rank(arg.view, shape.size(), name);
  for (int i = 0; i < arg.view.rank; ++i) arg.view.shape[i] = nb::cast<std::int64_t>(shape[i]);
  const auto element_bytes = static_cast<std::int64_t>(element_size(arg.view.dtype));
  nb::object strides = cai.contains("strides") ? nb::borrow(cai["strides"]) : nb::none();
  if (strides.is_none()) {
    std::int64_t stride = 1;
    for (int i = arg.view.rank - 1; i >= 0; --i) {
      arg.view.strides[i] = stride;
      stride *= arg.view.shape[i];
    }
  } else {
    nb::tuple byte_strides = nb::cast<nb::tuple>(strides);
    for (int i = 0; i < arg.view.rank; ++i) {
      const auto bytes = nb::cast<std::int64_t>(byte_strides[i]);
      if (bytes % element_bytes != 0) {
        invalid(name, "strides must be whole elements, got a stride of " + std::to_string(bytes) + " bytes");
      }
      arg.view.strides[i] = bytes / element_bytes;
    }
  }
  nb::tuple data = nb::cast<nb::tuple>(cai["data"]);
  arg.view.data = reinterpret_cast<void*>(nb::cast<std::uintptr_t>(data[0]));
  arg.device_type = kDlCuda;
  arg.owner = nb::borrow(obj);
  return arg;
}

}  // namespace

const char* device_type_name(int dlpack_device_type) noexcept {
  switch (dlpack_device_type) {
    case kDlCpu: return "cpu";
    case kDlCuda: return "cuda";
    case kDlCudaHost: return "cuda pinned host";
    case kDlCudaManaged: return "cuda managed";
  }
  return "non-CUDA";
}

TensorArg tensor_arg(nb::handle obj, const char* name) {
  if (obj.is_none()) invalid(name, "a tensor is required, got None");
  const bool has_dlpack = nb::hasattr(obj, "__dlpack__");
  if (!has_dlpack && nb::hasattr(obj, "__cuda_array_interface__")) return from_cuda_array_interface(obj, name);
  if (has_dlpack || nb::ndarray_check(obj)) return from_ndarray(obj, name);
  invalid(name, std::string("expected a tensor (DLPack, buffer protocol or __cuda_array_interface__), got ") +
                    nb::cast<std::string>(nb::str(obj.type().attr("__name__"))));
}

void require_one_cuda_device(std::initializer_list<const TensorArg*> args) {
  const TensorArg* first = nullptr;
  for (const TensorArg* arg : args) {
    if (arg == nullptr) continue;
    if (arg->device_type != kDlCuda && arg->device_type != kDlCudaManaged) {
      invalid(arg->name, std::string("must be in CUDA device memory, got ") + device_type_name(arg->device_type) +
                             " memory");
    }
    if (arg->device_id < 0) continue;
    if (first == nullptr) {
      first = arg;
    } else if (arg->device_id != first->device_id) {
      invalid(arg->name, "must be on the same device as " + std::string(first->name) + " (cuda:" +
                             std::to_string(first->device_id) + "), got cuda:" + std::to_string(arg->device_id));
    }
  }
}

}  // namespace moegemm::python
