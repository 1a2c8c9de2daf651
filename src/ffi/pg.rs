//! The C functions of the PostgreSQL store (docs/contract.md §14): a session of a
//! database as a SessionStore, and the database's sessions.

use std::ffi::c_char;

use super::SessionStore;
use super::boundary::{guard, open_store, options_arg, str_arg};
use super::status::SessionStatus;
use crate::store::{PgListOptions, PgOptions, Store, list_pg_sessions, pg_sessions_json};

/// Section 11. PostgreSQL: a store in a database, its sessions.
///
/// Opens session session_id of the PostgreSQL database that conninfo names (a
/// libpq-style connection string, host=… dbname=… user=… password=…, or a URI,
/// postgresql://user:password@host:port/dbname) and sets *out_store to a store that
/// every session_store_* function accepts, with the JSONL store's meaning. The result
/// is {"state":"ready","warnings":[]}.
///
/// An open reads the version of the database's libsession tables (libsession_schema,
/// libsession_sessions, libsession_entries, libsession_index) and runs no DDL when
/// they are at this library's version (5). Only when they are missing or older does it
/// take an advisory lock and create them, or upgrade version 1, 2, 3 or 4 in place
/// keeping every row; a
/// version newer than this library's is refused (SESSION_ERR_IO), never written. A
/// role that only uses the tables therefore needs no CREATE on the schema (which
/// PostgreSQL 15 gives no role but the schema's owner): USAGE on the schema, SELECT
/// on libsession_schema, SELECT, INSERT and UPDATE on libsession_sessions, SELECT and
/// INSERT on libsession_entries, and SELECT, INSERT and DELETE on libsession_index
/// (without those three an open reads every row of the session, see below). Creating
/// the tables needs CREATE on the schema, and
/// upgrading them their owner; the error then says which. A new session_id creates
/// the session (unless "create" is false). Each entry is stored as its line, the
/// normalised entry JSON, as text byte for byte; its id and parent id as their UTF-8
/// bytes, so an id holding NUL or of any length is stored as a JSONL store stores it,
/// unique per session by its SHA-256. Session ids and entries are only ever bound
/// parameters; a store reads and writes its own session only.
///
/// An open reads no entry rows that a session index covers: the database keeps the
/// JSONL store's session index of each session (libsession_index, written by the
/// stores themselves once 1024 rows follow the newest one) and each row where its line
/// starts in the session seen as a JSONL file; an open reads the index's header,
/// checksums, samples, roots and labels, then the rows after it, and each query reads
/// the index pages and rows of its answer (build_context: the kept part, the root and
/// the replayed metadata), each checked as a JSONL store checks a line read through
/// its index. A store holds at most about 1024 rows in memory beyond its cache.
///
/// A standby: when the server is in recovery (a streaming standby) or takes no writes
/// at open, the store is read-only: it answers every query from a prefix of the
/// session's commit order (what the standby has replayed; each call first reads what
/// it replayed since), refuses appends with SESSION_ERR_READ_ONLY, creates nothing (a
/// session the standby does not hold is SESSION_ERR_IO, kind not found), and writes
/// no session index. conninfo may name several hosts (host=A,B with one port each or
/// one for all), tried in order; target_session_attrs=read-write skips a standby,
/// read-only takes only one, any (the default) takes the first that answers.
///
/// Any number of stores in any number of processes and machines may append to one
/// session. Before each read a store reads what the others committed since its last
/// call. An append checks the id, the parent and the compaction and label rules
/// against the entries the store holds (the id over the entries a session index
/// covers is left to the unique index), then one statement that commits by itself
/// (one round trip) updates the session's row, which gives the row its seq (the next
/// one) and its offset, and inserts the line. That row is the only lock, held for that
/// statement: a concurrent append waits for it and is numbered after it, never fails
/// for being late; rows other writers committed first are read by the store's next
/// call that needs them. The rules still hold against them, as they only add entries;
/// an id another writer took meanwhile makes the append read what was committed and
/// check again, and a refusal is given only after that read. seq is therefore the
/// session's commit order, the same for every reader, and no lock is held longer than
/// the insert. A failed append (refused, or the statement aborted, or the client
/// killed) changes nothing.
///
/// Faults: a lost connection (the server stopped, crashed or failed over) is
/// SESSION_ERR_IO for the call that met it, and the store's next call connects again
/// with the same conninfo (hosts in order, as target_session_attrs says) and reads the
/// session again from the server it reached; the store is not tainted. Any other
/// failed statement is SESSION_ERR_IO (op open, read, write or sync, the last for the
/// commit itself) and the store is tainted from then on: close it and open it again.
/// With a synchronous standby (synchronous_standby_names) and "durability":"fsync",
/// every append that returned OK is on the standby, so after a failover writers with
/// host=A,B target_session_attrs=read-write go on with nothing acknowledged lost.
/// When the commit failed (op sync) the entry may or
/// may not be committed: appending the identical entry (same id, same bytes) again
/// through a new store returns the receipt of the committed one ({"id","seq"}), and
/// commits it when it was not; an entry with that id and other bytes is
/// SESSION_ERR_DUPLICATE_ID. This holds for every append: an identical entry already
/// committed is accepted as itself. An append that runs into a row whose id column
/// does not hold its line's id (a row changed outside libsession) fails with
/// SESSION_ERR_CORRUPT_LINE naming that row (line = seq + 1, pointer /id) rather
/// than trying again; the store stays usable.
///
/// options_json is NULL or a JSON object (unknown members are an error):
///
/// - "durability": the connection's synchronous_commit. "none": off (the server
///   acknowledges before its WAL is flushed: a server crash may lose the last
///   commits, never part of one). "fsync" or "fsync_batch": on (flushed; the
///   server groups concurrent flushes). Absent (default): the server's setting.
/// - "strictRoles" (default false): as for session_jsonl_store_open_with.
/// - "create" (default true): false opens only a session that exists; one that does
///   not is SESSION_ERR_IO (op open) and nothing is created (for a reader).
/// - "pool" (default true): session_store_close keeps the store's connection in this
///   process (at most 8; the oldest is closed first) for the next open with the same
///   conninfo and durability, which then skips the login: a worker that opens and
///   closes a store per turn logs in once. Kept: the connection, its
///   synchronous_commit, its jit (off: every open turns JIT compilation off for
///   its connection, since compiling a lookup of a few rows took 100 ms or more)
///   and its prepared insert; nothing else (a store runs no transaction across
///   calls). A kept connection is only used by the process that
///   made it, and one that died meanwhile (a server restart, an idle timeout) or whose
///   tables changed version is dropped and a new one made, never an error. false: the
///   store's connection is its own, closed by session_store_close.
///
/// Returns SESSION_OK; SESSION_ERR_INVALID_ARGUMENT (a NULL or non-UTF-8 string,
/// bad options, a conninfo that does not parse, a session_id that is empty, longer
/// than 1024 bytes, with argument naming it; also when the library was built without
/// its postgres feature, with "feature":"postgres", as session_search does without
/// its search feature); SESSION_ERR_IO (the server cannot be reached, refuses the
/// login, holds a newer schema or tables the role may not create or upgrade, or has
/// no such session under "create":false); SESSION_ERR_CORRUPT_LINE,
/// SESSION_ERR_DUPLICATE_ID or SESSION_ERR_MISSING_PARENT (line = seq + 1) when a
/// stored row does not replay. No error message ever holds the password of
/// conninfo. TLS follows sslmode and sslrootcert as libpq does (disable, prefer
/// by default, require, verify-ca, verify-full; docs/contract.md §14): a refused
/// handshake or certificate is SESSION_ERR_IO. On failure *out_store is set to NULL
/// (when out_store is not NULL).
///
/// Ownership: the strings are borrowed for the call; close the store with
/// session_store_close (which keeps its connection for the next open, or closes it
/// under "pool":false); out_json as
/// session_parse_entry. Thread-safe.
///
/// Safety: conninfo and session_id are NULL or NUL-terminated, options_json NULL or
/// NUL-terminated; out_store and out_json are NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn session_pg_store_open(
    conninfo: *const c_char,
    session_id: *const c_char,
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
                let conninfo = str_arg(conninfo, "conninfo")?;
                // SAFETY: as above.
                let session_id = str_arg(session_id, "session_id")?;
                // SAFETY: as above.
                let options = options_arg(options_json, PgOptions::from_json)?;
                Ok((conninfo, session_id, options))
            },
            |(conninfo, session_id, options)| Store::open_pg(conninfo, session_id, &options),
        )
    }
}

