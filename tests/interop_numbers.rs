//! Numbers keep their spelling through import and export (docs/contract.md: numbers
//! are written as spelled in the source). pi writes costs such as
//! `0.0012000000000000001`; a JSON parser that reads them into a double writes them
//! back as `0.0012`. Checked over every number token of every file of the corpus of
//! real sessions (tests/interop/corpus): what an import carries over keeps each token
//! exactly, and a pi file exported back holds its messages' tokens exactly.

use crate::common;

use std::collections::HashMap;
use std::path::PathBuf;

use session::interop::{Format, export_pi, import};
use session::parse_entries;

fn corpus_files() -> Vec<(Format, PathBuf)> {
    let mut files: Vec<(Format, PathBuf)> = [
        ("pi", Format::Pi),
        ("claude-code", Format::ClaudeCode),
        ("codex", Format::Codex),
    ]
    .into_iter()
    .flat_map(|(dir, format)| {
        common::corpus_files(dir)
            .into_iter()
            .map(move |path| (format, path))
    })
    .collect();
    files.sort_by(|a, b| a.1.cmp(&b.1));
    files
}

/// The number tokens of one JSON text, each with the member names leading to it.
fn number_tokens(text: &str) -> Vec<(Vec<String>, String)> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    // One frame per open container: the member name being read (objects only).
    let mut path: Vec<Option<String>> = Vec::new();
    let mut expect_key = false;
    let mut i = 0;
    let names = |path: &[Option<String>]| path.iter().flatten().cloned().collect::<Vec<_>>();
    while i < bytes.len() {
        match bytes[i] {
            b'{' => {
                path.push(None);
                expect_key = true;
                i += 1;
            }
            b'[' => {
                path.push(None);
                expect_key = false;
                i += 1;
            }
            b'}' | b']' => {
                path.pop();
                i += 1;
            }
            b',' => {
                // After a comma inside an object comes a key.
                expect_key = matches!(path.last(), Some(Some(_)));
                i += 1;
            }
            b'"' => {
                let start = i + 1;
                i += 1;
                while bytes[i] != b'"' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
                if expect_key {
                    if let Some(last) = path.last_mut() {
                        *last = Some(text[start..i].to_owned());
                    }
                    expect_key = false;
                }
                i += 1;
            }
            b'-' | b'0'..=b'9' => {
                let start = i;
                while i < bytes.len() && b"0123456789+-.eE".contains(&bytes[i]) {
                    i += 1;
                }
                out.push((names(&path), text[start..i].to_owned()));
            }
            _ => i += 1,
        }
    }
    out
}

fn is_json(line: &str) -> bool {
    serde_json::from_str::<serde::de::IgnoredAny>(line).is_ok()
}

type Counts = HashMap<String, usize>;

/// The multiset of number tokens under top-level member `member` of each line.
fn tokens_under(lines: &[&str], member: &str) -> Counts {
    let mut counts = Counts::new();
    for line in lines {
        for (path, token) in number_tokens(line) {
            if path.first().is_some_and(|m| m == member) {
                *counts.entry(token).or_default() += 1;
            }
        }
    }
    counts
}

/// All number tokens of the lines but those of members an import replaces: a pi
/// version 1 compaction's `firstKeptEntryIndex` becomes a `firstKeptEntryId`, as pi's
/// own migration does, and the header's `version` becomes 3.
fn all_tokens(lines: &[&str]) -> Counts {
    let mut counts = Counts::new();
    for line in lines {
        for (path, token) in number_tokens(line) {
            let replaced =
                path.len() == 1 && (path[0] == "firstKeptEntryIndex" || path[0] == "version");
            if !replaced {
                *counts.entry(token).or_default() += 1;
            }
        }
    }
    counts
}

/// The tokens of `source` found fewer times in `output` (token, source, output).
fn missing(source: &Counts, output: &Counts) -> Vec<(String, usize, usize)> {
    let mut out: Vec<_> = source
        .iter()
        .filter(|(t, n)| output.get(*t).copied().unwrap_or(0) < **n)
        .map(|(t, n)| (t.clone(), *n, output.get(t).copied().unwrap_or(0)))
        .collect();
    out.sort();
    out
}

