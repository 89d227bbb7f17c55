"""The anchor's GEMM entry points on torch tensors, mapped onto the moegemm torch custom ops.

Everything here is argument juggling the anchor does in its C++ API: recipe selection, the SFA transform, NN/TN/TT
as transposed views, empty-problem early returns and copying C into D. Every function writes `d` in place and
returns None. Where the anchor would compute garbage (docs/python.md lists the cases) this module raises instead.
"""

from typing import List, Optional, Sequence, Tuple

import torch

from .. import torch_ops
from ._errors import invalid, unsupported
from .utils.layout import get_mn_major_tma_aligned_tensor

RECIPE_1D2D = (1, 128, 128)
RECIPE_1D1D = (1, 1, 128)


# ---- argument helpers ------------------------------------------------------------------------------------------

def _pair(operand, name: str) -> Tuple[torch.Tensor, torch.Tensor]:
    if not isinstance(operand, (tuple, list)) or len(operand) != 2:
        raise invalid(f"{name}: must be a (data, scale_factors) pair, got {type(operand).__name__}")
    return operand[0], operand[1]


def _resolve_recipe(recipe, recipe_a, recipe_b) -> Tuple[int, int, int]:
    if recipe is not None and (recipe_a is not None or recipe_b is not None):
        raise invalid("recipe: give either recipe or (recipe_a, recipe_b), not both")
    if (recipe_a is None) != (recipe_b is None):
        raise invalid("recipe_a, recipe_b: must be given together")
    if recipe_a is not None:
        recipe_a, recipe_b = tuple(recipe_a), tuple(recipe_b)
        if len(recipe_a) != 2 or len(recipe_b) != 2 or recipe_a[1] != recipe_b[1]:
            raise invalid(f"recipe_a, recipe_b: must be (gran_m, gran_k) and (gran_n, gran_k) with one gran_k, "
                          f"got {recipe_a} and {recipe_b}")
        recipe = (recipe_a[0], recipe_b[0], recipe_a[1])
    if recipe is None:
        return RECIPE_1D2D
    recipe = tuple(int(g) for g in recipe)
    if recipe not in (RECIPE_1D2D, RECIPE_1D1D):
        # The anchor sends every gran_n != 1 to the 1D2D kernel, which then reads SFA as per-row: (128, 128, 128)
        # passes its checks and computes with the wrong scales.
        raise invalid(f"recipe: SM90 FP8 supports {RECIPE_1D2D} and {RECIPE_1D1D}, got {recipe}")
    return recipe


def _require_dim(t: torch.Tensor, dim: int, name: str) -> None:
    if not isinstance(t, torch.Tensor):
        raise invalid(f"{name}: must be a torch tensor, got {type(t).__name__}")
    if t.dim() != dim:
        raise invalid(f"{name}: must be {dim}-D, got shape {tuple(t.shape)}")


def _check_output(d: torch.Tensor, c: Optional[torch.Tensor], shape) -> None:
    if d.dtype not in (torch.bfloat16, torch.float32):
        raise invalid(f"d: dtype must be bfloat16 or float32, got {d.dtype}")
    if tuple(d.shape) != tuple(shape):
        raise invalid(f"d: shape must be {tuple(shape)}, got {tuple(d.shape)}")
    if c is not None:
        if c.dtype != d.dtype:
            raise invalid(f"c: dtype must be d's ({d.dtype}), got {c.dtype}")
        if tuple(c.shape) != tuple(d.shape):
            raise invalid(f"c: shape must be d's {tuple(d.shape)}, got {tuple(c.shape)}")


def _load_accumulator(d: torch.Tensor, c: Optional[torch.Tensor]) -> None:
    # The kernels accumulate into D; a separate C is copied there first.
    if c is not None and c is not d:
        d.copy_(c)


def _contiguous(t: torch.Tensor) -> torch.Tensor:
    return t if t.is_contiguous() else t.contiguous()


