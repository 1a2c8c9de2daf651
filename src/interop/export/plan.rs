//! What the Claude Code and Codex writers write from: the leaf's context under the
//! agent's profile, scanned, with what it leaves out of the session counted.

use std::collections::{HashMap, HashSet};

use super::message::{Block, blocks, is_uuid, string_member, text_of, uuid_from};
use super::report::Tally;
use crate::context::{ContextOptions, Profile, build_context};
use crate::entry::{Entry, EntryKind};
use crate::error::Error;
use crate::json::{Kind, MAX_DEPTH, Tape};

/// One message of the context, scanned, with the entry it comes from.
pub(super) struct Item {
    pub tape: Tape,
    /// The entry's id; `None` for a message the agent's rules add (a synthesized result,
    /// Claude Code's "No response requested.") and for the summary message.
    pub entry_id: Option<String>,
    /// Unix milliseconds: the entry's, else the message's, else the previous item's.
    pub millis: f64,
}

/// What the Claude Code and Codex writers write from: the context under the agent's
/// profile, scanned, and facts of the source's root.
pub(super) struct Plan {
    /// The summary message's text when the context starts with one, and the
    /// compaction's summary when it is a string (what Codex keeps as `message`).
    pub summary: Option<SummaryText>,
    pub items: Vec<Item>,
    /// The source session's id (a Claude Code `sessionId`, a Codex `session_meta` id),
    /// when its root records one.
    pub session_id: Option<String>,
    pub cwd: String,
    /// The millisecond timestamp of the first entry.
    pub started: f64,
}

/// The compaction the context starts from.
pub(super) struct SummaryText {
    /// The summary message's text (`None` when the profile sends no summary message).
    pub message: Option<String>,
    /// The compaction's summary when it is a string.
    pub summary: Option<String>,
    pub tokens_before: f64,
    pub millis: f64,
}

impl Plan {
    /// The exported session's id: the source's own when it is a UUID (as Claude Code
    /// and Codex name sessions), else one derived from the first exported entry's id,
    /// so that exporting the same session twice names it the same.
    pub(super) fn session_uuid(&self) -> String {
        self.session_id
            .clone()
            .filter(|id| is_uuid(id))
            .unwrap_or_else(|| {
                let seed = self.items.first().and_then(|i| i.entry_id.clone());
                uuid_from(&seed.unwrap_or_default())
            })
    }

    pub(super) fn new(
        entries: &[Entry],
        leaf: &str,
        profile: Profile,
        tally: &mut Tally,
    ) -> Result<Plan, Error> {
        let options = ContextOptions {
            profile,
            ..ContextOptions::default()
        };
        let context = build_context(entries, leaf, &options)?;
        let path = crate::tree::path_to(entries, leaf)?;
        let by_id: HashMap<&str, &Entry> = entries.iter().map(|e| (e.id(), e)).collect();
        let mut tape = Tape::default();
        let millis_of = |entry: &Entry, tape: &mut Tape| -> f64 {
            if crate::json::scan(entry.json().as_bytes(), MAX_DEPTH, tape).is_err() {
                return 0.0;
            }
            tape.get(0, "timestamp")
                .and_then(|t| std::str::from_utf8(tape.raw(t)).ok()?.parse::<f64>().ok())
                .unwrap_or(0.0)
        };
        // The root's facts: the session's id and working folder.
        let mut session_id = None;
        let mut cwd = String::new();
        let started = path.first().map_or(0.0, |e| millis_of(e, &mut tape));
        if let Some(root) = path.first()
            && root.kind() == EntryKind::Metadata
            && crate::json::scan(root.json().as_bytes(), MAX_DEPTH, &mut tape).is_ok()
        {
            let key = tape.get(0, "key").map(|k| tape.string(k).into_owned());
            if let Some(value) = tape.get(0, "value") {
                let text = |name: &str| {
                    tape.get(value, name)
                        .filter(|&v| tape.nodes[v].kind == Kind::String)
                        .map(|v| tape.string(v).into_owned())
                };
                session_id = match key.as_deref() {
                    Some("claude.transcript") => text("sessionId"),
                    Some("codex.session_meta") | Some("pi.session") => text("id"),
                    _ => None,
                };
                cwd = text("cwd").unwrap_or_default();
            }
        }
        let summary = match &context.compaction {
            None => None,
            Some(used) => {
                let compaction = by_id.get(used.id.as_str());
                let millis = compaction.map_or(0.0, |e| millis_of(e, &mut tape));
                let summary = crate::json::scan(used.summary.as_bytes(), MAX_DEPTH, &mut tape)
                    .ok()
                    .filter(|()| tape.nodes[0].kind == Kind::String)
                    .map(|()| tape.string(0).into_owned());
                let message = match context.has_summary_message() {
                    true => {
                        crate::json::scan(context.messages[0].as_bytes(), MAX_DEPTH, &mut tape)
                            .map_err(|_| Error::internal("a summary message does not scan"))?;
                        Some(text_of(&tape))
                    }
                    false => None,
                };
                Some(SummaryText {
                    message,
                    summary,
                    tokens_before: used.tokens_before.parse().unwrap_or(0.0),
                    millis,
                })
            }
        };
        let offset = usize::from(context.has_summary_message());
        let mut items = Vec::with_capacity(context.kept_entry_ids.len());
        let mut last_millis = summary.as_ref().map_or(started, |s| s.millis);
        for (message, id) in context.messages[offset..]
            .iter()
            .zip(&context.kept_entry_ids)
        {
            let mut tape = Tape::default();
            crate::json::scan(message.as_bytes(), MAX_DEPTH, &mut tape)
                .map_err(|_| Error::internal("a context message does not scan"))?;
            let millis = match id.as_deref().and_then(|id| by_id.get(id)) {
                Some(entry) => millis_of(entry, &mut Tape::default()),
                None => last_millis,
            };
            last_millis = millis;
            items.push(Item {
                tape,
                entry_id: id.clone(),
                millis,
            });
        }
        dropped_from_path(entries.len(), &path, &context, profile, tally);
        Ok(Plan {
            summary,
            items: after_pending_results(items, profile, tally),
            session_id,
            cwd,
            started,
        })
    }
}

