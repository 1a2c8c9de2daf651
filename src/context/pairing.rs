//! Interactions and their tool pairing (docs/contract.md §7.1, §7.2): the kept
//! messages, the runs they form, the defects of a run and what is done about each.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

use super::profile::pi::PI_NO_RESULT;
use super::{ContextOptions, Defect, OnDefect, Profile, SYNTHESIZED_TEXT};
use crate::entry::Role;
use crate::error::{Error, PairingDefect};
use crate::json::{self, MAX_DEPTH, Object, Tape};
use crate::tree::PathEntry;
use crate::tree::checks::ToolFacts;
/// One kept message: its place on the path and what it says about tools.
pub(super) struct Kept<'a> {
    pub(super) entry: PathEntry<'a>,
    pub(super) message: &'a [u8],
    pub(super) role: Role,
    pub(super) tools: ToolFacts,
}

/// A run of kept messages, `[start, end)` in the kept list.
pub(super) struct Run {
    pub(super) start: usize,
    pub(super) end: usize,
    pub(super) cut_point: bool,
    pub(super) defects: Vec<(usize, Defect)>,
    /// Each synthetic result, the kept index it follows and the kept index of the
    /// message holding its call, in kept order.
    pub(super) synthesized: Vec<(usize, String, usize)>,
    /// The kept indices of messages a profile leaves out.
    pub(super) dropped: HashSet<usize>,
    pub(super) tokens: f64,
}

/// One message of a run: its JSON, its entry (`None` for a synthetic result) and the
/// entry an estimator failure names.
pub(super) struct Item<'r> {
    pub(super) text: Cow<'r, str>,
    pub(super) entry: Option<&'r str>,
    pub(super) names: &'r str,
}

impl Run {
    /// The run's messages in order.
    pub(super) fn items<'k>(&self, kept: &'k [(usize, Kept<'_>)]) -> Result<Vec<Item<'k>>, Error> {
        let mut items = Vec::with_capacity(self.end - self.start + self.synthesized.len());
        let mut synthesized = self.synthesized.iter().peekable();
        for (k, (_, m)) in kept.iter().enumerate().take(self.end).skip(self.start) {
            let id = m.entry.id();
            if !self.dropped.contains(&k) {
                items.push(Item {
                    text: Cow::Borrowed(crate::entry::utf8(m.message)?),
                    entry: Some(id),
                    names: id,
                });
            }
            while let Some((_, text, holder)) = synthesized.next_if(|(after, ..)| *after == k) {
                items.push(Item {
                    text: Cow::Owned(text.clone()),
                    entry: None,
                    names: kept[*holder].1.entry.id(),
                });
            }
        }
        Ok(items)
    }
}

/// Where a synthetic result goes.
#[derive(Clone, Copy)]
pub(super) enum Placement {
    /// Right after the message holding the call (Codex).
    AfterCall,
    /// After the last message of the reply holding the call: the run of assistant
    /// messages it belongs to (`onDefect: "synthesize"`).
    AfterReply,
    /// After the results that follow the reply, before the next assistant or user
    /// message (pi).
    BeforeNextTurn,
}

impl Placement {
    /// Whether a synthetic result placed after one message moves past the next, of
    /// role `next`.
    pub(super) fn passes(self, next: Role) -> bool {
        match self {
            Placement::AfterCall => false,
            Placement::AfterReply => next == Role::Assistant,
            Placement::BeforeNextTurn => next != Role::Assistant && next != Role::User,
        }
    }

    /// For each message of a run (its roles in order), the index of the message its
    /// synthetic results follow: itself, or the last of the messages after it that
    /// [`Placement::passes`] lets it move past. Computed from the end in one pass, so
    /// that a run with many unanswered calls is read once, not once per call.
    pub(super) fn targets(self, roles: &[Role]) -> Vec<usize> {
        let mut targets: Vec<usize> = (0..roles.len()).collect();
        for at in (0..roles.len().saturating_sub(1)).rev() {
            if self.passes(roles[at + 1]) {
                targets[at] = targets[at + 1];
            }
        }
        targets
    }
}

/// What is done about one pairing defect.
pub(super) enum Act<'o> {
    Fail,
    Skip,
    Keep,
    Drop,
    /// Leave out the message holding the call when none of its calls has a result
    /// (Claude Code); keep it otherwise.
    DropCaller,
    Synthesize(Placement, &'o str),
}

/// The rule for each defect: `onDefect`, or, when it is left at `"error"` and a profile
/// is given, that agent's.
pub(super) fn act<'o>(
    options: &'o ContextOptions,
    profile: Option<Profile>,
    reason: PairingDefect,
) -> Act<'o> {
    let missing = reason == PairingDefect::MissingResult;
    match (options.on_defect, profile) {
        (OnDefect::Error, Some(Profile::Pi)) if missing => {
            Act::Synthesize(Placement::BeforeNextTurn, PI_NO_RESULT)
        }
        (OnDefect::Error, Some(Profile::Codex)) if missing => {
            Act::Synthesize(Placement::AfterCall, SYNTHESIZED_TEXT)
        }
        (OnDefect::Error, Some(Profile::Codex)) if reason != PairingDefect::DuplicateToolCall => {
            Act::Drop
        }
        (OnDefect::Error, Some(Profile::ClaudeCode)) if missing => Act::DropCaller,
        (OnDefect::Error, Some(_)) => Act::Keep,
        (OnDefect::Error, None) => Act::Fail,
        (OnDefect::Skip, _) => Act::Skip,
        (OnDefect::Keep, _) => Act::Keep,
        (OnDefect::Synthesize, _) if missing => {
            Act::Synthesize(Placement::AfterReply, &options.synthesized_text)
        }
        (OnDefect::Synthesize, _) => Act::Fail,
    }
}

