#include "runtime/launch.hpp"

#include <map>
#include <mutex>
#include <sstream>
#include <tuple>

#include "moegemm/error.hpp"
#include "runtime/driver.hpp"

namespace moegemm::jit {
namespace {

std::string describe(const Kernel& kernel, const LaunchConfig& c) {
  std::ostringstream os;
  os << "kernel " << kernel.record.name << " (grid " << c.grid[0] << "x" << c.grid[1] << "x" << c.grid[2]
     << ", block " << c.block[0] << "x" << c.block[1] << "x" << c.block[2] << ", cluster " << c.cluster[0] << "x"
     << c.cluster[1] << "x" << c.cluster[2] << ", " << c.shared_bytes << " bytes dynamic shared memory"
     << (c.pdl ? ", PDL" : "") << ")";
  return os.str();
}

// The driver's form of a launch configuration; attributes (2 entries) receives the cluster and PDL attributes.
CUlaunchConfig to_driver_config(const LaunchConfig& config, void* stream, CUlaunchAttribute* attributes) {
  unsigned count = 0;
  if (config.cluster[0] * config.cluster[1] * config.cluster[2] > 1) {
    attributes[count].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attributes[count].value.clusterDim.x = config.cluster[0];
    attributes[count].value.clusterDim.y = config.cluster[1];
    attributes[count].value.clusterDim.z = config.cluster[2];
    ++count;
  }
  if (config.pdl) {
    attributes[count].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    attributes[count].value.programmaticStreamSerializationAllowed = 1;
    ++count;
  }
  CUlaunchConfig c = {};
  c.gridDimX = config.grid[0];
  c.gridDimY = config.grid[1];
  c.gridDimZ = config.grid[2];
  c.blockDimX = config.block[0];
  c.blockDimY = config.block[1];
  c.blockDimZ = config.block[2];
  c.sharedMemBytes = config.shared_bytes;
  c.hStream = static_cast<CUstream>(stream);
  c.attrs = count ? attributes : nullptr;
  c.numAttrs = count;
  return c;
}

}  // namespace

void launch(const Kernel& kernel, const LaunchConfig& config, void** args, void* stream) {
  for (int i = 0; i < 3; ++i) {
    if (config.grid[i] == 0 || config.block[i] == 0 || config.cluster[i] == 0 ||
        config.grid[i] % config.cluster[i] != 0) {
      throw Error(ErrorCode::kInternal,
                  "launch of " + describe(kernel, config) + ": every dimension must be positive and the grid a " +
                      "multiple of the cluster");
    }
  }
  const Driver& d = driver();
  CUcontext current = nullptr;
  check(d.cuCtxGetCurrent(&current), "cuCtxGetCurrent");
  if (!current) check(d.cuCtxSetCurrent(kernel.context), "cuCtxSetCurrent");
  kernel.require_dynamic_shared(config.shared_bytes);

  CUlaunchAttribute attributes[2] = {};
  const CUlaunchConfig launch_config = to_driver_config(config, stream, attributes);
  CUresult result = d.cuLaunchKernelEx(&launch_config, kernel.function, args, nullptr);
  if (result != CUDA_SUCCESS) {
    throw Error(ErrorCode::kCudaError,
                "cuLaunchKernelEx failed for " + describe(kernel, config) + ": " + describe_result(result));
  }
}

int max_active_clusters(const Kernel& kernel, const LaunchConfig& config) {
  static std::mutex mutex;
  static std::map<std::tuple<const Kernel*, unsigned, unsigned, unsigned>, int> cache;
  const unsigned cluster = config.cluster[0] * config.cluster[1] * config.cluster[2];
  const auto key = std::make_tuple(&kernel, cluster, config.block[0], config.shared_bytes);
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = cache.find(key);
    if (it != cache.end()) return it->second;
  }
  const Driver& d = driver();
  kernel.require_dynamic_shared(config.shared_bytes);
  // The occupancy query takes one cluster as the grid, without PDL.
  LaunchConfig one_cluster = config;
  for (int i = 0; i < 3; ++i) one_cluster.grid[i] = config.cluster[i];
  one_cluster.pdl = false;
  CUlaunchAttribute attributes[2] = {};
  const CUlaunchConfig lc = to_driver_config(one_cluster, nullptr, attributes);
  int clusters = 0;
  check(d.cuOccupancyMaxActiveClusters(&clusters, kernel.function, &lc),
        ("cuOccupancyMaxActiveClusters(" + describe(kernel, config) + ")").c_str());
  std::lock_guard<std::mutex> lock(mutex);
  cache[key] = clusters;
  return clusters;
}

}  // namespace moegemm::jit