/// The roles the agent's format has: a message of another role is sent as user text.
pub(super) fn has_role(profile: Profile, role: &str) -> bool {
    match role {
        "user" | "assistant" | "toolResult" => true,
        "developer" | "system" => profile == Profile::Codex,
        _ => false,
    }
}

/// `items` with each message of a role the agent lacks that comes between tool calls
/// and their results moved after the results: sent as user text there, it would
/// start a turn and leave the calls unanswered (Codex writes its developer messages
/// there; Claude Code refuses text between a call and its result).
fn after_pending_results(items: Vec<Item>, profile: Profile, tally: &mut Tally) -> Vec<Item> {
    let mut out = Vec::with_capacity(items.len());
    let mut deferred = Vec::new();
    let mut pending: HashSet<String> = HashSet::new();
    for item in items {
        let role = string_member(&item.tape, 0, "role").unwrap_or_default();
        match role.as_str() {
            "assistant" => {
                for block in blocks(&item.tape) {
                    if let Block::ToolCall { id, .. } = block {
                        pending.insert(id);
                    }
                }
                out.push(item);
            }
            "toolResult" => {
                if let Some(call) = string_member(&item.tape, 0, "toolCallId") {
                    pending.remove(&call);
                }
                out.push(item);
                if pending.is_empty() {
                    out.append(&mut deferred);
                }
            }
            "user" => {
                // A new turn: calls still without a result stay so.
                pending.clear();
                out.append(&mut deferred);
                out.push(item);
            }
            role if !has_role(profile, role) && !pending.is_empty() => {
                tally.converted(
                    "order",
                    "a message of a role the agent lacks, between tool calls and their results, is written after the results",
                );
                deferred.push(item);
            }
            _ => out.push(item),
        }
    }
    out.append(&mut deferred);
    out
}

/// Counts what of the session the export leaves out: other branches, metadata, and
/// the messages the agent does not send (before the compaction, or left out by its
/// rules).
fn dropped_from_path(
    total: usize,
    path: &[Entry],
    context: &crate::context::Context,
    profile: Profile,
    tally: &mut Tally,
) {
    let kept: HashSet<&str> = context
        .kept_entry_ids
        .iter()
        .flatten()
        .map(String::as_str)
        .collect();
    let compaction_at = context
        .compaction
        .as_ref()
        .and_then(|c| path.iter().position(|e| e.id() == c.id));
    let off_path = (total - path.len()) as u64;
    Tally::count(
        &mut tally.dropped,
        "branch",
        "an entry off the path to the leaf: the agent resumes one linear history",
        off_path,
    );
    let mut tape = Tape::default();
    for (i, entry) in path.iter().enumerate() {
        match entry.kind() {
            EntryKind::Metadata => {
                let label = crate::json::scan(entry.json().as_bytes(), MAX_DEPTH, &mut tape)
                    .is_ok()
                    && tape
                        .get(0, "key")
                        .is_some_and(|k| tape.string(k) == "session.label");
                match label {
                    true => tally.dropped("label", "the agent's format has no labels"),
                    false => tally.dropped(
                        "metadata",
                        "the agent's format has no place for libsession metadata",
                    ),
                }
            }
            EntryKind::Compaction if Some(i) != compaction_at => tally.dropped(
                "compaction",
                "an earlier compaction: the agent resumes from the latest one",
            ),
            EntryKind::Compaction => {}
            EntryKind::Message(_) if kept.contains(entry.id()) => {}
            EntryKind::Message(_) if compaction_at.is_some_and(|at| i < at) => tally.dropped(
                "message",
                "before the compaction: the agent resumes from its summary",
            ),
            EntryKind::Message(_) => tally.dropped(
                "message",
                match profile {
                    Profile::ClaudeCode => {
                        "left out as Claude Code leaves it out on resume (a reply part whose calls have no result, whitespace-only text)"
                    }
                    _ => "left out as Codex leaves it out on resume (an output without its call)",
                },
            ),
        }
    }
}
