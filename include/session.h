/*
 * session.h -- libsession, an append-only session tree for AI coding agents.
 *
 * libsession stores an agent's conversation as an append-only tree of entries in a
 * JSONL file (one entry per line), survives crashes and half-written files without
 * losing a committed line, and restores the model-facing messages of any branch.
 * Every entry has an "id", a "parentId" (null for a root) and a "timestamp"; the
 * caller names a leaf and gets the path from the root to it.
 *
 * Contents. The types, status codes and states come first. The functions follow in
 * sections, as listed here; the comment of a section's first function opens with
 * its title ("Section N. ...").
 *
 *    1. The library: version, status names, freeing strings.
 *         session_version, session_status_name, session_string_free
 *    2. Entries: parsing, paths and recovery, without a store.
 *         session_parse_entry, session_path_to, session_messages_on_path,
 *         session_recover_jsonl
 *    3. Stores: open, append, repair, close.
 *         session_memory_store_open, session_memory_store_open_with,
 *         session_jsonl_store_open, session_jsonl_store_open_with,
 *         session_jsonl_repair, session_store_append, session_store_state,
 *         session_store_close
 *    4. Reading a store: entries, paths, messages.
 *         session_store_entries, session_store_read, session_store_path_to,
 *         session_store_messages_on_path
 *    5. Context: what the model sees for a leaf.
 *         session_build_context, session_store_build_context
 *    6. Navigation: the tree of a store, the sessions of a folder.
 *         session_store_children, session_store_roots, session_store_leaves,
 *         session_store_latest_leaf, session_store_tree, session_store_labels,
 *         session_list_sessions
 *    7. Import and export: pi, Claude Code, Codex.
 *         session_import, session_import_with_progress, session_export
 *    8. Search across the sessions of a folder.
 *         session_search
 *    9. View: a store as one HTML page.
 *         session_store_render_html
 *   10. Secrets: find them, redact them.
 *         session_secrets, session_redact
 *   11. PostgreSQL: a store in a database, its sessions.
 *         session_pg_store_open, session_pg_list_sessions
 *
 * Conventions for every function below:
 *
 *   Status.    Each call returns a SessionStatus: SESSION_OK (0) or an error code.
 *              session_status_name() gives its stable name. Codes never change value.
 *
 *   Inputs.    Pointer arguments are borrowed for the duration of the call; whatever
 *              the library keeps, it copies first. C strings must be NUL-terminated
 *              UTF-8; a NULL or non-UTF-8 string gives SESSION_ERR_INVALID_ARGUMENT.
 *
 *   out_json.  May be NULL when the caller does not want it. Otherwise it is always
 *              set: to the result JSON on SESSION_OK, or to an error object
 *                {"error":{"code":"<status name>","message":"...", ...details}}
 *              otherwise. The caller owns it and frees it with session_string_free().
 *              The details of each code are listed with the code.
 *
 *   Stores.    A SessionStore is opaque. Open it in memory with
 *              session_memory_store_open() or session_memory_store_open_with(), on a
 *              JSONL file with session_jsonl_store_open() or
 *              session_jsonl_store_open_with(), or on a PostgreSQL session with
 *              session_pg_store_open(); close it with session_store_close(). Every
 *              function may be called from any thread, concurrently on the same store,
 *              except session_store_close(), which must be the last call on a store.
 *              Appends on one store commit in the order they arrive; a read waits for
 *              the appends that arrived before it.
 *
 *   Panics.    A bug inside the library never unwinds into C: it becomes
 *              SESSION_ERR_INTERNAL, and the store it happened on is tainted.
 *
 *   Files.     A line is committed only when it ends with a newline. One writer per
 *              file: a writer holds an advisory lock (flock) and a second writer gets
 *              SESSION_ERR_LOCKED; read-only opens work beside it. By default a
 *              successful append means the OS accepted the bytes (no fsync); the
 *              "fsync" and "fsync_batch" durability options make it mean "on stable
 *              storage". The library never truncates or rewrites a file by itself: a
 *              file whose last line is unterminated opens as "needs_repair" and refuses
 *              appends until the caller runs session_jsonl_repair(). Only regular
 *              files are opened: a FIFO, a device or a directory is SESSION_ERR_IO.
 *
 *   Fork.      A store belongs to the process that opened it; calls from a forked
 *              child fail with SESSION_ERR_WRONG_PROCESS. Open a new store instead.
 *              The lock is the opener's too: when the parent closes its store the
 *              file is unlocked although the child still holds copies of the
 *              descriptors, so the parent can reopen and a child can open its own
 *              store. A child's session_store_close() on an inherited store frees the
 *              handle and closes its descriptors without unlocking the parent's lock.
 *
 *   Errors.    Every member an error object can have; all are camelCase. Each code's
 *              own members are also listed with the code; no other member appears.
 *                code          every error: the status name (session_status_name)
 *                message       every error: a sentence for people; do not parse it
 *                argument      invalid_argument: the argument's name
 *                feature       invalid_argument from a function this build lacks
 *                              (built without its cargo feature): the feature (search)
 *                detected      invalid_argument from session_import (argument
 *                              src_path): the format the source looks like
 *                              (pi, claude-code, codex) or null
 *                pointer       invalid_json, invalid_entry, corrupt_line (where there
 *                              is one): a JSON Pointer to the bad spot
 *                offset        invalid_json: the byte offset in the text
 *                id            duplicate_id, cycle, unknown_leaf: the entry id
 *                childId       missing_parent: the entry that names the parent
 *                parentId      missing_parent: the parent that does not exist
 *                line          duplicate_id, missing_parent (found opening a file),
 *                              corrupt_line, and each warning: the 1-based line
 *                reason        corrupt_line: invalid_json, invalid_entry or
 *                              line_too_long; file_changed: deleted, replaced or
 *                              size_changed; invalid_compaction: unknown_entry,
 *                              not_on_path, not_interaction_start or
 *                              pending_tool_calls; tool_pairing: orphan_result,
 *                              duplicate_tool_call, duplicate_tool_result or
 *                              missing_result
 *                warnings      needs_repair: [{"code":"unterminated_tail","line":N}]
 *                cause         tainted: the original error object, the same bytes in
 *                              every result that reports it
 *                op            io, file_changed: the file operation, one of open,
 *                              read, write, sync, lock (taking the flock), identity
 *                              (checking the path still names the file), truncate
 *                              (repair cutting the file)
 *                osError       io: the errno, when the OS gave one
 *                expectedSize  file_changed (size_changed): the size this writer left
 *                actualSize    file_changed (size_changed): the size found
 *                path          locked: the file another writer holds
 *                ownerPid      wrong_process: the process that opened the store
 *                pid           wrong_process: the calling process
 *                compactionId  invalid_compaction: the compaction entry
 *                firstKeptEntryId
 *                              invalid_compaction: its firstKeptEntryId (or null)
 *                entryId       tool_pairing: the entry holding the defect;
 *                              invalid_argument from an estimator: the message's entry
 *                toolCallId    tool_pairing: the tool call id
 *                interactionStartId
 *                              tool_pairing: the first entry of the interaction
 */


#ifndef SESSION_H
#define SESSION_H

/* Generated by cbindgen from src/ffi/: do not edit.
 * Regenerate with: SESSION_UPDATE_HEADER=1 cargo build */

#include <stddef.h>
#include <stdint.h>

/**
 * The deepest nesting an entry may have (the entry object is level 1).
 */
#define SESSION_MAX_DEPTH 128

/**
 * The longest line, in bytes without its newline, that a JSONL file may commit; an
 * append whose line would be longer fails with SESSION_ERR_INVALID_ENTRY.
 */
#define SESSION_MAX_LINE_BYTES 67108864

/**
 * An open session store: in memory (session_memory_store_open), backed by a JSONL
 * file (session_jsonl_store_open) or by a session in a PostgreSQL database
 * (session_pg_store_open). Opaque; free it with session_store_close.
 *
 * A store is safe to use from many threads at once. Appends commit in the order in
 * which they arrive (a fair FIFO inside the handle); a read waits for the appends that
 * arrived before it.
 */
typedef struct SessionStore SessionStore;

/**
 * The result of a libsession call. SESSION_OK (0) is success; every other value is
 * an error whose name session_status_name returns and whose details the call's
 * error JSON carries. Values are stable and will only ever be appended to.
 */
typedef int32_t SessionStatus;

/**
 * The condition of a store, as session_store_state reports it.
 */
typedef int32_t SessionState;

/**
 * A host's token estimator for session_store_build_context: returns the cost in
 * tokens of one message, given its normalised JSON (message_json, NUL-terminated,
 * len bytes without the NUL, valid only during the call) and the user_data given
 * to session_store_build_context. A negative, NaN or infinite result fails the
 * build with SESSION_ERR_INVALID_ARGUMENT naming the message's entry (entryId).
 *
 * It is called on the thread that called session_store_build_context, never after
 * that call returns, inside the store's FIFO turn: it must not call the same store
 * (that would deadlock), and must not unwind (a C++ exception) or longjmp out.
 */
typedef double (*SessionTokenEstimator)(const char *message_json,
                                        size_t len,
                                        void *user_data);

/**
 * Told how far a long call has come: pass (from 1) of the passes the call makes over
 * its input, done of total bytes of that pass, and the user_data given to the call.
 * Returning non-zero asks the call to stop: it returns SESSION_ERR_CANCELLED and
 * writes nothing. It is called on the calling thread, never after the call returns,
 * and must not unwind (a C++ exception) or longjmp out.
 */
typedef int (*SessionProgress)(uint32_t pass,
                               uint64_t done,
                               uint64_t total,
                               void *user_data);



/**
 * Success.
 */
#define SESSION_OK 0

/**
 * A required pointer argument is NULL, a C string argument is not valid UTF-8, an
 * options object is invalid, or a host's token estimator returned a negative or
 * non-finite cost. Nothing was created or written. Error JSON members: argument
 * (its name); entryId (the message's entry) for the estimator.
 */
#define SESSION_ERR_INVALID_ARGUMENT 1

/**
 * The text is not exactly one well-formed JSON value, or it breaks JSON hygiene: a
 * duplicate key, a number that would not come back as the same value (1e400, an
 * integer beyond 64 bits), invalid UTF-8, or nesting deeper
 * than SESSION_MAX_DEPTH. Error JSON members: pointer (a JSON Pointer to the bad
 * spot), offset (the byte offset in the text).
 */
