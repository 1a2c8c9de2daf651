//! libsession → pi → libsession keeps what the model sees: the export of a session,
//! imported again, gives the same `build_context` on every leaf, compactions included.
//! A compaction that keeps nothing before it (`firstKeptEntryId: null`) is written
//! the way pi spells it, without `firstKeptEntryId`; it used to be written with the
//! compaction's own id, which the import refuses, so the summary was lost.

use crate::common;

use std::collections::HashSet;
use std::path::Path;

use session::context::{ContextOptions, OnDefect, Profile, build_context};
use session::interop::{Format, export_pi, import};
use session::nav::RESUME_LEAF_KEY;
use session::{Entry, parse_entries};

fn entries_of(lines: &[String]) -> Vec<Entry> {
    parse_entries(format!("[{}]", lines.join(","))).unwrap()
}

/// What the model sees at `leaf`, or why there is nothing.
fn context(entries: &[Entry], leaf: &str) -> Result<(Vec<String>, bool), String> {
    // The contract's own rules (no profile), defects kept: what the tree says.
    let options = ContextOptions {
        on_defect: OnDefect::Keep,
        profile: Profile::None,
        ..ContextOptions::default()
    };
    build_context(entries, leaf, &options)
        .map(|c| (c.messages, c.compaction.is_some()))
        .map_err(|e| e.to_string())
}

/// Exports `entries` to pi, imports the export, and compares the contexts of every
/// leaf. Returns the number of leaves under a compaction.
fn round_trip(name: &str, entries: &[Entry]) -> usize {
    // The import's record of the resume leaf is left out of an export (pi says where
    // it resumes by its last line): the leaves compared are the others, and the leaf
    // it hangs under is one.
    let record = |e: &&Entry| e.metadata().is_some_and(|(key, _)| key == RESUME_LEAF_KEY);
    let parents: HashSet<&str> = entries
        .iter()
        .filter(|e| !record(e))
        .filter_map(Entry::parent_id)
        .collect();
    let leaves: Vec<&str> = entries
        .iter()
        .filter(|e| !record(e))
        .map(Entry::id)
        .filter(|id| !parents.contains(id))
        .collect();
    let resume = leaves.last().unwrap();
    let exported = export_pi(entries, resume).unwrap();
    let again = import(Format::Pi, exported.as_bytes()).unwrap();
    let again = entries_of(&again.lines);
    let mut compacted = 0;
    for leaf in leaves {
        let before = context(entries, leaf);
        if before.as_ref().is_ok_and(|c| c.1) {
            compacted += 1;
        }
        assert_eq!(
            context(&again, leaf),
            before,
            "{name}: the context of {leaf} after libsession → pi → libsession"
        );
    }
    compacted
}

