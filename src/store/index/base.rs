//! Reading an index: the base a store opened through its index answers from, read lazily
//! and checked on every read.

use std::cell::{Cell, OnceCell, RefCell};
use std::collections::HashMap;
use std::fs::File;
use std::io::{self};
use std::path::{Path, PathBuf};

use super::format::*;
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

/// Bytes read from the session file in one read: one line, or a run of lines one after
/// another, starting at `start` in the file.
pub(super) struct Read {
    pub(super) start: u64,
    pub(super) bytes: Box<[u8]>,
}

/// A line kept in the cache: the read that holds it, and its facts once it was checked.
pub(super) struct Line {
    pub(super) read: u32,
    pub(super) facts: OnceCell<Facts>,
}

/// The lines read from the session file and kept between reads (up to [`CACHE_BYTES`]
/// between operations): which positions are held (per group of [`BLOCK`] positions,
/// made at the first read in it: each position's line number plus one, 0 when not
/// read), the lines, and the reads' bytes.
pub(super) struct Lines {
    pub(super) slots: Lazy<Box<[Cell<u32>]>>,
    pub(super) lines: Arena<Line>,
    pub(super) reads: Arena<Read>,
    /// The id hash → position of each line checked since the cache was last dropped:
    /// [`Base::find`] of an id already read needs no page of the hash table.
    pub(super) ids: RefCell<HashMap<u64, u32>>,
}

impl Lines {
    fn new(entries: u64) -> Lines {
        Lines {
            slots: Lazy::new(entries.div_ceil(BLOCK as u64) as usize),
            lines: Arena::default(),
            reads: Arena::default(),
            ids: RefCell::new(HashMap::new()),
        }
    }

    /// The cached line of `position`, if read.
    fn get(&self, position: u32) -> Option<&Line> {
        let group = self.slots.get(position as usize / BLOCK)?;
        let slot = group.get(position as usize % BLOCK)?.get();
        self.lines.get(slot.checked_sub(1)? as usize)
    }

    /// Whether the line of `position` is cached (creates nothing).
    fn has(&self, position: u32) -> bool {
        self.slots
            .get(position as usize / BLOCK)
            .and_then(|group| group.get(position as usize % BLOCK))
            .is_some_and(|slot| slot.get() != 0)
    }

    /// Keeps `read`, and the lines of `positions` as held by it (a position already
    /// held keeps its line).
    fn keep(&self, read: Read, positions: std::ops::RangeInclusive<u32>) -> Option<()> {
        let read = u32::try_from(self.reads.push(read)?.0).ok()?;
        for position in positions {
            let group = self.slots.cell(position as usize / BLOCK)?;
            let group = group.get_or_init(|| (0..BLOCK).map(|_| Cell::new(0)).collect());
            let slot = group.get(position as usize % BLOCK)?;
            if slot.get() == 0 {
                let (line, _) = self.lines.push(Line {
                    read,
                    facts: OnceCell::new(),
                })?;
                slot.set(u32::try_from(line + 1).ok()?);
            }
        }
        Some(())
    }

    fn clear(&mut self) {
        self.slots.clear();
        self.lines.clear();
        self.reads.clear();
        self.ids.get_mut().clear();
    }
}

/// How many lines one read from the session file takes, so that a read costs about
/// the lines that are wanted: only its own line for a line read alone (a context's
/// kept messages far apart in a large file), and for a walk that goes on where the
/// last read ended (a path walked up from its leaf, a list walked in order; a side
/// branch of up to a quarter of the last read's lines skipped) twice as many at each
/// read as at the one before, in the walk's direction, up to [`BLOCK`] lines and
/// [`READ_BYTES`] (the wanted line is always read whole).
#[derive(Clone, Copy, Default)]
pub(super) struct Readahead {
    /// The positions the last read took, first and last.
    last: Option<(u32, u32)>,
    lines: u32,
}

/// The bytes beyond its own line a read of lines takes at most.
pub(super) const READ_BYTES: u64 = 256 << 10;

impl Readahead {
    /// For a line not held at `position`: whether to read the lines before it (the
    /// walk goes down) and how many lines to read at most.
    pub(super) fn plan(&mut self, position: u32) -> (bool, u32) {
        // The walk goes on where the last read ended: at most one line between, or a
        // quarter of the last read's lines (a side branch the path skips).
        let reach = (self.lines / 4).max(2);
        let (down, near) = match self.last {
            Some((first, _)) if position < first => (true, first - position <= reach),
            Some((_, last)) if position > last => (false, position - last <= reach),
            _ => (false, false),
        };
        self.lines = if near {
            self.lines.saturating_mul(2).clamp(2, BLOCK as u32)
        } else {
            1
        };
        (down, self.lines)
    }

