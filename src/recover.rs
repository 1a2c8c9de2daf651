//! `recover_jsonl`: what a JSONL file commits (docs/contract.md §3). Pure; it never changes a file.
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

use crate::entry::{Entry, EntryParser, utf8};
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

impl Recovered {
    /// `{"entries":[…],"warnings":[…]}`, the entries as their lines, UTF-8 bytes.
    pub fn to_json_bytes(&self) -> Vec<u8> {
        let entries = crate::json::bytes_array(self.entries.iter().map(|e| e.json().as_bytes()));
        crate::json::Object::new()
            .raw_bytes("entries", &entries)
            .raw(
                "warnings",
                &crate::json::array(self.warnings.iter().map(Warning::to_json)),
            )
            .finish_bytes()
    }
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
        entries.push(Entry::from_parts(utf8(json)?, facts));
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
    /// The true length of that line so far, even once it is no longer kept.
    partial_len: u64,
    /// Why the line's bytes are no longer kept, once they are not.
    dropped: Option<LineFault>,
    /// How much of `partial` has been checked for bytes that JSON never contains.
    checked: usize,
    /// The unfinished line holds a byte that is not blank.
    partial_nonblank: bool,
    /// The first non-blank byte of the unfinished line and its offset: an entry line
    /// starts with `{`.
    opening: Option<(u64, u8)>,
}

/// An unfinished line is kept whole up to this size; past it, a line that cannot be an
/// entry (it does not start with `{`, or holds a byte that JSON never contains) can
/// only be corrupt or an unterminated tail, so it is dropped. (A crash can leave
/// gigabytes of NULs or garbage; they must cost one pass and no memory.)
const KEEP_GARBAGE_UP_TO: usize = 64 << 10;

/// Bytes that never occur in JSON text: control characters other than tab, LF and CR
/// (raw, they are invalid even inside strings), and bytes that are never UTF-8.
static NEVER_IN_JSON: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 0x20 {
        table[b] = !(b == 0x09 || b == 0x0A || b == 0x0D);
        b += 1;
    }
    table[0xC0] = true;
    table[0xC1] = true;
    let mut b = 0xF5;
    while b <= 0xFF {
        table[b] = true;
        b += 1;
    }
    table
};

impl LineScanner {
    pub(crate) fn new(max_line: usize) -> LineScanner {
        LineScanner {
            max_line,
            lines: 0,
            fed: 0,
            committed_bytes: 0,
            partial: Vec::new(),
            partial_len: 0,
            dropped: None,
            checked: 0,
            partial_nonblank: false,
            opening: None,
        }
    }

