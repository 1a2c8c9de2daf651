//! Where each entry's line starts in its session file: the offsets of a file's entries
//! in chunks of [`CHUNK_ENTRIES`], each chunk one row of `lines` (its row is the rows
//! of its entries shifted right by [`CHUNK_BITS`]), the offsets written as the first
//! one and then each one's distance from the one before, in LEB128 varints (a line of
//! under 16 KiB takes two bytes).
//!
//! Kept apart from the entries' rows so that the full-text index's rows can count
//! entries (one byte apart, not a line's length apart) while a query still finds a
//! candidate's line without a lookup per candidate: one chunk read serves every
//! candidate among its entries. An update rewrites only the last chunk of a file it
//! appends to.

use rusqlite::{Connection, OptionalExtension, Statement};

use super::{Fail, file_keys};

/// The bits of an entry's row that say where in its chunk it is.
pub(super) const CHUNK_BITS: u32 = 10;
/// Entries per chunk.
pub(super) const CHUNK_ENTRIES: usize = 1 << CHUNK_BITS;

/// The chunk holding the offset of the entry whose row is `key`.
fn chunk_of(key: i64) -> i64 {
    key >> CHUNK_BITS
}

fn encode(offsets: &[u64]) -> Vec<u8> {
    let mut out = Vec::with_capacity(offsets.len() * 2 + 8);
    let mut before = 0;
    for &at in offsets {
        let mut n = at.wrapping_sub(before);
        before = at;
        loop {
            let byte = (n & 0x7f) as u8;
            n >>= 7;
            if n == 0 {
                out.push(byte);
                break;
            }
            out.push(byte | 0x80);
        }
    }
    out
}

/// The offsets of a chunk's blob; `None` when it is not one [`encode`] wrote (a damaged
/// sidecar: its candidates are left out, never read from a wrong place).
fn decode(blob: &[u8]) -> Option<Vec<u64>> {
    let mut out = Vec::with_capacity(blob.len() / 2);
    let (mut n, mut shift, mut before) = (0u64, 0u32, 0u64);
    for &byte in blob {
        if shift > 63 {
            return None;
        }
        n |= u64::from(byte & 0x7f) << shift;
        shift += 7;
        if byte & 0x80 == 0 {
            before = before.wrapping_add(n);
            out.push(before);
            (n, shift) = (0, 0);
        }
    }
    (shift == 0 && out.len() <= CHUNK_ENTRIES).then_some(out)
}

/// Removes the offsets of every entry of file row `file`.
pub(super) fn clear(tx: &Connection, file: i64) -> Result<(), Fail> {
    let (first, last) = file_keys(file);
    tx.execute(
        "DELETE FROM lines WHERE id BETWEEN ?1 AND ?2",
        [chunk_of(first), chunk_of(last)],
    )?;
    Ok(())
}

/// The offsets of one file's new entries, written a chunk at a time.
pub(super) struct LineWriter {
    /// The chunk being filled, and the offsets it holds so far.
    chunk: i64,
    offsets: Vec<u64>,
}

impl LineWriter {
    /// The writer of the entries from row `first` on: the chunk it falls in is read back
    /// when earlier entries are in it.
    pub(super) fn starting_at(tx: &Connection, first: i64) -> Result<LineWriter, Fail> {
        let chunk = chunk_of(first);
        let held = (first as usize) % CHUNK_ENTRIES;
        let mut offsets = match held {
            0 => Vec::new(),
            _ => tx
                .query_row(READ, [chunk], |r| r.get::<_, Vec<u8>>(0))
                .optional()?
                .and_then(|blob| decode(&blob))
                .unwrap_or_default(),
        };
        // A chunk that does not hold exactly the entries before `first` (a damaged
        // sidecar) is padded or cut, so every later offset lands at its entry's place;
        // a padded place reads as offset 0, whose line is not that entry's (left out).
        offsets.resize(held, 0);
        // Written again whole by a plain insert: a statement that may replace a row
        // opens a statement journal, and each one makes FTS5 write its pending words
        // out as a new segment (more segments to merge and to read).
        if held != 0 {
            tx.execute("DELETE FROM lines WHERE id = ?1", [chunk])?;
        }
        Ok(LineWriter { chunk, offsets })
    }

    /// Adds the offset of the next entry's line.
    pub(super) fn push(&mut self, write: &mut Statement, at: u64) -> Result<(), Fail> {
        self.offsets.push(at);
        if self.offsets.len() == CHUNK_ENTRIES {
            self.flush(write)?;
            self.chunk += 1;
            self.offsets.clear();
        }
        Ok(())
    }

