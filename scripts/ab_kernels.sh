#!/usr/bin/env bash
# Measures kernel variants against each other on the GPU with one build: each variant is a kernel source (the
# built-in kernels, a folder laid out as kernels/, a patch of kernels/ such as experiments/ keeps, or a git revision
# whose kernels/ is exported), compiled through
# MOEGEMM_KERNEL_DIR (docs/jit.md), optionally with a MOEGEMM_JIT_DEFINE macro. Every round runs each variant once
# as its own moegemm-bench process with the given arguments (the order rotates from round to round, so that no
# variant always runs on the warmest or coolest GPU), writing JSON; then tools/bench/compare_runs.py prints, per
# row, each variant's speed against the first one, normalised by the cuBLASLt time of the same run.
#
# Usage: scripts/ab_kernels.sh [--rounds N] [--out DIR] [--dry-run] NAME=SPEC [NAME=SPEC ...] -- BENCH_ARGS
#   SPEC: built-in | FOLDER | FILE.patch | REVISION (scripts/kernel_variant.sh), optionally followed by @MACRO or
#   @MACRO=VALUE (MOEGEMM_JIT_DEFINE), then optionally by #FLAGS: moegemm-bench flags of this variant only
#   (space-separated, e.g. "#--config 192x128x3" or "#--band 4"), so that forced tiles and bands are compared the same
#   way as kernels.
#   The first variant is the reference. BENCH_ARGS go to every moegemm-bench call (for example
#   --suite wgrad --kernel-time --interleave); --json is added per call.
# Example: scripts/ab_kernels.sh --rounds 2 main=built-in split=next/kernel-split -- --suite dense --rows m=4096
#          scripts/ab_kernels.sh plan=built-in 'band4=built-in#--band 4' -- --suite bf16 --rows expK --kernel-time
# Environment: BUILD_DIR (default build), MOEGEMM_CACHE_DIR as usual (each variant's kernels get their own keys).
# Exit status: 0; 1 when a bench call failed (its log is named); 2 on a usage error or without a GPU.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$ROOT/build}"
BENCH="$BUILD_DIR/tools/moegemm-bench"
ROUNDS=2
OUT=""
DRY=0
VARIANTS=()
usage() { sed -n 2,17p "$0" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) ROUNDS="${2:-}"; shift 2 ;;
    --out) OUT="${2:-}"; shift 2 ;;
    --dry-run) DRY=1; shift ;;
    --) shift; break ;;
    -h|--help) usage ;;
    *=*) VARIANTS+=("$1"); shift ;;
    *) echo "ab_kernels: '$1' is not NAME=SPEC (see --help)" >&2; exit 2 ;;
  esac
