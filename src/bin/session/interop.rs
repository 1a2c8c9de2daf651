//! `import` and `export`: sessions of other agents in, pi sessions out.

use std::path::Path;
use std::process::ExitCode;

use session::Error;
use session::interop::{Format, export_pi_file, import_file};

use crate::output::open;

/// Imports `source` (a pi, Claude Code or Codex session file) into a new libsession
/// file `out`; the report goes to stderr as one JSON object.
pub fn import(format: Format, source: &str, out: &str) -> Result<ExitCode, Error> {
    let report = import_file(format, Path::new(source), Path::new(out))?;
    eprintln!("{}", report.to_json());
    Ok(ExitCode::SUCCESS)
}

/// Writes the tree of `file` as a new pi session file `out` that resumes at `leaf`.
pub fn export_pi(file: &str, leaf: &str, out: &str) -> Result<ExitCode, Error> {
    let (store, _) = open(file, false)?;
    let entries = store.entries()?;
    export_pi_file(&entries, leaf, Path::new(out))?;
    Ok(ExitCode::SUCCESS)
}
