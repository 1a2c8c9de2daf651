//! `show`, `path`, `messages`: reading the active path to a leaf.
//!
//! Each produces values (the path's entries, or its messages), filtered by `--kind`,
//! `--role` and `--limit`; `output` prints them as JSON, `render` as a conversation.

use std::io::Write;

use session::{Entry, EntryKind, Role, State};

use crate::exit;
use crate::location::Location;
use crate::output::{Doc, Failure, Opened, Out, Outcome, leaf_or_default, note, open_at, parsed};
use crate::render::{self, Filter};
use crate::term;

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

/// An entry's kind and role from the facts the library parsed; the JSON is read only
/// for an extension role's own name.
fn kind_and_role(entry: &Entry) -> (&'static str, Option<String>) {
    match entry.kind() {
        EntryKind::Message(Role::Extension) => {
            let message = entry.message_json().map(parsed).unwrap_or_default();
            ("message", message["role"].as_str().map(str::to_owned))
        }
        EntryKind::Message(role) => ("message", Some(role.as_str().to_owned())),
        EntryKind::Metadata => ("metadata", None),
        EntryKind::Compaction => ("compaction", None),
        // EntryKind is non_exhaustive: a kind this tool predates is kept as "other".
        _ => ("other", None),
    }
}

/// The path's entries that `filter` keeps (metadata a person does not see is never
/// parsed).
fn kept_entries<'a>(out: &Out, path: &'a [Entry], filter: &Filter) -> Vec<&'a Entry> {
    let readable = out.readable();
    let kept = path
        .iter()
        .filter(|e| {
            let (kind, role) = kind_and_role(e);
            filter.keeps(kind, role.as_deref(), readable)
        })
        .collect();
    filter.cut(kept)
}

/// `N of M shown (K metadata hidden: --kind metadata)`, when a filter left some out.
fn hidden(shown: usize, total: usize, filter: &Filter) -> String {
    if shown == total {
        return String::new();
    }
    let how = if filter.kinds.is_empty() && filter.roles.is_empty() && filter.limit.is_none() {
        "; metadata hidden: --kind metadata shows it"
    } else {
        ""
    };
    format!(" ({shown} shown{how})")
}

/// The store at `at`, the leaf (`leaf`, or the default leaf) and the path to it: what
/// `show` and `path` read.
fn open_path(at: &Location, leaf: Option<&str>) -> Result<(Opened, String, Vec<Entry>), Failure> {
    let opened = open_at(at)?;
    let leaf = leaf_or_default(&opened.store, leaf)?;
    let path = opened.store.path_to(&leaf)?;
    Ok((opened, leaf, path))
}

/// Prints `kept` under --json/--jsonl (each entry its line) and says so; the readable
/// form is the caller's.
fn emitted(out: &mut Out, kept: &[&Entry]) -> std::io::Result<bool> {
    if out.readable() {
        return Ok(false);
    }
    out.emit(&Doc::Many(
        kept.iter().map(|e| e.json().to_owned()).collect(),
    ))?;
    Ok(true)
}

pub fn show(out: &mut Out, at: &Location, leaf: Option<&str>, filter: &Filter) -> Outcome {
    let (opened, leaf, path) = open_path(at, leaf)?;
    let kept = kept_entries(out, &path, filter);
    if emitted(out, &kept)? {
        return Ok(finish_read(out, &opened)?);
    }
    let title = format!(
        "{}  state {}, leaf {leaf}, {} entries on the path{}",
        at.describe(),
        opened.state.as_str(),
        path.len(),
        hidden(kept.len(), path.len(), filter)
    );
    let title = out.paint("1", &term::escape(&title));
    writeln!(out, "{title}")?;
    if let Some(line) = compaction_in_force(&path) {
        writeln!(out, "{}", term::escape(&line))?;
    }
    for entry in &kept {
        writeln!(out)?;
        render::entry(out, &parsed(entry.json()))?;
    }
    Ok(finish_read(out, &opened)?)
}

pub fn path(out: &mut Out, at: &Location, leaf: Option<&str>, filter: &Filter) -> Outcome {
    let (opened, leaf, path) = open_path(at, leaf)?;
    let kept = kept_entries(out, &path, filter);
    if emitted(out, &kept)? {
        return Ok(finish_read(out, &opened)?);
    }
    if kept.len() < path.len() {
        let note = format!(
            "{} entries on the path to {leaf}{}",
            path.len(),
            hidden(kept.len(), path.len(), filter)
        );
        let note = out.paint("2", &term::escape(&note));
        writeln!(out, "{note}")?;
    }
    for entry in &kept {
        let line = render::line(&parsed(entry.json()));
        writeln!(out, "{line}")?;
    }
    Ok(finish_read(out, &opened)?)
}

pub fn messages(out: &mut Out, at: &Location, leaf: Option<&str>, filter: &Filter) -> Outcome {
    let opened = open_at(at)?;
    let leaf = &leaf_or_default(&opened.store, leaf)?;
    let messages = opened.store.messages_on_path(leaf)?;
    let kept: Vec<_> = messages
        .iter()
        .map(|m| (m, parsed(m.json())))
        .filter(|(_, v)| filter.keeps("message", v["role"].as_str(), out.readable()))
        .collect();
    let kept = filter.cut(kept);
    if !out.readable() {
        out.emit(&Doc::Many(
            kept.iter().map(|(m, _)| m.json().to_owned()).collect(),
        ))?;
        return Ok(finish_read(out, &opened)?);
    }
    for (i, (_, value)) in kept.iter().enumerate() {
        if i > 0 {
            writeln!(out)?;
        }
        render::message(out, value, None)?;
    }
    Ok(finish_read(out, &opened)?)
}

/// After the output: a file that needs repair exits 1, as `verify` and `tree` do, with
/// a note that the output left its unterminated tail out.
pub fn finish_read(out: &mut Out, opened: &Opened) -> std::io::Result<std::process::ExitCode> {
    if opened.state != State::Ready {
        out.flush()?;
        note(&format!(
            "note: {} needs repair; the output shows its committed entries only (session repair FILE)",
            opened.location.describe()
        ));
    }
    Ok(exit::for_state(opened.state))
}
