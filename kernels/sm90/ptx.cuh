// SM90 architecture primitives as inline PTX: shared-memory addressing, mbarriers, TMA (bulk tensor copies),
// WGMMA fences and shared-memory matrix descriptors, named barriers, register reallocation.
// Algorithms (pipelines, scheduling, scaling, epilogues) live elsewhere; this file only wraps instructions.
#pragma once

#include "common/platform.cuh"
#include "sm90/smem_descriptor.cuh"
#include "sm90/tma_descriptor.cuh"

namespace moegemm::kernels::sm90 {

using u32 = unsigned int;
using u64 = unsigned long long;

MOEGEMM_DEVICE u32 smem_addr(const void* p) {
  u32 r;
  asm volatile("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(r) : "l"(p));
  return r;
}

MOEGEMM_DEVICE u32 thread_index() { return threadIdx.x; }

// True in one lane of the (fully active) warp, the same lane each time: elect.sync, which the compiler knows to
// pick a single lane, so a warp-level instruction issued under it (a TMA copy) needs no loop over active lanes.
MOEGEMM_DEVICE bool elect_one() {
  u32 elected;
  asm volatile("{ .reg .pred p; elect.sync _|p, 0xffffffff; selp.u32 %0, 1, 0, p; }" : "=r"(elected));
  return elected != 0;
}

MOEGEMM_DEVICE u32 lane_index() {
  u32 r;
  asm volatile("mov.u32 %0, %%laneid;" : "=r"(r));
  return r;
}

// ---- mbarrier ---------------------------------------------------------------------------------------------------
MOEGEMM_DEVICE void mbarrier_init(u64* bar, u32 count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(bar)), "r"(count) : "memory");
}

// Makes barrier initialisation visible to the async proxy (TMA) and to other threads.
MOEGEMM_DEVICE void fence_barrier_init() { asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory"); }

MOEGEMM_DEVICE void mbarrier_arrive_expect_tx(u32 bar, u32 bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}

MOEGEMM_DEVICE void mbarrier_arrive(u32 addr) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(addr) : "memory");
}

// ---- Non-bulk asynchronous copies (cp.async) ----------------------------------------------------------------------
// A 4-byte global -> shared copy that the issuing thread does not wait for (the global read goes through L1).
MOEGEMM_DEVICE void cp_async_4(u32 dst_addr, const void* src) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" ::"r"(dst_addr), "l"(src) : "memory");
}

// One arrival on the barrier once every cp.async this thread issued so far has landed. `noinc`: the arrival is one
// of those the barrier was initialised to expect.
MOEGEMM_DEVICE void cp_async_mbarrier_arrive(u32 bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];" ::"r"(bar) : "memory");
}

// Waits for the phase with the given parity of the barrier at shared address `addr` to complete.
MOEGEMM_DEVICE void mbarrier_wait(u32 addr, u32 parity) {
  u32 done = 0;
  do {
    asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                 : "=r"(done)
                 : "r"(addr), "r"(parity)
                 : "memory");
  } while (!done);
}

MOEGEMM_DEVICE void mbarrier_wait(u64* bar, u32 parity) { mbarrier_wait(smem_addr(bar), parity); }

// ---- TMA ----------------------------------------------------------------------------------------------------------
// Acquire side of a descriptor written in global memory by an earlier kernel (generic proxy): makes those writes
// visible to the tensormap proxy before the first TMA load through it.
MOEGEMM_DEVICE void tma_descriptor_acquire(const TmaDescriptor* desc) {
  asm volatile("fence.proxy.tensormap::generic.acquire.gpu [%0], 128;" ::"l"(reinterpret_cast<u64>(desc)) : "memory");
}

MOEGEMM_DEVICE void tma_prefetch_descriptor(const TmaDescriptor* desc) {
  asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<u64>(desc)) : "memory");
}

// The copies take shared-memory addresses (smem_addr) of the destination and of the barrier: the producer keeps
// stage 0's addresses and steps them with one add per stage, instead of converting 64-bit pointers per copy.
MOEGEMM_DEVICE void tma_load_2d(u32 dst, const TmaDescriptor* desc, u32 bar, int c0, int c1) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];" ::"r"(
          dst),
      "l"(reinterpret_cast<u64>(desc)), "r"(bar), "r"(c0), "r"(c1)
      : "memory");
}

