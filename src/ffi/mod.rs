//! The C ABI (docs/contract.md §4): the only extern "C" and the only unsafe in the crate.
//!
//! Each function only converts: C strings and byte ranges in, owned JSON strings and
//! status codes out. Every function runs inside one panic boundary ([boundary]), and
//! every error goes through one mapping ([errors]). The doc comments here become
//! include/session.h.

mod boundary;
mod errors;
mod status;

// cbindgen writes this file's functions first (the header's sections 1 to 4), then
// each module's in the order declared here: the order of the header's sections. The
// first function of each section opens with its title. A comment between two
// modules keeps rustfmt from sorting them.

// Section 5.
mod context;
// Section 6.
mod nav;
// Section 7.
mod interop;
// Section 8.
mod search;
// Section 9.
mod view;
// Section 10.
mod secrets;
// Section 11.
mod pg;

use std::ffi::{CStr, c_char};
use std::sync::{Arc, OnceLock};

pub use context::*;
pub use interop::*;
pub use nav::*;
pub use pg::*;
pub use search::*;
pub use secrets::*;
pub use status::*;
pub use view::*;

use crate::entry::{Entry, parse_entries, parse_entry};
use crate::error::Error;
use crate::recover::recover_jsonl;
use crate::repair::repair_jsonl;
use crate::store::{JsonlOptions, MemoryOptions, Store};
use crate::{json, tree};
use boundary::{bytes_arg, guard, guard_store, open_store, options_arg, set_store, str_arg};

/// An open session store: in memory (session_memory_store_open), backed by a JSONL
/// file (session_jsonl_store_open) or by a session in a PostgreSQL database
/// (session_pg_store_open). Opaque; free it with session_store_close.
///
/// A store is safe to use from many threads at once. Appends commit in the order in
/// which they arrive (a fair FIFO inside the handle); a read waits for the appends that
/// arrived before it.
pub struct SessionStore {
    store: Store,
    /// Set when an operation on this store panicked: the error object that every later
    /// call reports as its cause.
    poisoned: OnceLock<Arc<str>>,
}

/// Section 1. The library: version, status names, freeing strings.
///
/// The library version, e.g. "0.1.0" (the crate version). The string is static: do
/// not free it. Thread-safe.
#[unsafe(no_mangle)]
pub extern "C" fn session_version() -> *const c_char {
    static VERSION: &CStr =
        match CStr::from_bytes_with_nul(concat!(env!("CARGO_PKG_VERSION"), "\0").as_bytes()) {
            Ok(v) => v,
            Err(_) => c"unknown",
        };
    VERSION.as_ptr()
}

/// The stable name of a status ("ok", "missing_parent", …), the same as the code
/// of the error JSON; "unknown" for a value that is not a status. The string is
/// static: do not free it. Thread-safe.
#[unsafe(no_mangle)]
pub extern "C" fn session_status_name(status: SessionStatus) -> *const c_char {
    status::status_name(status).as_ptr()
}

/// Frees a string that a libsession call returned through out_json. NULL is fine.
/// Freeing any other pointer, or the same string twice, is undefined behaviour.
///
/// Safety: s is NULL or a string from a libsession out_json not yet freed.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn session_string_free(s: *mut c_char) {
    // SAFETY: the caller passes NULL or a string that `boundary::write_out` made with
    // `CString::into_raw` and has not freed yet.
    unsafe { boundary::free_string(s) }
}

