// Device discovery and the process-wide knobs (moegemm/device.hpp).
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include <string>

#include "bindings.hpp"
#include "moegemm/device.hpp"
#include "moegemm/error.hpp"

namespace nb = nanobind;

namespace moegemm::python {
namespace {

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

  m.def("device_info", &moegemm::device_info, "The calling thread's current CUDA device, or why there is none.");
  m.def(
      "set_num_sms",
      [](int num_sms) {
        moegemm::set_num_sms(num_sms);
      },
      nb::arg("num_sms"), "Cap persistent GEMMs at num_sms SMs (0 = all); any value from 0 to the SM count.");
  m.def(
      "get_num_sms",
      []() {
        return moegemm::get_num_sms();
      },
      "The SM cap set by set_num_sms (0 = all).");
  m.def(
      "set_pdl",
      [](bool enable) {
        moegemm::set_pdl(enable);
      },
      nb::arg("enable"), "Programmatic dependent launch for every GEMM (default off).");
  m.def(
      "get_pdl",
      []() {
        return moegemm::get_pdl();
      },
      "Whether GEMMs launch with programmatic dependent launch.");
  m.def(
      "version",
      []() -> std::string { return moegemm::version(); },
      "The moegemm library version.");
}

}  // namespace moegemm::python
