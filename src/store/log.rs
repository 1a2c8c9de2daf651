//! The committed entries of a store and their id index.
//!
//! Every committed entry's canonical JSON lives back to back in one arena, so reads
//! copy bytes instead of re-serialising, and memory stays close to the file's size.
//! Each entry keeps a small record: where its text is, its facts (id, parent, kind,
//! message span) as positions in that text, and the position of its parent.
//!
//! Entries commit only after their parent, so every parent link points to an earlier
//! position: walking from a leaf visits each ancestor once, and a store-level path
//! costs time in proportion to its length, not to the number of entries.

use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};

use super::index::Hash64;
use super::nav::NavIndex;
use crate::entry::{Body, Entry, Facts, Message, utf8};
use crate::error::Error;
use crate::nav::{LABEL_KEY, read_label};
use crate::tree::{PathEntry, project_messages};

/// No position: the parent of a root, the end of a hash chain.
pub(crate) const NONE: u32 = u32::MAX;
/// The parent of an entry loaded by salvage whose parent is missing.
pub(crate) const ORPHAN: u32 = u32::MAX - 1;

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
    arena: Vec<u8>,
    records: Vec<Record>,
    /// Id hash → position of the last entry with that hash. Ids themselves are read
    /// from the arena, so the index holds no copy of them.
    by_hash: HashMap<u64, u32>,
    hasher: RandomState,
    /// Child links, depth, leaves, roots and labels (docs/contract.md §8), kept per commit.
    nav: NavIndex,
    /// The committed entries as the lines a file store writes (`json + "\n"`), back to
    /// back: their total size and running checksum. When the file is exactly those
    /// lines, they describe its committed prefix (the session index relies on it).
    line_bytes: u64,
    line_hash: Hash64,
}

impl Log {
    fn json_at(&self, record: &Record) -> &[u8] {
        self.arena
            .get(record.start..record.start + record.len as usize)
            .unwrap_or_default()
    }