def _ks(ks_cpu, ks, grouped_layout, ks_tensor) -> Tuple[List[int], torch.Tensor]:
    # 2.6.1 spells (ks_cpu, grouped_layout); 2.5.0 spells (ks, ks_tensor). Positional callers match either.
    if ks_cpu is None:
        ks_cpu = ks
    if grouped_layout is None:
        grouped_layout = ks_tensor
    if ks_cpu is None or len(ks_cpu) == 0:
        raise invalid("ks_cpu: the per-group K list is required and must not be empty")
    if grouped_layout is None:
        raise invalid("grouped_layout: the int32 device tensor of per-group K is required, got None")
    return [int(k) for k in ks_cpu], grouped_layout


# ---- FP8 dense -------------------------------------------------------------------------------------------------

def fp8_gemm_nt(a, b, d: torch.Tensor, c: Optional[torch.Tensor] = None, recipe: Optional[Sequence[int]] = None,
                recipe_a: Optional[Sequence[int]] = None, recipe_b: Optional[Sequence[int]] = None,
                compiled_dims: str = "nk", disable_ue8m0_cast: bool = False) -> None:
    """D = C + A @ B^T. Recipe (1,128,128): BF16 D, no C. Recipe (1,1,128): FP32 D, C required (may be D)."""
    a_data, a_sf = _pair(a, "a")
    b_data, b_sf = _pair(b, "b")
    recipe = _resolve_recipe(recipe, recipe_a, recipe_b)
    _require_dim(a_data, 2, "a")
    _require_dim(b_data, 2, "b")
    _require_dim(d, 2, "d")
    m, k = a_data.shape
    n = b_data.shape[0]
    if m == 0 or n == 0:
        return
    _check_output(d, c, (m, n))
    if recipe == RECIPE_1D2D:
        if c is not None:
            raise invalid("c: recipe (1, 128, 128) computes BF16 D = A @ B^T without C on SM90; accumulate with "
                          "recipe (1, 1, 128) and FP32 D")
        if d.dtype != torch.bfloat16:
            raise invalid(f"d: recipe (1, 128, 128) writes bfloat16, got {d.dtype}")
        if k == 0:
            d.zero_()
            return
        torch_ops.fp8_gemm_nt(a_data, get_mn_major_tma_aligned_tensor(a_sf), b_data, _contiguous(b_sf), d)
        return
    if c is None:
        raise invalid("c: recipe (1, 1, 128) computes FP32 D = C + A @ B^T and needs c (pass c=d to accumulate)")
    if d.dtype != torch.float32:
        raise invalid(f"d: recipe (1, 1, 128) writes float32, got {d.dtype}")
    _load_accumulator(d, c)
    if k == 0:
        return
    torch_ops.fp8_gemm_nt_1d1d_accumulate(a_data, get_mn_major_tma_aligned_tensor(a_sf), b_data,
                                          get_mn_major_tma_aligned_tensor(b_sf), d)


def fp8_gemm_nt_skip_head_mid(a, b, d: torch.Tensor, head_splits: Sequence[int], recipe: Optional[Sequence[int]] = None,
                              compiled_dims: str = "nk", disable_ue8m0_cast: bool = False) -> None:
    """D = A @ B^T with a gap in every head, as the anchor's EpilogueHeadSplits writes it: B's N = H * (left + right)
    output columns go to D [M, H * (left + mid + right)], each head's first `left` columns at the head's start and its
    last `right` after `mid` columns that are left as they were. Recipe (1,128,128), BF16 D, no C. Here the product
    goes through a temporary [M, N] and two strided copies: the anchor's result, not its fused epilogue (the copies
    read and write D's columns once more)."""
    splits = tuple(head_splits) if isinstance(head_splits, (tuple, list)) else ()
    if len(splits) != 3 or any(isinstance(x, bool) or not isinstance(x, int) or x < 0 for x in splits) or \
            splits[0] + splits[2] == 0:
        raise invalid(f"head_splits: must be (left, mid, right), non-negative ints with left + right > 0, got "
                      f"{head_splits!r}")
    left, mid, right = splits
    if _resolve_recipe(recipe, None, None) != RECIPE_1D2D:
        raise invalid("recipe: fp8_gemm_nt_skip_head_mid computes recipe (1, 128, 128) only")
    a_data, _ = _pair(a, "a")
    b_data, _ = _pair(b, "b")
    _require_dim(a_data, 2, "a")
    _require_dim(b_data, 2, "b")
    _require_dim(d, 2, "d")
    m, n = a_data.shape[0], b_data.shape[0]
    if n % (left + right):
        raise invalid(f"head_splits: B's N ({n}) must be a multiple of left + right ({left + right})")
    heads = n // (left + right)
    width = heads * (left + mid + right)
    if tuple(d.shape) != (m, width):
        raise invalid(f"d: shape must be ({m}, {width}) (N + N / (left + right) * mid), got {tuple(d.shape)}")
    if d.dtype != torch.bfloat16:
        raise invalid(f"d: recipe (1, 128, 128) writes bfloat16, got {d.dtype}")
    if m == 0 or n == 0:
        return
    product = torch.empty((m, n), dtype=torch.bfloat16, device=d.device)
    fp8_gemm_nt(a, b, product, recipe=RECIPE_1D2D)
    source = product.unflatten(1, (heads, left + right))
    target = d.unflatten(1, (heads, left + mid + right))
    if left:
        target[..., :left].copy_(source[..., :left])
    if right:
        target[..., left + mid:].copy_(source[..., left:])