#define SESSION_ERR_INVALID_JSON 2

/**
 * Well-formed JSON of the wrong shape: a missing or mistyped member, an unknown
 * type, role or block type. Error JSON member: pointer.
 */
#define SESSION_ERR_INVALID_ENTRY 3

/**
 * The id is already taken. Error JSON members: id; line when found while opening
 * a file.
 */
#define SESSION_ERR_DUPLICATE_ID 4

/**
 * The entry's parent does not exist (yet). Error JSON members: childId, parentId;
 * line when found while opening a file.
 */
#define SESSION_ERR_MISSING_PARENT 5

/**
 * The parent links of the chosen path loop. Error JSON member: id.
 */
#define SESSION_ERR_CYCLE 6

/**
 * No entry has the requested leaf id. Error JSON member: id.
 */
#define SESSION_ERR_UNKNOWN_LEAF 7

/**
 * A committed line (one ending in a newline) is not a valid entry or is longer than
 * SESSION_MAX_LINE_BYTES. Error JSON members: line (1-based physical line),
 * reason (invalid_json, invalid_entry or line_too_long), pointer inside the
 * line where there is one.
 */
#define SESSION_ERR_CORRUPT_LINE 8

/**
 * The store's file ends in an unterminated line; appends are refused and the file is
 * left untouched. Error JSON member: warnings.
 */
#define SESSION_ERR_NEEDS_REPAIR 9

/**
 * An earlier write on this store failed (or an earlier call on it panicked); nothing
 * more is done on it. Error JSON member: cause, the original error object, the same
 * bytes in every result that reports it. Reopen the file to re-check the disk.
 */
#define SESSION_ERR_TAINTED 10

/**
 * A file operation failed. Error JSON members: op (open, read, write,
 * sync, lock, identity, truncate), osError (the errno) when the OS gave one.
 */
#define SESSION_ERR_IO 11

/**
 * A bug in libsession: a caught panic. The store it happened on is tainted.
 */
#define SESSION_ERR_INTERNAL 12

/**
 * Another writer holds the file's advisory lock (flock), in this or another
 * process: only one writer may have a file open. Error JSON member: path.
 */
#define SESSION_ERR_LOCKED 13

/**
 * Before an append, the writer found that its file changed under it: the path was
 * deleted or now names another file, or its size is not what this writer left
 * (another writer appended). Nothing was written; the store is tainted from then on,
 * with this error as cause. Error JSON members: reason (deleted, replaced,
 * size_changed), op (identity), expectedSize and actualSize for
 * size_changed.
 */
#define SESSION_ERR_FILE_CHANGED 14

/**
 * An append on a store opened read-only (readOnly or salvage), or on a PostgreSQL
 * store whose server was a standby (or took no writes) at open: nothing is written.
 */
#define SESSION_ERR_READ_ONLY 15

/**
 * A call on a store from a process other than the one that opened it (a child after
 * fork): nothing is done. The child must open its own store. Error JSON members:
 * ownerPid, pid.
 */
#define SESSION_ERR_WRONG_PROCESS 16

/**
 * A compaction entry's firstKeptEntryId is not a valid cut for its path: when the
 * compaction is appended (nothing is written), or when a context is built through it
 * (never a silent fallback). Error JSON members: compactionId, firstKeptEntryId
 * (a string or null), reason (unknown_entry, not_on_path,
 * not_interaction_start, pending_tool_calls).
 */
#define SESSION_ERR_INVALID_COMPACTION 17

/**
 * A tool call and its result do not pair up within an interaction of the context
 * being built (with onDefect "error", the default). Error JSON members: entryId,
 * toolCallId, reason (orphan_result, duplicate_tool_call,
 * duplicate_tool_result, missing_result), interactionStartId.
 */
#define SESSION_ERR_TOOL_PAIRING 18

/**
 * The caller's progress callback returned non-zero, asking a long call to stop (see
 * session_import_with_progress); nothing was written. No extra error JSON members.
 */
#define SESSION_ERR_CANCELLED 19

/**
 * Appends are accepted.
 */
#define SESSION_STATE_READY 0

/**
 * The file has an unterminated tail: reads return the committed prefix and the
 * warning; appends fail with SESSION_ERR_NEEDS_REPAIR and do not touch the file.
 */
#define SESSION_STATE_NEEDS_REPAIR 1

/**
 * A write failed or a call panicked: every later call fails with
 * SESSION_ERR_TAINTED. Also returned for a NULL store.
 */
#define SESSION_STATE_TAINTED 2

