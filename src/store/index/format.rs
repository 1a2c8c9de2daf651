//! The index file's format: its constants, checksums, record and header encodings, and
//! where its bytes are read from.

use std::fs::{self, File};
use std::io::{self};
use std::os::unix::fs::{FileExt, MetadataExt};

use crate::entry::{Body, EntryParser, Facts, Role, Span, Text, Tools};

/// No position: the parent of a root, the end of a hash chain (in the log and in the
/// index's records alike).
pub(crate) const NONE: u32 = u32::MAX;
/// The parent of an entry loaded by salvage whose parent is missing.
pub(crate) const ORPHAN: u32 = u32::MAX - 1;

pub(crate) const MAGIC: &[u8; 8] = b"LSIDX\r\n\x1a";
/// 5: version 4 recorded the change time, so an index of version 3 (without it) is
/// rebuilt, never read as this one; in version 5 the `meta` link of a replayed metadata
/// entry skips the entries of its own key above it (in version 4 it pointed at itself).
pub(crate) const VERSION: u32 = 5;
/// Where the header's `u64` field `i` starts, and the fields the fuzz helpers reseal:
/// the count of checksummed pages and the checksum of their checksums.
pub(crate) const fn header_field(i: usize) -> usize {
    24 + i * 8
}
pub(crate) const PAGES_FIELD: usize = 13;
pub(crate) const SUMS_HASH_FIELD: usize = 14;
/// The unit of reading and of checksums.
pub(crate) const PAGE: usize = 4096;
/// The header's size, at the start of page 0.
pub(crate) const HEADER: usize = 256;
/// A record's size, and how many fit in a page (records never span pages).
pub(crate) const RECORD: usize = 108;
pub(crate) const PER_PAGE: usize = PAGE / RECORD;
/// The tree links of a record (`u32` each).
pub(crate) const LINKS: usize = 9;
/// The facts' part of a record.
pub(crate) const FACTS: usize = 44;
/// A hash-table slot: position and tag (`u32` each).
pub(crate) const SLOT: usize = 8;
/// Regions of the covered prefix whose checksum open compares, and their size.
pub(crate) const SAMPLES: usize = 16;
pub(crate) const SAMPLE_LEN: usize = 256;
/// Entries whose lines are read together.
pub(crate) const BLOCK: usize = 64;

/// Record flags.
pub(crate) const PARSE: u8 = 1;
pub(crate) const HAS_PARENT: u8 = 2;
pub(crate) const KNOWN_FLAGS: u8 = PARSE | HAS_PARENT;

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

    /// The fewest lines a read of lines takes (up to [`BLOCK`]): 1 for a file, whose
    /// reads cost the bytes they take; more for a medium whose every read costs a
    /// round trip (the database), so that a walk takes its lines in few reads.
    fn least_lines(&self) -> u32 {
        1
    }
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
pub(crate) fn read_exact_at(source: &dyn Source, buf: &mut [u8], at: u64) -> io::Result<bool> {
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
/// when it is read: device, inode, size, modification time and change time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Stamp {
    pub(crate) dev: u64,
    pub(crate) ino: u64,
    pub(crate) size: u64,
    /// Seconds and nanoseconds.
    pub(crate) mtime: (i64, i64),
    /// The change time (`ctime`), seconds and nanoseconds: every write, truncation,
    /// `utimensat` or `chmod` moves it and no program can set it back, so an equal one
    /// says the file was not touched since — where the modification time can be put
    /// back (`touch -d`, `cp -a` over the file, `utimensat`).
    pub(crate) ctime: (i64, i64),
}

impl Stamp {
    pub(crate) fn of(meta: &fs::Metadata) -> Stamp {
        Stamp {
            dev: meta.dev(),
            ino: meta.ino(),
            size: meta.len(),
            mtime: (meta.mtime(), meta.mtime_nsec()),
            ctime: (meta.ctime(), meta.ctime_nsec()),
        }
    }
}

/// The index hash of an entry id (xxHash64 of the index's seed and the id).
pub(crate) fn id_hash(seed: u64, id: &str) -> u64 {
    let mut hash = Hash64::default();
    hash.update(&seed.to_le_bytes());
    hash.update(id.as_bytes());
    hash.finish()
}

/// The 32-bit checksum of one line as a record keeps it.
pub(crate) fn line_sum(json: &[u8]) -> u32 {
    let mut hash = Hash64::default();
    hash.update(json);
    hash.update(b"\n");
    hash.finish() as u32
}

pub(crate) fn u32_at(bytes: &[u8], at: usize) -> Option<u32> {
    let mut w = [0u8; 4];
    w.copy_from_slice(bytes.get(at..at.checked_add(4)?)?);
    Some(u32::from_le_bytes(w))
}