def fp8_gemm_nn(a, b, d, c=None, recipe=None, recipe_a=None, recipe_b=None, compiled_dims="nk",
                disable_ue8m0_cast=False) -> None:
    """B given as [K, N]: D = C + A @ B. SM90 FP8 needs K-major operands, so B must be a transposed view."""
    b_data, b_sf = _pair(b, "b")
    fp8_gemm_nt(a, (b_data.T, b_sf.T), d, c, recipe, recipe_a, recipe_b, compiled_dims, disable_ue8m0_cast)


def fp8_gemm_tn(a, b, d, c=None, recipe=None, recipe_a=None, recipe_b=None, compiled_dims="mn",
                disable_ue8m0_cast=False) -> None:
    """A given as [K, M] and B as [K, N]: D = C + A^T @ B."""
    a_data, a_sf = _pair(a, "a")
    b_data, b_sf = _pair(b, "b")
    fp8_gemm_nt((a_data.T, a_sf.T), (b_data.T, b_sf.T), d, c, recipe, recipe_a, recipe_b, compiled_dims,
                disable_ue8m0_cast)


def fp8_gemm_tt(a, b, d, c=None, recipe=None, recipe_a=None, recipe_b=None, compiled_dims="mn",
                disable_ue8m0_cast=False) -> None:
    """A given as [K, M]: D = C + A^T @ B^T."""
    a_data, a_sf = _pair(a, "a")
    fp8_gemm_nt((a_data.T, a_sf.T), b, d, c, recipe, recipe_a, recipe_b, compiled_dims, disable_ue8m0_cast)


# ---- FP8 M-grouped ---------------------------------------------------------------------------------------------

def m_grouped_fp8_gemm_nt_contiguous(a, b, d: torch.Tensor, grouped_layout: torch.Tensor, recipe=None,
                                     recipe_a=None, recipe_b=None, compiled_dims: str = "nk",
                                     disable_ue8m0_cast: bool = False, use_psum_layout: bool = False,
                                     ensure_zero_padding: bool = True,
                                     expected_m_for_psum_layout: Optional[int] = None) -> None:
    """A [M_total, K], B [G, N, K], D BF16 [M_total, N]; grouped_layout is int32 row -> expert ([M_total], -1 for
    padding) or, with use_psum_layout, the running end row of each expert ([G])."""
    a_data, a_sf = _pair(a, "a")
    b_data, b_sf = _pair(b, "b")
    if _resolve_recipe(recipe, recipe_a, recipe_b) != RECIPE_1D2D:
        raise invalid("recipe: M-grouped FP8 GEMMs use recipe (1, 128, 128)")
    _require_dim(a_data, 2, "a")
    _require_dim(b_data, 3, "b")
    if expected_m_for_psum_layout is not None and not use_psum_layout:
        raise invalid("expected_m_for_psum_layout: only meaningful with use_psum_layout=True")
    if a_data.shape[0] == 0:
        return
    torch_ops.m_grouped_fp8_gemm_nt_contiguous(a_data, get_mn_major_tma_aligned_tensor(a_sf), b_data,
                                               _contiguous(b_sf), d, grouped_layout, bool(use_psum_layout),
                                               int(expected_m_for_psum_layout or 0))