/// Section 2. Entries: parsing, paths and recovery, without a store.
///
/// Parses entry_json as one session entry and returns the normalised entry:
/// the same JSON value with insignificant whitespace removed, key order, unknown
/// fields, escapes and numbers kept exactly.
///
/// An entry is {"id", "parentId", "timestamp", "type", ...}: id a non-empty
/// string, parentId null or a non-empty string, timestamp a number, type one of
/// "message" with a message, "metadata" with a non-empty key and any JSON
/// value (the key session.label needs {"targetId": non-empty string, "label":
/// non-empty string | null}), or "compaction" (a non-null parentId, summary a
/// non-empty string or an object, firstKeptEntryId a non-empty string other than
/// id, or null, tokensBefore a number >= 0, optional details). A message's role
/// user, assistant or toolResult is validated with its content blocks (text,
/// thinking, image, toolCall); any other non-empty role is an extension message,
/// and any other non-empty block type an extension block, both kept byte-exact. An
/// unknown entry type is rejected; unknown extra fields are kept. A lone surrogate
/// escape ("\ud83d") is kept as written.
///
/// Returns SESSION_OK; SESSION_ERR_INVALID_JSON or SESSION_ERR_INVALID_ENTRY
/// (with pointer); SESSION_ERR_INVALID_ARGUMENT for a NULL or non-UTF-8 string.
///
/// Ownership: entry_json is borrowed for the call. out_json may be NULL; otherwise
/// *out_json is always set, to the result or to {"error":{…}}, and the caller frees
/// it with session_string_free. Thread-safe.
///
/// Safety: entry_json is NULL or a NUL-terminated string; out_json is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn session_parse_entry(
    entry_json: *const c_char,
    out_json: *mut *mut c_char,
) -> SessionStatus {
    // SAFETY: the caller guarantees `out_json` is NULL or writable.
    unsafe {
        guard(out_json, || {
            // SAFETY: the caller guarantees `entry_json` is NULL or NUL-terminated.
            let text = str_arg(entry_json, "entry_json")?;
            Ok(parse_entry(text)?.json().as_bytes().to_vec())
        })
    }
}

/// The entries from the root to leaf_id, as a JSON array, over entries_json, a
/// JSON array of entries in any order.
///
/// First every entry is parsed (errors point into the array: /3/message/...) and
/// indexed; a duplicate id anywhere fails. Then the parent links are walked from the
/// leaf; only this path is checked, so a broken branch that is not selected does not
/// stop a healthy path from being read.
///
/// Returns SESSION_OK; SESSION_ERR_INVALID_JSON, SESSION_ERR_INVALID_ENTRY,
/// SESSION_ERR_DUPLICATE_ID (id), SESSION_ERR_UNKNOWN_LEAF (id),
/// SESSION_ERR_MISSING_PARENT (childId, parentId), SESSION_ERR_CYCLE (id),
/// SESSION_ERR_INVALID_ARGUMENT.
///
/// Ownership and threading as session_parse_entry.
///
/// Safety: entries_json and leaf_id are NULL or NUL-terminated; out_json is NULL or
/// writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn session_path_to(
    entries_json: *const c_char,
    leaf_id: *const c_char,
    out_json: *mut *mut c_char,
) -> SessionStatus {
    // SAFETY: the caller's guarantees are those `over_entries` needs.
    unsafe {
        over_entries(entries_json, leaf_id, out_json, |entries, leaf| {
            let path = tree::path_to(entries, leaf)?;
            Ok(json::bytes_array(path.iter().map(|e| e.json().as_bytes())))
        })
    }
}

/// The messages on the path to leaf_id, as a JSON array of complete messages
/// (toolCall ids, names and arguments; toolResult ids, names, isError, details;
/// every other field). Metadata entries are on the path but are not messages.
///
/// Returns and ownership as session_path_to.
///
/// Safety: As session_path_to.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn session_messages_on_path(
    entries_json: *const c_char,
    leaf_id: *const c_char,
    out_json: *mut *mut c_char,
) -> SessionStatus {
    // SAFETY: the caller's guarantees are those `over_entries` needs.
    unsafe {
        over_entries(entries_json, leaf_id, out_json, |entries, leaf| {
            let messages = tree::messages_on_path(entries, leaf)?;
            Ok(json::bytes_array(
                messages.iter().map(|m| m.json().as_bytes()),
            ))
        })
    }
}