MOEGEMM_DEVICE void tma_load_3d(u32 dst, const TmaDescriptor* desc, u32 bar, int c0, int c1, int c2) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5}], [%2];" ::
          "r"(dst),
      "l"(reinterpret_cast<u64>(desc)), "r"(bar), "r"(c0), "r"(c1), "r"(c2)
      : "memory");
}

// The same load, delivered to the same shared-memory offset (and completing on the same barrier offset) in every
// CTA of the cluster whose bit is set in cta_mask.
MOEGEMM_DEVICE void tma_load_2d_multicast(u32 dst, const TmaDescriptor* desc, u32 bar, unsigned short cta_mask, int c0,
                                          int c1) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
      " [%0], [%1, {%4, %5}], [%2], %3;" ::"r"(dst),
      "l"(reinterpret_cast<u64>(desc)), "r"(bar), "h"(cta_mask), "r"(c0), "r"(c1)
      : "memory");
}

MOEGEMM_DEVICE void tma_load_3d_multicast(u32 dst, const TmaDescriptor* desc, u32 bar, unsigned short cta_mask, int c0,
                                          int c1, int c2) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
      " [%0], [%1, {%4, %5, %6}], [%2], %3;" ::"r"(dst),
      "l"(reinterpret_cast<u64>(desc)), "r"(bar), "h"(cta_mask), "r"(c0), "r"(c1), "r"(c2)
      : "memory");
}

// TMA store: shared memory (one box, laid out as the descriptor's swizzle says) to global memory, asynchronously.
// Elements outside the tensor's extents are not written. Completion is tracked per thread by bulk groups: commit
// after the stores of a batch, then wait until at most N batches are still reading shared memory (.read: the
// source may be overwritten) or still writing (all: the writes are performed).
MOEGEMM_DEVICE void tma_store_2d(const TmaDescriptor* desc, u32 src, int c0, int c1) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];" ::"l"(
                   reinterpret_cast<u64>(desc)),
               "r"(src), "r"(c0), "r"(c1)
               : "memory");
}
MOEGEMM_DEVICE void tma_store_3d(const TmaDescriptor* desc, u32 src, int c0, int c1, int c2) {
  asm volatile("cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [%0, {%2, %3, %4}], [%1];" ::"l"(
                   reinterpret_cast<u64>(desc)),
               "r"(src), "r"(c0), "r"(c1), "r"(c2)
               : "memory");
}
// TMA reduce-add: each element of the box is added to global memory's value by the memory system (the load-add-
// store happens there, not in the SM); tracked by the same bulk groups as the stores.
MOEGEMM_DEVICE void tma_reduce_add_2d(const TmaDescriptor* desc, u32 src, int c0, int c1) {
  asm volatile("cp.reduce.async.bulk.tensor.2d.global.shared::cta.add.tile.bulk_group [%0, {%2, %3}], [%1];" ::"l"(
                   reinterpret_cast<u64>(desc)),
               "r"(src), "r"(c0), "r"(c1)
               : "memory");
}
MOEGEMM_DEVICE void tma_reduce_add_3d(const TmaDescriptor* desc, u32 src, int c0, int c1, int c2) {
  asm volatile("cp.reduce.async.bulk.tensor.3d.global.shared::cta.add.tile.bulk_group [%0, {%2, %3, %4}], [%1];" ::"l"(
                   reinterpret_cast<u64>(desc)),
               "r"(src), "r"(c0), "r"(c1), "r"(c2)
               : "memory");
}
MOEGEMM_DEVICE void bulk_commit_group() { asm volatile("cp.async.bulk.commit_group;" ::: "memory"); }
template <int kPending>
MOEGEMM_DEVICE void bulk_wait_group_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(kPending) : "memory");
}
template <int kPending>
MOEGEMM_DEVICE void bulk_wait_group() {
  asm volatile("cp.async.bulk.wait_group %0;" ::"n"(kPending) : "memory");
}

// ---- Clusters -----------------------------------------------------------------------------------------------------
MOEGEMM_DEVICE u32 cluster_cta_rank() {
  u32 r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}

