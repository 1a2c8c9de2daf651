#!/usr/bin/env bash
# The reliability harness of libsession (docs/reliability.md) on demand:
# runs every reliability test with its output shown and ends with the figures.
#
#   scripts/reliability.sh            PR tier: the bounded tests that `cargo test` also
#                                     runs (debug build), the corpus replay, the known-bug
#                                     tests (reported, not failing), and FUZZ_SECONDS
#                                     (default 0: skipped) per fuzz target.
#   SOAK=1 scripts/reliability.sh     soak tier, release build: T1 every offset, the full
#                                     T3 census (also with the session index), 20,000
#                                     kill -9 cycles (each compared with and without the
#                                     session index), 16 x 10,000
#                                     appends, 100,000 state-machine cases, and 600 s
#                                     (10 CPU-minutes) per fuzz target, two at once.
#   scripts/reliability.sh --list     prints the reliability test targets, one a line.
#
# Knobs: FUZZ_SECONDS=N (seconds per fuzz target), SKIP_TESTS=1 (fuzzing only: the tests
# ran already, e.g. from scripts/test.sh), FUZZ_SANITIZER=none (if the ASan
# build fails), SESSION_SEED=N (replay another seed), SESSION_T6_CYCLES, PROPTEST_CASES.
# Logs go to target/reliability/. Exit status: non-zero if any test or fuzz target fails.
set -euo pipefail
cd "$(dirname "$0")/.."

soak=${SOAK:-0}
profile=()
fuzz_seconds=${FUZZ_SECONDS:-0}
if [ "$soak" = 1 ]; then
  profile=(--release)
  fuzz_seconds=${FUZZ_SECONDS:-600}
fi
export SOAK="$soak"
logs=target/reliability
mkdir -p "$logs"
status=0

step() { printf '\n==> %s\n' "$*"; }

# The test crates (Cargo.toml). suite_reliability's modules are the files of tests/:
# reliability_recovery (T1 T2 T3 T19), reliability_faults (T4 T20b), reliability_crash
# (T6), reliability_concurrency (T8-lite), reliability_model (T11), reliability_limits
# (T18), fuzz_corpus (T15) and index_reliability (T27: T1-T4, T7 with the session index).
# T17 counts the process's descriptors and memory, so it is a binary of its own.
tests=(
  --test suite_reliability
  --test reliability_resources # T17
)

# `scripts/reliability.sh --list`: the test targets above, one name a line (scripts/test.sh
# runs them in its reliability slice and leaves them out of its rust slice).
if [ "${1:-}" = "--list" ]; then
  printf '%s\n' "${tests[@]}" | grep -v '^--test$'
  exit 0
fi

: >"$logs/tests.log"
if [ "${SKIP_TESTS:-0}" != 1 ]; then
  step "reliability tests ($([ "$soak" = 1 ] && echo "soak tier, release" || echo "PR tier, debug"))"
  started=$(date +%s)
  if ! cargo test --no-fail-fast "${profile[@]}" "${tests[@]}" -- --nocapture 2>&1 | tee "$logs/tests.log"; then
    status=1
  fi
  echo "tests: $(( $(date +%s) - started )) s wall"

  step "known-bug tests (#[ignore = \"BUG: …\"]): reported, not counted as failures"
  cargo test --no-fail-fast "${profile[@]}" "${tests[@]}" -- --ignored --nocapture \
    >"$logs/known-bugs.log" 2>&1 || true
  ran=$(grep -cE '^test .* \.\.\. (ok|FAILED)$' "$logs/known-bugs.log" || true)
  if [ "$ran" -eq 0 ]; then
    echo "none"
  else
    grep -E '^test .* \.\.\. (ok|FAILED)$' "$logs/known-bugs.log" \
      | sed -e 's/ \.\.\. ok$/: passes now, remove its #[ignore]/' -e 's/ \.\.\. FAILED$/: still failing/'
  fi
fi

fuzz_one() { # target seconds
  local target=$1 seconds=$2 work="fuzz/corpus-work/$1" log="$logs/fuzz-$1.log"
  mkdir -p "$work"
  local san=()
  [ -n "${FUZZ_SANITIZER:-}" ] && san=(-s "$FUZZ_SANITIZER")
  # New inputs go to the work folder; the committed seeds in fuzz/corpus stay small.
  if RUSTC_BOOTSTRAP=1 cargo fuzz run "${san[@]}" "$target" "$work" "fuzz/corpus/$target" -- \
      -max_total_time="$seconds" -print_final_stats=1 >"$log" 2>&1; then
    echo "fuzz $target: $(grep -E '^Done' "$log" | tail -1), 0 crashes"
  else
    echo "fuzz $target: FAILED, see $log and fuzz/artifacts/$target/ (a crash input there is"
    echo "  replayed by tests/fuzz_corpus.rs from now on)"
    return 1
  fi
}

if [ "$fuzz_seconds" -gt 0 ]; then
  step "fuzzing: $fuzz_seconds s per target (parse_entry, recover_jsonl, path_to, build_context, import, index_reader, index_writer)"
  command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked
  RUSTC_BOOTSTRAP=1 cargo fuzz build ${FUZZ_SANITIZER:+-s "$FUZZ_SANITIZER"} >"$logs/fuzz-build.log" 2>&1 \
    || { echo "cargo fuzz build failed: see $logs/fuzz-build.log (try FUZZ_SANITIZER=none)"; exit 1; }
  # Two targets at once on two cores, three times; then the last one.
  fuzz_one parse_entry "$fuzz_seconds" >"$logs/fuzz-parse_entry.summary" &
  first=$!
  fuzz_one recover_jsonl "$fuzz_seconds" >"$logs/fuzz-recover_jsonl.summary" || status=1
  wait "$first" || status=1
  fuzz_one path_to "$fuzz_seconds" >"$logs/fuzz-path_to.summary" &
  first=$!
  fuzz_one build_context "$fuzz_seconds" >"$logs/fuzz-build_context.summary" || status=1
  wait "$first" || status=1
  fuzz_one import "$fuzz_seconds" >"$logs/fuzz-import.summary" &
  first=$!
  fuzz_one index_reader "$fuzz_seconds" >"$logs/fuzz-index_reader.summary" || status=1
  wait "$first" || status=1
  # The index writer's target writes and reopens files in the temp folder: alone.
  fuzz_one index_writer "$fuzz_seconds" >"$logs/fuzz-index_writer.summary" || status=1
else
  step "fuzzing skipped (FUZZ_SECONDS=0); the corpus replay (T15) ran above"
fi

step "figures"
grep -hoE 'T[0-9]+[a-z-]*( [^ ]+){0,6}: .*' "$logs/tests.log" | sort -V || true
if [ "$fuzz_seconds" -gt 0 ]; then cat "$logs"/fuzz-*.summary; fi
if [ "$status" -ne 0 ]; then
  echo "reliability harness: FAILED"
else
  echo "reliability harness: passed"
fi
exit "$status"
