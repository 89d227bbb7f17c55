// The WGMMA shared-memory descriptor arithmetic the kernels rely on (kernels/sm90/smem_descriptor.cuh): a K loop
// builds each stage's and each K step's descriptor by adding offset / 16 to stage 0's low word, which must equal
// the low word built from the offset address, everywhere in shared memory.
#include <gtest/gtest.h>

#include "sm90/gemm_params.cuh"
#include "sm90/smem_descriptor.cuh"

namespace moegemm {
namespace {

using kernels::sm90::kSmemAddressLimit;
using kernels::sm90::smem_desc_sw128_lo;

TEST(SmemDescriptor, FieldsAreWhereWgmmaReadsThem) {
  // Address 0x12340 -> field 0x1234 (bits 0-13); leading offset 8192 -> 512 in bits 16-29.
  EXPECT_EQ(smem_desc_sw128_lo(0x12340u, 16), 0x1234u | (1u << 16));
  EXPECT_EQ(smem_desc_sw128_lo(0x12340u, 8192), 0x1234u | (512u << 16));
  EXPECT_EQ(smem_desc_sw128_lo(kSmemAddressLimit - 16, 16), 0x3FFFu | (1u << 16));
  EXPECT_EQ(kernels::sm90::kSmemDescSw128Hi, 64u | (1u << 30));  // stride 1024 bytes, 128-byte swizzle
}

TEST(SmemDescriptor, AddingOffsetOver16EqualsTheDescriptorOfTheOffsetAddress) {
  // Every 1024-byte-aligned tile base (TMA's 128-byte swizzle needs it), every multiple of 16 after it, both
  // leading offsets the kernels use: one add on the low word is the descriptor of the moved address.
  long long checked = 0;
  for (unsigned int lead : {16u, 8192u}) {
    for (unsigned int base = 0; base < kSmemAddressLimit; base += 1024) {
      const unsigned int lo = smem_desc_sw128_lo(base, lead);
      for (unsigned int offset = 0; base + offset < kSmemAddressLimit; offset += 16) {
        const unsigned int want = smem_desc_sw128_lo(base + offset, lead);
        if (lo + offset / 16 != want) {
          FAIL() << "base " << base << " offset " << offset << " lead " << lead << ": " << lo + offset / 16
                 << " != " << want;
        }
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 4000000);
}

TEST(SmemDescriptor, EveryKernelLayoutFitsBelowTheAddressLimit) {
  // The identity needs every tile address below 256 KiB: the largest layout the planner can pick, plus the
  // 1024 bytes of alignment slack, stays below it (the SM has 228 KiB).
  for (int block_m : {64, 128}) {
    for (int block_n = 16; block_n <= 192; block_n += 16) {
      for (int recipe = 0; recipe <= 4; ++recipe) {
        if (!kernels::sm90::gemm_block_n_supported(recipe, block_n)) continue;
        for (int stages = 2; stages <= 16; ++stages) {
          const auto layout = kernels::sm90::gemm_smem_layout(block_m, block_n, stages, recipe);
          if (layout.launch_bytes > kernels::sm90::kSm90MaxSmemBytes) break;  // more stages than fit: never launched
          EXPECT_LT(static_cast<unsigned int>(layout.launch_bytes), kSmemAddressLimit);
        }
      }
    }
  }
}

}  // namespace
}  // namespace moegemm
