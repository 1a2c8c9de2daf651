//! Export to every agent: a libsession session written as a file that pi, Claude Code
//! or Codex resumes.
//!
//! pi keeps a tree, so the pi writer ([`super::pi::export_pi`]) writes every entry.
//! Claude Code and Codex resume one linear history and each applies its own rules to
//! it; their writers write what that agent sends for the leaf: the messages of
//! `build_context` under the agent's profile (docs/contract.md §12), each as the line
//! the agent itself would have written, so that the agent, resuming the file, sends
//! them again. A compaction is written as the agent writes one (a Claude Code compact
//! boundary and its summary line; a Codex `compacted` line whose replacement history
//! is what it sends). What the agent's format cannot carry is converted or left out,
//! and each such change is counted in the [`ExportReport`].

use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::path::Path;

use super::Format;
use super::time::millis_to_iso;
use crate::context::{ContextOptions, Profile, build_context};
use crate::entry::{Entry, EntryKind};
use crate::error::{Error, IoOp};
use crate::json::{Kind, MAX_DEPTH, Object, Tape};
use crate::secrets::{Redactor, RuleChoice, RuleSpec, redaction};

/// One kind of change an export made, how many times, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExportChange {
    /// What was changed: `metadata`, `label`, `message`, `role:<role>`,
    /// `block:<type>`, `thinking`, `toolResult.isError`, `branch`, ….
    pub kind: String,
    pub count: u64,
    /// Why, in a sentence.
    pub reason: &'static str,
}

/// What an export wrote and what it could not carry as it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExportReport {
    pub format: Format,
    /// Lines of the output file (a header line included).
    pub entries: u64,
    /// What was written in another form than libsession holds it.
    pub converted: Vec<ExportChange>,
    /// What was left out.
    pub dropped: Vec<ExportChange>,
    /// Secrets replaced by `[REDACTED:<rule>]` in the lines written.
    pub redactions: u64,
}

impl ExportReport {
    /// The report as JSON: `{"format":NAME,"entries":N,"converted":[{"kind","count",
    /// "reason"}…],"dropped":[…],"redactions":N}`, written by the library's one JSON
    /// writer.
    pub fn to_json(&self) -> String {
        let changes = |list: &[ExportChange]| {
            crate::json::array(list.iter().map(|c| {
                Object::new()
                    .string("kind", &c.kind)
                    .number("count", c.count)
                    .string("reason", c.reason)
                    .finish()
            }))
        };
        Object::new()
            .string("format", self.format.name())
            .number("entries", self.entries)
            .raw("converted", &changes(&self.converted))
            .raw("dropped", &changes(&self.dropped))
            .number("redactions", self.redactions)
            .finish()
    }
}

/// An export in memory: the file's text (JSON lines, each ending in `\n`) and the
/// report.
#[derive(Clone, Debug)]
pub struct Exported {
    pub text: String,
    pub report: ExportReport,
}

/// Options of an export: `{"leaf": id, "redact": bool, "rules": …, "extraRules": […],
/// "allow": […]}`. `leaf` defaults to the latest leaf; `redact` to true: every line
/// written has the secrets in its strings replaced by `[REDACTED:<rule>]` (ids never),
/// with the default rules or those `rules`, `extraRules` and `allow` give (as for
/// [`crate::secrets::scan_secrets`]; refused with `"redact": false`). Unknown members
/// are refused.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct ExportOptions {
    pub leaf: Option<String>,
    /// Whether secrets are redacted (`None`: yes).
    pub redact: Option<bool>,
    pub rules: Option<RuleChoice>,
    pub extra_rules: Vec<RuleSpec>,
    pub allow: Vec<String>,
}

impl ExportOptions {
    /// Options from a JSON object ([`Error::InvalidOption`] for anything else).
    pub fn from_json(text: &str) -> Result<ExportOptions, Error> {
        crate::options::from_json(text)
    }
}

/// Writes `entries` as a session file of `format` that the agent resumes at `leaf`,
/// as they are (no redaction: [`export_redacted`] and [`export_file`] redact).
/// Fails with [`Error::UnknownLeaf`] when no entry has id `leaf`, and for Claude Code
/// and Codex as `build_context` under the agent's profile fails (a broken path, an
/// invalid compaction, a duplicate tool call).
pub fn export(format: Format, entries: &[Entry], leaf: &str) -> Result<Exported, Error> {
    export_with(format, entries, leaf, None)
}

