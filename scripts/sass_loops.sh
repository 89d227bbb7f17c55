#!/usr/bin/env bash
# Reads the compiled code of every kernel configuration the compile checks build (no GPU needed): runs the
# Fp8KernelCompiles tests with MOEGEMM_TEST_CUBIN_DIR, disassembles each cubin with nvdisasm and prints, per kernel,
# its ptxas spill line, a line when ptxas serialised its WGMMAs (C7514, C7517, C7518), its instruction and
# convergence-barrier counts, and one line per compiled K block (from the stage wait to the WGMMA wait; an unrolled
# loop shows one per block; a tile's peeled first block, run once per tile, is marked as such: sass_k_blocks.awk):
# instructions, WGMMAs, R2UR moves (descriptors built in vector registers instead of on the uniform datapath) and
# local-memory accesses.
# A K loop with R2UR or local memory, or a consumer spill, is a lead for the performance work
# (docs/benchmarking.md, "Reading the compiled code").
#
# Usage: scripts/sass_loops.sh [gtest filter]      (default: all Fp8KernelCompiles configurations)
# Environment: BUILD_DIR (default build, as scripts/test.sh makes it), NVDISASM (default: nvdisasm on PATH, or the
#   one of the nvidia-cuda-nvdisasm wheel: python3 -m pip install nvidia-cuda-nvdisasm==13.5.37), SASS_LOOPS_DIR (folder for
#   the cubins and listings; default a temporary folder).
# Exit status: 0; 1 when the tests fail; 2 without nvdisasm.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$ROOT/build}"
FILTER="${1:-*Fp8KernelCompiles*}"

NVDISASM="${NVDISASM:-$(command -v nvdisasm || true)}"
if [ -z "$NVDISASM" ]; then
  NVDISASM="$(python3 -c 'import glob, os, nvidia; print(next((f for d in nvidia.__path__ for f in glob.glob(os.path.join(d, "cu*", "bin", "nvdisasm"))), ""))' 2>/dev/null || true)"
fi
if [ -z "$NVDISASM" ] || [ ! -x "$NVDISASM" ]; then
  echo "sass_loops: nvdisasm not found: set NVDISASM, or python3 -m pip install nvidia-cuda-nvdisasm==13.5.37" >&2
  exit 2
fi
TESTS="$BUILD_DIR/tests/moegemm_tests"
if [ ! -x "$TESTS" ]; then echo "sass_loops: $TESTS not built (run scripts/test.sh first)" >&2; exit 1; fi

OUT="${SASS_LOOPS_DIR:-$(mktemp -d)}"
mkdir -p "$OUT"
if ! MOEGEMM_TEST_CUBIN_DIR="$OUT" "$TESTS" --gtest_filter="$FILTER" > "$OUT/tests.log" 2>&1; then
  # The first failure's reason (an exception names the rule it broke), then the summary.
  grep -m 3 -E 'C\+\+ exception|Failure|error' "$OUT/tests.log"
  tail -n 5 "$OUT/tests.log"
  exit 1
fi
for cubin in "$OUT"/*.cubin; do
  name="$(basename "$cubin" .cubin)"
  "$NVDISASM" -c "$cubin" > "$OUT/$name.sass" 2>/dev/null || { echo "$name: nvdisasm failed"; continue; }
  spills="$(grep -aho '[0-9]* bytes spill stores' "$OUT/$name.log" | head -n 1)"
  echo "$name: ${spills:-spills unknown}"
  # ptxas serialises the WGMMAs (a wait after every one) with C7518 when one could be in flight across a divergent
  # path, and with C7514 when other instructions read accumulators it cannot prove complete (for example a group
  # left in flight across a loop's back edge while the loop reads the other accumulators: docs/results/
  # 2026-12-04-fp8-turns.md); C7517 marks a wait it inserted itself.
  for code in C7514 C7517 C7518; do
    if grep -aq "$code" "$OUT/$name.log"; then echo "  WGMMA serialised by ptxas ($code)"; fi
  done
  # The whole kernel's size and its convergence barriers (BSSY: one per branch whose paths reconverge). A per-element
  # branch in an unrolled epilogue shows as dozens of them (docs/results/2026-12-03-rtg-tall-and-power.md).
  printf "  code: %d instructions, %d convergence barriers (BSSY)\n" \
    "$(grep -cE '^[[:space:]]+/\*[0-9a-f]+\*/' "$OUT/$name.sass")" "$(grep -c 'BSSY' "$OUT/$name.sass")"
  # One line per K block, marked as a K loop's or as a peeled once-per-tile block (scripts/sass_k_blocks.awk).
  awk -f "$ROOT/scripts/sass_k_blocks.awk" "$OUT/$name.sass" | sort | uniq -c
done
echo "sass_loops: cubins, ptxas reports and listings in $OUT"
