//! The file behind a JSONL store, as a small trait so that tests can inject failures
//! (a failing write, a short write that leaves half a line, a failing sync) while the
//! production implementation is the real file opened for append.

use std::ffi::{OsStr, OsString};
use std::fs::{File, Metadata, OpenOptions, Permissions};
use std::io::{self, Seek, SeekFrom, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// Makes the directory entry of `path` durable (after a create or a rename).
pub(crate) fn sync_dir(path: &Path) -> io::Result<()> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    File::open(dir)?.sync_all()
}

/// What the JSONL store does to its file after open: append and sync.
pub trait SessionFile: Send {
    /// One `write(2)`: writes a prefix of `buf` at the end of the file and returns its
    /// length. A short count is allowed; the store writes the rest with further calls.
    fn write(&mut self, buf: &[u8]) -> io::Result<usize>;

    /// Makes written data durable (`fdatasync(2)`).
    fn sync(&mut self) -> io::Result<()>;

    /// Adds `len` NUL bytes at the end. A file opened without append leaves a hole
    /// instead (no disk space); the default writes the bytes.
    fn skip(&mut self, len: u64) -> io::Result<()> {
        static ZEROS: [u8; 1 << 16] = [0; 1 << 16];
        let mut left = len;
        while left > 0 {
            let take = usize::try_from(left).map_or(ZEROS.len(), |l| l.min(ZEROS.len()));
            match self.write(&ZEROS[..take]) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => left -= n as u64,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}

impl SessionFile for File {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        Write::write(self, buf)
    }

    fn sync(&mut self) -> io::Result<()> {
        self.sync_data()
    }

    fn skip(&mut self, len: u64) -> io::Result<()> {
        let offset = i64::try_from(len)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "hole too large"))?;
        let end = self.seek(SeekFrom::Current(offset))?;
        // Sets the size, so a hole at the very end is kept too.
        self.set_len(end)
    }
}

