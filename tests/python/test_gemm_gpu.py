"""Every GEMM of the drop-in against float64 references on the device, plus in-place semantics, streams, CUDA
graphs, torch.compile and the runtime knobs. Skipped without torch or a CUDA device; a GEMM whose C++ kernel is
not built yet skips with that message."""

import random

import pytest

torch = pytest.importorskip("torch", reason="GPU tests need torch")

import moegemm  # noqa: E402
import moegemm.deep_gemm as deep_gemm  # noqa: E402
from gpu_helpers import (  # noqa: E402
    assert_close, call, call_built, dequantize_per_block, dequantize_per_token, poisoned,
)

pytestmark = pytest.mark.usefixtures("cuda_torch")

FP8_EXACT = 1e-5     # against the dequantized float64 product: only accumulation order and BF16 rounding differ
FP8_ANCHOR = 1e-3    # against the unquantized product, the anchor's threshold
BF16 = 1e-5


def randn(*shape, dtype=torch.bfloat16):
    return torch.randn(*shape, dtype=dtype, device="cuda")


@pytest.fixture(autouse=True)
def seeded():
    torch.manual_seed(0)
    random.seed(0)


# ---- FP8 dense -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("m, n, k", [(1, 2112, 7168), (128, 576, 7168), (4096, 7168, 2048), (4096, 2112, 576),
                                     (77, 264, 384)])
def test_fp8_gemm_nt_1d2d(m, n, k):
    a, b = randn(m, k), randn(n, k)
    a_fp8, b_fp8 = deep_gemm.per_token_cast_to_fp8(a), deep_gemm.per_block_cast_to_fp8(b)
    d = poisoned(torch, (m, n), torch.bfloat16)
    pointer = d.data_ptr()
    call(deep_gemm.fp8_gemm_nt, a_fp8, b_fp8, d)
    assert d.data_ptr() == pointer
    reference = dequantize_per_token(*a_fp8) @ dequantize_per_block(*b_fp8).T
    assert_close(d, reference, FP8_EXACT)
    assert_close(d, a.double() @ b.double().T, FP8_ANCHOR)


@pytest.mark.parametrize("in_place", [True, False])
def test_fp8_gemm_nt_1d1d_accumulates(in_place):
    m, n, k = 2112, 4096, 7168
    a, b = randn(m, k), randn(n, k)
    a_fp8, b_fp8 = deep_gemm.per_token_cast_to_fp8(a), deep_gemm.per_token_cast_to_fp8(b)
    c = randn(m, n, dtype=torch.float32) * 32
    d = c.clone() if in_place else poisoned(torch, (m, n), torch.float32)
    c_arg = d if in_place else c
    call(deep_gemm.fp8_gemm_nt, a_fp8, b_fp8, d, c=c_arg, recipe=(1, 1, 128))
    reference = c.double() + dequantize_per_token(*a_fp8) @ dequantize_per_token(*b_fp8).T
    assert_close(d, reference, FP8_EXACT)


def test_fp8_transposed_views_match_nt():
    m, n, k = 256, 512, 1024
    a_fp8, b_fp8 = deep_gemm.per_token_cast_to_fp8(randn(m, k)), deep_gemm.per_block_cast_to_fp8(randn(n, k))
    expected = poisoned(torch, (m, n), torch.bfloat16)
    call(deep_gemm.fp8_gemm_nt, a_fp8, b_fp8, expected)
    a_t = (a_fp8[0].T, a_fp8[1].T)   # [K, M] views of K-major storage
    b_t = (b_fp8[0].T, b_fp8[1].T)
    for fn, a_arg, b_arg in ((deep_gemm.fp8_gemm_nn, a_fp8, b_t), (deep_gemm.fp8_gemm_tn, a_t, b_t),
                             (deep_gemm.fp8_gemm_tt, a_t, b_fp8)):
        d = poisoned(torch, (m, n), torch.bfloat16)
        call(fn, a_arg, b_arg, d)
        assert torch.equal(d, expected), fn.__name__


