"""The package imports without torch or a GPU, reports its version and device state, and ships stubs that match
the extension."""

import ast
import pathlib
import re

import pytest

import moegemm
import moegemm.deep_gemm as deep_gemm
from moegemm import _moegemm

REPO = pathlib.Path(__file__).resolve().parents[2]


def test_version_matches_the_project_version():
    cmake = (REPO / "CMakeLists.txt").read_text()
    project_version = re.search(r"project\(moegemm VERSION ([0-9.]+)", cmake).group(1)
    pyproject = (REPO / "pyproject.toml").read_text()
    assert re.search(r'^version = "([0-9.]+)"', pyproject, re.M).group(1) == project_version
    assert moegemm.__version__ == project_version
    assert moegemm.version() == project_version


def test_device_info_says_why_there_is_no_device():
    info = moegemm.device_info()
    assert isinstance(info.available, bool)
    if info.available:
        assert info.sm_count > 0 and (info.major, info.minor) == (9, 0)
        assert "available=True" in repr(info)
    else:
        assert "no CUDA" in info.reason
        assert info.sm_count == 0 and info.ordinal == -1
        assert "available=False" in repr(info)


def _stub_names():
    tree = ast.parse((pathlib.Path(moegemm.__file__).parent / "_moegemm.pyi").read_text())
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.AnnAssign):
            names.add(node.target.id)
    return names - {"Tensor"}


def test_stubs_describe_exactly_the_extension():
    module_names = {name for name in dir(_moegemm) if not name.startswith("__")}
    assert _stub_names() == module_names


def test_package_ships_py_typed():
    assert (pathlib.Path(moegemm.__file__).parent / "py.typed").exists()


ANCHOR_NAMES = """
fp8_gemm_nt fp8_gemm_nn fp8_gemm_tn fp8_gemm_tt fp8_gemm_nt_skip_head_mid fp8_fp4_gemm_nt fp8_fp4_gemm_nn fp8_fp4_gemm_tn fp8_fp4_gemm_tt
m_grouped_fp8_gemm_nt_contiguous m_grouped_fp8_gemm_nn_contiguous m_grouped_fp8_gemm_nt_masked
m_grouped_fp8_fp4_gemm_nt_contiguous m_grouped_fp8_fp4_gemm_nn_contiguous m_grouped_fp8_fp4_gemm_nt_masked
k_grouped_fp8_gemm_nt_contiguous k_grouped_fp8_gemm_tn_contiguous
bf16_gemm_nt bf16_gemm_nn bf16_gemm_tn bf16_gemm_tt m_grouped_bf16_gemm_nt_contiguous
m_grouped_bf16_gemm_nn_contiguous m_grouped_bf16_gemm_nt_masked k_grouped_bf16_gemm_tn_contiguous
fp8_m_grouped_gemm_nt_masked bf16_m_grouped_gemm_nt_masked
get_tma_aligned_size get_mn_major_tma_aligned_tensor transform_sf_into_required_layout
cublaslt_gemm_nt cublaslt_gemm_nn cublaslt_gemm_tn cublaslt_gemm_tt
get_mk_alignment_for_contiguous_layout set_mk_alignment_for_contiguous_layout
get_m_alignment_for_contiguous_layout get_k_alignment_for_contiguous_layout
get_theoretical_mk_alignment_for_contiguous_layout
set_num_sms get_num_sms set_pdl get_pdl set_tc_util get_tc_util set_ignore_compile_dims set_block_size_multiple_of
per_token_cast_to_fp8 per_block_cast_to_fp8 per_channel_cast_to_fp8 ceil_div align calc_diff
""".split()


def test_drop_in_has_the_anchor_names():
    missing = [name for name in ANCHOR_NAMES if not callable(getattr(deep_gemm, name, None))]
    assert missing == []
    assert callable(deep_gemm.testing.calc_diff) and callable(deep_gemm.testing.bench)
    assert deep_gemm.utils.per_token_cast_to_fp8 is deep_gemm.per_token_cast_to_fp8


def test_drop_in_aliases_are_the_same_functions():
    pytest.importorskip("torch", reason="without torch the GEMM names are placeholders that ask for torch")
    assert deep_gemm.fp8_fp4_gemm_nt is deep_gemm.fp8_gemm_nt
    assert deep_gemm.fp8_m_grouped_gemm_nt_masked is deep_gemm.m_grouped_fp8_gemm_nt_masked
    assert deep_gemm.bf16_m_grouped_gemm_nt_masked is deep_gemm.m_grouped_bf16_gemm_nt_masked


def test_without_torch_the_gemms_ask_for_torch():
    try:
        import torch  # noqa: F401
    except ModuleNotFoundError:
        with pytest.raises(ModuleNotFoundError, match="install torch"):
            deep_gemm.fp8_gemm_nt(None, None, None)
    else:
        pytest.skip("torch is installed: the GEMMs are the real ones")


