// Per-expert TMA descriptors for the k-grouped FP8 GEMM, written by a stream-ordered step before the GEMM.
//
// In the k-grouped input form every expert g has its own K-major blocks A_g [M, K_g] and B_g [N, K_g], packed back
// to back: the row stride differs per expert, so one descriptor cannot cover them all. This kernel runs alone (one
// CTA) before the GEMM on the same stream and writes, for each expert, a copy of the host-encoded template with
// the expert's base address, K extent and row stride. The GEMM only reads these descriptors; nothing rewrites a
// descriptor while a load through it can be in flight (the anchor's nondeterminism came from exactly that).
//
// It also writes the sanitised sizes the GEMM's scheduler reads, so descriptors and tiles agree by construction:
// K_g is clamped to [0, capacity left] and rounded down to a multiple of 128, whatever the device tensor holds.
#pragma once

#include "common/platform.cuh"
#include "sm90/gemm_params.cuh"  // KGroupedDescriptorParams
#include "sm90/tma_descriptor.cuh"

namespace moegemm::kernels::sm90 {

MOEGEMM_DEVICE void tensormap_set_address(TmaDescriptor* d, const void* address) {
  asm volatile("tensormap.replace.tile.global_address.global.b1024.b64 [%0], %1;" ::"l"(d), "l"(address) : "memory");
}
MOEGEMM_DEVICE void tensormap_set_inner_dim(TmaDescriptor* d, unsigned extent) {
  asm volatile("tensormap.replace.tile.global_dim.global.b1024.b32 [%0], 0, %1;" ::"l"(d), "r"(extent) : "memory");
}
// Ordinal 0 is the stride of dimension 1 (the innermost dimension has none), in bytes.
MOEGEMM_DEVICE void tensormap_set_row_stride(TmaDescriptor* d, unsigned long long bytes) {
  asm volatile("tensormap.replace.tile.global_stride.global.b1024.b64 [%0], 0, %1;" ::"l"(d), "l"(bytes) : "memory");
}

// One CTA. Thread 0 sanitises the sizes and computes the offsets (a running sum: sequential by nature, G is
// small), then the threads write the descriptors in parallel.
__global__ void __launch_bounds__(128, 1) kgrouped_descriptor_kernel(const __grid_constant__ KGroupedDescriptorParams p) {
  extern __shared__ int offsets_and_ks[];  // [G] offsets, then [G] sizes
  int* offsets = offsets_and_ks;
  int* ks = offsets_and_ks + p.num_groups;
  if (threadIdx.x == 0) {
    int carry = 0;
    for (int g = 0; g < p.num_groups; ++g) {
      int k = p.ks_device != nullptr ? p.ks_device[g] : p.ks_inline[g];
      k = min_of(max_of(k, 0), p.capacity - carry);
      k -= k % 128;
      offsets[g] = carry;
      ks[g] = k;
      p.ks_out[g] = k;
      carry += k;
    }
  }
  __syncthreads();
  for (int i = static_cast<int>(threadIdx.x); i < 2 * p.num_groups; i += static_cast<int>(blockDim.x)) {
    const int g = i / 2;
    const bool is_a = i % 2 == 0;
    TmaDescriptor* d = p.descriptors + i;
    const TmaDescriptor& t = is_a ? p.a_template : p.b_template;
#pragma unroll
    for (int w = 0; w < 16; ++w) d->opaque[w] = t.opaque[w];
    if (ks[g] > 0) {  // an expert without K has no tiles: its descriptor stays the (valid) template
      const long long rows = is_a ? p.m : p.n;
      tensormap_set_address(d, (is_a ? p.a : p.b) + rows * offsets[g]);
      tensormap_set_inner_dim(d, static_cast<unsigned>(ks[g]));
      tensormap_set_row_stride(d, static_cast<unsigned long long>(ks[g]));
    }
  }
  // Release the generic-proxy writes to the tensormap proxy; the GEMM acquires each descriptor before its first
  // TMA load through it.
  asm volatile("fence.proxy.tensormap::generic.release.gpu;" ::: "memory");
}

}  // namespace moegemm::kernels::sm90
