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
mod claude_export;
pub mod codex;
mod codex_export;
mod export;
pub(crate) mod format;
mod lenient;
pub mod pi;
mod time;
mod written;

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, BufWriter, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Map, Value, json};

use crate::entry::{Body, RESUME_LEAF_KEY, Role};
use crate::error::{Error, IoFailure, IoOp, LineFault};
use crate::json::{Kind, MAX_DEPTH, Object, Tape};
use crate::recover::MAX_LINE_BYTES;
use crate::store::{open_regular, sync_dir};
use crate::tree::PathEntry;
use crate::tree::checks::{ToolFacts, ToolReader};
use format::Detector;
use lenient::{Lenient, MarkerScan};
use written::Written;

pub use export::{
    ExportChange, ExportOptions, ExportReport, Exported, export, export_file, export_redacted,
};
pub use format::Format;
pub use pi::export_pi;
// The one date arithmetic of the crate, for the `session` binary and the benchmark
// (which can only reach the public API); not part of the documented API.
#[doc(hidden)]
pub use time::{civil_from_days, millis_to_iso};

/// A source line that was not imported as what it says; it is in the output as a
/// metadata entry (`<format>.unmapped`) with its raw text and line number.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnmappedLine {
    /// 1-based physical line number in the source.
    pub line: u64,
    /// `invalid_json` (a torn or corrupt line), `unknown_kind` (well-formed, of a
    /// kind the importer does not know), `invalid_shape` (a known kind missing a
    /// member it needs), or `duplicate_id`.
    pub reason: &'static str,
    /// The id of the metadata entry that holds the raw text.
    pub entry_id: String,
}

/// An entry whose parent is not in the source (a lost line); it was hung under the
/// import's root entry, its original parent id kept as `importedParentId`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reparented {
    pub line: u64,
    pub id: String,
    pub parent_id: String,
}

/// A compaction written as the source has it although §6.2 refuses it at append.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RefusedCompaction {
    pub line: u64,
    pub id: String,
    /// The §6.2 reason (`not_interaction_start`, `pending_tool_calls`, …).
    pub reason: String,
}

/// What an import read and wrote.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ImportReport {
    /// Physical lines in the source, blank ones included (a final piece without `\n`
    /// counts as a line).
    pub lines_read: u64,
    /// Entries in the output.
    pub entries_written: u64,
    /// Output entries by libsession `type` (`message`, `metadata`, `compaction`).
    pub entry_types: BTreeMap<String, u64>,
    /// Source lines by the source's own kind (`message`, `label`, `assistant`,
    /// `response_item/function_call`, …); unparseable lines under `invalid_json`.
    pub source_kinds: BTreeMap<String, u64>,
    /// Lines kept only as raw metadata, in line order.
    pub unmapped: Vec<UnmappedLine>,
    pub reparented: Vec<Reparented>,
    pub refused_compactions: Vec<RefusedCompaction>,
    /// Set when the source's last line had no terminating `\n` (a torn write).
    pub unterminated_tail: bool,
    /// The format imported: the one asked for, or the one detected.
    pub format: Option<Format>,
    /// The leaf the source agent resumes: the latest entry in commit order that has
    /// a conversation entry (a message or a compaction) on its path and no children
    /// but lines kept raw; a line kept raw is never the resume leaf, nor a Claude Code
    /// `progress` or sidechain line (unless every line is one: a subagent's file).
    /// The output records it too, as its last entry (a `session.resumeLeaf` entry
    /// under it, counted in `entries_written`).
    pub resume_leaf_id: Option<String>,
    /// Lines of a kind the importer does not know (kept raw, reason
    /// `unknown_kind`), by their source kind.
    pub unknown_kinds: BTreeMap<String, u64>,
    /// Secrets replaced by `[REDACTED:<rule>]` in the entries written (an import with
    /// `"redact": true`; 0 otherwise).
    pub redactions: u64,
}

impl ImportReport {
    /// The report as JSON: `{"linesRead":N,"entriesWritten":N,"entryTypes":{…},
    /// "sourceKinds":{…},"unmapped":[{"line","reason","entryId"}],
    /// "reparented":[{"line","id","parentId"}],
    /// "refusedCompactions":[{"line","id","reason"}],"unterminatedTail":bool,
    /// "format":NAME|null,"resumeLeafId":ID|null,"unknownKinds":{kind: count},
    /// "redactions":N}`.
    pub fn to_json_value(&self) -> Value {
        // The text is JSON the one writer made, so it always parses.
        serde_json::from_str(&self.to_json()).unwrap_or(Value::Null)
    }

    /// [`ImportReport::to_json_value`] as text, written by the library's one JSON
    /// writer.
    pub fn to_json(&self) -> String {
        let counts = |map: &BTreeMap<String, u64>| {
            map.iter()
                .fold(Object::new(), |o, (key, n)| o.number(key, *n))
                .finish()
        };
        let unmapped = crate::json::array(self.unmapped.iter().map(|u| {
            Object::new()
                .number("line", u.line)
                .string("reason", u.reason)
                .string("entryId", &u.entry_id)
                .finish()
        }));
        let reparented = crate::json::array(self.reparented.iter().map(|r| {
            Object::new()
                .number("line", r.line)
                .string("id", &r.id)
                .string("parentId", &r.parent_id)
                .finish()
        }));
        let refused = crate::json::array(self.refused_compactions.iter().map(|c| {
            Object::new()
                .number("line", c.line)
                .string("id", &c.id)
                .string("reason", &c.reason)
                .finish()
        }));
        Object::new()
            .number("linesRead", self.lines_read)
            .number("entriesWritten", self.entries_written)
            .raw("entryTypes", &counts(&self.entry_types))
            .raw("sourceKinds", &counts(&self.source_kinds))
            .raw("unmapped", &unmapped)
            .raw("reparented", &reparented)
            .raw("refusedCompactions", &refused)
            .boolean("unterminatedTail", self.unterminated_tail)
            .string_or_null("format", self.format.map(Format::name))
            .string_or_null("resumeLeafId", self.resume_leaf_id.as_deref())
            .raw("unknownKinds", &counts(&self.unknown_kinds))
            .number("redactions", self.redactions)
            .finish()
    }

    /// [`ImportReport::to_json`] written to `out`.
    pub fn write_json(&self, out: &mut dyn Write) -> std::io::Result<()> {
        out.write_all(self.to_json().as_bytes())
    }
}

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

/// A sink straight into a writer ([`import_file_into`]).
struct WriterSink<'w>(&'w mut dyn Write);

impl Sink for WriterSink<'_> {
    fn line(&mut self, parts: &[&[u8]]) -> Result<(), Error> {
        parts
            .iter()
            .try_for_each(|part| self.0.write_all(part))
            .and_then(|()| self.0.write_all(b"\n"))
            .map_err(|e| io_error(IoOp::Write, Path::new("the import output"), &e))
    }
}