/// The body of the slice functions: parses entries_json, then runs project on the
/// entries and leaf_id.
///
/// Safety: entries_json and leaf_id are NULL or NUL-terminated; out_json is NULL or
/// writable.
unsafe fn over_entries(
    entries_json: *const c_char,
    leaf_id: *const c_char,
    out_json: *mut *mut c_char,
    project: impl FnOnce(&[Entry], &str) -> Result<Vec<u8>, Error>,
) -> SessionStatus {
    // SAFETY: the caller guarantees `out_json` is NULL or writable.
    unsafe {
        guard(out_json, || {
            // SAFETY: the caller guarantees both strings are NULL or NUL-terminated.
            let (text, leaf) = (
                str_arg(entries_json, "entries_json")?,
                str_arg(leaf_id, "leaf_id")?,
            );
            Ok(project(&parse_entries(text)?, leaf)?)
        })
    }
}

/// Recovers what the JSONL bytes bytes[0..len) commit, as
/// {"entries":[…],"warnings":[…]}. Pure: it never touches a file.
///
/// A line is committed only when it ends with a newline. Blank lines (spaces, tabs,
/// CR) are skipped but counted for line numbers. A final piece without a newline is
/// not committed: if it is not blank it is reported as the warning
/// {"code":"unterminated_tail","line":N}. NUL bytes, a BOM or invalid UTF-8 make a
/// line non-blank.
///
/// Returns SESSION_OK; SESSION_ERR_CORRUPT_LINE (line, reason, pointer) when a
/// committed line is not a valid entry; SESSION_ERR_INVALID_ARGUMENT when bytes is
/// NULL and len > 0. (NULL, 0) is empty input.
///
/// Ownership: bytes is borrowed for the call; out_json as session_parse_entry.
/// Thread-safe.
///
/// Safety: bytes is NULL or points to len readable bytes; out_json is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn session_recover_jsonl(
    bytes: *const u8,
    len: usize,
    out_json: *mut *mut c_char,
) -> SessionStatus {
    // SAFETY: the caller guarantees `out_json` is NULL or writable.
    unsafe {
        guard(out_json, || {
            // SAFETY: the caller guarantees `bytes` is NULL or has `len` readable bytes.
            let input = bytes_arg(bytes, len, "bytes")?;
            Ok(recover_jsonl(input)?.to_json_bytes())
        })
    }
}

/// Section 3. Stores: open, append, repair, close.
///
/// Opens a new, empty store in memory and sets *out_store to it.
///
/// Returns SESSION_OK, or SESSION_ERR_INVALID_ARGUMENT when out_store is NULL.
/// The caller closes the store with session_store_close. Thread-safe.
///
/// Safety: out_store is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn session_memory_store_open(
    out_store: *mut *mut SessionStore,
) -> SessionStatus {
    // SAFETY: no out_json; `out_store` is NULL or writable (checked in `set_store`).
    unsafe {
        guard(std::ptr::null_mut(), || {
            set_store(out_store, Store::memory())?;
            Ok(Vec::new())
        })
    }
}

/// Opens a new, empty store in memory with options and sets *out_store to it.
/// options_json is a JSON object (NULL or {} for the defaults; an unknown member
/// is an error): "strictRoles" (default false) rejects extension roles and blocks
/// with SESSION_ERR_INVALID_ENTRY.
///
/// Returns SESSION_OK, or SESSION_ERR_INVALID_ARGUMENT when out_store is NULL,
/// options_json is not valid UTF-8 or the options are invalid (argument is
/// options_json); on failure *out_store is set to NULL (when out_store is not
/// NULL). The caller closes the store with session_store_close. Thread-safe.
///
/// Safety: options_json is NULL or NUL-terminated; out_store is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn session_memory_store_open_with(
    options_json: *const c_char,
    out_store: *mut *mut SessionStore,
) -> SessionStatus {
    // SAFETY: no out_json; `out_store` is NULL or writable (caller's promise).
    unsafe {
        guard(std::ptr::null_mut(), || {
            boundary::clear_store(out_store);
            // SAFETY: the caller guarantees `options_json` is NULL or NUL-terminated.
            let options = options_arg(options_json, MemoryOptions::from_json)?;
            set_store(out_store, Store::memory_with(&options))?;
            Ok(Vec::new())
        })
    }
}

