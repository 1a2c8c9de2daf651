//! The committed entries of a store and their id index.
//!
//! A log has two parts. The entries a session index covers (the base, see
//! [`super::index::Base`]) stay in the file: their lines, records and tree links are
//! read on demand, and a line is checked at every read from the file. Every entry
//! committed after them keeps its canonical JSON back to back in one arena, so reads
//! copy bytes instead of re-serialising, with a small record: where its text is, its
//! facts (id, parent, kind, message span) as positions in that text, and the position
//! of its parent.
//!
//! A read through the base can fail (a damaged line, a damaged index, an I/O error):
//! the log notes the first such fault and answers with what it has; the store checks
//! [`Log::take_fault`] after every operation and reports the fault instead of the
//! answer (or, for a damaged index, falls back to the file).
//!
//! Entries commit only after their parent, so every parent link points to an earlier
//! position: walking from a leaf visits each ancestor once, and a store-level path
//! costs time in proportion to its length, not to the number of entries.

use std::cell::RefCell;
use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};

use super::index::{Base, Fault, Item, Raw, Tree};
use super::nav::NavIndex;
use crate::context::{PathTail, take_tail};
use crate::entry::{Body, Entry, Facts, LABEL_KEY, Message, utf8};
use crate::error::Error;
use crate::nav::read_label;
use crate::tree::{PathEntry, checks, project_messages};

/// Positions: see the index's format, which records them.
pub(crate) use super::index::{NONE, ORPHAN};

struct Record {
    /// Where the entry's canonical JSON starts in the arena, and its length.
    start: usize,
    len: u32,
    /// Position of the parent, or `NONE` for a root.
    parent: u32,
    /// The previous entry whose id has the same hash, or `NONE`.
    same_hash: u32,
    facts: Facts,
}

/// The index hashes of an entry's id and parent id.
#[derive(Clone, Copy, Debug)]
pub(crate) struct IdHashes {
    id: u64,
    parent: Option<u64>,
}

impl IdHashes {
    pub(crate) fn new(hasher: &RandomState, id: &str, parent_id: Option<&str>) -> IdHashes {
        IdHashes {
            id: hasher.hash_one(id),
            parent: parent_id.map(|p| hasher.hash_one(p)),
        }
    }
}

/// An entry that passed the tree rules, ready to commit.
pub(crate) struct Admitted {
    /// The hash of its id (computed once, for the check and the index).
    hash: u64,
    /// Position of its parent, `NONE` for a root, `ORPHAN` for a salvaged orphan.
    pub(crate) parent: u32,
}

#[derive(Default)]
pub(crate) struct Log {
    /// The entries a session index covers, read from the file on demand.
    base: Option<Base>,
    /// How many they are: positions below are in the base.
    base_len: u32,
    arena: Vec<u8>,
    /// The entries after the base, at positions `base_len..`.
    records: Vec<Record>,
    /// Id hash → position of the last entry after the base with that hash. Ids
    /// themselves are read from the arena, so the index holds no copy of them.
    by_hash: HashMap<u64, u32>,
    hasher: RandomState,
    /// Child links, depth, leaves, roots and labels (docs/contract.md §8), kept per commit.
    nav: NavIndex,
    /// The committed entries as the lines a file store writes (`json + "\n"`), back to
    /// back: their total size. When the file is exactly those lines, it is the size of
    /// its committed prefix (the session index relies on it).
    line_bytes: u64,
    /// The first failed read through the base since the last [`Log::take_fault`].
    fault: RefCell<Option<Fault>>,
}

/// The error an operation returns when a read through the base failed; the store
/// replaces it with the fault it noted.
pub(crate) fn faulted() -> Error {
    Error::internal("a read through the session index failed")
}

impl Log {
    /// The log of the prefix `base` covers; later entries are pushed after it.
    pub(crate) fn with_base(base: Base) -> Log {
        Log {
            base_len: base.len(),
            line_bytes: base.covered(),
            nav: NavIndex::from_base(&base),
            base: Some(base),
            ..Log::default()
        }
    }

