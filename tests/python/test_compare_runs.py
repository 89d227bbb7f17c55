"""tools/bench/compare_runs.py: the A/B table of kernel variants (scripts/ab_kernels.sh) from moegemm-bench JSON."""

import importlib.util
import io
import json
import pathlib

import pytest

_PATH = pathlib.Path(__file__).resolve().parents[2] / "tools" / "bench" / "compare_runs.py"
_spec = importlib.util.spec_from_file_location("compare_runs", _PATH)
compare_runs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(compare_runs)


def row(label, ours, theirs, kernel=True, status="PASS"):
    """A row timed at `ours` and `theirs` us: by kernel time (event time 3 us longer), or by event time alone."""
    if kernel:
        mine = {"median_us": ours + 3.0, "kernel_median_us": ours}
        base = {"name": "cublasLt-pt", "median_us": theirs + 3.0, "kernel_median_us": theirs}
    else:
        mine = {"median_us": ours}
        base = {"name": "cublasLt-pt", "median_us": theirs}
    return {"label": label, "moegemm": mine, "baselines": [base], "check": {"status": status}}


def write(tmp_path, name, rows):
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps({"tool": "moegemm-bench", "results": rows}))
    return str(path)


def test_speed_is_the_reference_over_the_variant_normalised_by_the_same_runs_baseline(tmp_path):
    ref = write(tmp_path, "ref", [row("a", 100.0, 100.0), row("b", 50.0, 40.0)])
    # Variant: row a 20% faster at the same clock; row b unchanged but measured on a 10% slower GPU (both sides).
    var = write(tmp_path, "var", [row("a", 80.0, 100.0), row("b", 55.0, 44.0)])
    variants = [compare_runs.load_variant(f"ref={ref}"), compare_runs.load_variant(f"var={var}")]
    table, geomeans = compare_runs.compare(variants)
    assert [line["label"] for line in table] == ["a", "b"]
    assert table[0]["speed"]["var"] == pytest.approx(1.25)
    assert table[1]["speed"]["var"] == pytest.approx(1.0)
    assert geomeans["var"] == pytest.approx(1.25 ** 0.5)


def test_rounds_are_averaged_and_a_failed_check_is_marked(tmp_path):
    ref = write(tmp_path, "ref", [row("a", 100.0, 100.0)])
    r1 = write(tmp_path, "r1", [row("a", 90.0, 100.0)])
    r2 = write(tmp_path, "r2", [row("a", 110.0, 100.0, status="FAIL")])
    variants = [compare_runs.load_variant(f"ref={ref}"), compare_runs.load_variant(f"var={r1},{r2}")]
    table, _ = compare_runs.compare(variants)
    assert table[0]["speed"]["var"] == pytest.approx(1.0)
    assert table[0]["check"]["var"] == "FAIL"
    out = io.StringIO()
    compare_runs.print_table(variants, table, {}, out)
    assert "!FAIL" in out.getvalue()


def test_several_rounds_give_the_round_by_round_spread(tmp_path):
    # Round 1: the variant 25% faster; round 2: 5% faster on a GPU 10% slower for both (the baseline slower too).
    ref1 = write(tmp_path, "ref1", [row("a", 100.0, 100.0), row("b", 10.0, 10.0)])
    ref2 = write(tmp_path, "ref2", [row("a", 110.0, 110.0), row("b", 10.0, 10.0)])
    var1 = write(tmp_path, "var1", [row("a", 80.0, 100.0), row("b", 10.0, 10.0)])
    var2 = write(tmp_path, "var2", [row("a", 110.0 / 1.05, 110.0)])  # row b missing from round 2
    variants = [compare_runs.load_variant(f"ref={ref1},{ref2}"), compare_runs.load_variant(f"var={var1},{var2}")]
    table, _ = compare_runs.compare(variants)
    low, high = table[0]["range"]["var"]
    assert low == pytest.approx(1.05) and high == pytest.approx(1.25)
    assert "var" not in table[1]["range"]  # in one common round only: no spread, the mean of the rounds it has
    assert table[1]["speed"]["var"] == pytest.approx(1.0)
    out = io.StringIO()
    compare_runs.print_table(variants, table, {}, out)
    text = out.getvalue()
    assert "per round, lowest-highest" in text and "1.050-1.250" in text
    # One round: no spread table.
    single = [compare_runs.load_variant(f"ref={ref1}"), compare_runs.load_variant(f"var={var1}")]
    out = io.StringIO()
    compare_runs.print_table(single, *compare_runs.compare(single), out)
    assert "per round" not in out.getvalue()


