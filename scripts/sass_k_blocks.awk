# One line per K block of an nvdisasm listing (scripts/sass_loops.sh): its instructions from the stage wait
# (TRYWAIT) to the WGMMA wait (DEPBAR), WGMMAs, R2UR moves and local-memory accesses, and whether it is a block of
# a K loop or a tile's peeled first block ("K block once per tile").
# A block is placed by its first WGMMA (its stage wait may sit in the iteration before, and its WGMMA wait past the
# loop's back edge, when the wait moved up): it is in a K loop when the innermost backward branch around that WGMMA
# (a loop's back edge: a branch to a label above it) encloses no other loop that holds a block's first WGMMA. A block
# whose innermost loop holds a K loop runs once per tile, before or after that K loop. Checked on a made-up listing by tests/sass/k_blocks_test.sh.
/^\.L_x_[0-9]+:/ { sub(":", "", $1); label[$1] = NR }
/BRA `\(\.L_x_[0-9]+\)/ {
  t = $0; sub(/.*BRA `\(/, "", t); sub(/\).*/, "", t)
  # (Not the return jump of an out-of-line wait retry, which follows its TRYWAIT within two instructions.)
  if ((t in label) && !(wait_back1 || wait_back2)) { nb++; lo[nb] = label[t]; hi[nb] = NR }
}
/\/\*[0-9a-f]+\*\// { wait_back2 = wait_back1; wait_back1 = /TRYWAIT/ }
# A block runs from its stage wait to the WGMMA wait after its WGMMAs; its stage wait is the last one before its
# first WGMMA that no earlier block started from. Usually nothing lies between the two but the block itself. A loop
# that waits for the next block's stage before this block's WGMMAs complete (two accumulators, the wait moved up) has
# the next stage's wait before this block's WGMMA wait, so its blocks overlap by those few instructions. A second
# WGMMA group with no new stage wait (the second 64-row wave of a 256-row tile) belongs to its block and is not
# listed on its own.
# Per instruction: it counts (instr); an R2UR whose source was last written by a global load (LDG) moves a loaded
# value into a uniform register (a B block scale read one K block ahead: b_block_scales_ahead) and is counted apart,
# as "R2UR of loaded values", since the guard's concern is WGMMA descriptors rebuilt in vector registers.
/\/\*[0-9a-f]+\*\// {
  instr[NR] = 1
  body = $0; sub(/.*\*\/[ \t]*/, "", body); sub(/^@!?U?P[0-9T]+[ \t]+/, "", body)
  op = body; sub(/[ \t].*/, "", op)
  dst = body; sub(/^[^ \t]+[ \t]+/, "", dst); sub(/[ ,;].*/, "", dst)
  if (op ~ /^R2UR/) {
    src = body; sub(/^[^,]*,[ \t]*/, "", src); sub(/[ ,;].*/, "", src)
    if ((src in loaded) && loaded[src]) isr2ur_loaded[NR] = 1; else isr2ur[NR] = 1
  }
  if (dst ~ /^R[0-9]+$/) loaded[dst] = (op ~ /^LDG/)
}
/(STL|LDL)/ { islocal[NR] = 1 }
/TRYWAIT/ { last_wait = NR }
/GMMA/ {
  if (gmma_since++ == 0) {
    first_gmma = NR
    first_wait = last_wait > used_wait ? last_wait : 0
    if (first_wait > 0) used_wait = first_wait
  }
}
/DEPBAR/ {
  if (gmma_since > 0 && first_wait > 0) {
    n = 0; r2ur = 0; r2ur_loaded = 0; local = 0
    for (i = first_wait; i <= NR; i++) {
      n += (i in instr); r2ur += (i in isr2ur); r2ur_loaded += (i in isr2ur_loaded); local += (i in islocal)
    }
    nk++; ks[nk] = first_gmma; ke[nk] = first_gmma
    kdesc[nk] = sprintf("%d instructions to the WGMMA wait, %d WGMMA, %d R2UR, %d local", n, gmma_since, r2ur, local)
    if (r2ur_loaded > 0) kdesc[nk] = kdesc[nk] sprintf(", %d R2UR of loaded values", r2ur_loaded)
  }
  gmma_since = 0
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