/// Opens the JSONL file at path (UTF-8) for appending, creating it if it is
/// missing (not its folders), and sets *out_store to the store. The result is
/// {"state":"ready"|"needs_repair","warnings":[…]}. The defaults of
/// session_jsonl_store_open_with apply: an advisory lock against a second writer,
/// an identity check before each append, no fsync.
///
/// Opening recovers the committed lines and replays the tree rules in file order: ids
/// unique, every parent on an earlier committed line. A file whose last line has no
/// newline opens as needs_repair: reads work, appends are refused. libsession never
/// truncates or rewrites a file by itself. A final piece of only spaces, tabs or CR is
/// not a warning: the next append writes a newline that ends it, then its line, in one
/// write. Memory follows the committed lines, never the file's size, and holes of a
/// sparse file are skipped, not read. The path is resolved against the working
/// directory once, at open: a later chdir does not change the file.
///
/// Returns SESSION_OK; SESSION_ERR_CORRUPT_LINE (line),
/// SESSION_ERR_DUPLICATE_ID or SESSION_ERR_MISSING_PARENT (with line);
/// SESSION_ERR_LOCKED (another writer has the file open);
/// SESSION_ERR_IO (missing folder, unreadable path, or a path that is not a regular
/// file: a FIFO, a device or a directory is refused at once, without blocking or
/// reading it); SESSION_ERR_INVALID_ARGUMENT
/// (NULL path or out_store, non-UTF-8 path). On failure *out_store is set to NULL
/// (when out_store is not NULL) and nothing is created but, possibly, the empty file.
///
/// Guarantees and their limits: one writer per file (the lock is advisory); a
/// successful append means the OS accepted the bytes (no fsync).
///
/// Ownership: path is borrowed; close the store with session_store_close;
/// out_json as session_parse_entry. Thread-safe.
///
/// Safety: path is NULL or NUL-terminated; out_store and out_json are NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn session_jsonl_store_open(
    path: *const c_char,
    out_store: *mut *mut SessionStore,
    out_json: *mut *mut c_char,
) -> SessionStatus {
    // SAFETY: the caller guarantees `out_json` and `out_store` are NULL or writable,
    // and `path` NULL or NUL-terminated.
    unsafe {
        open_store(
            out_store,
            out_json,
            || str_arg(path, "path"),
            Store::open_jsonl,
        )
    }
}

