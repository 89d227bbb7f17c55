"""The torch side without a GPU: custom ops, torch forms of the helpers, the drop-in's own argument checks and
early returns, and a torch.compile(fullgraph=True) trace through the fake implementations."""

import pytest

torch = pytest.importorskip("torch", reason="the torch integration needs torch")
np = pytest.importorskip("numpy", reason="cross-checks against the numpy forms need numpy")

import moegemm  # noqa: E402
import moegemm.deep_gemm as deep_gemm  # noqa: E402
from moegemm import _moegemm, torch_ops  # noqa: E402
from moegemm.fp8 import e4m3_to_float, float_to_e4m3  # noqa: E402

OPS = ["fp8_gemm_nt", "m_grouped_fp8_gemm_nt_contiguous", "m_grouped_fp8_gemm_nt_masked",
       "fp8_gemm_nt_1d1d_accumulate", "k_grouped_fp8_gemm_nt_accumulate", "bf16_gemm",
       "m_grouped_bf16_gemm_contiguous", "m_grouped_bf16_gemm_masked", "k_grouped_bf16_gemm_tn_accumulate"]


@pytest.mark.parametrize("name", OPS)
def test_custom_ops_are_registered_and_mutate_d(name):
    op = getattr(torch.ops.moegemm, name).default
    mutated = [a.name for a in op._schema.arguments if a.alias_info is not None and a.alias_info.is_write]
    assert mutated == ["d"]
    assert len(op._schema.returns) == 0


def test_numpy_codec_agrees_with_torch_e4m3fn():
    codes = torch.arange(256, dtype=torch.int32).to(torch.uint8)
    from_torch = codes.view(torch.float8_e4m3fn).float().numpy()
    assert np.array_equal(np.isnan(from_torch), np.isnan(e4m3_to_float(codes.numpy())))
    finite = ~np.isnan(from_torch)
    assert np.array_equal(from_torch[finite], e4m3_to_float(codes.numpy())[finite])
    x = torch.empty(50000).uniform_(-448, 448, generator=torch.Generator().manual_seed(0))
    x[:100] *= 1e-3  # subnormals
    assert np.array_equal(x.to(torch.float8_e4m3fn).view(torch.uint8).numpy(), float_to_e4m3(x.numpy()))


@pytest.mark.parametrize("cast", ["per_token_cast_to_fp8", "per_block_cast_to_fp8", "per_channel_cast_to_fp8"])
def test_torch_and_numpy_casts_agree(cast):
    x = torch.randn(256, 384, generator=torch.Generator().manual_seed(1))
    q_t, sf_t = getattr(deep_gemm, cast)(x.to(torch.bfloat16))
    q_n, sf_n = getattr(deep_gemm, cast)(x.to(torch.bfloat16).float().numpy())
    assert q_t.dtype == torch.float8_e4m3fn and sf_t.dtype == torch.float32
    assert np.array_equal(sf_t.numpy(), sf_n)
    # Multiplying by 1/sf can land on the other side of a rounding boundary than numpy's float64 product does.
    mismatch = (q_t.view(torch.uint8).numpy() != q_n).mean()
    assert mismatch < 1e-3


def test_torch_mn_major_layout_and_identity():
    sf = torch.randn(3, 130, 5)
    out = deep_gemm.get_mn_major_tma_aligned_tensor(sf)
    assert out.stride() == (132 * 5, 1, 132) and torch.equal(out, sf)
    assert deep_gemm.get_mn_major_tma_aligned_tensor(out) is out


def test_torch_tensors_cross_without_copies():
    t = torch.randn(64, 32, dtype=torch.bfloat16).T
    view = _moegemm._tensor_view(t, "a")
    assert view["dtype"] == "bfloat16" and view["data"] == t.data_ptr()
    assert view["shape"] == (32, 64) and view["strides"] == (1, 32)
    fp8 = torch.zeros(4, 128, dtype=torch.float8_e4m3fn)
    assert _moegemm._tensor_view(fp8.view(torch.uint8))["dtype"] == "float8_e4m3"
    try:
        direct = _moegemm._tensor_view(fp8)
    except ValueError as error:
        pytest.skip(f"this torch does not export float8 through DLPack: {error}")
    assert direct["dtype"] == "float8_e4m3"


def test_ops_on_host_tensors_raise_the_binding_error():
    a = torch.zeros(128, 128, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="a: must be in CUDA device memory, got cpu memory"):
        torch_ops.bf16_gemm(a, a, torch.zeros(128, 128), False)