done
BENCH_ARGS=("$@")
[ ${#VARIANTS[@]} -ge 2 ] || { echo "ab_kernels: give at least two variants, NAME=SPEC" >&2; exit 2; }
[[ "$ROUNDS" =~ ^[1-9][0-9]*$ ]] || { echo "ab_kernels: --rounds must be a positive integer, got '$ROUNDS'" >&2; exit 2; }
OUT="${OUT:-$(mktemp -d)}"
mkdir -p "$OUT"

# Per variant: its name, its kernel folder ("" for the built-in kernels), its macro ("" for none) and its own bench
# flags ("" for none).
NAMES=(); FOLDERS=(); DEFINES=(); FLAGS=()
for v in "${VARIANTS[@]}"; do
  name="${v%%=*}"; spec="${v#*=}"; define=""; flags=""
  if [[ "$spec" == *#* ]]; then flags="${spec#*#}"; spec="${spec%%#*}"; fi
  if [[ "$spec" == *@* ]]; then define="${spec#*@}"; spec="${spec%%@*}"; fi
  [[ "$name" =~ ^[A-Za-z0-9_.-]+$ ]] || { echo "ab_kernels: variant name '$name': letters, digits, _ . - only" >&2; exit 2; }
  for seen in "${NAMES[@]}"; do
    [ "$seen" != "$name" ] || { echo "ab_kernels: variant name '$name' given twice" >&2; exit 2; }
  done
  if ! folder="$(bash "$ROOT/scripts/kernel_variant.sh" "$spec" "$OUT/sources/$name")"; then
    echo "ab_kernels: variant '$name' (above)" >&2
    exit 2
  fi
  NAMES+=("$name"); FOLDERS+=("$folder"); DEFINES+=("$define"); FLAGS+=("$flags")
done

failed=0
for ((round = 1; round <= ROUNDS; ++round)); do
  count=${#NAMES[@]}
  for ((j = 0; j < count; ++j)); do
    i=$(( (j + round - 1) % count ))  # rotate the order each round
    name="${NAMES[$i]}"
    json="$OUT/$name.r$round.json"; log="$OUT/$name.r$round.log"
    env_args=(-u MOEGEMM_KERNEL_DIR -u MOEGEMM_JIT_DEFINE)
    [ -n "${FOLDERS[$i]}" ] && env_args+=("MOEGEMM_KERNEL_DIR=${FOLDERS[$i]}")
    [ -n "${DEFINES[$i]}" ] && env_args+=("MOEGEMM_JIT_DEFINE=${DEFINES[$i]}")
    read -r -a own_args <<< "${FLAGS[$i]}"
    cmd=("$BENCH" "${BENCH_ARGS[@]}" "${own_args[@]}" --json "$json")
    if [ $DRY -eq 1 ]; then
      echo "round $round: env ${env_args[*]} ${cmd[*]}"
      continue
    fi
    env "${env_args[@]}" "${cmd[@]}" > "$log" 2>&1
    rc=$?
    if [ $rc -eq 2 ] && grep -q 'no CUDA device' "$log"; then
      echo "ab_kernels: $(grep -m1 'no CUDA device' "$log")" >&2
      exit 2
    fi
    if [ $rc -ne 0 ]; then
      echo "ab_kernels: round $round, variant $name: moegemm-bench exited $rc (log: $log)" >&2
      failed=1
    fi
  done
done
[ $DRY -eq 1 ] && exit 0

specs=()
for name in "${NAMES[@]}"; do
  files=()
  for ((round = 1; round <= ROUNDS; ++round)); do
    [ -s "$OUT/$name.r$round.json" ] && files+=("$OUT/$name.r$round.json")
  done
  [ ${#files[@]} -gt 0 ] || { echo "ab_kernels: no JSON for variant $name (logs in $OUT)" >&2; exit 1; }
  specs+=("$name=$(IFS=,; echo "${files[*]}")")
done
python3 "$ROOT/tools/bench/compare_runs.py" "${specs[@]}"
# Two variants that compiled the same kernel sources (each JSON records their hash) under the same macro and flags
# compare the kernels with themselves: a stale build's built-in kernels, or a folder that did not get its patch, look
# like that.
HASHES=()
for name in "${NAMES[@]}"; do
  HASHES+=("$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("kernel_sources_hash",""))' \
    "$OUT/$name.r1.json" 2> /dev/null)")
done
for ((i = 0; i < ${#NAMES[@]}; ++i)); do
  for ((j = i + 1; j < ${#NAMES[@]}; ++j)); do
    if [ -n "${HASHES[$i]}" ] && [ "${HASHES[$i]}" = "${HASHES[$j]}" ] && [ "${DEFINES[$i]}" = "${DEFINES[$j]}" ] &&
       [ "${FLAGS[$i]}" = "${FLAGS[$j]}" ]; then
      echo "ab_kernels: WARNING: variants ${NAMES[$i]} and ${NAMES[$j]} ran the same kernel sources (hash ${HASHES[$i]:0:16}) with the same macro and flags: this compares the kernels with themselves" >&2
    fi
  done
done
echo "ab_kernels: $ROUNDS rounds of ${#NAMES[@]} variants; JSON and logs in $OUT"
exit $failed
