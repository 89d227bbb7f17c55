// TMA tensor maps built on the host (cuTensorMapEncodeTiled) and passed to kernels as grid constants: a descriptor
// is fixed for the whole launch. The one exception, k-grouped FP8, derives per-expert copies on the device in a
// separate kernel before the GEMM (launch/kgrouped_descriptors.hpp); the GEMM itself never rewrites one.
#pragma once

#include <cstdint>
#include <string>

#include "sm90/tma_descriptor.cuh"

namespace moegemm::launch {

using kernels::sm90::TmaDescriptor;

enum class TmaElement { kUint8, kBFloat16, kFloat32 };

struct TmaSpec {
  const void* base = nullptr;
  TmaElement element = TmaElement::kUint8;
  int rank = 2;
  std::uint64_t dims[3] = {0, 0, 0};        // innermost first, in elements
  std::uint64_t strides_bytes[2] = {0, 0};  // of dims 1..rank-1, in bytes (multiples of 16)
  std::uint32_t box[3] = {1, 1, 1};         // innermost first, in elements
  bool swizzle_128b = false;                // inner box must then be 128 bytes
  const char* what = "tensor";              // for error messages: which operand
};

// Encodes the descriptor; throws Error(kCudaError) naming `spec.what` and the dims if the driver refuses.
TmaDescriptor make_tma_descriptor(const TmaSpec& spec);

}  // namespace moegemm::launch
