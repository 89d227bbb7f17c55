#!/usr/bin/env bash
# Compiles tools/microbench/wgmma_issue_rate.cu for sm_90a (no GPU needed): the CTest compile check of the
# microbenchmark. Usage: build_wgmma_issue_rate.sh OUTPUT [NVCC]. Exit 77 (skipped) without nvcc.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
OUT="$1"
NVCC="${2:-${NVCC:-$(command -v nvcc || true)}}"
if [ -z "$NVCC" ] || [ ! -x "$NVCC" ]; then
  echo "wgmma_issue_rate: nvcc not found, compile check skipped" >&2
  exit 77
fi
"$NVCC" -std=c++20 -gencode arch=compute_90a,code=sm_90a -O3 -I "$ROOT/kernels" -o "$OUT" \
  "$ROOT/tools/microbench/wgmma_issue_rate.cu"
echo "wgmma_issue_rate: compiled to $OUT"
