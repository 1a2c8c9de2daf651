//! The PostgreSQL store (docs/contract.md §14): one session of one database, shared by
//! any number of handles in any number of processes. This root holds the rules every
//! part shares (the session id's, the session index's spacing); the parts are its
//! children, listed at the end.
//!
//! The store keeps the same [`super::log::Log`] as a JSONL store: the entries a session
//! index in the database covers are read on demand through it ([`base`]), the rows
//! after it are held in memory; this module only moves rows. Before every read the
//! store catches up: it reads the rows committed after what it holds (`seq` > its last)
//! and pushes them through the same admission as a replayed file. An append checks the
//! tree rules against what the handle holds and inserts the line in one statement that
//! commits by itself, numbered by the session's row, which it updates: that row is the
//! only lock, held for that statement; writers that come meanwhile wait for it and
//! number their rows after (the handle then reads the rows it did not hold). The
//! rules hold against rows the handle has not read: those rows can only add entries,
//! and the one rule a new entry could break, a taken id, is the unique index's. The
//! stored form is the
//! entry's canonical line as `text`, byte for byte (never `jsonb`, which reorders
//! keys); its id and parent id are kept beside it as bytes (`bytea`: an id may hold
//! NUL), unique per session through their SHA-256. Session ids, ids and lines are bound
//! parameters, never SQL text.
//!
//! Error messages never hold the password of the connection string: every message
//! made from a client error passes through [`failure::Secret::scrub`].
//!
//! The parts: the options JSON of the store and of the listing ([`options`]); the
//! login and the shared connection ([`connection`]); client errors as I/O failures,
//! the password taken out ([`failure`]);
//! the connections kept for the next open ([`idle`]); a connection bound to one
//! session, its open, catch-up read and insert ([`sink`]); the store's backend and its
//! append ([`handle`]); the listing of the database's sessions ([`listing`]); the
//! tables and their versions ([`schema`]); TLS ([`tls`]); the session index over the
//! rows ([`base`]); a whole session written in one transaction, `session copy`
//! ([`copy`]); and, in a build without the `postgres` feature, the same names failing
//! with `Unsupported` (`disabled`).

use crate::error::Error;

/// Rows after the newest session index at which a handle writes a new one (see
/// [`base`]): an open replays at most about this many rows.
pub(crate) const INDEX_EVERY: usize = 1024;

/// The longest session id, in bytes.
pub(crate) const MAX_SESSION_ID_BYTES: usize = 1024;

/// A session id is data: any non-empty UTF-8 text without NUL, of bounded length.
pub(crate) fn check_session_id(session_id: &str) -> Result<(), Error> {
    let problem = if session_id.is_empty() {
        "is empty"
    } else if session_id.len() > MAX_SESSION_ID_BYTES {
        "is longer than 1024 bytes"
    } else if session_id.contains('\0') {
        "contains a NUL character"
    } else {
        return Ok(());
    };
    Err(Error::InvalidArgument {
        argument: "session_id",
        message: format!("session_id {problem}"),
    })
}

#[cfg(feature = "postgres")]
fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

mod handle;
mod listing;
mod options;

#[cfg(feature = "postgres")]
mod base;
#[cfg(feature = "postgres")]
mod connection;
#[cfg(feature = "postgres")]
mod copy;
#[cfg(feature = "postgres")]
mod failure;
#[cfg(feature = "postgres")]
mod idle;
#[cfg(feature = "postgres")]
mod schema;
#[cfg(feature = "postgres")]
mod sink;
#[cfg(feature = "postgres")]
mod tls;

#[cfg(not(feature = "postgres"))]
mod disabled;

pub(super) use handle::PgBackend;
pub use listing::{PgSessionInfo, list_pg_sessions, pg_sessions_json};
pub use options::{PgListOptions, PgOptions};

#[cfg(feature = "postgres")]
pub(crate) use base::{load_base, write_index};
#[cfg(feature = "postgres")]
pub(crate) use copy::copy_in;
#[cfg(feature = "postgres")]
pub(crate) use sink::{Inserted, PgSink};

#[cfg(not(feature = "postgres"))]
pub(crate) use disabled::{Inserted, PgSink, copy_in, load_base, write_index};