/// Writes all of `line`: continues after a short write and retries `EINTR`
/// invisibly. Any other failure is returned as is; part of the line may be on disk.
pub(crate) fn write_all(file: &mut dyn SessionFile, line: &[u8]) -> io::Result<()> {
    let mut rest = line;
    while !rest.is_empty() {
        match file.write(rest) {
            Ok(0) => {
                return Err(io::Error::new(
                    io::ErrorKind::WriteZero,
                    "the file accepted no bytes",
                ));
            }
            Ok(n) => rest = rest.get(n..).unwrap_or_default(),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// `sync`, retrying `EINTR`.
pub(crate) fn sync(file: &mut dyn SessionFile) -> io::Result<()> {
    loop {
        match file.sync() {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            other => return other,
        }
    }
}

pub(crate) use crate::error::io_error;

/// The longest file name Linux file systems take (`NAME_MAX`).
pub(crate) const NAME_MAX: usize = 255;

/// A file name for a sidecar of the session file named `name`: `prefix`, the name and
/// `suffix`, at most [`NAME_MAX`] bytes. When the whole would be longer, the name part
/// is cut (never inside a UTF-8 character) and followed by `~` and 16 hex digits of a
/// checksum of the whole name, so sidecars of different long names stay different.
pub(crate) fn sidecar_name(name: &OsStr, prefix: &str, suffix: &str) -> OsString {
    let bytes = name.as_bytes();
    let mut out = OsString::from(prefix);
    if prefix.len() + bytes.len() + suffix.len() <= NAME_MAX {
        out.push(name);
    } else {
        let tag = format!("~{:016x}", xxhash_rust::xxh64::xxh64(bytes, 0));
        let mut keep = NAME_MAX.saturating_sub(prefix.len() + tag.len() + suffix.len());
        // Back off to the start of a character (a UTF-8 continuation byte is 0b10xx_xxxx).
        while keep > 0 && bytes.get(keep).is_some_and(|b| b & 0xC0 == 0x80) {
            keep -= 1;
        }
        out.push(OsStr::from_bytes(bytes.get(..keep).unwrap_or_default()));
        out.push(tag);
    }
    out.push(suffix);
    out
}

/// Creates a new file at `path` for bytes derived from the session file whose metadata
/// is `like` (a backup, an index): never through a symbolic link or over anything that
/// exists (`AlreadyExists` then, without opening it, so a FIFO there never blocks),
/// created 0600 and then given the session file's permission bits and, where the
/// process may set it, its owner. Never wider: group bits are dropped when the file
/// could not be given the session file's group.
pub(crate) fn create_sidecar(path: &Path, like: &Metadata) -> io::Result<File> {
    let file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
        .open(path)?;
    give_like(&file, Some(like.uid()), Some(like.gid()), like.mode())?;
    Ok(file)
}

/// The permission bits for a file of group `file_gid` that holds bytes derived from
/// session files whose shared group is `gid` (`None`: no one group) and whose mode
/// bits are `mode`: those bits, without the group's unless the file's group is `gid`.
pub(crate) fn mode_like(file_gid: u32, gid: Option<u32>, mode: u32) -> u32 {
    match gid == Some(file_gid) {
        true => mode & 0o777,
        false => mode & 0o707,
    }
}

/// Gives `file`, which holds bytes derived from session files, the owner `uid` and the
/// group `gid` where the process may, then the permission bits `mode`, never wider
/// than those files: the group bits are dropped unless the file's group is `gid`
/// (`None`: the files have no one owner or group). Owner and group are best effort:
/// only a privileged process may give a file away, or to a group it is not in. The
/// rule of every sidecar's permissions (backup, session index; the search index
/// applies it through a path, see `search::index`), its mode part [`mode_like`].
fn give_like(file: &File, uid: Option<u32>, gid: Option<u32>, mode: u32) -> io::Result<()> {
    let meta = file.metadata()?;
    let wrong_uid = uid.filter(|&u| u != meta.uid());
    let wrong_gid = gid.filter(|&g| g != meta.gid());
    if (wrong_uid.is_some() || wrong_gid.is_some())
        && std::os::unix::fs::fchown(file, wrong_uid, wrong_gid).is_err()
        && wrong_gid.is_some()
    {
        // Not allowed to give the file away: its group alone, when the process is in it.
        let _ = std::os::unix::fs::fchown(file, None, wrong_gid);
    }
    let meta = file.metadata()?;
    let mode = mode_like(meta.gid(), gid, mode);
    if meta.mode() & 0o777 != mode {
        file.set_permissions(Permissions::from_mode(mode))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sidecar_keeps_group_bits_only_in_the_session_files_group() {
        assert_eq!(mode_like(20, Some(20), 0o640), 0o640);
        assert_eq!(mode_like(0, Some(20), 0o640), 0o600);
        assert_eq!(mode_like(20, None, 0o664), 0o604);
        assert_eq!(mode_like(20, Some(20), 0o100_644), 0o644);
    }

    #[test]
    fn sidecar_names_fit_name_max_and_stay_distinct() {
        let short = sidecar_name(OsStr::new("s.jsonl"), ".", ".repair-1.tmp");
        assert_eq!(short, ".s.jsonl.repair-1.tmp");
        let (a, b) = (
            format!("{}a.jsonl", "é".repeat(122)),
            format!("{}b.jsonl", "é".repeat(122)),
        );
        for (prefix, suffix) in [
            (".", ".repair-10000.tmp"),
            ("", ".tail-1.bak"),
            ("", ".tmp"),
        ] {
            let (x, y) = (
                sidecar_name(OsStr::new(&a), prefix, suffix),
                sidecar_name(OsStr::new(&b), prefix, suffix),
            );
            assert_ne!(x, y);
            for name in [&x, &y] {
                assert!(name.len() <= NAME_MAX, "{name:?}");
                let text = name.to_str().expect("cut on a character boundary");
                assert!(text.starts_with(prefix) && text.ends_with(suffix), "{text}");
            }
        }
    }
}
