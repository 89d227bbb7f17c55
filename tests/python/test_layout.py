"""Layout utilities of the drop-in, in their numpy form, against the C++ rule and direct index arithmetic."""

import pytest

import moegemm
import moegemm.deep_gemm as deep_gemm

np = pytest.importorskip("numpy", reason="the numpy forms of the layout utilities need numpy")


@pytest.mark.parametrize("element_size", [1, 2, 4, 8, 16])
def test_tma_aligned_size_matches_the_cpp_rule(element_size):
    for x in range(0, 70):
        expected = moegemm.tma_aligned_size(x, element_size)
        assert deep_gemm.get_tma_aligned_size(x, element_size) == expected
        assert expected % (16 // element_size) == 0 and x <= expected < x + 16 // element_size


def test_tma_aligned_size_known_values_and_rejections():
    assert [deep_gemm.get_tma_aligned_size(x, 4) for x in (1, 4, 5, 4097)] == [4, 4, 8, 4100]
    for bad in (0, 3, 32):
        with pytest.raises(ValueError, match="element_size: must divide 16"):
            deep_gemm.get_tma_aligned_size(8, bad)
        with pytest.raises(ValueError, match="element_size: must divide 16"):
            moegemm.tma_aligned_size(8, bad)


def _check_mn_major(out, sf):
    aligned = deep_gemm.get_tma_aligned_size(sf.shape[-2], 4)
    wanted = (1, aligned) if sf.ndim == 2 else (aligned * sf.shape[-1], 1, aligned)
    # The stride of an extent-1 dimension is never used, so it may be anything.
    strides = tuple(s // 4 if n > 1 else w for s, n, w in zip(out.strides, out.shape, wanted))
    assert strides == wanted
    assert out.shape == sf.shape and out.dtype == np.float32
    assert np.array_equal(out, sf)


@pytest.mark.parametrize("shape", [(4096, 56), (4097, 57), (1, 1), (5, 3), (2, 4097, 1), (4, 127, 3)])
def test_mn_major_tma_aligned_tensor_keeps_values_with_the_required_strides(shape):
    sf = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    _check_mn_major(deep_gemm.get_mn_major_tma_aligned_tensor(sf), sf)


def test_mn_major_tma_aligned_tensor_returns_a_conforming_input_itself():
    sf = np.random.default_rng(2).standard_normal((7, 8)).astype(np.float32)
    once = deep_gemm.get_mn_major_tma_aligned_tensor(sf)
    assert deep_gemm.get_mn_major_tma_aligned_tensor(once) is once
    aligned_input = np.asfortranarray(np.random.default_rng(3).standard_normal((8, 3)).astype(np.float32))
    assert deep_gemm.get_mn_major_tma_aligned_tensor(aligned_input) is aligned_input


def test_mn_major_tma_aligned_tensor_rejects_bad_inputs():
    with pytest.raises(ValueError, match="sf: dtype must be float32"):
        deep_gemm.get_mn_major_tma_aligned_tensor(np.zeros((4, 4), np.float64))
    with pytest.raises(ValueError, match="sf: must be 2-D"):
        deep_gemm.get_mn_major_tma_aligned_tensor(np.zeros(4, np.float32))


def test_transform_sf_per_row_becomes_mn_major():
    sf = np.random.default_rng(4).random((100, 3)).astype(np.float32)
    out = deep_gemm.transform_sf_into_required_layout(sf, mn=100, k=300, recipe=(1, 128, 128), is_sfa=True)
    _check_mn_major(out, sf)
    grouped = np.random.default_rng(5).random((2, 100, 3)).astype(np.float32)
    out = deep_gemm.transform_sf_into_required_layout(grouped, 100, 300, (1, 128), num_groups=2)
    _check_mn_major(out, grouped)


def test_transform_sf_per_block_is_checked_and_returned():
    sf = np.ones((2, 3), np.float32)
    assert deep_gemm.transform_sf_into_required_layout(sf, 256, 384, (1, 128, 128), is_sfa=False) is sf
    with pytest.raises(ValueError, match=r"sf: shape must be \(3, 3\)"):
        deep_gemm.transform_sf_into_required_layout(sf, 257, 384, (128, 128))


def test_transform_sf_rejects_what_sm90_cannot_read():
    sf = np.ones((4, 1), np.float32)
    with pytest.raises(ValueError, match="is_sfa: required"):
        deep_gemm.transform_sf_into_required_layout(sf, 4, 128, (1, 128, 128))
    with pytest.raises(ValueError, match="is_sfa: must be None"):
        deep_gemm.transform_sf_into_required_layout(sf, 4, 128, (1, 128), is_sfa=True)
    with pytest.raises(ValueError, match=r"recipe: SM90 scale factors .* got \(1, 64\)"):
        deep_gemm.transform_sf_into_required_layout(np.ones((4, 2), np.float32), 4, 128, (1, 64))
    with pytest.raises(NotImplementedError, match="UE8M0"):
        deep_gemm.transform_sf_into_required_layout(np.ones((4, 1), np.int32), 4, 128, (1, 128))


def test_contiguous_alignment_defaults_and_validation():
    assert deep_gemm.get_mk_alignment_for_contiguous_layout() == 128
    assert deep_gemm.get_theoretical_mk_alignment_for_contiguous_layout() == 128
    assert deep_gemm.get_theoretical_mk_alignment_for_contiguous_layout(expected_m=7) == 128
    assert deep_gemm.get_m_alignment_for_contiguous_layout is deep_gemm.get_mk_alignment_for_contiguous_layout
    assert deep_gemm.get_k_alignment_for_contiguous_layout is deep_gemm.get_mk_alignment_for_contiguous_layout
    try:
        deep_gemm.set_mk_alignment_for_contiguous_layout(256)
        assert deep_gemm.get_mk_alignment_for_contiguous_layout() == 256
        for bad in (0, 64, 129, -128, "128", True, 128.0):
            with pytest.raises(ValueError, match="alignment: must be a positive multiple of 128"):
                deep_gemm.set_mk_alignment_for_contiguous_layout(bad)
        assert deep_gemm.get_mk_alignment_for_contiguous_layout() == 256
    finally:
        deep_gemm.set_mk_alignment_for_contiguous_layout(128)


def test_ceil_div_and_align():
    assert [deep_gemm.ceil_div(x, 128) for x in (0, 1, 128, 129)] == [0, 1, 1, 2]
    assert [deep_gemm.align(x, 128) for x in (0, 1, 128, 129)] == [0, 128, 128, 256]
