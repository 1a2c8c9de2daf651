#!/usr/bin/env bash
# T22: durability modes checked with strace on a silent C-ABI driver.
#   none        -> 0 fsync/fdatasync calls
#   fsync       -> at least one fdatasync per acknowledged append, and an fsync of the
#                  directory after the file is created
#   fsync_batch -> at least one sync, at most one per append (one thread here)
#   fdatasync failure (strace fault injection on the 3rd call) -> the driver sees io
#                  then tainted, and the failed fdatasync is never retried
# Exits 77 (ctest SKIP_RETURN_CODE) when strace is missing or cannot trace here.
set -euo pipefail
driver=$1
n=20
command -v strace >/dev/null || { echo "strace not installed: skipped"; exit 77; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
strace -f -qq -o "$dir/probe" true 2>/dev/null || { echo "strace cannot trace here: skipped"; exit 77; }

count() { grep -c "^[0-9]* *$1(" "$2" || true; }

run() { # mode file -> writes the strace log to $dir/$1.log
  strace -f -qq -e trace=fsync,fdatasync -o "$dir/$1.log" "$driver" sync-driver "$1" "$n" "$dir/$1.jsonl"
}

run none
[ "$(count fsync "$dir/none.log")" -eq 0 ] && [ "$(count fdatasync "$dir/none.log")" -eq 0 ] \
  || { echo "FAIL: durability none synced"; cat "$dir/none.log"; exit 1; }

run fsync
datasyncs=$(count fdatasync "$dir/fsync.log"); fsyncs=$(count fsync "$dir/fsync.log")
[ "$datasyncs" -ge "$n" ] || { echo "FAIL: fsync mode: $datasyncs fdatasync for $n appends"; exit 1; }
[ "$fsyncs" -ge 1 ] || { echo "FAIL: fsync mode: no directory fsync after create"; exit 1; }

run fsync_batch
batch=$(count fdatasync "$dir/fsync_batch.log")
[ "$batch" -ge 1 ] && [ "$batch" -le "$n" ] || { echo "FAIL: fsync_batch: $batch syncs for $n appends"; exit 1; }

set +e
strace -f -qq -e trace=fdatasync -e inject=fdatasync:error=EIO:when=3 -o "$dir/inject.log" \
  "$driver" sync-driver fsync "$n" "$dir/inject.jsonl"
code=$?
set -e
[ "$code" -eq 3 ] || { echo "FAIL: after an injected fdatasync EIO the driver exited $code (want 3: io, then tainted)"; exit 1; }
[ "$(count fdatasync "$dir/inject.log")" -eq 3 ] \
  || { echo "FAIL: the failed fdatasync was retried or syncing went on"; cat "$dir/inject.log"; exit 1; }

echo "sync counts for $n appends: none 0, fsync $datasyncs fdatasync + $fsyncs fsync, fsync_batch $batch; injected EIO: tainted, not retried"
