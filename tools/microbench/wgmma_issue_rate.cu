// wgmma_issue_rate: how fast one or two warpgroups can drive the tensor cores through FP8 WGMMA under the issue
// schedules the GEMM kernels could use, with operands already in shared memory (no TMA, no pipeline, no epilogue).
// Each issuing warpgroup runs `iters` K blocks of a 64x128 FP8 tile (four m64nNk32 steps, 128 deep) and reports the
// cycles per K block of warpgroup 0 of CTA 0 (clock64). One warpgroup's K block is 256 tensor cycles of work at the
// SM's 8,192 FP8 FLOP per cycle; two warpgroups' together 512.
//   schedule: in phase (both warpgroups issue at once, as the kernels do), solo (warpgroup 0 alone), turns (the two
//     take turns through named barriers: each waits for its turn, issues, commits and hands the turn over), three
//     warpgroups in phase, in phase through a ring of stage barriers (with or without shared-memory writes standing
//     in for the TMA copies), or two accumulators per warpgroup (bench_two_acc; alone, or through the ring with or
//     without the writes);
//   chains: one n128 chain (four dependent WGMMAs into one accumulator), two n64 chains (the tile's column halves,
//     interleaved) with A and B in shared memory (SS), or two n64 chains with A in registers (RS, loaded per K block);
//   promotion: the recipe (1,1,128) promotion after each K block's wait (per-column scales read from shared memory,
//     one multiply and one multiply-add per accumulator), or a plain add.
// The values are garbage (shared memory filled with a hash): only the timing means anything.
// Build and run (sm_90a, needs nvcc; tests/CMakeLists.txt compile-checks it):
//   nvcc -std=c++20 -gencode arch=compute_90a,code=sm_90a -O3 -I kernels -o wgmma_issue_rate \
//        tools/microbench/wgmma_issue_rate.cu && ./wgmma_issue_rate
// Results: docs/results/2026-12-04-fp8-turns.md, run 4; every mode:
// docs/results/2026-12-07-epilogue-probe-and-issue-rates.md, runs 1 and 3.
#include <cstdio>
#include <cuda_runtime.h>
#include "sm90/ptx.cuh"
#include "sm90/wgmma_ops.cuh"
#include "sm90/smem_descriptor.cuh"
using namespace moegemm::kernels::sm90;

// m64n64k32 FP8 WGMMA with A from registers (four 32-bit registers per thread: 16 rows x 32 bytes per warp).
__device__ __forceinline__ void wgmma_rs_n64(float (&d)[32], const unsigned (&a)[4], u64 desc_b, int scale_d) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %38, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e4m3 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, {%32, %33, %34, %35}, %36, p, 1, 1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "n"(0), "r"(scale_d));
}

// The recipe (1,1,128) promotion of column groups [j_begin, j_end) (8 columns each) of a 64-row accumulator:
// result += acc * scale_a[row] * scale_b[column], B's scales read from shared memory as the kernels do.
template <int kAcc>
__device__ __forceinline__ void promote_1d1d(float (&result)[kAcc], const float (&acc)[kAcc], int j_begin, int j_end,
                                             u32 sfb, int it) {
  const float sa_lo = 1.0f + it * 1e-7f, sa_hi = 1.0f - it * 1e-7f;
#pragma unroll
  for (int j = j_begin; j < j_end; ++j) {
    float sb0, sb1;
    load_shared_v2_f32(sfb + j * 32, sb0, sb1);
    result[4 * j + 0] += acc[4 * j + 0] * (sa_lo * sb0);
    result[4 * j + 1] += acc[4 * j + 1] * (sa_lo * sb1);
    result[4 * j + 2] += acc[4 * j + 2] * (sa_hi * sb0);
    result[4 * j + 3] += acc[4 * j + 3] * (sa_hi * sb1);
  }
}

// Shared memory of every kernel here: A's 128 rows of 128 bytes, B's 128 rows, B's scales, then the barriers (ring
// modes) and the producer's scratch; all from a 1024-byte aligned base (the 128-byte swizzle's atoms need it).
constexpr unsigned kAOffset = 0, kBOffset = 16384, kSfbOffset = 32768, kBarrierOffset = 40960;
constexpr unsigned kScratchOffset = 45056;  // 44 KiB: past the operands, B's scales and the barriers