/// The sessions of the PostgreSQL database that conninfo names, most recently
/// modified first: {"sessions":[{"sessionId","entries","latestLeafId","modifiedMs"},
/// …]}, entries the committed count, latestLeafId the id of the last committed
/// entry (null for a session without entries), modifiedMs the time of its last
/// commit (or of its creation) in milliseconds since the epoch. Creates the schema on
/// first use, as session_pg_store_open does.
///
/// options_json is NULL or a JSON object: "limit" (a number >= 0, default no limit).
///
/// Returns SESSION_OK; SESSION_ERR_INVALID_ARGUMENT; SESSION_ERR_IO. No error message
/// holds the password. Ownership as session_parse_entry. Thread-safe.
///
/// Safety: conninfo and options_json are NULL or NUL-terminated; out_json is NULL or
/// writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn session_pg_list_sessions(
    conninfo: *const c_char,
    options_json: *const c_char,
    out_json: *mut *mut c_char,
) -> SessionStatus {
    // SAFETY: the caller guarantees `out_json` is NULL or writable.
    unsafe {
        guard(out_json, || {
            // SAFETY: the caller guarantees the strings are NULL or NUL-terminated.
            let conninfo = str_arg(conninfo, "conninfo")?;
            // SAFETY: as above.
            let options = options_arg(options_json, PgListOptions::from_json)?;
            let sessions = list_pg_sessions(conninfo, &options)?;
            Ok(pg_sessions_json(&sessions).into_bytes())
        })
    }
}
