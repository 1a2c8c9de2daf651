//! `recover_jsonl`: what a JSONL file commits (SPEC §3). Pure; it never changes a file.
//!
//! A line is committed only when it ends with `\n`. Blank committed lines (JSON
//! whitespace only: space, tab, CR) are skipped but still count for physical line
//! numbers. Any other byte makes a line non-blank: a crash can leave a run of NULs,
//! and treating it as blank would let the next append weld onto it. A non-blank
//! committed line that is not a valid entry fails the whole recovery with its line
//! number; a non-blank final piece without `\n`, even valid JSON, is not committed and
//! is reported as an `unterminated_tail` warning.
//!
//! [`LineScanner`] does the framing as a stream, so a store can recover a file of any
//! size in fixed-size reads: a line longer than [`MAX_LINE_BYTES`] is never held in
//! memory, and a gigabyte of NULs at the tail costs one pass and no allocation.

use memchr::memchr;

use crate::entry::{Entry, EntryParser};
use crate::error::{Error, LineFault, Warning};

/// The longest line (without its `\n`) that a file may commit. A longer committed line
/// is corrupt; a longer unterminated tail is an unterminated tail. Appends refuse
/// entries whose line would be longer, so every line a store writes reads back.
pub const MAX_LINE_BYTES: usize = 64 << 20;

/// What a JSONL byte string commits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Recovered {
    /// Every committed entry, in file order.
    pub entries: Vec<Entry>,
    /// At most one `unterminated_tail`.
    pub warnings: Vec<Warning>,
}

/// Recovers the committed entries of a JSONL byte string.
///
/// Fails with [`Error::CorruptLine`] (with the 1-based physical line) when a committed
/// non-blank line is not a valid entry or is longer than [`MAX_LINE_BYTES`].
pub fn recover_jsonl(bytes: &[u8]) -> Result<Recovered, Error> {
    let mut parser = EntryParser::default();
    let mut entries = Vec::new();
    let mut scanner = LineScanner::new(MAX_LINE_BYTES);
    scanner.feed(bytes, &mut |line, text| {
        let (json, facts) = parser
            .parse(committed(line, text)?)
            .map_err(|fault| fault.at_line(line))?;
        entries.push(Entry::from_parts(json, facts));
        Ok(())
    })?;
    Ok(Recovered {
        entries,
        warnings: scanner.finish().into_iter().collect(),
    })
}

/// A committed line as the scanner saw it: its text (without `\n`), or why it cannot
/// be read at all.
pub(crate) type Line<'a> = Result<&'a [u8], LineFault>;

/// The text of a committed line, or the hard error for a line that cannot be read.
pub(crate) fn committed(line: u64, text: Line<'_>) -> Result<&[u8], Error> {
    text.map_err(|fault| Error::CorruptLine { line, fault })
}

/// JSON whitespace other than `\n`: what a blank line may hold.
fn is_blank(bytes: &[u8]) -> bool {
    bytes.iter().all(|&b| matches!(b, b' ' | b'\t' | b'\r'))
}

/// Splits a byte stream into committed lines, fed in chunks of any size.
pub(crate) struct LineScanner {
    max_line: usize,
    /// Physical lines completed so far (each ended by `\n`).
    lines: u64,
    /// Bytes fed before the current chunk.
    fed: u64,
    /// Bytes up to and including the last `\n`: the committed prefix.
    committed_bytes: u64,
    /// The start of a line that continues in the next chunk, while it fits.
    partial: Vec<u8>,
    /// The true length of that line so far, even once it no longer fits.
    partial_len: u64,
    /// The line outgrew `max_line`; its bytes are no longer kept.
    overflow: bool,
    /// The unfinished line holds a byte that is not blank.
    partial_nonblank: bool,
}

impl LineScanner {
    pub(crate) fn new(max_line: usize) -> LineScanner {
        LineScanner {
            max_line,
            lines: 0,
            fed: 0,
            committed_bytes: 0,
            partial: Vec::new(),
            partial_len: 0,
            overflow: false,
            partial_nonblank: false,
        }
    }

