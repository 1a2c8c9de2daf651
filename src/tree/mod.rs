//! `path_to` and `messages_on_path` over a slice of entries (docs/contract.md §3).
//!
//! The order of entries is only the order of writing; `parentId` is the logical
//! relation. The caller names a leaf and gets the path from the root to it: there is
//! no hidden "current" pointer.

pub(crate) mod checks;

use std::collections::HashMap;

use crate::entry::{Entry, Facts, Message};
use crate::error::Error;

/// One entry of a path, borrowed: its canonical JSON and its facts. The slice
/// operations and the store's index both produce paths of these, so every rule over a
/// path (the message projection, `build_context`) has one implementation.
#[derive(Clone, Copy)]
pub(crate) struct PathEntry<'a> {
    pub(crate) json: &'a [u8],
    pub(crate) facts: &'a Facts,
}

impl<'a> PathEntry<'a> {
    pub(crate) fn of(entry: &'a Entry) -> PathEntry<'a> {
        PathEntry {
            json: entry.json().as_bytes(),
            facts: entry.facts(),
        }
    }

    pub(crate) fn id(&self) -> &'a str {
        self.facts.id(self.json)
    }

    /// The canonical JSON of the message, `None` for an entry that is not a message.
    pub(crate) fn message(&self) -> Option<&'a [u8]> {
        self.facts.message_json(self.json)
    }

    /// Whether this is a metadata entry whose value the model's context replays: any
    /// key but the library's own `session.` ones (docs/contract.md §7).
    pub(crate) fn is_replayed_metadata(&self) -> bool {
        matches!(&self.facts.body, crate::entry::Body::Metadata { key, .. }
            if !key.of(self.json).starts_with(crate::entry::RESERVED_PREFIX))
    }
}

/// The path → messages projection (docs/contract.md §3): the message entries of the path, in path
/// order, each message complete. Metadata and compactions are on the path but are not
/// messages. `messages_on_path` (slice and store) and `build_context` all use this; the
/// store's JSON form streams the path and keeps the same [`PathEntry::message`].
pub(crate) fn project_messages<'p, 'a: 'p>(
    path: &'p [PathEntry<'a>],
) -> impl Iterator<Item = (usize, &'a [u8])> + 'p {
    path.iter()
        .enumerate()
        .filter_map(|(i, entry)| entry.message().map(|m| (i, m)))
}

/// The entries from the root to `leaf_id`, as independent copies.
///
/// Fails with [`Error::DuplicateId`] if any id appears twice anywhere (a duplicate
/// makes every lookup ambiguous), [`Error::UnknownLeaf`] if no entry has `leaf_id`,
/// and, for the chosen path only, [`Error::MissingParent`] or [`Error::Cycle`]: a
/// broken branch that is not selected does not stop a healthy path from being read.
pub fn path_to(entries: &[Entry], leaf_id: &str) -> Result<Vec<Entry>, Error> {
    let path = path_indices(entries, leaf_id)?;
    Ok(path.into_iter().map(|i| entries[i].clone()).collect())
}

/// The messages on the path to `leaf_id`, complete (toolCall ids, names, structured
/// arguments; toolResult ids, names, `isError`, `details`): metadata and compaction
/// entries are on the path but are not messages. Fails as [`path_to`] does.
pub fn messages_on_path(entries: &[Entry], leaf_id: &str) -> Result<Vec<Message>, Error> {
    let index = IdIndex::new(entries)?;
    let path = index.path(leaf_id)?;
    project_messages(&path)
        .map(|(i, json)| Message::from_path(path[i].facts, json))
        .collect()
}

/// Indices of the path, root first.
pub(crate) fn path_indices(entries: &[Entry], leaf_id: &str) -> Result<Vec<usize>, Error> {
    IdIndex::new(entries)?.walk(leaf_id)
}

/// Every id of a slice of entries, indexed (pass 1 of `path_to`).
pub(crate) struct IdIndex<'a> {
    entries: &'a [Entry],
    by_id: HashMap<&'a str, usize>,
    /// The children of each parent id, in slice order; built on first use.
    by_parent: std::cell::OnceCell<HashMap<&'a str, Vec<usize>>>,
}

impl<'a> IdIndex<'a> {
    /// Indexes every id; a duplicate anywhere fails.
    pub(crate) fn new(entries: &'a [Entry]) -> Result<IdIndex<'a>, Error> {
        let mut by_id: HashMap<&str, usize> = HashMap::with_capacity(entries.len());
        for (i, entry) in entries.iter().enumerate() {
            checks::id_is_new(entry.id(), by_id.insert(entry.id(), i).is_some(), None)?;
        }
        Ok(IdIndex {
            entries,
            by_id,
            by_parent: std::cell::OnceCell::new(),
        })
    }

    /// The entries whose parent is `id`, in slice order. The first call indexes every
    /// parent link (O(entries)); each call after that costs the children.
    pub(crate) fn children(&self, id: &str) -> Vec<PathEntry<'a>> {
        let entries = self.entries;
        let by_parent = self.by_parent.get_or_init(|| {
            let mut by_parent: HashMap<&'a str, Vec<usize>> = HashMap::new();
            for (i, entry) in entries.iter().enumerate() {
                if let Some(parent) = entry.parent_id() {
                    by_parent.entry(parent).or_default().push(i);
                }
            }
            by_parent
        });
        by_parent
            .get(id)
            .map(|children| {
                children
                    .iter()
                    .map(|&i| PathEntry::of(&entries[i]))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The entry's place in the slice (its commit order), `None` for an unknown id.
    pub(crate) fn position(&self, id: &str) -> Option<u64> {
        self.by_id.get(id).map(|&i| i as u64)
    }

    /// The path to `leaf_id` as borrowed entries, root first.
    pub(crate) fn path(&self, leaf_id: &str) -> Result<Vec<PathEntry<'a>>, Error> {
        let entries = self.entries;
        Ok(self
            .walk(leaf_id)?
            .into_iter()
            .map(|i| PathEntry::of(&entries[i]))
            .collect())
    }

    /// Pass 2: walks parent links from the leaf, checking only this path.
    fn walk(&self, leaf_id: &str) -> Result<Vec<usize>, Error> {
        let entries = self.entries;
        let Some(&leaf) = self.by_id.get(leaf_id) else {
            return Err(Error::UnknownLeaf {
                id: leaf_id.to_owned(),
            });
        };
        let mut seen = vec![false; entries.len()];
        let mut path = Vec::new();
        let mut current = leaf;
        loop {
            checks::not_revisited(entries[current].id(), seen[current])?;
            seen[current] = true;
            path.push(current);
            let Some(parent_id) = entries[current].parent_id() else {
                break;
            };
            current = *checks::parent_is_committed(
                entries[current].id(),
                parent_id,
                self.by_id.get(parent_id),
                None,
            )?;
        }
        path.reverse();
        Ok(path)
    }
}