    pub(super) fn took(&mut self, first: u32, last: u32) {
        self.last = Some((first, last));
    }
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
        let plan = readahead.plan(position);
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

    /// A reader of many lines through one reused buffer instead of the cache: a read
    /// of a whole path or of every entry costs one read's memory.
    pub(crate) fn streamer(&self) -> Streamer<'_> {
        Streamer {
            base: self,
            buf: Vec::new(),
            loaded: None,
            readahead: Readahead::default(),
        }
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

/// Cells created on first use, a chunk of [`LAZY_CHUNK`] at a time, so that a base of
/// millions of entries costs nothing at open for its page and block caches.
pub(super) struct Lazy<T> {
    pub(super) chunks: Box<[OnceCell<Chunk<T>>]>,
    pub(super) len: usize,
}

pub(super) const LAZY_CHUNK: usize = 256;

/// [`LAZY_CHUNK`] cells.
pub(super) type Chunk<T> = Box<[OnceCell<T>]>;

impl<T> Lazy<T> {
    pub(super) fn new(len: usize) -> Lazy<T> {
        Lazy {
            chunks: (0..len.div_ceil(LAZY_CHUNK))
                .map(|_| OnceCell::new())
                .collect(),
            len,
        }
    }

    /// Cell `i`, `None` past the end.
    pub(super) fn cell(&self, i: usize) -> Option<&OnceCell<T>> {
        if i >= self.len {
            return None;
        }
        let chunk = self.chunks.get(i / LAZY_CHUNK)?;
        let cells = chunk.get_or_init(|| (0..LAZY_CHUNK).map(|_| OnceCell::new()).collect());
        cells.get(i % LAZY_CHUNK)
    }

    /// The value of cell `i`, if any (creates nothing).
    pub(super) fn get(&self, i: usize) -> Option<&T> {
        self.chunks
            .get(i / LAZY_CHUNK)
            .and_then(OnceCell::get)
            .and_then(|cells| cells.get(i % LAZY_CHUNK))
            .and_then(OnceCell::get)
    }

    /// Drops every value.
    pub(super) fn clear(&mut self) {
        self.chunks.iter_mut().for_each(|c| *c = OnceCell::new());
    }
}

/// See [`Base::streamer`].
pub(crate) struct Streamer<'b> {
    pub(super) base: &'b Base,
    pub(super) buf: Vec<u8>,
    /// The positions whose lines `buf` holds (first, last), where they start in the
    /// file and their bytes' length.
    pub(super) loaded: Option<(u32, u32, u64, usize)>,
    pub(super) readahead: Readahead,
}

impl Streamer<'_> {
    /// Calls `f` with the entry at `position`, checked as [`Base::entry`] checks it.
    /// Reading positions in ascending order reads each line once.
    pub(crate) fn read(
        &mut self,
        position: u32,
        f: &mut dyn FnMut(&[u8], &Facts),
    ) -> Result<(), Fault> {
        let base = self.base;
        if base.lines.has(position) {
            let (json, facts) = base.entry(position)?;
            f(json, facts);
            return Ok(());
        }
        let raw = base.record(position)?;
        let (start, len) = match self.loaded {
            Some((first, last, start, len)) if (first..=last).contains(&position) => (start, len),
            _ => {
                let plan = self.readahead.plan(position);
                let (first, last, start, end) = base.extent(position, &raw, plan, |_| false)?;
                self.readahead.took(first, last);
                base.read_into(&mut self.buf, start, end)?;
                let len = (end - start) as usize;
                self.loaded = Some((first, last, start, len));
                (start, len)
            }
        };
        let line = Base::line_in(&raw, start, self.buf.get(..len).ok_or(Fault::Index)?)?;
        let facts = base.check(position, &raw, line)?;
        f(&line[..line.len() - 1], &facts);
        Ok(())
    }
}

/// An append-only list whose items stay where they are while it grows through `&self`,
/// so that what it holds can be lent out while more is added: chunks of 16, 32, 64, …
/// items, each made at its first use.
pub(super) struct Arena<T> {
    chunks: [OnceCell<Box<[OnceCell<T>]>>; ARENA_CHUNKS],
    len: Cell<usize>,
}

