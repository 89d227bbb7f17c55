// The oracle's FP8 quantizers: scale rule, layouts (MN-major TMA-aligned, per block, per channel, k-grouped),
// partial groups, and the e4m3 error bound after dequantization.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "moegemm/error.hpp"
#include "moegemm/recipe.hpp"
#include "moegemm/reference.hpp"

using namespace moegemm;
using namespace moegemm::reference;

namespace {

// Normal random data with a per-element magnitude spread, never zero-filled.
std::vector<float> random_floats(std::size_t n, unsigned seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, scale);
  std::vector<float> x(n);
  for (auto& v : x) v = normal(rng);
  return x;
}

std::size_t at(std::int64_t i) { return static_cast<std::size_t>(i); }

// e4m3 keeps 3 mantissa bits: a rounded normal value is within 2^-4 of itself, a subnormal within 2^-10 of the
// scale; both are within 2^-4 of the group's amax. The division x / scale adds a float rounding (2^-24 relative).
void expect_within_e4m3_bound(double dequantized, float x, float scale, float group_amax, const char* where) {
  const double error = std::fabs(dequantized - x);
  EXPECT_LE(error, std::ldexp(1.0, -4) * group_amax * (1 + 1e-6)) << where << ": x = " << x;
  EXPECT_LE(error, std::ldexp(1.0, -4) * std::fabs(x) * (1 + 1e-6) + std::ldexp(1.0, -10) * scale)
      << where << ": x = " << x;
}

}  // namespace

TEST(ReferencePerToken, HandComputedTinyCase) {
  // Row 0: amax 4, scale 4/448, scaled values 112, -224, 448. Row 1 is all zeros: the floor gives 1e-4/448.
  const std::vector<float> x = {1.0f, -2.0f, 4.0f, 0.0f, 0.0f, 0.0f};
  const PerTokenFp8 q = per_token_cast(x.data(), 2, 3);
  EXPECT_EQ(q.values, (std::vector<std::uint8_t>{0x6e, 0xf6, 0x7e, 0x00, 0x00, 0x00}));
  ASSERT_EQ(q.scale_col_stride, 4);
  ASSERT_EQ(q.scales.size(), 4u);
  EXPECT_EQ(q.scales[0], 4.0f / 448.0f);
  EXPECT_EQ(q.scales[1], 1e-4f / 448.0f);
  EXPECT_EQ(q.scales[2], 0.0f);
  EXPECT_EQ(q.scales[3], 0.0f);
  const std::vector<double> back = dequantize(q);
  EXPECT_NEAR(back[0], 1.0, 1e-6);
  EXPECT_NEAR(back[1], -2.0, 1e-6);
  EXPECT_NEAR(back[2], 4.0, 1e-6);
}

TEST(ReferencePerToken, MnMajorScaleBufferIsTmaAlignedAndZeroPadded) {
  const std::int64_t m = 5, k = 300;  // 3 K blocks, the last one partial (44 elements); M padded to 8
  const std::vector<float> x = random_floats(at(m * k), 1);
  const PerTokenFp8 q = per_token_cast(x.data(), m, k);
  ASSERT_EQ(q.scale_col_stride, tma_aligned_size(m, 4));
  ASSERT_EQ(q.scale_col_stride, 8);
  ASSERT_EQ(q.scale_blocks(), 3);
  ASSERT_EQ(q.scales.size(), 24u);
  ASSERT_EQ(q.values.size(), at(m * k));
  for (std::int64_t kb = 0; kb < 3; ++kb) {
    for (std::int64_t r = 0; r < 8; ++r) {
      const float stored = q.scales[at(r + kb * 8)];
      if (r >= m) {
        EXPECT_EQ(stored, 0.0f) << "padding entry r = " << r << ", kb = " << kb;
        continue;
      }
      float amax = 0.0f;
      for (std::int64_t c = kb * 128; c < std::min<std::int64_t>(k, kb * 128 + 128); ++c)
        amax = std::max(amax, std::fabs(x[at(r * k + c)]));
      EXPECT_EQ(stored, amax / 448.0f) << "r = " << r << ", kb = " << kb;
      EXPECT_EQ(q.scale(0, r, kb), stored);
    }
  }
}

