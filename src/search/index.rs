//! The sidecar index: a SQLite database in the searched folder (see the parent module
//! for what it promises). Tables:
//!
//! - `files`: one row per session file indexed: its name, identity (device, inode),
//!   size, modification and change times when last seen, the hash and length of its
//!   first block and the hash of its last indexed block, the committed bytes and lines
//!   indexed, its entry count and the row of its last committed entry (its latest
//!   leaf);
//! - `roles`: the roles met, each once (an entry holds its role's row);
//! - `entries`: every committed entry of those files (id, seq, role, the row of its
//!   parent, whether it is on the latest leaf's path, where its line is in the
//!   file and whether it has text to search);
//! - `texts`: the FTS5 table of the words of the text a person reads ([`words`]: folded,
//!   cut at ASCII separators, long ones as windows), keyed by the entry's row. It keeps
//!   neither the text (contentless: a candidate's text is read again from its line in
//!   the session file, to check the terms and cut the snippet) nor positions
//!   (`detail=none`);
//! - `vocabulary`: every word ever put in `texts`, in blocks of newline-separated words
//!   (a query finds the words that hold each of its terms' [`runs`] by scanning them;
//!   a word may be in more than one block until they are merged: [`MAX_BLOCKS`]);
//! - `errors`: the corrupt lines found in those files;
//! - `state`: the folder's fingerprint when last brought up to date (see [`fingerprint`]).
//!
//! A search first brings the index up to date in one `BEGIN IMMEDIATE` transaction (a
//! second process waits on SQLite's lock, up to [`BUSY_TIMEOUT`]), then queries it. A
//! sidecar that is corrupt, not a database, or of another schema version is deleted
//! and built again: it holds nothing that the session files do not. A sidecar that
//! cannot be used at all gives way to a temporary database ([`with_temporary`]).

use std::borrow::Cow;
use std::fs::{self, File, Metadata, OpenOptions};
use std::io;
use std::os::unix::fs::{FileExt, MetadataExt, PermissionsExt};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rusqlite::types::Value;
use rusqlite::{
    Connection, ErrorCode, OpenFlags, OptionalExtension, Statement, TransactionBehavior,
};

use super::text::{
    contains_all, contains_all_ascii, fold_terms, folded, readable, runs, snippet, terms, words,
};
use super::{Hit, IndexUse, SIDECAR, SearchError, SearchQuery, SearchResult};
use crate::entry::EntryParser;
use crate::error::{Error, IoFailure, IoOp, io_error};
use crate::recover::{LineScanner, MAX_LINE_BYTES};
use crate::secrets::Redactor;
use crate::store::{mode_like, open_regular_with};

/// The schema's version, in SQLite's `user_version`; another value means rebuild.
/// 2: the FTS5 table keeps no positions (`detail=none`), and `state` holds the
/// folder's fingerprint. 3: `files` holds the change time and the last indexed
/// block's hash. 4: words instead of trigrams, no text kept (entries say where their
/// line is), and the vocabulary. 5: the text is indexed with its secrets redacted (an
/// older sidecar may hold secrets: it is deleted and built again).
const SCHEMA_VERSION: i64 = 5;
/// How long a search waits for another process's update of the index.
const BUSY_TIMEOUT: Duration = Duration::from_secs(60);
/// The first and the last indexed block of a file, whose hashes tell a replaced or
/// rewritten file from a grown one.
const BLOCK: u64 = 4096;
/// Files are read in pieces of this size.
const CHUNK: usize = 1 << 20;
/// The most runs of a query ([`runs`]) looked up in the full-text index (the ones that
/// match the fewest words); the terms are checked whole afterwards, so fewer runs only
/// let more candidates through.
const MAX_RUNS: usize = 64;
/// A run held by more words of the vocabulary than this is not looked up (it would
/// select little); the terms are checked whole afterwards.
const MAX_WORDS_PER_RUN: usize = 2000;
/// At most this many corrupt lines are reported in one result.
const MAX_ERRORS: i64 = 1000;
/// The mode of a sidecar when the folder has no session file to take it from.
const DEFAULT_MODE: u32 = 0o600;

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
  id INTEGER PRIMARY KEY, file INTEGER NOT NULL, entry_id TEXT NOT NULL,
  seq INTEGER NOT NULL, role INTEGER, parent INTEGER,
  on_latest INTEGER NOT NULL DEFAULT 0, line_at INTEGER NOT NULL,
  line_len INTEGER NOT NULL, has_text INTEGER NOT NULL, words INTEGER NOT NULL);
CREATE INDEX entries_by_id ON entries(file, entry_id);
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

/// What the index knows of a file, by name (see [`update`]).
const LOOKUP: &str = "SELECT id, dev, ino, size, mtime_ns, ctime_ns, head_hash, head_len,
                             tail_hash, offset, lines, entries, last_row
                      FROM files WHERE name = ?1";

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

/// The owner, group and permission bits the sidecar and its journal take from the
/// session files, never wider than any of them: the owner and group the files share
/// (`None` when they differ), and only the mode bits every one of them has
/// ([`DEFAULT_MODE`] when there is none).
struct Like {
    uid: Option<u32>,
    gid: Option<u32>,
    mode: u32,
}

impl Like {
    fn of(found: &[Found]) -> Like {
        let shared = |get: fn(&Metadata) -> u32| {
            let first = found.first().map(|f| get(&f.meta));
            first.filter(|&v| found.iter().all(|f| get(&f.meta) == v))
        };
        Like {
            uid: shared(MetadataExt::uid),
            gid: shared(MetadataExt::gid),
            mode: found
                .iter()
                .map(|f| f.meta.mode() & 0o777)
                .reduce(|a, b| a & b)
                .unwrap_or(DEFAULT_MODE),
        }
    }
}

