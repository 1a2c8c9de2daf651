//! Bringing the index up to date: each file's new committed lines read and cut into
//! what the index holds ([`cut`](super::cut)), on a second thread when there is a
//! second core, and put in the tables on this one.

use std::collections::{HashMap, VecDeque};
use std::fs::{Metadata, OpenOptions};
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::mpsc::{TrySendError, sync_channel};

use rusqlite::{Connection, OptionalExtension, Statement, TransactionBehavior};

use super::super::{SearchError, SearchResult};
use super::cut::{Cut, End, Item, Message, Parent, Plan, cut_file};
use super::fingerprint::{hash_block, hash_tail};
use super::lines::{self, LineWriter};
use super::vocabulary::Vocabulary;
use super::{Fail, Found, MAX_FILE_ROW, entry_key, file_keys, io_error, key_parts};
use crate::error::{Error, IoOp};
use crate::secrets::Redactor;
use crate::store::open_regular_with;

/// What the index knows of a file, by name (see [`decide`]).
const LOOKUP: &str = "SELECT id, dev, ino, size, mtime_ns, ctime_ns, head_hash, head_len,
                             tail_hash, offset, lines, entries, last_row
                      FROM files WHERE name = ?1";

/// How an update shares its work between threads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Threads {
    /// Each file read and cut, then inserted, in turn on this thread.
    One,
    /// Files read and cut on a second thread while this one inserts (the same rows in
    /// the same order: one reader, one writer, handing over in order).
    Two,
}

impl Threads {
    /// Two when the machine has a second core.
    pub(super) fn available() -> Threads {
        match std::thread::available_parallelism() {
            Ok(n) if n.get() > 1 => Threads::Two,
            _ => Threads::One,
        }
    }
}

/// Files the reading thread may hold open ahead of the inserts.
const PLANS_AHEAD: usize = 8;
/// Batches of cut entries ([`BATCH`](super::cut::BATCH) each) the reading thread may
/// be ahead of the inserts by.
const BATCHES_AHEAD: usize = 16;

/// The folder as one search saw it: a hash of every session file's name, identity,
/// size and modification time (what [`decide`] compares before it reads a file).
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
// The update's inputs: the folder and its files, the fingerprint, the redactor every
// line passes first, how the work is shared, and what it reports.
#[allow(clippy::too_many_arguments)]
pub(super) fn update_all(
    conn: &mut Connection,
    dir: &Path,
    found: &[Found],
    print: i64,
    redactor: Option<&Redactor>,
    threads: Threads,
    result: &mut SearchResult,
    file_errors: &mut Vec<SearchError>,
) -> Result<(), Fail> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let mut report = Report::default();
    // Files that could not be opened or checked (the reading's are in `report`).
    let mut unread: Vec<(usize, SearchError)> = Vec::new();
    {
        let mut inserts = Inserts::new(&tx)?;
        // Prepared once: a search looks up every file of the folder, most of them
        // unchanged.
        let mut lookup = tx.prepare(LOOKUP)?;
        let plans = found.iter().enumerate().filter_map(|(index, file)| {
            match decide(&tx, &mut lookup, dir, file) {
                Ok(None) => None,
                Ok(Some((plan, pending))) => Some(Ok((plan, Pending { index, ..pending }))),
                Err(Fail::Core(e)) => match forget(&tx, &file.name) {
                    Ok(()) => {
                        unread.push(failure(index, &file.name, &e));
                        None
                    }
                    Err(e) => Some(Err(e)),
                },
                Err(e) => Some(Err(e)),
            }
        });
        match threads {
            Threads::One => in_turn(&tx, plans, redactor, &mut inserts, &mut report)?,
            Threads::Two => beside(&tx, plans, dir, redactor, &mut inserts, &mut report)?,
        }
        if let Some(pending) = inserts.pending.front() {
            // Only a reader that died leaves a file unfinished.
            let e = std::io::Error::other("the search index's reading stopped");
            return Err(Fail::Core(io_error(
                IoOp::Read,
                &dir.join(&pending.name),
                &e,
            )));
        }
        inserts.vocabulary.save(&tx)?;
    }
    result.bytes_read += report.bytes_read;
    unread.append(&mut report.errors);
    unread.sort_by_key(|(index, _)| *index);
    file_errors.extend(unread.into_iter().map(|(_, e)| e));
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

