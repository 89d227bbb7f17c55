#!/usr/bin/env bash
# The main job on a machine with an H200: configure and build (Release, tests and tools on), check that a GPU is
# present, compile the benchmark rows' kernels in parallel (moegemm-bench --precompile), run the GoogleTest suite, run moegemm-bench over the benchmark suites, keep every log and JSON in one
# folder, and print the benchmark tables last. Needs no network.
#
# Environment:
#   BUILD_DIR    build folder (default build-gpu in the repository root)
#   RESULTS_DIR  logs and JSON (default results/<UTC date> in the repository root)
#   SUITES       benchmark suites, space- or comma-separated (default "dense contiguous masked";
#                all: dense contiguous masked wgrad kgrouped bf16; none: the build and the tests only)
#   BENCH_ARGS   moegemm-bench flags (default "--kernel-time": the tables add moegemm's kernel time, as the anchor's
#                tables were measured), e.g. "--iters 50 --kernel-time" or "--no-check"
#   JOBS         parallel build and kernel-compile jobs (default: all cores)
#   SANITIZE     a GoogleTest filter: run those device tests under compute-sanitizer memcheck and racecheck
#                (k-grouped determinism test at 3 calls per scale value there), e.g. "Fp8KGroupedGpu.*:Bf16AddCGpu.*"
#   PYTEST       1: also build the Python package (pip, no network, into RESULTS_DIR/python) and run tests/python
# Exit status: 0 when the build, every test and every checked benchmark row passed; 2 without a GPU; 1 otherwise.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$ROOT/build-gpu}"
RESULTS_DIR="${RESULTS_DIR:-$ROOT/results/$(date -u +%Y-%m-%d)}"
SUITES="${SUITES:-dense contiguous masked}"
if [ "$SUITES" = none ]; then SUITES=""; fi
if [ -z "${BENCH_ARGS+set}" ]; then BENCH_ARGS="--kernel-time"; fi  # set but empty: no extra flags
JOBS="${JOBS:-$(nproc)}"

mkdir -p "$RESULTS_DIR" || { echo "gpu_suite: cannot create $RESULTS_DIR"; exit 1; }
COMMIT="$(git -C "$ROOT" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)"
if [ "$COMMIT" != unknown ] && [ -n "$(git -C "$ROOT" status --porcelain --untracked-files=no 2>/dev/null)" ]; then
  COMMIT="$COMMIT-dirty"
fi
say() { echo "gpu_suite: $*" | tee -a "$RESULTS_DIR/summary.txt"; }
: > "$RESULTS_DIR/summary.txt"
say "$(date -u +%Y-%m-%dT%H:%M:%SZ) commit $COMMIT, build $BUILD_DIR, results $RESULTS_DIR"

# ---- Build --------------------------------------------------------------------------------------------------------
# Pinned build dependencies where they can be installed (a machine without network keeps what it has).
if ! "$ROOT/scripts/install_deps.sh" > "$RESULTS_DIR/deps.log" 2>&1; then
  say "install_deps did not complete (no network?): building with what is installed (log: $RESULTS_DIR/deps.log)"
fi
GENERATOR=()
if command -v ninja > /dev/null 2>&1; then GENERATOR=(-G Ninja); fi
if [ -f "$BUILD_DIR/CMakeCache.txt" ]; then GENERATOR=(); fi  # keep the generator the folder was made with
TESTS=ON
if ! cmake -S "$ROOT" -B "$BUILD_DIR" "${GENERATOR[@]}" -DCMAKE_BUILD_TYPE=Release \
      -DMOEGEMM_BUILD_TESTS=ON -DMOEGEMM_BUILD_TOOLS=ON > "$RESULTS_DIR/configure.log" 2>&1; then
  if grep -q "GTest" "$RESULTS_DIR/configure.log"; then
    # Without GoogleTest the C++ test binary cannot be built; the benchmark's own device checks still run.
    TESTS=OFF
    say "GoogleTest not found: the C++ test suite is not built (moegemm-bench still checks every row on the device)"
    rm -f "$BUILD_DIR/CMakeCache.txt"
    if ! cmake -S "$ROOT" -B "$BUILD_DIR" "${GENERATOR[@]}" -DCMAKE_BUILD_TYPE=Release \
          -DMOEGEMM_BUILD_TESTS=OFF -DMOEGEMM_BUILD_TOOLS=ON > "$RESULTS_DIR/configure.log" 2>&1; then
      tail -n 30 "$RESULTS_DIR/configure.log"
      say "configure failed (log: $RESULTS_DIR/configure.log)"
      exit 1
    fi
  else
    tail -n 30 "$RESULTS_DIR/configure.log"
    say "configure failed (log: $RESULTS_DIR/configure.log)"
    exit 1
  fi
fi
if ! cmake --build "$BUILD_DIR" -j "$JOBS" > "$RESULTS_DIR/build.log" 2>&1; then
  tail -n 30 "$RESULTS_DIR/build.log"
  say "build failed (log: $RESULTS_DIR/build.log)"
  exit 1
fi
say "build ok"

# ---- GPU present? -------------------------------------------------------------------------------------------------
BENCH="$BUILD_DIR/tools/moegemm-bench"
if ! PROBE="$("$BENCH" --probe 2>&1)"; then
  say "${PROBE:-moegemm-bench: no CUDA device: the probe failed}"
  exit 2