// The aligned base, its operands filled with a hash (garbage values: only the timing means anything).
__device__ __forceinline__ unsigned char* filled_operands(unsigned char* smem_raw) {
  unsigned char* smem = reinterpret_cast<unsigned char*>((reinterpret_cast<u64>(smem_raw) + 1023) & ~u64(1023));
  for (unsigned i = threadIdx.x; i < kBarrierOffset / 4; i += blockDim.x) {
    reinterpret_cast<unsigned*>(smem)[i] = 0x38383838u ^ (i * 2654435761u);
  }
  return smem;
}

// Warpgroup wg's WGMMA descriptors (low words) of its 64 rows of A and of B, and this thread's column pair of B's
// scales.
struct OperandAddresses {
  u32 a_lo, b_lo, sfb;
};
__device__ __forceinline__ OperandAddresses operand_addresses(unsigned char* smem, int wg, int tid) {
  const u32 base = smem_addr(smem);
  return {smem_desc_sw128_lo(base + kAOffset + wg * 64 * 128), smem_desc_sw128_lo(base + kBOffset),
          base + kSfbOffset + (tid % 4) * 8};
}

// The ring modes' 4-stage ring of mbarriers, as the kernels use it: a full barrier per stage (one producer arrival)
// and an empty one (lane 0 of each of the two consumer warpgroups' warps).
constexpr int kRing = 4;
__device__ __forceinline__ void init_ring(unsigned char* smem) {
  if (threadIdx.x == 0) {
    for (int st = 0; st < kRing; ++st) {
      mbarrier_init(reinterpret_cast<u64*>(smem + kBarrierOffset) + st, 1);
      mbarrier_init(reinterpret_cast<u64*>(smem + kBarrierOffset) + kRing + st, 8);
    }
    fence_barrier_init();
  }
}

// The producer warpgroup of the ring modes: fills `stages` stages in turn, each once both consumer warpgroups freed
// it. kWrites: its warpgroup first writes the stage's 32 KiB (a 128x128 FP8 tile of A and one of B, the bytes a
// kernel's TMA copies bring) into a scratch region of shared memory, so that the writes compete with the WGMMAs'
// reads as the copies do. (The operands themselves stay where they are.)
template <bool kWrites>
__device__ __forceinline__ void ring_producer(unsigned char* smem, int tid, int stages, u32 full_bar, u32 empty_bar) {
  const u32 scratch = smem_addr(smem) + kScratchOffset + tid * 16;
  for (int it = 0; it < stages; ++it) {
    const u32 st = it % kRing, phase = (it / kRing) & 1;
    mbarrier_wait(empty_bar + st * 8, phase ^ 1);
    if constexpr (kWrites) {
#pragma unroll
      for (int i = 0; i < 16; ++i) {
        asm volatile("st.shared.v4.u32 [%0], {%1, %1, %1, %1};" ::"r"(scratch + i * 2048), "r"(it) : "memory");
      }
      named_barrier_sync(1, 128);
    }
    if (tid == 0) mbarrier_arrive(full_bar + st * 8);
  }
}