/// The files SQLite may open beside the sidecar: its rollback journal, and a
/// write-ahead log and its shared memory (never made by this index, but opened by
/// SQLite when present).
const SIDE_FILES: [&str; 3] = ["-journal", "-wal", "-shm"];

fn side_path(sidecar: &Path, suffix: &str) -> std::path::PathBuf {
    let mut name = sidecar.as_os_str().to_owned();
    name.push(suffix);
    name.into()
}

fn not_regular(path: &Path) -> Error {
    let e = io::Error::new(
        io::ErrorKind::InvalidInput,
        "not a regular file (a symbolic link, FIFO, directory or device)",
    );
    io_error(IoOp::Open, path, &e)
}

/// Makes the sidecar at `path` ready for SQLite to open, or says why it cannot be
/// used. Nothing but a regular file may be at the sidecar's name or a SQLite side
/// file's ([`SIDE_FILES`]): SQLite would block on a FIFO there (a journal is opened
/// to read it), so any other kind, a symbolic link included, is refused without being
/// opened. A missing sidecar is created (never through a link) and given the session
/// files' owner, group and mode ([`Like`]); an existing one is only narrowed, never
/// widened (its journal: [`narrow_journal`]).
fn prepare_sidecar(path: &Path, like: &Like) -> Result<(), Error> {
    for suffix in SIDE_FILES {
        let side = side_path(path, suffix);
        match fs::symlink_metadata(&side) {
            Ok(meta) if meta.file_type().is_file() => {}
            Ok(_) => return Err(not_regular(&side)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(io_error(IoOp::Open, &side, &e)),
        }
    }
    // Created without being opened (`mknod` of a regular file fails on anything at the
    // name, a link included): see `narrow` for why no descriptor of it is closed here.
    let created = rustix::fs::mknodat(
        rustix::fs::CWD,
        path,
        rustix::fs::FileType::RegularFile,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    );
    match created {
        Ok(()) => narrow(path, like, true)?,
        Err(rustix::io::Errno::EXIST) => narrow(path, like, false)?,
        Err(e) => return Err(io_error(IoOp::Open, path, &e.into())),
    }
    Ok(())
}

/// Narrows the journal beside the sidecar at `path`, when there is one.
fn narrow_journal(path: &Path, like: &Like) -> Result<(), Error> {
    let journal = side_path(path, SIDE_FILES[0]);
    match fs::symlink_metadata(&journal) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        _ => narrow(&journal, like, false),
    }
}

/// Gives the regular file at `path` the owner and group of `like` where the process
/// may, and its mode (`fresh`), or narrows its mode to `like`'s (an existing file,
/// never widened), with the rule of every sidecar (`store::mode_like`: no group bits
/// unless the group is the files' one). Anything but a regular file is refused.
///
/// Through an `O_PATH` descriptor, never one opened to read or write: SQLite holds
/// POSIX locks on the database, and closing any ordinary descriptor of the file in
/// this process drops them all (another search in this process may hold them); the
/// kernel leaves locks alone when an `O_PATH` descriptor closes. The mode is set
/// through `/proc/self/fd`, which reaches that very file (no link is followed).
fn narrow(path: &Path, like: &Like, fresh: bool) -> Result<(), Error> {
    use rustix::fs::{AtFlags, FileType, OFlags};
    let fail = |e: rustix::io::Errno| io_error(IoOp::Open, path, &e.into());
    let fd = rustix::fs::open(
        path,
        OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    )
    .map_err(fail)?;
    let stat = rustix::fs::fstat(&fd).map_err(fail)?;
    if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
        return Err(not_regular(path));
    }
    let wrong_uid = like.uid.filter(|&u| u != stat.st_uid);
    let wrong_gid = like.gid.filter(|&g| g != stat.st_gid);
    if wrong_uid.is_some() || wrong_gid.is_some() {
        let chown = |uid: Option<u32>, gid: Option<u32>| {
            rustix::fs::chownat(
                &fd,
                "",
                uid.map(rustix::fs::Uid::from_raw_unchecked),
                gid.map(rustix::fs::Gid::from_raw_unchecked),
                AtFlags::EMPTY_PATH,
            )
        };
        // Best effort: only a privileged process may give a file away; the group
        // alone may still be given by a process in it.
        if chown(wrong_uid, wrong_gid).is_err() && wrong_gid.is_some() {
            let _ = chown(None, wrong_gid);
        }
    }
    let stat = rustix::fs::fstat(&fd).map_err(fail)?;
    let current = stat.st_mode & 0o777;
    let mode = mode_like(
        stat.st_gid,
        like.gid,
        if fresh {
            like.mode
        } else {
            current & like.mode
        },
    );
    if current != mode {
        use std::os::fd::AsRawFd;
        let proc = format!("/proc/self/fd/{}", fd.as_raw_fd());
        fs::set_permissions(&proc, fs::Permissions::from_mode(mode))
            .map_err(|e| io_error(IoOp::Open, path, &e))?;
    }
    Ok(())
}

/// The settings of every index connection.
fn tune(conn: &Connection) -> rusqlite::Result<()> {
    // Disposable: a crash may cost the index, never a session, so no fsync.
    conn.pragma_update(None, "synchronous", "OFF")?;
    // A build touches the FTS5 segments over and over: keep them in memory (KiB).
    conn.pragma_update(None, "cache_size", -65536)
}

