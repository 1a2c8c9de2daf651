//! The C functions of navigation (docs/contract.md §8, §9): children, roots, leaves, latest
//! leaf, tree pages, labels, and the session listing of a folder.

use std::ffi::c_char;
use std::path::Path;

use super::SessionStore;
use super::boundary::{guard, guard_store, guard_store_text, options_arg, str_arg};
use super::status::SessionStatus;
use crate::list::{ListOptions, list_sessions, sessions_json};
use crate::nav::TreeOptions;
use crate::store::Store;

/// Section 6. Navigation: the tree of a store, the sessions of a folder.
///
/// The direct children of the entry id, in commit order, as a JSON array of nodes.
///
/// A node describes an entry without its body: {"id", "parentId", "seq", "depth",
/// "timestamp", "type", "role"?, "toolCalls"?, "toolCallId"?, "key"?,
/// "firstKeptEntryId"?, "childCount", "label"?}. depth is 0 for a root (and for a
/// salvaged orphan); toolCalls is a count, on assistant messages; role on
/// messages, toolCallId on tool results, key on metadata, firstKeptEntryId on
/// compactions; label is the entry's current session.label.
///
/// Through the store's index: the cost grows with the number of children, not with
/// the number of entries. Joins the store's FIFO (waits for earlier appends).
///
/// Returns SESSION_OK; SESSION_ERR_UNKNOWN_LEAF (id) when no entry has id;
/// SESSION_ERR_INVALID_ARGUMENT (NULL store or id, non-UTF-8 id);
/// SESSION_ERR_TAINTED, SESSION_ERR_WRONG_PROCESS, SESSION_ERR_INTERNAL.
///
/// Ownership: id is borrowed for the call. out_json may be NULL; otherwise
/// *out_json is always set, to the result or to {"error":{…}}, and the caller frees
/// it with session_string_free. Thread-safe (not concurrently with
/// session_store_close).
///
/// Safety: store is NULL or an open store; id is NULL or NUL-terminated; out_json is
/// NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn session_store_children(
    store: *mut SessionStore,
    id: *const c_char,
    out_json: *mut *mut c_char,
) -> SessionStatus {
    // SAFETY: as documented for the caller.
    unsafe {
        guard_store(store, out_json, |store| {
            // SAFETY: the caller guarantees `id` is NULL or NUL-terminated.
            let id = str_arg(id, "id")?;
            Ok(store.children_json(id)?.into_bytes())
        })
    }
}

/// The entries without a parent in the store, in commit order, as a JSON array of
/// nodes (the shape of session_store_children): the roots, and in a salvage store
/// the orphans whose parent is missing, so that every entry is reachable from here.
/// Cost: the number of roots.
///
/// Returns SESSION_OK; SESSION_ERR_INVALID_ARGUMENT (NULL store);
/// SESSION_ERR_TAINTED, SESSION_ERR_WRONG_PROCESS, SESSION_ERR_INTERNAL.
/// Ownership and threading as session_store_children.
///
/// Safety: store is NULL or an open store; out_json is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn session_store_roots(
    store: *mut SessionStore,
    out_json: *mut *mut c_char,
) -> SessionStatus {
    // SAFETY: as documented for the caller.
    unsafe { guard_store_text(store, out_json, Store::roots_json) }
}

/// The leaves (entries without children) as {"leaves":[nodes in commit order],
/// "latestBySeq":id|null, "latestByTimestamp":id|null}: the last committed entry,
/// and the leaf with the greatest timestamp (a tie goes to the higher seq); null when
/// the store is empty. Cost: the number of leaves.
///
/// Returns and ownership as session_store_roots.
///
/// Safety: As session_store_roots.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn session_store_leaves(
    store: *mut SessionStore,
    out_json: *mut *mut c_char,
) -> SessionStatus {
    // SAFETY: as documented for the caller.
    unsafe { guard_store_text(store, out_json, Store::leaves_json) }
}

/// The node of the last committed entry ("resume the latest"), or null when the
/// store is empty. Cost: constant.
///
/// Returns and ownership as session_store_roots.
///
/// Safety: As session_store_roots.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn session_store_latest_leaf(
    store: *mut SessionStore,
    out_json: *mut *mut c_char,
) -> SessionStatus {
    // SAFETY: as documented for the caller.
    unsafe { guard_store_text(store, out_json, Store::latest_leaf_json) }
}