/// [`export`], each line written with the secrets in its strings replaced by
/// `[REDACTED:<rule>]` by `redactor` (ids and every other byte unchanged), counted in
/// the report's `redactions`.
pub fn export_redacted(
    format: Format,
    entries: &[Entry],
    leaf: &str,
    redactor: &Redactor,
) -> Result<Exported, Error> {
    export_with(format, entries, leaf, Some(redactor))
}

fn export_with(
    format: Format,
    entries: &[Entry],
    leaf: &str,
    redactor: Option<&Redactor>,
) -> Result<Exported, Error> {
    if !entries.iter().any(|e| e.id() == leaf) {
        return Err(Error::UnknownLeaf {
            id: leaf.to_owned(),
        });
    }
    let mut tally = Tally::default();
    let lines = match format {
        Format::Pi => {
            let text = super::pi::export_pi(entries, leaf)?;
            pi_changes(entries, &mut tally);
            match redactor {
                // The whole tree's lines, redacted one by one below.
                Some(_) => text.lines().map(str::to_owned).collect(),
                None => {
                    return Ok(Exported {
                        report: tally.report(format, text.lines().count() as u64),
                        text,
                    });
                }
            }
        }
        Format::ClaudeCode => {
            let plan = Plan::new(entries, leaf, Profile::ClaudeCode, &mut tally)?;
            super::claude_export::write(&plan, &mut tally)?
        }
        Format::Codex => {
            let plan = Plan::new(entries, leaf, Profile::Codex, &mut tally)?;
            super::codex_export::write(&plan, &mut tally)?
        }
    };
    let mut text = String::new();
    for line in &lines {
        match redactor {
            Some(redactor) => {
                let (redacted, count) = redactor.redact_json_counted(line.as_bytes());
                tally.redactions += count;
                // Only ASCII replaces whole characters of valid UTF-8.
                text.push_str(&String::from_utf8_lossy(&redacted));
            }
            None => text.push_str(line),
        }
        text.push('\n');
    }
    Ok(Exported {
        report: tally.report(format, lines.len() as u64),
        text,
    })
}

/// Exports the session file at `source` into a new file at `out` (which must not
/// exist), resuming at `options.leaf` or the latest leaf. The source is opened
/// read-only (beside a writer). The output is written into a temporary file beside
/// `out` whose permissions are no wider than the source's (a 0600 source gives a 0600
/// export), synced and renamed to `out` unless that exists by then: all or nothing.
pub fn export_file(
    format: Format,
    source: &Path,
    out: &Path,
    options: &ExportOptions,
) -> Result<ExportReport, Error> {
    let store = crate::store::Store::open_jsonl_with(
        source,
        &crate::store::JsonlOptions {
            read_only: true,
            ..crate::store::JsonlOptions::default()
        },
    )?
    .0;
    let leaf = match &options.leaf {
        Some(leaf) => leaf.clone(),
        None => store
            .latest_leaf()?
            .map(|node| node.id)
            .ok_or(Error::InvalidArgument {
                argument: "src_path",
                message: "holds no entry, so it has no leaf to export".into(),
            })?,
    };
    let entries = store.entries()?;
    drop(store);
    let redactor = redaction(
        options.redact,
        true,
        &options.rules,
        &options.extra_rules,
        &options.allow,
    )?;
    let exported = export_with(format, &entries, &leaf, redactor.as_deref())?;
    let mode = std::fs::metadata(source)
        .map_err(|e| super::io_error(IoOp::Open, source, &e))?
        .permissions();
    write_beside(out, exported.text.as_bytes(), &mode)?;
    Ok(exported.report)
}

