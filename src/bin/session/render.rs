//! The readable form of entries and messages: a role heading, text wrapped to the
//! width, a tool call as `name(args…)`, a tool result folded to a few lines, a
//! compaction as its summary, metadata as `KEY = value`. Every piece of text read from
//! a session is escaped for the terminal (`term`) before it is printed.

use std::io::{self, Write};

use serde_json::Value;

use crate::output::Out;
use crate::term;

/// The lines of a tool result, thinking or metadata value shown before the rest is
/// folded into `… (N more lines)`.
pub const FOLDED_LINES: usize = 4;
/// How much of a tool call's arguments is shown on its line.
const ARGS_CHARS: usize = 120;

/// What an entry is, for `--kind`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Kind {
    Message,
    Metadata,
    Compaction,
}

impl Kind {
    pub fn of(kind: &str) -> Option<Kind> {
        match kind {
            "message" => Some(Kind::Message),
            "metadata" => Some(Kind::Metadata),
            "compaction" => Some(Kind::Compaction),
            _ => None,
        }
    }
}

/// `--kind`, `--role`, `--limit`: which entries a verb shows. The same rule for every
/// verb that takes them: an entry is shown when its kind is one of `kinds` (default:
/// messages and compactions in the readable form, every kind under --json/--jsonl) and,
/// when `roles` are given, it is a message of one of them; `limit` keeps the last N.
#[derive(Clone, Debug, Default)]
pub struct Filter {
    pub kinds: Vec<Kind>,
    pub roles: Vec<String>,
    pub limit: Option<u64>,
}

impl Filter {
    /// Whether an entry of `kind` (the entry's `type`) and `role` is shown; `readable`
    /// says which default applies when no --kind was given.
    pub fn keeps(&self, kind: &str, role: Option<&str>, readable: bool) -> bool {
        let kind = Kind::of(kind);
        let kind_ok = if self.kinds.is_empty() {
            !readable || kind != Some(Kind::Metadata)
        } else {
            kind.is_some_and(|k| self.kinds.contains(&k))
        };
        let role_ok =
            self.roles.is_empty() || role.is_some_and(|r| self.roles.iter().any(|x| x == r));
        kind_ok && role_ok
    }

    /// `items` cut to the last `limit`.
    pub fn cut<T>(&self, mut items: Vec<T>) -> Vec<T> {
        if let Some(limit) = self.limit {
            let limit = usize::try_from(limit).unwrap_or(usize::MAX);
            if items.len() > limit {
                items.drain(..items.len() - limit);
            }
        }
        items
    }
}

/// How much of an entry's text a one-line summary shows.
pub const PREVIEW_CHARS: usize = 60;

/// One line about an entry: `ID  WHAT: PREVIEW` (`user`, `assistant [2 tool calls]`,
/// `toolResult read`, `metadata KEY`, `compaction`), every part safe for a terminal.
pub fn line(entry: &Value) -> String {
    let id = term::escape(entry["id"].as_str().unwrap_or("")).into_owned();
    let message = &entry["message"];
    let (what, text) = match entry["type"].as_str().unwrap_or("") {
        "message" => {
            let role = message["role"].as_str().unwrap_or("?");
            let calls = message["content"].as_array().map_or(0, |blocks| {
                blocks
                    .iter()
                    .filter(|b| b["type"].as_str() == Some("toolCall"))
                    .count()
            });
            let what = match (role, calls) {
                ("toolResult", _) => {
                    format!("toolResult {}", message["toolName"].as_str().unwrap_or(""))
                }
                (_, 0) => role.to_owned(),
                (_, 1) => format!("{role} [1 tool call]"),
                (_, n) => format!("{role} [{n} tool calls]"),
            };
            let mut text = match &message["content"] {
                Value::Array(blocks) => blocks
                    .iter()
                    .filter_map(|b| match b["type"].as_str() {
                        Some("text") => b["text"].as_str().map(str::to_owned),
                        Some("toolCall") => Some(call(b)),
                        _ => None,
                    })
                    .collect::<Vec<_>>()
                    .join(" "),
                other => plain_text(other),
            };
            if text.is_empty() {
                text = message["command"].as_str().unwrap_or("").to_owned();
            }
            (what, text)
        }
        "metadata" => (
            format!("metadata {}", entry["key"].as_str().unwrap_or("")),
            match &entry["value"] {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            },
        ),
        "compaction" => (
            "compaction".to_owned(),
            entry["summary"].as_str().unwrap_or("").to_owned(),
        ),
        other => (other.to_owned(), String::new()),
    };
    let flat = term::flatten(&text);
    let flat = flat.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut preview: String = flat.chars().take(PREVIEW_CHARS).collect();
    if preview.len() < flat.len() {
        preview.push('…');
    }
    format!("{id}  {}: {}", term::escape(&what), term::escape(&preview))
}

