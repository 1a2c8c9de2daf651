#!/usr/bin/env bash
# T16: the C tests against an AddressSanitizer build of libsession.a.
#
#   tests/c/run_asan.sh            build (if needed) and run; exit 1 on any failure or
#                                  any AddressSanitizer / LeakSanitizer report
#
# The staticlib is built with -Zsanitizer=address (RUSTC_BOOTSTRAP=1 on stable; the
# --target flag is required for sanitizers) into its own target dir, so the normal build
# is not disturbed; the C programs are built with gcc -fsanitize=address and linked
# against it (gcc's libasan serves as the runtime for both).
#
# Environment: CARGO_TARGET_DIR (default target/asan), ASAN_CTEST_DIR (default
# target/asan-ctest), ASAN_OPTIONS (default below), CC (default gcc).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
triple=x86_64-unknown-linux-gnu
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$root/target/asan}
out=${ASAN_CTEST_DIR:-$root/target/asan-ctest}
cc=${CC:-gcc}
lib=$CARGO_TARGET_DIR/$triple/release/libsession.a
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:halt_on_error=1:strict_string_checks=1}

start=$(date +%s)
echo "== cargo build (staticlib, -Zsanitizer=address) -> $lib"
# The library's features (search, postgres) without the command line's (`cli`): the same
# library code, and none of the CLI's crates built a second time under ASan.
RUSTC_BOOTSTRAP=1 RUSTFLAGS="${RUSTFLAGS:-} -Zsanitizer=address" \
  cargo build --release --target "$triple" --lib --no-default-features \
  --features search,postgres
[ -f "$lib" ] || { echo "FAIL: $lib was not built"; exit 1; }

# program and arguments; the smaller configurations of the threaded tests (T8: 4 x 1,000)
programs=(
  "test_tree"
  "test_errors"
  "test_recovery"
  "test_partial_write"
  "test_threads 4 200"
  "test_stress 4 1000 2"
  "test_hostile_null"
  "test_hostile_utf8"
  "test_hostile_types"
  "test_hostile_json"
  "test_hostile_files"
  "test_hostile_huge --no-rss"
  "test_writers"
)

mkdir -p "$out"
# The list of every function of session.h and the example session's lines, as the CMake
# build generates them.
python3 tests/c/gen_functions.py include/session.h "$out/session_functions.h"
python3 tests/c/gen_example.py examples/tiny-pi.jsonl "$out/session_example.h"
echo "== $cc -fsanitize=address -> $out"
built=()
for p in "${programs[@]}"; do
  name=${p%% *}
  src=tests/c/$name.c
  if [ ! -f "$src" ]; then
    echo "   $name: no $src, skipped"
    continue
  fi
  "$cc" -std=c99 -D_XOPEN_SOURCE=700 -Wall -Wextra -pedantic -g -O1 \
    -fsanitize=address -fno-omit-frame-pointer \
    -Iinclude -Itests/c -I"$out" "$src" "$lib" \
    -lpthread -ldl -lm -lrt -lutil -lgcc_s -o "$out/$name"
  built+=("$p")
done

# The sanitizer is live: a string the library allocated and the caller leaks must be
# reported by LeakSanitizer (so a silently disabled runtime cannot pass this run).
cat >"$out/canary.c" <<'EOF'
#include "session.h"
int main(void)
{
    char *out = 0;
    SessionStatus st = session_parse_entry("{\"id\":\"e\",\"parentId\":null,\"timestamp\":1,"
                                           "\"type\":\"metadata\",\"key\":\"k\",\"value\":1}", &out);
    out = 0; /* leaked on purpose */
    return st;
}
EOF
"$cc" -g -O1 -fsanitize=address -Iinclude "$out/canary.c" "$lib" -lpthread -ldl -lm -lrt -lutil -lgcc_s -o "$out/canary"
if "$out/canary" >"$out/canary.log" 2>&1 || ! grep -q "ERROR: LeakSanitizer" "$out/canary.log"; then
  echo "FAIL: the sanitizer is not live (a deliberate leak was not reported): $out/canary.log"
  exit 1
fi
echo "ok   canary: a deliberate leak of a library string is reported by LeakSanitizer"

failed=0
for p in "${built[@]}"; do
  name=${p%% *}
  args=${p#"$name"}
  log=$out/$name.log
  t0=$(date +%s.%N)
  # shellcheck disable=SC2086 # the arguments are meant to split
  if (cd "$out" && "./$name" $args) >"$log" 2>&1; then rc=0; else rc=$?; fi
  t1=$(date +%s.%N)
  # forked children report on stderr too: any sanitizer report fails the run
  reports=$(grep -c -E "ERROR: (AddressSanitizer|LeakSanitizer)|SUMMARY: AddressSanitizer" "$log" || true)
  secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
  if [ "$rc" -ne 0 ] || [ "$reports" -ne 0 ]; then
    echo "FAIL $name$args (exit $rc, $reports sanitizer report lines, ${secs}s): $log"
    grep -E -A30 "ERROR: (AddressSanitizer|LeakSanitizer)|^FAIL " "$log" | head -60 || tail -20 "$log"
    failed=1
  else
    echo "ok   $name$args (${secs}s): $(tail -1 "$log")"
  fi
done

echo "== ASan run: $(( $(date +%s) - start ))s in all"
exit $failed
