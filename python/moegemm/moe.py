"""Routing helpers for the packed contiguous layout (torch): from a router's top-k expert ids to the order in which
tokens are gathered for the m-grouped GEMMs, the experts' running ends, and back.

With ``segment_alignment=1`` (docs/layouts.md) the group-ends form reads the experts' rows back to back, with no
padding rows; these helpers compute that arrangement on the device, without a host synchronisation (no
``.item()``, no ``bincount`` on data-dependent sizes), so that a dispatch built from them can be captured in a CUDA
graph together with the GEMMs::

    routing = moegemm.moe.pack_routing(topk_ids, num_experts)
    x_packed = x[routing.token_index]                       # [T * top_k, K], experts' rows back to back
    moegemm.m_grouped_bf16_gemm_contiguous(x_packed, w, y_packed, routing.ends, group_ends=True,
                                           segment_alignment=1, stream=torch.cuda.current_stream().cuda_stream)
    out = moegemm.moe.combine(y_packed, routing, topk_weights)  # [T, N], each token's weighted sum

Expert ids outside ``[0, num_experts)`` (for example -1 for a pair an expert-parallel rank does not own) sort after
every expert's rows: they lie past ``ends[-1]``, the GEMM leaves their rows as they are, and ``combine`` skips them.

For the weight gradients of the same layer, ``kgrouped_fp8_operand`` turns packed rows (activations, or the
output gradients) into the FP8 k-grouped GEMM's operand: each expert's tokens zero-padded to a multiple of 128,
cast per channel and 128 tokens, and its block transposed K-major.
"""

from typing import List, NamedTuple, Sequence, Tuple

import torch


class PackedRouting(NamedTuple):
    """Where each (token, choice) pair of a top-k routing goes in the packed layout.

    ``ends``: int32 [E], the running ends of the experts' rows (the group-ends index).
    ``token_index``: int64 [T * top_k], the token whose activations fill packed row r.
    ``pair_index``: int64 [T * top_k], the flattened (token, choice) pair of packed row r (token * top_k + choice).
    ``valid_rows``: int64 [] on the device, the rows that belong to an expert (``ends[-1]``, or 0 with no expert).
    """
    ends: torch.Tensor
    token_index: torch.Tensor
    pair_index: torch.Tensor
    valid_rows: torch.Tensor


def pack_routing(topk_ids: torch.Tensor, num_experts: int) -> PackedRouting:
    """The packed arrangement of a routing: pairs sorted by expert (stable: tokens in order within an expert).

    topk_ids: integer [T, top_k] (or [T]) expert ids on any device. Ids outside [0, num_experts) are placed after
    every valid pair. Nothing here waits for the device."""
    if not isinstance(num_experts, int) or isinstance(num_experts, bool) or num_experts < 1:
        raise ValueError(f"moegemm: invalid argument: num_experts: must be a positive int, got {num_experts!r}")
    if topk_ids.dtype.is_floating_point or topk_ids.dtype.is_complex or topk_ids.dtype == torch.bool:
        raise ValueError(f"moegemm: invalid argument: topk_ids: must hold integer expert ids, got {topk_ids.dtype}")
    if topk_ids.dim() not in (1, 2):
        raise ValueError(f"moegemm: invalid argument: topk_ids: must be [T, top_k] or [T], got {tuple(topk_ids.shape)}")
    top_k = 1 if topk_ids.dim() == 1 else topk_ids.shape[1]
    ids = topk_ids.reshape(-1).to(torch.int64)
    valid = (ids >= 0) & (ids < num_experts)
    key = torch.where(valid, ids, torch.full_like(ids, num_experts))  # invalid pairs after every expert
    pair_index = torch.sort(key, stable=True).indices
    counts = torch.zeros(num_experts + 1, dtype=torch.int64, device=ids.device)
    counts.scatter_add_(0, key, torch.ones_like(key))
    running = torch.cumsum(counts, 0)
    return PackedRouting(ends=running[:num_experts].to(torch.int32), token_index=pair_index // top_k,
                         pair_index=pair_index, valid_rows=running[num_experts - 1])


