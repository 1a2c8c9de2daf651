//! The session index: a disposable cache beside a JSONL file, `<file>.idx`, that lets
//! open skip reading the lines it covers.
//!
//! The JSONL file stays the only source of truth. Open uses an index only when it
//! matches the file: same device and inode, a size at least the covered size, the
//! modification time it recorded (equal when the file has exactly the covered size,
//! not older when it grew), a checksum of 16 regions of 256 bytes spread over the
//! covered prefix, and a checksum of the last covered line. Anything else — another
//! file, a shorter one, a changed time or byte in those places, a torn, truncated,
//! foreign or other-version index — and the store is rebuilt from the file exactly as
//! without an index. Bytes after the covered prefix are recovered and replayed as
//! always (tail rules, `needs_repair`, line numbers). Outside the guarantee: a
//! same-size rewrite of the covered prefix by another program that keeps the
//! modification time and misses the sampled regions and the last line. Even then no
//! changed line is returned (every read of a line checks it, below), but what the
//! index derives from lines a query does not return — which entries are an entry's
//! children, the leaves and roots, depth and child count, whether an id exists — is as
//! it was indexed; `{"verify":"full"}` checks every line at open.
//!
//! Nothing is read at open beyond the header, the page checksums, the samples, the
//! last line, and the roots and labels. Queries read index pages and lines on demand:
//! an index page is checked against its checksum when read (a mismatch means the
//! store replays the file and answers from it), and a line against its record's
//! checksum, id hash and parent every time it is read from the file — the first time
//! and every later one, cached or streamed, so a file changed since is seen (a mismatch
//! is `corrupt_line` with its line number, and the store is not tainted); a label, also
//! against the line of the entry that set it. Pages and lines read stay cached up to
//! 16 MiB between operations; what is answered from the cache was checked when read.
//!
//! An index is written only for a file that is exactly its entries' canonical lines
//! (`json + "\n"` each, no blank lines, no extra whitespace): every file the library
//! writes itself. Other files open as before, without one. A writer never writes one
//! after the file's change time moved other than by its own appends (the records it
//! holds may then describe bytes that are gone): it removes the index instead (see
//! `FileSink::write_index`). How the file is created: [`write`].
//!
//! Format (version 2, little-endian, in 4 KiB pages). Page 0 holds the 256-byte
//! header: magic `LSIDX\r\n\x1a`, version `u32`, page size `u32`, record size `u32`,
//! reserved `u32`; then `u64`s: device, inode, covered size, mtime seconds, mtime
//! nanoseconds, entries, id-hash seed, hash-table slots, roots-and-labels bytes, roots,
//! labels, checksummed pages, checksum of the page checksums, checksum of the samples,
//! checksum of the last line; then the first and last leaf (`u32`); the header's own
//! checksum is its last 8 bytes. Then, each section starting on a page: one 104-byte
//! record per entry, 39 to a page (line offset `u64`, id hash `u64`, line length `u32`,
//! line checksum `u32`, parent `u32`, facts 44 bytes: flags, kind, role, tool pairing
//! and the spans of id, parent, timestamp and body; tree links 8 × `u32`: first
//! child, last child, next sibling, child count, depth, jump, previous and next
//! leaf); the id hash table (open addressing, a power of two of 8-byte slots:
//! position `u32`, high half of the id hash `u32`); the roots (`u32` each) and labels
//! (target `u32`, label entry `u32`, length `u32`, UTF-8 text); and last, one
//! checksum `u64` per page from page 1 to the end of the labels. Checksums are
//! xxHash64 (seed 0): they detect change, they do not resist an adversary.

use std::cell::{Cell, OnceCell, RefCell};
use std::fs::{self, File};
use std::io::{self, Write};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};

use super::log::{NONE, ORPHAN};
use crate::entry::{Body, EntryParser, Facts, Role, Span, Text, Tools};
use crate::error::{EntryError, Error, IoFailure, IoOp, LineFault};
use crate::recover::MAX_LINE_BYTES;

const MAGIC: &[u8; 8] = b"LSIDX\r\n\x1a";
const VERSION: u32 = 2;
/// The unit of reading and of checksums.
const PAGE: usize = 4096;
/// The header's size, at the start of page 0.
const HEADER: usize = 256;
/// A record's size, and how many fit in a page (records never span pages).
const RECORD: usize = 104;
const PER_PAGE: usize = PAGE / RECORD;
/// The facts' part of a record.
const FACTS: usize = 44;
/// A hash-table slot: position and tag (`u32` each).
const SLOT: usize = 8;
/// Regions of the covered prefix whose checksum open compares, and their size.
const SAMPLES: usize = 16;
const SAMPLE_LEN: usize = 256;
/// Entries whose lines are read together.
const BLOCK: usize = 64;

/// Record flags.
const PARSE: u8 = 1;
const HAS_PARENT: u8 = 2;
const KNOWN_FLAGS: u8 = PARSE | HAS_PARENT;

/// Appends after which a writer rewrites its index, so that a crash costs at most a
/// bounded tail replay at the next open.
pub(crate) const REWRITE_EVERY_APPENDS: u64 = 65_536;
/// Bytes appended after which a writer rewrites its index.
pub(crate) const REWRITE_EVERY_BYTES: u64 = 64 << 20;

