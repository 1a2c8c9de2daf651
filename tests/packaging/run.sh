#!/usr/bin/env bash
# Packaging test: installs libsession with scripts/install.sh into a fresh prefix and
# builds the consumer in this folder against it, the ways a C developer would:
#   pkg-config (shared with rpath, shared with LD_LIBRARY_PATH, static) and
#   CMake find_package(session) (session::session and session::session_static);
# then checks the SONAME, the NEEDED entry, the exported symbols, the version, that a
# second install changes nothing and that a DESTDIR install is complete and relocatable.
# Needs cc, cmake, pkg-config, readelf, nm. Exits non-zero on the first failure.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$repo"

work="$repo/target/packaging"
prefix="$work/prefix"
here="$repo/tests/packaging"
checks=0
step() { printf -- '-- %s\n' "$*"; }
fail() { printf 'FAIL packaging: %s\n' "$*" >&2; exit 1; }
ok() { checks=$((checks + 1)); }
expect_eq() { [ "$1" = "$2" ] || fail "$3: got '$1', expected '$2'"; ok; }

for tool in cc cmake pkg-config readelf nm; do
  command -v "$tool" >/dev/null || fail "$tool is not installed"
done

version="$(awk '/^\[/ { p = ($0 == "[package]") } p && /^version[ \t]*=/ {
  sub(/^[^"]*"/, ""); sub(/".*$/, ""); print; exit }' Cargo.toml)"
[ -n "$version" ] || fail "no version in Cargo.toml"

rm -rf "$work"
mkdir -p "$work"

step "scripts/install.sh --build-only; scripts/install.sh $prefix"
scripts/install.sh --build-only >/dev/null
[ ! -e "$prefix" ] || fail "--build-only installed something"; ok
scripts/install.sh "$prefix" >/dev/null
lib="$prefix/lib"
real="libsession.so.$version"

# --- the installed tree ------------------------------------------------------------
for f in include/session.h "lib/$real" lib/libsession.a lib/pkgconfig/session.pc \
         lib/cmake/session/sessionConfig.cmake lib/cmake/session/sessionConfigVersion.cmake; do
  [ -f "$prefix/$f" ] || fail "missing $f"; ok
done
cmp -s include/session.h "$prefix/include/session.h" || fail "installed header differs"; ok
expect_eq "$(readlink "$lib/libsession.so.0")" "$real" "libsession.so.0 ->"
expect_eq "$(readlink "$lib/libsession.so")" "libsession.so.0" "libsession.so ->"
soname="$(readelf -d "$lib/$real" | sed -n 's/.*(SONAME).*\[\(.*\)\].*/\1/p')"
expect_eq "$soname" "libsession.so.0" "SONAME of $real"

# The shared library exports exactly the functions the header declares.
header_fns="$(grep -E '^[A-Za-z].*\<session_[a-z_]+\(' include/session.h \
              | grep -oE '\<session_[a-z_]+\(' | tr -d '(' | sort -u)"
exported="$(nm -D --defined-only "$lib/$real" | awk '$2 ~ /^[TtDdBbRrVvWwiu]$/ { print $3 }' \
            | sort -u)"
[ "$(wc -l <<<"$header_fns")" -ge 16 ] || fail "could not read the header's functions"
expect_eq "$exported" "$header_fns" "exported dynamic symbols vs header functions"

step "install again: idempotent"
snapshot() { (cd "$1" && find . -printf '%y %p %l %m\n' | sort && find . -type f -print0 \
              | sort -z | xargs -0 sha256sum); }
before="$(snapshot "$prefix")"
scripts/install.sh "$prefix" >/dev/null
expect_eq "$(snapshot "$prefix")" "$before" "tree after a second install"

# --- pkg-config ---------------------------------------------------------------------
export PKG_CONFIG_PATH="$lib/pkgconfig"
expect_eq "$(pkg-config --modversion session)" "$version" "pkg-config --modversion session"
expect_eq "$(pkg-config --cflags session | xargs)" "-I$prefix/include" "pkg-config --cflags"
expect_eq "$(pkg-config --libs session | xargs)" "-L$lib -lsession" "pkg-config --libs"
native="$(pkg-config --variable=native_libs session)"
[[ " $(pkg-config --static --libs session) " == *" -lpthread "* ]] \
  || fail "Libs.private lacks -lpthread"; ok

run_app() { # run_app NAME [env...] BINARY -> checks version and output
  local name="$1"; shift
  local file="$work/$name.jsonl" out
  rm -f "$file"
  out="$(env "$@" "$file")" || fail "$name exited non-zero"
  expect_eq "$(sed -n 's/^version=//p' <<<"$out")" "$version" "$name: session_version()"
  grep -q '^messages=\[{"role":"user","content":"hello"},{"role":"assistant"' <<<"$out" \
    || fail "$name: unexpected output: $out"; ok
  expect_eq "$(wc -l <"$file")" "2" "$name: lines written"
}
needed() { readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(libsession[^]]*\)\].*/\1/p'; }

step "pkg-config, shared, rpath"
# shellcheck disable=SC2046
cc -std=c99 -Wall -Wextra -Werror -pedantic -o "$work/app_pc" "$here/app.c" \
   $(pkg-config --cflags --libs session) -Wl,-rpath,"$lib"
expect_eq "$(needed "$work/app_pc")" "libsession.so.0" "app_pc NEEDED"
run_app app_pc "$work/app_pc"

step "pkg-config, shared, LD_LIBRARY_PATH"
# shellcheck disable=SC2046
cc -std=c99 -Wall -Wextra -Werror -o "$work/app_pc_ld" "$here/app.c" \
   $(pkg-config --cflags --libs session)
expect_eq "$(needed "$work/app_pc_ld")" "libsession.so.0" "app_pc_ld NEEDED"
if env -u LD_LIBRARY_PATH "$work/app_pc_ld" "$work/unused.jsonl" >/dev/null 2>&1; then
  # Only possible when another libsession.so.0 is on the system's search path.
  printf '   (note: a system libsession.so.0 is visible without LD_LIBRARY_PATH)\n'
fi
run_app app_pc_ld LD_LIBRARY_PATH="$lib" "$work/app_pc_ld"

step "pkg-config, static"
# shellcheck disable=SC2046,SC2086
cc -std=c99 -Wall -Wextra -Werror -o "$work/app_pc_static" "$here/app.c" \
   $(pkg-config --cflags session) "$(pkg-config --variable=libdir session)/libsession.a" $native
expect_eq "$(needed "$work/app_pc_static")" "" "app_pc_static NEEDED (no libsession)"
run_app app_pc_static "$work/app_pc_static"
unset PKG_CONFIG_PATH

# --- CMake --------------------------------------------------------------------------
cmake_consumer() { # cmake_consumer BUILD_DIR PREFIX_PATH [cmake args...]
  local dir="$1" pp="$2"; shift 2
  cmake -S "$here" -B "$dir" -DCMAKE_PREFIX_PATH="$pp" -DCMAKE_BUILD_TYPE=Release \
        -DCMAKE_C_FLAGS="-Wall -Wextra -Werror" "$@" >"$dir.log" 2>&1 \
    || { cat "$dir.log" >&2; fail "cmake configure in $dir"; }
  cmake --build "$dir" >>"$dir.log" 2>&1 || { cat "$dir.log" >&2; fail "cmake build in $dir"; }
  ok
}

step "CMake find_package(session 0.1) -> session::session, session::session_static"
cmake_consumer "$work/cmake" "$prefix"
grep -q "libsession $version: $lib/$real" "$work/cmake.log" \
  || fail "find_package did not report session_VERSION/session_LIBRARY"; ok
expect_eq "$(needed "$work/cmake/app")" "libsession.so.0" "cmake app NEEDED"
expect_eq "$(needed "$work/cmake/app_static")" "" "cmake app_static NEEDED (no libsession)"
run_app cmake_app "$work/cmake/app"
run_app cmake_app_static "$work/cmake/app_static"

step "CMake version checks"
cmake_consumer "$work/cmake-range" "$prefix" -DSESSION_REQUIRED_VERSION="0.1...<1"
major="${version%%.*}"
if cmake -S "$here" -B "$work/cmake-too-new" -DCMAKE_PREFIX_PATH="$prefix" \
         -DSESSION_REQUIRED_VERSION="$((major + 1)).0" >"$work/cmake-too-new.log" 2>&1; then
  fail "find_package(session $((major + 1)).0) accepted version $version"
fi
grep -q 'compatible with requested version' "$work/cmake-too-new.log" \
  || fail "a too-new request failed for another reason (see $work/cmake-too-new.log)"; ok

# --- DESTDIR -----------------------------------------------------------------------
step "DESTDIR=… scripts/install.sh --no-build /opt/session"
DESTDIR="$work/destdir" scripts/install.sh --no-build /opt/session >/dev/null
staged="$work/destdir/opt/session"
if [ ! -f "$staged/lib/$real" ] || [ ! -L "$staged/lib/libsession.so.0" ] \
   || [ ! -f "$staged/include/session.h" ]; then
  fail "DESTDIR install incomplete"
fi
ok
expect_eq "$(sed -n 's/^prefix=//p' "$staged/lib/pkgconfig/session.pc")" "/opt/session" \
  "session.pc prefix under DESTDIR"
# The CMake package is relocatable: the staged tree works where it lies.
cmake_consumer "$work/cmake-destdir" "$staged"
run_app cmake_destdir_app "$work/cmake-destdir/app"

printf 'PASS packaging: %d checks (libsession %s, %s)\n' "$checks" "$version" "$soname"
