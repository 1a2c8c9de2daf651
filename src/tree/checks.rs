//! The tree rules, one function each, in one home: the pure functions over a slice
//! ([`super::IdIndex`]), the store's replay and append path (`store/log.rs`,
//! `store/replay.rs`, `store/mod.rs`), the importer (`interop/written.rs`) and the
//! context all call these (docs/contract.md §3, §6.2, §6.3). Each caller looks ids up in
//! its own index and hands the answer to the rule; the rule decides and names the
//! facts of the failure.
//!
//! The rules: an id names one entry ([`id_is_new`]); a parent is committed before its
//! child ([`parent_is_committed`]); a path never revisits an entry ([`not_revisited`]);
//! the entry a label or a resume-leaf record names is committed ([`target_is_committed`]);
//! a compaction's `firstKeptEntryId` is a valid cut ([`check_compaction`]). The rules on
//! one entry alone (a compaction is never a root and never keeps itself) are the
//! parser's, in `entry/validate.rs`.

use std::collections::HashSet;

use crate::entry::{Body, Role, Tools};
use crate::error::{CompactionFault, Error, Hint};
use crate::json::{self, MAX_DEPTH, Tape};
use crate::tree::PathEntry;

/// An id names one entry: `taken` says whether an entry with `id` is already
/// committed (or, for a slice, seen). `line` is the physical line when replaying a file.
pub(crate) fn id_is_new(id: &str, taken: bool, line: Option<u64>) -> Result<(), Error> {
    match taken {
        true => Err(Error::DuplicateId {
            id: id.to_owned(),
            line,
        }),
        false => Ok(()),
    }
}

/// A parent is committed before its child: `found` is what the caller's index holds
/// for `parent_id` (a position), returned when it is there.
pub(crate) fn parent_is_committed<P>(
    child_id: &str,
    parent_id: &str,
    found: Option<P>,
    line: Option<u64>,
) -> Result<P, Error> {
    found.ok_or_else(|| missing_parent(child_id, parent_id, line))
}

/// The error of a child whose parent is not committed: [`parent_is_committed`]'s, and a
/// salvaged orphan's when a path reaches it.
pub(crate) fn missing_parent(child_id: &str, parent_id: &str, line: Option<u64>) -> Error {
    Error::MissingParent {
        child_id: child_id.to_owned(),
        parent_id: parent_id.to_owned(),
        line,
    }
}

/// A path never revisits an entry: `seen` says whether the walk from the leaf has
/// already passed the entry with `id`.
pub(crate) fn not_revisited(id: &str, seen: bool) -> Result<(), Error> {
    match seen {
        true => Err(Error::Cycle { id: id.to_owned() }),
        false => Ok(()),
    }
}

/// The entry a label or a resume-leaf record names is committed (docs/contract.md §6.3):
/// `found` says whether the index holds `target`.
pub(crate) fn target_is_committed(target: &str, found: bool) -> Result<(), Error> {
    match found {
        true => Ok(()),
        false => Err(Error::UnknownLeaf {
            id: target.to_owned(),
        }),
    }
}

/// Reads the tool facts of messages, reusing one scan buffer.
#[derive(Default)]
pub(crate) struct ToolReader {
    tape: Tape,
}

/// What a message says about tool calls: the ids it calls, or the id it answers.
#[derive(Default)]
pub(crate) struct ToolFacts {
    pub(crate) calls: Vec<String>,
    pub(crate) result_for: Option<String>,
}

impl ToolReader {
    /// The tool facts of a message entry. A result's id and whether an assistant
    /// message calls tools were recorded when it was parsed; only a message that calls
    /// tools is read again, for its call ids.
    pub(crate) fn read(
        &mut self,
        entry: &PathEntry<'_>,
        message: &[u8],
    ) -> Result<ToolFacts, Error> {
        let mut facts = ToolFacts::default();
        match &entry.facts.body {
            Body::Message {
                tools: Tools::Result(call),
                ..
            } => facts.result_for = Some(call.of(entry.json).to_owned()),
            Body::Message {
                tools: Tools::Calls,
                ..
            } => {
                json::scan(message, MAX_DEPTH, &mut self.tape)
                    .map_err(|_| Error::internal("a committed message does not scan"))?;
                let tape = &self.tape;
                if let Some(content) = tape.get(0, "content") {
                    for block in tape.elements(content) {
                        let is_call = tape.get(block, "type").map(|t| tape.string(t)).as_deref()
                            == Some("toolCall");
                        if is_call && let Some(id) = tape.get(block, "id") {
                            facts.calls.push(tape.string(id).into_owned());
                        }
                    }
                }
            }
            _ => {}
        }
        Ok(facts)
    }
}

