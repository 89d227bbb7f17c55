"""Inputs and float64 references for the GPU tests."""

import pytest

import moegemm.deep_gemm as deep_gemm


def call(fn, *args, **kwargs):
    """Run a GEMM; skip (visibly) while its C++ kernel is not built, and check the drop-in's return contract."""
    try:
        result = fn(*args, **kwargs)
    except NotImplementedError as error:
        if "not built yet" in str(error):
            pytest.skip(f"C++ kernel not built yet: {error}")
        raise
    assert result is None
    return result


def call_built(fn, *args, **kwargs):
    """Run a GEMM whose C++ kernel must exist: no skip when it is missing (NotImplementedError fails the test);
    check the drop-in's return contract."""
    result = fn(*args, **kwargs)
    assert result is None
    return result


def dequantize_per_token(q, sf):
    """e4m3 [..., k] with FP32 scales [..., ceil(k/128)] -> float64."""
    k = q.shape[-1]
    return q.double() * sf.double().repeat_interleave(128, dim=-1)[..., :k]


def dequantize_per_block(q, sf):
    """e4m3 [..., n, k] with FP32 scales [..., ceil(n/128), ceil(k/128)] -> float64."""
    n, k = q.shape[-2:]
    scale = sf.double().repeat_interleave(128, dim=-2).repeat_interleave(128, dim=-1)[..., :n, :k]
    return q.double() * scale


def poisoned(torch, shape, dtype):
    return torch.full(shape, float("nan"), dtype=dtype, device="cuda")


def assert_close(actual, reference, threshold):
    assert not actual.isnan().any(), "NaN in the output: some element was not written"
    diff = deep_gemm.calc_diff(actual, reference)
    assert diff < threshold, f"calc_diff {diff} >= {threshold}"
