//! The session index of a PostgreSQL session: what lets an open read no entry rows.
//!
//! A session's rows, in seq order, each line followed by `\n`, are exactly the lines a
//! JSONL store would have written; each row keeps `off`, where its line starts in that
//! byte sequence. [`Lines`] reads any byte range of it with one indexed query, and
//! [`Image`] reads any byte range of a session index stored in `libsession_index` (the
//! JSONL store's `.idx` format, uncompressed, so a range is read without the rest).
//! With the two, the JSONL store's own [`Base`] answers over the database: the same
//! checks of every page and every line read, the same id table, tree links and
//! queries. An open reads the index's header and page checksums, its sampled regions,
//! roots and labels, then the rows committed after what the index covers; a query
//! reads the pages and lines of what it returns.
//!
//! The index is a cache the handles write themselves ([`write_index`]): once the rows
//! after the newest index reach [`super::INDEX_EVERY`], the handle holding them all
//! writes an index that covers them, as a new row (the older ones stay for readers
//! that opened through them; all but the two newest are then deleted). Anything wrong
//! with it (missing, unreadable for this role, not matching the rows) means the rows
//! are read as before, never a different answer.

use std::io;
use std::path::PathBuf;

use postgres::Statement;

use crate::store::index::format::Source;
use crate::store::index::{Base, Stamp, encode};
use crate::store::log::Log;

use super::enabled::{PgSink, Shared, lock};

/// The session's rows as one JSONL byte sequence.
struct Lines {
    client: Shared,
    session_id: String,
    /// `$1` session, `$2` first byte, `$3` end byte: the rows whose lines overlap.
    range: Statement,
}

impl Source for Lines {
    fn read_at(&self, buf: &mut [u8], at: u64) -> io::Result<usize> {
        let (Ok(from), Ok(to)) = (
            i64::try_from(at),
            i64::try_from(at.saturating_add(buf.len() as u64)),
        ) else {
            return Ok(0);
        };
        let rows = lock(&self.client)
            .query(&self.range, &[&self.session_id, &from, &to])
            .map_err(io::Error::other)?;
        let mut filled = 0usize;
        for row in rows {
            let off: i64 = row.try_get(0).map_err(io::Error::other)?;
            let line: &str = row.try_get(1).map_err(io::Error::other)?;
            let (start, bytes) = (u64::try_from(off).unwrap_or(u64::MAX), line.as_bytes());
            let end = start.saturating_add(bytes.len() as u64 + 1);
            let want = at + filled as u64;
            // Rows must follow each other without a gap from `at` on.
            if start > want || end <= want {
                break;
            }
            for p in want..end.min(at + buf.len() as u64) {
                let i = (p - start) as usize;
                buf[(p - at) as usize] = bytes.get(i).copied().unwrap_or(b'\n');
                filled += 1;
            }
        }
        Ok(filled)
    }
}

/// One stored session index, by the number of entries it covers.
struct Image {
    client: Shared,
    session_id: String,
    entries: i64,
    /// `$1` session, `$2` entries, `$3` first byte (1-based), `$4` length.
    slice: Statement,
}

impl Source for Image {
    fn read_at(&self, buf: &mut [u8], at: u64) -> io::Result<usize> {
        let (Ok(from), Ok(len)) = (i64::try_from(at + 1), i32::try_from(buf.len())) else {
            return Ok(0);
        };
        let from = i32::try_from(from).map_err(io::Error::other)?;
        let row = lock(&self.client)
            .query_opt(&self.slice, &[&self.session_id, &self.entries, &from, &len])
            .map_err(io::Error::other)?;
        let Some(row) = row else {
            return Ok(0);
        };
        let bytes: &[u8] = row.try_get(0).map_err(io::Error::other)?;
        let n = bytes.len().min(buf.len());
        buf[..n].copy_from_slice(&bytes[..n]);
        Ok(n)
    }
}

fn lines(sink: &PgSink) -> Option<Lines> {
    let client = sink.shared().clone();
    let range = lock(&client)
        .prepare(
            "SELECT off, line FROM libsession_entries WHERE session_id = $1 \
             AND off >= (SELECT coalesce(max(off), 0) FROM libsession_entries \
                         WHERE session_id = $1 AND off <= $2) \
             AND off < $3 ORDER BY off",
        )
        .ok()?;
    Some(Lines {
        client,
        session_id: sink.session_id().to_owned(),
        range,
    })
}

/// The log of the prefix of the session that its newest stored index covers, read on
/// demand; `None` (read every row) when there is no usable one.
pub(crate) fn load_base(sink: &PgSink) -> Option<Log> {
    let client = sink.shared().clone();
    let session_id = sink.session_id().to_owned();
    let (entries, len, slice) = {
        let mut c = lock(&client);
        let row = c
            .query_opt(
                "SELECT entries, octet_length(image) FROM libsession_index \
                 WHERE session_id = $1 ORDER BY entries DESC LIMIT 1",
                &[&session_id],
            )
            .ok()??;
        let entries: i64 = row.try_get(0).ok()?;
        let len: i32 = row.try_get(1).ok()?;
        let slice = c
            .prepare(
                "SELECT substring(image FROM $3 FOR $4) FROM libsession_index \
                 WHERE session_id = $1 AND entries = $2",
            )
            .ok()?;
        (entries, u64::try_from(len).ok()?, slice)
    };
    let image = Image {
        client,
        session_id: session_id.clone(),
        entries,
        slice,
    };
    let name = PathBuf::from(format!("PostgreSQL session {session_id:?}"));
    let base = Base::open(Box::new(lines(sink)?), Box::new(image), len, None, &name).ok()??;
    (i64::from(base.len()) == entries).then(|| Log::with_base(base))
}

/// Stores the session index of `log`, every committed entry of the session, as a new
/// row; keeps the two newest rows of the session. Best effort: `false` when it could
/// not (the role may not write the table, the connection failed); the store works
/// without it.
pub(crate) fn write_index(sink: &PgSink, log: &Log) -> bool {
    let Some(lines) = lines(sink) else {
        return false;
    };
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
