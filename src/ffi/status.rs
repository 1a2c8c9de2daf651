//! Status codes and store states: stable numbers with stable names.
//!
//! Both are plain int32_t with #defined values rather than C enums: the size is
//! fixed, new codes can only be appended, they bind trivially from Go and Swift, and
//! the names compile the same in C99 and C++17.

use std::ffi::CStr;

/// The result of a libsession call. SESSION_OK (0) is success; every other value is
/// an error whose name session_status_name returns and whose details the call's
/// error JSON carries. Values are stable and will only ever be appended to.
pub type SessionStatus = i32;

/// Success.
pub const SESSION_OK: SessionStatus = 0;
/// A required pointer argument is NULL, a C string argument is not valid UTF-8, an
/// options object is invalid, or a host's token estimator returned a negative or
/// non-finite cost. Nothing was created or written. Error JSON members: argument
/// (its name); entryId (the message's entry) for the estimator.
pub const SESSION_ERR_INVALID_ARGUMENT: SessionStatus = 1;
/// The text is not exactly one well-formed JSON value, or it breaks JSON hygiene: a
/// duplicate key, a number that would not come back as the same value (1e400, an
/// integer beyond 64 bits), invalid UTF-8, or nesting deeper
/// than SESSION_MAX_DEPTH. Error JSON members: pointer (a JSON Pointer to the bad
/// spot), offset (the byte offset in the text).
pub const SESSION_ERR_INVALID_JSON: SessionStatus = 2;
/// Well-formed JSON of the wrong shape: a missing or mistyped member, an unknown
/// type, role or block type. Error JSON member: pointer.
pub const SESSION_ERR_INVALID_ENTRY: SessionStatus = 3;
/// The id is already taken. Error JSON members: id; line when found while opening
/// a file.
pub const SESSION_ERR_DUPLICATE_ID: SessionStatus = 4;
/// The entry's parent does not exist (yet). Error JSON members: childId, parentId;
/// line when found while opening a file.
pub const SESSION_ERR_MISSING_PARENT: SessionStatus = 5;
/// The parent links of the chosen path loop. Error JSON member: id.
pub const SESSION_ERR_CYCLE: SessionStatus = 6;
/// No entry has the requested leaf id. Error JSON member: id.
pub const SESSION_ERR_UNKNOWN_LEAF: SessionStatus = 7;
/// A committed line (one ending in a newline) is not a valid entry or is longer than
/// SESSION_MAX_LINE_BYTES. Error JSON members: line (1-based physical line),
/// reason (invalid_json, invalid_entry or line_too_long), pointer inside the
/// line where there is one.
pub const SESSION_ERR_CORRUPT_LINE: SessionStatus = 8;
/// The store's file ends in an unterminated line; appends are refused and the file is
/// left untouched. Error JSON member: warnings.
pub const SESSION_ERR_NEEDS_REPAIR: SessionStatus = 9;
/// An earlier write on this store failed (or an earlier call on it panicked); nothing
/// more is done on it. Error JSON member: cause, the original error object, the same
/// bytes in every result that reports it. Reopen the file to re-check the disk.
pub const SESSION_ERR_TAINTED: SessionStatus = 10;
/// A file operation failed. Error JSON members: op (open, read, write,
/// sync, lock, identity, truncate), osError (the errno) when the OS gave one.
pub const SESSION_ERR_IO: SessionStatus = 11;
/// A bug in libsession: a caught panic. The store it happened on is tainted.
pub const SESSION_ERR_INTERNAL: SessionStatus = 12;
/// Another writer holds the file's advisory lock (flock), in this or another
/// process: only one writer may have a file open. Error JSON member: path.
pub const SESSION_ERR_LOCKED: SessionStatus = 13;
/// Before an append, the writer found that its file changed under it: the path was
/// deleted or now names another file, or its size is not what this writer left
/// (another writer appended). Nothing was written; the store is tainted from then on,
/// with this error as cause. Error JSON members: reason (deleted, replaced,
/// size_changed), op (identity), expectedSize and actualSize for
/// size_changed.
pub const SESSION_ERR_FILE_CHANGED: SessionStatus = 14;
/// An append on a store opened read-only (readOnly or salvage), or on a PostgreSQL
/// store whose server was a standby (or took no writes) at open: nothing is written.
pub const SESSION_ERR_READ_ONLY: SessionStatus = 15;
/// A call on a store from a process other than the one that opened it (a child after
/// fork): nothing is done. The child must open its own store. Error JSON members:
/// ownerPid, pid.
pub const SESSION_ERR_WRONG_PROCESS: SessionStatus = 16;
/// A compaction entry's firstKeptEntryId is not a valid cut for its path: when the
/// compaction is appended (nothing is written), or when a context is built through it
/// (never a silent fallback). Error JSON members: compactionId, firstKeptEntryId
/// (a string or null), reason (unknown_entry, not_on_path,
/// not_interaction_start, pending_tool_calls).
pub const SESSION_ERR_INVALID_COMPACTION: SessionStatus = 17;
/// A tool call and its result do not pair up within an interaction of the context
/// being built (with onDefect "error", the default). Error JSON members: entryId,
/// toolCallId, reason (orphan_result, duplicate_tool_call,
/// duplicate_tool_result, missing_result), interactionStartId.
pub const SESSION_ERR_TOOL_PAIRING: SessionStatus = 18;
/// The caller's progress callback returned non-zero, asking a long call to stop (see
/// session_import_with_progress); nothing was written. No extra error JSON members.
pub const SESSION_ERR_CANCELLED: SessionStatus = 19;

