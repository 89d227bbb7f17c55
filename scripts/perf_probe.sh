#!/usr/bin/env bash
# Performance probe of one dense FP8 shape on a machine with an H200, for tuning work: K scaling (time against K
# at fixed M and N separates the mainloop's steady-state rate from per-tile fixed costs) and a tile sweep (the
# planner's choice against forced configurations), each row with its cuBLASLt ratios from the same process.
# Usage: scripts/perf_probe.sh [M N K] [CONFIG...]     (default 4096 4096 7168; configs as moegemm-bench --config)
# Environment: BUILD_DIR (default build-gpu, built by scripts/gpu_suite.sh), ITERS (default 20).
# Exit status: 0, or 2 without a usable GPU.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BENCH="${BUILD_DIR:-$ROOT/build-gpu}/tools/moegemm-bench"
ITERS="${ITERS:-20}"
M="${1:-4096}" N="${2:-4096}" K="${3:-7168}"
shift $(( $# < 3 ? $# : 3 ))
CONFIGS=("$@")
[ ${#CONFIGS[@]} -eq 0 ] && CONFIGS=(128x192x4 128x160x5 128x144x5 128x128x5 64x192x6)
if [ ! -x "$BENCH" ]; then echo "perf_probe: $BENCH not built (run scripts/gpu_suite.sh first)"; exit 1; fi
if ! PROBE="$("$BENCH" --probe 2>&1)"; then echo "$PROBE"; exit 2; fi
row() { "$BENCH" --suite dense --m "$1" --n "$2" --k "$3" --no-check --iters "$ITERS" "${@:4}" 2>&1 | grep '^m='; }
echo "== K scaling at M=$M N=$N (planner's configuration) =="
for k in 1024 2048 4096 8192 16384; do row "$M" "$N" "$k"; done
echo "== tile sweep at M=$M N=$N K=$K =="
echo "planned: $(row "$M" "$N" "$K" --print-config)"
for c in "${CONFIGS[@]}"; do echo "$c: $(row "$M" "$N" "$K" --config "$c")"; done
