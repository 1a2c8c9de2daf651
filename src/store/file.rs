//! The file behind a JSONL store, as a small trait so that tests can inject failures
//! (a failing write, a short write that leaves half a line, a failing sync) while the
//! production implementation is the real file opened for append.

use std::fs::File;
use std::io::{self, Seek, SeekFrom, Write};
use std::path::Path;
use std::sync::Arc;

use crate::error::{Error, IoFailure, IoOp};

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

/// The library error for a failed operation `op` on `path`.
pub(crate) fn io_error(op: IoOp, path: &Path, e: &io::Error) -> Error {
    Error::Io(Arc::new(IoFailure::new(op, &path.display().to_string(), e)))
}
