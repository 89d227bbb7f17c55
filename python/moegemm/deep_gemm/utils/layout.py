"""Scale-factor layouts and the contiguous-layout alignment, with the anchor's names.

SFA (and 1D1D SFB) is read with TMA, so the kernels take it MN-major with the MN extent padded to a multiple of
16 bytes: a [mn, sf_k] FP32 tensor with strides (1, tma_aligned(mn)), and [G, mn, sf_k] with batch stride
tma_aligned(mn) * sf_k.
"""

from typing import Optional, Sequence

from ... import _moegemm
from .._errors import invalid, unsupported
from .._frameworks import is_numpy_array, is_torch_tensor
from .math import ceil_div

_SM90_ALIGNMENT = _moegemm.CONTIGUOUS_ALIGNMENT
_mk_alignment = _SM90_ALIGNMENT


def get_tma_aligned_size(x: int, element_size: int) -> int:
    """x rounded up so that x * element_size is a multiple of 16 bytes (moegemm.tma_aligned_size in Python, so
    that torch.compile traces through it)."""
    if element_size <= 0 or 16 % element_size != 0:
        raise invalid(f"element_size: must divide 16 (1, 2, 4, 8 or 16), got {element_size}")
    step = 16 // element_size
    return (x + step - 1) // step * step


def _element_size(t) -> int:
    return t.element_size() if is_torch_tensor(t) else t.itemsize


def _strides_in_elements(t):
    if is_torch_tensor(t):
        return tuple(t.stride())
    return tuple(s // t.itemsize for s in t.strides)


def _is_float32(t) -> bool:
    if is_torch_tensor(t):
        import torch

        return t.dtype == torch.float32
    return t.dtype.kind == "f" and t.itemsize == 4


def _has_strides(t, wanted) -> bool:
    # A dimension of extent 1 is never stepped over, so its stride does not matter.
    return all(size == 1 or stride == want for size, stride, want in zip(t.shape, _strides_in_elements(t), wanted))


def get_mn_major_tma_aligned_tensor(sf):
    """FP32 [mn, sf_k] or [G, mn, sf_k] -> the same values with strides (1, tma_aligned(mn)) (and batch stride
    tma_aligned(mn) * sf_k). Returns `sf` itself when it already has that layout."""
    if not (is_torch_tensor(sf) or is_numpy_array(sf)):
        raise invalid(f"sf: must be a torch tensor or a numpy array, got {type(sf).__name__}")
    if len(sf.shape) not in (2, 3):
        raise invalid(f"sf: must be 2-D [mn, sf_k] or 3-D [G, mn, sf_k], got shape {tuple(sf.shape)}")
    if not _is_float32(sf):
        raise invalid(f"sf: dtype must be float32, got {sf.dtype}")
    mn, sf_k = sf.shape[-2], sf.shape[-1]
    aligned = get_tma_aligned_size(mn, _element_size(sf))
    wanted = (1, aligned) if len(sf.shape) == 2 else (aligned * sf_k, 1, aligned)
    if _has_strides(sf, wanted):
        return sf
    groups = 1 if len(sf.shape) == 2 else sf.shape[0]
    if is_torch_tensor(sf):
        import torch

        out = torch.empty_strided(tuple(sf.shape), wanted, dtype=sf.dtype, device=sf.device)
        out.copy_(sf)
        return out
    import numpy as np

    storage = np.empty(groups * aligned * sf_k, dtype=sf.dtype)
    out = np.lib.stride_tricks.as_strided(storage, shape=sf.shape, strides=tuple(s * sf.itemsize for s in wanted))
    out[...] = sf
    return out


def transform_sf_into_required_layout(sf, mn: int, k: int, recipe: Sequence[int], num_groups: Optional[int] = None,
                                      is_sfa: Optional[bool] = None, disable_ue8m0_cast: bool = False,
                                      psum_layout=None):
    """Check `sf` against the recipe and return it in the layout the SM90 kernels read.

    recipe is (gran_m, gran_n, gran_k) with is_sfa saying which operand, or (gran_mn, gran_k) with is_sfa None.
    Per-row scales (gran_mn 1) become MN-major and TMA-aligned; per-block scales (128, 128) are checked and
    returned. `disable_ue8m0_cast` and `psum_layout` concern the packed UE8M0 format (SM100) and change nothing here.
    """
    recipe = tuple(int(g) for g in recipe)
    if len(recipe) == 3:
        if is_sfa is None:
            raise invalid("is_sfa: required with a 3-element recipe (which operand's granularity to use), got None")
        gran_mn, gran_k = (recipe[0] if is_sfa else recipe[1]), recipe[2]
    elif len(recipe) == 2:
        if is_sfa is not None:
            raise invalid(f"is_sfa: must be None with a (gran_mn, gran_k) recipe, got {is_sfa}")
        gran_mn, gran_k = recipe
    else:
        raise invalid(f"recipe: must be (gran_m, gran_n, gran_k) or (gran_mn, gran_k), got {recipe}")
    if not (is_torch_tensor(sf) or is_numpy_array(sf)):
        raise invalid(f"sf: must be a torch tensor or a numpy array, got {type(sf).__name__}")
    if not _is_float32(sf):
        if "int32" in str(sf.dtype):
            raise unsupported("sf: packed UE8M0 (int32) scale factors are the SM100 format; SM90 takes float32")
        raise invalid(f"sf: dtype must be float32, got {sf.dtype}")
    rank = 2 if num_groups is None else 3
    expected = (ceil_div(mn, gran_mn), ceil_div(k, gran_k))
    if num_groups is not None:
        expected = (num_groups,) + expected
    if tuple(sf.shape) != expected:
        raise invalid(f"sf: shape must be {expected} for mn={mn}, k={k}, granularity ({gran_mn}, {gran_k}) "
                      f"({rank}-D), got {tuple(sf.shape)}")
    if (gran_mn, gran_k) == (1, 128):
        return get_mn_major_tma_aligned_tensor(sf)
    if (gran_mn, gran_k) == (128, 128):
        return sf
    raise invalid(f"recipe: SM90 scale factors are per row x 128 (1, 128) or per 128 x 128 block (128, 128), "
                  f"got ({gran_mn}, {gran_k})")


def get_theoretical_mk_alignment_for_contiguous_layout(expected_m: Optional[int] = None) -> int:
    """The row alignment of expert segments the SM90 kernels need: 128, whatever the expected M."""
    return _SM90_ALIGNMENT


def set_mk_alignment_for_contiguous_layout(alignment: int) -> None:
    """Set the alignment callers pad expert segments (and K-grouped K) to. The drop-in's psum layout starts segments
    at multiples of 128, as the anchor's SM90 kernels do, so any positive multiple of 128 is accepted and anything
    else is refused (the anchor accepts any value and then computes with it as a tile size). Packed or 64-aligned
    segments: moegemm's own API, segment_alignment (docs/layouts.md)."""
    global _mk_alignment
    if isinstance(alignment, bool) or not isinstance(alignment, int) or alignment <= 0 or alignment % _SM90_ALIGNMENT:
        raise invalid(f"alignment: must be a positive multiple of {_SM90_ALIGNMENT}, got {alignment!r}")
    _mk_alignment = alignment


def get_mk_alignment_for_contiguous_layout() -> int:
    return _mk_alignment


get_m_alignment_for_contiguous_layout = get_mk_alignment_for_contiguous_layout
get_k_alignment_for_contiguous_layout = get_mk_alignment_for_contiguous_layout
