//! Importing the session files of other agents (pi, Claude Code, Codex) into
//! libsession entries, and exporting a libsession tree as a pi session file.
//!
//! An import is a faithful copy: every line of the source ends up in the output,
//! either as what it says (a message, a compaction, a label) or, when it cannot be
//! mapped, as a `metadata` entry holding its raw text and line number. Nothing is
//! dropped silently; the [`ImportReport`] lists every line that was not mapped as
//! what it says. A compaction that the contract's §6.2 would refuse at append is
//! written anyway (the source agent accepted it; open-time replay does not re-check
//! compactions) and listed in the report, so `build_context` of a leaf under it
//! reports `invalid_compaction` instead of a silently different context.
//!
//! One module per format: [`pi`], [`claude`], [`codex`].

pub mod claude;
pub mod codex;
mod export;
pub(crate) mod format;
mod lenient;
pub mod pi;
mod time;
mod written;

mod build;
mod headroom;
mod report;
mod sink;
mod source;

use std::io::Write;
use std::path::Path;

use crate::error::Error;
use format::Detector;
use lenient::MarkerScan;
use sink::WriterSink;

pub(crate) use build::{Builder, Refusal, entry_head, number, timestamp_of};
pub(crate) use headroom::{grown_to, out_of_memory, reserve_one};
pub use report::{ImportReport, RefusedCompaction, Reparented, UnmappedLine};
pub(crate) use sink::{Sink, create_temporary, write_new_file};
pub(crate) use source::{Source, SourceLine};

pub use export::{
    ExportChange, ExportOptions, ExportReport, Exported, export, export_file, export_redacted,
};
pub use format::Format;
pub use pi::export_pi;
// The one date arithmetic of the crate, for the `session` binary and the benchmark
// (which can only reach the public API); not part of the documented API.
#[doc(hidden)]
pub use time::{civil_from_days, millis_to_iso};

/// The result of an import: libsession entry lines (JSON, without `\n`) in an order
/// where every parent precedes its children, and the report.
#[derive(Clone, Debug, Default)]
pub struct Import {
    pub lines: Vec<String>,
    pub report: ImportReport,
}

/// Converts the bytes of a foreign session file, in memory. Whatever cannot be mapped
/// is kept as raw metadata and listed in the report; fails only when a source line, or
/// the entry it becomes, is longer than [`MAX_LINE_BYTES`] (a line no store reads
/// back: [`Error::CorruptLine`] with [`LineFault::TooLong`], naming the source line),
/// or when memory runs out, and with [`Error::NotImportable`] when no line maps to a
/// conversation entry or the source looks like another format than `format` (`None`:
/// detected by [`Format::detect`]).
pub fn import(format: impl Into<Option<Format>>, source: &[u8]) -> Result<Import, Error> {
    let format = format.into();
    let mut lines: Vec<String> = Vec::new();
    let total = source.len() as u64;
    let mut silent = |_: ImportProgress| true;
    let mut source = Source::new(
        Box::new(std::io::Cursor::new(source)),
        "the source",
        total,
        &mut silent,
    );
    let report = run(format, &mut source, &mut lines, None)?;
    Ok(Import { lines, report })
}

/// Imports `source` into a new libsession file at `out`, written line by line (not
/// through a store, so a compaction §6.2 refuses is written as the source has it).
/// `out` must not exist: an import never overwrites a file.
///
/// The source is streamed (read a line at a time, more than once) and the entries go
/// through a buffered writer into a temporary file beside `out`, synced, then renamed
/// to `out` unless `out` exists by then: memory follows the longest line and the ids
/// kept, never the size of the source, and a failed import leaves nothing at `out`.
/// Once the output passes 256 MiB, a background thread flushes it to disk as it is
/// written (so the final sync is short); a failed flush fails the import.
/// Fails on I/O (a source that is not a regular file, such as a FIFO or a device, is
/// refused when opened, before a byte is read; `out` exists: `open`, `EEXIST`), on a
/// line too long to import (see [`import`]) and when memory runs out (an
/// [`Error::Io`] of kind `OutOfMemory`), and as [`import`] for a source that is not
/// a session of the format asked for (nothing is written).
pub fn import_file(
    format: impl Into<Option<Format>>,
    source: &Path,
    out: &Path,
) -> Result<ImportReport, Error> {
    import_file_with_progress(format, source, out, &mut |_| true)
}

/// Options of an import: `{"redact": bool, "rules": …, "extraRules": […], "allow":
/// […]}`. With `"redact": true` (default false) every entry has the secrets in its
/// strings replaced by `[REDACTED:<rule>]` (ids never) before it is written, with the
/// default rules or those `rules`, `extraRules` and `allow` give (as for
/// [`crate::secrets::scan_secrets`]; refused without `"redact": true`). Unknown
/// members are refused.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct ImportOptions {
    /// Whether secrets are redacted (`None`: no).
    pub redact: Option<bool>,
    pub rules: Option<crate::secrets::RuleChoice>,
    pub extra_rules: Vec<crate::secrets::RuleSpec>,
    pub allow: Vec<String>,
}

