//! A connection bound to one session: the open (on a new connection or a kept one),
//! the catch-up read of the rows after what a handle holds, the append's one-statement
//! insert and the lookup of the row an insert ran into.

use std::io;

use postgres::Statement;
use postgres::types::Type;

use crate::error::{Error, IoFailure, IoOp};
use crate::store::Durability;

use super::connection::{Shared, lock, login};
use super::failure::{Secret, failure};
use super::{PgOptions, check_session_id, idle, now_ms};

/// A row as read: its `seq`, its id column and its line.
pub(crate) type Row = (u64, Vec<u8>, String);

/// What an insert found.
pub(crate) enum Inserted {
    /// The row is committed at this `seq`.
    Committed(u64),
    /// The id is taken (by a row the caller may not have read yet), or the server
    /// aborted the statement: nothing was written; catch up and check again.
    Taken,
}

/// A connection bound to one session. The session index's sources ([`super::base`])
/// read through the same connection, so they see what the append's transaction sees.
pub(crate) struct PgSink {
    client: Shared,
    session_id: String,
    secret: Secret,
    /// The insert, prepared at the first append (a round trip that a reader never
    /// pays); every other statement is sent with its parameters' types, in one
    /// round trip and no preparation ([`postgres::Client::query_typed`]).
    insert: Option<Statement>,
    /// The server was a standby, or took no writes, at open: the store refuses
    /// appends (and writes no session index).
    read_only: bool,
    /// Under which the connection is kept for the next open when the store closes
    /// (see [`idle`]); `None` with the option `pool` off.
    key: Option<String>,
}

impl Drop for PgSink {
    fn drop(&mut self) {
        if let Some(key) = self.key.take()
            && !lock(&self.client).is_closed()
        {
            idle::give(idle::Idle {
                key,
                pid: std::process::id(),
                client: self.client.clone(),
                insert: self.insert.take(),
                secret: self.secret.clone(),
            });
        }
    }
}

/// Creates the session's row unless it exists: `$1` the session id, `$2` the time.
pub(super) const CREATE_SESSION: &str = "INSERT INTO libsession_sessions \
    (session_id, entries, created_ms, modified_ms) VALUES ($1, 0, $2, $2) \
    ON CONFLICT (session_id) DO NOTHING";

/// A session that is not in the database, opened without `create`.
fn no_such_session(session_id: &str) -> IoFailure {
    IoFailure {
        op: IoOp::Open,
        kind: io::ErrorKind::NotFound,
        os_error: None,
        message: format!("PostgreSQL: the database has no session {session_id:?}"),
        change: None,
    }
}

/// Where the open of [`PgSink::open_on`] failed.
enum OpenFailed {
    /// A kept connection that is dead, or whose tables are no longer at this
    /// library's version: make a new one.
    Stale,
    Error(Error),
}

/// Whether `e` came from the connection rather than from the server's answer.
fn lost(e: &postgres::Error) -> bool {
    e.as_db_error().is_none()
}

impl PgSink {
    /// Connects (or takes a kept connection, see [`idle`]), creates the schema on
    /// first use and the session's row if it is new (or, with `create` off, fails
    /// when there is no such session).
    pub(crate) fn open(
        conninfo: &str,
        session_id: &str,
        options: &PgOptions,
    ) -> Result<PgSink, Error> {
        check_session_id(session_id)?;
        let key = options
            .pool
            .then(|| format!("{:?}\0{conninfo}", options.durability));
        if let Some(kept) = key.as_deref().and_then(idle::take) {
            let shared = kept.client.clone();
            match Self::open_on(kept.client, kept.secret, kept.insert, session_id, options) {
                Ok(mut sink) => {
                    sink.key = key;
                    return Ok(sink);
                }
                Err(OpenFailed::Error(e)) if !lock(&shared).is_closed() => return Err(e),
                // Dead, or its tables changed: a new connection.
                Err(_) => {}
            }
        }
        // A new connection: the login, then the open's query, which also reads the
        // tables' version; only when they are missing or older is the schema made
        // or upgraded ([`super::schema::ensure`]) and the query run again.
        let (client, secret) = login(conninfo)?;
        let client = std::sync::Arc::new(std::sync::Mutex::new(client));
        let mut tries = 0;
        loop {
            match Self::open_on(client.clone(), secret.clone(), None, session_id, options) {
                Ok(mut sink) => {
                    sink.key = key;
                    return Ok(sink);
                }
                Err(OpenFailed::Error(e)) => return Err(e),
                Err(OpenFailed::Stale) if tries == 0 && !lock(&client).is_closed() => {
                    super::schema::ensure(&mut lock(&client), &secret)?;
                    tries += 1;
                }
                Err(OpenFailed::Stale) => {
                    return Err(Error::Io(
                        IoFailure {
                            op: IoOp::Open,
                            kind: io::ErrorKind::Other,
                            os_error: None,
                            message: "PostgreSQL: the connection was lost during the open, \
                                      or the tables changed version meanwhile"
                                .to_owned(),
                            change: None,
                        }
                        .into(),
                    ));
                }
            }
        }
    }