// kSched: 0 in phase, 1 solo (warpgroup 0 only), 2 turns (hand over at commit), 3 three warpgroups in phase, 4 in
// phase through a 4-stage ring of mbarriers as the kernels use it (a producer arrives on a stage's full barrier once
// both warpgroups freed it; no copies: the operands stay where they are), 5 the same ring with 32 KiB of shared-memory
// writes per stage by the producer warpgroup (what the kernels' TMA copies write)
// kChains: 1 (one n128 chain, SS), 2 (two n64 chains, SS), 3 (two n64 chains, A from registers)
template <int kSched, int kChains, bool kPromote>
__global__ void __launch_bounds__(384, 1) bench(int iters, long long* out, float* sink) {
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  unsigned char* smem = filled_operands(smem_raw);
  const int wg = threadIdx.x / 128, tid = threadIdx.x % 128;
  const u32 full_bar = smem_addr(smem) + kBarrierOffset, empty_bar = full_bar + kRing * 8;
  constexpr bool kRingMode = kSched == 4 || kSched == 5;
  if (kRingMode) init_ring(smem);
  __syncthreads();
  if (kRingMode && wg == 2) {
    ring_producer<kSched == 5>(smem, tid, iters, full_bar, empty_bar);
    return;
  }
  if (wg == 2 && kSched != 3) return;  // no producer
  if (kSched == 1 && wg == 1) return;
  const OperandAddresses ops = operand_addresses(smem, wg, tid);
  const u32 a_lo = ops.a_lo, b_lo = ops.b_lo, sfb = ops.sfb;
  const u32 a_rows = smem_addr(smem) + kAOffset + wg * 64 * 128;  // RS: this warpgroup's rows of A
  float acc[64], result[64];
  for (int i = 0; i < 64; ++i) result[i] = 0.f;
  if (kSched == 2 && wg == 1) named_barrier_arrive(3, 256);
  long long t0 = clock64();
  for (int it = 0; it < iters; ++it) {
    unsigned afrag[4][4];
    if constexpr (kChains == 3) {
      for (int kk = 0; kk < 4; ++kk) {
        const u32 addr = a_rows + ((tid * 16 + kk * 32 + it * 16) & 8191);
        asm volatile("ld.shared.v4.u32 {%0,%1,%2,%3}, [%4];"
                     : "=r"(afrag[kk][0]), "=r"(afrag[kk][1]), "=r"(afrag[kk][2]), "=r"(afrag[kk][3])
                     : "r"(addr));
      }
    }
    if constexpr (kSched == 2) named_barrier_sync(3 + wg, 256);
    if constexpr (kRingMode) mbarrier_wait(full_bar + (it % kRing) * 8, (it / kRing) & 1);
    fence_registers(acc);
    wgmma_fence();
    float(&acc0)[32] = *reinterpret_cast<float(*)[32]>(&acc[0]);
    float(&acc1)[32] = *reinterpret_cast<float(*)[32]>(&acc[32]);
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) {
      const u64 da = smem_desc_sw128_from_lo(a_lo + kk * 2);
      const u64 db0 = smem_desc_sw128_from_lo(b_lo + kk * 2);
      const u64 db1 = smem_desc_sw128_from_lo(b_lo + kk * 2 + 64 * 128 / 16);
      if constexpr (kChains == 1) {
        wgmma_e4m3<128>(acc, da, db0, kk > 0);
      } else if constexpr (kChains == 2) {
        wgmma_e4m3<64>(acc0, da, db0, kk > 0);
        wgmma_e4m3<64>(acc1, da, db1, kk > 0);
      } else {
        wgmma_rs_n64(acc0, afrag[kk], db0, kk > 0);
        wgmma_rs_n64(acc1, afrag[kk], db1, kk > 0);
      }
    }
    wgmma_commit();
    if constexpr (kSched == 2) named_barrier_arrive(3 + (1 - wg), 256);
    fence_registers(acc);
    wgmma_wait<0>();
    fence_registers(acc);
    if constexpr (kPromote) {
      promote_1d1d(result, acc, 0, 16, sfb, it);
    } else {
#pragma unroll
      for (int i = 0; i < 64; ++i) result[i] += acc[i];
    }
    if constexpr (kRingMode) {
      if (threadIdx.x % 32 == 0) mbarrier_arrive(empty_bar + (it % kRing) * 8);
    }
  }
  long long t1 = clock64();
  if (kSched == 2 && wg == 0) named_barrier_sync(3, 256);
  float s = 0.f;
  for (int i = 0; i < 64; ++i) s += result[i];
  sink[blockIdx.x * 256 + threadIdx.x] = s;
  if (tid == 0 && wg < 2) out[blockIdx.x * 2 + wg] = t1 - t0;
}

