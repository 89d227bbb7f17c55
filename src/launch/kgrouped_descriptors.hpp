// The stream-ordered step before a k-grouped FP8 GEMM: per-expert TMA descriptors and sanitised sizes, written on
// the device into scratch memory that lives from this step to the end of the GEMM (stream-ordered allocation, so
// it works inside CUDA graph capture too, and concurrent calls on other streams never share it).
#pragma once

#include "moegemm/types.hpp"
#include "runtime/kernel_cache.hpp"
#include "sm90/gemm_params.cuh"

namespace moegemm::launch {

struct KGroupedTable {
  void* scratch = nullptr;  // owns both arrays below
  const kernels::sm90::TmaDescriptor* descriptors = nullptr;  // [2 * G]
  const int* ks = nullptr;                                    // [G], sanitised
};

// The descriptor kernel's source and name (for the launch and for precompiling).
jit::KernelSpec kgrouped_descriptor_kernel_spec();

// Allocates the table on `stream` and launches the descriptor kernel filling it. `params` holds everything but
// the two output pointers.
KGroupedTable write_kgrouped_descriptors(kernels::sm90::KGroupedDescriptorParams params, Stream stream);

// Frees the table on `stream`, after every launch that reads it was enqueued.
void release_kgrouped_table(const KGroupedTable& table, Stream stream);

}  // namespace moegemm::launch
