//! The committed entries of a store and their id index.
//!
//! Entries commit only after their parent, so every parent link points to an earlier
//! position: walking from a leaf visits each ancestor once, and a store-level path
//! costs time in proportion to its length, not to the number of entries.

use std::collections::HashMap;

use crate::entry::Entry;
use crate::error::Error;

struct Committed {
    entry: Entry,
    /// Position of the parent; `None` for a root.
    parent: Option<usize>,
}

#[derive(Default)]
pub(crate) struct Log {
    committed: Vec<Committed>,
    by_id: HashMap<Box<str>, usize>,
}

impl Log {
    /// The tree rules for a new entry: its id is not taken and its parent, if any, is
    /// already committed. Returns the parent's position. `line` is the physical line
    /// when replaying a file, for the error.
    pub(crate) fn admit(&self, entry: &Entry, line: Option<u64>) -> Result<Option<usize>, Error> {
        if self.by_id.contains_key(entry.id()) {
            return Err(Error::DuplicateId {
                id: entry.id().to_owned(),
                line,
            });
        }
        let Some(parent_id) = entry.parent_id() else {
            return Ok(None);
        };
        match self.by_id.get(parent_id) {
            Some(&parent) => Ok(Some(parent)),
            None => Err(Error::MissingParent {
                child_id: entry.id().to_owned(),
                parent_id: parent_id.to_owned(),
                line,
            }),
        }
    }

    /// Commits an admitted entry; returns its position (`seq`).
    pub(crate) fn push(&mut self, entry: Entry, parent: Option<usize>) -> u64 {
        let seq = self.committed.len();
        self.by_id.insert(entry.id().into(), seq);
        self.committed.push(Committed { entry, parent });
        seq as u64
    }

    pub(crate) fn len(&self) -> usize {
        self.committed.len()
    }

    pub(crate) fn entries(&self) -> impl ExactSizeIterator<Item = &Entry> + Clone {
        self.committed.iter().map(|c| &c.entry)
    }

    /// The entries from the root to `leaf_id`, root first.
    pub(crate) fn path(&self, leaf_id: &str) -> Result<Vec<&Entry>, Error> {
        let Some(&leaf) = self.by_id.get(leaf_id) else {
            return Err(Error::UnknownLeaf {
                id: leaf_id.to_owned(),
            });
        };
        let mut path = Vec::new();
        let mut at = Some(leaf);
        while let Some(i) = at {
            let Some(c) = self.committed.get(i) else {
                return Err(Error::internal("store index points past its entries"));
            };
            path.push(&c.entry);
            at = c.parent;
        }
        path.reverse();
        Ok(path)
    }
}
