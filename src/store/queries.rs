//! The navigation queries of a log (docs/contract.md §8), answered from its navigation
//! index (`nav.rs`): `children` walks the child list, `leaves` the leaf list,
//! `latest_leaf` reads one record, and a `tree` page its own range plus O(log depth)
//! jumps to find its `leaf`'s path there.

use std::collections::HashSet;

use super::index::{NONE, ORPHAN};
use super::log::Log;
use super::nav::Links;
use crate::entry::{Body, RESERVED_PREFIX, RESUME_LEAF_KEY};
use crate::error::Error;
use crate::nav::{Label, Leaves, Node, Place, TreeOptions, TreePage};
use crate::tree::PathEntry;

impl Log {
    /// The links of the entry at `at` (a base read that fails is noted).
    pub(super) fn links(&self, at: u32) -> Option<Links> {
        self.nav()
            .get_with(at, |at| Some(self.noted(self.base()?.record(at))?.links))
    }

    /// The node of the entry at `position`.
    fn node(&self, position: u32, preview_chars: u64, on_path: bool) -> Node {
        let nav = self.nav();
        nav.step();
        let links = self.links(position);
        let place = Place {
            seq: u64::from(position),
            depth: links.map_or(0, |l| u64::from(l.depth)),
            child_count: links.map_or(0, |l| u64::from(l.child_count)),
            label: self.label(position),
            on_path,
        };
        Node::describe(self.json_of(position), place, preview_chars)
    }

    /// The current label of the entry at `target`, checked against the line of the
    /// label entry that set it (a mismatch is noted: the store answers from the file).
    fn label(&self, target: u32) -> Option<&str> {
        let set = self.nav().labels.get(&target)?;
        if !self.sets_label(set.entry, target, &set.text) {
            self.note_index_fault();
        }
        Some(&set.text)
    }

    fn position(&self, id: &str) -> Result<u32, Error> {
        self.find(id)
            .ok_or_else(|| Error::UnknownLeaf { id: id.to_owned() })
    }

    /// The direct children of `id`, in commit order. O(children).
    pub(crate) fn children(&self, id: &str) -> Result<Vec<Node>, Error> {
        let parent = self.position(id)?;
        let mut nodes = Vec::new();
        let mut at = self.links(parent).map_or(NONE, |l| l.first_child);
        while let Some(links) = self.links(at) {
            nodes.push(self.node(at, 0, false));
            at = links.next_sibling;
        }
        Ok(nodes)
    }

