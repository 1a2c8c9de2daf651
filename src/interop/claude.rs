//! Claude Code transcripts (`~/.claude/projects/<project>/<session>.jsonl`).
//!
//! | transcript line | libsession entry |
//! |---|---|
//! | `user`, text or image content | `message` user (blocks: `text`, `image` from a base64 `source`) |
//! | `user`, `tool_result` blocks | one `toolResult` per block (`toolName` looked up from the call), then the rest as a user message |
//! | `assistant` | `message` assistant: `text`, `thinking`, `tool_use` → `toolCall`; `model`, `usage`, `stop_reason` → `stopReason`, `message.id` → `responseId` |
//! | `system` `local_command` (a local command's output, `content` a string) | `message` user, `content` the string, `"localCommand": true` |
//! | `system` `compact_boundary` | `compaction` under its `logicalParentUuid`, summary from the `isCompactSummary` user line under it, `preTokens` → `tokensBefore` |
//! | `user` with `isCompactSummary` | `metadata` `claude.compact_summary` (its text is the compaction's summary) |
//! | other `system`, `progress`, `summary`, `file-history-snapshot`, `queue-operation` | `metadata` `claude.<type>`, value = the line |
//!
//! Ids are the lines' `uuid`s; a line without one gets `claude-line-N`. Members of a
//! line other than the message (`isSidechain`, `cwd`, `sessionId`, `gitBranch`,
//! `toolUseResult`, …) are kept on the entry as `claude`. When one line becomes
//! several entries (tool results), the last one carries the `uuid` so that the
//! line's children find it, the others `uuid#1`, `uuid#2`, ….

use std::collections::HashMap;
use std::sync::LazyLock;

use memchr::memmem::Finder;

use serde_json::{Map, Value, json};

use super::{Builder, Refusal, Source, SourceLine, entry_head, timestamp_of};
use crate::error::Error;
use crate::json::Kind;

/// Line kinds kept as `claude.<type>` metadata, value = the whole line.
const METADATA_KINDS: [&str; 5] = [
    "system",
    "progress",
    "summary",
    "file-history-snapshot",
    "queue-operation",
];

/// Members of a line that the mapping consumes; the rest go to the entry's `claude`.
const CONSUMED: [&str; 5] = ["type", "uuid", "parentUuid", "timestamp", "message"];

pub(crate) fn import(source: &mut Source<'_>, out: &mut Builder<'_>) -> Result<(), Error> {
    let (first, summaries) = prescan(source, out)?;
    let (millis, iso) = timestamp_of(first.as_ref().and_then(|o| o.get("timestamp")));
    let session = first
        .as_ref()
        .and_then(|o| o.get("sessionId"))
        .cloned()
        .unwrap_or(Value::Null);
    drop(first);
    let mut extra = Map::new();
    if let Some(iso) = iso {
        extra.insert("isoTimestamp".into(), Value::String(iso));
    }
    out.set_root(
        "claude-transcript",
        "transcript",
        json!({"sessionId": session}),
        millis,
        extra,
    )?;
    let mut tool_names: HashMap<String, String> = HashMap::new();
    source.rewind()?;
    while let Some(line) = source.next_line()? {
        out.begin(line.number);
        if metadata_from_text(&line, out)? {
            continue;
        }
        let Some(Value::Object(object)) = out.parse(&line) else {
            out.count_kind("invalid_json");
            out.raw(line.number, line.text, "invalid_json", None)?;
            continue;
        };
        let kind = object.get("type").and_then(Value::as_str).unwrap_or("");
        out.count_kind(if kind.is_empty() { "(none)" } else { kind });
        // Claude Code resumes at its latest line that is neither progress nor part of
        // a sidechain (a subagent's conversation).
        let aside = kind == "progress" || object.get("isSidechain") == Some(&Value::Bool(true));
        match map_line(&object, &line, &summaries, &mut tool_names, out) {
            Ok(entries) => {
                out.set_aside(aside);
                let pushed = entries.into_iter().try_for_each(|e| out.push(&line, e));
                out.set_aside(false);
                pushed?;
            }
            Err(Refusal::Raw(reason)) => out.raw(line.number, line.text, reason, None)?,
            Err(Refusal::Fail(e)) => return Err(e),
        }
    }
    Ok(())
}