// Two accumulators per warpgroup, both warpgroups in phase, one n128 chain per K block: block k + 1 is issued before
// block k (complete since the step before) is promoted, so that its WGMMAs run during the promotion; each step ends
// with a full wait, so that no WGMMA group is in flight across the loop's back edge (with one in flight there,
// ptxas 13.0 serialises every WGMMA of the kernel, warning C7514). kSplit 1: the next block's four WGMMAs, then the
// whole promotion; kSplit 2: two WGMMAs, half of the promotion, two WGMMAs, the other half.
// kRing 0: no ring (256 threads: three accumulator sets need more registers than 384 threads leave without
// setmaxnreg); 1: through the 4-stage ring of the ring modes, a block's stage freed after its promotion as the
// kernels' two-accumulator form does (384 threads, the producer giving registers to the two issuing warpgroups as
// the kernels do); 2: the same with the producer's 32 KiB of shared-memory writes per stage.
template <int kSplit, int kRingForm = 0>
__global__ void __launch_bounds__(kRingForm == 0 ? 256 : 384, 1) bench_two_acc(int iters, long long* out, float* sink) {
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  unsigned char* smem = filled_operands(smem_raw);
  const int wg = threadIdx.x / 128, tid = threadIdx.x % 128;
  constexpr bool kRingMode = kRingForm != 0;
  const u32 full_bar = smem_addr(smem) + kBarrierOffset, empty_bar = full_bar + kRing * 8;
  if (kRingMode) init_ring(smem);
  __syncthreads();
  if (kRingMode && wg == 2) {
    setmaxnreg_dec<40>();
    ring_producer<kRingForm == 2>(smem, tid, iters + 1, full_bar, empty_bar);  // blocks 0 .. iters
    return;
  }
  if constexpr (kRingMode) setmaxnreg_inc<232>();
  auto wait_full = [&](int block) {
    if constexpr (kRingMode) mbarrier_wait(full_bar + (block % kRing) * 8, (block / kRing) & 1);
  };
  auto release = [&](int block) {
    if constexpr (kRingMode) {
      if (threadIdx.x % 32 == 0) mbarrier_arrive(empty_bar + (block % kRing) * 8);
    }
  };
  const OperandAddresses ops = operand_addresses(smem, wg, tid);
  const u32 a_lo = ops.a_lo, b_lo = ops.b_lo, sfb = ops.sfb;
  float acc_a[64], acc_b[64], result[64];
  for (int i = 0; i < 64; ++i) result[i] = 0.f;
  auto issue = [&](float (&acc)[64], int kk_begin, int kk_end) {
#pragma unroll
    for (int kk = kk_begin; kk < kk_end; ++kk) {
      wgmma_e4m3<128>(acc, smem_desc_sw128_from_lo(a_lo + kk * 2), smem_desc_sw128_from_lo(b_lo + kk * 2), kk > 0);
    }
  };
  auto promote = [&](const float (&acc)[64], int j_begin, int j_end, int it) {
    promote_1d1d(result, acc, j_begin, j_end, sfb, it);
  };
  // One step: block it + 1 into `next` while block it (in `cur`, complete) is promoted.
  auto step = [&](float (&next)[64], float (&cur)[64], int it) {
    wait_full(it + 1);
    fence_registers(next);
    wgmma_fence();
    if constexpr (kSplit == 1) {
      issue(next, 0, 4);
      wgmma_commit();
      promote(cur, 0, 16, it);
    } else {
      issue(next, 0, 2);
      wgmma_commit();
      promote(cur, 0, 8, it);
      issue(next, 2, 4);
      wgmma_commit();
      promote(cur, 8, 16, it);
    }
    release(it);
    wgmma_wait<0>();
    fence_registers(next);
  };
  long long t0 = clock64();
  wait_full(0);
  fence_registers(acc_a);
  wgmma_fence();
  issue(acc_a, 0, 4);
  wgmma_commit();
  wgmma_wait<0>();
  fence_registers(acc_a);
  for (int it = 0; it < iters; it += 2) {
    step(acc_b, acc_a, it);
    step(acc_a, acc_b, it + 1);
  }
  long long t1 = clock64();
  float s = 0.f;
  for (int i = 0; i < 64; ++i) s += result[i] + acc_a[i];
  sink[blockIdx.x * 256 + threadIdx.x] = s;
  if (tid == 0) out[blockIdx.x * 2 + wg] = t1 - t0;
}

// One K block of a kN-wide chain into acc, issued and committed: four m64nNk32 steps on this warpgroup's rows of A
// and B's kN rows; kFirstSets: the first step overwrites acc (a fresh block), else every step adds to it.
template <int kN, bool kFirstSets>
__device__ __forceinline__ void issue_chain_block(float (&acc)[kN / 2], const OperandAddresses& ops) {
  fence_registers(acc);
  wgmma_fence();
#pragma unroll
  for (int kk = 0; kk < 4; ++kk) {
    wgmma_e4m3<kN>(acc, smem_desc_sw128_from_lo(ops.a_lo + kk * 2), smem_desc_sw128_from_lo(ops.b_lo + kk * 2),
                   kFirstSets ? kk > 0 : 1);
  }
  wgmma_commit();
}

