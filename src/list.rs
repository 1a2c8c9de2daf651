//! Sessions in a folder (docs/contract.md §8): one record per `*.jsonl` file, read from its head
//! and its last committed line only, so that listing thousands of sessions costs the
//! folder's size in files, not in bytes.
//!
//! What the listing checks is what it reads: the head (at most [`HEAD_BYTES`]) and
//! the last committed line, found by reading backwards from the end. A file of at most
//! [`WHOLE_FILE_BYTES`] is read once, which also gives its entry count (its committed
//! lines). Damage in the
//! middle of a large file is not seen here: that is `verify`'s job. A file that cannot
//! be read, or whose head or last line is not a valid entry, is listed with its error,
//! never skipped; so is a name that is not UTF-8, a file that vanished during the
//! scan, and a symbolic link (links are never followed, so a link loop cannot hang the
//! scan).

use std::ffi::OsString;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use serde::Deserialize;

use crate::entry::{Entry, EntryKind, Role, parse_entry};
use crate::error::{Error, IoFailure, IoOp};
use crate::json;
use crate::json::Object;
use crate::preview::preview;
use crate::recover::MAX_LINE_BYTES;
use crate::store::{State, open_regular_with};

/// At most this much of a file's start is read for its first user text.
pub const HEAD_BYTES: usize = 64 * 1024;
/// A file of at most this size is read whole (and its entries counted).
pub const WHOLE_FILE_BYTES: u64 = 1024 * 1024;
/// `firstUserText` keeps at most this many characters.
pub const FIRST_USER_TEXT_CHARS: u64 = 200;
/// The tail is read backwards in pieces of at least this size.
const TAIL_CHUNK: usize = 64 * 1024;

/// How records are ordered.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[non_exhaustive]
pub enum SortBy {
    /// Newest first; equal times by path.
    #[default]
    #[serde(rename = "modifiedMs")]
    ModifiedMs,
    /// Ascending path.
    #[serde(rename = "path")]
    Path,
}

/// Options of [`list_sessions`]: `{"recursive":bool,"limit":N,"sort":"modifiedMs"|"path"}`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListOptions {
    /// Descend into subfolders (never through a symbolic link). Default false.
    #[serde(default)]
    pub recursive: bool,
    /// At most this many records, after sorting; all when absent.
    pub limit: Option<u64>,
    #[serde(default)]
    pub sort: SortBy,
}

impl ListOptions {
    /// Options from JSON; absent members keep their defaults; an unknown member, a
    /// negative or non-integer `limit` or an unknown `sort` is
    /// [`Error::InvalidOption`].
    pub fn from_json(text: &str) -> Result<ListOptions, Error> {
        crate::options::from_json(text)
    }
}

/// Why a file is listed without its facts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListError {
    /// A status name: `io`, `corrupt_line`, `invalid_argument`.
    pub code: &'static str,
    pub message: String,
}

/// One session file.
#[derive(Clone, Debug, PartialEq)]
pub struct SessionInfo {
    /// `dir` joined with the file's relative name (lossy when not UTF-8).
    pub path: String,
    pub bytes: u64,
    /// Modification time in milliseconds since the Unix epoch.
    pub modified_ms: Option<i64>,
    /// Of the tail: `NeedsRepair` when the file ends in an unterminated line.
    pub state: Option<State>,
    /// A preview of the first user message's text in the head.
    pub first_user_text: Option<String>,
    /// The id and timestamp token of the last committed entry.
    pub latest_leaf_id: Option<String>,
    pub latest_timestamp: Option<String>,
    /// Committed entries, known only when the file was read whole.
    pub entries: Option<u64>,
    pub error: Option<ListError>,
}

impl SessionInfo {
    fn new(path: String) -> SessionInfo {
        SessionInfo {
            path,
            bytes: 0,
            modified_ms: None,
            state: None,
            first_user_text: None,
            latest_leaf_id: None,
            latest_timestamp: None,
            entries: None,
            error: None,
        }
    }

    fn fail(&mut self, code: &'static str, message: String) {
        self.error = Some(ListError { code, message });
    }

