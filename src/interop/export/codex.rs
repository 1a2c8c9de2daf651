//! The Codex writer: what Codex sends for the leaf, as a rollout it resumes (`codex
//! exec resume SESSION_ID`).
//!
//! | libsession message | rollout item (`response_item` payload) |
//! |---|---|
//! | one Codex kept whole (`codexItem`: a call, reasoning, a search, …) | that item |
//! | `user` | `message` user, `input_text` / `input_image` (a `data:` URL) parts |
//! | `assistant` | its blocks in order: consecutive `text` → one `message` of `output_text` parts, `toolCall` → `function_call` (`arguments` Codex's own text when the import kept it), `thinking` → `reasoning` with the text as its summary |
//! | `toolResult` | the output item Codex wrote (kept by its import), else `function_call_output`, `output` the text |
//! | `developer`, `system` | `message` of that role |
//! | another role (pi's `custom`, `branchSummary`, `bashExecution`) | `message` user, its text (converted) |
//!
//! The first line is a `session_meta`. When the context starts from a compaction, a
//! `compacted` line comes next: `message` the summary, `replacement_history` the summary
//! message as a user message (or, for a session whose Codex history already replaced
//! the summary, that history's first item); the other items follow it, which is how
//! Codex resumes: the replacement history, then what follows.

use super::message::{Block, blocks, iso, raw_member, string_member, user_text};
use super::plan::{Item, Plan};
use super::report::Tally;
use crate::error::Error;
use crate::json::{Kind, Object, Tape};

/// The Codex version the session claims (the pinned version the tests resume with).
const CLI_VERSION: &str = "0.171.0";

pub(super) fn write(plan: &Plan, tally: &mut Tally) -> Result<Vec<String>, Error> {
    let id = plan.session_uuid();
    let started = iso(plan.started);
    let meta = Object::new()
        .string("id", &id)
        .string("timestamp", &started)
        .string("cwd", &plan.cwd)
        .string("originator", "libsession")
        .string("cli_version", CLI_VERSION)
        .string("source", "cli")
        .string("model_provider", "openai")
        .finish();
    let mut lines = vec![line(&started, "session_meta", &meta)];
    let mut items: Vec<(f64, String)> = Vec::new();
    if let Some(text) = plan.summary.as_ref().and_then(|s| s.message.as_ref()) {
        let millis = plan.summary.as_ref().map_or(0.0, |s| s.millis);
        items.push((millis, message("user", &[input_text(text)])));
    }
    for item in &plan.items {
        for written in write_item(item, tally) {
            items.push((item.millis, written));
        }
    }
    // Codex resumes from a compaction's replacement history and the items after it (a
    // compacted line with nothing after it is not read back): the history is the
    // summary message, or the first item when Codex's own history replaced it.
    match &plan.summary {
        Some(summary) if items.len() > 1 => {
            let text = summary
                .summary
                .as_deref()
                .or(summary.message.as_deref())
                .unwrap_or("");
            let payload = Object::new()
                .string("message", text)
                .raw("replacement_history", &crate::json::array(std::iter::once(&items[0].1)))
                .finish();
            lines.push(line(&iso(summary.millis), "compacted", &payload));
            items.remove(0);
        }
        Some(_) => tally.converted(
            "compaction",
            "a compaction with nothing after its summary is written as the summary message alone: Codex reads no compacted line that ends the rollout",
        ),
        None => {}
    }
    for (millis, item) in &items {
        lines.push(line(&iso(*millis), "response_item", item));
    }
    Ok(lines)
}

fn line(timestamp: &str, kind: &str, payload: &str) -> String {
    Object::new()
        .string("timestamp", timestamp)
        .string("type", kind)
        .raw("payload", payload)
        .finish()
}

fn message(role: &str, parts: &[String]) -> String {
    Object::new()
        .string("type", "message")
        .string("role", role)
        .raw("content", &crate::json::array(parts.iter()))
        .finish()
}

fn input_text(text: &str) -> String {
    Object::new()
        .string("type", "input_text")
        .string("text", text)
        .finish()
}

fn data_url(mime: &str, data: &str) -> String {
    let mut url = String::with_capacity(data.len() + mime.len() + 13);
    url.push_str("data:");
    url.push_str(mime);
    url.push_str(";base64,");
    url.push_str(data);
    url
}