/// The index file of the session at `path`: `<path>.idx` (it never ends in `.jsonl`).
pub fn index_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".idx");
    PathBuf::from(name)
}

/// A streaming 64-bit checksum (xxHash64, seed 0, from the `xxhash-rust` crate): the
/// same value whatever the pieces the bytes are fed in. Not cryptographic: it detects
/// change, it does not resist an adversary.
#[derive(Clone)]
pub(crate) struct Hash64(xxhash_rust::xxh64::Xxh64);

impl Default for Hash64 {
    fn default() -> Hash64 {
        Hash64(xxhash_rust::xxh64::Xxh64::new(0))
    }
}

impl Hash64 {
    pub(crate) fn update(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }

    pub(crate) fn finish(&self) -> u64 {
        self.0.digest()
    }

    /// The checksum of `bytes` in one piece.
    pub(crate) fn of(bytes: &[u8]) -> u64 {
        xxhash_rust::xxh64::xxh64(bytes, 0)
    }
}

/// Where the index and the session file are read from: the files themselves, or bytes
/// in memory (the fuzz target).
pub(crate) trait Source: Send {
    /// Reads at most `buf.len()` bytes at `at`; a short count means the end.
    fn read_at(&self, buf: &mut [u8], at: u64) -> io::Result<usize>;
}

impl Source for File {
    fn read_at(&self, buf: &mut [u8], at: u64) -> io::Result<usize> {
        FileExt::read_at(self, buf, at)
    }
}

impl Source for Vec<u8> {
    fn read_at(&self, buf: &mut [u8], at: u64) -> io::Result<usize> {
        let start = usize::try_from(at).unwrap_or(usize::MAX).min(self.len());
        let n = buf.len().min(self.len() - start);
        buf[..n].copy_from_slice(&self[start..start + n]);
        Ok(n)
    }
}