const ARENA_FIRST: usize = 16;
/// Chunks of `ARENA_FIRST << k` items: 16 · (2^28 − 1) items in all, more than a
/// base has positions.
const ARENA_CHUNKS: usize = 28;

impl<T> Default for Arena<T> {
    fn default() -> Arena<T> {
        Arena {
            chunks: std::array::from_fn(|_| OnceCell::new()),
            len: Cell::new(0),
        }
    }
}

impl<T> Arena<T> {
    /// The chunk of item `i` and its place there.
    fn locate(i: usize) -> (usize, usize) {
        let j = i / ARENA_FIRST + 1;
        let k = (usize::BITS - 1 - j.leading_zeros()) as usize;
        (k, i - ARENA_FIRST * ((1 << k) - 1))
    }

    /// Adds `value`; returns its number and a reference to it (`None` when full).
    pub(super) fn push(&self, value: T) -> Option<(usize, &T)> {
        let i = self.len.get();
        let (k, at) = Arena::<T>::locate(i);
        let chunk = self
            .chunks
            .get(k)?
            .get_or_init(|| (0..ARENA_FIRST << k).map(|_| OnceCell::new()).collect());
        let cell = chunk.get(at)?;
        cell.set(value).ok()?;
        self.len.set(i + 1);
        Some((i, cell.get()?))
    }

    /// Item `i`, if added.
    pub(super) fn get(&self, i: usize) -> Option<&T> {
        let (k, at) = Arena::<T>::locate(i);
        self.chunks.get(k)?.get()?.get(at)?.get()
    }

    /// Drops every item.
    pub(super) fn clear(&mut self) {
        self.chunks.iter_mut().for_each(|c| *c = OnceCell::new());
        self.len.set(0);
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

    #[test]
    fn an_arena_keeps_every_item_at_its_number_across_its_chunks() {
        let mut arena = Arena::default();
        for i in 0..5000usize {
            let (n, item) = arena.push(i * 3).unwrap();
            assert_eq!((n, *item), (i, i * 3));
        }
        for i in 0..5000usize {
            assert_eq!(arena.get(i), Some(&(i * 3)));
        }
        assert_eq!(arena.get(5000), None);
        assert_eq!(Arena::<u8>::locate(15), (0, 15));
        assert_eq!(Arena::<u8>::locate(16), (1, 0));
        assert_eq!(Arena::<u8>::locate(47), (1, 31));
        assert_eq!(Arena::<u8>::locate(48), (2, 0));
        arena.clear();
        assert_eq!(arena.get(0), None);
        assert_eq!(arena.push(7).map(|(n, v)| (n, *v)), Some((0, 7)));
    }

    #[test]
    fn a_read_takes_its_own_line_alone_and_more_only_for_a_walk_of_neighbours() {
        let mut ahead = Readahead::default();
        // A line far from the last read: itself alone.
        assert_eq!(ahead.plan(1000), (false, 1));
        ahead.took(1000, 1000);
        assert_eq!(ahead.plan(500), (true, 1));
        ahead.took(500, 500);
        // Three lines away from the last read: still alone.
        assert_eq!(ahead.plan(497), (true, 1));
        ahead.took(497, 497);
        // Its parent just above (or with one line between): a walk up the file, twice
        // as many lines at each read.
        assert_eq!(ahead.plan(496), (true, 2));
        ahead.took(495, 496);
        assert_eq!(ahead.plan(493), (true, 4));
        ahead.took(490, 493);
        let (mut first, mut lines) = (490u32, 4);
        for _ in 0..6 {
            let (down, n) = ahead.plan(first - 1);
            assert!(down);
            lines = n;
            ahead.took(first - n, first - 1);
            first -= n;
        }
        assert_eq!(lines, BLOCK as u32);
        // A side branch of up to a quarter of that skipped: the walk goes on.
        assert_eq!(ahead.plan(first - 16), (true, BLOCK as u32));
        ahead.took(first - 16 - 63, first - 16);
        // More is a jump: one line.
        assert_eq!(ahead.plan(first - 16 - 63 - 18), (true, 1));
        // Then a jump away: one line again; a walk down the file reads ahead after it.
        assert_eq!(ahead.plan(5000), (false, 1));
        ahead.took(5000, 5000);
        assert_eq!(ahead.plan(5001), (false, 2));
    }
}
