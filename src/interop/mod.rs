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
mod lenient;
pub mod pi;
mod time;

use std::collections::{BTreeMap, HashSet};
use std::fs::OpenOptions;
use std::io::{Read, Write};
use std::path::Path;
use std::sync::Arc;

use serde_json::{Map, Value, json};

use crate::context::{ContextOptions, OnDefect, build_context_indexed, default_estimate};
use crate::entry::EntryKind;
use crate::error::{Error, IoFailure, IoOp};
use crate::store::open_regular;
use crate::tree::IdIndex;
use lenient::Lenient;

pub use pi::export_pi;
// The one date arithmetic of the crate, for the `session` binary and the benchmark
// (which can only reach the public API); not part of the documented API.
#[doc(hidden)]
pub use time::{civil_from_days, millis_to_iso};

/// A foreign session format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Format {
    /// pi's session file (`@mariozechner/pi-coding-agent`), versions 1–3.
    Pi,
    /// A Claude Code transcript (`~/.claude/projects/*/SESSION.jsonl`).
    ClaudeCode,
    /// A Codex rollout file (`~/.codex/sessions/**/rollout-*.jsonl`).
    Codex,
}

impl Format {
    /// The format's name on the command line and in the C ABI: `pi`, `claude-code`
    /// or `codex`.
    pub fn name(self) -> &'static str {
        match self {
            Format::Pi => "pi",
            Format::ClaudeCode => "claude-code",
            Format::Codex => "codex",
        }
    }

    /// The format named `name`, if there is one.
    pub fn from_name(name: &str) -> Option<Format> {
        [Format::Pi, Format::ClaudeCode, Format::Codex]
            .into_iter()
            .find(|f| f.name() == name)
    }

    /// The prefix of the metadata keys this format's importer writes (`pi.`,
    /// `claude.`, `codex.`).
    fn key_prefix(self) -> &'static str {
        match self {
            Format::Pi => "pi",
            Format::ClaudeCode => "claude",
            Format::Codex => "codex",
        }
    }
}

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
}

impl ImportReport {
    /// The report as JSON: `{"linesRead":N,"entriesWritten":N,"entryTypes":{…},
    /// "sourceKinds":{…},"unmapped":[{"line","reason","entryId"}],
    /// "reparented":[{"line","id","parentId"}],
    /// "refusedCompactions":[{"line","id","reason"}],"unterminatedTail":bool}`.
    pub fn to_json_value(&self) -> Value {
        json!({
            "linesRead": self.lines_read,
            "entriesWritten": self.entries_written,
            "entryTypes": self.entry_types,
            "sourceKinds": self.source_kinds,
            "unmapped": self.unmapped.iter().map(|u| json!({
                "line": u.line, "reason": u.reason, "entryId": u.entry_id,
            })).collect::<Vec<_>>(),
            "reparented": self.reparented.iter().map(|r| json!({
                "line": r.line, "id": r.id, "parentId": r.parent_id,
            })).collect::<Vec<_>>(),
            "refusedCompactions": self.refused_compactions.iter().map(|c| json!({
                "line": c.line, "id": c.id, "reason": c.reason,
            })).collect::<Vec<_>>(),
            "unterminatedTail": self.unterminated_tail,
        })
    }

    /// [`ImportReport::to_json_value`] as text.
    pub fn to_json(&self) -> String {
        self.to_json_value().to_string()
    }
}

/// The result of an import: libsession entry lines (JSON, without `\n`) in an order
/// where every parent precedes its children, and the report.
#[derive(Clone, Debug, Default)]
pub struct Import {
    pub lines: Vec<String>,
    pub report: ImportReport,
}

/// Converts the bytes of a foreign session file. Never fails: whatever cannot be
/// mapped is kept as raw metadata and listed in the report.
pub fn import(format: Format, source: &[u8]) -> Import {
    let mut out = Builder::new(format, Lenient::for_input(source));
    let lines = source_lines(source, &mut out.report);
    match format {
        Format::Pi => pi::import(&lines, &mut out),
        Format::ClaudeCode => claude::import(&lines, &mut out),
        Format::Codex => codex::import(&lines, &mut out),
    }
    out.finish()
}

/// Imports `source` into a new libsession file at `out`, written line by line (not
/// through a store, so a compaction §6.2 refuses is written as the source has it).
/// `out` must not exist: an import never overwrites a file. Fails only on I/O (a
/// source that is not a regular file, such as a FIFO or a device, is refused when
/// opened, before a byte is read); the written file is synced before the report is
/// returned.
pub fn import_file(format: Format, source: &Path, out: &Path) -> Result<ImportReport, Error> {
    // A FIFO would block and a device such as /dev/zero never end: refused before a
    // byte is read, as every open of a session file is.
    let mut file = open_regular(OpenOptions::new().read(true), source)
        .map_err(|e| io_error(IoOp::Open, source, &e))?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)
        .map_err(|e| io_error(IoOp::Read, source, &e))?;
    let imported = import(format, &bytes);
    write_new_file(out, &imported.lines)?;
    Ok(imported.report)
}