/// Fills `buf` from `at`; `Ok(false)` when the source ends first.
fn read_exact_at(source: &dyn Source, buf: &mut [u8], at: u64) -> io::Result<bool> {
    let mut filled = 0;
    while filled < buf.len() {
        match source.read_at(&mut buf[filled..], at + filled as u64) {
            Ok(0) => return Ok(false),
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(true)
}

/// What identifies the session file's state when its index is written, and is checked
/// when it is read: device, inode, size and modification time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Stamp {
    pub(crate) dev: u64,
    pub(crate) ino: u64,
    pub(crate) size: u64,
    /// Seconds and nanoseconds.
    pub(crate) mtime: (i64, i64),
}

impl Stamp {
    pub(crate) fn of(meta: &fs::Metadata) -> Stamp {
        Stamp {
            dev: meta.dev(),
            ino: meta.ino(),
            size: meta.len(),
            mtime: (meta.mtime(), meta.mtime_nsec()),
        }
    }
}

/// The index hash of an entry id (xxHash64 of the index's seed and the id).
fn id_hash(seed: u64, id: &str) -> u64 {
    let mut hash = Hash64::default();
    hash.update(&seed.to_le_bytes());
    hash.update(id.as_bytes());
    hash.finish()
}

/// The 32-bit checksum of one line as a record keeps it.
fn line_sum(json: &[u8]) -> u32 {
    let mut hash = Hash64::default();
    hash.update(json);
    hash.update(b"\n");
    hash.finish() as u32
}

fn u32_at(bytes: &[u8], at: usize) -> Option<u32> {
    let mut w = [0u8; 4];
    w.copy_from_slice(bytes.get(at..at.checked_add(4)?)?);
    Some(u32::from_le_bytes(w))
}

fn u64_at(bytes: &[u8], at: usize) -> Option<u64> {
    let mut w = [0u8; 8];
    w.copy_from_slice(bytes.get(at..at.checked_add(8)?)?);
    Some(u64::from_le_bytes(w))
}

fn role_code(role: Role) -> u8 {
    match role {
        Role::User => 0,
        Role::Assistant => 1,
        Role::ToolResult => 2,
        Role::Extension => 3,
    }
}

fn role_of(code: u8) -> Option<Role> {
    match code {
        0 => Some(Role::User),
        1 => Some(Role::Assistant),
        2 => Some(Role::ToolResult),
        3 => Some(Role::Extension),
        _ => None,
    }
}

/// The facts of an entry as a record holds them: flags, kind, role, tool pairing, and
/// the spans of id, parent, timestamp and body. A line whose facts do not fit (an
/// escaped id, a label, a compaction) is flagged to be parsed again when read.
fn encode_facts(facts: &Facts) -> [u8; FACTS] {
    let mut flags = 0;
    let in_json = |text: &Text| match text {
        Text::InJson(span) => Some(span.parts()),
        Text::Decoded(_) => None,
    };
    let id = in_json(&facts.id);
    let parent = match &facts.parent {
        Some(parent) => {
            flags |= HAS_PARENT;
            in_json(parent)
        }
        None => Some((0, 0)),
    };
    let body = match &facts.body {
        Body::Message { role, span, tools } => match tools {
            Tools::None => Some((0, role_code(*role), 0, Some(span.parts()), (0, 0))),
            Tools::Calls => Some((0, role_code(*role), 1, Some(span.parts()), (0, 0))),
            Tools::Result(call) => {
                in_json(call).map(|call| (0, role_code(*role), 2, Some(span.parts()), call))
            }
        },
        Body::Metadata {
            key,
            value,
            label_target: None,
        } => Some((1, 0, 0, in_json(key), value.parts())),
        Body::Metadata { .. } | Body::Compaction { .. } => None,
    };
    let (kind, role, tools, spans) = match (id, parent, body) {
        (Some(id), Some(parent), Some((kind, role, tools, Some(a), b))) => (
            kind,
            role,
            tools,
            [id, parent, facts.timestamp.parts(), a, b],
        ),
        _ => {
            flags |= PARSE;
            (0, 0, 0, [(0, 0); 5])
        }
    };
    let mut out = [0u8; FACTS];
    out[..4].copy_from_slice(&[flags, kind, role, tools]);
    for (i, (start, len)) in spans.into_iter().enumerate() {
        out[4 + i * 8..8 + i * 8].copy_from_slice(&start.to_le_bytes());
        out[8 + i * 8..12 + i * 8].copy_from_slice(&len.to_le_bytes());
    }
    out
}

/// The facts a record holds, over its line `json`; `None` when they do not hold there
/// (an index that lies). A flagged line is parsed again with `parser`.
fn decode_facts(raw: &[u8; FACTS], json: &[u8], parser: &mut EntryParser) -> Option<Facts> {
    let [flags, kind, role, tools] = [raw[0], raw[1], raw[2], raw[3]];
    if flags & !KNOWN_FLAGS != 0 {
        return None;
    }
    if flags & PARSE != 0 {
        return match parser.parse(json) {
            Ok((canonical, facts)) if canonical == json => Some(facts),
            _ => None,
        };
    }
    let mut spans = [(0u32, 0u32); 5];
    for (i, span) in spans.iter_mut().enumerate() {
        let (start, len) = (u32_at(raw, 4 + i * 8)?, u32_at(raw, 8 + i * 8)?);
        if u64::from(start) + u64::from(len) > json.len() as u64 {
            return None;
        }
        *span = (start, len);
    }
    let span = |(start, len): (u32, u32)| Span::from_parts(start, len);
    let text = |(start, len): (u32, u32)| {
        let span = span((start, len));
        std::str::from_utf8(span.bytes(json))
            .ok()
            .filter(|s| !s.is_empty())?;
        Some(Text::InJson(span))
    };
    let [id, parent, timestamp, a, b] = spans;
    let body = match (kind, tools) {
        (0, 0..=2) => Body::Message {
            role: role_of(role)?,
            span: span(a),
            tools: match tools {
                0 => Tools::None,
                1 => Tools::Calls,
                _ => Tools::Result(text(b)?),
            },
        },
        (1, 0) if role == 0 => Body::Metadata {
            key: text(a)?,
            value: span(b),
            label_target: None,
        },
        _ => return None,
    };
    Some(Facts {
        id: text(id)?,
        parent: if flags & HAS_PARENT != 0 {
            Some(text(parent)?)
        } else {
            None
        },
        timestamp: span(timestamp),
        body,
    })
}

/// One entry's record: where its line is, its checksum and id hash, its parent, its
/// facts and its tree links (`first_child, last_child, next_sibling, child_count,
/// depth, jump, leaf_prev, leaf_next`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Raw {
    pub(crate) offset: u64,
    pub(crate) id_hash: u64,
    pub(crate) len: u32,
    pub(crate) sum: u32,
    pub(crate) parent: u32,
    pub(crate) facts: [u8; FACTS],
    pub(crate) links: [u32; 8],
}

impl Raw {
    fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.offset.to_le_bytes());
        out.extend_from_slice(&self.id_hash.to_le_bytes());
        out.extend_from_slice(&self.len.to_le_bytes());
        out.extend_from_slice(&self.sum.to_le_bytes());
        out.extend_from_slice(&self.parent.to_le_bytes());
        out.extend_from_slice(&self.facts);
        for link in self.links {
            out.extend_from_slice(&link.to_le_bytes());
        }
    }

    fn read(bytes: &[u8]) -> Option<Raw> {
        let mut facts = [0u8; FACTS];
        facts.copy_from_slice(bytes.get(28..28 + FACTS)?);
        let mut links = [0u32; 8];
        for (i, link) in links.iter_mut().enumerate() {
            *link = u32_at(bytes, 28 + FACTS + i * 4)?;
        }
        Some(Raw {
            offset: u64_at(bytes, 0)?,
            id_hash: u64_at(bytes, 8)?,
            len: u32_at(bytes, 16)?,
            sum: u32_at(bytes, 20)?,
            parent: u32_at(bytes, 24)?,
            facts,
            links,
        })
    }
}

/// What the writer knows of an entry to record it (see [`Raw`]); `json` is given for
/// an entry whose checksum and id hash must be computed, `None` when `raw` already has
/// them (an entry read from the previous index).
pub(crate) struct Item<'a> {
    pub(crate) raw: Raw,
    pub(crate) json: Option<(&'a [u8], &'a Facts)>,
}

/// Everything [`encode`] writes besides the records.
pub(crate) struct Tree<'a> {
    pub(crate) roots: &'a [u32],
    /// (target, label entry, label text), ordered by target.
    pub(crate) labels: Vec<(u32, u32, &'a str)>,
    pub(crate) leaf_first: u32,
    pub(crate) leaf_last: u32,
}

