#!/usr/bin/env bash
# tantivy beside libsession's search on the same folder, in one command (issue 37):
# builds both, then PAIRS times in alternation runs libsession's search bench (which
# writes the generated folder target/bench-search/, the same bytes every time) and the
# tantivy peer on that folder, each with the load average before it; then the stripped
# release binaries' sizes (the peer; the same extraction with SQLite's FTS5 in place of
# tantivy; without either; a trivial binary). On demand only: never part of the tests
# or of CI.
#
#   benches/tantivypeer/run.sh                 # 200 sessions, 200 MB, 2 pairs
#   SESSIONS=1000 MB=1000 PAIRS=1 benches/tantivypeer/run.sh
#
# REDACTION=N (default 1) passes --redaction N to the search bench, which then also
# builds the folder without redaction (the peer redacts nothing). The peer builds in
# target/tantivypeer/ and indexes to target/tantivypeer-index/ (deleted after each run).
# KEEP=1 keeps the folder and the last peer's index, for timing one whole process of
# each beside the other:
#   target/release/session search target/bench-search flamingo
#   target/tantivypeer/release/tantivypeer --dir target/bench-search --search flamingo
set -euo pipefail
cd "$(dirname "$0")/../.."

SESSIONS=${SESSIONS:-200}
MB=${MB:-200}
PAIRS=${PAIRS:-2}
REDACTION=${REDACTION:-1}
KEEP=${KEEP:-0}
PEER_TARGET=target/tantivypeer
MANIFEST=benches/tantivypeer/Cargo.toml

cargo bench --bench search --no-run
CARGO_TARGET_DIR=$PEER_TARGET cargo build --release --manifest-path "$MANIFEST" --features fts5
redaction=()
[ "$REDACTION" != 0 ] && redaction=(--redaction "$REDACTION")
for pair in $(seq 1 "$PAIRS"); do
  echo "== pair $pair: libsession ($(uptime | sed 's/.*load/load/'))"
  cargo bench -q --bench search -- --sessions "$SESSIONS" --mb "$MB" ${redaction[@]+"${redaction[@]}"}
  echo "== pair $pair: tantivy peer ($(uptime | sed 's/.*load/load/'))"
  keep=()
  [ "$KEEP" = 1 ] && [ "$pair" = "$PAIRS" ] && keep=(--keep)
  "$PEER_TARGET/release/tantivypeer" --dir target/bench-search ${keep[@]+"${keep[@]}"}
done

echo "== stripped release binaries"
mkdir -p "$PEER_TARGET/stripped"
for bin in tantivypeer fts5 scan hello; do
  strip -o "$PEER_TARGET/stripped/$bin" "$PEER_TARGET/release/$bin"
  printf '%-12s %8.2f MB\n' "$bin" "$(stat -c %s "$PEER_TARGET/stripped/$bin" | awk '{print $1 / 1e6}')"
done
[ "$KEEP" = 1 ] || rm -rf target/bench-search
rm -rf target/bench-search-pi
