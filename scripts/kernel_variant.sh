#!/usr/bin/env bash
# Materialises a kernel variant as a folder laid out as kernels/ (for MOEGEMM_KERNEL_DIR, docs/jit.md) and prints
# its path; prints nothing for the built-in kernels. scripts/ab_kernels.sh and scripts/compare_kernels.sh take their
# variants through it.
#
# Usage: scripts/kernel_variant.sh SPEC DEST
#   SPEC: built-in              the kernels compiled into the library (prints nothing)
#         FOLDER                a folder laid out as kernels/ (printed as it is)
#         FILE.patch            this tree's kernels/ with the patch applied (a `git diff` touching kernels/ only;
#                               experiments/ keeps such patches: docs/developing.md)
#         REVISION              a git revision's kernels/ (git archive)
#   DEST: an empty or missing folder to build the variant in (its kernels/ is printed).
# Exit status: 0; 2 when SPEC is none of these or the patch does not apply (the reason on stderr).
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
[ $# -eq 2 ] || { sed -n 2,14p "$0" >&2; exit 2; }
SPEC="$1"
DEST="$2"
if [ "$SPEC" = built-in ]; then
  exit 0
fi
if [ -d "$SPEC" ]; then
  (cd "$SPEC" && pwd)
  exit 0
fi
rm -rf "$DEST" && mkdir -p "$DEST" || { echo "kernel_variant: cannot create $DEST" >&2; exit 2; }
DEST="$(cd "$DEST" && pwd)"
if [[ "$SPEC" == *.patch ]]; then
  [ -f "$SPEC" ] || { echo "kernel_variant: no patch file $SPEC" >&2; exit 2; }
  PATCH="$(cd "$(dirname "$SPEC")" && pwd)/$(basename "$SPEC")"
  if grep -E '^\+\+\+ b/' "$PATCH" | grep -vqE '^\+\+\+ b/kernels/'; then
    echo "kernel_variant: $SPEC changes files outside kernels/ (a kernel folder cannot carry them)" >&2
    exit 2
  fi
  cp -R "$ROOT/kernels" "$DEST/kernels"
  # git apply inside a repository's work tree (DEST under this checkout, as ab_kernels.sh --out may put it) takes a
  # `git diff` patch's paths as relative to that repository's root and silently skips those outside DEST: keep it
  # from finding one (tests/sass/kernel_variant_test.sh).
  if ! (cd "$DEST" && GIT_CEILING_DIRECTORIES="$(dirname "$DEST")" git apply --whitespace=nowarn "$PATCH") \
      2> "$DEST/apply.log"; then
    echo "kernel_variant: $SPEC does not apply to this tree's kernels/:" >&2
    cat "$DEST/apply.log" >&2
    exit 2
  fi
  if diff -rq "$ROOT/kernels" "$DEST/kernels" > /dev/null; then
    echo "kernel_variant: $SPEC applied but changed nothing in kernels/" >&2
    exit 2
  fi
  echo "$DEST/kernels"
  exit 0
fi
if git -C "$ROOT" archive "$SPEC" kernels 2> /dev/null | tar -x -C "$DEST" 2> /dev/null && [ -d "$DEST/kernels" ]; then
  echo "$DEST/kernels"
  exit 0
fi
echo "kernel_variant: '$SPEC' is neither built-in, a folder, a .patch file nor a revision" >&2
exit 2