def _fp8(m, k):
    return deep_gemm.per_token_cast_to_fp8(torch.randn(m, k, dtype=torch.bfloat16))


def test_drop_in_rejects_what_the_anchor_miscomputes_or_refuses():
    a, b = _fp8(128, 256), deep_gemm.per_block_cast_to_fp8(torch.randn(256, 256, dtype=torch.bfloat16))
    d = torch.empty(128, 256, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match=r"recipe: SM90 FP8 supports .* got \(128, 128, 128\)"):
        deep_gemm.fp8_gemm_nt(a, b, d, recipe=(128, 128, 128))
    with pytest.raises(ValueError, match="c: recipe \\(1, 128, 128\\) computes BF16"):
        deep_gemm.fp8_gemm_nt(a, b, d, c=d)
    with pytest.raises(ValueError, match="d: recipe \\(1, 128, 128\\) writes bfloat16"):
        deep_gemm.fp8_gemm_nt(a, b, d.float())
    with pytest.raises(ValueError, match="c: recipe \\(1, 1, 128\\) .* needs c"):
        deep_gemm.fp8_gemm_nt(a, b, d.float(), recipe=(1, 1, 128))
    with pytest.raises(ValueError, match="recipe: give either recipe"):
        deep_gemm.fp8_gemm_nt(a, b, d, recipe=(1, 128, 128), recipe_a=(1, 128), recipe_b=(128, 128))
    with pytest.raises(ValueError, match="a: must be a \\(data, scale_factors\\) pair"):
        deep_gemm.fp8_gemm_nt(a[0], b, d)
    with pytest.raises(ValueError, match=r"d: shape must be \(128, 256\)"):
        deep_gemm.fp8_gemm_nt(a, b, d[:, :128])
    with pytest.raises(ValueError, match="expected_m: must be > 0"):
        deep_gemm.m_grouped_bf16_gemm_nt_masked(torch.empty(2, 128, 64, dtype=torch.bfloat16),
                                                torch.empty(2, 64, 64, dtype=torch.bfloat16),
                                                torch.empty(2, 128, 64, dtype=torch.bfloat16),
                                                torch.zeros(2, dtype=torch.int32), 0)
    with pytest.raises(NotImplementedError, match="SM100-only"):
        deep_gemm.k_grouped_fp8_gemm_tn_contiguous(a, b, d, [128], torch.zeros(1, dtype=torch.int32))
    with pytest.raises(NotImplementedError, match="psum"):
        deep_gemm.k_grouped_bf16_gemm_tn_contiguous(d, d, d, [128], None, c=d, use_psum_layout=True)
    with pytest.raises(ValueError, match="ks_cpu: the per-group K list is required"):
        deep_gemm.k_grouped_bf16_gemm_tn_contiguous(d, d, torch.zeros(1, 4, 4), [], None, c=torch.zeros(1, 4, 4))
    with pytest.raises(ValueError, match="expected_m_for_psum_layout: only meaningful"):
        deep_gemm.m_grouped_bf16_gemm_nt_contiguous(d, torch.empty(1, 4, 256, dtype=torch.bfloat16), d,
                                                    torch.zeros(128, dtype=torch.int32),
                                                    expected_m_for_psum_layout=64)


def test_cublaslt_baseline_checks_its_arguments_before_any_launch():
    a, b = torch.randn(8, 32, dtype=torch.bfloat16), torch.randn(16, 32, dtype=torch.bfloat16)
    d = torch.empty(8, 16, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="a, b: K must match, got 32 and 16"):
        deep_gemm.cublaslt_gemm_nt(a, b[:, :16], d)
    with pytest.raises(ValueError, match="a, b: one dtype of bfloat16, float32 or float8_e4m3fn"):
        deep_gemm.cublaslt_gemm_nt(a, b.float(), d)
    with pytest.raises(ValueError, match=r"d: shape must be \(8, 24\)"):
        deep_gemm.cublaslt_gemm_nn(a, torch.randn(32, 24, dtype=torch.bfloat16), d)  # nn takes B as [K, N]
    with pytest.raises(ValueError, match="d: float32 inputs give a float32 d"):
        deep_gemm.cublaslt_gemm_nt(a.float(), b.float(), d)
    with pytest.raises(ValueError, match="c: dtype must be d's"):
        deep_gemm.cublaslt_gemm_nt(a, b, d, c=d.float())
    a8, b8 = a.to(torch.float8_e4m3fn), b.to(torch.float8_e4m3fn)
    with pytest.raises(NotImplementedError, match="FP8 cuBLASLt GEMMs take K-major A and B only"):
        deep_gemm.cublaslt_gemm_tn(a8.T.contiguous(), b8.T.contiguous(), d)
    with pytest.raises(ValueError, match="K and N multiples of 16"):
        deep_gemm.cublaslt_gemm_nt(a8[:, :24], b8[:, :24], d)
    with pytest.raises(ValueError, match="a, b, d: must be CUDA tensors"):
        deep_gemm.cublaslt_gemm_tt(a.T.contiguous(), b, d)


