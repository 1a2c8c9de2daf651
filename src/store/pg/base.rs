//! The session index of a PostgreSQL session: what lets an open read no entry rows.
//!
//! A session's rows, in seq order, each line followed by `\n`, are exactly the lines a
//! JSONL store would have written; each row keeps `off`, where its line starts in that
//! byte sequence. [`Lines`] reads any byte range of it with one indexed query, and
//! [`Image`] reads any byte range of a session index stored in `libsession_index` (the
//! JSONL store's `.idx` format, uncompressed, so a range is read without the rest).
//! With the two, the JSONL store's own [`Base`] answers over the database: the same
//! checks of every page and every line read, the same id table, tree links and
//! queries. An open reads the index's header and page checksums, its last record, its
//! roots and labels and the rows of its sampled regions and last line in one query
//! ([`OPEN_INDEX`]), then the rows committed after what the index covers; a query
//! reads the pages of what it returns in windows of [`WINDOW`] bytes (one statement
//! serves the pages that lie close together) and its lines, one statement each,
//! nothing prepared.
//!
//! The index is a cache the handles write themselves ([`write_index`]): once the rows
//! after the newest index reach [`super::INDEX_EVERY`], the handle holding them all
//! writes an index that covers them, as a new row (the older ones stay for readers
//! that opened through them; all but the two newest are then deleted). Anything wrong
//! with it (missing, unreadable for this role, not matching the rows) means the rows
//! are read as before, never a different answer.

use std::io;
use std::path::PathBuf;

use postgres::types::Type;

use crate::store::index::format::{BLOCK, PAGE, PER_PAGE, SAMPLE_LEN, SAMPLES, Source};
use crate::store::index::{Base, Stamp, encode};
use crate::store::log::Log;

use super::PgSink;
use super::connection::{Shared, lock};

/// Bytes read ahead, by where they start: what the open fetched in its one query.
type Ahead<T> = Vec<(u64, T)>;

/// Copies into `buf` the bytes from `at` on that `chunks` (sorted by start, each
/// `(start, bytes)`; `newline` adds a `\n` after each chunk, as a line's row) hold
/// without a gap; 0 when none holds `at`.
fn fill_from<T: AsRef<[u8]>>(chunks: &[(u64, T)], newline: bool, buf: &mut [u8], at: u64) -> usize {
    let first = chunks.partition_point(|(start, _)| *start <= at);
    let mut filled = 0usize;
    for (start, bytes) in chunks.iter().skip(first.saturating_sub(1)) {
        let bytes = bytes.as_ref();
        let want = at + filled as u64;
        let end = start + bytes.len() as u64 + u64::from(newline);
        if *start > want || end <= want {
            break;
        }
        for p in want..end.min(at + buf.len() as u64) {
            buf[(p - at) as usize] = bytes.get((p - start) as usize).copied().unwrap_or(b'\n');
            filled += 1;
        }
        if filled == buf.len() {
            break;
        }
    }
    filled
}

/// The session's rows as one JSONL byte sequence.
struct Lines {
    client: Shared,
    session_id: String,
    /// Rows the open read ahead (the sampled regions and the last covered line), by
    /// their `off`.
    ahead: Ahead<String>,
}

impl Source for Lines {
    fn read_at(&self, buf: &mut [u8], at: u64) -> io::Result<usize> {
        let filled = fill_from(&self.ahead, true, buf, at);
        if filled > 0 {
            return Ok(filled);
        }
        let (Ok(from), Ok(to)) = (
            i64::try_from(at),
            i64::try_from(at.saturating_add(buf.len() as u64)),
        ) else {
            return Ok(0);
        };
        let rows = lock(&self.client)
            .query_typed(
                "SELECT off, line FROM libsession_entries WHERE session_id = $1 \
                 AND off >= (SELECT coalesce(max(off), 0) FROM libsession_entries \
                             WHERE session_id = $1 AND off <= $2) \
                 AND off < $3 ORDER BY off",
                &[
                    (&self.session_id, Type::TEXT),
                    (&from, Type::INT8),
                    (&to, Type::INT8),
                ],
            )
            .map_err(io::Error::other)?;
        let mut chunks = Vec::with_capacity(rows.len());
        for row in &rows {
            let off: i64 = row.try_get(0).map_err(io::Error::other)?;
            let line: &str = row.try_get(1).map_err(io::Error::other)?;
            chunks.push((u64::try_from(off).unwrap_or(u64::MAX), line));
        }
        // Rows must follow each other without a gap from `at` on.
        Ok(fill_from(&chunks, true, buf, at))
    }

    /// Each read is a round trip: a walk takes its lines a block at a time, as it did
    /// before a file's reads took only their own lines.
    fn least_lines(&self) -> u32 {
        BLOCK as u32
    }
}

/// The bytes of a stored index read in one round trip when a read finds them in no
/// window read before: the pages a query needs lie close together (the records of a
/// path's entries, their id-table pages), so one window serves several.
const WINDOW: u64 = 32 * 1024;