/// session_jsonl_store_open with options, given as a JSON object (NULL or {} for
/// the defaults); unknown members are an error:
///
/// - "durability": what a successful append promises. "none" (default): the OS
///   accepted the bytes. "fsync": the line is on stable storage (fdatasync after
///   every append; when the open creates the file, its directory is synced too).
///   "fsync_batch": as "fsync", with group commit: appends that queue up while a
///   sync is in flight are written and synced together, so concurrent appenders
///   share syncs. A failed sync taints the store like a failed write.
/// - "lock" (default true): hold an exclusive advisory lock (flock) while the
///   store is open, so that a second writer, in this or another process, fails with
///   SESSION_ERR_LOCKED instead of interleaving. Advisory only: a process that does
///   not lock, and some network filesystems, are not stopped.
/// - "readOnly" (default false): never create, lock or write the file; appends
///   fail with SESSION_ERR_READ_ONLY. Works beside a writer.
/// - "salvage" (default false): read-only, and never fail on interior damage:
///   every good entry is loaded, every bad line is skipped, and the result (and
///   session_store_read) adds "complete":false,"diagnostics":[{"line":N,
///   "code":"corrupt_line"|"duplicate_id"|"orphan",…}]. An orphan (an entry whose
///   parent is not on an earlier good line) is loaded, but a path through it fails
///   with SESSION_ERR_MISSING_PARENT.
/// - "checkIdentity" (default true): before each append, check that the path
///   still names the file being written and that its size is what this writer left;
///   otherwise fail with SESSION_ERR_FILE_CHANGED and taint the store, writing
///   nothing.
/// - "index" (default true): use and keep the session index <path>.idx. It is a
///   disposable cache that lets open skip reading the lines it covers; they are
///   read on demand.
///
///   The index is used only when the file is as it was when the index was
///   written: the same device and inode; the same change time (ctime, which every
///   write, truncation or change of times or mode moves, and no program can set
///   back); the covered size; the modification time; and matching checksums of 16
///   sampled regions and of the last covered line. Otherwise the file is replayed
///   as without it. So an edit made before open is always seen, even one in place
///   that keeps the size and the modification time. So are lines appended since:
///   by a writer killed before its close, or by one still appending. Those opens
///   replay the whole file.
///
///   A writer writes the index every 65,536 appends or 64 MiB, and at
///   session_store_close; never inside open. Writing it is best effort: a failure
///   only costs the next open a full replay. Readers never write it. Only a file
///   that is exactly its entries' lines (as the library writes them) gets one.
///
///   With an index, a covered line is checked every time a call reads it from the
///   file (the first time and every later one). Another program may change a line
///   in place while the store is open. The calls that read that line then get
///   SESSION_ERR_CORRUPT_LINE with its line, and the store is not tainted. No call
///   returns a changed line, nor a label that its label entry's line no longer
///   sets. What the store derives from lines a call does not return is as the file
///   was at open, as it is for a store opened without the index: which entries are
///   children, leaves or roots, depth, childCount, onPath, whether an id exists. A
///   damaged index found by a call makes that call replay the file and answer from
///   it.
///
///   The index gets the session file's permissions (and owner, where allowed). It
///   is never written through a symbolic link or onto a FIFO. It is never written
///   from checksums of bytes another program changed under the writer: the writer
///   removes it then. A session whose <path>.idx name would exceed 255 bytes has
///   none.
/// - "verify" (default "index"): "full" checks every line at open, as without an
///   index (the index is still kept); session CLI's verify always does.
/// - "strictRoles" (default false): reject extension roles and content blocks
///   (any role but user, assistant, toolResult; any block type but text,
///   thinking, image, toolCall) with SESSION_ERR_INVALID_ENTRY at append; a
///   file that already holds one fails to open with SESSION_ERR_CORRUPT_LINE at
///   that line. By default they are kept byte-exact.
///
/// Returns as session_jsonl_store_open, plus SESSION_ERR_INVALID_ARGUMENT for bad
/// options (argument is options_json) and SESSION_ERR_LOCKED.
///
/// Safety: path and options_json are NULL (options only) or NUL-terminated; out_store
/// and out_json are NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn session_jsonl_store_open_with(
    path: *const c_char,
    options_json: *const c_char,
    out_store: *mut *mut SessionStore,
    out_json: *mut *mut c_char,
) -> SessionStatus {
    // SAFETY: the caller guarantees `out_json` and `out_store` are NULL or writable.
    unsafe {
        open_store(
            out_store,
            out_json,
            || {
                // SAFETY: the caller guarantees the strings are NULL or NUL-terminated.
                let path = str_arg(path, "path")?;
                // SAFETY: as above.
                let options = options_arg(options_json, JsonlOptions::from_json)?;
                Ok((path, options))
            },
            |(path, options)| Store::open_jsonl_with(path, &options),
        )
    }
}