/// Opens the sidecar (creating its tables when they are missing). `Ok(None)`: it is of
/// another schema version and must be rebuilt.
fn open_index(path: &Path) -> Result<Option<Connection>, Fail> {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_NOFOLLOW
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let mut conn = Connection::open_with_flags(path, flags)?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    tune(&conn)?;
    // The journal is kept between transactions (emptied, not deleted), so it keeps the
    // owner, group and mode `prepare_sidecar` gave it: SQLite creates a journal with
    // the database's mode but the process's group.
    let _: String = conn.pragma_update_and_check(None, "journal_mode", "TRUNCATE", |r| r.get(0))?;
    let version: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
    if version == SCHEMA_VERSION {
        return Ok(Some(conn));
    }
    if version != 0 {
        return Ok(None);
    }
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    // Another process may have created the tables while this one waited.
    let version: i64 = tx.pragma_query_value(None, "user_version", |r| r.get(0))?;
    if version == 0 {
        tx.execute_batch(SCHEMA)?;
        tx.pragma_update(None, "user_version", SCHEMA_VERSION)?;
    }
    tx.commit()?;
    Ok(Some(conn))
}

/// `line` as the search sees it: with every secret `redactor` finds inside its JSON
/// strings replaced by `[REDACTED:<rule>]` (`None`: as written). The one point where
/// an entry enters the index, a candidate's check and a snippet, so the sidecar never
/// holds a secret.
fn as_searched<'a>(line: &'a [u8], redactor: Option<&Redactor>) -> Cow<'a, [u8]> {
    match redactor {
        Some(redactor) => redactor.redact_json_bytes(line),
        None => Cow::Borrowed(line),
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

/// The folder as one search saw it: a hash of every session file's name, identity,
/// size and modification time (what [`update`] compares before it reads a file).
fn fingerprint(found: &[Found]) -> i64 {
    let mut bytes = Vec::with_capacity(found.len().saturating_mul(64));
    for f in found {
        bytes.extend_from_slice(f.name.as_bytes());
        bytes.push(0);
        for n in [f.meta.dev(), f.meta.ino(), f.meta.size()] {
            bytes.extend_from_slice(&n.to_le_bytes());
        }
        bytes.extend_from_slice(&mtime_ns(&f.meta).to_le_bytes());
        bytes.extend_from_slice(&ctime_ns(&f.meta).to_le_bytes());
    }
    xxhash_rust::xxh64::xxh64(&bytes, 0) as i64
}

/// Brings the index of every file of `found` up to date in one transaction, drops
/// the files no longer there, and records `print` when every file could be read (a
/// later search of a folder with the same fingerprint checks no file).
fn update_all(
    conn: &mut Connection,
    dir: &Path,
    found: &[Found],
    print: i64,
    redactor: Option<&Redactor>,
    result: &mut SearchResult,
    file_errors: &mut Vec<SearchError>,
) -> Result<(), Fail> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    // Prepared once: a search looks up every file of the folder, most of them unchanged.
    let mut lookup = tx.prepare(LOOKUP)?;
    let mut vocabulary = Vocabulary::default();
    for file in found {
        match update(
            &tx,
            &mut lookup,
            dir,
            file,
            &mut vocabulary,
            redactor,
            &mut result.bytes_read,
        ) {
            Ok(()) => {}
            Err(Fail::Core(e)) => {
                forget(&tx, &file.name)?;
                file_errors.push(SearchError {
                    path: file.name.clone(),
                    line: None,
                    reason: "io".into(),
                    message: e.to_string(),
                });
            }
            Err(e) => return Err(e),
        }
    }
    drop(lookup);
    vocabulary.save(&tx)?;
    // Files no longer in the folder (or no longer readable) leave the index.
    let names: Vec<String> = {
        let mut stmt = tx.prepare("SELECT name FROM files")?;
        let rows = stmt.query_map([], |r| r.get::<_, String>(0))?;
        rows.collect::<Result<_, _>>()?
    };
    for name in names {
        if found
            .binary_search_by(|f| f.name.as_str().cmp(&name))
            .is_err()
        {
            forget(&tx, &name)?;
        }
    }
    // A file that could not be read is tried again by the next search.
    match file_errors.is_empty() {
        true => tx.execute(
            "INSERT OR REPLACE INTO state(key, value) VALUES('fingerprint', ?1)",
            [print],
        )?,
        false => tx.execute("DELETE FROM state WHERE key = 'fingerprint'", [])?,
    };
    tx.commit()?;
    Ok(())
}

/// The most blocks the vocabulary is kept in. An update writes the words it met as one
/// more block without reading the others (reading them all would cost a search after
/// a one-line append as much as the whole vocabulary), so a word may be in several
/// blocks; once there are this many, the next update that reads a file reads them all
/// and writes them back as one.
const MAX_BLOCKS: i64 = 64;

/// The words an update puts in the index ([`words`]), each once.
#[derive(Default)]
struct Vocabulary {
    /// The words met by this update; when merging, every word of the vocabulary too.
    seen: std::collections::HashSet<Box<str>>,
    /// The words met by this update, newline-separated.
    added: String,
    /// Whether the blocks are merged by this update; decided when the first file is
    /// read.
    merge: Option<bool>,
}