def test_plans_are_printable_for_every_family():
    # The planner needs no device: each family's plan is a runnable configuration with its own K step.
    fp8 = moegemm.plan_fp8_gemm_nt(4096, 7168, 2048)
    assert fp8.block_k == 128 and fp8.block_m in (64, 128, 256)
    # The m-grouped forms by layout: row-to-group is planned without 256-row tiles (docs/heuristics.md).
    ends = moegemm.plan_fp8_gemm_nt(4 * 4096, 4096, 2048, 4, 4096)
    idx = moegemm.plan_fp8_gemm_nt(4 * 4096, 4096, 2048, 4, 4096, layout="contiguous")
    assert ends.block_m == 256 and idx.block_m == 128
    with pytest.raises(moegemm.InvalidArgumentError, match="grouped_layout"):
        moegemm.plan_fp8_gemm_nt(4 * 4096, 4096, 2048, 4, 4096, layout="k_grouped")
    # K-grouped weight gradients run 192-row tiles of three math warpgroups (docs/heuristics.md).
    wgrad = moegemm.plan_fp8_gemm_wgrad(4096, 7168, 32768, num_groups=16)
    assert wgrad.block_k == 128 and wgrad.block_m == 192 and wgrad.math_warpgroups == 3
    bf16 = moegemm.plan_bf16_gemm(4096, 4096, 7168)
    assert bf16.block_k == 64 and bf16.smem_bytes > 0
    tn = moegemm.plan_bf16_gemm(4096, 7168, 32768, layout="k_grouped", num_groups=16)
    assert tn.block_n % 64 == 0  # MN-major operands: whole 64-wide boxes
    masked = moegemm.plan_bf16_gemm(32 * 4096, 6144, 7168, layout="masked", num_groups=32, expected_m=192,
                                    b_mn_major=True)
    assert masked.block_n % 64 == 0 and masked.cluster_m == 1
    with pytest.raises(moegemm.InvalidArgumentError, match="layout"):
        moegemm.plan_bf16_gemm(128, 128, 128, layout="sparse")
    # Plans leave the tile order's band to the launch (0); an override may force one (KernelConfig.raster_band).
    assert fp8.raster_band == 0 and "raster_band=0" in repr(fp8)
    forced = moegemm.KernelConfig()
    forced.raster_band = 32
    assert forced.raster_band == 32 and "raster_band=32" in repr(forced)