impl ImportOptions {
    /// Options from a JSON object ([`Error::InvalidOption`] for anything else).
    pub fn from_json(text: &str) -> Result<ImportOptions, Error> {
        crate::options::from_json(text)
    }
}

/// How far an import has read its source: `done` of `total` bytes in pass `pass`
/// (from 1; an import reads the source two or three times).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ImportProgress {
    pub pass: u32,
    pub done: u64,
    pub total: u64,
}

/// Bytes read between two progress reports: often enough for a progress line, rarely
/// enough that a report costs nothing next to reading.
pub(crate) const IMPORT_PROGRESS_STEP: u64 = 1 << 20;

/// [`import_file`], calling `progress` at the start of each pass and after every
/// mebibyte read. When `progress` returns `false` the import
/// stops with [`Error::Cancelled`] and nothing is left at `out`.
pub fn import_file_with_progress(
    format: impl Into<Option<Format>>,
    source: &Path,
    out: &Path,
    progress: &mut dyn FnMut(ImportProgress) -> bool,
) -> Result<ImportReport, Error> {
    import_file_with(format, source, out, &ImportOptions::default(), progress)
}

/// [`import_file_with_progress`] with options: with `"redact": true` each entry is
/// redacted (see [`ImportOptions`]) before it is written, and the report counts the
/// secrets replaced. Fails with [`Error::InvalidOption`] for invalid rules, before the
/// source is opened.
pub fn import_file_with(
    format: impl Into<Option<Format>>,
    source: &Path,
    out: &Path,
    options: &ImportOptions,
    progress: &mut dyn FnMut(ImportProgress) -> bool,
) -> Result<ImportReport, Error> {
    let format = format.into();
    let redactor = crate::secrets::redaction(
        options.redact,
        false,
        &options.rules,
        &options.extra_rules,
        &options.allow,
    )?;
    let mut source = Source::open(source, progress)?;
    write_new_file(out, |sink| {
        run(format, &mut source, sink, redactor.as_deref())
    })
}

/// [`import_file`], writing the lines into `out` as they are made, with no file, sync
/// or rename: for the on-demand benchmark, which measures the import of a
/// multi-gigabyte source without a copy of it on disk (`out` is `std::io::sink()`).
#[doc(hidden)]
pub fn import_file_into(
    format: impl Into<Option<Format>>,
    source: &Path,
    out: &mut dyn Write,
) -> Result<ImportReport, Error> {
    let format = format.into();
    let mut silent = |_: ImportProgress| true;
    let mut source = Source::open(source, &mut silent)?;
    let mut sink = WriterSink(out);
    run(format, &mut source, &mut sink, None)
}

/// [`export_pi`] into a new file at `out` (which must not exist), synced.
pub fn export_pi_file(
    entries: &[crate::entry::Entry],
    leaf: &str,
    out: &Path,
) -> Result<(), Error> {
    let text = export_pi(entries, leaf)?;
    write_new_file(out, |sink| {
        text.lines()
            .try_for_each(|line| sink.line(&[line.as_bytes()]))
    })
}

/// The three passes of an import: the source's lines, its format (from its first
/// lines) and the lone-surrogate marker, what the format must know before its first
/// line is mapped, then the mapping. A source that looks like another format than the
/// one asked for is refused before anything is written, and one where no line maps
/// to a conversation entry once the mapping is done (the caller discards the lines).
/// With a `redactor`, each entry is redacted before it is written.
fn run(
    requested: Option<Format>,
    source: &mut Source<'_>,
    sink: &mut dyn Sink,
    redactor: Option<&crate::secrets::Redactor>,
) -> Result<ImportReport, Error> {
    run_with(requested, source, sink, true, redactor)
}

/// [`run`], with or without the mappings from a line's text (`fast`; the tests
/// compare both ways).
fn run_with(
    requested: Option<Format>,
    source: &mut Source<'_>,
    sink: &mut dyn Sink,
    fast: bool,
    redactor: Option<&crate::secrets::Redactor>,
) -> Result<ImportReport, Error> {
    let mut scan = MarkerScan::default();
    let mut detector = Detector::default();
    source.scan(|line| {
        scan.feed(line);
        detector.feed(line);
    })?;
    let detected = detector.found;
    let refused = Error::NotImportable {
        detected,
        requested,
    };
    let format = match (requested, detected) {
        (Some(asked), Some(found)) if asked != found => return Err(refused),
        (Some(format), _) | (None, Some(format)) => format,
        (None, None) => return Err(refused),
    };
    let mut out = Builder::new(format, scan.lenient(), sink);
    out.fast = fast;
    out.redactor = redactor;
    out.report.lines_read = source.lines_read;
    out.report.unterminated_tail = source.unterminated;
    out.report.format = Some(format);
    match format {
        Format::Pi => pi::import(source, &mut out)?,
        Format::ClaudeCode => claude::import(source, &mut out)?,
        Format::Codex => codex::import(source, &mut out)?,
    }
    let report = out.finish()?;
    match report.resume_leaf_id {
        Some(_) => Ok(report),
        None => Err(refused),
    }
}

#[cfg(test)]
mod tests;