def test_fp8_mn_major_operands_are_rejected():
    k, n = 256, 256
    a_fp8 = deep_gemm.per_token_cast_to_fp8(randn(128, k))
    b_kn = deep_gemm.per_block_cast_to_fp8(randn(k, n))   # plain row-major [K, N]: MN-major once transposed
    with pytest.raises(ValueError, match="K-major"):
        call(deep_gemm.fp8_gemm_nn, a_fp8, b_kn, poisoned(torch, (128, n), torch.bfloat16))


@pytest.mark.parametrize("m, splits, heads, k", [(64, (128, 64, 128), 4, 512), (37, (64, 0, 192), 3, 576),
                                                 (5, (0, 32, 128), 2, 256)])
def test_fp8_gemm_nt_skip_head_mid(m, splits, heads, k):
    left, mid, right = splits
    n = heads * (left + right)
    a, b = randn(m, k), randn(n, k)
    a_fp8, b_fp8 = deep_gemm.per_token_cast_to_fp8(a), deep_gemm.per_block_cast_to_fp8(b)
    d = torch.full((m, heads * (left + mid + right)), 17.0, dtype=torch.bfloat16, device="cuda")
    call(deep_gemm.fp8_gemm_nt_skip_head_mid, a_fp8, b_fp8, d, splits)
    plain = poisoned(torch, (m, n), torch.bfloat16)
    call(deep_gemm.fp8_gemm_nt, a_fp8, b_fp8, plain)
    packed, product = d.view(m, heads, left + mid + right), plain.view(m, heads, left + right)
    assert torch.equal(packed[..., :left], product[..., :left])
    assert torch.equal(packed[..., left + mid:], product[..., left:])
    assert bool((packed[..., left:left + mid] == 17.0).all()), "the mid columns must be left as they were"


# ---- FP8 grouped -----------------------------------------------------------------------------------------------

def contiguous_layout(num_groups, expected_m):
    """The anchor's generator: aligned expert segments, -1 on padding rows, zeroed A padding."""
    alignment = deep_gemm.get_mk_alignment_for_contiguous_layout()
    actual = [int(expected_m * random.uniform(0.7, 1.3)) for _ in range(num_groups)]
    aligned = [deep_gemm.align(x, alignment) for x in actual]
    total = sum(aligned)
    m_indices = torch.full((total,), -1, dtype=torch.int32, device="cuda")
    ends, start = [], 0
    for g, (rows, span) in enumerate(zip(actual, aligned)):
        m_indices[start:start + rows] = g
        ends.append(start + rows)
        start += span
    psum = torch.tensor(ends, dtype=torch.int32, device="cuda")
    return actual, aligned, m_indices, psum


@pytest.mark.parametrize("use_psum_layout", [False, True])
def test_m_grouped_fp8_contiguous(use_psum_layout):
    g, expected_m, n, k = 4, 384, 1024, 2048
    actual, aligned, m_indices, psum = contiguous_layout(g, expected_m)
    a = randn(sum(aligned), k)
    a[m_indices < 0] = 0
    b = randn(g, n, k)
    a_fp8 = deep_gemm.per_token_cast_to_fp8(a)
    b_q = [deep_gemm.per_block_cast_to_fp8(b[i]) for i in range(g)]
    b_fp8 = (torch.stack([q for q, _ in b_q]), torch.stack([s for _, s in b_q]))
    d = poisoned(torch, (sum(aligned), n), torch.bfloat16)
    call(deep_gemm.m_grouped_fp8_gemm_nt_contiguous, a_fp8, b_fp8, d, psum if use_psum_layout else m_indices,
         use_psum_layout=use_psum_layout, expected_m_for_psum_layout=expected_m if use_psum_layout else None)
    a64 = dequantize_per_token(*a_fp8)
    start = 0
    for i in range(g):
        rows = slice(start, start + actual[i])
        assert_close(d[rows], a64[rows] @ dequantize_per_block(b_fp8[0][i], b_fp8[1][i]).T, FP8_EXACT)
        gap = d[start + actual[i]:start + aligned[i]]
        if use_psum_layout:
            assert gap.isnan().all(), "gap rows belong to nobody and must not be written"
        else:
            assert (gap == 0).all(), "padding rows (-1) must come out as zeros"
        start += aligned[i]


