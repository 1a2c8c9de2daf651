//! The source of an import, read a line at a time, as many passes as it needs.

use std::fs::OpenOptions;
use std::io::{BufRead, BufReader, Seek, SeekFrom};
use std::path::Path;
use std::sync::Arc;

use super::headroom::{check_headroom, out_of_memory};
use super::{IMPORT_PROGRESS_STEP, ImportProgress};
use crate::error::{Error, IoFailure, IoOp, LineFault, io_error};
use crate::recover::MAX_LINE_BYTES;
use crate::store::open_regular;

/// One non-blank physical line of the source, `\r\n` read as `\n`.
pub(crate) struct SourceLine<'a> {
    pub number: u64,
    pub text: &'a [u8],
}

/// The source, read line by line into one buffer (at most [`MAX_LINE_BYTES`] plus a
/// `\r`), as many times as the import needs; every pass stops where the first ended,
/// so a file that grows meanwhile is read as it was.
pub(crate) struct Source<'r> {
    reader: Box<dyn Input + 'r>,
    name: String,
    line: Vec<u8>,
    /// Physical lines of the current pass so far.
    number: u64,
    /// Bytes consumed by the current pass, and the first pass's total.
    consumed: u64,
    length: Option<u64>,
    /// Whether the line read last ended at the end of the source without a `\n`.
    last_unterminated: bool,
    /// Set by the first pass.
    pub(super) lines_read: u64,
    pub(super) unterminated: bool,
    /// The pass under way (from 1), the source's size when opened, and the bytes of
    /// this pass at the last report.
    pass: u32,
    size: u64,
    reported: u64,
    progress: &'r mut dyn FnMut(ImportProgress) -> bool,
}

/// A source the import can read again from the start.
pub(crate) trait Input: BufRead + Seek {}
impl<T: BufRead + Seek> Input for T {}

impl<'r> Source<'r> {
    /// The session file at `path`, opened for the import. A FIFO would block and a
    /// device such as /dev/zero never end: refused before a byte is read, as every
    /// open of a session file is.
    pub(super) fn open(
        path: &Path,
        progress: &'r mut dyn FnMut(ImportProgress) -> bool,
    ) -> Result<Source<'r>, Error> {
        let file = open_regular(OpenOptions::new().read(true), path)
            .map_err(|e| io_error(IoOp::Open, path, &e))?;
        let total = file
            .metadata()
            .map_err(|e| io_error(IoOp::Open, path, &e))?
            .len();
        let reader = Box::new(BufReader::with_capacity(1 << 16, file));
        Ok(Source::new(
            reader,
            &path.display().to_string(),
            total,
            progress,
        ))
    }

    pub(super) fn new(
        reader: Box<dyn Input + 'r>,
        name: &str,
        size: u64,
        progress: &'r mut dyn FnMut(ImportProgress) -> bool,
    ) -> Source<'r> {
        Source {
            pass: 0,
            size,
            reported: 0,
            progress,
            reader,
            name: name.to_owned(),
            line: Vec::new(),
            number: 0,
            consumed: 0,
            length: None,
            last_unterminated: false,
            lines_read: 0,
            unterminated: false,
        }
    }

    fn read_error(&self, e: &std::io::Error) -> Error {
        Error::Io(Arc::new(IoFailure::new(IoOp::Read, &self.name, e)))
    }

    /// The first pass: every physical line (blank ones too) to `each`, the count of
    /// lines and whether the last has no `\n`.
    pub(super) fn scan(&mut self, mut each: impl FnMut(&[u8])) -> Result<(), Error> {
        self.rewind()?;
        let mut unterminated = false;
        while self.next_physical()? {
            unterminated = self.last_unterminated;
            each(&self.line);
        }
        self.lines_read = self.number;
        self.unterminated = unterminated;
        self.length = Some(self.consumed);
        Ok(())
    }

    /// Starts a pass over the source.
    pub(crate) fn rewind(&mut self) -> Result<(), Error> {
        self.reader
            .seek(SeekFrom::Start(0))
            .map_err(|e| self.read_error(&e))?;
        self.number = 0;
        self.consumed = 0;
        self.pass = self.pass.saturating_add(1);
        self.report()
    }

    /// Tells the progress callback how far this pass is; [`Error::Cancelled`] when it
    /// asks to stop.
    fn report(&mut self) -> Result<(), Error> {
        self.reported = self.consumed;
        let progress = ImportProgress {
            pass: self.pass,
            done: self.consumed,
            total: self.length.unwrap_or(self.size),
        };
        match (self.progress)(progress) {
            true => Ok(()),
            false => Err(Error::Cancelled),
        }
    }

    /// Reads the next physical line into `self.line` (without its `\n`); `false` at
    /// the end of the pass. A line longer than [`MAX_LINE_BYTES`] (and a `\r`) is
    /// [`Error::CorruptLine`], read to its end without being kept.
    fn next_physical(&mut self) -> Result<bool, Error> {
        const LIMIT: u64 = MAX_LINE_BYTES as u64 + 1;
        let Source {
            reader,
            name,
            line,
            consumed,
            length: total,
            last_unterminated,
            ..
        } = self;
        let read_error =
            |e: &std::io::Error| Error::Io(Arc::new(IoFailure::new(IoOp::Read, name, e)));
        line.clear();
        *last_unterminated = false;
        let mut length = 0u64;
        loop {
            let room = total.map_or(u64::MAX, |t| t.saturating_sub(*consumed));
            let available = match reader.fill_buf() {
                Ok(available) => available,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(read_error(&e)),
            };
            let available = &available[..available
                .len()
                .min(usize::try_from(room).unwrap_or(usize::MAX))];
            if available.is_empty() {
                if length == 0 {
                    return Ok(false);
                }
                *last_unterminated = true;
                break;
            }
            let (piece, used, ends) = match memchr::memchr(b'\n', available) {
                Some(at) => (&available[..at], at + 1, true),
                None => (available, available.len(), false),
            };
            length += piece.len() as u64;
            if length <= LIMIT {
                line.try_reserve(piece.len())
                    .map_err(|_| out_of_memory("a source line"))?;
                line.extend_from_slice(piece);
            }
            reader.consume(used);
            *consumed += used as u64;
            if ends {
                break;
            }
        }
        self.number += 1;
        if self.consumed - self.reported >= IMPORT_PROGRESS_STEP {
            self.report()?;
        }
        if length > LIMIT {
            return Err(Error::CorruptLine {
                line: self.number,
                fault: LineFault::TooLong {
                    len: length,
                    max: MAX_LINE_BYTES,
                },
            });
        }
        Ok(true)
    }

    /// The next non-blank line of this pass, `None` at the end.
    pub(crate) fn next_line(&mut self) -> Result<Option<SourceLine<'_>>, Error> {
        loop {
            if !self.next_physical()? {
                return Ok(None);
            }
            let text = self.line.strip_suffix(b"\r").unwrap_or(&self.line);
            if !text.iter().all(|b| matches!(b, b' ' | b'\t' | b'\r')) {
                break;
            }
        }
        if self.line.len() > 1 << 20 {
            // Mapping a long line takes a few times its size.
            check_headroom(self.line.len().saturating_mul(8), "a long source line")?;
        }
        let text = self.line.strip_suffix(b"\r").unwrap_or(&self.line);
        Ok(Some(SourceLine {
            number: self.number,
            text,
        }))
    }
}
