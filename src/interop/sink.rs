//! Where an import's lines go: a vector, a writer, or a new file written beside
//! its final name and renamed into place once synced.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use super::headroom::out_of_memory;
use crate::error::{Error, IoOp, io_error};
use crate::store::sync_dir;

/// Where an import's lines go: a vector (in memory) or a buffered temporary file.
/// A line is given in pieces, written back to back (UTF-8 once joined), so that a
/// source line copied into an entry is not copied once more to join them.
pub(crate) trait Sink {
    fn line(&mut self, parts: &[&[u8]]) -> Result<(), Error>;
}

impl Sink for Vec<String> {
    fn line(&mut self, parts: &[&[u8]]) -> Result<(), Error> {
        self.try_reserve(1)
            .map_err(|_| out_of_memory("the imported lines"))?;
        let text = String::from_utf8(parts.concat())
            .map_err(|_| Error::internal("an imported line is not UTF-8"))?;
        self.push(text);
        Ok(())
    }
}

struct FileSink<'p> {
    writer: BufWriter<File>,
    path: &'p Path,
    /// Bytes written since the syncer was last asked to flush, and in all.
    unsynced: u64,
    written: u64,
    tried: bool,
    /// Started once the output is large ([`SYNC_START`]); `None` before, or when it
    /// could not start.
    syncer: Option<Syncer>,
}

/// Bytes written between two requests to the background syncer.
const SYNC_STEP: u64 = 64 << 20;
/// Output size from which a syncer runs: below it the final sync is short, and an
/// import does not pay for a thread (its stack and, with glibc, its own malloc
/// arena's reservation of address space).
const SYNC_START: u64 = 256 << 20;

/// A thread that flushes the output to disk (`fdatasync`) while the import goes on,
/// so that the final sync does not wait for the whole file: the kernel would
/// otherwise hold gigabytes of dirty pages until then. Its first failure is the
/// import's: a flush error is reported once per open file, so the final sync may not
/// see it again.
struct Syncer {
    requests: std::sync::mpsc::SyncSender<()>,
    thread: std::thread::JoinHandle<std::io::Result<()>>,
}

impl Syncer {
    /// `None` when the file cannot be shared or no thread started: the final sync
    /// then does all the work, as it would anyway.
    fn start(file: &File) -> Option<Syncer> {
        let file = file.try_clone().ok()?;
        let (requests, received) = std::sync::mpsc::sync_channel::<()>(1);
        let thread = std::thread::Builder::new()
            .name("session-import-sync".into())
            .stack_size(64 << 10)
            .spawn(move || received.iter().try_for_each(|()| file.sync_data()))
            .ok()?;
        Some(Syncer { requests, thread })
    }

    /// Waits for the thread; its error, if a flush failed.
    fn finish(self) -> std::io::Result<()> {
        drop(self.requests);
        self.thread
            .join()
            .unwrap_or_else(|_| Err(std::io::Error::other("the sync thread panicked")))
    }
}

impl Sink for FileSink<'_> {
    fn line(&mut self, parts: &[&[u8]]) -> Result<(), Error> {
        parts
            .iter()
            .try_for_each(|part| self.writer.write_all(part))
            .and_then(|()| self.writer.write_all(b"\n"))
            .map_err(|e| io_error(IoOp::Write, self.path, &e))?;
        let len = parts.iter().map(|p| p.len() as u64).sum::<u64>() + 1;
        self.unsynced += len;
        self.written += len;
        if self.written >= SYNC_START && self.syncer.is_none() && !self.tried {
            self.tried = true;
            self.syncer = Syncer::start(self.writer.get_ref());
        }
        if self.unsynced >= SYNC_STEP
            && let Some(syncer) = &self.syncer
        {
            self.unsynced = 0;
            // What the buffer holds goes with the next request; a request made while
            // the thread is busy is dropped (the next one covers it).
            let _ = syncer.requests.try_send(());
        }
        Ok(())
    }
}

/// Writes a new file at `path` through `fill`: into a temporary file beside it,
/// synced, then renamed to `path` unless `path` exists (an import never overwrites a
/// file). On any failure the temporary file is removed and `path` left alone.
pub(crate) fn write_new_file<T>(
    path: &Path,
    fill: impl FnOnce(&mut dyn Sink) -> Result<T, Error>,
) -> Result<T, Error> {
    // Fail before the work when `path` exists; the rename checks again.
    if std::fs::symlink_metadata(path).is_ok() {
        let exists = std::io::Error::from_raw_os_error(libc::EEXIST);
        return Err(io_error(IoOp::Open, path, &exists));
    }
    let (temp, file) = create_temporary(path)?;
    let written = (|| {
        let mut sink = FileSink {
            writer: BufWriter::with_capacity(1 << 16, file),
            path: &temp,
            unsynced: 0,
            written: 0,
            tried: false,
            syncer: None,
        };
        let made = fill(&mut sink);
        let synced = sink.syncer.take().map_or(Ok(()), Syncer::finish);
        let made = made?;
        synced.map_err(|e| io_error(IoOp::Sync, &temp, &e))?;
        let file = sink
            .writer
            .into_inner()
            .map_err(|e| io_error(IoOp::Write, &temp, e.error()))?;
        file.sync_all()
            .map_err(|e| io_error(IoOp::Sync, &temp, &e))?;
        crate::repair::rename_no_replace(&temp, path)
            .map_err(|e| io_error(IoOp::Open, path, &e))?;
        Ok(made)
    })();
    match written {
        Ok(made) => {
            // The rename is durable once the directory is synced; the file itself
            // already is, so a failure here loses nothing the caller was promised.
            let _ = sync_dir(path);
            Ok(made)
        }
        Err(e) => {
            let _ = std::fs::remove_file(&temp);
            Err(e)
        }
    }
}

/// A new temporary file beside `path`: `.NAME.import-PID-K.tmp`.
pub(crate) fn create_temporary(path: &Path) -> Result<(PathBuf, File), Error> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut last = None;
    for k in 0..1000u32 {
        let temp = path.with_file_name(format!(".{name}.import-{}-{k}.tmp", std::process::id()));
        match OpenOptions::new().write(true).create_new(true).open(&temp) {
            Ok(file) => return Ok((temp, file)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
            // Named by the file asked for: its folder is missing or not writable.
            Err(e) => return Err(io_error(IoOp::Open, path, &e)),
        }
    }
    let e = last.unwrap_or_else(|| std::io::Error::from(std::io::ErrorKind::AlreadyExists));
    Err(io_error(IoOp::Open, path, &e))
}

/// A sink straight into a writer ([`import_file_into`]).
pub(super) struct WriterSink<'w>(pub(super) &'w mut dyn Write);

impl Sink for WriterSink<'_> {
    fn line(&mut self, parts: &[&[u8]]) -> Result<(), Error> {
        parts
            .iter()
            .try_for_each(|part| self.0.write_all(part))
            .and_then(|()| self.0.write_all(b"\n"))
            .map_err(|e| io_error(IoOp::Write, Path::new("the import output"), &e))
    }
}
