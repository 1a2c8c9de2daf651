//! The sidecar's file: what may be at its name and beside it, its owner and mode, and
//! the opening of the database.

use std::fs::{self, Metadata};
use std::io;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, TransactionBehavior};

use super::{Fail, Found, SCHEMA, SCHEMA_VERSION, io_error};
use crate::error::{Error, IoOp};
use crate::store::mode_like;

/// How long a search waits for another process's update of the index.
pub(super) const BUSY_TIMEOUT: Duration = Duration::from_secs(60);
/// The mode of a sidecar when the folder has no session file to take it from.
pub(super) const DEFAULT_MODE: u32 = 0o600;

/// The owner, group and permission bits the sidecar and its journal take from the
/// session files, never wider than any of them: the owner and group the files share
/// (`None` when they differ), and only the mode bits every one of them has
/// ([`DEFAULT_MODE`] when there is none).
pub(super) struct Like {
    uid: Option<u32>,
    gid: Option<u32>,
    mode: u32,
}

impl Like {
    pub(super) fn of(found: &[Found]) -> Like {
        let shared = |get: fn(&Metadata) -> u32| {
            let first = found.first().map(|f| get(&f.meta));
            first.filter(|&v| found.iter().all(|f| get(&f.meta) == v))
        };
        Like {
            uid: shared(MetadataExt::uid),
            gid: shared(MetadataExt::gid),
            mode: found
                .iter()
                .map(|f| f.meta.mode() & 0o777)
                .reduce(|a, b| a & b)
                .unwrap_or(DEFAULT_MODE),
        }
    }
}

/// The files SQLite may open beside the sidecar: its rollback journal, and a
/// write-ahead log and its shared memory (never made by this index, but opened by
/// SQLite when present).
pub(super) const SIDE_FILES: [&str; 3] = ["-journal", "-wal", "-shm"];

pub(super) fn side_path(sidecar: &Path, suffix: &str) -> std::path::PathBuf {
    let mut name = sidecar.as_os_str().to_owned();
    name.push(suffix);
    name.into()
}

pub(super) fn not_regular(path: &Path) -> Error {
    let e = io::Error::new(
        io::ErrorKind::InvalidInput,
        "not a regular file (a symbolic link, FIFO, directory or device)",
    );
    io_error(IoOp::Open, path, &e)
}

/// Makes the sidecar at `path` ready for SQLite to open, or says why it cannot be
/// used. Nothing but a regular file may be at the sidecar's name or a SQLite side
/// file's ([`SIDE_FILES`]): SQLite would block on a FIFO there (a journal is opened
/// to read it), so any other kind, a symbolic link included, is refused without being
/// opened. A missing sidecar is created (never through a link) and given the session
/// files' owner, group and mode ([`Like`]); an existing one is only narrowed, never
/// widened (its journal: [`narrow_journal`]).
pub(super) fn prepare_sidecar(path: &Path, like: &Like) -> Result<(), Error> {
    for suffix in SIDE_FILES {
        let side = side_path(path, suffix);
        match fs::symlink_metadata(&side) {
            Ok(meta) if meta.file_type().is_file() => {}
            Ok(_) => return Err(not_regular(&side)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(io_error(IoOp::Open, &side, &e)),
        }
    }
    // Created without being opened (`mknod` of a regular file fails on anything at the
    // name, a link included): see `narrow` for why no descriptor of it is closed here.
    let created = rustix::fs::mknodat(
        rustix::fs::CWD,
        path,
        rustix::fs::FileType::RegularFile,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    );
    match created {
        Ok(()) => narrow(path, like, true)?,
        Err(rustix::io::Errno::EXIST) => narrow(path, like, false)?,
        Err(e) => return Err(io_error(IoOp::Open, path, &e.into())),
    }
    Ok(())
}

/// Narrows the journal beside the sidecar at `path`, when there is one.
pub(super) fn narrow_journal(path: &Path, like: &Like) -> Result<(), Error> {
    let journal = side_path(path, SIDE_FILES[0]);
    match fs::symlink_metadata(&journal) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        _ => narrow(&journal, like, false),
    }
}

