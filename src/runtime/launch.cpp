#include "runtime/launch.hpp"

#include <sstream>

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
  CUlaunchConfig launch_config = {};
  launch_config.gridDimX = config.grid[0];
  launch_config.gridDimY = config.grid[1];
  launch_config.gridDimZ = config.grid[2];
  launch_config.blockDimX = config.block[0];
  launch_config.blockDimY = config.block[1];
  launch_config.blockDimZ = config.block[2];
  launch_config.sharedMemBytes = config.shared_bytes;
  launch_config.hStream = static_cast<CUstream>(stream);
  launch_config.attrs = count ? attributes : nullptr;
  launch_config.numAttrs = count;
  CUresult result = d.cuLaunchKernelEx(&launch_config, kernel.function, args, nullptr);
  if (result != CUDA_SUCCESS) {
    throw Error(ErrorCode::kCudaError,
                "cuLaunchKernelEx failed for " + describe(kernel, config) + ": " + describe_result(result));
  }
}

}  // namespace moegemm::jit