impl Vocabulary {
    /// Decides, once, whether this update merges the blocks, and reads them if so.
    fn load(&mut self, tx: &Connection) -> Result<(), Fail> {
        if self.merge.is_some() {
            return Ok(());
        }
        let blocks: i64 = tx.query_row("SELECT count(*) FROM vocabulary", [], |r| r.get(0))?;
        let merge = blocks >= MAX_BLOCKS;
        if merge {
            let mut stmt = tx.prepare("SELECT words FROM vocabulary")?;
            let mut rows = stmt.query([])?;
            while let Some(row) = rows.next()? {
                let block: String = row.get(0)?;
                self.seen
                    .extend(block.split('\n').filter(|w| !w.is_empty()).map(Box::from));
            }
        }
        self.merge = Some(merge);
        Ok(())
    }

    fn save(&mut self, tx: &Connection) -> Result<(), Fail> {
        if self.merge == Some(true) {
            let mut all = String::new();
            for word in &self.seen {
                all.push_str(word);
                all.push('\n');
            }
            tx.execute("DELETE FROM vocabulary", [])?;
            tx.execute("INSERT INTO vocabulary(words) VALUES(?1)", [all])?;
        } else if !self.added.is_empty() {
            tx.execute(
                "INSERT INTO vocabulary(words) VALUES(?1)",
                [std::mem::take(&mut self.added)],
            )?;
        }
        Ok(())
    }
}

/// Removes every row of the file `name`.
fn forget(tx: &Connection, name: &str) -> Result<(), Fail> {
    let id: Option<i64> = tx
        .query_row("SELECT id FROM files WHERE name = ?1", [name], |r| r.get(0))
        .optional()?;
    if let Some(id) = id {
        clear(tx, id)?;
        tx.execute("DELETE FROM files WHERE id = ?1", [id])?;
    }
    Ok(())
}

/// Removes the entries, texts and errors of file row `id`.
fn clear(tx: &Connection, id: i64) -> Result<(), Fail> {
    tx.execute(
        "DELETE FROM texts WHERE rowid IN (SELECT id FROM entries WHERE file = ?1)",
        [id],
    )?;
    tx.execute("DELETE FROM entries WHERE file = ?1", [id])?;
    tx.execute("DELETE FROM errors WHERE file = ?1", [id])?;
    Ok(())
}

/// What the index knows of a file.
struct Known {
    id: i64,
    dev: i64,
    ino: i64,
    size: i64,
    mtime_ns: i64,
    ctime_ns: i64,
    head_hash: i64,
    head_len: i64,
    tail_hash: i64,
    offset: i64,
    lines: i64,
    entries: i64,
    last_row: Option<i64>,
}

fn mtime_ns(meta: &Metadata) -> i64 {
    meta.mtime()
        .saturating_mul(1_000_000_000)
        .saturating_add(meta.mtime_nsec())
}

/// The change time (ctime): moved by every write, `chmod` and `chown`, and no program
/// can set it back (unlike the modification time).
fn ctime_ns(meta: &Metadata) -> i64 {
    meta.ctime()
        .saturating_mul(1_000_000_000)
        .saturating_add(meta.ctime_nsec())
}

/// The hash of `len` bytes (at most [`BLOCK`]) of `file` from `start`, and the length.
fn hash_block(file: &File, start: u64, len: u64, path: &Path) -> Result<(i64, i64), Error> {
    let len = len.min(BLOCK) as usize;
    let mut buf = vec![0u8; len];
    file.read_exact_at(&mut buf, start)
        .map_err(|e| io_error(IoOp::Read, path, &e))?;
    Ok((xxhash_rust::xxh64::xxh64(&buf, 0) as i64, len as i64))
}

/// The hash of the last indexed block: the [`BLOCK`] bytes (or fewer) before `offset`.
fn hash_tail(file: &File, offset: u64, path: &Path) -> Result<i64, Error> {
    let len = offset.min(BLOCK);
    Ok(hash_block(file, offset - len, len, path)?.0)
}

