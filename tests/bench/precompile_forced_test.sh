#!/usr/bin/env bash
# moegemm-bench --precompile with --config compiles the forced configuration of an FP8 row and of a BF16 row (whose
# stages hold 64 K, not --config's FP8 128), into a fresh disk cache; no GPU needed.
# Usage: precompile_forced_test.sh BUILD_DIR. Exit 77 (skipped) when the build has no moegemm-bench.
set -uo pipefail
BENCH="$1/tools/moegemm-bench"
[ -x "$BENCH" ] || { echo "skipped: no $BENCH (MOEGEMM_BUILD_TOOLS off)"; exit 77; }
CACHE="$(mktemp -d)"
trap 'rm -rf "$CACHE"' EXIT
status=0
run() {
  local out
  out="$(MOEGEMM_CACHE_DIR="$CACHE" "$BENCH" --precompile --jobs 1 "$@" 2>&1)"
  local rc=$?
  echo "$out"
  if [ $rc -ne 0 ] || ! grep -q " 0 rows failed" <<<"$out" || ! grep -q "$EXPECT" <<<"$out"; then
    echo "FAILED: moegemm-bench --precompile $* (exit $rc; expected a kernel named like '$EXPECT')"
    status=1
  fi
}
EXPECT="bm128/bn64/st6/layout0/cm1/recipe0/mn0/cn2" run --suite dense --rows "m=128 n=4096" --config 128x64x6x1x2
EXPECT="bm128/bn64/st6/layout0/cm1/recipe2/mn0/cn2" run --suite bf16 --rows "m=128 n=4096 k=7168 NT bf16" \
  --config 128x64x6x1x2
exit $status
