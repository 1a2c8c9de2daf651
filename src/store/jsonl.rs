//! Opening a JSONL file: options, the advisory lock, salvage diagnostics, and the
//! writer's view of its file (durability, identity checks). Reading the lines back is
//! [`super::replay`]'s.

use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::file::{self, SessionFile, io_error, sync_dir};
use super::index;
use super::lock::{LockGuard, lock};
use super::log::Log;
use super::replay::{Diagnostic, Replay};
use crate::entry::ParseOptions;
use crate::error::{Error, FileChange, IoFailure, IoOp, Warning};

/// What a successful append promises about the disk.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Durability {
    /// The OS accepted the bytes (`write` returned); a power loss may still lose them.
    #[default]
    None,
    /// The line is on stable storage: every append is followed by `fdatasync`, and a
    /// file created by the open is made durable in its directory too.
    Fsync,
    /// As `Fsync`, with group commit: appends that queue up while a sync is in flight
    /// are written and synced together, so concurrent appenders share syncs.
    FsyncBatch,
}

/// What open checks of the lines a session index covers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Verify {
    /// Read the covered lines on demand and check each at every read from the file:
    /// damage there is `corrupt_line` at that read, and the store is not tainted.
    #[default]
    Index,
    /// Check every line at open, as without an index.
    Full,
}

/// How to open a JSONL store. `JsonlOptions::default()` is what
/// [`super::Store::open_jsonl`] uses.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct JsonlOptions {
    /// What a successful append means. Default: [`Durability::None`].
    pub durability: Durability,
    /// Take an exclusive advisory lock (`flock`) for the writer's lifetime, so that a
    /// second writer on the same file, in this or another process, fails to open with
    /// [`Error::Locked`] instead of interleaving. Default: on. Advisory only: processes
    /// that do not take the lock, and some network filesystems, are not stopped. The
    /// lock is the opening process's: dropping the store there unlocks the file even
    /// while a forked child holds copies of its descriptors.
    pub lock: bool,
    /// Open for reading only: never create, lock or write the file; appends fail with
    /// [`Error::ReadOnly`]. Works beside a writer.
    pub read_only: bool,
    /// Read-only, and never fail on interior damage: every good entry is loaded and
    /// every bad line (and every entry whose parent is missing) is reported as a
    /// [`Diagnostic`]. For displaying or exporting a damaged session.
    pub salvage: bool,
    /// Before each append, check that the path still names the file being written and
    /// that its size is what this writer left; on a mismatch the store is tainted with
    /// a [`FileChange`] instead of writing. Default: on.
    pub check_identity: bool,
    /// Use and keep the session index `<file>.idx` (a cache beside the file that lets
    /// open skip parsing the lines it covers; see [`super::index_path`]). Readers use it
    /// and never write it; a writer writes it every 65,536 appends or 64 MiB and at
    /// close (best effort), never inside open, with the session file's
    /// permissions, and removes it instead when another program changed the file
    /// under it. Default: on.
    pub index: bool,
    /// What open checks of the lines a session index covers: `"index"` (default) reads
    /// them on demand and checks each at every read from the file, so damage there is
    /// `corrupt_line` at that read instead of at open; `"full"` checks the whole file
    /// at open, as without an index (the index is still written).
    pub verify: Verify,
    /// Reject extension roles and blocks (docs/contract.md §6.1): at append with
    /// `invalid_entry`, and at open a line holding one is a corrupt line. Default: off.
    #[serde(default)]
    pub strict_roles: bool,
}

impl Default for JsonlOptions {
    fn default() -> JsonlOptions {
        JsonlOptions {
            durability: Durability::None,
            lock: true,
            read_only: false,
            salvage: false,
            check_identity: true,
            index: true,
            verify: Verify::Index,
            strict_roles: false,
        }
    }
}

impl JsonlOptions {
    /// Options from JSON, e.g. `{"durability":"fsync_batch","lock":true}`; members
    /// that are absent keep their defaults, unknown members are an error.
    pub fn from_json(text: &str) -> Result<JsonlOptions, Error> {
        crate::options::from_json(text)
    }

    /// How this store parses entries.
    pub(crate) fn parse(&self) -> ParseOptions {
        ParseOptions {
            strict_roles: self.strict_roles,
        }
    }

    fn writes(&self) -> bool {
        !(self.read_only || self.salvage)
    }
}

/// A JSONL file as opened: its committed entries and what the open found.
pub(crate) struct Opened {
    pub(crate) log: Log,
    pub(crate) warnings: Vec<Warning>,
    pub(crate) diagnostics: Vec<Diagnostic>,
    /// `None` for a read-only open.
    pub(crate) sink: Option<FileSink>,
}