    /// The base, when there is one.
    pub(super) fn base(&self) -> Option<&Base> {
        self.base.as_ref()
    }

    /// The fault noted since the last call, if any.
    pub(crate) fn take_fault(&self) -> Option<Fault> {
        self.fault.borrow_mut().take()
    }

    /// Drops what the base has cached beyond its budget (between operations).
    pub(crate) fn trim(&mut self) {
        if let Some(base) = &mut self.base {
            base.trim();
        }
    }

    fn note(&self, fault: Fault) {
        let mut noted = self.fault.borrow_mut();
        if noted.is_none() {
            *noted = Some(fault);
        }
    }

    /// Notes that the session index does not hold over the lines it describes.
    pub(super) fn note_index_fault(&self) {
        self.note(Fault::Index);
    }

    /// Notes the error of a base read, if it failed.
    pub(super) fn noted<T>(&self, result: Result<T, Fault>) -> Option<T> {
        result.map_err(|fault| self.note(fault)).ok()
    }

    fn json_at(&self, record: &Record) -> &[u8] {
        self.arena
            .get(record.start..record.start + record.len as usize)
            .unwrap_or_default()
    }

    fn overlay(&self, position: u32) -> Option<&Record> {
        self.records
            .get(position.checked_sub(self.base_len)? as usize)
    }

    /// The canonical JSON and facts of the entry at `position`; `None` (and a noted
    /// fault) when a base read fails.
    pub(crate) fn entry(&self, position: u32) -> Option<(&[u8], &Facts)> {
        if position < self.base_len {
            let base = self.base.as_ref()?;
            return self.noted(base.entry(position));
        }
        let record = self.overlay(position)?;
        Some((self.json_at(record), &record.facts))
    }

    /// The position of the entry with `id`, whose hash (in this log's hasher) is
    /// `hash`.
    fn find_hashed(&self, id: &str, hash: u64) -> Option<u32> {
        if let Some(at) = self.find_after_base(id, hash) {
            return Some(at);
        }
        let base = self.base.as_ref()?;
        self.noted(base.find(id)).flatten()
    }

    /// The position of the entry with `id` among the entries after the base.
    fn find_after_base(&self, id: &str, hash: u64) -> Option<u32> {
        let mut at = self.by_hash.get(&hash).copied().unwrap_or(NONE);
        while let Some(record) = self.overlay(at) {
            if record.facts.id(self.json_at(record)) == id {
                return Some(at);
            }
            at = record.same_hash;
        }
        None
    }

    /// The position of the entry with `id`.
    pub(crate) fn find(&self, id: &str) -> Option<u32> {
        self.find_hashed(id, self.hasher.hash_one(id))
    }

    /// The tree rules for a new entry: its id is not taken and its parent, if any, is
    /// already committed. Returns the parent's position. `line` is the physical line
    /// when replaying a file, for the error.
    pub(crate) fn admit(
        &self,
        id: &str,
        parent_id: Option<&str>,
        line: Option<u64>,
    ) -> Result<Admitted, Error> {
        let hashes = IdHashes::new(&self.hasher, id, parent_id);
        self.admit_hashed(id, parent_id, hashes, line)
    }

    /// The hasher of the id index, for computing [`IdHashes`] on another thread.
    pub(crate) fn hasher(&self) -> RandomState {
        self.hasher.clone()
    }

    /// [`Log::admit`] with the hashes already computed (by a parsing thread).
    pub(crate) fn admit_hashed(
        &self,
        id: &str,
        parent_id: Option<&str>,
        hashes: IdHashes,
        line: Option<u64>,
    ) -> Result<Admitted, Error> {
        let taken = self.find_hashed(id, hashes.id).is_some();
        self.admit_taken(id, parent_id, hashes, taken, line)
    }