    /// Feeds the next bytes of the stream, calling `on_line(line, text)` for each
    /// committed non-blank line: `Ok(text)` without its `\n`, or the fault of a line
    /// longer than the limit (whose bytes were not kept).
    pub(crate) fn feed(
        &mut self,
        chunk: &[u8],
        on_line: &mut impl FnMut(u64, Line<'_>) -> Result<(), Error>,
    ) -> Result<(), Error> {
        let mut rest = chunk;
        while let Some(end) = memchr(b'\n', rest) {
            let piece = &rest[..end];
            rest = &rest[end + 1..];
            self.lines += 1;
            self.committed_bytes = self.fed + (chunk.len() - rest.len()) as u64;
            if self.partial_len == 0 {
                self.commit(piece, on_line)?;
                continue;
            }
            self.extend_partial(piece);
            let mut line = std::mem::take(&mut self.partial);
            if self.overflow {
                let (len, nonblank) = (self.partial_len, self.partial_nonblank);
                self.reset_partial();
                // A blank line is skipped whatever its length.
                if nonblank {
                    on_line(self.lines, Err(self.too_long(len)))?;
                }
            } else {
                self.reset_partial();
                self.commit(&line, on_line)?;
                // Keep the buffer for the next line that spans chunks.
                line.clear();
                self.partial = line;
            }
        }
        if !rest.is_empty() {
            self.extend_partial(rest);
        }
        self.fed += chunk.len() as u64;
        Ok(())
    }

    /// Bytes up to and including the last `\n` seen: the committed prefix.
    pub(crate) fn committed_bytes(&self) -> u64 {
        self.committed_bytes
    }

    /// The warning for a non-blank final piece without `\n`, if there is one.
    pub(crate) fn finish(self) -> Option<Warning> {
        (self.partial_len > 0 && self.partial_nonblank).then_some(Warning::UnterminatedTail {
            line: self.lines + 1,
        })
    }

    fn commit(
        &self,
        line: &[u8],
        on_line: &mut impl FnMut(u64, Line<'_>) -> Result<(), Error>,
    ) -> Result<(), Error> {
        if is_blank(line) {
            return Ok(());
        }
        if line.len() > self.max_line {
            return on_line(self.lines, Err(self.too_long(line.len() as u64)));
        }
        on_line(self.lines, Ok(line))
    }

    fn too_long(&self, len: u64) -> LineFault {
        LineFault::TooLong {
            len,
            max: self.max_line,
        }
    }

    fn extend_partial(&mut self, bytes: &[u8]) {
        self.partial_len += bytes.len() as u64;
        if !self.partial_nonblank && !is_blank(bytes) {
            self.partial_nonblank = true;
        }
        if self.overflow {
            return;
        }
        if self.partial.len() + bytes.len() > self.max_line {
            // Stop keeping the line: it can only be corrupt or an unterminated tail.
            self.overflow = true;
            self.partial = Vec::new();
        } else {
            self.partial.extend_from_slice(bytes);
        }
    }

    fn reset_partial(&mut self) {
        self.partial_len = 0;
        self.overflow = false;
        self.partial_nonblank = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (line, text) of each committed non-blank line, and the tail warning.
    type Scanned = (Vec<(u64, Vec<u8>)>, Option<Warning>);

    /// Feeds `bytes` in chunks of `chunk` bytes.
    fn scan(bytes: &[u8], chunk: usize, max: usize) -> Result<Scanned, Error> {
        let mut scanner = LineScanner::new(max);
        let mut seen = Vec::new();
        for piece in bytes.chunks(chunk.max(1)) {
            scanner.feed(piece, &mut |line, text| {
                seen.push((line, committed(line, text)?.to_vec()));
                Ok(())
            })?;
        }
        Ok((seen, scanner.finish()))
    }

    #[test]
    fn framing_is_the_same_for_every_chunk_size() {
        let input = b"a\n\n  \nbb b\r\n\0\ncc\nd \t";
        let whole = scan(input, input.len(), 100).unwrap();
        assert_eq!(
            whole.0,
            [
                (1, b"a".to_vec()),
                (4, b"bb b\r".to_vec()),
                (5, b"\0".to_vec()),
                (6, b"cc".to_vec())
            ]
        );
        assert_eq!(whole.1, Some(Warning::UnterminatedTail { line: 7 }));
        for chunk in 1..input.len() {
            assert_eq!(scan(input, chunk, 100).unwrap(), whole, "chunk {chunk}");
        }
    }

    #[test]
    fn committed_line_over_the_limit_is_corrupt_at_its_line_for_any_chunking() {
        let input = b"ok\nthis line is too long\nnext\n";
        for chunk in 1..=input.len() {
            match scan(input, chunk, 10) {
                Err(Error::CorruptLine {
                    line: 2,
                    fault: LineFault::TooLong { len: 21, max: 10 },
                }) => {}
                other => panic!("chunk {chunk}: {other:?}"),
            }
        }
    }

    #[test]
    fn line_exactly_at_the_limit_is_accepted() {
        let (lines, tail) = scan(b"0123456789\n", 3, 10).unwrap();
        assert_eq!(lines, [(1, b"0123456789".to_vec())]);
        assert_eq!(tail, None);
    }

    #[test]
    fn tail_over_the_limit_is_an_unterminated_tail_and_is_not_kept() {
        let mut scanner = LineScanner::new(8);
        let mut none =
            |_: u64, _: Line<'_>| -> Result<(), Error> { panic!("nothing is committed") };
        for _ in 0..1000 {
            scanner.feed(&[0u8; 64], &mut none).unwrap();
        }
        assert!(
            scanner.partial.capacity() <= 8,
            "an overlong tail must not be buffered"
        );
        assert_eq!(
            scanner.finish(),
            Some(Warning::UnterminatedTail { line: 1 })
        );
    }

    #[test]
    fn blank_tail_over_the_limit_is_still_blank() {
        let mut scanner = LineScanner::new(4);
        let mut none =
            |_: u64, _: Line<'_>| -> Result<(), Error> { panic!("nothing is committed") };
        scanner.feed(b"x\n", &mut |_, _| Ok(())).unwrap();
        scanner.feed(&[b' '; 100], &mut none).unwrap();
        assert_eq!(scanner.finish(), None);
    }

    #[test]
    fn committed_bytes_end_after_the_last_newline_for_any_chunking() {
        let input = b"a\n\nbb\ncc";
        for chunk in 1..=input.len() {
            let mut scanner = LineScanner::new(100);
            for piece in input.chunks(chunk) {
                scanner.feed(piece, &mut |_, _| Ok(())).unwrap();
            }
            assert_eq!(scanner.committed_bytes(), 6, "chunk {chunk}");
        }
    }

    #[test]
    fn scanning_continues_after_an_overlong_line_when_the_caller_allows_it() {
        let mut seen = Vec::new();
        let mut scanner = LineScanner::new(4);
        for piece in b"ok\ntoolongline\nok2\n".chunks(3) {
            scanner
                .feed(piece, &mut |line, text| {
                    seen.push((line, text.map(<[u8]>::to_vec)));
                    Ok(())
                })
                .unwrap();
        }
        assert_eq!(
            seen,
            [
                (1, Ok(b"ok".to_vec())),
                (2, Err(LineFault::TooLong { len: 11, max: 4 })),
                (3, Ok(b"ok2".to_vec())),
            ]
        );
    }

    #[test]
    fn blank_means_space_tab_and_cr_only() {
        assert!(is_blank(b" \t\r"));
        assert!(is_blank(b""));
        for other in [&b"\0"[..], b"\x0b", b"\x0c", b"\xEF\xBB\xBF", b"\xC2\xA0"] {
            assert!(!is_blank(other), "{other:?}");
        }
    }
}
