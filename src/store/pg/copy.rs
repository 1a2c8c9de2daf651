//! A whole session written into a database in one transaction (`session copy`): all of
//! it or nothing.
//!
//! The transaction creates the session's row if it is new and locks it as an append
//! does, so a copy and appends to that session run one at a time; it refuses a session
//! that already has entries before writing a row; it streams the rows with the `COPY`
//! protocol (binary), at `seq` 0, 1, … in the order given, and sets the session's count,
//! size and latest entry as that many appends would; then it commits. Any failure on the way
//! (an entry the tree rules refuse, a row the server refuses, a lost connection, a
//! server that stops) rolls all of it back, the session's new row included.

use std::io;

use postgres::binary_copy::BinaryCopyInWriter;
use postgres::types::Type;

use crate::entry::Entry;
use crate::error::{Error, IoFailure, IoOp};

use super::connection::connect_with;
use super::failure::failure;
use super::sink::CREATE_SESSION;
use super::{PgOptions, check_session_id, now_ms};

/// Rows written between two progress reports.
const PROGRESS_STEP: usize = 4096;

/// Writes `entries`, in their order, as the whole of session `session_id`, which must
/// not exist or have no entries, in one transaction. `check` is called on each entry
/// just before its row is sent (the tree rules, as appends would apply them); its error
/// ends the copy. `progress` is told how many rows are written, every few thousand and
/// at the end.
///
/// Fails with [`Error::InvalidArgument`] (a bad `conninfo` or `session_id`),
/// [`Error::Io`] of kind `AlreadyExists` when the session has entries, `check`'s error,
/// or [`Error::Io`] for a failure of the server or the connection: nothing is
/// committed, except when the commit itself failed (op `sync`), which is ambiguous.
pub(crate) fn copy_in(
    conninfo: &str,
    session_id: &str,
    options: &PgOptions,
    entries: &[Entry],
    check: &mut dyn FnMut(&Entry) -> Result<(), Error>,
    progress: &mut dyn FnMut(u64),
) -> Result<(), Error> {
    check_session_id(session_id)?;
    let (mut client, secret) = connect_with(conninfo, options)?;
    let fail =
        |op: IoOp, what: &str, e: &postgres::Error| Error::Io(failure(&secret, op, what, e).into());
    let write = |what: &'static str| move |e: postgres::Error| fail(IoOp::Write, what, &e);
    // Dropped without a commit (every early return), the transaction rolls back.
    let mut tx = client.transaction().map_err(write("begin"))?;
    tx.execute(CREATE_SESSION, &[&session_id, &now_ms()])
        .map_err(write("creating the session"))?;
    let count: i64 = tx
        .query_one(
            "SELECT entries FROM libsession_sessions WHERE session_id = $1 FOR UPDATE",
            &[&session_id],
        )
        .and_then(|row| row.try_get(0))
        .map_err(write("locking the session"))?;
    let rows: bool = tx
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM libsession_entries WHERE session_id = $1)",
            &[&session_id],
        )
        .and_then(|row| row.try_get(0))
        .map_err(write("reading the session"))?;
    if count != 0 || rows {
        return Err(not_empty(session_id));
    }
    let sink = tx
        .copy_in(
            "COPY libsession_entries (session_id, seq, id, parent_id, line, off) \
             FROM STDIN (FORMAT binary)",
        )
        .map_err(write("copy"))?;
    let types = [
        Type::TEXT,
        Type::INT8,
        Type::BYTEA,
        Type::BYTEA,
        Type::TEXT,
        Type::INT8,
    ];
    // Where each line starts in the session seen as a JSONL file (see `schema`).
    let mut off: i64 = 0;
    let mut sink = BinaryCopyInWriter::new(sink, &types);
    for (seq, entry) in entries.iter().enumerate() {
        // An error returns with the copy unfinished: dropped, it is aborted, and the
        // transaction rolled back.
        check(entry)?;
        let number = i64::try_from(seq).unwrap_or(i64::MAX);
        let parent = entry.parent_id().map(str::as_bytes);
        sink.write(&[
            &session_id,
            &number,
            &entry.id().as_bytes(),
            &parent,
            &entry.json(),
            &off,
        ])
        .map_err(write("copy"))?;
        off = off.saturating_add(i64::try_from(entry.json().len()).unwrap_or(i64::MAX) + 1);
        if (seq + 1) % PROGRESS_STEP == 0 {
            progress(seq as u64 + 1);
        }
    }
    sink.finish().map_err(write("copy"))?;
    let total = i64::try_from(entries.len()).unwrap_or(i64::MAX);
    let latest = entries.last().map(|entry| entry.id().as_bytes());
    tx.execute(
        "UPDATE libsession_sessions SET entries = $2, latest_leaf_id = $3, modified_ms = $4, \
         bytes = $5 WHERE session_id = $1",
        &[&session_id, &total, &latest, &now_ms(), &off],
    )
    .map_err(write("updating the session"))?;
    tx.commit().map_err(|e| {
        let mut failure = failure(&secret, IoOp::Sync, "commit", &e);
        failure.message.push_str(
            "; the copy may or may not be committed: the session now holds all of it or \
             none of it",
        );
        Error::Io(failure.into())
    })?;
    progress(entries.len() as u64);
    Ok(())
}

/// The destination of a copy already has entries: refused before anything is written.
fn not_empty(session_id: &str) -> Error {
    Error::Io(
        IoFailure {
            op: IoOp::Write,
            kind: io::ErrorKind::AlreadyExists,
            os_error: None,
            message: format!(
                "PostgreSQL: session {session_id:?} already has entries: a copy writes to \
                 a new or empty session only; nothing was written"
            ),
            change: None,
        }
        .into(),
    )
}
