//! Reading an index: the base a store opened through its index answers from, read lazily
//! and checked on every read: opening it (the header and what it must match), its
//! pages, records and lines, the extent of a read, the check of a line against its
//! record, and the search of an id. The line cache is in `lines.rs`, the read-ahead in
//! `readahead.rs`, streamed reads in `streamer.rs`.

use std::cell::{Cell, RefCell};
use std::fs::File;
use std::io::{self};
use std::path::{Path, PathBuf};

use super::cells::Lazy;
use super::format::*;
use super::lines::{Line, Lines, Read};
use super::readahead::{READ_BYTES, Readahead};
use crate::entry::{EntryParser, Facts};
use crate::error::{EntryError, Error, IoFailure, IoOp, LineFault};
use crate::recover::MAX_LINE_BYTES;

/// Why a read through the index failed.
pub(crate) enum Fault {
    /// The index itself is damaged or lies (a page checksum, a layout or a record that
    /// does not hold over its line): the store falls back to the file.
    Index,
    /// A line of the file is damaged (`corrupt_line`), or reading failed (`io`).
    Error(Error),
}

/// The committed prefix an index covers, read on demand: index pages are checked
/// against their checksums, lines against their record, at every read from the files.
/// Neither is kept beyond [`CACHE_BYTES`] between operations.
pub(crate) struct Base {
    pub(super) jsonl: Box<dyn Source>,
    pub(super) index: Box<dyn Source>,
    pub(super) path: PathBuf,
    pub(super) entries: u32,
    pub(super) covered: u64,
    pub(super) seed: u64,
    pub(super) slots: u64,
    pub(super) table_page: u64,
    /// The page checksums, `u64` little-endian each.
    pub(super) sums: Vec<u8>,
    pub(super) pages: Lazy<Box<[u8]>>,
    pub(super) lines: Lines,
    pub(super) readahead: Cell<Readahead>,
    pub(super) cached: Cell<usize>,
    pub(super) parser: RefCell<EntryParser>,
    /// The session file, to replay it when the index fails.
    pub(super) file: Option<File>,
    /// Loaded at open: the roots, the labels (target, label entry, text), and the ends
    /// of the leaf list.
    pub(crate) roots: Vec<u32>,
    pub(crate) labels: Vec<IndexedLabel>,
    pub(crate) leaf_first: u32,
    pub(crate) leaf_last: u32,
}

/// Bytes of pages and lines a base keeps between operations; beyond, they are dropped
/// at the start of the next one and read again when needed.
pub(super) const CACHE_BYTES: usize = 16 << 20;

