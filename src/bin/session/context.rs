//! `context`: what the model should see for a leaf (the contract's `build_context`).
//! The messages the model is sent go to stdout, readable (with --json, the context
//! object, for a host or a script); stderr says in words which compaction was used, what the budget trimmed and why,
//! and which interactions were skipped or kept with a tool-pairing defect.

use std::io::Write;

use session::json::Object;
use session::{BudgetReason, Context, ContextOptions, Defect};

use crate::exit;
use crate::location::Location;
use crate::output::{Doc, Out, Outcome, leaf_or_default, note, open_at, parsed};
use crate::render;
use crate::term;

/// `session context FILE [LEAF] [options]`, parsed.
pub struct Request {
    pub file: Location,
    /// The leaf; `None` for the default leaf (`output::default_leaf`).
    pub leaf: Option<String>,
    /// The library's options object, written from the flags as JSON so that the
    /// library's own checks and defaults apply.
    options: String,
}

impl Request {
    /// The request for `file` and `leaf`, with `--on-defect`, `--profile` and the budget flags
    /// (each member of `budget` that was given).
    pub fn new(
        file: Location,
        leaf: Option<String>,
        on_defect: Option<&str>,
        profile: Option<&str>,
        budget: [(&str, Option<f64>); 3],
    ) -> Request {
        let mut options = Object::new();
        if let Some(on_defect) = on_defect {
            options = options.string("onDefect", on_defect);
        }
        if let Some(profile) = profile {
            options = options.string("profile", profile);
        }
        let given: Vec<(&str, f64)> = budget
            .into_iter()
            .filter_map(|(member, value)| Some((member, value?)))
            .collect();
        if !given.is_empty() {
            let budget = given
                .into_iter()
                .fold(Object::new(), |o, (member, value)| o.finite(member, value));
            options = options.raw("budget", &budget.finish());
        }
        Request {
            file,
            leaf,
            options: options.finish(),
        }
    }
}

pub fn context(out: &mut Out, request: &Request) -> Outcome {
    let options = ContextOptions::from_json(&request.options)?;
    let opened = open_at(&request.file)?;
    let leaf = leaf_or_default(&opened.store, request.leaf.as_deref())?;
    let context = opened.store.build_context(&leaf, &options, None)?;
    let json = context.to_json();
    if out.readable() {
        let value = parsed(&json);
        let messages = value["messages"].as_array().map_or(&[][..], Vec::as_slice);
        let title = format!(
            "what the model is sent for {leaf}: {} message(s)",
            messages.len()
        );
        let title = out.paint("1", &term::escape(&title));
        writeln!(out, "{title}")?;
        for message in messages {
            writeln!(out)?;
            render::message(out, message, None)?;
        }
    } else {
        out.emit(&Doc::One(json))?;
    }
    out.flush()?;
    for line in explain(&context) {
        note(&line);
    }
    if opened.state != session::State::Ready {
        note(&format!(
            "note: {} needs repair; the context was built from its committed entries (session repair FILE)",
            request.file.describe()
        ));
    }
    Ok(exit::for_state(opened.state))
}

/// What `context` says on stderr: the compaction used, the budget's account and the
/// defective interactions, one line each.
pub fn explain(context: &Context) -> Vec<String> {
    let mut lines = Vec::new();
    let kept = context.kept_entry_ids.len();
    let from = context
        .kept_entry_ids
        .iter()
        .flatten()
        .next()
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
        let what = match d.action {
            Some("synthesized") => "answered with a synthetic result",
            Some(_) => "left out, as the agent does",
            None => "kept with a defect",
        };
        lines.push(format!("{what}: {}", defect(d)));
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
