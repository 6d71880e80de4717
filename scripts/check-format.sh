#!/usr/bin/env bash
# Checks that C++ and CUDA sources are formatted with the repository's .clang-format
# (Debian's clang-format 14). With no argument (CI) it checks every tracked source, so every
# changed file is covered; with BASE (a commit) only the sources changed since BASE, which is
# quicker before a commit.
# Prints each unformatted file and the command that fixes it; exits 1 if there is any.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v clang-format >/dev/null || { echo "check-format: clang-format not found (apt-get install clang-format)" >&2; exit 2; }
pattern='\.(cpp|hpp|h|cu|cuh)$'
if [ -z "${1:-}" ]; then
  files=$(git ls-files | grep -E "$pattern" || true)
  what="tracked sources"
else
  base=$1
  git rev-parse -q --verify "$base^{commit}" >/dev/null ||
    { echo "check-format: $base is not a commit of this repository" >&2; exit 2; }
  files=$(git diff --name-only --diff-filter=ACMR "$base" -- | grep -E "$pattern" || true)
  what="sources changed since $(git rev-parse --short "$base")"
fi
bad=()
for f in $files; do
  [ -f "$f" ] || continue
  clang-format --dry-run -Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done
n=$(echo "$files" | grep -c . || true)
if [ ${#bad[@]} -gt 0 ]; then
  echo "check-format: ${#bad[@]} of $n $what not clang-formatted:"
  printf '  %s\n' "${bad[@]}"
  echo "fix with: clang-format -i ${bad[*]}"
  exit 1
fi
echo "check-format: $n $what, all clang-formatted"
