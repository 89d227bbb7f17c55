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
