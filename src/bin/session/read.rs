//! `show`, `path`, `messages`: reading the active path to a leaf.

use std::process::ExitCode;

use session::{Entry, EntryKind, Error};

use crate::output::{open, print_lines};

fn describe(entry: &Entry) -> String {
    match entry.kind() {
        EntryKind::Message(role) => format!("{} ({})", entry.id(), role.as_str()),
        EntryKind::Metadata => format!(
            "{} (metadata {})",
            entry.id(),
            entry.metadata().map(|(k, _)| k).unwrap_or_default()
        ),
        // EntryKind is non_exhaustive: a kind this tool predates still prints its id.
        _ => entry.id().to_owned(),
    }
}

pub fn show(file: &str, leaf: &str) -> Result<ExitCode, Error> {
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

pub fn path(file: &str, leaf: &str) -> Result<ExitCode, Error> {
    let (store, _) = open(file, false)?;
    let path = store.path_to(leaf)?;
    print_lines(path.iter().map(Entry::json));
    Ok(ExitCode::SUCCESS)
}

pub fn messages(file: &str, leaf: &str) -> Result<ExitCode, Error> {
    let (store, _) = open(file, false)?;
    let messages = store.messages_on_path(leaf)?;
    print_lines(messages.iter().map(|m| m.json()));
    Ok(ExitCode::SUCCESS)
}
