#!/usr/bin/env bash
# The performance benchmark in one command: builds the bench, generates the sessions,
# runs pi's SessionManager (bench/peer, the pinned npm package) and libsession on the
# same bytes, and prints the side-by-side table (Markdown) with every ratio.
#
#   ./scripts/bench.sh                      # 1k / 10k / 100k entries, 5 runs each
#   SIZES=1000,10000 RUNS=3 ./scripts/bench.sh
#   ONLY=sqlite ./scripts/bench.sh          # only libsession vs SQLite on the largest size
#   BIG=1 ONLY=sqlite ./scripts/bench.sh    # ... plus open and RSS on a ~1 GB session
#                                           # (generated and loaded once, ~2 GB on disk)
#   ONLY=resume ./scripts/bench.sh          # resume (open + build_context) and steady
#                                           # state: libsession with and without its
#                                           # index, pi and SQLite, on a 66 MB session
#                                           # with compactions (MB=66)
#   BIG=1 ONLY=resume ./scripts/bench.sh    # ... plus the same at ~1 GB (~4 GB on disk
#                                           # while it runs: delete target/bench-data/resume
#                                           # after)
#
# The SQLite step (benches/sqlite_peer.c) needs cc and libsqlite3-dev; without them it
# says so and is skipped. APPENDS (default 2000) entries per append comparison.
# Needs cargo, node >= 20.6 and npm (the first run installs bench/peer/node_modules
# from its lockfile). Files go to target/bench-data/ (about 300 MB for 100k entries, and
# 2 GB for the listing benchmark's 1,000 sessions in both formats).
# A benchmark, never a timed test: it fails only if a step fails, not on a slow figure.
set -euo pipefail
cd "$(dirname "$0")/.."

SIZES=${SIZES:-1000,10000,100000}
RUNS=${RUNS:-5}
ONLY=${ONLY:-}
BIG=${BIG:-0}
APPENDS=${APPENDS:-2000}
PI_RUNS=${PI_RUNS:-3}
DATA=${SESSION_BENCH_DATA:-$PWD/target/bench-data}
export SESSION_BENCH_DATA=$DATA

step() { printf '\n==> %s\n' "$*" >&2; }

case "$ONLY" in
  "" | sqlite | resume) ;;
  *) echo "bench.sh: ONLY=$ONLY: the steps are: sqlite, resume (or unset for all)" >&2; exit 2 ;;
esac

# libsession beside SQLite: one table on stdout, or a note that the step is skipped.
sqlite_step() {
  if ! printf '#include <sqlite3.h>\nint main(void){return sqlite3_libversion_number()>0?0:1;}\n' \
    | cc -x c - -o /dev/null -lsqlite3 2>/dev/null; then
    step "SQLite peer skipped: needs cc and libsqlite3-dev (apt-get install libsqlite3-dev)"
    echo "(SQLite peer skipped: libsqlite3-dev is not installed)"
    return 0
  fi
  local big=()
  [ "$BIG" = 1 ] && big=(--big)
  step "libsession vs SQLite: cargo bench --bench perf -- sqlite ${big[*]}"
  cargo bench -q --bench perf -- sqlite --sizes "$SIZES" --data "$DATA" --runs "$RUNS" \
    --appends "$APPENDS" ${big[@]+"${big[@]}"}
}

step "cargo bench --bench perf --no-run"
cargo bench --bench perf --no-run >&2

