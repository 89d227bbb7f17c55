#!/usr/bin/env bash
# CTest check of experiments/ (docs/developing.md): every kernel experiment kept there as a patch of kernels/ still
# applies to the tree's kernels and still compiles, every compile-check configuration within the register and spill
# budget, through MOEGEMM_KERNEL_DIR (no GPU needed). Exit 77 (CTest: skipped, the reason printed) when experiments/
# holds no patch.
# Usage: experiments_test.sh BUILD_DIR
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD_DIR="${1:?usage: experiments_test.sh BUILD_DIR}"
shopt -s nullglob
PATCHES=("$ROOT"/experiments/*.patch)
if [ ${#PATCHES[@]} -eq 0 ]; then
  echo "skipped: experiments/ holds no kernel experiment"
  exit 77
fi
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
status=0
for patch in "${PATCHES[@]}"; do
  name="$(basename "$patch" .patch)"
  if ! folder="$(bash "$ROOT/scripts/kernel_variant.sh" "$patch" "$WORK/$name")"; then
    echo "FAIL: experiments/$name.patch no longer applies to kernels/ (above): bring it up to date or drop it"
    status=1
    continue
  fi
  if MOEGEMM_KERNEL_DIR="$folder" MOEGEMM_CACHE_DIR="$WORK/cache-$name" \
       "$BUILD_DIR/tests/moegemm_tests" --gtest_filter='Configs/*Compiles*' > "$WORK/$name.log" 2>&1; then
    echo "experiments/$name.patch: applies, and $(grep -E '^\[  PASSED  \]' "$WORK/$name.log")"
  else
    echo "FAIL: experiments/$name.patch does not compile within the budget:"
    grep -E '^\[  FAILED  \]|error' "$WORK/$name.log" | head -n 20
    status=1
  fi
done
exit $status
