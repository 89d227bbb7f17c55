#!/usr/bin/env bash
# The C++ tests again, with the host code built under AddressSanitizer (and LeakSanitizer) and
# UndefinedBehaviorSanitizer: validation, planning, the scheduler's CPU form, the JIT cache and the CPU oracle. Any
# report fails the run (-fno-sanitize-recover). Device code is not instrumented (NVRTC compiles it), and the tests
# that only read compiled kernels (the SASS checks, the experiments' compile check) or build an installed copy are
# left to scripts/test.sh. Needs what scripts/test.sh installs; CI runs it after that script.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR="${SANITIZER_BUILD_DIR:-build-sanitizers}"
JOBS="${JOBS:-$(nproc)}"
export PATH="/usr/local/cuda/bin:${PATH}"
FLAGS="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
# --as-needed: the sanitizer runtimes' link options would otherwise keep the driver stub that CUDA::nvrtc names,
# and the library must load where no driver is installed.
LINK="-fsanitize=address,undefined -Wl,--as-needed"
cmake -S . -B "${BUILD_DIR}" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DMOEGEMM_BUILD_PYTHON=OFF \
  -DCMAKE_CXX_FLAGS="${FLAGS}" -DCMAKE_SHARED_LINKER_FLAGS="${LINK}" -DCMAKE_EXE_LINKER_FLAGS="${LINK}"
cmake --build "${BUILD_DIR}" -j "${JOBS}"
export MOEGEMM_CACHE_DIR="${MOEGEMM_CACHE_DIR:-$(pwd)/${BUILD_DIR}/kernel-cache}"
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:protect_shadow_gap=0}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1}"
ctest --test-dir "${BUILD_DIR}" --output-on-failure -j "${JOBS}" -E "Sass|ExperimentsApplyAndCompile|InstalledPackage"