/// [`export_pi`] into a new file at `out` (which must not exist), synced.
pub fn export_pi_file(entries: &[crate::Entry], leaf: &str, out: &Path) -> Result<(), Error> {
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

/// Where an import's lines go: a vector (in memory) or a buffered temporary file.
/// A line is given in pieces, written back to back (UTF-8 once joined), so that a
/// source line copied into an entry is not copied once more to join them.
pub(crate) trait Sink {
    fn line(&mut self, parts: &[&[u8]]) -> Result<(), Error>;
}

impl Sink for Vec<String> {
    fn line(&mut self, parts: &[&[u8]]) -> Result<(), Error> {
        self.try_reserve(1)
            .map_err(|_| out_of_memory("the imported lines"))?;
        let text = String::from_utf8(parts.concat())
            .map_err(|_| Error::internal("an imported line is not UTF-8"))?;
        self.push(text);
        Ok(())
    }
}

struct FileSink<'p> {
    writer: BufWriter<File>,
    path: &'p Path,
    /// Bytes written since the syncer was last asked to flush, and in all.
    unsynced: u64,
    written: u64,
    tried: bool,
    /// Started once the output is large ([`SYNC_START`]); `None` before, or when it
    /// could not start.
    syncer: Option<Syncer>,
}

/// Bytes written between two requests to the background syncer.
const SYNC_STEP: u64 = 64 << 20;
/// Output size from which a syncer runs: below it the final sync is short, and an
/// import does not pay for a thread (its stack and, with glibc, its own malloc
/// arena's reservation of address space).
const SYNC_START: u64 = 256 << 20;

/// A thread that flushes the output to disk (`fdatasync`) while the import goes on,
/// so that the final sync does not wait for the whole file: the kernel would
/// otherwise hold gigabytes of dirty pages until then. Its first failure is the
/// import's: a flush error is reported once per open file, so the final sync may not
/// see it again.
struct Syncer {
    requests: std::sync::mpsc::SyncSender<()>,
    thread: std::thread::JoinHandle<std::io::Result<()>>,
}

impl Syncer {
    /// `None` when the file cannot be shared or no thread started: the final sync
    /// then does all the work, as it would anyway.
    fn start(file: &File) -> Option<Syncer> {
        let file = file.try_clone().ok()?;
        let (requests, received) = std::sync::mpsc::sync_channel::<()>(1);
        let thread = std::thread::Builder::new()
            .name("session-import-sync".into())
            .stack_size(64 << 10)
            .spawn(move || received.iter().try_for_each(|()| file.sync_data()))
            .ok()?;
        Some(Syncer { requests, thread })
    }

    /// Waits for the thread; its error, if a flush failed.
    fn finish(self) -> std::io::Result<()> {
        drop(self.requests);
        self.thread
            .join()
            .unwrap_or_else(|_| Err(std::io::Error::other("the sync thread panicked")))
    }
}

impl Sink for FileSink<'_> {
    fn line(&mut self, parts: &[&[u8]]) -> Result<(), Error> {
        parts
            .iter()
            .try_for_each(|part| self.writer.write_all(part))
            .and_then(|()| self.writer.write_all(b"\n"))
            .map_err(|e| io_error(IoOp::Write, self.path, &e))?;
        let len = parts.iter().map(|p| p.len() as u64).sum::<u64>() + 1;
        self.unsynced += len;
        self.written += len;
        if self.written >= SYNC_START && self.syncer.is_none() && !self.tried {
            self.tried = true;
            self.syncer = Syncer::start(self.writer.get_ref());
        }
        if self.unsynced >= SYNC_STEP
            && let Some(syncer) = &self.syncer
        {
            self.unsynced = 0;
            // What the buffer holds goes with the next request; a request made while
            // the thread is busy is dropped (the next one covers it).
            let _ = syncer.requests.try_send(());
        }
        Ok(())
    }
}

/// Writes a new file at `path` through `fill`: into a temporary file beside it,
/// synced, then renamed to `path` unless `path` exists (an import never overwrites a
/// file). On any failure the temporary file is removed and `path` left alone.
pub(crate) fn write_new_file<T>(
    path: &Path,
    fill: impl FnOnce(&mut dyn Sink) -> Result<T, Error>,
) -> Result<T, Error> {
    // Fail before the work when `path` exists; the rename checks again.
    if std::fs::symlink_metadata(path).is_ok() {
        let exists = std::io::Error::from_raw_os_error(libc::EEXIST);
        return Err(io_error(IoOp::Open, path, &exists));
    }
    let (temp, file) = create_temporary(path)?;
    let written = (|| {
        let mut sink = FileSink {
            writer: BufWriter::with_capacity(1 << 16, file),
            path: &temp,
            unsynced: 0,
            written: 0,
            tried: false,
            syncer: None,
        };
        let made = fill(&mut sink);
        let synced = sink.syncer.take().map_or(Ok(()), Syncer::finish);
        let made = made?;
        synced.map_err(|e| io_error(IoOp::Sync, &temp, &e))?;
        let file = sink
            .writer
            .into_inner()
            .map_err(|e| io_error(IoOp::Write, &temp, e.error()))?;
        file.sync_all()
            .map_err(|e| io_error(IoOp::Sync, &temp, &e))?;
        crate::repair::rename_no_replace(&temp, path)
            .map_err(|e| io_error(IoOp::Open, path, &e))?;
        Ok(made)
    })();
    match written {
        Ok(made) => {
            // The rename is durable once the directory is synced; the file itself
            // already is, so a failure here loses nothing the caller was promised.
            let _ = sync_dir(path);
            Ok(made)
        }
        Err(e) => {
            let _ = std::fs::remove_file(&temp);
            Err(e)
        }
    }
}

/// A new temporary file beside `path`: `.NAME.import-PID-K.tmp`.
fn create_temporary(path: &Path) -> Result<(PathBuf, File), Error> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut last = None;
    for k in 0..1000u32 {
        let temp = path.with_file_name(format!(".{name}.import-{}-{k}.tmp", std::process::id()));
        match OpenOptions::new().write(true).create_new(true).open(&temp) {
            Ok(file) => return Ok((temp, file)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
            // Named by the file asked for: its folder is missing or not writable.
            Err(e) => return Err(io_error(IoOp::Open, path, &e)),
        }
    }
    let e = last.unwrap_or_else(|| std::io::Error::from(std::io::ErrorKind::AlreadyExists));
    Err(io_error(IoOp::Open, path, &e))
}

fn io_error(op: IoOp, path: &Path, e: &std::io::Error) -> Error {
    Error::Io(Arc::new(IoFailure::new(op, &path.display().to_string(), e)))
}