impl Base {
    /// The base of the file `jsonl` (in the state `stamp`; `None` skips the identity
    /// checks, for the fuzz target) from its index `index`, when the index is intact,
    /// of this version, and matches the file: device, inode, covered size, modification
    /// time, change time, sampled regions and last line. `Ok(None)` means: replay the
    /// file.
    pub(crate) fn open(
        jsonl: Box<dyn Source>,
        index: Box<dyn Source>,
        index_len: u64,
        stamp: Option<Stamp>,
        path: &Path,
    ) -> io::Result<Option<Base>> {
        let mut first = [0u8; HEADER];
        if !read_exact_at(index.as_ref(), &mut first, 0)? {
            return Ok(None);
        }
        let Some(header) = Header::decode(&first) else {
            return Ok(None);
        };
        let recorded = header.stamp;
        if let Some(now) = stamp {
            let same_file = (now.dev, now.ino) == (recorded.dev, recorded.ino);
            // A file that grew has a newer time; one of the covered size, the same.
            let time_fits = if now.size == recorded.size {
                now.mtime == recorded.mtime
            } else {
                now.mtime >= recorded.mtime
            };
            // Any change since the index was written — an append, an edit in place that
            // keeps the size and puts the modification time back — moved the change
            // time: what the index derived from lines (children, leaves, depth, which
            // ids exist) may no longer hold, and checking it would mean reading them all.
            let untouched = now.ctime == recorded.ctime;
            if !same_file || now.size < recorded.size || !time_fits || !untouched {
                return Ok(None);
            }
        }
        let (entries, covered) = (header.entries, recorded.size);
        // At most one entry per three bytes (`{}` and `\n`), and positions below ORPHAN.
        if entries == 0 || entries > covered / 3 || entries >= u64::from(ORPHAN) {
            return Ok(None);
        }
        let slots = header.slots;
        if !slots.is_power_of_two() || slots <= entries || slots > entries * 4 + 16 {
            return Ok(None);
        }
        let (record_pages, table_pages, extra_pages, pages, sum_pages) =
            layout(entries, slots, header.extra_bytes);
        let total = 1u64
            .checked_add(pages)
            .and_then(|p| p.checked_add(sum_pages))
            .and_then(|p| p.checked_mul(PAGE as u64));
        if pages != header.pages
            || header.extra_bytes > pages.saturating_mul(PAGE as u64)
            || total != Some(index_len)
            || header.roots > entries
            || header.labels > entries
            || u64::from(header.leaf_first) >= entries
            || u64::from(header.leaf_last) >= entries
        {
            return Ok(None);
        }
        // The page checksums (the index's size is known, so this is bounded by it).
        let mut sums = vec![0u8; (pages * 8) as usize];
        if !read_exact_at(index.as_ref(), &mut sums, (1 + pages) * PAGE as u64)?
            || Hash64::of(&sums) != header.sums_hash
        {
            return Ok(None);
        }
        if sample_hash(jsonl.as_ref(), covered)? != Some(header.sample_hash) {
            return Ok(None);
        }
        let mut base = Base {
            jsonl,
            index,
            path: path.to_owned(),
            entries: entries as u32,
            covered,
            seed: header.seed,
            slots,
            table_page: 1 + record_pages,
            sums,
            pages: Lazy::new(pages as usize),
            lines: Lines::new(entries),
            readahead: Cell::new(Readahead::default()),
            cached: Cell::new(0),
            parser: RefCell::new(EntryParser::default()),
            file: None,
            roots: Vec::new(),
            labels: Vec::new(),
            leaf_first: header.leaf_first,
            leaf_last: header.leaf_last,
        };
        // The last covered line ends the covered prefix and is the one recorded.
        let Ok(last) = base.record(base.entries - 1) else {
            return Ok(None);
        };
        if last.offset.checked_add(u64::from(last.len) + 1) != Some(covered) {
            return Ok(None);
        }
        let mut line = vec![0u8; last.len as usize + 1];
        if !read_exact_at(base.jsonl.as_ref(), &mut line, last.offset)?
            || Hash64::of(&line) != header.last_hash
        {
            return Ok(None);
        }
        // Roots and labels.
        let extra_page = 1 + record_pages + table_pages;
        let mut extra = Vec::new();
        for page in extra_page..extra_page + extra_pages {
            match base.page(page) {
                Ok(bytes) => extra.extend_from_slice(bytes),
                Err(Fault::Index) => return Ok(None),
                Err(Fault::Error(_)) => return Err(io::Error::other("reading the index")),
            }
        }
        let Some((roots, labels)) = read_extra(&extra, &header) else {
            return Ok(None);
        };
        base.roots = roots;
        base.labels = labels;
        Ok(Some(base))
    }

    pub(crate) fn len(&self) -> u32 {
        self.entries
    }

    /// Keeps `file`, the session file, to replay it if the index fails later.
    pub(crate) fn with_file(mut self, file: File) -> Base {
        self.file = Some(file);
        self
    }

    /// The session file, when kept.
    pub(crate) fn file(&self) -> Option<&File> {
        self.file.as_ref()
    }