def m_grouped_fp8_gemm_nn_contiguous(a, b, d, grouped_layout, recipe=None, recipe_a=None, recipe_b=None,
                                     compiled_dims="nk", disable_ue8m0_cast=False, use_psum_layout=False,
                                     ensure_zero_padding=True) -> None:
    """B given as [G, K, N]; SM90 FP8 needs it K-major, i.e. a transposed view of [G, N, K] storage."""
    b_data, b_sf = _pair(b, "b")
    m_grouped_fp8_gemm_nt_contiguous(a, (b_data.transpose(1, 2), b_sf.transpose(1, 2)), d, grouped_layout, recipe,
                                     recipe_a, recipe_b, compiled_dims, disable_ue8m0_cast, use_psum_layout,
                                     ensure_zero_padding)


def m_grouped_fp8_gemm_nt_masked(a, b, d: torch.Tensor, masked_m: torch.Tensor, expected_m: int, recipe=None,
                                 recipe_a=None, recipe_b=None, compiled_dims: str = "nk",
                                 disable_ue8m0_cast: bool = False) -> None:
    """A [G, cap, K], B [G, N, K], D BF16 [G, cap, N]; expert g's rows [0, masked_m[g]) are computed, the rest
    of D is left as it was (any capacity, tile multiple or not)."""
    a_data, a_sf = _pair(a, "a")
    b_data, b_sf = _pair(b, "b")
    if _resolve_recipe(recipe, recipe_a, recipe_b) != RECIPE_1D2D:
        raise invalid("recipe: M-grouped FP8 GEMMs use recipe (1, 128, 128)")
    _require_dim(a_data, 3, "a")
    _require_dim(b_data, 3, "b")
    if int(expected_m) <= 0:
        raise invalid(f"expected_m: must be > 0 (expected valid rows per expert), got {expected_m}")
    torch_ops.m_grouped_fp8_gemm_nt_masked(a_data, get_mn_major_tma_aligned_tensor(a_sf), b_data,
                                           _contiguous(b_sf), d, masked_m, int(expected_m))


# ---- FP8 K-grouped ---------------------------------------------------------------------------------------------

def k_grouped_fp8_gemm_nt_contiguous(a, b, d: torch.Tensor, ks_cpu: Optional[Sequence[int]] = None,
                                     grouped_layout: Optional[torch.Tensor] = None, c: Optional[torch.Tensor] = None,
                                     recipe: Sequence[int] = RECIPE_1D1D, compiled_dims: str = "mn",
                                     use_psum_layout: bool = False, *, ks: Optional[Sequence[int]] = None,
                                     ks_tensor: Optional[torch.Tensor] = None) -> None:
    """D[g] = C[g] + A_g @ B_g^T: a and b are 1-D FP8 concatenations of per-expert K-major [M, k_g] and [N, k_g]
    blocks; SFA [M, sum k / 128], SFB [N, sum k / 128]; C, D FP32 [G, M, N]."""
    a_data, a_sf = _pair(a, "a")
    b_data, b_sf = _pair(b, "b")
    if tuple(int(g) for g in recipe) != RECIPE_1D1D:
        raise invalid(f"recipe: K-grouped FP8 GEMMs use recipe {RECIPE_1D1D}, got {tuple(recipe)}")
    if use_psum_layout:
        raise unsupported("use_psum_layout: the K-grouped psum layout is SM100-only")
    ks_list, ks_device = _ks(ks_cpu, ks, grouped_layout, ks_tensor)
    _require_dim(d, 3, "d")
    if c is None:
        raise invalid("c: K-grouped GEMMs compute D = C + A @ B^T and need c (pass c=d to accumulate)")
    _check_output(d, c, tuple(d.shape))
    if d.dtype != torch.float32:
        raise invalid(f"d: K-grouped FP8 GEMMs write float32, got {d.dtype}")
    if len(ks_list) != d.shape[0]:
        raise invalid(f"ks_cpu: must have one K per group (d.shape[0] = {d.shape[0]}), got {len(ks_list)}")
    _load_accumulator(d, c)
    if sum(ks_list) == 0 or d.numel() == 0:
        return
    torch_ops.k_grouped_fp8_gemm_nt_accumulate(a_data, get_mn_major_tma_aligned_tensor(a_sf), b_data,
                                               get_mn_major_tma_aligned_tensor(b_sf), d, ks_list, ks_device)


