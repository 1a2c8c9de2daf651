//! The property every import path must have, for any bytes at all: no panic, and a
//! report that accounts for every line, with output that libsession opens (it
//! recovers whole: no line too long, none that is not an entry). Shared by
//! tests/interop_fuzz.rs (proptest) and the cargo-fuzz target fuzz/fuzz_targets/import.rs.

use std::collections::HashSet;

use session::interop::{Format, export_pi, import};
use session::nav::RESUME_LEAF_KEY;
use session::{Error, parse_entries, recover_jsonl};

pub const FORMATS: [Format; 3] = [Format::Pi, Format::ClaudeCode, Format::Codex];

/// Imports `data` in every format and checks the result: the import succeeds with a
/// full report, or is refused as not a session of that format.
pub fn check_import(data: &[u8]) {
    for format in FORMATS {
        check_import_as(format, data);
    }
}

pub fn check_import_as(format: Format, data: &[u8]) {
    let detected = Format::detect(data);
    let imported = match import(format, data) {
        Ok(imported) => imported,
        // Refused: a source of another format, or one without a conversation entry;
        // either way the detection is the one `Format::detect` makes.
        Err(Error::NotImportable {
            detected: found,
            requested,
        }) => {
            assert_eq!(found, detected, "{format:?}: the detection is the same");
            assert_eq!(requested, Some(format));
            return;
        }
        Err(e) => panic!("{format:?}: an import in memory of a small input: {e}"),
    };
    let report = &imported.report;
    assert_eq!(report.format, Some(format));
    assert!(
        detected.is_none() || detected == Some(format),
        "{format:?}: a source detected as {detected:?} is imported"
    );
    // Imported: a resume leaf, which is an entry written.
    let leaf = report.resume_leaf_id.as_deref().expect("a resume leaf");
    assert!(
        imported
            .lines
            .iter()
            .any(|l| l.contains(&format!("\"id\":{}", serde_json::to_string(leaf).unwrap()))),
        "{format:?}: the resume leaf {leaf} is written"
    );
    let physical = data.split(|&b| b == b'\n').count() as u64
        - u64::from(data.is_empty() || data.ends_with(b"\n"));
    assert_eq!(
        report.lines_read, physical,
        "{format:?}: every physical line is counted"
    );
    let non_blank = data
        .split(|&b| b == b'\n')
        .filter(|l| !l.iter().all(|b| matches!(b, b' ' | b'\t' | b'\r')))
        .count() as u64;
    assert_eq!(
        report.source_kinds.values().sum::<u64>(),
        non_blank,
        "{format:?}: every non-blank line has a kind"
    );
    assert_eq!(report.entries_written, imported.lines.len() as u64);
    assert_eq!(
        report.entry_types.values().sum::<u64>(),
        imported.lines.len() as u64
    );
    for unmapped in &report.unmapped {
        assert!(unmapped.line >= 1 && unmapped.line <= report.lines_read);
    }
    // The output, as a file, recovers whole: no line too long or not an entry.
    let text: String = imported.lines.iter().map(|l| format!("{l}\n")).collect();
    let recovered = recover_jsonl(text.as_bytes()).expect("the output is a valid file");
    assert!(recovered.warnings.is_empty());
    assert_eq!(recovered.entries.len(), imported.lines.len());
    // The output is a valid file: every line an entry, ids unique, every parent on an
    // earlier line.
    let entries = parse_entries(format!("[{}]", imported.lines.join(",")))
        .expect("every output line is an entry");
    let mut seen = HashSet::new();
    for entry in &entries {
        if let Some(parent) = entry.parent_id() {
            assert!(
                seen.contains(parent),
                "{format:?}: parent {parent} of {} comes first",
                entry.id()
            );
        }
        assert!(
            seen.insert(entry.id().to_owned()),
            "{format:?}: id {} is unique",
            entry.id()
        );
    }
    if let Some(last) = entries.last() {
        let text = export_pi(&entries, last.id()).expect("export of an imported tree");
        // A header line (the imported one, or a new one), then one line per entry
        // but the imported header's and the record of the resume leaf.
        let count = text.lines().count();
        let records = entries
            .iter()
            .filter(|e| e.metadata().is_some_and(|(key, _)| key == RESUME_LEAF_KEY))
            .count();
        let exported = entries.len() - records;
        assert_eq!(records, 1, "{format:?}: an import records its resume leaf");
        assert!(
            count == exported || count == exported + 1,
            "{format:?}: {count} lines for {} entries",
            entries.len()
        );
        assert!(
            text.starts_with("{\"type\":\"session\""),
            "{format:?}: the export starts with a header"
        );
    }
}