fn pages_for(bytes: u64) -> u64 {
    bytes.div_ceil(PAGE as u64)
}

/// The page layout of an index of `entries` records and `extra` bytes of roots and
/// labels: (record pages, table slots, table pages, extra pages, checksummed pages,
/// checksum pages).
fn layout(entries: u64, slots: u64, extra: u64) -> (u64, u64, u64, u64, u64) {
    let record_pages = entries.div_ceil(PER_PAGE as u64);
    let table_pages = pages_for(slots.saturating_mul(SLOT as u64));
    let extra_pages = pages_for(extra);
    let pages = record_pages
        .saturating_add(table_pages)
        .saturating_add(extra_pages);
    let sum_pages = pages_for(pages.saturating_mul(8));
    (record_pages, table_pages, extra_pages, pages, sum_pages)
}

fn pad_to_page(out: &mut Vec<u8>) {
    let rest = out.len() % PAGE;
    if rest != 0 {
        out.resize(out.len() + PAGE - rest, 0);
    }
}

/// The index of `items` (every committed entry, in commit order), for the session file
/// `file` in the state `stamp`, whose committed prefix is exactly the entries' lines
/// (`stamp.size` bytes). Reads the sampled regions and the last line from `file`.
/// `None` when there is nothing to index or the file does not hold what the items say.
pub(crate) fn encode<'a>(
    items: impl Iterator<Item = Option<Item<'a>>>,
    count: usize,
    tree: &Tree<'_>,
    seed: u64,
    file: &dyn Source,
    stamp: Stamp,
) -> Option<Vec<u8>> {
    let entries = u64::try_from(count).ok().filter(|&n| n > 0)?;
    let slots = entries.checked_mul(2)?.next_power_of_two().max(8);
    let mut extra = Vec::new();
    for &root in tree.roots {
        extra.extend_from_slice(&root.to_le_bytes());
    }
    for &(target, entry, text) in &tree.labels {
        extra.extend_from_slice(&target.to_le_bytes());
        extra.extend_from_slice(&entry.to_le_bytes());
        extra.extend_from_slice(&u32::try_from(text.len()).ok()?.to_le_bytes());
        extra.extend_from_slice(text.as_bytes());
    }
    let (record_pages, _, _, pages, sum_pages) = layout(entries, slots, extra.len() as u64);
    let total = usize::try_from((1 + pages + sum_pages).checked_mul(PAGE as u64)?).ok()?;
    let mut out = Vec::with_capacity(total);
    out.resize(PAGE, 0);
    let mut table = vec![(NONE, 0u32); usize::try_from(slots).ok()?];
    let mask = slots - 1;
    let mut offset = 0u64;
    let mut last = None;
    let mut written = 0u64;
    for (position, item) in items.enumerate() {
        let Item { mut raw, json } = item?;
        written += 1;
        if let Some((json, facts)) = json {
            raw.len = u32::try_from(json.len()).ok()?;
            raw.sum = line_sum(json);
            raw.id_hash = id_hash(seed, facts.id(json));
            raw.facts = encode_facts(facts);
        }
        if raw.offset != offset {
            return None;
        }
        offset = offset.checked_add(u64::from(raw.len) + 1)?;
        let mut slot = raw.id_hash & mask;
        while table[slot as usize].0 != NONE {
            slot = (slot + 1) & mask;
        }
        table[slot as usize] = (u32::try_from(position).ok()?, (raw.id_hash >> 32) as u32);
        if position % PER_PAGE == 0 && position > 0 {
            pad_to_page(&mut out);
        }
        raw.write(&mut out);
        last = Some(raw);
    }
    let last = last?;
    if written != entries || offset != stamp.size || out.len() > PAGE * (1 + record_pages as usize)
    {
        return None;
    }
    pad_to_page(&mut out);
    for (position, tag) in &table {
        out.extend_from_slice(&position.to_le_bytes());
        out.extend_from_slice(&tag.to_le_bytes());
    }
    pad_to_page(&mut out);
    out.extend_from_slice(&extra);
    pad_to_page(&mut out);
    if out.len() as u64 != (1 + pages) * PAGE as u64 {
        return None;
    }
    let sums: Vec<u8> = out[PAGE..]
        .chunks_exact(PAGE)
        .flat_map(|page| Hash64::of(page).to_le_bytes())
        .collect();
    let sums_hash = Hash64::of(&sums);
    out.extend_from_slice(&sums);
    pad_to_page(&mut out);
    // The file must hold, now, what the records say: its samples and its last line.
    let sample = sample_hash(file, stamp.size).ok()??;
    let mut line = vec![0u8; last.len as usize + 1];
    if !read_exact_at(file, &mut line, last.offset).ok()?
        || line_sum(&line[..line.len() - 1]) != last.sum
    {
        return None;
    }
    let header = Header {
        stamp,
        entries,
        seed,
        slots,
        extra_bytes: extra.len() as u64,
        roots: tree.roots.len() as u64,
        labels: tree.labels.len() as u64,
        pages,
        sums_hash,
        leaf_first: tree.leaf_first,
        leaf_last: tree.leaf_last,
        sample_hash: sample,
        last_hash: Hash64::of(&line),
    };
    out[..HEADER].copy_from_slice(&header.encode());
    Some(out)
}

