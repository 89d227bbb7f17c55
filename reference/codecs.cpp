// Exact FP8 e4m3fn and BF16 conversions, written from the format definitions (not from a vendor header), so that
// the oracle does not depend on how a compiler or a GPU happens to round.
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include "moegemm/reference.hpp"

namespace moegemm::reference {
namespace {

constexpr int kE4m3MantissaBits = 3;
constexpr int kE4m3Bias = 7;
constexpr int kE4m3MinNormalExponent = 1 - kE4m3Bias;                     // 2^-6
constexpr int kE4m3SubnormalQuantumExponent = kE4m3MinNormalExponent - 3;  // 2^-9
constexpr std::uint8_t kE4m3NaN = 0x7f;
constexpr std::uint8_t kE4m3MaxFinite = 0x7e;

// Rounds a non-negative float below 2^23 to the nearest integer, ties to even, without reading the FP environment.
int round_half_even(float q) {
  const float floor_q = std::floor(q);
  const float fraction = q - floor_q;  // exact: q and floor_q share the exponent range
  int r = static_cast<int>(floor_q);
  if (fraction > 0.5f || (fraction == 0.5f && (r & 1) != 0)) ++r;
  return r;
}

}  // namespace

std::uint8_t float_to_e4m3(float x, Fp8Saturation saturation) noexcept {
  const std::uint8_t sign = static_cast<std::uint8_t>((std::bit_cast<std::uint32_t>(x) >> 24) & 0x80u);
  if (std::isnan(x)) return sign | kE4m3NaN;
  const std::uint8_t overflow = saturation == Fp8Saturation::kFinite ? kE4m3MaxFinite : kE4m3NaN;
  const float a = std::fabs(x);
  if (std::isinf(a)) return sign | overflow;

  int magnitude = 0;  // the code without its sign; may run past 0x7e before the overflow rule applies
  if (a < std::ldexp(1.0f, kE4m3MinNormalExponent)) {
    // Subnormal range: a multiple of 2^-9. Rounding up to 8 quanta lands exactly on the smallest normal (0x08).
    magnitude = round_half_even(std::ldexp(a, -kE4m3SubnormalQuantumExponent));
  } else {
    int frexp_exponent = 0;
    std::frexp(a, &frexp_exponent);
    const int exponent = frexp_exponent - 1;  // a in [2^exponent, 2^(exponent+1))
    if (exponent > 8) {
      magnitude = kE4m3NaN;  // at least 512: past every finite code
    } else {
      // a / 2^(exponent-3) lies in [8, 16); rounding to 16 carries into the next exponent by itself.
      const int significand = round_half_even(std::ldexp(a, kE4m3MantissaBits - exponent));
      magnitude = ((exponent + kE4m3Bias) << kE4m3MantissaBits) + (significand - 8);
    }
  }
  if (magnitude > kE4m3MaxFinite) return sign | overflow;
  return sign | static_cast<std::uint8_t>(magnitude);
}

float e4m3_to_float(std::uint8_t code) noexcept {
  const int exponent_field = (code >> kE4m3MantissaBits) & 0xf;
  const int mantissa = code & 0x7;
  const bool negative = (code & 0x80) != 0;
  if ((code & 0x7f) == kE4m3NaN) {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    return negative ? -nan : nan;
  }
  const float magnitude = exponent_field == 0
                              ? std::ldexp(static_cast<float>(mantissa), kE4m3SubnormalQuantumExponent)
                              : std::ldexp(static_cast<float>(8 + mantissa),
                                           exponent_field - kE4m3Bias - kE4m3MantissaBits);
  return negative ? -magnitude : magnitude;
}

std::uint16_t float_to_bf16(float x) noexcept {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(x);
  // Truncating a NaN could clear every mantissa bit that is kept and turn it into an infinity: force the quiet bit.
  if (std::isnan(x)) return static_cast<std::uint16_t>((bits >> 16) | 0x0040u);
  // Adding just under half a bf16 ulp, plus the kept lowest bit, rounds to nearest with ties to even; a carry out
  // of the mantissa moves to the next exponent, and from the largest finite value to infinity, as it should.
  const std::uint32_t lowest_kept_bit = (bits >> 16) & 1u;
  return static_cast<std::uint16_t>((bits + 0x7fffu + lowest_kept_bit) >> 16);
}

float bf16_to_float(std::uint16_t bits) noexcept {
  return std::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16);
}

}  // namespace moegemm::reference
