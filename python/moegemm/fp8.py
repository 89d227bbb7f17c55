"""OCP FP8 e4m3 ("fn": no infinities, NaN = 0x7f/0xff, max 448) encoding and decoding with numpy.

numpy has no FP8 dtype, so FP8 tensors are uint8 arrays of e4m3 bit patterns: the GEMM bindings read a uint8
tensor as e4m3. Encoding rounds to nearest, ties to even, and saturates at +-448 (what a scaled cast needs).
"""

import numpy as np

E4M3_MAX = 448.0
_MIN_NORMAL_EXPONENT = -6
_MANTISSA_BITS = 3


def float_to_e4m3(x) -> np.ndarray:
    """Encode a float array as e4m3 bit patterns (uint8, same shape)."""
    x = np.asarray(x, dtype=np.float64)
    magnitude = np.minimum(np.abs(np.where(np.isnan(x), 0.0, x)), E4M3_MAX)  # NaN is patched in at the end
    with np.errstate(divide="ignore"):
        exponent = np.floor(np.log2(np.where(magnitude > 0, magnitude, 1.0)))
    exponent = np.maximum(exponent, _MIN_NORMAL_EXPONENT)
    step = np.exp2(exponent - _MANTISSA_BITS)
    rounded = np.minimum(np.rint(magnitude / step) * step, E4M3_MAX)  # np.rint rounds half to even
    # Rounding can carry into the next binade (1.9375 -> 2.0): take the exponent again from the rounded value.
    with np.errstate(divide="ignore"):
        exponent = np.floor(np.log2(np.where(rounded > 0, rounded, 1.0)))
    subnormal = (rounded < 2.0**_MIN_NORMAL_EXPONENT) | (rounded == 0)
    exponent_field = np.where(subnormal, 0, exponent + 7)
    mantissa = np.where(subnormal, rounded / 2.0 ** (_MIN_NORMAL_EXPONENT - _MANTISSA_BITS),
                        (rounded / np.exp2(exponent) - 1.0) * 8)
    bits = (exponent_field.astype(np.int64) << 3) | np.rint(mantissa).astype(np.int64)
    bits = np.where(np.signbit(x), bits | 0x80, bits)
    bits = np.where(np.isnan(x), 0x7F, bits)
    return bits.astype(np.uint8)


def e4m3_to_float(bits) -> np.ndarray:
    """Decode e4m3 bit patterns (uint8) to float32."""
    bits = np.asarray(bits, dtype=np.uint8).astype(np.int64)
    sign = np.where(bits & 0x80, -1.0, 1.0)
    exponent_field = (bits >> 3) & 0xF
    mantissa = (bits & 0x7).astype(np.float64)
    normal = np.exp2(exponent_field - 7.0) * (1.0 + mantissa / 8)
    subnormal = mantissa * 2.0 ** (_MIN_NORMAL_EXPONENT - _MANTISSA_BITS)
    value = sign * np.where(exponent_field == 0, subnormal, normal)
    value = np.where((bits & 0x7F) == 0x7F, np.nan, value)
    return value.astype(np.float32)
