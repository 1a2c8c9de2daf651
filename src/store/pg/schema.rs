//! The PostgreSQL store's tables and their versions (docs/contract.md §14).
//!
//! `libsession_schema` holds the version of a database's libsession tables. An open
//! first reads it, with no DDL and no lock: a database that is up to date is opened by
//! a role that may only read and write the tables (without CREATE on the schema, the
//! default for a role that does not own it since PostgreSQL 15). Only when the tables
//! are missing or older does the open take the advisory lock and, in one transaction,
//! read the version again, create version 1 if there is nothing, and apply every
//! migration after the version found, in order. A new database and an upgraded one
//! therefore go through the same statements and end the same.
//!
//! To add version N + 1: append to [`MIGRATIONS`] the statements that turn version N
//! into N + 1 in place, keeping every row ([`SCHEMA_VERSION`] follows from the list), and
//! test it on a database written by version N (`tests/pg_store.rs` does so for 1, 2
//! and 3; the version-1 test checks every version since).
//! A library never writes to a database whose version is newer than its own.

use std::io;

use postgres::Client;
use postgres::error::SqlState;

use crate::error::{Error, IoFailure, IoOp};

use super::failure::{Secret, failure};

/// The schema version this library writes and reads: 1, plus one per migration.
pub(crate) const SCHEMA_VERSION: i32 = 1 + MIGRATIONS.len() as i32;

/// The advisory lock key under which the schema is created or upgraded (any fixed
/// number; "libsess" in ASCII).
const SCHEMA_LOCK: i64 = 0x006c_6962_7365_7373;

/// Version 1, the first schema (and still the first step of every new database).
const VERSION_1: &str = "
    CREATE TABLE IF NOT EXISTS libsession_schema (version integer NOT NULL);
    CREATE TABLE IF NOT EXISTS libsession_sessions (
        session_id text PRIMARY KEY,
        entries bigint NOT NULL DEFAULT 0,
        latest_leaf_id text,
        created_ms bigint NOT NULL,
        modified_ms bigint NOT NULL
    );
    CREATE TABLE IF NOT EXISTS libsession_entries (
        session_id text NOT NULL REFERENCES libsession_sessions (session_id),
        seq bigint NOT NULL,
        id text NOT NULL,
        parent_id text,
        line text NOT NULL,
        CONSTRAINT libsession_entries_seq PRIMARY KEY (session_id, seq),
        CONSTRAINT libsession_entries_id UNIQUE (session_id, id)
    );";

/// `MIGRATIONS[k]` turns version k + 1 into version k + 2.
const MIGRATIONS: [&str; 4] = [
    // 1 → 2: entry ids as bytes. A `text` value cannot hold NUL, which a JSON id may
    // (`"a\u0000b"`), and a B-tree row holds at most about 2.7 KB, which an id may
    // exceed: ids (and parent ids, and a session's latest leaf id) become `bytea`, the
    // id's UTF-8 bytes, and the id's uniqueness is kept by a unique index on its
    // SHA-256 (32 bytes whatever the id's length).
    "
    ALTER TABLE libsession_entries DROP CONSTRAINT libsession_entries_id;
    ALTER TABLE libsession_entries
        ALTER COLUMN id TYPE bytea USING convert_to(id, 'UTF8'),
        ALTER COLUMN parent_id TYPE bytea USING convert_to(parent_id, 'UTF8');
    CREATE UNIQUE INDEX libsession_entries_id ON libsession_entries (session_id, sha256(id));
    ALTER TABLE libsession_sessions
        ALTER COLUMN latest_leaf_id TYPE bytea USING convert_to(latest_leaf_id, 'UTF8');",
    // 2 → 3: an open reads no entry rows. Each row gets `off`, where its line starts in
    // the session seen as a JSONL file (its lines and `\n` back to back, in seq order),
    // unique per session, so that any byte range of that file is one indexed query;
    // and `libsession_index` holds session indexes (the JSONL store's `.idx` format)
    // over those bytes, one row per number of entries covered, stored uncompressed so
    // that a page is read without reading the whole image.
    "
    ALTER TABLE libsession_entries ADD COLUMN off bigint;
    UPDATE libsession_entries e SET off = s.off FROM (
        SELECT session_id, seq,
            sum(octet_length(convert_to(line, 'UTF8')) + 1)
                OVER (PARTITION BY session_id ORDER BY seq)
            - (octet_length(convert_to(line, 'UTF8')) + 1) AS off
        FROM libsession_entries) s
        WHERE e.session_id = s.session_id AND e.seq = s.seq;
    ALTER TABLE libsession_entries ALTER COLUMN off SET NOT NULL;
    CREATE UNIQUE INDEX libsession_entries_off ON libsession_entries (session_id, off);
    CREATE TABLE libsession_index (
        session_id text NOT NULL REFERENCES libsession_sessions (session_id),
        entries bigint NOT NULL,
        image bytea NOT NULL,
        PRIMARY KEY (session_id, entries)
    );
    ALTER TABLE libsession_index ALTER COLUMN image SET STORAGE EXTERNAL;",
    // 3 → 4: the server numbers an append. The session's row keeps, beside its count
    // (the next `seq`), `bytes`: the session's size seen as a JSONL file (the next
    // `off`). An append takes both from that row as it updates it, so writers that
    // raced wait for each other's one statement instead of failing and retrying. Both
    // are set here from the rows. A handle of an older library still writing after the
    // upgrade cannot make them lie unseen: the unique `off` then refuses the next
    // append at the stale offset.
    "
    ALTER TABLE libsession_sessions ADD COLUMN bytes bigint NOT NULL DEFAULT 0;
    UPDATE libsession_sessions s SET entries = e.entries, bytes = e.bytes FROM (
        SELECT DISTINCT ON (session_id) session_id, seq + 1 AS entries,
            off + octet_length(convert_to(line, 'UTF8')) + 1 AS bytes
        FROM libsession_entries ORDER BY session_id, seq DESC) e
        WHERE s.session_id = e.session_id;",
    // 4 → 5: no foreign keys from the rows to the session's row. Each one made every
    // insert run a referential check (a second lookup and lock of the session's row,
    // queued and fired at the statement's end) that never finds anything to refuse:
    // an append inserts only the row that its own UPDATE of the session's row
    // returned (the row exists and is locked by that statement until it commits), a
    // copy inserts after creating and locking the session's row in its transaction,
    // and an index is written by a handle whose open found or created that row.
    // libsession deletes no session's row (no role it runs as needs DELETE on
    // `libsession_sessions`); a row deleted outside it leaves the session's rows,
    // and the next append to that session is refused (its count is then below
    // what the handle read, or its next `seq` taken), nothing written. The keys
    // are found by what they join rather than by name.
    "
    DO $$
    DECLARE k record;
    BEGIN
        FOR k IN SELECT conrelid::regclass AS t, conname FROM pg_constraint
            WHERE contype = 'f' AND confrelid = 'libsession_sessions'::regclass
            AND conrelid IN ('libsession_entries'::regclass, 'libsession_index'::regclass)
        LOOP
            EXECUTE format('ALTER TABLE %s DROP CONSTRAINT %I', k.t, k.conname);
        END LOOP;
    END $$;",
];

