//! The containers a base's caches are made of: cells made on first use ([`Lazy`]) and
//! an append-only list that lends what it holds while it grows ([`Arena`]), both
//! through `&self`.

use std::cell::{Cell, OnceCell};

/// Cells created on first use, a chunk of [`LAZY_CHUNK`] at a time, so that a base of
/// millions of entries costs nothing at open for its page and block caches.
pub(super) struct Lazy<T> {
    pub(super) chunks: Box<[OnceCell<Chunk<T>>]>,
    pub(super) len: usize,
}

pub(super) const LAZY_CHUNK: usize = 256;

/// [`LAZY_CHUNK`] cells.
pub(super) type Chunk<T> = Box<[OnceCell<T>]>;

impl<T> Lazy<T> {
    pub(super) fn new(len: usize) -> Lazy<T> {
        Lazy {
            chunks: (0..len.div_ceil(LAZY_CHUNK))
                .map(|_| OnceCell::new())
                .collect(),
            len,
        }
    }

    /// Cell `i`, `None` past the end.
    pub(super) fn cell(&self, i: usize) -> Option<&OnceCell<T>> {
        if i >= self.len {
            return None;
        }
        let chunk = self.chunks.get(i / LAZY_CHUNK)?;
        let cells = chunk.get_or_init(|| (0..LAZY_CHUNK).map(|_| OnceCell::new()).collect());
        cells.get(i % LAZY_CHUNK)
    }

    /// The value of cell `i`, if any (creates nothing).
    pub(super) fn get(&self, i: usize) -> Option<&T> {
        self.chunks
            .get(i / LAZY_CHUNK)
            .and_then(OnceCell::get)
            .and_then(|cells| cells.get(i % LAZY_CHUNK))
            .and_then(OnceCell::get)
    }

    /// Drops every value.
    pub(super) fn clear(&mut self) {
        self.chunks.iter_mut().for_each(|c| *c = OnceCell::new());
    }
}

/// An append-only list whose items stay where they are while it grows through `&self`,
/// so that what it holds can be lent out while more is added: chunks of 16, 32, 64, …
/// items, each made at its first use.
pub(super) struct Arena<T> {
    chunks: [OnceCell<Box<[OnceCell<T>]>>; ARENA_CHUNKS],
    len: Cell<usize>,
}

const ARENA_FIRST: usize = 16;
/// Chunks of `ARENA_FIRST << k` items: 16 · (2^28 − 1) items in all, more than a
/// base has positions.
const ARENA_CHUNKS: usize = 28;

impl<T> Default for Arena<T> {
    fn default() -> Arena<T> {
        Arena {
            chunks: std::array::from_fn(|_| OnceCell::new()),
            len: Cell::new(0),
        }
    }
}

impl<T> Arena<T> {
    /// The chunk of item `i` and its place there.
    fn locate(i: usize) -> (usize, usize) {
        let j = i / ARENA_FIRST + 1;
        let k = (usize::BITS - 1 - j.leading_zeros()) as usize;
        (k, i - ARENA_FIRST * ((1 << k) - 1))
    }

    /// Adds `value`; returns its number and a reference to it (`None` when full).
    pub(super) fn push(&self, value: T) -> Option<(usize, &T)> {
        let i = self.len.get();
        let (k, at) = Arena::<T>::locate(i);
        let chunk = self
            .chunks
            .get(k)?
            .get_or_init(|| (0..ARENA_FIRST << k).map(|_| OnceCell::new()).collect());
        let cell = chunk.get(at)?;
        cell.set(value).ok()?;
        self.len.set(i + 1);
        Some((i, cell.get()?))
    }

    /// Item `i`, if added.
    pub(super) fn get(&self, i: usize) -> Option<&T> {
        let (k, at) = Arena::<T>::locate(i);
        self.chunks.get(k)?.get()?.get(at)?.get()
    }

    /// Drops every item.
    pub(super) fn clear(&mut self) {
        self.chunks.iter_mut().for_each(|c| *c = OnceCell::new());
        self.len.set(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_arena_keeps_every_item_at_its_number_across_its_chunks() {
        let mut arena = Arena::default();
        for i in 0..5000usize {
            let (n, item) = arena.push(i * 3).unwrap();
            assert_eq!((n, *item), (i, i * 3));
        }
        for i in 0..5000usize {
            assert_eq!(arena.get(i), Some(&(i * 3)));
        }
        assert_eq!(arena.get(5000), None);
        assert_eq!(Arena::<u8>::locate(15), (0, 15));
        assert_eq!(Arena::<u8>::locate(16), (1, 0));
        assert_eq!(Arena::<u8>::locate(47), (1, 31));
        assert_eq!(Arena::<u8>::locate(48), (2, 0));
        arena.clear();
        assert_eq!(arena.get(0), None);
        assert_eq!(arena.push(7).map(|(n, v)| (n, *v)), Some((0, 7)));
    }
}
