//! The navigation index (docs/contract.md §8); its queries are in `queries.rs`.
//!
//! Beside the id index of the log, every commit records in O(1): the entry's depth,
//! its place in its parent's child list (commit order: first child, last child, next
//! sibling), its place in the leaf list (a doubly linked list in commit order: a new
//! entry joins at the end, and its parent leaves the list when it gains its first
//! child), the root list, and labels. Each query then walks only what it returns:
//! `children` the child list, `leaves` the leaf list, `latest_leaf` one record, a
//! `tree` page its own range plus O(log depth) jumps to find its `leaf`'s path there.

use std::cell::Cell;
use std::collections::{BTreeMap, HashMap};

use super::index::{Base, Tree};
use super::index::{LINKS, NONE};

/// The tree links of one entry.
#[derive(Clone, Copy)]
pub(super) struct Links {
    pub(super) first_child: u32,
    pub(super) last_child: u32,
    pub(super) next_sibling: u32,
    pub(super) child_count: u32,
    pub(super) depth: u32,
    /// A proper ancestor chosen by the skew-binary rule (Myers, "An applicative
    /// random-access stack", 1983): following `jump` or the parent reaches any
    /// ancestor in O(log depth) steps. `NONE` for a root.
    pub(super) jump: u32,
    pub(super) leaf_prev: u32,
    pub(super) leaf_next: u32,
    /// For an entry that is not a metadata entry whose key the model's context replays
    /// (not `session.`): the nearest such entry above it. For one that is: the nearest
    /// such entry above it whose key differs from its own (its run of one key is
    /// skipped). `NONE` when there is none. Following it from a leaf reads the last
    /// entry of each run of one key on the path, without walking the path
    /// (`Log::path_metadata`).
    pub(super) meta: u32,
}

impl Links {
    /// The links as the session index records them.
    pub(super) fn to_array(self) -> [u32; LINKS] {
        [
            self.first_child,
            self.last_child,
            self.next_sibling,
            self.child_count,
            self.depth,
            self.jump,
            self.leaf_prev,
            self.leaf_next,
            self.meta,
        ]
    }

    fn from_array(a: [u32; LINKS]) -> Links {
        Links {
            first_child: a[0],
            last_child: a[1],
            next_sibling: a[2],
            child_count: a[3],
            depth: a[4],
            jump: a[5],
            leaf_prev: a[6],
            leaf_next: a[7],
            meta: a[8],
        }
    }
}

/// A target's current label.
pub(super) struct LabelSet {
    pub(super) text: Box<str>,
    /// Position of the label entry that set it.
    pub(super) entry: u32,
}

/// Child links, depth, leaves, roots and labels of the committed entries.
///
/// The links of the entries a session index covers are read from it; those that a
/// later commit changes (a first child, the leaf list) are copied into `changed`.
pub(crate) struct NavIndex {
    /// Links of the entries after the base, at `position - base_len`.
    pub(super) links: Vec<Links>,
    pub(super) base_len: u32,
    /// Links of base entries changed since open.
    pub(super) changed: HashMap<u32, Links>,
    /// Entries without a parent in the store, in commit order: roots, and salvaged
    /// orphans (whose parent is missing), so that every entry is reachable from here.
    pub(super) roots: Vec<u32>,
    pub(super) leaf_first: u32,
    pub(super) leaf_last: u32,
    /// Target position → its label; ordered by the target's seq.
    pub(super) labels: BTreeMap<u32, LabelSet>,
    /// Index records visited by queries since open: the cost measure of the tests.
    pub(super) steps: Cell<u64>,
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
    pub(super) fn get_with(
        &self,
        at: u32,
        read_base: impl FnOnce(u32) -> Option<[u32; LINKS]>,
    ) -> Option<Links> {
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
    /// `NONE` or `ORPHAN`), with its `meta` link (see [`Links::meta`], computed by
    /// `Log::meta_link`). O(1). `false` when reading the base failed.
    pub(crate) fn add(
        &mut self,
        base: Option<&Base>,
        position: u32,
        parent: u32,
        meta: u32,
    ) -> bool {
        let mut links = Links {
            first_child: NONE,
            last_child: NONE,
            next_sibling: NONE,
            child_count: 0,
            depth: 0,
            jump: NONE,
            leaf_prev: self.leaf_last,
            leaf_next: NONE,
            meta,
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

    pub(super) fn step(&self) {
        self.steps.set(self.steps.get() + 1);
    }

    /// Index records visited by queries so far.
    pub(crate) fn steps(&self) -> u64 {
        self.steps.get()
    }
}
