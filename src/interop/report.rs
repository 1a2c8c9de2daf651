//! The report of an import: what it read, wrote, and did not map as what it says.

use std::collections::BTreeMap;
use std::io::Write;

use serde_json::Value;

use super::Format;
use crate::json::Object;

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