/// Repairs the JSONL file at path when its only problem is an unterminated tail
/// (what makes a store open as needs_repair). Afterwards the file opens ready.
///
/// The steps run in this order, so that an interruption at any step loses no
/// committed line:
///
/// 1. The committed prefix is validated. A corrupt line, duplicate id or missing
///    parent refuses the repair and leaves the file untouched.
/// 2. The uncommitted bytes are copied to a temporary file next to it
///    (.<name>.repair-<k>.tmp; holes stay holes). It is synced, then renamed to a
///    new sidecar <name>.tail-<k>.bak (never over an existing file), and the
///    directory is synced.
/// 3. The file is truncated to its committed prefix and synced.
///
/// A .bak is therefore always complete. A repair that fails (a full disk:
/// SESSION_ERR_IO, file untouched) removes its temporary. One that is killed leaves
/// only a temporary, which no later repair takes for a backup. The backup has the
/// session file's permissions (and owner, where the process may set it). It is
/// never created through a symbolic link. A session name may be so long that a
/// derived name would exceed 255 bytes (NAME_MAX): then the name part is cut and
/// followed by ~ and 16 hex digits of a checksum of the name.
///
/// The result is {"truncatedBytes":N,"backup":"<path>"|null,"entries":M}. A file
/// without an unterminated tail is left as it is (truncatedBytes 0, backup null),
/// so a second repair changes nothing.
///
/// Returns SESSION_OK; SESSION_ERR_CORRUPT_LINE, SESSION_ERR_DUPLICATE_ID,
/// SESSION_ERR_MISSING_PARENT (file untouched); SESSION_ERR_LOCKED when a writer
/// holds the file; SESSION_ERR_IO; SESSION_ERR_INVALID_ARGUMENT. Do not repair a
/// file that a writer without the lock has open.
///
/// Ownership as session_parse_entry. Thread-safe.
///
/// Safety: path is NULL or NUL-terminated; out_json is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn session_jsonl_repair(
    path: *const c_char,
    out_json: *mut *mut c_char,
) -> SessionStatus {
    // SAFETY: the caller guarantees `out_json` is NULL or writable.
    unsafe {
        guard(out_json, || {
            // SAFETY: the caller guarantees `path` is NULL or NUL-terminated.
            let path = str_arg(path, "path")?;
            Ok(repair_jsonl(path)?.to_json().into_bytes())
        })
    }
}

/// Appends one entry. The entry is parsed and, for a file, serialised to its one line
/// at the moment of the call: later changes to the caller's buffer cannot alter it.
/// In its FIFO turn the append checks the store's state, that the id is new and that
/// the parent (if any) is committed, writes the line with one append, and only then
/// records the id. The result is {"id":"…","seq":N}, seq being the entry's
/// 0-based position among the store's committed entries.
///
/// With durability fsync the line is also on stable storage when this returns; with
/// fsync_batch appends queued behind this one may be written and synced with it.
///
/// Returns SESSION_OK; at call time SESSION_ERR_INVALID_JSON /
/// SESSION_ERR_INVALID_ENTRY (the store is unchanged), SESSION_ERR_READ_ONLY,
/// SESSION_ERR_WRONG_PROCESS; in turn SESSION_ERR_NEEDS_REPAIR,
/// SESSION_ERR_DUPLICATE_ID, SESSION_ERR_MISSING_PARENT; SESSION_ERR_IO when the
/// write or sync fails (it may have left half a line, so the store is tainted from
/// then on) and SESSION_ERR_FILE_CHANGED when the file changed under the writer
/// (tainted too, nothing written); SESSION_ERR_TAINTED (cause) on a tainted store,
/// with no I/O; SESSION_ERR_INVALID_ARGUMENT. A failed append fails only itself,
/// except that an I/O failure taints the store; with fsync_batch, a failed write or
/// sync fails every append of its group (their lines may or may not be on disk).
///
/// Thread-safe; appends commit in arrival order. Ownership as session_parse_entry.
///
/// Safety: store is NULL or an open store; entry_json is NULL or NUL-terminated; out_json
/// is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn session_store_append(
    store: *mut SessionStore,
    entry_json: *const c_char,
    out_json: *mut *mut c_char,
) -> SessionStatus {
    // SAFETY: the caller guarantees `store` is NULL or open and `out_json` NULL or
    // writable.
    unsafe {
        guard_store(store, out_json, |store| {
            // SAFETY: the caller guarantees `entry_json` is NULL or NUL-terminated.
            let text = str_arg(entry_json, "entry_json")?;
            Ok(store.append(text)?.to_json().into_bytes())
        })
    }
}