    /// The position of the entry with `id`, whose hash is `hash`.
    fn find_hashed(&self, id: &str, hash: u64) -> Option<u32> {
        let mut at = *self.by_hash.get(&hash)?;
        while let Some(record) = self.records.get(at as usize) {
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
        let hash = hashes.id;
        if self.find_hashed(id, hash).is_some() {
            return Err(Error::DuplicateId {
                id: id.to_owned(),
                line,
            });
        }
        let (Some(parent_id), Some(parent_hash)) = (parent_id, hashes.parent) else {
            return Ok(Admitted { hash, parent: NONE });
        };
        match self.find_hashed(parent_id, parent_hash) {
            Some(parent) => Ok(Admitted { hash, parent }),
            None => Err(Error::MissingParent {
                child_id: id.to_owned(),
                parent_id: parent_id.to_owned(),
                line,
            }),
        }
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
        let position = self.records.len();
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
        let start = self.arena.len();
        self.arena.extend_from_slice(json);
        self.line_hash.update(json);
        self.line_hash.update(b"\n");
        self.line_bytes += json.len() as u64 + 1;
        self.nav.add(seq, admitted.parent);
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

    /// The total size of the committed entries' lines (`json + "\n"` each).
    pub(crate) fn line_bytes(&self) -> u64 {
        self.line_bytes
    }

    /// The checksum of those lines, back to back.
    pub(crate) fn line_hash(&self) -> u64 {
        self.line_hash.finish()
    }

    /// The canonical JSON and facts of every committed entry, in commit order.
    pub(crate) fn jsons_and_facts(&self) -> impl Iterator<Item = (&[u8], &Facts)> {
        self.records.iter().map(|r| (self.json_at(r), &r.facts))
    }

    pub(crate) fn len(&self) -> usize {
        self.records.len()
    }

    /// The navigation index.
    pub(super) fn nav(&self) -> &NavIndex {
        &self.nav
    }

    /// The canonical JSON of the entry at `position` (empty if there is none).
    pub(super) fn json_of(&self, position: u32) -> &[u8] {
        self.records
            .get(position as usize)
            .map_or(&[][..], |r| self.json_at(r))
    }

    /// The id of the entry at `position`.
    pub(super) fn id_of(&self, position: u32) -> &str {
        self.records
            .get(position as usize)
            .map_or("", |r| r.facts.id(self.json_at(r)))
    }

    /// The position of the parent of the entry at `position`: `NONE` for a root,
    /// `ORPHAN` for a salvaged orphan.
    pub(super) fn parent_of(&self, position: u32) -> u32 {
        self.records
            .get(position as usize)
            .map_or(NONE, |r| r.parent)
    }

    /// The canonical JSON of every committed entry, in commit order.
    pub(crate) fn jsons(&self) -> impl Iterator<Item = &[u8]> + Clone {
        self.records.iter().map(|r| self.json_at(r))
    }

    /// Owned copies of every committed entry.
    pub(crate) fn entries(&self) -> Result<Vec<Entry>, Error> {
        self.records.iter().map(|r| self.entry_at(r)).collect()
    }

    fn entry_at(&self, record: &Record) -> Result<Entry, Error> {
        Ok(Entry::from_parts(
            utf8(self.json_at(record))?,
            record.facts.clone(),
        ))
    }

    /// The records from the root to `leaf_id`, root first. A path that reaches an
    /// orphan (salvage only) fails as a missing parent.
    fn path(&self, leaf_id: &str) -> Result<Vec<&Record>, Error> {
        let Some(leaf) = self.find(leaf_id) else {
            return Err(Error::UnknownLeaf {
                id: leaf_id.to_owned(),
            });
        };
        let mut path = Vec::new();
        let mut at = leaf;
        while let Some(record) = self.records.get(at as usize) {
            path.push(record);
            at = record.parent;
        }
        if at == ORPHAN
            && let Some(orphan) = path.last()
        {
            let json = self.json_at(orphan);
            return Err(Error::MissingParent {
                child_id: orphan.facts.id(json).to_owned(),
                parent_id: orphan.facts.parent_id(json).unwrap_or_default().to_owned(),
                line: None,
            });
        }
        path.reverse();
        Ok(path)
    }

    /// Owned copies of the entries on the path to `leaf_id`.
    pub(crate) fn path_entries(&self, leaf_id: &str) -> Result<Vec<Entry>, Error> {
        self.path(leaf_id)?
            .into_iter()
            .map(|r| self.entry_at(r))
            .collect()
    }

    /// The canonical JSON of the entries on the path to `leaf_id`.
    pub(crate) fn path_jsons(&self, leaf_id: &str) -> Result<Vec<&[u8]>, Error> {
        Ok(self
            .path(leaf_id)?
            .into_iter()
            .map(|r| self.json_at(r))
            .collect())
    }

    /// The path to `leaf_id` as borrowed entries, root first.
    pub(crate) fn path_view(&self, leaf_id: &str) -> Result<Vec<PathEntry<'_>>, Error> {
        Ok(self
            .path(leaf_id)?
            .into_iter()
            .map(|r| self.view(r))
            .collect())
    }

    fn view<'a>(&'a self, record: &'a Record) -> PathEntry<'a> {
        PathEntry {
            json: self.json_at(record),
            facts: &record.facts,
        }
    }

    /// The committed entry at `position` and its ancestors, walking up to the root (or
    /// to a salvaged orphan). Lazy: a caller that stops early pays only for what it
    /// walked.
    pub(crate) fn ancestors(&self, position: u32) -> impl Iterator<Item = PathEntry<'_>> {
        let mut at = position;
        std::iter::from_fn(move || {
            let record = self.records.get(at as usize)?;
            at = record.parent;
            Some(self.view(record))
        })
    }

    /// The canonical JSON of the messages on the path to `leaf_id`.
    pub(crate) fn path_messages(&self, leaf_id: &str) -> Result<Vec<&[u8]>, Error> {
        let path = self.path_view(leaf_id)?;
        Ok(project_messages(&path).map(|(_, json)| json).collect())
    }

    /// Owned messages on the path to `leaf_id`.
    pub(crate) fn path_message_values(&self, leaf_id: &str) -> Result<Vec<Message>, Error> {
        let path = self.path_view(leaf_id)?;
        project_messages(&path)
            .map(|(i, json)| Message::from_path(path[i].facts, json))
            .collect()
    }
}
