//! `session`: restore and inspect libsession JSONL files from the command line.
//!
//! ```text
//! session show FILE LEAF       the active path to LEAF and its messages
//! session path FILE LEAF       the entries from the root to LEAF (JSON, one per line)
//! session messages FILE LEAF   the messages on that path (JSON, one per line)
//! session verify FILE          state, entry count and warnings
//! ```
//!
//! Exit codes: 0 clean; 1 the file needs repair (an unterminated tail); 2 the file is
//! corrupt or the request failed (unknown leaf, …); 3 an I/O error; 64 a usage error.

use std::path::Path;
use std::process::ExitCode;

use session::{Entry, EntryKind, Error, OpenReport, State, Store};

const USAGE: &str = "usage:
  session show FILE LEAF       the active path to LEAF and its messages
  session path FILE LEAF       the entries from the root to LEAF (JSON, one per line)
  session messages FILE LEAF   the messages on that path (JSON, one per line)
  session verify FILE          state, entry count and warnings";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let result = match argv.as_slice() {
        ["show", file, leaf] => show(file, leaf),
        ["path", file, leaf] => path(file, leaf),
        ["messages", file, leaf] => messages(file, leaf),
        ["verify", file] => verify(file),
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
                _ => 2,
            })
        }
    }
}

/// Opens an existing file; a read must not create one.
fn open(file: &str) -> Result<(Store, OpenReport), Error> {
    if !Path::new(file).is_file() {
        let e = std::io::Error::new(std::io::ErrorKind::NotFound, "no such file");
        return Err(Error::Io(std::sync::Arc::new(session::IoFailure {
            op: session::IoOp::Open,
            kind: e.kind(),
            os_error: None,
            message: format!("open {file} failed: {e}"),
        })));
    }
    let opened = Store::open_jsonl(file)?;
    for warning in &opened.1.warnings {
        eprintln!("session: warning: {warning}");
    }
    Ok(opened)
}

fn print_lines<'a>(items: impl Iterator<Item = &'a str>) {
    println!("[");
    let items: Vec<&str> = items.collect();
    for (i, item) in items.iter().enumerate() {
        let comma = if i + 1 < items.len() { "," } else { "" };
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
    }
}

fn show(file: &str, leaf: &str) -> Result<ExitCode, Error> {
    let (store, report) = open(file)?;
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
    let (store, _) = open(file)?;
    let path = store.path_to(leaf)?;
    print_lines(path.iter().map(Entry::json));
    Ok(ExitCode::SUCCESS)
}

fn messages(file: &str, leaf: &str) -> Result<ExitCode, Error> {
    let (store, _) = open(file)?;
    let messages = store.messages_on_path(leaf)?;
    print_lines(messages.iter().map(|m| m.json()));
    Ok(ExitCode::SUCCESS)
}

fn verify(file: &str) -> Result<ExitCode, Error> {
    let (store, report) = open(file)?;
    println!("state: {}", report.state.as_str());
    println!("entries: {}", store.len()?);
    println!(
        "warnings: {}",
        session::store::warnings_json(&report.warnings)
    );
    Ok(match report.state {
        State::Ready => ExitCode::SUCCESS,
        _ => ExitCode::from(1),
    })
}