    /// `{"path","bytes","modifiedMs","state","firstUserText","latestLeafId",
    /// "latestTimestamp","entries"?,"error"?}`; unknown facts are null.
    pub fn to_json(&self) -> String {
        let mut o = Object::new()
            .string("path", &self.path)
            .number("bytes", self.bytes)
            .number_or_null("modifiedMs", self.modified_ms)
            .string_or_null("state", self.state.map(State::as_str))
            .string_or_null("firstUserText", self.first_user_text.as_deref())
            .string_or_null("latestLeafId", self.latest_leaf_id.as_deref())
            .raw(
                "latestTimestamp",
                self.latest_timestamp.as_deref().unwrap_or("null"),
            );
        if let Some(entries) = self.entries {
            o = o.number("entries", entries);
        }
        if let Some(error) = &self.error {
            let error = Object::new()
                .string("code", error.code)
                .string("message", &error.message)
                .finish();
            o = o.raw("error", &error);
        }
        o.finish()
    }
}

/// `{"sessions":[…]}`.
pub fn sessions_json(sessions: &[SessionInfo]) -> String {
    Object::new()
        .raw(
            "sessions",
            &crate::json::array(sessions.iter().map(SessionInfo::to_json)),
        )
        .finish()
}

/// What a directory holds, as the listing sees it.
#[derive(Clone, Debug)]
pub struct DirItem {
    pub name: OsString,
    pub kind: ItemKind,
}

/// The type of a directory item, without following symbolic links.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ItemKind {
    File,
    Dir,
    Symlink,
    Other,
}

/// An open session file: its size, modification time and positioned reads.
pub trait ListFile {
    /// The size in bytes, from `fstat` at open.
    fn size(&self) -> u64;
    fn modified_ms(&self) -> Option<i64>;
    fn read_at(&mut self, offset: u64, buf: &mut [u8]) -> io::Result<usize>;
}

/// The I/O of a listing, a seam for tests (to count the bytes read).
pub trait ListIo {
    fn read_dir(&mut self, dir: &Path) -> io::Result<Vec<DirItem>>;
    /// Opens a regular file without following a symbolic link and without blocking
    /// (a FIFO must not hang the scan); anything else is an error.
    fn open(&mut self, path: &Path) -> io::Result<Box<dyn ListFile>>;
}

/// The real file system.
#[derive(Default)]
pub struct RealListIo;

struct RealFile {
    file: File,
    len: u64,
    modified_ms: Option<i64>,
}

impl ListFile for RealFile {
    fn size(&self) -> u64 {
        self.len
    }
    fn modified_ms(&self) -> Option<i64> {
        self.modified_ms
    }
    fn read_at(&mut self, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        self.file.read_at(buf, offset)
    }
}

impl ListIo for RealListIo {
    fn read_dir(&mut self, dir: &Path) -> io::Result<Vec<DirItem>> {
        let mut items = Vec::new();
        for item in std::fs::read_dir(dir)? {
            let item = item?;
            // `file_type` does not follow symbolic links.
            let kind = match item.file_type() {
                Ok(t) if t.is_symlink() => ItemKind::Symlink,
                Ok(t) if t.is_dir() => ItemKind::Dir,
                Ok(t) if t.is_file() => ItemKind::File,
                _ => ItemKind::Other,
            };
            items.push(DirItem {
                name: item.file_name(),
                kind,
            });
        }
        Ok(items)
    }

    fn open(&mut self, path: &Path) -> io::Result<Box<dyn ListFile>> {
        let file = open_regular_with(
            OpenOptions::new().read(true),
            rustix::fs::OFlags::NOFOLLOW,
            path,
        )?;
        let meta = file.metadata()?;
        let modified_ms = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
            .and_then(|d| i64::try_from(d.as_millis()).ok());
        Ok(Box::new(RealFile {
            file,
            len: meta.len(),
            modified_ms,
        }))
    }
}

/// A listed file: its path, its record so far, and whether it is still to be read.
/// No file stays open between the two passes: a folder may hold more sessions than
/// the process may have files open.
type Found = (PathBuf, SessionInfo, Pending);

