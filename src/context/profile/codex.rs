//! Codex's send-time rules (docs/contract.md §12): tool searches paired as Codex pairs
//! them, and the history Codex rebuilds at a compaction without a replacement history.

use std::borrow::Cow;
use std::collections::HashSet;

use super::super::pairing::Item;
use super::super::summary::summary_message;
use super::super::{ContextOptions, DROPPED, Defect, SYNTHESIZED};
use super::with_content;
use crate::entry::{Body, Role};
use crate::error::{Error, PairingDefect};
use crate::json::{self, MAX_DEPTH, Object, Tape};
use crate::tree::PathEntry;
/// Codex's tool searches, kept whole as `codexItem` on assistant messages with no
/// content, paired as Codex pairs them when it resumes: a `tool_search_call` without a
/// `tool_search_output` gets an empty one right after it, and an output without a call
/// is left out. Each is listed as a defect (`missing_result` synthesized,
/// `orphan_result` dropped).
pub(in crate::context) fn pair_tool_searches(
    runs: &mut [Vec<Item<'_>>],
    tape: &mut Tape,
) -> Vec<Defect> {
    // (run, index, kind, call id) of every tool search item.
    let mut found: Vec<(usize, usize, bool, String)> = Vec::new();
    for (r, items) in runs.iter().enumerate() {
        for (i, item) in items.iter().enumerate() {
            if !item.text.contains("\"tool_search_") {
                continue;
            }
            if json::scan(item.text.as_bytes(), MAX_DEPTH, tape).is_err() {
                continue;
            }
            let Some(codex) = tape.get(0, "codexItem") else {
                continue;
            };
            let kind = tape.get(codex, "type").map(|v| tape.string(v).into_owned());
            let call = tape
                .get(codex, "call_id")
                .map(|v| tape.string(v).into_owned());
            if let (Some(kind), Some(call)) = (kind, call) {
                match kind.as_str() {
                    "tool_search_call" => found.push((r, i, true, call)),
                    "tool_search_output" => found.push((r, i, false, call)),
                    _ => {}
                }
            }
        }
    }
    let calls: HashSet<&str> = found.iter().filter(|f| f.2).map(|f| f.3.as_str()).collect();
    let outputs: HashSet<&str> = found
        .iter()
        .filter(|f| !f.2)
        .map(|f| f.3.as_str())
        .collect();
    let mut defects = Vec::new();
    let mut found = found.iter().peekable();
    // Each run with a tool search is written anew, in one pass: inserting or removing
    // in place would move the rest of the run once per item.
    for (r, items) in runs.iter_mut().enumerate() {
        if found.peek().is_none_or(|f| f.0 != r) {
            continue;
        }
        let start = items
            .first()
            .and_then(|item| item.entry)
            .unwrap_or_default()
            .to_owned();
        let mut paired = Vec::with_capacity(items.len());
        for (i, item) in std::mem::take(items).into_iter().enumerate() {
            let Some((_, _, is_call, call)) = found.next_if(|f| (f.0, f.1) == (r, i)) else {
                paired.push(item);
                continue;
            };
            let defect = |reason, action| Defect {
                interaction_start_id: start.clone(),
                entry_id: item.entry.unwrap_or_default().to_owned(),
                tool_call_id: call.clone(),
                reason,
                action: Some(action),
            };
            if *is_call && !outputs.contains(call.as_str()) {
                defects.push(defect(PairingDefect::MissingResult, SYNTHESIZED));
                let output = Object::new()
                    .string("type", "tool_search_output")
                    .string("call_id", call)
                    .string("status", "completed")
                    .string("execution", "client")
                    .raw("tools", "[]")
                    .finish();
                let message = Object::new()
                    .string("role", "assistant")
                    .raw("content", "[]")
                    .raw("codexItem", &output)
                    .raw("synthetic", "true")
                    .finish();
                let names = item.names;
                paired.push(item);
                paired.push(Item {
                    text: Cow::Owned(message),
                    entry: None,
                    names,
                });
            } else if !*is_call && !calls.contains(call.as_str()) {
                defects.push(defect(PairingDefect::OrphanResult, DROPPED));
            } else {
                paired.push(item);
            }
        }
        *items = paired;
    }
    defects
}

/// Whether a compaction's `details` (JSON) carry the Codex importer's mark of a
/// replacement history, which Codex sends in place of the summary.
pub(in crate::context) fn marks_replacement_history(details: &[u8]) -> bool {
    memchr::memmem::find(details, b"\"replacementHistory\"").is_some()
}

/// Codex's budget for the user messages it keeps when it rebuilds the history at a
/// compaction without a replacement history, in its tokens of 4 bytes.
const CODEX_KEPT_USER_TOKENS: usize = 20_000;

/// The history Codex rebuilds at a compaction without a replacement history (an older
/// `compacted` line), before the summary it puts last: the user messages before the
/// compaction (`before`: its ancestors, nearest first), newest first while they fit in
/// [`CODEX_KEPT_USER_TOKENS`] (a message's text bytes / 4, rounded up), then in their
/// order, each with its text blocks only. Codex's own context messages (AGENTS.md
/// instructions, the environment context, …: [`codex_context_message`]) are not user
/// messages to it; an earlier
/// compaction's summary is one (it is part of the history Codex rebuilt there), and an
/// earlier compaction with a replacement history ends the walk (nothing before it is in
/// that history). The message that does not fit is kept shortened to the tokens left
/// ([`codex_shortened`]) and ends the walk.
pub(in crate::context) fn codex_rebuilt_history<'a>(
    before: impl Iterator<Item = PathEntry<'a>>,
    options: &ContextOptions,
    tape: &mut Tape,
) -> Result<Vec<Item<'a>>, Error> {
    let bad = |_| Error::internal("a committed message does not scan");
    let mut kept: Vec<Item<'a>> = Vec::new();
    let mut room = CODEX_KEPT_USER_TOKENS;
    for entry in before {
        let (text, parts) = match (&entry.facts.body, entry.message()) {
            (Body::Compaction { details, .. }, _)
                if details
                    .as_ref()
                    .is_some_and(|d| marks_replacement_history(d.bytes(entry.json))) =>
            {
                break;
            }
            (Body::Compaction { summary, .. }, _) => {
                let text = summary_message(&entry, summary, options)?;
                json::scan(text.as_bytes(), MAX_DEPTH, tape).map_err(bad)?;
                let parts = text_parts(tape);
                (text, parts)
            }
            (_, Some(message)) if entry.facts.role() == Some(Role::User) => {
                json::scan(message, MAX_DEPTH, tape).map_err(bad)?;
                if codex_context_message(tape) {
                    continue;
                }
                let text = text_only(tape, message)?;
                (text, text_parts(tape))
            }
            _ => continue,
        };
        if room == 0 {
            break;
        }
        let tokens = parts.iter().map(String::len).sum::<usize>().div_ceil(4);
        if tokens > room {
            // Codex keeps a shortened copy of the message that overflows, and stops.
            kept.push(Item {
                text: Cow::Owned(with_content(tape, &codex_shortened(&parts, room * 4))),
                entry: Some(entry.id()),
                names: entry.id(),
            });
            break;
        }
        room -= tokens;
        kept.push(Item {
            text: Cow::Owned(text),
            entry: Some(entry.id()),
            names: entry.id(),
        });
    }
    kept.reverse();
    Ok(kept)
}

