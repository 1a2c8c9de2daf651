//! Explicit repair of a JSONL file whose only problem is an unterminated tail.
//!
//! The library never repairs by itself; the caller asks. A repair keeps every
//! committed line and moves the uncommitted bytes aside, in this order, so that an
//! interruption at any step loses nothing:
//!
//! 1. validate the whole committed prefix (a corrupt line, a duplicate id or a missing
//!    parent refuses the repair and leaves the file untouched);
//! 2. copy the uncommitted bytes to a new sidecar backup next to the file, and fsync
//!    the backup and the directory: the bytes now exist twice;
//! 3. truncate the file to its committed prefix and fsync it.
//!
//! Until step 3 the file is untouched; truncation only ever removes the uncommitted
//! tail. The repair takes the writer's advisory lock, so it cannot run under an open
//! writer that holds it.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use crate::error::{Error, IoOp};
use crate::json;
use crate::store::{Replay, SessionFile, io_error, lock, sync_dir};

/// What a repair did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RepairReport {
    /// Bytes removed from the end of the file (0 when there was nothing to repair).
    pub truncated_bytes: u64,
    /// The sidecar file holding exactly those bytes; `None` when nothing was removed.
    pub backup: Option<PathBuf>,
    /// Committed entries in the repaired file.
    pub entries: u64,
}

impl RepairReport {
    /// `{"truncatedBytes":N,"backup":"…"|null,"entries":M}`.
    pub fn to_json(&self) -> String {
        let mut out = format!("{{\"truncatedBytes\":{},\"backup\":", self.truncated_bytes);
        match &self.backup {
            Some(path) => json::push_string(&mut out, &path.display().to_string()),
            None => out.push_str("null"),
        }
        out.push_str(&format!(",\"entries\":{}}}", self.entries));
        out
    }
}

/// The file operations a repair performs, so that tests can fail each one.
pub trait RepairIo {
    /// Creates the backup file; fails with `AlreadyExists` if `path` exists.
    fn create_backup(&mut self, path: &Path) -> io::Result<Box<dyn SessionFile>>;
    /// Cuts the session file to `len` bytes.
    fn truncate(&mut self, file: &File, len: u64) -> io::Result<()>;
    /// Makes the session file's data and size durable.
    fn sync_file(&mut self, file: &File) -> io::Result<()>;
    /// Makes the directory entries next to `path` durable.
    fn sync_dir(&mut self, path: &Path) -> io::Result<()>;
}

/// The real file system.
pub struct RealRepairIo;

impl RepairIo for RealRepairIo {
    fn create_backup(&mut self, path: &Path) -> io::Result<Box<dyn SessionFile>> {
        let file = OpenOptions::new().write(true).create_new(true).open(path)?;
        Ok(Box::new(file))
    }

    fn truncate(&mut self, file: &File, len: u64) -> io::Result<()> {
        file.set_len(len)
    }

    fn sync_file(&mut self, file: &File) -> io::Result<()> {
        file.sync_all()
    }

    fn sync_dir(&mut self, path: &Path) -> io::Result<()> {
        sync_dir(path)
    }
}

/// Repairs the JSONL file at `path`: see the module documentation.
///
/// Fails, leaving the file untouched, with [`Error::CorruptLine`],
/// [`Error::DuplicateId`] or [`Error::MissingParent`] when the committed prefix is not
/// valid, [`Error::Locked`] when a writer holds the file, or [`Error::Io`]. A file
/// without an unterminated tail is left as it is (`truncated_bytes` 0), so a second
/// repair changes nothing.
pub fn repair_jsonl(path: impl AsRef<Path>) -> Result<RepairReport, Error> {
    repair_jsonl_with_io(path, &mut RealRepairIo)
}

/// [`repair_jsonl`] with its file operations going through `io`.
pub fn repair_jsonl_with_io(
    path: impl AsRef<Path>,
    io: &mut dyn RepairIo,
) -> Result<RepairReport, Error> {
    let path = path.as_ref();
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .map_err(|e| io_error(IoOp::Open, path, &e))?;
    lock(&file, path)?;
    let mut replay = Replay::new(&file, false);
    let size = replay.run(&file, path)?;
    let committed = replay.scanner.committed_bytes();
    let entries = replay.log.len() as u64;
    let torn = replay.scanner.finish().is_some();
    if !torn {
        return Ok(RepairReport {
            truncated_bytes: 0,
            backup: None,
            entries,
        });
    }
    let backup = back_up_tail(&file, path, committed, io)?;
    io.truncate(&file, committed)
        .map_err(|e| io_error(IoOp::Truncate, path, &e))?;
    io.sync_file(&file)
        .map_err(|e| io_error(IoOp::Sync, path, &e))?;
    Ok(RepairReport {
        truncated_bytes: size - committed,
        backup: Some(backup),
        entries,
    })
}

/// Copies `file[from..]` to a new sidecar next to `path` and makes it durable.
fn back_up_tail(
    file: &File,
    path: &Path,
    from: u64,
    io: &mut dyn RepairIo,
) -> Result<PathBuf, Error> {
    let (backup_path, mut backup) = create_sidecar(path, io)?;
    let mut reader = file;
    reader
        .seek(SeekFrom::Start(from))
        .map_err(|e| io_error(IoOp::Read, path, &e))?;
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(io_error(IoOp::Read, path, &e)),
        };
        crate::store::write_all(backup.as_mut(), &buf[..n])
            .map_err(|e| io_error(IoOp::Write, &backup_path, &e))?;
    }
    crate::store::sync(backup.as_mut()).map_err(|e| io_error(IoOp::Sync, &backup_path, &e))?;
    io.sync_dir(&backup_path)
        .map_err(|e| io_error(IoOp::Sync, &backup_path, &e))?;
    Ok(backup_path)
}

/// Creates `<name>.tail-<k>.bak` next to `path` with the first free `k`.
fn create_sidecar(
    path: &Path,
    io: &mut dyn RepairIo,
) -> Result<(PathBuf, Box<dyn SessionFile>), Error> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "session".to_owned());
    for k in 1..=10_000u32 {
        let candidate = path.with_file_name(format!("{name}.tail-{k}.bak"));
        match io.create_backup(&candidate) {
            Ok(file) => return Ok((candidate, file)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(io_error(IoOp::Open, &candidate, &e)),
        }
    }
    let e = io::Error::new(io::ErrorKind::AlreadyExists, "10000 backups already exist");
    Err(io_error(IoOp::Open, path, &e))
}
