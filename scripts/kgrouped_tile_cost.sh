#!/usr/bin/env bash
# Splits the k-grouped FP8 kernel's time into a cost per tile and a cost per K block, per kernel variant: for each
# expected K per expert and each form of C (distinct, in place), runs scripts/ab_kernels.sh on the bench's custom
# k-grouped shape (G experts of M x N), then fits every variant's times with tools/bench/tile_cost.py
# (T = tiles per expert x (G a + sum K / 128 b) / SMs). A large a says the time goes outside the mainloop (the tile's
# start, its epilogue); b against the tile's tensor work says how fast the mainloop runs.
#
# Usage: scripts/kgrouped_tile_cost.sh [--rounds N] [--out DIR] [--groups G] [--m M] [--n N] [--ks "K1 K2 ..."]
#                                      [--bf16] NAME=SPEC [NAME=SPEC ...] [-- BENCH_ARGS]
#   --bf16: the BF16 k-grouped form (the bf16 suite's expK rows: A and B MN-major, FP32 D) instead of FP8 (1,1,128).
#   NAME=SPEC as for scripts/ab_kernels.sh; give each variant its tile ("#--config 192x128x3"): the plan may change
#   with K. Defaults: 2 rounds, G 16, M 4096, N 7168, Ks "1536 2048 3072 4096" (every expert then at least 1024 deep,
#   so that the in-place form reduces into D throughout: kFp32ReduceMinK). BENCH_ARGS are added to every call
#   (default --kernel-time --interleave --iters 20 --warmup 2).
# Example: scripts/kgrouped_tile_cost.sh 'w3=built-in#--config 192x128x3' 'h4=built-in#--config 192x128x4'
#   (h4 needs MOEGEMM_EXPERIMENTAL_HALF_STAGING=1 in the environment while half staging is behind its switch)
# Environment: BUILD_DIR, MOEGEMM_CACHE_DIR as for scripts/ab_kernels.sh.
# Exit status: 0; 1 when a bench call failed; 2 on a usage error or without a GPU.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ROUNDS=2
OUT=""
GROUPS_=16
M=4096
N=7168
KS="1536 2048 3072 4096"
# The suite whose k-grouped rows give the custom shape its form, and the rows that pick C distinct and in place.
SUITE=kgrouped
DISTINCT_ROWS=()
IN_PLACE_ROWS=(--rows in-place)
VARIANTS=()
usage() { sed -n 2,18p "$0" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) ROUNDS="${2:-}"; shift 2 ;;
    --out) OUT="${2:-}"; shift 2 ;;
    --groups) GROUPS_="${2:-}"; shift 2 ;;
    --m) M="${2:-}"; shift 2 ;;
    --n) N="${2:-}"; shift 2 ;;
    --ks) KS="${2:-}"; shift 2 ;;
    --bf16) SUITE=bf16; DISTINCT_ROWS=(--rows expK=8192); IN_PLACE_ROWS=(--rows "expK=8192 in-place"); shift ;;
    --) shift; break ;;
    -h|--help) usage ;;
    *=*) VARIANTS+=("$1"); shift ;;
    *) echo "kgrouped_tile_cost: '$1' is not NAME=SPEC (see --help)" >&2; exit 2 ;;
  esac
done
EXTRA=("$@")
[ ${#EXTRA[@]} -gt 0 ] || EXTRA=(--kernel-time --interleave --iters 20 --warmup 2)
[ ${#VARIANTS[@]} -ge 1 ] || { echo "kgrouped_tile_cost: give at least one variant, NAME=SPEC" >&2; exit 2; }
for value in "$GROUPS_" "$M" "$N" $KS; do
  [[ "$value" =~ ^[1-9][0-9]*$ ]] || { echo "kgrouped_tile_cost: '$value' is not a positive integer" >&2; exit 2; }
done
OUT="${OUT:-$(mktemp -d)}"
mkdir -p "$OUT"
# ab_kernels.sh wants two variants; a lone one is compared with itself (the fit is what counts then).
[ ${#VARIANTS[@]} -ge 2 ] || VARIANTS+=("${VARIANTS[0]/=/_again=}")

failed=0
for k in $KS; do
  for form in distinct in-place; do
    rows=("${DISTINCT_ROWS[@]}")
    [ "$form" = in-place ] && rows=("${IN_PLACE_ROWS[@]}")
    dir="$OUT/k$k-$form"
    echo "== expected K $k, C $form"
    bash "$ROOT/scripts/ab_kernels.sh" --rounds "$ROUNDS" --out "$dir" "${VARIANTS[@]}" -- --suite "$SUITE" \
      --groups "$GROUPS_" --m "$M" --n "$N" --expected-m "$k" "${rows[@]}" --print-config "${EXTRA[@]}"
    rc=$?
    [ $rc -eq 2 ] && exit 2
    [ $rc -ne 0 ] && failed=1
  done
done

specs=()
for v in "${VARIANTS[@]}"; do
  name="${v%%=*}"
  files=$(ls "$OUT"/k*-*/"$name".r*.json 2> /dev/null | paste -sd, -)
  [ -n "$files" ] && specs+=("$name=$files")
done
[ ${#specs[@]} -gt 0 ] || { echo "kgrouped_tile_cost: no JSON (logs in $OUT)" >&2; exit 1; }
echo "== per-tile and per-K-block cost ($SUITE, G $GROUPS_, M $M, N $N, expected K $KS)"
python3 "$ROOT/tools/bench/tile_cost.py" "${specs[@]}" || failed=1
echo "kgrouped_tile_cost: JSON and logs in $OUT"
exit $failed