/// `text` into a new file `path`: a temporary file beside it, its permissions
/// narrowed to `source`'s, synced, then renamed to `path` unless that exists.
fn write_beside(path: &Path, text: &[u8], source: &std::fs::Permissions) -> Result<(), Error> {
    use std::os::unix::fs::PermissionsExt;
    if std::fs::symlink_metadata(path).is_ok() {
        let exists = std::io::Error::from_raw_os_error(libc::EEXIST);
        return Err(super::io_error(IoOp::Open, path, &exists));
    }
    let (temp, mut file) = super::create_temporary(path)?;
    let written = (|| {
        let created = file
            .metadata()
            .map_err(|e| super::io_error(IoOp::Open, &temp, &e))?
            .permissions()
            .mode();
        let narrowed = std::fs::Permissions::from_mode(created & source.mode() & 0o777);
        file.set_permissions(narrowed)
            .map_err(|e| super::io_error(IoOp::Open, &temp, &e))?;
        file.write_all(text)
            .map_err(|e| super::io_error(IoOp::Write, &temp, &e))?;
        file.sync_all()
            .map_err(|e| super::io_error(IoOp::Sync, &temp, &e))?;
        crate::repair::rename_no_replace(&temp, path)
            .map_err(|e| super::io_error(IoOp::Open, path, &e))
    })();
    match written {
        Ok(()) => {
            // The file is synced; a failed directory sync loses nothing promised.
            let _ = crate::store::sync_dir(path);
            Ok(())
        }
        Err(e) => {
            let _ = std::fs::remove_file(&temp);
            Err(e)
        }
    }
}

/// The changes counted while writing, in the order first met.
#[derive(Default)]
pub(super) struct Tally {
    converted: Vec<ExportChange>,
    dropped: Vec<ExportChange>,
    redactions: u64,
}

impl Tally {
    pub(super) fn converted(&mut self, kind: &str, reason: &'static str) {
        Self::count(&mut self.converted, kind, reason, 1);
    }

    pub(super) fn dropped(&mut self, kind: &str, reason: &'static str) {
        Self::count(&mut self.dropped, kind, reason, 1);
    }

    fn count(list: &mut Vec<ExportChange>, kind: &str, reason: &'static str, n: u64) {
        if n == 0 {
            return;
        }
        match list
            .iter_mut()
            .find(|c| c.kind == kind && c.reason == reason)
        {
            Some(change) => change.count += n,
            None => list.push(ExportChange {
                kind: kind.to_owned(),
                count: n,
                reason,
            }),
        }
    }

    fn report(self, format: Format, entries: u64) -> ExportReport {
        ExportReport {
            format,
            entries,
            converted: self.converted,
            dropped: self.dropped,
            redactions: self.redactions,
        }
    }
}

/// What the pi writer changes: metadata pi has no entry for, and object summaries.
fn pi_changes(entries: &[Entry], tally: &mut Tally) {
    let mut tape = Tape::default();
    for entry in entries {
        if crate::json::scan(entry.json().as_bytes(), MAX_DEPTH, &mut tape).is_err() {
            continue;
        }
        match entry.kind() {
            EntryKind::Metadata => {
                let key = tape.get(0, "key").map(|k| tape.string(k).into_owned());
                let root_header =
                    entry.parent_id().is_none() && key.as_deref() == Some("pi.session");
                let pi_own = key
                    .as_deref()
                    .is_some_and(|k| k == "session.label" || k.starts_with("pi."));
                if !pi_own && !root_header {
                    tally.converted(
                        "metadata",
                        "written as a pi custom entry (customType libsession.metadata, data {key, value})",
                    );
                }
            }
            EntryKind::Compaction => {
                if tape
                    .get(0, "summary")
                    .is_some_and(|s| tape.nodes[s].kind == Kind::Object)
                {
                    tally.converted(
                        "compaction.summary",
                        "an object summary is written as its JSON text: pi's summary is a string",
                    );
                }
            }
            EntryKind::Message(_) => {}
        }
    }
}

/// One message of the context, scanned, with the entry it comes from.
pub(super) struct Item {
    pub tape: Tape,
    /// The entry's id; `None` for a message the agent's rules add (a synthesized result,
    /// Claude Code's "No response requested.") and for the summary message.
    pub entry_id: Option<String>,
    /// Unix milliseconds: the entry's, else the message's, else the previous item's.
    pub millis: f64,
}

/// What the Claude Code and Codex writers write from: the context under the agent's
/// profile, scanned, and facts of the source's root.
pub(super) struct Plan {
    /// The summary message's text when the context starts with one, and the
    /// compaction's summary when it is a string (what Codex keeps as `message`).
    pub summary: Option<SummaryText>,
    pub items: Vec<Item>,
    /// The source session's id (a Claude Code `sessionId`, a Codex `session_meta` id),
    /// when its root records one.
    pub session_id: Option<String>,
    pub cwd: String,
    /// The millisecond timestamp of the first entry.
    pub started: f64,
}

