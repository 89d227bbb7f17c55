#!/usr/bin/env python3
"""Compares moegemm-bench JSON runs of kernel variants, row by row, against a reference variant.

Each variant is NAME=FILE[,FILE...]: its runs (rounds) of the same rows. Per row and variant the figure is
moegemm's time divided by the first baseline's time in the same run (cuBLASLt or cuBLAS, measured in the same
process, call by call with --interleave), averaged over the variant's runs: dividing by the baseline of the same run
takes out most of what the clock did between runs (the GPU runs at its power cap, and a row's clock moves by
up to 13% between runs). Kernel time is used where every run has it (--kernel-time), event time otherwise. A
variant's column is the reference's figure over the variant's: above 1, the variant is faster than the reference.
A row whose check did not pass in some run is marked; rows missing from a variant are left out of its mean.
With several runs, a second table gives each variant's lowest and highest speed round by round, for the rows both
have in at least two common rounds: a file named NAME.rN.json (as scripts/ab_kernels.sh writes them) is round N and
meets the other variant's round N, so a round that failed for one variant pairs no other wrongly; files without
such a name are numbered 1, 2, ... in the order given.

Usage: compare_runs.py REF=FILE[,FILE...] VARIANT=FILE[,FILE...] [...]
"""

import json
import math
import re
import sys


def load_variant(spec):
    name, _, files = spec.partition("=")
    if not name or not files:
        raise SystemExit(f"compare_runs: '{spec}' is not NAME=FILE[,FILE...]")
    runs = []
    for index, path in enumerate(files.split(","), start=1):
        with open(path) as f:
            rows = {row["label"]: row for row in json.load(f)["results"]}
        runs.append(Run(round_number(path, index), rows))
    rounds = [run.round for run in runs]
    if len(set(rounds)) != len(rounds):
        raise SystemExit(f"compare_runs: variant '{name}' has round {max(rounds, key=rounds.count)} twice")
    return name, runs


class Run(dict):
    """One run's rows by label; .round: its round number."""

    def __init__(self, round_, rows):
        super().__init__(rows)
        self.round = round_


def round_number(path, index):
    """N of a file named *.rN.json (scripts/ab_kernels.sh's round N), else its place among the variant's files."""
    match = re.search(r"\.r([0-9]+)\.json$", path)
    return int(match.group(1)) if match else index


def timing_key(rows):
    return "kernel_median_us" if all(r["moegemm"].get("kernel_median_us") for r in rows) else "median_us"


def row_figure(rows, key):
    """The mean over runs of moegemm's time over the first baseline's, or None when a run lacks either."""
    ratios = []
    for r in rows:
        ours = r.get("moegemm", {}).get(key)
        baselines = r.get("baselines") or []
        theirs = baselines[0].get(key) if baselines else None
        if not ours or not theirs:
            return None
        ratios.append(ours / theirs)
    return sum(ratios) / len(ratios)


def round_speeds(ref_runs, runs, label, key):
    """Per round, the reference's figure over the variant's, round N of one against round N of the other (ab_kernels
    runs both in each round), for the rounds both have with the row; rounds without a figure are left out."""
    variant_rounds = {run.round: run for run in runs}
    speeds = []
    for ref_run in ref_runs:
        run = variant_rounds.get(ref_run.round)
        if run is None or label not in ref_run or label not in run:
            continue
        ref_figure, figure = row_figure([ref_run[label]], key), row_figure([run[label]], key)
        if ref_figure is not None and figure is not None:
            speeds.append(ref_figure / figure)
    return speeds


def checked(rows):
    """'ok' when every run's check passed or did not run (--no-check: "-"); otherwise the first other status."""
    for r in rows:
        status = (r.get("check") or {}).get("status", "-")
        if status not in ("PASS", "-"):
            return status
    return "ok"


def compare(variants):
    """Rows, per row the reference's time (us) and per other variant its speed against the reference, and the
    geometric mean per variant. variants: [(name, [run dict label -> row])], the first the reference."""
    ref_name, ref_runs = variants[0]
    labels = [label for label in ref_runs[0] if all(label in run for run in ref_runs)]
    table, logs = [], {name: [] for name, _ in variants[1:]}
    for label in labels:
        ref_rows = [run[label] for run in ref_runs]
        key = timing_key(ref_rows)
        ref_figure = row_figure(ref_rows, key)
        line = {"label": label, "key": key, "ref_us": sum(r["moegemm"].get(key, 0) for r in ref_rows) / len(ref_rows),
                "ref_check": checked(ref_rows), "speed": {}, "check": {}, "range": {}}
        for name, runs in variants[1:]:
            rows = [run[label] for run in runs if label in run]
            figure = row_figure(rows, key) if rows else None
            if ref_figure is None or figure is None:
                continue
            line["speed"][name] = ref_figure / figure
            # Round by round where both have the row in at least two common rounds (one is no spread).
            per_round = round_speeds(ref_runs, runs, label, key)
            if len(per_round) > 1:
                line["range"][name] = (min(per_round), max(per_round))
            line["check"][name] = checked(rows)
            logs[name].append(math.log(ref_figure / figure))
        table.append(line)
    geomeans = {name: math.exp(sum(v) / len(v)) for name, v in logs.items() if v}
    return table, geomeans


def print_table(variants, table, geomeans, out=sys.stdout):
    names = [name for name, _ in variants[1:]]
    out.write(f"{'row':<44} {variants[0][0] + ' us':>12}" + "".join(f" {n:>14}" for n in names) + "\n")
    for line in table:
        cells = []
        for n in names:
            if n in line["speed"]:
                mark = "" if line["check"][n] == "ok" else " !" + line["check"][n]
                cells.append(f" {line['speed'][n]:>8.3f}{mark:<6}")
            else:
                cells.append(f" {'n/a':>14}")
        ref_mark = "" if line["ref_check"] == "ok" else " !" + line["ref_check"]
        out.write(f"{line['label'][:44]:<44} {line['ref_us']:>12.2f}" + "".join(cells) + ref_mark + "\n")
    out.write(f"{'geomean (above 1: faster than ' + variants[0][0] + ')':<57}"
              + "".join(f" {geomeans[n]:>8.3f}      " if n in geomeans else f" {'n/a':>14}" for n in names) + "\n")
    # With several rounds, the spread: the lowest and highest round-by-round speed (the table above averages them).
    if min((len(runs) for _, runs in variants), default=1) > 1:
        out.write(f"{'per round, lowest-highest':<57}" + "".join(f" {n:>14}" for n in names) + "\n")
        for line in table:
            cells = [f" {line['range'][n][0]:>6.3f}-{line['range'][n][1]:<7.3f}" if n in line["range"] else f" {'n/a':>14}"
                     for n in names]
            out.write(f"{line['label'][:57]:<57}" + "".join(cells) + "\n")


def main(argv):
    if len(argv) < 2:
        sys.stderr.write(__doc__)
        return 2
    variants = [load_variant(spec) for spec in argv]
    table, geomeans = compare(variants)
    print_table(variants, table, geomeans)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
