#!/usr/bin/env bash
# Compares the compiled code of two kernel sources on the CPU (no GPU): the built-in kernels of this build against a
# folder's (MOEGEMM_KERNEL_DIR, docs/jit.md), a patch's (experiments/) or another revision's kernels/ (exported with
# git archive, scripts/kernel_variant.sh), or against
# the built-in kernels of another build (--build: needed when the change touches a file the host code shares, such
# as common/scheduler.cuh or sm90/gemm_params.cuh, which a kernel folder may not change). Both go through
# scripts/sass_loops.sh (the compile checks' configurations, or a gtest filter); then, per configuration, whether
# the two compile to the same instructions, and for those that do not, the two summaries side by side (spill,
# size, the K blocks). The compiles are deterministic, so "same" means the sources change nothing there.
# Meant for changes that should not change the code (a file split, a rename) and for reading what one does.
#
# Usage: scripts/compare_kernels.sh FOLDER|FILE.patch|REVISION [gtest filter]
#        scripts/compare_kernels.sh --build OTHER_BUILD_DIR [gtest filter]
#   (another revision's build: git worktree add /tmp/base REV && cmake -S /tmp/base -B /tmp/base/build -G Ninja
#    && ninja -C /tmp/base/build moegemm_tests)
# Environment: as scripts/sass_loops.sh (BUILD_DIR, NVDISASM); COMPARE_DIR keeps the listings (default: temporary).
# Exit status: 0 when every configuration compiles to the same instructions, 1 when some differ, 2 on a usage or
#   tool error (as sass_loops.sh: 2 without nvdisasm).
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [ $# -lt 1 ]; then sed -n 2,18p "$0" >&2; exit 2; fi
OTHER_BUILD=""
if [ "$1" = "--build" ]; then
  OTHER_BUILD="${2:?--build needs a build folder}"
  shift 2
  OTHER="$OTHER_BUILD"
else
  OTHER="$1"
  shift
fi
FILTER="${1:-*Fp8KernelCompiles*}"
OUT="${COMPARE_DIR:-$(mktemp -d)}"
mkdir -p "$OUT"
if [ -n "$OTHER_BUILD" ]; then
  [ -x "$OTHER_BUILD/tests/moegemm_tests" ] || { echo "compare_kernels: $OTHER_BUILD/tests/moegemm_tests not built" >&2; exit 2; }
  FOLDER="$(cd "$OTHER_BUILD" && pwd)"
else
  FOLDER="$(bash "$ROOT/scripts/kernel_variant.sh" "$OTHER" "$OUT/other")" || exit 2
  [ -n "$FOLDER" ] || { echo "compare_kernels: compare the built-in kernels with a folder, a .patch or a revision" >&2; exit 2; }
fi
# Each side in its own cache folder: a disk hit would hide nothing (the keys differ), but keeps the user's cache clean.
env -u MOEGEMM_KERNEL_DIR MOEGEMM_CACHE_DIR="$OUT/cache-built-in" SASS_LOOPS_DIR="$OUT/built-in" \
  bash "$ROOT/scripts/sass_loops.sh" "$FILTER" > "$OUT/built-in.txt"
rc=$?; if [ $rc -ne 0 ]; then cat "$OUT/built-in.txt"; exit 2; fi
if [ -n "$OTHER_BUILD" ]; then
  env -u MOEGEMM_KERNEL_DIR BUILD_DIR="$FOLDER" MOEGEMM_CACHE_DIR="$OUT/cache-other" SASS_LOOPS_DIR="$OUT/other-listings" \
    bash "$ROOT/scripts/sass_loops.sh" "$FILTER" > "$OUT/other.txt"
else
  MOEGEMM_KERNEL_DIR="$FOLDER" MOEGEMM_CACHE_DIR="$OUT/cache-other" SASS_LOOPS_DIR="$OUT/other-listings" \
    bash "$ROOT/scripts/sass_loops.sh" "$FILTER" > "$OUT/other.txt"
fi
rc=$?; if [ $rc -ne 0 ]; then cat "$OUT/other.txt"; exit 2; fi

# A configuration's summary: its lines of a sass_loops.sh report (from its name line to the next name line).
summary() { awk -v name="$2" '/^sm90_/ { on = index($0, name ":") == 1 } on' "$1"; }
instructions() { grep -E '^[[:space:]]+/\*[0-9a-f]+\*/' "$1"; }
same=0; total=0
for listing in "$OUT"/built-in/*.sass; do
  name="$(basename "$listing" .sass)"
  total=$((total + 1))
  if [ ! -f "$OUT/other-listings/$name.sass" ]; then
    echo "$name: only in the built-in kernels' configurations"
    continue
  fi
  if cmp -s <(instructions "$listing") <(instructions "$OUT/other-listings/$name.sass"); then
    same=$((same + 1))
  else
    echo "$name differs:"
    diff <(summary "$OUT/built-in.txt" "$name" | tail -n +2) <(summary "$OUT/other.txt" "$name" | tail -n +2) \
      | sed -n 's/^< /  built in: /p; s/^> /  other:    /p'
    spill_a="$(summary "$OUT/built-in.txt" "$name" | head -n 1)"; spill_b="$(summary "$OUT/other.txt" "$name" | head -n 1)"
    [ "$spill_a" != "$spill_b" ] && echo "  built in: ${spill_a#*: }" && echo "  other:    ${spill_b#*: }"
  fi
done
for listing in "$OUT"/other-listings/*.sass; do
  name="$(basename "$listing" .sass)"
  [ -f "$OUT/built-in/$name.sass" ] || echo "$name: only in the other side's configurations"
done
echo "compare_kernels: $same of $total configurations compile to the same instructions ($FOLDER against the built-in kernels; listings in $OUT)"
[ "$same" -eq "$total" ]