def test_precompile_writes_the_planned_kernels_into_the_cache(tmp_path, monkeypatch):
    # No device needed: the kernels a call would launch are compiled into the cache folder, under the plan's name.
    monkeypatch.setenv("MOEGEMM_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("MOEGEMM_JIT_DISK_CACHE", raising=False)
    first = moegemm.precompile_bf16_gemm(4096, 4096, 7168)
    assert len(first) == 1 and isinstance(first[0], moegemm.PrecompiledKernel)
    plan = moegemm.plan_bf16_gemm(4096, 4096, 7168)
    assert (first[0].config.block_m, first[0].config.block_n, first[0].config.stages) == (
        plan.block_m, plan.block_n, plan.stages)
    assert pathlib.Path(first[0].path).parent == tmp_path / "kernels" and pathlib.Path(first[0].path).is_file()
    # registers is 0 where NVRTC's log held no ptxas report: seen in a process that had imported torch first.
    assert not first[0].from_disk and first[0].registers >= 0 and first[0].spill_bytes >= 0
    again = moegemm.precompile_bf16_gemm(4096, 4096, 7168)
    assert again[0].from_disk and again[0].path == first[0].path
    assert (again[0].registers, again[0].spill_bytes) == (first[0].registers, first[0].spill_bytes)  # kept in the file
    # The k-grouped FP8 call launches its descriptor step too.
    names = [k.name for k in moegemm.precompile_fp8_gemm_wgrad(4096, 7168, 4 * 2048, 4)]
    assert names[0] == "sm90_kgrouped_descriptors" and len(names) == 2
    # Packed group ends run a kernel of their own, named with its segment alignment.
    packed = moegemm.precompile_fp8_gemm_nt(4 * 512, 512, 1024, 4, layout="contiguous_group_ends", segment_alignment=1)
    assert packed[0].name.endswith("/sa1") and pathlib.Path(packed[0].path).is_file()
    bf16 = moegemm.precompile_bf16_gemm(4 * 512, 512, 1024, layout="contiguous_group_ends", num_groups=4,
                                        segment_alignment=64)
    assert bf16[0].name.endswith("/sa64")
    with pytest.raises(ValueError, match="segment_alignment: must be a power of two from 1 to 1024"):
        moegemm.precompile_fp8_gemm_nt(4 * 512, 512, 1024, 4, layout="contiguous_group_ends", segment_alignment=48)
    monkeypatch.setenv("MOEGEMM_JIT_DISK_CACHE", "0")
    with pytest.raises(RuntimeError, match="MOEGEMM_JIT_DISK_CACHE=0"):
        moegemm.precompile_fp8_gemm_nt(128, 512, 256)


def test_precompile_all_compiles_each_distinct_kernel_of_many_shapes_once(tmp_path, monkeypatch):
    # A sweep over M names a few kernels (they are specialised on tiles, not on M): each is compiled once, and the
    # list follows the order the queries first name them, as the single queries would.
    monkeypatch.setenv("MOEGEMM_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("MOEGEMM_JIT_DISK_CACHE", raising=False)
    sweep = [dict(m=m, n=576, k=7168) for m in (1, 64, 1, 200, 1024, 200)]
    kernels = moegemm.precompile_all(fp8_nt=sweep, fp8_wgrad=[dict(m=512, n=512, k=4 * 256, num_groups=4)],
                                     bf16=[dict(m=256, n=512, k=1024, layout="masked", num_groups=2)], threads=2)
    names = [k.name for k in kernels]
    assert len(names) == len(set(names)), "each kernel once"
    assert all(not k.from_disk and pathlib.Path(k.path).is_file() for k in kernels)
    expected = []  # the single queries' kernels (found in the cache now), in first-named order
    for q in sweep:
        single = moegemm.precompile_fp8_gemm_nt(q["m"], q["n"], q["k"])
        assert single[0].from_disk and single[0].name in names
        if single[0].name not in expected:
            expected.append(single[0].name)
    assert names[:len(expected)] == expected and len(expected) >= 2
    assert names[len(expected)] == "sm90_kgrouped_descriptors"
    assert all(k.from_disk for k in moegemm.precompile_all(fp8_nt=sweep)), "found in the cache the second time"
    assert moegemm.precompile_all() == []
    # A bad query is refused, named, before anything compiles.
    for bad, match in ((dict(fp8_nt=[dict(m=1, n=8)]), r"fp8_nt\[0\]: needs 'k'"),
                       (dict(fp8_nt=[dict(m=1, n=8, k=128, mm=1)]), r"fp8_nt\[0\]: unknown key 'mm'"),
                       (dict(bf16=[dict(m=1, n=8, k=128, fp32_d=1)]), r"bf16\[0\]\.fp32_d: must be a bool"),
                       (dict(bf16=[dict(m=1, n=8, k=128, layout="x")]), r"bf16\[0\]\.layout: must be one of"),
                       (dict(fp8_nt=[(1, 8, 128)]), r"fp8_nt\[0\]: must be a dict"),
                       (dict(fp8_nt=[dict(m=1, n=8, k=128), dict(m=512, n=8, k=128, num_groups=4,
                                                                segment_alignment=3)]),
                        r"fp8_nt\[1\]: segment_alignment: must be a power of two"),
                       (dict(threads=-1), "threads: must be 0")):
        with pytest.raises(ValueError, match=match):
            moegemm.precompile_all(**bad)


def test_tuning_knobs_validate_like_the_anchor_and_change_nothing():
    from moegemm.deep_gemm import runtime
    assert deep_gemm.get_tc_util() == 100, "0 (the default) means 100"
    try:
        deep_gemm.set_tc_util(90)
        assert deep_gemm.get_tc_util() == 90
        deep_gemm.set_tc_util(0)
        assert deep_gemm.get_tc_util() == 100
        for bad in (-1, 101, 50.0, True, "90"):
            with pytest.raises(ValueError, match="tc_util: must be an integer from 0 to 100"):
                deep_gemm.set_tc_util(bad)
        assert deep_gemm.get_tc_util() == 100, "a refused value leaves the setting as it was"

        deep_gemm.set_ignore_compile_dims(True)
        deep_gemm.set_ignore_compile_dims(False)
        deep_gemm.set_ignore_compile_dims(1)
        assert runtime._ignore_compile_dims is True
        for bad in ("yes", None, 1.0):
            with pytest.raises(ValueError, match="value: must be a bool"):
                deep_gemm.set_ignore_compile_dims(bad)

        deep_gemm.set_block_size_multiple_of(64)
        assert runtime._block_size_multiple_of == (64, 64)
        deep_gemm.set_block_size_multiple_of((1, 32))
        assert runtime._block_size_multiple_of == (1, 32)
        for bad in (0, -16, (16,), (16, 0), (16, 32, 64), 16.0, (True, 16)):
            with pytest.raises(ValueError, match="value: must be a positive int or a"):
                deep_gemm.set_block_size_multiple_of(bad)
        assert runtime._block_size_multiple_of == (1, 32)
    finally:
        deep_gemm.set_tc_util(0)
        deep_gemm.set_ignore_compile_dims(False)
        deep_gemm.set_block_size_multiple_of(1)


def test_count_bytes_counts_nested_operands_and_skips_none():
    np = pytest.importorskip("numpy")
    a = np.zeros((4, 8), dtype=np.uint8)  # an FP8 operand's bits
    sf = np.zeros((4, 1), dtype=np.float32)
    d = np.zeros((4, 16), dtype=np.uint16)
    assert deep_gemm.testing.count_bytes((a, sf), d, None) == 32 + 16 + 128
    assert deep_gemm.testing.count_bytes([(a, sf), [d]]) == 176
    assert deep_gemm.testing.count_bytes() == 0
    try:
        import torch
    except ModuleNotFoundError:
        return
    t = torch.zeros(3, 5, dtype=torch.bfloat16)
    assert deep_gemm.testing.count_bytes((t, None), [t]) == 60
