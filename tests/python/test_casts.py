"""The e4m3 codec and the cast helpers of the drop-in, in their numpy form."""

import pytest

import moegemm.deep_gemm as deep_gemm

np = pytest.importorskip("numpy", reason="the numpy forms of the cast helpers need numpy")
from moegemm.fp8 import E4M3_MAX, e4m3_to_float, float_to_e4m3  # noqa: E402


def test_known_encodings():
    values = [0.0, 1.0, -2.0, 448.0, -448.0, 2.0**-6, 2.0**-9, 0.875 * 2.0**-6, 1.75]
    bits = [0x00, 0x38, 0xC0, 0x7E, 0xFE, 0x08, 0x01, 0x07, 0x3E]
    assert float_to_e4m3(values).tolist() == bits
    assert e4m3_to_float(bits).tolist() == values


def test_every_finite_code_round_trips():
    codes = np.array([c for c in range(256) if c & 0x7F != 0x7F], dtype=np.uint8)
    decoded = e4m3_to_float(codes)
    assert np.isfinite(decoded).all()
    again = float_to_e4m3(decoded)
    # 0x80 is -0.0, which encodes back to itself.
    assert again.tolist() == codes.tolist()


def test_rounding_is_to_nearest_even_and_saturating():
    # 1.0625 lies halfway between 1.0 (mantissa 0) and 1.125 (mantissa 1): even wins, and likewise below.
    assert float_to_e4m3([1.0625, 1.1875, 1.07, 3 * 2.0**-10, 2.0**-10]).tolist() == [0x38, 0x3A, 0x39, 0x02, 0x00]
    assert float_to_e4m3([1e6, -500.0]).tolist() == [0x7E, 0xFE]
    assert float_to_e4m3([np.nan]).tolist() == [0x7F]
    assert np.isnan(e4m3_to_float([0x7F, 0xFF])).all()


def test_rounding_never_leaves_half_a_step():
    x = np.random.default_rng(0).uniform(-E4M3_MAX, E4M3_MAX, 20000)
    q = e4m3_to_float(float_to_e4m3(x)).astype(np.float64)
    exponent = np.maximum(np.floor(np.log2(np.maximum(np.abs(x), 2.0**-6))), -6)
    assert (np.abs(q - x) <= np.exp2(exponent - 4) * (1 + 1e-12)).all()


def _dequantize(q, sf, rows_per_scale, cols_per_scale):
    scale = np.repeat(np.repeat(sf, rows_per_scale, axis=0), cols_per_scale, axis=1)[: q.shape[0], : q.shape[1]]
    return e4m3_to_float(q).astype(np.float64) * scale


def _assert_close_to(x, dq, sf_full):
    # Each value is within half an e4m3 step of its scaled self (2^-4 relative, 2^-10 of the scale near zero).
    assert (np.abs(dq - x) <= np.abs(x) * 2.0**-4 + sf_full * 2.0**-9).all()


def test_per_token_cast():
    x = np.random.default_rng(1).standard_normal((5, 300)).astype(np.float32) * 3
    x[2, :128] = 0  # an all-zero group takes the amax floor
    q, sf = deep_gemm.per_token_cast_to_fp8(x, use_ue8m0=False)
    assert q.dtype == np.uint8 and q.shape == (5, 300) and q.flags.c_contiguous
    assert sf.dtype == np.float32 and sf.shape == (5, 3)
    padded = np.zeros((5, 384), np.float32)
    padded[:, :300] = x
    amax = np.maximum(np.abs(padded.reshape(5, 3, 128)).max(axis=2), 1e-4)
    assert np.array_equal(sf, (amax / 448.0).astype(np.float32))
    dq = _dequantize(q, sf, 1, 128)
    _assert_close_to(x, dq, np.repeat(sf, 128, axis=1)[:, :300])
    assert np.abs(e4m3_to_float(q)).max() <= 448.0


def test_per_block_cast():
    x = np.random.default_rng(2).standard_normal((200, 130)).astype(np.float32)
    q, sf = deep_gemm.per_block_cast_to_fp8(x)
    assert q.shape == (200, 130) and sf.shape == (2, 2)
    assert sf[1, 0] == np.float32(np.abs(x[128:, :128]).max() / 448.0)
    _assert_close_to(x, _dequantize(q, sf, 128, 128), np.repeat(np.repeat(sf, 128, 0), 128, 1)[:200, :130])


def test_per_channel_cast():
    x = np.random.default_rng(3).standard_normal((256, 24)).astype(np.float32)
    q, sf = deep_gemm.per_channel_cast_to_fp8(x)
    assert q.shape == (256, 24) and sf.shape == (2, 24)
    assert sf[1, 5] == np.float32(np.abs(x[128:, 5]).max() / 448.0)
    _assert_close_to(x, _dequantize(q, sf, 128, 1), np.repeat(sf, 128, axis=0))
    with pytest.raises(ValueError, match="x: rows must be a multiple of 128, got 100"):
        deep_gemm.per_channel_cast_to_fp8(x[:100])


def test_ue8m0_scales_are_powers_of_two_at_least_amax_over_448():
    x = np.random.default_rng(4).standard_normal((3, 256)).astype(np.float32)
    q, sf = deep_gemm.per_token_cast_to_fp8(x, use_ue8m0=True)
    mantissa, _ = np.frexp(sf)
    assert (mantissa == 0.5).all()
    amax = np.abs(x.reshape(3, 2, 128)).max(axis=2)
    assert (sf >= amax / 448.0).all() and (sf < 2 * amax / 448.0).all()


def test_casts_reject_non_2d():
    with pytest.raises(ValueError, match="x: must be 2-D"):
        deep_gemm.per_token_cast_to_fp8(np.zeros(4, np.float32))


def test_calc_diff():
    x = np.random.default_rng(5).standard_normal(1000)
    assert deep_gemm.calc_diff(x, x) == pytest.approx(0.0, abs=1e-15)
    assert deep_gemm.calc_diff(x, -x) == pytest.approx(2.0)
    assert deep_gemm.calc_diff(np.zeros(4), np.zeros(4)) == 0.0
    assert deep_gemm.calc_diff([1.0, 0.0], [0.0, 1.0]) == pytest.approx(1.0)
    assert deep_gemm.testing.calc_diff is deep_gemm.calc_diff