/// What the rule of a compaction's cut reads of an ancestor: its id, its role when it
/// is a message, and a message's tool facts. A store's path entry is one; the
/// importer's compact record of an entry it wrote is another, so that the rule has
/// one implementation.
pub(crate) trait Ancestor {
    fn id(&self) -> &str;
    /// `None` for an entry that is not a message.
    fn role(&self) -> Option<Role>;
    /// The tool facts of a message (empty for any other entry).
    fn tool_facts(&self, reader: &mut ToolReader) -> Result<ToolFacts, Error>;
}

impl Ancestor for PathEntry<'_> {
    fn id(&self) -> &str {
        PathEntry::id(self)
    }

    fn role(&self) -> Option<Role> {
        self.facts.role()
    }

    fn tool_facts(&self, reader: &mut ToolReader) -> Result<ToolFacts, Error> {
        match self.message() {
            Some(message) => reader.read(self, message),
            None => Ok(ToolFacts::default()),
        }
    }
}

/// The rule of a compaction's cut (docs/contract.md §6.2), over its ancestors from its parent up
/// to the root, walked lazily: the walk stops as soon as the answer is known.
/// `exists` says whether an id names any entry at all.
pub(crate) fn check_compaction<A: Ancestor>(
    compaction_id: &str,
    first_kept: Option<&str>,
    mut ancestors: impl Iterator<Item = A>,
    exists: &dyn Fn(&str) -> bool,
) -> Result<(), Error> {
    let fail = |reason| {
        Err(Error::InvalidCompaction {
            compaction_id: compaction_id.to_owned(),
            first_kept_entry_id: first_kept.map(str::to_owned),
            reason,
            hint: Hint::None,
        })
    };
    let mut reader = ToolReader::default();
    let Some(first) = first_kept else {
        return check_nothing_pending(ancestors, &mut reader, fail);
    };
    if !exists(first) {
        return fail(CompactionFault::UnknownEntry);
    }
    // Walk up to F, remembering the earliest message seen at or after it: the first
    // message the compaction keeps.
    let mut walked = Vec::new();
    let mut first_kept_role = None;
    let mut found = false;
    for entry in ancestors.by_ref() {
        if let Some(role) = entry.role() {
            first_kept_role = Some(role);
        }
        let is_first = entry.id() == first;
        walked.push(entry);
        if is_first {
            found = true;
            break;
        }
    }
    if !found {
        return fail(CompactionFault::NotOnPath);
    }
    match first_kept_role {
        // Nothing lies between F and the compaction: it keeps nothing from before it,
        // and the rule for null applies.
        None => check_nothing_pending(walked.into_iter().chain(ancestors), &mut reader, fail),
        Some(Role::User) => Ok(()),
        // Any other first kept message is a cut point only as the first message of
        // the whole path.
        Some(_) => match ancestors.any(|e| e.role().is_some()) {
            true => fail(CompactionFault::NotInteractionStart),
            false => Ok(()),
        },
    }
}

/// The rule for keeping nothing: the last interaction before the compaction (from its
/// last `user` message, or the path's first message, to the parent) has no unanswered
/// tool call. Walks up from the parent only to the start of that interaction.
fn check_nothing_pending<A: Ancestor>(
    ancestors: impl Iterator<Item = A>,
    reader: &mut ToolReader,
    fail: impl Fn(CompactionFault) -> Result<(), Error>,
) -> Result<(), Error> {
    // Walking backwards, a result is seen before its call.
    let mut answered: HashSet<String> = HashSet::new();
    for entry in ancestors {
        let Some(role) = entry.role() else {
            continue;
        };
        let facts = entry.tool_facts(reader)?;
        if let Some(id) = facts.result_for {
            answered.insert(id);
        }
        if facts.calls.iter().any(|call| !answered.contains(call)) {
            return fail(CompactionFault::PendingToolCalls);
        }
        if role == Role::User {
            break;
        }
    }
    Ok(())
}