    /// The tree rules, the id's lookup done by the caller (`taken`): the id is new, and
    /// the parent, if any, is committed.
    fn admit_taken(
        &self,
        id: &str,
        parent_id: Option<&str>,
        hashes: IdHashes,
        taken: bool,
        line: Option<u64>,
    ) -> Result<Admitted, Error> {
        let hash = hashes.id;
        checks::id_is_new(id, taken, line)?;
        let (Some(parent_id), Some(parent_hash)) = (parent_id, hashes.parent) else {
            return Ok(Admitted { hash, parent: NONE });
        };
        let found = self.find_hashed(parent_id, parent_hash);
        let parent = checks::parent_is_committed(id, parent_id, found, line)?;
        Ok(Admitted { hash, parent })
    }

    /// [`Log::admit`] for a medium that refuses a taken id itself (PostgreSQL's unique
    /// index on the id): the id is looked up only among the entries after the base, so
    /// the check reads no page of the session index's id table; the parent is found as
    /// by [`Log::admit`]. The caller must treat the medium's refusal of the id as the
    /// id check's answer (or know that the medium holds the id only once).
    pub(crate) fn admit_over_base(
        &self,
        id: &str,
        parent_id: Option<&str>,
        line: Option<u64>,
    ) -> Result<Admitted, Error> {
        let hashes = IdHashes::new(&self.hasher, id, parent_id);
        let taken = self.find_after_base(id, hashes.id).is_some();
        self.admit_taken(id, parent_id, hashes, taken, line)
    }

    /// For salvage: admits an entry whose parent is missing as an orphan (the caller
    /// has checked that its id is new).
    pub(crate) fn admit_orphan(&self, id: &str) -> Admitted {
        Admitted {
            hash: self.hasher.hash_one(id),
            parent: ORPHAN,
        }
    }

    /// Commits an admitted entry; returns its position (`seq`).
    pub(crate) fn push(
        &mut self,
        json: &[u8],
        facts: Facts,
        admitted: Admitted,
    ) -> Result<u64, Error> {
        let position = self.len();
        let (Ok(seq), Ok(len)) = (u32::try_from(position), u32::try_from(json.len())) else {
            return Err(Error::internal(
                "the store holds as many entries as it can index",
            ));
        };
        if seq >= ORPHAN {
            return Err(Error::internal(
                "the store holds as many entries as it can index",
            ));
        }
        let label = self.label_of(json, &facts);
        let same_hash = self.by_hash.insert(admitted.hash, seq).unwrap_or(NONE);
        let meta = self.meta_link(
            admitted.parent,
            &PathEntry {
                json,
                facts: &facts,
            },
        );
        let start = self.arena.len();
        self.arena.extend_from_slice(json);
        self.line_bytes += json.len() as u64 + 1;
        if !self.nav.add(self.base.as_ref(), seq, admitted.parent, meta) {
            self.note(Fault::Index);
        }
        if let Some((target, label)) = label {
            self.nav.set_label(target, label, seq);
        }
        self.records.push(Record {
            start,
            len,
            parent: admitted.parent,
            same_hash,
            facts,
        });
        Ok(seq as u64)
    }

    /// What a committed `session.label` entry (docs/contract.md §6.3) does: the position of its
    /// target and the label to set, or `None` to clear it. The last one of a target
    /// wins. A value that names no earlier entry is kept in the file but labels
    /// nothing.
    fn label_of(&self, json: &[u8], facts: &Facts) -> Option<(u32, Option<String>)> {
        let Body::Metadata { key, value, .. } = &facts.body else {
            return None;
        };
        if key.of(json) != LABEL_KEY {
            return None;
        }
        let (target_id, label) = read_label(value.bytes(json))?;
        Some((self.find(&target_id)?, label))
    }

    /// Whether the entry at `entry` is a `session.label` entry that sets `text` on the
    /// entry at `target`. A label the session index recorded is checked against the line
    /// of the entry that set it (read, so checked against its record) before it is
    /// returned; a label committed since open is in memory. `false` (and a noted fault)
    /// when the read fails.
    pub(super) fn sets_label(&self, entry: u32, target: u32, text: &str) -> bool {
        if entry >= self.base_len {
            return true;
        }
        let Some((json, facts)) = self.entry(entry) else {
            return false;
        };
        matches!(self.label_of(json, facts), Some((at, Some(label))) if at == target && label == text)
    }

