"""FP8 cast helpers with the anchor's names, arguments and outputs.

Scale factors are FP32 amax / 448 over groups of 128 elements (amax clamped to at least 1e-4); values are divided by
their scale and cast to e4m3. Torch tensors give float8_e4m3fn tensors; numpy arrays give uint8 arrays of e4m3 bits
(numpy has no FP8 dtype), which the moegemm bindings read as e4m3.
"""

from typing import Tuple

from .._errors import invalid
from .._frameworks import is_numpy_array, is_torch_tensor

_E4M3_MAX = 448.0
_AMAX_FLOOR = 1e-4


def ceil_div(x: int, y: int) -> int:
    return (x + y - 1) // y


def align(x: int, y: int) -> int:
    return ceil_div(x, y) * y


def ceil_to_ue8m0(x):
    """Round positive scale factors up to a power of two (the UE8M0 format)."""
    if is_torch_tensor(x):
        import torch

        return torch.pow(2.0, torch.ceil(torch.log2(x.abs())))
    import numpy as np

    return np.exp2(np.ceil(np.log2(np.abs(x)))).astype(np.float32)


def _scale(amax, use_ue8m0: bool):
    sf = amax / _E4M3_MAX
    return ceil_to_ue8m0(sf) if use_ue8m0 else sf


def _require_2d(x, name: str) -> None:
    if len(x.shape) != 2:
        raise invalid(f"{name}: must be 2-D, got shape {tuple(x.shape)}")


def _check_input(x) -> None:
    if not (is_torch_tensor(x) or is_numpy_array(x)):
        raise invalid(f"x: must be a torch tensor or a numpy array, got {type(x).__name__}")
    _require_2d(x, "x")


def per_token_cast_to_fp8(x, use_ue8m0: bool = False, gran_k: int = 128) -> Tuple:
    """x [m, k] -> (FP8 [m, k], FP32 sf [m, ceil(k / gran_k)]), one scale per row and gran_k columns."""
    _check_input(x)
    m, k = x.shape
    padded_k = align(k, gran_k)
    if is_torch_tensor(x):
        import torch

        padded = torch.zeros((m, padded_k), dtype=x.dtype, device=x.device)
        padded[:, :k] = x
        groups = padded.view(m, padded_k // gran_k, gran_k)
        sf = _scale(groups.abs().float().amax(dim=2).clamp(min=_AMAX_FLOOR), use_ue8m0)
        q = (groups * (1.0 / sf.unsqueeze(2))).to(torch.float8_e4m3fn)
        return q.view(m, padded_k)[:, :k].contiguous(), sf
    import numpy as np

    from ...fp8 import float_to_e4m3

    padded = np.zeros((m, padded_k), dtype=np.float32)
    padded[:, :k] = x
    groups = padded.reshape(m, padded_k // gran_k, gran_k)
    sf = _scale(np.maximum(np.abs(groups).max(axis=2), _AMAX_FLOOR), use_ue8m0).astype(np.float32)
    q = float_to_e4m3(groups * (1.0 / sf[:, :, None]))
    return np.ascontiguousarray(q.reshape(m, padded_k)[:, :k]), sf


def per_channel_cast_to_fp8(x, use_ue8m0: bool = False, gran_k: int = 128) -> Tuple:
    """x [k, n] (k a multiple of gran_k) -> (FP8 [k, n], FP32 sf [k / gran_k, n]), one scale per column and gran_k
    rows (the K-grouped weight-gradient operands)."""
    _check_input(x)
    k, n = x.shape
    if k % gran_k != 0:
        raise invalid(f"x: rows must be a multiple of {gran_k}, got {k}")
    if is_torch_tensor(x):
        import torch

        groups = x.view(k // gran_k, gran_k, n)
        sf = _scale(groups.abs().float().amax(dim=1).clamp(min=_AMAX_FLOOR), use_ue8m0)
        q = (groups * (1.0 / sf.unsqueeze(1))).to(torch.float8_e4m3fn)
        return q.view(k, n), sf
    import numpy as np

    from ...fp8 import float_to_e4m3

    groups = np.asarray(x, dtype=np.float32).reshape(k // gran_k, gran_k, n)
    sf = _scale(np.maximum(np.abs(groups).max(axis=1), _AMAX_FLOOR), use_ue8m0).astype(np.float32)
    q = float_to_e4m3(groups * (1.0 / sf[:, None, :]))
    return q.reshape(k, n), sf


def per_block_cast_to_fp8(x, use_ue8m0: bool = False, gran_k: int = 128) -> Tuple:
    """x [m, n] -> (FP8 [m, n], FP32 sf [ceil(m / gran_k), ceil(n / gran_k)]), one scale per gran_k x gran_k
    block (the 1D2D B operand)."""
    _check_input(x)
    m, n = x.shape
    pm, pn = align(m, gran_k), align(n, gran_k)
    if is_torch_tensor(x):
        import torch

        padded = torch.zeros((pm, pn), dtype=x.dtype, device=x.device)
        padded[:m, :n] = x
        blocks = padded.view(pm // gran_k, gran_k, pn // gran_k, gran_k)
        sf = _scale(blocks.abs().float().amax(dim=(1, 3), keepdim=True).clamp(min=_AMAX_FLOOR), use_ue8m0)
        q = (blocks * (1.0 / sf)).to(torch.float8_e4m3fn)
        return q.view(pm, pn)[:m, :n].contiguous(), sf.view(pm // gran_k, pn // gran_k)
    import numpy as np

    from ...fp8 import float_to_e4m3

    padded = np.zeros((pm, pn), dtype=np.float32)
    padded[:m, :n] = x
    blocks = padded.reshape(pm // gran_k, gran_k, pn // gran_k, gran_k)
    sf = _scale(np.maximum(np.abs(blocks).max(axis=(1, 3), keepdims=True), _AMAX_FLOOR), use_ue8m0)
    sf = sf.astype(np.float32)
    q = float_to_e4m3(blocks * (1.0 / sf))
    return np.ascontiguousarray(q.reshape(pm, pn)[:m, :n]), sf.reshape(pm // gran_k, pn // gran_k)
