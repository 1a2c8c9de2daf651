//! Issue 22, docs/contract.md §12: every file of the real-session corpus
//! (`tests/interop/corpus`, provenance in its README) resumes as its own agent resumes
//! it. Each file is imported, and the context of the import's resume leaf is built
//! with `{"profile":"auto"}` (the agent it came from): it must succeed, answer every
//! tool call it holds with a later result, and use the compaction nearest the leaf
//! when the path has one.
//!
//! `cargo test --test suite_context interop_resume:: -- --nocapture` also prints one Markdown row per
//! file, before (default options) and after (the profile): the table of
//! `tests/interop/AFTER.md`.

use crate::common;

use session::{Context, ContextOptions, EntryKind, Store, build_context, path_to};

/// The tool calls of `context` that no later message answers, by id.
fn unanswered_calls(context: &Context) -> Vec<String> {
    let mut open: Vec<String> = Vec::new();
    for message in &context.messages {
        let value: serde_json::Value = serde_json::from_str(message).unwrap();
        match value["role"].as_str() {
            Some("toolResult") => {
                let id = value["toolCallId"].as_str().unwrap_or_default();
                open.retain(|o| o != id);
            }
            Some("assistant") => {
                for block in value["content"].as_array().into_iter().flatten() {
                    if block["type"] == "toolCall" {
                        open.push(block["id"].as_str().unwrap_or_default().to_owned());
                    }
                }
            }
            _ => {}
        }
    }
    open
}

/// The defects of `context`, counted by reason and what was done: "2 missing_result
/// synthesized, 1 orphan_result kept".
fn defects(context: &Context) -> String {
    let mut counts: std::collections::BTreeMap<String, usize> = Default::default();
    for d in &context.defects {
        let key = format!("{} {}", d.reason.as_str(), d.action.unwrap_or("kept"));
        *counts.entry(key).or_default() += 1;
    }
    let cells: Vec<String> = counts.iter().map(|(k, n)| format!("{n} {k}")).collect();
    match cells.is_empty() {
        true => "–".to_owned(),
        false => cells.join(", "),
    }
}

/// A cell of the table: the number of messages, or the error's code.
fn cell(result: &Result<Context, session::Error>) -> String {
    match result {
        Ok(c) => format!(
            "yes: {} messages{}",
            c.messages.len(),
            match c.compaction.is_some() {
                true => ", compaction",
                false => "",
            }
        ),
        Err(e) => format!("**no**: {}", error_code(e)),
    }
}

fn error_code(e: &session::Error) -> String {
    match e {
        session::Error::ToolPairing { reason, .. } => format!("tool_pairing/{}", reason.as_str()),
        session::Error::InvalidCompaction { reason, .. } => {
            format!("invalid_compaction/{}", reason.as_str())
        }
        other => format!("{other}"),
    }
}

#[test]
fn every_corpus_file_resumes_at_its_resume_leaf_with_its_agents_profile() {
    let profile = ContextOptions::from_json(r#"{"profile":"auto"}"#).unwrap();
    // "Before": the contract's own rules, the default until the default became "auto".
    let no_profile = ContextOptions::from_json(r#"{"profile":"none"}"#).unwrap();
    let mut failures = Vec::new();
    let files = common::corpus_files("");
    assert!(files.len() >= 40, "{} corpus files", files.len());
    println!(
        "| file | resume leaf | before (no profile) | after (its profile) | defects (after) |"
    );
    println!("|---|---|---|---|---|");
    for file in &files {
        let (name, entries, leaf) = common::import_corpus_file(file);
        let before = build_context(&entries, &leaf, &no_profile);
        let after = build_context(&entries, &leaf, &profile);
        println!(
            "| `{name}` | `{leaf}` | {} | {} | {} |",
            cell(&before),
            cell(&after),
            after.as_ref().map_or(String::new(), defects)
        );
        let context = match after {
            Ok(context) => context,
            Err(e) => {
                failures.push(format!("{name}: {}", error_code(&e)));
                continue;
            }
        };
        let unanswered = unanswered_calls(&context);
        if !unanswered.is_empty() {
            failures.push(format!("{name}: unanswered calls {unanswered:?}"));
        }
        // Claude Code's results hung on side lines of a split reply are found, not
        // answered "aborted": no synthesized result for a call the file answers.
        let answered: Vec<String> = entries
            .iter()
            .filter_map(|e| {
                let v: serde_json::Value = serde_json::from_str(e.json()).ok()?;
                Some(v["message"]["toolCallId"].as_str()?.to_owned())
            })
            .collect();
        let wrongly_synthesized: Vec<&str> = context
            .defects
            .iter()
            .filter(|d| d.synthesized() && answered.contains(&d.tool_call_id))
            .map(|d| d.tool_call_id.as_str())
            .collect();
        if !wrongly_synthesized.is_empty() {
            failures.push(format!(
                "{name}: synthesized for answered calls {wrongly_synthesized:?}"
            ));
        }
        // The store's index finds the same side results as the pure function.
        let dir = common::temp_dir("interop-resume");
        let tmp = dir.join("s.jsonl");
        let lines: Vec<&str> = entries.iter().map(|e| e.json()).collect();
        std::fs::write(&tmp, lines.join("\n") + "\n").unwrap();
        let (store, _) = Store::open_jsonl(&tmp).unwrap();
        let from_store = store.build_context(&leaf, &profile, None).unwrap();
        if from_store.messages != context.messages {
            failures.push(format!("{name}: the store's context differs"));
        }
        let nearest = path_to(&entries, &leaf)
            .unwrap()
            .iter()
            .rev()
            .find(|e| e.kind() == EntryKind::Compaction)
            .map(|e| e.id().to_owned());
        let used = context.compaction.as_ref().map(|c| c.id.clone());
        if used != nearest {
            failures.push(format!("{name}: compaction {used:?}, nearest {nearest:?}"));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}
