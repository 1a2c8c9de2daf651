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

mod claude;
mod codex;
mod message;
mod plan;
mod report;

use std::io::Write;
use std::path::Path;

use super::Format;
use crate::context::Profile;
use crate::entry::{Entry, EntryKind};
use crate::error::{Error, IoOp, io_error};
use crate::json::{Kind, MAX_DEPTH, Tape};
use crate::secrets::{Redactor, RuleChoice, RuleSpec, redaction};
use plan::Plan;
use report::Tally;
pub use report::{ExportChange, ExportReport, Exported};

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
            claude::write(&plan, &mut tally)?
        }
        Format::Codex => {
            let plan = Plan::new(entries, leaf, Profile::Codex, &mut tally)?;
            codex::write(&plan, &mut tally)?
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
        .map_err(|e| io_error(IoOp::Open, source, &e))?
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
        return Err(io_error(IoOp::Open, path, &exists));
    }
    let (temp, mut file) = super::create_temporary(path)?;
    let written = (|| {
        let created = file
            .metadata()
            .map_err(|e| io_error(IoOp::Open, &temp, &e))?
            .permissions()
            .mode();
        let narrowed = std::fs::Permissions::from_mode(created & source.mode() & 0o777);
        file.set_permissions(narrowed)
            .map_err(|e| io_error(IoOp::Open, &temp, &e))?;
        file.write_all(text)
            .map_err(|e| io_error(IoOp::Write, &temp, &e))?;
        file.sync_all()
            .map_err(|e| io_error(IoOp::Sync, &temp, &e))?;
        crate::repair::rename_no_replace(&temp, path).map_err(|e| io_error(IoOp::Open, path, &e))
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