/// Brings the index of one file up to date. An error of the file
/// itself is [`Fail::Core`] (the file is then left out of the index and reported).
fn update(
    tx: &Connection,
    lookup: &mut Statement,
    dir: &Path,
    found: &Found,
    vocabulary: &mut Vocabulary,
    redactor: Option<&Redactor>,
    bytes_read: &mut u64,
) -> Result<(), Fail> {
    let meta = &found.meta;
    let (dev, ino) = (meta.dev() as i64, meta.ino() as i64);
    let known = lookup
        .query_row([&found.name], |r| {
            Ok(Known {
                id: r.get(0)?,
                dev: r.get(1)?,
                ino: r.get(2)?,
                size: r.get(3)?,
                mtime_ns: r.get(4)?,
                ctime_ns: r.get(5)?,
                head_hash: r.get(6)?,
                head_len: r.get(7)?,
                tail_hash: r.get(8)?,
                offset: r.get(9)?,
                lines: r.get(10)?,
                entries: r.get(11)?,
                last_row: r.get(12)?,
            })
        })
        .optional()?;
    let size = meta.size() as i64;
    if let Some(k) = &known
        && (k.dev, k.ino, k.size, k.mtime_ns, k.ctime_ns)
            == (dev, ino, size, mtime_ns(meta), ctime_ns(meta))
    {
        return Ok(());
    }
    let path = dir.join(&found.name);
    let file = open_regular_with(
        OpenOptions::new().read(true),
        rustix::fs::OFlags::NOFOLLOW,
        &path,
    )
    .map_err(|e| io_error(IoOp::Open, &path, &e))?;
    let meta = file
        .metadata()
        .map_err(|e| io_error(IoOp::Read, &path, &e))?;
    let (dev, ino, size) = (meta.dev() as i64, meta.ino() as i64, meta.size() as i64);
    // Grown when it is the same file, its size changed but not below what was
    // indexed, and the first and the last indexed blocks hold the same bytes: only
    // what follows is read. Else it is read again from the start, also when only its
    // times changed at the same size: a write in place (which moves the change time,
    // whatever the modification time says) cannot be told from `chmod` or `touch`
    // without reading it all.
    let resume = match known {
        Some(k)
            if (k.dev, k.ino) == (dev, ino)
                && size != k.size
                && size >= k.offset
                && hash_block(&file, 0, k.head_len as u64, &path)?.0 == k.head_hash
                && hash_tail(&file, k.offset as u64, &path)? == k.tail_hash =>
        {
            Some(k)
        }
        Some(k) => {
            clear(tx, k.id)?;
            None
        }
        None => None,
    };
    let mut state = match resume {
        Some(k) => k,
        None => {
            tx.execute(
                "INSERT INTO files(name, dev, ino, size, mtime_ns, ctime_ns, head_hash, head_len,
                                   tail_hash, offset, lines, entries, last_row)
                 VALUES(?1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, NULL)
                 ON CONFLICT(name) DO UPDATE SET offset = 0, lines = 0, entries = 0,
                                                 last_row = NULL, head_len = 0,
                                                 text_bytes = 0, text_entries = 0,
                                                 words = 0",
                [&found.name],
            )?;
            let id = tx.query_row("SELECT id FROM files WHERE name = ?1", [&found.name], |r| {
                r.get(0)
            })?;
            Known {
                id,
                dev,
                ino,
                size: 0,
                mtime_ns: 0,
                ctime_ns: 0,
                head_hash: 0,
                head_len: 0,
                tail_hash: 0,
                offset: 0,
                lines: 0,
                entries: 0,
                last_row: None,
            }
        }
    };
    let old_last = state.last_row;
    let added = read_new(
        tx,
        &file,
        &path,
        size as u64,
        &mut state,
        vocabulary,
        redactor,
        bytes_read,
    )?;
    if state.last_row != old_last {
        mark_latest(tx, old_last, 0)?;
        mark_latest(tx, state.last_row, 1)?;
    }
    let (head_hash, head_len) = hash_block(&file, 0, state.offset as u64, &path)?;
    let tail_hash = hash_tail(&file, state.offset as u64, &path)?;
    tx.execute(
        "UPDATE files SET dev = ?2, ino = ?3, size = ?4, mtime_ns = ?5, ctime_ns = ?6,
                          head_hash = ?7, head_len = ?8, tail_hash = ?9, offset = ?10,
                          lines = ?11, entries = ?12, last_row = NULLIF(?13, 0),
                          text_bytes = text_bytes + ?14,
                          text_entries = text_entries + ?15, words = words + ?16
         WHERE id = ?1",
        rusqlite::params![
            state.id,
            dev,
            ino,
            size,
            mtime_ns(&meta),
            ctime_ns(&meta),
            head_hash,
            head_len,
            tail_hash,
            state.offset,
            state.lines,
            state.entries,
            row_or_zero(state.last_row),
            added.text_bytes,
            added.text_entries,
            added.words
        ],
    )?;
    Ok(())
}

/// A row id to bind where SQL NULL is meant by 0 (`NULLIF(?, 0)`; row ids start at 1).
/// NULL is never bound (a missing role is bound as '' under `NULLIF(?, '')` too):
/// valgrind reports rusqlite's drop of a bound NULL (`ToSqlOutput`) as a jump on an
/// uninitialised value, which fails the C tests run under it.
fn row_or_zero(row: Option<i64>) -> i64 {
    row.unwrap_or(0)
}

/// Sets `on_latest` to `value` on the path from the root to entry row `leaf`. Parent
/// rows are always earlier rows, so the walk ends.
fn mark_latest(tx: &Connection, leaf: Option<i64>, value: i64) -> Result<(), Fail> {
    let Some(leaf) = leaf else { return Ok(()) };
    tx.execute(
        "WITH RECURSIVE path(id) AS (
           SELECT ?1
           UNION SELECT e.parent FROM entries e JOIN path ON e.id = path.id
                 WHERE e.parent IS NOT NULL AND e.parent < e.id)
         UPDATE entries SET on_latest = ?2 WHERE id IN (SELECT id FROM path)",
        [leaf, value],
    )?;
    Ok(())
}

