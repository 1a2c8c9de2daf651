#!/usr/bin/env bash
# Installs libsession for C, C++, Go and Swift consumers:
#
#   PREFIX/include/session.h (and session.hpp, the C++ layer, when include/ has it)
#   PREFIX/lib/libsession.so.X.Y.Z, libsession.so.N -> …X.Y.Z, libsession.so -> …so.N
#   PREFIX/lib/libsession.a
#   PREFIX/lib/pkgconfig/session.pc
#   PREFIX/lib/cmake/session/sessionConfig.cmake, sessionConfigVersion.cmake
#
# Usage: scripts/install.sh [--no-build|--build-only] [PREFIX]   (PREFIX: /usr/local)
#        DESTDIR=/tmp/pkgroot scripts/install.sh /usr    (staged install, for packagers)
#
# It runs `cargo build --release` first (a no-op when the build is current), unless
# --no-build is given or cargo is not on PATH (e.g. under sudo): then it installs the
# artifacts already in target/release, built by an earlier run of this script. So a
# system install is:  scripts/install.sh --build-only && sudo scripts/install.sh
# The version comes from Cargo.toml, the SONAME from the built library (build.rs sets
# it), and the static library's native dependencies from rustc itself. Running it twice
# gives the same tree. Files are replaced by rename, so running programs that have the
# old library mapped keep working. As root, without DESTDIR, into /usr or /usr/local,
# it runs ldconfig.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
release="$repo/target/release"
native_cache="$release/libsession.native-static-libs"

die() { printf 'install.sh: %s\n' "$*" >&2; exit 1; }

build=auto
case "${1:-}" in
  -h|--help) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  --no-build) build=no; shift ;;
  --build-only) build=only; shift ;;
  -*) die "unknown option $1 (see --help)" ;;