/// The checksum of the sampled regions of the first `covered` bytes: `SAMPLES`
/// regions of `SAMPLE_LEN` bytes spread evenly. `None` when the file is shorter.
fn sample_hash(file: &dyn Source, covered: u64) -> io::Result<Option<u64>> {
    let mut hash = Hash64::default();
    let mut buf = [0u8; SAMPLE_LEN];
    for k in 0..SAMPLES as u64 {
        let at = covered / SAMPLES as u64 * k;
        let len = (covered - at).min(SAMPLE_LEN as u64) as usize;
        if !read_exact_at(file, &mut buf[..len], at)? {
            return Ok(None);
        }
        hash.update(&buf[..len]);
    }
    Ok(Some(hash.finish()))
}

/// The first page's fields.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Header {
    stamp: Stamp,
    entries: u64,
    seed: u64,
    slots: u64,
    extra_bytes: u64,
    roots: u64,
    labels: u64,
    /// Checksummed pages (every page between the header and the checksums).
    pages: u64,
    sums_hash: u64,
    leaf_first: u32,
    leaf_last: u32,
    sample_hash: u64,
    last_hash: u64,
}

impl Header {
    fn encode(&self) -> [u8; HEADER] {
        let mut out = Vec::with_capacity(HEADER);
        out.extend_from_slice(MAGIC);
        for v in [VERSION, PAGE as u32, RECORD as u32, 0] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        let s = &self.stamp;
        for v in [
            s.dev,
            s.ino,
            s.size,
            s.mtime.0 as u64,
            s.mtime.1 as u64,
            self.entries,
            self.seed,
            self.slots,
            self.extra_bytes,
            self.roots,
            self.labels,
            self.pages,
            self.sums_hash,
            self.sample_hash,
            self.last_hash,
        ] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out.extend_from_slice(&self.leaf_first.to_le_bytes());
        out.extend_from_slice(&self.leaf_last.to_le_bytes());
        out.resize(HEADER - 8, 0);
        let seal = Hash64::of(&out);
        out.extend_from_slice(&seal.to_le_bytes());
        let mut header = [0u8; HEADER];
        header.copy_from_slice(&out);
        header
    }

    /// The header's fields if it is intact and of this version; its layout is checked
    /// by [`Base::open`].
    fn decode(bytes: &[u8]) -> Option<Header> {
        if bytes.len() < HEADER || bytes.get(..8)? != MAGIC {
            return None;
        }
        if u32_at(bytes, 8)? != VERSION
            || u32_at(bytes, 12)? != PAGE as u32
            || u32_at(bytes, 16)? != RECORD as u32
        {
            return None;
        }
        if Hash64::of(&bytes[..HEADER - 8]) != u64_at(bytes, HEADER - 8)? {
            return None;
        }
        let v = |i: usize| u64_at(bytes, 24 + i * 8);
        Some(Header {
            stamp: Stamp {
                dev: v(0)?,
                ino: v(1)?,
                size: v(2)?,
                mtime: (v(3)? as i64, v(4)? as i64),
            },
            entries: v(5)?,
            seed: v(6)?,
            slots: v(7)?,
            extra_bytes: v(8)?,
            roots: v(9)?,
            labels: v(10)?,
            pages: v(11)?,
            sums_hash: v(12)?,
            sample_hash: v(13)?,
            last_hash: v(14)?,
            leaf_first: u32_at(bytes, 24 + 15 * 8)?,
            leaf_last: u32_at(bytes, 28 + 15 * 8)?,
        })
    }
}

/// Why a read through the index failed.
pub(crate) enum Fault {
    /// The index itself is damaged or lies (a page checksum, a layout or a record that
    /// does not hold over its line): the store falls back to the file.
    Index,
    /// A line of the file is damaged (`corrupt_line`), or reading failed (`io`).
    Error(Error),
}

/// The lines of one block, read together, and the facts of those already validated.
struct Block {
    start: u64,
    bytes: Box<[u8]>,
    facts: Box<[OnceCell<Facts>]>,
}

/// The committed prefix an index covers, read on demand: index pages are checked
/// against their checksums, lines against their record, at every read from the files.
/// Neither is kept beyond [`CACHE_BYTES`] between operations.
pub(crate) struct Base {
    jsonl: Box<dyn Source>,
    index: Box<dyn Source>,
    path: PathBuf,
    entries: u32,
    covered: u64,
    seed: u64,
    slots: u64,
    table_page: u64,
    /// The page checksums, `u64` little-endian each.
    sums: Vec<u8>,
    pages: Lazy<Box<[u8]>>,
    blocks: Lazy<Block>,
    cached: Cell<usize>,
    parser: RefCell<EntryParser>,
    /// The session file, to replay it when the index fails.
    file: Option<File>,
    /// Loaded at open: the roots, the labels (target, label entry, text), and the ends
    /// of the leaf list.
    pub(crate) roots: Vec<u32>,
    pub(crate) labels: Vec<IndexedLabel>,
    pub(crate) leaf_first: u32,
    pub(crate) leaf_last: u32,
}

/// Bytes of pages and lines a base keeps between operations; beyond, they are dropped
/// at the start of the next one and read again when needed.
const CACHE_BYTES: usize = 16 << 20;

