#!/usr/bin/env bash
# CTest guard on the compiled code (no GPU needed): the K loops of the configurations the benchmark suites run on
# large shapes must stay on the uniform datapath (no R2UR: WGMMA descriptors not rebuilt in vector registers) and
# must not touch local memory (no consumer spill), and ptxas must not have serialised their WGMMAs (C7514, C7517,
# C7518). The first two regressions have happened (docs/results/
# 2026-12-03-kgrouped-c-rowgroup.md); neither changes a result, so only the SASS shows them.
# scripts/sass_loops.sh tells the K loop's blocks from a tile's peeled first block, which runs once per tile before
# its K loop (the innermost loop around it holds the K loop). Every block of a K loop must have no R2UR. A peeled
# block may move a few words through R2UR, once per tile (the loop's stage and phase, the coordinates of the tile's
# C load), but fewer than two per WGMMA: rebuilding each WGMMA's descriptors in vector registers takes at least two
# (the k-grouped kernels once had 16 per 4-WGMMA block). Neither kind may touch local memory.
# Known exceptions, not checked here: the narrow 64-row decode tiles (block_n 16-64).
# Usage: check_k_loops.sh BUILD_DIR. Exit 77 (CTest: skipped, with the reason printed) without nvdisasm.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD_DIR="${1:?usage: check_k_loops.sh BUILD_DIR}"
CONFIGS=(
  bm256_bn128_layout0_cm1_recipe0_mn0  # FP8 dense, the 256x128 tile (most M = 4096 rows)
  bm128_bn192_layout0_cm1_recipe0_mn0  # FP8 dense, the 128x192 tile (N = 2112 and 1536 at M = 4096)
  bm256_bn128_layout2_cm1_recipe0_mn0  # FP8 contiguous, running sums, 256-row tile
  bm128_bn192_layout1_cm1_recipe0_mn0  # FP8 contiguous, row-to-group
  bm128_bn192_layout2_cm1_recipe0_mn0  # FP8 contiguous, running sums
  bm64_bn96_layout3_cm1_recipe0_mn0    # FP8 masked
  bm128_bn160_layout0_cm1_recipe1_mn0  # FP8 weight gradient (1,1,128)
  bm128_bn160_layout0_cm1_recipe3_mn0  # BF16 with FP32 D (ping-pong warpgroups)
  bm128_bn128_layout4_cm1_recipe3_mn3  # BF16 k-grouped, FP32 D (ping-pong warpgroups, MN-major A and B)
  bm128_bn192_layout0_cm1_recipe2_mn0  # BF16
  bm256_bn128_layout0_cm1_recipe4_mn0  # BF16 D = C + A B^T, C prefetched by TMA
  bm128_bn160_layout4_cm1_recipe1_mn0  # FP8 k-grouped weight gradient, FP32 D through TMA
)
FILTER=""
for c in "${CONFIGS[@]}"; do FILTER="${FILTER:+$FILTER:}*Fp8KernelCompiles*/$c"; done
# Cubins and listings go to the build folder (emptied first: stale cubins would be counted).
rm -rf "$BUILD_DIR/sass_loops"
LOOPS="$(SASS_LOOPS_DIR="$BUILD_DIR/sass_loops" BUILD_DIR="$BUILD_DIR" "$ROOT/scripts/sass_loops.sh" "$FILTER" 2>&1)"
status=$?
if [ $status -eq 2 ]; then
  echo "SKIPPED: $LOOPS"
  exit 77
fi
echo "$LOOPS"
[ $status -eq 0 ] || exit 1
kernels="$(grep -c '^sm90' <<< "$LOOPS")"
loops="$(grep -c 'K loop:' <<< "$LOOPS")"
bad="$(grep 'K loop:' <<< "$LOOPS" | grep -v ' 0 R2UR, 0 local')"
peeled_bad="$(grep 'K block once per tile:' <<< "$LOOPS" |
  awk '{ for (i = 1; i <= NF; i++) { if ($i == "WGMMA,") w = $(i - 1); if ($i == "R2UR,") r = $(i - 1); if ($i == "local") l = $(i - 1) }
         if (r >= 2 * w || l > 0) print }')"
if [ "$kernels" -ne "${#CONFIGS[@]}" ] || [ "$loops" -lt "${#CONFIGS[@]}" ]; then
  echo "check_k_loops: expected ${#CONFIGS[@]} kernels with K loops, found $kernels kernels and $loops distinct K-loop blocks"
  exit 1
fi
if grep -q "serialised by ptxas" <<< "$LOOPS"; then
  echo "check_k_loops: ptxas serialised the WGMMAs of a kernel above (C7514, C7517 or C7518)"
  exit 1
fi
if [ -n "$bad" ]; then
  echo "check_k_loops: a K loop left the uniform datapath or spills (lines above with R2UR or local > 0)"
  exit 1
fi
if [ -n "$peeled_bad" ]; then
  echo "check_k_loops: a peeled first K block moves two or more words per WGMMA through R2UR, or touches local memory:"
  echo "$peeled_bad"
  exit 1
fi
# The row-to-group kernel may branch a little more than group ends on the same tile (its pass loop and scan), not a
# branch per stored element: its epilogue had 172 convergence barriers against 17 and ran 1122 instructions per
# warp and tile against 309 (docs/results/2026-12-03-rtg-tall-and-power.md); branch-free, 30.
barriers() { grep -A3 "^sm90_fp8_1d2d_$1" <<< "$LOOPS" | sed -n 's/.*instructions, \([0-9]*\) convergence.*/\1/p' | head -n 1; }
rtg="$(barriers bm128_bn192_st4_layout1_cm1_recipe0_mn0)"
ends="$(barriers bm128_bn192_st4_layout2_cm1_recipe0_mn0)"
if [ -z "$rtg" ] || [ -z "$ends" ]; then
  echo "check_k_loops: no convergence-barrier count for the 128x192 contiguous kernels"
  exit 1
fi
if [ $((2 * rtg)) -gt $((5 * ends)) ]; then
  echo "check_k_loops: the row-to-group kernel has $rtg convergence barriers against $ends for group ends (more than 2.5x): a branch per element in its epilogue or scan?"
  exit 1
fi
# FP8 (1,128,128) tiles of 128 and 256 rows set their result in the first K block, so the dense and group-ends
# kernels zero no result registers per tile. The compiler once hoisted a rarely needed zeroing in front of every tile
# (CS2R: 331 in these kernels before the first K block set the result, 52-53 after, 5 once the zeroing was kept in
# its branch; docs/results/2026-12-03-first-block-and-main-job.md).
for k in layout0 layout2; do
  listing="$(ls "$BUILD_DIR"/sass_loops/sm90_fp8_1d2d_bm128_bn192_st*_${k}_cm1_recipe0_mn0.sass 2>/dev/null | head -n 1)"
  zeroing="$( [ -n "$listing" ] && grep -c 'CS2R' "$listing" )"
  if [ -z "$zeroing" ] || [ "$zeroing" -gt 16 ]; then
    echo "check_k_loops: the 128x192 FP8 kernel ($k) has ${zeroing:-no listing for} CS2R (at most 16): result zeroing per tile is back?"
    exit 1
  fi
done
echo "check_k_loops: ${#CONFIGS[@]} kernels, $loops distinct K-loop blocks, all on the uniform datapath without local memory; row-to-group $rtg convergence barriers, group ends $ends"
