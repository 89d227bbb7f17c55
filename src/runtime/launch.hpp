// Launching a JIT kernel: cuLaunchKernelEx with thread block clusters and programmatic dependent launch.
#pragma once

#include "runtime/kernel_cache.hpp"

namespace moegemm::jit {

struct LaunchConfig {
  unsigned grid[3] = {1, 1, 1};     // blocks (a multiple of cluster in each dimension)
  unsigned block[3] = {1, 1, 1};    // threads
  unsigned cluster[3] = {1, 1, 1};  // blocks per cluster; the attribute is set only when the product is > 1
  unsigned shared_bytes = 0;        // dynamic shared memory
  bool pdl = false;                 // programmatic stream serialization: may start before the previous kernel ends
};

// Launches kernel on stream (a CUstream; nullptr is the legacy default stream) with args as cuLaunchKernelEx takes
// them (one pointer per kernel parameter). Raises the kernel's dynamic shared memory limit first when needed.
// When the calling thread has no context, the kernel's own is made current. A bad configuration throws
// Error(kInternal); a failed launch Error(kCudaError) naming the kernel and the configuration.
void launch(const Kernel& kernel, const LaunchConfig& config, void** args, void* stream);

// How many clusters of config.cluster (with config's block and shared memory) can be resident at once: not every
// SM can join a cluster (GPCs with an odd number of free SMs leave one out), so a persistent grid of
// SMs / cluster_size clusters may not fit in one wave. Queried once per kernel and configuration, then cached.
int max_active_clusters(const Kernel& kernel, const LaunchConfig& config);

}  // namespace moegemm::jit
