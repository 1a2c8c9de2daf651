//! Issue 22, docs/contract.md §12, checked against the agents themselves: every Claude
//! Code and Codex file of the real-session corpus (`tests/interop/corpus`) is resumed
//! by the agent's own CLI — Claude Code 2.1.332 (`claude -p --resume ID PROMPT`) and
//! Codex 0.171.0 (`codex exec resume ID PROMPT`), the pinned npm packages of
//! `tests/interop/agents` — against a fake model server on 127.0.0.1 that records the
//! request (`tests/interop/agents/agents.mjs`). What the agent sends (the request's
//! `messages` / `input`) must equal libsession's context of the imported file at the
//! import's resume leaf with `{"profile":"auto"}`, item for item: role, kind, text,
//! tool call ids, names and arguments, results and their error flag, image digests.
//! What the agent adds from the machine it runs on (system prompt, `<system-reminder>`
//! blocks, its environment message, Codex's new-turn developer and environment
//! messages, the probe prompt) is left out of both sides.
//!
//! Claude Code resumes only main transcripts (it never takes a sidechain line as the
//! leaf, and every line of a sub-agent's own transcript is one): a sub-agent file is
//! resumed as a main transcript, its copy with `isSidechain` false on every line and
//! nothing else changed. A file the agent itself cannot resume is listed in
//! [`NOT_RESUMABLE`] with the reason, and the test checks that the agent still refuses
//! it (so the list cannot go stale); every other file must be equal. pi's files are
//! checked against pi's own code by `tests/interop_pi.rs`.
//!
//! Variants of corpus files made in the test check what the agent does with an
//! interrupted turn (cut after its results; a call left without its result), with
//! an unpaired Codex tool search (a call without its output; an output without its
//! call) and with a Codex `compacted` line without its replacement history (the form
//! older Codex wrote).
//!
//! Needs node and npm (`npm ci` in tests/interop/agents, which this test runs when the
//! packages are missing; ~800 MB of native binaries). Without node the test prints a
//! notice and passes. `cargo test --test suite_agents interop_agents:: -- --nocapture`
//! prints one row per file.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};
use session::{ContextOptions, build_context};

/// Files the agent's own CLI refuses to resume, and why.
const NOT_RESUMABLE: &[(&str, &str)] = &[(
    "codex/agentsessions-codex-small.jsonl",
    "trimmed by its owner: Codex 0.171.0 refuses its session_meta lines (`history_mode` \
     `default`, and `[trimmed for fixture]` in later ones)",
)];

fn agents_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/interop/agents")
}

/// `npm ci` in tests/interop/agents unless both CLIs are installed.
fn ensure_packages() {
    common::npm_ci_unless_installed(
        &agents_dir(),
        &["node_modules/.bin/claude", "node_modules/.bin/codex"],
    );
}

/// Two interrupted turns made from `claude-code/spotter-short.jsonl` (a reply with two
/// parallel calls, both rejected by the user, then the interrupt and a local command):
/// cut right after the two results (the conversation ends on a result: Claude Code
/// puts "No response requested." after it), and with the second result's line turned
/// into a `progress` line (same uuid and parent: its call has no result, and Claude
/// Code leaves the part holding it out).
fn interrupted_variants() -> Vec<(String, String)> {
    let text =
        std::fs::read_to_string(common::corpus_dir().join("claude-code/spotter-short.jsonl"))
            .unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let second_result: Value = serde_json::from_str(lines[11]).unwrap();
    assert!(
        lines[10].contains("\"tool_result\"") && lines[11].contains("\"tool_result\""),
        "lines 11 and 12 of spotter-short.jsonl are the two results"
    );
    let mut progress = serde_json::Map::new();
    for key in [
        "parentUuid",
        "isSidechain",
        "sessionId",
        "uuid",
        "timestamp",
    ] {
        progress.insert(key.into(), second_result[key].clone());
    }
    progress.insert("type".into(), json!("progress"));
    progress.insert("data".into(), json!({"type": "hook_progress"}));
    let mut unanswered: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    unanswered[11] = Value::Object(progress).to_string();
    vec![
        (
            "variant: spotter-short cut after its results".into(),
            lines[..12].join("\n") + "\n",
        ),
        (
            "variant: spotter-short with a call left without its result".into(),
            unanswered.join("\n") + "\n",
        ),
    ]
}

