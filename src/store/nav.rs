//! The navigation index and its queries (docs/contract.md §8).
//!
//! Beside the id index of [`Log`], every commit records in O(1): the entry's depth,
//! its place in its parent's child list (commit order: first child, last child, next
//! sibling), its place in the leaf list (a doubly linked list in commit order: a new
//! entry joins at the end, and its parent leaves the list when it gains its first
//! child), the root list, and labels. Each query then walks only what it returns:
//! `children` the child list, `leaves` the leaf list, `latest_leaf` one record, a
//! `tree` page its own range plus O(log depth) jumps to find its `leaf`'s path there.

use std::cell::Cell;
use std::collections::{BTreeMap, HashMap, HashSet};

use super::index::{Base, Tree};
use super::log::{Log, NONE};
use crate::error::Error;
use crate::nav::{Label, Leaves, Node, Place, TreeOptions, TreePage};

/// The tree links of one entry.
#[derive(Clone, Copy)]
pub(super) struct Links {
    first_child: u32,
    last_child: u32,
    next_sibling: u32,
    child_count: u32,
    depth: u32,
    /// A proper ancestor chosen by the skew-binary rule (Myers, "An applicative
    /// random-access stack", 1983): following `jump` or the parent reaches any
    /// ancestor in O(log depth) steps. `NONE` for a root.
    jump: u32,
    leaf_prev: u32,
    leaf_next: u32,
}

impl Links {
    /// The links as the session index records them.
    pub(super) fn to_array(self) -> [u32; 8] {
        [
            self.first_child,
            self.last_child,
            self.next_sibling,
            self.child_count,
            self.depth,
            self.jump,
            self.leaf_prev,
            self.leaf_next,
        ]
    }

    fn from_array(a: [u32; 8]) -> Links {
        Links {
            first_child: a[0],
            last_child: a[1],
            next_sibling: a[2],
            child_count: a[3],
            depth: a[4],
            jump: a[5],
            leaf_prev: a[6],
            leaf_next: a[7],
        }
    }
}

/// A target's current label.
struct LabelSet {
    text: Box<str>,
    /// Position of the label entry that set it.
    entry: u32,
}

/// Child links, depth, leaves, roots and labels of the committed entries.
///
/// The links of the entries a session index covers are read from it; those that a
/// later commit changes (a first child, the leaf list) are copied into `changed`.
pub(crate) struct NavIndex {
    /// Links of the entries after the base, at `position - base_len`.
    links: Vec<Links>,
    base_len: u32,
    /// Links of base entries changed since open.
    changed: HashMap<u32, Links>,
    /// Entries without a parent in the store, in commit order: roots, and salvaged
    /// orphans (whose parent is missing), so that every entry is reachable from here.
    roots: Vec<u32>,
    leaf_first: u32,
    leaf_last: u32,
    /// Target position → its label; ordered by the target's seq.
    labels: BTreeMap<u32, LabelSet>,
    /// Index records visited by queries since open: the cost measure of the tests.
    steps: Cell<u64>,
}

impl Default for NavIndex {
    fn default() -> NavIndex {
        NavIndex {
            links: Vec::new(),
            base_len: 0,
            changed: HashMap::new(),
            roots: Vec::new(),
            leaf_first: NONE,
            leaf_last: NONE,
            labels: BTreeMap::new(),
            steps: Cell::new(0),
        }
    }
}

impl NavIndex {
    /// The index of the entries `base` covers, as its session index recorded it.
    pub(crate) fn from_base(base: &Base) -> NavIndex {
        NavIndex {
            base_len: base.len(),
            roots: base.roots.clone(),
            leaf_first: base.leaf_first,
            leaf_last: base.leaf_last,
            labels: base
                .labels
                .iter()
                .map(|(target, entry, text)| {
                    let set = LabelSet {
                        text: text.as_str().into(),
                        entry: *entry,
                    };
                    (*target, set)
                })
                .collect(),
            ..NavIndex::default()
        }
    }

    /// The links of the entry at `at`; `None` when there is no such entry or reading
    /// the base failed.
    pub(super) fn get(&self, base: Option<&Base>, at: u32) -> Option<Links> {
        self.get_with(at, |at| base?.record(at).ok().map(|r| r.links))
    }

    /// [`NavIndex::get`], reading an unchanged base entry's links with `read_base`.
    fn get_with(&self, at: u32, read_base: impl FnOnce(u32) -> Option<[u32; 8]>) -> Option<Links> {
        if at < self.base_len {
            if let Some(links) = self.changed.get(&at) {
                return Some(*links);
            }
            return read_base(at).map(Links::from_array);
        }
        self.links.get((at - self.base_len) as usize).copied()
    }

