// Device discovery and the process-wide knobs (moegemm/device.hpp).
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include <string>

#include "bindings.hpp"
#include "moegemm/device.hpp"
#include "moegemm/error.hpp"

// A libmoegemm built before its device runtime landed declares these functions without defining them. Weak
// references let the module import against such a library and say so, instead of failing with an undefined symbol.
namespace moegemm {
[[gnu::weak]] DeviceInfo device_info() noexcept;
[[gnu::weak]] void set_num_sms(int num_sms);
[[gnu::weak]] int get_num_sms() noexcept;
[[gnu::weak]] void set_pdl(bool enable) noexcept;
[[gnu::weak]] bool get_pdl() noexcept;
[[gnu::weak]] const char* version() noexcept;
}  // namespace moegemm

namespace nb = nanobind;

namespace moegemm::python {
namespace {

bool runtime_linked() {
  return &moegemm::device_info != nullptr && &moegemm::set_num_sms != nullptr && &moegemm::get_num_sms != nullptr &&
         &moegemm::set_pdl != nullptr && &moegemm::get_pdl != nullptr;
}

void require_runtime(const char* what) {
  if (!runtime_linked()) {
    throw Error(ErrorCode::kUnsupported, std::string(what) + ": this libmoegemm has no device runtime yet");
  }
}

DeviceInfo current_device_info() {
  if (&moegemm::device_info == nullptr) {
    DeviceInfo info;
    info.reason = "no CUDA device: this libmoegemm has no device runtime yet";
    return info;
  }
  return moegemm::device_info();
}

std::string describe(const DeviceInfo& info) {
  if (!info.available) return "DeviceInfo(available=False, reason='" + info.reason + "')";
  return "DeviceInfo(available=True, name='" + info.name + "', ordinal=" + std::to_string(info.ordinal) +
         ", sm=" + std::to_string(info.major) + std::to_string(info.minor) +
         ", sm_count=" + std::to_string(info.sm_count) + ")";
}

}  // namespace

void bind_device(nb::module_& m) {
  nb::class_<DeviceInfo>(m, "DeviceInfo")
      .def_ro("available", &DeviceInfo::available)
      .def_ro("reason", &DeviceInfo::reason)
      .def_ro("name", &DeviceInfo::name)
      .def_ro("ordinal", &DeviceInfo::ordinal)
      .def_ro("major", &DeviceInfo::major)
      .def_ro("minor", &DeviceInfo::minor)
      .def_ro("sm_count", &DeviceInfo::sm_count)
      .def_ro("smem_per_block_optin", &DeviceInfo::smem_per_block_optin)
      .def_ro("l2_bytes", &DeviceInfo::l2_bytes)
      .def("__repr__", &describe);

  m.def("device_info", &current_device_info, "The calling thread's current CUDA device, or why there is none.");
  m.def("has_device_runtime", &runtime_linked, "Whether libmoegemm defines the device runtime (moegemm/device.hpp).");
  m.def(
      "set_num_sms",
      [](int num_sms) {
        require_runtime("set_num_sms");
        moegemm::set_num_sms(num_sms);
      },
      nb::arg("num_sms"), "Cap persistent GEMMs at num_sms SMs (0 = all); any value from 0 to the SM count.");
  m.def(
      "get_num_sms",
      []() {
        require_runtime("get_num_sms");
        return moegemm::get_num_sms();
      },
      "The SM cap set by set_num_sms (0 = all).");
  m.def(
      "set_pdl",
      [](bool enable) {
        require_runtime("set_pdl");
        moegemm::set_pdl(enable);
      },
      nb::arg("enable"), "Programmatic dependent launch for every GEMM (default off).");
  m.def(
      "get_pdl",
      []() {
        require_runtime("get_pdl");
        return moegemm::get_pdl();
      },
      "Whether GEMMs launch with programmatic dependent launch.");
  m.def(
      "version",
      []() -> std::string { return &moegemm::version != nullptr ? moegemm::version() : MOEGEMM_PYTHON_VERSION; },
      "The moegemm library version.");
}

}  // namespace moegemm::python