#ifdef __cplusplus
extern "C" {
#endif // __cplusplus

/**
 * Section 1. The library: version, status names, freeing strings.
 *
 * The library version, e.g. "0.1.0" (the crate version). The string is static: do
 * not free it. Thread-safe.
 */
const char *session_version(void);

/**
 * The stable name of a status ("ok", "missing_parent", …), the same as the code
 * of the error JSON; "unknown" for a value that is not a status. The string is
 * static: do not free it. Thread-safe.
 */
const char *session_status_name(SessionStatus status);

/**
 * Frees a string that a libsession call returned through out_json. NULL is fine.
 * Freeing any other pointer, or the same string twice, is undefined behaviour.
 *
 * Safety: s is NULL or a string from a libsession out_json not yet freed.
 */
void session_string_free(char *s);

/**
 * Section 2. Entries: parsing, paths and recovery, without a store.
 *
 * Parses entry_json as one session entry and returns the normalised entry:
 * the same JSON value with insignificant whitespace removed, key order, unknown
 * fields, escapes and numbers kept exactly.
 *
 * An entry is {"id", "parentId", "timestamp", "type", ...}: id a non-empty
 * string, parentId null or a non-empty string, timestamp a number, type one of
 * "message" with a message, "metadata" with a non-empty key and any JSON
 * value (the key session.label needs {"targetId": non-empty string, "label":
 * non-empty string | null}), or "compaction" (a non-null parentId, summary a
 * non-empty string or an object, firstKeptEntryId a non-empty string other than
 * id, or null, tokensBefore a number >= 0, optional details). A message's role
 * user, assistant or toolResult is validated with its content blocks (text,
 * thinking, image, toolCall); any other non-empty role is an extension message,
 * and any other non-empty block type an extension block, both kept byte-exact. An
 * unknown entry type is rejected; unknown extra fields are kept. A lone surrogate
 * escape ("\ud83d") is kept as written.
 *
 * Returns SESSION_OK; SESSION_ERR_INVALID_JSON or SESSION_ERR_INVALID_ENTRY
 * (with pointer); SESSION_ERR_INVALID_ARGUMENT for a NULL or non-UTF-8 string.
 *
 * Ownership: entry_json is borrowed for the call. out_json may be NULL; otherwise
 * *out_json is always set, to the result or to {"error":{…}}, and the caller frees
 * it with session_string_free. Thread-safe.
 *
 * Safety: entry_json is NULL or a NUL-terminated string; out_json is NULL or writable.
 */
SessionStatus session_parse_entry(const char *entry_json, char **out_json);

/**
 * The entries from the root to leaf_id, as a JSON array, over entries_json, a
 * JSON array of entries in any order.
 *
 * First every entry is parsed (errors point into the array: /3/message/...) and
 * indexed; a duplicate id anywhere fails. Then the parent links are walked from the
 * leaf; only this path is checked, so a broken branch that is not selected does not
 * stop a healthy path from being read.
 *
 * Returns SESSION_OK; SESSION_ERR_INVALID_JSON, SESSION_ERR_INVALID_ENTRY,
 * SESSION_ERR_DUPLICATE_ID (id), SESSION_ERR_UNKNOWN_LEAF (id),
 * SESSION_ERR_MISSING_PARENT (childId, parentId), SESSION_ERR_CYCLE (id),
 * SESSION_ERR_INVALID_ARGUMENT.
 *
 * Ownership and threading as session_parse_entry.
 *
 * Safety: entries_json and leaf_id are NULL or NUL-terminated; out_json is NULL or
 * writable.
 */
SessionStatus session_path_to(const char *entries_json,
                              const char *leaf_id,
                              char **out_json);

/**
 * The messages on the path to leaf_id, as a JSON array of complete messages
 * (toolCall ids, names and arguments; toolResult ids, names, isError, details;
 * every other field). Metadata entries are on the path but are not messages.
 *
 * Returns and ownership as session_path_to.
 *
 * Safety: As session_path_to.
 */
SessionStatus session_messages_on_path(const char *entries_json,
                                       const char *leaf_id,
                                       char **out_json);

/**
 * Recovers what the JSONL bytes bytes[0..len) commit, as
 * {"entries":[…],"warnings":[…]}. Pure: it never touches a file.
 *
 * A line is committed only when it ends with a newline. Blank lines (spaces, tabs,
 * CR) are skipped but counted for line numbers. A final piece without a newline is
 * not committed: if it is not blank it is reported as the warning
 * {"code":"unterminated_tail","line":N}. NUL bytes, a BOM or invalid UTF-8 make a
 * line non-blank.
 *
 * Returns SESSION_OK; SESSION_ERR_CORRUPT_LINE (line, reason, pointer) when a
 * committed line is not a valid entry; SESSION_ERR_INVALID_ARGUMENT when bytes is
 * NULL and len > 0. (NULL, 0) is empty input.
 *
 * Ownership: bytes is borrowed for the call; out_json as session_parse_entry.
 * Thread-safe.
 *
 * Safety: bytes is NULL or points to len readable bytes; out_json is NULL or writable.
 */
SessionStatus session_recover_jsonl(const uint8_t *bytes, size_t len, char **out_json);

/**
 * Section 3. Stores: open, append, repair, close.
 *
 * Opens a new, empty store in memory and sets *out_store to it.
 *
 * Returns SESSION_OK, or SESSION_ERR_INVALID_ARGUMENT when out_store is NULL.
 * The caller closes the store with session_store_close. Thread-safe.
 *
 * Safety: out_store is NULL or writable.
 */
SessionStatus session_memory_store_open(SessionStore **out_store);

/**
 * Opens a new, empty store in memory with options and sets *out_store to it.
 * options_json is a JSON object (NULL or {} for the defaults; an unknown member
 * is an error): "strictRoles" (default false) rejects extension roles and blocks
 * with SESSION_ERR_INVALID_ENTRY.
 *
 * Returns SESSION_OK, or SESSION_ERR_INVALID_ARGUMENT when out_store is NULL,
 * options_json is not valid UTF-8 or the options are invalid (argument is
 * options_json); on failure *out_store is set to NULL (when out_store is not
 * NULL). The caller closes the store with session_store_close. Thread-safe.
 *
 * Safety: options_json is NULL or NUL-terminated; out_store is NULL or writable.
 */
SessionStatus session_memory_store_open_with(const char *options_json,
                                             SessionStore **out_store);

/**
 * Opens the JSONL file at path (UTF-8) for appending, creating it if it is
 * missing (not its folders), and sets *out_store to the store. The result is
 * {"state":"ready"|"needs_repair","warnings":[…]}. The defaults of
 * session_jsonl_store_open_with apply: an advisory lock against a second writer,
 * an identity check before each append, no fsync.
 *
 * Opening recovers the committed lines and replays the tree rules in file order: ids
 * unique, every parent on an earlier committed line. A file whose last line has no
 * newline opens as needs_repair: reads work, appends are refused. libsession never
 * truncates or rewrites a file by itself. A final piece of only spaces, tabs or CR is
 * not a warning: the next append writes a newline that ends it, then its line, in one
 * write. Memory follows the committed lines, never the file's size, and holes of a
 * sparse file are skipped, not read. The path is resolved against the working
 * directory once, at open: a later chdir does not change the file.
 *
 * Returns SESSION_OK; SESSION_ERR_CORRUPT_LINE (line),
 * SESSION_ERR_DUPLICATE_ID or SESSION_ERR_MISSING_PARENT (with line);
 * SESSION_ERR_LOCKED (another writer has the file open);
 * SESSION_ERR_IO (missing folder, unreadable path, or a path that is not a regular
 * file: a FIFO, a device or a directory is refused at once, without blocking or
 * reading it); SESSION_ERR_INVALID_ARGUMENT
 * (NULL path or out_store, non-UTF-8 path). On failure *out_store is set to NULL
 * (when out_store is not NULL) and nothing is created but, possibly, the empty file.
 *
 * Guarantees and their limits: one writer per file (the lock is advisory); a
 * successful append means the OS accepted the bytes (no fsync).
 *
 * Ownership: path is borrowed; close the store with session_store_close;
 * out_json as session_parse_entry. Thread-safe.
 *
 * Safety: path is NULL or NUL-terminated; out_store and out_json are NULL or writable.
 */
SessionStatus session_jsonl_store_open(const char *path,
                                       SessionStore **out_store,
                                       char **out_json);

/**
 * session_jsonl_store_open with options, given as a JSON object (NULL or {} for
 * the defaults); unknown members are an error:
 *
 * - "durability": what a successful append promises. "none" (default): the OS
 *   accepted the bytes. "fsync": the line is on stable storage (fdatasync after
 *   every append; when the open creates the file, its directory is synced too).
 *   "fsync_batch": as "fsync", with group commit: appends that queue up while a
 *   sync is in flight are written and synced together, so concurrent appenders
 *   share syncs. A failed sync taints the store like a failed write.
 * - "lock" (default true): hold an exclusive advisory lock (flock) while the
 *   store is open, so that a second writer, in this or another process, fails with
 *   SESSION_ERR_LOCKED instead of interleaving. Advisory only: a process that does
 *   not lock, and some network filesystems, are not stopped.
 * - "readOnly" (default false): never create, lock or write the file; appends
 *   fail with SESSION_ERR_READ_ONLY. Works beside a writer.
 * - "salvage" (default false): read-only, and never fail on interior damage:
 *   every good entry is loaded, every bad line is skipped, and the result (and
 *   session_store_read) adds "complete":false,"diagnostics":[{"line":N,
 *   "code":"corrupt_line"|"duplicate_id"|"orphan",…}]. An orphan (an entry whose
 *   parent is not on an earlier good line) is loaded, but a path through it fails
 *   with SESSION_ERR_MISSING_PARENT.
 * - "checkIdentity" (default true): before each append, check that the path
 *   still names the file being written and that its size is what this writer left;
 *   otherwise fail with SESSION_ERR_FILE_CHANGED and taint the store, writing
 *   nothing.
 * - "index" (default true): use and keep the session index <path>.idx. It is a
 *   disposable cache that lets open skip reading the lines it covers; they are
 *   read on demand.
 *
 *   The index is used only when the file is as it was when the index was
 *   written: the same device and inode; the same change time (ctime, which every
 *   write, truncation or change of times or mode moves, and no program can set
 *   back); the covered size; the modification time; and matching checksums of 16
 *   sampled regions and of the last covered line. Otherwise the file is replayed
 *   as without it. So an edit made before open is always seen, even one in place
 *   that keeps the size and the modification time. So are lines appended since:
 *   by a writer killed before its close, or by one still appending. Those opens
 *   replay the whole file.
 *
 *   A writer writes the index every 65,536 appends or 64 MiB, and at
 *   session_store_close; never inside open. Writing it is best effort: a failure
 *   only costs the next open a full replay. Readers never write it. Only a file
 *   that is exactly its entries' lines (as the library writes them) gets one.
 *
 *   With an index, a covered line is checked every time a call reads it from the
 *   file (the first time and every later one). Another program may change a line
 *   in place while the store is open. The calls that read that line then get
 *   SESSION_ERR_CORRUPT_LINE with its line, and the store is not tainted. No call
 *   returns a changed line, nor a label that its label entry's line no longer
 *   sets. What the store derives from lines a call does not return is as the file
 *   was at open, as it is for a store opened without the index: which entries are
 *   children, leaves or roots, depth, childCount, onPath, whether an id exists. A
 *   damaged index found by a call makes that call replay the file and answer from
 *   it.
 *
 *   The index gets the session file's permissions (and owner, where allowed). It
 *   is never written through a symbolic link or onto a FIFO. It is never written
 *   from checksums of bytes another program changed under the writer: the writer
 *   removes it then. A session whose <path>.idx name would exceed 255 bytes has
 *   none.
 * - "verify" (default "index"): "full" checks every line at open, as without an
 *   index (the index is still kept); session CLI's verify always does.
 * - "strictRoles" (default false): reject extension roles and content blocks
 *   (any role but user, assistant, toolResult; any block type but text,
 *   thinking, image, toolCall) with SESSION_ERR_INVALID_ENTRY at append; a
 *   file that already holds one fails to open with SESSION_ERR_CORRUPT_LINE at
 *   that line. By default they are kept byte-exact.
 *
 * Returns as session_jsonl_store_open, plus SESSION_ERR_INVALID_ARGUMENT for bad
 * options (argument is options_json) and SESSION_ERR_LOCKED.
 *
 * Safety: path and options_json are NULL (options only) or NUL-terminated; out_store
 * and out_json are NULL or writable.
 */
SessionStatus session_jsonl_store_open_with(const char *path,
                                            const char *options_json,
                                            SessionStore **out_store,
                                            char **out_json);

/**
 * Repairs the JSONL file at path when its only problem is an unterminated tail
 * (what makes a store open as needs_repair). Afterwards the file opens ready.
 *
 * The steps run in this order, so that an interruption at any step loses no
 * committed line:
 *
 * 1. The committed prefix is validated. A corrupt line, duplicate id or missing
 *    parent refuses the repair and leaves the file untouched.
 * 2. The uncommitted bytes are copied to a temporary file next to it
 *    (.<name>.repair-<k>.tmp; holes stay holes). It is synced, then renamed to a
 *    new sidecar <name>.tail-<k>.bak (never over an existing file), and the
 *    directory is synced.
 * 3. The file is truncated to its committed prefix and synced.
 *
 * A .bak is therefore always complete. A repair that fails (a full disk:
 * SESSION_ERR_IO, file untouched) removes its temporary. One that is killed leaves
 * only a temporary, which no later repair takes for a backup. The backup has the
 * session file's permissions (and owner, where the process may set it). It is
 * never created through a symbolic link. A session name may be so long that a
 * derived name would exceed 255 bytes (NAME_MAX): then the name part is cut and
 * followed by ~ and 16 hex digits of a checksum of the name.
 *
 * The result is {"truncatedBytes":N,"backup":"<path>"|null,"entries":M}. A file
 * without an unterminated tail is left as it is (truncatedBytes 0, backup null),
 * so a second repair changes nothing.
 *
 * Returns SESSION_OK; SESSION_ERR_CORRUPT_LINE, SESSION_ERR_DUPLICATE_ID,
 * SESSION_ERR_MISSING_PARENT (file untouched); SESSION_ERR_LOCKED when a writer
 * holds the file; SESSION_ERR_IO; SESSION_ERR_INVALID_ARGUMENT. Do not repair a
 * file that a writer without the lock has open.
 *
 * Ownership as session_parse_entry. Thread-safe.
 *
 * Safety: path is NULL or NUL-terminated; out_json is NULL or writable.
 */
SessionStatus session_jsonl_repair(const char *path, char **out_json);

/**
 * Appends one entry. The entry is parsed and, for a file, serialised to its one line
 * at the moment of the call: later changes to the caller's buffer cannot alter it.
 * In its FIFO turn the append checks the store's state, that the id is new and that
 * the parent (if any) is committed, writes the line with one append, and only then
 * records the id. The result is {"id":"…","seq":N}, seq being the entry's
 * 0-based position among the store's committed entries.
 *
 * With durability fsync the line is also on stable storage when this returns; with
 * fsync_batch appends queued behind this one may be written and synced with it.
 *
 * Returns SESSION_OK; at call time SESSION_ERR_INVALID_JSON /
 * SESSION_ERR_INVALID_ENTRY (the store is unchanged), SESSION_ERR_READ_ONLY,
 * SESSION_ERR_WRONG_PROCESS; in turn SESSION_ERR_NEEDS_REPAIR,
 * SESSION_ERR_DUPLICATE_ID, SESSION_ERR_MISSING_PARENT; SESSION_ERR_IO when the
 * write or sync fails (it may have left half a line, so the store is tainted from
 * then on) and SESSION_ERR_FILE_CHANGED when the file changed under the writer
 * (tainted too, nothing written); SESSION_ERR_TAINTED (cause) on a tainted store,
 * with no I/O; SESSION_ERR_INVALID_ARGUMENT. A failed append fails only itself,
 * except that an I/O failure taints the store; with fsync_batch, a failed write or
 * sync fails every append of its group (their lines may or may not be on disk).
 *
 * Thread-safe; appends commit in arrival order. Ownership as session_parse_entry.
 *
 * Safety: store is NULL or an open store; entry_json is NULL or NUL-terminated; out_json
 * is NULL or writable.
 */
SessionStatus session_store_append(SessionStore *store,
                                   const char *entry_json,
                                   char **out_json);

/**
 * The store's state, at once (it does not wait for queued operations):
 * SESSION_STATE_READY, SESSION_STATE_NEEDS_REPAIR or SESSION_STATE_TAINTED.
 * A NULL store reports SESSION_STATE_TAINTED. Thread-safe.
 *
 * Safety: store is NULL or an open store.
 */
SessionState session_store_state(const SessionStore *store);

/**
 * Closes a store and frees it. NULL is fine. This must be the last call on the store:
 * no other call on it may be running or follow. Appends that returned are already
 * written; closing does not sync. Closing in the process that opened the store
 * releases the writer's lock, even while a forked child still holds copies of its
 * descriptors. In a forked child, closing an inherited store frees the handle and
 * closes the child's descriptors without unlocking: the lock stays the parent's.
 *
 * Safety: store is NULL or an open store that no other thread is using.
 */
void session_store_close(SessionStore *store);

/**
 * Section 4. Reading a store: entries, paths, messages.
 *
 * Every committed entry, as a JSON array in commit order. Waits for the appends that
 * arrived before it.
 *
 * Returns SESSION_OK; SESSION_ERR_TAINTED; SESSION_ERR_WRONG_PROCESS;
 * SESSION_ERR_INVALID_ARGUMENT. Works on a needs_repair store (the committed
 * prefix). Thread-safe. Ownership as
 * session_parse_entry.
 *
 * Safety: store is NULL or an open store; out_json is NULL or writable.
 */
SessionStatus session_store_entries(SessionStore *store, char **out_json);

/**
 * State, entries and warnings in one turn:
 * {"state":"ready"|"needs_repair","entries":[…],"warnings":[…]}.
 *
 * Returns as session_store_entries.
 *
 * Safety: As session_store_entries.
 */
SessionStatus session_store_read(SessionStore *store, char **out_json);

/**
 * The entries from the root to leaf_id, as a JSON array, through the store's own
 * index: the cost grows with the path's length, not with the number of entries.
 *
 * Returns SESSION_OK; SESSION_ERR_UNKNOWN_LEAF (id); SESSION_ERR_TAINTED;
 * SESSION_ERR_WRONG_PROCESS; SESSION_ERR_MISSING_PARENT only in a salvage store,
 * for a path through an orphan; SESSION_ERR_INVALID_ARGUMENT. Thread-safe.
 * Ownership as session_parse_entry.
 *
 * Safety: store is NULL or an open store; leaf_id is NULL or NUL-terminated; out_json is
 * NULL or writable.
 */
SessionStatus session_store_path_to(SessionStore *store,
                                    const char *leaf_id,
                                    char **out_json);

/**
 * The messages on the path to leaf_id, as a JSON array of complete messages;
 * metadata is skipped. Through the store's index, as session_store_path_to.
 *
 * Returns as session_store_path_to.
 *
 * Safety: As session_store_path_to.
 */
SessionStatus session_store_messages_on_path(SessionStore *store,
                                             const char *leaf_id,
                                             char **out_json);

/**
 * Section 5. Context: what the model sees for a leaf.
 *
 * What the model should see for leaf_id (docs/contract.md §7), over entries_json,
 * a JSON array of entries in any order. Tokens are counted with the default
 * estimator: a quarter of the bytes of each message's normalised JSON, rounded up.
 *
 * P is the path to leaf_id. C is the compaction on P nearest the leaf; earlier
 * ones are ignored. The kept messages are:
 *
 * - every message of P, when there is no C;
 * - the messages after C, when its firstKeptEntryId is null;
 * - else the messages from firstKeptEntryId to the leaf.
 *
 * They are split into interactions: one starts at the first kept message and at
 * every user message. They are checked for tool-call pairing. The result is one
 * JSON object, members in this order:
 *
 * {"leafId":…,"compaction":{"id","firstKeptEntryId","tokensBefore","summary",
 * "details"?}|null,"messages":[…],"keptEntryIds":[…],"interactions":[{"start",
 * "count","firstEntryId","cutPoint","tokens"?}…],"metadata":{…},"budget":{…}|null,
 * "skipped":[…],"defects":[…]}
 *
 * - messages starts with a synthetic user message that holds the summary when
 *   there is a C (unless summaryMessage is false). The kept messages follow,
 *   byte-identical to session_messages_on_path.
 * - keptEntryIds is aligned with the messages after the summary; it is null for a
 *   synthesized result.
 * - metadata is the last value of each key not under session., over the whole of
 *   P, in first-set order.
 * - skipped and defects list {interactionStartId, entryId, toolCallId, reason}.
 *   A defect answered by a synthesized result adds "action":"synthesized"; a
 *   result a profile left out adds "action":"dropped".
 *
 * options_json is a JSON object; NULL means the defaults, and an unknown member is
 * SESSION_ERR_INVALID_ARGUMENT. Its members:
 *
 * - "onDefect": what a pairing defect does. "error" (default) fails the call.
 *   "skip" drops each defective interaction whole and lists it in skipped. "keep"
 *   keeps them and lists the defects in defects. "synthesize" answers each tool
 *   call that has no result, and lists it in defects; any other defect fails as
 *   with "error". The answer is {"role":"toolResult","toolCallId","toolName",
 *   "content":[one text block],"isError":true,"timestamp","synthetic":true}. It is
 *   placed after the last assistant message of the reply that holds the call, with
 *   the timestamp of the message that holds it.
 * - "synthesizedText": the text of a synthesized result (default "aborted").
 * - "budget": {"maxTokens":N,"reservedOutput":N,"safetyMargin":N}, each a finite
 *   number >= 0; the last two default to 0. Interactions are kept from the newest
 *   backwards while they fit beside the summary; the newest always stays. budget
 *   then reports available, used, reason (within_budget, trimmed,
 *   single_interaction_overflow), droppedInteractions and
 *   suggestedFirstKeptEntryId. Token sums saturate at DBL_MAX, and available at
 *   -DBL_MAX, so the output is always JSON. Numbers from 1e21 up are written with
 *   an exponent.
 * - "summaryMessage" (default true); "summaryPrefix" and "summarySuffix", the text
 *   around the summary (default empty).
 * - "strictRoles" (default false): reject extension roles and blocks.
 * - "profile": whose rules build the messages. "auto" (the default) takes the
 *   agent an imported session came from, named by its root's importedFormat, and
 *   none for a native session. "none" applies no agent's rules, whatever the
 *   origin. "pi", "claude-code" or "codex": the messages are what that agent sends
 *   for the leaf.
 *
 * What each agent sends:
 *
 * - pi leaves out assistant messages stopped with "error" or "aborted". It answers
 *   a call without a result with "No result provided", after the results of its
 *   reply.
 * - Claude Code merges the parts of a reply that share a responseId into one
 *   message, its results after it (parts and results it hung off the path are
 *   taken back). It leaves out whitespace-only replies, and replies whose calls
 *   have no result ("action":"dropped"). It sends "No response requested." after a
 *   conversation that ends on the user's side, and old Task calls as Agent.
 * - Codex answers a call without an output with "aborted", right after it. It
 *   drops an output without a call ("action":"dropped"), and pairs tool searches
 *   the same way. It sends a compaction's replacement history in place of its
 *   summary. At a compaction without one, it sends the history Codex rebuilds
 *   there, as one interaction: the user messages before it, then the summary. Those
 *   user messages are text only, newest first while they fit in 20,000 tokens of 4
 *   bytes; the one that does not fit is shortened as Codex shortens it; Codex's own
 *   context messages are left out.
 *
 * A profile applies only while onDefect is "error". Other defects are then kept.
 * The compaction's own cut is taken even when it is not an interaction start or
 * leaves a call pending, as those agents take it.
 *
 * Returns SESSION_OK, or, in this order:
 *
 * - SESSION_ERR_INVALID_ARGUMENT (a NULL or non-UTF-8 string, bad options);
 * - SESSION_ERR_INVALID_JSON, SESSION_ERR_INVALID_ENTRY, SESSION_ERR_DUPLICATE_ID;
 * - SESSION_ERR_UNKNOWN_LEAF;
 * - SESSION_ERR_MISSING_PARENT, SESSION_ERR_CYCLE;
 * - SESSION_ERR_INVALID_COMPACTION (compactionId, firstKeptEntryId, reason);
 * - SESSION_ERR_TOOL_PAIRING (entryId, toolCallId, reason, interactionStartId).
 *
 * The message of a tool pairing error ends with the option that would build the
 * context. For a session imported from an agent and built without its rules
 * ("profile":"none", or onDefect other than "error"), that is "profile":"auto"
 * with onDefect "error". For a native session, it is onDefect. Take an invalid
 * compaction that the agent's profile would take (not_interaction_start,
 * pending_tool_calls) on such an imported session: its message names
 * "profile":"auto" the same way.
 *
 * Ownership: the strings are borrowed for the call. out_json may be NULL;
 * otherwise *out_json is always set, to the result or to {"error":{…}}, and the
 * caller frees it with session_string_free. Thread-safe.
 *
 * Safety: entries_json, leaf_id and options_json are NULL or NUL-terminated;
 * out_json is NULL or writable.
 */
SessionStatus session_build_context(const char *entries_json,
                                    const char *leaf_id,
                                    const char *options_json,
                                    char **out_json);

/**
 * session_build_context through the store's own index, for leaf_id: the cost
 * grows with what the context keeps, not with the path or the store. It reads the
 * path from leaf_id back to the first entry the latest compaction keeps (the
 * whole path when there is none, or under strictRoles), the path's root, and the
 * path's metadata entries, each linked to the one above it; the result is the
 * same as session_build_context over session_store_entries. Joins the store's
 * FIFO like every read; a needs_repair store builds from its committed prefix.
 *
 * estimate (NULL for the default estimator) is called only when the options give a
 * budget: exactly once per kept message that remains after skips, and once for the
 * summary message, each time with that message's normalised JSON and user_data
 * (passed through untouched, may be NULL). See SessionTokenEstimator for its
 * contract; a negative or non-finite result fails the call with
 * SESSION_ERR_INVALID_ARGUMENT (argument "estimate", entryId).
 *
 * Returns as session_build_context (without the entries-array errors), plus
 * SESSION_ERR_TAINTED, SESSION_ERR_WRONG_PROCESS, and SESSION_ERR_INVALID_ENTRY
 * for an extension entry on the path under strictRoles.
 *
 * Ownership as session_build_context. Thread-safe; the estimator runs on the
 * calling thread.
 *
 * Safety: store is NULL or an open store; leaf_id and options_json are NULL or
 * NUL-terminated; estimate is NULL or a function that honours
 * SessionTokenEstimator's contract; out_json is NULL or writable.
 */
SessionStatus session_store_build_context(SessionStore *store,
                                          const char *leaf_id,
                                          const char *options_json,
                                          SessionTokenEstimator estimate,
                                          void *user_data,
                                          char **out_json);

/**
 * Section 6. Navigation: the tree of a store, the sessions of a folder.
 *
 * The direct children of the entry id, in commit order, as a JSON array of nodes.
 *
 * A node describes an entry without its body: {"id", "parentId", "seq", "depth",
 * "timestamp", "type", "role"?, "toolCalls"?, "toolCallId"?, "key"?,
 * "firstKeptEntryId"?, "childCount", "label"?}. depth is 0 for a root (and for a
 * salvaged orphan); toolCalls is a count, on assistant messages; role on
 * messages, toolCallId on tool results, key on metadata, firstKeptEntryId on
 * compactions; label is the entry's current session.label.
 *
 * Through the store's index: the cost grows with the number of children, not with
 * the number of entries. Joins the store's FIFO (waits for earlier appends).
 *
 * Returns SESSION_OK; SESSION_ERR_UNKNOWN_LEAF (id) when no entry has id;
 * SESSION_ERR_INVALID_ARGUMENT (NULL store or id, non-UTF-8 id);
 * SESSION_ERR_TAINTED, SESSION_ERR_WRONG_PROCESS, SESSION_ERR_INTERNAL.
 *
 * Ownership: id is borrowed for the call. out_json may be NULL; otherwise
 * *out_json is always set, to the result or to {"error":{…}}, and the caller frees
 * it with session_string_free. Thread-safe (not concurrently with
 * session_store_close).
 *
 * Safety: store is NULL or an open store; id is NULL or NUL-terminated; out_json is
 * NULL or writable.
 */
SessionStatus session_store_children(SessionStore *store,
                                     const char *id,
                                     char **out_json);

/**
 * The entries without a parent in the store, in commit order, as a JSON array of
 * nodes (the shape of session_store_children): the roots, and in a salvage store
 * the orphans whose parent is missing, so that every entry is reachable from here.
 * Cost: the number of roots.
 *
 * Returns SESSION_OK; SESSION_ERR_INVALID_ARGUMENT (NULL store);
 * SESSION_ERR_TAINTED, SESSION_ERR_WRONG_PROCESS, SESSION_ERR_INTERNAL.
 * Ownership and threading as session_store_children.
 *
 * Safety: store is NULL or an open store; out_json is NULL or writable.
 */
SessionStatus session_store_roots(SessionStore *store, char **out_json);

/**
 * The leaves (entries without children) as {"leaves":[nodes in commit order],
 * "latestBySeq":id|null, "latestByTimestamp":id|null}: the last committed entry,
 * and the leaf with the greatest timestamp (a tie goes to the higher seq); null when
 * the store is empty. Cost: the number of leaves.
 *
 * Returns and ownership as session_store_roots.
 *
 * Safety: As session_store_roots.
 */
SessionStatus session_store_leaves(SessionStore *store, char **out_json);

/**
 * The node of the last committed entry ("resume the latest"), or null when the
 * store is empty. Cost: constant.
 *
 * Returns and ownership as session_store_roots.
 *
 * Safety: As session_store_roots.
 */
SessionStatus session_store_latest_leaf(SessionStore *store, char **out_json);

/**
 * A page of the tree in commit order: {"nodes":[…], "count": entries in the store,
 * "nextAfterSeq": the last node's seq when more remain, else null}.
 *
 * options_json (NULL: the defaults) is {"afterSeq":N, "limit":N, "leaf":"id",
 * "previewChars":N}, every member optional: only nodes whose seq is greater than
 * afterSeq (pass the previous page's nextAfterSeq), at most limit of them (no
 * limit by default); nodes on the path to leaf carry "onPath":true; with
 * previewChars > 0 each node with a text carries preview: the first
 * previewChars Unicode scalar values of its first text, control characters written
 * as visible escapes (\n, \u001b). Nodes as session_store_children. Cost: the
 * page plus the logarithm of the depth of leaf (skip links find its path).
 *
 * Returns SESSION_OK; SESSION_ERR_UNKNOWN_LEAF (id) for an unknown leaf;
 * SESSION_ERR_INVALID_ARGUMENT (NULL store; options that are not a JSON object, a
 * negative or non-integer afterSeq, limit or previewChars, an unknown member:
 * argument is options_json); SESSION_ERR_TAINTED, SESSION_ERR_WRONG_PROCESS,
 * SESSION_ERR_INTERNAL. Ownership and threading as session_store_children.
 *
 * Safety: store is NULL or an open store; options_json is NULL or NUL-terminated;
 * out_json is NULL or writable.
 */
SessionStatus session_store_tree(SessionStore *store,
                                 const char *options_json,
                                 char **out_json);

/**
 * The labels (session.label metadata entries): an array of {"targetId", "label",
 * "entryId", "seq"}, each labelled entry once, ordered by the target's seq; entryId
 * and seq name the label entry that set it (the last committed label of a target
 * wins; a null label clears it, and a cleared target is absent). Cost: the number of
 * labels.
 *
 * Returns and ownership as session_store_roots.
 *
 * Safety: As session_store_roots.
 */
SessionStatus session_store_labels(SessionStore *store, char **out_json);

/**
 * Lists the sessions in the folder dir (UTF-8): {"sessions":[…]}, one record per
 * *.jsonl file. Other files are not sessions and are not listed. A record is
 * {"path", "bytes", "modifiedMs", "state", "firstUserText", "latestLeafId",
 * "latestTimestamp", "entries"?, "error"?}; a fact that is not known is null.
 *
 * - path is dir joined with the file's relative name.
 * - state is "ready" or "needs_repair", as the file's tail says.
 * - firstUserText is a preview of at most 200 characters of the first user
 *   message's text in the head, control characters escaped.
 * - latestLeafId and latestTimestamp are those of the last committed line.
 * - entries is there only for a file read whole; error is {"code","message"}.
 *
 * Each file is read at its head (at most 64 KiB), and backwards from its end to
 * its last committed line. A file of at most 1 MiB is read whole. Damage in the
 * middle of a large file is not seen: that is what session verify is for. Some
 * files are listed with error, never skipped: one that cannot be opened or read,
 * whose head or last line is not a valid entry, whose name is not UTF-8 (shown
 * lossily), that vanished during the scan, or that is a symbolic link (links are
 * never followed) or not a regular file.
 *
 * options_json (NULL: the defaults) is {"recursive":bool (false), "limit":N
 * (none), "sort":"modifiedMs" (newest first, the default) | "path" (ascending)}; the
 * limit applies after sorting, and only the files listed are read.
 *
 * Returns SESSION_OK; SESSION_ERR_IO when dir itself cannot be read;
 * SESSION_ERR_INVALID_ARGUMENT (NULL or non-UTF-8 dir; bad options: argument
 * is options_json); SESSION_ERR_INTERNAL.
 *
 * Ownership: dir and options_json are borrowed for the call; out_json as
 * session_store_children. Thread-safe; it touches no store.
 *
 * Safety: dir and options_json are NULL or NUL-terminated; out_json is NULL or
 * writable.
 */
SessionStatus session_list_sessions(const char *dir,
                                    const char *options_json,
                                    char **out_json);

/**
 * Section 7. Import and export: pi, Claude Code, Codex.
 *
 * Converts the session file of another agent at src_path into a new libsession
 * JSONL file at out_path, and returns the import report.
 *
 * format names the source's format: "pi" (pi's session file, versions 1–3),
 * "claude-code" (a Claude Code transcript) or "codex" (a Codex rollout file).
 * "auto" or NULL detects it from the first lines of the source (at most 64
 * non-blank ones):
 *
 * - pi by its {"type":"session"} header line;
 * - Claude Code by parentUuid, sessionId or its line types (user, assistant,
 *   summary, system, progress, file-history-snapshot, queue-operation);
 * - Codex by its line types (session_meta, response_item, event_msg,
 *   turn_context, compacted), or an older rollout's record_type or
 *   id/timestamp/instructions header.
 *
 * Two kinds of source are refused, and nothing is written: one that looks like
 * another format than the one given, and one in which no line maps to a
 * conversation entry (a message or a compaction). The error is
 * SESSION_ERR_INVALID_ARGUMENT with argument src_path and detected (the format it
 * looks like, or null).
 *
 * Every line of the source ends up in the output. A line becomes what it says
 * (message, compaction, label, …). A line that cannot be mapped (a torn or corrupt
 * line, an unknown kind) becomes a metadata entry <format>.unmapped that holds its
 * raw text and line number. A compaction that the store would refuse at append is
 * written as the source has it, and listed in refusedCompactions.
 *
 * out_path must not exist: an import never overwrites a file. The entries are
 * written through a buffer into a temporary file beside it
 * (.NAME.import-PID-K.tmp). That file is synced, then renamed to out_path unless
 * out_path exists by then. On any failure nothing is left at out_path.
 *
 * The source is read a line at a time, in two or three passes. Memory follows the
 * longest line and the ids kept, never the size of the source: about 40 bytes an
 * entry, and up to about 200 for a line kept raw (which the report lists).
 *
 * A pi entry may have its own member named like one of the importer's marks
 * (isoTimestamp, piType, importedParentId, or such a name followed by ~). It is
 * kept with one more ~, so that it is never read as a mark. The export to pi takes
 * the ~ off again.
 *
 * The report is {"linesRead", "entriesWritten", "entryTypes":{type: count},
 * "sourceKinds":{source kind: count}, "unmapped":[{"line","reason","entryId"}],
 * "reparented":[{"line","id","parentId"}], "refusedCompactions":[{"line","id",
 * "reason"}], "unterminatedTail":bool, "format":NAME, "resumeLeafId":ID,
 * "unknownKinds":{source kind: count}, "redactions": N}.
 *
 * - The reason of an unmapped line is invalid_json, unknown_kind, invalid_shape,
 *   invalid_entry or duplicate_id.
 * - format is the format imported (given or detected). The root entry records it
 *   as importedFormat.
 * - resumeLeafId is the leaf the source agent resumes: the latest entry in commit
 *   order with a message or compaction on its path and no children other than
 *   lines kept raw. So a line of an unknown kind (kept raw, hung under the root)
 *   is never it.
 * - The session records that leaf too. Its last entry is {"id","parentId":ID,
 *   "timestamp","type":"metadata","key":"session.resumeLeaf",
 *   "value":{"leafId":ID}}, a child of that leaf (counted in entriesWritten). So
 *   the session's latest leaf is on the branch the agent resumes, and a reader
 *   finds the leaf without the report.
 * - unknownKinds counts the lines kept raw as unknown_kind, by their source kind
 *   (a Claude Code last-prompt, a Codex world_state, …).
 * - redactions counts the secrets replaced (0 without "redact": true).
 *
 * options_json is NULL or {"redact": bool, "rules": "default" | [{"name",
 * "pattern"}…], "extraRules": [{"name","pattern"}…], "allow": [string…]}.
 * "redact": true (default false) replaces the secrets in every entry's strings by
 * [REDACTED:<rule>] before the entry is written, as session_redact does. Ids,
 * parent ids and tool call ids never change, so the tree is the same. rules,
 * extraRules and allow choose the rules as for session_secrets; without "redact":
 * true they are refused. An unknown member, or an invalid rule, is
 * SESSION_ERR_INVALID_ARGUMENT.
 *
 * Returns SESSION_OK, or:
 *
 * - SESSION_ERR_IO when the source cannot be read, when the output cannot be
 *   created or written, or when memory runs out. A source that is not a regular
 *   file (a FIFO, /dev/zero) is refused at once: op "open", "… is a FIFO, not a
 *   regular file". An output that exists already: op "open", OS error 17. Memory
 *   that runs out is an error, never an abort: "out of memory for …".
 * - SESSION_ERR_CORRUPT_LINE (reason line_too_long, line the source line) when a
 *   source line, or the entry it becomes, is longer than SESSION_MAX_LINE_BYTES.
 *   No store could read such an entry back, so the import writes nothing.
 * - SESSION_ERR_INVALID_ARGUMENT, with argument naming it: a NULL or non-UTF-8
 *   string, an unknown format, bad options. With argument src_path and detected:
 *   a source of another format, or one without a conversation entry (see above).
 * - SESSION_ERR_INTERNAL.
 *
 * Ownership: every string is borrowed for the call. out_json may be NULL;
 * otherwise *out_json is always set, to the report or to {"error":{…}}, and the
 * caller frees it with session_string_free. Thread-safe; it touches no store.
 *
 * Safety: format, src_path, out_path and options_json are NULL or NUL-terminated;
 * out_json is NULL or writable.
 */
SessionStatus session_import(const char *format,
                             const char *src_path,
                             const char *out_path,
                             const char *options_json,
                             char **out_json);

/**
 * session_import, telling progress how far it has read: at the start of each pass
 * over the source (two or three) and after every mebibyte read, with total the
 * source's size in bytes. progress may be NULL (then this is session_import);
 * user_data is passed to it untouched and may be NULL. When progress returns
 * non-zero the import stops: SESSION_ERR_CANCELLED, and nothing is left at
 * out_path (the temporary file is removed).
 *
 * Returns what session_import returns, and SESSION_ERR_CANCELLED. Ownership and
 * threads: as session_import.
 *
 * Safety: format, src_path, out_path and options_json are NULL or NUL-terminated;
 * out_json is NULL or writable; progress is NULL or follows SessionProgress's
 * contract.
 */
SessionStatus session_import_with_progress(const char *format,
                                           const char *src_path,
                                           const char *out_path,
                                           const char *options_json,
                                           SessionProgress progress,
                                           void *user_data,
                                           char **out_json);

/**
 * Writes the libsession session file at src_path as a new file at out_path that
 * another agent resumes, and returns the export report.
 *
 * format is one of:
 *
 * - "pi": a pi session file. It holds the whole tree, every entry kept; the leaf
 *   is written last, where pi resumes.
 * - "claude-code": a Claude Code transcript, resumed with claude --resume and the
 *   sessionId its lines carry.
 * - "codex": a Codex rollout, resumed with codex resume and the id of its
 *   session_meta line.
 *
 * Claude Code and Codex resume one linear history and apply their own rules to
 * it. Their file holds what that agent sends for the leaf: the messages of
 * session_build_context with the profile of that agent, each as the line the
 * agent writes. A compaction becomes a Claude Code compact boundary and its
 * summary line, or a Codex compacted line whose replacement history is the
 * summary message, the other items after it.
 *
 * What the agent's format cannot carry is converted or left out, and listed in
 * the report:
 *
 * - A message of a role the agent lacks (pi's custom, branchSummary,
 *   bashExecution; Codex's developer for Claude Code) is sent as user text, after
 *   the results of the tool calls pending before it.
 * - A thinking block becomes, for Codex, a reasoning item with the text as its
 *   summary. For Claude Code, one without a signature is left out (Claude Code
 *   sends none).
 * - An error flag on a result is not carried to Codex.
 * - A Codex item with no Claude Code equivalent (a web or tool search) is left out
 *   for Claude Code.
 * - Metadata, labels, other branches and messages before the compaction are not
 *   written.
 *
 * The session's id is the source's (a Claude Code sessionId, a Codex or pi session
 * id) when it is a UUID; else it is a UUID made from the first message's entry id.
 * Line ids are the entry ids where the format has them.
 *
 * options_json is NULL or {"leaf": id, "redact": bool, "rules": "default" |
 * [{"name","pattern"}…], "extraRules": [{"name","pattern"}…], "allow":
 * [string…]}. leaf is the leaf to resume (default: the latest leaf). Secrets are
 * redacted by default: every line written has the secrets in its strings replaced
 * by [REDACTED:<rule>], as session_redact does. Ids, parent ids, tool call ids
 * and the agents' own ids (such as uuid, parentUuid, tool_use_id and call_id)
 * never change. "redact": false writes the secrets as they are. rules, extraRules
 * and allow choose the rules as for session_secrets; with "redact": false they are
 * refused. An unknown member, or an invalid rule, is SESSION_ERR_INVALID_ARGUMENT.
 *
 * The report is {"format":NAME,"entries":N,"converted":[{"kind","count",
 * "reason"}…],"dropped":[{"kind","count","reason"}…],"redactions":N}. entries is
 * the number of lines written (a header line included); redactions the number of
 * secrets replaced. kind names what was changed (metadata, label, branch, message,
 * compaction, role:ROLE, block:TYPE, thinking, toolResult.isError, order,
 * codexItem:TYPE, compaction.summary); count says how many, and reason why, in a
 * sentence.
 *
 * out_path must not exist: an export never overwrites a file. The text is written
 * into a temporary file beside it, with permissions no wider than the source's (a
 * 0600 source gives a 0600 file). That file is synced, then renamed to out_path
 * unless out_path exists by then. On any failure nothing is left at out_path. The
 * source is opened read-only and may have a writer.
 *
 * Returns SESSION_OK, or:
 *
 * - SESSION_ERR_INVALID_ARGUMENT, with argument naming it: a NULL or non-UTF-8
 *   string, a format other than the three, bad options.
 * - SESSION_ERR_UNKNOWN_LEAF when no entry has the leaf's id.
 * - SESSION_ERR_IO when the source cannot be read, or the output cannot be created
 *   or written (it exists already: op "open", OS error 17).
 * - The statuses of opening a session file (SESSION_ERR_CORRUPT_LINE, …).
 * - For claude-code and codex, the statuses of session_build_context for the leaf
 *   under that agent's profile (SESSION_ERR_INVALID_COMPACTION,
 *   SESSION_ERR_TOOL_PAIRING for a duplicate call).
 * - SESSION_ERR_INTERNAL.
 *
 * Ownership: every string is borrowed for the call. out_json may be NULL; otherwise
 * *out_json is always set, to the report or to {"error":{…}}, and the caller frees
 * it with session_string_free. Thread-safe; it touches no open store.
 *
 * Safety: format, src_path, out_path and options_json are NULL or NUL-terminated;
 * out_json is NULL or writable.
 */
SessionStatus session_export(const char *format,
                             const char *src_path,
                             const char *out_path,
                             const char *options_json,
                             char **out_json);

/**
 * Section 8. Search across the sessions of a folder.
 *
 * Searches the sessions in the folder dir (UTF-8): the *.jsonl files directly in
 * it, for the text a person reads (user and assistant text, tool call names and
 * arguments, tool results, the text of extension messages, compaction summaries;
 * not thinking, images or metadata).
 *
 * query_json is {"query": a string with a non-space character, "limit": 1 to 1000
 * (default 20), "roles": [role, …] (default all: "user", "assistant",
 * "toolResult", an extension role, or "compaction" for a compaction's summary),
 * "latestPathOnly": bool (default false), "redact": bool (default true)}. Secrets
 * are never indexed: each entry's text and role pass through the default rules of
 * session_secrets first, and every match is [REDACTED:<rule>] in the index, in the
 * check of a hit and in its snippet, so searching for a secret finds nothing.
 * "redact": false searches the text as written, with a temporary index for the call
 * ("index":"temporary"): the sidecar only ever holds redacted text (a sidecar of an
 * older version, which may hold secrets, is deleted and built again). Each
 * whitespace-separated word of the
 * query must occur in the entry's text, as a substring, ignoring case; so CJK text
 * matches inside words (项目名 finds 项目名是 tiny-pi). A word shorter than three
 * characters is found by a scan of the indexed text, ignoring ASCII case only. A
 * word repeated (in any case) counts once. The query may be at most 1048576 bytes
 * (1 MiB) and hold at most 256 different words; a longer one is
 * SESSION_ERR_INVALID_ARGUMENT naming the limit.
 *
 * The result is {"hits":[{"path", "entryId", "seq", "role", "timestamp",
 * "snippet", "score", "onLatestPath"}, …], "sessions": N, "entries": M,
 * "errors":[{"path", "line", "reason", "message"}, …], "bytesRead": B, "index":
 * "sidecar" or "temporary"}, best first (ranked by bm25; score is higher for a
 * better hit, 0 when every word is shorter than three characters, and ties are in
 * path and seq order). path is the file's name relative to dir; seq the entry's
 * 0-based position among the file's committed entries; timestamp the entry's as
 * written; snippet at most 120 characters of the entry's text around the first
 * match, with an ellipsis where it was cut; onLatestPath whether the entry is on the
 * path from the root to the session's latest leaf (its last committed entry), and
 * latestPathOnly keeps only those. sessions and entries count the files searched
 * and their committed entries. errors lists each file that could not be searched
 * (line null, reason io or invalid_argument: a symbolic link, which is never
 * followed, a file that is not regular or cannot be read, a name that is not UTF-8)
 * and each corrupt line (reason invalid_json, invalid_entry or line_too_long; at
 * most 1000 in all): the rest of the file is still searched. bytesRead is how many
 * bytes of the session files this call read past what the index already held.
 * index says which index answered (below).
 *
 * The index is a SQLite database in dir named .session-search.db, with its journal
 * .session-search.db-journal beside it (kept, empty, between searches). It is
 * disposable: deleting it loses nothing, the next search builds it again, as it
 * does when it is damaged. A search reads only the committed bytes appended to each
 * file since the last search: a file is known by its device and inode, size,
 * modification and change times, and hashes of its first and of its last indexed
 * 4 KiB. A file that grew is read on from where the index stopped when both hashes
 * still match; a replaced, truncated or shrunk file, one rewritten in place, and
 * one whose times changed at the same size (an edit in place, chmod or touch) are
 * read again from the start; a deleted one leaves the index. (An edit in the middle
 * of a file that also grew, leaving both hashed blocks as they were, is not seen
 * until the file is read again.) An unterminated last line is left out until it
 * ends with a newline. The index holds the conversation's text: it and its journal
 * are given the owner and group the session files share, where the process may set
 * them, and only the permission bits every session file has (0600 when there is
 * none); the group bits are dropped when the group cannot be the files' one, and an
 * existing index is narrowed, never widened. Searches from several threads or
 * processes at once are safe: the update is one SQLite transaction, and a search
 * waits up to 60 seconds for another's.
 *
 * The index is never required. When it cannot be used (dir or the index cannot be
 * written, as in a folder the caller may read but not write; it cannot be opened,
 * given its permissions, or updated; or anything but a regular file, such as a
 * symbolic link, FIFO or directory, is at .session-search.db or its -journal, -wal
 * or -shm name, which is then never opened), the search builds a temporary index
 * for this call alone (in memory, spilling to a file of the temporary folder that
 * is deleted), reads every file, and says "index":"temporary"; else "index" is
 * "sidecar" (also for a sidecar the caller may read but not write, while it is up
 * to date).
 *
 * Returns SESSION_OK; SESSION_ERR_INVALID_ARGUMENT (NULL or non-UTF-8 dir or
 * query_json; an invalid query, one over the limits above included: argument
 * query_json; a build without the cargo feature search: feature); SESSION_ERR_IO
 * when dir cannot be read or even a temporary index cannot be built;
 * SESSION_ERR_INTERNAL.
 *
 * Ownership: dir and query_json are borrowed for the call. out_json may be NULL;
 * otherwise *out_json is always set, to the result or to {"error":{…}}, and the
 * caller frees it with session_string_free. Thread-safe; it touches no store.
 *
 * Safety: dir and query_json are NULL or NUL-terminated; out_json is NULL or
 * writable.
 */
SessionStatus session_search(const char *dir, const char *query_json, char **out_json);

/**
 * Section 9. View: a store as one HTML page.
 *
 * The store as one self-contained HTML document, UTF-8: the tree (branches,
 * labels, the latest leaf) and the messages of the chosen leaf's branch; any node
 * can be chosen in the page, and a search box filters the branch.
 *
 * The page works offline: its style and script are inlined, and its
 * Content-Security-Policy forbids every load (default-src 'none'; the inline
 * script and style allowed by their SHA-256 hashes; images only as data: URLs).
 * Text from the session is data, never markup or script: the entries are embedded
 * as JSON with every <, >, &, U+2028 and U+2029 escaped, and the page builds its
 * elements from text; links are kept only for http and https URLs. From 256 KiB of
 * entries on, they are embedded deflated (zlib, base64) and the page inflates them
 * with the browser's DecompressionStream (Chrome 80, Firefox 113, Safari 16.4 and
 * later): the page is then a sixth to a twelfth of the session's size for most
 * sessions. The page renders lazily (the tree as a virtual list, the branch a chunk
 * at a time).
 *
 * options_json (NULL: the defaults) is {"leaf":"id", "title":"text", "redact":
 * bool}, every member optional: the leaf whose branch the page opens on (default:
 * the latest leaf, the last committed entry), the page's title (default
 * "Session"), and whether secrets in the entries are replaced by
 * [REDACTED:<rule>] as session_redact does with its default rules (default true: a
 * page is made to be shared; false shows them). From 256 KiB of entries on, the
 * call redacts them on a second thread that it starts and joins before it returns,
 * while the calling thread deflates what is redacted; the page is the same bytes as
 * on one thread, and if no thread can be started the calling thread redacts alone.
 * The entries, labels and latest leaf are read in one turn (one snapshot). Cost: the
 * size of the store.
 *
 * Returns SESSION_OK; SESSION_ERR_UNKNOWN_LEAF (id) for an unknown leaf;
 * SESSION_ERR_INVALID_ARGUMENT (NULL store; options that are not a JSON object, an
 * unknown member or a wrong type: argument is options_json);
 * SESSION_ERR_TAINTED, SESSION_ERR_WRONG_PROCESS, SESSION_ERR_INTERNAL.
 *
 * Ownership: options_json is borrowed for the call. out_html may be NULL;
 * otherwise *out_html is always set, to the page or to {"error":{…}}, and the
 * caller frees it with session_string_free. Thread-safe (not concurrently with
 * session_store_close).
 *
 * Safety: store is NULL or an open store; options_json is NULL or NUL-terminated;
 * out_html is NULL or writable.
 */
SessionStatus session_store_render_html(SessionStore *store,
                                        const char *options_json,
                                        char **out_html);

/**
 * Section 10. Secrets: find them, redact them.
 *
 * Finds the secrets in the session file path (UTF-8), or in the *.jsonl files
 * directly in the folder path. Files in a folder are read in name order; symbolic
 * links and anything that is not a regular file are passed over, never followed.
 *
 * What is found:
 *
 * - API keys and tokens, by their vendors' documented formats (AWS, GCP, Azure,
 *   OpenAI, Anthropic, Google, Hugging Face, GitHub, GitLab, Slack, Discord,
 *   Stripe);
 * - private key blocks and JWTs;
 * - passwords in URLs (scheme://user:password@host);
 * - password=, secret:, api_key= and the like, with a random-looking value;
 * - whatever the caller's rules match.
 *
 * Every string of every line is checked, on its decoded value: a key written with
 * a \u escape in it is found. A line that is not JSON is checked as text. Keys,
 * and the values of members named id or ending in Id, are never checked.
 *
 * options_json (NULL: the defaults) is {"rules": "default" or [{"name",
 * "pattern"}, …] (replaces the built-in rules), "extraRules": [{"name",
 * "pattern"}, …] (added to them), "allow": [string, …] (values never reported)},
 * every member optional. A pattern is a regular expression in the syntax of Rust's
 * regex crate, matched in linear time. If it has a group named secret, only that
 * group is the secret. A rule's name is 1 to 64 letters, digits, '-', '_' or '.'.
 *
 * The result is {"findings":[{"path", "entryId", "pointer", "rule",
 * "fingerprint"}, …], "sessions": N}.
 *
 * - path: the file as given, or its name in the folder;
 * - entryId: the line's id (null for a line that is not an entry);
 * - pointer: the JSON Pointer of the string in the line (null for a line that is
 *   not JSON);
 * - rule: the rule's name;
 * - fingerprint: the first 12 hex digits of the SHA-256 of the secret, the same
 *   wherever the same secret occurs;
 * - sessions: the number of files scanned.
 *
 * No output, error or log of this function holds a secret or a line of the file.
 *
 * Returns SESSION_OK, or:
 *
 * - SESSION_ERR_INVALID_ARGUMENT: a NULL or non-UTF-8 path; with argument
 *   options_json, options that are not a JSON object, an unknown member or wrong
 *   type, inPlace, or an invalid rule (named without quoting its pattern);
 * - SESSION_ERR_IO when the path or a file cannot be read;
 * - SESSION_ERR_INTERNAL.
 *
 * Ownership: path and options_json are borrowed for the call. out_json may be
 * NULL; otherwise *out_json is always set, to the result or to {"error":{…}}, and
 * the caller frees it with session_string_free. Thread-safe; it touches no store.
 *
 * Safety: path and options_json are NULL or NUL-terminated; out_json is NULL or
 * writable.
 */
SessionStatus session_secrets(const char *path,
                              const char *options_json,
                              char **out_json);

/**
 * Writes the session file src_path to dst_path, a new file, with every secret
 * that session_secrets finds replaced by [REDACTED:<rule>]. Only the bytes that
 * spell a secret are rewritten. Every other byte is unchanged: ids, the tree,
 * numbers, keys, the rest of each string and its escapes. So the entries, their
 * tool pairing and the context built from them keep their shape.
 *
 * dst_path must not exist: it is never replaced. The text is written to a
 * temporary file beside it (.NAME.redact-K.tmp), with src_path's permissions,
 * never wider. That file is synced and renamed to dst_path. After a failure
 * nothing is left.
 *
 * dst_path NULL with {"inPlace": true} rewrites src_path itself, under the
 * writer's lock, so no writer appends meanwhile. The temporary file is renamed
 * over it, so the file is whole at every moment. No copy of a secret is kept (no
 * backup). A file with nothing to redact is not rewritten. The session index
 * beside it is removed; the next open rebuilds it.
 *
 * options_json (NULL: the defaults) is as for session_secrets, plus "inPlace":
 * bool (default false). The result is {"redactions": N, "findings": [ … as for
 * session_secrets … ]}.
 *
 * Returns SESSION_OK, or:
 *
 * - SESSION_ERR_INVALID_ARGUMENT, with argument naming it: a NULL or non-UTF-8
 *   src_path, a non-UTF-8 dst_path, or dst_path NULL without inPlace. With
 *   argument options_json: bad options, an invalid rule, or dst_path given with
 *   inPlace.
 * - SESSION_ERR_LOCKED when a writer holds src_path (inPlace).
 * - SESSION_ERR_IO when a file cannot be read, created or renamed (dst_path
 *   exists: op "write", OS error 17).
 * - SESSION_ERR_INTERNAL.
 *
 * Ownership: every string is borrowed for the call. out_json may be NULL;
 * otherwise *out_json is always set, to the result or to {"error":{…}}, and the
 * caller frees it with session_string_free. Thread-safe; it touches no store.
 *
 * Safety: src_path, dst_path and options_json are NULL or NUL-terminated; out_json
 * is NULL or writable.
 */
SessionStatus session_redact(const char *src_path,
                             const char *dst_path,
                             const char *options_json,
                             char **out_json);

/**
 * Section 11. PostgreSQL: a store in a database, its sessions.
 *
 * Opens session session_id of the PostgreSQL database that conninfo names (a
 * libpq-style connection string, host=… dbname=… user=… password=…, or a URI,
 * postgresql://user:password@host:port/dbname) and sets *out_store to a store that
 * every session_store_* function accepts, with the JSONL store's meaning. The result
 * is {"state":"ready","warnings":[]}.
 *
 * An open reads the version of the database's libsession tables (libsession_schema,
 * libsession_sessions, libsession_entries, libsession_index) and runs no DDL when
 * they are at this library's version (5). Only when they are missing or older does it
 * take an advisory lock and create them, or upgrade version 1, 2, 3 or 4 in place
 * keeping every row; a
 * version newer than this library's is refused (SESSION_ERR_IO), never written. A
 * role that only uses the tables therefore needs no CREATE on the schema (which
 * PostgreSQL 15 gives no role but the schema's owner): USAGE on the schema, SELECT
 * on libsession_schema, SELECT, INSERT and UPDATE on libsession_sessions, SELECT and
 * INSERT on libsession_entries, and SELECT, INSERT and DELETE on libsession_index
 * (without those three an open reads every row of the session, see below). Creating
 * the tables needs CREATE on the schema, and
 * upgrading them their owner; the error then says which. A new session_id creates
 * the session (unless "create" is false). Each entry is stored as its line, the
 * normalised entry JSON, as text byte for byte; its id and parent id as their UTF-8
 * bytes, so an id holding NUL or of any length is stored as a JSONL store stores it,
 * unique per session by its SHA-256. Session ids and entries are only ever bound
 * parameters; a store reads and writes its own session only.
 *
 * An open reads no entry rows that a session index covers: the database keeps the
 * JSONL store's session index of each session (libsession_index, written by the
 * stores themselves once 1024 rows follow the newest one) and each row where its line
 * starts in the session seen as a JSONL file; an open reads the index's header,
 * checksums, samples, roots and labels, then the rows after it, and each query reads
 * the index pages and rows of its answer (build_context: the kept part, the root and
 * the replayed metadata), each checked as a JSONL store checks a line read through
 * its index. A store holds at most about 1024 rows in memory beyond its cache.
 *
 * A standby: when the server is in recovery (a streaming standby) or takes no writes
 * at open, the store is read-only: it answers every query from a prefix of the
 * session's commit order (what the standby has replayed; each call first reads what
 * it replayed since), refuses appends with SESSION_ERR_READ_ONLY, creates nothing (a
 * session the standby does not hold is SESSION_ERR_IO, kind not found), and writes
 * no session index. conninfo may name several hosts (host=A,B with one port each or
 * one for all), tried in order; target_session_attrs=read-write skips a standby,
 * read-only takes only one, any (the default) takes the first that answers.
 *
 * Any number of stores in any number of processes and machines may append to one
 * session. Before each read a store reads what the others committed since its last
 * call. An append checks the id, the parent and the compaction and label rules
 * against the entries the store holds (the id over the entries a session index
 * covers is left to the unique index), then one statement that commits by itself
 * (one round trip) updates the session's row, which gives the row its seq (the next
 * one) and its offset, and inserts the line. That row is the only lock, held for that
 * statement: a concurrent append waits for it and is numbered after it, never fails
 * for being late; rows other writers committed first are read by the store's next
 * call that needs them. The rules still hold against them, as they only add entries;
 * an id another writer took meanwhile makes the append read what was committed and
 * check again, and a refusal is given only after that read. seq is therefore the
 * session's commit order, the same for every reader, and no lock is held longer than
 * the insert. A failed append (refused, or the statement aborted, or the client
 * killed) changes nothing.
 *
 * Faults: a lost connection (the server stopped, crashed or failed over) is
 * SESSION_ERR_IO for the call that met it, and the store's next call connects again
 * with the same conninfo (hosts in order, as target_session_attrs says) and reads the
 * session again from the server it reached; the store is not tainted. Any other
 * failed statement is SESSION_ERR_IO (op open, read, write or sync, the last for the
 * commit itself) and the store is tainted from then on: close it and open it again.
 * With a synchronous standby (synchronous_standby_names) and "durability":"fsync",
 * every append that returned OK is on the standby, so after a failover writers with
 * host=A,B target_session_attrs=read-write go on with nothing acknowledged lost.
 * When the commit failed (op sync) the entry may or
 * may not be committed: appending the identical entry (same id, same bytes) again
 * through a new store returns the receipt of the committed one ({"id","seq"}), and
 * commits it when it was not; an entry with that id and other bytes is
 * SESSION_ERR_DUPLICATE_ID. This holds for every append: an identical entry already
 * committed is accepted as itself. An append that runs into a row whose id column
 * does not hold its line's id (a row changed outside libsession) fails with
 * SESSION_ERR_CORRUPT_LINE naming that row (line = seq + 1, pointer /id) rather
 * than trying again; the store stays usable.
 *
 * options_json is NULL or a JSON object (unknown members are an error):
 *
 * - "durability": the connection's synchronous_commit. "none": off (the server
 *   acknowledges before its WAL is flushed: a server crash may lose the last
 *   commits, never part of one). "fsync" or "fsync_batch": on (flushed; the
 *   server groups concurrent flushes). Absent (default): the server's setting.
 * - "strictRoles" (default false): as for session_jsonl_store_open_with.
 * - "create" (default true): false opens only a session that exists; one that does
 *   not is SESSION_ERR_IO (op open) and nothing is created (for a reader).
 * - "pool" (default true): session_store_close keeps the store's connection in this
 *   process (at most 8; the oldest is closed first) for the next open with the same
 *   conninfo and durability, which then skips the login: a worker that opens and
 *   closes a store per turn logs in once. Kept: the connection, its
 *   synchronous_commit, its jit (off: every open turns JIT compilation off for
 *   its connection, since compiling a lookup of a few rows took 100 ms or more)
 *   and its prepared insert; nothing else (a store runs no transaction across
 *   calls). A kept connection is only used by the process that
 *   made it, and one that died meanwhile (a server restart, an idle timeout) or whose
 *   tables changed version is dropped and a new one made, never an error. false: the
 *   store's connection is its own, closed by session_store_close.
 *
 * Returns SESSION_OK; SESSION_ERR_INVALID_ARGUMENT (a NULL or non-UTF-8 string,
 * bad options, a conninfo that does not parse, a session_id that is empty, longer
 * than 1024 bytes, with argument naming it; also when the library was built without
 * its postgres feature, with "feature":"postgres", as session_search does without
 * its search feature); SESSION_ERR_IO (the server cannot be reached, refuses the
 * login, holds a newer schema or tables the role may not create or upgrade, or has
 * no such session under "create":false); SESSION_ERR_CORRUPT_LINE,
 * SESSION_ERR_DUPLICATE_ID or SESSION_ERR_MISSING_PARENT (line = seq + 1) when a
 * stored row does not replay. No error message ever holds the password of
 * conninfo. TLS follows sslmode and sslrootcert as libpq does (disable, prefer
 * by default, require, verify-ca, verify-full; docs/contract.md §14): a refused
 * handshake or certificate is SESSION_ERR_IO. On failure *out_store is set to NULL
 * (when out_store is not NULL).
 *
 * Ownership: the strings are borrowed for the call; close the store with
 * session_store_close (which keeps its connection for the next open, or closes it
 * under "pool":false); out_json as
 * session_parse_entry. Thread-safe.
 *
 * Safety: conninfo and session_id are NULL or NUL-terminated, options_json NULL or
 * NUL-terminated; out_store and out_json are NULL or writable.
 */
SessionStatus session_pg_store_open(const char *conninfo,
                                    const char *session_id,
                                    const char *options_json,
                                    SessionStore **out_store,
                                    char **out_json);

/**
 * The sessions of the PostgreSQL database that conninfo names, most recently
 * modified first: {"sessions":[{"sessionId","entries","latestLeafId","modifiedMs"},
 * …]}, entries the committed count, latestLeafId the id of the last committed
 * entry (null for a session without entries), modifiedMs the time of its last
 * commit (or of its creation) in milliseconds since the epoch. Creates the schema on
 * first use, as session_pg_store_open does.
 *
 * options_json is NULL or a JSON object: "limit" (a number >= 0, default no limit).
 *
 * Returns SESSION_OK; SESSION_ERR_INVALID_ARGUMENT; SESSION_ERR_IO. No error message
 * holds the password. Ownership as session_parse_entry. Thread-safe.
 *
 * Safety: conninfo and options_json are NULL or NUL-terminated; out_json is NULL or
 * writable.
 */
SessionStatus session_pg_list_sessions(const char *conninfo,
                                       const char *options_json,
                                       char **out_json);

#ifdef __cplusplus
}  // extern "C"
#endif  // __cplusplus

#endif  /* SESSION_H */
