//! The line cache of a base: the bytes read from the session file, kept between reads
//! and found by position, with each line's facts once it was checked.

use std::cell::{Cell, OnceCell, RefCell};
use std::collections::HashMap;

use super::cells::{Arena, Lazy};
use super::format::BLOCK;
use crate::entry::Facts;

/// Bytes read from the session file in one read: one line, or a run of lines one after
/// another, starting at `start` in the file.
pub(super) struct Read {
    pub(super) start: u64,
    pub(super) bytes: Box<[u8]>,
}

/// A line kept in the cache: the read that holds it, and its facts once it was checked.
pub(super) struct Line {
    pub(super) read: u32,
    pub(super) facts: OnceCell<Facts>,
}

/// The lines read from the session file and kept between reads (up to the base's
/// `CACHE_BYTES` between operations): which positions are held (per group of [`BLOCK`]
/// positions, made at the first read in it: each position's line number plus one, 0
/// when not read), the lines, and the reads' bytes.
pub(super) struct Lines {
    pub(super) slots: Lazy<Box<[Cell<u32>]>>,
    pub(super) lines: Arena<Line>,
    pub(super) reads: Arena<Read>,
    /// The id hash → position of each line checked since the cache was last dropped:
    /// `Base::find` of an id already read needs no page of the hash table.
    pub(super) ids: RefCell<HashMap<u64, u32>>,
}

impl Lines {
    pub(super) fn new(entries: u64) -> Lines {
        Lines {
            slots: Lazy::new(entries.div_ceil(BLOCK as u64) as usize),
            lines: Arena::default(),
            reads: Arena::default(),
            ids: RefCell::new(HashMap::new()),
        }
    }

    /// The cached line of `position`, if read.
    pub(super) fn get(&self, position: u32) -> Option<&Line> {
        let group = self.slots.get(position as usize / BLOCK)?;
        let slot = group.get(position as usize % BLOCK)?.get();
        self.lines.get(slot.checked_sub(1)? as usize)
    }

    /// Whether the line of `position` is cached (creates nothing).
    pub(super) fn has(&self, position: u32) -> bool {
        self.slots
            .get(position as usize / BLOCK)
            .and_then(|group| group.get(position as usize % BLOCK))
            .is_some_and(|slot| slot.get() != 0)
    }

    /// Keeps `read`, and the lines of `positions` as held by it (a position already
    /// held keeps its line).
    pub(super) fn keep(&self, read: Read, positions: std::ops::RangeInclusive<u32>) -> Option<()> {
        let read = u32::try_from(self.reads.push(read)?.0).ok()?;
        for position in positions {
            let group = self.slots.cell(position as usize / BLOCK)?;
            let group = group.get_or_init(|| (0..BLOCK).map(|_| Cell::new(0)).collect());
            let slot = group.get(position as usize % BLOCK)?;
            if slot.get() == 0 {
                let (line, _) = self.lines.push(Line {
                    read,
                    facts: OnceCell::new(),
                })?;
                slot.set(u32::try_from(line + 1).ok()?);
            }
        }
        Some(())
    }

    pub(super) fn clear(&mut self) {
        self.slots.clear();
        self.lines.clear();
        self.reads.clear();
        self.ids.get_mut().clear();
    }
}
