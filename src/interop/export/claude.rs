//! The Claude Code writer: what Claude Code sends for the leaf, as a transcript it
//! resumes (`claude --resume SESSION_ID`).
//!
//! | libsession message | transcript line |
//! |---|---|
//! | `user` | `user`, `message.content` the string or the blocks (`text`; `image` as a base64 `source`) |
//! | `user` with `localCommand` | `system` `local_command`, `content` the text |
//! | `assistant` | `assistant`, `message` `{id: responseId, type, role, model, content, stop_reason, usage}`; `toolCall` → `tool_use`, `thinking` → `thinking` with its `signature` |
//! | `toolResult` | `user` holding one `tool_result` block |
//! | another role (pi's `custom`, `branchSummary`, `bashExecution`; Codex's `developer`) | `user` text (converted) |
//! | the summary message of a compaction | a `compact_boundary` line and the `isCompactSummary` user line under it |
//!
//! Lines form one chain (`parentUuid`), `uuid` the entry's id.

use std::collections::HashSet;

use super::message::{
    Block, blocks, iso, raw_member, string_member, text_of, user_text, uuid_from,
};
use super::plan::{Item, Plan};
use super::report::Tally;
use crate::error::Error;
use crate::json::{Kind, Object};

/// The Claude Code version the lines claim (the pinned version the tests resume with).
const VERSION: &str = "2.1.332";

/// The line chain being written.
struct Lines<'p> {
    plan: &'p Plan,
    session_id: String,
    parent: Option<String>,
    used: HashSet<String>,
    lines: Vec<String>,
    /// The `message.id` of the line just written when it is an assistant line: a reply
    /// that follows it at once is written under the same id, so that Claude Code reads
    /// them as one reply (its calls answered by the results after it, as Codex's
    /// parallel calls, one item each, are).
    reply: Option<String>,
}

impl Lines<'_> {
    /// An id for the next line: the entry's id when it is free, else one made up.
    fn id(&mut self, entry: Option<&str>) -> String {
        let id = match entry {
            Some(id) if !id.is_empty() && !self.used.contains(id) => id.to_owned(),
            _ => uuid_from(&format!("{}/{}", self.session_id, self.lines.len())),
        };
        self.used.insert(id.clone());
        id
    }

    /// The members every line starts with.
    fn head(&self) -> Object {
        Object::new()
            .string_or_null("parentUuid", self.parent.as_deref())
            .boolean("isSidechain", false)
            .string("userType", "external")
            .string("cwd", &self.plan.cwd)
            .string("sessionId", &self.session_id)
            .string("version", VERSION)
    }

    fn push(&mut self, id: String, line: String) {
        self.lines.push(line);
        self.parent = Some(id);
        self.reply = None;
    }

    fn user(&mut self, entry: Option<&str>, millis: f64, content: &str, extra: &[(&str, &str)]) {
        let id = self.id(entry);
        let message = Object::new()
            .string("role", "user")
            .raw("content", content)
            .finish();
        let mut line = self.head().string("type", "user").raw("message", &message);
        for (key, value) in extra {
            line = line.raw(key, value);
        }
        let line = line
            .string("uuid", &id)
            .string("timestamp", &iso(millis))
            .finish();
        self.push(id, line);
    }
}

pub(super) fn write(plan: &Plan, tally: &mut Tally) -> Result<Vec<String>, Error> {
    let session_id = plan.session_uuid();
    let mut out = Lines {
        plan,
        session_id,
        parent: None,
        used: HashSet::new(),
        lines: Vec::new(),
        reply: None,
    };
    if let Some(summary) = &plan.summary
        && let Some(text) = &summary.message
    {
        let boundary = out.id(None);
        let metadata = Object::new()
            .string("trigger", "manual")
            .finite("preTokens", summary.tokens_before)
            .finish();
        let line = out
            .head()
            .string("type", "system")
            .string("subtype", "compact_boundary")
            .string("content", "Conversation compacted")
            .boolean("isMeta", false)
            .string("timestamp", &iso(summary.millis))
            .string("uuid", &boundary)
            .string("level", "info")
            .raw("compactMetadata", &metadata)
            .finish();
        out.push(boundary, line);
        out.user(
            None,
            summary.millis,
            &json_string(text),
            &[("isCompactSummary", "true")],
        );
    }
    for item in &plan.items {
        write_item(&mut out, item, tally);
    }
    Ok(out.lines)
}

/// `text` as a JSON string.
fn json_string(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    crate::json::push_string(&mut out, text);
    out
}

