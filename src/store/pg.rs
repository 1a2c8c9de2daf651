//! The PostgreSQL store's connection (docs/contract.md §14): one session of one database,
//! shared by any number of handles in any number of processes.
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
//! parameters, never SQL text. The tables and their versions: [`schema`]; a whole
//! session written in one transaction (`session copy`): [`copy`].
//!
//! Error messages never hold the password of the connection string: every message
//! made from a client error passes through [`Secret::scrub`].

use crate::error::{Error, IoFailure};
use crate::json::Object;

use super::Durability;

/// Rows after the newest session index at which a handle writes a new one (see
/// [`base`]): an open replays at most about this many rows.
pub(crate) const INDEX_EVERY: usize = 1024;

/// The longest session id, in bytes.
pub(crate) const MAX_SESSION_ID_BYTES: usize = 1024;

/// Options of a PostgreSQL store, as JSON:
/// `{"durability":…,"strictRoles":bool,"create":bool,"pool":bool}`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct PgOptions {
    /// What a successful append promises, as the server's `synchronous_commit` for this
    /// connection: `"none"` → `off` (a server crash may lose the last commits, never
    /// half of one), `"fsync"` and `"fsync_batch"` → `on` (the commit is flushed to the
    /// server's WAL; the server groups concurrent flushes itself). Absent: the server's
    /// own setting.
    pub durability: Option<Durability>,
    /// Reject extension roles and blocks (docs/contract.md §6.1). Default: off.
    pub strict_roles: bool,
    /// Create the session when it does not exist (default). `false`: a session that
    /// does not exist is [`Error::Io`] of kind `NotFound`, and nothing is created (a
    /// reader, such as the source of `session copy`).
    pub create: bool,
    /// Keep the connection when the store closes, for the next open in this process
    /// with the same conninfo and durability, which then skips the login (default).
    /// At most 8 are kept per process; a kept one that turns out dead is replaced by
    /// a new one, never an error. `false`: the store's connection is its own, closed
    /// with it.
    pub pool: bool,
}

impl Default for PgOptions {
    fn default() -> PgOptions {
        PgOptions {
            durability: None,
            strict_roles: false,
            create: true,
            pool: true,
        }
    }
}

impl PgOptions {
    /// Options from a JSON object; unknown members are [`Error::InvalidOption`].
    pub fn from_json(text: &str) -> Result<PgOptions, Error> {
        crate::options::from_json(text)
    }
}

/// Options of the session listing, as JSON: `{"limit":N}` (default: no limit).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct PgListOptions {
    pub limit: Option<u32>,
}

impl PgListOptions {
    /// Options from a JSON object; unknown members are [`Error::InvalidOption`].
    pub fn from_json(text: &str) -> Result<PgListOptions, Error> {
        crate::options::from_json(text)
    }
}

/// One session in the database.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PgSessionInfo {
    pub session_id: String,
    /// Committed entries.
    pub entries: u64,
    /// The id of the last committed entry, `None` when there is none.
    pub latest_leaf_id: Option<String>,
    /// When the last entry was committed (or the session created), in ms since the epoch.
    pub modified_ms: u64,
}

impl PgSessionInfo {
    fn to_json(&self) -> String {
        Object::new()
            .string("sessionId", &self.session_id)
            .number("entries", self.entries)
            .string_or_null("latestLeafId", self.latest_leaf_id.as_deref())
            .number("modifiedMs", self.modified_ms)
            .finish()
    }
}

/// `{"sessions":[…]}`.
pub fn pg_sessions_json(sessions: &[PgSessionInfo]) -> String {
    Object::new()
        .raw(
            "sessions",
            &crate::json::array(sessions.iter().map(PgSessionInfo::to_json)),
        )
        .finish()
}

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

/// The password of a connection string, kept only to take it out of messages.
#[cfg(feature = "postgres")]
#[derive(Clone, Default)]
pub(crate) struct Secret(Option<String>);

#[cfg(feature = "postgres")]
impl Secret {
    /// `text` with every occurrence of the password replaced.
    pub(crate) fn scrub(&self, text: &str) -> String {
        match &self.0 {
            Some(password) if !password.is_empty() => text.replace(password.as_str(), "********"),
            _ => text.to_owned(),
        }
    }
}

mod handle;

pub(super) use handle::PgBackend;

/// Every session of the PostgreSQL database `conninfo` names, most recently modified
/// first (docs/contract.md §14). Creates the schema on first use, as an open does.
pub fn list_pg_sessions(
    conninfo: &str,
    options: &PgListOptions,
) -> Result<Vec<PgSessionInfo>, Error> {
    list(conninfo, options)
}

#[cfg(feature = "postgres")]
mod base;
#[cfg(feature = "postgres")]
mod copy;
#[cfg(feature = "postgres")]
mod schema;
#[cfg(feature = "postgres")]
mod tls;

#[cfg(feature = "postgres")]
pub(crate) use base::{load_base, write_index};
#[cfg(feature = "postgres")]
pub(crate) use copy::copy_in;

#[cfg(feature = "postgres")]
pub(crate) use enabled::*;

