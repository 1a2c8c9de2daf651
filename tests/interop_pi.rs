//! pi interop, checked against pi itself: sessions written by pi 0.73.1's own
//! `SessionManager` (tests/interop/generate.mjs: linear, branched, compacted, every
//! entry type, a lone-surrogate tool result, 2,000 messages, a split-turn compaction,
//! versions 1 and 2) are imported, and for every entry taken as the leaf libsession's
//! `build_context` (onDefect "keep": pi sends unpaired calls as they are) equals pi's
//! `buildSessionContext` (tests/interop/context.mjs) message by message, field by
//! field; pi's `compactionSummary` message is compared with the synthetic summary
//! message. A leaf under a compaction that §6.2 refuses is counted as refused, and the
//! import report must list that compaction. Then pi → libsession → pi: the export,
//! opened by pi, holds every original entry unchanged and gives the same contexts.
//!
//! Needs node (v20) and the packages of tests/interop (`npm ci` there, which this test
//! runs when they are missing). Without node the test prints a notice and passes.

use crate::common;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use session::context::{ContextOptions, OnDefect, Profile, build_context};
use session::interop::{Format, export_pi, import};
use session::{Entry, Error, parse_entries};

fn interop_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/interop")
}

/// `npm ci` in tests/interop unless pi's package is already installed.
fn ensure_packages() {
    common::npm_ci_unless_installed(
        &interop_dir(),
        &["node_modules/@mariozechner/pi-coding-agent/package.json"],
    );
}