if [ "$ONLY" = resume ]; then
  if [ ! -d bench/peer/node_modules/@mariozechner/pi-coding-agent ]; then
    step "npm ci (bench/peer, @mariozechner/pi-coding-agent pinned)"
    (cd bench/peer && npm ci --no-audit --no-fund >&2)
  fi
  big=()
  [ "$BIG" = 1 ] && big=(--big)
  step "resume: cargo bench --bench perf -- resume-bench --mb ${MB:-66} ${big[*]}"
  cargo bench -q --bench perf -- resume-bench --mb "${MB:-66}" --data "$DATA" --runs "$RUNS" \
    ${big[@]+"${big[@]}"} > "$DATA/resume.md"
  {
    echo "## Resume ($(date -u '+%Y-%m-%d %H:%M UTC'))"
    echo
    echo "- machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GB RAM, $(uname -sr)"
    echo "- rustc $(rustc --version | cut -d' ' -f2), node $(node --version); load average at the end: $(uptime | sed 's/.*load average: //') (1/5/15 min)"
    cat "$DATA/resume.md"
  } | tee "$DATA/report-resume.md"
  exit 0
fi

step "generate sessions (${SIZES}) in ${DATA}"
cargo bench -q --bench perf -- gen --sizes "$SIZES" --data "$DATA" >&2

if [ "$ONLY" = sqlite ]; then
  sqlite_step > "$DATA/sqlite.md"
  {
    echo "## libsession vs SQLite ($(date -u '+%Y-%m-%d %H:%M UTC'))"
    echo
    echo "- machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GB RAM, $(uname -sr)"
    echo "- rustc $(rustc --version | cut -d' ' -f2); load average at the end: $(uptime | sed 's/.*load average: //') (1/5/15 min)"
    cat "$DATA/sqlite.md"
  } | tee "$DATA/report-sqlite.md"
  exit 0
fi

if [ ! -d bench/peer/node_modules/@mariozechner/pi-coding-agent ]; then
  step "npm ci (bench/peer, @mariozechner/pi-coding-agent pinned)"
  (cd bench/peer && npm ci --no-audit --no-fund >&2)
fi

load_before=$(uptime)
step "pi: node bench/peer/peer.mjs"
node --expose-gc bench/peer/peer.mjs --index "$DATA/sessions.json" --runs "$PI_RUNS" --out "$DATA/pi.json"

step "libsession: cargo bench --bench perf -- run"
cargo bench -q --bench perf -- run --sizes "$SIZES" --data "$DATA" --runs "$RUNS" --pi "$DATA/pi.json" \
  > "$DATA/table.md"

step "libsession: build_context on the largest session (cargo bench --bench perf -- context)"
cargo bench -q --bench perf -- context --sizes "$SIZES" --data "$DATA" --runs "$RUNS" >&2
load_after=$(uptime)

step "navigation and listing: cargo bench --bench perf -- nav-gen (1,000 sessions, ~1 GB per format)"
cargo bench -q --bench perf -- nav-gen --data "$DATA" >&2
step "pi: node bench/peer/list.mjs (SessionManager.list)"
node bench/peer/list.mjs --dir "$DATA/list/pi" --runs "$PI_RUNS" --out "$DATA/pi-list.json" >&2
step "libsession: cargo bench --bench perf -- nav"
cargo bench -q --bench perf -- nav --data "$DATA" --runs "$RUNS" --pi-list "$DATA/pi-list.json" \
  > "$DATA/nav.md"

sqlite_step > "$DATA/sqlite.md"

{
  echo "## libsession vs floor vs pi ($(date -u '+%Y-%m-%d %H:%M UTC'))"
  echo
  echo "- machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GB RAM, $(uname -sr)"
  echo "- rustc $(rustc --version | cut -d' ' -f2), node $(node --version), $(node -p 'require("./bench/peer/node_modules/@mariozechner/pi-coding-agent/package.json").name + "@" + require("./bench/peer/node_modules/@mariozechner/pi-coding-agent/package.json").version')"
  echo "- load before: ${load_before#*load average: }; after: ${load_after#*load average: } (1/5/15 min)"
  echo "- medians of ${RUNS} runs (ours, floors) and ${PI_RUNS} runs (pi); files in the page cache"
  cat "$DATA/table.md"
  echo
  cat "$DATA/nav.md"
  echo
  cat "$DATA/sqlite.md"
} | tee "$DATA/report.md"