/// Working room an import keeps free beside its tables: what mapping a line takes
/// (its JSON values, its entry's text and checks) is allocated the ordinary way,
/// which aborts when it fails, so the tables stop growing, with an error, while this
/// much more could still be had.
const HEADROOM: usize = 8 << 20;

/// Fails unless `bytes` more could be allocated (the probe is released at once).
pub(crate) fn check_headroom(bytes: usize, what: &str) -> Result<(), Error> {
    let mut probe: Vec<u8> = Vec::new();
    probe
        .try_reserve_exact(bytes)
        .map_err(|_| out_of_memory(what))?;
    std::hint::black_box(&probe);
    Ok(())
}

/// Room for one more item in `vec`, by fallible reservation; when that grows it past
/// a mebibyte, the working room beside it is checked too (smaller tables never use up
/// memory, and probing at each of their growths would cost more than they do).
pub(crate) fn reserve_one<T>(vec: &mut Vec<T>, what: &str) -> Result<(), Error> {
    if vec.len() < vec.capacity() {
        return Ok(());
    }
    vec.try_reserve(1).map_err(|_| out_of_memory(what))?;
    grown_to(vec.capacity().saturating_mul(size_of::<T>()), what)
}

/// After a table grew to `bytes`: the working room check, for a large table.
pub(crate) fn grown_to(bytes: usize, what: &str) -> Result<(), Error> {
    match bytes >= 1 << 20 {
        true => check_headroom(HEADROOM, what),
        false => Ok(()),
    }
}

/// An allocation that failed: an error, never an abort of the host.
pub(crate) fn out_of_memory(what: &str) -> Error {
    let e = std::io::Error::new(
        std::io::ErrorKind::OutOfMemory,
        format!("out of memory for {what}"),
    );
    Error::Io(Arc::new(IoFailure::new(
        IoOp::Read,
        "the import source",
        &e,
    )))
}

/// Why a source entry is not mapped: kept raw with a reason, or the import fails.
pub(crate) enum Refusal {
    Raw(&'static str),
    Fail(Error),
}

impl From<Error> for Refusal {
    fn from(e: Error) -> Refusal {
        Refusal::Fail(e)
    }
}

/// One non-blank physical line of the source, `\r\n` read as `\n`.
pub(crate) struct SourceLine<'a> {
    pub number: u64,
    pub text: &'a [u8],
}

/// The source, read line by line into one buffer (at most [`MAX_LINE_BYTES`] plus a
/// `\r`), as many times as the import needs; every pass stops where the first ended,
/// so a file that grows meanwhile is read as it was.
pub(crate) struct Source<'r> {
    reader: Box<dyn Input + 'r>,
    name: String,
    line: Vec<u8>,
    /// Physical lines of the current pass so far.
    number: u64,
    /// Bytes consumed by the current pass, and the first pass's total.
    consumed: u64,
    length: Option<u64>,
    /// Whether the line read last ended at the end of the source without a `\n`.
    last_unterminated: bool,
    /// Set by the first pass.
    lines_read: u64,
    unterminated: bool,
    /// The pass under way (from 1), the source's size when opened, and the bytes of
    /// this pass at the last report.
    pass: u32,
    size: u64,
    reported: u64,
    progress: &'r mut dyn FnMut(ImportProgress) -> bool,
}

/// A source the import can read again from the start.
pub(crate) trait Input: BufRead + Seek {}
impl<T: BufRead + Seek> Input for T {}

impl<'r> Source<'r> {
    /// The session file at `path`, opened for the import. A FIFO would block and a
    /// device such as /dev/zero never end: refused before a byte is read, as every
    /// open of a session file is.
    fn open(
        path: &Path,
        progress: &'r mut dyn FnMut(ImportProgress) -> bool,
    ) -> Result<Source<'r>, Error> {
        let file = open_regular(OpenOptions::new().read(true), path)
            .map_err(|e| io_error(IoOp::Open, path, &e))?;
        let total = file
            .metadata()
            .map_err(|e| io_error(IoOp::Open, path, &e))?
            .len();
        let reader = Box::new(BufReader::with_capacity(1 << 16, file));
        Ok(Source::new(
            reader,
            &path.display().to_string(),
            total,
            progress,
        ))
    }

    fn new(
        reader: Box<dyn Input + 'r>,
        name: &str,
        size: u64,
        progress: &'r mut dyn FnMut(ImportProgress) -> bool,
    ) -> Source<'r> {
        Source {
            pass: 0,
            size,
            reported: 0,
            progress,
            reader,
            name: name.to_owned(),
            line: Vec::new(),
            number: 0,
            consumed: 0,
            length: None,
            last_unterminated: false,
            lines_read: 0,
            unterminated: false,
        }
    }

    fn read_error(&self, e: &std::io::Error) -> Error {
        Error::Io(Arc::new(IoFailure::new(IoOp::Read, &self.name, e)))
    }

    /// The first pass: every physical line (blank ones too) to `each`, the count of
    /// lines and whether the last has no `\n`.
    fn scan(&mut self, mut each: impl FnMut(&[u8])) -> Result<(), Error> {
        self.rewind()?;
        let mut unterminated = false;
        while self.next_physical()? {
            unterminated = self.last_unterminated;
            each(&self.line);
        }
        self.lines_read = self.number;
        self.unterminated = unterminated;
        self.length = Some(self.consumed);
        Ok(())
    }

    /// Starts a pass over the source.
    pub(crate) fn rewind(&mut self) -> Result<(), Error> {
        self.reader
            .seek(SeekFrom::Start(0))
            .map_err(|e| self.read_error(&e))?;
        self.number = 0;
        self.consumed = 0;
        self.pass = self.pass.saturating_add(1);
        self.report()
    }

    /// Tells the progress callback how far this pass is; [`Error::Cancelled`] when it
    /// asks to stop.
    fn report(&mut self) -> Result<(), Error> {
        self.reported = self.consumed;
        let progress = ImportProgress {
            pass: self.pass,
            done: self.consumed,
            total: self.length.unwrap_or(self.size),
        };
        match (self.progress)(progress) {
            true => Ok(()),
            false => Err(Error::Cancelled),
        }
    }

    /// Reads the next physical line into `self.line` (without its `\n`); `false` at
    /// the end of the pass. A line longer than [`MAX_LINE_BYTES`] (and a `\r`) is
    /// [`Error::CorruptLine`], read to its end without being kept.
    fn next_physical(&mut self) -> Result<bool, Error> {
        const LIMIT: u64 = MAX_LINE_BYTES as u64 + 1;
        let Source {
            reader,
            name,
            line,
            consumed,
            length: total,
            last_unterminated,
            ..
        } = self;
        let read_error =
            |e: &std::io::Error| Error::Io(Arc::new(IoFailure::new(IoOp::Read, name, e)));
        line.clear();
        *last_unterminated = false;
        let mut length = 0u64;
        loop {
            let room = total.map_or(u64::MAX, |t| t.saturating_sub(*consumed));
            let available = match reader.fill_buf() {
                Ok(available) => available,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(read_error(&e)),
            };
            let available = &available[..available
                .len()
                .min(usize::try_from(room).unwrap_or(usize::MAX))];
            if available.is_empty() {
                if length == 0 {
                    return Ok(false);
                }
                *last_unterminated = true;
                break;
            }
            let (piece, used, ends) = match memchr::memchr(b'\n', available) {
                Some(at) => (&available[..at], at + 1, true),
                None => (available, available.len(), false),
            };
            length += piece.len() as u64;
            if length <= LIMIT {
                line.try_reserve(piece.len())
                    .map_err(|_| out_of_memory("a source line"))?;
                line.extend_from_slice(piece);
            }
            reader.consume(used);
            *consumed += used as u64;
            if ends {
                break;
            }
        }
        self.number += 1;
        if self.consumed - self.reported >= IMPORT_PROGRESS_STEP {
            self.report()?;
        }
        if length > LIMIT {
            return Err(Error::CorruptLine {
                line: self.number,
                fault: LineFault::TooLong {
                    len: length,
                    max: MAX_LINE_BYTES,
                },
            });
        }
        Ok(true)
    }

    /// The next non-blank line of this pass, `None` at the end.
    pub(crate) fn next_line(&mut self) -> Result<Option<SourceLine<'_>>, Error> {
        loop {
            if !self.next_physical()? {
                return Ok(None);
            }
            let text = self.line.strip_suffix(b"\r").unwrap_or(&self.line);
            if !text.iter().all(|b| matches!(b, b' ' | b'\t' | b'\r')) {
                break;
            }
        }
        if self.line.len() > 1 << 20 {
            // Mapping a long line takes a few times its size.
            check_headroom(self.line.len().saturating_mul(8), "a long source line")?;
        }
        let text = self.line.strip_suffix(b"\r").unwrap_or(&self.line);
        Ok(Some(SourceLine {
            number: self.number,
            text,
        }))
    }
}

