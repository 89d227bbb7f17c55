#!/usr/bin/env bash
# CTest: the planner's choice for every benchmark row (`moegemm-bench --suite all --list --print-config`, planned for
# 132 SMs, the H100 and H200 SXM parts) against the committed snapshot beside this script. A heuristic change, or any
# change that moves a plan by accident, shows here as a diff: when it is meant, update the snapshot in the same
# commit and say in the results what the moved rows measured (docs/heuristics.md, "Plans under review").
#
# Usage: tests/plan/check_plan_snapshot.sh BENCH [--update]
#   BENCH     the moegemm-bench binary
#   --update  write the current plans into the snapshot instead of comparing
# Exit status: 0 when the plans equal the snapshot (or it was written); 1 when they differ or the tool failed;
# 77 (skipped) on a GPU whose SM count is not 132, where the planner plans for that count.
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
SNAPSHOT="$HERE/suite_plans.txt"
BENCH="${1:?usage: check_plan_snapshot.sh BENCH [--update]}"
MODE="${2:-check}"

if ! PLANS="$("$BENCH" --suite all --list --print-config 2>&1)"; then
  printf '%s\n' "$PLANS"
  echo "check_plan_snapshot: moegemm-bench --list failed (above)"
  exit 1
fi
# The SM counts the plans name: one, and 132 where the snapshot applies.
SM_COUNTS="$(grep -o ", [0-9]* SMs, " <<< "$PLANS" | sort -u)"
if [ -z "$SM_COUNTS" ]; then
  echo "check_plan_snapshot: no plan line names its SM count in the tool's output (its format changed?)"
  exit 1
fi
if [ "$SM_COUNTS" != ", 132 SMs, " ]; then
  echo "check_plan_snapshot: skipped: the plans here are for $(grep -o "[0-9]*" <<< "$SM_COUNTS" | paste -sd/) SMs," \
       "this machine's GPU (the snapshot is planned for 132)"
  exit 77
fi
if [ "$MODE" = --update ]; then
  printf '%s\n' "$PLANS" > "$SNAPSHOT"
  echo "check_plan_snapshot: wrote $(grep -c ' | plan ' "$SNAPSHOT") plans into $SNAPSHOT"
  exit 0
fi
if DIFF="$(diff -u --label snapshot --label now "$SNAPSHOT" <(printf '%s\n' "$PLANS"))"; then
  echo "check_plan_snapshot: $(grep -c ' | plan ' "$SNAPSHOT") plans equal the snapshot"
  exit 0
fi
printf '%s\n' "$DIFF"
echo "check_plan_snapshot: the planner's choices differ from tests/plan/suite_plans.txt (above: - snapshot, + now)."
echo "If the change is meant: tests/plan/check_plan_snapshot.sh BUILD/tools/moegemm-bench --update, commit the"
echo "snapshot with the change, and measure the moved rows against their old plans."
exit 1
