#!/usr/bin/env bash
# T5(c): a real kernel error at every write, injected by strace into test_writers'
# silent write driver (it appends N entries and prints nothing, because strace counts
# every write of the process). For K = 1..N, the K-th write fails with ENOSPC:
#   - the driver sees io on that append and tainted on every later one (exit 3);
#   - no write call follows the failed one (the log holds exactly K writes);
#   - the file reopens clean (`session verify`, exit 0) with exactly K-1 entries.
# Exits 77 (ctest SKIP_RETURN_CODE) when strace is missing or cannot trace here.
set -euo pipefail
driver=$1
cli=$2
n=${T5_APPENDS:-25}
command -v strace >/dev/null || { echo "strace not installed: skipped"; exit 77; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
strace -f -qq -o "$dir/probe" true 2>/dev/null || { echo "strace cannot trace here: skipped"; exit 77; }

violations=0
for k in $(seq 1 "$n"); do
  file="$dir/s$k.jsonl"
  set +e
  strace -f -qq -e trace=write -e inject=write:error=ENOSPC:when="$k" -o "$dir/log" \
    "$driver" write-driver "$n" "$file"
  code=$?
  set -e
  writes=$(grep -c "write(" "$dir/log" || true)
  entries=$("$cli" verify "$file" | sed -n 's/^entries: //p')
  if [ "$code" -ne 3 ] || [ "$writes" -ne "$k" ] || [ "$entries" -ne $((k - 1)) ] \
      || ! "$cli" verify "$file" >/dev/null; then
    echo "FAIL k=$k: driver exit $code (want 3), $writes write calls (want $k), $entries entries (want $((k - 1)))"
    violations=$((violations + 1))
  fi
done
echo "T5(c): ENOSPC injected at each of $n writes: $violations violations"
[ "$violations" -eq 0 ]