/// What is left to do for a listed file after the first pass.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Pending {
    /// Read, or failed: its record is final.
    Done,
    /// Opened (size and time known) but not read: with a `limit`, only the files that
    /// sort within it are read, so they are opened again after the sort.
    Read,
}

/// Lists the sessions in `dir` (see the module docs). Fails only when `dir` itself
/// cannot be read ([`Error::Io`]); every file's trouble is in its record.
pub fn list_sessions(dir: &Path, options: &ListOptions) -> Result<Vec<SessionInfo>, Error> {
    list_sessions_with_io(dir, options, &mut RealListIo)
}

/// [`list_sessions`] through `io`.
pub fn list_sessions_with_io(
    dir: &Path,
    options: &ListOptions,
    io: &mut dyn ListIo,
) -> Result<Vec<SessionInfo>, Error> {
    let top = io.read_dir(dir).map_err(|e| {
        Error::Io(IoFailure::new(IoOp::Read, &dir.display().to_string(), &e).into())
    })?;
    let mut found: Vec<Found> = Vec::new();
    let mut folders = vec![(dir.to_path_buf(), top)];
    while let Some((folder, items)) = folders.pop() {
        for item in items {
            let path = folder.join(&item.name);
            let shown = path.to_string_lossy().into_owned();
            match item.kind {
                ItemKind::Dir if options.recursive => match io.read_dir(&path) {
                    Ok(items) => folders.push((path, items)),
                    Err(e) => {
                        let mut info = SessionInfo::new(shown);
                        info.fail("io", format!("cannot read the folder: {e}"));
                        found.push((path, info, Pending::Done));
                    }
                },
                _ if !is_jsonl(&item.name) => {}
                ItemKind::Symlink => {
                    let mut info = SessionInfo::new(shown);
                    info.fail("io", "a symbolic link; links are not followed".into());
                    found.push((path, info, Pending::Done));
                }
                _ => {
                    let mut info = SessionInfo::new(shown);
                    let pending = if item.name.to_str().is_none() {
                        info.fail("invalid_argument", "the file name is not UTF-8".into());
                        Pending::Done
                    } else {
                        // Without a limit every file is read, so it is read now and
                        // closed at once; with one, only its size and time are taken.
                        let read_now = options.limit.is_none();
                        open_and_read(io, &path, &mut info, read_now)
                    };
                    found.push((path, info, pending));
                }
            }
        }
    }
    match options.sort {
        SortBy::ModifiedMs => found.sort_by(|a, b| {
            b.1.modified_ms
                .cmp(&a.1.modified_ms)
                .then_with(|| a.0.cmp(&b.0))
        }),
        SortBy::Path => found.sort_by(|a, b| a.0.cmp(&b.0)),
    }
    if let Some(limit) = options.limit {
        found.truncate(usize::try_from(limit).unwrap_or(usize::MAX));
    }
    Ok(found
        .into_iter()
        .map(|(path, mut info, pending)| {
            if pending == Pending::Read {
                open_and_read(io, &path, &mut info, true);
            }
            info
        })
        .collect())
}

/// Opens `path` (never following a link, never blocking), takes its size and time into
/// `info`, reads it when `read` says so, and closes it. An open that fails is the
/// record's error.
fn open_and_read(io: &mut dyn ListIo, path: &Path, info: &mut SessionInfo, read: bool) -> Pending {
    match io.open(path) {
        Ok(mut file) => {
            info.bytes = file.size();
            info.modified_ms = file.modified_ms();
            if read {
                read_session(&mut *file, info);
                Pending::Done
            } else {
                Pending::Read
            }
        }
        Err(e) => {
            info.fail("io", format!("cannot open: {e}"));
            Pending::Done
        }
    }
}

pub(crate) fn is_jsonl(name: &std::ffi::OsStr) -> bool {
    name.as_encoded_bytes().ends_with(b".jsonl")
}

/// Fills `info` from the file's head and last committed line (or the whole file).
fn read_session(file: &mut dyn ListFile, info: &mut SessionInfo) {
    let outcome = if info.bytes <= WHOLE_FILE_BYTES {
        read_whole(file, info)
    } else {
        read_head(file, info).and_then(|()| read_tail(file, info))
    };
    if let Err((code, message)) = outcome {
        info.fail(code, message);
    }
}