fn write_item(out: &mut Lines<'_>, item: &Item, tally: &mut Tally) {
    let tape = &item.tape;
    let role = string_member(tape, 0, "role").unwrap_or_default();
    let entry = item.entry_id.as_deref();
    match role.as_str() {
        "user" if tape.get(0, "localCommand").is_some() => {
            let id = out.id(entry);
            let line = out
                .head()
                .string("type", "system")
                .string("subtype", "local_command")
                .string("content", &text_of(tape))
                .string("level", "info")
                .string("timestamp", &iso(item.millis))
                .string("uuid", &id)
                .boolean("isMeta", false)
                .finish();
            out.push(id, line);
        }
        "user" => {
            let content = match tape.get(0, "content") {
                Some(c) if tape.nodes[c].kind == Kind::String => std::str::from_utf8(tape.raw(c))
                    .unwrap_or("\"\"")
                    .to_owned(),
                _ => user_blocks(tape, tally),
            };
            out.user(entry, item.millis, &content, &[]);
        }
        "assistant" => assistant(out, item, tally),
        "toolResult" => {
            let mut result = Object::new()
                .string(
                    "tool_use_id",
                    &string_member(tape, 0, "toolCallId").unwrap_or_default(),
                )
                .string("type", "tool_result")
                .raw("content", &user_blocks(tape, tally));
            if tape
                .get(0, "isError")
                .is_some_and(|v| tape.raw(v) == b"true")
            {
                result = result.boolean("is_error", true);
            }
            let content = crate::json::array(std::iter::once(result.finish()));
            out.user(entry, item.millis, &content, &[]);
        }
        other => match user_text(tape) {
            Some(text) => {
                tally.converted(
                    &format!("role:{other}"),
                    "sent as user text, as pi sends it (a bash execution as its command and output, a branch summary wrapped, others their text or summary): Claude Code has no such role",
                );
                out.user(entry, item.millis, &json_string(&text), &[]);
            }
            None => tally.dropped(
                &format!("role:{other}"),
                "excluded from the context by pi (excludeFromContext)",
            ),
        },
    }
}

/// A user message's or a result's blocks in Claude Code's form.
fn user_blocks(tape: &crate::json::Tape, tally: &mut Tally) -> String {
    let items = blocks(tape).into_iter().filter_map(|block| match block {
        Block::Text(text) => Some(text_block(&text)),
        Block::Image { data, mime } => {
            let source = Object::new()
                .string("type", "base64")
                .string("media_type", &mime)
                .string("data", &data)
                .finish();
            Some(
                Object::new()
                    .string("type", "image")
                    .raw("source", &source)
                    .finish(),
            )
        }
        Block::Other { kind, raw } => {
            tally.converted(
                &format!("block:{kind}"),
                "an extension block, written as it is (Claude Code sends it as it is)",
            );
            Some(raw.to_owned())
        }
        Block::Thinking { .. } | Block::ToolCall { .. } => {
            tally.dropped(
                "block",
                "a thinking or tool call block in a user message: Claude Code has none there",
            );
            None
        }
    });
    crate::json::array(items)
}

fn text_block(text: &str) -> String {
    Object::new()
        .string("type", "text")
        .string("text", text)
        .finish()
}

fn assistant(out: &mut Lines<'_>, item: &Item, tally: &mut Tally) {
    let tape = &item.tape;
    let content = blocks(tape).into_iter().filter_map(|block| match block {
        Block::Text(text) => Some(text_block(&text)),
        Block::Thinking { text, signature } => match signature.filter(|s| !s.is_empty()) {
            Some(signature) => Some(
                Object::new()
                    .string("type", "thinking")
                    .string("thinking", &text)
                    .string("signature", &signature)
                    .finish(),
            ),
            None => {
                tally.dropped(
                    "thinking",
                    "a thinking block without a signature: Claude Code does not send it",
                );
                None
            }
        },
        Block::ToolCall {
            id,
            name,
            arguments,
            ..
        } => Some(
            Object::new()
                .string("type", "tool_use")
                .string("id", &id)
                .string("name", &name)
                .raw("input", arguments)
                .finish(),
        ),
        Block::Image { .. } => {
            tally.dropped(
                "block:image",
                "an image in a reply: Claude Code's replies hold none",
            );
            None
        }
        Block::Other { kind, raw } => {
            tally.converted(
                &format!("block:{kind}"),
                "an extension block, written as it is (Claude Code sends it as it is)",
            );
            Some(raw.to_owned())
        }
    });
    let content = crate::json::array(content);
    if content == "[]" {
        // Nothing Claude Code sends: a Codex item no block holds (a web or tool
        // search), or a reply whose only blocks were left out.
        match tape
            .get(0, "codexItem")
            .and_then(|c| string_member(tape, c, "type"))
        {
            Some(kind) => tally.dropped(
                &format!("codexItem:{kind}"),
                "a Codex item with no Claude Code equivalent",
            ),
            None => tally.dropped(
                "message",
                "a reply with nothing Claude Code sends (no block left)",
            ),
        }
        return;
    }
    let id = out.id(item.entry_id.as_deref());
    let response = match out.reply.take() {
        Some(previous) => previous,
        None => string_member(tape, 0, "responseId")
            .unwrap_or_else(|| format!("msg_{}", id.replace('-', ""))),
    };
    let mut message = Object::new()
        .string("id", &response)
        .string("type", "message")
        .string("role", "assistant")
        .string(
            "model",
            &string_member(tape, 0, "model").unwrap_or_else(|| "<synthetic>".to_owned()),
        )
        .raw("content", &content);
    message = match raw_member(tape, 0, "stopReason") {
        Some(reason) => message.raw("stop_reason", reason),
        None => message.raw("stop_reason", "null"),
    };
    message = message.raw("stop_sequence", "null");
    message = match raw_member(tape, 0, "usage") {
        Some(usage) if string_member(tape, 0, "api").as_deref() == Some("anthropic-messages") => {
            message.raw("usage", usage)
        }
        _ => message.raw("usage", r#"{"input_tokens":0,"output_tokens":0}"#),
    };
    let line = out
        .head()
        .string("type", "assistant")
        .raw("message", &message.finish())
        .string("uuid", &id)
        .string("timestamp", &iso(item.millis))
        .finish();
    out.push(id, line);
    out.reply = Some(response);
}
