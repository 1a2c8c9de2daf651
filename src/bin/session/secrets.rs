//! `secrets` and `redact`: find secrets in sessions, and write them out redacted.

use std::io::Write;
use std::path::Path;

use session::secrets::{RuleSpec, SecretsOptions, redact_session, scan_secrets};

use crate::args::RuleArgs;
use crate::exit;
use crate::output::{Doc, Failure, Outcome};
use crate::term;

/// One line per finding (PATH ENTRY POINTER RULE FINGERPRINT), or the JSON result under
/// --json/--jsonl;
/// exit 1 when a secret was found.
pub fn secrets(out: &mut crate::output::Out, path: &Path, rules: &RuleArgs) -> Outcome {
    let options = options(rules, false)?;
    let report = scan_secrets(path, &options)?;
    if !out.readable() {
        out.emit(&Doc::One(report.to_json()))?;
    } else {
        for f in &report.findings {
            writeln!(
                out,
                "{}  {}  {}  {}  {}",
                term::escape(&f.path),
                term::escape(f.finding.entry_id.as_deref().unwrap_or("-")),
                term::escape(f.finding.pointer.as_deref().unwrap_or("-")),
                f.finding.rule,
                f.finding.fingerprint,
            )?;
        }
    }
    Ok(if report.findings.is_empty() {
        exit::for_state(session::State::Ready)
    } else {
        exit::damage()
    })
}

/// Writes SRC redacted to OUT (or in place when `dst` is `None`); the report on
/// stdout as one JSON line, in every output mode.
pub fn redact(
    out: &mut crate::output::Out,
    src: &Path,
    dst: Option<&Path>,
    rules: &RuleArgs,
) -> Outcome {
    let options = options(rules, dst.is_none())?;
    let report = redact_session(src, dst, &options)?;
    out.emit(&Doc::One(report.to_json()))?;
    Ok(exit::for_state(session::State::Ready))
}

/// The options of the flags: `--rules FILE` (a JSON array of rules, added to the
/// defaults) and `--allow VALUE`.
fn options(rules: &RuleArgs, in_place: bool) -> Result<SecretsOptions, Failure> {
    let extra_rules = match &rules.rules {
        None => Vec::new(),
        Some(file) => {
            let text = std::fs::read_to_string(file).map_err(|e| {
                crate::output::note(&format!("{}: {e}", file.display()));
                Failure::Request("the --rules file cannot be read")
            })?;
            serde_json::from_str::<Vec<RuleSpec>>(&text).map_err(|_| {
                Failure::Request(
                    "the --rules file is not a JSON array of {\"name\": …, \"pattern\": …}",
                )
            })?
        }
    };
    Ok(SecretsOptions {
        rules: None,
        extra_rules,
        allow: rules.allow.clone(),
        in_place,
    })
}