def k_grouped_fp8_gemm_tn_contiguous(a, b, d, ks_cpu=None, grouped_layout=None, c=None, recipe=RECIPE_1D1D,
                                     compiled_dims="mn", use_psum_layout=False, *, ks=None, ks_tensor=None) -> None:
    """The anchor's SM100-only form; on SM90 lay the operands out K-major and call k_grouped_fp8_gemm_nt_contiguous."""
    raise unsupported("k_grouped_fp8_gemm_tn_contiguous: SM100-only in the reference; on SM90 use "
                      "k_grouped_fp8_gemm_nt_contiguous with K-major per-expert blocks")


# ---- BF16 ------------------------------------------------------------------------------------------------------

def bf16_gemm_nt(a: torch.Tensor, b: torch.Tensor, d: torch.Tensor, c: Optional[torch.Tensor] = None,
                 compiled_dims: str = "nk") -> None:
    """D = C + A @ B^T with A [M, K], B [N, K] in any majors; D BF16 or FP32. A C distinct from D is copied into D
    first and the kernel then adds A @ B^T to D in FP32 before its one rounding, which is D = C + A @ B^T as the
    anchor defines it (C has D's dtype, so the copy is exact)."""
    _require_dim(a, 2, "a")
    _require_dim(b, 2, "b")
    _require_dim(d, 2, "d")
    m, k = a.shape
    n = b.shape[0]
    if m == 0 or n == 0:
        return
    _check_output(d, c, (m, n))
    _load_accumulator(d, c)
    if k == 0:
        if c is None:
            d.zero_()
        return
    torch_ops.bf16_gemm(a, b, d, c is not None)


def bf16_gemm_nn(a, b, d, c=None, compiled_dims="nk") -> None:
    """B given as [K, N]: D = C + A @ B."""
    _require_dim(b, 2, "b")
    bf16_gemm_nt(a, b.T, d, c, compiled_dims)


def bf16_gemm_tn(a, b, d, c=None, compiled_dims="mn") -> None:
    """A given as [K, M], B as [K, N]: D = C + A^T @ B."""
    _require_dim(a, 2, "a")
    _require_dim(b, 2, "b")
    bf16_gemm_nt(a.T, b.T, d, c, compiled_dims)


def bf16_gemm_tt(a, b, d, c=None, compiled_dims="mn") -> None:
    """A given as [K, M]: D = C + A^T @ B^T."""
    _require_dim(a, 2, "a")
    bf16_gemm_nt(a.T, b, d, c, compiled_dims)


def m_grouped_bf16_gemm_nt_contiguous(a: torch.Tensor, b: torch.Tensor, d: torch.Tensor,
                                      grouped_layout: torch.Tensor, compiled_dims: str = "nk",
                                      use_psum_layout: bool = False, ensure_zero_padding: bool = True,
                                      expected_m_for_psum_layout: Optional[int] = None) -> None:
    """A [M_total, K], B [G, N, K] (either major), D BF16 [M_total, N]; grouped_layout as the FP8 form."""
    _require_dim(a, 2, "a")
    _require_dim(b, 3, "b")
    if expected_m_for_psum_layout is not None and not use_psum_layout:
        raise invalid("expected_m_for_psum_layout: only meaningful with use_psum_layout=True")
    if a.shape[0] == 0:
        return
    torch_ops.m_grouped_bf16_gemm_contiguous(a, b, d, grouped_layout, bool(use_psum_layout),
                                             int(expected_m_for_psum_layout or 0))


