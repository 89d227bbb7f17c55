// A position in the ring of shared-memory stages: the stage index and the parity of the phase its barriers complete
// next, kept identically by the producer and the consumers. Host and device code, so that the CPU tests can check
// the jump of ping-pong tiles against single steps.
#pragma once

#include "common/platform.cuh"

namespace moegemm::kernels {

struct PipelineCursor {
  int stage = 0;
  unsigned phase = 0;

  template <int kStages>
  MOEGEMM_HD void advance() {
    if (++stage == kStages) {
      stage = 0;
      phase ^= 1u;
    }
  }

  // n steps at once (n >= 0): the phase flips once per pass through the ring. Ping-pong warpgroups jump over the
  // other warpgroup's K blocks (sm90/gemm.cuh, gemm_ping_pong).
  template <int kStages>
  MOEGEMM_HD void advance_by(int n) {
    const int s = stage + n;
    phase ^= static_cast<unsigned>((s / kStages) & 1);
    stage = s % kStages;
  }
};

}  // namespace moegemm::kernels