/// The compaction the context starts from.
pub(super) struct SummaryText {
    /// The summary message's text (`None` when the profile sends no summary message).
    pub message: Option<String>,
    /// The compaction's summary when it is a string.
    pub summary: Option<String>,
    pub tokens_before: f64,
    pub millis: f64,
}

impl Plan {
    fn new(
        entries: &[Entry],
        leaf: &str,
        profile: Profile,
        tally: &mut Tally,
    ) -> Result<Plan, Error> {
        let options = ContextOptions {
            profile,
            ..ContextOptions::default()
        };
        let context = build_context(entries, leaf, &options)?;
        let path = crate::tree::path_to(entries, leaf)?;
        let by_id: HashMap<&str, &Entry> = entries.iter().map(|e| (e.id(), e)).collect();
        let mut tape = Tape::default();
        let millis_of = |entry: &Entry, tape: &mut Tape| -> f64 {
            if crate::json::scan(entry.json().as_bytes(), MAX_DEPTH, tape).is_err() {
                return 0.0;
            }
            tape.get(0, "timestamp")
                .and_then(|t| std::str::from_utf8(tape.raw(t)).ok()?.parse::<f64>().ok())
                .unwrap_or(0.0)
        };
        // The root's facts: the session's id and working folder.
        let mut session_id = None;
        let mut cwd = String::new();
        let started = path.first().map_or(0.0, |e| millis_of(e, &mut tape));
        if let Some(root) = path.first()
            && root.kind() == EntryKind::Metadata
            && crate::json::scan(root.json().as_bytes(), MAX_DEPTH, &mut tape).is_ok()
        {
            let key = tape.get(0, "key").map(|k| tape.string(k).into_owned());
            if let Some(value) = tape.get(0, "value") {
                let text = |name: &str| {
                    tape.get(value, name)
                        .filter(|&v| tape.nodes[v].kind == Kind::String)
                        .map(|v| tape.string(v).into_owned())
                };
                session_id = match key.as_deref() {
                    Some("claude.transcript") => text("sessionId"),
                    Some("codex.session_meta") | Some("pi.session") => text("id"),
                    _ => None,
                };
                cwd = text("cwd").unwrap_or_default();
            }
        }
        let summary = match &context.compaction {
            None => None,
            Some(used) => {
                let compaction = by_id.get(used.id.as_str());
                let millis = compaction.map_or(0.0, |e| millis_of(e, &mut tape));
                let summary = crate::json::scan(used.summary.as_bytes(), MAX_DEPTH, &mut tape)
                    .ok()
                    .filter(|()| tape.nodes[0].kind == Kind::String)
                    .map(|()| tape.string(0).into_owned());
                let message = match context.has_summary_message() {
                    true => {
                        crate::json::scan(context.messages[0].as_bytes(), MAX_DEPTH, &mut tape)
                            .map_err(|_| Error::internal("a summary message does not scan"))?;
                        Some(text_of(&tape))
                    }
                    false => None,
                };
                Some(SummaryText {
                    message,
                    summary,
                    tokens_before: used.tokens_before.parse().unwrap_or(0.0),
                    millis,
                })
            }
        };
        let offset = usize::from(context.has_summary_message());
        let mut items = Vec::with_capacity(context.kept_entry_ids.len());
        let mut last_millis = summary.as_ref().map_or(started, |s| s.millis);
        for (message, id) in context.messages[offset..]
            .iter()
            .zip(&context.kept_entry_ids)
        {
            let mut tape = Tape::default();
            crate::json::scan(message.as_bytes(), MAX_DEPTH, &mut tape)
                .map_err(|_| Error::internal("a context message does not scan"))?;
            let millis = match id.as_deref().and_then(|id| by_id.get(id)) {
                Some(entry) => millis_of(entry, &mut Tape::default()),
                None => last_millis,
            };
            last_millis = millis;
            items.push(Item {
                tape,
                entry_id: id.clone(),
                millis,
            });
        }
        dropped_from_path(entries.len(), &path, &context, profile, tally);
        Ok(Plan {
            summary,
            items: after_pending_results(items, profile, tally),
            session_id,
            cwd,
            started,
        })
    }
}

/// The roles the agent's format has: a message of another role is sent as user text.
pub(super) fn has_role(profile: Profile, role: &str) -> bool {
    match role {
        "user" | "assistant" | "toolResult" => true,
        "developer" | "system" => profile == Profile::Codex,
        _ => false,
    }
}

