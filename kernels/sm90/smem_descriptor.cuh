// WGMMA shared-memory matrix descriptors for 128-byte-swizzled tiles: the arithmetic, shared with the host so that
// the CPU tests check it (the kernels build descriptors with it through sm90/ptx.cuh).
//   K-major tiles: rows of 128 bytes, 8-row (1024-byte) swizzle atoms stacked along M/N (stride byte offset 1024);
//     the leading byte offset is unused; the next 32 bytes of K are +32 on the address.
//   MN-major tiles, as boxes of [64 K rows][64 MN values] (128 bytes of MN per row): 8-row swizzle atoms follow
//     each other along K (stride byte offset 1024) and the next 64-value chunk of MN starts `leading_bytes`
//     further (leading byte offset); the next 16 K rows are +16 * 128 on the address.
// Bits: 0-13 address >> 4, 16-29 leading byte offset >> 4, 32-45 stride byte offset >> 4, 62-63 swizzle (1 = 128B).
#pragma once

#include "common/platform.cuh"

namespace moegemm::kernels::sm90 {

// The low word: address and leading byte offset.
MOEGEMM_HD constexpr unsigned int smem_desc_sw128_lo(unsigned int addr, unsigned int leading_bytes = 16) {
  return ((addr & 0x3FFFFu) >> 4) | (((leading_bytes >> 4) & 0x3FFFu) << 16);
}

// The high word: stride byte offset 1024 and the 128-byte swizzle mode.
inline constexpr unsigned int kSmemDescSw128Hi = (1024u >> 4) | (1u << 30);

// Shared-memory addresses are below 256 KiB, so the 14-bit address field never carries into the leading-offset
// field: for an offset d that is a multiple of 16 and an address a + d still below 256 KiB,
//   smem_desc_sw128_lo(a + d, lead) == smem_desc_sw128_lo(a, lead) + d / 16.
// A K loop therefore moves between stages and K steps with one add per descriptor
// (tests/cpu/test_smem_descriptor.cpp checks the identity over the whole shared-memory range).
inline constexpr unsigned int kSmemAddressLimit = 1u << 18;

}  // namespace moegemm::kernels::sm90
