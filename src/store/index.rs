//! The session index: a disposable cache beside a JSONL file, `<file>.idx`, that lets
//! open skip parsing the lines it covers.
//!
//! The JSONL file stays the only source of truth. The index is used only when it
//! proves it describes the file: same device and inode, and a checksum of the covered
//! prefix that matches the bytes actually read from the file. The covered prefix is
//! read and checksummed at every open (the entries' text stays resident, as without an
//! index); what the index saves is the JSON parsing and shape checks of those lines.
//! Anything that does not match — another file, another size, a changed byte, a torn,
//! truncated, foreign or newer-version index — and the store is rebuilt from the file
//! exactly as without an index, so an open answers the same with or without one (the
//! only exception is a deliberate 64-bit checksum collision, which only someone who can
//! rewrite the file itself could craft). Bytes after the covered prefix are recovered
//! and replayed as always (tail rules, `needs_repair`, line numbers).
//!
//! An index is written only for a file that is exactly its entries' canonical lines
//! (`json + "\n"` each, no blank lines, no extra whitespace): every file the library
//! writes itself. Other files open as before, without one.
//!
//! Format (version 1, little-endian): a 64-byte header — magic `LSIDX\r\n\x1a`,
//! version `u32`, record size `u32`, device `u64`, inode `u64`, covered bytes `u64`,
//! reserved `u64`, record count `u64`, checksum of the covered prefix `u64` — then one
//! 48-byte record per entry (line length; flags; kind; role; tool pairing; the spans
//! of id, parent, timestamp and body), then the checksum of everything before it
//! (`u64`). A line whose facts a record cannot hold (an escaped id, a label, a
//! compaction) is flagged to be parsed again at load.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use super::log::Log;
use crate::entry::{Body, EntryParser, Facts, Role, Span, Text, Tools};
use crate::recover::MAX_LINE_BYTES;

const MAGIC: &[u8; 8] = b"LSIDX\r\n\x1a";
const VERSION: u32 = 1;
const HEADER: usize = 64;
const RECORD: usize = 48;
const TRAILER: usize = 8;

/// Record flags.
const PARSE: u8 = 1;
const HAS_PARENT: u8 = 2;
const KNOWN_FLAGS: u8 = PARSE | HAS_PARENT;

/// Bytes of the covered prefix read at a time when loading.
const CHUNK: usize = 1 << 20;

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

const P1: u64 = 0x9E37_79B1_85EB_CA87;
const P2: u64 = 0xC2B2_AE3D_27D4_EB4F;
const P3: u64 = 0x1656_67B1_9E37_79F9;
const P4: u64 = 0x85EB_CA77_C2B2_AE63;
const P5: u64 = 0x27D4_EB2F_1656_67C5;

/// A streaming 64-bit checksum (the xxHash64 construction, seed 0): the same value
/// whatever the pieces the bytes are fed in. Not cryptographic: it detects change, it
/// does not resist an adversary.
#[derive(Clone, Debug)]
pub(crate) struct Hash64 {
    lanes: [u64; 4],
    buf: [u8; 32],
    buffered: usize,
    total: u64,
}

impl Default for Hash64 {
    fn default() -> Hash64 {
        Hash64 {
            lanes: [P1.wrapping_add(P2), P2, 0, 0u64.wrapping_sub(P1)],
            buf: [0; 32],
            buffered: 0,
            total: 0,
        }
    }
}

fn round(acc: u64, input: u64) -> u64 {
    acc.wrapping_add(input.wrapping_mul(P2))
        .rotate_left(31)
        .wrapping_mul(P1)
}

fn merge(acc: u64, lane: u64) -> u64 {
    (acc ^ round(0, lane)).wrapping_mul(P1).wrapping_add(P4)
}

fn word(bytes: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    if let Some(src) = bytes.get(at..at + 8) {
        w.copy_from_slice(src);
    }
    u64::from_le_bytes(w)
}

impl Hash64 {
    fn stripe(lanes: &mut [u64; 4], stripe: &[u8]) {
        for (i, lane) in lanes.iter_mut().enumerate() {
            *lane = round(*lane, word(stripe, i * 8));
        }
    }