/// `items` with each message of a role the agent lacks that comes between tool calls
/// and their results moved after the results: sent as user text there, it would
/// start a turn and leave the calls unanswered (Codex writes its developer messages
/// there; Claude Code refuses text between a call and its result).
fn after_pending_results(items: Vec<Item>, profile: Profile, tally: &mut Tally) -> Vec<Item> {
    let mut out = Vec::with_capacity(items.len());
    let mut deferred = Vec::new();
    let mut pending: HashSet<String> = HashSet::new();
    for item in items {
        let role = string_member(&item.tape, 0, "role").unwrap_or_default();
        match role.as_str() {
            "assistant" => {
                for block in blocks(&item.tape) {
                    if let Block::ToolCall { id, .. } = block {
                        pending.insert(id);
                    }
                }
                out.push(item);
            }
            "toolResult" => {
                if let Some(call) = string_member(&item.tape, 0, "toolCallId") {
                    pending.remove(&call);
                }
                out.push(item);
                if pending.is_empty() {
                    out.append(&mut deferred);
                }
            }
            "user" => {
                // A new turn: calls still without a result stay so.
                pending.clear();
                out.append(&mut deferred);
                out.push(item);
            }
            role if !has_role(profile, role) && !pending.is_empty() => {
                tally.converted(
                    "order",
                    "a message of a role the agent lacks, between tool calls and their results, is written after the results",
                );
                deferred.push(item);
            }
            _ => out.push(item),
        }
    }
    out.append(&mut deferred);
    out
}

/// Counts what of the session the export leaves out: other branches, metadata, and
/// the messages the agent does not send (before the compaction, or left out by its
/// rules).
fn dropped_from_path(
    total: usize,
    path: &[Entry],
    context: &crate::context::Context,
    profile: Profile,
    tally: &mut Tally,
) {
    let kept: HashSet<&str> = context
        .kept_entry_ids
        .iter()
        .flatten()
        .map(String::as_str)
        .collect();
    let compaction_at = context
        .compaction
        .as_ref()
        .and_then(|c| path.iter().position(|e| e.id() == c.id));
    let off_path = (total - path.len()) as u64;
    Tally::count(
        &mut tally.dropped,
        "branch",
        "an entry off the path to the leaf: the agent resumes one linear history",
        off_path,
    );
    let mut tape = Tape::default();
    for (i, entry) in path.iter().enumerate() {
        match entry.kind() {
            EntryKind::Metadata => {
                let label = crate::json::scan(entry.json().as_bytes(), MAX_DEPTH, &mut tape)
                    .is_ok()
                    && tape
                        .get(0, "key")
                        .is_some_and(|k| tape.string(k) == "session.label");
                match label {
                    true => tally.dropped("label", "the agent's format has no labels"),
                    false => tally.dropped(
                        "metadata",
                        "the agent's format has no place for libsession metadata",
                    ),
                }
            }
            EntryKind::Compaction if Some(i) != compaction_at => tally.dropped(
                "compaction",
                "an earlier compaction: the agent resumes from the latest one",
            ),
            EntryKind::Compaction => {}
            EntryKind::Message(_) if kept.contains(entry.id()) => {}
            EntryKind::Message(_) if compaction_at.is_some_and(|at| i < at) => tally.dropped(
                "message",
                "before the compaction: the agent resumes from its summary",
            ),
            EntryKind::Message(_) => tally.dropped(
                "message",
                match profile {
                    Profile::ClaudeCode => {
                        "left out as Claude Code leaves it out on resume (a reply part whose calls have no result, whitespace-only text)"
                    }
                    _ => "left out as Codex leaves it out on resume (an output without its call)",
                },
            ),
        }
    }
}