/// Opens and replays the file at `path`.
pub(crate) fn open(
    path: &Path,
    options: &JsonlOptions,
    wrap: impl FnOnce(File) -> Box<dyn SessionFile>,
) -> Result<Opened, Error> {
    let (file, created) = open_file(path, options)?;
    // Resolved once: a later `chdir` must not change which file the identity check
    // looks at.
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_owned());
    // Held from here: a failed open drops it, which unlocks.
    let guard = if options.writes() && options.lock {
        Some(lock(&file, path)?)
    } else {
        None
    };
    if created && options.durability != Durability::None {
        sync_dir(path).map_err(|e| io_error(IoOp::Sync, &parent_dir(path), &e))?;
    }
    if created {
        // An index left by a session file that was deleted describes no file here: it
        // could never be used (another inode, or a size it does not have), but it
        // is removed rather than left to chance. Best effort.
        let _ = index::remove_index(&absolute);
    }
    // A strict open checks every line: an index written without those checks is not used.
    let use_index = options.index && !options.salvage && !options.strict_roles;
    let meta = file
        .metadata()
        .map_err(|e| io_error(IoOp::Open, path, &e))?;
    let from_index = if use_index && options.verify != Verify::Full {
        load_index(&file, path, &meta)
    } else {
        None
    };
    let full = || Replay::new(&file, options.salvage).with_parse_options(options.parse());
    let (replay, end, indexed_count) = match from_index {
        Some(log) => {
            let (covered, lines) = (log.line_bytes(), log.len() as u64);
            let mut replay = Replay::resume(&file, log, covered, lines);
            let ran = replay.run(&file, path);
            // Replaying the tail reads entries through the index (a parent, a
            // duplicate id). If a read failed there, or the tail failed at all, the
            // whole file is replayed: the index must not change the outcome.
            match (ran, replay.log.take_fault()) {
                (Ok(end), None) => (replay, end, lines),
                _ => {
                    let mut replay = full();
                    let end = replay.run(&file, path)?;
                    (replay, end, 0)
                }
            }
        }
        None => {
            let mut replay = full();
            let end = replay.run(&file, path)?;
            (replay, end, 0)
        }
    };
    let blank_tail = replay.scanner.has_blank_tail();
    // The committed prefix is exactly the entries' lines: an index can describe it.
    let indexable = use_index && replay.scanner.committed_bytes() == replay.log.line_bytes();
    let Replay {
        log,
        diagnostics,
        scanner,
        ..
    } = replay;
    let warnings: Vec<Warning> = scanner.finish().into_iter().collect();
    let sink = if options.writes() {
        let writer = file
            .try_clone()
            .map_err(|e| io_error(IoOp::Open, path, &e))?;
        let sink = FileSink {
            writer: wrap(writer),
            file,
            path: path.to_owned(),
            absolute,
            identity: (meta.dev(), meta.ino()),
            durability: options.durability,
            check_identity: options.check_identity,
            end,
            blank_tail,
            lock: guard,
            indexable,
            indexed_count,
            since_index: (0, 0),
            known_change: change_time(&meta),
            observed_change: None,
        };
        // The index is not written here: building it would sit inside open's
        // critical path (the first open of a large file would cost twice the
        // replay). It is written at close and every REWRITE_EVERY_APPENDS appends or
        // REWRITE_EVERY_BYTES bytes.
        Some(sink)
    } else {
        None
    };
    Ok(Opened {
        log,
        warnings,
        diagnostics,
        sink,
    })
}

/// The log of the prefix of `file` that its session index covers, read on demand,
/// when an index exists and matches the file; `None` to replay it all. The index is a
/// cache: anything wrong with it, reading it included, means a replay.
fn load_index(file: &File, path: &Path, meta: &fs::Metadata) -> Option<Log> {
    let index = open_regular(OpenOptions::new().read(true), &index::index_path(path)).ok()?;
    let index_len = index.metadata().ok()?.len();
    let (jsonl, kept) = (file.try_clone().ok()?, file.try_clone().ok()?);
    let stamp = index::Stamp::of(meta);
    let base = index::Base::open(
        Box::new(jsonl),
        Box::new(index),
        index_len,
        Some(stamp),
        path,
    )
    .ok()??;
    Some(Log::with_base(base.with_file(kept)))
}

/// Opens the file (creating it for a writer) on a descriptor of 3 or more, and says
/// whether this call created it. Anything but a regular file is refused.
fn open_file(path: &Path, options: &JsonlOptions) -> Result<(File, bool), Error> {
    let mut open = OpenOptions::new();
    open.read(true);
    if options.writes() {
        open.append(true);
    }
    let opened = if options.writes() {
        match open_regular(open.clone().create_new(true), path) {
            Ok(file) => Ok((file, true)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                open_regular(&open, path).map(|file| (file, false))
            }
            Err(e) => Err(e),
        }
    } else {
        open_regular(&open, path).map(|file| (file, false))
    };
    let (file, created) = opened.map_err(|e| io_error(IoOp::Open, path, &e))?;
    // With descriptors 0-2 closed, the file would become stdin/stdout/stderr and a
    // stray print would land in the session. `try_clone` duplicates onto a descriptor
    // of 3 or more; the low one is closed when `file` is dropped.
    let file = if fd_is_low(&file) {
        file.try_clone()
            .map_err(|e| io_error(IoOp::Open, path, &e))?
    } else {
        file
    };
    Ok((file, created))
}

