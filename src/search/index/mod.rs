//! The sidecar index: a SQLite database in the searched folder (see the parent module for
//! what it promises). Tables:
//!
//! - `files`: one row per session file indexed: its name, identity (device, inode), size,
//!   modification and change times when last seen, the hash and length of its first block
//!   and the hash of its last indexed block, the committed bytes and lines indexed, its
//!   entry count and the row of its last committed entry (its latest leaf);
//! - `roles`: the roles met, each once (an entry holds its role's row);
//! - `entries`: every committed entry of those files (id, role, the sequence number of
//!   its parent, whether it is on the latest leaf's path and whether it has text to
//!   search), its row being its file's row and its sequence number in the file
//!   ([`entry_key`]);
//! - `lines`: where each entry's line starts in its file, in chunks of
//!   [`CHUNK_ENTRIES`](lines::CHUNK_ENTRIES) entries (see [`lines`]);
//! - `texts`: the FTS5 table of the words of the text a person reads
//!   ([`words`](super::text::words): folded, cut at ASCII separators, long ones as
//!   windows), keyed by the entry's row, so that the index alone says where each
//!   candidate's line is. It keeps neither the text (contentless: a candidate's text is
//!   read again from its line in the session file, to check the terms, count them for
//!   the ranking and cut the snippet) nor positions (`detail=none`);
//! - `vocabulary`: every word ever put in `texts`, in blocks of newline-separated words
//!   (a query finds the words that hold each of its terms' [`runs`](super::text::runs) by
//!   scanning them; a word may be in more than one block until they are merged:
//!   [`MAX_BLOCKS`](vocabulary::MAX_BLOCKS));
//! - `errors`: the corrupt lines found in those files;
//! - `state`: the folder's fingerprint when last brought up to date (see
//!   [`fingerprint`](update::fingerprint)).
//!
//! A search first brings the index up to date in one `BEGIN IMMEDIATE` transaction (a
//! second process waits on SQLite's lock, up to [`BUSY_TIMEOUT`](sidecar::BUSY_TIMEOUT)),
//! then queries it. A sidecar that is corrupt, not a database, or of another schema
//! version is deleted and built again: it holds nothing that the session files do not. A
//! sidecar that cannot be used at all gives way to a temporary database
//! ([`with_temporary`]).
//!
//! The rooms: `sidecar` (what may be at the sidecar's name, its owner and mode, the
//! opening of the database), `update` (bringing each file's rows up to date), `cut`
//! (reading a file's new lines and cutting their entries into what is inserted, on a
//! second thread while the first inserts), `lines` (where each entry's line starts),
//! `vocabulary` (the words indexed, and the words that hold a query's pieces) and `query`
//! (candidates, their check against the lines, the ranking).

mod cut;
mod fingerprint;
mod lines;
mod query;
mod sidecar;
mod update;
mod vocabulary;

use std::fs::{self, Metadata};
use std::io;
use std::path::Path;
use std::sync::Arc;

use rusqlite::{Connection, ErrorCode, OptionalExtension};

use super::{IndexUse, SIDECAR, SearchError, SearchQuery, SearchResult};
use crate::entry::{EntryParser, Facts, ParseFault};
pub(super) use crate::error::io_error;
use crate::error::{Error, IoFailure, IoOp};
use crate::secrets::Redactor;
use query::query_hits;
use sidecar::{Like, SIDE_FILES, narrow_journal, open_index, prepare_sidecar, side_path, tune};
use update::{Threads, fingerprint, update_all};

/// The schema's version, in SQLite's `user_version`; another value means rebuild.
/// 2: the FTS5 table keeps no positions (`detail=none`), and `state` holds the
/// folder's fingerprint. 3: `files` holds the change time and the last indexed
/// block's hash. 4: words instead of trigrams, no text kept (entries say where their
/// line is), and the vocabulary. 5: the text is indexed with its secrets redacted (an
/// older sidecar may hold secrets: it is deleted and built again). 6: an entry's row is
/// its file's row and its line's offset, so the full-text index alone says where a
/// candidate's line is. 7: an entry's row is its file's row and its sequence number
/// ([`entry_key`]: consecutive entries differ by one, which FTS5 stores in a byte), the
/// lines' offsets are kept in chunks per file (`lines`), and `entries` keeps neither
/// its file nor its sequence number (both are in its row) nor an index of its ids, and
/// its parent as a sequence number.
const SCHEMA_VERSION: i64 = 7;
/// The bits of an entry's row ([`entry_key`]) that hold its sequence number in its
/// file: a session file is indexed up to 2^32 entries.
const SEQ_BITS: u32 = 32;
/// File rows are below this (2^31), so that an entry's row fits in 63 bits.
const MAX_FILE_ROW: i64 = 1 << (63 - SEQ_BITS);