fi
say "$PROBE"

STATUS=0

# ---- Kernels ------------------------------------------------------------------------------------------------------
# The benchmark rows' kernels, each compiled once on JOBS threads into the kernel cache before anything runs, so that
# the benchmark loads them instead of compiling them one after the other on first use.
if [ -z "$SUITES" ]; then
  say "precompile: no benchmark suites (SUITES=none)"
elif "$BENCH" --precompile --suite "${SUITES// /,}" --jobs "$JOBS" > "$RESULTS_DIR/precompile.log" 2>&1; then
  say "precompile: $(tail -n 1 "$RESULTS_DIR/precompile.log")"
else
  STATUS=1
  say "precompile FAILED: $(tail -n 1 "$RESULTS_DIR/precompile.log") (log: $RESULTS_DIR/precompile.log)"
fi

# ---- Tests --------------------------------------------------------------------------------------------------------
if [ "$TESTS" = OFF ]; then
  STATUS=1
  say "ctest: not run (GoogleTest missing)"
elif ctest --test-dir "$BUILD_DIR" --output-on-failure > "$RESULTS_DIR/ctest.log" 2>&1; then
  say "ctest: $(grep -E 'tests passed' "$RESULTS_DIR/ctest.log" | tail -n 1)"
else
  STATUS=1
  SUMMARY="$(grep -E 'tests passed|tests failed' "$RESULTS_DIR/ctest.log" | tail -n 1)"
  say "ctest FAILED: $SUMMARY (log: $RESULTS_DIR/ctest.log)"
  grep -E '^\s*[0-9]+ - ' "$RESULTS_DIR/ctest.log" | tee -a "$RESULTS_DIR/summary.txt"
fi
if [ "$TESTS" = ON ]; then
  # CTest lists each skipped test twice (its progress line and the closing list): count the closing list only.
  SKIPPED="$(grep -cE '^\s*[0-9]+ - .*\(Skipped\)' "$RESULTS_DIR/ctest.log" || true)"
  if [ "$SKIPPED" != 0 ]; then
    say "ctest: $SKIPPED tests skipped (reasons in ctest.log):"
    grep -E '^\s*[0-9]+ - .*\(Skipped\)' "$RESULTS_DIR/ctest.log" | tee -a "$RESULTS_DIR/summary.txt"
  fi
fi

# ---- Benchmarks ---------------------------------------------------------------------------------------------------
# One process per suite: a crash in one suite keeps the others' numbers.
TABLES=()
for SUITE in ${SUITES//,/ }; do
  # shellcheck disable=SC2086  # BENCH_ARGS is a list of flags
  "$BENCH" --suite "$SUITE" --commit "$COMMIT" --json "$RESULTS_DIR/$SUITE.json" $BENCH_ARGS \
      > "$RESULTS_DIR/$SUITE.table" 2> "$RESULTS_DIR/$SUITE.log"
  RC=$?
  TABLES+=("$RESULTS_DIR/$SUITE.table")
  if [ "$RC" -ne 0 ]; then
    STATUS=1
    say "bench $SUITE FAILED (exit $RC; log: $RESULTS_DIR/$SUITE.log)"
    tail -n 5 "$RESULTS_DIR/$SUITE.log"
  else
    say "bench $SUITE ok"
  fi
done

# ---- Optional: sanitizers and the Python package -----------------------------------------------------------------
if [ -n "${SANITIZE:-}" ]; then
  if ! command -v compute-sanitizer > /dev/null 2>&1 || [ "$TESTS" = OFF ]; then
    STATUS=1
    say "sanitize: not run (compute-sanitizer or the C++ tests missing)"
  else
    for TOOL in memcheck racecheck; do
      if MOEGEMM_TEST_DETERMINISM_CALLS=3 compute-sanitizer --tool "$TOOL" --error-exitcode 1 \
           "$BUILD_DIR/tests/moegemm_tests" --gtest_filter="$SANITIZE" > "$RESULTS_DIR/$TOOL.log" 2>&1; then
        say "sanitize $TOOL: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$RESULTS_DIR/$TOOL.log" | tail -n 1)"
      else
        STATUS=1
        say "sanitize $TOOL FAILED (log: $RESULTS_DIR/$TOOL.log)"
      fi
    done
  fi
fi
if [ "${PYTEST:-0}" = 1 ]; then
  PYDIR="$RESULTS_DIR/python"
  if python3 -m pip install --no-build-isolation --no-deps --target "$PYDIR" "$ROOT" > "$RESULTS_DIR/pip.log" 2>&1 &&
     PYTHONPATH="$PYDIR" python3 -m pytest "$ROOT/tests/python" -q -rs > "$RESULTS_DIR/pytest.log" 2>&1; then
    say "pytest: $(tail -n 1 "$RESULTS_DIR/pytest.log")"
  else
    STATUS=1
    say "pytest FAILED (logs: $RESULTS_DIR/pip.log, $RESULTS_DIR/pytest.log)"
  fi
fi

echo
for TABLE in "${TABLES[@]}"; do cat "$TABLE"; done | tee "$RESULTS_DIR/tables.txt"
echo
say "done: status $STATUS, results in $RESULTS_DIR"
exit "$STATUS"
