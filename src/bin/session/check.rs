//! `verify`, `salvage`, `repair`: the state of a file and mending it.

use std::io::Write;
use std::path::Path;

use crate::exit;
use crate::output::{Doc, Out, Outcome, open, open_with};
use crate::progress::Progress;
use crate::term;
use session::Verify;

/// Always checks every line at open, whatever a session index covers. A spinner
/// shows on stderr meanwhile, when stderr is a terminal.
pub fn verify(out: &mut Out, file: &Path) -> Outcome {
    let progress = Progress::spinner("verifying");
    let (store, report) = open_with(file, false, Verify::Full)?;
    drop(progress);
    if !out.readable() {
        let doc = format!(
            "{{\"state\":\"{}\",\"entries\":{},\"warnings\":{}}}",
            report.state.as_str(),
            store.len()?,
            session::store::warnings_json(&report.warnings)
        );
        out.emit(&Doc::One(doc))?;
        return Ok(exit::for_state(report.state));
    }
    writeln!(out, "state: {}", report.state.as_str())?;
    writeln!(out, "entries: {}", store.len()?)?;
    writeln!(
        out,
        "warnings: {}",
        term::json(&session::store::warnings_json(&report.warnings))
    )?;
    Ok(exit::for_state(report.state))
}

pub fn salvage(out: &mut Out, file: &Path) -> Outcome {
    let (store, report) = open(file, true)?;
    let diagnostics: Vec<String> = report.diagnostics.iter().map(|d| d.to_json()).collect();
    if !out.readable() {
        let doc = format!(
            "{{\"entries\":{},\"complete\":{},\"diagnostics\":[{}]}}",
            store.len()?,
            diagnostics.is_empty(),
            diagnostics.join(",")
        );
        out.emit(&Doc::One(doc))?;
    } else {
        writeln!(out, "entries loaded: {}", store.len()?)?;
        writeln!(out, "complete: {}", report.diagnostics.is_empty())?;
        for diagnostic in &diagnostics {
            writeln!(out, "{}", term::json(diagnostic))?;
        }
    }
    Ok(if report.diagnostics.is_empty() {
        exit::for_state(report.state)
    } else {
        exit::damage()
    })
}

/// A spinner shows on stderr meanwhile, when stderr is a terminal.
pub fn repair(out: &mut Out, file: &Path) -> Outcome {
    let progress = Progress::spinner("repairing");
    let report = session::repair_jsonl(file)?;
    drop(progress);
    if !out.readable() {
        out.emit(&Doc::One(report.to_json()))?;
        return Ok(exit::for_state(session::State::Ready));
    }
    match &report.backup {
        Some(backup) => writeln!(
            out,
            "removed an unterminated tail of {} bytes (saved to {}); {} committed entries kept",
            report.truncated_bytes,
            term::escape(&backup.display().to_string()),
            report.entries
        )?,
        None => writeln!(
            out,
            "nothing to repair; {} committed entries",
            report.entries
        )?,
    }
    Ok(exit::for_state(session::State::Ready))
}
