//! Tests of the import as a whole: the two mappings agree, the report's JSON, the
//! compaction check of the written entries.
use super::*;
use crate::context::{ContextOptions, OnDefect, build_context_indexed, default_estimate};
use crate::entry::EntryKind;
use crate::tree::IdIndex;
use serde_json::Value;
use std::collections::HashMap;

/// The refused compactions as the import found them before its check walked the
/// written ids: a context built per compaction over all the entries.
fn refused_by_context(lines: &[String], line_of: &HashMap<String, u64>) -> Vec<RefusedCompaction> {
    let entries = crate::entry::parse_entries(format!("[{}]", lines.join(","))).unwrap();
    let options = ContextOptions {
        on_defect: OnDefect::Keep,
        ..ContextOptions::default()
    };
    let index = IdIndex::new(&entries).unwrap();
    let mut estimate = |m: &str| Ok(default_estimate(m));
    entries
        .iter()
        .filter(|entry| entry.kind() == EntryKind::Compaction)
        .filter_map(|entry| {
            match build_context_indexed(&index, entry.id(), &options, &mut estimate) {
                Err(Error::InvalidCompaction {
                    compaction_id,
                    reason,
                    ..
                }) if compaction_id == entry.id() => Some(RefusedCompaction {
                    line: line_of[entry.id()],
                    id: compaction_id,
                    reason: reason.as_str().to_owned(),
                }),
                _ => None,
            }
        })
        .collect()
}

