// Two CTAs of a cluster that share (multicast) their B tile work on vertically adjacent tiles of the same group and
// columns. The scheduler is run with block_m doubled ("pair tiles"); each CTA takes one half. A half that lies past
// the group's valid rows gets an empty row range: it still runs the main loop (its peer needs its share of the B
// loads) but stores nothing. The CPU tests prove the halves cover a pair exactly once and never leave its rows.
//
// Two CTAs that share their A tile instead (dense layout) work on horizontally adjacent tiles: the scheduler runs
// with block_n doubled and each CTA takes one half of the columns (cluster_half_n). A half at or past N still runs
// the main loop (its peer needs its share of the A loads); the epilogue stores no column at or past N.
#pragma once

#include "common/platform.cuh"
#include "common/scheduler.cuh"

namespace moegemm::kernels {

MOEGEMM_HD TileWork cluster_half(const TileWork& pair, int rank, int block_m) {
  TileWork w = pair;
  w.m_block = pair.m_block * 2 + rank;
  w.row_begin = pair.row_begin + rank * block_m;
  w.row_limit = max_of(w.row_begin, min_of(w.row_begin + block_m, pair.row_limit));
  w.a_row = pair.a_row + rank * block_m;
  return w;
}

MOEGEMM_HD TileWork cluster_half_n(const TileWork& pair, int rank, int block_n) {
  TileWork w = pair;
  w.n_block = pair.n_block * 2 + rank;
  w.n_begin = pair.n_begin + rank * block_n;
  w.b_row = pair.b_row + rank * block_n;
  return w;
}

}  // namespace moegemm::kernels