/// The response items of one message.
fn write_item(item: &Item, tally: &mut Tally) -> Vec<String> {
    let tape = &item.tape;
    if let Some(kept) = raw_member(tape, 0, "codexItem") {
        return vec![kept.to_owned()];
    }
    let role = string_member(tape, 0, "role").unwrap_or_default();
    match role.as_str() {
        "user" => vec![message("user", &user_parts(tape, tally))],
        "assistant" => assistant(tape, tally),
        "toolResult" => vec![output(tape, tally)],
        "developer" | "system" => vec![message(&role, &user_parts(tape, tally))],
        other => match user_text(tape) {
            Some(text) => {
                tally.converted(
                    &format!("role:{other}"),
                    "sent as user text, as pi sends it (a bash execution as its command and output, a branch summary wrapped, others their text or summary): Codex has no such role",
                );
                vec![message("user", &[input_text(&text)])]
            }
            None => {
                tally.dropped(
                    &format!("role:{other}"),
                    "excluded from the context by pi (excludeFromContext)",
                );
                Vec::new()
            }
        },
    }
}

/// A user-side message's content as input parts.
fn user_parts(tape: &Tape, tally: &mut Tally) -> Vec<String> {
    blocks(tape)
        .into_iter()
        .filter_map(|block| match block {
            Block::Text(text) => Some(input_text(&text)),
            Block::Image { data, mime } => Some(
                Object::new()
                    .string("type", "input_image")
                    .string("image_url", &data_url(&mime, &data))
                    .finish(),
            ),
            // Codex's own parts (an image by URL) are kept by its import as they are.
            Block::Other { kind, raw } if kind.starts_with("input_") => Some(raw.to_owned()),
            Block::Other { kind, .. } => {
                tally.dropped(
                    &format!("block:{kind}"),
                    "an extension block Codex has no part for",
                );
                None
            }
            Block::Thinking { .. } | Block::ToolCall { .. } => {
                tally.dropped(
                    "block",
                    "a thinking or tool call block in a user message: Codex has none there",
                );
                None
            }
        })
        .collect()
}

/// An assistant message's blocks as response items, in order.
fn assistant(tape: &Tape, tally: &mut Tally) -> Vec<String> {
    let mut items = Vec::new();
    let mut texts: Vec<String> = Vec::new();
    let flush = |texts: &mut Vec<String>, items: &mut Vec<String>| {
        if !texts.is_empty() {
            items.push(message("assistant", texts));
            texts.clear();
        }
    };
    for block in blocks(tape) {
        match block {
            Block::Text(text) => texts.push(
                Object::new()
                    .string("type", "output_text")
                    .string("text", &text)
                    .finish(),
            ),
            Block::Thinking { text, .. } => {
                flush(&mut texts, &mut items);
                tally.converted(
                    "thinking",
                    "written as a reasoning item whose summary is the text (no encrypted content)",
                );
                let summary = Object::new()
                    .string("type", "summary_text")
                    .string("text", &text)
                    .finish();
                items.push(
                    Object::new()
                        .string("type", "reasoning")
                        .raw("summary", &crate::json::array(std::iter::once(summary)))
                        .finish(),
                );
            }
            Block::ToolCall {
                id,
                name,
                arguments,
                raw_arguments,
            } => {
                flush(&mut texts, &mut items);
                items.push(
                    Object::new()
                        .string("type", "function_call")
                        .string("name", &name)
                        .string("arguments", raw_arguments.as_deref().unwrap_or(arguments))
                        .string("call_id", &id)
                        .finish(),
                );
            }
            Block::Image { .. } => tally.dropped(
                "block:image",
                "an image in a reply: Codex's replies hold none",
            ),
            Block::Other { kind, .. } => tally.dropped(
                &format!("block:{kind}"),
                "an extension block Codex has no item for",
            ),
        }
    }
    flush(&mut texts, &mut items);
    items
}

/// A tool result as Codex's output item.
fn output(tape: &Tape, tally: &mut Tally) -> String {
    let call = string_member(tape, 0, "toolCallId").unwrap_or_default();
    // The item Codex wrote, kept whole by its import.
    if let Some(details) = tape.get(0, "details")
        && tape.nodes[details].kind == Kind::Object
        && matches!(
            string_member(tape, details, "type").as_deref(),
            Some("function_call_output" | "custom_tool_call_output")
        )
        && string_member(tape, details, "call_id").as_deref() == Some(call.as_str())
    {
        return std::str::from_utf8(tape.raw(details))
            .unwrap_or("{}")
            .to_owned();
    }
    if tape
        .get(0, "isError")
        .is_some_and(|v| tape.raw(v) == b"true")
    {
        tally.converted(
            "toolResult.isError",
            "Codex's output has no error flag: the text alone says so",
        );
    }
    let parts = blocks(tape);
    let images = parts.iter().any(|b| matches!(b, Block::Image { .. }));
    let object = Object::new()
        .string("type", "function_call_output")
        .string("call_id", &call);
    let object = match images {
        false => {
            let text: String = parts
                .iter()
                .filter_map(|b| match b {
                    Block::Text(text) => Some(text.as_str()),
                    _ => None,
                })
                .collect();
            object.string("output", &text)
        }
        true => object.raw(
            "output",
            &crate::json::array(user_parts(tape, tally).iter()),
        ),
    };
    object.finish()
}