def m_grouped_bf16_gemm_nn_contiguous(a, b, d, grouped_layout, compiled_dims="nk", use_psum_layout=False,
                                      ensure_zero_padding=True) -> None:
    """B given as [G, K, N]."""
    _require_dim(b, 3, "b")
    m_grouped_bf16_gemm_nt_contiguous(a, b.transpose(1, 2), d, grouped_layout, compiled_dims, use_psum_layout,
                                      ensure_zero_padding)


def m_grouped_bf16_gemm_nt_masked(a: torch.Tensor, b: torch.Tensor, d: torch.Tensor, masked_m: torch.Tensor,
                                  expected_m: int, compiled_dims: str = "nk") -> None:
    """A [G, cap, K], B [G, N, K], D BF16 [G, cap, N]; rows past masked_m[g] are left as they were."""
    _require_dim(a, 3, "a")
    _require_dim(b, 3, "b")
    if int(expected_m) <= 0:
        raise invalid(f"expected_m: must be > 0 (expected valid rows per expert), got {expected_m}")
    torch_ops.m_grouped_bf16_gemm_masked(a, b, d, masked_m, int(expected_m))


def k_grouped_bf16_gemm_tn_contiguous(a: torch.Tensor, b: torch.Tensor, d: torch.Tensor,
                                      ks_cpu: Optional[Sequence[int]] = None,
                                      grouped_layout: Optional[torch.Tensor] = None,
                                      c: Optional[torch.Tensor] = None, compiled_dims: str = "mn",
                                      use_psum_layout: bool = False, *, ks: Optional[Sequence[int]] = None,
                                      ks_tensor: Optional[torch.Tensor] = None) -> None:
    """D[g] = C[g] + A_g^T @ B_g with A [sum k, M], B [sum k, N] (rows of expert g contiguous), C, D [G, M, N]."""
    if use_psum_layout:
        raise unsupported("use_psum_layout: the K-grouped psum layout is SM100-only")
    ks_list, ks_device = _ks(ks_cpu, ks, grouped_layout, ks_tensor)
    _require_dim(a, 2, "a")
    _require_dim(b, 2, "b")
    _require_dim(d, 3, "d")
    if c is None:
        raise invalid("c: K-grouped GEMMs compute D = C + A^T @ B and need c (pass c=d to accumulate)")
    _check_output(d, c, tuple(d.shape))
    if len(ks_list) != d.shape[0]:
        raise invalid(f"ks_cpu: must have one K per group (d.shape[0] = {d.shape[0]}), got {len(ks_list)}")
    _load_accumulator(d, c)
    if sum(ks_list) == 0 or d.numel() == 0:
        return
    torch_ops.k_grouped_bf16_gemm_tn_accumulate(a, b, d, ks_list, ks_device)


# ---- the anchor's cuBLASLt baseline ----------------------------------------------------------------------------

_CUBLASLT_INPUTS = (torch.bfloat16, torch.float32, torch.float8_e4m3fn)