TEST(ReferencePerToken, PartialLastBlockUsesItsRealElementsOnly) {
  // K = 576 = 4.5 blocks. The last 64 columns are 1000 times smaller than the rest; their scale must follow them.
  const std::int64_t m = 3, k = 576;
  std::vector<float> x = random_floats(at(m * k), 2);
  for (std::int64_t r = 0; r < m; ++r)
    for (std::int64_t c = 512; c < k; ++c) x[at(r * k + c)] *= 1e-3f;
  const PerTokenFp8 q = per_token_cast(x.data(), m, k);
  ASSERT_EQ(q.scale_blocks(), 5);
  const std::vector<double> back = dequantize(q);
  for (std::int64_t r = 0; r < m; ++r) {
    float tail_amax = 0.0f;
    for (std::int64_t c = 512; c < k; ++c) tail_amax = std::max(tail_amax, std::fabs(x[at(r * k + c)]));
    EXPECT_EQ(q.scale(0, r, 4), tail_amax / 448.0f);
    for (std::int64_t c = 512; c < k; ++c)
      expect_within_e4m3_bound(back[at(r * k + c)], x[at(r * k + c)], q.scale(0, r, 4), tail_amax, "tail");
  }
}

TEST(ReferencePerToken, GroupAmaxMapsToFp8MaxAndErrorStaysInBound) {
  const std::int64_t m = 7, k = 2112;  // the anchor's dgrad K: 16.5 blocks
  const std::vector<float> x = random_floats(at(m * k), 3, 4.0f);
  const PerTokenFp8 q = per_token_cast(x.data(), m, k);
  const std::vector<double> back = dequantize(q);
  for (std::int64_t r = 0; r < m; ++r) {
    for (std::int64_t kb = 0; kb < q.scale_blocks(); ++kb) {
      const std::int64_t c0 = kb * 128, c1 = std::min<std::int64_t>(k, c0 + 128);
      std::int64_t argmax = c0;
      for (std::int64_t c = c0; c < c1; ++c)
        if (std::fabs(x[at(r * k + c)]) > std::fabs(x[at(r * k + argmax)])) argmax = c;
      const float amax = std::fabs(x[at(r * k + argmax)]);
      EXPECT_EQ(q.values[at(r * k + argmax)] & 0x7f, 0x7e) << "the group's largest element becomes +-448";
      for (std::int64_t c = c0; c < c1; ++c)
        expect_within_e4m3_bound(back[at(r * k + c)], x[at(r * k + c)], q.scale(0, r, kb), amax, "per token");
    }
  }
}

TEST(ReferencePerToken, AmaxFloorIsAParameter) {
  std::vector<float> x(256, 0.0f);
  for (int i = 128; i < 256; ++i) x[at(i)] = 0.1f * ((i % 7) - 3);  // second group: amax 0.3, below a floor of 0.5
  const PerTokenFp8 q = per_token_cast(x.data(), 1, 256, 0.5f);
  EXPECT_EQ(q.scale(0, 0, 0), 0.5f / 448.0f);
  EXPECT_EQ(q.scale(0, 0, 1), 0.5f / 448.0f);
  const PerTokenFp8 q_default = per_token_cast(x.data(), 1, 256);
  EXPECT_EQ(q_default.scale(0, 0, 0), 1e-4f / 448.0f);
  EXPECT_EQ(q_default.scale(0, 0, 1), 0.3f / 448.0f);
  try {
    per_token_cast(x.data(), 1, 256, 0.0f);
    ADD_FAILURE() << "a zero floor must be rejected";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
  }
}

TEST(ReferencePerToken, GroupedEqualsPerGroupCast) {
  const std::int64_t groups = 3, rows = 5, k = 200;
  const std::vector<float> x = random_floats(at(groups * rows * k), 4);
  const PerTokenFp8 q = per_token_cast_grouped(x.data(), groups, rows, k);
  ASSERT_EQ(q.scale_group_stride, 8 * 2);
  ASSERT_EQ(q.scales.size(), at(groups * 16));
  for (std::int64_t g = 0; g < groups; ++g) {
    const PerTokenFp8 single = per_token_cast(x.data() + g * rows * k, rows, k);
    EXPECT_TRUE(std::equal(single.values.begin(), single.values.end(), q.values.begin() + g * rows * k)) << g;
    EXPECT_TRUE(std::equal(single.scales.begin(), single.scales.end(), q.scales.begin() + g * 16)) << g;
  }
}

