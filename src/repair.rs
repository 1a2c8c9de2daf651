//! Explicit repair of a JSONL file whose only problem is an unterminated tail.
//!
//! The library never repairs by itself; the caller asks. A repair keeps every
//! committed line and moves the uncommitted bytes aside, in this order, so that an
//! interruption at any step loses nothing:
//!
//! 1. validate the whole committed prefix (a corrupt line, a duplicate id or a missing
//!    parent refuses the repair and leaves the file untouched);
//! 2. copy the uncommitted bytes to a temporary file next to the session file (holes
//!    stay holes), fsync it, rename it to a new sidecar `<name>.tail-<k>.bak` (never
//!    over an existing one) and fsync the directory: the bytes now exist twice. The
//!    temporary name (`.<name>.repair-<k>.tmp`) never looks like a backup, so a
//!    repair that fails or is killed leaves no partial `.bak`; on a failure it is
//!    removed. The backup has the session file's permissions (and owner, where the
//!    process may set it) and is never created through a symbolic link. Both names
//!    fit `NAME_MAX` whatever the session name's length: a name part that would not is
//!    cut and followed by `~` and 16 hex digits of its checksum;
//! 3. truncate the file to its committed prefix and fsync it.
//!
//! Until step 3 the file is untouched; truncation only ever removes the uncommitted
//! tail. The repair takes the writer's advisory lock, so it cannot run under an open
//! writer that holds it.

use std::fs::{File, Metadata, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};

use crate::error::{Error, IoOp};
use crate::json::Object;
use crate::store::{
    Piece, Reader, Replay, SessionFile, create_sidecar, io_error, lock, open_regular, sidecar_name,
    sync_dir,
};

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
        let backup = self.backup.as_ref().map(|p| p.display().to_string());
        Object::new()
            .number("truncatedBytes", self.truncated_bytes)
            .string_or_null("backup", backup.as_deref())
            .number("entries", self.entries)
            .finish()
    }
}

/// The file operations a repair performs, so that tests can fail each one. Every method
/// defaults to the real file system, so a fake overrides only the step it changes.
pub trait RepairIo {
    /// Creates the backup's temporary file with the permissions (and, where allowed,
    /// the owner) of `like`, the session file; fails with `AlreadyExists` if `path`
    /// exists, and never follows a symbolic link.
    fn create_backup(&mut self, path: &Path, like: &Metadata) -> io::Result<Box<dyn SessionFile>> {
        Ok(Box::new(create_sidecar(path, like)?))
    }
    /// Renames the complete, synced temporary file `from` to the backup name `to`;
    /// fails with `AlreadyExists`, changing nothing, if `to` exists.
    fn publish_backup(&mut self, from: &Path, to: &Path) -> io::Result<()> {
        rename_no_replace(from, to)
    }
    /// Cuts the session file to `len` bytes.
    fn truncate(&mut self, file: &File, len: u64) -> io::Result<()> {
        file.set_len(len)
    }
    /// Makes the session file's data and size durable.
    fn sync_file(&mut self, file: &File) -> io::Result<()> {
        file.sync_all()
    }
    /// Makes the directory entries next to `path` durable.
    fn sync_dir(&mut self, path: &Path) -> io::Result<()> {
        sync_dir(path)
    }
}

/// The real file system.
pub struct RealRepairIo;

impl RepairIo for RealRepairIo {}

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
    let file = open_regular(OpenOptions::new().read(true).write(true), path)
        .map_err(|e| io_error(IoOp::Open, path, &e))?;
    // Released when repair returns, however it returns.
    let _lock = lock(&file, path)?;
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
    // The session index goes first. Best effort: an index that no longer matches the
    // file is never used anyway (docs/contract.md §3).
    let _ = crate::store::remove_index(path);
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

/// Copies `file[from..]` to a new sidecar next to `path` and makes it durable: written
/// under a temporary name, synced, then renamed into place.
fn back_up_tail(
    file: &File,
    path: &Path,
    from: u64,
    io: &mut dyn RepairIo,
) -> Result<PathBuf, Error> {
    let like = file
        .metadata()
        .map_err(|e| io_error(IoOp::Open, path, &e))?;
    let name = path
        .file_name()
        .unwrap_or_else(|| std::ffi::OsStr::new("session"));
    let (temp_path, mut temp) = first_free(
        path,
        |k| sidecar_name(name, ".", &format!(".repair-{k}.tmp")),
        |p| io.create_backup(p, &like),
    )?;
    let copied = copy_tail(file, path, from, temp.as_mut(), &temp_path);
    drop(temp);
    let published = copied.and_then(|()| {
        first_free(
            path,
            |k| sidecar_name(name, "", &format!(".tail-{k}.bak")),
            |p| io.publish_backup(&temp_path, p),
        )
    });
    let backup_path = match published {
        Ok((backup_path, ())) => backup_path,
        Err(e) => {
            // Nothing partial is left behind; the session file was not touched.
            let _ = std::fs::remove_file(&temp_path);
            return Err(e);
        }
    };
    io.sync_dir(&backup_path)
        .map_err(|e| io_error(IoOp::Sync, &backup_path, &e))?;
    Ok(backup_path)
}

/// Copies the bytes of `file` from `from` to its end into `backup` and syncs it. Holes
/// are skipped, not written, so a mostly-hole tail needs no disk space.
fn copy_tail(
    file: &File,
    path: &Path,
    from: u64,
    backup: &mut dyn SessionFile,
    backup_path: &Path,
) -> Result<(), Error> {
    let mut reader = Reader::new(file, path, from);
    let mut buf = vec![0u8; 1 << 20];
    loop {
        match reader.next(&mut buf)? {
            Piece::End => break,
            Piece::Data(n) => crate::store::write_all(backup, &buf[..n])
                .map_err(|e| io_error(IoOp::Write, backup_path, &e))?,
            Piece::Hole(len) => backup
                .skip(len)
                .map_err(|e| io_error(IoOp::Write, backup_path, &e))?,
        }
    }
    crate::store::sync(backup).map_err(|e| io_error(IoOp::Sync, backup_path, &e))
}

/// Calls `attempt` on `name(k)` next to `path` for k = 1, 2, … until it does not fail
/// with `AlreadyExists`.
fn first_free<T>(
    path: &Path,
    name: impl Fn(u32) -> std::ffi::OsString,
    mut attempt: impl FnMut(&Path) -> io::Result<T>,
) -> Result<(PathBuf, T), Error> {
    for k in 1..=10_000u32 {
        let candidate = path.with_file_name(name(k));
        match attempt(&candidate) {
            Ok(made) => return Ok((candidate, made)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(io_error(IoOp::Open, &candidate, &e)),
        }
    }
    let e = io::Error::new(io::ErrorKind::AlreadyExists, "10000 backups already exist");
    Err(io_error(IoOp::Open, path, &e))
}

/// Renames `from` to `to` unless `to` exists (`renameat2` with `RENAME_NOREPLACE`; on
/// a file system without it, a hard link and an unlink, which refuse to replace too).
pub(crate) fn rename_no_replace(from: &Path, to: &Path) -> io::Result<()> {
    use rustix::fs::{CWD, RenameFlags, renameat_with};
    match renameat_with(CWD, from, CWD, to, RenameFlags::NOREPLACE) {
        Ok(()) => Ok(()),
        Err(rustix::io::Errno::INVAL | rustix::io::Errno::NOSYS) => {
            std::fs::hard_link(from, to)?;
            std::fs::remove_file(from)
        }
        Err(e) => Err(e.into()),
    }
}