@pytest.mark.parametrize("segment_alignment", [1, 32])
def test_group_ends_with_a_segment_alignment(segment_alignment):
    """moegemm's own API (through its torch ops): experts' tokens packed with no padding rows (1), or at multiples
    of 32; FP8 and BF16, the rows no expert owns left as they were."""
    from moegemm import torch_ops
    g, n, k = 5, 512, 1024
    sizes = [200, 0, 1, 129, 75]
    ends, start = [], 0
    for rows in sizes:
        ends.append(start + rows)
        start = deep_gemm.align(start + rows, segment_alignment)
    m_total = ends[-1] + 9
    starts = [0] + [deep_gemm.align(e, segment_alignment) for e in ends[:-1]]
    index = torch.tensor(ends, dtype=torch.int32, device="cuda")
    a, b = randn(m_total, k), randn(g, n, k)
    owned = torch.zeros(m_total, dtype=torch.bool, device="cuda")
    for s0, e in zip(starts, ends):
        owned[s0:e] = True

    a_fp8 = deep_gemm.per_token_cast_to_fp8(a)
    b_q = [deep_gemm.per_block_cast_to_fp8(b[i]) for i in range(g)]
    b_fp8 = (torch.stack([q for q, _ in b_q]), torch.stack([s for _, s in b_q]))
    d = poisoned(torch, (m_total, n), torch.bfloat16)
    torch_ops.m_grouped_fp8_gemm_nt_contiguous(a_fp8[0], deep_gemm.get_mn_major_tma_aligned_tensor(a_fp8[1]),
                                               b_fp8[0], b_fp8[1], d, index, True, 0, segment_alignment)
    a64 = dequantize_per_token(*a_fp8)
    for i, (s0, e) in enumerate(zip(starts, ends)):
        if e > s0:
            assert_close(d[s0:e], a64[s0:e] @ dequantize_per_block(b_fp8[0][i], b_fp8[1][i]).T, FP8_EXACT)
    assert d[~owned].isnan().all(), "rows no expert owns must not be written"

    d = poisoned(torch, (m_total, n), torch.bfloat16)
    torch_ops.m_grouped_bf16_gemm_contiguous(a, b, d, index, True, 0, segment_alignment)
    for i, (s0, e) in enumerate(zip(starts, ends)):
        if e > s0:
            assert_close(d[s0:e], a[s0:e].double() @ b[i].double().T, BF16)
    assert d[~owned].isnan().all(), "rows no expert owns must not be written"

    with pytest.raises(ValueError, match=r"layout.segment_alignment: must be a power of two from 1 to 1024"):
        moegemm.m_grouped_bf16_gemm_contiguous(a, b, d, index, group_ends=True, segment_alignment=24)


@pytest.mark.parametrize("capacity", [256, 200])
def test_m_grouped_fp8_masked_writes_only_valid_rows(capacity):
    g, n, k = 4, 1024, 2048
    masked = [random.randint(1, capacity) for _ in range(g)]
    masked[1] = capacity
    masked_m = torch.tensor(masked, dtype=torch.int32, device="cuda")
    a, b = randn(g, capacity, k), randn(g, n, k)
    a_q = deep_gemm.per_token_cast_to_fp8(a.view(-1, k))
    a_fp8 = (a_q[0].view(g, capacity, k), a_q[1].view(g, capacity, -1))
    b_q = [deep_gemm.per_block_cast_to_fp8(b[i]) for i in range(g)]
    b_fp8 = (torch.stack([q for q, _ in b_q]), torch.stack([s for _, s in b_q]))
    d = poisoned(torch, (g, capacity, n), torch.bfloat16)
    call(deep_gemm.m_grouped_fp8_gemm_nt_masked, a_fp8, b_fp8, d, masked_m, int(sum(masked) / g * 1.2))
    for i in range(g):
        reference = dequantize_per_token(a_fp8[0][i], a_fp8[1][i]) @ dequantize_per_block(b_fp8[0][i], b_fp8[1][i]).T
        assert_close(d[i, :masked[i]], reference[:masked[i]], FP8_EXACT)
        # Capacity 200 is no tile multiple: the anchor's tail tile would spill into the next expert's rows.
        assert d[i, masked[i]:].isnan().all(), f"rows past masked_m[{i}] were written"


