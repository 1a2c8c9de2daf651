//! `context`: what the model should see for a leaf (the contract's `build_context`).
//! The context object goes to stdout as one line of JSON, for a host or a script;
//! stderr says in words which compaction was used, what the budget trimmed and why,
//! and which interactions were skipped or kept with a tool-pairing defect.

use std::ffi::OsString;
use std::io::Write;
use std::path::Path;

use session::{BudgetReason, Context, ContextOptions, Defect};

use crate::exit;
use crate::output::{Out, Outcome, note, open};
use crate::term;

/// `session context FILE LEAF [options]`, parsed.
pub struct Request<'a> {
    pub file: &'a Path,
    pub leaf: &'a str,
    /// The library's options object, built from the flags as JSON so that the
    /// library's own checks and defaults apply.
    options: serde_json::Map<String, serde_json::Value>,
}

/// The budget flags and the `budget` member each sets.
const BUDGET_FLAGS: [(&str, &str, &str); 3] = [
    (
        "--max-tokens",
        "maxTokens",
        "--max-tokens takes a number >= 0",
    ),
    (
        "--reserved-output",
        "reservedOutput",
        "--reserved-output takes a number >= 0",
    ),
    (
        "--safety-margin",
        "safetyMargin",
        "--safety-margin takes a number >= 0",
    ),
];

/// Reads `FILE LEAF` and the flags, each as `--flag VALUE` or `--flag=VALUE`, in any
/// order after the verb. `Err` is the reason for a usage error.
pub fn parse(args: &[OsString]) -> Result<Request<'_>, &'static str> {
    let mut positional: Vec<&OsString> = Vec::new();
    let mut budget = serde_json::Map::new();
    let mut options = serde_json::Map::new();
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        let Some(text) = arg.to_str().filter(|t| t.starts_with("--")) else {
            positional.push(arg);
            continue;
        };
        let (flag, value) = match text.split_once('=') {
            Some((flag, value)) => (flag, value),
            None => (
                text,
                rest.next()
                    .and_then(|v| v.to_str())
                    .ok_or("an option needs a value (UTF-8 text)")?,
            ),
        };
        if flag == "--on-defect" {
            if !matches!(value, "error" | "skip" | "keep") {
                return Err("--on-defect takes error, skip or keep");
            }
            options.insert("onDefect".into(), value.into());
            continue;
        }
        let (_, member, reason) = BUDGET_FLAGS
            .iter()
            .find(|(name, _, _)| *name == flag)
            .ok_or("context takes --max-tokens, --reserved-output, --safety-margin, --on-defect")?;
        let tokens = value
            .parse::<f64>()
            .ok()
            .filter(|n| n.is_finite() && *n >= 0.0)
            .ok_or(*reason)?;
        budget.insert((*member).into(), tokens.into());
    }
    let [file, leaf] = positional[..] else {
        return Err("context takes FILE and LEAF");
    };
    let leaf = leaf
        .to_str()
        .ok_or("LEAF is not UTF-8 text, so it cannot be an entry id")?;
    if !budget.is_empty() {
        if !budget.contains_key("maxTokens") {
            return Err("--reserved-output and --safety-margin need --max-tokens");
        }
        options.insert("budget".into(), budget.into());
    }
    Ok(Request {
        file: Path::new(file),
        leaf,
        options,
    })
}

pub fn context(out: &mut Out, request: &Request<'_>) -> Outcome {
    let options =
        ContextOptions::from_json(&serde_json::Value::from(request.options.clone()).to_string())?;
    let (store, report) = open(request.file, false)?;
    let context = store.build_context(request.leaf, &options, None)?;
    writeln!(out, "{}", term::json(&context.to_json()))?;
    out.flush()?;
    for line in explain(&context) {
        note(&line);
    }
    if report.state != session::State::Ready {
        note(&format!(
            "note: {} needs repair; the context was built from its committed entries (session repair FILE)",
            request.file.display()
        ));
    }
    Ok(exit::for_state(report.state))
}

/// What `context` says on stderr: the compaction used, the budget's account and the
/// defective interactions, one line each.
pub fn explain(context: &Context) -> Vec<String> {
    let mut lines = Vec::new();
    let kept = context.kept_entry_ids.len();
    let from = context
        .kept_entry_ids
        .first()
        .map_or_else(String::new, |id| format!(" from {id}"));
    match &context.compaction {
        None => lines.push(format!(
            "no compaction on the path: {kept} message(s){from}, the whole path"
        )),
        Some(c) => {
            let summary = if context.has_summary_message() {
                "its summary, then "
            } else {
                ""
            };
            lines.push(format!(
                "compaction {} (firstKeptEntryId {}, tokensBefore {}): {summary}{kept} message(s){from}",
                c.id,
                c.first_kept_entry_id.as_deref().unwrap_or("null"),
                c.tokens_before
            ));
        }
    }
    if let Some(b) = &context.budget {
        let why = match b.reason {
            BudgetReason::WithinBudget => "everything fits".to_owned(),
            BudgetReason::Trimmed => format!(
                "trimmed: dropped the {} oldest interaction(s), which did not fit",
                b.dropped_interactions
            ),
            BudgetReason::SingleInteractionOverflow => format!(
                "the newest interaction alone is over budget and is kept anyway; dropped the {} older interaction(s)",
                b.dropped_interactions
            ),
        };
        lines.push(format!(
            "budget: {} used of {} available (max {} - reserved output {} - safety margin {}): {why}",
            b.used, b.available, b.budget.max_tokens, b.budget.reserved_output, b.budget.safety_margin
        ));
        if let Some(id) = &b.suggested_first_kept_entry_id {
            lines.push(format!(
                "a compaction with firstKeptEntryId {id} would keep what fits"
            ));
        }
    }
    for d in &context.skipped {
        lines.push(format!("skipped {}", defect(d)));
    }
    for d in &context.defects {
        lines.push(format!("kept with a defect: {}", defect(d)));
    }
    lines
}

fn defect(d: &Defect) -> String {
    format!(
        "the interaction from {}: {} at {} (tool call {})",
        d.interaction_start_id,
        d.reason.as_str(),
        d.entry_id,
        d.tool_call_id
    )
}