/// Prints one entry (a parsed entry line).
pub fn entry(out: &mut Out, entry: &Value) -> io::Result<()> {
    let id = entry["id"].as_str().unwrap_or("");
    match entry["type"].as_str().unwrap_or("") {
        "message" => message(out, &entry["message"], Some(id)),
        "compaction" => {
            let kept = entry["firstKeptEntryId"]
                .as_str()
                .map_or("nothing before it".to_owned(), |k| format!("from {k} on"));
            let title = format!("compaction (keeps {kept})");
            heading(out, "1;35", &title, Some(id))?;
            text(out, entry["summary"].as_str().unwrap_or(""), None)
        }
        "metadata" => {
            let key = entry["key"].as_str().unwrap_or("");
            heading(out, "2", &format!("metadata {key}"), Some(id))?;
            let value = match &entry["value"] {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            text(out, &value, Some(FOLDED_LINES))
        }
        other => {
            heading(out, "2", other, Some(id))?;
            Ok(())
        }
    }
}

/// Prints one message (the `message` of an entry, or one of a context's messages).
pub fn message(out: &mut Out, message: &Value, id: Option<&str>) -> io::Result<()> {
    let role = message["role"].as_str().unwrap_or("?");
    match role {
        "toolResult" => {
            let name = message["toolName"].as_str().unwrap_or("tool");
            let error = message["isError"].as_bool() == Some(true);
            let (style, title) = if error {
                ("1;31", format!("{name} failed"))
            } else {
                ("33", format!("{name} result"))
            };
            heading(out, style, &title, id)?;
            text(out, &plain_text(&message["content"]), Some(FOLDED_LINES))
        }
        "user" => {
            heading(out, "1;32", "user", id)?;
            blocks(out, &message["content"])
        }
        "assistant" => {
            heading(out, "1;34", "assistant", id)?;
            blocks(out, &message["content"])
        }
        "bashExecution" => {
            heading(out, "1;36", role, id)?;
            let command = message["command"].as_str().unwrap_or("");
            text(out, &format!("$ {command}"), None)?;
            text(
                out,
                message["output"].as_str().unwrap_or(""),
                Some(FOLDED_LINES),
            )
        }
        other => {
            heading(out, "1;36", other, id)?;
            let body = match message["summary"].as_str() {
                Some(summary) => summary.to_owned(),
                None => plain_text(&message["content"]),
            };
            text(out, &body, None)
        }
    }
}

/// The content of a user or assistant message: text, thinking (folded), tool calls.
fn blocks(out: &mut Out, content: &Value) -> io::Result<()> {
    let Some(items) = content.as_array() else {
        return text(out, content.as_str().unwrap_or(""), None);
    };
    for block in items {
        match block["type"].as_str().unwrap_or("") {
            "text" => text(out, block["text"].as_str().unwrap_or(""), None)?,
            "thinking" => {
                let thinking = block["thinking"].as_str().unwrap_or("");
                let shown = fold(&format!("(thinking) {thinking}"), 1);
                let line = out.paint("2", &shown);
                writeln!(out, "  {line}")?;
            }
            "toolCall" => {
                let call = call(block);
                let line = out.paint("36", &call);
                writeln!(out, "  {line}")?;
            }
            "image" => writeln!(out, "  [image]")?,
            other => writeln!(out, "  [{}]", term::escape(other))?,
        }
    }
    Ok(())
}

/// `name(arg=value, …)`: the arguments compact, cut to [`ARGS_CHARS`].
fn call(block: &Value) -> String {
    let name = term::escape(block["name"].as_str().unwrap_or("?")).into_owned();
    let args = match &block["arguments"] {
        Value::Object(map) => map
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(", "),
        Value::Null => String::new(),
        other => other.to_string(),
    };
    let args = term::flatten(&args);
    let cut: String = args.chars().take(ARGS_CHARS).collect();
    let more = if cut.len() < args.len() { "…" } else { "" };
    format!("{name}({}{more})", term::escape(&cut))
}

/// The text of a content value: a string, or its text blocks joined.
pub fn plain_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(items) => items
            .iter()
            .map(|b| match b["type"].as_str() {
                Some("text") => b["text"].as_str().unwrap_or("").to_owned(),
                Some(other) => format!("[{other}]"),
                None => String::new(),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// `TITLE  ID`, the title in `sgr`, the id dim.
fn heading(out: &mut Out, sgr: &str, title: &str, id: Option<&str>) -> io::Result<()> {
    let title = out.paint(sgr, &term::escape(title));
    match id {
        Some(id) => {
            let id = out.paint("2", &term::escape(id));
            writeln!(out, "{title}  {id}")
        }
        None => writeln!(out, "{title}"),
    }
}

/// `body` indented by two spaces and wrapped to the width; with `folded`, at most that
/// many lines, then `… (N more lines)`.
fn text(out: &mut Out, body: &str, folded: Option<usize>) -> io::Result<()> {
    let width = out.settings().width.saturating_sub(2).max(20);
    let mut lines = Vec::new();
    for line in body.trim_end().lines() {
        wrap(
            &term::escape(&line.replace('\t', "    ")),
            width,
            &mut lines,
        );
    }
    let shown = folded.unwrap_or(usize::MAX).min(lines.len());
    for line in &lines[..shown] {
        writeln!(out, "  {line}")?;
    }
    if lines.len() > shown {
        let more = format!("… ({} more lines)", lines.len() - shown);
        let more = out.paint("2", &more);
        writeln!(out, "  {more}")?;
    }
    Ok(())
}

/// `text` on at most `lines` lines (joined by spaces), then `…`.
fn fold(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let joined = all
        .iter()
        .take(lines)
        .copied()
        .collect::<Vec<_>>()
        .join(" ");
    let joined = term::escape(&joined).into_owned();
    let short: String = joined.chars().take(ARGS_CHARS).collect();
    if all.len() > lines || short.len() < joined.len() {
        format!("{short}…")
    } else {
        short
    }
}

/// Appends `line` to `lines`, broken at spaces so that no piece is wider than `width`
/// characters (a word longer than the width is broken inside).
pub fn wrap(line: &str, width: usize, lines: &mut Vec<String>) {
    if line.chars().count() <= width {
        lines.push(line.to_owned());
        return;
    }
    let mut current = String::new();
    let mut count = 0;
    for word in line.split(' ') {
        let len = word.chars().count();
        if count > 0 && count + 1 + len > width {
            lines.push(std::mem::take(&mut current));
            count = 0;
        }
        if count > 0 {
            current.push(' ');
            count += 1;
        }
        for c in word.chars() {
            if count == width {
                lines.push(std::mem::take(&mut current));
                count = 0;
            }
            current.push(c);
            count += 1;
        }
    }
    lines.push(current);
}

#[cfg(test)]
mod tests {
    use super::wrap;

    #[test]
    fn wrap_breaks_at_spaces_and_inside_words_longer_than_the_width() {
        let mut lines = Vec::new();
        wrap("aaa bbb ccc", 7, &mut lines);
        assert_eq!(lines, ["aaa bbb", "ccc"]);
        lines.clear();
        wrap("abcdefghij", 4, &mut lines);
        assert_eq!(lines, ["abcd", "efgh", "ij"]);
        lines.clear();
        wrap("short", 80, &mut lines);
        assert_eq!(lines, ["short"]);
    }
}