/// The texts of the message scanned into `tape`: its string content, or its text
/// blocks' texts in order.
fn text_parts(tape: &Tape) -> Vec<String> {
    let Some(content) = tape.get(0, "content") else {
        return Vec::new();
    };
    if tape.raw(content).first() == Some(&b'"') {
        return vec![tape.string(content).into_owned()];
    }
    tape.elements(content)
        .filter(|&b| {
            tape.get(b, "type")
                .is_some_and(|t| tape.string(t) == "text")
        })
        .filter_map(|b| tape.get(b, "text"))
        .map(|t| tape.string(t).into_owned())
        .collect()
}

/// Codex's shortened copy of a message's texts `parts` that do not fit in `budget`
/// bytes, as text blocks (JSON): the first half of the budget and the last half, each
/// cut at a character boundary (the first end moved back, the second start forward)
/// across the parts joined, the parts' own bounds kept, and between them a block
/// `…N tokens truncated…`, N the bytes over the budget / 4 rounded up (checked against
/// Codex 0.171.0 by tests/interop_agents.rs).
fn codex_shortened(parts: &[String], budget: usize) -> Vec<String> {
    let joined: String = parts.concat();
    let mut head_end = budget / 2;
    let mut tail_start = joined.len().saturating_sub(budget - head_end);
    while head_end > 0 && !joined.is_char_boundary(head_end) {
        head_end -= 1;
    }
    while tail_start < joined.len() && !joined.is_char_boundary(tail_start) {
        tail_start += 1;
    }
    let block = |text: &str| {
        Object::new()
            .string("type", "text")
            .string("text", text)
            .finish()
    };
    let mut head = Vec::new();
    let mut tail = Vec::new();
    let mut start = 0;
    for part in parts {
        let end = start + part.len();
        if start < head_end {
            head.push(&part[..head_end.min(end) - start]);
        }
        if end > tail_start {
            tail.push(&part[tail_start.max(start) - start..]);
        }
        start = end;
    }
    let removed = joined.len().saturating_sub(budget).div_ceil(4);
    let marker = format!("…{removed} tokens truncated…");
    head.into_iter()
        .filter(|t| !t.is_empty())
        .map(block)
        .chain([block(&marker)])
        .chain(tail.into_iter().filter(|t| !t.is_empty()).map(block))
        .collect()
}

