#!/usr/bin/env bash
# survey.sh SESSION_BIN — import every corpus file with the `session` CLI given as $1 and
# print, as a Markdown table, what the import reported and what the model would see when
# the session is resumed at its latest leaf (defaults, then --on-defect skip).
#
#   tests/interop/corpus/survey.sh target/release/session > /tmp/after.md
#
# Needs bash, jq, awk, find, sort, mktemp. Reads only the corpus; writes only to a
# temporary directory that is removed on exit.
#
# The leaf: the last leaf in commit order (`session leaves`), skipping metadata leaves at
# depth 1 (lines hung under the import's root: file-history-snapshot, summary,
# last-prompt, queue-operation, ...), which carry no conversation; if every leaf is such a
# line, the last leaf.
set -u
set -o pipefail

if [ $# -ne 1 ]; then
    echo "usage: $0 SESSION_BIN" >&2
    exit 64
fi
bin=$1
case $bin in
    */*) [ -x "$bin" ] || { echo "$0: $bin is not executable" >&2; exit 64; } ;;
    *) command -v "$bin" >/dev/null || { echo "$0: $bin not found" >&2; exit 64; } ;;
esac
command -v jq >/dev/null || { echo "$0: needs jq" >&2; exit 64; }

here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/corpus-survey.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM

# The error's code from the CLI's message (src/error.rs: the explain() texts).
classify() {
    case $1 in
        *"a tool result without an earlier call"*) echo "tool_pairing/orphan_result" ;;
        *"a second tool call with the same id"*) echo "tool_pairing/duplicate_tool_call" ;;
        *"a second result for the same tool call"*) echo "tool_pairing/duplicate_tool_result" ;;
        *"a tool call without a result"*) echo "tool_pairing/missing_result" ;;
        *"names no committed entry"*) echo "invalid_compaction/unknown_entry" ;;
        *"is not an ancestor of the compaction"*) echo "invalid_compaction/not_on_path" ;;
        *"the cut would separate a tool call"*) echo "invalid_compaction/not_interaction_start" ;;
        *"nothing is kept while the last interaction"*) echo "invalid_compaction/pending_tool_calls" ;;
        *) printf '%s' "$1" | head -n 1 | cut -c1-70 | tr '|' '/' ;;
    esac
}

# Print "rc msgs skipped compaction" for `context OUT LEAF [args]`, or "rc ERR code".
context() {
    local out=$1 leaf=$2
    shift 2
    "$bin" context "$out" "$leaf" "$@" >"$tmp/ctx" 2>"$tmp/ctx.err"
    local rc=$?
    if [ $rc -le 1 ] && [ -s "$tmp/ctx" ]; then
        jq -r --arg rc "$rc" \
            '"\($rc) \(.messages | length) \(.skipped | length) \(if .compaction == null then "no" else "yes" end)"' \
            "$tmp/ctx"
    else
        echo "$rc ERR $(classify "$(grep -v '^session: no compaction\|^session: skipped' "$tmp/ctx.err" | sed 's/^session: //')")"
    fi
}

echo "| file | import rc | lines read | kept | unmapped | reparented | refused compactions | leaf | context (defaults) | context (--on-defect skip) |"
echo "|---|---:|---:|---:|---:|---:|---:|---|---|---|"

summary="$tmp/summary"
: >"$summary"
for fmt in pi claude-code codex; do
    [ -d "$here/$fmt" ] || continue
    find "$here/$fmt" -type f -name '*.jsonl' | LC_ALL=C sort >"$tmp/list"
    while IFS= read -r src; do
        rel=${src#"$here"/}
        out="$tmp/out.jsonl"
        rm -f "$out"
        "$bin" import --from "$fmt" "$src" "$out" >/dev/null 2>"$tmp/report" </dev/null
        irc=$?
        if ! jq -e . "$tmp/report" >/dev/null 2>&1; then
            echo "| \`$rel\` | $irc | – | – | – | – | – | – | import failed: $(classify "$(cat "$tmp/report")") | – |"
            echo "$fmt import-failed" >>"$summary"
            continue
        fi
        read -r lines unmapped reparented refused < <(jq -r \
            '"\(.linesRead) \(.unmapped | length) \(.reparented | length) \(.refusedCompactions | length)"' \
            "$tmp/report")
        kept=$((lines - unmapped))
        leaf=$("$bin" leaves "$out" 2>/dev/null </dev/null | awk '
            NR > 3 {
                id = $1; d = $NF; sub(/\)$/, "", d)
                if (!($2 == "metadata" && d + 0 <= 1)) pick = id
                last = id
            }
            END { print (pick != "" ? pick : last) }')
        if [ -z "$leaf" ]; then
            echo "| \`$rel\` | $irc | $lines | $kept | $unmapped | $reparented | $refused | – | no leaf | – |"
            echo "$fmt no-leaf" >>"$summary"
            continue
        fi
        read -r drc dn dskip dcomp < <(context "$out" "$leaf")
        read -r src_ sn sskip scomp < <(context "$out" "$leaf" --on-defect skip)
        if [ "$dn" = ERR ]; then
            dcell="**${dskip}${dcomp:+ $dcomp}** (rc $drc)"
            echo "$fmt default-fails $dskip" >>"$summary"
        else
            dcell="$dn messages"
            [ "$dcomp" = yes ] && dcell="$dcell, compaction"
            [ "$drc" != 0 ] && dcell="$dcell (rc $drc)"
            echo "$fmt default-ok" >>"$summary"
        fi
        if [ "$sn" = ERR ]; then
            scell="**${sskip}${scomp:+ $scomp}** (rc $src_)"
            echo "$fmt skip-fails $sskip" >>"$summary"
        else
            scell="$sn messages"
            [ "$sskip" != 0 ] && scell="$scell, $sskip interaction(s) skipped"
            [ "$scomp" = yes ] && scell="$scell, compaction"
            [ "$src_" != 0 ] && scell="$scell (rc $src_)"
            echo "$fmt skip-ok" >>"$summary"
        fi
        echo "| \`$rel\` | $irc | $lines | $kept | $unmapped | $reparented | $refused | \`$leaf\` | $dcell | $scell |"
    done <"$tmp/list"
done

echo
echo "| format | files | resume with defaults | fail with defaults (why) | resume with --on-defect skip |"
echo "|---|---:|---:|---|---:|"
for fmt in pi claude-code codex; do
    files=$(grep -c "^$fmt \(default-\|import-failed\|no-leaf\)" "$summary")
    ok=$(grep -c "^$fmt default-ok" "$summary")
    why=$(grep "^$fmt default-fails" "$summary" | cut -d' ' -f3 | sort | uniq -c | awk '{printf "%s%s × %s", (NR > 1 ? ", " : ""), $1, $2}')
    sok=$(grep -c "^$fmt skip-ok" "$summary")
    echo "| $fmt | $files | $ok | ${why:-–} | $sok |"
done
