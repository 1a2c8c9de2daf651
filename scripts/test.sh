#!/usr/bin/env bash
# Runs the tests of libsession, all of them by default, or the named slices:
#
#   ./scripts/test.sh                 every slice, in the order below
#   ./scripts/test.sh rust pg         only these slices
#   ./scripts/test.sh --list          the slices, one a line, with what each runs
#
# The slices:
#   rust         cargo test of the library, the binary, the examples and every test crate
#                of Cargo.toml that no slice below names (suite_store, suite_context,
#                suite_cli, suite_docs, search; needs only the Rust toolchain)
#   reliability  the reliability harness's bounded tests (scripts/reliability.sh --list:
#                suite_reliability, reliability_resources), the loom and shuttle models
#   pg           the PostgreSQL store's tests against throwaway servers (pg_store)
#   agents       the interop tests that run pi, Claude Code and Codex themselves
#                (suite_agents: interop_pi, interop_export, interop_agents; npm ci first)
#   c            the C tests through the real libsession.so/.a (ctest), again under
#                valgrind and against an AddressSanitizer build; packaging
#   cpp          the C++17 consumer (include/session.hpp) under valgrind
#   go           the Go binding: go vet, go test (shared, -race, static)
#   python       the Python binding in a virtualenv, pytest
#   view         the session view in headless chromium (Selenium)
#   fuzz         FUZZ_SECONDS (default 30; 0 skips) of fuzzing per target
#
# This is the README's test command (and the last step of .ci/run). It first runs
# scripts/prereqs.sh, which installs missing tools (as root) or stops before any build
# with the command to run; PREREQS_INSTALL=0 makes that a check only. At the end it prints
# each slice's wall time.
set -euo pipefail
cd "$(dirname "$0")/.."

all=(rust reliability pg agents c cpp go python view fuzz)

describe() {
  sed -n '/^# The slices:/,/^#$/p' "$0" | sed -e '1d' -e '$d' -e 's/^#   //'
}

if [ "${1:-}" = "--list" ] || [ "${1:-}" = "-h" ] || [ "${1:-}" = "--help" ]; then
  describe
  exit 0
fi

slices=("$@")
[ ${#slices[@]} -eq 0 ] && slices=("${all[@]}")
for s in "${slices[@]}"; do
  case " ${all[*]} " in
    *" $s "*) ;;
    *) echo "scripts/test.sh: unknown slice '$s'; the slices are: ${all[*]}" >&2; exit 64 ;;
  esac
done

step() { printf '\n==> %s\n' "$*"; }

# The test crates (Cargo.toml's [[test]] entries: each a root in tests/ whose modules are
# the other files there) that the rust slice leaves to another slice.
pg_tests=(pg_store)
agent_tests=(suite_agents)
mapfile -t reliability_tests < <(scripts/reliability.sh --list)
mapfile -t test_crates < <(sed -n '/^\[\[test\]\]/,/^name/s/^name = "\(.*\)"/\1/p' Cargo.toml)

rust_slice() {
  local args=(--lib --bins --examples --benches) name names=()
  for name in "${test_crates[@]}"; do
    case " ${pg_tests[*]} ${agent_tests[*]} ${reliability_tests[*]} " in
      *" $name "*) ;;
      *) args+=(--test "$name"); names+=("$name") ;;
    esac
  done
  step "cargo test (the rust slice: the library, binary, examples, benches and ${names[*]})"
  cargo test "${args[@]}"
}

reliability_slice() {
  local args=() name
  for name in "${reliability_tests[@]}"; do args+=(--test "$name"); done
  step "cargo test of the reliability harness (${reliability_tests[*]})"
  cargo test "${args[@]}"

  step "loom model of the FIFO (every interleaving, up to 3 preemptions)"
  RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 CARGO_TARGET_DIR=target/loom \
    cargo test --release --lib --no-default-features loom_model

  step "shuttle model of the FIFO (1,000 random and 1,000 PCT schedules)"
  RUSTFLAGS="--cfg shuttle" CARGO_TARGET_DIR=target/shuttle \
    cargo test --release --lib --no-default-features shuttle_model
}

pg_slice() {
  step "cargo test --test pg_store (throwaway PostgreSQL clusters)"
  cargo test --test pg_store
}

agents_slice() {
  step "npm ci in tests/interop (pi 0.73.1, for tests/interop_pi.rs and interop_export.rs)"
  (cd tests/interop && npm ci --no-audit --no-fund)
  step "npm ci in tests/interop/agents (Claude Code 2.1.332 and Codex 0.171.0 CLIs)"
  (cd tests/interop/agents && npm ci --no-audit --no-fund)
  local args=() name
  for name in "${agent_tests[@]}"; do args+=(--test "$name"); done
  step "cargo test ${args[*]}"
  cargo test "${args[@]}"
}

c_slice() {
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
}

cpp_slice() {
  step "cargo build --release (libsession.so, libsession.a)"
  cargo build --release
  step "C++17 consumer with RAII (include/session.hpp), under valgrind"
  tests/cpp/run.sh
}

go_slice() {
  step "Go binding: go vet, go test (shared, -race, static)"
  bindings/go/run_tests.sh
}

python_slice() {
  step "Python binding: pip install ./bindings/python into target/python-venv, pytest"
  bindings/python/run_tests.sh
}

view_slice() {
  step "Session view in a real browser: session view pages in headless chromium (Selenium)"
  tests/view/run.sh
}

fuzz_slice() {
  local fuzz_seconds=${FUZZ_SECONDS:-30}
  if [ "$fuzz_seconds" = 0 ]; then
    step "fuzzing skipped: FUZZ_SECONDS=0"
    return
  fi
  SKIP_TESTS=1 FUZZ_SECONDS="$fuzz_seconds" scripts/reliability.sh
}

# The rust and reliability slices need only the Rust toolchain; the others, the tools
# that scripts/prereqs.sh checks for and installs.
needs_prereqs=0
for s in "${slices[@]}"; do
  case "$s" in rust | reliability) ;; *) needs_prereqs=1 ;; esac
done
if [ "$needs_prereqs" = 1 ]; then
  step "prerequisites (scripts/prereqs.sh)"
  scripts/prereqs.sh
fi

times=()
for s in "${slices[@]}"; do
  started=$(date +%s)
  "${s}_slice"
  times+=("$(printf '%-12s %5d s' "$s" $(( $(date +%s) - started )))")
done

step "wall time per slice"
printf '  %s\n' "${times[@]}"
printf '\nall tests passed (slices: %s)\n' "${slices[*]}"