/// The condition of a store, as session_store_state reports it.
pub type SessionState = i32;

/// Appends are accepted.
pub const SESSION_STATE_READY: SessionState = 0;
/// The file has an unterminated tail: reads return the committed prefix and the
/// warning; appends fail with SESSION_ERR_NEEDS_REPAIR and do not touch the file.
pub const SESSION_STATE_NEEDS_REPAIR: SessionState = 1;
/// A write failed or a call panicked: every later call fails with
/// SESSION_ERR_TAINTED. Also returned for a NULL store.
pub const SESSION_STATE_TAINTED: SessionState = 2;

/// The deepest nesting an entry may have (the entry object is level 1).
pub const SESSION_MAX_DEPTH: u32 = 128;
/// The longest line, in bytes without its newline, that a JSONL file may commit; an
/// append whose line would be longer fails with SESSION_ERR_INVALID_ENTRY.
pub const SESSION_MAX_LINE_BYTES: u64 = 67108864;

const NAMES: [&CStr; 20] = [
    c"ok",
    c"invalid_argument",
    c"invalid_json",
    c"invalid_entry",
    c"duplicate_id",
    c"missing_parent",
    c"cycle",
    c"unknown_leaf",
    c"corrupt_line",
    c"needs_repair",
    c"tainted",
    c"io",
    c"internal",
    c"locked",
    c"file_changed",
    c"read_only",
    c"wrong_process",
    c"invalid_compaction",
    c"tool_pairing",
    c"cancelled",
];

/// The stable name of a status; unknown for a value that is not a status.
pub(crate) fn status_name(status: SessionStatus) -> &'static CStr {
    usize::try_from(status)
        .ok()
        .and_then(|i| NAMES.get(i).copied())
        .unwrap_or(c"unknown")
}

/// [status_name] as a Rust string.
pub(crate) fn status_name_str(status: SessionStatus) -> &'static str {
    status_name(status).to_str().unwrap_or("unknown")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_in_the_header_match_the_core() {
        assert_eq!(SESSION_MAX_DEPTH as usize, crate::json::MAX_DEPTH);
        assert_eq!(
            SESSION_MAX_LINE_BYTES as usize,
            crate::recover::MAX_LINE_BYTES
        );
    }

    #[test]
    fn every_status_has_its_spec_name() {
        let expected = [
            (SESSION_OK, "ok"),
            (SESSION_ERR_INVALID_ARGUMENT, "invalid_argument"),
            (SESSION_ERR_INVALID_JSON, "invalid_json"),
            (SESSION_ERR_INVALID_ENTRY, "invalid_entry"),
            (SESSION_ERR_DUPLICATE_ID, "duplicate_id"),
            (SESSION_ERR_MISSING_PARENT, "missing_parent"),
            (SESSION_ERR_CYCLE, "cycle"),
            (SESSION_ERR_UNKNOWN_LEAF, "unknown_leaf"),
            (SESSION_ERR_CORRUPT_LINE, "corrupt_line"),
            (SESSION_ERR_NEEDS_REPAIR, "needs_repair"),
            (SESSION_ERR_TAINTED, "tainted"),
            (SESSION_ERR_IO, "io"),
            (SESSION_ERR_INTERNAL, "internal"),
            (SESSION_ERR_LOCKED, "locked"),
            (SESSION_ERR_FILE_CHANGED, "file_changed"),
            (SESSION_ERR_READ_ONLY, "read_only"),
            (SESSION_ERR_WRONG_PROCESS, "wrong_process"),
            (SESSION_ERR_INVALID_COMPACTION, "invalid_compaction"),
            (SESSION_ERR_TOOL_PAIRING, "tool_pairing"),
            (SESSION_ERR_CANCELLED, "cancelled"),
        ];
        for (i, (status, name)) in expected.into_iter().enumerate() {
            assert_eq!(status, i as SessionStatus);
            assert_eq!(status_name_str(status), name);
        }
        assert_eq!(status_name_str(20), "unknown");
        assert_eq!(status_name_str(-1), "unknown");
        assert_eq!(status_name_str(i32::MAX), "unknown");
    }
}
