#!/usr/bin/env bash
# Installs what building and testing moegemm needs, at pinned versions, where it is missing:
#   Debian/Ubuntu: cmake (>= 3.25), ninja, GoogleTest 1.12.1 (libgtest-dev);
#   PyPI: the versions in python/requirements-dev.txt (nanobind, scikit-build-core, numpy, pytest), and torch
#   (python/requirements-torch.txt) where no torch is importable, unless MOEGEMM_NO_TORCH=1: without it the Python
#   tests of the torch integration skip.
# The CUDA Toolkit (>= 12.8, with NVRTC and cuBLASLt) must already be installed (/usr/local/cuda or CUDAToolkit_ROOT).
set -euo pipefail
cd "$(dirname "$0")/.."

GTEST_VERSION="1.12.1-0.2"

have_pkg() { dpkg-query -W -f='${Status} ${Version}\n' "$1" 2>/dev/null | grep -q "install ok installed"; }

missing=()
command -v cmake >/dev/null || missing+=(cmake)
command -v ninja >/dev/null || missing+=(ninja-build)
if ! have_pkg libgtest-dev && [ ! -f /usr/include/gtest/gtest.h ]; then
  missing+=("libgtest-dev=${GTEST_VERSION}" "googletest=${GTEST_VERSION}")
fi
if [ ${#missing[@]} -gt 0 ]; then
  if ! command -v apt-get >/dev/null; then
    echo "install_deps: missing ${missing[*]} and no apt-get to install them" >&2
    exit 1
  fi
  echo "install_deps: apt-get install ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
fi

if [ ! -x /usr/local/cuda/bin/nvcc ] && ! command -v nvcc >/dev/null && [ -z "${CUDAToolkit_ROOT:-}" ]; then
  echo "install_deps: the CUDA Toolkit (>= 12.8) is required: install it, or set CUDAToolkit_ROOT" >&2
  exit 1
fi

python3 -m pip install --quiet --disable-pip-version-check -r python/requirements-dev.txt
if [ "${MOEGEMM_NO_TORCH:-0}" != "1" ] && ! python3 -c "import torch" >/dev/null 2>&1; then
  echo "install_deps: torch (python/requirements-torch.txt; MOEGEMM_NO_TORCH=1 skips it)"
  python3 -m pip install --quiet --disable-pip-version-check -r python/requirements-torch.txt
fi
