//! `tree`: every branch as an indented tree.

use std::collections::HashMap;
use std::process::ExitCode;

use session::{Entry, EntryKind, Error};

use crate::exit;
use crate::output::open;
use crate::term;

/// How much of a message's text the tree shows.
const PREVIEW_CHARS: usize = 48;

pub fn tree(file: &str, leaf: Option<&str>) -> Result<ExitCode, Error> {
    let (store, report) = open(file, false)?;
    let entries = store.entries()?;
    let Some(last) = entries.last() else {
        println!("(no entries)");
        return Ok(exit::for_state(report.state));
    };
    let leaf = leaf.unwrap_or(last.id());
    let on_path: Vec<String> = store
        .path_to(leaf)?
        .iter()
        .map(|e| e.id().to_owned())
        .collect();
    let mut children: HashMap<Option<&str>, Vec<&Entry>> = HashMap::new();
    for entry in &entries {
        children.entry(entry.parent_id()).or_default().push(entry);
    }
    // Depth-first with an explicit stack: a session can be 100,000 entries deep.
    // Each item: the entry, its indent, and its connector (empty for a root).
    let mut stack: Vec<(&Entry, String, &str)> = Vec::new();
    let roots = children.get(&None).cloned().unwrap_or_default();
    stack.extend(roots.iter().rev().map(|root| (*root, String::new(), "")));
    while let Some((entry, indent, connector)) = stack.pop() {
        let mark = if entry.id() == leaf {
            "  <== leaf"
        } else if on_path.iter().any(|id| id == entry.id()) {
            "  *"
        } else {
            ""
        };
        println!(
            "{indent}{connector}{}  {}{mark}",
            entry.id(),
            preview(entry)
        );
        let child_indent = match connector {
            "├─ " => format!("{indent}│  "),
            "└─ " => format!("{indent}   "),
            _ => indent,
        };
        let kids = children.get(&Some(entry.id())).cloned().unwrap_or_default();
        for (i, kid) in kids.iter().enumerate().rev() {
            let connector = if i + 1 == kids.len() {
                "└─ "
            } else {
                "├─ "
            };
            stack.push((kid, child_indent.clone(), connector));
        }
    }
    Ok(exit::for_state(report.state))
}

/// `role: text…` for a message, `key = value` for metadata, on one short line.
fn preview(entry: &Entry) -> String {
    let (label, text) = match entry.kind() {
        EntryKind::Message(role) => (
            role.as_str().to_owned(),
            first_text(entry.message_json().unwrap_or_default()),
        ),
        EntryKind::Metadata => {
            let (key, value) = entry.metadata().unwrap_or_default();
            (format!("metadata {key}"), value.to_owned())
        }
        _ => ("entry".to_owned(), String::new()),
    };
    let flat = term::flatten(&text);
    let short: String = flat.chars().take(PREVIEW_CHARS).collect();
    let ellipsis = if flat.chars().count() > PREVIEW_CHARS {
        "…"
    } else {
        ""
    };
    format!("{label}: {short}{ellipsis}")
}

/// The first text a person would read in a message: a string content, a text block,
/// or the name and arguments of a tool call.
fn first_text(message_json: &str) -> String {
    let Ok(message) = serde_json::from_str::<serde_json::Value>(message_json) else {
        return String::new();
    };
    let content = &message["content"];
    if let Some(text) = content.as_str() {
        return text.to_owned();
    }
    for block in content.as_array().into_iter().flatten() {
        match block["type"].as_str() {
            Some("text") => return block["text"].as_str().unwrap_or_default().to_owned(),
            Some("toolCall") => {
                return format!(
                    "toolCall {} {} {}",
                    block["id"].as_str().unwrap_or_default(),
                    block["name"].as_str().unwrap_or_default(),
                    block["arguments"]
                );
            }
            _ => {}
        }
    }
    String::new()
}