/// [`export_pi`] into a new file at `out` (which must not exist), synced.
pub fn export_pi_file(entries: &[crate::Entry], leaf: &str, out: &Path) -> Result<(), Error> {
    let text = export_pi(entries, leaf)?;
    let lines: Vec<String> = text.lines().map(str::to_owned).collect();
    write_new_file(out, &lines)
}

/// Writes `lines` (each followed by `\n`) to a new file at `path`.
fn write_new_file(path: &Path, lines: &[String]) -> Result<(), Error> {
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(|e| io_error(IoOp::Open, path, &e))?;
    let mut text = Vec::new();
    for line in lines {
        text.extend_from_slice(line.as_bytes());
        text.push(b'\n');
    }
    file.write_all(&text)
        .map_err(|e| io_error(IoOp::Write, path, &e))?;
    file.sync_all().map_err(|e| io_error(IoOp::Sync, path, &e))
}

fn io_error(op: IoOp, path: &Path, e: &std::io::Error) -> Error {
    Error::Io(Arc::new(IoFailure::new(op, &path.display().to_string(), e)))
}

/// The compactions among `lines` that §6.2 refuses, found by building the context
/// of each compaction (the one implementation of the rule, in [`crate::context`]).
/// `line_of` gives each entry's source line.
fn refused_compactions(lines: &[String], line_of: &[u64]) -> Vec<RefusedCompaction> {
    let Ok(entries) = crate::entry::parse_entries(format!("[{}]", lines.join(","))) else {
        return Vec::new();
    };
    let options = ContextOptions {
        on_defect: OnDefect::Keep,
        ..ContextOptions::default()
    };
    // One id index for every compaction: rebuilding it per call is quadratic.
    let Ok(index) = IdIndex::new(&entries) else {
        return Vec::new();
    };
    let mut estimate = |m: &str| Ok(default_estimate(m));
    entries
        .iter()
        .zip(line_of)
        .filter(|(entry, _)| entry.kind() == EntryKind::Compaction)
        .filter_map(|(entry, &line)| {
            match build_context_indexed(&index, entry.id(), &options, &mut estimate) {
                Err(Error::InvalidCompaction {
                    compaction_id,
                    reason,
                    ..
                }) if compaction_id == entry.id() => Some(RefusedCompaction {
                    line,
                    id: compaction_id,
                    reason: reason.as_str().to_owned(),
                }),
                _ => None,
            }
        })
        .collect()
}

/// One physical line of the source.
pub(crate) struct SourceLine<'a> {
    pub number: u64,
    pub text: &'a [u8],
}

/// Splits the source into non-blank lines, counting every physical line (a final
/// piece without `\n` is a line too, and marks the report's `unterminatedTail`).
fn source_lines<'a>(source: &'a [u8], report: &mut ImportReport) -> Vec<SourceLine<'a>> {
    let mut pieces: Vec<&[u8]> = source.split(|&b| b == b'\n').collect();
    // The piece after the last `\n` is empty when the source ends in one.
    if pieces.last().is_some_and(|p| p.is_empty()) {
        pieces.pop();
    }
    report.lines_read = pieces.len() as u64;
    report.unterminated_tail = !source.is_empty() && !source.ends_with(b"\n");
    pieces
        .into_iter()
        .zip(1u64..)
        .map(|(text, number)| SourceLine {
            number,
            text: text.strip_suffix(b"\r").unwrap_or(text),
        })
        .filter(|line| !line.text.iter().all(|b| matches!(b, b' ' | b'\t' | b'\r')))
        .collect()
}

/// Collects output entries: ids unique, parents present, and the report.
pub(crate) struct Builder {
    format: Format,
    lenient: Lenient,
    lines: Vec<String>,
    ids: HashSet<String>,
    last: Option<String>,
    last_timestamp: f64,
    /// The source line of each output line (0 for a root the import made up).
    line_of: Vec<u64>,
    /// The source line being mapped.
    current_line: u64,
    root: Option<String>,
    pub(crate) report: ImportReport,
}

impl Builder {
    fn new(format: Format, lenient: Lenient) -> Builder {
        Builder {
            format,
            lenient,
            lines: Vec::new(),
            ids: HashSet::new(),
            last: None,
            last_timestamp: 0.0,
            line_of: Vec::new(),
            current_line: 0,
            root: None,
            report: ImportReport::default(),
        }
    }

    fn finish(mut self) -> Import {
        self.report.entries_written = self.lines.len() as u64;
        self.report.refused_compactions = refused_compactions(&self.lines, &self.line_of);
        Import {
            lines: self.lines,
            report: self.report,
        }
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
        *self.report.source_kinds.entry(kind.to_owned()).or_default() += 1;
    }