/// The text of a message scanned into `tape`: a string content, or its text blocks
/// (Codex's `input_text` and `output_text` parts too) joined by newlines.
pub(super) fn text_of(tape: &Tape) -> String {
    match tape.get(0, "content") {
        Some(c) if tape.nodes[c].kind == Kind::String => tape.string(c).into_owned(),
        Some(c) if tape.nodes[c].kind == Kind::Array => tape
            .elements(c)
            .filter(|&b| {
                tape.get(b, "type").is_some_and(|t| {
                    matches!(&*tape.string(t), "text" | "input_text" | "output_text")
                })
            })
            .filter_map(|b| tape.get(b, "text").map(|t| tape.string(t).into_owned()))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// The text a message of a role the agent lacks is sent as, the way pi's `convertToLlm`
/// turns it into a user message: a bash execution as its command and output, a branch
/// summary wrapped in pi's words, anything else its text (or its `summary`). `None` for
/// a bash execution pi leaves out of the context (`excludeFromContext`).
pub(super) fn user_text(tape: &Tape) -> Option<String> {
    let flag = |name: &str| tape.get(0, name).is_some_and(|v| tape.raw(v) == b"true");
    match string_member(tape, 0, "role").as_deref() {
        Some("bashExecution") if flag("excludeFromContext") => None,
        Some("bashExecution") => {
            let mut text = String::from("Ran `");
            text.push_str(&string_member(tape, 0, "command").unwrap_or_default());
            text.push_str("`\n");
            match string_member(tape, 0, "output").filter(|o| !o.is_empty()) {
                Some(output) => {
                    text.push_str("```\n");
                    text.push_str(&output);
                    text.push_str("\n```");
                }
                None => text.push_str("(no output)"),
            }
            let exit = tape
                .get(0, "exitCode")
                .filter(|&v| tape.nodes[v].kind == Kind::Number)
                .and_then(|v| std::str::from_utf8(tape.raw(v)).ok())
                .filter(|code| *code != "0");
            if flag("cancelled") {
                text.push_str("\n\n(command cancelled)");
            } else if let Some(code) = exit {
                text.push_str("\n\nCommand exited with code ");
                text.push_str(code);
            }
            if flag("truncated")
                && let Some(path) =
                    string_member(tape, 0, "fullOutputPath").filter(|p| !p.is_empty())
            {
                text.push_str("\n\n[Output truncated. Full output: ");
                text.push_str(&path);
                text.push(']');
            }
            Some(text)
        }
        Some("branchSummary") => {
            let mut text = String::from(
                "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n",
            );
            text.push_str(&string_member(tape, 0, "summary").unwrap_or_default());
            text.push_str("</summary>");
            Some(text)
        }
        _ => Some(match text_of(tape) {
            t if t.is_empty() => string_member(tape, 0, "summary").unwrap_or_default(),
            t => t,
        }),
    }
}

/// A top-level string member of the message scanned into `tape`.
pub(super) fn string_member(tape: &Tape, node: usize, name: &str) -> Option<String> {
    tape.get(node, name)
        .filter(|&v| tape.nodes[v].kind == Kind::String)
        .map(|v| tape.string(v).into_owned())
}

/// The text of a member's value as written (canonical JSON).
pub(super) fn raw_member<'t>(tape: &'t Tape, node: usize, name: &str) -> Option<&'t str> {
    tape.get(node, name)
        .and_then(|v| std::str::from_utf8(tape.raw(v)).ok())
}

/// A content block of a message, as the writers read it.
pub(super) enum Block<'t> {
    Text(String),
    Thinking {
        text: String,
        signature: Option<String>,
    },
    ToolCall {
        id: String,
        name: String,
        /// The arguments object as written.
        arguments: &'t str,
        /// Codex's own text of the arguments, kept by its import.
        raw_arguments: Option<String>,
    },
    Image {
        data: String,
        mime: String,
    },
    /// An extension block (`type` anything else), as written.
    Other {
        kind: String,
        raw: &'t str,
    },
}

/// The content of the message scanned into `tape` as blocks (a string content is one
/// text block).
pub(super) fn blocks(tape: &Tape) -> Vec<Block<'_>> {
    let Some(content) = tape.get(0, "content") else {
        return Vec::new();
    };
    match tape.nodes[content].kind {
        Kind::String => vec![Block::Text(tape.string(content).into_owned())],
        Kind::Array => tape.elements(content).map(|b| block(tape, b)).collect(),
        _ => Vec::new(),
    }
}

