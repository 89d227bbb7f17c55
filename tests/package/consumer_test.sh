#!/usr/bin/env bash
# The installed package works for a program outside the tree: installs the build into a temporary prefix, builds
# examples/packed_moe against it with find_package(moegemm), and runs it. Without a GPU the program plans,
# precompiles (into a temporary kernel cache) and shows a refused argument, then says why it runs no GEMM; with one
# it also runs a packed contiguous GEMM and checks rows against a double-precision product.
# Usage: consumer_test.sh BUILD_DIR EXAMPLE_DIR
set -euo pipefail
BUILD="$1"
EXAMPLE="$2"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
cmake --install "$BUILD" --prefix "$WORK/prefix" > "$WORK/install.log"
generator=()
command -v ninja > /dev/null && generator=(-G Ninja)
cmake -S "$EXAMPLE" -B "$WORK/build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
  -Dmoegemm_DIR="$WORK/prefix/lib/cmake/moegemm" > "$WORK/configure.log" || { cat "$WORK/configure.log"; exit 1; }
cmake --build "$WORK/build" > "$WORK/build.log" || { cat "$WORK/build.log"; exit 1; }
# The program must find the installed library, not the build tree's.
if command -v ldd > /dev/null; then
  ldd "$WORK/build/packed_moe" | grep -F "$WORK/prefix/" > /dev/null ||
    { echo "packed_moe does not load libmoegemm from the install prefix:"; ldd "$WORK/build/packed_moe"; exit 1; }
fi
MOEGEMM_CACHE_DIR="$WORK/cache" "$WORK/build/packed_moe" | tee "$WORK/run.log"
for expected in "precompiled sm90_fp8_1d2d/" "/sa1 " "refused before launch: moegemm: invalid argument: a.data"; do
  grep -qF -- "$expected" "$WORK/run.log" || { echo "missing from the output: $expected"; exit 1; }
done
grep -qE "^(no GEMM run: |packed contiguous GEMM: )" "$WORK/run.log" || { echo "neither ran nor said why not"; exit 1; }
echo "consumer_test: the installed package built and ran examples/packed_moe"
