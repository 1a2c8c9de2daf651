//! Reading a scanned message the way the writers need it: its text, its blocks, the
//! user text a role the agent lacks becomes, and the ids and times they write.

use super::super::time::millis_to_iso;
use crate::json::{Kind, Tape};

/// The text of a message scanned into `tape`: a string content, or its text blocks
/// (Codex's `input_text` and `output_text` parts too) joined by newlines.
pub(super) fn text_of(tape: &Tape) -> String {
    match tape.get(0, "content") {
        Some(c) if tape.nodes[c].kind == Kind::String => tape.string(c).into_owned(),
        Some(c) if tape.nodes[c].kind == Kind::Array => tape
            .elements(c)
            .filter(|&b| {
                tape.get(b, "type").is_some_and(|t| {
                    matches!(&*tape.string(t), "text" | "input_text" | "output_text")
                })
            })
            .filter_map(|b| tape.get(b, "text").map(|t| tape.string(t).into_owned()))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// The text a message of a role the agent lacks is sent as, the way pi's `convertToLlm`
/// turns it into a user message: a bash execution as its command and output, a branch
/// summary wrapped in pi's words, anything else its text (or its `summary`). `None` for
/// a bash execution pi leaves out of the context (`excludeFromContext`).
pub(super) fn user_text(tape: &Tape) -> Option<String> {
    let flag = |name: &str| tape.get(0, name).is_some_and(|v| tape.raw(v) == b"true");
    match string_member(tape, 0, "role").as_deref() {
        Some("bashExecution") if flag("excludeFromContext") => None,
        Some("bashExecution") => {
            let mut text = String::from("Ran `");
            text.push_str(&string_member(tape, 0, "command").unwrap_or_default());
            text.push_str("`\n");
            match string_member(tape, 0, "output").filter(|o| !o.is_empty()) {
                Some(output) => {
                    text.push_str("```\n");
                    text.push_str(&output);
                    text.push_str("\n```");
                }
                None => text.push_str("(no output)"),
            }
            let exit = tape
                .get(0, "exitCode")
                .filter(|&v| tape.nodes[v].kind == Kind::Number)
                .and_then(|v| std::str::from_utf8(tape.raw(v)).ok())
                .filter(|code| *code != "0");
            if flag("cancelled") {
                text.push_str("\n\n(command cancelled)");
            } else if let Some(code) = exit {
                text.push_str("\n\nCommand exited with code ");
                text.push_str(code);
            }
            if flag("truncated")
                && let Some(path) =
                    string_member(tape, 0, "fullOutputPath").filter(|p| !p.is_empty())
            {
                text.push_str("\n\n[Output truncated. Full output: ");
                text.push_str(&path);
                text.push(']');
            }
            Some(text)
        }
        Some("branchSummary") => {
            let mut text = String::from(
                "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n",
            );
            text.push_str(&string_member(tape, 0, "summary").unwrap_or_default());
            text.push_str("</summary>");
            Some(text)
        }
        _ => Some(match text_of(tape) {
            t if t.is_empty() => string_member(tape, 0, "summary").unwrap_or_default(),
            t => t,
        }),
    }
}

/// A top-level string member of the message scanned into `tape`.
pub(super) fn string_member(tape: &Tape, node: usize, name: &str) -> Option<String> {
    tape.get(node, name)
        .filter(|&v| tape.nodes[v].kind == Kind::String)
        .map(|v| tape.string(v).into_owned())
}

/// The text of a member's value as written (canonical JSON).
pub(super) fn raw_member<'t>(tape: &'t Tape, node: usize, name: &str) -> Option<&'t str> {
    tape.get(node, name)
        .and_then(|v| std::str::from_utf8(tape.raw(v)).ok())
}

/// A content block of a message, as the writers read it.
pub(super) enum Block<'t> {
    Text(String),
    Thinking {
        text: String,
        signature: Option<String>,
    },
    ToolCall {
        id: String,
        name: String,
        /// The arguments object as written.
        arguments: &'t str,
        /// Codex's own text of the arguments, kept by its import.
        raw_arguments: Option<String>,
    },
    Image {
        data: String,
        mime: String,
    },
    /// An extension block (`type` anything else), as written.
    Other {
        kind: String,
        raw: &'t str,
    },
}