#[test]
fn a_compaction_that_keeps_nothing_keeps_its_summary_through_export_to_pi() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(root.join("examples/tiny-pi-compacted.jsonl")).unwrap();
    let lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let compacted = round_trip("tiny-pi-compacted", &entries_of(&lines));
    assert!(compacted > 0, "a leaf under the compaction is compared");
    // The same compaction keeping nothing before it.
    let kept = r#""firstKeptEntryId":"u-2""#;
    assert!(text.contains(kept), "the example's compaction keeps u-2");
    let text = text.replace(kept, r#""firstKeptEntryId":null"#);
    let lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let entries = entries_of(&lines);
    let compacted = round_trip("tiny-pi-compacted, keeping nothing", &entries);
    assert!(compacted > 0, "a leaf under the compaction is compared");
    // pi's way of saying "keep nothing": no firstKeptEntryId at all.
    let leaf = entries.last().unwrap().id();
    let exported = export_pi(&entries, leaf).unwrap();
    let compaction = exported
        .lines()
        .find(|l| l.contains(r#""type":"compaction""#))
        .unwrap();
    assert!(!compaction.contains("firstKeptEntryId"), "{compaction}");
}

#[test]
fn every_leaf_of_the_corpus_pi_sessions_has_the_same_context_after_export_and_import() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/interop/corpus/pi");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    files.sort();
    assert!(files.len() >= 6);
    let mut compacted = 0;
    for path in files {
        let imported = import(Format::Pi, &std::fs::read(&path).unwrap()).unwrap();
        let entries = entries_of(&imported.lines);
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        compacted += round_trip(&name, &entries);
    }
    assert!(compacted > 0, "leaves under a compaction are compared");
}

/// pi's own `buildSessionContext` (tests/interop/context.mjs, pi 0.73.1) of the export
/// gives, at the exported leaf, the messages ours gives: a compaction that keeps
/// nothing is read by pi as keeping nothing, its summary first. Needs node and the
/// packages of tests/interop (`npm ci` there); without them the test says so and passes.
#[test]
fn pi_reads_an_exported_compaction_that_keeps_nothing_as_libsession_does() {
    let interop = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/interop");
    let node = std::process::Command::new("node").arg("--version").output();
    let packages = interop.join("node_modules/@mariozechner/pi-coding-agent/package.json");
    if !node.is_ok_and(|o| o.status.success()) || !packages.exists() {
        eprintln!("node or pi's packages (npm ci in tests/interop) missing: not checked");
        return;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(root.join("examples/tiny-pi-compacted.jsonl")).unwrap();
    let text = text.replace(r#""firstKeptEntryId":"u-2""#, r#""firstKeptEntryId":null"#);
    let lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let entries = entries_of(&lines);
    let mut checked = 0;
    let scratch = common::temp_dir("interop-export");
    for leaf in entries.iter().map(Entry::id) {
        let Ok((ours, true)) = context(&entries, leaf) else {
            continue;
        };
        let exported = export_pi(&entries, leaf).unwrap();
        let out = scratch.join(format!("{leaf}.jsonl"));
        std::fs::write(&out, exported).unwrap();
        let output = std::process::Command::new("node")
            .arg(interop.join("context.mjs"))
            .arg(&out)
            .current_dir(&interop)
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let view: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
        assert_eq!(view["leafId"], leaf, "pi resumes the export at {leaf}");
        let pi = view["contexts"][leaf].as_array().unwrap();
        assert_eq!(ours.len(), pi.len(), "{leaf}: ours {ours:?}, pi's {pi:?}");
        for (ours, pi) in ours.iter().zip(pi) {
            let ours: serde_json::Value = serde_json::from_str(ours).unwrap();
            let expected = common::pi_message_as_ours(pi);
            assert_eq!(ours, expected, "{leaf}");
        }
        checked += 1;
    }
    assert!(checked > 0, "a leaf under the compaction is checked");
}

/// One thing the model sees, in a form every agent's file can carry: the role it is
/// sent under, the kind, and what it holds.
fn seen_items(messages: &[serde_json::Value], target: Format) -> Vec<serde_json::Value> {
    use serde_json::{Value, json};
    let mut items = Vec::new();
    for m in messages {
        let role = m["role"].as_str().unwrap_or("").to_owned();
        // A Codex item no block holds (a search, …) is written back as it is.
        if let Some(item) = m.get("codexItem")
            && m["content"] == json!([])
        {
            items.push(json!({"codexItem": item}));
            continue;
        }
        let blocks = match &m["content"] {
            Value::String(s) => vec![json!({"type": "text", "text": s})],
            Value::Array(b) => b.clone(),
            _ => Vec::new(),
        };
        match role.as_str() {
            "toolResult" => {
                let texts: Vec<&str> = blocks.iter().filter_map(|b| b["text"].as_str()).collect();
                let error = target != Format::Codex && m["isError"] == true;
                items.push(
                    json!({"result": m["toolCallId"], "text": texts.concat(), "error": error}),
                );
            }
            "user" | "assistant" => {
                for b in &blocks {
                    let item = match b["type"].as_str().unwrap_or("") {
                        "text" => json!({"role": role, "text": b["text"]}),
                        "thinking" => json!({"role": role, "thinking": b["thinking"]}),
                        "toolCall" => {
                            json!({"call": b["id"], "name": b["name"], "arguments": b["arguments"]})
                        }
                        "image" => json!({"role": role, "image": b["data"], "mime": b["mimeType"]}),
                        other => json!({"role": role, "block": other}),
                    };
                    items.push(item);
                }
            }
            // Codex's own roles (developer, system).
            _ => {
                for b in &blocks {
                    items.push(json!({"role": role, "text": b["text"]}));
                }
            }
        }
    }
    items
}

fn profile_of(format: Format) -> ContextOptions {
    ContextOptions::from_json(&format!(r#"{{"profile":"{}"}}"#, format.name())).unwrap()
}

/// Rule: a session exported to an agent and imported again as that agent's file gives
/// what the source gives under that agent's profile: the same messages for pi (which
/// keeps the tree), the same things seen by the model for Claude Code and Codex (the
/// documented conversions applied: roles they lack sent as user text, Codex's outputs
/// without an error flag). Every corpus file, native or imported, to each of the three.
#[test]
fn every_corpus_session_exported_and_imported_again_gives_the_same_context() {
    let mut compared = 0;
    for file in common::corpus_files("") {
        let (name, entries, leaf) = common::import_corpus_file(&file);
        for target in [Format::Pi, Format::ClaudeCode, Format::Codex] {
            let profile = profile_of(target);
            let expected = build_context(&entries, &leaf, &profile)
                .unwrap_or_else(|e| panic!("{name} under {}: {e}", target.name()));
            let exported = session::interop::export(target, &entries, &leaf)
                .unwrap_or_else(|e| panic!("{name} to {}: {e}", target.name()));
            assert_eq!(
                exported.report.entries,
                exported.text.lines().count() as u64,
                "{name}"
            );
            let again = import(target, exported.text.as_bytes())
                .unwrap_or_else(|e| panic!("{name} to {} and back: {e}", target.name()));
            let resume = again.report.resume_leaf_id.clone().unwrap();
            let again = entries_of(&again.lines);
            let got = build_context(&again, &resume, &profile)
                .unwrap_or_else(|e| panic!("{name} to {} and back: {e}", target.name()));
            if target == Format::Pi {
                assert_eq!(resume, leaf, "{name}: pi resumes the exported leaf");
                assert_eq!(got.messages, expected.messages, "{name} to pi and back");
            } else {
                let got: Vec<serde_json::Value> = got
                    .messages
                    .iter()
                    .map(|m| serde_json::from_str(m).unwrap())
                    .collect();
                let expected = common::export::as_exported(&expected.messages, target.name());
                let (got, expected) = (seen_items(&got, target), seen_items(&expected, target));
                if got != expected {
                    let at = got
                        .iter()
                        .zip(&expected)
                        .take_while(|(a, b)| a == b)
                        .count();
                    panic!(
                        "{name} to {} and back: {} items, {} expected; first difference at {at}: {:?} vs {:?}",
                        target.name(),
                        got.len(),
                        expected.len(),
                        got.get(at),
                        expected.get(at)
                    );
                }
            }
            compared += 1;
        }
    }
    assert!(compared >= 3 * 40, "{compared} exports compared");
}
