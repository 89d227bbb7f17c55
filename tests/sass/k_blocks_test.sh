#!/usr/bin/env bash
# CTest: scripts/sass_k_blocks.awk on a made-up listing shaped like nvdisasm's (a persistent tile loop whose back
# edge is unconditional, a peeled first block, a K loop with two blocks, one of them with an R2UR, and an
# out-of-line wait retry whose back edge spans to the end). The check on the real kernels (check_k_loops.sh) relies
# on this classification, so a wrong one must fail here.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
LISTING="$(mktemp)"
trap 'rm -f "$LISTING"' EXIT
cat > "$LISTING" <<'SASS'
.L_x_1:
        /*0000*/                   IMAD R1, R2, R3, RZ ;
        /*0010*/                   SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [UR4+0x100], R5 ;
.L_x_9:
        /*0020*/                   R2UR UR6, R7 ;
        /*0030*/                   HGMMA.64x128x32.F32.E4M3.E4M3 R24, gdesc[UR8], RZ, !UPT, gsb0 ;
        /*0040*/                   R2UR UR7, R8 ;
        /*0050*/                   WARPGROUP.DEPBAR.LE gsb0, 0x0 ;
.L_x_2:
        /*0060*/                   SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [UR6+0x100], R5 ;
        /*0070*/                   HGMMA.64x128x32.F32.E4M3.E4M3 R24, gdesc[UR8], R24, gsb0 ;
        /*0080*/                   WARPGROUP.DEPBAR.LE gsb0, 0x0 ;
        /*0090*/                   SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [UR6+0x108], R5 ;
        /*00a0*/                   R2UR UR9, R10 ;
        /*00b0*/                   HGMMA.64x128x32.F32.E4M3.E4M3 R24, gdesc[UR8], R24, gsb0 ;
        /*00c0*/                   LDL R11, [R1] ;
        /*00d0*/                   WARPGROUP.DEPBAR.LE gsb0, 0x0 ;
        /*00e0*/               @P1 BRA `(.L_x_2) ;
        /*00f0*/                   STG.E [R12], R24 ;
        /*0100*/                   BRA `(.L_x_1) ;
.L_x_8:
        /*0110*/                   SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [UR4+0x100], R5 ;
        /*0120*/              @!P0 BRA `(.L_x_8) ;
        /*0130*/                   BRA `(.L_x_9) ;
SASS
# The script's lines for $LISTING must be $2; $1 names the listing in the failure message.
expect_blocks() {
  local got
  got="$(awk -f "$ROOT/scripts/sass_k_blocks.awk" "$LISTING")"
  if [ "$got" != "$2" ]; then
    printf 'k_blocks_test (%s): expected\n%s\ngot\n%s\n' "$1" "$2" "$got"
    exit 1
  fi
}
expect_blocks "peeled block, K loop, retry" "  K block once per tile: 5 instructions to the WGMMA wait, 1 WGMMA, 2 R2UR, 0 local
  K loop: 3 instructions to the WGMMA wait, 1 WGMMA, 0 R2UR, 0 local
  K loop: 5 instructions to the WGMMA wait, 1 WGMMA, 1 R2UR, 1 local"
# Two more shapes: a K loop that waits for the next block's stage before this block's WGMMA wait (two accumulators,
# the wait moved up), each block then running from its stage wait to its WGMMA wait across the previous block's
# WGMMA wait; and a 256-row tile's second 64-row wave, a WGMMA group with no stage wait of its own, which belongs to
# its block and is not listed. The loop's stage wait retries out of line: the retry's jump back spans the block
# after the loop, which must still count as once per tile.
cat > "$LISTING" <<'SASS'
.L_x_1:
        /*0000*/                   SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [UR4+0x100], R5 ;
        /*0010*/                   HGMMA.64x128x32.F32.E4M3.E4M3 R24, gdesc[UR8], RZ, !UPT, gsb0 ;
.L_x_2:
        /*0020*/                   FFMA R1, R2, R3, R1 ;
        /*0030*/                   SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [UR4+0x108], R5 ;
        /*0038*/              @!P0 BRA `(.L_x_7) ;
.L_x_6:
        /*0040*/                   WARPGROUP.DEPBAR.LE gsb0, 0x0 ;
        /*0050*/                   HGMMA.64x128x32.F32.E4M3.E4M3 R88, gdesc[UR8], RZ, !UPT, gsb0 ;
        /*0060*/                   R2UR UR9, R10 ;
        /*0070*/               @P1 BRA `(.L_x_2) ;
        /*0080*/                   WARPGROUP.DEPBAR.LE gsb0, 0x0 ;
        /*0090*/                   SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [UR4+0x110], R5 ;
        /*00a0*/                   HGMMA.64x128x32.F32.E4M3.E4M3 R24, gdesc[UR8], RZ, !UPT, gsb0 ;
        /*00b0*/                   WARPGROUP.DEPBAR.LE gsb0, 0x0 ;
        /*00c0*/                   FFMA R1, R2, R3, R1 ;
        /*00d0*/                   HGMMA.64x128x32.F32.E4M3.E4M3 R24, gdesc[UR12], RZ, !UPT, gsb0 ;
        /*00e0*/                   WARPGROUP.DEPBAR.LE gsb0, 0x0 ;
        /*00f0*/                   BRA `(.L_x_1) ;
.L_x_7:
        /*0100*/                   SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [UR4+0x108], R5 ;
        /*0110*/              @!P0 BRA `(.L_x_7) ;
        /*0120*/                   BRA `(.L_x_6) ;
SASS
expect_blocks "wait moved up, second wave" "  K block once per tile: 6 instructions to the WGMMA wait, 1 WGMMA, 0 R2UR, 0 local
  K loop: 7 instructions to the WGMMA wait, 1 WGMMA, 1 R2UR, 0 local
  K block once per tile: 3 instructions to the WGMMA wait, 1 WGMMA, 0 R2UR, 0 local"
echo "k_blocks_test: peeled block and K loop blocks told apart; a wait moved up and a second wave handled"