    /// The open on a connection: whether the server takes writes and the session
    /// exists (and the tables' version, which a kept connection checks here), in
    /// one round trip; the session's row if it is new.
    fn open_on(
        client: Shared,
        secret: Secret,
        insert: Option<Statement>,
        session_id: &str,
        options: &PgOptions,
    ) -> Result<PgSink, OpenFailed> {
        let io = |e: &postgres::Error| {
            if lost(e) || e.code() == Some(&postgres::error::SqlState::UNDEFINED_TABLE) {
                OpenFailed::Stale
            } else {
                OpenFailed::Error(Error::Io(failure(&secret, IoOp::Open, "open", e).into()))
            }
        };
        let mut c = lock(&client);
        // A standby (or a server that takes no writes) serves a read-only store: it
        // reads a prefix of the session's commit order and creates nothing. The
        // same round trip sets the durability (`synchronous_commit`, for this
        // connection), turns JIT compilation off for this connection (a statement
        // the planner costs above `jit_above_cost` was compiled first: 100–140 ms
        // for a lookup of a few rows) and reads the tables' version.
        let durability = match options.durability {
            Some(Durability::None) => Some("off"),
            Some(_) => Some("on"),
            None => None,
        };
        let row = c
            .query_typed_one(
                "SELECT pg_is_in_recovery() OR current_setting('transaction_read_only') = 'on', \
                 EXISTS (SELECT 1 FROM libsession_sessions WHERE session_id = $1), \
                 (SELECT max(version) FROM libsession_schema), \
                 CASE WHEN $2::text IS NOT NULL THEN set_config('synchronous_commit', $2, false) END, \
                 set_config('jit', 'off', false)",
                &[(&session_id, Type::TEXT), (&durability, Type::TEXT)],
            )
            .map_err(|e| io(&e))?;
        let read_only: bool = row.try_get(0).map_err(|e| io(&e))?;
        let exists: bool = row.try_get(1).map_err(|e| io(&e))?;
        let version: Option<i32> = row.try_get(2).map_err(|e| io(&e))?;
        if version != Some(super::schema::SCHEMA_VERSION) {
            return Err(OpenFailed::Stale);
        }
        if !exists {
            if !options.create || read_only {
                return Err(OpenFailed::Error(Error::Io(
                    no_such_session(session_id).into(),
                )));
            }
            c.query_typed(
                CREATE_SESSION,
                &[(&session_id, Type::TEXT), (&now_ms(), Type::INT8)],
            )
            .map_err(|e| io(&e))?;
        }
        drop(c);
        Ok(PgSink {
            client,
            session_id: session_id.to_owned(),
            secret,
            insert,
            read_only,
            key: None,
        })
    }

    /// Whether the connection is gone (the server stopped or crashed, the network
    /// broke): a new one may work where this one never will again.
    pub(crate) fn is_closed(&self) -> bool {
        lock(&self.client).is_closed()
    }

    /// Whether the server was read-only (a standby) at open.
    pub(crate) fn read_only(&self) -> bool {
        self.read_only
    }

    fn fail(&self, op: IoOp, what: &str, e: &postgres::Error) -> IoFailure {
        failure(&self.secret, op, what, e)
    }

    /// The shared connection, for the session index's sources.
    pub(crate) fn shared(&self) -> &Shared {
        &self.client
    }

    pub(crate) fn session_id(&self) -> &str {
        &self.session_id
    }

    /// The session's rows from `from` on, in seq order: `(seq, id column, line)`.
    pub(crate) fn rows_from(&mut self, from: u64) -> Result<Vec<Row>, IoFailure> {
        let from = i64::try_from(from).unwrap_or(i64::MAX);
        let rows = lock(&self.client)
            .query_typed(
                "SELECT seq, line, id FROM libsession_entries \
                 WHERE session_id = $1 AND seq >= $2 ORDER BY seq",
                &[(&self.session_id, Type::TEXT), (&from, Type::INT8)],
            )
            .map_err(|e| self.fail(IoOp::Read, "reading the session", &e))?;
        let mut out = Vec::with_capacity(rows.len());
        for row in rows {
            let seq: i64 = row
                .try_get(0)
                .map_err(|e| self.fail(IoOp::Read, "reading the session", &e))?;
            let line: String = row
                .try_get(1)
                .map_err(|e| self.fail(IoOp::Read, "reading the session", &e))?;
            let id: Vec<u8> = row
                .try_get(2)
                .map_err(|e| self.fail(IoOp::Read, "reading the session", &e))?;
            out.push((u64::try_from(seq).unwrap_or(u64::MAX), id, line));
        }
        Ok(out)
    }