/// The content of the message scanned into `tape` as blocks (a string content is one
/// text block).
pub(super) fn blocks(tape: &Tape) -> Vec<Block<'_>> {
    let Some(content) = tape.get(0, "content") else {
        return Vec::new();
    };
    match tape.nodes[content].kind {
        Kind::String => vec![Block::Text(tape.string(content).into_owned())],
        Kind::Array => tape.elements(content).map(|b| block(tape, b)).collect(),
        _ => Vec::new(),
    }
}

fn block(tape: &Tape, node: usize) -> Block<'_> {
    let kind = string_member(tape, node, "type").unwrap_or_default();
    let text = |name: &str| string_member(tape, node, name).unwrap_or_default();
    match kind.as_str() {
        "text" => Block::Text(text("text")),
        "thinking" => Block::Thinking {
            text: text("thinking"),
            signature: string_member(tape, node, "thinkingSignature"),
        },
        "toolCall" => Block::ToolCall {
            id: text("id"),
            name: text("name"),
            arguments: raw_member(tape, node, "arguments").unwrap_or("{}"),
            raw_arguments: string_member(tape, node, "rawArguments"),
        },
        "image" => Block::Image {
            data: text("data"),
            mime: text("mimeType"),
        },
        _ => Block::Other {
            kind,
            raw: std::str::from_utf8(tape.raw(node)).unwrap_or("{}"),
        },
    }
}

/// The ISO text of a millisecond timestamp (`toISOString`).
pub(super) fn iso(millis: f64) -> String {
    millis_to_iso(millis).unwrap_or_else(|| "1970-01-01T00:00:00.000Z".to_owned())
}

/// A UUID-shaped id made from `seed` (the agents name sessions by UUID): the same seed
/// gives the same id, so an export is reproducible.
pub(super) fn uuid_from(seed: &str) -> String {
    use std::hash::{Hash, Hasher};
    let half = |salt: u8| {
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        salt.hash(&mut hasher);
        seed.hash(&mut hasher);
        hasher.finish()
    };
    let (a, b) = (half(1), half(2));
    let hex = format!("{a:016x}{b:016x}");
    // Version 4, variant 1, so that a strict parser takes it.
    format!(
        "{}-{}-4{}-8{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[13..16],
        &hex[17..20],
        &hex[20..32]
    )
}

/// Whether `text` is a UUID in its canonical lowercase, hyphenated form.
pub(super) fn is_uuid(text: &str) -> bool {
    text.len() == 36
        && text.char_indices().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => c == '-',
            _ => c.is_ascii_hexdigit(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scanned(text: &str) -> Tape {
        let mut tape = Tape::default();
        crate::json::scan(text.as_bytes(), crate::json::MAX_DEPTH, &mut tape).unwrap();
        tape
    }

    #[test]
    fn a_made_up_session_id_is_a_uuid_and_the_same_for_the_same_seed() {
        let id = uuid_from("u-1");
        assert!(is_uuid(&id), "{id}");
        assert_eq!(&id[14..15], "4", "version 4");
        assert_eq!(uuid_from("u-1"), id);
        assert_ne!(uuid_from("u-2"), id);
        assert!(!is_uuid("codex-12"));
    }

    #[test]
    fn roles_the_agent_lacks_become_the_user_text_pi_makes_of_them() {
        let bash = scanned(
            r#"{"role":"bashExecution","command":"ls","output":"a\n","exitCode":2,"cancelled":false,"truncated":true,"fullOutputPath":"/tmp/o"}"#,
        );
        assert_eq!(
            user_text(&bash).unwrap(),
            "Ran `ls`\n```\na\n\n```\n\nCommand exited with code 2\n\n[Output truncated. Full output: /tmp/o]"
        );
        let quiet = scanned(r#"{"role":"bashExecution","command":"x","output":"","exitCode":0}"#);
        assert_eq!(user_text(&quiet).unwrap(), "Ran `x`\n(no output)");
        let hidden = scanned(r#"{"role":"bashExecution","command":"x","excludeFromContext":true}"#);
        assert_eq!(user_text(&hidden), None);
        let branch = scanned(r#"{"role":"branchSummary","summary":"s"}"#);
        assert!(
            user_text(&branch)
                .unwrap()
                .ends_with("<summary>\ns</summary>")
        );
        let developer = scanned(
            r#"{"role":"developer","content":[{"type":"input_text","text":"a"},{"type":"input_text","text":"b"}]}"#,
        );
        assert_eq!(user_text(&developer).unwrap(), "a\nb");
    }
}
