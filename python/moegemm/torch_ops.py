"""The moegemm GEMMs as torch custom ops (namespace ``moegemm``), so torch.compile(fullgraph=True) traces them.

Each op mutates ``d`` in place and returns nothing; its fake implementation does nothing, which is exactly the
op's effect on metadata. The real implementation launches on torch's current stream of ``d``'s device, so the ops
compose with torch.cuda.graph capture. Accumulation is a flag rather than a ``c`` tensor: callers copy C into D
first (moegemm.deep_gemm does), which keeps the schema free of aliasing between inputs.
"""

import contextlib
from typing import List

import torch

from . import _moegemm

_FP8_TYPES = tuple(getattr(torch, name) for name in ("float8_e4m3fn",) if hasattr(torch, name))


def _dl(t: torch.Tensor):
    """A DLPack capsule of `t`, made without any stream synchronisation.

    stream=-1 asks torch not to order the export against another stream: some torch versions otherwise make the
    legacy default stream wait on the current one, an extra dependency that also breaks CUDA graph capture. The
    GEMM itself runs on the current stream, after everything queued there. DLPack refuses tensors that require
    grad, so they are detached; FP8 travels as its bits (uint8), which every torch exports.
    """
    t = t.detach()
    if t.dtype in _FP8_TYPES:
        t = t.view(torch.uint8)
    return t.__dlpack__(stream=-1)


def _stream(d: torch.Tensor) -> int:
    return torch.cuda.current_stream(d.device).cuda_stream if d.is_cuda else 0


def _on_device_of(d: torch.Tensor):
    # moegemm launches on the calling thread's current device, and torch exports CUDA tensors only from it.
    if d.is_cuda and d.device.index != torch.cuda.current_device():
        return torch.cuda.device(d.device)
    return contextlib.nullcontext()


@torch.library.custom_op("moegemm::fp8_gemm_nt", mutates_args=("d",))
def fp8_gemm_nt(a: torch.Tensor, sfa: torch.Tensor, b: torch.Tensor, sfb: torch.Tensor, d: torch.Tensor) -> None:
    """BF16 D = A @ B^T, FP8 recipe (1,128,128)."""
    with _on_device_of(d):
        _moegemm.fp8_gemm_nt(_dl(a), _dl(sfa), _dl(b), _dl(sfb), _dl(d), stream=_stream(d))


@torch.library.custom_op("moegemm::m_grouped_fp8_gemm_nt_contiguous", mutates_args=("d",))
def m_grouped_fp8_gemm_nt_contiguous(a: torch.Tensor, sfa: torch.Tensor, b: torch.Tensor, sfb: torch.Tensor,
                                     d: torch.Tensor, index: torch.Tensor, group_ends: bool,
                                     expected_m_per_group: int, segment_alignment: int = 128) -> None:
    with _on_device_of(d):
        _moegemm.m_grouped_fp8_gemm_nt_contiguous(_dl(a), _dl(sfa), _dl(b), _dl(sfb), _dl(d), _dl(index),
                                                  group_ends=group_ends, expected_m_per_group=expected_m_per_group,
                                                  segment_alignment=segment_alignment, stream=_stream(d))


@torch.library.custom_op("moegemm::m_grouped_fp8_gemm_nt_masked", mutates_args=("d",))
def m_grouped_fp8_gemm_nt_masked(a: torch.Tensor, sfa: torch.Tensor, b: torch.Tensor, sfb: torch.Tensor,
                                 d: torch.Tensor, valid_rows: torch.Tensor, expected_m: int) -> None:
    with _on_device_of(d):
        _moegemm.m_grouped_fp8_gemm_nt_masked(_dl(a), _dl(sfa), _dl(b), _dl(sfb), _dl(d), _dl(valid_rows),
                                              expected_m, stream=_stream(d))


# The accumulating ops pass D twice, as D and as C: two exports of one tensor, which C++ sees as C aliasing D.