    /// The entries whose parent is `id`, in commit order, as borrowed path entries
    /// (what `build_context`'s Claude Code profile reads off the path). O(children).
    pub(crate) fn child_entries(&self, id: &str) -> Result<Vec<PathEntry<'_>>, Error> {
        let parent = self.position(id)?;
        let mut entries = Vec::new();
        let mut at = self.links(parent).map_or(NONE, |l| l.first_child);
        while let Some(links) = self.links(at) {
            let (json, facts) = self
                .entry(at)
                .ok_or_else(|| Error::internal("a child in the index is not in the log"))?;
            entries.push(PathEntry { json, facts });
            at = links.next_sibling;
        }
        Ok(entries)
    }

    /// The entries without a parent in the store, in commit order. O(roots).
    pub(crate) fn roots(&self) -> Vec<Node> {
        let nav = self.nav();
        nav.roots
            .iter()
            .map(|&at| self.node(at, 0, false))
            .collect()
    }

    /// The leaves in commit order, the last committed one, and the latest by
    /// timestamp. O(leaves).
    pub(crate) fn leaves(&self) -> Leaves {
        let nav = self.nav();
        let mut leaves: Vec<Node> = Vec::new();
        let mut at = nav.leaf_first;
        while let Some(links) = self.links(at) {
            leaves.push(self.node(at, 0, false));
            at = links.leaf_next;
        }
        // Commit order, so a later leaf with an equal timestamp has the higher seq.
        let latest_by_timestamp = leaves
            .iter()
            .fold(None::<&Node>, |best, node| match best {
                Some(best) if best.timestamp > node.timestamp => Some(best),
                _ => Some(node),
            })
            .map(|node| node.id.clone());
        Leaves {
            latest_by_seq: leaves.last().map(|node| node.id.clone()),
            latest_by_timestamp,
            leaves,
        }
    }

    /// The leaf the agent of an imported session resumes (docs/contract.md §6.3): the
    /// `leafId` of the `session.resumeLeaf` entry met walking up from the last
    /// committed entry over `session.*` metadata only. An import writes that entry
    /// last; a label appended since leaves it in force, any other entry (a message a
    /// host appended) ends it. `None` when there is none or its leaf is not
    /// committed. O(entries walked).
    pub(crate) fn resume_leaf(&self) -> Option<String> {
        let last = u32::try_from(self.len().checked_sub(1)?).ok()?;
        for entry in self.ancestors(last) {
            let Body::Metadata { key, target, .. } = &entry.facts.body else {
                return None;
            };
            let key = key.of(entry.json);
            if key == RESUME_LEAF_KEY {
                let leaf = target.as_ref()?.of(entry.json);
                return self.find(leaf).map(|_| leaf.to_owned());
            }
            if !key.starts_with(RESERVED_PREFIX) {
                return None;
            }
        }
        None
    }

    /// The node of the last committed entry. O(1).
    pub(crate) fn latest_leaf(&self) -> Option<Node> {
        let last = u32::try_from(self.len().checked_sub(1)?).ok()?;
        Some(self.node(last, 0, false))
    }

    /// A page of nodes in commit order. O(limit + log(depth of `leaf`)).
    pub(crate) fn tree(&self, options: &TreeOptions) -> Result<TreePage, Error> {
        let leaf = match &options.leaf {
            Some(leaf) => Some(self.position(leaf)?),
            None => None,
        };
        let count = self.len() as u64;
        let start = options.after_seq.map_or(0, |s| s.saturating_add(1));
        let end = match options.limit {
            Some(limit) => start.saturating_add(limit).min(count),
            None => count,
        };
        let on_path = match leaf {
            Some(leaf) => self.path_in(leaf, start, end),
            None => HashSet::new(),
        };
        let nodes: Vec<Node> = (start..end)
            .filter_map(|seq| u32::try_from(seq).ok())
            .map(|at| self.node(at, options.preview_chars, on_path.contains(&at)))
            .collect();
        let next_after_seq = match nodes.last() {
            Some(last) if end < count => Some(last.seq),
            _ => None,
        };
        Ok(TreePage {
            nodes,
            count,
            next_after_seq,
        })
    }

    /// The positions on the path from the root to `leaf` whose seq is in
    /// `start..end`. A parent always commits before its child, so seqs fall strictly
    /// going up: jump to the deepest ancestor below `end` in O(log depth) steps, then
    /// walk up while the seq stays at or above `start` (at most `end - start` steps).
    fn path_in(&self, leaf: u32, start: u64, end: u64) -> HashSet<u32> {
        let nav = self.nav();
        let mut path = HashSet::new();
        let mut at = leaf;
        while let Some(links) = self.links(at) {
            if u64::from(at) < end {
                break;
            }
            nav.step();
            at = match self.links(links.jump) {
                Some(_) if u64::from(links.jump) >= end => links.jump,
                _ => self.parent_of(at),
            };
        }
        while self.links(at).is_some() && u64::from(at) >= start {
            nav.step();
            path.insert(at);
            at = self.parent_of(at);
        }
        path
    }

    /// The root of the path to the entry at `position`, following jumps: O(log
    /// depth). Fails as a path does when it reaches a salvaged orphan. Links read
    /// from a session index are not trusted to go up: one that does not is noted as
    /// a damaged index.
    pub(crate) fn path_root(&self, position: u32) -> Result<u32, Error> {
        let mut at = position;
        while let Some(links) = self.links(at) {
            if links.jump == NONE {
                break;
            }
            if links.jump >= at {
                self.note_index_fault();
                break;
            }
            at = links.jump;
        }
        match self.parent_of(at) {
            ORPHAN => Err(self.orphan_error(at)),
            _ => Ok(at),
        }
    }

    /// The replayed metadata entries (see [`Links::meta`]) that decide the metadata the
    /// model's context replays on the path to the entry at `position`: of each run of
    /// entries with one key (consecutive among the path's replayed metadata), its last
    /// one, root first. Over this list, "each key's last value, keys in the order of
    /// their first appearance" is the same as over every replayed entry of the path
    /// (runs of different keys do not overlap, so their first entries and their last
    /// entries come in the same order); the cost is the number of runs, not of entries
    /// (a session whose path holds a million `progress` entries between its messages
    /// reads one per run). A link that does not go up to such an entry is noted as a
    /// damaged index.
    pub(crate) fn path_metadata(&self, position: u32) -> Vec<PathEntry<'_>> {
        let mut found = Vec::new();
        let mut at = match self.view(position) {
            Some(entry) if entry.is_replayed_metadata() => position,
            _ => self.links(position).map_or(NONE, |l| l.meta),
        };
        // Every entry of the chain lies at or above `bound`.
        let mut bound = position;
        while at != NONE {
            let entry = match self.view(at) {
                Some(entry) if at <= bound && entry.is_replayed_metadata() => entry,
                _ => {
                    self.note_index_fault();
                    break;
                }
            };
            found.push(entry);
            let Some(next) = self.links(at).map(|l| l.meta) else {
                break;
            };
            if next != NONE && next >= at {
                self.note_index_fault();
                break;
            }
            bound = at.saturating_sub(1);
            at = next;
        }
        found.reverse();
        found
    }

    /// The `meta` link (see [`Links::meta`]) of an entry about to be committed under
    /// `parent` (a position, `NONE` or `ORPHAN`): for a replayed metadata entry
    /// (`entry`'s key is not `session.`), the nearest replayed metadata entry above it
    /// whose key differs from its own; for any other entry, the nearest replayed
    /// metadata entry at or above its parent. O(1): two entries read at most.
    pub(super) fn meta_link(&self, parent: u32, entry: &PathEntry<'_>) -> u32 {
        if parent as usize >= self.len() {
            return NONE;
        }
        // The nearest replayed metadata entry at or above the parent.
        let nearest = match self.view(parent) {
            Some(up) if up.is_replayed_metadata() => parent,
            Some(_) => self.links(parent).map_or(NONE, |l| l.meta),
            None => NONE,
        };
        if nearest == NONE || !entry.is_replayed_metadata() {
            return nearest;
        }
        match self.view(nearest) {
            Some(up) if metadata_key(&up) == metadata_key(entry) => {
                self.links(nearest).map_or(NONE, |l| l.meta)
            }
            _ => nearest,
        }
    }

    /// Each labelled target once, ordered by the target's seq. O(labels).
    pub(crate) fn labels(&self) -> Vec<Label> {
        let nav = self.nav();
        nav.labels
            .iter()
            .map(|(&target, set)| {
                nav.step();
                if !self.sets_label(set.entry, target, &set.text) {
                    self.note_index_fault();
                }
                Label {
                    target_id: self.id_of(target).to_owned(),
                    label: set.text.to_string(),
                    entry_id: self.id_of(set.entry).to_owned(),
                    seq: u64::from(set.entry),
                }
            })
            .collect()
    }
}

impl Log {
    /// For the fuzz target: reads every entry, finds it by id, walks its children and
    /// path, and runs every navigation query. Returns the number of entries.
    pub(crate) fn exercise(&self) -> usize {
        let len = self.len();
        for position in 0..len as u32 {
            let id = self.id_of(position).to_owned();
            let _ = self.find(&id);
            let _ = self.children(&id);
            let _ = self.path_jsons(&id);
            let _ = self.take_fault();
        }
        let _ = (
            self.roots(),
            self.leaves(),
            self.labels(),
            self.latest_leaf(),
        );
        let _ = self.tree(&TreeOptions::default());
        let _ = self.take_fault();
        len
    }
}

/// The key of a metadata entry (`None` for any other entry).
fn metadata_key<'a>(entry: &PathEntry<'a>) -> Option<&'a str> {
    match &entry.facts.body {
        Body::Metadata { key, .. } => Some(key.of(entry.json)),
        _ => None,
    }
}
