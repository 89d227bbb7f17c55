// tile_stream_rate: how fast the SMs stream an FP8 operand through TMA in the pattern of the memory-bound GEMM tiles
// (decode and masked expected-M-20 rows: each tile reads its block_n rows of B, K bytes each, once, 128 bytes of K a
// stage), with no math at all, and whether the order in which the CTAs walk K matters.
//
// Question it answers (docs/results/2026-12-07-masked-112.md, "What this settles"): one wave of 64x192 masked tiles
// streams B at about 2.1 TB/s on an H100 where the many-wave G = 32 rows reach 2.9. If every CTA reading the same
// 128-byte column of its rows at the same moment (all tiles start together and step K in lockstep) crowds a few DRAM
// channels, rotating each tile's first K block spreads the requests and a one-wave stream gets faster; if not, the
// orders measure level and the limit is elsewhere (in-flight bytes per SM: vary the stages).
//
// One CTA per SM (persistent, tiles handed out round-robin as the GEMM scheduler does), one thread issuing TMA
// copies of a [block_n rows x 128 bytes] box into a ring of `stages` shared-memory slots, one warp consuming them
// (wait for the slot's bytes, release it; no math). K orders:
//   lockstep: every tile reads K blocks 0, 1, 2, ...;
//   rotated:  tile t starts at K block (t * 5) mod KB and wraps around (the same bytes, other moments);
//   stagger:  lockstep, but CTA c starts (c mod 4) microseconds late (the in-kernel probe's form).
// Each (rows, K, block_n, stages, order) case is timed with CUDA events over `iters` launches, each after a 256 MiB
// write that flushes L2; the table gives the median time and rows * K bytes over it.
//
// Build and run (sm_90a, needs nvcc and the driver library for cuTensorMapEncodeTiled):
//   nvcc -std=c++20 -gencode arch=compute_90a,code=sm_90a -O3 -I kernels -o tile_stream_rate \
//        tools/microbench/tile_stream_rate.cu -lcuda && ./tile_stream_rate
// Results: docs/results/2026-12-07-stream-order-and-l2-set-aside.md, run 1 (H200: every order level).
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "sm90/ptx.cuh"
using namespace moegemm::kernels::sm90;

