// The stage ring's cursor (kernels/common/pipeline_cursor.cuh): ping-pong warpgroups jump over the other warpgroup's
// K blocks with advance_by, and must land on the stage and phase parity the producer reaches with single steps, or
// they wait on the wrong phase of a stage's barrier (a hang or a read of the wrong K block on the device).
#include <gtest/gtest.h>

#include "common/pipeline_cursor.cuh"

namespace moegemm::kernels {
namespace {

template <int kStages>
void expect_jumps_match_steps() {
  for (int start = 0; start < 2 * kStages; ++start) {
    for (int n = 0; n <= 3 * kStages + 1; ++n) {
      PipelineCursor stepped, jumped;
      for (int i = 0; i < start; ++i) {
        stepped.advance<kStages>();
        jumped.advance<kStages>();
      }
      for (int i = 0; i < n; ++i) stepped.advance<kStages>();
      jumped.advance_by<kStages>(n);
      EXPECT_EQ(stepped.stage, jumped.stage) << kStages << " stages, from step " << start << ", jump " << n;
      EXPECT_EQ(stepped.phase, jumped.phase) << kStages << " stages, from step " << start << ", jump " << n;
    }
  }
}

TEST(PipelineCursor, JumpLandsWhereSingleStepsDo) {
  expect_jumps_match_steps<1>();
  expect_jumps_match_steps<3>();
  expect_jumps_match_steps<4>();
  expect_jumps_match_steps<5>();
  expect_jumps_match_steps<8>();
  expect_jumps_match_steps<16>();
}

}  // namespace
}  // namespace moegemm::kernels
