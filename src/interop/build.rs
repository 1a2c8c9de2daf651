//! The builder every format maps its lines through: it writes the output entries
//! (ids unique, parents present), keeps unmappable lines raw and fills the report.

use serde_json::{Map, Value, json};

use super::headroom::reserve_one;
use super::lenient::{self, Lenient};
use super::report::{ImportReport, RefusedCompaction, Reparented, UnmappedLine};
use super::sink::Sink;
use super::source::SourceLine;
use super::written::Written;
use super::{Format, time};
use crate::entry::{Body, RESUME_LEAF_KEY, Role};
use crate::error::{Error, LineFault};
use crate::json::{Kind, MAX_DEPTH, Tape};
use crate::recover::MAX_LINE_BYTES;
use crate::tree::PathEntry;
use crate::tree::checks::{ToolFacts, ToolReader};

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
    pub(super) fast: bool,
    /// Redacts each entry before it is written (an import with `"redact": true`).
    pub(super) redactor: Option<&'s crate::secrets::Redactor>,
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
    pub(super) fn new(format: Format, lenient: Lenient, sink: &'s mut dyn Sink) -> Builder<'s> {
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
        let mut head = String::with_capacity(160);
        head.push_str("{\"id\":");
        crate::json::push_string(&mut head, id);
        head.push_str(",\"parentId\":");
        crate::json::push_string(&mut head, parent);
        head.push_str(",\"timestamp\":");
        head.push_str(&timestamp.to_string());
        head.push_str(",\"type\":\"metadata\",\"key\":");
        crate::json::push_string(&mut head, key);
        head.push_str(",\"value\":");
        let mut tail = String::with_capacity(48);
        if let Some(iso) = iso {
            tail.push_str(",\"isoTimestamp\":");
            crate::json::push_string(&mut tail, iso);
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
    /// [`super::written`]), never the whole tree.
    pub(super) fn finish(mut self) -> Result<ImportReport, Error> {
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
        let head = Head::of(&entry);
        let text = self.lenient.write(&Value::Object(entry));
        let parsed = match crate::entry::parse_entry(&text) {
            Ok(parsed) if !self.has_id(&head.id) => parsed,
            Ok(_) => return self.raw(source.number, source.text, "duplicate_id", head.parent),
            Err(_) => return self.raw(source.number, source.text, "invalid_entry", head.parent),
        };
        if let Some(parent_id) = missing_parent {
            reserve_one(&mut self.report.reparented, "the import report")?;
            self.report.reparented.push(Reparented {
                line: source.number,
                id: head.id.clone(),
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
            &head.id,
            head.parent.as_deref(),
            head.kind,
            &[text.as_bytes()],
            head.timestamp,
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
        let head = Head::of(&entry);
        let text = self.lenient.write(&Value::Object(entry));
        self.push_text(
            &head.id,
            head.parent.as_deref(),
            head.kind,
            &[text.as_bytes()],
            head.timestamp,
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

/// What the builder reads of an entry it writes: its `id`, `type`, `timestamp` and
/// `parentId` (each empty, 0 or absent when the member is missing or not of its type).
struct Head {
    id: String,
    kind: String,
    timestamp: f64,
    parent: Option<String>,
}

impl Head {
    fn of(entry: &Map<String, Value>) -> Head {
        Head {
            id: string_member(entry, "id"),
            kind: string_member(entry, "type"),
            timestamp: timestamp_member(entry),
            parent: entry
                .get("parentId")
                .and_then(Value::as_str)
                .map(str::to_owned),
        }
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
