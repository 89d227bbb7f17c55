"""Real CUDA tensors through the binding: zero-copy conversion, device checks, and the drop-in's torch forms of
the helpers on the device. Needs torch with CUDA only (not moegemm's kernels)."""

import pytest

torch = pytest.importorskip("torch", reason="needs torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device: torch.cuda.is_available() is False", allow_module_level=True)

import moegemm.deep_gemm as deep_gemm  # noqa: E402
from moegemm import _moegemm  # noqa: E402


def test_cuda_tensors_cross_without_copies():
    t = torch.randn(256, 64, dtype=torch.bfloat16, device="cuda")[:, 8:40]
    view = _moegemm._tensor_view(t, "a")
    assert view["device"] == "cuda" and view["device_id"] == t.device.index
    assert view["data"] == t.data_ptr() and view["strides"] == (64, 1)
    fp8 = torch.zeros(128, 128, dtype=torch.float8_e4m3fn, device="cuda")
    assert _moegemm._tensor_view(fp8.view(torch.uint8))["data"] == fp8.data_ptr()
    cai = _moegemm._tensor_view(torch.zeros(4, 8, device="cuda").T)
    assert cai["strides"] == (1, 8)


def test_requires_grad_tensors_are_read_through_the_ops():
    a = torch.randn(128, 128, dtype=torch.bfloat16, device="cuda", requires_grad=True)
    d = torch.empty(128, 128, dtype=torch.bfloat16, device="cuda")
    try:
        deep_gemm.bf16_gemm_nt(a, a.detach(), d)
    except NotImplementedError as error:
        assert "bf16_gemm" in str(error) and "not built yet" in str(error)
        return
    torch.cuda.synchronize()
    assert deep_gemm.calc_diff(d, a.detach().double() @ a.detach().double().T) < 1e-5


def test_device_casts_match_host_casts():
    x = torch.randn(256, 384, dtype=torch.bfloat16, device="cuda")
    for cast in (deep_gemm.per_token_cast_to_fp8, deep_gemm.per_block_cast_to_fp8, deep_gemm.per_channel_cast_to_fp8):
        q_dev, sf_dev = cast(x)
        q_host, sf_host = cast(x.cpu())
        # Device and host arithmetic may differ in the last bit, which can move a value across an e4m3 rounding
        # boundary: scales must agree to FP32 precision, and codes may differ only to the neighbouring code.
        torch.testing.assert_close(sf_dev.cpu(), sf_host, rtol=1e-6, atol=0)
        codes_dev = q_dev.cpu().view(torch.uint8).int()
        codes_host = q_host.view(torch.uint8).int()
        assert (codes_dev - codes_host).abs().max().item() <= 1, cast.__name__
        assert (codes_dev != codes_host).float().mean().item() < 0.01, cast.__name__
    sf = torch.randn(2, 4097, 57, device="cuda")
    out = deep_gemm.get_mn_major_tma_aligned_tensor(sf)
    assert out.stride() == (4100 * 57, 1, 4100) and torch.equal(out, sf)