def k_grouped_fp8_operands(m, n, ks):
    """The anchor's generator for the weight gradients of the experts: A [sum k, M] and B [sum k, N] in BF16,
    tokens first, cast per channel x 128 tokens, each expert's block transposed to K-major [M, k_g] / [N, k_g] and
    the blocks concatenated (1-D); SFA [M, sum k / 128], SFB [N, sum k / 128]. Also returns, per expert, the
    float64 dequantized K-major blocks and the unquantized ones."""
    a_parts, b_parts, sfa_parts, sfb_parts, dequantized, exact = [], [], [], [], [], []
    for kg in ks:
        a_g, b_g = randn(kg, m), randn(kg, n)
        if kg == 0:
            dequantized.append(None)
            exact.append(None)
            continue
        qa, sa = deep_gemm.per_channel_cast_to_fp8(a_g)
        qb, sb = deep_gemm.per_channel_cast_to_fp8(b_g)
        a_parts.append(qa.T.contiguous().view(-1))
        b_parts.append(qb.T.contiguous().view(-1))
        sfa_parts.append(sa)
        sfb_parts.append(sb)
        dq_a = qa.double() * sa.double().repeat_interleave(128, dim=0)   # [k_g, M]
        dq_b = qb.double() * sb.double().repeat_interleave(128, dim=0)   # [k_g, N]
        dequantized.append((dq_a, dq_b))
        exact.append((a_g.double(), b_g.double()))
    a = torch.cat(a_parts)
    b = torch.cat(b_parts)
    sfa, sfb = torch.cat(sfa_parts).T, torch.cat(sfb_parts).T   # [M, sum k / 128], [N, sum k / 128]
    return (a, sfa), (b, sfb), dequantized, exact


@pytest.mark.parametrize("m, n, ks", [(256, 512, [384, 0, 128, 256]),
                                      (198, 136, [128, 512, 256]),     # M: no tile multiple, SFA padded by the drop-in
                                      (128, 256, [0, 256, 0, 128, 0])])
@pytest.mark.parametrize("c_form", ["aliases_d", "distinct"])
def test_k_grouped_fp8_nt(m, n, ks, c_form):
    """deep_gemm.k_grouped_fp8_gemm_nt_contiguous against float64 references: D[g] = C[g] + A_g^T B_g with A_g and
    B_g the dequantized FP8 operands (tight), and against the unquantized BF16 inputs (the anchor's threshold).
    An expert with k_g = 0 keeps D[g] = C[g] bit for bit. No skip for a missing kernel: it must exist."""
    g = len(ks)
    a, b, dequantized, exact = k_grouped_fp8_operands(m, n, ks)
    c = randn(g, m, n, dtype=torch.float32) * 32
    c_before = c.clone()
    if c_form == "aliases_d":
        d = c.clone()
        c_arg = d
    else:
        d = poisoned(torch, (g, m, n), torch.float32)
        c_arg = c
    pointer = d.data_ptr()
    layout = torch.tensor(ks, dtype=torch.int32, device="cuda")
    call_built(deep_gemm.k_grouped_fp8_gemm_nt_contiguous, a, b, d, ks, layout, c=c_arg)
    torch.cuda.synchronize()
    assert d.data_ptr() == pointer
    assert torch.equal(c, c_before), "C was modified"
    for i in range(g):
        if ks[i] == 0:
            assert torch.equal(d[i], c_before[i]), f"expert {i} has k = 0 and must keep D = C"
            continue
        dq_a, dq_b = dequantized[i]
        assert_close(d[i], c_before[i].double() + dq_a.T @ dq_b, FP8_EXACT)
        x_a, x_b = exact[i]
        assert_close(d[i], c_before[i].double() + x_a.T @ x_b, FP8_ANCHOR)


