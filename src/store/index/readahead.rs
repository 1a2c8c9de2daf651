//! The read-ahead: how many lines one read from the session file takes, from where
//! the reads before it went.

use super::format::BLOCK;

/// How many lines one read from the session file takes, so that a read costs about
/// the lines that are wanted: only its own line for a line read alone (a context's
/// kept messages far apart in a large file), and for a walk that goes on where the
/// last read ended (a path walked up from its leaf, a list walked in order; a side
/// branch of up to a quarter of the last read's lines skipped) twice as many at each
/// read as at the one before, in the walk's direction, up to [`BLOCK`] lines and
/// [`READ_BYTES`] (the wanted line is always read whole).
#[derive(Clone, Copy, Default)]
pub(super) struct Readahead {
    /// The positions the last read took, first and last.
    last: Option<(u32, u32)>,
    lines: u32,
}

/// The bytes beyond its own line a read of lines takes at most.
pub(super) const READ_BYTES: u64 = 256 << 10;

impl Readahead {
    /// For a line not held at `position`: whether to read the lines before it (the
    /// walk goes down) and how many lines to read at most.
    pub(super) fn plan(&mut self, position: u32) -> (bool, u32) {
        // The walk goes on where the last read ended: at most one line between, or a
        // quarter of the last read's lines (a side branch the path skips).
        let reach = (self.lines / 4).max(2);
        let (down, near) = match self.last {
            Some((first, _)) if position < first => (true, first - position <= reach),
            Some((_, last)) if position > last => (false, position - last <= reach),
            _ => (false, false),
        };
        self.lines = if near {
            self.lines.saturating_mul(2).clamp(2, BLOCK as u32)
        } else {
            1
        };
        (down, self.lines)
    }

    pub(super) fn took(&mut self, first: u32, last: u32) {
        self.last = Some((first, last));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_read_takes_its_own_line_alone_and_more_only_for_a_walk_of_neighbours() {
        let mut ahead = Readahead::default();
        // A line far from the last read: itself alone.
        assert_eq!(ahead.plan(1000), (false, 1));
        ahead.took(1000, 1000);
        assert_eq!(ahead.plan(500), (true, 1));
        ahead.took(500, 500);
        // Three lines away from the last read: still alone.
        assert_eq!(ahead.plan(497), (true, 1));
        ahead.took(497, 497);
        // Its parent just above (or with one line between): a walk up the file, twice
        // as many lines at each read.
        assert_eq!(ahead.plan(496), (true, 2));
        ahead.took(495, 496);
        assert_eq!(ahead.plan(493), (true, 4));
        ahead.took(490, 493);
        let (mut first, mut lines) = (490u32, 4);
        for _ in 0..6 {
            let (down, n) = ahead.plan(first - 1);
            assert!(down);
            lines = n;
            ahead.took(first - n, first - 1);
            first -= n;
        }
        assert_eq!(lines, BLOCK as u32);
        // A side branch of up to a quarter of that skipped: the walk goes on.
        assert_eq!(ahead.plan(first - 16), (true, BLOCK as u32));
        ahead.took(first - 16 - 63, first - 16);
        // More is a jump: one line.
        assert_eq!(ahead.plan(first - 16 - 63 - 18), (true, 1));
        // Then a jump away: one line again; a walk down the file reads ahead after it.
        assert_eq!(ahead.plan(5000), (false, 1));
        ahead.took(5000, 5000);
        assert_eq!(ahead.plan(5001), (false, 2));
    }
}
