//! Bringing the index up to date: each file's new committed lines read, parsed and
//! put in the tables.

use std::fs::{File, Metadata, OpenOptions};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::Path;

use rusqlite::{Connection, OptionalExtension, Statement, TransactionBehavior};

use super::super::text::{readable, words};
use super::super::{SearchError, SearchResult};
use super::vocabulary::Vocabulary;
use super::{Fail, Found, MAX_FILE_ROW, as_searched, entry_key, io_error};
use crate::entry::EntryParser;
use crate::error::{Error, IoOp};
use crate::recover::{LineScanner, MAX_LINE_BYTES};
use crate::secrets::Redactor;
use crate::store::open_regular_with;

/// What the index knows of a file, by name (see [`update`]).
const LOOKUP: &str = "SELECT id, dev, ino, size, mtime_ns, ctime_ns, head_hash, head_len,
                             tail_hash, offset, lines, entries, last_row
                      FROM files WHERE name = ?1";

/// The first and the last indexed block of a file, whose hashes tell a replaced or
/// rewritten file from a grown one.
const BLOCK: u64 = 4096;
/// Files are read in pieces of this size.
const CHUNK: usize = 1 << 20;

/// The folder as one search saw it: a hash of every session file's name, identity,
/// size and modification time (what [`update`] compares before it reads a file).
pub(super) fn fingerprint(found: &[Found]) -> i64 {
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
pub(super) fn update_all(
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

/// Removes every row of the file `name`.
pub(super) fn forget(tx: &Connection, name: &str) -> Result<(), Fail> {
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
pub(super) fn clear(tx: &Connection, id: i64) -> Result<(), Fail> {
    tx.execute(
        "DELETE FROM texts WHERE rowid IN (SELECT id FROM entries WHERE file = ?1)",
        [id],
    )?;
    tx.execute("DELETE FROM entries WHERE file = ?1", [id])?;
    tx.execute("DELETE FROM errors WHERE file = ?1", [id])?;
    Ok(())
}

/// What the index knows of a file.
pub(super) struct Known {
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

pub(super) fn mtime_ns(meta: &Metadata) -> i64 {
    meta.mtime()
        .saturating_mul(1_000_000_000)
        .saturating_add(meta.mtime_nsec())
}

/// The change time (ctime): moved by every write, `chmod` and `chown`, and no program
/// can set it back (unlike the modification time).
pub(super) fn ctime_ns(meta: &Metadata) -> i64 {
    meta.ctime()
        .saturating_mul(1_000_000_000)
        .saturating_add(meta.ctime_nsec())
}

/// The hash of `len` bytes (at most [`BLOCK`]) of `file` from `start`, and the length.
pub(super) fn hash_block(
    file: &File,
    start: u64,
    len: u64,
    path: &Path,
) -> Result<(i64, i64), Error> {
    let len = len.min(BLOCK) as usize;
    let mut buf = vec![0u8; len];
    file.read_exact_at(&mut buf, start)
        .map_err(|e| io_error(IoOp::Read, path, &e))?;
    Ok((xxhash_rust::xxh64::xxh64(&buf, 0) as i64, len as i64))
}

/// The hash of the last indexed block: the [`BLOCK`] bytes (or fewer) before `offset`.
pub(super) fn hash_tail(file: &File, offset: u64, path: &Path) -> Result<i64, Error> {
    let len = offset.min(BLOCK);
    Ok(hash_block(file, offset - len, len, path)?.0)
}

/// Brings the index of one file up to date. An error of the file
/// itself is [`Fail::Core`] (the file is then left out of the index and reported).
pub(super) fn update(
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
                "INSERT INTO files(id, name, dev, ino, size, mtime_ns, ctime_ns, head_hash,
                                   head_len, tail_hash, offset, lines, entries, last_row)
                 VALUES(?2, ?1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, NULL)
                 ON CONFLICT(name) DO UPDATE SET offset = 0, lines = 0, entries = 0,
                                                 last_row = NULL, head_len = 0,
                                                 text_bytes = 0, text_entries = 0,
                                                 words = 0",
                rusqlite::params![&found.name, free_file_row(tx, &path)?],
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
pub(super) fn row_or_zero(row: Option<i64>) -> i64 {
    row.unwrap_or(0)
}

/// Sets `on_latest` to `value` on the path from the root to entry row `leaf`. Parent
/// rows are always earlier rows, so the walk ends.
pub(super) fn mark_latest(tx: &Connection, leaf: Option<i64>, value: i64) -> Result<(), Fail> {
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
pub(super) fn read_new(
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
        "INSERT INTO entries(id, file, entry_id, seq, role, parent, has_text)
         VALUES(?1, ?2, ?3, ?4, NULLIF(?5, 0), NULLIF(?6, 0), ?7)",
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
                        let line_at = line_end - 1 - text.len() as u64;
                        let Some(key) = entry_key(state.id, line_at) else {
                            return Err(too_far(path));
                        };
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
                                    key,
                                    state.id,
                                    facts.id.of(json),
                                    state.entries,
                                    role_row,
                                    row_or_zero(parent),
                                    text.is_some(),
                                ])?;
                                let row = key;
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

/// A file row free for a new file: the one after the highest, or else the lowest free
/// one; rows stay below [`MAX_FILE_ROW`] (an entry's row holds its file's).
fn free_file_row(tx: &Connection, path: &Path) -> Result<i64, Fail> {
    let next: i64 = tx.query_row("SELECT coalesce(max(id), 0) + 1 FROM files", [], |r| {
        r.get(0)
    })?;
    if next < MAX_FILE_ROW {
        return Ok(next);
    }
    let free: i64 = tx.query_row(
        "SELECT coalesce(min(id), 0) FROM (
           SELECT 1 AS id WHERE NOT EXISTS (SELECT 1 FROM files WHERE id = 1)
           UNION ALL SELECT f.id + 1 FROM files f
                     WHERE NOT EXISTS (SELECT 1 FROM files g WHERE g.id = f.id + 1))",
        [],
        |r| r.get(0),
    )?;
    if (1..MAX_FILE_ROW).contains(&free) {
        return Ok(free);
    }
    let e = std::io::Error::other("the search index holds at most 8,388,607 files a folder");
    Err(Fail::Core(io_error(IoOp::Read, path, &e)))
}

/// A line past the offsets an entry's row can hold ([`entry_key`]: 1 TiB).
fn too_far(path: &Path) -> Error {
    let e = std::io::Error::new(
        std::io::ErrorKind::FileTooLarge,
        "the search index holds lines of a session file up to 1 TiB",
    );
    io_error(IoOp::Read, path, &e)
}

/// What one [`read_new`] added to a file's index.
#[derive(Default)]
pub(super) struct Added {
    /// Bytes of readable text.
    text_bytes: i64,
    /// Entries with readable text.
    text_entries: i64,
    /// Words ([`words`]) of that text.
    words: i64,
}