#[test]
fn every_number_of_the_corpus_keeps_its_spelling_through_import_and_export() {
    let files = corpus_files();
    assert!(files.len() >= 40, "the corpus has its files");
    let mut checked = 0usize;
    for (format, path) in &files {
        let text = std::fs::read_to_string(path).unwrap();
        // A line that is not JSON (a torn last line) is kept whole, as text.
        let source: Vec<&str> = text.lines().filter(|l| is_json(l)).collect();
        let imported = import(*format, text.as_bytes()).unwrap();
        let output: Vec<&str> = imported.lines.iter().map(String::as_str).collect();
        let name = path.display();
        // Every number of the source is somewhere in the import, spelled as it was
        // (the import adds numbers of its own: timestamps as milliseconds).
        let source_all = all_tokens(&source);
        checked += source_all.values().sum::<usize>();
        let lost = missing(&source_all, &all_tokens(&output));
        assert!(
            lost.is_empty(),
            "{name}: tokens lost or re-spelled: {lost:?}"
        );
        if *format != Format::Pi {
            continue;
        }
        // A pi message is carried as written: the same tokens, as many times.
        let source_messages = tokens_under(&source, "message");
        assert_eq!(
            tokens_under(&output, "message"),
            source_messages,
            "{name}: the messages' numbers after import"
        );
        // And exported back to pi, the messages hold them again.
        let entries = parse_entries(format!("[{}]", imported.lines.join(","))).unwrap();
        let leaf = entries.last().unwrap().id().to_owned();
        let exported = export_pi(&entries, &leaf).unwrap();
        // The torn line goes back as it came.
        let back: Vec<&str> = exported.lines().filter(|l| is_json(l)).collect();
        let back_messages = tokens_under(&back, "message");
        assert!(
            back_messages == source_messages,
            "{name}: the messages' numbers after export: lost {:?}, added {:?}",
            missing(&source_messages, &back_messages),
            missing(&back_messages, &source_messages)
        );
        let lost = missing(&source_all, &all_tokens(&back));
        assert!(
            lost.is_empty(),
            "{name}: tokens lost by the export: {lost:?}"
        );
    }
    assert!(checked > 50_000, "only {checked} number tokens checked");
}

#[test]
fn an_imported_number_is_written_as_spelled_and_one_no_entry_holds_stays_raw() {
    let head = r#"{"type":"session","version":3,"id":"s","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/"}"#;
    let kept = r#"{"type":"message","id":"a","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"hi","timestamp":1E12,"n":[0.0012000000000000001,-0,1.0,1E5,2.50,-0.0]}}"#;
    let huge = r#"{"type":"message","id":"b","parentId":"a","timestamp":"2025-01-01T00:00:02.000Z","message":{"role":"user","content":"x","timestamp":1,"n":[1e400,123456789012345678901234567890]}}"#;
    let source = format!("{head}\n{kept}\n{huge}\n");
    let imported = import(Format::Pi, source.as_bytes()).unwrap();
    let a = imported
        .lines
        .iter()
        .find(|l| l.contains(r#""id":"a""#))
        .unwrap();
    assert!(
        a.contains(r#""timestamp":1E12,"n":[0.0012000000000000001,-0,1.0,1E5,2.50,-0.0]"#),
        "{a}"
    );
    let unmapped = &imported.report.unmapped;
    assert_eq!(unmapped.len(), 1, "{:?}", imported.report.to_json());
    assert_eq!(unmapped[0].line, 3);
    let raw = imported
        .lines
        .iter()
        .find(|l| l.contains("pi.unmapped"))
        .unwrap();
    assert!(
        raw.contains("1e400,123456789012345678901234567890"),
        "{raw}"
    );
    // Exported back, both come back as written.
    let entries = parse_entries(format!("[{}]", imported.lines.join(","))).unwrap();
    let exported = export_pi(&entries, "a").unwrap();
    assert!(exported.contains(kept), "{exported}");
    assert!(exported.contains(huge), "{exported}");
}