/// Makes sure the tables are there at [`SCHEMA_VERSION`]: reads the version and, only
/// when it is missing or older, creates or upgrades the tables. A newer version is
/// refused (`io`, kind `Unsupported`), never written.
pub(crate) fn ensure(client: &mut Client, secret: &Secret) -> Result<(), Error> {
    let io = |e: &postgres::Error| Error::Io(failure(secret, IoOp::Open, "schema", e).into());
    match read_version(client).map_err(|e| io(&e))? {
        Some(version) if version == SCHEMA_VERSION => Ok(()),
        Some(version) if version > SCHEMA_VERSION => Err(newer(version)),
        found => upgrade(client, secret, found),
    }
}

/// The version of the tables, `None` when there are none.
fn read_version(client: &mut Client) -> Result<Option<i32>, postgres::Error> {
    // Sent with its (no) parameter types: one round trip, nothing prepared.
    match client.query_typed_one("SELECT max(version) FROM libsession_schema", &[]) {
        Ok(row) => row.try_get(0),
        // Outside a transaction: the failed statement leaves the connection as it was.
        Err(e) if e.code() == Some(&SqlState::UNDEFINED_TABLE) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Creates version 1 when `found` is `None`, then applies the migrations after it, in
/// one transaction under the advisory lock; the version is read again under the lock,
/// as another process may have done it meanwhile.
fn upgrade(client: &mut Client, secret: &Secret, found: Option<i32>) -> Result<(), Error> {
    let io = |e: &postgres::Error| {
        let mut failure = failure(secret, IoOp::Open, "schema", e);
        failure.message.push_str(&match found {
            None => "; creating the libsession tables needs CREATE on the schema: \
                     open the database once as a role that has it"
                .to_owned(),
            Some(v) => format!(
                "; the libsession tables are at version {v} and upgrading them to version \
                 {SCHEMA_VERSION} needs their owner: open the database once as that role"
            ),
        });
        Error::Io(failure.into())
    };
    let mut tx = client.transaction().map_err(|e| io(&e))?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&SCHEMA_LOCK])
        .map_err(|e| io(&e))?;
    let version = match tx.query_one("SELECT to_regclass('libsession_schema') IS NOT NULL", &[]) {
        Ok(row) if row.try_get::<_, bool>(0).map_err(|e| io(&e))? => tx
            .query_one("SELECT max(version) FROM libsession_schema", &[])
            .and_then(|row| row.try_get::<_, Option<i32>>(0))
            .map_err(|e| io(&e))?,
        Ok(_) => None,
        Err(e) => return Err(io(&e)),
    };
    let from = match version {
        Some(v) if v > SCHEMA_VERSION => return Err(newer(v)),
        Some(v) if v == SCHEMA_VERSION => return tx.commit().map_err(|e| io(&e)),
        Some(v) => v,
        None => {
            tx.batch_execute(VERSION_1).map_err(|e| io(&e))?;
            tx.execute("INSERT INTO libsession_schema (version) VALUES (1)", &[])
                .map_err(|e| io(&e))?;
            1
        }
    };
    let done = usize::try_from(from - 1).unwrap_or(0);
    for migration in MIGRATIONS.iter().skip(done) {
        tx.batch_execute(migration).map_err(|e| io(&e))?;
    }
    tx.execute(
        "UPDATE libsession_schema SET version = $1",
        &[&SCHEMA_VERSION],
    )
    .map_err(|e| io(&e))?;
    tx.commit().map_err(|e| io(&e))
}

/// Tables made by a newer libsession: never written by this one.
fn newer(version: i32) -> Error {
    Error::Io(
        IoFailure {
            op: IoOp::Open,
            kind: io::ErrorKind::Unsupported,
            os_error: None,
            message: format!(
                "PostgreSQL: the database's libsession schema is version {version}; \
                 this library knows version {SCHEMA_VERSION} at most: upgrade libsession"
            ),
            change: None,
        }
        .into(),
    )
}
