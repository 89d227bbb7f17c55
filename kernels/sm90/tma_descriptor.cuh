// Storage for a TMA tensor map (CUtensorMap: 128 opaque bytes, 64-byte aligned). Host code encodes it with the
// driver and copies it into a kernel's parameters; kernels take its address (a __grid_constant__ parameter).
#pragma once

namespace moegemm::kernels::sm90 {

struct alignas(64) TmaDescriptor {
  unsigned long long opaque[16];
};

}  // namespace moegemm::kernels::sm90