// One chain per warpgroup of kN columns (m64nNk32, four steps per K block into one accumulator that keeps
// accumulating: no promotion, no per-block add, so that 256 columns fit the registers), warpgroup 0 alone or both in
// phase; each K block ends with a full wait, as the kernels' do: how close one warpgroup alone comes to the tensor
// rate at each width, with nothing but the wait between its blocks (measured: 82% at n128, 86% at n192, 88% at
// n256; the 60% of "solo, 1 chain n128" is its per-block adds). B's kN rows of 128 bytes start at kBOffset and run
// past it for kN > 128 into shared memory that holds other garbage (only the timing means anything).
template <int kN, bool kBoth>
__global__ void __launch_bounds__(384, 1) bench_wide(int iters, long long* out, float* sink) {
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  unsigned char* smem = filled_operands(smem_raw);
  const int wg = threadIdx.x / 128, tid = threadIdx.x % 128;
  __syncthreads();
  if (wg == 2 || (!kBoth && wg == 1)) return;
  const OperandAddresses ops = operand_addresses(smem, wg, tid);
  float acc[kN / 2];
  for (int i = 0; i < kN / 2; ++i) acc[i] = 0.f;
  long long t0 = clock64();
  for (int it = 0; it < iters; ++it) {
    issue_chain_block<kN, false>(acc, ops);
    fence_registers(acc);
    wgmma_wait<0>();
    fence_registers(acc);
  }
  long long t1 = clock64();
  float s = 0.f;
  for (int i = 0; i < kN / 2; ++i) s += acc[i];
  sink[blockIdx.x * 256 + threadIdx.x] = s;
  if (tid == 0) out[blockIdx.x * 2 + wg] = t1 - t0;
}

// Two warpgroups (256 threads, no producer: an accumulator and a result of kN / 2 registers each need more than
// 384 threads leave), one m64nNk32 chain each per K block, the (1,1,128) promotion after each block's wait; kTurns:
// they take turns as schedule 2 does (each waits for its turn, issues, commits and hands the turn over, then waits
// for its WGMMAs and promotes while the other's run), else they issue in phase. A ping-pong (1,1,128) kernel on
// 128x192 tiles would rest on the turns hiding the promotion; measured, they do not (60% of the rate, in phase 62%).
template <int kN, bool kTurns>
__global__ void __launch_bounds__(256, 1) bench_turns_wide(int iters, long long* out, float* sink) {
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  unsigned char* smem = filled_operands(smem_raw);
  const int wg = threadIdx.x / 128, tid = threadIdx.x % 128;
  __syncthreads();
  const OperandAddresses ops = operand_addresses(smem, wg, tid);
  float acc[kN / 2], result[kN / 2];
  for (int i = 0; i < kN / 2; ++i) result[i] = 0.f;
  if (kTurns && wg == 1) named_barrier_arrive(3, 256);
  long long t0 = clock64();
  for (int it = 0; it < iters; ++it) {
    if constexpr (kTurns) named_barrier_sync(3 + wg, 256);
    issue_chain_block<kN, true>(acc, ops);
    if constexpr (kTurns) named_barrier_arrive(3 + (1 - wg), 256);
    fence_registers(acc);
    wgmma_wait<0>();
    fence_registers(acc);
    promote_1d1d(result, acc, 0, kN / 8, ops.sfb, it);
  }
  long long t1 = clock64();
  if (kTurns && wg == 0) named_barrier_sync(3, 256);
  float s = 0.f;
  for (int i = 0; i < kN / 2; ++i) s += result[i];
  sink[blockIdx.x * 256 + threadIdx.x] = s;
  if (tid == 0) out[blockIdx.x * 2 + wg] = t1 - t0;
}

static bool g_failed = false;
constexpr int kSmemBytes = 80 * 1024;  // operands (40 KiB with B's scales and the barriers) and a 32 KiB scratch

template <typename Kernel>
void launch(Kernel k, const char* name, int ctas, long long* d_out, float* d_sink, int threads = 384) {
  cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes);
  const int iters = 4000;
  k<<<ctas, threads, kSmemBytes>>>(iters, d_out, d_sink);
  k<<<ctas, threads, kSmemBytes>>>(iters, d_out, d_sink);
  cudaError_t e = cudaDeviceSynchronize();
  if (e != cudaSuccess) g_failed = true;
  long long h[2];
  cudaMemcpy(h, d_out, sizeof(h), cudaMemcpyDeviceToHost);
  printf("%-52s ctas %3d  cycles per K block: wg0 %7.1f  %s\n", name, ctas, double(h[0]) / iters,
         e != cudaSuccess ? cudaGetErrorString(e) : "");
}

