#include "launch/kgrouped_descriptors.hpp"

#include <cstddef>

#include "runtime/driver.hpp"
#include "runtime/kernel_cache.hpp"
#include "runtime/launch.hpp"

namespace moegemm::launch {

using kernels::sm90::KGroupedDescriptorParams;
using kernels::sm90::TmaDescriptor;

jit::KernelSpec kgrouped_descriptor_kernel_spec() {
  jit::KernelSpec spec;
  spec.name = "sm90_kgrouped_descriptors";
  spec.source = "#include \"sm90/kgrouped_descriptors.cuh\"\n";
  spec.name_expression = "moegemm::kernels::sm90::kgrouped_descriptor_kernel";
  return spec;
}

KGroupedTable write_kgrouped_descriptors(KGroupedDescriptorParams params, Stream stream) {
  // The kernel first: a compile inside a graph capture fails here, before anything was enqueued.
  const jit::Kernel& kernel = jit::get_kernel("sm90_kgrouped_descriptors", kgrouped_descriptor_kernel_spec, stream);
  const std::size_t groups = static_cast<std::size_t>(params.num_groups);
  const std::size_t descriptor_bytes = 2 * groups * sizeof(TmaDescriptor);  // 128-byte multiples: aligned sizes
  CUdeviceptr scratch = 0;
  jit::check(jit::driver().cuMemAllocAsync(&scratch, descriptor_bytes + groups * sizeof(int),
                                           static_cast<CUstream>(stream)),
             "cuMemAllocAsync(k-grouped descriptor table)");
  KGroupedTable table;
  table.scratch = reinterpret_cast<void*>(scratch);
  table.descriptors = reinterpret_cast<const TmaDescriptor*>(scratch);
  table.ks = reinterpret_cast<const int*>(scratch + descriptor_bytes);
  params.descriptors = reinterpret_cast<TmaDescriptor*>(scratch);
  params.ks_out = reinterpret_cast<int*>(scratch + descriptor_bytes);
  try {
    jit::LaunchConfig lc{};
    lc.block[0] = 128;
    lc.shared_bytes = static_cast<unsigned>(2 * groups * sizeof(int));
    void* args[] = {&params};
    jit::launch(kernel, lc, args, stream);
  } catch (...) {
    release_kgrouped_table(table, stream);
    throw;
  }
  return table;
}

void release_kgrouped_table(const KGroupedTable& table, Stream stream) {
  if (table.scratch == nullptr) return;
  jit::check(jit::driver().cuMemFreeAsync(reinterpret_cast<CUdeviceptr>(table.scratch), static_cast<CUstream>(stream)),
             "cuMemFreeAsync(k-grouped descriptor table)");
}

}  // namespace moegemm::launch
