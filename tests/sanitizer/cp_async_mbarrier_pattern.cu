// The way the SM90 GEMM hands B's block scales from its producer to its consumers (sm90/gemm.cuh), alone: one
// producer lane copies two floats into a shared slot with cp.async and arrives on the "full" mbarrier through
// cp.async.mbarrier.arrive.noinc; four consumer warps wait on "full", read the slot, and lane 0 of each arrives on
// "empty" (with or without a __syncwarp first); the producer waits on "empty" before its next copy into the slot.
//
// Correct by the PTX memory model, and the program checks its sum; compute-sanitizer racecheck (CUDA 13.0) still
// reports read-then-write hazards between the consumers' reads and the next copies, which is what it reports for the
// GEMM's split-K and row-to-group tests (docs/results/2026-12-04-decode-start.md, runs 7-10). scripts/
// racecheck_pattern.sh builds and runs it, so that a later compute-sanitizer can be asked again.
#include <cuda_runtime.h>

#include <cstdio>

__device__ __forceinline__ unsigned smem(const void* p) { return static_cast<unsigned>(__cvta_generic_to_shared(p)); }
__device__ __forceinline__ void init(unsigned long long* b, int count) {
  asm volatile("mbarrier.init.shared.b64 [%0], %1;" ::"r"(smem(b)), "r"(count));
}
__device__ __forceinline__ void wait(unsigned long long* b, unsigned parity) {
  asm volatile(
      "{\n .reg .pred p;\n W: mbarrier.try_wait.parity.shared.b64 p, [%0], %1;\n @!p bra W;\n}\n" ::"r"(smem(b)),
      "r"(parity)
      : "memory");
}
__device__ __forceinline__ void arrive(unsigned long long* b) {
  asm volatile("{\n .reg .b64 s;\n mbarrier.arrive.shared.b64 s, [%0];\n}\n" ::"r"(smem(b)) : "memory");
}

template <bool kSyncwarp>
__global__ void pattern(const float* src, float* out, int iters) {
  __shared__ alignas(16) float slot[4];
  __shared__ alignas(8) unsigned long long full, empty;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (threadIdx.x == 0) {
    init(&full, 1);
    init(&empty, 4);
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  if (warp == 4) {
    for (int i = 0; i < iters; ++i) {
      wait(&empty, (i & 1) ^ 1);
      if (lane == 0) {
        asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" ::"r"(smem(&slot[0])), "l"(src + 4 * i) : "memory");
        asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" ::"r"(smem(&slot[1])), "l"(src + 4 * i + 1) : "memory");
        asm volatile("cp.async.mbarrier.arrive.noinc.shared.b64 [%0];" ::"r"(smem(&full)) : "memory");
      }
      __syncwarp();
    }
  } else {
    float acc = 0.0f;
    for (int i = 0; i < iters; ++i) {
      wait(&full, i & 1);
      acc += slot[lane % 2];
      if (kSyncwarp) __syncwarp();
      if (lane == 0) arrive(&empty);
    }
    out[threadIdx.x] = acc;
  }
}

int main() {
  const int iters = 64;
  float *src, *out;
  cudaMalloc(&src, 4 * iters * sizeof(float));
  cudaMalloc(&out, 160 * sizeof(float));
  float host[4 * iters];
  for (int i = 0; i < 4 * iters; ++i) host[i] = static_cast<float>(i);
  cudaMemcpy(src, host, sizeof(host), cudaMemcpyHostToDevice);
  pattern<false><<<1, 160>>>(src, out, iters);
  pattern<true><<<1, 160>>>(src, out, iters);
  cudaError_t e = cudaDeviceSynchronize();
  float o[160];
  cudaMemcpy(o, out, sizeof(o), cudaMemcpyDeviceToHost);
  double want = 0;
  for (int i = 0; i < iters; ++i) want += host[4 * i];
  std::printf("%s; out[0] %.1f (want %.1f)\n", cudaGetErrorString(e), o[0], want);
  return e == cudaSuccess && o[0] == want ? 0 : 1;
}