namespace {

constexpr int kMaxStages = 16;
constexpr int kKBlockBytes = 128;
// Dynamic shared memory of every launch: more than half an SM's, so one CTA per SM whatever the ring needs (the
// cases keep stages x block_n x 128 bytes within it).
constexpr int kDynamicSmemBytes = 200 * 1024;

enum Order : int { kLockstep = 0, kRotated = 1, kStagger = 2 };
const char* order_name(int o) { return o == kLockstep ? "lockstep" : o == kRotated ? "rotated" : "stagger"; }

struct StreamParams {
  int rows;     // rows of the operand (all experts' N rows together)
  int k_blocks;  // K / 128
  int block_n;   // rows per tile (the TMA box's outer extent)
  int stages;
  int order;
};

// Warp 0 lane 0: producer. Warp 1: consumer. Everything else idles (a block of 64 threads).
__global__ void __launch_bounds__(64, 1) stream_tiles(const __grid_constant__ TmaDescriptor desc, StreamParams p,
                                                      unsigned long long* sink) {
  extern __shared__ __align__(1024) unsigned char smem[];
  __shared__ u64 full[kMaxStages];
  __shared__ u64 empty[kMaxStages];
  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (threadIdx.x == 0) {
    for (int s = 0; s < p.stages; ++s) {
      mbarrier_init(&full[s], 1);
      mbarrier_init(&empty[s], 1);
    }
    fence_barrier_init();
  }
  __syncthreads();
  const int tiles = (p.rows + p.block_n - 1) / p.block_n;
  const u32 stage_bytes = static_cast<u32>(p.block_n) * kKBlockBytes;
  if (warp == 0 && lane == 0) {
    if (p.order == kStagger) {
      for (u32 i = 0; i < blockIdx.x % 4; ++i) __nanosleep(1000);
    }
    u32 slot = 0, phase = 0, issued = 0;
    for (int t = blockIdx.x; t < tiles; t += gridDim.x) {
      const int first = p.order == kRotated ? (t * 5) % p.k_blocks : 0;
      for (int i = 0; i < p.k_blocks; ++i) {
        int kb = first + i;
        if (kb >= p.k_blocks) kb -= p.k_blocks;
        if (issued >= static_cast<u32>(p.stages)) mbarrier_wait(&empty[slot], phase ^ 1);
        const u32 bar = smem_addr(&full[slot]);
        mbarrier_arrive_expect_tx(bar, stage_bytes);
        tma_load_2d(smem_addr(smem + slot * stage_bytes), &desc, bar, kb * kKBlockBytes, t * p.block_n);
        ++issued;
        if (++slot == static_cast<u32>(p.stages)) {
          slot = 0;
          phase ^= 1;
        }
      }
    }
  } else if (warp == 1) {
    u32 slot = 0, phase = 0;
    unsigned long long check = 0;
    for (int t = blockIdx.x; t < tiles; t += gridDim.x) {
      for (int i = 0; i < p.k_blocks; ++i) {
        mbarrier_wait(&full[slot], phase);
        // Touch one word of the slot so that the copy cannot be considered dead.
        check += reinterpret_cast<const u32*>(smem + slot * stage_bytes)[lane];
        __syncwarp();
        if (lane == 0) mbarrier_arrive(smem_addr(&empty[slot]));
        if (++slot == static_cast<u32>(p.stages)) {
          slot = 0;
          phase ^= 1;
        }
      }
    }
    if (check == 0x5eed5eed5eedull) sink[blockIdx.x] = check;  // practically never: keeps `check` alive
  }
}

__global__ void fill_bytes(unsigned char* p, size_t n, unsigned seed) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    unsigned x = static_cast<unsigned>(i) * 2654435761u ^ seed;
    p[i] = static_cast<unsigned char>(x >> 13);
  }
}

#define CHECK_CUDA(x)                                                                     \
  do {                                                                                    \
    cudaError_t e_ = (x);                                                                 \
    if (e_ != cudaSuccess) {                                                              \
      std::fprintf(stderr, "%s failed: %s (line %d)\n", #x, cudaGetErrorString(e_), __LINE__); \
      std::exit(1);                                                                       \
    }                                                                                     \
  } while (0)

TmaDescriptor make_desc(void* base, int rows, int k_bytes, int block_n) {
  TmaDescriptor d{};
  cuuint64_t dims[2] = {static_cast<cuuint64_t>(k_bytes), static_cast<cuuint64_t>(rows)};
  cuuint64_t strides[1] = {static_cast<cuuint64_t>(k_bytes)};
  cuuint32_t box[2] = {kKBlockBytes, static_cast<cuuint32_t>(block_n)};
  cuuint32_t estr[2] = {1, 1};
  CUresult r = cuTensorMapEncodeTiled(reinterpret_cast<CUtensorMap*>(&d), CU_TENSOR_MAP_DATA_TYPE_UINT8, 2, base, dims,
                                      strides, box, estr, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
                                      CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) {
    std::fprintf(stderr, "cuTensorMapEncodeTiled failed (%d)\n", static_cast<int>(r));
    std::exit(1);
  }
  return d;
}

struct Case {
  const char* what;
  int rows, k, block_n, stages;
};

}  // namespace

