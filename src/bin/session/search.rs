//! `search`: find text in the sessions of a folder, one hit per line, best first.

use std::io::Write;
use std::path::Path;

use session::search::IndexUse;
use session::{SearchQuery, search as find};

use crate::exit;
use crate::output::{Doc, Out, Outcome, note};
use crate::term;

pub fn search(out: &mut Out, dir: &Path, query: &SearchQuery) -> Outcome {
    let result = find(dir, query)?;
    if !out.readable() {
        out.emit(&Doc::One(result.to_json()))?;
    } else {
        for hit in &result.hits {
            writeln!(
                out,
                "{}  {}  {}  {}  {}",
                term::escape(&hit.path),
                term::escape(&hit.entry_id),
                term::escape(&hit.role),
                if hit.on_latest_path { "*" } else { "-" },
                term::escape(&term::flatten(&hit.snippet)),
            )?;
        }
        if result.index == IndexUse::Temporary {
            note(&format!(
                "searched without the index {}: it cannot be used here, so every file was read",
                dir.join(session::SIDECAR).display()
            ));
        }
        for error in &result.errors {
            let line = error
                .line
                .map_or_else(String::new, |l| format!(" line {l}"));
            note(&format!("{}{line}: {}", error.path, error.message));
        }
    }
    Ok(if result.errors.is_empty() {
        exit::for_state(session::State::Ready)
    } else {
        exit::damage()
    })
}