// All threads of all CTAs of the cluster: arrive (release) then wait (acquire).
MOEGEMM_DEVICE void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
  asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
}

// Arrives on a barrier of a CTA of the cluster (possibly this one) at its shared::cluster address
// (cluster_map_shared, below). The arrive has the default .release.cta semantics, as CUTLASS's cluster barrier does:
// the arriving warps only read the stage (WGMMA, completed by wgmma.wait_group), and a .release.cluster arrive, which
// this used before, acts as a cluster-wide memory fence on every K block (suspected cause of the ~1 us per K block
// measured with clusters; not yet re-measured). The caller maps a 32-bit shared address: a generic pointer to the
// barrier here (as before) cost the 192-row k-grouped pair two more registers and 24 bytes of spills.
MOEGEMM_DEVICE void mbarrier_arrive_remote(u32 remote_addr) {
  asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];" ::"r"(remote_addr) : "memory");
}

// Split-K partials (gemm_split_k_supported): a rank's FP32 results go straight into rank 0's shared memory, and the
// arrival that announces them releases them at cluster scope; rank 0 waits with acquire at cluster scope.
MOEGEMM_DEVICE u32 cluster_map_shared(u32 addr, u32 cta) {
  u32 remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(addr), "r"(cta));
  return remote;
}
MOEGEMM_DEVICE void store_cluster_v2_f32(u32 remote_addr, float a, float b) {
  asm volatile("st.shared::cluster.v2.f32 [%0], {%1, %2};" ::"r"(remote_addr), "f"(a), "f"(b) : "memory");
}
MOEGEMM_DEVICE void mbarrier_arrive_release_cluster(u32 remote_addr) {
  asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];" ::"r"(remote_addr) : "memory");
}
MOEGEMM_DEVICE void mbarrier_wait_acquire_cluster(u32 addr, u32 parity) {
  u32 done = 0;
  do {
    asm volatile(
        "{ .reg .pred p; mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
        : "=r"(done)
        : "r"(addr), "r"(parity)
        : "memory");
  } while (!done);
}

// ---- Fences and barriers ------------------------------------------------------------------------------------------
// Orders this thread's generic-proxy shared-memory writes before later async-proxy (TMA, WGMMA) accesses.
MOEGEMM_DEVICE void fence_proxy_async_shared() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }

// Barrier `id` (1..15; 0 is __syncthreads) over `count` threads (a multiple of 32).
MOEGEMM_DEVICE void named_barrier_sync(u32 id, u32 count) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(count) : "memory");
}
// Arrives on barrier `id` without waiting: the other `count` minus these threads wait in named_barrier_sync.
MOEGEMM_DEVICE void named_barrier_arrive(u32 id, u32 count) {
  asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(count) : "memory");
}

template <u32 kRegs>
MOEGEMM_DEVICE void setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(kRegs));
}

template <u32 kRegs>
MOEGEMM_DEVICE void setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(kRegs));
}

// Programmatic dependent launch: wait until the preceding kernel's memory is visible (no-op without PDL).
MOEGEMM_DEVICE void grid_dependency_wait() { asm volatile("griddepcontrol.wait;" ::: "memory"); }
MOEGEMM_DEVICE void grid_dependency_launch_dependents() { asm volatile("griddepcontrol.launch_dependents;" :::); }

// ---- WGMMA --------------------------------------------------------------------------------------------------------
MOEGEMM_DEVICE void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
MOEGEMM_DEVICE void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int kPending>
MOEGEMM_DEVICE void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(kPending) : "memory");
}

// Keeps the compiler from moving accesses to accumulator registers across WGMMA issue/wait points.
template <int kCount>
MOEGEMM_DEVICE void fence_registers(float (&r)[kCount]) {
#pragma unroll
  for (int i = 0; i < kCount; ++i) asm volatile("" : "+f"(r[i])::"memory");
}

// Zeroes registers where the code says so: volatile, so the compiler cannot hoist the zeroing out of a rarely taken
// branch and run it on every path (it did, for a tile's result, as CS2R before every tile).
template <int kCount>
MOEGEMM_DEVICE void zero_registers(float (&r)[kCount]) {
#pragma unroll
  for (int i = 0; i < kCount; ++i) asm volatile("mov.b32 %0, 0;" : "=f"(r[i]));
}