    pub(crate) fn update(&mut self, mut bytes: &[u8]) {
        self.total += bytes.len() as u64;
        if self.buffered > 0 {
            let take = (32 - self.buffered).min(bytes.len());
            self.buf[self.buffered..self.buffered + take].copy_from_slice(&bytes[..take]);
            self.buffered += take;
            bytes = &bytes[take..];
            if self.buffered < 32 {
                return;
            }
            let buf = self.buf;
            Hash64::stripe(&mut self.lanes, &buf);
            self.buffered = 0;
        }
        let mut stripes = bytes.chunks_exact(32);
        for stripe in &mut stripes {
            Hash64::stripe(&mut self.lanes, stripe);
        }
        let rest = stripes.remainder();
        self.buf[..rest.len()].copy_from_slice(rest);
        self.buffered = rest.len();
    }

    pub(crate) fn finish(&self) -> u64 {
        let [v1, v2, v3, v4] = self.lanes;
        let mut h = if self.total >= 32 {
            let h = v1
                .rotate_left(1)
                .wrapping_add(v2.rotate_left(7))
                .wrapping_add(v3.rotate_left(12))
                .wrapping_add(v4.rotate_left(18));
            merge(merge(merge(merge(h, v1), v2), v3), v4)
        } else {
            P5
        };
        h = h.wrapping_add(self.total);
        let rest = &self.buf[..self.buffered];
        let mut words = rest.chunks_exact(8);
        for w in &mut words {
            h = (h ^ round(0, word(w, 0))).rotate_left(27).wrapping_mul(P1);
            h = h.wrapping_add(P4);
        }
        let mut tail = words.remainder();
        if tail.len() >= 4 {
            let mut four = [0u8; 4];
            four.copy_from_slice(&tail[..4]);
            h ^= u64::from(u32::from_le_bytes(four)).wrapping_mul(P1);
            h = h.rotate_left(23).wrapping_mul(P2).wrapping_add(P3);
            tail = &tail[4..];
        }
        for &b in tail {
            h ^= u64::from(b).wrapping_mul(P5);
            h = h.rotate_left(11).wrapping_mul(P1);
        }
        h ^= h >> 33;
        h = h.wrapping_mul(P2);
        h ^= h >> 29;
        h = h.wrapping_mul(P3);
        h ^ (h >> 32)
    }

    /// The checksum of `bytes` in one piece.
    pub(crate) fn of(bytes: &[u8]) -> u64 {
        let mut hash = Hash64::default();
        hash.update(bytes);
        hash.finish()
    }
}

/// What the index says about the file it was written for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Header {
    pub(crate) dev: u64,
    pub(crate) ino: u64,
    /// Bytes of the file the records cover: a committed prefix.
    pub(crate) covered: u64,
    pub(crate) prefix_hash: u64,
}

/// One entry as the index records it. Spans are positions in the line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Record {
    line_len: u32,
    flags: u8,
    kind: u8,
    role: u8,
    /// A message's part in tool pairing: 0 none, 1 calls, 2 a result (its
    /// `toolCallId` is the fifth span).
    tools: u8,
    spans: [(u32, u32); 5],
}

/// A structurally valid index: its header and records. Whether it matches a file is
/// decided by [`load`].
#[derive(Debug)]
pub(crate) struct Decoded {
    pub(crate) header: Header,
    records: Vec<Record>,
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

/// The index of the committed entries of `log`, for the file `(dev, ino)` whose
/// committed prefix is exactly their lines. `None` when the log cannot be indexed (an
/// entry too long to record).
pub(crate) fn encode(log: &Log, dev: u64, ino: u64) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(HEADER + log.len() * RECORD + TRAILER);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.extend_from_slice(&(RECORD as u32).to_le_bytes());
    for v in [
        dev,
        ino,
        log.line_bytes(),
        0,
        log.len() as u64,
        log.line_hash(),
    ] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    for (json, facts) in log.jsons_and_facts() {
        let line_len = u32::try_from(json.len()).ok()?;
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
        // (kind, role, tools, body span a, span b); `None` for what a record cannot hold
        // (a decoded string, a label's target, a compaction): that line is parsed again.
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
        out.extend_from_slice(&line_len.to_le_bytes());
        out.extend_from_slice(&[flags, kind, role, tools]);
        for (start, len) in spans {
            out.extend_from_slice(&start.to_le_bytes());
            out.extend_from_slice(&len.to_le_bytes());
        }
    }
    let checksum = Hash64::of(&out);
    out.extend_from_slice(&checksum.to_le_bytes());
    Some(out)
}

