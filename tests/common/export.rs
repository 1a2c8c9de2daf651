//! The documented conversion of an export to Claude Code or Codex (docs/contract.md,
//! "Export to every agent"), applied to the messages of a context: what the agent is
//! expected to send for a session exported to it, given what libsession's context of the
//! source under that agent's profile holds.

use std::collections::HashSet;

use serde_json::{Value, json};

/// Whether the agent (`"claude-code"` or `"codex"`) has messages of `role`.
fn has_role(target: &str, role: &str) -> bool {
    match role {
        "user" | "assistant" | "toolResult" => true,
        "developer" | "system" => target == "codex",
        _ => false,
    }
}

/// `messages` (a context's, JSON texts) as the export to `target` writes them: a message
/// of a role the agent lacks is user text as pi makes it (a bash execution as its
/// command and output, a branch summary wrapped; otherwise its text blocks joined by
/// newlines, or its `summary`), moved after the results of the tool calls pending before it; for Claude
/// Code, a thinking block without a signature is left out, and so is a reply left
/// without blocks (a Codex item no block holds, reasoning alone), and a conversation
/// that then ends on the user's side gets Claude Code's "No response requested.".
pub fn as_exported(messages: &[String], target: &str) -> Vec<Value> {
    let mut out = Vec::new();
    let mut deferred = Vec::new();
    let mut pending = HashSet::new();
    for text in messages {
        let mut m: Value = serde_json::from_str(text).unwrap();
        let role = m["role"].as_str().unwrap_or("").to_owned();
        if target == "claude-code" && role == "assistant" {
            // Claude Code sends no thinking block without a signature, and no reply
            // left without blocks (a Codex item no block holds, reasoning alone).
            if let Some(Value::Array(blocks)) = m.get_mut("content") {
                blocks.retain(|b| {
                    b["type"] != "thinking"
                        || b["thinkingSignature"]
                            .as_str()
                            .is_some_and(|s| !s.is_empty())
                });
                if blocks.is_empty() {
                    continue;
                }
            }
        }
        match role.as_str() {
            "assistant" => {
                for b in m["content"].as_array().into_iter().flatten() {
                    if b["type"] == "toolCall" {
                        pending.insert(b["id"].as_str().unwrap_or("").to_owned());
                    }
                }
                out.push(m);
            }
            "toolResult" => {
                pending.remove(m["toolCallId"].as_str().unwrap_or(""));
                out.push(m);
                if pending.is_empty() {
                    out.append(&mut deferred);
                }
            }
            "user" => {
                pending.clear();
                out.append(&mut deferred);
                out.push(m);
            }
            r if has_role(target, r) => out.push(m),
            _ => {
                let Some(m) = as_user_text(&m) else {
                    continue;
                };
                match pending.is_empty() {
                    true => out.push(m),
                    false => deferred.push(m),
                }
            }
        }
    }
    out.append(&mut deferred);
    let user_side = out.last().is_some_and(|m| {
        (m["role"] == "user" && m.get("localCommand").is_none()) || m["role"] == "toolResult"
    });
    if target == "claude-code" && user_side {
        out.push(json!({"role": "assistant", "content": [{"type": "text", "text": "No response requested."}]}));
    }
    out
}

/// A message of a role the agent lacks as the user text pi's `convertToLlm` makes of it
/// (`None`: pi leaves it out).
fn as_user_text(m: &Value) -> Option<Value> {
    let text = match m["role"].as_str() {
        Some("bashExecution") if m["excludeFromContext"] == true => return None,
        Some("bashExecution") => {
            let mut text = format!("Ran `{}`\n", m["command"].as_str().unwrap_or(""));
            match m["output"].as_str().filter(|o| !o.is_empty()) {
                Some(output) => text.push_str(&format!("```\n{output}\n```")),
                None => text.push_str("(no output)"),
            }
            if m["cancelled"] == true {
                text.push_str("\n\n(command cancelled)");
            } else if m["exitCode"].is_number() && m["exitCode"] != 0 {
                text.push_str(&format!("\n\nCommand exited with code {}", m["exitCode"]));
            }
            if m["truncated"] == true
                && let Some(path) = m["fullOutputPath"].as_str().filter(|p| !p.is_empty())
            {
                text.push_str(&format!("\n\n[Output truncated. Full output: {path}]"));
            }
            text
        }
        Some("branchSummary") => format!(
            "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n{}</summary>",
            m["summary"].as_str().unwrap_or("")
        ),
        _ => {
            let blocks = match &m["content"] {
                Value::String(s) => vec![s.as_str()],
                Value::Array(b) => b
                    .iter()
                    .filter(|b| {
                        matches!(
                            b["type"].as_str(),
                            Some("text" | "input_text" | "output_text")
                        )
                    })
                    .filter_map(|b| b["text"].as_str())
                    .collect(),
                _ => Vec::new(),
            };
            match blocks.join("\n") {
                t if t.is_empty() => m["summary"].as_str().unwrap_or("").to_owned(),
                t => t,
            }
        }
    };
    Some(json!({"role": "user", "content": [{"type": "text", "text": text}]}))
}