def test_rounds_pair_by_their_rN_names_when_a_round_is_missing(tmp_path):
    # ab_kernels.sh names round N NAME.rN.json; the variant's round 2 failed, so it passes r1 and r3 only. Round 3
    # must meet the reference's round 3 (a GPU 20% slower for both), not its round 2.
    ref = [write(tmp_path, f"ref.r{n}", [row("a", t, t)]) for n, t in ((1, 100.0), (2, 100.0), (3, 120.0))]
    var = [write(tmp_path, f"var.r{n}", [row("a", t, b)]) for n, t, b in ((1, 80.0, 100.0), (3, 120.0 / 1.1, 120.0))]
    variants = [compare_runs.load_variant("ref=" + ",".join(ref)), compare_runs.load_variant("var=" + ",".join(var))]
    assert [run.round for _, runs in variants for run in runs] == [1, 2, 3, 1, 3]
    table, _ = compare_runs.compare(variants)
    low, high = table[0]["range"]["var"]
    assert low == pytest.approx(1.1) and high == pytest.approx(1.25)
    # Files without a round in their name are numbered in the order given; a round given twice is refused.
    x, y = (write(tmp_path, name, [row("a", 1.0, 1.0)]) for name in ("x", "y"))
    assert [run.round for run in compare_runs.load_variant(f"p={y},{x}")[1]] == [1, 2]
    with pytest.raises(SystemExit, match="round 1 twice"):
        compare_runs.load_variant(f"p={x},{ref[0]}")


def test_event_time_without_kernel_time_and_missing_rows(tmp_path):
    ref = write(tmp_path, "ref", [row("a", 100.0, 100.0, kernel=False), row("only in ref", 10.0, 10.0)])
    var = write(tmp_path, "var", [row("a", 50.0, 100.0, kernel=False)])
    variants = [compare_runs.load_variant(f"ref={ref}"), compare_runs.load_variant(f"var={var}")]
    table, geomeans = compare_runs.compare(variants)
    assert table[0]["key"] == "median_us"
    assert table[0]["speed"]["var"] == pytest.approx(2.0)
    assert "var" not in table[1]["speed"]
    out = io.StringIO()
    compare_runs.print_table(variants, table, geomeans, out)
    assert "n/a" in out.getvalue()


def test_a_spec_without_files_is_refused():
    with pytest.raises(SystemExit, match="not NAME=FILE"):
        compare_runs.load_variant("ref")


_SCRIPT = pathlib.Path(__file__).resolve().parents[2] / "scripts" / "ab_kernels.sh"


def run_script(*args):
    import subprocess
    return subprocess.run(["bash", str(_SCRIPT), *args], capture_output=True, text=True)


def test_ab_kernels_builds_one_bench_call_per_variant_and_round(tmp_path):
    out = tmp_path / "ab"
    result = run_script("--dry-run", "--rounds", "2", "--out", str(out), "main=built-in", "head=HEAD",
                        "exp=HEAD@MOEGEMM_EXP_X=2", "--", "--suite", "wgrad", "--kernel-time")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 6
    assert [line.split(":")[0] for line in lines] == ["round 1"] * 3 + ["round 2"] * 3
    assert "--suite wgrad --kernel-time --json" in lines[0]
    # The order rotates: round 2 starts with the second variant.
    assert lines[0].endswith("main.r1.json") and lines[3].endswith("head.r2.json")
    exp = next(line for line in lines if line.endswith("exp.r1.json"))
    assert f"MOEGEMM_KERNEL_DIR={out}/sources/exp/kernels" in exp and "MOEGEMM_JIT_DEFINE=MOEGEMM_EXP_X=2" in exp
    assert "MOEGEMM_KERNEL_DIR=" not in lines[0].replace("-u MOEGEMM_KERNEL_DIR", "")
    assert (out / "sources" / "head" / "kernels" / "sm90" / "gemm.cuh").is_file()