/// A compaction written, checked against §6.2 once everything is written.
struct WrittenCompaction {
    node: u32,
    line: u64,
    first_kept: Option<Box<str>>,
}

/// Writes output entries to the sink: ids unique, parents present, and the report.
pub(crate) struct Builder<'s> {
    format: Format,
    lenient: Lenient,
    sink: &'s mut dyn Sink,
    written: Written,
    compactions: Vec<WrittenCompaction>,
    tool_reader: ToolReader,
    last: Option<u32>,
    last_timestamp: f64,
    /// The latest timestamp written (what the resume-leaf record takes).
    max_timestamp: f64,
    /// The source line being mapped.
    current_line: u64,
    root: Option<u32>,
    /// Per entry written: [`ON_PATH`], [`HAS_CHILD`], [`RAW`], [`ASIDE`].
    flags: Vec<u8>,
    /// Set while a line kept raw is written.
    writing_raw: bool,
    /// Set while the entries of a line its agent never resumes at are written
    /// (Claude Code's `progress` and sidechain lines): marked [`ASIDE`].
    aside: bool,
    /// The source kind of the line being mapped (as counted).
    kind: String,
    /// Scratch for the lines a format maps from their text without building their
    /// value ([`Builder::scan`]); `fast` is unset only by the tests that compare
    /// the two ways.
    tape: Tape,
    fast: bool,
    /// Redacts each entry before it is written (an import with `"redact": true`).
    redactor: Option<&'s crate::secrets::Redactor>,
    pub(crate) report: ImportReport,
}

/// A conversation entry (message, compaction) is on the entry's path, itself included.
const ON_PATH: u8 = 1;
/// The entry has a child that is not a line kept raw.
const HAS_CHILD: u8 = 2;
/// The entry holds a line kept raw.
const RAW: u8 = 4;
/// The entry holds a line its agent never resumes at, unless all lines are such.
const ASIDE: u8 = 8;

