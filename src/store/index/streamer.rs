//! Streamed reads: many lines of a base read through one reused buffer instead of the
//! line cache, each checked as a cached line is.

use super::base::{Base, Fault};
use super::readahead::Readahead;
use crate::entry::Facts;

impl Base {
    /// A reader of many lines through one reused buffer instead of the cache: a read
    /// of a whole path or of every entry costs one read's memory.
    pub(crate) fn streamer(&self) -> Streamer<'_> {
        Streamer {
            base: self,
            buf: Vec::new(),
            loaded: None,
            readahead: Readahead::default(),
        }
    }
}

/// See [`Base::streamer`].
pub(crate) struct Streamer<'b> {
    pub(super) base: &'b Base,
    pub(super) buf: Vec<u8>,
    /// The positions whose lines `buf` holds (first, last), where they start in the
    /// file and their bytes' length.
    pub(super) loaded: Option<(u32, u32, u64, usize)>,
    pub(super) readahead: Readahead,
}

impl Streamer<'_> {
    /// Calls `f` with the entry at `position`, checked as [`Base::entry`] checks it.
    /// Reading positions in ascending order reads each line once.
    pub(crate) fn read(
        &mut self,
        position: u32,
        f: &mut dyn FnMut(&[u8], &Facts),
    ) -> Result<(), Fault> {
        let base = self.base;
        if base.lines.has(position) {
            let (json, facts) = base.entry(position)?;
            f(json, facts);
            return Ok(());
        }
        let raw = base.record(position)?;
        let (start, len) = match self.loaded {
            Some((first, last, start, len)) if (first..=last).contains(&position) => (start, len),
            _ => {
                let plan = self.readahead.plan(position);
                let (first, last, start, end) = base.extent(position, &raw, plan, |_| false)?;
                self.readahead.took(first, last);
                base.read_into(&mut self.buf, start, end)?;
                let len = (end - start) as usize;
                self.loaded = Some((first, last, start, len));
                (start, len)
            }
        };
        let line = Base::line_in(&raw, start, self.buf.get(..len).ok_or(Fault::Index)?)?;
        let facts = base.check(position, &raw, line)?;
        f(&line[..line.len() - 1], &facts);
        Ok(())
    }
}
