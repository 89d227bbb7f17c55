#!/usr/bin/env bash
# Builds tests/sanitizer/cp_async_mbarrier_pattern.cu (the GEMM's cp.async + mbarrier hand-over of B's block scales,
# alone) and runs it plain, then under compute-sanitizer racecheck, printing the hazard summary. Needs nvcc and an
# sm_90 GPU. A racecheck report here means the tool does not follow this hand-over, whose result the program checks;
# see docs/validation.md ("compute-sanitizer").
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
nvcc -std=c++17 -arch=sm_90a -O2 -o "$WORK/pattern" "$ROOT/tests/sanitizer/cp_async_mbarrier_pattern.cu"
"$WORK/pattern"
compute-sanitizer --tool racecheck "$WORK/pattern" 2>&1 | grep -E "RACECHECK SUMMARY|out\[0\]" || true