/// Checks the structure of an index: magic, version, sizes, its own checksum, and each
/// record's fields. Says nothing yet about whether it matches a file.
pub(crate) fn decode(bytes: &[u8]) -> Option<Decoded> {
    if bytes.len() < HEADER + TRAILER || bytes.get(..8)? != MAGIC {
        return None;
    }
    if u32_at(bytes, 8)? != VERSION || u32_at(bytes, 12)? as usize != RECORD {
        return None;
    }
    let body = bytes.len() - TRAILER;
    if Hash64::of(&bytes[..body]) != u64_at(bytes, body)? {
        return None;
    }
    let header = Header {
        dev: u64_at(bytes, 16)?,
        ino: u64_at(bytes, 24)?,
        covered: u64_at(bytes, 32)?,
        prefix_hash: u64_at(bytes, 56)?,
    };
    let count = u64_at(bytes, 48)?;
    if !(body - HEADER).is_multiple_of(RECORD) || ((body - HEADER) / RECORD) as u64 != count {
        return None;
    }
    let mut records = Vec::with_capacity((body - HEADER) / RECORD);
    let mut total: u64 = 0;
    for raw in bytes[HEADER..body].chunks_exact(RECORD) {
        let line_len = u32_at(raw, 0)?;
        let (flags, kind, role, tools) = (raw[4], raw[5], raw[6], raw[7]);
        if line_len < 2 || line_len as usize > MAX_LINE_BYTES || flags & !KNOWN_FLAGS != 0 {
            return None;
        }
        if kind > 1
            || (kind == 0 && (role_of(role).is_none() || tools > 2))
            || (kind == 1 && (role != 0 || tools != 0))
        {
            return None;
        }
        let mut spans = [(0u32, 0u32); 5];
        for (i, span) in spans.iter_mut().enumerate() {
            let (start, len) = (u32_at(raw, 8 + i * 8)?, u32_at(raw, 12 + i * 8)?);
            if u64::from(start) + u64::from(len) > u64::from(line_len) {
                return None;
            }
            *span = (start, len);
        }
        total = total.checked_add(u64::from(line_len) + 1)?;
        records.push(Record {
            line_len,
            flags,
            kind,
            role,
            tools,
            spans,
        });
    }
    if total != header.covered {
        return None;
    }
    Some(Decoded { header, records })
}

/// The facts of `record` over its line `json`, or `None` when they do not hold there.
fn facts_of(record: &Record, json: &[u8]) -> Option<Facts> {
    let span = |(start, len): (u32, u32)| Span::from_parts(start, len);
    let text = |(start, len): (u32, u32)| {
        let span = span((start, len));
        std::str::from_utf8(span.bytes(json))
            .ok()
            .filter(|s| !s.is_empty())?;
        Some(Text::InJson(span))
    };
    let [id, parent, timestamp, a, b] = record.spans;
    let body = match record.kind {
        0 => Body::Message {
            role: role_of(record.role)?,
            span: span(a),
            tools: match record.tools {
                0 => Tools::None,
                1 => Tools::Calls,
                _ => Tools::Result(text(b)?),
            },
        },
        _ => Body::Metadata {
            key: text(a)?,
            value: span(b),
            label_target: None,
        },
    };
    Some(Facts {
        id: text(id)?,
        parent: if record.flags & HAS_PARENT != 0 {
            Some(text(parent)?)
        } else {
            None
        },
        timestamp: span(timestamp),
        body,
    })
}