@torch.library.custom_op("moegemm::fp8_gemm_nt_1d1d_accumulate", mutates_args=("d",))
def fp8_gemm_nt_1d1d_accumulate(a: torch.Tensor, sfa: torch.Tensor, b: torch.Tensor, sfb: torch.Tensor,
                                d: torch.Tensor) -> None:
    """FP32 D += A @ B^T, recipe (1,1,128)."""
    with _on_device_of(d):
        _moegemm.fp8_gemm_nt_1d1d(_dl(a), _dl(sfa), _dl(b), _dl(sfb), _dl(d), _dl(d), stream=_stream(d))


@torch.library.custom_op("moegemm::k_grouped_fp8_gemm_nt_accumulate", mutates_args=("d",))
def k_grouped_fp8_gemm_nt_accumulate(a: torch.Tensor, sfa: torch.Tensor, b: torch.Tensor, sfb: torch.Tensor,
                                     d: torch.Tensor, ks: List[int], ks_device: torch.Tensor) -> None:
    """FP32 D[g] += A_g @ B_g^T over per-expert K."""
    with _on_device_of(d):
        _moegemm.k_grouped_fp8_gemm_nt(_dl(a), _dl(sfa), _dl(b), _dl(sfb), _dl(d), ks, _dl(d), _dl(ks_device),
                                       stream=_stream(d))


@torch.library.custom_op("moegemm::bf16_gemm", mutates_args=("d",))
def bf16_gemm(a: torch.Tensor, b: torch.Tensor, d: torch.Tensor, accumulate: bool) -> None:
    """D = A @ B^T, or D += A @ B^T with accumulate; A and B each K-major or MN-major."""
    with _on_device_of(d):
        _moegemm.bf16_gemm(_dl(a), _dl(b), _dl(d), _dl(d) if accumulate else None, stream=_stream(d))


@torch.library.custom_op("moegemm::m_grouped_bf16_gemm_contiguous", mutates_args=("d",))
def m_grouped_bf16_gemm_contiguous(a: torch.Tensor, b: torch.Tensor, d: torch.Tensor, index: torch.Tensor,
                                   group_ends: bool, expected_m_per_group: int, segment_alignment: int = 128) -> None:
    with _on_device_of(d):
        _moegemm.m_grouped_bf16_gemm_contiguous(_dl(a), _dl(b), _dl(d), _dl(index), group_ends=group_ends,
                                                expected_m_per_group=expected_m_per_group,
                                                segment_alignment=segment_alignment, stream=_stream(d))


@torch.library.custom_op("moegemm::m_grouped_bf16_gemm_masked", mutates_args=("d",))
def m_grouped_bf16_gemm_masked(a: torch.Tensor, b: torch.Tensor, d: torch.Tensor, valid_rows: torch.Tensor,
                               expected_m: int) -> None:
    with _on_device_of(d):
        _moegemm.m_grouped_bf16_gemm_masked(_dl(a), _dl(b), _dl(d), _dl(valid_rows), expected_m, stream=_stream(d))


@torch.library.custom_op("moegemm::k_grouped_bf16_gemm_tn_accumulate", mutates_args=("d",))
def k_grouped_bf16_gemm_tn_accumulate(a: torch.Tensor, b: torch.Tensor, d: torch.Tensor, ks: List[int],
                                      ks_device: torch.Tensor) -> None:
    """D[g] += A_g^T @ B_g over per-expert K."""
    with _on_device_of(d):
        _moegemm.k_grouped_bf16_gemm_tn(_dl(a), _dl(b), _dl(d), ks, _dl(d), _dl(ks_device), stream=_stream(d))


def _no_metadata_change(*args, **kwargs) -> None:
    # Every op writes an existing tensor in place and returns nothing: there is no output metadata to describe.
    return None


for _op in (fp8_gemm_nt, m_grouped_fp8_gemm_nt_contiguous, m_grouped_fp8_gemm_nt_masked, fp8_gemm_nt_1d1d_accumulate,
            k_grouped_fp8_gemm_nt_accumulate, bf16_gemm, m_grouped_bf16_gemm_contiguous, m_grouped_bf16_gemm_masked,
            k_grouped_bf16_gemm_tn_accumulate):
    _op.register_fake(_no_metadata_change)
del _op