/// A line of a kind kept as `claude.<type>` metadata (`progress` above all: 99% of
/// the lines of a long transcript), written from its text when the general mapping
/// would write the same entry: the line is copied, its value never built. `false`,
/// with nothing written, when the line needs the general mapping (another kind, a
/// text the mapping would re-spell, an id already written or with escapes, a parent
/// not written yet, a numeric or escaped timestamp).
fn metadata_from_text(line: &SourceLine<'_>, out: &mut Builder<'_>) -> Result<bool, Error> {
    // A compact boundary is a `system` line: those take the general mapping.
    const SPELLED: [&[u8]; 4] = [
        b"\"type\":\"progress\"",
        b"\"type\":\"summary\"",
        b"\"type\":\"file-history-snapshot\"",
        b"\"type\":\"queue-operation\"",
    ];
    static FINDERS: LazyLock<[Finder<'static>; 4]> = LazyLock::new(|| SPELLED.map(Finder::new));
    let likely = FINDERS.iter().any(|f| f.find(line.text).is_some());
    if !likely || !out.scan(line) {
        return Ok(false);
    }
    let tape = out.tape();
    // A member's text when it is a string without escapes; `Err` when it is another
    // string, `Ok(None)` when it is missing or not a string.
    let plain = |name: &str| -> Result<Option<&[u8]>, ()> {
        match tape.get(0, name).map(|n| (n, tape.nodes[n])) {
            Some((n, node)) if node.kind == Kind::String => match node.escaped {
                false => Ok(tape.raw(n).get(1..tape.raw(n).len() - 1)),
                true => Err(()),
            },
            _ => Ok(None),
        }
    };
    let as_str = |bytes: &[u8]| std::str::from_utf8(bytes).map(str::to_owned).ok();
    let (Ok(Some(found)), Ok(uuid), Ok(parent)) =
        (plain("type"), plain("uuid"), plain("parentUuid"))
    else {
        return Ok(false);
    };
    let Some(kind) = METADATA_KINDS
        .into_iter()
        .find(|k| *k != "system" && k.as_bytes() == found)
    else {
        return Ok(false);
    };
    let uuid = match (tape.get(0, "uuid"), uuid) {
        (None, _) => None,
        (Some(_), Some(id)) if !id.is_empty() => as_str(id),
        _ => return Ok(false),
    };
    let parent = parent.filter(|p| !p.is_empty()).and_then(as_str);
    let timestamp = match tape.get(0, "timestamp").map(|n| (n, tape.nodes[n])) {
        Some((n, node)) if node.kind == Kind::String && !node.escaped => {
            let raw = tape.raw(n);
            match as_str(&raw[1..raw.len() - 1]) {
                Some(text) => (super::time::iso_to_millis(&text).unwrap_or(0.0), Some(text)),
                None => return Ok(false),
            }
        }
        Some((_, node)) if matches!(node.kind, Kind::String | Kind::Number) => return Ok(false),
        _ => (0.0, None),
    };
    let aside = kind == "progress"
        || tape
            .get(0, "isSidechain")
            .is_some_and(|n| tape.raw(n) == b"true");
    if uuid.as_deref().is_some_and(|id| out.has_id(id))
        || parent.as_deref().is_some_and(|p| !out.has_id(p))
    {
        return Ok(false);
    }
    out.count_kind(kind);
    let id = match uuid {
        Some(id) => id,
        None => out.fresh_id(&format!("claude-line-{}", line.number)),
    };
    let parent = match parent {
        Some(p) => p,
        None => out.root(timestamp.0)?,
    };
    out.set_aside(aside);
    let pushed = out.push_line_metadata(
        line,
        &id,
        &parent,
        (timestamp.0, timestamp.1.as_deref()),
        &format!("claude.{kind}"),
    );
    out.set_aside(false);
    pushed.map(|()| true)
}

/// The first JSON object, and each compact boundary's summary by the boundary's id.
type Prescan = (Option<Map<String, Value>>, HashMap<String, String>);

/// What the mapping needs before the first line: the first JSON object (the
/// transcript's root takes its `timestamp` and `sessionId`), and the summary text of
/// each compact boundary: the text of the `isCompactSummary` user line whose parent is
/// the boundary (a later line than the boundary). Only lines that can hold that member
/// are parsed: those that spell it, and those with a `\u` escape of one of its letters.
fn prescan(source: &mut Source<'_>, out: &mut Builder<'_>) -> Result<Prescan, Error> {
    source.rewind()?;
    let mut first = None;
    let mut summaries = HashMap::new();
    while let Some(line) = source.next_line()? {
        static SPELLED: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(SUMMARY_MEMBER));
        let candidate =
            SPELLED.find(line.text).is_some() || escapes_a_letter_of(line.text, SUMMARY_MEMBER);
        if first.is_some() && !candidate {
            continue;
        }
        let Some(value) = out.parse(&line) else {
            continue;
        };
        if value.get("isCompactSummary") == Some(&Value::Bool(true))
            && let Some(Value::String(parent)) = value.get("parentUuid")
            && let Some(content) = value.get("message").and_then(|m| m.get("content"))
        {
            summaries
                .try_reserve(1)
                .map_err(|_| super::out_of_memory("the compact summaries"))?;
            summaries.insert(parent.clone(), content_text(content));
        }
        if first.is_none()
            && let Value::Object(object) = value
        {
            first = Some(object);
        }
    }
    Ok((first, summaries))
}