/// Reads the committed bytes of `file` after `state.offset` (up to `size`) and
/// indexes their entries (the words of their text, and where their line is); a
/// corrupt line is recorded in `errors`. Returns what it added.
// The update's state passed through: the file, its record, the update's vocabulary,
// the redactor every line passes first and the byte count.
#[allow(clippy::too_many_arguments)]
fn read_new(
    tx: &Connection,
    file: &File,
    path: &Path,
    size: u64,
    state: &mut Known,
    vocabulary: &mut Vocabulary,
    redactor: Option<&Redactor>,
    bytes_read: &mut u64,
) -> Result<Added, Fail> {
    let mut find_parent =
        tx.prepare("SELECT id FROM entries WHERE file = ?1 AND entry_id = ?2 ORDER BY id LIMIT 1")?;
    let mut insert_entry = tx.prepare(
        "INSERT INTO entries(file, entry_id, seq, role, parent, line_at, line_len, has_text,
                             words)
         VALUES(?1, ?2, ?3, NULLIF(?4, 0), NULLIF(?5, 0), ?6, ?7, ?8, ?9)",
    )?;
    let mut find_role = tx.prepare("SELECT id FROM roles WHERE name = ?1")?;
    let mut add_role = tx.prepare("INSERT INTO roles(name) VALUES(?1)")?;
    // The row of each role in `roles`, as it is met.
    let mut role_rows: std::collections::HashMap<String, i64> = std::collections::HashMap::new();
    let mut insert_text = tx.prepare("INSERT INTO texts(rowid, words) VALUES(?1, ?2)")?;
    let mut insert_error =
        tx.prepare("INSERT INTO errors(file, line, reason, message) VALUES(?1, ?2, ?3, ?4)")?;
    vocabulary.load(tx)?;
    let Vocabulary { seen, added, .. } = vocabulary;
    // The rows of the entries read by this call, by id: the parent of most entries
    // (earlier files' rows are looked up in the table).
    let mut rows: std::collections::HashMap<Vec<u8>, i64> = std::collections::HashMap::new();
    let start = state.offset.max(0) as u64;
    let mut scanner = LineScanner::resume(MAX_LINE_BYTES, state.lines.max(0) as u64, start);
    let mut parser = EntryParser::default();
    let mut buf = vec![0u8; CHUNK];
    let mut doc = String::new();
    let mut added_text = Added::default();
    let mut at = start;
    let mut failure: Option<Fail> = None;
    while at < size {
        let want = usize::try_from(size - at).map_or(CHUNK, |left| left.min(CHUNK));
        let n = file
            .read_at(&mut buf[..want], at)
            .map_err(|e| io_error(IoOp::Read, path, &e))?;
        if n == 0 {
            break;
        }
        *bytes_read += n as u64;
        let chunk_at = at;
        at += n as u64;
        // Fed one line at a time, so that the end of the line the scanner passes on
        // is known: the byte after the `\n` that ends the piece fed.
        let mut piece_start = 0;
        while piece_start < n {
            let piece_end =
                memchr::memchr(b'\n', &buf[piece_start..n]).map_or(n, |i| piece_start + i + 1);
            let line_end = chunk_at + piece_end as u64;
            let fed = scanner.feed(&buf[piece_start..piece_end], &mut |line, text| {
                let outcome = match text {
                    Err(fault) => insert_error.execute(rusqlite::params![
                        state.id,
                        line as i64,
                        fault.reason(),
                        fault.to_string()
                    ]),
                    Ok(text) => {
                        let line_len = text.len() as i64;
                        match parser.parse(&as_searched(text, redactor)) {
                            Err(fault) => {
                                let e = fault.at_line(line);
                                let reason = match &e {
                                    Error::CorruptLine { fault, .. } => fault.reason(),
                                    _ => "invalid_entry",
                                };
                                insert_error.execute(rusqlite::params![
                                    state.id,
                                    line as i64,
                                    reason,
                                    e.to_string()
                                ])
                            }
                            Ok((_, facts)) => (|| {
                                let tape = parser.tape();
                                let json = &tape.text[..];
                                let parent: Option<i64> = match &facts.parent {
                                    Some(p) => match rows.get(p.of(json).as_bytes()) {
                                        Some(&row) => Some(row),
                                        None => find_parent
                                            .query_row(
                                                rusqlite::params![state.id, p.of(json)],
                                                |r| r.get(0),
                                            )
                                            .optional()?,
                                    },
                                    None => None,
                                };
                                let (role, text) = readable(tape);
                                let role_row = match role {
                                    None => 0,
                                    Some(role) => match role_rows.get(&role) {
                                        Some(&row) => row,
                                        None => {
                                            let row = match find_role
                                                .query_row([&role], |r| r.get(0))
                                                .optional()?
                                            {
                                                Some(row) => row,
                                                None => {
                                                    add_role.execute([&role])?;
                                                    tx.last_insert_rowid()
                                                }
                                            };
                                            role_rows.insert(role, row);
                                            row
                                        }
                                    },
                                };
                                let line_at = line_end as i64 - 1 - line_len;
                                // The words the index holds for the text, as one string.
                                doc.clear();
                                let mut count = 0i64;
                                if let Some(text) = &text {
                                    added_text.text_bytes += text.len() as i64;
                                    added_text.text_entries += 1;
                                    words(text, |word| {
                                        count += 1;
                                        if !doc.is_empty() {
                                            doc.push(' ');
                                        }
                                        doc.push_str(word);
                                        if !seen.contains(word) {
                                            seen.insert(Box::from(word));
                                            added.push_str(word);
                                            added.push('\n');
                                        }
                                    });
                                    added_text.words += count;
                                }
                                insert_entry.execute(rusqlite::params![
                                    state.id,
                                    facts.id.of(json),
                                    state.entries,
                                    role_row,
                                    row_or_zero(parent),
                                    line_at,
                                    line_len,
                                    text.is_some(),
                                    count
                                ])?;
                                let row = tx.last_insert_rowid();
                                rows.entry(facts.id.of(json).as_bytes().to_vec())
                                    .or_insert(row);
                                state.entries += 1;
                                state.last_row = Some(row);
                                match text {
                                    Some(_) => insert_text.execute(rusqlite::params![row, doc]),
                                    None => Ok(0),
                                }
                            })(),
                        }
                    }
                };
                if let Err(e) = outcome {
                    failure.get_or_insert(Fail::Sql(e));
                }
                Ok(())
            });
            if let Some(fail) = failure.take() {
                return Err(fail);
            }
            fed?;
            piece_start = piece_end;
        }
    }
    state.offset = scanner.committed_bytes() as i64;
    state.lines = scanner.lines() as i64;
    Ok(added_text)
}

/// What one [`read_new`] added to a file's index.
#[derive(Default)]
struct Added {
    /// Bytes of readable text.
    text_bytes: i64,
    /// Entries with readable text.
    text_entries: i64,
    /// Words ([`words`]) of that text.
    words: i64,
}

