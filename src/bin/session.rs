//! `session`: restore, inspect and repair libsession JSONL files.
//!
//! Every command but `repair` opens the file read-only: it never creates, locks or
//! writes it, so it can run beside the agent that is writing the session.

use std::collections::HashMap;
use std::process::ExitCode;

use session::{Entry, EntryKind, Error, JsonlOptions, OpenReport, State, Store};

const USAGE: &str = "usage:
  session show FILE LEAF       the active path to LEAF and its messages
  session path FILE LEAF       the entries from the root to LEAF (JSON, one per line)
  session messages FILE LEAF   the messages on that path (JSON, one per line)
  session tree FILE [LEAF]     every branch as an indented tree; LEAF (default: the
                               last entry) and its path are marked
  session verify FILE          state, entry count and warnings
  session salvage FILE         read a damaged file: every good entry is counted and
                               every bad line reported
  session repair FILE          move an unterminated tail to a backup file and cut
                               the file to its committed lines

exit codes: 0 clean; 1 the file needs repair (or salvage found damage); 2 the file is
corrupt or the request failed; 3 an I/O error; 4 the file is locked by a writer;
64 a usage error";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let result = match argv.as_slice() {
        ["show", file, leaf] => show(file, leaf),
        ["path", file, leaf] => path(file, leaf),
        ["messages", file, leaf] => messages(file, leaf),
        ["tree", file] => tree(file, None),
        ["tree", file, leaf] => tree(file, Some(leaf)),
        ["verify", file] => verify(file),
        ["salvage", file] => salvage(file),
        ["repair", file] => repair(file),
        ["-h" | "--help" | "help"] => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        _ => {
            eprintln!("{USAGE}");
            return ExitCode::from(64);
        }
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("session: {e}");
            ExitCode::from(match e {
                Error::Io(_) => 3,
                Error::Locked { .. } => 4,
                _ => 2,
            })
        }
    }
}

/// Opens a file read-only (never creating or locking it), reporting its warnings.
fn open(file: &str, salvage: bool) -> Result<(Store, OpenReport), Error> {
    let options = JsonlOptions {
        read_only: true,
        salvage,
        ..JsonlOptions::default()
    };
    let opened = Store::open_jsonl_with(file, &options)?;
    for warning in &opened.1.warnings {
        eprintln!("session: warning: {warning}");
    }
    Ok(opened)
}

fn print_lines<'a>(items: impl ExactSizeIterator<Item = &'a str>) {
    println!("[");
    let count = items.len();
    for (i, item) in items.enumerate() {
        let comma = if i + 1 < count { "," } else { "" };
        println!("  {item}{comma}");
    }
    println!("]");
}

fn describe(entry: &Entry) -> String {
    match entry.kind() {
        EntryKind::Message(role) => format!("{} ({})", entry.id(), role.as_str()),
        EntryKind::Metadata => format!(
            "{} (metadata {})",
            entry.id(),
            entry.metadata().map(|(k, _)| k).unwrap_or_default()
        ),
        EntryKind::Compaction => format!("{} (compaction)", entry.id()),
    }
}

fn show(file: &str, leaf: &str) -> Result<ExitCode, Error> {
    let (store, report) = open(file, false)?;
    let path = store.path_to(leaf)?;
    let messages = store.messages_on_path(leaf)?;
    println!("state: {}", report.state.as_str());
    let steps: Vec<String> = path.iter().map(describe).collect();
    println!(
        "active path ({} entries): {}",
        path.len(),
        steps.join(" -> ")
    );
    println!("messages ({}):", messages.len());
    print_lines(messages.iter().map(|m| m.json()));
    Ok(ExitCode::SUCCESS)
}

fn path(file: &str, leaf: &str) -> Result<ExitCode, Error> {
    let (store, _) = open(file, false)?;
    let path = store.path_to(leaf)?;
    print_lines(path.iter().map(Entry::json));
    Ok(ExitCode::SUCCESS)
}

fn messages(file: &str, leaf: &str) -> Result<ExitCode, Error> {
    let (store, _) = open(file, false)?;
    let messages = store.messages_on_path(leaf)?;
    print_lines(messages.iter().map(|m| m.json()));
    Ok(ExitCode::SUCCESS)
}

fn verify(file: &str) -> Result<ExitCode, Error> {
    let (store, report) = open(file, false)?;
    println!("state: {}", report.state.as_str());
    println!("entries: {}", store.len()?);
    println!(
        "warnings: {}",
        session::store::warnings_json(&report.warnings)
    );
    Ok(exit_for(report.state))
}

fn exit_for(state: State) -> ExitCode {
    match state {
        State::Ready => ExitCode::SUCCESS,
        _ => ExitCode::from(1),
    }
}

fn salvage(file: &str) -> Result<ExitCode, Error> {
    let (store, report) = open(file, true)?;
    println!("entries loaded: {}", store.len()?);
    println!("complete: {}", report.diagnostics.is_empty());
    for diagnostic in &report.diagnostics {
        println!("{}", diagnostic.to_json());
    }
    Ok(if report.diagnostics.is_empty() {
        exit_for(report.state)
    } else {
        ExitCode::from(1)
    })
}

fn repair(file: &str) -> Result<ExitCode, Error> {
    let report = session::repair_jsonl(file)?;
    match &report.backup {
        Some(backup) => println!(
            "removed an unterminated tail of {} bytes (saved to {}); {} committed entries kept",
            report.truncated_bytes,
            backup.display(),
            report.entries
        ),
        None => println!("nothing to repair; {} committed entries", report.entries),
    }
    Ok(ExitCode::SUCCESS)
}

/// How much of a message's text the tree shows.
const PREVIEW_CHARS: usize = 48;

fn tree(file: &str, leaf: Option<&str>) -> Result<ExitCode, Error> {
    let (store, report) = open(file, false)?;
    let entries = store.entries()?;
    let Some(last) = entries.last() else {
        println!("(no entries)");
        return Ok(exit_for(report.state));
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
    Ok(exit_for(report.state))
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
        EntryKind::Compaction => ("compaction".to_owned(), String::new()),
    };
    let flat: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
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