/// Opens `path` without blocking (a FIFO would wait for a writer) and refuses anything
/// that is not a regular file before a byte is read: a FIFO, a device such as
/// `/dev/zero` (endless) or a directory. Used by every open of a session file.
pub(crate) fn open_regular(options: &OpenOptions, path: &Path) -> io::Result<File> {
    open_regular_with(options, rustix::fs::OFlags::empty(), path)
}

/// [`open_regular`] with `extra` flags ORed in (such as `NOFOLLOW`):
/// `OpenOptions::custom_flags` replaces earlier custom flags, so they are passed here.
pub(crate) fn open_regular_with(
    options: &OpenOptions,
    extra: rustix::fs::OFlags,
    path: &Path,
) -> io::Result<File> {
    let not_regular = |what: &str| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} is {what}, not a regular file", path.display()),
        )
    };
    let file = match options
        .clone()
        .custom_flags((rustix::fs::OFlags::NONBLOCK | extra).bits() as i32)
        .open(path)
    {
        Err(e) if e.kind() == io::ErrorKind::IsADirectory => {
            return Err(not_regular("a directory"));
        }
        other => other?,
    };
    let kind = file.metadata()?.file_type();
    if !kind.is_file() {
        let what = if kind.is_fifo() {
            "a FIFO"
        } else if kind.is_dir() {
            "a directory"
        } else if kind.is_char_device() {
            "a character device"
        } else if kind.is_block_device() {
            "a block device"
        } else if kind.is_socket() {
            "a socket"
        } else {
            "not a file"
        };
        return Err(not_regular(what));
    }
    // Back to ordinary blocking I/O for the regular file.
    let flags = rustix::fs::fcntl_getfl(&file)?;
    rustix::fs::fcntl_setfl(&file, flags - rustix::fs::OFlags::NONBLOCK)?;
    Ok(file)
}

fn fd_is_low(file: &File) -> bool {
    use std::os::fd::AsRawFd;
    file.as_raw_fd() < 3
}

fn parent_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_owned(),
        _ => PathBuf::from("."),
    }
}

/// The writer's side of a JSONL store: its file, what a successful append must
/// achieve, and what the file should look like.
pub(crate) struct FileSink {
    /// Writes and syncs go through this (the real file, or a test's fault layer).
    writer: Box<dyn SessionFile>,
    /// The store's own handle on the same open file.
    file: File,
    /// The path as given, for messages.
    path: PathBuf,
    /// The path made absolute at open, for the identity check.
    absolute: PathBuf,
    /// Device and inode of the open file, for the identity check.
    identity: (u64, u64),
    durability: Durability,
    check_identity: bool,
    /// The file's size as this writer last left it.
    end: u64,
    /// The file ends in an unterminated blank piece: the next line is written after
    /// a `\n` that ends it, in the same write, so it never welds onto those bytes.
    blank_tail: bool,
    /// The writer's lock for the store's lifetime; `None` when opened without one.
    lock: Option<LockGuard>,
    /// The file is exactly its entries' lines, so a session index can describe it.
    indexable: bool,
    /// Entries the index on disk covers (0 when there is none).
    indexed_count: u64,
    /// Appends and bytes since the index was last written.
    since_index: (u64, u64),
    /// The file's change time (`ctime`) when this writer last knew its bytes to be
    /// what its log says: at open (taken before the file was read), then after each
    /// of its own appends. A different change time before an append or an index write
    /// means another program changed the file (or its metadata) meanwhile.
    known_change: (i64, i64),
    /// The change time the identity check saw just before an append.
    observed_change: Option<(i64, i64)>,
}

/// The change time (`ctime`) of a file: it moves with every write, truncation,
/// `chmod` or `chown`, and no program can set it back (unlike the modification time).
fn change_time(meta: &fs::Metadata) -> (i64, i64) {
    (meta.ctime(), meta.ctime_nsec())
}

impl FileSink {
    pub(crate) fn durability(&self) -> Durability {
        self.durability
    }