/// Each file of `plans` read and cut, then inserted, in turn on this thread.
fn in_turn(
    tx: &Connection,
    plans: impl Iterator<Item = Result<(Plan, Pending), Fail>>,
    redactor: Option<&Redactor>,
    inserts: &mut Inserts,
    report: &mut Report,
) -> Result<(), Fail> {
    for plan in plans {
        let (plan, pending) = plan?;
        inserts.vocabulary.load(tx)?;
        inserts.pending.push_back(pending);
        let mut failure = None;
        cut_file(
            plan,
            redactor,
            &mut |message| match inserts.apply(tx, message, report) {
                Ok(()) => true,
                Err(e) => {
                    failure = Some(e);
                    false
                }
            },
        );
        if let Some(e) = failure {
            return Err(e);
        }
    }
    Ok(())
}

/// The files of `plans` read and cut on a second thread (started with the first
/// file to read) while this one inserts what it hands over, in order.
fn beside(
    tx: &Connection,
    plans: impl Iterator<Item = Result<(Plan, Pending), Fail>>,
    dir: &Path,
    redactor: Option<&Redactor>,
    inserts: &mut Inserts,
    report: &mut Report,
) -> Result<(), Fail> {
    std::thread::scope(|scope| {
        let mut pipe = None;
        for plan in plans {
            let (mut plan, pending) = plan?;
            inserts.pending.push_back(pending);
            if pipe.is_none() {
                inserts.vocabulary.load(tx)?;
                let (plans_to, plans_from) = sync_channel::<Plan>(PLANS_AHEAD);
                let (to, messages) = sync_channel::<Message>(BATCHES_AHEAD);
                let reader = std::thread::Builder::new()
                    .name("search-reader".into())
                    .spawn_scoped(scope, move || {
                        for plan in plans_from {
                            if !cut_file(plan, redactor, &mut |message| to.send(message).is_ok()) {
                                break;
                            }
                        }
                    })
                    .map_err(|e| Fail::Core(io_error(IoOp::Read, dir, &e)))?;
                pipe = Some((plans_to, messages, reader));
            }
            let Some((plans_to, messages, _)) = &mut pipe else {
                continue;
            };
            // Handed over when the reader has room, else what it has cut is inserted
            // meanwhile: neither thread ever waits on the other both ways.
            loop {
                match plans_to.try_send(plan) {
                    Ok(()) => break,
                    Err(TrySendError::Full(back)) => {
                        plan = back;
                        match messages.recv() {
                            Ok(message) => inserts.apply(tx, message, report)?,
                            Err(_) => break,
                        }
                    }
                    Err(TrySendError::Disconnected(_)) => break,
                }
            }
        }
        if let Some((plans_to, messages, reader)) = pipe {
            drop(plans_to);
            for message in messages.iter() {
                inserts.apply(tx, message, report)?;
            }
            // The reader's panic is this thread's, as it would be with one thread.
            if let Err(panic) = reader.join() {
                std::panic::resume_unwind(panic);
            }
        }
        Ok(())
    })
}

/// What an update reports: the bytes it read and the files it could not read (with
/// their place in the folder's order, so that the report does not depend on which
/// thread met the trouble first).
#[derive(Default)]
struct Report {
    bytes_read: u64,
    errors: Vec<(usize, SearchError)>,
}