/// Builds the log of the covered prefix from the index and the file's bytes, read
/// through `read_at(buf, offset)` (a short count means the end of the file). `None`
/// when anything disagrees — a short file, a line without its `\n`, facts that do not
/// hold, a tree rule broken, or the checksum of the bytes read — and the caller
/// rebuilds from the file. I/O errors are returned.
pub(crate) fn load(
    index: &Decoded,
    mut read_at: impl FnMut(&mut [u8], u64) -> io::Result<usize>,
) -> io::Result<Option<Log>> {
    let covered = index.header.covered;
    let mut log = Log::default();
    let mut parser = EntryParser::default();
    let mut buf = vec![0u8; CHUNK];
    // A line that spans chunks is gathered here (at most the longest line).
    let mut carry: Vec<u8> = Vec::new();
    let mut records = index.records.iter();
    let mut current = records.next();
    let mut pos = 0u64;
    let mut line = 0u64;
    while pos < covered {
        let want = usize::try_from(covered - pos).map_or(CHUNK, |left| left.min(CHUNK));
        let mut filled = 0;
        while filled < want {
            match read_at(&mut buf[filled..want], pos + filled as u64) {
                Ok(0) => return Ok(None),
                Ok(n) => filled += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        pos += want as u64;
        let mut rest = &buf[..want];
        while let Some(record) = current {
            let need = record.line_len as usize + 1 - carry.len();
            let whole: &[u8] = if carry.is_empty() && rest.len() >= need {
                let (this, after) = rest.split_at(need);
                rest = after;
                this
            } else {
                let take = need.min(rest.len());
                carry.extend_from_slice(&rest[..take]);
                rest = &rest[take..];
                if take < need {
                    break;
                }
                &carry
            };
            line += 1;
            let Some((&b'\n', json)) = whole.split_last() else {
                return Ok(None);
            };
            let facts = if record.flags & PARSE != 0 {
                match parser.parse(json) {
                    Ok((canonical, facts)) if canonical == json => Some(facts),
                    _ => None,
                }
            } else {
                facts_of(record, json)
            };
            let Some(facts) = facts else {
                return Ok(None);
            };
            let (id, parent_id) = (facts.id(json), facts.parent_id(json));
            let Ok(admitted) = log.admit(id, parent_id, Some(line)) else {
                return Ok(None);
            };
            if log.push(json, facts, admitted).is_err() {
                return Ok(None);
            }
            carry.clear();
            current = records.next();
        }
    }
    // Every record consumed, every byte covered: the checksum decides.
    if current.is_some() || !carry.is_empty() || log.line_hash() != index.header.prefix_hash {
        return Ok(None);
    }
    Ok(Some(log))
}

/// Reads the index of the session at `path` if there is one of plausible size for a
/// file of `file_size` bytes (at most one record per two bytes of it).
pub(crate) fn read(path: &Path, file_size: u64) -> Option<Decoded> {
    let limit = (file_size / 2)
        .saturating_mul(RECORD as u64)
        .saturating_add((HEADER + TRAILER) as u64);
    let file = File::open(index_path(path)).ok()?;
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    let mut bytes = Vec::new();
    file.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .ok()?;
    if bytes.len() as u64 > limit {
        return None;
    }
    decode(&bytes)
}

/// Writes `bytes` as the index of the session at `path`, atomically: a temporary file
/// beside it, synced when `durable`, renamed over the index (and the directory synced
/// when `durable`).
pub(crate) fn write(path: &Path, bytes: &[u8], durable: bool) -> io::Result<()> {
    let target = index_path(path);
    let mut temp = target.clone().into_os_string();
    temp.push(".tmp");
    let temp = PathBuf::from(temp);
    let result = (|| {
        let mut file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&temp)?;
        file.write_all(bytes)?;
        if durable {
            file.sync_all()?;
        }
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

/// Fuzzing entry: decodes `index` (first resealed with its correct checksum when
/// `reseal`, so that a fuzzer reaches the records) and loads it against the file bytes
/// `file`. Returns the number of entries loaded.
#[doc(hidden)]
pub fn fuzz_index(index: &[u8], file: &[u8], reseal: bool) -> Option<usize> {
    let mut index = index.to_vec();
    if reseal && index.len() >= TRAILER {
        let body = index.len() - TRAILER;
        let seal = Hash64::of(&index[..body]);
        index[body..].copy_from_slice(&seal.to_le_bytes());
    }
    let decoded = decode(&index)?;
    let log = load(&decoded, |buf, at| {
        let at = usize::try_from(at).unwrap_or(usize::MAX);
        let src = file.get(at..).unwrap_or_default();
        let n = src.len().min(buf.len());
        buf[..n].copy_from_slice(&src[..n]);
        Ok(n)
    })
    .ok()??;
    Some(log.len())
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