esac
[ $# -le 1 ] || die "usage: scripts/install.sh [--no-build|--build-only] [PREFIX]"
[ "$build" != only ] || [ $# -eq 0 ] || die "--build-only takes no PREFIX"

prefix="${1:-/usr/local}"
if [ "$build" != only ]; then
  case "$prefix" in
    /*) ;;
    *) mkdir -p -- "$prefix" && prefix="$(cd -- "$prefix" && pwd)" ;;  # make it absolute
  esac
fi
prefix="${prefix%/}"
[ -n "$prefix" ] || prefix="/"  # PREFIX=/ is odd but valid
destdir="${DESTDIR:-}"
destdir="${destdir%/}"

# --- version, from Cargo.toml's [package] table (the single source) ---------------
version="$(awk '
  /^\[/ { in_pkg = ($0 == "[package]") }
  in_pkg && /^version[ \t]*=/ { sub(/^[^"]*"/, ""); sub(/".*$/, ""); print; exit }
' "$repo/Cargo.toml")"
[[ "$version" =~ ^[0-9]+\.[0-9]+\.[0-9]+([-+][0-9A-Za-z.+-]*)?$ ]] \
  || die "cannot read [package] version from Cargo.toml (got '$version')"
version_core="${version%%[-+]*}"   # libsession.so.X.Y.Z carries no pre-release tag
version_major="${version_core%%.*}"

# --- build ------------------------------------------------------------------------
if [ "$build" = only ] && ! command -v cargo >/dev/null 2>&1; then
  die "--build-only needs cargo on PATH"
fi
if [ "$build" != no ] && command -v cargo >/dev/null 2>&1; then
  (cd "$repo" && cargo build --release --lib --quiet)
  # The native libraries a program linking libsession.a statically also needs, as
  # rustc reports them (cached by cargo: a no-op when the build is current).
  native="$(cd "$repo" && cargo rustc --release --lib --quiet --crate-type staticlib \
              -- --print native-static-libs 2>&1 \
            | sed -n 's/.*native-static-libs: *//p' | tail -n 1)"
  [ -n "$native" ] || die "rustc did not report the static library's native libs"
  printf '%s\n' "$native" >"$native_cache.tmp" && mv -f "$native_cache.tmp" "$native_cache"
  if [ "$build" = only ]; then
    printf 'built libsession %s in %s\n' "$version" "$release"
    exit 0
  fi
else
  [ "$build" = no ] || printf 'install.sh: cargo is not on PATH; installing the build in %s\n' \
    "$release" >&2
  [ -f "$native_cache" ] \
    || die "no $native_cache: run 'scripts/install.sh --build-only' first, where cargo is on PATH"
  native="$(cat "$native_cache")"
fi
for f in "$release/libsession.so" "$release/libsession.a" "$repo/include/session.h"; do
  [ -f "$f" ] || die "missing $f"
done

command -v readelf >/dev/null 2>&1 || die "readelf (binutils) is required"
soname="$(readelf -d "$release/libsession.so" \
          | sed -n 's/.*(SONAME).*\[\(.*\)\].*/\1/p')"
[[ "$soname" =~ ^libsession\.so\.[0-9]+$ ]] \
  || die "target/release/libsession.so has SONAME '$soname', expected libsession.so.<major>"
real="libsession.so.$version_core"

# --- install ----------------------------------------------------------------------
root="$destdir$prefix"
[ "$prefix" = "/" ] && root="$destdir"
inc="$root/include"
lib="$root/lib"
pcdir="$lib/pkgconfig"
cmakedir="$lib/cmake/session"
mkdir -p -- "$inc" "$lib" "$pcdir" "$cmakedir"

# Temporary files beside their destination; removed if the script stops half-way.
tmp=""
trap 'rm -f -- "${tmp:-}"' EXIT

# put SRC DEST MODE: copy to a temporary name beside DEST, then rename over it.
put() {
  tmp="$(mktemp "$2.tmp.XXXXXX")"
  cp -- "$1" "$tmp"
  chmod "$3" "$tmp"
  mv -f -- "$tmp" "$2"
  tmp=""
}
# link TARGET NAME: NAME -> TARGET (relative), replaced by rename.
link() {
  tmp="$lib/.$2.tmp.$$"
  ln -sfn -- "$1" "$tmp"
  mv -Tf -- "$tmp" "$lib/$2"
  tmp=""
}

put "$repo/include/session.h" "$inc/session.h" 0644
# The optional header-only C++ layer, when the tree ships one.
if [ -f "$repo/include/session.hpp" ]; then
  put "$repo/include/session.hpp" "$inc/session.hpp" 0644
fi
put "$release/libsession.so" "$lib/$real" 0755
link "$real" "$soname"
link "$soname" libsession.so
put "$release/libsession.a" "$lib/libsession.a" 0644

# pkg-config. The paths name the final PREFIX, not DESTDIR.
pc_prefix="$prefix"; [ "$prefix" = "/" ] && pc_prefix=""
tmp="$(mktemp "$pcdir/session.pc.tmp.XXXXXX")"
cat >"$tmp" <<EOF
prefix=$pc_prefix
exec_prefix=\${prefix}
libdir=\${exec_prefix}/lib
includedir=\${prefix}/include
# Static linking: cc app.c \$(pkg-config --cflags session) \${libdir}/libsession.a \${native_libs}
# (native_libs is what rustc --print native-static-libs reports for libsession.a)
native_libs=$native

Name: session
Description: libsession, an append-only session tree for AI coding agents (C ABI)
Version: $version
Cflags: -I\${includedir}
Libs: -L\${libdir} -lsession
Libs.private: \${native_libs}
EOF
chmod 0644 "$tmp"; mv -f -- "$tmp" "$pcdir/session.pc"; tmp=""

# CMake package. Paths are relative to the file itself, so the tree stays relocatable
# (a DESTDIR staging tree works as it is).
cmake_libs=""
for l in $native; do cmake_libs="${cmake_libs:+$cmake_libs;}$l"; done
tmp="$(mktemp "$cmakedir/sessionConfig.cmake.tmp.XXXXXX")"
cat >"$tmp" <<EOF
# sessionConfig.cmake -- CMake package of libsession $version, written by scripts/install.sh.
#
#   find_package(session 0.1 REQUIRED)
#   target_link_libraries(app PRIVATE session::session)         # libsession.so
#   target_link_libraries(app PRIVATE session::session_static)  # libsession.a
#
# Sets session_VERSION, session_INCLUDE_DIR, session_LIBRARY, session_STATIC_LIBRARY.

get_filename_component(_session_prefix "\${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)

set(session_INCLUDE_DIR "\${_session_prefix}/include")
set(session_LIBRARY "\${_session_prefix}/lib/$real")
set(session_STATIC_LIBRARY "\${_session_prefix}/lib/libsession.a")

foreach(_session_file IN ITEMS "\${session_INCLUDE_DIR}/session.h" "\${session_LIBRARY}"
                               "\${session_STATIC_LIBRARY}")
  if(NOT EXISTS "\${_session_file}")
    set(session_FOUND FALSE)
    set(session_NOT_FOUND_MESSAGE "libsession is incomplete: \${_session_file} is missing")
    unset(_session_prefix)
    unset(_session_file)
    return()
  endif()
endforeach()

if(NOT TARGET session::session)
  add_library(session::session SHARED IMPORTED)
  set_target_properties(session::session PROPERTIES
    IMPORTED_LOCATION "\${session_LIBRARY}"
    IMPORTED_SONAME "$soname"
    INTERFACE_INCLUDE_DIRECTORIES "\${session_INCLUDE_DIR}")
endif()

if(NOT TARGET session::session_static)
  add_library(session::session_static STATIC IMPORTED)
  set_target_properties(session::session_static PROPERTIES
    IMPORTED_LOCATION "\${session_STATIC_LIBRARY}"
    IMPORTED_LINK_INTERFACE_LANGUAGES "C"
    INTERFACE_INCLUDE_DIRECTORIES "\${session_INCLUDE_DIR}"
    # What rustc reports for the staticlib (--print native-static-libs).
    INTERFACE_LINK_LIBRARIES "$cmake_libs")
endif()

unset(_session_prefix)
unset(_session_file)
EOF
chmod 0644 "$tmp"; mv -f -- "$tmp" "$cmakedir/sessionConfig.cmake"; tmp=""

tmp="$(mktemp "$cmakedir/sessionConfigVersion.cmake.tmp.XXXXXX")"
cat >"$tmp" <<EOF
# sessionConfigVersion.cmake -- written by scripts/install.sh.
# Compatible when the major version is the same and the installed version is not older
# than the one requested (CMake's SameMajorVersion rule): within one major version the
# C ABI only grows. The library is built for 64-bit targets only.
set(PACKAGE_VERSION "$version_core")

set(PACKAGE_VERSION_COMPATIBLE FALSE)
set(PACKAGE_VERSION_EXACT FALSE)
if(PACKAGE_FIND_VERSION_RANGE)
  # find_package(session 0.1...0.3): the installed version must lie in the range, and
  # the range must not cross a major version.
  if(PACKAGE_FIND_VERSION_MIN_MAJOR STREQUAL "$version_major"
     AND NOT PACKAGE_VERSION VERSION_LESS PACKAGE_FIND_VERSION_MIN
     AND ((PACKAGE_FIND_VERSION_RANGE_MAX STREQUAL "INCLUDE"
           AND NOT PACKAGE_VERSION VERSION_GREATER PACKAGE_FIND_VERSION_MAX)
          OR (PACKAGE_FIND_VERSION_RANGE_MAX STREQUAL "EXCLUDE"
           AND PACKAGE_VERSION VERSION_LESS PACKAGE_FIND_VERSION_MAX)))
    set(PACKAGE_VERSION_COMPATIBLE TRUE)
  endif()
elseif(NOT DEFINED PACKAGE_FIND_VERSION OR PACKAGE_FIND_VERSION STREQUAL "")
  set(PACKAGE_VERSION_COMPATIBLE TRUE)
elseif(PACKAGE_FIND_VERSION_MAJOR STREQUAL "$version_major"
       AND NOT PACKAGE_VERSION VERSION_LESS PACKAGE_FIND_VERSION)
  set(PACKAGE_VERSION_COMPATIBLE TRUE)
  if(PACKAGE_FIND_VERSION STREQUAL PACKAGE_VERSION)
    set(PACKAGE_VERSION_EXACT TRUE)
  endif()
endif()

if(DEFINED CMAKE_SIZEOF_VOID_P AND NOT CMAKE_SIZEOF_VOID_P STREQUAL ""
   AND NOT CMAKE_SIZEOF_VOID_P STREQUAL "8")
  set(PACKAGE_VERSION "\${PACKAGE_VERSION} (64-bit)")
  set(PACKAGE_VERSION_UNSUITABLE TRUE)
endif()
EOF
chmod 0644 "$tmp"; mv -f -- "$tmp" "$cmakedir/sessionConfigVersion.cmake"; tmp=""

# A system-wide install without DESTDIR: refresh the dynamic linker's cache.
if [ -z "$destdir" ] && [ "$(id -u)" = 0 ] && command -v ldconfig >/dev/null 2>&1; then
  case "$prefix" in /usr|/usr/local) ldconfig ;; esac
fi

printf 'installed libsession %s (%s) into %s%s\n' "$version" "$soname" "$destdir" "$prefix"