/// The row of entry number `seq` (0-based, among the committed entries) of file row
/// `file`, in `entries` and in the full-text index: `file << 32 | seq`. Rows of one
/// file are ordered as its entries, and consecutive entries' rows differ by one (FTS5
/// stores each row as its difference from the one before: one byte). `None` from
/// 2^32 entries on.
fn entry_key(file: i64, seq: u64) -> Option<i64> {
    let seq = i64::try_from(seq).ok().filter(|&seq| seq < 1 << SEQ_BITS)?;
    Some(file << SEQ_BITS | seq)
}

/// The file row and the sequence number of an entry's row ([`entry_key`]).
fn key_parts(key: i64) -> (i64, u64) {
    (key >> SEQ_BITS, (key & ((1 << SEQ_BITS) - 1)) as u64)
}

/// The rows every entry of file row `file` may have: first and last.
fn file_keys(file: i64) -> (i64, i64) {
    (file << SEQ_BITS, (file << SEQ_BITS) | ((1 << SEQ_BITS) - 1))
}
/// At most this many corrupt lines are reported in one result.
const MAX_ERRORS: i64 = 1000;

const SCHEMA: &str = "
CREATE TABLE files(
  id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, dev INTEGER NOT NULL,
  ino INTEGER NOT NULL, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL,
  ctime_ns INTEGER NOT NULL, head_hash INTEGER NOT NULL, head_len INTEGER NOT NULL,
  tail_hash INTEGER NOT NULL, offset INTEGER NOT NULL,
  lines INTEGER NOT NULL, entries INTEGER NOT NULL, last_row INTEGER,
  text_bytes INTEGER NOT NULL DEFAULT 0, text_entries INTEGER NOT NULL DEFAULT 0,
  words INTEGER NOT NULL DEFAULT 0);
CREATE TABLE entries(
  id INTEGER PRIMARY KEY, entry_id TEXT NOT NULL, role INTEGER, parent INTEGER,
  on_latest INTEGER NOT NULL DEFAULT 0, has_text INTEGER NOT NULL);
CREATE TABLE lines(id INTEGER PRIMARY KEY, offsets BLOB NOT NULL);
CREATE TABLE errors(
  file INTEGER NOT NULL, line INTEGER, reason TEXT NOT NULL, message TEXT NOT NULL);
CREATE INDEX errors_by_file ON errors(file);
CREATE TABLE state(key TEXT PRIMARY KEY, value INTEGER NOT NULL);
CREATE TABLE roles(id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
CREATE TABLE vocabulary(id INTEGER PRIMARY KEY, words TEXT NOT NULL);
CREATE VIRTUAL TABLE texts USING fts5(words, tokenize = 'ascii', content = '',
                                      contentless_delete = 1, detail = none);
INSERT INTO texts(texts, rank) VALUES('hashsize', 16777216);
";

/// Why an update or query failed: the database, or the core.
enum Fail {
    Sql(rusqlite::Error),
    Core(Error),
}

impl From<rusqlite::Error> for Fail {
    fn from(e: rusqlite::Error) -> Fail {
        Fail::Sql(e)
    }
}

impl From<Error> for Fail {
    fn from(e: Error) -> Fail {
        Fail::Core(e)
    }
}

/// A sidecar SQLite reports as damaged: delete it and build it again.
fn is_damaged(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase)
    )
}

fn index_error(e: &rusqlite::Error) -> Error {
    Error::Io(Arc::new(IoFailure {
        op: IoOp::Write,
        kind: io::ErrorKind::Other,
        os_error: None,
        message: format!("the search index {SIDECAR}: {e}"),
        change: None,
    }))
}

/// A session file found in the folder, as `lstat` saw it.
struct Found {
    name: String,
    meta: Metadata,
}