/// The pairing defects of one interaction, each with its index in the kept list (for
/// "the defect whose entry comes first in path order").
pub(super) fn pairing_defects(run: &[(usize, Kept<'_>)], offset: usize) -> Vec<(usize, Defect)> {
    let start_id = run.first().map(|(_, m)| m.entry.id()).unwrap_or_default();
    let defect = |k: usize, m: &Kept<'_>, call: &str, reason| {
        (
            offset + k,
            Defect {
                interaction_start_id: start_id.to_owned(),
                entry_id: m.entry.id().to_owned(),
                tool_call_id: call.to_owned(),
                reason,
                action: None,
            },
        )
    };
    // Each call: the index of the message holding it, and whether it is answered.
    let mut calls: HashMap<&str, (usize, bool)> = HashMap::new();
    let mut order: Vec<&str> = Vec::new();
    let mut found = Vec::new();
    for (k, (_, m)) in run.iter().enumerate() {
        if m.role == Role::Assistant {
            for call in &m.tools.calls {
                if calls.contains_key(call.as_str()) {
                    found.push(defect(k, m, call, PairingDefect::DuplicateToolCall));
                } else {
                    calls.insert(call, (k, false));
                    order.push(call);
                }
            }
        }
        if let Some(id) = &m.tools.result_for {
            match calls.get_mut(id.as_str()) {
                None => found.push(defect(k, m, id, PairingDefect::OrphanResult)),
                Some((_, true)) => found.push(defect(k, m, id, PairingDefect::DuplicateToolResult)),
                Some((_, answered)) => *answered = true,
            }
        }
    }
    for call in order {
        if let Some(&(k, false)) = calls.get(call) {
            found.push(defect(k, &run[k].1, call, PairingDefect::MissingResult));
        }
    }
    found.sort_by_key(|(k, _)| *k);
    found
}

/// What a synthetic result needs of the message holding its call, read once for all
/// of that message's unanswered calls: each call's name (of the first `toolCall` block
/// with its id) and the message's timestamp (its own member, or its entry's when it
/// has none).
pub(super) struct CallerFacts {
    /// The caller's index in the kept list.
    pub(super) at: usize,
    pub(super) names: HashMap<String, String>,
    pub(super) timestamp: String,
}

impl CallerFacts {
    pub(super) fn read(tape: &mut Tape, at: usize, m: &Kept<'_>) -> Result<CallerFacts, Error> {
        json::scan(m.message, MAX_DEPTH, tape)
            .map_err(|_| Error::internal("a committed message does not scan"))?;
        let tape = &*tape;
        let mut names = HashMap::new();
        for block in tape
            .get(0, "content")
            .into_iter()
            .flat_map(|content| tape.elements(content))
        {
            if tape.get(block, "type").map(|t| tape.string(t)).as_deref() != Some("toolCall") {
                continue;
            }
            let Some(id) = tape.get(block, "id") else {
                continue;
            };
            names
                .entry(tape.string(id).into_owned())
                .or_insert_with(|| {
                    tape.get(block, "name")
                        .map(|name| tape.string(name).into_owned())
                        .unwrap_or_default()
                });
        }
        let timestamp = match tape.get(0, "timestamp") {
            Some(t) => tape.raw(t),
            None => m.entry.facts.timestamp.bytes(m.entry.json),
        };
        Ok(CallerFacts {
            at,
            names,
            timestamp: crate::entry::utf8(timestamp)?.to_owned(),
        })
    }

    /// The result `onDefect: "synthesize"` writes for the unanswered call `call_id`:
    /// `{"role":"toolResult","toolCallId","toolName","content":[text],"isError":true,
    /// "timestamp","synthetic":true}`.
    pub(super) fn synthetic_result(&self, call_id: &str, text: &str) -> String {
        let name = self.names.get(call_id).map_or("", String::as_str);
        let content = Object::new()
            .string("type", "text")
            .string("text", text)
            .finish();
        Object::new()
            .string("role", "toolResult")
            .string("toolCallId", call_id)
            .string("toolName", name)
            .raw("content", &format!("[{content}]"))
            .boolean("isError", true)
            .raw("timestamp", &self.timestamp)
            .boolean("synthetic", true)
            .finish()
    }
}
