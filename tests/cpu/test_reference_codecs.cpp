// The oracle's FP8 e4m3fn and BF16 codecs, checked against the format definitions, by hand and exhaustively.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <set>

#include "moegemm/reference.hpp"

using namespace moegemm::reference;

namespace {

// The value of an e4m3fn code from the textbook formula, in double, independent of the library's arithmetic.
double e4m3_textbook_value(int code) {
  const int sign = code >> 7;
  const int exponent = (code >> 3) & 0xf;
  const int mantissa = code & 7;
  const double magnitude = exponent == 0 ? (mantissa / 8.0) * std::pow(2.0, -6)
                                         : (1.0 + mantissa / 8.0) * std::pow(2.0, exponent - 7);
  return sign ? -magnitude : magnitude;
}

bool is_e4m3_nan_code(int code) { return (code & 0x7f) == 0x7f; }

// Nearest finite e4m3 code to x (|x| <= 448) by exhaustive search, ties to the even code.
std::uint8_t e4m3_nearest_by_search(float x) {
  int best = 0;
  double best_distance = std::numeric_limits<double>::infinity();
  for (int code = 0; code <= 0x7e; ++code) {
    const double distance = std::fabs(std::fabs(static_cast<double>(x)) - e4m3_textbook_value(code));
    if (distance < best_distance || (distance == best_distance && code % 2 == 0)) {
      best = code;
      best_distance = distance;
    }
  }
  return static_cast<std::uint8_t>(best | (std::signbit(x) ? 0x80 : 0));
}

}  // namespace

TEST(ReferenceE4m3, HandCheckedCodes) {
  EXPECT_EQ(e4m3_to_float(0x7e), 448.0f);
  EXPECT_EQ(e4m3_to_float(0xfe), -448.0f);
  EXPECT_EQ(e4m3_to_float(0x08), std::ldexp(1.0f, -6));
  EXPECT_EQ(e4m3_to_float(0x01), std::ldexp(1.0f, -9));
  EXPECT_EQ(e4m3_to_float(0x07), 7.0f * std::ldexp(1.0f, -9));
  EXPECT_EQ(e4m3_to_float(0x38), 1.0f);
  EXPECT_EQ(e4m3_to_float(0xb8), -1.0f);
  EXPECT_EQ(e4m3_to_float(0x40), 2.0f);
  EXPECT_EQ(e4m3_to_float(0x3c), 1.5f);
  EXPECT_EQ(e4m3_to_float(0x77), 240.0f);
  EXPECT_EQ(e4m3_to_float(0x00), 0.0f);
  EXPECT_FALSE(std::signbit(e4m3_to_float(0x00)));
  EXPECT_TRUE(std::signbit(e4m3_to_float(0x80)));
  EXPECT_TRUE(std::isnan(e4m3_to_float(0x7f)));
  EXPECT_TRUE(std::isnan(e4m3_to_float(0xff)));
}

TEST(ReferenceE4m3, All256CodesDecodeToTheFormula) {
  int nan_codes = 0;
  for (int code = 0; code < 256; ++code) {
    const float value = e4m3_to_float(static_cast<std::uint8_t>(code));
    if (is_e4m3_nan_code(code)) {
      EXPECT_TRUE(std::isnan(value)) << "code " << code;
      ++nan_codes;
      continue;
    }
    EXPECT_EQ(static_cast<double>(value), e4m3_textbook_value(code)) << "code " << code;
    EXPECT_EQ(std::signbit(value), code >= 0x80) << "code " << code;
  }
  EXPECT_EQ(nan_codes, 2);
  // The positive codes are strictly increasing: code order is value order.
  for (int code = 1; code <= 0x7e; ++code)
    EXPECT_LT(e4m3_to_float(static_cast<std::uint8_t>(code - 1)), e4m3_to_float(static_cast<std::uint8_t>(code)));
}

TEST(ReferenceE4m3, EveryFiniteCodeRoundTrips) {
  for (int code = 0; code < 256; ++code) {
    if (is_e4m3_nan_code(code)) continue;
    const float value = e4m3_to_float(static_cast<std::uint8_t>(code));
    EXPECT_EQ(float_to_e4m3(value), code) << "code " << code;
    EXPECT_EQ(float_to_e4m3(value, Fp8Saturation::kTorch), code) << "code " << code;
  }
}