    /// The id of the entry written last.
    pub(crate) fn last_id(&self) -> Option<String> {
        self.last.clone()
    }

    pub(crate) fn has_id(&self, id: &str) -> bool {
        self.ids.contains(id)
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
    ) -> String {
        let id = self.fresh_id(id);
        let mut entry = entry_head(&id, None, timestamp, "metadata");
        entry.insert(
            "key".into(),
            Value::String(format!("{}.{key}", self.format.key_prefix())),
        );
        entry.insert("value".into(), value);
        entry.extend(extra);
        self.push_entry(entry);
        self.root = Some(id.clone());
        id
    }

    /// The root's id, writing a root holding `null` first if there is none yet.
    pub(crate) fn root(&mut self, timestamp: f64) -> String {
        match &self.root {
            Some(id) => id.clone(),
            None => self.set_root("import-root", "session", Value::Null, timestamp, Map::new()),
        }
    }

    /// An id not used yet: `base`, or `base~2`, `base~3`, … .
    pub(crate) fn fresh_id(&self, base: &str) -> String {
        let base = if base.is_empty() { "entry" } else { base };
        if !self.ids.contains(base) {
            return base.to_owned();
        }
        (2u64..)
            .map(|n| format!("{base}~{n}"))
            .find(|id| !self.ids.contains(id))
            .unwrap_or_default()
    }

    /// Writes one entry. Its `parentId` must name a written entry; if it does not
    /// (a line lost from the source), the entry hangs under the root instead and
    /// the original parent is kept as `importedParentId`.
    /// An entry that libsession's parser refuses (a source message of a shape the
    /// contract rejects) is kept raw instead, so the output always opens.
    pub(crate) fn push(&mut self, source: &SourceLine<'_>, mut entry: Map<String, Value>) {
        let missing_parent = match entry.get("parentId") {
            Some(Value::String(parent)) if !self.ids.contains(parent.as_str()) => {
                Some(parent.clone())
            }
            _ => None,
        };
        if let Some(parent) = &missing_parent {
            let timestamp = entry
                .get("timestamp")
                .and_then(Value::as_f64)
                .unwrap_or(0.0);
            let root = self.root(timestamp);
            entry.insert("parentId".into(), Value::String(root));
            entry.insert("importedParentId".into(), Value::String(parent.clone()));
        }
        let text = self.lenient.write(&Value::Object(entry.clone()));
        if crate::entry::parse_entry(&text).is_err() {
            let parent = entry
                .get("parentId")
                .and_then(Value::as_str)
                .map(str::to_owned);
            self.raw(source.number, source.text, "invalid_entry", parent);
            return;
        }
        let id = string_member(&entry, "id");
        if let Some(parent_id) = missing_parent {
            self.report.reparented.push(Reparented {
                line: source.number,
                id: id.clone(),
                parent_id,
            });
        }
        let timestamp = timestamp_member(&entry);
        self.push_text(id, string_member(&entry, "type"), text, timestamp);
    }

    fn push_entry(&mut self, entry: Map<String, Value>) {
        let text = self.lenient.write(&Value::Object(entry.clone()));
        self.push_text(
            string_member(&entry, "id"),
            string_member(&entry, "type"),
            text,
            timestamp_member(&entry),
        );
    }

    fn push_text(&mut self, id: String, kind: String, text: String, timestamp: f64) {
        self.last_timestamp = timestamp;
        self.line_of.push(self.current_line);
        *self.report.entry_types.entry(kind).or_default() += 1;
        self.lines.push(text);
        self.ids.insert(id.clone());
        self.last = Some(id);
    }

    /// Keeps a line that cannot be mapped as a metadata entry
    /// `<format>.unmapped` = `{"line":N,"reason":…,"raw":TEXT}` (TEXT lossy only
    /// when the line is not UTF-8, then `"lossy":true`), under `parent` or the root.
    pub(crate) fn raw(
        &mut self,
        line: u64,
        text: &[u8],
        reason: &'static str,
        parent: Option<String>,
    ) {
        self.current_line = line;
        let parent = match parent {
            Some(p) if self.ids.contains(&p) => p,
            _ => self.root(0.0),
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
        self.push_entry(entry);
        self.report.unmapped.push(UnmappedLine {
            line,
            reason,
            entry_id: id,
        });
    }
}

fn timestamp_member(object: &Map<String, Value>) -> f64 {
    object
        .get("timestamp")
        .and_then(Value::as_f64)
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
    match value {
        Some(Value::String(text)) => (time::iso_to_millis(text).unwrap_or(0.0), Some(text.clone())),
        Some(Value::Number(n)) => (n.as_f64().filter(|f| f.is_finite()).unwrap_or(0.0), None),
        _ => (0.0, None),
    }
}
