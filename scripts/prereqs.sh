#!/usr/bin/env bash
# Checks, in seconds and before anything is built, every tool that scripts/test.sh (and
# .ci/run) needs beyond the Rust toolchain, and installs what is missing:
#
#   system packages  cmake, valgrind, pkg-config, g++, strace, Go (golang-go), python3
#                    with venv and pip, node and npm, chromium and
#                    chromium-driver, postgresql (the server binaries that the
#                    PostgreSQL store's tests start a throwaway cluster of)
#                                                       -> apt-get install (root only)
#   Rust components  rustfmt, clippy                    -> rustup component add
#   cargo tools      cargo-fuzz                         -> cargo install --locked
#   optional         libsqlite3-dev (only scripts/bench.sh's SQLite peer): installed
#                    when apt-get can run, never required
#
#   scripts/prereqs.sh          check; install what is missing; exit 0 when all present
#   scripts/prereqs.sh --check  check only: print what is missing and the exact commands
#                               to install it, exit 1 (PREREQS_INSTALL=0 does the same)
#
# apt-get runs only as root on a Debian-like system; otherwise the script stops with
# the command to run (with sudo) so that the caller never starts a build it cannot finish.
set -euo pipefail

install=${PREREQS_INSTALL:-1}
[ "${1:-}" = "--check" ] && install=0

apt_missing=()   # Debian package names
rustup_missing=() # rustup components
cargo_missing=()  # crates for cargo install
described=()      # "what: why" lines for the report
optional_apt=()   # Debian packages only the benchmark needs: never make the check fail

need_apt() { apt_missing+=("$1"); described+=("$2"); }

# One line per prerequisite: the probe, the Debian package, and which step needs it.
check_all() {
  apt_missing=() rustup_missing=() cargo_missing=() described=() optional_apt=()
  printf '#include <sqlite3.h>\n' | cc -E -x c - >/dev/null 2>&1 || optional_apt+=(libsqlite3-dev)
  command -v cmake >/dev/null || need_apt cmake "cmake: builds the C tests (ctest)"
  command -v valgrind >/dev/null || need_apt valgrind "valgrind: the C and C++ tests under valgrind"
  command -v pkg-config >/dev/null || need_apt pkg-config "pkg-config: packaging and Go binding tests"
  command -v c++ >/dev/null || need_apt g++ "g++: the C++ consumer and AddressSanitizer runtime"
  command -v strace >/dev/null || need_apt strace "strace: the fsync and ENOSPC syscall checks"
  ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 \
    || need_apt postgresql "postgresql: initdb and pg_ctl for the PostgreSQL store's tests"
  command -v go >/dev/null || need_apt golang-go "go: the Go binding tests"
  if ! command -v python3 >/dev/null; then
    need_apt python3 "python3: the Python binding tests"
    need_apt python3-venv "python3 venv: an isolated environment for the Python binding"
    need_apt python3-pip "pip: installs the Python binding into that environment"
  else
    python3 -c 'import venv, ensurepip' 2>/dev/null \
      || need_apt python3-venv "python3 venv: an isolated environment for the Python binding"
    python3 -m pip --version >/dev/null 2>&1 \
      || need_apt python3-pip "pip: installs the Python binding into that environment"
  fi
  command -v chromium >/dev/null || need_apt chromium "chromium: the session view's browser tests (tests/view/run.sh)"
  command -v chromedriver >/dev/null \
    || need_apt chromium-driver "chromium-driver: drives chromium for the session view's tests"
  command -v node >/dev/null || need_apt nodejs "node: the interop tests against pi's own code"
  command -v npm >/dev/null || need_apt npm "npm: installs pi's package for the interop tests"
  cargo fmt --version >/dev/null 2>&1 \
    || { rustup_missing+=(rustfmt); described+=("rustfmt: the formatting check"); }
  cargo clippy --version >/dev/null 2>&1 \
    || { rustup_missing+=(clippy); described+=("clippy: the lint check"); }
  cargo fuzz --version >/dev/null 2>&1 \
    || { cargo_missing+=(cargo-fuzz); described+=("cargo-fuzz: the bounded fuzzing step"); }
}

missing_count() { echo $((${#apt_missing[@]} + ${#rustup_missing[@]} + ${#cargo_missing[@]})); }

# The exact commands that would install what is missing, one per line.
commands() {
  local sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo "
  if [ ${#apt_missing[@]} -gt 0 ]; then
    echo "${sudo}apt-get update && ${sudo}apt-get install -y --no-install-recommends ${apt_missing[*]}"
  fi
  [ ${#rustup_missing[@]} -eq 0 ] || echo "rustup component add ${rustup_missing[*]}"
  [ ${#cargo_missing[@]} -eq 0 ] || echo "cargo install ${cargo_missing[*]} --locked"
}

report_and_stop() {
  echo "prereqs: missing before scripts/test.sh can run:" >&2
  printf '  - %s\n' "${described[@]}" >&2
  echo "prereqs: install them with:" >&2
  commands | sed 's/^/  /' >&2
  exit 1
}

check_all
if [ ${#optional_apt[@]} -gt 0 ]; then
  if [ "$install" = 1 ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "prereqs: apt-get install ${optional_apt[*]} (only the benchmark's SQLite peer needs it)"
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
      --no-install-recommends "${optional_apt[@]}"; } \
      || echo "prereqs: could not install ${optional_apt[*]}: scripts/bench.sh will skip its SQLite step"
  else
    echo "prereqs: optional, for scripts/bench.sh's SQLite step only: apt-get install ${optional_apt[*]}"
  fi
fi
if [ "$(missing_count)" = 0 ]; then
  echo "prereqs: all present"
  exit 0
fi
[ "$install" = 1 ] || report_and_stop

# apt-get only as root on a machine that has it; anything else is the caller's to run.
if [ ${#apt_missing[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
    report_and_stop
  fi
  echo "prereqs: apt-get install ${apt_missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    "${apt_missing[@]}"
fi
if [ ${#rustup_missing[@]} -gt 0 ]; then
  echo "prereqs: rustup component add ${rustup_missing[*]}"
  rustup component add "${rustup_missing[@]}" || report_and_stop
fi
if [ ${#cargo_missing[@]} -gt 0 ]; then
  # Fuzzing runs on the stable toolchain with RUSTC_BOOTSTRAP=1 (no nightly needed).
  echo "prereqs: cargo install ${cargo_missing[*]} --locked (a few minutes, once)"
  cargo install "${cargo_missing[@]}" --locked || report_and_stop
fi

check_all
[ "$(missing_count)" = 0 ] || report_and_stop
echo "prereqs: all present (installed what was missing)"
