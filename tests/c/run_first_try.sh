#!/bin/sh
# Issue: "a C developer's first try does not run". After `cargo build --release`, exactly
# the README's command -- cc app.c -Iinclude -Ltarget/release -lsession
# -Wl,-rpath,$PWD/target/release -- must build a program that starts: the build tree
# holds the link the SONAME names (libsession.so.0 -> libsession.so, made by build.rs).
# usage: run_first_try.sh REPO_ROOT LIB_DIR WORK_DIR
set -eu
root=$1 lib=$2 work=$3
mkdir -p "$work"
cat > "$work/app.c" <<'C'
#include <session.h>
#include <stdio.h>
int main(void) { printf("%s\n", session_version()); return 0; }
C
cc "$work/app.c" -I"$root/include" -L"$lib" -lsession -Wl,-rpath,"$lib" -o "$work/app"
out=$("$work/app")
test -n "$out" || { echo "app printed nothing" >&2; exit 1; }
echo "first try runs: session_version() = $out"
