//! The page's outline of the session: what its script needs to draw the tree and choose
//! a branch (which entry is whose parent, which tool result answers which call, what a
//! compaction keeps) without parsing the entries, so that a first paint parses only the
//! entries it shows.
//!
//! It is read from each entry's facts as the entries are written (the store parsed
//! them when it read the file), and written beside them as JSON:
//!
//! ```text
//! {"sizes":   [bytes of each entry's JSON in the entries' array],
//!  "parents": [for each entry: its position minus its parent's, 0 for a root],
//!  "calls":   [position, n, key1 … keyN, …]    each message with tool calls,
//!  "results": [position, key, …]              each tool result,
//!  "compactions": [position, kept, …]         kept: the position of its first kept
//!                                             entry, -1 when null, -2 when unknown,
//!  "leaf": position|-1, "latest": position|-1}
//! ```
//!
//! A key stands for a tool call id (the same id, the same key): the page pairs calls
//! with results by key exactly as it would by id.

use std::cell::RefCell;
use std::collections::HashMap;

use crate::entry::Body;
use crate::json::{Object, array};
use crate::tree::PathEntry;
use crate::tree::checks::{Ancestor, ToolReader};

/// The outline, built one entry at a time (in commit order, so a parent comes before
/// its children).
#[derive(Default)]
pub(super) struct Outline {
    /// The position of each entry by id.
    positions: HashMap<String, u32>,
    sizes: Vec<u32>,
    parents: Vec<u32>,
    calls: Vec<u32>,
    results: Vec<u32>,
    /// Each compaction's position and the id of its first kept entry.
    compactions: Vec<(u32, Option<String>)>,
    keys: HashMap<String, u32>,
    reader: ToolReader,
}

impl Outline {
    /// Records `entry`, written to the page as `size` bytes.
    pub(super) fn add(&mut self, entry: &PathEntry<'_>, size: usize) {
        let at = self.parents.len() as u32;
        self.sizes.push(u32::try_from(size).unwrap_or(u32::MAX));
        let parent = entry
            .facts
            .parent_id(entry.json)
            .and_then(|id| self.positions.get(id))
            .map_or(0, |&p| at - p);
        self.parents.push(parent);
        self.positions.insert(entry.id().to_owned(), at);
        match &entry.facts.body {
            Body::Message { .. } => {
                // A committed message reads; one that did not would have no tool facts.
                let facts = entry.tool_facts(&mut self.reader).unwrap_or_default();
                if !facts.calls.is_empty() {
                    self.calls.push(at);
                    self.calls.push(facts.calls.len() as u32);
                    for id in &facts.calls {
                        let key = self.key(id);
                        self.calls.push(key);
                    }
                }
                if let Some(id) = &facts.result_for {
                    let key = self.key(id);
                    self.results.extend([at, key]);
                }
            }
            Body::Compaction { first_kept, .. } => self
                .compactions
                .push((at, first_kept.as_ref().map(|t| t.of(entry.json).to_owned()))),
            Body::Metadata { .. } => {}
        }
    }

    /// Records that the entry at `at` is written as `size` bytes after all (redacted).
    pub(super) fn set_size(&mut self, at: usize, size: usize) {
        if let Some(slot) = self.sizes.get_mut(at) {
            *slot = u32::try_from(size).unwrap_or(u32::MAX);
        }
    }

    fn key(&mut self, id: &str) -> u32 {
        let next = self.keys.len() as u32;
        *self.keys.entry(id.to_owned()).or_insert(next)
    }

    /// The position of the entry `id`, -1 for none.
    fn position(&self, id: Option<&str>) -> i64 {
        id.and_then(|id| self.positions.get(id))
            .map_or(-1, |&p| i64::from(p))
    }

    /// The outline's JSON, with the positions of the page's `leaf` and `latest`.
    pub(super) fn to_json(&self, leaf: Option<&str>, latest: Option<&str>) -> Vec<u8> {
        let mut compactions = Vec::with_capacity(self.compactions.len() * 2);
        for (at, kept) in &self.compactions {
            compactions.push(i64::from(*at));
            compactions.push(match kept {
                None => -1,
                Some(id) => match self.positions.get(id.as_str()) {
                    Some(&p) => i64::from(p),
                    None => -2,
                },
            });
        }
        Object::new()
            .raw("sizes", &numbers(&self.sizes))
            .raw("parents", &numbers(&self.parents))
            .raw("calls", &numbers(&self.calls))
            .raw("results", &numbers(&self.results))
            .raw("compactions", &numbers(&compactions))
            .number("leaf", self.position(leaf))
            .number("latest", self.position(latest))
            .finish_bytes()
    }
}

/// A JSON array of integers, through the one writer.
fn numbers<N: std::fmt::Display>(list: &[N]) -> String {
    array(list.iter().map(ToString::to_string))
}

/// An [`Outline`] written to by the store's per-entry callback (an `Fn`).
pub(super) type SharedOutline = RefCell<Outline>;