const SUMMARY_MEMBER: &[u8] = b"isCompactSummary";

/// Whether `text` holds a `\u` escape of one of the characters of `word` (ASCII): a
/// key spelled with escapes has one.
fn escapes_a_letter_of(text: &[u8], word: &[u8]) -> bool {
    static ESCAPE: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"\\u"));
    ESCAPE.find_iter(text).any(|at| {
        text.get(at + 2..at + 6)
            .and_then(super::lenient::hex_unit)
            .is_some_and(|code| word.iter().any(|&b| u16::from(b) == code))
    })
}

/// The text of a content value: the string, or its text blocks joined.
fn content_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| b.get("text")?.as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

fn map_line(
    object: &Map<String, Value>,
    line: &SourceLine<'_>,
    summaries: &HashMap<String, String>,
    tool_names: &mut HashMap<String, String>,
    out: &mut Builder<'_>,
) -> Result<Vec<Map<String, Value>>, Refusal> {
    let kind = object.get("type").and_then(Value::as_str).unwrap_or("");
    let (millis, iso) = timestamp_of(object.get("timestamp"));
    let id = match object.get("uuid") {
        Some(Value::String(id)) if !id.is_empty() => {
            if out.has_id(id) {
                return Err(Refusal::Raw("duplicate_id"));
            }
            id.clone()
        }
        None => out.fresh_id(&format!("claude-line-{}", line.number)),
        Some(_) => return Err(Refusal::Raw("invalid_shape")),
    };
    let mut parent = match object.get("parentUuid") {
        Some(Value::String(p)) if !p.is_empty() => p.clone(),
        _ => out.root(millis)?,
    };
    let rest: Map<String, Value> = object
        .iter()
        .filter(|(k, _)| !CONSUMED.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let finish = |mut entry: Map<String, Value>| {
        if let Some(iso) = &iso {
            entry.insert("isoTimestamp".into(), Value::String(iso.clone()));
        }
        if !rest.is_empty() {
            entry.insert("claude".into(), Value::Object(rest.clone()));
        }
        entry
    };
    let message = object.get("message").and_then(Value::as_object);
    let is_boundary = kind == "system"
        && object.get("subtype").and_then(Value::as_str) == Some("compact_boundary");
    if is_boundary {
        if let Some(Value::String(logical)) = object.get("logicalParentUuid") {
            parent = logical.clone();
        }
        let summary = summaries
            .get(&id)
            .cloned()
            .or_else(|| {
                object
                    .get("content")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            })
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| "Conversation compacted".to_owned());
        let tokens = object
            .get("compactMetadata")
            .and_then(|m| m.get("preTokens"))
            .and_then(super::lenient::number_value)
            .filter(|t| *t >= 0.0)
            .unwrap_or(0.0);
        let mut entry = entry_head(&id, Some(&parent), millis, "compaction");
        entry.insert("summary".into(), Value::String(summary));
        entry.insert("firstKeptEntryId".into(), Value::Null);
        entry.insert("tokensBefore".into(), super::number(tokens));
        return Ok(vec![finish(entry)]);
    }
    // A local command's output (`/model`, `/mcp`, …): Claude Code sends it as user text.
    if kind == "system"
        && object.get("subtype").and_then(Value::as_str) == Some("local_command")
        && let Some(Value::String(text)) = object.get("content")
    {
        let mut entry = entry_head(&id, Some(&parent), millis, "message");
        entry.insert(
            "message".into(),
            json!({"role": "user", "content": text, "localCommand": true}),
        );
        return Ok(vec![finish(entry)]);
    }
    if METADATA_KINDS.contains(&kind)
        || (kind == "user" && object.get("isCompactSummary") == Some(&Value::Bool(true)))
    {
        let key = if kind == "user" {
            "compact_summary"
        } else {
            kind
        };
        let mut entry = entry_head(&id, Some(&parent), millis, "metadata");
        entry.insert("key".into(), Value::String(format!("claude.{key}")));
        entry.insert("value".into(), Value::Object(object.clone()));
        if let Some(iso) = &iso {
            entry.insert("isoTimestamp".into(), Value::String(iso.clone()));
        }
        return Ok(vec![entry]);
    }
    let message = match (kind, message) {
        ("user" | "assistant", Some(m)) => m,
        ("user" | "assistant", None) => return Err(Refusal::Raw("invalid_shape")),
        _ => return Err(Refusal::Raw("unknown_kind")),
    };
    let messages = if kind == "assistant" {
        vec![assistant(message, tool_names)]
    } else {
        user(message, tool_names)
    };
    let count = messages.len();
    let mut entries = Vec::with_capacity(count);
    for (index, message) in messages.into_iter().enumerate() {
        let entry_id = if index + 1 == count {
            id.clone()
        } else {
            out.fresh_id(&format!("{id}#{}", index + 1))
        };
        let mut entry = entry_head(&entry_id, Some(&parent), millis, "message");
        entry.insert("message".into(), Value::Object(message));
        entries.push(finish(entry));
        parent = entry_id;
    }
    Ok(entries)
}