# ---- BF16 ------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("layout", ["nt", "nn", "tn", "tt"])
@pytest.mark.parametrize("out_dtype, accumulate", [(torch.bfloat16, False), (torch.bfloat16, True),
                                                   (torch.float32, False), (torch.float32, True)])
def test_bf16_gemm(layout, out_dtype, accumulate):
    m, n, k = 4096, 2112, 576
    a, b = randn(m, k), randn(n, k)
    a_arg = a if layout[0] == "n" else a.T.contiguous()   # tn/tt take A as [K, M]
    b_arg = b if layout[1] == "t" else b.T.contiguous()   # nn/tn take B as [K, N]
    c = randn(m, n, dtype=out_dtype) * 32 if accumulate else None
    d = c.clone() if accumulate else poisoned(torch, (m, n), out_dtype)
    call(getattr(deep_gemm, f"bf16_gemm_{layout}"), a_arg, b_arg, d, c=d if accumulate else None)
    reference = a.double() @ b.double().T + (c.double() if accumulate else 0)
    assert_close(d, reference, BF16)


@pytest.mark.parametrize("layout", ["nt", "tt"])
def test_bf16_gemm_bf16_d_with_distinct_c(layout):
    # DeepGEMM's semantics: D = C + A @ B^T with C left as it was; the sum is formed in FP32 and rounded once.
    m, n, k = 336, 272, 1000   # no tile multiple; M a multiple of 8 for the [K, M] A of tt
    a, b = randn(m, k), randn(n, k)
    a_arg = a if layout[0] == "n" else a.T.contiguous()
    c = randn(m, n) * 32
    c_before = c.clone()
    d = poisoned(torch, (m, n), torch.bfloat16)
    call(getattr(deep_gemm, f"bf16_gemm_{layout}"), a_arg, b, d, c=c)
    assert torch.equal(c, c_before), "c was written"
    assert_close(d, a.double() @ b.double().T + c.double(), BF16)


@pytest.mark.parametrize("b_layout", ["nt", "nn"])
def test_m_grouped_bf16_contiguous(b_layout):
    g, expected_m, n, k = 4, 384, 1024, 2048
    actual, aligned, m_indices, _ = contiguous_layout(g, expected_m)
    a = randn(sum(aligned), k)
    a[m_indices < 0] = 0
    b = randn(g, n, k)
    b_arg = b if b_layout == "nt" else b.transpose(1, 2).contiguous()
    d = poisoned(torch, (sum(aligned), n), torch.bfloat16)
    call(getattr(deep_gemm, f"m_grouped_bf16_gemm_{b_layout}_contiguous"), a, b_arg, d, m_indices)
    start = 0
    for i in range(g):
        rows = slice(start, start + actual[i])
        assert_close(d[rows], a[rows].double() @ b[i].double().T, BF16)
        assert (d[start + actual[i]:start + aligned[i]] == 0).all()
        start += aligned[i]


