#!/usr/bin/env bash
# The test command: installs pinned dependencies, builds the library, its tests and the Python extension, then
# runs the C++ tests (CTest) and the Python tests (pytest). Needs no GPU: device tests skip with the reason.
# On a machine with an H200 the same command runs the device tests too.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR="${BUILD_DIR:-build}"
JOBS="${JOBS:-$(nproc)}"
export PATH="/usr/local/cuda/bin:${PATH}"

scripts/install_deps.sh
cmake -S . -B "${BUILD_DIR}" -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOEGEMM_BUILD_PYTHON=ON \
  -Dnanobind_DIR="$(python3 -m nanobind --cmake_dir)"
cmake --build "${BUILD_DIR}" -j "${JOBS}"
# A private kernel cache, so tests never depend on (or pollute) the user's.
export MOEGEMM_CACHE_DIR="${MOEGEMM_CACHE_DIR:-$(pwd)/${BUILD_DIR}/kernel-cache}"
ctest --test-dir "${BUILD_DIR}" --output-on-failure -j "${JOBS}"
PYTHONPATH="$(pwd)/${BUILD_DIR}/python:$(pwd)/python${PYTHONPATH:+:${PYTHONPATH}}" \
  python3 -m pytest tests/python -q -rs
