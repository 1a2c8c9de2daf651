//! `show`, `path`, `messages`: reading the active path to a leaf.

use std::io::Write;
use std::path::Path;

use session::{Entry, EntryKind, OpenReport, State};

use crate::exit;
use crate::output::{Out, Outcome, leaf_or_default, note, open, print_lines};
use crate::term;

fn describe(entry: &Entry) -> String {
    match entry.kind() {
        EntryKind::Message(role) => {
            // Role::as_str says only "extension" for an extension role: print the name.
            let name = role_name(entry).unwrap_or_else(|| role.as_str().to_owned());
            format!("{} ({name})", entry.id())
        }
        EntryKind::Metadata => format!(
            "{} (metadata {})",
            entry.id(),
            entry.metadata().map(|(k, _)| k).unwrap_or_default()
        ),
        EntryKind::Compaction => match first_kept(entry) {
            Some(id) => format!("{} (compaction, keeps from {id})", entry.id()),
            None => format!("{} (compaction, keeps nothing before it)", entry.id()),
        },
        // EntryKind is non_exhaustive: a kind this tool predates still prints its id.
        _ => entry.id().to_owned(),
    }
}

/// A message's `role` as written in the entry (an extension role's own name).
fn role_name(entry: &Entry) -> Option<String> {
    let message: serde_json::Value = serde_json::from_str(entry.message_json()?).ok()?;
    message["role"].as_str().map(str::to_owned)
}

/// A compaction's `firstKeptEntryId`; `None` when it is null.
fn first_kept(entry: &Entry) -> Option<String> {
    let value: serde_json::Value = serde_json::from_str(entry.json()).ok()?;
    value["firstKeptEntryId"].as_str().map(str::to_owned)
}

/// The line `show` adds when a compaction decides what the model sees: the latest one
/// on the path counts (the contract, §7.1).
fn compaction_in_force(path: &[Entry]) -> Option<String> {
    let c = path
        .iter()
        .rev()
        .find(|e| matches!(e.kind(), EntryKind::Compaction))?;
    let kept = match first_kept(c) {
        Some(id) => format!("the messages from {id} on"),
        None => "the messages after it".to_owned(),
    };
    Some(format!(
        "compaction in force: {} (the model sees its summary, then {kept}: session context FILE LEAF)",
        c.id()
    ))
}

pub fn show(out: &mut Out, file: &Path, leaf: Option<&str>) -> Outcome {
    let (store, report) = open(file, false)?;
    let leaf = &leaf_or_default(&store, leaf)?;
    let path = store.path_to(leaf)?;
    let messages = store.messages_on_path(leaf)?;
    writeln!(out, "state: {}", report.state.as_str())?;
    let steps: Vec<String> = path.iter().map(describe).collect();
    writeln!(
        out,
        "active path ({} entries): {}",
        path.len(),
        term::escape(&steps.join(" -> "))
    )?;
    if let Some(line) = compaction_in_force(&path) {
        writeln!(out, "{}", term::escape(&line))?;
    }
    writeln!(out, "messages ({}):", messages.len())?;
    let safe: Vec<_> = messages.iter().map(|m| term::json(m.json())).collect();
    print_lines(out, safe.iter().map(|m| m.as_ref()))?;
    Ok(finish_read(out, file, &report)?)
}

pub fn path(out: &mut Out, file: &Path, leaf: Option<&str>) -> Outcome {
    let (store, report) = open(file, false)?;
    let leaf = &leaf_or_default(&store, leaf)?;
    let path = store.path_to(leaf)?;
    print_lines(out, path.iter().map(Entry::json))?;
    Ok(finish_read(out, file, &report)?)
}

pub fn messages(out: &mut Out, file: &Path, leaf: Option<&str>) -> Outcome {
    let (store, report) = open(file, false)?;
    let leaf = &leaf_or_default(&store, leaf)?;
    let messages = store.messages_on_path(leaf)?;
    print_lines(out, messages.iter().map(|m| m.json()))?;
    Ok(finish_read(out, file, &report)?)
}

/// After the output: a file that needs repair exits 1, as `verify` and `tree` do, with
/// a note that the output left its unterminated tail out.
fn finish_read(
    out: &mut Out,
    file: &Path,
    report: &OpenReport,
) -> std::io::Result<std::process::ExitCode> {
    if report.state != State::Ready {
        out.flush()?;
        note(&format!(
            "note: {} needs repair; the output shows its committed entries only (session repair FILE)",
            file.display()
        ));
    }
    Ok(exit::for_state(report.state))
}