/// Two rollouts made from `codex/kvsankar-session-01.jsonl` with one tool search item
/// of `codex/agentsessions-codex-small.jsonl` after its reply, then a new turn: a
/// `tool_search_call` without its output (Codex answers it with an empty output right
/// after it) and a `tool_search_output` without its call (Codex leaves it out).
fn tool_search_variants() -> Vec<(String, String)> {
    let read = |name: &str| -> Vec<Value> {
        std::fs::read_to_string(common::corpus_dir().join(name))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    let base = read("codex/kvsankar-session-01.jsonl");
    let small = read("codex/agentsessions-codex-small.jsonl");
    let item = |kind: &str| {
        small
            .iter()
            .find(|l| l["type"] == "response_item" && l["payload"]["type"] == kind)
            .unwrap_or_else(|| panic!("a {kind} in agentsessions-codex-small.jsonl"))["payload"]
            .clone()
    };
    assert_eq!(
        base[5]["payload"]["role"], "user",
        "kvsankar-session-01.jsonl line 6"
    );
    assert_eq!(
        base[8]["payload"]["role"], "assistant",
        "kvsankar-session-01.jsonl line 9"
    );
    let variant = |kind: &str| {
        let line = json!({"timestamp": base[8]["timestamp"], "type": "response_item", "payload": item(kind)});
        let lines: Vec<&Value> = base[..9]
            .iter()
            .chain([&line, &base[5], &base[8]])
            .chain(&base[9..])
            .collect();
        lines
            .iter()
            .map(|l| l.to_string() + "\n")
            .collect::<String>()
    };
    vec![
        (
            "variant: a Codex tool_search_call without its output".into(),
            variant("tool_search_call"),
        ),
        (
            "variant: a Codex tool_search_output without its call".into(),
            variant("tool_search_output"),
        ),
    ]
}

/// User message texts put before the compaction of [`compaction_variants`]: Codex's own
/// context messages, which it leaves out of the history it rebuilds (markers at both
/// ends of the trimmed text, case ignored, any part of the message), and look-alikes it
/// keeps (`<user_instructions>`, an opening marker alone).
const CODEX_CONTEXT_LOOKALIKES: [&[&str]; 12] = [
    &["# AGENTS.md instructions for /w\n\n<INSTRUCTIONS>\nx\n</INSTRUCTIONS>"],
    &["<environment_context>\n  <cwd>/w</cwd>\n</environment_context>"],
    &["<ENVIRONMENT_CONTEXT></ENVIRONMENT_CONTEXT>"],
    &["  <user_shell_command>\nls\n</user_shell_command>\n"],
    &["<turn_aborted>\nx\n</turn_aborted>"],
    &["<skill>\n<name>x</name>\n</skill>"],
    &["<subagent_notification>x</subagent_notification>"],
    &[
        "left out: a part",
        "<environment_context></environment_context>",
    ],
    &["<user_instructions>\nkept\n</user_instructions>"],
    &["<environment_context>\nkept: no closing marker"],
    &["# AGENTS.md instructions, kept: no closing marker"],
    &["kept: plain"],
];

/// `codex/localpush-12-54-34.jsonl` with its `compacted` line's `replacement_history`
/// removed, as older Codex wrote it, and [`CODEX_CONTEXT_LOOKALIKES`] as user messages
/// before it: Codex rebuilds the history from the user messages before the line (its
/// own context messages left out) and its `message` (the summary), in that order.
fn compaction_variants() -> Vec<(String, String)> {
    let text = std::fs::read_to_string(common::corpus_dir().join("codex/localpush-12-54-34.jsonl"))
        .unwrap();
    let mut removed = 0;
    let mut lines: Vec<String> = Vec::new();
    for line in text.lines() {
        let mut value: Value = serde_json::from_str(line).unwrap();
        if value["type"] == "compacted"
            && let Some(payload) = value["payload"].as_object_mut()
            && payload.remove("replacement_history").is_some()
        {
            removed += 1;
            for texts in CODEX_CONTEXT_LOOKALIKES {
                let content: Vec<Value> = texts
                    .iter()
                    .map(|t| json!({"type": "input_text", "text": t}))
                    .collect();
                let payload = json!({"type": "message", "role": "user", "content": content});
                let message = json!({"timestamp": value["timestamp"], "type": "response_item", "payload": payload});
                lines.push(message.to_string());
            }
            lines.push(value.to_string());
            continue;
        }
        lines.push(line.to_owned());
    }
    assert_eq!(
        removed, 1,
        "localpush-12-54-34.jsonl has one compacted line"
    );
    // The same line after a user message of three text parts over Codex's budget of
    // 20,000 tokens (4 bytes each), multi-byte characters where the cuts fall: Codex
    // sends a shortened copy of it and nothing before it.
    let compacted = lines
        .iter()
        .position(|l| l.contains(r#""type":"compacted""#))
        .unwrap();
    let big: String = (0..12_000).map(|i| format!("{i:07}é中 ")).collect();
    let parts = ["A".repeat(1000), big, "C".repeat(999)];
    let content: Vec<Value> = parts
        .iter()
        .map(|t| json!({"type": "input_text", "text": t}))
        .collect();
    let payload = json!({"type": "message", "role": "user", "content": content});
    let over = json!({"timestamp": "2026-02-24T09:51:48.000Z", "type": "response_item", "payload": payload});
    let mut shortened = lines.clone();
    shortened.insert(compacted, over.to_string());
    vec![
        (
            "variant: a Codex compacted line without its replacement history".into(),
            lines.join("\n") + "\n",
        ),
        (
            "variant: the same after a user message over Codex's budget".into(),
            shortened.join("\n") + "\n",
        ),
    ]
}

#[test]
fn claude_code_and_codex_send_what_libsession_resumes() {
    if !common::node_available() {
        println!("node is not installed: the agents' own resume is not checked");
        return;
    }
    ensure_packages();
    let scratch = common::temp_dir("agents-resume");
    let profile = ContextOptions::from_json(r#"{"profile":"auto"}"#).unwrap();
    let mut manifest = Vec::new();
    let mut names = Vec::new();
    let mut add =
        |name: String, format: &str, file: &Path, entries: Vec<session::Entry>, leaf: String| {
            let context =
                build_context(&entries, &leaf, &profile).unwrap_or_else(|e| panic!("{name}: {e}"));
            let ours = scratch.path().join(format!("{}.json", names.len()));
            std::fs::write(&ours, context.to_json()).unwrap();
            manifest.push(json!({"name": name, "format": format, "file": file, "ours": ours}));
            names.push(name);
        };
    for format in ["claude-code", "codex"] {
        for file in common::corpus_files(format) {
            let (name, entries, leaf) = common::import_corpus_file(&file);
            add(name, format, &file, entries, leaf);
        }
    }
    // Interrupted turns and unpaired tool searches, as the agent resumes them: variants
    // of corpus files.
    let variants = interrupted_variants()
        .into_iter()
        .map(|(name, text)| (name, "claude-code", text))
        .chain(
            tool_search_variants()
                .into_iter()
                .chain(compaction_variants())
                .map(|(name, text)| (name, "codex", text)),
        );
    for (n, (name, format, text)) in variants.enumerate() {
        let file = scratch.path().join(format!("variant-{n}.jsonl"));
        std::fs::write(&file, &text).unwrap();
        let (entries, leaf) = common::import_text(text.as_bytes());
        add(name, format, &file, entries, leaf);
    }
    assert!(
        names.len() >= 43,
        "{} Claude Code and Codex files and variants",
        names.len()
    );
    let manifest_path = scratch.path().join("manifest.json");
    std::fs::write(&manifest_path, Value::Array(manifest).to_string()).unwrap();
    let out = scratch.path().join("out.json");
    let status = Command::new("node")
        .arg(agents_dir().join("agents.mjs"))
        .arg(&manifest_path)
        .arg(&out)
        .status()
        .expect("node runs");
    assert!(status.success(), "agents.mjs failed");
    let results: Vec<Value> = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    assert_eq!(results.len(), names.len());

    let mut failures = Vec::new();
    println!("| file | what the agent sends | items |");
    println!("|---|---|---:|");
    for result in &results {
        let name = result["name"].as_str().unwrap();
        let status = result["status"].as_str().unwrap_or("error");
        let items = result["agentItems"].as_array().map_or(0, Vec::len);
        let refused = NOT_RESUMABLE.iter().find(|(n, _)| *n == name);
        let cell = match (status, refused) {
            ("equal", None) => "equal to libsession's context".to_owned(),
            ("no_request", Some((_, why))) => format!("not resumed by the agent: {why}"),
            (_, Some(_)) => {
                failures.push(format!(
                    "{name}: listed as not resumable, but the agent resumed it ({status})"
                ));
                status.to_owned()
            }
            (_, None) => {
                let mut detail = format!("{} {}", result["firstDifference"], result["note"]);
                if let Some((cut, _)) = detail.char_indices().nth(1500) {
                    detail.truncate(cut);
                }
                failures.push(format!("{name}: {status}: {detail}"));
                format!("**{status}**")
            }
        };
        println!("| `{name}` | {cell} | {items} |");
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// Where the agent's items and ours first differ, for a failure's message: the item's
/// index and, in the two items' JSON, the first character that differs with 120
/// characters on each side of it, from the agent and from us (a whole item may be a
/// tool output of many kilobytes, and the difference far into it); then the note.
fn difference_detail(result: &Value) -> String {
    let difference = &result["firstDifference"];
    let (agent, ours) = (
        difference["agent"].to_string(),
        difference["ours"].to_string(),
    );
    let at = agent
        .chars()
        .zip(ours.chars())
        .take_while(|(a, b)| a == b)
        .count();
    let window = |text: &str| -> String {
        text.chars()
            .skip(at.saturating_sub(120))
            .take(240)
            .collect()
    };
    format!(
        "item {}, its JSON first differs at character {at}: agent …{}… ours …{}… {}",
        difference["index"],
        window(&agent),
        window(&ours),
        result["note"]
    )
}

/// Exports whose request differs from libsession's context for a reason of the agent's
/// own that no profile models, and the reason; the test checks that they still differ.
const EXPORT_DIFFERS: &[(&str, &str)] = &[
    (
        "claude-code/spotter-258c7280/subagents/agent-a881341.jsonl → codex",
        "Codex cuts a tool output longer than its limit in the middle when it sends it \
         (\"…7561 tokens truncated…\"); its own rollouts hold outputs already cut",
    ),
    (
        "codex/agentsessions-codex-small.jsonl → codex",
        "Codex sends a compaction item without its id; this file (trimmed by its owner) \
         is the only one whose compaction items carry one",
    ),
    (
        "pi/pimono-compact.jsonl → codex",
        "Codex sends one box-drawing character (│, three bytes) of a tool output as three \
         U+FFFD: the exported file holds it intact (Codex's own mangling of the text)",
    ),
    (
        "pi/pimono-large-session.jsonl → claude-code",
        "Claude Code sends a thinking block only in a reply of the model it runs \
         (claude-opus-4-6 by default): this reply came from claude-sonnet-4-5",
    ),
];

/// Issue 35, docs/contract.md §15, checked against the agents
/// themselves: every file of the corpus (pi, Claude Code and Codex), imported, exported
/// to Claude Code and to Codex at its resume leaf, is resumed by that agent's own CLI,
/// and what the agent sends equals libsession's context of the source under the
/// agent's profile, with the documented conversion applied (`common::export`: roles the
/// agent lacks as user text after the pending results, Codex-only items and unsigned
/// thinking left out for Claude Code), except the files of [`EXPORT_DIFFERS`].
/// `EXPORT_ORACLE_ONLY=TEXT` limits the run to the files whose name holds
/// TEXT. `-- --nocapture` prints the table (file, agent, outcome).
#[test]
fn claude_code_and_codex_resume_what_libsession_exports_to_them() {
    if !common::node_available() {
        println!("node is not installed: the agents' own resume is not checked");
        return;
    }
    ensure_packages();
    let only = std::env::var("EXPORT_ORACLE_ONLY").unwrap_or_default();
    let scratch = common::temp_dir("agents-export");
    let mut manifest = Vec::new();
    let mut names = Vec::new();
    for file in common::corpus_files("") {
        let (name, entries, leaf) = common::import_corpus_file(&file);
        if !name.contains(&only) {
            continue;
        }
        for target in [
            session::interop::Format::ClaudeCode,
            session::interop::Format::Codex,
        ] {
            let options =
                ContextOptions::from_json(&format!(r#"{{"profile":"{}"}}"#, target.name()))
                    .unwrap();
            let context =
                build_context(&entries, &leaf, &options).unwrap_or_else(|e| panic!("{name}: {e}"));
            let messages = common::export::as_exported(&context.messages, target.name());
            let n = names.len();
            let ours = scratch.path().join(format!("{n}.json"));
            std::fs::write(&ours, json!({"messages": messages}).to_string()).unwrap();
            let exported = session::interop::export(target, &entries, &leaf)
                .unwrap_or_else(|e| panic!("{name} to {}: {e}", target.name()));
            let out = scratch.path().join(format!("{n}.jsonl"));
            std::fs::write(&out, exported.text).unwrap();
            let row = format!("{name} → {}", target.name());
            manifest.push(json!({"name": row, "format": target.name(), "file": out, "ours": ours}));
            names.push(row);
        }
    }
    assert!(!names.is_empty(), "no corpus file matches {only:?}");
    let manifest_path = scratch.path().join("manifest.json");
    std::fs::write(&manifest_path, Value::Array(manifest).to_string()).unwrap();
    let out = scratch.path().join("out.json");
    let status = Command::new("node")
        .arg(agents_dir().join("agents.mjs"))
        .arg(&manifest_path)
        .arg(&out)
        .status()
        .expect("node runs");
    assert!(status.success(), "agents.mjs failed");
    let results: Vec<Value> = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    assert_eq!(results.len(), names.len());
    let mut failures = Vec::new();
    println!("| source file → agent | what the agent sends | items |");
    println!("|---|---|---:|");
    for result in &results {
        let name = result["name"].as_str().unwrap();
        let status = result["status"].as_str().unwrap_or("error");
        let items = result["agentItems"].as_array().map_or(0, Vec::len);
        let known = EXPORT_DIFFERS.iter().find(|(n, _)| *n == name);
        let cell = match (status, known) {
            ("equal", None) => "equal to libsession's context".to_owned(),
            ("differs", Some((_, why))) => format!("differs: {why}"),
            ("equal", Some(_)) => {
                failures.push(format!("{name}: listed as differing, but equal"));
                "equal, listed as differing".to_owned()
            }
            _ => {
                let detail = difference_detail(result);
                failures.push(format!("{name}: {status}: {detail}"));
                format!("**{status}**")
            }
        };
        println!("| `{name}` | {cell} | {items} |");
    }
    assert!(failures.is_empty(), "{failures:#?}");
}