int main(int argc, char** argv) {
  const int iters = argc > 1 ? std::atoi(argv[1]) : 20;
  int sms = 0;
  CHECK_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  cudaDeviceProp prop{};
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  // The masked expected-M-20 rows of the benchmark (B of G experts, N rows each) at the planned and other widths,
  // a many-wave case, and the stage count at one width.
  const std::vector<Case> cases = {
      {"G=6 n=4096 k=4096, 64x192x6", 6 * 4096, 4096, 192, 6},
      {"G=6 n=4096 k=4096, 64x128x8", 6 * 4096, 4096, 128, 8},
      {"G=6 n=4096 k=4096, 64x128x4", 6 * 4096, 4096, 128, 4},
      {"G=6 n=4096 k=4096, 64x128x12", 6 * 4096, 4096, 128, 12},
      {"G=6 n=7168 k=3072, 64x192x6", 6 * 7168, 3072, 192, 6},
      {"G=6 n=4096 k=2048, 64x192x6", 6 * 4096, 2048, 192, 6},
      {"G=32 n=4096 k=4096, 64x128x8", 32 * 4096, 4096, 128, 8},
      {"G=32 n=4096 k=4096, 64x192x6", 32 * 4096, 4096, 192, 6},
  };
  size_t max_bytes = 0;
  for (const Case& c : cases) max_bytes = std::max(max_bytes, static_cast<size_t>(c.rows) * c.k);
  unsigned char* data = nullptr;
  unsigned char* flush = nullptr;
  unsigned long long* sink = nullptr;
  const size_t flush_bytes = 256ull << 20;
  CHECK_CUDA(cudaMalloc(&data, max_bytes));
  CHECK_CUDA(cudaMalloc(&flush, flush_bytes));
  CHECK_CUDA(cudaMalloc(&sink, sizeof(unsigned long long) * sms));
  fill_bytes<<<1024, 256>>>(data, max_bytes, 0x1234u);
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaFuncSetAttribute(stream_tiles, cudaFuncAttributeMaxDynamicSharedMemorySize, kDynamicSmemBytes));
  cudaEvent_t start, stop;
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&stop));
  std::printf("tile_stream_rate on %s (%d SMs), %d launches a case, L2 flushed before each\n", prop.name, sms, iters);
  std::printf("%-34s %-9s %6s %7s %9s %8s\n", "case", "order", "tiles", "waves", "median us", "TB/s");
  for (const Case& c : cases) {
    const TmaDescriptor desc = make_desc(data, c.rows, c.k, c.block_n);
    const int tiles = (c.rows + c.block_n - 1) / c.block_n;
    const size_t ring = static_cast<size_t>(c.stages) * c.block_n * kKBlockBytes;
    if (ring > static_cast<size_t>(kDynamicSmemBytes) || c.stages > kMaxStages) {
      std::fprintf(stderr, "case %s: ring of %zu bytes does not fit\n", c.what, ring);
      return 1;
    }
    for (int order = 0; order < 3; ++order) {
      StreamParams p{c.rows, c.k / kKBlockBytes, c.block_n, c.stages, order};
      std::vector<float> ms;
      for (int it = 0; it < iters + 1; ++it) {
        CHECK_CUDA(cudaMemsetAsync(flush, it & 0xff, flush_bytes));
        CHECK_CUDA(cudaEventRecord(start));
        stream_tiles<<<sms, 64, kDynamicSmemBytes>>>(desc, p, sink);
        CHECK_CUDA(cudaEventRecord(stop));
        CHECK_CUDA(cudaEventSynchronize(stop));
        CHECK_CUDA(cudaGetLastError());
        float t = 0;
        CHECK_CUDA(cudaEventElapsedTime(&t, start, stop));
        if (it > 0) ms.push_back(t);  // the first launch warms up
      }
      std::sort(ms.begin(), ms.end());
      const double us = ms[ms.size() / 2] * 1e3;
      const double bytes = static_cast<double>(c.rows) * c.k;
      std::printf("%-34s %-9s %6d %7.2f %9.1f %8.3f\n", c.what, order_name(order), tiles,
                  static_cast<double>(tiles) / sms, us, bytes / us * 1e-6);
    }
  }
  CHECK_CUDA(cudaFree(data));
  CHECK_CUDA(cudaFree(flush));
  CHECK_CUDA(cudaFree(sink));
  return 0;
}