    /// The total size of the committed entries' lines (`json + "\n"` each).
    pub(crate) fn line_bytes(&self) -> u64 {
        self.line_bytes
    }

    /// What the session index writer needs, in commit order: each entry's record
    /// (read from the base's index, or computed from the entry), tree links included.
    /// An item is `None` when reading the base failed (then no index is written).
    pub(crate) fn index_items(&self) -> impl Iterator<Item = Option<Item<'_>>> {
        let mut offset = self.base.as_ref().map_or(0, Base::covered);
        (0..self.len() as u32).map(move |position| {
            let links = self.nav.get(self.base.as_ref(), position)?.to_array();
            if position < self.base_len {
                let raw = self.base.as_ref()?.record(position).ok()?;
                return Some(Item {
                    raw: Raw { links, ..raw },
                    json: None,
                });
            }
            let record = self.overlay(position)?;
            let json = self.json_at(record);
            let raw = Raw {
                offset,
                id_hash: 0,
                len: 0,
                sum: 0,
                parent: record.parent,
                facts: [0; 44],
                links,
            };
            offset += json.len() as u64 + 1;
            Some(Item {
                raw,
                json: Some((json, &record.facts)),
            })
        })
    }

    /// The roots, labels and leaf list ends, for the session index writer.
    pub(crate) fn index_tree(&self) -> Tree<'_> {
        self.nav.tree()
    }

    /// The seed of the session index's id hashes: the base's, else a new one.
    pub(crate) fn index_seed(&self) -> u64 {
        self.base
            .as_ref()
            .map_or_else(|| self.hasher.hash_one("session index"), Base::seed)
    }

    pub(crate) fn len(&self) -> usize {
        self.base_len as usize + self.records.len()
    }

    /// How many entries were committed after the base (all of them without one).
    pub(crate) fn unindexed(&self) -> usize {
        self.records.len()
    }

    /// The navigation index.
    pub(super) fn nav(&self) -> &NavIndex {
        &self.nav
    }

    /// The canonical JSON of the entry at `position` (empty if there is none).
    pub(super) fn json_of(&self, position: u32) -> &[u8] {
        self.entry(position).map_or(&[][..], |(json, _)| json)
    }

    /// The id of the entry at `position`.
    pub(super) fn id_of(&self, position: u32) -> &str {
        self.entry(position)
            .map_or("", |(json, facts)| facts.id(json))
    }

    /// The position of the parent of the entry at `position`: `NONE` for a root,
    /// `ORPHAN` for a salvaged orphan.
    pub(super) fn parent_of(&self, position: u32) -> u32 {
        if position < self.base_len {
            let record = self.base.as_ref().map(|base| base.record(position));
            return record
                .and_then(|r| self.noted(r))
                .map_or(NONE, |r| r.parent);
        }
        self.overlay(position).map_or(NONE, |r| r.parent)
    }

    /// The canonical JSON of every committed entry, in commit order.
    #[cfg(test)]
    pub(crate) fn jsons(&self) -> impl Iterator<Item = &[u8]> + Clone {
        (0..self.len() as u32).map(|position| self.json_of(position))
    }

    /// Calls `f` with the canonical JSON and facts of the entries at `positions`
    /// (ascending). Base lines are streamed through one block buffer, not cached, so
    /// a read of many entries costs the answer's memory, not the cache's.
    pub(crate) fn visit(
        &self,
        positions: impl Iterator<Item = u32>,
        mut f: impl FnMut(&[u8], &Facts),
    ) -> Result<(), Error> {
        let mut streamer = self.base.as_ref().map(Base::streamer);
        for position in positions {
            if position < self.base_len {
                let streamer = streamer.as_mut().ok_or_else(faulted)?;
                if self.noted(streamer.read(position, &mut f)).is_none() {
                    return Err(faulted());
                }
            } else {
                let record = self.overlay(position).ok_or_else(faulted)?;
                f(self.json_at(record), &record.facts);
            }
        }
        Ok(())
    }

    /// The length of the canonical JSON of the entry at `position` (0 if unknown).
    fn json_len(&self, position: u32) -> usize {
        match &self.base {
            Some(base) if position < self.base_len => base.line_len(position).unwrap_or(0),
            _ => self.overlay(position).map_or(0, |r| r.len as usize),
        }
    }

    /// `[…]` of the canonical JSON of the entries at `positions`, or of their messages
    /// when `messages` (the path → messages projection of [`PathEntry::message`]).
    fn json_array(&self, positions: &[u32], messages: bool) -> Result<Vec<u8>, Error> {
        let mut out = Vec::new();
        self.push_json_array(&mut out, positions, messages)?;
        Ok(out)
    }

    /// [`Log::json_array`], appended to `out`.
    fn push_json_array(
        &self,
        out: &mut Vec<u8>,
        positions: &[u32],
        messages: bool,
    ) -> Result<(), Error> {
        let len: usize = positions.iter().map(|&p| self.json_len(p) + 1).sum();
        out.reserve(len + 2);
        let mut array = crate::json::ArrayWriter::open(out);
        self.visit(positions.iter().copied(), |json, facts| {
            let entry = PathEntry { json, facts };
            match messages {
                false => array.push(json),
                true => {
                    if let Some(message) = entry.message() {
                        array.push(message);
                    }
                }
            }
        })?;
        array.close();
        Ok(())
    }

    /// Every committed entry as a JSON array, appended to `out`.
    pub(crate) fn push_entries_json(&self, out: &mut Vec<u8>) -> Result<(), Error> {
        let all: Vec<u32> = (0..self.len() as u32).collect();
        self.push_json_array(out, &all, false)
    }

    /// [`Log::push_entries_json`] with each entry passed through `map` (the view's
    /// redaction: per entry, so that an entry without a secret costs only its check).
    pub(crate) fn push_entries_json_mapped(
        &self,
        out: &mut Vec<u8>,
        map: &super::MapEntry<'_>,
    ) -> Result<(), Error> {
        let mut array = crate::json::ArrayWriter::open(out);
        self.visit(0..self.len() as u32, |json, facts| {
            array.push(&map(PathEntry { json, facts }))
        })?;
        array.close();
        Ok(())
    }

    /// The path to `leaf_id` as a JSON array of entries.
    pub(crate) fn path_json(&self, leaf_id: &str) -> Result<Vec<u8>, Error> {
        self.json_array(&self.path(leaf_id)?, false)
    }

    /// The messages on the path to `leaf_id` as a JSON array.
    pub(crate) fn path_messages_json(&self, leaf_id: &str) -> Result<Vec<u8>, Error> {
        self.json_array(&self.path(leaf_id)?, true)
    }

    /// Owned copies of every committed entry.
    pub(crate) fn entries(&self) -> Result<Vec<Entry>, Error> {
        self.owned(0..self.len() as u32)
    }

    /// Owned copies of the entries at `positions`.
    fn owned(&self, positions: impl Iterator<Item = u32>) -> Result<Vec<Entry>, Error> {
        let mut entries = Vec::new();
        let mut failed = None;
        self.visit(positions, |json, facts| match utf8(json) {
            Ok(text) => entries.push(Entry::from_parts(text, facts.clone())),
            Err(e) => failed = failed.take().or(Some(e)),
        })?;
        match failed {
            Some(e) => Err(e),
            None => Ok(entries),
        }
    }

    /// The position of the entry with `leaf_id`: fails with [`Error::UnknownLeaf`]
    /// (or the placeholder of a base read that failed).
    pub(crate) fn position_of(&self, leaf_id: &str) -> Result<u32, Error> {
        self.find(leaf_id).ok_or_else(|| {
            self.take_error().unwrap_or_else(|| Error::UnknownLeaf {
                id: leaf_id.to_owned(),
            })
        })
    }

    /// The error of a path that reaches the salvaged orphan at `orphan`.
    pub(super) fn orphan_error(&self, orphan: u32) -> Error {
        match self.entry(orphan) {
            Some((json, facts)) => checks::missing_parent(
                facts.id(json),
                facts.parent_id(json).unwrap_or_default(),
                None,
            ),
            None => faulted(),
        }
    }

    /// The positions from the root to `leaf_id`, root first. A path that reaches an
    /// orphan (salvage only) fails as a missing parent.
    fn path(&self, leaf_id: &str) -> Result<Vec<u32>, Error> {
        let leaf = self.position_of(leaf_id)?;
        let mut path = Vec::new();
        let mut at = leaf;
        while (at as usize) < self.len() {
            path.push(at);
            at = self.parent_of(at);
        }
        if at == ORPHAN
            && let Some(&orphan) = path.last()
        {
            return Err(self.orphan_error(orphan));
        }
        path.reverse();
        Ok(path)
    }

    /// The path to `leaf_id` as `build_context` reads it ([`PathTail`]): the entries
    /// from the latest compaction's cut to the leaf (all of them when `whole`), the
    /// root found in O(log depth) jumps, and the replayed metadata followed along its
    /// own links. The cost is the tail plus the metadata, not the path.
    pub(crate) fn path_tail(
        &self,
        leaf_id: &str,
        whole: bool,
    ) -> Result<PathTail<'_, impl Iterator<Item = PathEntry<'_>> + Clone>, Error> {
        let leaf = self.position_of(leaf_id)?;
        let root = self.path_root(leaf)?;
        let mut ancestors = self.ancestors(leaf);
        let tail = take_tail(&mut ancestors, whole);
        Ok(PathTail {
            tail,
            above: ancestors,
            root: Some(self.view(root).ok_or_else(faulted)?),
            metadata: self.path_metadata(leaf),
        })
    }

    /// A placeholder error when a base read failed (the store reports the fault).
    fn take_error(&self) -> Option<Error> {
        self.fault.borrow().as_ref().map(|_| faulted())
    }

    /// Owned copies of the entries on the path to `leaf_id`.
    pub(crate) fn path_entries(&self, leaf_id: &str) -> Result<Vec<Entry>, Error> {
        self.owned(self.path(leaf_id)?.into_iter())
    }

    /// The canonical JSON of the entries on the path to `leaf_id`.
    pub(crate) fn path_jsons(&self, leaf_id: &str) -> Result<Vec<&[u8]>, Error> {
        Ok(self
            .path(leaf_id)?
            .into_iter()
            .map(|position| self.json_of(position))
            .collect())
    }

    /// The path to `leaf_id` as borrowed entries, root first.
    pub(crate) fn path_view(&self, leaf_id: &str) -> Result<Vec<PathEntry<'_>>, Error> {
        self.path(leaf_id)?
            .into_iter()
            .map(|position| self.view(position).ok_or_else(faulted))
            .collect()
    }

    pub(super) fn view(&self, position: u32) -> Option<PathEntry<'_>> {
        let (json, facts) = self.entry(position)?;
        Some(PathEntry { json, facts })
    }

    /// The committed entry at `position` and its ancestors, walking up to the root (or
    /// to a salvaged orphan). Lazy: a caller that stops early pays only for what it
    /// walked.
    pub(crate) fn ancestors(&self, position: u32) -> impl Iterator<Item = PathEntry<'_>> + Clone {
        let mut at = position;
        std::iter::from_fn(move || {
            let view = self.view(at)?;
            at = self.parent_of(at);
            Some(view)
        })
    }

    /// Owned messages on the path to `leaf_id`.
    pub(crate) fn path_message_values(&self, leaf_id: &str) -> Result<Vec<Message>, Error> {
        let path = self.path_view(leaf_id)?;
        project_messages(&path)
            .map(|(i, json)| Message::from_path(path[i].facts, json))
            .collect()
    }
}