/// The session files directly in `dir`, and the names that could not be searched.
fn walk(dir: &Path) -> Result<(Vec<Found>, Vec<SearchError>), Error> {
    let mut found = Vec::new();
    let mut errors = Vec::new();
    let items = fs::read_dir(dir).map_err(|e| io_error(IoOp::Read, dir, &e))?;
    for item in items {
        let item = item.map_err(|e| io_error(IoOp::Read, dir, &e))?;
        let os_name = item.file_name();
        if !crate::list::is_jsonl(&os_name) {
            continue;
        }
        let shown = os_name.to_string_lossy().into_owned();
        let fail = |reason: &str, message: String| SearchError {
            path: shown.clone(),
            line: None,
            reason: reason.to_owned(),
            message,
        };
        let Some(name) = os_name.to_str() else {
            errors.push(fail(
                "invalid_argument",
                "the file name is not UTF-8".into(),
            ));
            continue;
        };
        // `DirEntry::metadata` does not follow a symbolic link.
        match item.metadata() {
            Ok(meta) if meta.file_type().is_symlink() => {
                errors.push(fail("io", "a symbolic link; links are not followed".into()))
            }
            Ok(meta) if !meta.file_type().is_file() => {
                errors.push(fail("io", "not a regular file".into()))
            }
            Ok(meta) => found.push(Found {
                name: name.to_owned(),
                meta,
            }),
            Err(e) => errors.push(fail("io", format!("cannot read its metadata: {e}"))),
        }
    }
    found.sort_by(|a, b| a.name.cmp(&b.name));
    Ok((found, errors))
}

/// Parses a committed line for the search: the one point where an entry enters the
/// index, a candidate's check and a snippet. The line is parsed as written; what the
/// search keeps of it is then taken with [`readable_redacted`](super::text::readable_redacted),
/// which redacts it, so the sidecar never holds a secret. A line that is not an entry
/// whose message may quote a secret is parsed again redacted (`redactor`; `None`: as
/// written), so that the message quotes the value as redaction leaves it.
fn parse(
    parser: &mut EntryParser,
    line: &[u8],
    redactor: Option<&Redactor>,
) -> Result<Facts, ParseFault> {
    match (parser.parse(line), redactor) {
        (Ok((_, facts)), _) => Ok(facts),
        // Only an entry's message may quote a value (a JSON error names a place; a
        // pointer's member names are never redacted), and a value redaction changes
        // has a rule's keyword in it, quoted or not.
        (Err(ParseFault::Entry(e)), Some(redactor))
            if redactor.may_hold_secret(e.message.as_bytes()) =>
        {
            let redacted = redactor.redact_json_bytes(line);
            parser.parse(&redacted).map(|(_, facts)| facts)
        }
        (Err(fault), _) => Err(fault),
    }
}

/// Searches `dir` (see the parent module): with the sidecar, or, when it cannot be
/// used, with a temporary index built for this search alone.
pub(super) fn search(dir: &Path, query: &SearchQuery) -> Result<SearchResult, Error> {
    let (found, walk_errors) = walk(dir)?;
    let mut result = if query.redact {
        match with_sidecar(dir, &found, query) {
            Ok(result) => result,
            // The index is never required: whatever kept the sidecar from being
            // created, opened, narrowed or written, the search is answered without it.
            Err(_) => with_temporary(dir, &found, query)?,
        }
    } else {
        // The sidecar holds redacted text only: a search of the text as written
        // builds its own index.
        with_temporary(dir, &found, query)?
    };
    let mut errors = walk_errors;
    errors.append(&mut result.errors);
    result.errors = errors;
    Ok(result)
}

/// Searches with the sidecar, brought up to date (built again once when damaged).
fn with_sidecar(dir: &Path, found: &[Found], query: &SearchQuery) -> Result<SearchResult, Fail> {
    let path = dir.join(SIDECAR);
    let like = Like::of(found);
    let mut rebuilt = false;
    loop {
        prepare_sidecar(&path, &like)?;
        let outcome = match open_index(&path) {
            // SQLite creates the journal (with the first transaction of a new index)
            // with the database's mode but the process's group: it is narrowed before
            // this search writes anything of the conversation through it.
            Ok(Some(mut conn)) => match narrow_journal(&path, &like) {
                Ok(()) => run(&mut conn, dir, found, query),
                Err(e) => Err(Fail::Core(e)),
            },
            Ok(None) => Err(Fail::Sql(rusqlite::Error::SqliteFailure(
                rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_NOTADB),
                Some("another schema version".into()),
            ))),
            Err(e) => Err(e),
        };
        match outcome {
            Err(Fail::Sql(e)) if is_damaged(&e) && !rebuilt => {
                rebuilt = true;
                // Its journal too: it belongs to the database removed.
                for remove in [path.clone(), side_path(&path, SIDE_FILES[0])] {
                    match fs::remove_file(&remove) {
                        Err(e) if e.kind() != io::ErrorKind::NotFound => {
                            return Err(Fail::Core(io_error(IoOp::Write, &remove, &e)));
                        }
                        _ => {}
                    }
                }
            }
            other => return other,
        }
    }
}

