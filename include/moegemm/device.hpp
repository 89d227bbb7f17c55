// moegemm: device discovery and process-wide runtime settings. Nothing here throws.
#pragma once

#include <string>

namespace moegemm {

struct DeviceInfo {
  bool available = false;  // a driver and a device of compute capability 9.0 were found
  std::string reason;      // why not, when !available ("no CUDA driver (libcuda.so.1 not found)")
  std::string name;
  int ordinal = -1;
  int major = 0, minor = 0;
  int sm_count = 0;
  long long smem_per_block_optin = 0;
  long long l2_bytes = 0;
};

// The current device of the calling thread (CUDA's current context, or device 0).
DeviceInfo device_info() noexcept;

// Persistent kernels use at most this many SMs (0 = all). Serving stacks leave SMs to communication kernels.
// Any value from 0 to the SM count is valid, odd ones included.
void set_num_sms(int num_sms);
int get_num_sms() noexcept;

// Programmatic dependent launch for every GEMM (default off).
void set_pdl(bool enable) noexcept;
bool get_pdl() noexcept;

const char* version() noexcept;

}  // namespace moegemm