template <int S, int C, bool P>
void run(const char* name, int ctas, long long* d_out, float* d_sink) {
  launch(bench<S, C, P>, name, ctas, d_out, d_sink);
}

int main() {
  long long* d_out; float* d_sink;
  cudaMalloc(&d_out, 264 * 8 * 2); cudaMalloc(&d_sink, 132 * 256 * 4);
  cudaMemset(d_out, 0, 264 * 16);
  for (int ctas : {1, 132}) {
    run<0, 1, false>("in phase, 1 chain n128, no promotion", ctas, d_out, d_sink);
    run<0, 1, true>("in phase, 1 chain n128, promotion", ctas, d_out, d_sink);
    run<1, 1, false>("solo, 1 chain n128", ctas, d_out, d_sink);
    run<1, 2, false>("solo, 2 chains n64 SS", ctas, d_out, d_sink);
    run<1, 3, false>("solo, 2 chains n64 RS", ctas, d_out, d_sink);
    run<0, 2, false>("in phase, 2 chains n64 SS, no promotion", ctas, d_out, d_sink);
    run<0, 3, false>("in phase, 2 chains n64 RS, no promotion", ctas, d_out, d_sink);
    run<0, 3, true>("in phase, 2 chains n64 RS, promotion", ctas, d_out, d_sink);
    run<2, 2, true>("turns, 2 chains n64 SS, promotion", ctas, d_out, d_sink);
    run<2, 3, true>("turns, 2 chains n64 RS, promotion", ctas, d_out, d_sink);
    run<2, 1, true>("turns, 1 chain n128, promotion", ctas, d_out, d_sink);
    run<3, 1, false>("three in phase, 1 chain n128, no promotion", ctas, d_out, d_sink);
    run<3, 1, true>("three in phase, 1 chain n128, promotion", ctas, d_out, d_sink);
    run<4, 1, true>("in phase, promotion, 4-stage barrier ring", ctas, d_out, d_sink);
    run<5, 1, true>("in phase, promotion, ring with 32 KiB stage writes", ctas, d_out, d_sink);
    launch(bench_two_acc<1>, "in phase, two acc., next block issued, then promotion", ctas, d_out, d_sink, 256);
    launch(bench_two_acc<2>, "in phase, two acc., halves of both interleaved", ctas, d_out, d_sink, 256);
    run<5, 1, false>("in phase, no promotion, ring with 32 KiB stage writes", ctas, d_out, d_sink);
    launch(bench_two_acc<1, 1>, "two acc., next block issued, then promotion, ring", ctas, d_out, d_sink);
    launch(bench_two_acc<1, 2>, "two acc., as above, ring with 32 KiB stage writes", ctas, d_out, d_sink);
    launch(bench_wide<128, false>, "solo, 1 chain n128, no per-block add", ctas, d_out, d_sink);
    launch(bench_wide<192, false>, "solo, 1 chain n192 (work 384)", ctas, d_out, d_sink);
    launch(bench_wide<256, false>, "solo, 1 chain n256 (work 512)", ctas, d_out, d_sink);
    launch(bench_wide<192, true>, "in phase, 1 chain n192 (work 768)", ctas, d_out, d_sink);
    launch(bench_wide<256, true>, "in phase, 1 chain n256 (work 1024)", ctas, d_out, d_sink);
    launch(bench_turns_wide<128, true>, "turns, n128, promotion, no producer (work 512)", ctas, d_out, d_sink, 256);
    launch(bench_turns_wide<128, false>, "in phase, n128, promotion, no producer (512)", ctas, d_out, d_sink, 256);
    launch(bench_turns_wide<192, true>, "turns, n192, promotion, no producer (work 768)", ctas, d_out, d_sink, 256);
    launch(bench_turns_wide<192, false>, "in phase, n192, promotion, no producer (768)", ctas, d_out, d_sink, 256);
  }
  printf("tensor work of one warpgroup's 64x128x128 K block: 256 cycles (two warpgroups: 512, three: 768)\n");
  return g_failed ? 1 : 0;
}
