#!/usr/bin/env bash
# Runs every test of libsession: the Rust tests, then the C tests through the real
# shared and static libraries (ctest), then the C tests once more under valgrind.
# This is the README's test command; .ci/run calls it after installing what it needs.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*"; }

step "cargo test"
cargo test --all-targets

step "cargo build --release (libsession.so, libsession.a)"
cargo build --release

step "C tests (ctest)"
cmake -S tests/c -B target/ctest -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DSESSION_LIB_DIR="$PWD/target/release" >/dev/null
cmake --build target/ctest --parallel 2
ctest --test-dir target/ctest --output-on-failure -LE valgrind

step "C tests under valgrind"
ctest --test-dir target/ctest --output-on-failure -L valgrind

step "packaging: install into a prefix, build consumers via pkg-config and CMake"
tests/packaging/run.sh

step "C++17 consumer with RAII (include/session.hpp), under valgrind"
tests/cpp/run.sh

step "Go binding: go vet, go test (shared, -race, static)"
bindings/go/run_tests.sh

printf '\nall tests passed\n'