/// Searches with a private temporary database (SQLite's, in memory until it grows,
/// then in a file of the temporary folder deleted when it closes): every session file
/// is read.
fn with_temporary(dir: &Path, found: &[Found], query: &SearchQuery) -> Result<SearchResult, Error> {
    let fail = |e: Fail| match e {
        Fail::Sql(e) => index_error(&e),
        Fail::Core(e) => e,
    };
    let mut conn = Connection::open("").map_err(|e| index_error(&e))?;
    tune(&conn).map_err(|e| index_error(&e))?;
    conn.execute_batch(SCHEMA).map_err(|e| index_error(&e))?;
    let mut result = run(&mut conn, dir, found, query).map_err(fail)?;
    result.index = IndexUse::Temporary;
    Ok(result)
}

fn run(
    conn: &mut Connection,
    dir: &Path,
    found: &[Found],
    query: &SearchQuery,
) -> Result<SearchResult, Fail> {
    let mut result = SearchResult::default();
    let mut file_errors = Vec::new();
    let print = fingerprint(found);
    let seen: Option<i64> = conn
        .query_row(
            "SELECT value FROM state WHERE key = 'fingerprint'",
            [],
            |r| r.get(0),
        )
        .optional()?;
    let redactor = match query.redact {
        true => Some(Redactor::standard().map_err(Fail::Core)?),
        false => None,
    };
    if seen != Some(print) {
        update_all(
            conn,
            dir,
            found,
            print,
            redactor,
            Threads::available(),
            &mut result,
            &mut file_errors,
        )?;
    }
    result.hits = query_hits(conn, dir, query, redactor)?;
    let (sessions, entries) = conn.query_row(
        "SELECT count(*), coalesce(sum(entries), 0) FROM files",
        [],
        |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?)),
    )?;
    result.sessions = sessions.max(0) as u64;
    result.entries = entries.max(0) as u64;
    result.errors = file_errors;
    let mut stmt = conn.prepare(
        "SELECT f.name, e.line, e.reason, e.message FROM errors e JOIN files f ON f.id = e.file
         ORDER BY f.name, e.line LIMIT ?1",
    )?;
    let rows = stmt.query_map([MAX_ERRORS], |r| {
        Ok(SearchError {
            path: r.get(0)?,
            line: r.get::<_, Option<i64>>(1)?.map(|l| l.max(0) as u64),
            reason: r.get(2)?,
            message: r.get(3)?,
        })
    })?;
    for row in rows {
        result.errors.push(row?);
    }
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_row_holds_its_file_row_and_sequence_number_up_to_2_pow_32() {
        let last = (1u64 << SEQ_BITS) - 1;
        for (file, seq) in [(1, 0), (7, 4096), (MAX_FILE_ROW - 1, last)] {
            let key = entry_key(file, seq).expect("a row");
            assert!(key > 0);
            assert_eq!(key_parts(key), (file, seq));
            let (first, end) = file_keys(file);
            assert!((first..=end).contains(&key));
        }
        assert_eq!(entry_key(1, last + 1), None);
        // The rows of one file are consecutive, and after every earlier file's.
        assert_eq!(entry_key(2, 11).map(|k| k - 1), entry_key(2, 10));
        assert!(entry_key(1, last) < entry_key(2, 0));
    }

    /// Every row of every table of the index, the full-text index's as (word, row).
    fn dump(conn: &Connection) -> Vec<String> {
        conn.execute_batch(
            "CREATE VIRTUAL TABLE IF NOT EXISTS temp.postings
               USING fts5vocab(main, 'texts', 'instance')",
        )
        .expect("vocab table");
        let mut out = Vec::new();
        for (table, sql) in [
            ("files", "SELECT * FROM files ORDER BY id"),
            ("entries", "SELECT * FROM entries ORDER BY id"),
            ("lines", "SELECT * FROM lines ORDER BY id"),
            ("roles", "SELECT * FROM roles ORDER BY id"),
            ("errors", "SELECT * FROM errors ORDER BY rowid"),
            ("vocabulary", "SELECT * FROM vocabulary ORDER BY id"),
            ("state", "SELECT * FROM state ORDER BY key"),
            (
                "texts",
                "SELECT term, doc FROM temp.postings ORDER BY term, doc",
            ),
        ] {
            let mut stmt = conn.prepare(sql).expect("prepare");
            let columns = stmt.column_count();
            let rows = stmt
                .query_map([], |r| {
                    let values: Vec<rusqlite::types::Value> =
                        (0..columns).map(|i| r.get(i)).collect::<Result<_, _>>()?;
                    Ok(format!("{table} {values:?}"))
                })
                .expect("query");
            for row in rows {
                out.push(row.expect("row"));
            }
        }
        out
    }

    fn session_line(id: &str, parent: Option<&str>, role: &str, text: &str) -> String {
        let parent = parent.map_or("null".to_owned(), |p| format!("\"{p}\""));
        format!(
            "{{\"type\":\"message\",\"id\":\"{id}\",\"parentId\":{parent},\"timestamp\":1,\
             \"message\":{{\"role\":\"{role}\",\"content\":\"{text}\"}}}}\n"
        )
    }

    /// Writes `entries` more entries to session `f` of `dir` (a branch now and then, a
    /// corrupt line, CJK and a secret), after `from` entries already there.
    fn grow(dir: &Path, f: usize, from: usize, entries: usize) {
        use std::io::Write;
        let mut out = String::new();
        for e in from..from + entries {
            let parent = match e {
                0 => None,
                e if e % 97 == 0 => Some(format!("f{f}-e{}", e / 2)),
                e => Some(format!("f{f}-e{}", e - 1)),
            };
            let role = ["user", "assistant", "custom"][e % 3];
            let text = match e % 5 {
                0 => format!("word{} 项目名是 tiny-pi {e}", e % 13),
                1 => "key AKIAIOSFODNN7EXAMPLE here".to_owned(),
                _ => format!("the flamingo{} said {}", e % 7, "x".repeat(e % 90)),
            };
            out.push_str(&session_line(
                &format!("f{f}-e{e}"),
                parent.as_deref(),
                role,
                &text,
            ));
            if e % 211 == 5 {
                out.push_str("{not json\n");
            }
        }
        let mut file = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join(format!("s{f:02}.jsonl")))
            .expect("open");
        file.write_all(out.as_bytes()).expect("write");
    }

    fn build(dir: &Path, conn: &mut Connection, threads: Threads) {
        let (found, _) = walk(dir).expect("walk");
        let mut result = SearchResult::default();
        let mut errors = Vec::new();
        let redactor = Redactor::standard().expect("rules");
        update_all(
            conn,
            dir,
            &found,
            fingerprint(&found),
            Some(redactor),
            threads,
            &mut result,
            &mut errors,
        )
        .unwrap_or_else(|_| panic!("update with {threads:?}"));
    }

    #[test]
    fn reading_on_a_second_thread_builds_the_same_index_as_one_thread() {
        let dir = tempfile::tempdir().expect("temp dir");
        // More files than the reader is handed ahead, more entries than a batch, and
        // more than a chunk of line offsets.
        for f in 0..12 {
            grow(dir.path(), f, 0, 300 + f * 150);
        }
        let mut one = Connection::open_in_memory().expect("db");
        let mut two = Connection::open_in_memory().expect("db");
        for conn in [&one, &two] {
            conn.execute_batch(SCHEMA).expect("schema");
        }
        build(dir.path(), &mut one, Threads::One);
        build(dir.path(), &mut two, Threads::Two);
        let first = dump(&one);
        assert!(first.iter().filter(|r| r.starts_with("texts")).count() > 1000);
        assert!(first.iter().any(|r| r.starts_with("errors")));
        assert_eq!(first, dump(&two));
        // Grown (read on from where each stopped, parents in earlier updates, a chunk
        // of offsets continued) and one rewritten (read again from its start).
        for f in [0, 3, 11] {
            grow(dir.path(), f, 300 + f * 150, 40 + f);
        }
        fs::remove_file(dir.path().join("s05.jsonl")).expect("remove");
        grow(dir.path(), 5, 0, 20);
        build(dir.path(), &mut one, Threads::One);
        build(dir.path(), &mut two, Threads::Two);
        let second = dump(&one);
        assert_ne!(first, second);
        assert_eq!(second, dump(&two));
    }
}