def test_skip_head_mid_checks_its_splits_and_d():
    a = _fp8(4, 256)
    b = deep_gemm.per_block_cast_to_fp8(torch.randn(512, 256, dtype=torch.bfloat16))
    d = torch.empty(4, 640, dtype=torch.bfloat16)  # 2 heads of 128 + 64 + 128
    with pytest.raises(ValueError, match="B's N \\(512\\) must be a multiple of left \\+ right \\(228\\)"):
        deep_gemm.fp8_gemm_nt_skip_head_mid(a, b, d, (128, 64, 100))
    with pytest.raises(ValueError, match=r"d: shape must be \(4, 640\)"):
        deep_gemm.fp8_gemm_nt_skip_head_mid(a, b, d[:, :512], (128, 64, 128))
    with pytest.raises(ValueError, match="head_splits: must be \\(left, mid, right\\)"):
        deep_gemm.fp8_gemm_nt_skip_head_mid(a, b, d, (128, 64))
    with pytest.raises(ValueError, match="head_splits: must be"):
        deep_gemm.fp8_gemm_nt_skip_head_mid(a, b, d, (0, 64, 0))
    with pytest.raises(ValueError, match="recipe \\(1, 128, 128\\) only"):
        deep_gemm.fp8_gemm_nt_skip_head_mid(a, b, d, (128, 64, 128), recipe=(1, 1, 128))
    with pytest.raises(ValueError, match="d: recipe \\(1, 128, 128\\) writes bfloat16"):
        deep_gemm.fp8_gemm_nt_skip_head_mid(a, b, d.float(), (128, 64, 128))


def test_drop_in_early_returns_follow_the_anchor():
    poison = torch.full((4, 8), float("nan"))
    d = poison.clone()
    assert deep_gemm.bf16_gemm_nt(torch.empty(0, 16, dtype=torch.bfloat16), torch.empty(8, 16, dtype=torch.bfloat16),
                                  torch.empty(0, 8)) is None
    # k == 0: D = C, or zeros without C; no kernel runs, so this works on host tensors.
    a0, b0 = torch.empty(4, 0, dtype=torch.bfloat16), torch.empty(8, 0, dtype=torch.bfloat16)
    assert deep_gemm.bf16_gemm_nt(a0, b0, d) is None and torch.equal(d, torch.zeros(4, 8))
    c = torch.randn(4, 8)
    deep_gemm.bf16_gemm_tn(a0.T, b0.T, d, c=c)
    assert torch.equal(d, c)
    d1 = poison.clone()
    deep_gemm.fp8_gemm_nt((torch.empty(4, 0, dtype=torch.float8_e4m3fn), torch.empty(4, 0)),
                          (torch.empty(8, 0, dtype=torch.float8_e4m3fn), torch.empty(8, 0)), d1, c=c,
                          recipe=(1, 1, 128))
    assert torch.equal(d1, c)
    d2 = torch.zeros(2, 4, 8)
    c2 = torch.randn(2, 4, 8)
    deep_gemm.k_grouped_bf16_gemm_tn_contiguous(torch.empty(0, 4, dtype=torch.bfloat16),
                                                torch.empty(0, 8, dtype=torch.bfloat16), d2, [0, 0],
                                                torch.zeros(2, dtype=torch.int32), c=c2)
    assert torch.equal(d2, c2)
    # The 2.5.0 keyword spelling (ks, ks_tensor) is accepted too.
    d3 = torch.zeros(2, 4, 8)
    deep_gemm.k_grouped_bf16_gemm_tn_contiguous(torch.empty(0, 4, dtype=torch.bfloat16),
                                                torch.empty(0, 8, dtype=torch.bfloat16), d3,
                                                ks=[0, 0], ks_tensor=torch.zeros(2, dtype=torch.int32), c=c2)
    assert torch.equal(d3, c2)