def _cublaslt(a_mat: torch.Tensor, b_mat: torch.Tensor, d: torch.Tensor, c: Optional[torch.Tensor]) -> None:
    """D = C + a_mat @ b_mat (a_mat [M, K], b_mat [K, N] views) through torch's cuBLAS(Lt) GEMMs, FP32 accumulation
    and one rounding into D, as the anchor's thin cuBLASLt wrapper does (FP8 inputs unscaled)."""
    (m, k), n = a_mat.shape, b_mat.shape[1]
    if b_mat.shape[0] != k:
        raise invalid(f"a, b: K must match, got {k} and {b_mat.shape[0]}")
    if a_mat.dtype not in _CUBLASLT_INPUTS or b_mat.dtype != a_mat.dtype:
        raise invalid(f"a, b: one dtype of bfloat16, float32 or float8_e4m3fn, got {a_mat.dtype} and {b_mat.dtype}")
    _check_output(d, c, (m, n))
    if a_mat.dtype == torch.float32 and d.dtype != torch.float32:
        raise invalid(f"d: float32 inputs give a float32 d, got {d.dtype}")
    if a_mat.dtype == torch.float8_e4m3fn:
        # cuBLASLt takes FP8 only with both operands K-major (the nt form) and sizes in multiples of 16.
        if a_mat.stride(1) != 1 or b_mat.stride(0) != 1:
            raise unsupported("a, b: FP8 cuBLASLt GEMMs take K-major A and B only (cublaslt_gemm_nt)")
        if k % 16 or n % 16:
            raise invalid(f"a, b: FP8 cuBLASLt GEMMs need K and N multiples of 16, got K {k}, N {n}")
    if not (a_mat.is_cuda and b_mat.is_cuda and d.is_cuda):
        raise invalid("a, b, d: must be CUDA tensors")
    if m == 0 or n == 0:
        return
    _load_accumulator(d, c)
    if k == 0:
        if c is None:
            d.zero_()
        return
    accumulate = c is not None
    if a_mat.dtype == torch.float8_e4m3fn:
        one = torch.ones((), dtype=torch.float32, device=d.device)
        product = torch._scaled_mm(_contiguous(a_mat), b_mat, scale_a=one, scale_b=one, out_dtype=torch.float32)
        if accumulate:
            d.add_(product)  # computed in FP32, one rounding into D
        else:
            d.copy_(product)
    elif d.dtype == a_mat.dtype:
        if accumulate:
            d.addmm_(a_mat, b_mat)
        else:
            torch.mm(a_mat, b_mat, out=d)
    else:  # BF16 inputs, FP32 D: cuBLAS's FP32-output form of the BF16 GEMM
        product = (torch.addmm(d, a_mat, b_mat, out_dtype=torch.float32) if accumulate
                   else torch.mm(a_mat, b_mat, out_dtype=torch.float32))
        d.copy_(product)


def cublaslt_gemm_nt(a: torch.Tensor, b: torch.Tensor, d: torch.Tensor, c: Optional[torch.Tensor] = None) -> None:
    """The anchor's cuBLASLt baseline: D = C + A @ B^T with A [M, K], B [N, K]; BF16 or FP32 inputs (BF16 or FP32
    D), or FP8 e4m3 inputs taken unscaled. Runs torch's cuBLAS(Lt) GEMM, not a moegemm kernel."""
    _require_dim(a, 2, "a")
    _require_dim(b, 2, "b")
    _require_dim(d, 2, "d")
    _cublaslt(a, b.T, d, c)


def cublaslt_gemm_nn(a, b, d, c=None) -> None:
    """B given as [K, N]: D = C + A @ B."""
    _require_dim(b, 2, "b")
    cublaslt_gemm_nt(a, b.T, d, c)


def cublaslt_gemm_tn(a, b, d, c=None) -> None:
    """A given as [K, M], B as [K, N]: D = C + A^T @ B."""
    _require_dim(a, 2, "a")
    _require_dim(b, 2, "b")
    cublaslt_gemm_nt(a.T, b.T, d, c)


def cublaslt_gemm_tt(a, b, d, c=None) -> None:
    """A given as [K, M], B as [N, K]: D = C + A^T @ B^T."""
    _require_dim(a, 2, "a")
    cublaslt_gemm_nt(a.T, b, d, c)


# ---- the anchor's other spellings ------------------------------------------------------------------------------

fp8_fp4_gemm_nt = fp8_gemm_nt
fp8_fp4_gemm_nn = fp8_gemm_nn
fp8_fp4_gemm_tn = fp8_gemm_tn
fp8_fp4_gemm_tt = fp8_gemm_tt
m_grouped_fp8_fp4_gemm_nt_contiguous = m_grouped_fp8_gemm_nt_contiguous
m_grouped_fp8_fp4_gemm_nn_contiguous = m_grouped_fp8_gemm_nn_contiguous
m_grouped_fp8_fp4_gemm_nt_masked = m_grouped_fp8_gemm_nt_masked
fp8_m_grouped_gemm_nt_masked = m_grouped_fp8_gemm_nt_masked
bf16_m_grouped_gemm_nt_masked = m_grouped_bf16_gemm_nt_masked
