//! `path_to` and `messages_on_path` over a slice of entries (docs/contract.md §3).
//!
//! The order of entries is only the order of writing; `parentId` is the logical
//! relation. The caller names a leaf and gets the path from the root to it: there is
//! no hidden "current" pointer.

use std::collections::HashMap;

use crate::entry::{Entry, Message};
use crate::error::Error;

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
/// arguments; toolResult ids, names, `isError`, `details`): metadata entries are on
/// the path but are not messages. Fails as [`path_to`] does.
pub fn messages_on_path(entries: &[Entry], leaf_id: &str) -> Result<Vec<Message>, Error> {
    let path = path_indices(entries, leaf_id)?;
    Ok(path
        .into_iter()
        .filter_map(|i| entries[i].message())
        .collect())
}

/// Indices of the path, root first.
pub(crate) fn path_indices(entries: &[Entry], leaf_id: &str) -> Result<Vec<usize>, Error> {
    // Pass 1: index every id; a duplicate anywhere fails.
    let mut by_id: HashMap<&str, usize> = HashMap::with_capacity(entries.len());
    for (i, entry) in entries.iter().enumerate() {
        if by_id.insert(entry.id(), i).is_some() {
            return Err(Error::DuplicateId {
                id: entry.id().to_owned(),
                line: None,
            });
        }
    }
    // Pass 2: walk parent links from the leaf, checking only this path.
    let Some(&leaf) = by_id.get(leaf_id) else {
        return Err(Error::UnknownLeaf {
            id: leaf_id.to_owned(),
        });
    };
    let mut seen = vec![false; entries.len()];
    let mut path = Vec::new();
    let mut current = leaf;
    loop {
        if seen[current] {
            return Err(Error::Cycle {
                id: entries[current].id().to_owned(),
            });
        }
        seen[current] = true;
        path.push(current);
        let Some(parent_id) = entries[current].parent_id() else {
            break;
        };
        match by_id.get(parent_id) {
            Some(&parent) => current = parent,
            None => {
                return Err(Error::MissingParent {
                    child_id: entries[current].id().to_owned(),
                    parent_id: parent_id.to_owned(),
                    line: None,
                });
            }
        }
    }
    path.reverse();
    Ok(path)
}
