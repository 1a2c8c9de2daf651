//! `import` and `export`: sessions of other agents in and out.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use session::Error;
use session::Format;
use session::interop::{ExportOptions, ImportOptions, export_file, import_file_with};

use crate::exit;
use crate::output::{
    Doc, Out, Outcome, Source, leaf_or_default, note, open, outputs_no_wider_than,
};
use crate::progress::Progress;

/// Imports `source` (a pi, Claude Code or Codex session file) into a new libsession
/// file `out` (never overwriting one); the report goes to stderr as one JSON line.
/// `format` `None` detects it; `out` is no wider in mode than `source`. A source that
/// looks like another format than the one given fails (exit 2) naming the one to use;
/// nothing is written. A progress line shows on stderr while it reads, when stderr is
/// a terminal. With `redact`, secrets are replaced in the entries written.
pub fn import(
    stdout: &mut Out,
    format: Option<Format>,
    source: &Path,
    out: &Path,
    redact: bool,
) -> Outcome {
    outputs_no_wider_than(Source::File(source));
    let progress = Progress::bytes("importing");
    let options = ImportOptions {
        redact: Some(redact),
        ..ImportOptions::default()
    };
    let imported = import_file_with(format, source, out, &options, &mut |p| progress.import(p));
    drop(progress);
    let report = match imported {
        Ok(report) => report,
        Err(Error::NotImportable {
            detected: Some(found),
            requested: Some(asked),
        }) if found != asked => {
            note(&format!(
                "this looks like a {}, not a {}; use --from {} or auto",
                found.description(),
                asked.description(),
                found.name()
            ));
            return Ok(ExitCode::from(exit::FAILED));
        }
        Err(e) => return Err(e.into()),
    };
    if !stdout.readable() {
        let mut doc = Vec::new();
        report.write_json(&mut doc)?;
        stdout.emit(&Doc::One(String::from_utf8_lossy(&doc).into_owned()))?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut stderr = std::io::BufWriter::new(std::io::stderr().lock());
    let _ = report
        .write_json(&mut stderr)
        .and_then(|()| writeln!(stderr))
        .and_then(|()| stderr.flush());
    Ok(ExitCode::SUCCESS)
}

/// Writes `file` as a new session file `out` of `format` that resumes at `leaf`
/// (default: the default leaf: the one an imported session's agent
/// resumes, else the latest); the report goes to stderr as one JSON line. Secrets are
/// redacted unless `redact` is false.
pub fn export(
    stdout: &mut Out,
    format: Format,
    file: &Path,
    leaf: Option<&str>,
    out: &Path,
    redact: bool,
) -> Outcome {
    let (store, _) = open(file, false)?;
    let leaf = leaf_or_default(&store, leaf)?;
    drop(store);
    let options = ExportOptions {
        leaf: Some(leaf),
        redact: Some(redact),
        ..ExportOptions::default()
    };
    let report = export_file(format, file, out, &options)?;
    if !stdout.readable() {
        stdout.emit(&Doc::One(report.to_json()))?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut stderr = std::io::BufWriter::new(std::io::stderr().lock());
    let _ = writeln!(stderr, "{}", report.to_json()).and_then(|()| stderr.flush());
    Ok(ExitCode::SUCCESS)
}
