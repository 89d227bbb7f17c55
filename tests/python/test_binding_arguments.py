"""Tensor arguments cross into C++ without copies, and bad ones come back as ValueError naming the argument.

Runs without numpy or torch: buffers come from memoryview, device tensors from small __cuda_array_interface__
objects (fake pointers, so those tests skip where a real device could be reached)."""

import re

import pytest

import moegemm
from moegemm import _moegemm


def buffer(fmt, shape):
    itemsize = {"f": 4, "i": 4, "B": 1, "h": 2, "d": 8}[fmt]
    count = 1
    for extent in shape:
        count *= extent
    return memoryview(bytearray(count * itemsize)).cast(fmt, shape=list(shape))


class CudaArray:
    """Just enough of __cuda_array_interface__ (version 3) to describe device memory."""

    def __init__(self, shape, typestr="<f4", strides=None, pointer=0x7F0000000000):
        self.__cuda_array_interface__ = {
            "shape": tuple(shape), "typestr": typestr, "strides": strides, "data": (pointer, False), "version": 3,
        }


def test_buffer_protocol_view_keeps_shape_strides_and_dtype():
    view = _moegemm._tensor_view(buffer("f", (3, 5)), "a")
    assert view["dtype"] == "float32"
    assert view["shape"] == (3, 5) and view["strides"] == (5, 1)
    assert view["device"] == "cpu"
    assert view["describe"] == "float32[3, 5] strides (5, 1)"


@pytest.mark.parametrize("fmt, dtype", [("i", "int32"), ("B", "float8_e4m3")])
def test_int32_and_uint8_bits_are_accepted(fmt, dtype):
    assert _moegemm._tensor_view(buffer(fmt, (4,)))["dtype"] == dtype


@pytest.mark.parametrize("fmt, got", [("h", "int16"), ("d", "float64")])
def test_other_dtypes_are_rejected_naming_the_argument(fmt, got):
    with pytest.raises(ValueError, match=rf"^moegemm: invalid argument: sfa: dtype must be .*, got {got}$"):
        _moegemm._tensor_view(buffer(fmt, (4,)), "sfa")


def test_rank_above_four_is_rejected():
    with pytest.raises(ValueError, match=r"a: rank must be 1 to 4, got 5"):
        _moegemm._tensor_view(buffer("f", (1, 1, 1, 1, 2)), "a")


def test_non_tensors_are_rejected():
    with pytest.raises(ValueError, match=r"d: expected a tensor .*, got str"):
        _moegemm._tensor_view("not a tensor", "d")
    with pytest.raises(ValueError, match=r"d: a tensor is required, got None"):
        _moegemm._tensor_view(None, "d")


def test_cuda_array_interface_strides_are_converted_from_bytes():
    view = _moegemm._tensor_view(CudaArray((8, 3), strides=(4, 32), pointer=0x1000), "sfa")
    assert view["device"] == "cuda" and view["data"] == 0x1000
    assert view["shape"] == (8, 3) and view["strides"] == (1, 8)
    assert _moegemm._tensor_view(CudaArray((2, 3, 4), typestr="|u1"))["strides"] == (12, 4, 1)


def test_cuda_array_interface_rejects_unknown_typestr_and_partial_elements():
    with pytest.raises(ValueError, match=r"a: dtype must be .*typestr '<f2'"):
        _moegemm._tensor_view(CudaArray((4,), typestr="<f2"), "a")
    with pytest.raises(ValueError, match=r"a: strides must be whole elements, got a stride of 6 bytes"):
        _moegemm._tensor_view(CudaArray((4,), strides=(6,)), "a")


def test_gemms_refuse_host_memory():
    a, sfa, b, sfb, d = buffer("B", (4, 128)), buffer("f", (4, 1)), buffer("B", (8, 128)), buffer("f", (1, 1)), \
        buffer("f", (4, 8))
    with pytest.raises(ValueError, match=r"^moegemm: invalid argument: a.data: must be in CUDA device memory, got cpu"):
        moegemm.fp8_gemm_nt(a, sfa, b, sfb, d)
    with pytest.raises(ValueError, match=r"b: must be in CUDA device memory"):
        moegemm.bf16_gemm(CudaArray((4, 64)), buffer("f", (8, 64)), CudaArray((4, 8)))