/// The windows an [`Image`] keeps (the oldest is dropped): at most this × [`WINDOW`]
/// bytes per open store, on top of the index's own page cache.
const WINDOWS: usize = 4;

/// One stored session index, by the number of entries it covers.
struct Image {
    client: Shared,
    session_id: String,
    entries: i64,
    /// Byte ranges the open read ahead: the header's page, the last record's page, and
    /// the tail (roots, labels and the page checksums).
    ahead: Ahead<Vec<u8>>,
    /// Windows read since ([`WINDOW`]), by where they start, the newest last.
    windows: std::cell::RefCell<Ahead<Vec<u8>>>,
}

impl Image {
    /// Copies the bytes at `at` from a window that holds all of `buf` (or reaches the
    /// image's end); `None` when none does.
    fn read_windows(&self, buf: &mut [u8], at: u64) -> Option<usize> {
        let windows = self.windows.borrow();
        let (start, bytes) = windows.iter().rev().find(|(start, bytes)| {
            let end = start + bytes.len() as u64;
            *start <= at && (at + buf.len() as u64 <= end || (bytes.len() as u64) < WINDOW)
        })?;
        let from = usize::try_from(at - start).ok()?;
        let n = bytes.len().saturating_sub(from).min(buf.len());
        buf[..n].copy_from_slice(&bytes[from..from + n]);
        Some(n)
    }
}

impl Source for Image {
    fn read_at(&self, buf: &mut [u8], at: u64) -> io::Result<usize> {
        let filled = fill_from(&self.ahead, false, buf, at);
        if filled > 0 {
            return Ok(filled);
        }
        if let Some(n) = self.read_windows(buf, at) {
            return Ok(n);
        }
        // The window holding `at` (all of `buf`, when it reaches past that window).
        let start = at / WINDOW * WINDOW;
        let want = (at + buf.len() as u64).max(start + WINDOW) - start;
        let (Ok(from), Ok(len)) = (i32::try_from(start + 1), i32::try_from(want)) else {
            return Ok(0);
        };
        let rows = lock(&self.client)
            .query_typed(
                "SELECT substring(image FROM $3 FOR $4) FROM libsession_index \
                 WHERE session_id = $1 AND entries = $2",
                &[
                    (&self.session_id, Type::TEXT),
                    (&self.entries, Type::INT8),
                    (&from, Type::INT4),
                    (&len, Type::INT4),
                ],
            )
            .map_err(io::Error::other)?;
        let Some(row) = rows.first() else {
            return Ok(0);
        };
        let bytes: Vec<u8> = row.try_get(0).map_err(io::Error::other)?;
        {
            let mut windows = self.windows.borrow_mut();
            if windows.len() == WINDOWS {
                windows.remove(0);
            }
            windows.push((start, bytes));
        }
        Ok(self.read_windows(buf, at).unwrap_or(0))
    }
}

fn lines(sink: &PgSink) -> Lines {
    Lines {
        client: sink.shared().clone(),
        session_id: sink.session_id().to_owned(),
        ahead: Vec::new(),
    }
}

/// What an open reads of the newest session index, in one round trip: its size, the
/// page of its header, the page of its last record and its tail (roots, labels, page
/// checksums), and the rows holding the sampled regions and the last covered line
/// (where the samples lie follows from the covered size, which is where the last
/// covered row ends). These are the reads [`Base::open`] makes; any it makes beyond
/// them (a large roots page) is read on demand. `$2` records per page, `$3` the page
/// size, `$4` samples, `$5` a sample's length.
///
/// Each row lookup is a subquery of its own (`OFFSET 0` keeps the planner from merging
/// it into a join) that only the index on the column it looks up can serve as a
/// range, whatever the statistics say of the session's size: a session newer than the
/// table's last `ANALYZE` is estimated at one row, any index starting with
/// `session_id` then looks as cheap, and the lookups became a scan of every row of the
/// session per sample (30,000–40,000 buffers a call at 5,000 entries, where this reads
/// about 150). The last covered row is the newest below the index's count, a sampled
/// region a range ordered by `off`: an order only the index on that column gives
/// without a sort (`seq = …` made any order by `seq` moot, and a row comparison, which
/// only the primary key serves, is estimated so loosely that a session of 100,000 rows
/// was read whole).
const OPEN_INDEX: &str = "
    WITH i AS (
        SELECT entries, image, octet_length(image)::int8 AS len,
            (1 + (entries - 1) / $2) * $3 AS rec_at,
            greatest(octet_length(image) - (octet_length(image) / 512 + 3 * $3), 0) AS tail_at
        FROM libsession_index WHERE session_id = $1 ORDER BY entries DESC LIMIT 1),
    c AS (
        SELECT e.off AS last_off, e.off + octet_length(convert_to(e.line, 'UTF8')) + 1 AS covered
        FROM i, LATERAL (SELECT off, line FROM libsession_entries
            WHERE session_id = $1 AND seq < i.entries ORDER BY seq DESC LIMIT 1) e),
    r AS (
        SELECT DISTINCT x.off, x.line FROM c, LATERAL (
            (SELECT off, line FROM libsession_entries WHERE session_id = $1 AND off = c.last_off
                ORDER BY off OFFSET 0)
            UNION ALL
            SELECT y.off, y.line FROM generate_series(0, $4 - 1) k, LATERAL (
                SELECT off, line FROM libsession_entries WHERE session_id = $1
                AND off >= (SELECT coalesce(max(off), 0) FROM libsession_entries
                            WHERE session_id = $1 AND off <= c.covered / $4 * k)
                AND off < c.covered / $4 * k + $5 ORDER BY off OFFSET 0) y) x)
    SELECT i.entries, i.len,
        substring(i.image FROM 1 FOR $3::int4),
        i.rec_at, substring(i.image FROM (i.rec_at + 1)::int4 FOR $3::int4),
        i.tail_at::int8, substring(i.image FROM (i.tail_at + 1)::int4),
        (SELECT array_agg(off ORDER BY off) FROM r),
        (SELECT array_agg(line ORDER BY off) FROM r)
    FROM i";