fn block(tape: &Tape, node: usize) -> Block<'_> {
    let kind = string_member(tape, node, "type").unwrap_or_default();
    let text = |name: &str| string_member(tape, node, name).unwrap_or_default();
    match kind.as_str() {
        "text" => Block::Text(text("text")),
        "thinking" => Block::Thinking {
            text: text("thinking"),
            signature: string_member(tape, node, "thinkingSignature"),
        },
        "toolCall" => Block::ToolCall {
            id: text("id"),
            name: text("name"),
            arguments: raw_member(tape, node, "arguments").unwrap_or("{}"),
            raw_arguments: string_member(tape, node, "rawArguments"),
        },
        "image" => Block::Image {
            data: text("data"),
            mime: text("mimeType"),
        },
        _ => Block::Other {
            kind,
            raw: std::str::from_utf8(tape.raw(node)).unwrap_or("{}"),
        },
    }
}

/// The ISO text of a millisecond timestamp (`toISOString`).
pub(super) fn iso(millis: f64) -> String {
    millis_to_iso(millis).unwrap_or_else(|| "1970-01-01T00:00:00.000Z".to_owned())
}

/// A UUID-shaped id made from `seed` (the agents name sessions by UUID): the same seed
/// gives the same id, so an export is reproducible.
pub(super) fn uuid_from(seed: &str) -> String {
    use std::hash::{Hash, Hasher};
    let half = |salt: u8| {
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        salt.hash(&mut hasher);
        seed.hash(&mut hasher);
        hasher.finish()
    };
    let (a, b) = (half(1), half(2));
    let hex = format!("{a:016x}{b:016x}");
    // Version 4, variant 1, so that a strict parser takes it.
    format!(
        "{}-{}-4{}-8{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[13..16],
        &hex[17..20],
        &hex[20..32]
    )
}

/// Whether `text` is a UUID in its canonical lowercase, hyphenated form.
pub(super) fn is_uuid(text: &str) -> bool {
    text.len() == 36
        && text.char_indices().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => c == '-',
            _ => c.is_ascii_hexdigit(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scanned(text: &str) -> Tape {
        let mut tape = Tape::default();
        crate::json::scan(text.as_bytes(), MAX_DEPTH, &mut tape).unwrap();
        tape
    }

    #[test]
    fn a_made_up_session_id_is_a_uuid_and_the_same_for_the_same_seed() {
        let id = uuid_from("u-1");
        assert!(is_uuid(&id), "{id}");
        assert_eq!(&id[14..15], "4", "version 4");
        assert_eq!(uuid_from("u-1"), id);
        assert_ne!(uuid_from("u-2"), id);
        assert!(!is_uuid("codex-12"));
    }

    #[test]
    fn roles_the_agent_lacks_become_the_user_text_pi_makes_of_them() {
        let bash = scanned(
            r#"{"role":"bashExecution","command":"ls","output":"a\n","exitCode":2,"cancelled":false,"truncated":true,"fullOutputPath":"/tmp/o"}"#,
        );
        assert_eq!(
            user_text(&bash).unwrap(),
            "Ran `ls`\n```\na\n\n```\n\nCommand exited with code 2\n\n[Output truncated. Full output: /tmp/o]"
        );
        let quiet = scanned(r#"{"role":"bashExecution","command":"x","output":"","exitCode":0}"#);
        assert_eq!(user_text(&quiet).unwrap(), "Ran `x`\n(no output)");
        let hidden = scanned(r#"{"role":"bashExecution","command":"x","excludeFromContext":true}"#);
        assert_eq!(user_text(&hidden), None);
        let branch = scanned(r#"{"role":"branchSummary","summary":"s"}"#);
        assert!(
            user_text(&branch)
                .unwrap()
                .ends_with("<summary>\ns</summary>")
        );
        let developer = scanned(
            r#"{"role":"developer","content":[{"type":"input_text","text":"a"},{"type":"input_text","text":"b"}]}"#,
        );
        assert_eq!(user_text(&developer).unwrap(), "a\nb");
    }

    #[test]
    fn the_report_counts_each_kind_and_reason_once_in_the_order_first_met() {
        let mut tally = Tally::default();
        tally.dropped("metadata", "no place");
        tally.converted("role:custom", "as user text");
        tally.dropped("metadata", "no place");
        tally.dropped("label", "no labels");
        let report = tally.report(Format::Codex, 3);
        assert_eq!(
            report.to_json(),
            r#"{"format":"codex","entries":3,"converted":[{"kind":"role:custom","count":1,"reason":"as user text"}],"dropped":[{"kind":"metadata","count":2,"reason":"no place"},{"kind":"label","count":1,"reason":"no labels"}],"redactions":0}"#
        );
    }
}