TEST(ReferencePerBlock, ScalesAreRowMajorBlockAmaxesWithPartialEdges) {
  const std::int64_t n = 130, k = 200;  // 2 x 2 blocks, the last row and column of blocks partial
  const std::vector<float> x = random_floats(at(n * k), 5);
  const PerBlockFp8 q = per_block_cast(x.data(), n, k);
  ASSERT_EQ(q.scales.size(), 4u);
  const std::vector<double> back = dequantize(q);
  for (std::int64_t rb = 0; rb < 2; ++rb) {
    for (std::int64_t kb = 0; kb < 2; ++kb) {
      float amax = 0.0f;
      for (std::int64_t r = rb * 128; r < std::min<std::int64_t>(n, rb * 128 + 128); ++r)
        for (std::int64_t c = kb * 128; c < std::min<std::int64_t>(k, kb * 128 + 128); ++c)
          amax = std::max(amax, std::fabs(x[at(r * k + c)]));
      EXPECT_EQ(q.scales[at(rb * 2 + kb)], amax / 448.0f) << rb << ", " << kb;
      for (std::int64_t r = rb * 128; r < std::min<std::int64_t>(n, rb * 128 + 128); ++r)
        for (std::int64_t c = kb * 128; c < std::min<std::int64_t>(k, kb * 128 + 128); ++c)
          expect_within_e4m3_bound(back[at(r * k + c)], x[at(r * k + c)], q.scale(0, rb, kb), amax, "per block");
    }
  }
}

TEST(ReferencePerBlock, GroupedEqualsPerGroupCast) {
  const std::int64_t groups = 2, n = 129, k = 130;
  const std::vector<float> x = random_floats(at(groups * n * k), 6);
  const PerBlockFp8 q = per_block_cast_grouped(x.data(), groups, n, k);
  ASSERT_EQ(q.scales.size(), at(groups * 4));
  for (std::int64_t g = 0; g < groups; ++g) {
    const PerBlockFp8 single = per_block_cast(x.data() + g * n * k, n, k);
    EXPECT_TRUE(std::equal(single.values.begin(), single.values.end(), q.values.begin() + g * n * k)) << g;
    EXPECT_TRUE(std::equal(single.scales.begin(), single.scales.end(), q.scales.begin() + g * 4)) << g;
  }
}

TEST(ReferencePerChannel, ScalesPerChannelPer128Tokens) {
  const std::int64_t tokens = 256, channels = 5;
  const std::vector<float> x = random_floats(at(tokens * channels), 7);
  const PerChannelFp8 q = per_channel_cast(x.data(), tokens, channels);
  ASSERT_EQ(q.scales.size(), at(2 * channels));
  const std::vector<double> back = dequantize(q);
  for (std::int64_t tb = 0; tb < 2; ++tb) {
    for (std::int64_t c = 0; c < channels; ++c) {
      float amax = 0.0f;
      for (std::int64_t t = tb * 128; t < tb * 128 + 128; ++t)
        amax = std::max(amax, std::fabs(x[at(t * channels + c)]));
      EXPECT_EQ(q.scales[at(tb * channels + c)], amax / 448.0f);
      for (std::int64_t t = tb * 128; t < tb * 128 + 128; ++t)
        expect_within_e4m3_bound(back[at(t * channels + c)], x[at(t * channels + c)], q.scale(tb, c), amax, "channel");
    }
  }
}

TEST(ReferencePerChannel, KMajorFormEqualsPerTokenCastOfTheTranspose) {
  const std::int64_t tokens = 384, channels = 6;
  const std::vector<float> x = random_floats(at(tokens * channels), 8);
  std::vector<float> transposed(x.size());
  for (std::int64_t t = 0; t < tokens; ++t)
    for (std::int64_t c = 0; c < channels; ++c) transposed[at(c * tokens + t)] = x[at(t * channels + c)];
  const PerTokenFp8 k_major = to_k_major(per_channel_cast(x.data(), tokens, channels));
  const PerTokenFp8 expected = per_token_cast(transposed.data(), channels, tokens);
  EXPECT_EQ(k_major.rows, channels);
  EXPECT_EQ(k_major.cols, tokens);
  EXPECT_EQ(k_major.scale_col_stride, 8);
  EXPECT_EQ(k_major.values, expected.values);
  EXPECT_EQ(k_major.scales, expected.scales);
}