impl Base {
    /// The base of the file `jsonl` (in the state `stamp`; `None` skips the identity
    /// checks, for the fuzz target) from its index `index`, when the index is intact,
    /// of this version, and matches the file: device, inode, covered size, modification
    /// time, sampled regions and last line. `Ok(None)` means: replay the file.
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
            if !same_file || now.size < recorded.size || !time_fits {
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
            blocks: Lazy::new(entries.div_ceil(BLOCK as u64) as usize),
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
            self.blocks.clear();
            self.cached.set(0);
        }
    }

    fn io(&self, what: &str, e: &io::Error) -> Fault {
        let path = format!("{} ({what})", self.path.display());
        Fault::Error(Error::Io(std::sync::Arc::new(IoFailure::new(
            IoOp::Read,
            &path,
            e,
        ))))
    }

    /// Index page `page` (1-based: page 0 is the header), checked against its checksum.
    fn page(&self, page: u64) -> Result<&[u8], Fault> {
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
    /// it (so that every walk ends), every link inside the base or `NONE`.
    fn holds(&self, position: u32, raw: &Raw) -> bool {
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
        ] = raw.links;
        raw.len >= 2
            && raw.len as usize <= MAX_LINE_BYTES
            && raw.offset.saturating_add(u64::from(raw.len) + 1) <= self.covered
            && before(raw.parent)
            && before(jump)
            && before(leaf_prev)
            && after(first_child)
            && after(last_child)
            && after(next_sibling)
            && after(leaf_next)
            && child_count < n
    }

    /// The byte range of block `block`'s lines in the file.
    fn block_range(&self, block: usize) -> Result<(u64, u64), Fault> {
        let first = u32::try_from(block * BLOCK).map_err(|_| Fault::Index)?;
        if first >= self.entries {
            return Err(Fault::Index);
        }
        let last = (first as usize + BLOCK).min(self.entries as usize) as u32 - 1;
        let start = match first {
            0 => 0,
            _ => {
                let before = self.record(first - 1)?;
                before.offset + u64::from(before.len) + 1
            }
        };
        let end = {
            let last = self.record(last)?;
            last.offset + u64::from(last.len) + 1
        };
        let lines = u64::from(last - first + 1);
        if end <= start || end > self.covered || end - start > lines * (MAX_LINE_BYTES as u64 + 1) {
            return Err(Fault::Index);
        }
        Ok((start, end))
    }

    /// Reads block `block`'s lines into `buf` (reusing its allocation); returns where
    /// they start in the file.
    fn read_block(&self, block: usize, buf: &mut Vec<u8>) -> Result<u64, Fault> {
        let (start, end) = self.block_range(block)?;
        buf.clear();
        buf.resize((end - start) as usize, 0);
        match read_exact_at(self.jsonl.as_ref(), buf, start) {
            Ok(true) => Ok(start),
            // The file is shorter than when it was opened.
            Ok(false) => Err(Fault::Index),
            Err(e) => Err(self.io("reading a line", &e)),
        }
    }

    /// The lines of block `block`, read at the first need and cached.
    fn block(&self, block: usize) -> Result<&Block, Fault> {
        let cell = self.blocks.cell(block).ok_or(Fault::Index)?;
        if let Some(b) = cell.get() {
            return Ok(b);
        }
        let mut bytes = Vec::new();
        let start = self.read_block(block, &mut bytes)?;
        self.cached.set(self.cached.get() + bytes.len());
        let lines = (self.entries as usize - block * BLOCK).min(BLOCK);
        let _ = cell.set(Block {
            start,
            bytes: bytes.into_boxed_slice(),
            facts: (0..lines).map(|_| OnceCell::new()).collect(),
        });
        cell.get().ok_or(Fault::Index)
    }

    /// The line (with its last byte, `\n` when intact) of the entry of record `raw`
    /// in a block read from `start`.
    fn line_in<'b>(raw: &Raw, start: u64, bytes: &'b [u8]) -> Result<&'b [u8], Fault> {
        let from = raw.offset.checked_sub(start).ok_or(Fault::Index)? as usize;
        bytes
            .get(from..from + raw.len as usize + 1)
            .ok_or(Fault::Index)
    }

    /// The canonical JSON and facts of the entry at `position`, checked when its block
    /// is read from the file (see [`Base::check`]) and then kept with the block: a line
    /// that is not what was indexed is `corrupt_line` at its line number.
    pub(crate) fn entry(&self, position: u32) -> Result<(&[u8], &Facts), Fault> {
        let raw = self.record(position)?;
        let block = self.block(position as usize / BLOCK)?;
        let line = Base::line_in(&raw, block.start, &block.bytes)?;
        let json = &line[..line.len() - 1];
        let cell = block
            .facts
            .get(position as usize % BLOCK)
            .ok_or(Fault::Index)?;
        if let Some(facts) = cell.get() {
            return Ok((json, facts));
        }
        let facts = self.check(position, &raw, line)?;
        let _ = cell.set(facts);
        cell.get().map(|f| (json, f)).ok_or(Fault::Index)
    }

    /// A reader of many lines through one reused block buffer instead of the cache:
    /// a read of a whole path or of every entry costs one block of memory.
    pub(crate) fn streamer(&self) -> Streamer<'_> {
        Streamer {
            base: self,
            buf: Vec::new(),
            loaded: None,
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
    fn check(&self, position: u32, raw: &Raw, line: &[u8]) -> Result<Facts, Fault> {
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
    fn changed(&self, position: u32, line: &[u8]) -> Error {
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

    /// The position of the entry with `id`, through the index's hash table.
    pub(crate) fn find(&self, id: &str) -> Result<Option<u32>, Fault> {
        let hash = id_hash(self.seed, id);
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
struct Lazy<T> {
    chunks: Box<[OnceCell<Chunk<T>>]>,
    len: usize,
}

const LAZY_CHUNK: usize = 256;

/// [`LAZY_CHUNK`] cells.
type Chunk<T> = Box<[OnceCell<T>]>;

impl<T> Lazy<T> {
    fn new(len: usize) -> Lazy<T> {
        Lazy {
            chunks: (0..len.div_ceil(LAZY_CHUNK))
                .map(|_| OnceCell::new())
                .collect(),
            len,
        }
    }

    /// Cell `i`, `None` past the end.
    fn cell(&self, i: usize) -> Option<&OnceCell<T>> {
        if i >= self.len {
            return None;
        }
        let chunk = self.chunks.get(i / LAZY_CHUNK)?;
        let cells = chunk.get_or_init(|| (0..LAZY_CHUNK).map(|_| OnceCell::new()).collect());
        cells.get(i % LAZY_CHUNK)
    }

    /// Whether cell `i` holds a value (creates nothing).
    fn loaded(&self, i: usize) -> bool {
        self.chunks
            .get(i / LAZY_CHUNK)
            .and_then(OnceCell::get)
            .and_then(|cells| cells.get(i % LAZY_CHUNK))
            .is_some_and(|cell| cell.get().is_some())
    }

    /// Drops every value.
    fn clear(&mut self) {
        self.chunks.iter_mut().for_each(|c| *c = OnceCell::new());
    }
}

/// See [`Base::streamer`].
pub(crate) struct Streamer<'b> {
    base: &'b Base,
    buf: Vec<u8>,
    /// The block in `buf` and where its lines start in the file.
    loaded: Option<(usize, u64)>,
}

impl Streamer<'_> {
    /// Calls `f` with the entry at `position`, checked as [`Base::entry`] checks it.
    /// Reading positions in ascending order reads each block once.
    pub(crate) fn read(
        &mut self,
        position: u32,
        f: &mut dyn FnMut(&[u8], &Facts),
    ) -> Result<(), Fault> {
        let base = self.base;
        let block = position as usize / BLOCK;
        if base.blocks.loaded(block) {
            let (json, facts) = base.entry(position)?;
            f(json, facts);
            return Ok(());
        }
        let start = match self.loaded {
            Some((at, start)) if at == block => start,
            _ => {
                let start = base.read_block(block, &mut self.buf)?;
                self.loaded = Some((block, start));
                start
            }
        };
        let raw = base.record(position)?;
        let line = Base::line_in(&raw, start, &self.buf)?;
        let facts = base.check(position, &raw, line)?;
        f(&line[..line.len() - 1], &facts);
        Ok(())
    }
}

/// The roots and labels section.
/// A label as the index keeps it: target, label entry, text.
pub(crate) type IndexedLabel = (u32, u32, String);

fn read_extra(bytes: &[u8], header: &Header) -> Option<(Vec<u32>, Vec<IndexedLabel>)> {
    let entries = header.entries;
    let mut at = 0usize;
    let mut roots = Vec::new();
    for _ in 0..header.roots {
        let root = u32_at(bytes, at)?;
        if u64::from(root) >= entries {
            return None;
        }
        roots.push(root);
        at += 4;
    }
    let mut labels = Vec::new();
    for _ in 0..header.labels {
        let (target, entry, len) = (
            u32_at(bytes, at)?,
            u32_at(bytes, at + 4)?,
            u32_at(bytes, at + 8)?,
        );
        at += 12;
        let text = std::str::from_utf8(bytes.get(at..at.checked_add(len as usize)?)?).ok()?;
        at += len as usize;
        if u64::from(target) >= entries || u64::from(entry) >= entries {
            return None;
        }
        labels.push((target, entry, text.to_owned()));
    }
    (at as u64 == header.extra_bytes).then_some((roots, labels))
}

/// Writes `bytes` as the index of the session at `path`, atomically: a new temporary
/// file beside it, synced when `durable`, renamed over the index (and the directory
/// synced when `durable`). `like` is the session file's metadata: the index gets its
/// permission bits and owner (see [`super::file::create_sidecar`]).
///
/// The temporary is created exclusively, never through a symbolic link, under the
/// first free name among `<file>.idx.tmp`, `<file>.idx.tmp-2`, … (shortened to fit
/// `NAME_MAX`): whatever already exists at a name (a link, a FIFO, another writer's
/// file) is never opened. A writer holding the lock (`locked`) removes a regular file
/// left at a name by a writer that was killed. The rename replaces whatever is at
/// `<file>.idx` (a symbolic link is replaced, not written through). A session whose
/// index name would exceed `NAME_MAX` gets no index (`InvalidInput`).
pub(crate) fn write(
    path: &Path,
    bytes: &[u8],
    durable: bool,
    like: &fs::Metadata,
    locked: bool,
) -> io::Result<()> {
    let target = index_path(path);
    let name = target.file_name().unwrap_or_default().to_owned();
    if name.len() > super::file::NAME_MAX {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "the index name would be longer than NAME_MAX",
        ));
    }
    let (temp, mut file) = create_temp(&target, &name, like, locked)?;
    let result = (|| {
        file.write_all(bytes)?;
        if durable {
            file.sync_all()?;
        }
        drop(file);
        fs::rename(&temp, &target)?;
        if durable {
            super::jsonl::sync_dir(&target)?;
        }
        Ok(())
    })();
    if result.is_err() {
        let _ = fs::remove_file(&temp);
    }
    result
}