def test_ab_kernels_passes_a_variants_own_bench_flags(tmp_path):
    out = tmp_path / "ab"
    result = run_script("--dry-run", "--rounds", "1", "--out", str(out), "plan=built-in", "band4=built-in#--band 4",
                        "both=built-in@MOEGEMM_EXP_X=1#--config 192x128x3 --band 2", "--", "--suite", "bf16",
                        "--rows", "expK")
    assert result.returncode == 0, result.stderr
    plan, band4, both = result.stdout.splitlines()
    assert "--band" not in plan and "--config" not in plan
    assert band4.endswith("--rows expK --band 4 --json " + str(out / "band4.r1.json"))
    assert "MOEGEMM_JIT_DEFINE=MOEGEMM_EXP_X=1" in both and "--config 192x128x3 --band 2 --json" in both


@pytest.mark.parametrize("args, message", [
    (["main=built-in"], "at least two variants"),
    (["a=built-in", "a=built-in"], "given twice"),
    (["a=built-in", "b=no-such-revision-or-folder"], "neither built-in, a folder, a .patch file nor a revision"),
    (["--rounds", "0", "a=built-in", "b=built-in"], "--rounds must be a positive integer"),
    (["a=built-in", "bad name=built-in"], "letters, digits"),
])
def test_ab_kernels_refuses_bad_variants(args, message):
    result = run_script("--dry-run", *args)
    assert result.returncode == 2
    assert message in result.stderr


def fake_build(tmp_path):
    """A build folder whose moegemm-bench writes one row and, as the real one does, the hash of the kernel sources it
    compiled: here the folder's name (MOEGEMM_KERNEL_DIR), or "built-in"."""
    bench = tmp_path / "build" / "tools" / "moegemm-bench"
    bench.parent.mkdir(parents=True)
    bench.write_text(
        "#!/usr/bin/env python3\n"
        "import json, os, sys\n"
        "out = sys.argv[sys.argv.index('--json') + 1]\n"
        "src = os.environ.get('MOEGEMM_KERNEL_DIR', 'built-in')\n"
        "row = {'label': 'a', 'moegemm': {'median_us': 10.0}, 'baselines': [{'name': 'cublasLt-pt', 'median_us': 10.0}],\n"
        "       'check': {'status': 'PASS'}}\n"
        "json.dump({'tool': 'moegemm-bench', 'kernel_sources_hash': os.path.basename(os.path.dirname(src)) or src,\n"
        "           'results': [row]}, open(out, 'w'))\n")
    bench.chmod(0o755)
    return tmp_path / "build"


def test_ab_kernels_warns_when_two_variants_ran_the_same_sources(tmp_path):
    import os
    import subprocess
    build = fake_build(tmp_path)
    for name in ("one", "two"):
        (tmp_path / name / "kernels").mkdir(parents=True)
    env = dict(os.environ, BUILD_DIR=str(build))

    def ab(*variants):
        return subprocess.run(["bash", str(_SCRIPT), "--rounds", "1", "--out", str(tmp_path / "ab"), *variants, "--",
                               "--suite", "dense"], capture_output=True, text=True, env=env)

    # Two folders whose sources hash alike (the fake's hash is the folder's name): a self-comparison, said.
    same = ab(f"a={tmp_path}/one/kernels", f"b={tmp_path}/one/kernels")
    assert same.returncode == 0, same.stderr
    assert "variants a and b ran the same kernel sources" in same.stderr
    # Different sources, or the same sources under different macros: no warning.
    differ = ab(f"a={tmp_path}/one/kernels", f"b={tmp_path}/two/kernels", "c=built-in")
    assert differ.returncode == 0, differ.stderr
    assert "same kernel sources" not in differ.stderr
    macro = ab(f"a={tmp_path}/one/kernels", f"b={tmp_path}/one/kernels@MOEGEMM_EXP_X=1")
    assert macro.returncode == 0, macro.stderr
    assert "same kernel sources" not in macro.stderr
    # The same kernels with different bench flags (a forced band or tile) are a real comparison; the same flags are not.
    flags = ab("a=built-in", "b=built-in#--band 4")
    assert flags.returncode == 0, flags.stderr
    assert "same kernel sources" not in flags.stderr
    same_flags = ab("a=built-in#--band 4", "b=built-in#--band 4")
    assert "variants a and b ran the same kernel sources" in same_flags.stderr