type Fault = (&'static str, String);

fn io_fault(e: io::Error) -> Fault {
    ("io", format!("read failed: {e}"))
}

/// Reads `len` bytes at `offset` (fewer at the end of the file).
fn read_exact_at(file: &mut dyn ListFile, offset: u64, len: usize) -> Result<Vec<u8>, Fault> {
    let mut buf = vec![0; len];
    let mut filled = 0;
    while filled < len {
        match file.read_at(offset + filled as u64, &mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(io_fault(e)),
        }
    }
    buf.truncate(filled);
    Ok(buf)
}

/// A small file, read once: the same head and tail rules over its bytes, and its
/// committed non-blank lines counted (each is an entry unless the middle is damaged,
/// which is `verify`'s job, not the listing's).
fn read_whole(file: &mut dyn ListFile, info: &mut SessionInfo) -> Result<(), Fault> {
    // `bytes` is at most WHOLE_FILE_BYTES here.
    let bytes = read_exact_at(file, 0, info.bytes as usize)?;
    // Newlines found with memchr; a line is blank only if every byte is whitespace,
    // which an entry's first byte (`{`) disproves at once.
    let mut entries = 0usize;
    let mut start = 0;
    for newline in memchr::memchr_iter(b'\n', &bytes) {
        if !is_blank(&bytes[start..newline]) {
            entries += 1;
        }
        start = newline + 1;
    }
    let head = HEAD_BYTES.min(bytes.len());
    scan_head(&bytes[..head], info)?;
    let mut in_memory = InMemory(bytes);
    read_tail(&mut in_memory, info)?;
    info.entries = Some(entries as u64);
    Ok(())
}

/// Bytes already read, as a [`ListFile`].
struct InMemory(Vec<u8>);

impl ListFile for InMemory {
    fn size(&self) -> u64 {
        self.0.len() as u64
    }
    fn modified_ms(&self) -> Option<i64> {
        None
    }
    fn read_at(&mut self, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        let start = usize::try_from(offset)
            .unwrap_or(usize::MAX)
            .min(self.0.len());
        let n = buf.len().min(self.0.len() - start);
        buf[..n].copy_from_slice(&self.0[start..start + n]);
        Ok(n)
    }
}

/// The complete lines of the first [`HEAD_BYTES`]: each must be an entry; the first
/// user message among them gives `firstUserText`.
fn read_head(file: &mut dyn ListFile, info: &mut SessionInfo) -> Result<(), Fault> {
    // Never more than the file holds: a buffer of HEAD_BYTES for a small file was
    // zeroed and copied for nothing, the largest cost of listing many small sessions.
    let len = usize::try_from(info.bytes).map_or(HEAD_BYTES, |n| n.min(HEAD_BYTES));
    let head = read_exact_at(file, 0, len)?;
    scan_head(&head, info)
}

/// The first user text from `head`, the start of the file: its complete lines only.
fn scan_head(head: &[u8], info: &mut SessionInfo) -> Result<(), Fault> {
    let complete = head
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |at| at + 1);
    for (index, line) in head[..complete].split(|&b| b == b'\n').enumerate() {
        if is_blank(line) {
            continue;
        }
        let entry =
            parse_entry(line).map_err(|e| ("corrupt_line", format!("line {}: {e}", index + 1)))?;
        if let Some(text) = first_user_text(&entry) {
            info.first_user_text = Some(text);
            break;
        }
    }
    Ok(())
}

