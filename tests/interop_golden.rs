//! Golden tests of the Claude Code and Codex importers: each fixture under
//! `tests/interop/fixtures/` (written from the formats' public descriptions, one line
//! of every kind) imports to exactly the entries and report checked in under
//! `tests/interop/golden/`. `SESSION_UPDATE_GOLDEN=1 cargo test --test suite_context
//! interop_golden::` rewrites the golden files (review the diff before committing it).

use crate::common;

use std::path::{Path, PathBuf};

use common::temp_dir;
use session::interop::{Format, import};
use session::{Store, parse_entries};

fn dir(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/interop")
        .join(name)
}

/// Imports one fixture and compares its entries and report with the golden files;
/// returns the imported lines.
fn check_golden(fixture: &str, format: Format) -> Vec<String> {
    let source = std::fs::read(dir("fixtures").join(fixture)).unwrap();
    let imported = import(format, &source).unwrap();
    let mut entries = imported.lines.join("\n");
    entries.push('\n');
    let report = serde_json::to_string_pretty(&imported.report.to_json_value()).unwrap() + "\n";
    let stem = fixture.trim_end_matches(".jsonl");
    let golden_entries = dir("golden").join(format!("{stem}.entries.jsonl"));
    let golden_report = dir("golden").join(format!("{stem}.report.json"));
    if std::env::var_os("SESSION_UPDATE_GOLDEN").is_some() {
        std::fs::write(&golden_entries, &entries).unwrap();
        std::fs::write(&golden_report, &report).unwrap();
    }
    assert_eq!(
        entries,
        std::fs::read_to_string(&golden_entries).unwrap(),
        "{fixture}: entries differ from the golden file"
    );
    assert_eq!(
        report,
        std::fs::read_to_string(&golden_report).unwrap(),
        "{fixture}: report differs from the golden file"
    );
    imported.lines
}

/// The imported lines form a file that opens clean, holding one entry per line.
fn assert_opens(lines: &[String]) {
    let text = lines.join("\n") + "\n";
    assert_eq!(
        parse_entries(format!("[{}]", lines.join(",")))
            .unwrap()
            .len(),
        lines.len()
    );
    let dir = temp_dir("interop-golden");
    let tmp = dir.join("s.jsonl");
    std::fs::write(&tmp, text).unwrap();
    let (store, report) = Store::open_jsonl(&tmp).unwrap();
    assert!(report.warnings.is_empty());
    assert_eq!(store.len().unwrap(), lines.len());
}

#[test]
fn claude_code_transcript_imports_to_its_golden_entries() {
    let lines = check_golden("claude-code-session.jsonl", Format::ClaudeCode);
    assert_opens(&lines);
}

#[test]
fn torn_claude_code_transcript_imports_what_it_holds() {
    let lines = check_golden("claude-code-torn.jsonl", Format::ClaudeCode);
    assert_opens(&lines);
}

#[test]
fn codex_rollout_imports_to_its_golden_entries() {
    let lines = check_golden("codex-rollout.jsonl", Format::Codex);
    assert_opens(&lines);
}

#[test]
fn torn_codex_rollout_imports_what_it_holds() {
    let lines = check_golden("codex-torn.jsonl", Format::Codex);
    assert_opens(&lines);
}

/// Rule (docs/contract.md §12, import): a line the importer cannot map, with no known
/// parent, hangs under the entry written before it, so a file ending in one (Claude
/// Code's `last-prompt`, a kind not known here) still has its conversation on the
/// store's latest leaf's path, not an empty branch under the root.
#[test]
fn trailing_unknown_line_keeps_the_conversation_on_the_latest_leaf() {
    let source = concat!(
        r#"{"parentUuid":null,"sessionId":"s","type":"user","uuid":"u1","timestamp":"2025-09-01T10:00:00.000Z","message":{"role":"user","content":"hi"}}"#,
        "\n",
        r#"{"parentUuid":"u1","sessionId":"s","type":"assistant","uuid":"a1","timestamp":"2025-09-01T10:00:01.000Z","message":{"id":"m1","role":"assistant","content":[{"type":"text","text":"hello"}]}}"#,
        "\n",
        r#"{"type":"last-prompt","lastPrompt":"hi","sessionId":"s"}"#,
        "\n",
        r#"{"type":"some-future-kind","sessionId":"s"}"#,
        "\n",
    );
    let imported = import(Format::ClaudeCode, source.as_bytes()).unwrap();
    assert_eq!(imported.report.unmapped.len(), 2);
    assert_eq!(imported.report.resume_leaf_id.as_deref(), Some("a1"));
    let dir = temp_dir("interop-trailing-raw");
    let tmp = dir.join("s.jsonl");
    std::fs::write(&tmp, imported.lines.join("\n") + "\n").unwrap();
    let (store, _) = Store::open_jsonl(&tmp).unwrap();
    let latest = store.latest_leaf().unwrap().unwrap();
    let path: Vec<String> = store
        .path_to(&latest.id)
        .unwrap()
        .iter()
        .map(|e| e.id().to_owned())
        .collect();
    assert!(path.iter().any(|id| id == "u1") && path.iter().any(|id| id == "a1"));
    assert_eq!(path.last(), Some(&latest.id));
}