/// A pi file of random trees: messages of every role (tool calls and results from
/// a few call ids), metadata, and compactions keeping from nothing, an entry on
/// the path or off it, a non-message, or an unknown id.
fn random_pi_file(seed: u64, count: usize) -> String {
    let mut state = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    let mut next = move |n: usize| {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((state >> 33) as usize) % n
    };
    let mut lines = vec![
            r#"{"type":"session","version":3,"id":"s","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/"}"#
                .to_owned(),
        ];
    let mut ids: Vec<String> = Vec::new();
    for i in 0..count {
        let id = format!("e{i}");
        let parent = match (ids.len(), next(4)) {
            (0, _) => "null".to_owned(),
            (n, 0) => format!("\"{}\"", ids[next(n)]),
            (n, _) => format!("\"{}\"", ids[n - 1]),
        };
        let head =
            format!(r#""id":"{id}","parentId":{parent},"timestamp":"2025-01-01T00:00:01.000Z""#);
        let call = format!("c{}", next(3));
        let line = match next(9) {
            0 | 1 => {
                format!(r#"{{"type":"message",{head},"message":{{"role":"user","content":"u"}}}}"#)
            }
            2 => format!(
                r#"{{"type":"message",{head},"message":{{"role":"assistant","content":[{{"type":"toolCall","id":"{call}","name":"t","arguments":{{}}}}]}}}}"#
            ),
            3 => format!(
                r#"{{"type":"message",{head},"message":{{"role":"toolResult","toolCallId":"{call}","toolName":"t","content":[],"isError":false}}}}"#
            ),
            4 => format!(
                r#"{{"type":"message",{head},"message":{{"role":"assistant","content":[{{"type":"text","text":"a"}}]}}}}"#
            ),
            5 => format!(r#"{{"type":"model_change",{head},"provider":"p","modelId":"m"}}"#),
            _ => {
                let first = match (ids.len(), next(5)) {
                    (_, 0) => "null".to_owned(),
                    (_, 1) => "\"unknown\"".to_owned(),
                    (0, _) => "null".to_owned(),
                    (n, _) => format!("\"{}\"", ids[n - 1 - next(n.min(6))]),
                };
                format!(
                    r#"{{"type":"compaction",{head},"summary":"s","firstKeptEntryId":{first},"tokensBefore":1}}"#
                )
            }
        };
        lines.push(line);
        ids.push(id);
    }
    lines.join("\n") + "\n"
}

/// An in-memory import, with or without the mappings from a line's text.
fn import_both_ways(source: &[u8]) -> [Result<(Vec<String>, ImportReport), String>; 2] {
    [true, false].map(|fast| {
        let mut lines = Vec::new();
        let mut silent = |_: ImportProgress| true;
        let mut input = Source::new(
            Box::new(std::io::Cursor::new(source)),
            "the source",
            source.len() as u64,
            &mut silent,
        );
        run_with(None, &mut input, &mut lines, fast, None)
            .map(|report| (lines, report))
            .map_err(|e| e.to_string())
    })
}

/// Rule: a line written from its text (a Claude Code `progress` line and the other
/// metadata kinds) gives the same entry, byte for byte, and the same report as the
/// general mapping that builds the line's value; every line it cannot copy
/// exactly takes the general mapping.
#[test]
fn a_metadata_line_copied_from_its_text_is_the_entry_the_general_mapping_writes() {
    let head = r#"{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"s","timestamp":"2025-01-01T00:00:00.000Z","message":{"role":"user","content":"hi"}}"#;
    let deep = |n: usize| format!("{}1{}", "[".repeat(n), "]".repeat(n));
    let bodies = [
        r#""data":{"a":"plain"}"#.to_owned(),
        r#""data":{"a":"\n\t\"\\\b\f\r\u001b\u0000"}"#.to_owned(),
        r#""data":{"a":"\u001B"}"#.to_owned(),
        r#""data":{"a":"\u000a"}"#.to_owned(),
        r#""data":{"a":"\/\u00e9"}"#.to_owned(),
        r#""data":{"a":"\ud83d","b":"\ud83d\ude00","c":"\ude00\ud83d"}"#.to_owned(),
        r#""data":{"a":"\ud83d\ud83d\ude00"}"#.to_owned(),
        r#""data":{"a":"\ud83d","b":"\uDE00"}"#.to_owned(),
        r#""data":{"n":[1E5,1.0,-0,0.0012000000000000001,12345678901234567890123,1e400]}"#
            .to_owned(),
        r#""data":{"a":1,"a":2}"#.to_owned(),
        r#""data": {"a":1}"#.to_owned(),
        format!(r#""data":{}"#, deep(124)),
        format!(r#""data":{}"#, deep(125)),
        format!(r#""data":{}"#, deep(126)),
        format!(r#""data":{}"#, deep(127)),
        r#""isSidechain":true"#.to_owned(),
        "\"isSidechain\":false,\"data\":\"\u{e9} \u{2028} \u{e000}\"".to_owned(),
    ];
    let mut lines = vec![head.to_owned()];
    let mut n = 0;
    let mut push = |lines: &mut Vec<String>, kind: &str, id: &str, parent: &str, ts: &str| {
        n += 1;
        lines.push(format!(
            r#"{{"parentUuid":{parent},"type":{kind},"uuid":{id},"timestamp":{ts},"n":{n}}}"#
        ));
    };
    let stamp = r#""2025-01-01T00:00:01.000Z""#;
    for (i, body) in bodies.iter().enumerate() {
        lines.push(format!(
            r#"{{"parentUuid":"u1","type":"progress","uuid":"p{i}","timestamp":{stamp},{body}}}"#
        ));
    }
    for kind in [
        r#""summary""#,
        r#""file-history-snapshot""#,
        r#""queue-operation""#,
        r#""system""#,
        r#""progr\u0065ss""#,
        r#""other""#,
    ] {
        push(&mut lines, kind, r#""k""#, r#""u1""#, stamp);
    }
    for id in [r#""""#, r#""p0""#, r#""\u0070x""#, "7", "null"] {
        push(&mut lines, r#""progress""#, id, r#""u1""#, stamp);
    }
    for parent in [r#""""#, r#""gone""#, r#""\u00751""#, "null", "3"] {
        push(&mut lines, r#""progress""#, r#""q""#, parent, stamp);
    }
    for ts in [
        "1735689600000",
        "1.5",
        "1E3",
        "null",
        "true",
        r#""""#,
        r#""not a date""#,
        r#""2025\u002d01-01T00:00:00Z""#,
    ] {
        push(&mut lines, r#""progress""#, r#""t""#, r#""u1""#, ts);
    }
    // No uuid, no timestamp, a line not UTF-8, a line with spaces around it.
    lines.push(r#"{"type":"progress","parentUuid":"u1","data":1}"#.to_owned());
    lines.push(r#"{"type":"progress","parentUuid":"u1","uuid":"v1"}"#.to_owned());
    lines.push(r#"  {"type":"progress","parentUuid":"u1","uuid":"v2"} "#.to_owned());
    let mut source = lines.join("\n").into_bytes();
    source.extend_from_slice(b"\n{\"type\":\"progress\",\"uuid\":\"v3\",\"data\":\"\xff\"}\n");
    let [fast, general] = import_both_ways(&source);
    assert_eq!(fast, general);
    assert!(fast.is_ok_and(|(lines, _)| lines.len() > 40));

    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/interop/corpus/claude-code");
    let mut files = 0;
    for entry in std::fs::read_dir(corpus).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "jsonl") {
            let source = std::fs::read(&path).unwrap();
            let [fast, general] = import_both_ways(&source);
            assert!(fast == general, "{}", path.display());
            files += 1;
        }
    }
    assert!(files > 5);
}

#[test]
fn the_report_is_json_with_every_member_in_order_and_text_escaped() {
    let source = "{\"type\":\"session\",\"version\":3,\"id\":\"s\"}\n{\"type\":\"message\",\"id\":\"a\\\"\",\"parentId\":\"gone\",\"message\":{\"role\":\"user\",\"content\":\"x\"}}\n{}\n[\n";
    let mut report = import(Format::Pi, source.as_bytes()).unwrap().report;
    report.refused_compactions.push(RefusedCompaction {
        line: 9,
        id: "c\u{1}".into(),
        reason: "not_on_path".into(),
    });
    assert!(!report.unmapped.is_empty() && !report.reparented.is_empty());
    let text = report.to_json();
    let value: Value = serde_json::from_str(&text).expect("the report is JSON");
    let members: Vec<&str> = value
        .as_object()
        .map(|o| o.keys().map(String::as_str).collect())
        .unwrap_or_default();
    assert_eq!(
        members,
        [
            "linesRead",
            "entriesWritten",
            "entryTypes",
            "sourceKinds",
            "unmapped",
            "reparented",
            "refusedCompactions",
            "unterminatedTail",
            "format",
            "resumeLeafId",
            "unknownKinds",
            "redactions"
        ]
    );
    assert_eq!(value["refusedCompactions"][0]["id"], "c\u{1}");
    assert!(text.contains(r#""id":"c\u0001""#), "{text}");
    assert_eq!(value["format"], "pi");
    assert_eq!(
        ImportReport::default().to_json(),
        r#"{"linesRead":0,"entriesWritten":0,"entryTypes":{},"sourceKinds":{},"unmapped":[],"reparented":[],"refusedCompactions":[],"unterminatedTail":false,"format":null,"resumeLeafId":null,"unknownKinds":{},"redactions":0}"#
    );
}

#[test]
fn the_compaction_check_over_the_written_ids_refuses_what_a_context_refuses() {
    let mut reasons = std::collections::BTreeSet::new();
    for seed in 0..300 {
        let source = random_pi_file(seed, 40);
        let imported = import(Format::Pi, source.as_bytes()).unwrap();
        let line_of: HashMap<String, u64> = imported
            .lines
            .iter()
            .map(|l| {
                let entry = crate::entry::parse_entry(l).unwrap();
                let line = source
                    .lines()
                    .position(|s| s.contains(&format!("\"id\":\"{}\"", entry.id())))
                    .map_or(0, |p| p as u64 + 1);
                (entry.id().to_owned(), line)
            })
            .collect();
        let expected = refused_by_context(&imported.lines, &line_of);
        reasons.extend(expected.iter().map(|c| c.reason.clone()));
        assert_eq!(imported.report.refused_compactions, expected, "seed {seed}");
    }
    // Every reason occurs: the comparison is not vacuous.
    assert_eq!(
        reasons.into_iter().collect::<Vec<_>>(),
        [
            "not_interaction_start",
            "not_on_path",
            "pending_tool_calls",
            "unknown_entry"
        ]
    );
}