/// The words of the vocabulary that hold `run`, at most `cap` + 1 of them (more than
/// `cap` means "too many to look up").
fn words_holding(blocks: &[String], run: &str, cap: usize) -> Vec<String> {
    let finder = memchr::memmem::Finder::new(run.as_bytes());
    let mut out = Vec::new();
    for block in blocks {
        let bytes = block.as_bytes();
        let mut from = 0;
        while let Some(found) = finder.find(&bytes[from..]) {
            let hit = from + found;
            let start = memchr::memrchr(b'\n', &bytes[..hit]).map_or(0, |i| i + 1);
            let end = memchr::memchr(b'\n', &bytes[hit..]).map_or(bytes.len(), |i| hit + i);
            out.push(block[start..end].to_owned());
            if out.len() > cap {
                return out;
            }
            from = end;
        }
    }
    // A word may be in several blocks (see [`MAX_BLOCKS`]).
    out.sort_unstable();
    out.dedup();
    out
}

/// What the full-text index is asked for a term: for each of its [`runs`], the words
/// of the vocabulary that hold it (left out when more than [`MAX_WORDS_PER_RUN`]: it
/// would select little); `Err(())` when some run is in no word at all (no entry can
/// hold the term).
fn term_groups(blocks: &[String], term: &str) -> Result<Vec<Vec<String>>, ()> {
    let mut groups: Vec<Vec<String>> = Vec::new();
    for run in runs(term) {
        let held = words_holding(blocks, &run, MAX_WORDS_PER_RUN);
        if held.is_empty() {
            return Err(());
        }
        if held.len() <= MAX_WORDS_PER_RUN && !groups.contains(&held) {
            groups.push(held);
        }
    }
    Ok(groups)
}

/// The FTS5 expression that requires every group: `("w1" OR "w2") AND …`, the most
/// selective [`MAX_RUNS`] of them; `None` for no group. A word holds no `"` (an ASCII
/// separator), so quoting needs no escape.
fn expression(mut groups: Vec<Vec<String>>) -> Option<String> {
    groups.sort_by_key(Vec::len);
    groups.dedup();
    groups.truncate(MAX_RUNS);
    if groups.is_empty() {
        return None;
    }
    let all = groups
        .iter()
        .map(|words| {
            let alternatives: Vec<String> = words.iter().map(|w| format!("\"{w}\"")).collect();
            format!("({})", alternatives.join(" OR "))
        })
        .collect::<Vec<_>>()
        .join(" AND ");
    Some(all)
}

/// BM25 (the constants of FTS5's `bm25`).
const K1: f64 = 1.2;
const B: f64 = 0.75;

/// The inverse document frequency of a term held by `n` of `total` entries, as FTS5's
/// `bm25` computes it (never below a millionth).
fn idf(total: f64, n: f64) -> f64 {
    let idf = ((total - n + 0.5) / (n + 0.5)).ln();
    if idf <= 0.0 { 1e-6 } else { idf }
}

/// The session file a candidate's line is read from, kept open while consecutive
/// candidates are in it.
struct Reader<'a> {
    dir: &'a Path,
    redactor: Option<&'a Redactor>,
    open: Option<(String, File)>,
    parser: EntryParser,
    buf: Vec<u8>,
}

impl Reader<'_> {
    /// The readable text and the timestamp (as written) of the entry whose line is
    /// `len` bytes at `at` in file `name`; `None` when it cannot be read back as the
    /// entry `id` with text (the file changed since the index was brought up to date:
    /// it is left to the next search).
    fn text(&mut self, name: &str, id: &str, at: i64, len: i64) -> Option<(String, String)> {
        if self.open.as_ref().is_none_or(|(open, _)| open != name) {
            let path = self.dir.join(name);
            let file = open_regular_with(
                OpenOptions::new().read(true),
                rustix::fs::OFlags::NOFOLLOW,
                &path,
            )
            .ok()?;
            self.open = Some((name.to_owned(), file));
        }
        let (_, file) = self.open.as_ref()?;
        let len = usize::try_from(len).ok().filter(|&l| l <= MAX_LINE_BYTES)?;
        self.buf.resize(len, 0);
        file.read_exact_at(&mut self.buf, u64::try_from(at).ok()?)
            .ok()?;
        let (_, facts) = self
            .parser
            .parse(&as_searched(&self.buf, self.redactor))
            .ok()?;
        let tape = self.parser.tape();
        if facts.id.of(&tape.text) != id {
            return None;
        }
        let text = readable(tape).1?;
        let timestamp = String::from_utf8_lossy(facts.timestamp.bytes(&tape.text)).into_owned();
        Some((text, timestamp))
    }
}