/// The report of a file that could not be read, at its place in the folder's order.
fn failure(index: usize, name: &str, e: &Error) -> (usize, SearchError) {
    let error = SearchError {
        path: name.to_owned(),
        line: None,
        reason: "io".into(),
        message: e.to_string(),
    };
    (index, error)
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

/// Removes the entries, texts, line offsets and errors of file row `id`.
pub(super) fn clear(tx: &Connection, id: i64) -> Result<(), Fail> {
    let (first, last) = file_keys(id);
    tx.execute(
        "DELETE FROM texts WHERE rowid IN (
           SELECT id FROM entries WHERE id BETWEEN ?1 AND ?2 AND has_text = 1)",
        [first, last],
    )?;
    tx.execute(
        "DELETE FROM entries WHERE id BETWEEN ?1 AND ?2",
        [first, last],
    )?;
    tx.execute("DELETE FROM errors WHERE file = ?1", [id])?;
    lines::clear(tx, id)
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

/// A file being brought up to date: what the index knew of it and what the inserts
/// added so far.
struct Pending {
    /// Its place in the folder's order.
    index: usize,
    name: String,
    state: Known,
    /// Its identity, size and times when it was opened to be read.
    seen: [i64; 5],
    /// The latest leaf's row before this update.
    old_last: Option<i64>,
    lines: LineWriter,
    added: Added,
    /// The parents looked up in the table so far, and once there was more than one,
    /// the first row of each id among the file's entries ([`Inserts::parent`]).
    finds: u32,
    ids: Option<HashMap<String, i64>>,
}

/// Decides what of one file must be read: `None` when it is unchanged, else the plan
/// (what the reading reads) and the file's pending state (what the inserts fill in).
/// A file read again from its start has its rows removed first. An error of the
/// file itself is [`Fail::Core`] (the file is then left out of the index and reported).
fn decide(
    tx: &Connection,
    lookup: &mut Statement,
    dir: &Path,
    found: &Found,
) -> Result<Option<(Plan, Pending)>, Fail> {
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
        return Ok(None);
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
    let state = match resume {
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
    let first = entry_key(state.id, state.entries.max(0) as u64).unwrap_or(i64::MAX);
    let lines = LineWriter::starting_at(tx, first)?;
    let plan = Plan {
        file,
        path,
        id: state.id,
        offset: state.offset.max(0) as u64,
        lines: state.lines.max(0) as u64,
        entries: state.entries.max(0) as u64,
        size: size as u64,
    };
    let pending = Pending {
        index: 0,
        name: found.name.clone(),
        old_last: state.last_row,
        state,
        seen: [dev, ino, size, mtime_ns(&meta), ctime_ns(&meta)],
        lines,
        added: Added::default(),
        finds: 0,
        ids: None,
    };
    Ok(Some((plan, pending)))
}

/// The inserts of an update: its prepared statements, the files handed to the
/// reading and not yet finished (in order), and the roles' rows met.
struct Inserts<'t> {
    find_parent: Statement<'t>,
    ids_of_file: Statement<'t>,
    insert_entry: Statement<'t>,
    insert_text: Statement<'t>,
    insert_error: Statement<'t>,
    find_role: Statement<'t>,
    add_role: Statement<'t>,
    write_lines: Statement<'t>,
    roles: HashMap<String, i64>,
    /// The words met ([`Vocabulary::meet`]): decided here, in the order of the
    /// entries, whichever thread cut them.
    vocabulary: Vocabulary,
    pending: VecDeque<Pending>,
}

impl<'t> Inserts<'t> {
    fn new(tx: &'t Connection) -> Result<Inserts<'t>, Fail> {
        Ok(Inserts {
            // The first entry of that id in the file (as the rows of one update are),
            // its rows read in order until it is met.
            find_parent: tx.prepare(
                "SELECT id FROM entries WHERE id BETWEEN ?2 AND ?3 AND entry_id = ?1
                 ORDER BY id LIMIT 1",
            )?,
            ids_of_file: tx.prepare(
                "SELECT entry_id, id FROM entries WHERE id BETWEEN ?1 AND ?2 ORDER BY id",
            )?,
            insert_entry: tx.prepare(
                "INSERT INTO entries(id, entry_id, role, parent, has_text)
                 VALUES(?1, ?2, NULLIF(?3, 0), NULLIF(?4, -1), ?5)",
            )?,
            insert_text: tx.prepare("INSERT INTO texts(rowid, words) VALUES(?1, ?2)")?,
            insert_error: tx.prepare(
                "INSERT INTO errors(file, line, reason, message) VALUES(?1, ?2, ?3, ?4)",
            )?,
            find_role: tx.prepare("SELECT id FROM roles WHERE name = ?1")?,
            add_role: tx.prepare("INSERT INTO roles(name) VALUES(?1)")?,
            write_lines: tx.prepare(lines::WRITE)?,
            roles: HashMap::new(),
            vocabulary: Vocabulary::default(),
            pending: VecDeque::new(),
        })
    }

    /// Puts in the tables what the reading handed over, for the first pending file.
    fn apply(
        &mut self,
        tx: &Connection,
        message: Message,
        report: &mut Report,
    ) -> Result<(), Fail> {
        match message {
            Message::Items(items) => {
                let Some(mut pending) = self.pending.pop_front() else {
                    return Ok(());
                };
                let done = items
                    .into_iter()
                    .try_for_each(|item| self.item(tx, &mut pending, item));
                self.pending.push_front(pending);
                done
            }
            Message::Done { bytes, end } => {
                report.bytes_read += bytes;
                let Some(pending) = self.pending.pop_front() else {
                    return Ok(());
                };
                match end {
                    Ok(end) => self.finish(tx, pending, end),
                    Err(e) => {
                        forget(tx, &pending.name)?;
                        report
                            .errors
                            .push(failure(pending.index, &pending.name, &e));
                        Ok(())
                    }
                }
            }
        }
    }

    /// The row of the first entry of id `id` among the entries of `pending`'s file
    /// indexed by earlier updates (the reading resolves those of this one). No index
    /// of the ids is kept (it was a fifth of the sidecar, and its inserts a tenth of
    /// the build): the first such parent of an update is found by reading the file's
    /// rows in order, and from the second on the file's ids are read once into a map.
    /// Most updates of a grown file look up one parent (the first new entry's).
    fn parent(&mut self, pending: &mut Pending, id: &str) -> Result<Option<i64>, Fail> {
        let (first, last) = file_keys(pending.state.id);
        pending.finds += 1;
        if pending.finds == 1 {
            let row = self
                .find_parent
                .query_row(rusqlite::params![id, first, last], |r| r.get::<_, i64>(0))
                .optional()?;
            return Ok(row);
        }
        if pending.ids.is_none() {
            let mut ids = HashMap::new();
            let mut rows = self.ids_of_file.query([first, last])?;
            while let Some(row) = rows.next()? {
                ids.entry(row.get::<_, String>(0)?)
                    .or_insert(row.get::<_, i64>(1)?);
            }
            pending.ids = Some(ids);
        }
        Ok(pending.ids.as_ref().and_then(|ids| ids.get(id).copied()))
    }

    fn item(&mut self, tx: &Connection, pending: &mut Pending, item: Item) -> Result<(), Fail> {
        let cut: Cut = match item {
            Item::Corrupt {
                line,
                reason,
                message,
            } => {
                self.insert_error.execute(rusqlite::params![
                    pending.state.id,
                    line as i64,
                    reason,
                    message
                ])?;
                return Ok(());
            }
            Item::Entry(cut) => cut,
        };
        let parent = match cut.parent {
            Parent::None => None,
            Parent::Row(row) => Some(row),
            Parent::Find(id) => self.parent(pending, &id)?,
        };
        let role_row = match cut.role {
            None => 0,
            Some(role) => match self.roles.get(&role) {
                Some(&row) => row,
                None => {
                    let row = match self.find_role.query_row([&role], |r| r.get(0)).optional()? {
                        Some(row) => row,
                        None => {
                            self.add_role.execute([&role])?;
                            tx.last_insert_rowid()
                        }
                    };
                    self.roles.insert(role, row);
                    row
                }
            },
        };
        // The parent is in the same file: its sequence number says which.
        let parent_seq = parent.map_or(-1, |row| key_parts(row).1 as i64);
        self.insert_entry.execute(rusqlite::params![
            cut.key,
            cut.id,
            role_row,
            parent_seq,
            cut.words.is_some(),
        ])?;
        pending.lines.push(&mut self.write_lines, cut.at)?;
        let state = &mut pending.state;
        if let Some((doc, count, bytes)) = cut.words {
            pending.added.text_bytes += bytes;
            pending.added.text_entries += 1;
            pending.added.words += count;
            self.insert_text.execute(rusqlite::params![cut.key, doc])?;
            self.vocabulary.meet(&doc);
        }
        state.entries += 1;
        state.last_row = Some(cut.key);
        Ok(())
    }

    /// Records where the file's index now stops, and its latest path.
    fn finish(&mut self, tx: &Connection, mut pending: Pending, end: End) -> Result<(), Fail> {
        pending.lines.flush(&mut self.write_lines)?;
        let state = &pending.state;
        if state.last_row != pending.old_last {
            move_latest(tx, pending.old_last, state.last_row)?;
        }
        let [dev, ino, size, mtime, ctime] = pending.seen;
        let added = &pending.added;
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
                mtime,
                ctime,
                end.head_hash,
                end.head_len,
                end.tail_hash,
                end.offset as i64,
                end.lines as i64,
                state.entries,
                row_or_zero(state.last_row),
                added.text_bytes,
                added.text_entries,
                added.words
            ],
        )?;
        Ok(())
    }
}