    /// The links of the entry at `at`, to change.
    fn get_mut(&mut self, base: Option<&Base>, at: u32) -> Option<&mut Links> {
        if at < self.base_len {
            return match self.changed.entry(at) {
                std::collections::hash_map::Entry::Occupied(entry) => Some(entry.into_mut()),
                std::collections::hash_map::Entry::Vacant(entry) => {
                    let links = Links::from_array(base?.record(at).ok()?.links);
                    Some(entry.insert(links))
                }
            };
        }
        self.links.get_mut((at - self.base_len) as usize)
    }

    /// Records the entry just committed at `position` under `parent` (a position,
    /// `NONE` or `ORPHAN`). O(1). `false` when reading the base failed.
    pub(crate) fn add(&mut self, base: Option<&Base>, position: u32, parent: u32) -> bool {
        let mut links = Links {
            first_child: NONE,
            last_child: NONE,
            next_sibling: NONE,
            child_count: 0,
            depth: 0,
            jump: NONE,
            leaf_prev: self.leaf_last,
            leaf_next: NONE,
        };
        let mut ok = true;
        let exists =
            |at: u32| at != NONE && (at as usize) < self.base_len as usize + self.links.len();
        if exists(parent) {
            let Some(up) = self.get(base, parent) else {
                return false;
            };
            links.depth = up.depth.saturating_add(1);
            links.jump = self.jump_for(base, parent, up);
            if up.child_count == 0 {
                ok &= self.unlink_leaf(base, parent);
                // The parent may have been the last leaf.
                links.leaf_prev = self.leaf_last;
            }
            if up.last_child != NONE {
                match self.get_mut(base, up.last_child) {
                    Some(last) => last.next_sibling = position,
                    None => ok = false,
                }
            }
            match self.get_mut(base, parent) {
                Some(up) => {
                    if up.first_child == NONE {
                        up.first_child = position;
                    }
                    up.last_child = position;
                    up.child_count = up.child_count.saturating_add(1);
                }
                None => ok = false,
            }
        } else {
            self.roots.push(position);
        }
        if self.leaf_last == NONE {
            self.leaf_first = position;
        } else {
            match self.get_mut(base, self.leaf_last) {
                Some(last) => last.leaf_next = position,
                None => ok = false,
            }
        }
        self.leaf_last = position;
        self.links.push(links);
        ok
    }

    /// The jump of a new child of `parent`: the parent's jump's jump when the two
    /// jumps above the parent span equal depths, else the parent itself.
    fn jump_for(&self, base: Option<&Base>, parent: u32, up: Links) -> u32 {
        if up.jump == NONE {
            return parent;
        }
        let Some(first) = self.get(base, up.jump) else {
            return parent;
        };
        let depth = |at: u32| {
            if at == NONE {
                None
            } else {
                self.get(base, at).map(|l| l.depth)
            }
        };
        // Depths read from a session index are not trusted to decrease.
        match (up.depth.checked_sub(first.depth), depth(first.jump)) {
            (Some(a), Some(d2)) if first.depth.checked_sub(d2) == Some(a) => first.jump,
            _ => parent,
        }
    }

    fn unlink_leaf(&mut self, base: Option<&Base>, position: u32) -> bool {
        let Some(Links {
            leaf_prev,
            leaf_next,
            ..
        }) = self.get(base, position)
        else {
            return false;
        };
        let mut ok = true;
        if leaf_prev == NONE {
            self.leaf_first = leaf_next;
        } else {
            match self.get_mut(base, leaf_prev) {
                Some(prev) => prev.leaf_next = leaf_next,
                None => ok = false,
            }
        }
        if leaf_next == NONE {
            self.leaf_last = leaf_prev;
        } else {
            match self.get_mut(base, leaf_next) {
                Some(next) => next.leaf_prev = leaf_prev,
                None => ok = false,
            }
        }
        ok
    }

    /// The last committed label of `target` wins; `None` clears it.
    pub(crate) fn set_label(&mut self, target: u32, label: Option<String>, entry: u32) {
        match label {
            Some(text) => {
                self.labels.insert(
                    target,
                    LabelSet {
                        text: text.into(),
                        entry,
                    },
                );
            }
            None => {
                self.labels.remove(&target);
            }
        }
    }

    /// Roots, labels and the ends of the leaf list, for the session index writer.
    pub(super) fn tree(&self) -> Tree<'_> {
        Tree {
            roots: &self.roots,
            labels: self
                .labels
                .iter()
                .map(|(&target, set)| (target, set.entry, &*set.text))
                .collect(),
            leaf_first: self.leaf_first,
            leaf_last: self.leaf_last,
        }
    }

    fn step(&self) {
        self.steps.set(self.steps.get() + 1);
    }

    /// Index records visited by queries so far.
    pub(crate) fn steps(&self) -> u64 {
        self.steps.get()
    }
}

impl Log {
    /// The links of the entry at `at` (a base read that fails is noted).
    fn links(&self, at: u32) -> Option<Links> {
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