/// The hits of `query`, best first: the entries the full-text index names for the
/// words that hold the terms' runs, each checked against its text read again from the
/// session file. A query with a term of three characters or more is ranked by BM25
/// over the terms (each term a phrase: its occurrences in the entry's text, the
/// entry's length in words, and the entries that may hold it by the index); a query
/// of shorter words alone keeps the order of the files and their entries, score 0.
fn query_hits(
    conn: &Connection,
    dir: &Path,
    query: &SearchQuery,
    redactor: Option<&Redactor>,
) -> Result<Vec<Hit>, Fail> {
    let terms = terms(&query.query);
    let (long, short): (Vec<&str>, Vec<&str>) = terms.iter().partition(|t| t.chars().count() >= 3);
    let blocks: Vec<String> = {
        let mut stmt = conn.prepare("SELECT words FROM vocabulary")?;
        let rows = stmt.query_map([], |r| r.get::<_, String>(0))?;
        rows.collect::<Result<_, _>>()?
    };
    let mut per_term: Vec<Vec<Vec<String>>> = Vec::new();
    for term in &terms {
        match term_groups(&blocks, term) {
            Ok(groups) => per_term.push(groups),
            Err(()) => return Ok(Vec::new()),
        }
    }
    let all = expression(per_term.iter().flatten().cloned().collect());
    let mut params: Vec<Value> = Vec::new();
    let mut filters: Vec<String> = Vec::new();
    let from = match &all {
        Some(all) => {
            params.push(Value::Text(all.clone()));
            filters.push(format!("texts MATCH ?{}", params.len()));
            "texts JOIN entries e ON e.id = texts.rowid"
        }
        None => {
            filters.push("e.has_text = 1".into());
            "entries e"
        }
    };
    if let Some(roles) = &query.roles {
        let mut marks = Vec::new();
        for role in roles {
            params.push(Value::Text(role.clone()));
            marks.push(format!("?{}", params.len()));
        }
        filters.push(format!(
            "e.role IN (SELECT id FROM roles WHERE name IN ({}))",
            marks.join(", ")
        ));
    }
    if query.latest_path_only {
        filters.push("e.on_latest = 1".into());
    }
    let ranked = !long.is_empty();
    // Ranked, every candidate is read and the hits are sorted here, so the rows come
    // in the index's order (the entries' rows ascending: each page read once).
    let order = match ranked {
        true => "",
        false => "ORDER BY f.name, e.seq",
    };
    let sql = format!(
        "SELECT f.name, e.entry_id, e.seq, (SELECT name FROM roles WHERE id = e.role), NULL,
                e.on_latest, e.line_at,
                e.line_len, e.words
         FROM {from} JOIN files f ON f.id = e.file
         WHERE {} {order}",
        filters.join(" AND ")
    );
    let needles = fold_terms(&long);
    // BM25's figures: entries with text, their mean length in words, and per long
    // term the entries the index names for it.
    let (total, mean_words) = conn.query_row(
        "SELECT coalesce(sum(text_entries), 0), coalesce(sum(words), 0) FROM files",
        [],
        |r| Ok((r.get::<_, i64>(0)? as f64, r.get::<_, i64>(1)? as f64)),
    )?;
    let mean_words = if total > 0.0 { mean_words / total } else { 1.0 };
    let mut weights = Vec::new();
    if ranked {
        for (term, groups) in terms.iter().zip(&per_term) {
            if term.chars().count() < 3 {
                continue;
            }
            let n = match expression(groups.clone()) {
                Some(e) => conn.query_row(
                    "SELECT count(*) FROM texts WHERE texts MATCH ?1",
                    [e],
                    |r| r.get::<_, i64>(0),
                )? as f64,
                None => total,
            };
            weights.push(idf(total, n));
        }
    }
    let mut reader = Reader {
        dir,
        redactor,
        open: None,
        parser: EntryParser::default(),
        buf: Vec::new(),
    };
    let mut stmt = conn.prepare(&sql)?;
    let mut rows = stmt.query(rusqlite::params_from_iter(params))?;
    let limit = query.limit as usize;
    // With where its line is, for the snippet.
    let mut hits: Vec<(Hit, i64, i64)> = Vec::new();
    loop {
        // Unranked, the first `limit` hits in order are the answer; ranked, every
        // candidate is scored.
        if !ranked && hits.len() == limit {
            break;
        }
        let Some(r) = rows.next()? else { break };
        let name: String = r.get(0)?;
        let id: String = r.get(1)?;
        let Some((text, _)) = reader.text(&name, &id, r.get(6)?, r.get(7)?) else {
            continue;
        };
        // Folded once, for the check and the counts.
        let haystack = folded(&text);
        if !contains_all(&haystack, &needles) || !contains_all_ascii(&text, &short) {
            continue;
        }
        let score = match ranked {
            true => {
                let norm = K1 * (1.0 - B + B * r.get::<_, i64>(8)? as f64 / mean_words);
                needles
                    .iter()
                    .zip(&weights)
                    .map(|(needle, weight)| {
                        let tf = haystack.matches(needle.as_str()).count() as f64;
                        weight * tf * (K1 + 1.0) / (tf + norm)
                    })
                    .sum()
            }
            false => 0.0,
        };
        let hit = Hit {
            path: name,
            entry_id: id,
            seq: r.get::<_, i64>(2)?.max(0) as u64,
            role: r.get::<_, Option<String>>(3)?.unwrap_or_default(),
            timestamp: String::new(),
            snippet: String::new(),
            score,
            on_latest_path: r.get::<_, i64>(5)? != 0,
        };
        hits.push((hit, r.get(6)?, r.get(7)?));
    }
    if ranked {
        // Best first; equal scores in the order of the files and their entries.
        hits.sort_by(|a, b| {
            (b.0.score.total_cmp(&a.0.score))
                .then_with(|| a.0.path.cmp(&b.0.path))
                .then(a.0.seq.cmp(&b.0.seq))
        });
        hits.truncate(limit);
    }
    let mut out = Vec::with_capacity(hits.len());
    for (mut hit, at, len) in hits {
        // Read a second time (ranked, only the hits kept are): a line that no longer
        // reads back is left out, as above.
        if let Some((text, timestamp)) = reader.text(&hit.path, &hit.entry_id, at, len) {
            hit.snippet = snippet(&text, &terms);
            hit.timestamp = timestamp;
            out.push(hit);
        }
    }
    Ok(out)
}
