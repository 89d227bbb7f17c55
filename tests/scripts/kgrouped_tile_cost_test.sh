#!/usr/bin/env bash
# CTest check of scripts/kgrouped_tile_cost.sh (no GPU needed): the script runs scripts/ab_kernels.sh at each
# expected K and form of C against a stand-in moegemm-bench that writes the JSON a k-grouped row would have, its
# times made from known costs (6.3 us per tile with C distinct, 4.5 in place, 0.78 per K block; a variant whose kernel
# folder is a patch's, 1 us less per tile), and the fit must give those costs back, per variant and form; the same
# with --bf16 (the bf16 suite's k-grouped rows, K blocks of 64).
# Usage: kgrouped_tile_cost_test.sh
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/build/tools"
cat > "$WORK/build/tools/moegemm-bench" <<'BENCH'
#!/usr/bin/env python3
import json, math, os, sys
args = sys.argv[1:]
def opt(name):
    return args[args.index(name) + 1] if name in args else None
groups, m, n, k = (int(opt(name)) for name in ("--groups", "--m", "--n", "--expected-m"))
config = opt("--config")
suite = opt("--suite")
in_place = "in-place" in (opt("--rows") or "")
block_m, block_n = (int(x) for x in config.split("x")[:2])
block_k = 64 if suite == "bf16" else 128
per_tile = (4.5 if in_place else 6.3) - (1.0 if os.environ.get("MOEGEMM_KERNEL_DIR") else 0.0)
sum_k = groups * k + 128 * (k // 1024)  # sizes around the expected K
us = math.ceil(m / block_m) * math.ceil(n / block_n) * (groups * per_tile + sum_k / block_k * 0.78) / 132
row = {"suite": suite, "label": f"G={groups} m={m} n={n} expK={k} custom" + (" in-place" if in_place else ""),
       "m": m, "n": n, "k": 0, "groups": groups, "in_place": in_place, "flops": 2.0 * m * n * sum_k,
       "failed": False, "check": {"status": "PASS"}, "moegemm": {"median_us": us + 5, "kernel_median_us": us},
       "baselines": [{"name": "cublasLt-pt", "median_us": 1000.0, "kernel_median_us": 995.0}]}
json.dump({"tool": "moegemm-bench", "config_override": config, "max_sms": 0, "device": {"sm_count": 132},
           "kernel_sources_hash": os.environ.get("MOEGEMM_KERNEL_DIR", "built in"), "results": [row]},
          open(opt("--json"), "w"))
BENCH
chmod +x "$WORK/build/tools/moegemm-bench"
# A patch of kernels/ that applies to this tree (any will do: the stand-in only sees that a kernel folder is set).
cp "$ROOT/kernels/sm90/gemm.cuh" "$WORK/gemm.cuh"
echo "// a variant" >> "$WORK/gemm.cuh"
{
  echo "diff --git a/kernels/sm90/gemm.cuh b/kernels/sm90/gemm.cuh"
  diff -u --label a/kernels/sm90/gemm.cuh --label b/kernels/sm90/gemm.cuh "$ROOT/kernels/sm90/gemm.cuh" "$WORK/gemm.cuh"
} > "$WORK/variant.patch"
BUILD_DIR="$WORK/build" bash "$ROOT/scripts/kgrouped_tile_cost.sh" --rounds 1 --ks "1536 2048 4096" --out "$WORK/out" \
  'w3=built-in#--config 192x128x3' "var=$WORK/variant.patch#--config 192x128x3" > "$WORK/log.txt" 2>&1
rc=$?
status=0
expect() {  # log variant form tile a b
  if ! grep -qE "^$2 +$3 +$4 +3 +$5 +$6 " "$1"; then
    echo "FAIL: no line '$2 $3 $4 3 $5 $6' in the fit"
    status=1
  fi
}
[ $rc -eq 0 ] || { echo "FAIL: kgrouped_tile_cost.sh exited $rc"; status=1; }
expect "$WORK/log.txt" w3 "C distinct" 192x128 6.30 0.780
expect "$WORK/log.txt" w3 "in place" 192x128 4.50 0.780
expect "$WORK/log.txt" var "C distinct" 192x128 5.30 0.780
expect "$WORK/log.txt" var "in place" 192x128 3.50 0.780
# The BF16 form: the bf16 suite's k-grouped rows, K blocks of 64.
BUILD_DIR="$WORK/build" bash "$ROOT/scripts/kgrouped_tile_cost.sh" --bf16 --rounds 1 --ks "1536 2048 4096" \
  --out "$WORK/bf16" 'b5=built-in#--config 128x128x5' > "$WORK/bf16.txt" 2>&1
rc=$?
[ $rc -eq 0 ] || { echo "FAIL: kgrouped_tile_cost.sh --bf16 exited $rc"; status=1; }
expect "$WORK/bf16.txt" b5 "C distinct" 128x128 6.30 0.780
expect "$WORK/bf16.txt" b5 "in place" 128x128 4.50 0.780
grep -q "bf16, G 16" "$WORK/bf16.txt" || { echo "FAIL: --bf16 did not run the bf16 suite"; status=1; }
if [ $status -ne 0 ]; then cat "$WORK/log.txt" "$WORK/bf16.txt"; exit 1; fi
echo "kgrouped_tile_cost.sh: every variant's costs fitted back, per form, FP8 and BF16"