/// The message scanned into `tape` (its JSON `message`) with its text blocks only, as
/// Codex sends a kept user message (an image is left out); unchanged when its content
/// is a string or only text.
fn text_only(tape: &Tape, message: &[u8]) -> Result<String, Error> {
    let Some(content) = tape.get(0, "content") else {
        return Ok(crate::entry::utf8(message)?.to_owned());
    };
    let mut blocks = Vec::new();
    let mut all_text = true;
    for block in tape.elements(content) {
        if tape
            .get(block, "type")
            .is_some_and(|t| tape.string(t) == "text")
        {
            blocks.push(crate::entry::utf8(tape.raw(block))?.to_owned());
        } else {
            all_text = false;
        }
    }
    if all_text {
        return Ok(crate::entry::utf8(message)?.to_owned());
    }
    Ok(with_content(tape, &blocks))
}

/// Whether the user message scanned into `tape` is one Codex writes itself for the
/// model, which it does not count as the user's: a text block whose text, trimmed,
/// opens and closes with the markers of one of its kinds (ASCII case ignored), as Codex
/// 0.171.0 reads them (checked against the CLI by tests/interop_agents.rs:
/// `<user_instructions>` is not one of them, an opening marker alone is not enough).
fn codex_context_message(tape: &Tape) -> bool {
    const MARKERS: [(&str, &str); 6] = [
        ("# AGENTS.md instructions", "</INSTRUCTIONS>"),
        ("<environment_context>", "</environment_context>"),
        ("<user_shell_command>", "</user_shell_command>"),
        ("<turn_aborted>", "</turn_aborted>"),
        ("<skill>", "</skill>"),
        ("<subagent_notification>", "</subagent_notification>"),
    ];
    let Some(content) = tape.get(0, "content") else {
        return false;
    };
    let texts: Vec<String> = match tape.elements(content).next() {
        None if tape.raw(content).first() == Some(&b'"') => {
            vec![tape.string(content).into_owned()]
        }
        _ => tape
            .elements(content)
            .filter_map(|b| tape.get(b, "text"))
            .map(|t| tape.string(t).into_owned())
            .collect(),
    };
    texts.iter().any(|text| {
        let text = text.trim();
        MARKERS.iter().any(|(open, close)| {
            text.get(..open.len())
                .is_some_and(|head| head.eq_ignore_ascii_case(open))
                && text
                    .get(text.len().saturating_sub(close.len())..)
                    .is_some_and(|tail| tail.eq_ignore_ascii_case(close))
        })
    })
}