impl<'s> Builder<'s> {
    fn new(format: Format, lenient: Lenient, sink: &'s mut dyn Sink) -> Builder<'s> {
        Builder {
            format,
            lenient,
            sink,
            written: Written::new(),
            compactions: Vec::new(),
            tool_reader: ToolReader::default(),
            last: None,
            last_timestamp: 0.0,
            max_timestamp: 0.0,
            current_line: 0,
            root: None,
            flags: Vec::new(),
            writing_raw: false,
            aside: false,
            kind: String::new(),
            tape: Tape::default(),
            fast: true,
            redactor: None,
            report: ImportReport::default(),
        }
    }

    /// Scans `line` into the builder's tape for a mapping from its text: `true` when
    /// it is a JSON object at most [`MAX_DEPTH`] - 1 deep (an entry holding it as a
    /// member is at most [`MAX_DEPTH`]) that the general mapping would write back
    /// byte for byte ([`Lenient::writes_back`]).
    pub(crate) fn scan(&mut self, line: &SourceLine<'_>) -> bool {
        self.fast
            && crate::json::scan(line.text, MAX_DEPTH - 1, &mut self.tape).is_ok()
            && self
                .tape
                .nodes
                .first()
                .is_some_and(|n| n.kind == Kind::Object)
            && self.lenient.writes_back(line.text, &self.tape)
    }

    /// The tape [`Builder::scan`] filled.
    pub(crate) fn tape(&self) -> &Tape {
        &self.tape
    }

    /// Writes the metadata entry `{"id","parentId","timestamp","type":"metadata",
    /// "key","value","isoTimestamp"?}` whose value is `line`'s text as it is: what
    /// [`Builder::push`] writes for the same members, the line's value built, once
    /// [`Builder::scan`] said the text is what that value writes back. `parent`
    /// must be written already and `id` must be new; the entry is valid by
    /// construction (string members, a number, a value at most `MAX_DEPTH` - 1 deep).
    pub(crate) fn push_line_metadata(
        &mut self,
        line: &SourceLine<'_>,
        id: &str,
        parent: &str,
        (millis, iso): (f64, Option<&str>),
        key: &str,
    ) -> Result<(), Error> {
        // The line is UTF-8: the scanner checked its strings, the rest is ASCII.
        let timestamp = number(millis);
        let quoted = |s: &str| serde_json::to_string(s).unwrap_or_default();
        let mut head = String::with_capacity(160);
        head.push_str("{\"id\":");
        head.push_str(&quoted(id));
        head.push_str(",\"parentId\":");
        head.push_str(&quoted(parent));
        head.push_str(",\"timestamp\":");
        head.push_str(&timestamp.to_string());
        head.push_str(",\"type\":\"metadata\",\"key\":");
        head.push_str(&quoted(key));
        head.push_str(",\"value\":");
        let mut tail = String::with_capacity(48);
        if let Some(iso) = iso {
            tail.push_str(",\"isoTimestamp\":");
            tail.push_str(&quoted(iso));
        }
        tail.push('}');
        let millis = lenient::number_value(&timestamp).unwrap_or(0.0);
        self.push_text(
            id,
            Some(parent),
            "metadata".to_owned(),
            &[head.as_bytes(), line.text, tail.as_bytes()],
            millis,
            None,
            ToolFacts::default(),
        )
        .map(drop)
    }

    /// The report, once the resume leaf is recorded and the compactions written are
    /// checked: the cost of each check is the messages its walk passes (see
    /// [`written`]), never the whole tree.
    fn finish(mut self) -> Result<ImportReport, Error> {
        let pick = |not: u8| {
            self.flags
                .iter()
                .rposition(|&f| f & ON_PATH != 0 && f & not == 0)
        };
        // A transcript that is all sidechain (a subagent's own file) resumes at its end.
        let resume = pick(HAS_CHILD | RAW | ASIDE).or_else(|| pick(HAS_CHILD | RAW));
        self.report.resume_leaf_id =
            resume.map(|node| self.written.id(node as u32).as_str().to_owned());
        if let Some(leaf) = self.report.resume_leaf_id.clone() {
            self.record_resume_leaf(&leaf)?;
        }
        // The flags are read; the record of the written entries is handed over.
        self.flags = Vec::new();
        let written = std::mem::replace(&mut self.written, Written::new());
        let checks: Vec<(u32, Option<&str>)> = self
            .compactions
            .iter()
            .map(|c| (c.node, c.first_kept.as_deref()))
            .collect();
        let results = written.check_compactions(&checks)?;
        for (compaction, result) in self.compactions.iter().zip(results) {
            if let Err(Error::InvalidCompaction {
                compaction_id,
                reason,
                ..
            }) = result
            {
                reserve_one(&mut self.report.refused_compactions, "the import report")?;
                self.report.refused_compactions.push(RefusedCompaction {
                    line: compaction.line,
                    id: compaction_id,
                    reason: reason.as_str().to_owned(),
                });
            }
        }
        Ok(self.report)
    }

    /// Writes, last, the `session.resumeLeaf` entry naming `leaf` (docs/contract.md
    /// §6.3), as a child of `leaf`: the session's latest entry is then on the branch
    /// its agent resumes, its path the leaf's plus an entry no context shows, and
    /// the record stays in force until something else is appended. Its timestamp is
    /// the latest written: it is made once the source is read.
    fn record_resume_leaf(&mut self, leaf: &str) -> Result<(), Error> {
        let id = self.fresh_id("session-resume-leaf");
        let mut entry = entry_head(&id, Some(leaf), self.max_timestamp, "metadata");
        entry.insert("key".into(), Value::String(RESUME_LEAF_KEY.to_owned()));
        entry.insert("value".into(), json!({ "leafId": leaf }));
        self.push_entry(entry).map(drop)
    }

    /// Parses one source line (lone surrogate escapes kept); `None` when it is not JSON.
    pub(crate) fn parse(&mut self, line: &SourceLine<'_>) -> Option<Value> {
        self.lenient.parse(line.text).ok()
    }

    /// Starts mapping source line `line`: the entries written next come from it.
    pub(crate) fn begin(&mut self, line: u64) {
        self.current_line = line;
    }

    /// Counts a line under its source kind.
    pub(crate) fn count_kind(&mut self, kind: &str) {
        self.kind.clear();
        self.kind.push_str(kind);
        match self.report.source_kinds.get_mut(kind) {
            Some(count) => *count += 1,
            None => {
                self.report.source_kinds.insert(kind.to_owned(), 1);
            }
        }
    }

    /// The id of the entry written last.
    /// Whether the entries written next belong to a line the source agent never
    /// resumes at: like lines kept raw, they are never the resume leaf and do not hide
    /// their parent from being it.
    pub(crate) fn set_aside(&mut self, aside: bool) {
        self.aside = aside;
    }

    pub(crate) fn last_id(&self) -> Option<String> {
        self.last.map(|n| self.written.id(n).as_str().to_owned())
    }

    pub(crate) fn has_id(&self, id: &str) -> bool {
        self.written.find(id).is_some()
    }

    /// The root entry every parentless source entry hangs under; written as a
    /// metadata entry `<format>.<key>` with `value` the first time one is needed.
    pub(crate) fn set_root(
        &mut self,
        id: &str,
        key: &str,
        value: Value,
        timestamp: f64,
        extra: Map<String, Value>,
    ) -> Result<String, Error> {
        let id = self.fresh_id(id);
        let mut entry = entry_head(&id, None, timestamp, "metadata");
        entry.insert(
            "key".into(),
            Value::String(format!("{}.{key}", self.format.key_prefix())),
        );
        entry.insert("value".into(), value);
        entry.insert(
            "importedFormat".into(),
            Value::String(self.format.name().to_owned()),
        );
        entry.extend(extra);
        let node = self.push_entry(entry)?;
        self.root = Some(node);
        Ok(id)
    }

    /// The root's id, writing a root holding `null` first if there is none yet.
    pub(crate) fn root(&mut self, timestamp: f64) -> Result<String, Error> {
        match self.root {
            Some(node) => Ok(self.written.id(node).as_str().to_owned()),
            None => self.set_root("import-root", "session", Value::Null, timestamp, Map::new()),
        }
    }

    /// An id not used yet: `base`, or `base~2`, `base~3`, … .
    pub(crate) fn fresh_id(&self, base: &str) -> String {
        let base = if base.is_empty() { "entry" } else { base };
        if !self.has_id(base) {
            return base.to_owned();
        }
        (2u64..)
            .map(|n| format!("{base}~{n}"))
            .find(|id| !self.has_id(id))
            .unwrap_or_default()
    }

    /// Writes one entry. Its `parentId` must name a written entry; if it does not
    /// (a line lost from the source), the entry hangs under the root instead and
    /// the original parent is kept as `importedParentId`.
    /// An entry that libsession's parser refuses (a source message of a shape the
    /// contract rejects) is kept raw instead, so the output always opens.
    pub(crate) fn push(
        &mut self,
        source: &SourceLine<'_>,
        mut entry: Map<String, Value>,
    ) -> Result<(), Error> {
        let missing_parent = match entry.get("parentId") {
            Some(Value::String(parent)) if !self.has_id(parent) => Some(parent.clone()),
            _ => None,
        };
        if let Some(parent) = &missing_parent {
            let timestamp = timestamp_member(&entry);
            let root = self.root(timestamp)?;
            entry.insert("parentId".into(), Value::String(root));
            entry.insert("importedParentId".into(), Value::String(parent.clone()));
        }
        let id = string_member(&entry, "id");
        let kind = string_member(&entry, "type");
        let timestamp = timestamp_member(&entry);
        let parent = entry
            .get("parentId")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let text = self.lenient.write(&Value::Object(entry));
        let parsed = match crate::entry::parse_entry(&text) {
            Ok(parsed) if !self.has_id(&id) => parsed,
            Ok(_) => return self.raw(source.number, source.text, "duplicate_id", parent),
            Err(_) => return self.raw(source.number, source.text, "invalid_entry", parent),
        };
        if let Some(parent_id) = missing_parent {
            reserve_one(&mut self.report.reparented, "the import report")?;
            self.report.reparented.push(Reparented {
                line: source.number,
                id: id.clone(),
                parent_id,
            });
        }
        let facts = parsed.facts();
        let tools = match facts.message_json(parsed.json().as_bytes()) {
            Some(message) => self.tool_reader.read(&PathEntry::of(&parsed), message)?,
            None => ToolFacts::default(),
        };
        let first_kept = match &facts.body {
            Body::Compaction { first_kept, .. } => Some(
                first_kept
                    .as_ref()
                    .map(|f| Box::<str>::from(f.of(parsed.json().as_bytes()))),
            ),
            _ => None,
        };
        let role = facts.role();
        drop(parsed);
        let node = self.push_text(
            &id,
            parent.as_deref(),
            kind,
            &[text.as_bytes()],
            timestamp,
            role,
            tools,
        )?;
        if let Some(first_kept) = first_kept {
            reserve_one(&mut self.compactions, "the imported compactions")?;
            self.compactions.push(WrittenCompaction {
                node,
                line: self.current_line,
                first_kept,
            });
        }
        Ok(())
    }

    /// Writes an entry the import made up (a root, a raw line's metadata).
    fn push_entry(&mut self, entry: Map<String, Value>) -> Result<u32, Error> {
        let id = string_member(&entry, "id");
        let kind = string_member(&entry, "type");
        let timestamp = timestamp_member(&entry);
        let parent = entry
            .get("parentId")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let text = self.lenient.write(&Value::Object(entry));
        self.push_text(
            &id,
            parent.as_deref(),
            kind,
            &[text.as_bytes()],
            timestamp,
            None,
            ToolFacts::default(),
        )
    }

    /// Writes one line (`parts` joined, UTF-8) and records its entry. A line longer
    /// than a store reads back fails the import, naming the source line: the output
    /// must always open.
    #[allow(clippy::too_many_arguments)]
    fn push_text(
        &mut self,
        id: &str,
        parent: Option<&str>,
        kind: String,
        parts: &[&[u8]],
        timestamp: f64,
        role: Option<Role>,
        tools: ToolFacts,
    ) -> Result<u32, Error> {
        // Redacted before the length check: a replacement may be longer than the
        // secret, and the entry must still be one a store reads back.
        let redacted = match self.redactor {
            Some(redactor) => {
                let line = parts.concat();
                let (text, count) = redactor.redact_json_counted(&line);
                self.report.redactions += count;
                Some(text.into_owned())
            }
            None => None,
        };
        let joined;
        let parts: &[&[u8]] = match &redacted {
            Some(text) => {
                joined = [text.as_slice()];
                &joined
            }
            None => parts,
        };
        let len: usize = parts.iter().map(|p| p.len()).sum();
        if len > MAX_LINE_BYTES {
            return Err(Error::CorruptLine {
                line: self.current_line,
                fault: LineFault::TooLong {
                    len: len as u64,
                    max: MAX_LINE_BYTES,
                },
            });
        }
        let parent = parent.and_then(|p| self.written.find(p));
        let raw = std::mem::take(&mut self.writing_raw);
        let on_path =
            kind != "metadata" || parent.is_some_and(|p| self.flags[p as usize] & ON_PATH != 0);
        reserve_one(&mut self.flags, "the imported entries")?;
        let node = self.written.add(id, parent, role, tools)?;
        if let Some(p) = parent.filter(|_| !raw && !self.aside) {
            self.flags[p as usize] |= HAS_CHILD;
        }
        self.flags.push(
            if on_path { ON_PATH } else { 0 }
                | if raw { RAW } else { 0 }
                | if self.aside { ASIDE } else { 0 },
        );
        self.sink.line(parts)?;
        self.last_timestamp = timestamp;
        self.max_timestamp = self.max_timestamp.max(timestamp);
        self.report.entries_written += 1;
        *self.report.entry_types.entry(kind).or_default() += 1;
        self.last = Some(node);
        Ok(node)
    }

    /// Keeps a line that cannot be mapped as a metadata entry
    /// `<format>.unmapped` = `{"line":N,"reason":…,"raw":TEXT}` (TEXT lossy only
    /// when the line is not UTF-8, then `"lossy":true`), under `parent`, or else under
    /// the entry written last, or the root when none is.
    pub(crate) fn raw(
        &mut self,
        line: u64,
        text: &[u8],
        reason: &'static str,
        parent: Option<String>,
    ) -> Result<(), Error> {
        self.current_line = line;
        // With no known parent, the line hangs under the entry written last (file
        // order), so that a file ending in such a line (Claude Code's `last-prompt`)
        // still has the conversation on its latest leaf's path; the root only when
        // nothing is written yet.
        let parent = match parent {
            Some(p) if self.has_id(&p) => p,
            _ => match self.last_id() {
                Some(last) => last,
                None => self.root(0.0)?,
            },
        };
        let id = self.fresh_id(&format!("{}-line-{line}", self.format.key_prefix()));
        let raw = match std::str::from_utf8(text) {
            Ok(s) => json!({"line": line, "reason": reason, "raw": s}),
            Err(_) => json!({
                "line": line, "reason": reason,
                "raw": String::from_utf8_lossy(text), "lossy": true,
            }),
        };
        // A raw line has no readable timestamp: it takes that of the entry before it.
        let mut entry = entry_head(&id, Some(&parent), self.last_timestamp, "metadata");
        entry.insert(
            "key".into(),
            Value::String(format!("{}.unmapped", self.format.key_prefix())),
        );
        entry.insert("value".into(), raw);
        self.writing_raw = true;
        let pushed = self.push_entry(entry);
        self.writing_raw = false;
        pushed?;
        if reason == "unknown_kind" {
            match self.report.unknown_kinds.get_mut(&self.kind) {
                Some(count) => *count += 1,
                None => {
                    self.report.unknown_kinds.insert(self.kind.clone(), 1);
                }
            }
        }
        reserve_one(&mut self.report.unmapped, "the import report")?;
        self.report.unmapped.push(UnmappedLine {
            line,
            reason,
            entry_id: id,
        });
        Ok(())
    }
}

fn timestamp_member(object: &Map<String, Value>) -> f64 {
    object
        .get("timestamp")
        .and_then(lenient::number_value)
        .unwrap_or(0.0)
}

fn string_member(object: &Map<String, Value>, key: &str) -> String {
    object
        .get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

/// `{"id","parentId","timestamp","type"}`, the members every entry starts with.
pub(crate) fn entry_head(
    id: &str,
    parent: Option<&str>,
    timestamp: f64,
    kind: &str,
) -> Map<String, Value> {
    let mut entry = Map::new();
    entry.insert("id".into(), Value::String(id.to_owned()));
    entry.insert(
        "parentId".into(),
        parent.map_or(Value::Null, |p| Value::String(p.to_owned())),
    );
    entry.insert("timestamp".into(), number(timestamp));
    entry.insert("type".into(), Value::String(kind.to_owned()));
    entry
}

/// A JSON number for a millisecond count: an integer when it is one.
pub(crate) fn number(value: f64) -> Value {
    if value.fract() == 0.0 && value.abs() < 9.007_199_254_740_992e15 {
        Value::from(value as i64)
    } else {
        serde_json::Number::from_f64(value).map_or(Value::from(0), Value::Number)
    }
}

/// A source timestamp (ISO text or a number) as Unix milliseconds, with the original
/// text to keep when it was text. A missing or unreadable one reads as 0.
pub(crate) fn timestamp_of(value: Option<&Value>) -> (f64, Option<String>) {
    if let Some(millis) = value.and_then(lenient::number_value) {
        return (if millis.is_finite() { millis } else { 0.0 }, None);
    }
    match value {
        Some(Value::String(text)) => (time::iso_to_millis(text).unwrap_or(0.0), Some(text.clone())),
        _ => (0.0, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::{ContextOptions, OnDefect, build_context_indexed, default_estimate};
    use crate::entry::EntryKind;
    use crate::tree::IdIndex;
    use std::collections::HashMap;

    /// The refused compactions as the import found them before its check walked the
    /// written ids: a context built per compaction over all the entries.
    fn refused_by_context(
        lines: &[String],
        line_of: &HashMap<String, u64>,
    ) -> Vec<RefusedCompaction> {
        let entries = crate::entry::parse_entries(format!("[{}]", lines.join(","))).unwrap();
        let options = ContextOptions {
            on_defect: OnDefect::Keep,
            ..ContextOptions::default()
        };
        let index = IdIndex::new(&entries).unwrap();
        let mut estimate = |m: &str| Ok(default_estimate(m));
        entries
            .iter()
            .filter(|entry| entry.kind() == EntryKind::Compaction)
            .filter_map(|entry| {
                match build_context_indexed(&index, entry.id(), &options, &mut estimate) {
                    Err(Error::InvalidCompaction {
                        compaction_id,
                        reason,
                        ..
                    }) if compaction_id == entry.id() => Some(RefusedCompaction {
                        line: line_of[entry.id()],
                        id: compaction_id,
                        reason: reason.as_str().to_owned(),
                    }),
                    _ => None,
                }
            })
            .collect()
    }

    /// A pi file of random trees: messages of every role (tool calls and results from
    /// a few call ids), metadata, and compactions keeping from nothing, an entry on
    /// the path or off it, a non-message, or an unknown id.
    fn random_pi_file(seed: u64, count: usize) -> String {
        let mut state = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let mut next = move |n: usize| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((state >> 33) as usize) % n
        };
        let mut lines = vec![
            r#"{"type":"session","version":3,"id":"s","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/"}"#
                .to_owned(),
        ];
        let mut ids: Vec<String> = Vec::new();
        for i in 0..count {
            let id = format!("e{i}");
            let parent = match (ids.len(), next(4)) {
                (0, _) => "null".to_owned(),
                (n, 0) => format!("\"{}\"", ids[next(n)]),
                (n, _) => format!("\"{}\"", ids[n - 1]),
            };
            let head = format!(
                r#""id":"{id}","parentId":{parent},"timestamp":"2025-01-01T00:00:01.000Z""#
            );
            let call = format!("c{}", next(3));
            let line = match next(9) {
                0 | 1 => format!(
                    r#"{{"type":"message",{head},"message":{{"role":"user","content":"u"}}}}"#
                ),
                2 => format!(
                    r#"{{"type":"message",{head},"message":{{"role":"assistant","content":[{{"type":"toolCall","id":"{call}","name":"t","arguments":{{}}}}]}}}}"#
                ),
                3 => format!(
                    r#"{{"type":"message",{head},"message":{{"role":"toolResult","toolCallId":"{call}","toolName":"t","content":[],"isError":false}}}}"#
                ),
                4 => format!(
                    r#"{{"type":"message",{head},"message":{{"role":"assistant","content":[{{"type":"text","text":"a"}}]}}}}"#
                ),
                5 => format!(r#"{{"type":"model_change",{head},"provider":"p","modelId":"m"}}"#),
                _ => {
                    let first = match (ids.len(), next(5)) {
                        (_, 0) => "null".to_owned(),
                        (_, 1) => "\"unknown\"".to_owned(),
                        (0, _) => "null".to_owned(),
                        (n, _) => format!("\"{}\"", ids[n - 1 - next(n.min(6))]),
                    };
                    format!(
                        r#"{{"type":"compaction",{head},"summary":"s","firstKeptEntryId":{first},"tokensBefore":1}}"#
                    )
                }
            };
            lines.push(line);
            ids.push(id);
        }
        lines.join("\n") + "\n"
    }

    /// An in-memory import, with or without the mappings from a line's text.
    fn import_both_ways(source: &[u8]) -> [Result<(Vec<String>, ImportReport), String>; 2] {
        [true, false].map(|fast| {
            let mut lines = Vec::new();
            let mut silent = |_: ImportProgress| true;
            let mut input = Source::new(
                Box::new(std::io::Cursor::new(source)),
                "the source",
                source.len() as u64,
                &mut silent,
            );
            run_with(None, &mut input, &mut lines, fast, None)
                .map(|report| (lines, report))
                .map_err(|e| e.to_string())
        })
    }

    /// Rule: a line written from its text (a Claude Code `progress` line and the other
    /// metadata kinds) gives the same entry, byte for byte, and the same report as the
    /// general mapping that builds the line's value; every line it cannot copy
    /// exactly takes the general mapping.
    #[test]
    fn a_metadata_line_copied_from_its_text_is_the_entry_the_general_mapping_writes() {
        let head = r#"{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"s","timestamp":"2025-01-01T00:00:00.000Z","message":{"role":"user","content":"hi"}}"#;
        let deep = |n: usize| format!("{}1{}", "[".repeat(n), "]".repeat(n));
        let bodies = [
            r#""data":{"a":"plain"}"#.to_owned(),
            r#""data":{"a":"\n\t\"\\\b\f\r\u001b\u0000"}"#.to_owned(),
            r#""data":{"a":"\u001B"}"#.to_owned(),
            r#""data":{"a":"\u000a"}"#.to_owned(),
            r#""data":{"a":"\/\u00e9"}"#.to_owned(),
            r#""data":{"a":"\ud83d","b":"\ud83d\ude00","c":"\ude00\ud83d"}"#.to_owned(),
            r#""data":{"a":"\ud83d\ud83d\ude00"}"#.to_owned(),
            r#""data":{"a":"\ud83d","b":"\uDE00"}"#.to_owned(),
            r#""data":{"n":[1E5,1.0,-0,0.0012000000000000001,12345678901234567890123,1e400]}"#
                .to_owned(),
            r#""data":{"a":1,"a":2}"#.to_owned(),
            r#""data": {"a":1}"#.to_owned(),
            format!(r#""data":{}"#, deep(124)),
            format!(r#""data":{}"#, deep(125)),
            format!(r#""data":{}"#, deep(126)),
            format!(r#""data":{}"#, deep(127)),
            r#""isSidechain":true"#.to_owned(),
            "\"isSidechain\":false,\"data\":\"\u{e9} \u{2028} \u{e000}\"".to_owned(),
        ];
        let mut lines = vec![head.to_owned()];
        let mut n = 0;
        let mut push = |lines: &mut Vec<String>, kind: &str, id: &str, parent: &str, ts: &str| {
            n += 1;
            lines.push(format!(
                r#"{{"parentUuid":{parent},"type":{kind},"uuid":{id},"timestamp":{ts},"n":{n}}}"#
            ));
        };
        let stamp = r#""2025-01-01T00:00:01.000Z""#;
        for (i, body) in bodies.iter().enumerate() {
            lines.push(format!(
                r#"{{"parentUuid":"u1","type":"progress","uuid":"p{i}","timestamp":{stamp},{body}}}"#
            ));
        }
        for kind in [
            r#""summary""#,
            r#""file-history-snapshot""#,
            r#""queue-operation""#,
            r#""system""#,
            r#""progr\u0065ss""#,
            r#""other""#,
        ] {
            push(&mut lines, kind, r#""k""#, r#""u1""#, stamp);
        }
        for id in [r#""""#, r#""p0""#, r#""\u0070x""#, "7", "null"] {
            push(&mut lines, r#""progress""#, id, r#""u1""#, stamp);
        }
        for parent in [r#""""#, r#""gone""#, r#""\u00751""#, "null", "3"] {
            push(&mut lines, r#""progress""#, r#""q""#, parent, stamp);
        }
        for ts in [
            "1735689600000",
            "1.5",
            "1E3",
            "null",
            "true",
            r#""""#,
            r#""not a date""#,
            r#""2025\u002d01-01T00:00:00Z""#,
        ] {
            push(&mut lines, r#""progress""#, r#""t""#, r#""u1""#, ts);
        }
        // No uuid, no timestamp, a line not UTF-8, a line with spaces around it.
        lines.push(r#"{"type":"progress","parentUuid":"u1","data":1}"#.to_owned());
        lines.push(r#"{"type":"progress","parentUuid":"u1","uuid":"v1"}"#.to_owned());
        lines.push(r#"  {"type":"progress","parentUuid":"u1","uuid":"v2"} "#.to_owned());
        let mut source = lines.join("\n").into_bytes();
        source.extend_from_slice(b"\n{\"type\":\"progress\",\"uuid\":\"v3\",\"data\":\"\xff\"}\n");
        let [fast, general] = import_both_ways(&source);
        assert_eq!(fast, general);
        assert!(fast.is_ok_and(|(lines, _)| lines.len() > 40));

        let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/interop/corpus/claude-code");
        let mut files = 0;
        for entry in std::fs::read_dir(corpus).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "jsonl") {
                let source = std::fs::read(&path).unwrap();
                let [fast, general] = import_both_ways(&source);
                assert!(fast == general, "{}", path.display());
                files += 1;
            }
        }
        assert!(files > 5);
    }

    #[test]
    fn the_report_is_json_with_every_member_in_order_and_text_escaped() {
        let source = "{\"type\":\"session\",\"version\":3,\"id\":\"s\"}\n{\"type\":\"message\",\"id\":\"a\\\"\",\"parentId\":\"gone\",\"message\":{\"role\":\"user\",\"content\":\"x\"}}\n{}\n[\n";
        let mut report = import(Format::Pi, source.as_bytes()).unwrap().report;
        report.refused_compactions.push(RefusedCompaction {
            line: 9,
            id: "c\u{1}".into(),
            reason: "not_on_path".into(),
        });
        assert!(!report.unmapped.is_empty() && !report.reparented.is_empty());
        let text = report.to_json();
        let value: Value = serde_json::from_str(&text).expect("the report is JSON");
        let members: Vec<&str> = value
            .as_object()
            .map(|o| o.keys().map(String::as_str).collect())
            .unwrap_or_default();
        assert_eq!(
            members,
            [
                "linesRead",
                "entriesWritten",
                "entryTypes",
                "sourceKinds",
                "unmapped",
                "reparented",
                "refusedCompactions",
                "unterminatedTail",
                "format",
                "resumeLeafId",
                "unknownKinds",
                "redactions"
            ]
        );
        assert_eq!(value["refusedCompactions"][0]["id"], "c\u{1}");
        assert!(text.contains(r#""id":"c\u0001""#), "{text}");
        assert_eq!(value["format"], "pi");
        assert_eq!(
            ImportReport::default().to_json(),
            r#"{"linesRead":0,"entriesWritten":0,"entryTypes":{},"sourceKinds":{},"unmapped":[],"reparented":[],"refusedCompactions":[],"unterminatedTail":false,"format":null,"resumeLeafId":null,"unknownKinds":{},"redactions":0}"#
        );
    }

    #[test]
    fn the_compaction_check_over_the_written_ids_refuses_what_a_context_refuses() {
        let mut reasons = std::collections::BTreeSet::new();
        for seed in 0..300 {
            let source = random_pi_file(seed, 40);
            let imported = import(Format::Pi, source.as_bytes()).unwrap();
            let line_of: HashMap<String, u64> = imported
                .lines
                .iter()
                .map(|l| {
                    let entry = crate::entry::parse_entry(l).unwrap();
                    let line = source
                        .lines()
                        .position(|s| s.contains(&format!("\"id\":\"{}\"", entry.id())))
                        .map_or(0, |p| p as u64 + 1);
                    (entry.id().to_owned(), line)
                })
                .collect();
            let expected = refused_by_context(&imported.lines, &line_of);
            reasons.extend(expected.iter().map(|c| c.reason.clone()));
            assert_eq!(imported.report.refused_compactions, expected, "seed {seed}");
        }
        // Every reason occurs: the comparison is not vacuous.
        assert_eq!(
            reasons.into_iter().collect::<Vec<_>>(),
            [
                "not_interaction_start",
                "not_on_path",
                "pending_tool_calls",
                "unknown_entry"
            ]
        );
    }
}