/// The log of the prefix of the session that its newest stored index covers, read on
/// demand; `None` (read every row) when there is no usable one.
pub(crate) fn load_base(sink: &PgSink) -> Option<Log> {
    let client = sink.shared().clone();
    let session_id = sink.session_id().to_owned();
    let (per_page, page) = (PER_PAGE as i64, PAGE as i64);
    let (samples, sample_len) = (SAMPLES as i64, SAMPLE_LEN as i64);
    let rows = lock(&client)
        .query_typed(
            OPEN_INDEX,
            &[
                (&session_id, Type::TEXT),
                (&per_page, Type::INT8),
                (&page, Type::INT8),
                (&samples, Type::INT8),
                (&sample_len, Type::INT8),
            ],
        )
        .ok()?;
    let row = rows.first()?;
    let entries: i64 = row.try_get(0).ok()?;
    let len: i64 = row.try_get(1).ok()?;
    let at = |i: usize| -> Option<u64> { u64::try_from(row.try_get::<_, i64>(i).ok()?).ok() };
    let bytes = |i: usize| -> Option<Vec<u8>> { row.try_get::<_, Vec<u8>>(i).ok() };
    let mut image_ahead = vec![(0, bytes(2)?), (at(3)?, bytes(4)?), (at(5)?, bytes(6)?)];
    image_ahead.sort_by_key(|(start, _)| *start);
    let offs: Option<Vec<i64>> = row.try_get(7).ok()?;
    let texts: Option<Vec<String>> = row.try_get(8).ok()?;
    let lines_ahead = offs
        .unwrap_or_default()
        .into_iter()
        .filter_map(|off| u64::try_from(off).ok())
        .zip(texts.unwrap_or_default())
        .collect();
    let image = Image {
        client: client.clone(),
        session_id: session_id.clone(),
        entries,
        ahead: image_ahead,
        windows: Default::default(),
    };
    let lines = Lines {
        client,
        session_id: session_id.clone(),
        ahead: lines_ahead,
    };
    let name = PathBuf::from(format!("PostgreSQL session {session_id:?}"));
    let len = u64::try_from(len).ok()?;
    let base = Base::open(Box::new(lines), Box::new(image), len, None, &name).ok()??;
    (i64::from(base.len()) == entries).then(|| Log::with_base(base))
}

/// Stores the session index of `log`, every committed entry of the session, as a new
/// row; keeps the two newest rows of the session. Best effort: `false` when it could
/// not (the role may not write the table, the connection failed); the store works
/// without it.
pub(crate) fn write_index(sink: &PgSink, log: &Log) -> bool {
    let lines = lines(sink);
    let stamp = Stamp {
        dev: 0,
        ino: 0,
        size: log.line_bytes(),
        mtime: (0, 0),
        ctime: (0, 0),
    };
    let tree = log.index_tree();
    let Some(bytes) = encode(
        log.index_items(),
        log.len(),
        &tree,
        log.index_seed(),
        &lines,
        stamp,
    ) else {
        return false;
    };
    if log.take_fault().is_some() {
        return false;
    }
    let entries = i64::try_from(log.len()).unwrap_or(i64::MAX);
    let session_id = sink.session_id();
    let mut c = lock(sink.shared());
    let stored = c.execute(
        "INSERT INTO libsession_index (session_id, entries, image) VALUES ($1, $2, $3) \
         ON CONFLICT DO NOTHING",
        &[&session_id, &entries, &bytes],
    );
    if stored.is_err() {
        return false;
    }
    // Older indexes are only for readers that opened through them a moment ago.
    let _ = c.execute(
        "DELETE FROM libsession_index WHERE session_id = $1 AND entries < \
         (SELECT entries FROM libsession_index WHERE session_id = $1 \
          ORDER BY entries DESC OFFSET 1 LIMIT 1)",
        &[&session_id],
    );
    true
}
