# One line per K block of an nvdisasm listing (scripts/sass_loops.sh): its instructions from the stage wait
# (TRYWAIT) to the WGMMA wait (DEPBAR), WGMMAs, R2UR moves and local-memory accesses, and whether it is a block of
# a K loop or a tile's peeled first block ("K block once per tile").
# A block is in a K loop when the innermost backward branch around it (a loop's back edge: a branch to a label
# above it) encloses no other loop that holds K blocks. A block whose innermost loop holds a K loop is run once per
# tile, before that K loop. Back edges of out-of-line wait retries span to the end of the code, so they are never
# the innermost loop of a block that a K loop encloses. Checked on a made-up listing by tests/sass/k_blocks_test.sh.
/^\.L_x_[0-9]+:/ { sub(":", "", $1); label[$1] = NR }
/BRA `\(\.L_x_[0-9]+\)/ {
  t = $0; sub(/.*BRA `\(/, "", t); sub(/\).*/, "", t)
  if (t in label) { nb++; lo[nb] = label[t]; hi[nb] = NR }
}
/TRYWAIT/ { open = 1; n = 0; r2ur = 0; local = 0; gmma = 0; start = NR }
open && /\/\*[0-9a-f]+\*\// { n++ }
open && /R2UR/ { r2ur++ }
open && /(STL|LDL)/ { local++ }
open && /GMMA/ { gmma++ }
open && /DEPBAR/ {
  if (gmma > 0) { nk++; ks[nk] = start; ke[nk] = NR; kdesc[nk] = sprintf("%d instructions to the WGMMA wait, %d WGMMA, %d R2UR, %d local", n, gmma, r2ur, local) }
  open = 0
}
function holds_k(b,   i) { for (i = 1; i <= nk; i++) if (lo[b] <= ks[i] && ke[i] <= hi[b]) return 1; return 0 }
END {
  for (i = 1; i <= nk; i++) {
    best = 0
    for (b = 1; b <= nb; b++)
      if (lo[b] <= ks[i] && ke[i] <= hi[b] && (best == 0 || hi[b] - lo[b] < hi[best] - lo[best])) best = b
    kind = "K block once per tile"
    if (best > 0) {
      kind = "K loop"
      for (b = 1; b <= nb; b++)
        if (b != best && lo[best] <= lo[b] && hi[b] <= hi[best] && holds_k(b)) kind = "K block once per tile"
    }
    printf "  %s: %s\n", kind, kdesc[i]
  }
}