/// A page of the tree in commit order: {"nodes":[…], "count": entries in the store,
/// "nextAfterSeq": the last node's seq when more remain, else null}.
///
/// options_json (NULL: the defaults) is {"afterSeq":N, "limit":N, "leaf":"id",
/// "previewChars":N}, every member optional: only nodes whose seq is greater than
/// afterSeq (pass the previous page's nextAfterSeq), at most limit of them (no
/// limit by default); nodes on the path to leaf carry "onPath":true; with
/// previewChars > 0 each node with a text carries preview: the first
/// previewChars Unicode scalar values of its first text, control characters written
/// as visible escapes (\n, \u001b). Nodes as session_store_children. Cost: the
/// page plus the logarithm of the depth of leaf (skip links find its path).
///
/// Returns SESSION_OK; SESSION_ERR_UNKNOWN_LEAF (id) for an unknown leaf;
/// SESSION_ERR_INVALID_ARGUMENT (NULL store; options that are not a JSON object, a
/// negative or non-integer afterSeq, limit or previewChars, an unknown member:
/// argument is options_json); SESSION_ERR_TAINTED, SESSION_ERR_WRONG_PROCESS,
/// SESSION_ERR_INTERNAL. Ownership and threading as session_store_children.
///
/// Safety: store is NULL or an open store; options_json is NULL or NUL-terminated;
/// out_json is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn session_store_tree(
    store: *mut SessionStore,
    options_json: *const c_char,
    out_json: *mut *mut c_char,
) -> SessionStatus {
    // SAFETY: as documented for the caller.
    unsafe {
        guard_store(store, out_json, |store| {
            // SAFETY: the caller guarantees `options_json` is NULL or NUL-terminated.
            let options = options_arg(options_json, TreeOptions::from_json)?;
            Ok(store.tree_json(&options)?.into_bytes())
        })
    }
}

/// The labels (session.label metadata entries): an array of {"targetId", "label",
/// "entryId", "seq"}, each labelled entry once, ordered by the target's seq; entryId
/// and seq name the label entry that set it (the last committed label of a target
/// wins; a null label clears it, and a cleared target is absent). Cost: the number of
/// labels.
///
/// Returns and ownership as session_store_roots.
///
/// Safety: As session_store_roots.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn session_store_labels(
    store: *mut SessionStore,
    out_json: *mut *mut c_char,
) -> SessionStatus {
    // SAFETY: as documented for the caller.
    unsafe { guard_store_text(store, out_json, Store::labels_json) }
}

/// Lists the sessions in the folder dir (UTF-8): {"sessions":[…]}, one record per
/// *.jsonl file. Other files are not sessions and are not listed. A record is
/// {"path", "bytes", "modifiedMs", "state", "firstUserText", "latestLeafId",
/// "latestTimestamp", "entries"?, "error"?}; a fact that is not known is null.
///
/// - path is dir joined with the file's relative name.
/// - state is "ready" or "needs_repair", as the file's tail says.
/// - firstUserText is a preview of at most 200 characters of the first user
///   message's text in the head, control characters escaped.
/// - latestLeafId and latestTimestamp are those of the last committed line.
/// - entries is there only for a file read whole; error is {"code","message"}.
///
/// Each file is read at its head (at most 64 KiB), and backwards from its end to
/// its last committed line. A file of at most 1 MiB is read whole. Damage in the
/// middle of a large file is not seen: that is what session verify is for. Some
/// files are listed with error, never skipped: one that cannot be opened or read,
/// whose head or last line is not a valid entry, whose name is not UTF-8 (shown
/// lossily), that vanished during the scan, or that is a symbolic link (links are
/// never followed) or not a regular file.
///
/// options_json (NULL: the defaults) is {"recursive":bool (false), "limit":N
/// (none), "sort":"modifiedMs" (newest first, the default) | "path" (ascending)}; the
/// limit applies after sorting, and only the files listed are read.
///
/// Returns SESSION_OK; SESSION_ERR_IO when dir itself cannot be read;
/// SESSION_ERR_INVALID_ARGUMENT (NULL or non-UTF-8 dir; bad options: argument
/// is options_json); SESSION_ERR_INTERNAL.
///
/// Ownership: dir and options_json are borrowed for the call; out_json as
/// session_store_children. Thread-safe; it touches no store.
///
/// Safety: dir and options_json are NULL or NUL-terminated; out_json is NULL or
/// writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn session_list_sessions(
    dir: *const c_char,
    options_json: *const c_char,
    out_json: *mut *mut c_char,
) -> SessionStatus {
    // SAFETY: the caller guarantees `out_json` is NULL or writable.
    unsafe {
        guard(out_json, || {
            // SAFETY: the caller guarantees `dir` is NULL or NUL-terminated.
            let dir = str_arg(dir, "dir")?;
            // SAFETY: the caller guarantees `options_json` is NULL or NUL-terminated.
            let options = options_arg(options_json, ListOptions::from_json)?;
            let sessions = list_sessions(Path::new(dir), &options)?;
            Ok(sessions_json(&sessions).into_bytes())
        })
    }
}