    /// The session file's path.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    pub(crate) fn covered(&self) -> u64 {
        self.covered
    }

    pub(crate) fn seed(&self) -> u64 {
        self.seed
    }

    /// Drops the cached pages and lines when they exceed [`CACHE_BYTES`].
    pub(crate) fn trim(&mut self) {
        if self.cached.get() > CACHE_BYTES {
            self.pages.clear();
            self.lines.clear();
            self.cached.set(0);
        }
    }

    pub(super) fn io(&self, what: &str, e: &io::Error) -> Fault {
        let path = format!("{} ({what})", self.path.display());
        Fault::Error(Error::Io(std::sync::Arc::new(IoFailure::new(
            IoOp::Read,
            &path,
            e,
        ))))
    }

    /// Index page `page` (1-based: page 0 is the header), checked against its checksum.
    pub(super) fn page(&self, page: u64) -> Result<&[u8], Fault> {
        let at = page.checked_sub(1).ok_or(Fault::Index)?;
        let cell = self.pages.cell(at as usize).ok_or(Fault::Index)?;
        if let Some(bytes) = cell.get() {
            return Ok(bytes);
        }
        let mut bytes = vec![0u8; PAGE].into_boxed_slice();
        match read_exact_at(self.index.as_ref(), &mut bytes, page * PAGE as u64) {
            Ok(true) => {}
            Ok(false) => return Err(Fault::Index),
            Err(e) => return Err(self.io("its index", &e)),
        }
        if u64_at(&self.sums, at as usize * 8) != Some(Hash64::of(&bytes)) {
            return Err(Fault::Index);
        }
        self.cached.set(self.cached.get() + PAGE);
        let _ = cell.set(bytes);
        cell.get().map(|b| &b[..]).ok_or(Fault::Index)
    }

    /// The record of the entry at `position`.
    pub(crate) fn record(&self, position: u32) -> Result<Raw, Fault> {
        if position >= self.entries {
            return Err(Fault::Index);
        }
        let (page, slot) = (position as usize / PER_PAGE, position as usize % PER_PAGE);
        let bytes = self.page(1 + page as u64)?;
        let raw = bytes
            .get(slot * RECORD..(slot + 1) * RECORD)
            .and_then(Raw::read)
            .ok_or(Fault::Index)?;
        if !self.holds(position, &raw) {
            return Err(Fault::Index);
        }
        Ok(raw)
    }

    /// Whether a record is possible at `position`: its line inside the covered prefix,
    /// its parent and jump before it, its children, next sibling and next leaf after
    /// it (so that every walk ends), its metadata link before it, every link
    /// inside the base or `NONE`.
    pub(super) fn holds(&self, position: u32, raw: &Raw) -> bool {
        let n = self.entries;
        let before = |at: u32| at == NONE || at < position;
        let after = |at: u32| at == NONE || (at > position && at < n);
        let [
            first_child,
            last_child,
            next_sibling,
            child_count,
            _depth,
            jump,
            leaf_prev,
            leaf_next,
            meta,
        ] = raw.links;
        raw.len >= 2
            && raw.len as usize <= MAX_LINE_BYTES
            && raw.offset.saturating_add(u64::from(raw.len) + 1) <= self.covered
            && before(raw.parent)
            && before(jump)
            && before(leaf_prev)
            && before(meta)
            && after(first_child)
            && after(last_child)
            && after(next_sibling)
            && after(leaf_next)
            && child_count < n
    }

    /// The lines to read for the line at `position` (record `raw`), not held: at most
    /// `count` positions from it, downwards when `down`, stopping before a position
    /// `held` says is held already, and fewer while the bytes would pass
    /// [`READ_BYTES`] beyond its own line. Returns the first and last position and the
    /// byte range. Only the record at the far end is read: every line's own record
    /// places it in the range when it is returned.
    pub(super) fn extent(
        &self,
        position: u32,
        raw: &Raw,
        (down, count): (bool, u32),
        held: impl Fn(u32) -> bool,
    ) -> Result<(u32, u32, u64, u64), Fault> {
        let own = (raw.offset, raw.offset + u64::from(raw.len) + 1);
        let step = |at: u32| match down {
            true => at.checked_sub(1),
            false => at.checked_add(1).filter(|&n| n < self.entries),
        };
        let mut reach = 0u32;
        let mut at = position;
        while reach + 1 < count {
            match step(at).filter(|&n| !held(n)) {
                Some(next) => (at, reach) = (next, reach + 1),
                None => break,
            }
        }
        while reach > 0 {
            let far = match down {
                true => position - reach,
                false => position + reach,
            };
            let record = self.record(far)?;
            let (first, last, start, end) = match down {
                true => (far, position, record.offset, own.1),
                false => (
                    position,
                    far,
                    own.0,
                    record.offset + u64::from(record.len) + 1,
                ),
            };
            // Back to back, as every index records them: at least 3 bytes a line.
            let span = end.checked_sub(start).ok_or(Fault::Index)?;
            let beyond = span.checked_sub(own.1 - own.0).ok_or(Fault::Index)?;
            if beyond < 3 * u64::from(reach) || end > self.covered {
                return Err(Fault::Index);
            }
            if beyond <= READ_BYTES {
                return Ok((first, last, start, end));
            }
            reach /= 2;
        }
        Ok((position, position, own.0, own.1))
    }

    /// Reads the bytes `start..end` of the session file into `buf`, reusing its
    /// allocation (it is grown, never cleared, so that nothing is written twice); the
    /// bytes are `buf[..end - start]`.
    pub(super) fn read_into(&self, buf: &mut Vec<u8>, start: u64, end: u64) -> Result<(), Fault> {
        let len = usize::try_from(end - start).map_err(|_| Fault::Index)?;
        if buf.len() < len {
            buf.resize(len, 0);
        }
        match read_exact_at(self.jsonl.as_ref(), &mut buf[..len], start) {
            Ok(true) => Ok(()),
            // The file is shorter than when it was opened.
            Ok(false) => Err(Fault::Index),
            Err(e) => Err(self.io("reading a line", &e)),
        }
    }

    /// The cached line of `position` (record `raw`), read from the file when not held
    /// (with the lines [`Readahead`] adds to the read).
    fn line(&self, position: u32, raw: &Raw) -> Result<&Line, Fault> {
        if let Some(line) = self.lines.get(position) {
            return Ok(line);
        }
        let mut readahead = self.readahead.get();
        let (down, count) = readahead.plan(position);
        let plan = (down, count.max(self.jsonl.least_lines()).min(BLOCK as u32));
        let (first, last, start, end) = self.extent(position, raw, plan, |k| self.lines.has(k))?;
        readahead.took(first, last);
        self.readahead.set(readahead);
        let mut bytes = Vec::new();
        self.read_into(&mut bytes, start, end)?;
        let lines = (last - first + 1) as usize;
        self.cached
            .set(self.cached.get() + bytes.len() + lines * std::mem::size_of::<Line>());
        let read = Read {
            start,
            bytes: bytes.into_boxed_slice(),
        };
        self.lines.keep(read, first..=last).ok_or(Fault::Index)?;
        self.lines.get(position).ok_or(Fault::Index)
    }

    /// The line (with its last byte, `\n` when intact) of the entry of record `raw`
    /// in bytes read from `start`.
    pub(super) fn line_in<'b>(raw: &Raw, start: u64, bytes: &'b [u8]) -> Result<&'b [u8], Fault> {
        let from = raw.offset.checked_sub(start).ok_or(Fault::Index)? as usize;
        bytes
            .get(from..from + raw.len as usize + 1)
            .ok_or(Fault::Index)
    }

    /// The canonical JSON and facts of the entry at `position`, checked when its line
    /// is first returned after it was read from the file (see [`Base::check`]) and then
    /// kept with it: a line that is not what was indexed is `corrupt_line` at its line
    /// number.
    pub(crate) fn entry(&self, position: u32) -> Result<(&[u8], &Facts), Fault> {
        let raw = self.record(position)?;
        let cached = self.line(position, &raw)?;
        let read = self
            .lines
            .reads
            .get(cached.read as usize)
            .ok_or(Fault::Index)?;
        let line = Base::line_in(&raw, read.start, &read.bytes)?;
        let json = &line[..line.len() - 1];
        if let Some(facts) = cached.facts.get() {
            return Ok((json, facts));
        }
        let facts = self.check(position, &raw, line)?;
        let _ = cached.facts.set(facts);
        self.lines.ids.borrow_mut().insert(raw.id_hash, position);
        cached.facts.get().map(|f| (json, f)).ok_or(Fault::Index)
    }

    /// The line length of the entry at `position`.
    pub(crate) fn line_len(&self, position: u32) -> Result<usize, Fault> {
        Ok(self.record(position)?.len as usize)
    }

    /// The facts of `line` (the entry at `position` and its `\n`, as just read from the
    /// file), checked against its record: its end and checksum (else `corrupt_line`),
    /// then its id and parent (else the index is wrong). Every read of a line from the
    /// file comes here, the first and every later one (after the cache was dropped, or
    /// streamed): the file may have changed since, and only what passes is returned.
    pub(super) fn check(&self, position: u32, raw: &Raw, line: &[u8]) -> Result<Facts, Fault> {
        let json = &line[..line.len().saturating_sub(1)];
        if line.last() != Some(&b'\n') || line_sum(json) != raw.sum {
            return Err(Fault::Error(self.changed(position, json)));
        }
        let facts = {
            let mut parser = self.parser.borrow_mut();
            decode_facts(&raw.facts, json, &mut parser).ok_or(Fault::Index)?
        };
        // The record's id and parent are the line's.
        if id_hash(self.seed, facts.id(json)) != raw.id_hash {
            return Err(Fault::Index);
        }
        match (facts.parent_id(json), raw.parent) {
            (None, NONE) => {}
            (Some(parent_id), parent) if parent != NONE => {
                if self.record(parent)?.id_hash != id_hash(self.seed, parent_id) {
                    return Err(Fault::Index);
                }
            }
            _ => return Err(Fault::Index),
        }
        Ok(facts)
    }

    /// The error for the line of `position`, which is not what was indexed.
    pub(super) fn changed(&self, position: u32, line: &[u8]) -> Error {
        let number = u64::from(position) + 1;
        let mut parser = self.parser.borrow_mut();
        match parser.parse(line) {
            Err(fault) => fault.at_line(number),
            Ok(_) => Error::CorruptLine {
                line: number,
                fault: LineFault::Entry(EntryError {
                    pointer: String::new(),
                    message: "the line changed after the session index was written; \
                              open with {\"verify\":\"full\"} to check the whole file"
                        .to_owned(),
                }),
            },
        }
    }

    /// The position of the entry with `id`: of a line read since the cache was last
    /// dropped, from the lines read; else through the index's hash table.
    pub(crate) fn find(&self, id: &str) -> Result<Option<u32>, Fault> {
        let hash = id_hash(self.seed, id);
        let known = self.lines.ids.borrow().get(&hash).copied();
        if let Some(position) = known {
            let (json, facts) = self.entry(position)?;
            if facts.id(json) == id {
                return Ok(Some(position));
            }
        }
        let mask = self.slots - 1;
        let mut slot = hash & mask;
        for _ in 0..self.slots {
            let at = slot * SLOT as u64;
            let page = self.page(self.table_page + at / PAGE as u64)?;
            let at = (at % PAGE as u64) as usize;
            let (position, tag) = (
                u32_at(page, at).ok_or(Fault::Index)?,
                u32_at(page, at + 4).ok_or(Fault::Index)?,
            );
            if position == NONE {
                return Ok(None);
            }
            if tag == (hash >> 32) as u32 {
                let (json, facts) = self.entry(position)?;
                if facts.id(json) == id {
                    return Ok(Some(position));
                }
            }
            slot = (slot + 1) & mask;
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};

    /// The session file in memory, counting the bytes read from it.
    struct Counting(Vec<u8>, Arc<AtomicU64>);

    impl Source for Counting {
        fn read_at(&self, buf: &mut [u8], at: u64) -> io::Result<usize> {
            let n = self.0.read_at(buf, at)?;
            self.1.fetch_add(n as u64, Ordering::Relaxed);
            Ok(n)
        }
    }

    fn user(id: &str, parent: Option<&str>, text: &str) -> String {
        let parent = parent.map_or_else(|| "null".to_owned(), |p| format!("\"{p}\""));
        format!(
            r#"{{"id":"{id}","parentId":{parent},"timestamp":1,"type":"message","message":{{"role":"user","content":"{text}"}}}}"#
        )
    }

    /// The shape of a large import: a path of `n` messages, each followed in the file
    /// by 50 entries hanging under it (so that no two path entries share a run of 64
    /// lines). Returns the session's bytes and its index's.
    fn far_apart(n: usize) -> (Vec<u8>, Vec<u8>) {
        let dir =
            std::env::temp_dir().join(format!("libsession-index-reads-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("s.jsonl");
        let _ = std::fs::remove_file(&path);
        let (store, _) = crate::Store::open_jsonl(&path).unwrap();
        for i in 0..n {
            let parent = (i > 0).then(|| format!("m{}", i - 1));
            store
                .append(user(&format!("m{i}"), parent.as_deref(), "on the path"))
                .unwrap();
            for j in 0..50 {
                let side = format!("s{i}-{j}");
                store
                    .append(user(&side, Some(&format!("m{i}")), &"x".repeat(100)))
                    .unwrap();
            }
        }
        drop(store);
        let bytes = (
            std::fs::read(&path).unwrap(),
            std::fs::read(super::super::index_path(&path)).unwrap(),
        );
        let _ = std::fs::remove_dir_all(&dir);
        bytes
    }

    #[test]
    fn a_path_read_through_the_index_reads_its_own_lines_not_their_neighbours() {
        let (jsonl, index) = far_apart(40);
        let read = Arc::new(AtomicU64::new(0));
        let len = index.len() as u64;
        let base = Base::open(
            Box::new(Counting(jsonl, read.clone())),
            Box::new(index),
            len,
            None,
            Path::new("s.jsonl"),
        )
        .unwrap()
        .unwrap();
        let leaf = base.find("m39").ok().flatten().unwrap();
        // What open and the search of the leaf read: the samples, the last line, m39.
        let before = read.load(Ordering::Relaxed);
        let log = crate::store::log::Log::with_base(base);
        let path: Vec<_> = log
            .ancestors(leaf)
            .map(|e| e.json.len() as u64 + 1)
            .collect();
        assert_eq!(path.len(), 40);
        // m38 … m0: each read alone, its line's bytes and no more (a read of the 64
        // lines around each would be about 40 times as much).
        let lines: u64 = path[1..].iter().sum();
        assert_eq!(read.load(Ordering::Relaxed) - before, lines);
    }
}