def test_m_grouped_bf16_masked():
    g, capacity, n, k = 6, 320, 1024, 1024
    masked = [random.randint(0, capacity) for _ in range(g)]
    masked_m = torch.tensor(masked, dtype=torch.int32, device="cuda")
    a, b = randn(g, capacity, k), randn(g, n, k)
    d = poisoned(torch, (g, capacity, n), torch.bfloat16)
    call(deep_gemm.m_grouped_bf16_gemm_nt_masked, a, b, d, masked_m, max(1, sum(masked) // g))
    for i in range(g):
        if masked[i]:
            assert_close(d[i, :masked[i]], a[i, :masked[i]].double() @ b[i].double().T, BF16)
        assert d[i, masked[i]:].isnan().all()


def test_k_grouped_bf16_tn():
    m, n = 512, 768
    ks = [256, 0, 640, 128]
    a, b = randn(sum(ks), m), randn(sum(ks), n)
    c = randn(len(ks), m, n, dtype=torch.float32) * 32
    d = c.clone()
    call(deep_gemm.k_grouped_bf16_gemm_tn_contiguous, a, b, d, ks, torch.tensor(ks, dtype=torch.int32,
                                                                                 device="cuda"), c=d)
    start = 0
    for i, kg in enumerate(ks):
        reference = c[i].double() + a[start:start + kg].double().T @ b[start:start + kg].double()
        if kg == 0:
            assert torch.equal(d[i], c[i])
        else:
            assert_close(d[i], reference, BF16)
        start += kg


# ---- the cuBLASLt baseline (torch's cuBLAS GEMMs behind the anchor's names) ------------------------------------

@pytest.mark.parametrize("layout", ["nt", "nn", "tn", "tt"])
@pytest.mark.parametrize("d_dtype", [torch.bfloat16, torch.float32])
@pytest.mark.parametrize("with_c", [False, True])
def test_cublaslt_baseline_bf16(layout, d_dtype, with_c):
    m, n, k = 264, 576, 384
    a, b = randn(m, k), randn(n, k)  # the product is A @ B^T whatever the storage
    a_arg = a if layout[0] == "n" else a.T.contiguous()
    b_arg = b if layout[1] == "t" else b.T.contiguous()
    c = randn(m, n, dtype=d_dtype) * 8 if with_c else None
    d = poisoned(torch, (m, n), d_dtype)
    call(getattr(deep_gemm, f"cublaslt_gemm_{layout}"), a_arg, b_arg, d, c=c)
    reference = a.double() @ b.double().T + (c.double() if with_c else 0)
    assert_close(d, reference, BF16)


def test_cublaslt_baseline_fp8_unscaled_with_c_in_place():
    m, n, k = 128, 256, 512
    a8, b8 = randn(m, k).to(torch.float8_e4m3fn), randn(n, k).to(torch.float8_e4m3fn)
    d = randn(m, n)
    c = d.clone()
    call(deep_gemm.cublaslt_gemm_nt, a8, b8, d, c=d)
    assert_close(d, c.double() + a8.double() @ b8.double().T, BF16)


# ---- streams, graphs, compile, knobs ---------------------------------------------------------------------------

class GemmProblem:
    """A GEMM of `kind` ("fp8": the 1D2D recipe, or "bf16") with a NaN-poisoned BF16 output `d`. run(out) computes
    into `out` on the current stream; refresh() writes new random inputs in place (the tensors a captured graph
    reads) and returns the new float64 reference."""

    def __init__(self, kind, m=1024, n=1024, k=1024):
        self.kind = kind
        self.a, self.b = randn(m, k), randn(n, k)
        self.d = poisoned(torch, (m, n), torch.bfloat16)
        self.threshold = FP8_EXACT if kind == "fp8" else BF16
        if kind == "fp8":
            self.a_fp8, self.b_fp8 = deep_gemm.per_token_cast_to_fp8(self.a), deep_gemm.per_block_cast_to_fp8(self.b)
        self.reference = self._reference()

    def _reference(self):
        if self.kind == "fp8":
            return dequantize_per_token(*self.a_fp8) @ dequantize_per_block(*self.b_fp8).T
        return self.a.double() @ self.b.double().T

    def run(self, out):
        if self.kind == "fp8":
            return deep_gemm.fp8_gemm_nt(self.a_fp8, self.b_fp8, out)
        return deep_gemm.bf16_gemm_nt(self.a, self.b, out)

    def refresh(self):
        self.a.copy_(randn(*self.a.shape))
        if self.kind == "fp8":
            values, scales = deep_gemm.per_token_cast_to_fp8(self.a)
            self.a_fp8[0].copy_(values)
            self.a_fp8[1].copy_(scales)
        self.reference = self._reference()
        return self.reference


def _gemm_problem(kind, m=1024, n=1024, k=1024):
    p = GemmProblem(kind, m, n, k)
    return p.run, p.d, p.reference, p.threshold


GEMM_KINDS = ["fp8", "bf16"]


@pytest.mark.parametrize("kind", GEMM_KINDS)
def test_launches_go_on_the_current_stream(kind):
    run, d, reference, threshold = _gemm_problem(kind)
    call(run, d)   # warm-up: compile outside the timed part
    torch.cuda.synchronize()
    d.fill_(float("nan"))
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        torch.cuda._sleep(200_000_000)   # keeps `side` busy for a long while
        run(d)
    # The default stream does not wait for `side`: if the GEMM had gone there, d would already be written.
    snapshot = d.clone()
    torch.cuda.synchronize()
    assert snapshot.isnan().all(), "the GEMM did not wait behind the side stream's work"
    assert_close(d, reference, threshold)


@pytest.mark.parametrize("kind", GEMM_KINDS)
def test_cuda_graph_capture_and_replay(kind):
    p = GemmProblem(kind)
    call(p.run, p.d)          # eager first: the kernel compiles outside the capture
    assert_close(p.d, p.reference, p.threshold)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        p.run(p.d)
    for _ in range(2):
        reference = p.refresh()   # new inputs, written in place into the tensors the graph reads
        p.d.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        assert_close(p.d, reference, p.threshold)


@pytest.mark.parametrize("kind", GEMM_KINDS)
def test_compiled_model_matches_eager(kind):
    m, n, k = 512, 1024, 2048
    w = randn(n, k)
    w_fp8 = deep_gemm.per_block_cast_to_fp8(w)

    def layer(x):
        y = torch.empty(x.shape[0], n, dtype=torch.bfloat16, device=x.device)
        if kind == "fp8":
            deep_gemm.fp8_gemm_nt(deep_gemm.per_token_cast_to_fp8(x), w_fp8, y)
        else:
            deep_gemm.bf16_gemm_nt(x, w, y)
        return y.float() * 2.0

    x = randn(m, k)
    try:
        eager = layer(x)
    except NotImplementedError as error:
        pytest.skip(f"C++ kernel not built yet: {error}")
    compiled = torch.compile(layer, fullgraph=True)(x)
    assert torch.equal(compiled, eager)


@pytest.mark.parametrize("kind", GEMM_KINDS)
def test_num_sms_any_value_including_odd(kind):
    sm_count = moegemm.device_info().sm_count
    run, d, reference, threshold = _gemm_problem(kind)
    call(run, d)
    assert_close(d, reference, threshold)
    expected = d.clone()
    try:
        for num_sms in (sm_count - 1, 1, 7, sm_count):
            deep_gemm.set_num_sms(num_sms)
            assert deep_gemm.get_num_sms() == num_sms
            d.fill_(float("nan"))
            run(d)
            torch.cuda.synchronize()
            assert torch.equal(d, expected), f"num_sms={num_sms} changed the result"
        with pytest.raises(ValueError):
            deep_gemm.set_num_sms(sm_count + 1)
        with pytest.raises(ValueError):
            deep_gemm.set_num_sms(-1)
    finally:
        deep_gemm.set_num_sms(0)
    assert deep_gemm.get_num_sms() == sm_count


@pytest.mark.parametrize("kind", GEMM_KINDS)
def test_pdl_keeps_results(kind):
    run, d, reference, threshold = _gemm_problem(kind)
    call(run, d)
    expected = d.clone()
    try:
        deep_gemm.set_pdl(True)
        assert deep_gemm.get_pdl() is True
        d.fill_(float("nan"))
        run(d)
        torch.cuda.synchronize()
        assert torch.equal(d, expected)
    finally:
        deep_gemm.set_pdl(False)
    assert deep_gemm.get_pdl() is False