/// A new temporary file for the index `target` (named `name`): see [`write`].
fn create_temp(
    target: &Path,
    name: &std::ffi::OsStr,
    like: &fs::Metadata,
    locked: bool,
) -> io::Result<(PathBuf, File)> {
    for k in 1..=100u32 {
        let suffix = if k == 1 {
            ".tmp".to_owned()
        } else {
            format!(".tmp-{k}")
        };
        let temp = target.with_file_name(super::file::sidecar_name(name, "", &suffix));
        for attempt in 0..2 {
            match super::file::create_sidecar(&temp, like) {
                Ok(file) => return Ok((temp, file)),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                    let stale = fs::symlink_metadata(&temp).is_ok_and(|m| m.file_type().is_file());
                    if locked && attempt == 0 && stale && fs::remove_file(&temp).is_ok() {
                        continue;
                    }
                    break;
                }
                Err(e) => return Err(e),
            }
        }
    }
    Err(io::Error::new(
        io::ErrorKind::AlreadyExists,
        "no free name for the index's temporary file",
    ))
}

/// Removes the index of the session at `path`, if any (after a repair).
pub fn remove_index(path: &Path) -> io::Result<()> {
    match fs::remove_file(index_path(path)) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// The checksum the index seals itself with (for tests that forge an index).
#[doc(hidden)]
pub fn index_checksum(bytes: &[u8]) -> u64 {
    Hash64::of(bytes)
}

/// Seals a forged index: its page checksums, their checksum and the header's seal, as
/// the writer computes them (so that a fuzzer reaches the records).
#[doc(hidden)]
pub fn reseal_index(index: &mut [u8]) {
    if index.len() < 2 * PAGE || !index.len().is_multiple_of(PAGE) {
        return;
    }
    let Some(pages) = u64_at(index, 24 + 11 * 8).and_then(|p| usize::try_from(p).ok()) else {
        return;
    };
    let sums_at = pages.saturating_add(1).saturating_mul(PAGE);
    if pages == 0 || sums_at.saturating_add(pages.saturating_mul(8)) > index.len() {
        return;
    }
    let sums: Vec<u8> = index[PAGE..sums_at]
        .chunks_exact(PAGE)
        .flat_map(|page| Hash64::of(page).to_le_bytes())
        .collect();
    index[sums_at..sums_at + sums.len()].copy_from_slice(&sums);
    let sums_hash = Hash64::of(&sums);
    index[24 + 12 * 8..24 + 13 * 8].copy_from_slice(&sums_hash.to_le_bytes());
    let seal = Hash64::of(&index[..HEADER - 8]);
    index[HEADER - 8..HEADER].copy_from_slice(&seal.to_le_bytes());
}

/// Fuzzing entry: opens `index` (first resealed when `reseal`) over the file bytes
/// `file`, without the identity checks, then reads every entry, finds every id and
/// walks the navigation. Returns the number of entries when the index was accepted.
#[doc(hidden)]
pub fn fuzz_index(index: &[u8], file: &[u8], reseal: bool) -> Option<usize> {
    let mut index = index.to_vec();
    if reseal {
        reseal_index(&mut index);
    }
    let len = index.len() as u64;
    let base = Base::open(
        Box::new(file.to_vec()),
        Box::new(index),
        len,
        None,
        Path::new("fuzz"),
    )
    .ok()??;
    let log = super::log::Log::with_base(base);
    Some(log.exercise())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_checksum_does_not_depend_on_how_the_bytes_are_split() {
        let bytes: Vec<u8> = (0..1000u32).map(|i| (i * 31 % 251) as u8).collect();
        let whole = Hash64::of(&bytes);
        for cut in [0, 1, 7, 31, 32, 33, 64, 500, 999, 1000] {
            let mut hash = Hash64::default();
            hash.update(&bytes[..cut]);
            hash.update(&bytes[cut..]);
            assert_eq!(hash.finish(), whole, "cut at {cut}");
        }
        let mut bytewise = Hash64::default();
        bytes
            .iter()
            .for_each(|b| bytewise.update(std::slice::from_ref(b)));
        assert_eq!(bytewise.finish(), whole);
        // Known answers of xxHash64 (seed 0).
        assert_eq!(Hash64::of(b""), 0xEF46_DB37_51D8_E999);
        assert_eq!(Hash64::of(b"a"), 0xD24E_C4F1_A98C_6E5B);
    }

    #[test]
    fn the_index_name_never_ends_in_jsonl() {
        let name = index_path(Path::new("dir/s.jsonl"));
        assert_eq!(name, Path::new("dir/s.jsonl.idx"));
    }
}