def combine(packed: torch.Tensor, routing: PackedRouting, topk_weights: torch.Tensor) -> torch.Tensor:
    """Each token's sum over its choices of the packed GEMM output rows, weighted by ``topk_weights`` ([T, top_k]:
    the router's weights; ones for a plain sum). Rows past ``routing.valid_rows`` (pairs no expert took) add nothing,
    whatever they hold. Returns [T, N] in the packed rows' dtype, summed in FP32. No host synchronisation."""
    rows = routing.pair_index.numel()
    if packed.dim() != 2 or packed.shape[0] < rows:
        raise ValueError(f"moegemm: invalid argument: packed: must be [rows >= {rows}, N], got {tuple(packed.shape)}")
    if topk_weights.dim() not in (1, 2) or topk_weights.numel() != rows:
        raise ValueError(f"moegemm: invalid argument: topk_weights: must be [T, top_k] with one weight per pair "
                         f"({rows}), got {tuple(topk_weights.shape)}")
    num_tokens = topk_weights.shape[0]
    owned = torch.arange(rows, device=packed.device) < routing.valid_rows
    weight = topk_weights.reshape(-1).to(torch.float32)[routing.pair_index]
    # torch.where, not a multiplication by zero: an unowned row may hold anything, NaN included.
    contribution = torch.where(owned[:, None], packed[:rows].to(torch.float32) * weight[:, None],
                               torch.zeros((), dtype=torch.float32, device=packed.device))
    out = torch.zeros(num_tokens, packed.shape[1], dtype=torch.float32, device=packed.device)
    out.index_add_(0, routing.token_index, contribution)
    return out.to(packed.dtype)


def _segment_starts(counts: Sequence[int], segment_alignment: int) -> List[int]:
    starts, end = [], 0
    for count in counts:
        start = (end + segment_alignment - 1) // segment_alignment * segment_alignment
        starts.append(start)
        end = start + count
    return starts


def kgrouped_fp8_operand(x: torch.Tensor, counts: Sequence[int],
                         segment_alignment: int = 1) -> Tuple[Tuple[torch.Tensor, torch.Tensor], List[int]]:
    """One operand of the FP8 k-grouped weight-gradient GEMM (recipe (1,1,128): D[g] = C[g] + A_g @ B_g^T summed
    over expert g's tokens) from packed rows.

    x: [rows, M] (BF16 or FP32), expert g's ``counts[g]`` tokens starting at the previous expert's end rounded up to
    ``segment_alignment`` (1: packed, as ``pack_routing`` arranges them). Returns ``((data, sf), ks)``: ``ks[g]``
    the expert's tokens rounded up to 128 (the padding tokens are zeros, which add nothing), ``data`` the 1-D FP8
    buffer of each expert's K-major [M, ks[g]] block in order, ``sf`` FP32 [M, sum(ks) / 128], MN-major with the
    TMA-aligned stride: the arguments ``moegemm.k_grouped_fp8_gemm_nt`` takes for A (or B) with ``ks``. Counts
    are host ints (the GEMM takes its sizes on the host too)."""
    from .deep_gemm import get_mn_major_tma_aligned_tensor, per_channel_cast_to_fp8

    if x.dim() != 2:
        raise ValueError(f"moegemm: invalid argument: x: must be [rows, M], got {tuple(x.shape)}")
    counts = [int(c) for c in counts]
    if not counts or any(c < 0 for c in counts):
        raise ValueError(f"moegemm: invalid argument: counts: must be one non-negative count per expert, got {counts}")
    if not isinstance(segment_alignment, int) or segment_alignment < 1:
        raise ValueError(f"moegemm: invalid argument: segment_alignment: must be a positive int, got "
                         f"{segment_alignment!r}")
    starts = _segment_starts(counts, segment_alignment)
    if starts[-1] + counts[-1] > x.shape[0]:
        raise ValueError(f"moegemm: invalid argument: x: the experts' rows end at {starts[-1] + counts[-1]}, past its "
                         f"{x.shape[0]} rows")
    m = x.shape[1]
    ks = [(c + 127) // 128 * 128 for c in counts]
    # Every expert's tokens, zero-padded to a multiple of 128, one after the other: no 128-token block of the cast
    # straddles two experts.
    padded = torch.zeros(sum(ks), m, dtype=x.dtype, device=x.device)
    offset = 0
    for start, count, k in zip(starts, counts, ks):
        padded[offset:offset + count] = x[start:start + count]
        offset += k
    q, sf = per_channel_cast_to_fp8(padded) if padded.shape[0] else (
        padded.to(torch.float8_e4m3fn), torch.zeros(0, m, dtype=torch.float32, device=x.device))
    blocks, offset = [], 0
    for k in ks:
        blocks.append(q[offset:offset + k].T.contiguous().view(-1))
        offset += k
    data = torch.cat(blocks) if blocks else torch.zeros(0, dtype=q.dtype, device=x.device)
    return (data, get_mn_major_tma_aligned_tensor(sf.T)), ks
