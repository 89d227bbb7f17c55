#!/usr/bin/env bash
# Compiles one microbenchmark of tools/microbench for sm_90a (no GPU needed): the CTest compile checks.
# Usage: build.sh NAME OUTPUT [NVCC], NAME being a file tools/microbench/NAME.cu. Exit 77 (skipped) without nvcc.
# tile_stream_rate calls the driver (cuTensorMapEncodeTiled) and links the toolkit's libcuda stub.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
NAME="$1"
OUT="$2"
NVCC="${3:-${NVCC:-$(command -v nvcc || true)}}"
if [ -z "$NVCC" ] || [ ! -x "$NVCC" ]; then
  echo "$NAME: nvcc not found, compile check skipped" >&2
  exit 77
fi
LIBS=()
if [ "$NAME" = tile_stream_rate ]; then
  LIBS=(-L "$(dirname "$NVCC")/../lib64/stubs" -lcuda)
fi
"$NVCC" -std=c++20 -gencode arch=compute_90a,code=sm_90a -O3 -I "$ROOT/kernels" -o "$OUT" \
  "$ROOT/tools/microbench/$NAME.cu" "${LIBS[@]}"
echo "$NAME: compiled to $OUT"