    /// Inserts the entry after every row committed so far, in one statement that
    /// commits by itself: it updates the session's row (count, size, latest entry),
    /// taking from it the `seq` and `off` the row gets, and inserts the row. The
    /// session's row is the lock: a writer that comes while another's statement runs
    /// waits for that statement, then numbers its row after it (so `seq` is the
    /// commit order), and no insert fails for being late. `held` is how many rows
    /// the caller holds; the row's `seq` is at least that (more when other writers
    /// committed since the caller last read). A taken id writes nothing
    /// ([`Inserted::Taken`]). A session whose count is below `held`, or whose count
    /// or size disagrees with its rows (written outside libsession), is refused,
    /// nothing written. Any other failure may have happened at the commit, so it is
    /// ambiguous: the message says how to learn the outcome.
    pub(crate) fn insert(
        &mut self,
        held: u64,
        id: &str,
        parent_id: Option<&str>,
        line: &str,
    ) -> Result<Inserted, IoFailure> {
        let held = i64::try_from(held).unwrap_or(i64::MAX);
        let bytes = i64::try_from(line.len()).map_or(i64::MAX, |n| n.saturating_add(1));
        let now = now_ms();
        let (id, parent_id) = (id.as_bytes(), parent_id.map(str::as_bytes));
        let mut client = lock(&self.client);
        let insert = match &self.insert {
            Some(insert) => insert.clone(),
            None => {
                // Prepared once: the one round trip of an append.
                let insert = client
                    .prepare(
                        "WITH s AS (UPDATE libsession_sessions SET entries = entries + 1, \
                         bytes = bytes + $5, latest_leaf_id = $2, modified_ms = $6 \
                         WHERE session_id = $1 AND entries >= $7 \
                         RETURNING entries - 1 AS seq, bytes - $5 AS off) \
                         INSERT INTO libsession_entries (session_id, seq, id, parent_id, line, off) \
                         SELECT $1, seq, $2, $3, $4, off FROM s RETURNING seq",
                    )
                    .map_err(|e| failure(&self.secret, IoOp::Write, "preparing", &e))?;
                self.insert = Some(insert.clone());
                insert
            }
        };
        let inserted = client.query_opt(
            &insert,
            &[
                &self.session_id,
                &id,
                &parent_id,
                &line,
                &bytes,
                &now,
                &held,
            ],
        );
        drop(client);
        let constraint = |e: &postgres::Error| {
            e.as_db_error()
                .filter(|db| db.code() == &postgres::error::SqlState::UNIQUE_VIOLATION)
                .and_then(|db| db.constraint().map(str::to_owned))
        };
        match inserted {
            Ok(Some(row)) => {
                let seq: i64 = row
                    .try_get(0)
                    .map_err(|e| self.fail(IoOp::Sync, "insert and commit", &e))?;
                Ok(Inserted::Committed(u64::try_from(seq).unwrap_or(u64::MAX)))
            }
            Ok(None) => Err(self.disagrees(
                "has fewer entries than this handle read (or is gone): it was changed \
                 outside libsession",
            )),
            Err(e) if constraint(&e).as_deref() == Some("libsession_entries_id") => {
                Ok(Inserted::Taken)
            }
            Err(e) if constraint(&e).is_some() => Err(self.disagrees(
                "counts entries or bytes that its rows disagree with (written outside \
                 libsession, or by an older library after the tables were upgraded)",
            )),
            // A deadlock (the server aborted the statement): nothing was written.
            Err(e) if e.code() == Some(&postgres::error::SqlState::T_R_DEADLOCK_DETECTED) => {
                Ok(Inserted::Taken)
            }
            Err(e) => {
                let mut failure = self.fail(IoOp::Sync, "insert and commit", &e);
                failure.message.push_str(
                    "; the entry may or may not be committed: append the identical \
                     entry again to learn which (it is then accepted as that entry)",
                );
                Err(failure)
            }
        }
    }

    /// The session's row in the database does not hold what its rows say: nothing
    /// was written, and no retry mends it.
    fn disagrees(&self, what: &str) -> IoFailure {
        IoFailure {
            op: IoOp::Write,
            kind: io::ErrorKind::InvalidData,
            os_error: None,
            message: format!(
                "PostgreSQL: session {:?} {what}; nothing was written",
                self.session_id
            ),
            change: None,
        }
    }

    /// The row of the session whose id column holds `id`, which an insert ran into;
    /// `None` when there is none (any more). Outside a transaction.
    pub(crate) fn conflict(&mut self, id: &str) -> Result<Option<u64>, IoFailure> {
        let row = lock(&self.client)
            .query_typed_opt(
                "SELECT seq FROM libsession_entries WHERE session_id = $1 \
                 AND sha256(id) = sha256($2) LIMIT 1",
                &[
                    (&self.session_id, Type::TEXT),
                    (&id.as_bytes(), Type::BYTEA),
                ],
            )
            .map_err(|e| self.fail(IoOp::Read, "finding the conflicting row", &e))?;
        match row {
            None => Ok(None),
            Some(row) => {
                let seq: i64 = row
                    .try_get(0)
                    .map_err(|e| self.fail(IoOp::Read, "finding the conflicting row", &e))?;
                Ok(Some(u64::try_from(seq).unwrap_or(u64::MAX)))
            }
        }
    }
}