    /// A scanner that continues after a committed prefix of `offset` bytes holding
    /// `lines` physical lines (the part of a file a session index covered).
    pub(crate) fn resume(max_line: usize, lines: u64, offset: u64) -> LineScanner {
        LineScanner {
            lines,
            fed: offset,
            committed_bytes: offset,
            ..LineScanner::new(max_line)
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
            if let Some(mut fault) = self.dropped.take() {
                let nonblank = self.partial_nonblank;
                if self.partial_len > self.max_line as u64 {
                    // Over the limit whatever else is wrong with it: say so.
                    fault = self.too_long(self.partial_len);
                }
                self.reset_partial();
                // A blank line is skipped whatever its length.
                if nonblank {
                    on_line(self.lines, Err(fault))?;
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

    /// Feeds `n` NUL bytes: a hole in a sparse file, which reads as NULs. They hold no
    /// `\n`, so no line completes; once the unfinished line is no longer kept, the
    /// rest only counts, so a hole of any size costs no memory and almost no time.
    pub(crate) fn feed_zeros(&mut self, n: u64) {
        static ZEROS: [u8; 1 << 16] = [0; 1 << 16];
        let mut left = n;
        while left > 0 {
            if self.dropped.is_some() && self.partial_nonblank {
                self.partial_len += left;
                if let Some(LineFault::TooLong { len, .. }) = &mut self.dropped {
                    *len = self.partial_len;
                }
                self.fed += left;
                return;
            }
            let take = usize::try_from(left).map_or(ZEROS.len(), |l| l.min(ZEROS.len()));
            self.extend_partial(&ZEROS[..take]);
            self.fed += take as u64;
            left -= take as u64;
        }
    }

    /// Whether the stream ends in an unterminated piece that is blank (spaces, tabs,
    /// CR): not a warning, but an append must end it with `\n` before its own line.
    pub(crate) fn has_blank_tail(&self) -> bool {
        self.partial_len > 0 && !self.partial_nonblank
    }

    /// Physical lines completed so far (the lines of the committed prefix).
    #[cfg_attr(not(feature = "search"), allow(dead_code))]
    pub(crate) fn lines(&self) -> u64 {
        self.lines
    }

    /// Bytes up to and including the last `\n` seen: the committed prefix.
    pub(crate) fn committed_bytes(&self) -> u64 {
        self.committed_bytes
    }

    /// The warning for a non-blank final piece without `\n`, if there is one.
    pub(crate) fn finish(self) -> Option<Warning> {
        self.partial_nonblank.then_some(Warning::UnterminatedTail {
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
        if !self.partial_nonblank
            && let Some(at) = bytes
                .iter()
                .position(|&b| !matches!(b, b' ' | b'\t' | b'\r'))
        {
            self.partial_nonblank = true;
            self.opening = Some((self.partial_len + at as u64, bytes[at]));
        }
        self.partial_len += bytes.len() as u64;
        if let Some(LineFault::TooLong { len, .. }) = &mut self.dropped {
            *len = self.partial_len;
        }
        if self.dropped.is_some() {
            return;
        }
        if self.partial_len > self.max_line as u64 {
            self.drop_partial(self.too_long(self.partial_len));
            return;
        }
        if self.partial_len > KEEP_GARBAGE_UP_TO as u64 {
            if let Some((offset, byte)) = self.opening
                && byte != b'{'
            {
                self.drop_partial(LineFault::NotAnEntry { offset, byte });
                return;
            }
            let never = |b: &u8| NEVER_IN_JSON[*b as usize];
            let kept = self.partial.len();
            let garbage = match self.partial[self.checked..].iter().position(never) {
                Some(at) => Some(self.checked + at),
                None => bytes.iter().position(never).map(|at| kept + at),
            };
            if let Some(offset) = garbage {
                let byte = match offset.checked_sub(kept) {
                    Some(in_bytes) => bytes.get(in_bytes),
                    None => self.partial.get(offset),
                };
                let fault = LineFault::NotAnEntry {
                    offset: offset as u64,
                    byte: byte.copied().unwrap_or(0),
                };
                self.drop_partial(fault);
                return;
            }
            self.checked = kept + bytes.len();
        }
        self.partial.extend_from_slice(bytes);
    }

    /// Stops keeping the unfinished line: it can only be corrupt or an unterminated tail.
    fn drop_partial(&mut self, fault: LineFault) {
        self.dropped = Some(fault);
        self.partial = Vec::new();
        self.checked = 0;
    }

    fn reset_partial(&mut self) {
        self.partial_len = 0;
        self.dropped = None;
        self.checked = 0;
        self.partial_nonblank = false;
        self.opening = None;
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
    fn a_hole_fed_as_a_count_frames_like_the_nul_bytes_it_reads_as() {
        for (before, hole, after) in [
            (&b"a\n"[..], 5u64, &b"\nb\n"[..]),
            (b"a\n{", 200_000, b"\n"),
            (b"a\n  ", 3, b""),
            (b"", 300_000, b""),
            (b"{\"x", 100_000, b"}\n{}"),
            (b"ok\n", 10, b"\n"),
        ] {
            let max = 150_000;
            let mut real = LineScanner::new(max);
            let mut counted = LineScanner::new(max);
            let mut bytes = before.to_vec();
            bytes.extend(std::iter::repeat_n(0u8, hole as usize));
            bytes.extend_from_slice(after);
            let mut seen_real = Vec::new();
            let real_result = real.feed(&bytes, &mut |line, text| {
                // Whether a line that is corrupt either way was kept whole depends on
                // chunking; which lines complete does not.
                seen_real.push((line, text.map(<[u8]>::len).unwrap_or(usize::MAX)));
                Ok(())
            });
            let mut seen_counted = Vec::new();
            let mut record = |line, text: Line<'_>| {
                seen_counted.push((line, text.map(<[u8]>::len).unwrap_or(usize::MAX)));
                Ok(())
            };
            let counted_result = counted.feed(before, &mut record).and_then(|()| {
                counted.feed_zeros(hole);
                counted.feed(after, &mut record)
            });
            assert_eq!(real_result.is_ok(), counted_result.is_ok());
            let lines = |seen: &[(u64, usize)]| seen.iter().map(|s| s.0).collect::<Vec<_>>();
            assert_eq!(lines(&seen_real), lines(&seen_counted), "hole of {hole}");
            if hole < 1000 {
                assert_eq!(seen_real, seen_counted, "hole of {hole}");
            }
            assert_eq!(real.committed_bytes(), counted.committed_bytes());
            assert_eq!(real.fed, counted.fed);
            assert_eq!(real.finish(), counted.finish());
        }
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
    fn a_long_unfinished_line_of_garbage_is_not_kept() {
        for fill in [0u8, 0xFF, 0x01] {
            let mut scanner = LineScanner::new(MAX_LINE_BYTES);
            let mut none =
                |_: u64, _: Line<'_>| -> Result<(), Error> { panic!("nothing is committed") };
            scanner.feed(b"{\"a\":", &mut none).unwrap();
            for _ in 0..64 {
                scanner.feed(&[fill; 4096], &mut none).unwrap();
            }
            assert!(
                scanner.partial.capacity() <= KEEP_GARBAGE_UP_TO + 8192,
                "fill {fill:#x}"
            );
            assert_eq!(
                scanner.finish(),
                Some(Warning::UnterminatedTail { line: 1 })
            );
        }
    }

    #[test]
    fn a_long_committed_line_of_garbage_is_corrupt_at_its_first_bad_byte() {
        let mut line = b"{\"a\":\"".to_vec();
        line.resize(KEEP_GARBAGE_UP_TO, b'x');
        line.extend_from_slice(&[0u8; 1000]);
        line.push(b'\n');
        for chunk in [1000, 4096, line.len()] {
            let mut scanner = LineScanner::new(MAX_LINE_BYTES);
            let mut faults = Vec::new();
            for piece in line.chunks(chunk) {
                scanner
                    .feed(piece, &mut |n, text| {
                        faults.push((n, text.err()));
                        Ok(())
                    })
                    .unwrap();
            }
            let expected = if chunk == line.len() {
                // Within one chunk the line is parsed in place, with a precise error.
                None
            } else {
                Some(LineFault::NotAnEntry {
                    offset: KEEP_GARBAGE_UP_TO as u64,
                    byte: 0,
                })
            };
            assert_eq!(faults, [(1, expected)], "chunk {chunk}");
        }
    }

    #[test]
    fn a_long_line_that_does_not_start_like_an_entry_is_not_kept() {
        let mut scanner = LineScanner::new(MAX_LINE_BYTES);
        let mut none =
            |_: u64, _: Line<'_>| -> Result<(), Error> { panic!("nothing is committed") };
        for _ in 0..64 {
            scanner.feed(&[b'!'; 4096], &mut none).unwrap();
        }
        assert!(scanner.partial.capacity() <= KEEP_GARBAGE_UP_TO + 8192);
        let mut faults = Vec::new();
        scanner
            .feed(b"\n", &mut |n, text| {
                faults.push((n, text.err()));
                Ok(())
            })
            .unwrap();
        assert_eq!(
            faults,
            [(
                1,
                Some(LineFault::NotAnEntry {
                    offset: 0,
                    byte: b'!'
                })
            )]
        );
    }

    #[test]
    fn a_dropped_garbage_line_over_the_limit_reports_line_too_long() {
        let max = KEEP_GARBAGE_UP_TO + 1000;
        let fault_of = |len: usize| {
            let mut scanner = LineScanner::new(max);
            let mut faults = Vec::new();
            let line = [vec![b'!'; len], vec![b'\n']].concat();
            for piece in line.chunks(4096) {
                scanner
                    .feed(piece, &mut |_, text| {
                        faults.push(text.err());
                        Ok(())
                    })
                    .unwrap();
            }
            faults
        };
        // Dropped as not an entry, and within the limit: that is the reason.
        assert_eq!(
            fault_of(max),
            [Some(LineFault::NotAnEntry {
                offset: 0,
                byte: b'!'
            })]
        );
        // Over the limit, whatever else is wrong with it: too long.
        let len = (max + 1) as u64;
        assert_eq!(fault_of(max + 1), [Some(LineFault::TooLong { len, max })]);
    }

    #[test]
    fn a_long_valid_line_spanning_chunks_is_kept() {
        let line = format!("{{\"a\":\"{}\"}}\n", "é".repeat(100_000));
        let mut seen = Vec::new();
        let mut scanner = LineScanner::new(MAX_LINE_BYTES);
        for piece in line.as_bytes().chunks(4096) {
            scanner
                .feed(piece, &mut |_, text| {
                    seen.push(committed(1, text)?.len());
                    Ok(())
                })
                .unwrap();
        }
        assert_eq!(seen, [line.len() - 1]);
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