    /// Before an append: the path still names our file, and its size is ours. One
    /// `stat` of the path answers both: when it names our inode, its size is our
    /// file's size.
    pub(crate) fn check_identity(&mut self) -> Result<(), IoFailure> {
        if !self.check_identity {
            return Ok(());
        }
        let change = match std::fs::metadata(&self.absolute) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => FileChange::Deleted,
            Err(e) => {
                return Err(IoFailure::new(
                    IoOp::Identity,
                    &self.path.display().to_string(),
                    &e,
                ));
            }
            Ok(named) if (named.dev(), named.ino()) != self.identity => FileChange::Replaced,
            Ok(named) if named.len() != self.end => FileChange::SizeChanged {
                expected: self.end,
                actual: named.len(),
            },
            Ok(named) => {
                self.observed_change = Some(change_time(&named));
                return Ok(());
            }
        };
        Err(IoFailure::changed(&self.path.display().to_string(), change))
    }

    /// Writes one whole line (after a blank tail, `\n` and the line in one write).
    pub(crate) fn write(&mut self, line: &[u8]) -> Result<(), IoFailure> {
        let terminated;
        let bytes = if self.blank_tail {
            let mut out = Vec::with_capacity(line.len() + 1);
            out.push(b'\n');
            out.extend_from_slice(line);
            terminated = out;
            &terminated[..]
        } else {
            line
        };
        if self.blank_tail {
            // The `\n` that ends the blank piece is not an entry's line.
            self.indexable = false;
        }
        if self.indexable {
            let before = match self.observed_change.take() {
                Some(change) => Some(change),
                None => self.file.metadata().ok().map(|m| change_time(&m)),
            };
            if before != Some(self.known_change) {
                self.disown_index();
            }
        }
        file::write_all(self.writer.as_mut(), bytes)
            .map_err(|e| IoFailure::new(IoOp::Write, "appending a line", &e))?;
        if self.indexable {
            match self.file.metadata() {
                Ok(meta) => self.known_change = change_time(&meta),
                Err(_) => self.disown_index(),
            }
        }
        self.end += bytes.len() as u64;
        self.blank_tail = false;
        self.since_index.0 += 1;
        self.since_index.1 += bytes.len() as u64;
        Ok(())
    }

    /// Whether enough was appended since the index was written to write it again.
    pub(crate) fn index_due(&self) -> bool {
        self.indexable
            && (self.since_index.0 >= index::REWRITE_EVERY_APPENDS
                || self.since_index.1 >= index::REWRITE_EVERY_BYTES)
    }

    /// Writes the session index of `log`, the committed entries of this file, unless
    /// the index on disk already covers them all or the file is not exactly their
    /// lines. Best effort: a failure only costs a later open a full replay.
    ///
    /// An index is only ever written from line checksums taken from the bytes now in
    /// the file: when the file changed since this writer last knew its bytes (its
    /// change time moved, see `known_change`), the records it holds — read from the
    /// file, or vouched for by the index it opened through — may be stale, so the
    /// index on disk is removed and none is written by this handle again.
    pub(crate) fn write_index(&mut self, log: &Log) {
        if !self.indexable || log.len() as u64 == self.indexed_count {
            return;
        }
        let Ok(meta) = self.file.metadata() else {
            return;
        };
        if change_time(&meta) != self.known_change {
            self.disown_index();
            return;
        }
        // The path must still name this file: an index for a file deleted or replaced
        // meanwhile would be an orphan, or replace the index of the file now there.
        match fs::metadata(&self.absolute) {
            Ok(named) if (named.dev(), named.ino()) == self.identity => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                self.disown_index();
                return;
            }
            _ => return,
        }
        let stamp = index::Stamp::of(&meta);
        if (stamp.dev, stamp.ino) != self.identity || stamp.size != log.line_bytes() {
            return;
        }
        let tree = log.index_tree();
        let items = log.index_items();
        let encoded = index::encode(items, log.len(), &tree, log.index_seed(), &self.file, stamp);
        let Some(bytes) = encoded else {
            return;
        };
        let durable = self.durability != Durability::None;
        let locked = self.lock.is_some();
        if index::write(&self.absolute, &bytes, durable, &meta, locked).is_ok() {
            self.indexed_count = log.len() as u64;
            self.since_index = (0, 0);
        }
    }

    /// The file changed under this writer: the index on disk may vouch for bytes that
    /// are gone, and the records this writer holds may too. Removes the index (best
    /// effort; the next writer that opens the file replays it and writes a new one)
    /// and writes none from this handle.
    fn disown_index(&mut self) {
        if self.indexable {
            let _ = index::remove_index(&self.absolute);
        }
        self.indexable = false;
    }

    /// The index on disk is not to be trusted: write it again at the next chance.
    pub(crate) fn forget_index(&mut self) {
        self.indexed_count = 0;
    }

    /// Makes every written line durable.
    pub(crate) fn sync(&mut self) -> Result<(), IoFailure> {
        file::sync(self.writer.as_mut())
            .map_err(|e| IoFailure::new(IoOp::Sync, "syncing the file", &e))
    }
}
