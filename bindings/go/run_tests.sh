#!/usr/bin/env bash
# Go binding tests, offline: stages libsession with scripts/install.sh into target/stage,
# points pkg-config and the binary's rpath at it, then runs
#   gofmt -l, go vet ./..., go test ./...            (shared library, via pkg-config)
#   go test -race ./...                              (where the race detector exists;
#                                                     SESSION_GO_RACE=0 skips it)
#   go vet + go test -tags session_nopkgconfig ./... (libsession.a linked statically)
#
#   bindings/go/run_tests.sh [PREFIX]   PREFIX defaults to target/stage
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
prefix="${1:-$repo/target/stage}"

command -v go >/dev/null || { echo "run_tests.sh: go is not installed (apt-get install golang-go)" >&2; exit 1; }
"$repo/scripts/install.sh" "$prefix" >/dev/null
prefix="$(cd "$prefix" && pwd)"

# No network: no module downloads (the module has no dependencies), no toolchain switch.
export GOPROXY=off GOFLAGS=-mod=mod GOTOOLCHAIN=local GO111MODULE=on CGO_ENABLED=1
[ -n "${HOME:-}" ] || [ -n "${GOCACHE:-}" ] || export GOCACHE="$repo/target/go-build-cache"
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
export CGO_LDFLAGS="-Wl,-rpath,$prefix/lib"
# Go's build cache does not hash C headers outside the package: name the header's
# content in the flags so that a changed session.h recompiles the binding.
header_sum="$(sha256sum "$prefix/include/session.h" | cut -c1-16)"
export CGO_CFLAGS="-g -O2 -DSESSION_HEADER_SHA256_PREFIX=0x$header_sum"
SESSION_EXPECTED_VERSION="$(pkg-config --modversion session)"
export SESSION_EXPECTED_VERSION

cd "$here"
step() { printf -- '-- %s\n' "$*"; }

goline="$(sed -n 's/^go \([0-9.]*\)$/\1/p' go.mod)"
[ "$(printf '%s\n1.19\n' "$goline" | sort -V | tail -n 1)" = "1.19" ] \
  || { echo "go.mod asks for go $goline; Debian's golang-go is 1.19" >&2; exit 1; }

step "gofmt"
unformatted="$(gofmt -l .)"
[ -z "$unformatted" ] || { echo "gofmt needed: $unformatted" >&2; exit 1; }

step "go vet ./... && go test ./...   ($(go version | cut -d' ' -f3), libsession $SESSION_EXPECTED_VERSION, shared)"
go vet ./...
go test -count=1 ./...

case "${SESSION_GO_RACE:-1}:$(go env GOOS)/$(go env GOARCH)" in
  1:linux/amd64|1:linux/arm64)
    step "go test -race ./..."
    go test -count=1 -race ./...
    ;;
esac

step "go test -tags session_nopkgconfig ./...   (libsession.a, static)"
(
  export CGO_CFLAGS="$CGO_CFLAGS -I$prefix/include"
  CGO_LDFLAGS="$prefix/lib/libsession.a $(pkg-config --variable=native_libs session)"
  export CGO_LDFLAGS
  go vet -tags session_nopkgconfig ./...
  go test -count=1 -tags session_nopkgconfig ./...
)
step "go test -run Postgres ./...   (against a throwaway PostgreSQL cluster: tests/c/run_pg.sh)"
# 77: run_pg.sh found no PostgreSQL server binaries and said so; anything else fails.
"$repo/tests/c/run_pg.sh" go test -count=1 -run Postgres ./... || [ $? = 77 ]
echo "PASS go binding"