TEST(ReferenceE4m3, TiesRoundToEvenAndNeighboursRoundToNearest) {
  // Every pair of neighbouring finite codes, normal and subnormal, both signs: the exact midpoint goes to the
  // even code, and the floats just either side of it go to the nearer code.
  int ties_checked = 0;
  for (int low = 0; low < 0x7e; ++low) {
    const float a = e4m3_to_float(static_cast<std::uint8_t>(low));
    const float b = e4m3_to_float(static_cast<std::uint8_t>(low + 1));
    const float midpoint = (a + b) / 2;  // exact: e4m3 values have few significant bits
    ASSERT_EQ(static_cast<double>(midpoint), (static_cast<double>(a) + b) / 2);
    const int even = low % 2 == 0 ? low : low + 1;
    for (const float sign : {1.0f, -1.0f}) {
      const int sign_bit = sign < 0 ? 0x80 : 0;
      EXPECT_EQ(float_to_e4m3(sign * midpoint), even | sign_bit) << "between codes " << low << " and " << low + 1;
      EXPECT_EQ(float_to_e4m3(sign * std::nextafter(midpoint, 0.0f)), low | sign_bit) << "below tie " << low;
      EXPECT_EQ(float_to_e4m3(sign * std::nextafter(midpoint, 1e9f)), (low + 1) | sign_bit) << "above tie " << low;
    }
    ++ties_checked;
  }
  EXPECT_EQ(ties_checked, 126);
  // Spot checks by hand: halfway between 0 and 2^-9 goes to 0; between 7*2^-9 (odd) and 2^-6 goes to 2^-6;
  // 1 + 1/16 lies between 1.0 (0x38) and 1.125 (0x39) and goes to 1.0; 1.1875 goes up to 1.25 (0x3a).
  EXPECT_EQ(float_to_e4m3(std::ldexp(1.0f, -10)), 0x00);
  EXPECT_EQ(float_to_e4m3(7.5f * std::ldexp(1.0f, -9)), 0x08);
  EXPECT_EQ(float_to_e4m3(1.0625f), 0x38);
  EXPECT_EQ(float_to_e4m3(1.1875f), 0x3a);
}

TEST(ReferenceE4m3, RandomValuesMatchExhaustiveNearestSearch) {
  std::mt19937 rng(1234);
  std::uniform_real_distribution<float> log2_magnitude(-12.0f, std::log2(448.0f));
  for (int i = 0; i < 20000; ++i) {
    float x = std::exp2(log2_magnitude(rng));
    if (i % 2) x = -x;
    ASSERT_EQ(float_to_e4m3(x), e4m3_nearest_by_search(x)) << "x = " << x;
  }
}

TEST(ReferenceE4m3, TinyValuesUnderflowToSignedZero) {
  EXPECT_EQ(float_to_e4m3(std::ldexp(1.0f, -11)), 0x00);
  EXPECT_EQ(float_to_e4m3(-std::ldexp(1.0f, -11)), 0x80);
  EXPECT_EQ(float_to_e4m3(std::numeric_limits<float>::denorm_min()), 0x00);
  EXPECT_EQ(float_to_e4m3(-0.0f), 0x80);
  EXPECT_EQ(float_to_e4m3(std::nextafter(std::ldexp(1.0f, -10), 1.0f)), 0x01);
}

TEST(ReferenceE4m3, FiniteSaturationClampsToMax) {
  for (const float x : {448.0f, 449.0f, 464.0f, 465.0f, 479.9f, 480.0f, 512.0f, 1e6f,
                        std::numeric_limits<float>::max(), std::numeric_limits<float>::infinity()}) {
    EXPECT_EQ(float_to_e4m3(x), 0x7e) << x;
    EXPECT_EQ(float_to_e4m3(-x), 0xfe) << x;
  }
}

TEST(ReferenceE4m3, TorchSaturationTurnsOverflowIntoNaN) {
  // Rounding first: up to the 448/480 tie (464, which goes to the even 448) the result is 448; above it NaN.
  EXPECT_EQ(float_to_e4m3(449.0f, Fp8Saturation::kTorch), 0x7e);
  EXPECT_EQ(float_to_e4m3(464.0f, Fp8Saturation::kTorch), 0x7e);
  EXPECT_EQ(float_to_e4m3(-464.0f, Fp8Saturation::kTorch), 0xfe);
  EXPECT_EQ(float_to_e4m3(std::nextafter(464.0f, 1e9f), Fp8Saturation::kTorch), 0x7f);
  for (const float x : {470.0f, 480.0f, 1e6f, std::numeric_limits<float>::infinity()}) {
    EXPECT_EQ(float_to_e4m3(x, Fp8Saturation::kTorch), 0x7f) << x;
    EXPECT_EQ(float_to_e4m3(-x, Fp8Saturation::kTorch), 0xff) << x;
  }
}

