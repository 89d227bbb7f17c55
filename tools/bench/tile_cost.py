#!/usr/bin/env python3
"""Splits a k-grouped kernel's time into a cost per tile and a cost per K block, from moegemm-bench JSON runs.

Each SM runs its share of the tiles one after another, so a run of G experts of M x N with sizes K_g takes about

    T = tiles_per_expert * (G * a + (sum K_g / block_k) * b) / SMs

where a is what a tile costs whatever its K (its start, its epilogue: C in, D out) and b what each K block of it
(128 bytes of K: 128 FP8 values, 64 BF16 ones) costs in the steady state of the mainloop. Runs of one kernel configuration at several expected K per
expert (the bench's custom k-grouped shape: --suite kgrouped --groups G --m M --n N --expected-m K) give points
on that line, and a least-squares fit gives a and b. A per-tile cost that is large against b * K_g / block_k says
the time goes outside the mainloop; b against the tile's tensor work (2 * block_m * block_n * block_k FLOP per K
block) says how fast the mainloop runs. BF16 k-grouped rows (the bf16 suite's expK rows) are read too. The model assumes whole waves (many tiles per SM) and tiles of equal cost within
an expert; a last partial tile row (M not a multiple of block_m) counts as a whole tile, as it runs as one.

The tile shape comes from each JSON file: the forced configuration (--config) or else the planner's (the bench's
--print-config writes it). Kernel time is used where a row has it (--kernel-time), event time otherwise. Rows with
C distinct and in place are fitted apart.

Usage: tile_cost.py [--tile BMxBN] NAME=FILE[,FILE...] [NAME=FILE[,FILE...] ...]
  --tile: the tile of runs whose JSON names none (recorded without --config or --print-config)
"""

import json
import math
import re
import sys

_TILE = re.compile(r"(\d+)x(\d+)")


def tile_of(run, row, fallback=None):
    """(block_m, block_n) of the kernel a row ran: the run's forced configuration, else the row's plan, else
    `fallback` (--tile)."""
    for text in (run.get("config_override"), row.get("plan"), fallback):
        if text:
            match = _TILE.search(text)
            if match:
                return int(match.group(1)), int(match.group(2))
    raise SystemExit(
        f"tile_cost: row '{row.get('label')}' names no tile: run with --config or --print-config, or give --tile")


def is_k_grouped(row):
    """FP8 k-grouped rows (suite kgrouped) and BF16 ones (suite bf16, labelled with the expected K)."""
    return row.get("suite") == "kgrouped" or (row.get("suite") == "bf16" and "expK" in row.get("label", ""))


def block_k_of(row):
    """K per stage: 128 FP8 values, 64 BF16 ones (128 bytes either way)."""
    return 64 if row.get("suite") == "bf16" else 128


def row_time_us(row):
    result = row.get("moegemm") or {}
    return result.get("kernel_median_us") or result.get("median_us")


def points_of(run, fallback=None):
    """One (form, x, y, time, (block_m, block_n, block_k), SMs) per timed k-grouped row: x = tiles per SM, y = K blocks
    per SM."""
    sms = run.get("max_sms") or run["device"]["sm_count"]
    points = []
    for row in run["results"]:
        if not is_k_grouped(row) or row.get("failed") or not row_time_us(row):
            continue
        block_m, block_n = tile_of(run, row, fallback)
        block_k = block_k_of(row)
        m, n, groups = row["m"], row["n"], row["groups"]
        sum_k = row["flops"] / (2.0 * m * n)  # the row's sum of K_g
        per_expert = math.ceil(m / block_m) * math.ceil(n / block_n)
        x = per_expert * groups / sms
        y = per_expert * (sum_k / block_k) / sms
        form = "in place" if row.get("in_place") else "C distinct"
        points.append((form, x, y, row_time_us(row), (block_m, block_n, block_k), sms))
    return points


def fit(points):
    """Least squares of T = a x + b y (no intercept): (a, b, r2)."""
    sxx = sum(x * x for x, _, _ in points)
    syy = sum(y * y for _, y, _ in points)
    sxy = sum(x * y for x, y, _ in points)
    sxt = sum(x * t for x, _, t in points)
    syt = sum(y * t for _, y, t in points)
    det = sxx * syy - sxy * sxy
    if len(points) < 2 or abs(det) <= 1e-12 * sxx * syy:
        return None
    a = (sxt * syy - syt * sxy) / det
    b = (syt * sxx - sxt * sxy) / det
    mean = sum(t for _, _, t in points) / len(points)
    total = sum((t - mean) ** 2 for _, _, t in points)
    residual = sum((t - a * x - b * y) ** 2 for x, y, t in points)
    r2 = 1.0 - residual / total if total > 0 else 1.0
    return a, b, r2


def load(spec, fallback=None):
    name, _, files = spec.partition("=")
    if not name or not files:
        raise SystemExit(f"tile_cost: '{spec}' is not NAME=FILE[,FILE...]")
    points = []
    for path in files.split(","):
        with open(path) as f:
            points.extend(points_of(json.load(f), fallback))
    return name, points


def table(variants):
    """Lines of the table: per variant and form, the fit and what it says."""
    lines = [f"{'variant':<14} {'form':<11} {'tile':>8} {'points':>6} {'a: us/tile':>11} {'b: us/K block':>14} "
             f"{'mainloop TFLOPS':>16} {'r2':>6}"]
    for name, points in variants:
        for form in ("C distinct", "in place"):
            mine = [p for p in points if p[0] == form]
            if not mine:
                continue
            tiles = {(p[4], p[5]) for p in mine}
            if len(tiles) != 1:
                raise SystemExit(f"tile_cost: variant '{name}' ran several tiles or SM counts ({sorted(tiles)}): "
                                 "give one each")
            (block_m, block_n, block_k), sms = tiles.pop()
            result = fit([(x, y, t) for _, x, y, t, _, _ in mine])
            if result is None:
                lines.append(f"{name:<14} {form:<11} {f'{block_m}x{block_n}':>8} {len(mine):>6}   (needs two Ks or more)")
                continue
            a, b, r2 = result
            # One SM's tensor work per K block over b, on every SM: the steady mainloop's rate.
            rate = 2.0 * block_m * block_n * block_k * sms / (b * 1e-6) / 1e12 if b > 0 else float("inf")
            lines.append(f"{name:<14} {form:<11} {f'{block_m}x{block_n}':>8} {len(mine):>6} {a:>11.2f} {b:>14.3f} "
                         f"{rate:>16.0f} {r2:>6.3f}")
    return lines


def main(argv):
    fallback = None
    if len(argv) >= 2 and argv[0] == "--tile":
        fallback, argv = argv[1], argv[2:]
        if not _TILE.fullmatch(fallback):
            raise SystemExit(f"tile_cost: --tile wants BMxBN, got '{fallback}'")
    if len(argv) < 1 or argv[0] in ("-h", "--help"):
        print("\n".join(__doc__.strip().splitlines()[-2:]), file=sys.stderr)
        return 2
    variants = [load(spec, fallback) for spec in argv]
    for line in table(variants):
        print(line)
    print("(mainloop TFLOPS: one SM's tensor work per K block over b, times the SMs of the run)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