/// Gives the regular file at `path` the owner and group of `like` where the process
/// may, and its mode (`fresh`), or narrows its mode to `like`'s (an existing file,
/// never widened), with the rule of every sidecar (`store::mode_like`: no group bits
/// unless the group is the files' one). Anything but a regular file is refused.
///
/// Through an `O_PATH` descriptor, never one opened to read or write: SQLite holds
/// POSIX locks on the database, and closing any ordinary descriptor of the file in
/// this process drops them all (another search in this process may hold them); the
/// kernel leaves locks alone when an `O_PATH` descriptor closes. The mode is set
/// through `/proc/self/fd`, which reaches that very file (no link is followed).
pub(super) fn narrow(path: &Path, like: &Like, fresh: bool) -> Result<(), Error> {
    use rustix::fs::{AtFlags, FileType, OFlags};
    let fail = |e: rustix::io::Errno| io_error(IoOp::Open, path, &e.into());
    let fd = rustix::fs::open(
        path,
        OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    )
    .map_err(fail)?;
    let stat = rustix::fs::fstat(&fd).map_err(fail)?;
    if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
        return Err(not_regular(path));
    }
    let wrong_uid = like.uid.filter(|&u| u != stat.st_uid);
    let wrong_gid = like.gid.filter(|&g| g != stat.st_gid);
    if wrong_uid.is_some() || wrong_gid.is_some() {
        let chown = |uid: Option<u32>, gid: Option<u32>| {
            rustix::fs::chownat(
                &fd,
                "",
                uid.map(rustix::fs::Uid::from_raw_unchecked),
                gid.map(rustix::fs::Gid::from_raw_unchecked),
                AtFlags::EMPTY_PATH,
            )
        };
        // Best effort: only a privileged process may give a file away; the group
        // alone may still be given by a process in it.
        if chown(wrong_uid, wrong_gid).is_err() && wrong_gid.is_some() {
            let _ = chown(None, wrong_gid);
        }
    }
    let stat = rustix::fs::fstat(&fd).map_err(fail)?;
    let current = stat.st_mode & 0o777;
    let mode = mode_like(
        stat.st_gid,
        like.gid,
        if fresh {
            like.mode
        } else {
            current & like.mode
        },
    );
    if current != mode {
        use std::os::fd::AsRawFd;
        let proc = format!("/proc/self/fd/{}", fd.as_raw_fd());
        fs::set_permissions(&proc, fs::Permissions::from_mode(mode))
            .map_err(|e| io_error(IoOp::Open, path, &e))?;
    }
    Ok(())
}

/// The settings of every index connection.
pub(super) fn tune(conn: &Connection) -> rusqlite::Result<()> {
    // Disposable: a crash may cost the index, never a session, so no fsync.
    conn.pragma_update(None, "synchronous", "OFF")?;
    // A build touches the FTS5 segments over and over: keep them in memory (KiB).
    conn.pragma_update(None, "cache_size", -65536)
}

/// Opens the sidecar (creating its tables when they are missing). `Ok(None)`: it is of
/// another schema version and must be rebuilt.
pub(super) fn open_index(path: &Path) -> Result<Option<Connection>, Fail> {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_NOFOLLOW
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let mut conn = Connection::open_with_flags(path, flags)?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    tune(&conn)?;
    // The journal is kept between transactions (emptied, not deleted), so it keeps the
    // owner, group and mode `prepare_sidecar` gave it: SQLite creates a journal with
    // the database's mode but the process's group.
    let _: String = conn.pragma_update_and_check(None, "journal_mode", "TRUNCATE", |r| r.get(0))?;
    let version: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
    if version == SCHEMA_VERSION {
        return Ok(Some(conn));
    }
    if version != 0 {
        return Ok(None);
    }
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    // Another process may have created the tables while this one waited.
    let version: i64 = tx.pragma_query_value(None, "user_version", |r| r.get(0))?;
    if version == 0 {
        tx.execute_batch(SCHEMA)?;
        tx.pragma_update(None, "user_version", SCHEMA_VERSION)?;
    }
    tx.commit()?;
    Ok(Some(conn))
}