class _Traced(Exception):
    pass


def _trace(fn, *args):
    """Compile fn with fullgraph=True (a graph break raises) and return the FX graph, without running it."""
    graphs = []

    def backend(gm, example_inputs):
        graphs.append(gm)

        def refuse(*runtime_args):
            raise _Traced()

        return refuse

    torch._dynamo.reset()
    with pytest.raises(_Traced):
        torch.compile(fn, backend=backend, fullgraph=True)(*args)
    assert len(graphs) == 1
    return [node.target for node in graphs[0].graph.nodes if node.op == "call_function"]


def test_compile_traces_bf16_and_fp8_gemms_without_graph_breaks():
    m, n, k = 64, 256, 256

    def model(x, w_bf16, w_fp8, w_sf):
        d_bf16 = torch.empty(m, n, dtype=torch.bfloat16)
        deep_gemm.bf16_gemm_nt(x, w_bf16, d_bf16)
        x_fp8 = deep_gemm.per_token_cast_to_fp8(x)
        d_fp8 = torch.empty(m, n, dtype=torch.bfloat16)
        deep_gemm.fp8_gemm_nt(x_fp8, (w_fp8, w_sf), d_fp8)
        acc = torch.zeros(m, n)
        deep_gemm.fp8_gemm_nt(x_fp8, deep_gemm.per_token_cast_to_fp8(w_bf16), acc, c=acc, recipe=(1, 1, 128))
        return d_bf16 + d_fp8 + acc

    w = torch.randn(n, k, dtype=torch.bfloat16)
    w_fp8, w_sf = deep_gemm.per_block_cast_to_fp8(w)
    targets = _trace(model, torch.randn(m, k, dtype=torch.bfloat16), w, w_fp8, w_sf)
    assert torch.ops.moegemm.bf16_gemm.default in targets
    assert torch.ops.moegemm.fp8_gemm_nt.default in targets
    assert torch.ops.moegemm.fp8_gemm_nt_1d1d_accumulate.default in targets


def test_compile_traces_grouped_gemms_without_graph_breaks():
    g, cap, n, k = 2, 128, 128, 128

    def model(a, b, index, masked_m, ks_device):
        d = torch.empty(g * cap, n, dtype=torch.bfloat16)
        deep_gemm.m_grouped_bf16_gemm_nt_contiguous(a.view(g * cap, k), b, d, index)
        dm = torch.empty(g, cap, n, dtype=torch.bfloat16)
        deep_gemm.m_grouped_bf16_gemm_nt_masked(a, b, dm, masked_m, 64)
        a_fp8 = deep_gemm.per_token_cast_to_fp8(a.view(g * cap, k))
        b_fp8 = (b.to(torch.float8_e4m3fn), torch.ones(g, n // 128, k // 128))
        deep_gemm.m_grouped_fp8_gemm_nt_masked((a_fp8[0].view(g, cap, k), a_fp8[1].view(g, cap, 1)), b_fp8, dm,
                                               masked_m, 64)
        acc = torch.zeros(g, cap, n)
        deep_gemm.k_grouped_bf16_gemm_tn_contiguous(a.view(g * cap, k), b.view(g * n, k), acc, [128, 128],
                                                    ks_device, c=acc)
        return d, dm, acc

    targets = _trace(model, torch.randn(g, cap, k, dtype=torch.bfloat16), torch.randn(g, n, k, dtype=torch.bfloat16),
                     torch.zeros(g * cap, dtype=torch.int32), torch.full((g,), 64, dtype=torch.int32),
                     torch.full((g,), 128, dtype=torch.int32))
    for name in ("m_grouped_bf16_gemm_contiguous", "m_grouped_bf16_gemm_masked", "m_grouped_fp8_gemm_nt_masked",
                 "k_grouped_bf16_gemm_tn_accumulate"):
        assert getattr(torch.ops.moegemm, name).default in targets, name


def test_contiguous_ops_take_the_segment_alignment_with_the_default_of_the_c_api():
    for op in (torch.ops.moegemm.m_grouped_fp8_gemm_nt_contiguous, torch.ops.moegemm.m_grouped_bf16_gemm_contiguous):
        schema = str(op.default._schema)
        assert f"segment_alignment={moegemm.CONTIGUOUS_ALIGNMENT}" in schema, schema
    assert moegemm.MAX_SEGMENT_ALIGNMENT == 1024
