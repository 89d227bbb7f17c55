"""tools/bench/tile_cost.py: a k-grouped kernel's time split into a cost per tile and one per K block."""

import json
import math
import pathlib

import pytest

import importlib.util

_PATH = pathlib.Path(__file__).resolve().parents[2] / "tools" / "bench" / "tile_cost.py"
_spec = importlib.util.spec_from_file_location("tile_cost", _PATH)
tile_cost = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(tile_cost)

SMS = 132


def kgrouped_row(groups, m, n, sum_k, us, block_m, block_n, in_place=False, plan=True):
    """A row of the bench's JSON timed at `us` (kernel time; event time 5 us longer)."""
    row = {"suite": "kgrouped", "label": f"G={groups} m={m} n={n}" + (" in-place" if in_place else ""),
           "m": m, "n": n, "k": 0, "groups": groups, "in_place": in_place, "flops": 2.0 * m * n * sum_k,
           "moegemm": {"median_us": us + 5.0, "kernel_median_us": us}, "failed": False}
    if plan:
        row["plan"] = f"block {block_m}x{block_n}x128, 3 stages, 3 math warpgroups, cluster 1x1, 0 SMs, 1 B shared"
    return row


def model_us(groups, m, n, sum_k, a, b, block_m, block_n):
    per_expert = math.ceil(m / block_m) * math.ceil(n / block_n)
    return per_expert * (groups * a + sum_k / 128 * b) / SMS


def write(tmp_path, name, rows, override=None):
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps({"tool": "moegemm-bench", "config_override": override, "max_sms": 0,
                                "device": {"sm_count": SMS}, "results": rows}))
    return str(path)


def test_fit_recovers_the_per_tile_and_per_block_costs_for_each_form(tmp_path):
    files = []
    for expected_k in (512, 1024, 2048, 4096):
        sum_k = 16 * expected_k + 384  # the experts' sizes vary around the expected K
        rows = [kgrouped_row(16, 4096, 7168, sum_k, model_us(16, 4096, 7168, sum_k, 6.0, 0.7, 192, 128), 192, 128),
                kgrouped_row(16, 4096, 7168, sum_k, model_us(16, 4096, 7168, sum_k, 2.0, 0.7, 192, 128), 192, 128,
                             in_place=True)]
        files.append(write(tmp_path, f"k{expected_k}", rows))
    name, points = tile_cost.load("plan=" + ",".join(files))
    assert name == "plan" and len(points) == 8
    distinct = [(x, y, t) for form, x, y, t, _, _ in points if form == "C distinct"]
    a, b, r2 = tile_cost.fit(distinct)
    assert a == pytest.approx(6.0) and b == pytest.approx(0.7) and r2 == pytest.approx(1.0)
    lines = tile_cost.table([(name, points)])
    assert len(lines) == 3  # the header, C distinct, in place
    assert "6.00" in lines[1] and "0.700" in lines[1]
    assert "in place" in lines[2] and "2.00" in lines[2]
    # 192 x 128 x 128 x 2 FLOP per K block on 132 SMs every 0.7 us.
    assert f"{2 * 192 * 128 * 128 * SMS / 0.7e-6 / 1e12:.0f}" in lines[1]


def test_the_forced_configuration_names_the_tile_and_one_k_is_not_enough(tmp_path):
    sum_k = 16 * 2048
    us = model_us(16, 4096, 7168, sum_k, 6.0, 0.7, 128, 128)
    one = write(tmp_path, "one", [kgrouped_row(16, 4096, 7168, sum_k, us, 128, 128, plan=False)], "128x128x5 c1x1")
    name, points = tile_cost.load(f"h5={one}")
    assert points[0][4] == (128, 128, 128)
    assert "needs two Ks or more" in tile_cost.table([(name, points)])[1]


def test_bf16_k_grouped_rows_count_k_blocks_of_64(tmp_path):
    sum_k = 8 * 4096
    row = kgrouped_row(8, 4096, 7168, sum_k, 1000.0, 128, 128)
    row["suite"], row["label"] = "bf16", "G=8 m=4096 n=7168 expK=4096"
    dense = kgrouped_row(1, 4096, 7168, 4096, 100.0, 128, 128)
    dense["suite"], dense["label"] = "bf16", "m=4096 n=7168 k=4096"  # not k-grouped: left out
    _, points = tile_cost.load("bf16=" + write(tmp_path, "bf16", [row, dense]))
    assert len(points) == 1 and points[0][4] == (128, 128, 64)
    assert points[0][2] == pytest.approx(32 * 56 * (sum_k / 64) / SMS)


def test_a_row_without_a_tile_is_refused_unless_one_is_given(tmp_path):
    bare = write(tmp_path, "bare", [kgrouped_row(4, 256, 256, 1024, 10.0, 64, 64, plan=False)])
    with pytest.raises(SystemExit, match="names no tile"):
        tile_cost.load(f"x={bare}")
    _, points = tile_cost.load(f"x={bare}", "64x32")
    assert points[0][4] == (64, 32, 128)
    assert tile_cost.main(["--tile", "64x32", f"x={bare}"]) == 0