/// An Anthropic API reply (or one block of it, as Claude Code writes one line per
/// block) as an assistant message.
fn assistant(
    message: &Map<String, Value>,
    tool_names: &mut HashMap<String, String>,
) -> Map<String, Value> {
    let blocks = match message.get("content") {
        Some(Value::Array(blocks)) => blocks
            .iter()
            .map(|b| assistant_block(b, tool_names))
            .collect(),
        Some(Value::String(text)) => vec![json!({"type": "text", "text": text})],
        _ => Vec::new(),
    };
    let mut out = Map::new();
    out.insert("role".into(), Value::String("assistant".into()));
    out.insert("content".into(), Value::Array(blocks));
    out.insert("api".into(), Value::String("anthropic-messages".into()));
    out.insert("provider".into(), Value::String("anthropic".into()));
    for (from, to) in [
        ("model", "model"),
        ("usage", "usage"),
        ("stop_reason", "stopReason"),
        ("id", "responseId"),
    ] {
        if let Some(v) = message.get(from).filter(|v| !v.is_null()) {
            out.insert(to.into(), v.clone());
        }
    }
    out
}

fn assistant_block(block: &Value, tool_names: &mut HashMap<String, String>) -> Value {
    let kind = block.get("type").and_then(Value::as_str).unwrap_or("");
    match kind {
        "tool_use" => {
            let id = block.get("id").cloned().unwrap_or(Value::Null);
            let name = block.get("name").cloned().unwrap_or(Value::Null);
            if let (Some(id), Some(name)) = (id.as_str(), name.as_str()) {
                tool_names.insert(id.to_owned(), name.to_owned());
            }
            let arguments = block.get("input").cloned().unwrap_or_else(|| json!({}));
            json!({"type": "toolCall", "id": id, "name": name, "arguments": arguments})
        }
        "thinking" => {
            let mut out = json!({"type": "thinking", "thinking": block.get("thinking").cloned().unwrap_or(Value::Null)});
            if let Some(signature) = block.get("signature") {
                out["thinkingSignature"] = signature.clone();
            }
            out
        }
        // `text` keeps its own shape (citations and all); anything else is an
        // extension block, kept as written.
        _ => block.clone(),
    }
}