    /// Writes the chunk being filled.
    pub(super) fn flush(&mut self, write: &mut Statement) -> Result<(), Fail> {
        if !self.offsets.is_empty() {
            write.execute(rusqlite::params![self.chunk, encode(&self.offsets)])?;
        }
        Ok(())
    }
}

/// The statement that reads a chunk (for [`LineWriter::starting_at`] and [`LineReader`]).
pub(super) const READ: &str = "SELECT offsets FROM lines WHERE id = ?1";
/// The statement that writes a chunk.
pub(super) const WRITE: &str = "INSERT INTO lines(id, offsets) VALUES(?1, ?2)";

/// Where entries' lines start, read a chunk at a time (the last one kept, decoded only
/// as far as asked: a query's candidates come in their rows' order, and a rare word's
/// are a few per chunk).
pub(super) struct LineReader<'c> {
    read: Statement<'c>,
    chunk: Option<Chunk>,
}

/// A chunk's blob and the offsets decoded from its start so far.
struct Chunk {
    id: i64,
    blob: Vec<u8>,
    /// The blob's bytes decoded so far, and the offsets they hold.
    used: usize,
    offsets: Vec<u64>,
}

impl Chunk {
    /// The `at`-th offset, decoding the blob until it is reached; `None` past its end or
    /// at a damaged varint.
    fn offset(&mut self, at: usize) -> Option<u64> {
        while self.offsets.len() <= at {
            let (mut n, mut shift) = (0u64, 0u32);
            loop {
                let byte = *self.blob.get(self.used)?;
                self.used += 1;
                if shift > 63 {
                    return None;
                }
                n |= u64::from(byte & 0x7f) << shift;
                shift += 7;
                if byte & 0x80 == 0 {
                    break;
                }
            }
            let before = self.offsets.last().copied().unwrap_or(0);
            self.offsets.push(before.wrapping_add(n));
        }
        self.offsets.get(at).copied()
    }
}

impl<'c> LineReader<'c> {
    pub(super) fn new(conn: &'c Connection) -> Result<LineReader<'c>, Fail> {
        Ok(LineReader {
            read: conn.prepare(READ)?,
            chunk: None,
        })
    }

    /// The offset of the line of the entry whose row is `key`; `None` when the index
    /// holds none.
    pub(super) fn offset(&mut self, key: i64) -> Result<Option<u64>, Fail> {
        let id = chunk_of(key);
        let chunk = match &mut self.chunk {
            Some(chunk) if chunk.id == id => chunk,
            held => {
                let blob = self
                    .read
                    .query_row([id], |r| r.get::<_, Vec<u8>>(0))
                    .optional()?
                    .unwrap_or_default();
                held.insert(Chunk {
                    id,
                    blob,
                    used: 0,
                    offsets: Vec::with_capacity(CHUNK_ENTRIES),
                })
            }
        };
        Ok(chunk.offset((key as usize) % CHUNK_ENTRIES))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_come_back_as_written_and_a_damaged_chunk_reads_as_none() {
        let offsets = [0, 1, 127, 128, 16_511, 1 << 40, (1 << 40) + 300];
        assert_eq!(decode(&encode(&offsets)).as_deref(), Some(&offsets[..]));
        assert_eq!(decode(&[]), Some(Vec::new()));
        // A varint cut short, and one longer than 64 bits.
        assert_eq!(decode(&[0x80]), None);
        assert_eq!(decode(&[0xff; 11]), None);
        // One-byte distances from the second offset on when lines are short.
        assert_eq!(encode(&[1000, 1100, 1200]).len(), 2 + 1 + 1);
    }

    #[test]
    fn a_chunk_read_in_part_gives_each_offset_as_decoding_it_whole_does() {
        let offsets: Vec<u64> = (0..CHUNK_ENTRIES as u64).map(|i| i * i * 37).collect();
        let mut chunk = Chunk {
            id: 0,
            blob: encode(&offsets),
            used: 0,
            offsets: Vec::new(),
        };
        for at in [5, 3, 700, 701, CHUNK_ENTRIES - 1, 0] {
            assert_eq!(chunk.offset(at), Some(offsets[at]));
        }
        assert_eq!(chunk.offset(CHUNK_ENTRIES), None);
        let mut cut = Chunk {
            id: 0,
            blob: vec![0x85],
            used: 0,
            offsets: Vec::new(),
        };
        assert_eq!(cut.offset(0), None);
    }
}