fn node(script: &str, arg: &Path) -> String {
    let output = Command::new("node")
        .arg(interop_dir().join(script))
        .arg(arg)
        .current_dir(interop_dir())
        .output()
        .expect("node runs");
    assert!(
        output.status.success(),
        "node {script} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("node prints UTF-8")
}

/// JSON text with every surrogate escape (`\ud83d`) written as plain text
/// (`<ud83d>`), so that serde_json reads lone surrogates on both sides alike.
fn mark_surrogates(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("\\u") {
        let (before, after) = rest.split_at(at);
        let escaped_backslash = before.bytes().rev().take_while(|&b| b == b'\\').count() % 2 == 1;
        out.push_str(before);
        let hex = after.get(2..6).unwrap_or("");
        let is_surrogate =
            u16::from_str_radix(hex, 16).is_ok_and(|u| (0xD800..=0xDFFF).contains(&u));
        if is_surrogate && !escaped_backslash {
            out.push_str(&format!("<u{}>", hex.to_ascii_lowercase()));
            rest = &after[6..];
        } else {
            out.push_str(&after[..2]);
            rest = &after[2..];
        }
    }
    out.push_str(rest);
    out
}

fn value(text: &str) -> Value {
    serde_json::from_str(&mark_surrogates(text)).expect("valid JSON")
}

/// pi's view of a session file.
struct PiView {
    leaf_id: Option<String>,
    entries: Vec<String>,
    contexts: HashMap<String, Vec<Value>>,
}

fn pi_view(file: &Path) -> PiView {
    let v = value(&node("context.mjs", file));
    let contexts = v["contexts"]
        .as_object()
        .expect("contexts")
        .iter()
        .map(|(k, m)| (k.clone(), m.as_array().expect("messages").clone()))
        .collect();
    PiView {
        leaf_id: v["leafId"].as_str().map(str::to_owned),
        entries: v["entries"]
            .as_array()
            .expect("entries")
            .iter()
            .map(|e| e.as_str().expect("id").to_owned())
            .collect(),
        contexts,
    }
}

/// Whether libsession's context messages equal pi's: field by field, pi's
/// `compactionSummary` against the synthetic summary message.
fn same_messages(ours: &[String], pi: &[Value]) -> Result<(), String> {
    if ours.len() != pi.len() {
        return Err(format!("{} messages, pi has {}", ours.len(), pi.len()));
    }
    for (i, (ours, pi)) in ours.iter().zip(pi).enumerate() {
        let ours = value(ours);
        let expected = common::pi_message_as_ours(pi);
        if ours != expected {
            return Err(format!("message {i}: ours {ours}, pi's {expected}"));
        }
    }
    Ok(())
}

#[derive(Default)]
struct Figures {
    files: u64,
    leaves: u64,
    points: u64,
    mismatches: u64,
    refused: u64,
    round_trip_entries: u64,
}

/// The libsession id of pi's k-th entry: the same id, except in a version-1 file,
/// where pi and the importer each generate ids (the importer's `v1-<index>` counts the
/// header as index 0, as pi's migration does).
fn our_id(name: &str, k: usize, pi_id: &str) -> String {
    if name == "version-1" {
        format!("v1-{:08x}", k + 1)
    } else {
        pi_id.to_owned()
    }
}

fn check_file(path: &Path, figures: &mut Figures, failures: &mut Vec<String>) {
    let name = path.file_stem().unwrap().to_string_lossy().into_owned();
    let source = std::fs::read(path).unwrap();
    let imported = import(Format::Pi, &source).unwrap();
    assert!(
        imported.report.unmapped.is_empty(),
        "{name}: unmapped lines {:?}",
        imported.report.unmapped
    );
    let entries: Vec<Entry> = parse_entries(format!("[{}]", imported.lines.join(","))).unwrap();
    let refused: HashSet<&str> = imported
        .report
        .refused_compactions
        .iter()
        .map(|c| c.id.as_str())
        .collect();
    let pi = pi_view(path);
    let parents: HashSet<&str> = entries.iter().filter_map(Entry::parent_id).collect();
    // The contract's own rules (no profile), defects kept: compared with pi's own.
    let options = ContextOptions {
        on_defect: OnDefect::Keep,
        profile: Profile::None,
        ..ContextOptions::default()
    };
    figures.files += 1;
    for (k, pi_id) in pi.entries.iter().enumerate() {
        let Some(pi_context) = pi.contexts.get(pi_id) else {
            continue; // a long file: context.mjs samples its leaves
        };
        let id = our_id(&name, k, pi_id);
        figures.points += 1;
        if !parents.contains(id.as_str()) {
            figures.leaves += 1;
        }
        match build_context(&entries, &id, &options) {
            Ok(context) => {
                if let Err(why) = same_messages(&context.messages, pi_context) {
                    figures.mismatches += 1;
                    failures.push(format!("{name} leaf {id}: {why}"));
                }
            }
            Err(Error::InvalidCompaction { compaction_id, .. }) => {
                figures.refused += 1;
                assert!(
                    refused.contains(compaction_id.as_str()),
                    "{name}: refused compaction {compaction_id} is not in the import report"
                );
            }
            Err(e) => failures.push(format!("{name} leaf {id}: build_context failed: {e}")),
        }
    }
    round_trip(path, &name, &entries, &pi, figures, failures);
}

/// pi → libsession → pi: the export resumes at pi's leaf, keeps every entry, and pi's
/// contexts of the export equal pi's contexts of the original.
fn round_trip(
    path: &Path,
    name: &str,
    entries: &[Entry],
    pi: &PiView,
    figures: &mut Figures,
    failures: &mut Vec<String>,
) {
    let leaf_k = pi
        .entries
        .iter()
        .position(|e| Some(e) == pi.leaf_id.as_ref())
        .unwrap();
    let leaf = our_id(name, leaf_k, &pi.entries[leaf_k]);
    let exported = export_pi(entries, &leaf).unwrap();
    let scratch = common::temp_dir("interop-pi-export");
    let out = scratch.join(format!("{name}.jsonl"));
    std::fs::write(&out, &exported).unwrap();
    let again = pi_view(&out);
    assert_eq!(
        again.entries.len(),
        pi.entries.len(),
        "{name}: the export holds every entry"
    );
    assert_eq!(
        again.leaf_id.as_deref(),
        Some(leaf.as_str()),
        "{name}: pi resumes the export at the leaf"
    );
    for (k, pi_id) in pi.entries.iter().enumerate() {
        let id = our_id(name, k, pi_id);
        if again.contexts.get(&id) != pi.contexts.get(pi_id) {
            failures.push(format!(
                "{name}: pi's context of {id} differs after the round trip"
            ));
        }
    }
    if name.starts_with("version-") {
        return; // pi itself rewrites these as version 3; compared by context above.
    }
    let original: BTreeMap<String, Value> = std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(value)
        .map(|v| (v["id"].as_str().unwrap().to_owned(), v))
        .collect();
    let back: BTreeMap<String, Value> = exported
        .lines()
        .map(value)
        .map(|v| (v["id"].as_str().unwrap().to_owned(), v))
        .collect();
    assert_eq!(original.len(), back.len(), "{name}: header and every entry");
    for (id, line) in &original {
        figures.round_trip_entries += 1;
        if back.get(id) != Some(line) {
            failures.push(format!(
                "{name}: entry {id} changed: {line} -> {:?}",
                back.get(id)
            ));
        }
    }
}

#[test]
fn pi_sessions_import_with_pi_contexts_and_round_trip() {
    if !common::node_available() {
        eprintln!("NOTICE: node is not installed; the pi interop test is skipped");
        return;
    }
    ensure_packages();
    let dir = common::temp_dir("interop-pi");
    node("generate.mjs", &dir);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    files.sort();
    let mut figures = Figures::default();
    let mut failures = Vec::new();
    for file in &files {
        check_file(file, &mut figures, &mut failures);
    }
    eprintln!(
        "pi equivalence: {} files, {} entries as leaf ({} true leaves), {} mismatches, {} refused; round trip: {} entries",
        figures.files,
        figures.points,
        figures.leaves,
        figures.mismatches,
        figures.refused,
        figures.round_trip_entries
    );
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert_eq!(figures.files, 9);
    assert!(figures.refused > 0, "the split-turn compaction is refused");
    assert_eq!(figures.mismatches, 0);
}

/// Issue 21, item 11: members of a pi entry named like the importer's marks
/// (`importedParentId`, `piType`, `isoTimestamp`, and those names followed by `~`)
/// are data: pi → libsession → pi gives every line back byte for byte. Before, they
/// re-parented entries, turned a user message into a `custom_message`, or vanished.
#[test]
fn pi_members_named_like_import_marks_round_trip_byte_for_byte() {
    let source = [
        r#"{"type":"session","version":3,"id":"s-1","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w"}"#,
        r#"{"type":"message","id":"u-1","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"hi"},"importedParentId":"x-9","piType":"custom_message","isoTimestamp":"1999-01-01T00:00:00.000Z"}"#,
        r#"{"type":"message","id":"a-1","parentId":"u-1","timestamp":"2025-01-01T00:00:02.000Z","message":{"role":"assistant","content":[{"type":"text","text":"ok"}]},"isoTimestamp~":"t","piType~~":1,"importedParentId~x":2}"#,
        r#"{"type":"custom_message","id":"m-1","parentId":"a-1","timestamp":"2025-01-01T00:00:03.000Z","customType":"note","content":"c","display":true,"piType":"branch_summary","importedParentId":null}"#,
        r#"{"type":"branch_summary","id":"b-1","parentId":"m-1","timestamp":"2025-01-01T00:00:04.000Z","fromId":"a-1","summary":"s","isoTimestamp":"x"}"#,
        r#"{"type":"compaction","id":"c-1","parentId":"b-1","timestamp":"2025-01-01T00:00:05.000Z","summary":"s","firstKeptEntryId":"b-1","tokensBefore":1,"importedParentId":"u-1"}"#,
        r#"{"type":"label","id":"l-1","parentId":"c-1","timestamp":"2025-01-01T00:00:06.000Z","targetId":"u-1","label":"x","piType":"message"}"#,
    ];
    let text = source.join("\n") + "\n";
    let imported = import(Format::Pi, text.as_bytes()).unwrap();
    assert!(imported.report.unmapped.is_empty());
    assert!(imported.report.reparented.is_empty());
    let entries = parse_entries(format!("[{}]", imported.lines.join(","))).unwrap();
    let exported = export_pi(&entries, "l-1").unwrap();
    assert_eq!(exported.lines().collect::<Vec<_>>(), source);
}

/// One message's shape for the resume oracle: its role (user for any role pi's
/// `convertToLlm` turns into a user message), the ids of an assistant's calls, a
/// result's call id, and the text of an error result that has no entry behind it.
fn shape(message: &Value) -> String {
    match message["role"].as_str() {
        Some("assistant") => {
            let calls: Vec<&str> = message["content"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|b| b["type"] == "toolCall")
                .filter_map(|b| b["id"].as_str())
                .collect();
            format!("assistant {calls:?}")
        }
        Some("toolResult") => {
            let text = message["content"][0]["text"]
                .as_str()
                .filter(|t| *t == "No result provided")
                .unwrap_or("");
            format!(
                "toolResult {} {text}",
                message["toolCallId"].as_str().unwrap_or("?")
            )
        }
        _ => "user".to_owned(),
    }
}

/// docs/contract.md §12: every pi file of the corpus, resumed with `{"profile":"pi"}` at
/// the import's resume leaf, gives the messages pi sends when it resumes the file
/// (tests/interop/resume_pi.mjs: `buildSessionContext` + `convertToLlm` +
/// `transformMessages`), compared by shape: roles, calls, results and pi's "No result
/// provided" answers, in order.
#[test]
fn pi_corpus_files_resume_with_the_pi_profile_as_pi_sends_them() {
    if !common::node_available() {
        eprintln!("NOTICE: node is not installed; the pi resume oracle is skipped");
        return;
    }
    ensure_packages();
    let corpus = interop_dir().join("corpus/pi");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&corpus)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    files.sort();
    assert!(!files.is_empty());
    let options = ContextOptions::from_json(r#"{"profile":"pi"}"#).unwrap();
    for file in &files {
        let pi = value(&node("resume_pi.mjs", file));
        let pi_shapes: Vec<String> = pi["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(shape)
            .collect();
        let imported = import(Format::Pi, &std::fs::read(file).unwrap()).unwrap();
        let leaf = imported.report.resume_leaf_id.clone().unwrap();
        let entries = parse_entries(format!("[{}]", imported.lines.join(","))).unwrap();
        let ours = build_context(&entries, &leaf, &options).unwrap();
        let our_shapes: Vec<String> = ours.messages.iter().map(|m| shape(&value(m))).collect();
        assert_eq!(our_shapes, pi_shapes, "{}", file.display());
    }
}

/// Issue 35, docs/contract.md §15: every corpus file (pi, Claude Code, Codex), imported,
/// exported to pi at its resume leaf, is resumed by pi at that leaf (tests/interop/
/// resume_pi.mjs: pi's own `SessionManager`, `buildSessionContext`, `convertToLlm` and
/// `transformMessages`), and what pi sends has the shape of libsession's context of the
/// source under `{"profile":"pi"}`, less the messages of roles pi does not know: roles,
/// calls, results and pi's "No result provided" answers, in order. Files that differ
/// for a known reason are listed in [`PI_EXPORT_DIFFERS`]; the test checks that they
/// still differ, so the list cannot go stale. `-- --nocapture` prints one row per file.
/// Files whose export pi sends otherwise than libsession's pi profile says, and why.
const WHY: &str = "parallel calls written as consecutive assistant messages (a Claude Code reply \
     split one block per line, Codex's one item per call) before their results: pi's \
     transformMessages answers the earlier message's calls \"No result provided\" when \
     the next assistant message comes, where libsession's pi profile pairs them with \
     their results in the interaction";
const PI_EXPORT_DIFFERS: &[(&str, &str)] = &[
    ("claude-code/ccviewer-1af7fc5e.jsonl", WHY),
    ("claude-code/ccviewer-5c0375b4.jsonl", WHY),
    ("claude-code/ccviewer-fe5e1c67.jsonl", WHY),
    ("codex/localpush-12-40-23.jsonl", WHY),
    ("codex/localpush-12-41-04.jsonl", WHY),
    ("codex/localpush-12-47-42.jsonl", WHY),
    ("codex/localpush-12-54-34.jsonl", WHY),
];

#[test]
fn every_corpus_file_exported_to_pi_resumes_in_pi_as_libsession_sends_it() {
    if !common::node_available() {
        eprintln!("NOTICE: node is not installed; the pi export oracle is skipped");
        return;
    }
    ensure_packages();
    let options = ContextOptions::from_json(r#"{"profile":"pi"}"#).unwrap();
    let scratch = common::temp_dir("pi-export-oracle");
    let mut failures = Vec::new();
    let files = common::corpus_files("");
    println!("| source file → pi | what pi sends | messages |");
    println!("|---|---|---:|");
    for (n, file) in files.iter().enumerate() {
        let (name, entries, leaf) = common::import_corpus_file(file);
        let ours = build_context(&entries, &leaf, &options).unwrap();
        // pi's convertToLlm leaves out a message of a role it does not know (Codex's
        // developer and system messages, kept in the exported file).
        let pi_roles = [
            "user",
            "assistant",
            "toolResult",
            "bashExecution",
            "custom",
            "branchSummary",
            "compactionSummary",
        ];
        let our_shapes: Vec<String> = ours
            .messages
            .iter()
            .map(|m| value(m))
            .filter(|m| pi_roles.contains(&m["role"].as_str().unwrap_or("")))
            .map(|m| shape(&m))
            .collect();
        let exported = session::interop::export(Format::Pi, &entries, &leaf).unwrap();
        let out = scratch.path().join(format!("{n}.jsonl"));
        std::fs::write(&out, exported.text).unwrap();
        let pi = value(&node("resume_pi.mjs", &out));
        let pi_shapes: Vec<String> = pi["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(shape)
            .collect();
        let resumed_at = pi["leafId"].as_str().unwrap_or("");
        let cell = if resumed_at != leaf {
            failures.push(format!("{name}: pi resumes at {resumed_at}, not {leaf}"));
            "**resumes elsewhere**".to_owned()
        } else if let Some((_, why)) = PI_EXPORT_DIFFERS.iter().find(|(n, _)| *n == name) {
            if pi_shapes == our_shapes {
                failures.push(format!("{name}: listed as differing, but equal"));
            }
            format!("differs: {why}")
        } else if pi_shapes != our_shapes {
            let at = pi_shapes
                .iter()
                .zip(&our_shapes)
                .take_while(|(a, b)| a == b)
                .count();
            failures.push(format!(
                "{name}: first difference at {at}: pi {:?}, ours {:?}",
                pi_shapes.get(at),
                our_shapes.get(at)
            ));
            "**differs**".to_owned()
        } else {
            "equal to libsession's context".to_owned()
        };
        println!("| `{name} → pi` | {cell} | {} |", pi_shapes.len());
    }
    assert!(files.len() >= 40);
    assert!(failures.is_empty(), "{failures:#?}");
}