TEST(ReferencePerChannel, TokensNotAMultipleOf128AreRejected) {
  const std::vector<float> x = random_floats(100 * 4, 9);
  try {
    per_channel_cast(x.data(), 100, 4);
    ADD_FAILURE() << "expected moegemm::Error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("tokens: must be a multiple of 128, got 100"), std::string::npos) << e.what();
  }
}

TEST(ReferenceKGroupedCast, ExpertBlocksAreKMajorAndScalesMnMajor) {
  const std::vector<std::int64_t> ks = {128, 0, 256};
  const std::int64_t channels = 5, total_k = 384;
  const std::vector<float> x = random_floats(at(total_k * channels), 10);
  const KGroupedFp8 q = k_grouped_per_channel_cast(x.data(), ks, channels);
  ASSERT_EQ(q.scale_col_stride, 8);
  ASSERT_EQ(q.scales.size(), 8u * 3);
  ASSERT_EQ(q.values.size(), at(total_k * channels));
  std::int64_t k_offset = 0;
  for (const std::int64_t k : ks) {
    if (k == 0) continue;
    const PerTokenFp8 expert = to_k_major(per_channel_cast(x.data() + k_offset * channels, k, channels));
    EXPECT_TRUE(std::equal(expert.values.begin(), expert.values.end(), q.values.begin() + channels * k_offset));
    for (std::int64_t kb = 0; kb < k / 128; ++kb)
      for (std::int64_t c = 0; c < channels; ++c) EXPECT_EQ(q.scale(c, k_offset / 128 + kb), expert.scale(0, c, kb));
    k_offset += k;
  }
  for (std::int64_t kb = 0; kb < 3; ++kb)
    for (std::int64_t c = channels; c < 8; ++c) EXPECT_EQ(q.scales[at(kb * 8 + c)], 0.0f);
  // Dequantizing gives the concatenated K-major blocks of the original values.
  const std::vector<double> back = dequantize(q);
  k_offset = 0;
  for (const std::int64_t k : ks) {
    for (std::int64_t c = 0; c < channels; ++c)
      for (std::int64_t t = 0; t < k; ++t) {
        const float original = x[at((k_offset + t) * channels + c)];
        const double error = std::fabs(back[at(channels * k_offset + c * k + t)] - original);
        EXPECT_LE(error, std::ldexp(1.0, -4) * std::fabs(original) * (1 + 1e-6) +
                             std::ldexp(1.0, -10) * q.scale(c, (k_offset + t) / 128));
      }
    k_offset += k;
  }
  EXPECT_THROW(k_grouped_per_channel_cast(x.data(), {128, 64}, channels), Error);
}

TEST(ReferenceDequantize, InconsistentHandBuiltOperandsAreRejected) {
  // Users fill these structs from device buffers: sizes that do not match the shape must not be read past.
  const std::vector<float> x = random_floats(4 * 130, 11);
  PerTokenFp8 per_token = per_token_cast(x.data(), 4, 130);
  per_token.scales.pop_back();
  EXPECT_THROW(dequantize(per_token), Error);
  PerBlockFp8 per_block = per_block_cast(x.data(), 4, 130);
  per_block.values.pop_back();
  EXPECT_THROW(dequantize(per_block), Error);
  const std::vector<float> tokens_first = random_floats(128 * 3, 12);
  PerChannelFp8 per_channel = per_channel_cast(tokens_first.data(), 128, 3);
  per_channel.scales.pop_back();
  EXPECT_THROW(dequantize(per_channel), Error);
  KGroupedFp8 k_grouped = k_grouped_per_channel_cast(tokens_first.data(), {128}, 3);
  k_grouped.scale_col_stride = 2;
  EXPECT_THROW(dequantize(k_grouped), Error);
}