/// A row id to bind where SQL NULL is meant by 0 (`NULLIF(?, 0)`; row ids start at 1).
/// NULL is never bound (a missing role is bound as '' under `NULLIF(?, '')` too):
/// valgrind reports rusqlite's drop of a bound NULL (`ToSqlOutput`) as a jump on an
/// uninitialised value, which fails the C tests run under it.
pub(super) fn row_or_zero(row: Option<i64>) -> i64 {
    row.unwrap_or(0)
}

/// Sets `on_latest` to `value` on the path from entry row `leaf` up to the root, or up
/// to entry row `stop` (not included; 0 for none: row ids start at 1). An entry's
/// parent is an earlier entry of its file (its sequence number is kept), so the walk
/// ends.
pub(super) fn mark_latest(
    tx: &Connection,
    leaf: Option<i64>,
    stop: i64,
    value: i64,
) -> Result<(), Fail> {
    let Some(leaf) = leaf else { return Ok(()) };
    let (base, _) = file_keys(key_parts(leaf).0);
    tx.execute(
        "WITH RECURSIVE path(id) AS (
           SELECT ?1 WHERE ?1 != ?4
           UNION SELECT ?3 + e.parent FROM entries e JOIN path ON e.id = path.id
                 WHERE e.parent IS NOT NULL AND ?3 + e.parent < e.id
                   AND ?3 + e.parent != ?4)
         UPDATE entries SET on_latest = ?2 WHERE id IN (SELECT id FROM path)",
        [leaf, value, base, stop],
    )?;
    Ok(())
}