pub(crate) fn u64_at(bytes: &[u8], at: usize) -> Option<u64> {
    let mut w = [0u8; 8];
    w.copy_from_slice(bytes.get(at..at.checked_add(8)?)?);
    Some(u64::from_le_bytes(w))
}

pub(crate) fn role_code(role: Role) -> u8 {
    match role {
        Role::User => 0,
        Role::Assistant => 1,
        Role::ToolResult => 2,
        Role::Extension => 3,
    }
}

pub(crate) fn role_of(code: u8) -> Option<Role> {
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
pub(crate) fn encode_facts(facts: &Facts) -> [u8; FACTS] {
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
            target: None,
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
pub(crate) fn decode_facts(
    raw: &[u8; FACTS],
    json: &[u8],
    parser: &mut EntryParser,
) -> Option<Facts> {
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
            target: None,
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
/// depth, jump, leaf_prev, leaf_next, meta`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Raw {
    pub(crate) offset: u64,
    pub(crate) id_hash: u64,
    pub(crate) len: u32,
    pub(crate) sum: u32,
    pub(crate) parent: u32,
    pub(crate) facts: [u8; FACTS],
    pub(crate) links: [u32; LINKS],
}

impl Raw {
    pub(crate) fn write(&self, out: &mut Vec<u8>) {
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

    pub(crate) fn read(bytes: &[u8]) -> Option<Raw> {
        let mut facts = [0u8; FACTS];
        facts.copy_from_slice(bytes.get(28..28 + FACTS)?);
        let mut links = [0u32; LINKS];
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

pub(crate) fn pages_for(bytes: u64) -> u64 {
    bytes.div_ceil(PAGE as u64)
}

/// The page layout of an index of `entries` records and `extra` bytes of roots and
/// labels: (record pages, table slots, table pages, extra pages, checksummed pages,
/// checksum pages).
pub(crate) fn layout(entries: u64, slots: u64, extra: u64) -> (u64, u64, u64, u64, u64) {
    let record_pages = entries.div_ceil(PER_PAGE as u64);
    let table_pages = pages_for(slots.saturating_mul(SLOT as u64));
    let extra_pages = pages_for(extra);
    let pages = record_pages
        .saturating_add(table_pages)
        .saturating_add(extra_pages);
    let sum_pages = pages_for(pages.saturating_mul(8));
    (record_pages, table_pages, extra_pages, pages, sum_pages)
}

pub(crate) fn pad_to_page(out: &mut Vec<u8>) {
    let rest = out.len() % PAGE;
    if rest != 0 {
        out.resize(out.len() + PAGE - rest, 0);
    }
}

/// The checksum of the sampled regions of the first `covered` bytes: `SAMPLES`
/// regions of `SAMPLE_LEN` bytes spread evenly. `None` when the file is shorter.
pub(crate) fn sample_hash(file: &dyn Source, covered: u64) -> io::Result<Option<u64>> {
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
pub(crate) struct Header {
    pub(crate) stamp: Stamp,
    pub(crate) entries: u64,
    pub(crate) seed: u64,
    pub(crate) slots: u64,
    pub(crate) extra_bytes: u64,
    pub(crate) roots: u64,
    pub(crate) labels: u64,
    /// Checksummed pages (every page between the header and the checksums).
    pub(crate) pages: u64,
    pub(crate) sums_hash: u64,
    pub(crate) leaf_first: u32,
    pub(crate) leaf_last: u32,
    pub(crate) sample_hash: u64,
    pub(crate) last_hash: u64,
}

impl Header {
    pub(crate) fn encode(&self) -> [u8; HEADER] {
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
            s.ctime.0 as u64,
            s.ctime.1 as u64,
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
    pub(crate) fn decode(bytes: &[u8]) -> Option<Header> {
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
        let v = |i: usize| u64_at(bytes, header_field(i));
        Some(Header {
            stamp: Stamp {
                dev: v(0)?,
                ino: v(1)?,
                size: v(2)?,
                mtime: (v(3)? as i64, v(4)? as i64),
                ctime: (v(5)? as i64, v(6)? as i64),
            },
            entries: v(7)?,
            seed: v(8)?,
            slots: v(9)?,
            extra_bytes: v(10)?,
            roots: v(11)?,
            labels: v(12)?,
            pages: v(PAGES_FIELD)?,
            sums_hash: v(SUMS_HASH_FIELD)?,
            sample_hash: v(15)?,
            last_hash: v(16)?,
            leaf_first: u32_at(bytes, header_field(17))?,
            leaf_last: u32_at(bytes, header_field(17) + 4)?,
        })
    }
}

/// The roots and labels section.
/// A label as the index keeps it: target, label entry, text.
pub(crate) type IndexedLabel = (u32, u32, String);

pub(crate) fn read_extra(bytes: &[u8], header: &Header) -> Option<(Vec<u32>, Vec<IndexedLabel>)> {
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
}