/// Reads backwards from the end: the unterminated piece (state), then the last
/// non-blank committed line (latest leaf and timestamp).
fn read_tail(file: &mut dyn ListFile, info: &mut SessionInfo) -> Result<(), Fault> {
    let mut tail = Tail {
        buf: Vec::new(),
        start: info.bytes,
    };
    // Everything after the last newline: blank → ready, else needs repair.
    let mut end = 0;
    let Some(mut line_end) = tail.find_before(file, &mut end)? else {
        let whole = tail.start == 0;
        info.state = Some(if whole && is_blank(&tail.buf) {
            State::Ready
        } else {
            State::NeedsRepair
        });
        return Ok(());
    };
    info.state = Some(if is_blank(&tail.buf[line_end + 1..]) {
        State::Ready
    } else {
        State::NeedsRepair
    });
    loop {
        let line_start = match tail.find_before(file, &mut line_end)? {
            Some(newline) => newline + 1,
            None if tail.start == 0 => 0,
            None => {
                return Err((
                    "corrupt_line",
                    format!(
                        "no committed entry within the last {} bytes",
                        tail.buf.len()
                    ),
                ));
            }
        };
        let line = &tail.buf[line_start..line_end];
        if !is_blank(line) {
            let entry = parse_entry(line)
                .map_err(|e| ("corrupt_line", format!("the last committed line: {e}")))?;
            set_latest(info, &entry);
            return Ok(());
        }
        if line_start == 0 {
            return Ok(());
        }
        line_end = line_start - 1;
    }
}

/// The end of a file, read backwards in growing pieces: `buf` holds the bytes from
/// `start` to the end of the file, never more than two maximal lines.
struct Tail {
    buf: Vec<u8>,
    start: u64,
}

impl Tail {
    /// The last newline in `buf[..*before]`, growing the buffer at the front until
    /// one is found (`*before` moves with the bytes), the file's start is reached
    /// (`None`, `start` 0), or the buffer holds two maximal lines (`None`).
    fn find_before(
        &mut self,
        file: &mut dyn ListFile,
        before: &mut usize,
    ) -> Result<Option<usize>, Fault> {
        if let Some(at) = memchr::memrchr(b'\n', &self.buf[..*before]) {
            return Ok(Some(at));
        }
        let cap = 2 * (MAX_LINE_BYTES + 1);
        while self.start > 0 && self.buf.len() < cap {
            let want = TAIL_CHUNK.max(self.buf.len()).min(cap - self.buf.len());
            let want = want.min(usize::try_from(self.start).unwrap_or(usize::MAX));
            let from = self.start - want as u64;
            let mut piece = read_exact_at(file, from, want)?;
            if piece.len() != want {
                return Err(("io", "the file shrank during the scan".into()));
            }
            piece.extend_from_slice(&self.buf);
            self.buf = piece;
            self.start = from;
            *before += want;
            // Only the new bytes remain to be searched.
            if let Some(at) = memchr::memrchr(b'\n', &self.buf[..want]) {
                return Ok(Some(at));
            }
        }
        Ok(None)
    }
}

fn is_blank(line: &[u8]) -> bool {
    line.iter().all(|b| matches!(b, b' ' | b'\t' | b'\r'))
}

fn set_latest(info: &mut SessionInfo, entry: &Entry) {
    info.latest_leaf_id = Some(entry.id().to_owned());
    info.latest_timestamp = Some(timestamp_token(entry));
}

/// The timestamp as committed (a number token), for an exact copy.
fn timestamp_token(entry: &Entry) -> String {
    let mut tape = json::Tape::default();
    if json::scan(entry.json().as_bytes(), json::MAX_DEPTH, &mut tape).is_ok()
        && let Some(ts) = tape.get(0, "timestamp")
    {
        return String::from_utf8_lossy(tape.raw(ts)).into_owned();
    }
    entry.timestamp().to_string()
}

/// A preview of a user message's first text.
fn first_user_text(entry: &Entry) -> Option<String> {
    if entry.kind() != EntryKind::Message(Role::User) {
        return None;
    }
    let mut tape = json::Tape::default();
    let message = entry.message_json()?;
    json::scan(message.as_bytes(), json::MAX_DEPTH, &mut tape).ok()?;
    let content = tape.get(0, "content")?;
    let text = match tape.nodes[content].kind {
        json::Kind::String => tape.string(content),
        json::Kind::Array => {
            let block = tape.elements(content).find(|&b| {
                tape.nodes[b].kind == json::Kind::Object
                    && tape.get(b, "type").map(|t| tape.string(t)).as_deref() == Some("text")
            })?;
            let text = tape.get(block, "text")?;
            tape.string(text)
        }
        _ => return None,
    };
    Some(preview(&text, FIRST_USER_TEXT_CHARS))
}