#[cfg(not(feature = "postgres"))]
pub(crate) use disabled::*;

#[cfg(feature = "postgres")]
mod enabled {
    use std::error::Error as _;

    use crate::error::IoOp;
    use std::io;

    use postgres::types::Type;
    use postgres::{Client, Config, Statement};

    use super::*;

    /// One connection, used by the sink and the session index's sources in turn.
    pub(crate) type Shared = std::sync::Arc<std::sync::Mutex<Client>>;

    /// The connection; a panic while it was held leaves nothing half done on the client
    /// side that a later statement would trip on, so a poisoned lock is taken as is.
    pub(crate) fn lock(client: &Shared) -> std::sync::MutexGuard<'_, Client> {
        client
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

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
        /// round trip and no preparation ([`Client::query_typed`]).
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

    /// A failed database operation as the store's I/O failure, with the password
    /// taken out of its message.
    pub(super) fn failure(secret: &Secret, op: IoOp, what: &str, e: &postgres::Error) -> IoFailure {
        let mut message = format!("PostgreSQL: {what} failed: {e}");
        let mut source = e.source();
        let mut os: Option<&io::Error> = None;
        while let Some(cause) = source {
            message.push_str(": ");
            message.push_str(&cause.to_string());
            if let Some(io) = cause.downcast_ref::<io::Error>() {
                os = Some(io);
            }
            source = cause.source();
        }
        if let Some(db) = e.as_db_error() {
            message.push_str(&format!(" (SQLSTATE {})", db.code().code()));
        }
        IoFailure {
            op,
            kind: os.map_or(io::ErrorKind::Other, io::Error::kind),
            os_error: os.and_then(io::Error::raw_os_error),
            message: secret.scrub(&message),
            change: None,
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

    /// [`connect`], then the connection's `synchronous_commit` as `options` says.
    pub(super) fn connect_with(
        conninfo: &str,
        options: &PgOptions,
    ) -> Result<(Client, Secret), Error> {
        let (mut client, secret) = connect(conninfo)?;
        match options.durability {
            Some(Durability::None) => client.batch_execute("SET synchronous_commit = off"),
            Some(_) => client.batch_execute("SET synchronous_commit = on"),
            None => Ok(()),
        }
        .map_err(|e| Error::Io(failure(&secret, IoOp::Open, "open", &e).into()))?;
        Ok((client, secret))
    }

    /// Connects and makes sure the schema is there, at this library's version.
    pub(super) fn connect(conninfo: &str) -> Result<(Client, Secret), Error> {
        let (mut client, secret) = login(conninfo)?;
        super::schema::ensure(&mut client, &secret)?;
        Ok((client, secret))
    }

    /// Connects (the login), nothing more.
    fn login(conninfo: &str) -> Result<(Client, Secret), Error> {
        // `sslmode` and `sslrootcert` are read here: the client crate's parser knows
        // neither verify-ca/verify-full nor a root file.
        let (conninfo, tls) = tls::split(conninfo)?;
        let mut config: Config = conninfo.parse().map_err(|e: postgres::Error| {
            // The parser names a bad key, never a value; the text is not echoed.
            Error::InvalidArgument {
                argument: "conninfo",
                message: format!(
                    "conninfo is not a connection string or URI: {}",
                    e.source().map_or_else(|| e.to_string(), |s| s.to_string())
                ),
            }
        })?;
        let secret = Secret(
            config
                .get_password()
                .map(|p| String::from_utf8_lossy(p).into_owned()),
        );
        config.ssl_mode(tls::client_mode(&tls, config.get_hosts()));
        let client = config
            .connect(tls::connector(&tls, &secret)?)
            .map_err(|e| Error::Io(failure(&secret, IoOp::Open, "connect", &e).into()))?;
        Ok((client, secret))
    }

    /// The connections of closed stores, kept in this process for the next open with
    /// the same conninfo and durability (option `pool`, on by default), so that the
    /// open skips the login. Each keeps its `synchronous_commit` and its prepared
    /// insert, nothing else: a store runs no transaction across calls and sets nothing
    /// more. At most [`MAX_IDLE`] are kept (the oldest is closed); one is taken only by
    /// the process that made it (a forked child never touches its parent's socket),
    /// and one that turns out dead or behind the schema is dropped and a new
    /// connection made, so a kept connection never fails an open.
    mod idle {
        use super::{Secret, Shared, Statement};

        /// The most idle connections a process keeps.
        pub(super) const MAX_IDLE: usize = 8;

        pub(super) struct Idle {
            pub(super) key: String,
            pub(super) pid: u32,
            pub(super) client: Shared,
            pub(super) insert: Option<Statement>,
            pub(super) secret: Secret,
        }

        static IDLE: std::sync::Mutex<Vec<Idle>> = std::sync::Mutex::new(Vec::new());

        fn idle() -> std::sync::MutexGuard<'static, Vec<Idle>> {
            IDLE.lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
        }

        /// The newest idle connection for `key` that nothing else holds.
        pub(super) fn take(key: &str) -> Option<Idle> {
            let pid = std::process::id();
            let mut idle = idle();
            // Another process's connections (this one was forked): forgotten, never
            // closed (closing would end the parent's session on the shared socket).
            for other in idle.extract_if(.., |i| i.pid != pid) {
                std::mem::forget(other);
            }
            let at = idle
                .iter()
                .rposition(|i| i.key == key && std::sync::Arc::strong_count(&i.client) == 1)?;
            Some(idle.remove(at))
        }

        /// Keeps `connection`, closing the oldest kept one beyond [`MAX_IDLE`].
        pub(super) fn give(connection: Idle) {
            let mut idle = idle();
            idle.push(connection);
            if idle.len() > MAX_IDLE {
                let oldest = idle.remove(0);
                drop(idle);
                drop(oldest);
            }
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
            // connection) and reads the tables' version.
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
                     CASE WHEN $2::text IS NOT NULL THEN set_config('synchronous_commit', $2, false) END",
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

    /// An id read back from a `bytea` column: the UTF-8 bytes the store wrote.
    fn id_text(bytes: Vec<u8>) -> Result<String, Error> {
        String::from_utf8(bytes).map_err(|_| {
            Error::Io(
                IoFailure {
                    op: IoOp::Read,
                    kind: io::ErrorKind::InvalidData,
                    os_error: None,
                    message: "PostgreSQL: an id column holds bytes that are not UTF-8 \
                              (written outside libsession)"
                        .to_owned(),
                    change: None,
                }
                .into(),
            )
        })
    }

    /// Every session of the database, most recently modified first.
    pub(crate) fn list(
        conninfo: &str,
        options: &PgListOptions,
    ) -> Result<Vec<PgSessionInfo>, Error> {
        let (mut client, secret) = connect(conninfo)?;
        let limit = options.limit.map_or(i64::MAX, i64::from);
        let rows = client
            .query(
                "SELECT session_id, entries, latest_leaf_id, modified_ms FROM libsession_sessions \
                 ORDER BY modified_ms DESC, session_id LIMIT $1",
                &[&limit],
            )
            .map_err(|e| Error::Io(failure(&secret, IoOp::Read, "listing", &e).into()))?;
        let mut out = Vec::with_capacity(rows.len());
        for row in rows {
            let get =
                |e: postgres::Error| Error::Io(failure(&secret, IoOp::Read, "listing", &e).into());
            let entries: i64 = row.try_get(1).map_err(get)?;
            let modified: i64 = row.try_get(3).map_err(get)?;
            out.push(PgSessionInfo {
                session_id: row.try_get(0).map_err(get)?,
                entries: u64::try_from(entries).unwrap_or(0),
                latest_leaf_id: row
                    .try_get::<_, Option<Vec<u8>>>(2)
                    .map_err(get)?
                    .map(id_text)
                    .transpose()?,
                modified_ms: u64::try_from(modified).unwrap_or(0),
            });
        }
        Ok(out)
    }
}

#[cfg(not(feature = "postgres"))]
mod disabled {
    use super::*;

    /// Without the `postgres` feature no connection can exist.
    pub(crate) enum PgSink {}

    /// Matched by the store; never made, as no connection exists.
    #[allow(dead_code)]
    pub(crate) enum Inserted {
        Committed(u64),
        Taken,
    }

    /// The one error of a function whose cargo feature this build lacks (as search's).
    fn unsupported() -> Error {
        Error::Unsupported {
            feature: "postgres",
        }
    }

    impl PgSink {
        pub(crate) fn open(_: &str, session_id: &str, _: &PgOptions) -> Result<PgSink, Error> {
            check_session_id(session_id)?;
            Err(unsupported())
        }

        pub(crate) fn rows_from(
            &mut self,
            _: u64,
        ) -> Result<Vec<(u64, Vec<u8>, String)>, IoFailure> {
            match *self {}
        }

        pub(crate) fn read_only(&self) -> bool {
            match *self {}
        }

        pub(crate) fn is_closed(&self) -> bool {
            match *self {}
        }

        pub(crate) fn insert(
            &mut self,
            _: u64,
            _: &str,
            _: Option<&str>,
            _: &str,
        ) -> Result<Inserted, IoFailure> {
            match *self {}
        }

        pub(crate) fn conflict(&mut self, _: &str) -> Result<Option<u64>, IoFailure> {
            match *self {}
        }
    }

    pub(crate) fn list(_: &str, _: &PgListOptions) -> Result<Vec<PgSessionInfo>, Error> {
        Err(unsupported())
    }

    pub(crate) fn load_base(sink: &PgSink) -> Option<crate::store::log::Log> {
        match *sink {}
    }

    pub(crate) fn write_index(sink: &PgSink, _: &crate::store::log::Log) -> bool {
        match *sink {}
    }

    pub(crate) fn copy_in(
        _: &str,
        session_id: &str,
        _: &PgOptions,
        _: &[crate::entry::Entry],
        _: &mut dyn FnMut(&crate::entry::Entry) -> Result<(), Error>,
        _: &mut dyn FnMut(u64),
    ) -> Result<(), Error> {
        check_session_id(session_id)?;
        Err(unsupported())
    }
}
