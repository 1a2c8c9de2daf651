//! The C function of search across the sessions of a folder (issue 25).

use std::ffi::c_char;
use std::path::Path;

use super::boundary::{guard, str_arg};
use super::errors::FfiError;
use super::status::SessionStatus;
use crate::error::Error;
use crate::search::{SearchQuery, search};

/// Section 8. Search across the sessions of a folder.
///
/// Searches the sessions in the folder dir (UTF-8): the *.jsonl files directly in
/// it, for the text a person reads (user and assistant text, tool call names and
/// arguments, tool results, the text of extension messages, compaction summaries;
/// not thinking, images or metadata).
///
/// query_json is {"query": a string with a non-space character, "limit": 1 to 1000
/// (default 20), "roles": [role, …] (default all: "user", "assistant",
/// "toolResult", an extension role, or "compaction" for a compaction's summary),
/// "latestPathOnly": bool (default false), "redact": bool (default true)}. Secrets
/// are never indexed: each entry's text and role pass through the default rules of
/// session_secrets first, and every match is [REDACTED:<rule>] in the index, in the
/// check of a hit and in its snippet, so searching for a secret finds nothing.
/// "redact": false searches the text as written, with a temporary index for the call
/// ("index":"temporary"): the sidecar only ever holds redacted text (a sidecar of an
/// older version, which may hold secrets, is deleted and built again). Each
/// whitespace-separated word of the
/// query must occur in the entry's text, as a substring, ignoring case; so CJK text
/// matches inside words (项目名 finds 项目名是 tiny-pi). A word shorter than three
/// characters is found by a scan of the indexed text, ignoring ASCII case only. A
/// word repeated (in any case) counts once. The query may be at most 1048576 bytes
/// (1 MiB) and hold at most 256 different words; a longer one is
/// SESSION_ERR_INVALID_ARGUMENT naming the limit.
///
/// The result is {"hits":[{"path", "entryId", "seq", "role", "timestamp",
/// "snippet", "score", "onLatestPath"}, …], "sessions": N, "entries": M,
/// "errors":[{"path", "line", "reason", "message"}, …], "bytesRead": B, "index":
/// "sidecar" or "temporary"}, best first (ranked by bm25; score is higher for a
/// better hit, 0 when every word is shorter than three characters, and ties are in
/// path and seq order). path is the file's name relative to dir; seq the entry's
/// 0-based position among the file's committed entries; timestamp the entry's as
/// written; snippet at most 120 characters of the entry's text around the first
/// match, with an ellipsis where it was cut; onLatestPath whether the entry is on the
/// path from the root to the session's latest leaf (its last committed entry), and
/// latestPathOnly keeps only those. sessions and entries count the files searched
/// and their committed entries. errors lists each file that could not be searched
/// (line null, reason io or invalid_argument: a symbolic link, which is never
/// followed, a file that is not regular or cannot be read, a name that is not UTF-8)
/// and each corrupt line (reason invalid_json, invalid_entry or line_too_long; at
/// most 1000 in all): the rest of the file is still searched. bytesRead is how many
/// bytes of the session files this call read past what the index already held.
/// index says which index answered (below).
///
/// The index is a SQLite database in dir named .session-search.db, with its journal
/// .session-search.db-journal beside it (kept, empty, between searches). It is
/// disposable: deleting it loses nothing, the next search builds it again, as it
/// does when it is damaged. A search reads only the committed bytes appended to each
/// file since the last search: a file is known by its device and inode, size,
/// modification and change times, and hashes of its first and of its last indexed
/// 4 KiB. A file that grew is read on from where the index stopped when both hashes
/// still match; a replaced, truncated or shrunk file, one rewritten in place, and
/// one whose times changed at the same size (an edit in place, chmod or touch) are
/// read again from the start; a deleted one leaves the index. (An edit in the middle
/// of a file that also grew, leaving both hashed blocks as they were, is not seen
/// until the file is read again.) An unterminated last line is left out until it
/// ends with a newline. The index holds the conversation's text: it and its journal
/// are given the owner and group the session files share, where the process may set
/// them, and only the permission bits every session file has (0600 when there is
/// none); the group bits are dropped when the group cannot be the files' one, and an
/// existing index is narrowed, never widened. Searches from several threads or
/// processes at once are safe: the update is one SQLite transaction, and a search
/// waits up to 60 seconds for another's.
///
/// The index is never required. When it cannot be used (dir or the index cannot be
/// written, as in a folder the caller may read but not write; it cannot be opened,
/// given its permissions, or updated; or anything but a regular file, such as a
/// symbolic link, FIFO or directory, is at .session-search.db or its -journal, -wal
/// or -shm name, which is then never opened), the search builds a temporary index
/// for this call alone (in memory, spilling to a file of the temporary folder that
/// is deleted), reads every file, and says "index":"temporary"; else "index" is
/// "sidecar" (also for a sidecar the caller may read but not write, while it is up
/// to date).
///
/// Returns SESSION_OK; SESSION_ERR_INVALID_ARGUMENT (NULL or non-UTF-8 dir or
/// query_json; an invalid query, one over the limits above included: argument
/// query_json; a build without the cargo feature search: feature); SESSION_ERR_IO
/// when dir cannot be read or even a temporary index cannot be built;
/// SESSION_ERR_INTERNAL.
///
/// Ownership: dir and query_json are borrowed for the call. out_json may be NULL;
/// otherwise *out_json is always set, to the result or to {"error":{…}}, and the
/// caller frees it with session_string_free. Thread-safe; it touches no store.
///
/// Safety: dir and query_json are NULL or NUL-terminated; out_json is NULL or
/// writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn session_search(
    dir: *const c_char,
    query_json: *const c_char,
    out_json: *mut *mut c_char,
) -> SessionStatus {
    // SAFETY: the caller guarantees `out_json` is NULL or writable.
    unsafe {
        guard(out_json, || {
            // SAFETY: the caller guarantees `dir` is NULL or NUL-terminated.
            let dir = str_arg(dir, "dir")?;
            // SAFETY: the caller guarantees `query_json` is NULL or NUL-terminated.
            let text = str_arg(query_json, "query_json")?;
            let query = SearchQuery::from_json(text).map_err(|e| match e {
                Error::InvalidOption { message } => FfiError::InvalidArgumentJson {
                    name: "query_json",
                    message,
                },
                other => FfiError::from(other),
            })?;
            Ok(search(Path::new(dir), &query)?.to_json().into_bytes())
        })
    }
}