/// Moves a file's latest path from the leaf `old` (its path marked) to the leaf `new`,
/// touching only the entries on one path and not the other: the walk up from `new`
/// stops at the first entry already marked (where the two paths meet), and the old
/// path is unmarked from `old` up to that entry. An append that continues the latest
/// leaf marks one entry, where unmarking and marking both whole paths cost the
/// session's depth on every search after it.
fn move_latest(tx: &Connection, old: Option<i64>, new: Option<i64>) -> Result<(), Fail> {
    let (Some(old), Some(new)) = (old, new) else {
        // Nothing was marked (a new file), or nothing is to be: whole paths.
        mark_latest(tx, old, 0, 0)?;
        return mark_latest(tx, new, 0, 1);
    };
    let (base, _) = file_keys(key_parts(new).0);
    let mut step = tx.prepare("SELECT on_latest, parent FROM entries WHERE id = ?1")?;
    // The first entry of the new path, from its leaf up, that the old path holds.
    let mut meet = 0;
    let mut at = new;
    while let Some((marked, parent)) = step
        .query_row([at], |r| {
            Ok((r.get::<_, i64>(0)? != 0, r.get::<_, Option<i64>>(1)?))
        })
        .optional()?
    {
        if marked {
            meet = at;
            break;
        }
        match parent.map(|p| base + p) {
            Some(up) if up < at => at = up,
            _ => break,
        }
    }
    mark_latest(tx, Some(old), meet, 0)?;
    mark_latest(tx, Some(new), meet, 1)
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

/// What one file's update added to its index.
#[derive(Default)]
struct Added {
    /// Bytes of readable text.
    text_bytes: i64,
    /// Entries with readable text.
    text_entries: i64,
    /// Words ([`words`](super::super::text::words)) of that text.
    words: i64,
}