TEST(ReferenceE4m3, NaNStaysNaNInBothModes) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (const auto mode : {Fp8Saturation::kFinite, Fp8Saturation::kTorch}) {
    EXPECT_EQ(float_to_e4m3(nan, mode), 0x7f);
    EXPECT_EQ(float_to_e4m3(-nan, mode), 0xff);
    EXPECT_EQ(float_to_e4m3(std::numeric_limits<float>::signaling_NaN(), mode) & 0x7f, 0x7f);
  }
}

TEST(ReferenceBf16, HandCheckedValues) {
  EXPECT_EQ(bf16_to_float(0x3f80), 1.0f);
  EXPECT_EQ(bf16_to_float(0xc000), -2.0f);
  EXPECT_EQ(bf16_to_float(0x4049), 3.140625f);
  EXPECT_EQ(bf16_to_float(0x0001), std::ldexp(1.0f, -133));
  EXPECT_EQ(bf16_to_float(0x7f80), std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(bf16_to_float(0x7fc0)));
  EXPECT_EQ(float_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(float_to_bf16(-2.0f), 0xc000);
  EXPECT_EQ(float_to_bf16(-0.0f), 0x8000);
}

TEST(ReferenceBf16, TiesRoundToEven) {
  // 1 + 2^-8 is halfway between 0x3f80 (even) and 0x3f81; 1 + 3*2^-8 halfway between 0x3f81 and 0x3f82 (even).
  EXPECT_EQ(float_to_bf16(std::bit_cast<float>(0x3f808000u)), 0x3f80);
  EXPECT_EQ(float_to_bf16(std::bit_cast<float>(0x3f818000u)), 0x3f82);
  EXPECT_EQ(float_to_bf16(std::bit_cast<float>(0x3f808001u)), 0x3f81);
  EXPECT_EQ(float_to_bf16(std::bit_cast<float>(0x3f807fffu)), 0x3f80);
  EXPECT_EQ(float_to_bf16(std::bit_cast<float>(0x00008000u)), 0x0000);  // subnormal tie, down to even 0
  EXPECT_EQ(float_to_bf16(std::bit_cast<float>(0x00018000u)), 0x0002);  // subnormal tie, up to even 2
}

TEST(ReferenceBf16, OverflowGoesToInfinityAndNaNIsPreserved) {
  EXPECT_EQ(float_to_bf16(std::numeric_limits<float>::max()), 0x7f80);
  EXPECT_EQ(float_to_bf16(-std::numeric_limits<float>::max()), 0xff80);
  EXPECT_EQ(float_to_bf16(std::bit_cast<float>(0x7f7f7fffu)), 0x7f7f);  // largest value that stays finite
  // A NaN whose payload sits only in the discarded bits must not become infinity.
  EXPECT_TRUE(std::isnan(bf16_to_float(float_to_bf16(std::bit_cast<float>(0x7f800001u)))));
  const std::uint16_t negative_nan = float_to_bf16(std::bit_cast<float>(0xff800001u));
  EXPECT_TRUE(std::isnan(bf16_to_float(negative_nan)));
  EXPECT_EQ(negative_nan & 0x8000, 0x8000);
}

TEST(ReferenceBf16, EveryCodeRoundTrips) {
  for (std::uint32_t code = 0; code < 0x10000; ++code) {
    const float value = bf16_to_float(static_cast<std::uint16_t>(code));
    if (std::isnan(value)) {
      EXPECT_TRUE(std::isnan(bf16_to_float(float_to_bf16(value)))) << code;
    } else {
      ASSERT_EQ(float_to_bf16(value), code);
    }
  }
}

TEST(ReferenceBf16, RandomFloatsRoundToTheNearerNeighbour) {
  std::mt19937 rng(99);
  std::uniform_int_distribution<std::uint32_t> any_finite_bits(0, 0x7f7fffffu);
  for (int i = 0; i < 100000; ++i) {
    const std::uint32_t bits = any_finite_bits(rng);
    const float x = std::bit_cast<float>(bits);
    const std::uint32_t below = bits >> 16;
    const double low = bf16_to_float(static_cast<std::uint16_t>(below));
    // Above the largest finite bf16 the next step is 2^128 (IEEE rounding with an unbounded exponent; it then
    // overflows to infinity), so the code past it, 0x7f80, is the right answer beyond the tie.
    const double high =
        below + 1 == 0x7f80 ? std::ldexp(1.0, 128) : bf16_to_float(static_cast<std::uint16_t>(below + 1));
    const double d_low = static_cast<double>(x) - low;
    const double d_high = high - static_cast<double>(x);
    const std::uint32_t even_neighbour = below % 2 ? below + 1 : below;
    const std::uint32_t expected = d_low < d_high ? below : d_high < d_low ? below + 1 : even_neighbour;
    ASSERT_EQ(float_to_bf16(x), expected) << "bits " << bits;
  }
}