/// A user line: each `tool_result` block becomes a tool result message, the other
/// blocks one user message after them.
fn user(
    message: &Map<String, Value>,
    tool_names: &HashMap<String, String>,
) -> Vec<Map<String, Value>> {
    let blocks = match message.get("content") {
        Some(Value::Array(blocks)) => blocks,
        other => {
            let mut out = Map::new();
            out.insert("role".into(), Value::String("user".into()));
            out.insert(
                "content".into(),
                other.cloned().unwrap_or(Value::String(String::new())),
            );
            return vec![out];
        }
    };
    let mut messages = Vec::new();
    let mut rest = Vec::new();
    for block in blocks {
        if block.get("type").and_then(Value::as_str) == Some("tool_result") {
            let call = block.get("tool_use_id").cloned().unwrap_or(Value::Null);
            let name = call
                .as_str()
                .and_then(|c| tool_names.get(c))
                .cloned()
                .unwrap_or_default();
            let content = match block.get("content") {
                Some(Value::Array(items)) => items.iter().map(content_block).collect(),
                Some(Value::String(text)) => vec![json!({"type": "text", "text": text})],
                _ => Vec::new(),
            };
            let is_error = block
                .get("is_error")
                .and_then(Value::as_bool)
                .unwrap_or(false);
            let mut out = Map::new();
            out.insert("role".into(), Value::String("toolResult".into()));
            out.insert("toolCallId".into(), call);
            out.insert("toolName".into(), Value::String(name));
            out.insert("content".into(), Value::Array(content));
            out.insert("isError".into(), Value::Bool(is_error));
            messages.push(out);
        } else {
            rest.push(content_block(block));
        }
    }
    if !rest.is_empty() || messages.is_empty() {
        let mut out = Map::new();
        out.insert("role".into(), Value::String("user".into()));
        out.insert("content".into(), Value::Array(rest));
        messages.push(out);
    }
    messages
}

/// A user-side content block: a base64 image becomes an `image` block; anything
/// else is kept as written (`text` as it is, others as extension blocks).
fn content_block(block: &Value) -> Value {
    let source = block.get("source");
    let is_base64 = source.and_then(|s| s.get("type")).and_then(Value::as_str) == Some("base64");
    if block.get("type").and_then(Value::as_str) == Some("image") && is_base64 {
        let get = |k: &str| {
            source
                .and_then(|s| s.get(k))
                .cloned()
                .unwrap_or(Value::Null)
        };
        return json!({"type": "image", "data": get("data"), "mimeType": get("media_type")});
    }
    block.clone()
}