// A shared-memory matrix descriptor of a tile written by TMA with 128-byte swizzling, from its low word
// (sm90/smem_descriptor.cuh has the layout and the arithmetic).
MOEGEMM_DEVICE u64 smem_desc_sw128_from_lo(u32 lo) {
  u64 desc;
  asm("mov.b64 %0, {%1, %2};" : "=l"(desc) : "r"(lo), "r"(kSmemDescSw128Hi));
  return desc;
}

// ---- Conversions --------------------------------------------------------------------------------------------------
// Two floats to packed bf16x2 (round to nearest even); `lo` lands in the low half (the lower address).
MOEGEMM_DEVICE u32 pack_bf16x2(float lo, float hi) {
  u32 r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}

MOEGEMM_DEVICE void store_global_v4(void* p, u32 a, u32 b, u32 c, u32 d) {
  asm volatile("st.global.v4.b32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(a), "r"(b), "r"(c), "r"(d) : "memory");
}

MOEGEMM_DEVICE void store_shared_u32(u32 addr, u32 v) {
  asm volatile("st.shared.b32 [%0], %1;" ::"r"(addr), "r"(v) : "memory");
}

// A store under a predicate, as one predicated instruction: a branch around store_shared_u32 per element (what the
// compiler made of `if (...) store_shared_u32(...)` in an unrolled epilogue loop) cost about ten instructions each.
MOEGEMM_DEVICE void store_shared_u32_if(u32 addr, u32 v, bool pred) {
  asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, %2, 0;\n @p st.shared.b32 [%0], %1;\n}" ::"r"(addr), "r"(v),
               "r"(static_cast<int>(pred))
               : "memory");
}

MOEGEMM_DEVICE u32 load_shared_u32(u32 addr) {
  u32 v;
  asm volatile("ld.shared.b32 %0, [%1];" : "=r"(v) : "r"(addr) : "memory");
  return v;
}

MOEGEMM_DEVICE float load_shared_f32(u32 addr) {
  float v;
  asm volatile("ld.shared.f32 %0, [%1];" : "=f"(v) : "r"(addr) : "memory");
  return v;
}

MOEGEMM_DEVICE void load_shared_v2_f32(u32 addr, float& a, float& b) {
  asm volatile("ld.shared.v2.f32 {%0, %1}, [%2];" : "=f"(a), "=f"(b) : "r"(addr) : "memory");
}

MOEGEMM_DEVICE void store_shared_v2_f32(u32 addr, float a, float b) {
  asm volatile("st.shared.v2.f32 [%0], {%1, %2};" ::"r"(addr), "f"(a), "f"(b) : "memory");
}

MOEGEMM_DEVICE void load_shared_v2_u32(u32 addr, u32& a, u32& b) {
  asm volatile("ld.shared.v2.b32 {%0, %1}, [%2];" : "=r"(a), "=r"(b) : "r"(addr) : "memory");
}

MOEGEMM_DEVICE void store_shared_v2_u32(u32 addr, u32 a, u32 b) {
  asm volatile("st.shared.v2.b32 [%0], {%1, %2};" ::"r"(addr), "r"(a), "r"(b) : "memory");
}

MOEGEMM_DEVICE void load_shared_v4(u32 addr, u32& a, u32& b, u32& c, u32& d) {
  asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];" : "=r"(a), "=r"(b), "=r"(c), "=r"(d) : "r"(addr) : "memory");
}

// A 4-byte global load when `pred`, else 0. Predicated rather than branched, so a run of them issues back to back
// (one memory latency for all); "memory" keeps them before the barriers that follow.
MOEGEMM_DEVICE u32 load_global_u32_if(const void* p, bool pred) {
  u32 v;
  asm volatile(
      "{\n .reg .pred p;\n setp.ne.b32 p, %2, 0;\n mov.b32 %0, 0;\n @p ld.global.b32 %0, [%1];\n}"
      : "=r"(v)
      : "l"(p), "r"(static_cast<int>(pred))
      : "memory");
  return v;
}

MOEGEMM_DEVICE int load_global_s32(const int* p) {
  int v;
  asm volatile("ld.global.s32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

}  // namespace moegemm::kernels::sm90
