#!/usr/bin/env bash
# C++ tests: builds each tests/cpp/test_*.cpp (C++17, -Wall -Wextra -Werror -pedantic)
# against libsession installed by scripts/install.sh, found through pkg-config, and runs
# each -- under valgrind (leaks are errors) when valgrind is installed.
#
#   tests/cpp/run.sh [PREFIX]     PREFIX defaults to target/stage, installed first;
#                                 with SESSION_SKIP_INSTALL=1 an existing PREFIX is used.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$repo"

prefix="${1:-$repo/target/stage}"
work="$repo/target/cpp"
mkdir -p "$work"
if [ "${SESSION_SKIP_INSTALL:-0}" != 1 ]; then
  scripts/install.sh "$prefix" >/dev/null
fi
prefix="$(cd "$prefix" && pwd)"
version="$(awk '/^\[/ { p = ($0 == "[package]") } p && /^version[ \t]*=/ {
  sub(/^[^"]*"/, ""); sub(/".*$/, ""); print; exit }' Cargo.toml)"

export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
cxx="${CXX:-c++}"
flags=(-std=c++17 -Wall -Wextra -Werror -pedantic -Wshadow -Wconversion -Wold-style-cast -g -O1)

# The C header alone must compile cleanly as C++17 too.
printf '#include <session.h>\nint main() { return session_version() ? 0 : 1; }\n' >"$work/header_only.cpp"
# shellcheck disable=SC2046
"$cxx" "${flags[@]}" -o "$work/header_only" "$work/header_only.cpp" \
       $(pkg-config --cflags --libs session) -Wl,-rpath,"$prefix/lib"
"$work/header_only"

# Every tests/cpp/test_*.cpp is one program.
for source in tests/cpp/test_*.cpp; do
  name="$(basename "$source" .cpp)"
  # shellcheck disable=SC2046
  "$cxx" "${flags[@]}" -DSESSION_EXPECTED_VERSION="\"$version\"" \
         -DSESSION_EXAMPLES_DIR="\"$repo/examples\"" -Itests/cpp \
         -o "$work/$name" "$source" \
         $(pkg-config --cflags --libs session) -pthread -Wl,-rpath,"$prefix/lib"
  if command -v valgrind >/dev/null 2>&1; then
    valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect \
             --show-leak-kinds=definite,indirect "$work/$name"
  else
    "$work/$name"
  fi
done
