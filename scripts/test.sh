#!/usr/bin/env bash
# Runs every test of libsession: the Rust tests (including the PR tier of the
# reliability harness), the C tests through the real shared and static libraries
# (ctest), once more under valgrind and once against an AddressSanitizer build, the
# packaging, C++, Go and Python checks, the session view in headless chromium, and a
# bounded fuzzing run (FUZZ_SECONDS per target,
# default 30; 0 skips it).
# This is the README's test command (and the last step of .ci/run). It first runs
# scripts/prereqs.sh, which installs missing tools (as root) or stops before any build
# with the command to run; PREREQS_INSTALL=0 makes that a check only.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*"; }

step "prerequisites (scripts/prereqs.sh)"
scripts/prereqs.sh

step "npm ci in tests/interop (pi 0.73.1, for the pi interop test tests/interop_pi.rs)"
(cd tests/interop && npm ci --no-audit --no-fund)

step "npm ci in tests/interop/agents (Claude Code 2.1.332 and Codex 0.171.0 CLIs, for tests/interop_agents.rs)"
(cd tests/interop/agents && npm ci --no-audit --no-fund)

step "cargo test"
cargo test --all-targets

step "loom model of the FIFO (every interleaving, up to 3 preemptions)"
RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 CARGO_TARGET_DIR=target/loom \
  cargo test --release --lib --no-default-features loom_model

step "shuttle model of the FIFO (1,000 random and 1,000 PCT schedules)"
RUSTFLAGS="--cfg shuttle" CARGO_TARGET_DIR=target/shuttle \
  cargo test --release --lib --no-default-features shuttle_model

step "cargo build --release (libsession.so, libsession.a)"
cargo build --release

step "C tests (ctest)"
cmake -S tests/c -B target/ctest -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DSESSION_LIB_DIR="$PWD/target/release" >/dev/null
cmake --build target/ctest --parallel 2
ctest --test-dir target/ctest --output-on-failure -LE valgrind

step "C tests under valgrind"
ctest --test-dir target/ctest --output-on-failure -L valgrind

step "C tests against an AddressSanitizer build of libsession.a"
tests/c/run_asan.sh

step "packaging: install into a prefix, build consumers via pkg-config and CMake"
tests/packaging/run.sh

step "C++17 consumer with RAII (include/session.hpp), under valgrind"
tests/cpp/run.sh

step "Go binding: go vet, go test (shared, -race, static)"
bindings/go/run_tests.sh

step "Python binding: pip install ./bindings/python into target/python-venv, pytest"
bindings/python/run_tests.sh

step "Session view in a real browser: session view pages in headless chromium (Selenium)"
tests/view/run.sh

fuzz_seconds=${FUZZ_SECONDS:-30}
if [ "$fuzz_seconds" != 0 ]; then
  SKIP_TESTS=1 FUZZ_SECONDS="$fuzz_seconds" scripts/reliability.sh
else
  step "fuzzing skipped: FUZZ_SECONDS=0"
fi

printf '\nall tests passed\n'
