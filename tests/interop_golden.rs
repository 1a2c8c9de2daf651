//! Golden tests of the Claude Code and Codex importers: each fixture under
//! `tests/interop/fixtures/` (written from the formats' public descriptions, one line
//! of every kind) imports to exactly the entries and report checked in under
//! `tests/interop/golden/`. `SESSION_UPDATE_GOLDEN=1 cargo test --test interop_golden`
//! rewrites the golden files (review the diff before committing it).

mod common;

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