def _fp8_operands(m=256, n=256, k=256, groups=None):
    lead = () if groups is None else (groups,)
    return dict(
        a=CudaArray(lead + (m, k), "|u1"), sfa=CudaArray(lead + (m, k // 128), strides=None),
        b=CudaArray((groups or 1, n, k) if groups else (n, k), "|u1"),
        sfb=CudaArray(((groups,) if groups else ()) + (n // 128, k // 128)), d=CudaArray(lead + (m, n), "<f4"),
    )


def _calls():
    """One call per binding, each with device-looking arguments; the C++ function decides what happens."""
    o = _fp8_operands()
    g = _fp8_operands(groups=2)
    index = CudaArray((256,), "<i4")
    rows = CudaArray((2,), "<i4")
    return {
        "fp8_gemm_nt": lambda: moegemm.fp8_gemm_nt(o["a"], o["sfa"], o["b"], o["sfb"], o["d"]),
        "m_grouped_fp8_gemm_nt_contiguous": lambda: moegemm.m_grouped_fp8_gemm_nt_contiguous(
            o["a"], o["sfa"], g["b"], g["sfb"], o["d"], index),
        "m_grouped_fp8_gemm_nt_masked": lambda: moegemm.m_grouped_fp8_gemm_nt_masked(
            g["a"], g["sfa"], g["b"], g["sfb"], g["d"], rows, 128),
        "fp8_gemm_nt_1d1d": lambda: moegemm.fp8_gemm_nt_1d1d(o["a"], o["sfa"], o["b"], o["sfa"], o["d"], o["d"]),
        "k_grouped_fp8_gemm_nt": lambda: moegemm.k_grouped_fp8_gemm_nt(
            CudaArray((256 * 256,), "|u1"), o["sfa"], CudaArray((256 * 256,), "|u1"), o["sfa"],
            CudaArray((2, 256, 256)), [128, 128], ks_device=rows),
        "bf16_gemm": lambda: moegemm.bf16_gemm(CudaArray((256, 256)), CudaArray((256, 256)), o["d"]),
        "m_grouped_bf16_gemm_contiguous": lambda: moegemm.m_grouped_bf16_gemm_contiguous(
            CudaArray((256, 256)), CudaArray((2, 256, 256)), o["d"], index, group_ends=False),
        "m_grouped_bf16_gemm_masked": lambda: moegemm.m_grouped_bf16_gemm_masked(
            CudaArray((2, 256, 256)), CudaArray((2, 256, 256)), g["d"], rows, 128),
        "k_grouped_bf16_gemm_tn": lambda: moegemm.k_grouped_bf16_gemm_tn(
            CudaArray((256, 256)), CudaArray((256, 256)), CudaArray((2, 256, 256)), [128, 128]),
    }


@pytest.mark.parametrize("name", sorted(_calls()))
def test_each_binding_reaches_its_cpp_entry_point(name, no_device):
    # The bindings accept the arguments and the C++ function of the same name answers: "not built yet" today,
    # a validation error or "no CUDA device" once the kernels land. Never a silent success without a device.
    with pytest.raises(RuntimeError) as info:
        _calls()[name]()
    message = str(info.value)
    assert message.startswith("moegemm: ")
    if isinstance(info.value, NotImplementedError):
        assert re.search(rf"\b{name}\b", message), message


def test_arguments_on_two_devices_are_rejected():
    torch = pytest.importorskip("torch", reason="needs torch tensors on two devices")
    if not torch.cuda.is_available() or torch.cuda.device_count() < 2:
        pytest.skip("needs two CUDA devices")
    a = torch.zeros(128, 128, dtype=torch.bfloat16, device="cuda:0")
    b = torch.zeros(128, 128, dtype=torch.bfloat16, device="cuda:1")
    with pytest.raises(ValueError, match=r"b: must be on the same device as a \(cuda:0\), got cuda:1"):
        moegemm.bf16_gemm(a, b, a)
