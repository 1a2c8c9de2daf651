//! `verify`, `salvage`, `repair`: the state of a file and mending it.

use std::process::ExitCode;

use session::Error;

use crate::exit;
use crate::output::open;

pub fn verify(file: &str) -> Result<ExitCode, Error> {
    let (store, report) = open(file, false)?;
    println!("state: {}", report.state.as_str());
    println!("entries: {}", store.len()?);
    println!(
        "warnings: {}",
        session::store::warnings_json(&report.warnings)
    );
    Ok(exit::for_state(report.state))
}

pub fn salvage(file: &str) -> Result<ExitCode, Error> {
    let (store, report) = open(file, true)?;
    println!("entries loaded: {}", store.len()?);
    println!("complete: {}", report.diagnostics.is_empty());
    for diagnostic in &report.diagnostics {
        println!("{}", diagnostic.to_json());
    }
    Ok(if report.diagnostics.is_empty() {
        exit::for_state(report.state)
    } else {
        exit::damage()
    })
}

pub fn repair(file: &str) -> Result<ExitCode, Error> {
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
