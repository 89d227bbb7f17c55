#include "moegemm/config.hpp"

#include <sstream>

namespace moegemm {

std::string KernelConfig::to_string() const {
  std::ostringstream os;
  os << "block " << block_m << "x" << block_n << "x" << block_k << ", " << stages << " stages, " << math_warpgroups
     << " math warpgroups, cluster " << cluster_m << "x" << cluster_n << ", " << num_sms << " SMs, " << smem_bytes
     << " B shared";
  if (k_splits != 1) os << ", K split " << k_splits << " ways";
  if (raster_band != 0) os << ", raster band " << raster_band;
  return os.str();
}

}  // namespace moegemm
