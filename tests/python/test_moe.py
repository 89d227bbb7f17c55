"""moegemm.moe: the packed routing helpers, against a plain Python arrangement (CPU), and end to end with the packed
BF16 GEMM on the device."""

import random

import pytest

torch = pytest.importorskip("torch", reason="moegemm.moe works on torch tensors")

import moegemm  # noqa: E402
from moegemm import moe  # noqa: E402


def reference_arrangement(ids, num_experts):
    """Pairs by expert, tokens in order within an expert, pairs of no expert last."""
    top_k = len(ids[0])
    pairs = [(t * top_k + c, e) for t, row in enumerate(ids) for c, e in enumerate(row)]
    order = [p for e in range(num_experts) for p, pe in pairs if pe == e]
    order += [p for p, pe in pairs if not 0 <= pe < num_experts]
    ends, total = [], 0
    for e in range(num_experts):
        total += sum(1 for _, pe in pairs if pe == e)
        ends.append(total)
    return order, ends, top_k


@pytest.mark.parametrize("tokens, top_k, num_experts", [(1, 1, 1), (37, 2, 8), (200, 6, 16), (64, 8, 256)])
def test_pack_routing_sorts_pairs_by_expert(tokens, top_k, num_experts):
    rng = random.Random(tokens * 31 + top_k)
    ids = [[rng.randrange(-1, num_experts + 2) for _ in range(top_k)] for _ in range(tokens)]
    routing = moe.pack_routing(torch.tensor(ids), num_experts)
    order, ends, _ = reference_arrangement(ids, num_experts)
    assert routing.pair_index.tolist() == order
    assert routing.token_index.tolist() == [p // top_k for p in order]
    assert routing.ends.dtype == torch.int32 and routing.ends.tolist() == ends
    assert int(routing.valid_rows) == ends[-1]


def test_combine_sums_each_tokens_weighted_rows_and_skips_pairs_of_no_expert():
    ids = torch.tensor([[2, 0], [1, 2], [-1, 2], [0, 5]])
    routing = moe.pack_routing(ids, 3)
    packed = torch.arange(16, dtype=torch.float32).reshape(8, 2)
    packed[6:] = float("nan")  # rows of pairs no expert took: the GEMM leaves them as they were
    weights = torch.tensor([[0.5, 2.0], [1.0, 1.0], [3.0, 1.0], [1.0, 4.0]])
    out = moe.combine(packed, routing, weights)
    expected = torch.zeros(4, 2)
    for row, pair in enumerate(routing.pair_index.tolist()):
        if row < int(routing.valid_rows):
            expected[pair // 2] += weights.reshape(-1)[pair] * packed[row]
    assert torch.equal(out, expected)


def test_bad_arguments_name_the_argument():
    with pytest.raises(ValueError, match="num_experts: must be a positive int"):
        moe.pack_routing(torch.zeros(4, 2, dtype=torch.int64), 0)
    with pytest.raises(ValueError, match="topk_ids: must hold integer expert ids"):
        moe.pack_routing(torch.zeros(4, 2), 4)
    with pytest.raises(ValueError, match=r"topk_ids: must be \[T, top_k\] or \[T\]"):
        moe.pack_routing(torch.zeros(4, 2, 2, dtype=torch.int64), 4)
    routing = moe.pack_routing(torch.zeros(4, 2, dtype=torch.int64), 4)
    with pytest.raises(ValueError, match="topk_weights: must be"):
        moe.combine(torch.zeros(8, 3), routing, torch.ones(4, 3))
    with pytest.raises(ValueError, match="packed: must be"):
        moe.combine(torch.zeros(7, 3), routing, torch.ones(4, 2))


def test_a_routed_bf16_layer_on_the_device_matches_the_per_token_reference(cuda_torch):
    # Dispatch by the helpers, one packed group-ends GEMM (segment alignment 1), combine: each token's output is
    # the weighted sum of its experts' products, in float64 on the host.
    torch.manual_seed(0)
    tokens, top_k, num_experts, n, k = 300, 4, 8, 256, 512
    x = torch.randn(tokens, k, dtype=torch.bfloat16, device="cuda")
    w = torch.randn(num_experts, n, k, dtype=torch.bfloat16, device="cuda")
    ids = torch.randint(-1, num_experts, (tokens, top_k), device="cuda")
    weights = torch.rand(tokens, top_k, device="cuda")
    routing = moe.pack_routing(ids, num_experts)
    x_packed = x[routing.token_index].contiguous()
    y_packed = torch.full((tokens * top_k, n), float("nan"), dtype=torch.bfloat16, device="cuda")
    moegemm.m_grouped_bf16_gemm_contiguous(x_packed, w, y_packed, routing.ends, group_ends=True, segment_alignment=1,
                                           stream=torch.cuda.current_stream().cuda_stream)
    out = moe.combine(y_packed, routing, weights)
    reference = torch.zeros(tokens, n, dtype=torch.float64, device="cuda")
    for c in range(top_k):
        e = ids[:, c]
        ok = (e >= 0) & (e < num_experts)
        prod = torch.einsum("tk,tnk->tn", x.double(), w[e.clamp(0, num_experts - 1)].double())
        reference += torch.where(ok[:, None], prod * weights[:, c, None].double(), torch.zeros_like(prod))
    diff = 1 - 2 * (out.double() * reference).sum() / (out.double() ** 2 + reference ** 2).sum()
    assert float(diff) < 1e-4, float(diff)


def _expected_operand(x, counts, segment_alignment):
    """The same operand, expert by expert, as the anchor's k-grouped generator builds it."""
    from moegemm import deep_gemm
    blocks, scales, ks, end = [], [], [], 0
    for count in counts:
        start = (end + segment_alignment - 1) // segment_alignment * segment_alignment
        end = start + count
        k = (count + 127) // 128 * 128
        ks.append(k)
        if k == 0:
            continue
        rows = torch.zeros(k, x.shape[1], dtype=x.dtype)
        rows[:count] = x[start:end]
        q, sf = deep_gemm.per_channel_cast_to_fp8(rows)
        blocks.append(q.T.contiguous().view(-1))
        scales.append(sf)
    return torch.cat(blocks), torch.cat(scales).T, ks


@pytest.mark.parametrize("counts, segment_alignment", [([100, 0, 300, 1], 1), ([128, 256, 7], 64), ([0, 0, 5], 1)])
def test_kgrouped_fp8_operand_is_the_anchors_operand_from_packed_rows(counts, segment_alignment):
    torch.manual_seed(1)
    m = 72
    rows = sum(counts) + segment_alignment * len(counts) + 3
    x = torch.randn(rows, m, dtype=torch.bfloat16)
    (data, sf), ks = moe.kgrouped_fp8_operand(x, counts, segment_alignment)
    want_data, want_sf, want_ks = _expected_operand(x, counts, segment_alignment)
    assert ks == want_ks and all(k % 128 == 0 for k in ks)
    assert data.dtype == torch.float8_e4m3fn and torch.equal(data.view(torch.uint8), want_data.view(torch.uint8))
    assert sf.shape == (m, sum(ks) // 128) and torch.equal(sf, want_sf)
    assert sf.stride() == (1, moegemm.tma_aligned_size(m, 4))  # MN-major, the stride the GEMM takes


def test_kgrouped_fp8_operand_refuses_what_it_cannot_place():
    x = torch.zeros(10, 8)
    with pytest.raises(ValueError, match="counts: must be one non-negative count per expert"):
        moe.kgrouped_fp8_operand(x, [3, -1])
    with pytest.raises(ValueError, match="x: the experts' rows end at 12, past its 10 rows"):
        moe.kgrouped_fp8_operand(x, [4, 8])
    with pytest.raises(ValueError, match="segment_alignment: must be a positive int"):
        moe.kgrouped_fp8_operand(x, [4], 0)


def _dequantized_block(data, sf, m, offset, k):
    """Expert block [m, k] (K-major) of a k-grouped FP8 operand, dequantized in float64."""
    block = data[m * offset:m * (offset + k)].view(m, k).double()
    return block * sf[:, offset // 128:(offset + k) // 128].double().repeat_interleave(128, dim=1)


def test_weight_gradients_from_packed_rows_on_the_device(cuda_torch):
    # Forward activations and output gradients in the packed layout; the experts' FP8 weight gradients
    # D[g] = X_g^T dY_g from kgrouped_fp8_operand and one k-grouped GEMM, against float64 on the dequantized operands
    # (tight) and, for experts of 128 tokens or more, on the unquantized ones (the anchor's threshold).
    from moegemm import deep_gemm
    torch.manual_seed(2)
    counts, m, n = [300, 0, 129, 512, 1], 256, 384
    rows = sum(counts)
    x = torch.randn(rows, m, dtype=torch.bfloat16, device="cuda")
    dy = torch.randn(rows, n, dtype=torch.bfloat16, device="cuda")
    (a, sfa), ks = moe.kgrouped_fp8_operand(x, counts)
    (b, sfb), _ = moe.kgrouped_fp8_operand(dy, counts)
    d = torch.zeros(len(counts), m, n, dtype=torch.float32, device="cuda")
    # FP8 crosses as its bits (uint8): not every torch exports float8 through DLPack.
    moegemm.k_grouped_fp8_gemm_nt(a.view(torch.uint8), sfa, b.view(torch.uint8), sfb, d, ks,
                                  stream=torch.cuda.current_stream().cuda_stream)
    torch.cuda.synchronize()
    start, offset = 0, 0
    for g, (count, k) in enumerate(zip(counts, ks)):
        if count == 0:
            assert torch.equal(d[g], torch.zeros_like(d[g])), "an expert without tokens adds nothing"
            continue
        dequantized = _dequantized_block(a.float(), sfa, m, offset, k) @ _dequantized_block(b.float(), sfb, n, offset, k).T
        assert float(deep_gemm.calc_diff(d[g], dequantized)) < 1e-5, g
        if count >= 128:
            exact = x[start:start + count].double().T @ dy[start:start + count].double()
            assert float(deep_gemm.calc_diff(d[g], exact)) < 1e-3, g
        start += count
        offset += k
