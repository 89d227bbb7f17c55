#!/usr/bin/env bash
# CTest check of scripts/kernel_variant.sh (no GPU, no build needed): a patch of kernels/ materialised into a folder
# that lies inside some git work tree (as ab_kernels.sh --out may put it) carries the patch's change (`git apply` run
# there skipped a git-style patch's paths, as outside the current folder, and said nothing); a patch that changes
# nothing is refused.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
command -v git > /dev/null || { echo "skipped: git not found"; exit 77; }

FILE=common/platform.cuh
cp "$ROOT/kernels/$FILE" "$WORK/edited.cuh"
echo "// kernel_variant_test: one more line" >> "$WORK/edited.cuh"
# A patch as `git diff` writes it (its "diff --git" header is what makes git apply honour the current folder).
{
  echo "diff --git a/kernels/$FILE b/kernels/$FILE"
  diff -u --label "a/kernels/$FILE" --label "b/kernels/$FILE" "$ROOT/kernels/$FILE" "$WORK/edited.cuh"
} > "$WORK/edit.patch"
git init -q "$WORK/repo" || { echo "FAIL: git init"; exit 1; }

folder="$(bash "$ROOT/scripts/kernel_variant.sh" "$WORK/edit.patch" "$WORK/repo/out/variant")" || {
  echo "FAIL: kernel_variant.sh refused a patch that applies"; exit 1; }
if ! grep -q 'kernel_variant_test: one more line' "$folder/$FILE"; then
  echo "FAIL: the variant inside a git work tree ($folder) does not carry the patch's change"
  exit 1
fi
if ! cmp -s "$ROOT/kernels/sm90/gemm.cuh" "$folder/sm90/gemm.cuh"; then
  echo "FAIL: a file the patch does not touch differs in the variant"
  exit 1
fi

: > "$WORK/empty.patch"
if bash "$ROOT/scripts/kernel_variant.sh" "$WORK/empty.patch" "$WORK/repo/out/empty" > "$WORK/empty.txt" 2>&1; then
  echo "FAIL: kernel_variant.sh accepted a patch that changes nothing:"
  cat "$WORK/empty.txt"
  exit 1
fi
echo "kernel_variant.sh: the patch applied inside a git work tree; an empty patch refused ($(tail -n 1 "$WORK/empty.txt"))"