/// The store's state, at once (it does not wait for queued operations):
/// SESSION_STATE_READY, SESSION_STATE_NEEDS_REPAIR or SESSION_STATE_TAINTED.
/// A NULL store reports SESSION_STATE_TAINTED. Thread-safe.
///
/// Safety: store is NULL or an open store.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn session_store_state(store: *const SessionStore) -> SessionState {
    // SAFETY: the caller guarantees `store` is NULL or an open store.
    unsafe { boundary::store_state(store) }
}

/// Closes a store and frees it. NULL is fine. This must be the last call on the store:
/// no other call on it may be running or follow. Appends that returned are already
/// written; closing does not sync. Closing in the process that opened the store
/// releases the writer's lock, even while a forked child still holds copies of its
/// descriptors. In a forked child, closing an inherited store frees the handle and
/// closes the child's descriptors without unlocking: the lock stays the parent's.
///
/// Safety: store is NULL or an open store that no other thread is using.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn session_store_close(store: *mut SessionStore) {
    // SAFETY: the caller guarantees `store` is NULL or open, and this is its last call.
    unsafe { boundary::close_store(store) }
}

/// Section 4. Reading a store: entries, paths, messages.
///
/// Every committed entry, as a JSON array in commit order. Waits for the appends that
/// arrived before it.
///
/// Returns SESSION_OK; SESSION_ERR_TAINTED; SESSION_ERR_WRONG_PROCESS;
/// SESSION_ERR_INVALID_ARGUMENT. Works on a needs_repair store (the committed
/// prefix). Thread-safe. Ownership as
/// session_parse_entry.
///
/// Safety: store is NULL or an open store; out_json is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn session_store_entries(
    store: *mut SessionStore,
    out_json: *mut *mut c_char,
) -> SessionStatus {
    // SAFETY: as documented for the caller.
    unsafe { guard_store(store, out_json, |store| Ok(store.entries_json()?)) }
}

/// State, entries and warnings in one turn:
/// {"state":"ready"|"needs_repair","entries":[…],"warnings":[…]}.
///
/// Returns as session_store_entries.
///
/// Safety: As session_store_entries.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn session_store_read(
    store: *mut SessionStore,
    out_json: *mut *mut c_char,
) -> SessionStatus {
    // SAFETY: as documented for the caller.
    unsafe { guard_store(store, out_json, |store| Ok(store.read_json()?)) }
}

/// The entries from the root to leaf_id, as a JSON array, through the store's own
/// index: the cost grows with the path's length, not with the number of entries.
///
/// Returns SESSION_OK; SESSION_ERR_UNKNOWN_LEAF (id); SESSION_ERR_TAINTED;
/// SESSION_ERR_WRONG_PROCESS; SESSION_ERR_MISSING_PARENT only in a salvage store,
/// for a path through an orphan; SESSION_ERR_INVALID_ARGUMENT. Thread-safe.
/// Ownership as session_parse_entry.
///
/// Safety: store is NULL or an open store; leaf_id is NULL or NUL-terminated; out_json is
/// NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn session_store_path_to(
    store: *mut SessionStore,
    leaf_id: *const c_char,
    out_json: *mut *mut c_char,
) -> SessionStatus {
    // SAFETY: as documented for the caller.
    unsafe {
        guard_store(store, out_json, |store| {
            // SAFETY: the caller guarantees `leaf_id` is NULL or NUL-terminated.
            let leaf = str_arg(leaf_id, "leaf_id")?;
            Ok(store.path_to_json(leaf)?)
        })
    }
}

/// The messages on the path to leaf_id, as a JSON array of complete messages;
/// metadata is skipped. Through the store's index, as session_store_path_to.
///
/// Returns as session_store_path_to.
///
/// Safety: As session_store_path_to.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn session_store_messages_on_path(
    store: *mut SessionStore,
    leaf_id: *const c_char,
    out_json: *mut *mut c_char,
) -> SessionStatus {
    // SAFETY: as documented for the caller.
    unsafe {
        guard_store(store, out_json, |store| {
            // SAFETY: the caller guarantees `leaf_id` is NULL or NUL-terminated.
            let leaf = str_arg(leaf_id, "leaf_id")?;
            Ok(store.messages_on_path_json(leaf)?)
        })
    }
}
