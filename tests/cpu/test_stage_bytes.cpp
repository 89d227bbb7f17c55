// What a pipeline stage's full barrier expects (kernels/sm90/gemm_params.cuh): the bytes of the TMA boxes, with A's
// box cut to A's rows (rounded up to 8) when A has fewer rows than the tile. A wrong count hangs the kernel (too
// many) or lets it read a stage before it landed (too few), so the count must match the tiles and scales a stage holds.
#include <gtest/gtest.h>

#include <vector>

#include "sm90/gemm_params.cuh"

namespace moegemm {
namespace {

using kernels::sm90::a_box_rows;
using kernels::sm90::gemm_stage_tx_bytes;

TEST(StageBytes, FullBoxesFillTheStageRegionsOfTheLayout) {
  // With A's box at block_m rows, a stage receives A's and B's whole tiles (the layout's a_bytes and b_bytes), A's
  // block_m scales (FP8) and B's block_n row scales (recipe (1,1,128)), each inside its region of the stage.
  for (int block_m : {64, 128, 256}) {
    for (int block_n = 16; block_n <= 192; block_n += 16) {
      for (int recipe = 0; recipe <= 4; ++recipe) {
        if (!kernels::sm90::gemm_block_n_supported(recipe, block_n)) continue;
        const auto layout = kernels::sm90::gemm_smem_layout(block_m, block_n, 4, recipe);
        const bool unscaled = kernels::sm90::recipe_is_bf16(recipe);
        const bool row_scaled_b = recipe == static_cast<int>(kernels::sm90::GemmRecipe::kFp8_1d1d);
        const int sfa = unscaled ? 0 : block_m * 4;
        const int sfb = row_scaled_b ? block_n * 4 : 0;
        EXPECT_LE(sfa, layout.sfa_bytes);
        EXPECT_LE(sfb, layout.sfb_bytes);
        EXPECT_EQ(gemm_stage_tx_bytes(block_m, block_n, recipe),
                  static_cast<unsigned>(layout.a_bytes + layout.b_bytes + sfa + sfb))
            << "block " << block_m << "x" << block_n << " recipe " << recipe;
      }
    }
  }
}

TEST(StageBytes, ShortABoxCoversEveryRowOfA) {
  for (int block_m : {64, 128, 256}) {
    for (long long rows = 1; rows <= 300; ++rows) {
      const int box = a_box_rows(rows, block_m, true, 1);
      if (rows >= block_m) {
        EXPECT_EQ(box, block_m) << rows;
        continue;
      }
      EXPECT_GE(box, rows);  // every row of A is loaded
      EXPECT_LE(box, block_m);
      EXPECT_EQ(box % 8, 0);
      EXPECT_LT(box - rows, 8);  // at most 7 zero-filled rows
    }
  }
  EXPECT_EQ(a_box_rows(1, 64, true, 1), 8);
  EXPECT_EQ(a_box_rows(17, 64, true, 1), 24);
  EXPECT_EQ(a_box_rows(100, 128, true, 1), 104);
}

// The TMA-store staging (gemm_tma_store): per math warpgroup one buffer per wave, 1024-byte aligned (the 128-byte
// swizzle's atom), between the stages and the barriers; tma_staging_offset maps a wave's elements one to one onto
// its buffer, and each of a warp's 4-byte writes (the accumulator layout: lane / 4 picks the row, lane % 4 the
// column pair) touches 32 different banks.
TEST(StageBytes, TmaStoreStagingIsAlignedDisjointAndConflictFree) {
  using kernels::sm90::gemm_smem_layout;
  for (int block_m : {64, 128, 256}) {
    for (int block_n : {64, 128, 192}) {
      for (int recipe : {0, 2, 4}) {
        if (!kernels::sm90::gemm_tma_store(recipe, 0, block_n)) continue;
        if (block_m == 256 && !kernels::sm90::gemm_tall_tile_supported(recipe, 0, block_n, 1)) continue;
        const auto l = gemm_smem_layout(block_m, block_n, 3, recipe, true);
        const int waves = kernels::sm90::gemm_waves(block_m);
        EXPECT_EQ(l.d_offset % 1024, 0);
        EXPECT_EQ(l.d_bytes_per_wg, waves * 64 * block_n * 2);
        EXPECT_GE(l.d_offset, l.sfb_offset + 3 * l.sfb_bytes);
        EXPECT_LE(l.d_offset + kernels::sm90::gemm_math_warpgroups(block_m) * l.d_bytes_per_wg, l.barrier_offset);
      }
    }
  }
  for (int block_n : {64, 128, 192}) {
    std::vector<int> hits(64 * block_n * 2, 0);
    for (int row = 0; row < 64; ++row) {
      for (int col = 0; col < block_n; col += 2) {
        const int off = kernels::sm90::tma_staging_offset(row, col);
        ASSERT_GE(off, 0);
        ASSERT_LT(off + 3, 64 * block_n * 2);
        for (int b = 0; b < 4; ++b) ++hits[off + b];
        // Unswizzled, the pair sits in box col / 64 at row * 128 + (col % 64) * 2: the same 16-byte row segment.
        EXPECT_EQ(off / 128, (col / 64) * 64 + row);
      }
    }
    for (int h : hits) ASSERT_EQ(h, 1) << "block_n " << block_n;
    for (int warp = 0; warp < 4; ++warp) {
      for (int half = 0; half < 2; ++half) {
        for (int group = 0; group < block_n / 8; ++group) {
          unsigned banks = 0;
          for (int lane = 0; lane < 32; ++lane) {
            const int row = warp * 16 + lane / 4 + half * 8, col = group * 8 + (lane % 4) * 2;
            banks |= 1u << ((kernels::sm90::tma_staging_offset(row, col) / 4) % 32);
          }
          EXPECT_EQ(banks, 0xffffffffu) << "block_n " << block_n << " warp " << warp << " group " << group;
        }
      }
    }
  }
}

// FP32 D through TMA (gemm_fp32_tma_epilogue): one 64-row buffer per math warpgroup of 32-column boxes (128 bytes
// wide, the 128-byte swizzle), between the stages and the barriers. tma_staging_offset_f32 maps the wave's elements
// one to one onto it, and each of a warp's 8-byte accesses (a column pair of the accumulator layout) touches every
// bank exactly twice: 256 bytes in two wavefronts, the fewest possible.
TEST(StageBytes, Fp32TmaStagingIsAlignedOneToOneAndSpreadOverAllBanks) {
  using kernels::sm90::gemm_smem_layout;
  const int fp32_recipes[] = {1, 3};  // FP8 (1,1,128) and BF16 with FP32 D
  for (int recipe : fp32_recipes) {
    ASSERT_TRUE(kernels::sm90::recipe_has_fp32_out(recipe));
    for (int block_m : {64, 128}) {
      for (int block_n : {32, 64, 128, 160}) {
        ASSERT_TRUE(kernels::sm90::gemm_tma_store(recipe, 0, block_n));
        ASSERT_TRUE(kernels::sm90::gemm_tma_store(recipe, static_cast<int>(kernels::GroupedKind::kKGrouped), block_n));
        const auto l = gemm_smem_layout(block_m, block_n, 3, recipe, true);
        EXPECT_EQ(l.d_offset % 1024, 0);
        EXPECT_EQ(l.d_bytes_per_wg, 64 * block_n * 4);
        EXPECT_GE(l.d_offset, l.sfb_offset + 3 * l.sfb_bytes);
        EXPECT_LE(l.d_offset + kernels::sm90::gemm_math_warpgroups(block_m) * l.d_bytes_per_wg, l.barrier_offset);
      }
    }
    EXPECT_FALSE(kernels::sm90::gemm_tma_store(recipe, 0, 48));  // not whole 32-column boxes: stored by threads
  }
  for (int block_n : {32, 64, 160}) {
    std::vector<int> hits(64 * block_n * 4, 0);
    for (int row = 0; row < 64; ++row) {
      for (int col = 0; col < block_n; col += 2) {
        const int off = kernels::sm90::tma_staging_offset_f32(row, col);
        ASSERT_EQ(off % 8, 0);
        ASSERT_LT(off + 7, 64 * block_n * 4);
        for (int b = 0; b < 8; ++b) ++hits[off + b];
        EXPECT_EQ(off / 128, (col / 32) * 64 + row);  // box col / 32, row `row`: swizzling stays inside the row
      }
    }
    for (int h : hits) ASSERT_EQ(h, 1) << "block_n " << block_n;
    for (int warp = 0; warp < 4; ++warp) {
      for (int half = 0; half < 2; ++half) {
        for (int group = 0; group < block_n / 8; ++group) {
          int per_bank[32] = {};
          for (int lane = 0; lane < 32; ++lane) {
            const int row = warp * 16 + lane / 4 + half * 8, col = group * 8 + (lane % 4) * 2;
            const int bank = (kernels::sm90::tma_staging_offset_f32(row, col) / 4) % 32;
            ++per_bank[bank];
            ++per_bank[bank + 1];
          }
          for (int b = 0; b < 32; ++b) EXPECT_EQ(per_bank[b], 2) << "block_n " << block_n << " bank " << b;
        }
      }
    }
  }
}

// Half staging (GemmSmemLayout::half_staging): only recipe (1,1,128) tiles of one wave per warpgroup (not 256 rows),
// whole 64-column halves, only where the stages asked for do not fit beside a whole FP32 buffer, and then they fit
// beside half of one; everything else lays out as before. The planner's stage count never needs it.
TEST(StageBytes, HalfStagingOnlyWhereAWholeBufferDoesNotFit) {
  using kernels::sm90::gemm_smem_layout;
  using kernels::sm90::gemm_smem_layout_with;
  using kernels::sm90::kSm90MaxSmemBytes;
  constexpr int kKGrouped = static_cast<int>(kernels::GroupedKind::kKGrouped);
  int half_staged = 0;
  for (int recipe : {0, 1, 2, 3, 4}) {
    for (int kind : {0, kKGrouped}) {
      for (int block_m : {64, 128, 192, 256}) {
        for (int block_n = 16; block_n <= 192; block_n += 16) {
          const bool tma_store = kernels::sm90::gemm_tma_store(recipe, kind, block_n);
          for (int stages = 2; stages <= 8; ++stages) {
            const auto whole =
                gemm_smem_layout_with(block_m, block_n, stages, recipe, tma_store, 1, false, false, false);
            const auto l = gemm_smem_layout(block_m, block_n, stages, recipe, tma_store);
            const bool allowed = recipe == 1 && tma_store && block_n % 64 == 0 && block_m != 256;
            EXPECT_EQ(kernels::sm90::gemm_half_staging_supported(recipe, block_m, block_n, 1, tma_store), allowed);
            if (!l.half_staging) {
              EXPECT_TRUE(whole.launch_bytes <= kSm90MaxSmemBytes || !allowed);
              EXPECT_EQ(l.launch_bytes, whole.launch_bytes);
              EXPECT_EQ(l.d_bytes_per_wg, whole.d_bytes_per_wg);
              continue;
            }
            ++half_staged;
            ASSERT_TRUE(allowed) << block_m << "x" << block_n << " recipe " << recipe;
            EXPECT_GT(whole.launch_bytes, kSm90MaxSmemBytes);
            EXPECT_EQ(l.d_bytes_per_wg * 2, whole.d_bytes_per_wg);
            EXPECT_EQ(l.d_bytes_per_wg, 64 * block_n * 2);  // 64 rows of block_n / 2 FP32 columns
            EXPECT_EQ(l.d_offset % 1024, 0);
            EXPECT_EQ(l.d_offset, whole.d_offset);  // the stages are laid out as before
            EXPECT_LE(l.d_offset + kernels::sm90::gemm_math_warpgroups(block_m) * l.d_bytes_per_wg, l.barrier_offset);
            EXPECT_EQ(l.bytes, l.barrier_offset + 2 * stages * 8 + kernels::sm90::gemm_math_warpgroups(block_m) * 8);
            EXPECT_EQ(l.launch_bytes - whole.launch_bytes, l.bytes - whole.bytes);
            if (l.launch_bytes > kSm90MaxSmemBytes) continue;  // too many stages either way: refused by the checks
            // One stage fewer fits beside a whole buffer: the override asks for one more than the planner could.
            EXPECT_LE(gemm_smem_layout(block_m, block_n, stages - 1, recipe, tma_store).launch_bytes,
                      kSm90MaxSmemBytes);
          }
        }
      }
    }
  }
  EXPECT_GT(half_staged, 0);
  // The measured candidates: the k-grouped 192x128 tile with 4 stages (3 fit beside a whole buffer), 128x128 with 5.
  EXPECT_TRUE(gemm_smem_layout(192, 128, 4, 1, true).half_staging);
  EXPECT_LE(gemm_smem_layout(192, 128, 4, 1, true).launch_bytes, kSm90MaxSmemBytes);
  EXPECT_FALSE(gemm_smem_layout(192, 128, 3, 1, true).half_staging);
  EXPECT_TRUE(gemm_smem_layout(128, 128, 5, 1, true).half_staging);
  EXPECT_LE(gemm_smem_layout(128, 128, 5, 1, true).launch_bytes, kSm90MaxSmemBytes);
  EXPECT_FALSE(gemm_smem_layout(192, 96, 4, 1, true).half_staging);  // 96 columns: no whole 64-column halves
  EXPECT_FALSE(gemm_smem_layout(192, 128, 4, 1, true, 2).half_staging);  // a K split
}

TEST(StageBytes, MaskedMnMajorAndClustersKeepTheTileHeight) {
  EXPECT_EQ(a_box_rows(1, 64, false, 1), 64);  // masked slabs, MN-major A, k-grouped: not a K-major 2-D A
  EXPECT_EQ(a_box_rows(1, 128, true, 2), 128);
  EXPECT_EQ(gemm_stage_tx_bytes(8, 16, 0), 8u * 128 + 16 * 128 + 8 * 4);  // FP8 1D2D, M = 1 on 64x16
  EXPECT_EQ(gemm_stage_tx_bytes(8, 160, 1), 8u * 128 + 160 * 128 + 8 * 4 + 160 * 4);  // (1,1,128): B's row scales
}

// Masked tiles copy A in boxes of kMaskedABoxRows rows (masked_a_boxes): enough boxes for every valid row, none past
// the tile, and at least one (the empty lower half of a pair still runs its K loop); the bytes the stage then expects
// are the full stage's less the boxes skipped, never below its B rows and scales.
TEST(StageBytes, MaskedABoxesCoverTheValidRowsAndStayInsideTheTile) {
  using kernels::sm90::kMaskedABoxRows;
  using kernels::sm90::masked_a_boxes;
  for (int block_m : {64, 128, 256}) {
    for (int valid = -3; valid <= block_m + 70; ++valid) {
      const int boxes = masked_a_boxes(valid, block_m);
      EXPECT_GE(boxes, 1) << valid;
      EXPECT_LE(boxes * kMaskedABoxRows, block_m) << valid;
      if (valid <= block_m) EXPECT_GE(boxes * kMaskedABoxRows, valid) << valid;  // every valid row is copied
      if (valid > kMaskedABoxRows && valid <= block_m) {
        EXPECT_LT(boxes * kMaskedABoxRows - valid, kMaskedABoxRows) << valid;  // no whole box past the rows
      }
      const unsigned full = gemm_stage_tx_bytes(block_m, 96, 0);
      const unsigned expected = full - static_cast<unsigned>((block_m - boxes * kMaskedABoxRows) * 128);
      EXPECT_GE(expected, gemm_stage_tx_bytes(0, 96, 0) + static_cast<unsigned>(block_m * 4)) << valid;
    }
  }
  EXPECT_EQ(masked_a_boxes(20, 64), 1);
  EXPECT_EQ(masked_a_boxes(33, 64), 2);
  EXPECT_EQ(masked_a_boxes(0, 64), 1);
  EXPECT_EQ(masked_a_boxes(300, 256), 8);
}

// Packed FP8 group ends (segment alignment 1 or 2) load A's scales shifted: a TMA box of MN-major FP32 scales can
// only start at a multiple of 4 rows (the copy engine faults on an innermost coordinate that is not 16-byte aligned),
// and their experts start at any row. So their stage region holds block_m + 4 rows (the tail box after the tile's
// rows), inside the stage's own region; every other kernel keeps the layout it had. BF16 has no scales.
TEST(StageBytes, OnlyPackedFp8GroupEndsLoadAsScalesShiftedWithATail) {
  using kernels::GroupedKind;
  using kernels::sm90::gemm_sfa_shifted;
  using kernels::sm90::gemm_smem_layout;
  using kernels::sm90::kSfaTailRows;
  constexpr int kEnds = static_cast<int>(GroupedKind::kContiguousGroupEnds);
  for (int recipe : {0, 1}) {
    EXPECT_TRUE(gemm_sfa_shifted(recipe, kEnds, 1));
    EXPECT_TRUE(gemm_sfa_shifted(recipe, kEnds, 2));
    for (int alignment : {4, 8, 16, 64, 128, 1024}) EXPECT_FALSE(gemm_sfa_shifted(recipe, kEnds, alignment));
  }
  for (GroupedKind kind : {GroupedKind::kDense, GroupedKind::kContiguousRowToGroup, GroupedKind::kMasked,
                           GroupedKind::kKGrouped}) {
    EXPECT_FALSE(gemm_sfa_shifted(0, static_cast<int>(kind), 128));
  }
  for (int bf16 : {2, 3, 4}) {
    ASSERT_TRUE(kernels::sm90::recipe_is_bf16(bf16)) << bf16;
    EXPECT_FALSE(gemm_sfa_shifted(bf16, kEnds, 1)) << bf16;
  }
  for (int block_m : {64, 128, 256}) {
    const auto plain = gemm_smem_layout(block_m, 128, 3, 0, true);
    const auto shifted = gemm_smem_layout(block_m, 128, 3, 0, true, 1, true);
    EXPECT_GE(shifted.sfa_bytes, (block_m + kSfaTailRows) * 4) << block_m;  // the tail box stays in its stage
    EXPECT_EQ(shifted.sfa_bytes % 128, 0) << block_m;
    EXPECT_EQ(plain.sfa_bytes, block_m * 4) << block_m;
    EXPECT_EQ(shifted.sfb_offset, shifted.sfa_offset + 3 * shifted.sfa_bytes) << block_m;
  }
}

// Row-to-group kernels hand each tile's passes from the producer to the consumers through a ring of slots in shared
// memory (gemm_tile_ring): the ring lies past every other region, its slots and barriers aligned, inside the bytes the
// launch requests; no other layout pays for it.
TEST(StageBytes, OnlyRowToGroupKernelsReserveTheTileRingAfterEverythingElse) {
  using kernels::GroupedKind;
  using kernels::sm90::gemm_smem_layout;
  using kernels::sm90::gemm_tile_ring;
  using kernels::sm90::kTileRingSlots;
  EXPECT_TRUE(gemm_tile_ring(static_cast<int>(GroupedKind::kContiguousRowToGroup)));
  for (GroupedKind kind : {GroupedKind::kDense, GroupedKind::kContiguousGroupEnds, GroupedKind::kMasked,
                           GroupedKind::kKGrouped}) {
    EXPECT_FALSE(gemm_tile_ring(static_cast<int>(kind))) << static_cast<int>(kind);
  }
  for (int recipe : {0, 2}) {
    for (int block_m : {64, 128, 256}) {
      for (int block_n : {64, 128, 192}) {
        for (bool tma_store : {false, true}) {
          const auto plain = gemm_smem_layout(block_m, block_n, 3, recipe, tma_store);
          const auto ring = gemm_smem_layout(block_m, block_n, 3, recipe, tma_store, 1, false, true);
          SCOPED_TRACE(testing::Message() << "recipe " << recipe << " tile " << block_m << "x" << block_n);
          EXPECT_EQ(plain.tile_ring_offset, 0);
          EXPECT_GE(ring.tile_ring_offset, plain.bytes);  // past the barriers and the staging
          EXPECT_EQ(ring.tile_ring_offset % 16, 0);       // 16-byte slots; the barriers after them 8-byte aligned
          EXPECT_EQ(ring.bytes, ring.tile_ring_offset + kTileRingSlots * (16 + 2 * 8));
          EXPECT_LE(ring.bytes - plain.bytes, kTileRingSlots * (16 + 2 * 8) + 15);
          EXPECT_EQ(ring.launch_bytes - ring.bytes, plain.launch_bytes - plain.bytes);
          EXPECT_EQ(ring.barrier_offset, plain.barrier_offset);  // every other region where it was
          EXPECT_EQ(ring.d_offset, plain.d_offset);
        }
      }
    }
  }
}

}  // namespace
}  // namespace moegemm
