#!/usr/bin/env bash
# CTest check of scripts/compare_kernels.sh on one configuration (no GPU needed): this tree's own kernels/ folder
# compiles to the built-in instructions (exit 0), so does this build compared as another build (--build), and a copy
# with one instruction added to the kernel does not (exit 1, the configuration named), nor does the same edit given
# as a patch of kernels/. Exit 77 (CTest: skipped, with the reason printed) without nvdisasm.
# Usage: compare_kernels_test.sh BUILD_DIR
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
export BUILD_DIR="${1:?usage: compare_kernels_test.sh BUILD_DIR}"
FILTER='*Fp8KernelCompiles*/bm128_bn128_layout0_cm1_recipe1_mn0'
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

COMPARE_DIR="$WORK/same" bash "$ROOT/scripts/compare_kernels.sh" "$ROOT/kernels" "$FILTER" > "$WORK/same.txt" 2>&1
rc=$?
if [ $rc -eq 2 ] && grep -q 'nvdisasm not found' "$WORK/same.txt"; then
  echo "skipped: $(grep -m1 'nvdisasm not found' "$WORK/same.txt")"
  exit 77
fi
if [ $rc -ne 0 ] || ! grep -q '1 of 1 configurations compile to the same instructions' "$WORK/same.txt"; then
  echo "FAIL: the tree's own kernels/ did not compare equal to the built-in kernels (exit $rc):"
  cat "$WORK/same.txt"
  exit 1
fi

COMPARE_DIR="$WORK/build" bash "$ROOT/scripts/compare_kernels.sh" --build "$BUILD_DIR" "$FILTER" > "$WORK/build.txt" 2>&1
rc=$?
if [ $rc -ne 0 ] || ! grep -q '1 of 1 configurations compile to the same instructions' "$WORK/build.txt"; then
  echo "FAIL: this build compared with itself (--build) did not compare equal (exit $rc):"
  cat "$WORK/build.txt"
  exit 1
fi

cp -r "$ROOT/kernels" "$WORK/changed"
# One more instruction at the kernel's start, in a device-only file.
sed -i 's|^  grid_dependency_wait();|  grid_dependency_wait();\n  asm volatile("nanosleep.u32 32;");|' "$WORK/changed/sm90/gemm.cuh"
if cmp -s "$ROOT/kernels/sm90/gemm.cuh" "$WORK/changed/sm90/gemm.cuh"; then
  echo "FAIL: the test's edit no longer applies to sm90/gemm.cuh (grid_dependency_wait() not found)"
  exit 1
fi
COMPARE_DIR="$WORK/changed-out" bash "$ROOT/scripts/compare_kernels.sh" "$WORK/changed" "$FILTER" > "$WORK/changed.txt" 2>&1
rc=$?
if [ $rc -ne 1 ] || ! grep -q 'bm128_bn128_st4_layout0_cm1_recipe1_mn0 differs' "$WORK/changed.txt" ||
   ! grep -q '0 of 1 configurations compile to the same instructions' "$WORK/changed.txt"; then
  echo "FAIL: a kernel with an added instruction was not reported as different (exit $rc):"
  cat "$WORK/changed.txt"
  exit 1
fi
# The same edit as a patch of kernels/ (the form experiments/ keeps), through scripts/kernel_variant.sh.
(cd "$WORK" && diff -u --label a/kernels/sm90/gemm.cuh --label b/kernels/sm90/gemm.cuh \
   "$ROOT/kernels/sm90/gemm.cuh" changed/sm90/gemm.cuh > "$WORK/nanosleep.patch")
COMPARE_DIR="$WORK/patch-out" bash "$ROOT/scripts/compare_kernels.sh" "$WORK/nanosleep.patch" "$FILTER" > "$WORK/patch.txt" 2>&1
rc=$?
if [ $rc -ne 1 ] || ! grep -q 'bm128_bn128_st4_layout0_cm1_recipe1_mn0 differs' "$WORK/patch.txt"; then
  echo "FAIL: the kernels with the patch applied were not reported as different (exit $rc):"
  cat "$WORK/patch.txt"
  exit 1
fi
echo "compare_kernels.sh: same for the tree's kernels and for this build as another, different for a changed copy"\
     "and for the same change as a patch"
