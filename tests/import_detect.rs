//! Issue 22: an import detects the source's format, refuses a source that is not a
//! session of the format asked for (nothing written), and reports the leaf the source
//! agent resumes, never a line of a kind the importer does not know.

use crate::common;

use std::path::PathBuf;
use std::process::Command;

use common::{interop_fixture, temp_dir};
use session::Error;
use session::interop::{Format, import, import_file};
use session::{ContextOptions, build_context, parse_entries};

use common::corpus_files;

const FORMATS: [Format; 3] = [Format::Pi, Format::ClaudeCode, Format::Codex];

#[test]
fn every_corpus_file_and_fixture_is_detected_as_the_format_of_its_folder() {
    let mut seen = 0;
    for format in FORMATS {
        let files = corpus_files(format.name());
        assert!(!files.is_empty(), "{}", format.name());
        for file in files {
            let bytes = std::fs::read(&file).unwrap();
            assert_eq!(Format::detect(&bytes), Some(format), "{}", file.display());
            seen += 1;
        }
    }
    assert!(seen >= 40, "{seen} corpus files");
    for (name, format) in [
        ("claude-code-session.jsonl", Format::ClaudeCode),
        ("claude-code-torn.jsonl", Format::ClaudeCode),
        ("codex-rollout.jsonl", Format::Codex),
        ("codex-torn.jsonl", Format::Codex),
    ] {
        let bytes = std::fs::read(interop_fixture(name)).unwrap();
        assert_eq!(Format::detect(&bytes), Some(format), "{name}");
    }
    let pi = br#"{"type":"session","version":3,"id":"s","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/"}"#;
    assert_eq!(Format::detect(pi), Some(Format::Pi));
    let old_codex = br#"{"id":"x","timestamp":"2025-01-01T00:00:00.000Z","instructions":null}"#;
    assert_eq!(Format::detect(old_codex), Some(Format::Codex));
    assert_eq!(Format::detect(b"{}\n[1]\nnot json\n"), None);
}

/// A few corpus files of each format: the first two of each folder.
fn sample() -> Vec<(Format, PathBuf)> {
    FORMATS
        .into_iter()
        .flat_map(|f| {
            corpus_files(f.name())
                .into_iter()
                .take(2)
                .map(move |p| (f, p))
        })
        .collect()
}

#[test]
fn an_auto_import_names_the_format_and_a_resume_leaf_that_is_a_conversation_entry() {
    let dir = temp_dir("auto");
    for (i, (format, file)) in sample().into_iter().enumerate() {
        let out = dir.join(format!("{i}.jsonl"));
        let report = import_file(None, &file, &out).unwrap();
        assert_eq!(report.format, Some(format), "{}", file.display());
        let leaf = report.resume_leaf_id.clone().expect("a resume leaf");
        let text = std::fs::read_to_string(&out).unwrap();
        let entry = text
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
            .find(|e| e["id"] == leaf.as_str())
            .expect("the resume leaf is an entry");
        assert_ne!(
            entry["key"].as_str().map(|k| k.ends_with(".unmapped")),
            Some(true),
            "{}: a raw line is the resume leaf",
            file.display()
        );
        let root: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
        assert_eq!(root["importedFormat"], format.name(), "{}", file.display());
        let json: serde_json::Value = serde_json::from_str(&report.to_json()).unwrap();
        assert_eq!(json["format"], format.name());
        assert_eq!(json["resumeLeafId"], leaf.as_str());
    }
}

#[test]
fn a_wrong_importer_is_refused_naming_the_detected_format_and_writes_nothing() {
    let dir = temp_dir("wrong");
    for (i, (format, file)) in sample().into_iter().enumerate() {
        for asked in FORMATS.into_iter().filter(|&f| f != format) {
            let out = dir.join(format!("{i}-{}.jsonl", asked.name()));
            match import_file(asked, &file, &out) {
                Err(Error::NotImportable {
                    detected,
                    requested,
                }) => {
                    assert_eq!(detected, Some(format), "{}", file.display());
                    assert_eq!(requested, Some(asked));
                }
                other => panic!("{} as {}: {other:?}", file.display(), asked.name()),
            }
            assert!(!out.exists());
            let cli = Command::new(env!("CARGO_BIN_EXE_session"))
                .args(["import", "--from", asked.name()])
                .arg(&file)
                .arg(&out)
                .output()
                .unwrap();
            let stderr = String::from_utf8_lossy(&cli.stderr);
            assert_eq!(cli.status.code(), Some(2), "{stderr}");
            assert!(
                stderr.contains(&format!("use --from {} or auto", format.name())),
                "{stderr}"
            );
            assert!(!out.exists());
        }
    }
    assert_eq!(
        std::fs::read_dir(&dir).unwrap().count(),
        0,
        "no file is left"
    );
}

#[test]
fn a_source_without_a_conversation_entry_is_refused_and_writes_nothing() {
    let dir = temp_dir("empty");
    let cases: [(&str, Option<Format>); 3] = [
        (
            "{\"type\":\"last-prompt\",\"lastPrompt\":\"hi\",\"sessionId\":\"s\"}\n",
            Some(Format::ClaudeCode),
        ),
        (
            "{\"timestamp\":\"2025-01-01T00:00:00Z\",\"type\":\"session_meta\",\"payload\":{\"id\":\"c\"}}\n",
            Some(Format::Codex),
        ),
        ("{}\n{\"a\":1}\n", None),
    ];
    for (i, (text, detected)) in cases.into_iter().enumerate() {
        let src = dir.join(format!("src-{i}.jsonl"));
        std::fs::write(&src, text).unwrap();
        let out = dir.join(format!("out-{i}.jsonl"));
        for asked in [None, detected] {
            match import_file(asked, &src, &out) {
                Err(Error::NotImportable { detected: d, .. }) => assert_eq!(d, detected),
                other => panic!("{text}: {other:?}"),
            }
            assert!(!out.exists());
        }
        assert!(import(detected, text.as_bytes()).is_err());
        let cli = Command::new(env!("CARGO_BIN_EXE_session"))
            .arg("import")
            .arg(&src)
            .arg(&out)
            .output()
            .unwrap();
        assert_eq!(cli.status.code(), Some(2));
        assert!(!out.exists());
    }
}

#[test]
fn a_line_of_an_unknown_kind_is_never_the_resume_leaf_and_is_counted() {
    let text = concat!(
        r#"{"parentUuid":null,"type":"user","uuid":"u-1","sessionId":"s","timestamp":"2025-01-01T00:00:00.000Z","message":{"role":"user","content":"hi"}}"#,
        "\n",
        r#"{"parentUuid":"u-1","type":"assistant","uuid":"a-1","sessionId":"s","timestamp":"2025-01-01T00:00:01.000Z","message":{"id":"m","role":"assistant","content":[{"type":"text","text":"hello"}]}}"#,
        "\n",
        r#"{"type":"last-prompt","lastPrompt":"hi","sessionId":"s"}"#,
        "\n",
        r#"{"type":"last-prompt","lastPrompt":"hi","sessionId":"s"}"#,
        "\n",
    );
    let imported = import(None, text.as_bytes()).unwrap();
    assert_eq!(imported.report.format, Some(Format::ClaudeCode));
    assert_eq!(imported.report.resume_leaf_id.as_deref(), Some("a-1"));
    assert_eq!(
        imported.report.unknown_kinds.get("last-prompt"),
        Some(&2),
        "{:?}",
        imported.report.unknown_kinds
    );
    let json: serde_json::Value = serde_json::from_str(&imported.report.to_json()).unwrap();
    assert_eq!(json["unknownKinds"]["last-prompt"], 2);
}

#[test]
fn an_older_codex_rollout_imports_its_response_items() {
    let text = concat!(
        r#"{"id":"old-1","timestamp":"2025-05-01T00:00:00.000Z","instructions":null}"#,
        "\n",
        r#"{"record_type":"state"}"#,
        "\n",
        r#"{"type":"message","role":"user","content":[{"type":"input_text","text":"list files"}]}"#,
        "\n",
        r#"{"type":"function_call","name":"shell","arguments":"{\"command\":[\"ls\"]}","call_id":"c1"}"#,
        "\n",
        r#"{"type":"function_call_output","call_id":"c1","output":"a.txt"}"#,
        "\n",
        r#"{"type":"message","role":"assistant","content":[{"type":"output_text","text":"a.txt"}]}"#,
        "\n",
        r#"{"record_type":"state"}"#,
        "\n",
    );
    let imported = import(None, text.as_bytes()).unwrap();
    let report = &imported.report;
    assert_eq!(report.format, Some(Format::Codex));
    assert!(report.unmapped.is_empty(), "{:?}", report.unmapped);
    assert_eq!(report.entry_types.get("message"), Some(&4));
    // The last line's metadata entry, under the last message: the chain's end.
    assert_eq!(report.resume_leaf_id.as_deref(), Some("codex-7"));
    let root: serde_json::Value = serde_json::from_str(&imported.lines[0]).unwrap();
    assert_eq!(root["id"], "old-1");
    assert_eq!(root["key"], "codex.session_header");
    let result: serde_json::Value = serde_json::from_str(&imported.lines[4]).unwrap();
    assert_eq!(result["message"]["role"], "toolResult");
    assert_eq!(result["message"]["toolName"], "shell");
}

#[test]
fn claude_code_resumes_at_its_latest_line_that_is_neither_progress_nor_sidechain() {
    let line = |body: &str| {
        format!("{{{body},\"sessionId\":\"s\",\"timestamp\":\"2025-01-01T00:00:00.000Z\"}}\n")
    };
    let user = r#""type":"user","message":{"role":"user","content":"hi"}"#;
    let assistant = r#""type":"assistant","message":{"id":"m","role":"assistant","content":[{"type":"text","text":"ok"}]}"#;
    let text = [
        line(&format!(r#""parentUuid":null,"uuid":"u-1",{user}"#)),
        line(&format!(r#""parentUuid":"u-1","uuid":"a-1",{assistant}"#)),
        line(r#""parentUuid":"a-1","uuid":"p-1","type":"progress","data":{}"#),
        line(&format!(
            r#""parentUuid":null,"uuid":"s-1","isSidechain":true,{user}"#
        )),
        line(&format!(
            r#""parentUuid":"s-1","uuid":"s-2","isSidechain":true,{assistant}"#
        )),
        line(r#""parentUuid":"s-2","uuid":"p-2","type":"progress","data":{}"#),
    ]
    .concat();
    let imported = import(None, text.as_bytes()).unwrap();
    assert_eq!(imported.report.resume_leaf_id.as_deref(), Some("a-1"));
    // A message under a progress line walks through it: the message is the leaf.
    let more = format!(
        "{text}{}",
        line(&format!(r#""parentUuid":"p-1","uuid":"u-2",{user}"#))
    );
    let imported = import(None, more.as_bytes()).unwrap();
    assert_eq!(imported.report.resume_leaf_id.as_deref(), Some("u-2"));
    // A subagent's own file, all sidechain, resumes at its end.
    let sub = [
        line(&format!(
            r#""parentUuid":null,"uuid":"s-1","isSidechain":true,{user}"#
        )),
        line(&format!(
            r#""parentUuid":"s-1","uuid":"s-2","isSidechain":true,{assistant}"#
        )),
    ]
    .concat();
    let imported = import(None, sub.as_bytes()).unwrap();
    assert_eq!(imported.report.resume_leaf_id.as_deref(), Some("s-2"));
}

/// The Codex items of a context (`codexItem`), by type, and the roles of the others.
fn codex_items(context: &session::Context) -> Vec<String> {
    context
        .messages
        .iter()
        .map(|m| {
            let m: serde_json::Value = serde_json::from_str(m).unwrap();
            match m["codexItem"]["type"].as_str() {
                Some(kind) => {
                    assert_eq!(m["role"], "assistant", "{m}");
                    kind.to_owned()
                }
                None => m["role"].as_str().unwrap().to_owned(),
            }
        })
        .collect()
}

#[test]
fn codex_sends_every_response_item_it_resends_and_ghost_snapshots_stay_metadata() {
    // Rule: a response item Codex sends back when it resumes (web_search_call,
    // tool_search_call/output, image_generation_call, agent_message, compaction) is an
    // assistant message with empty content and the item as `codexItem`, on its own line
    // and inside a replacement history; a ghost_snapshot (Codex leaves it out) and a
    // kind Codex does not know stay `codex.response_item` metadata.
    let line = |kind: &str, payload: &str| {
        format!(
            "{{\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"type\":\"{kind}\",\"payload\":{payload}}}\n"
        )
    };
    let user =
        r#"{"type":"message","role":"user","content":[{"type":"input_text","text":"find it"}]}"#;
    let reply = r#"{"type":"message","role":"assistant","content":[{"type":"output_text","text":"found"}]}"#;
    let web =
        r#"{"type":"web_search_call","status":"completed","action":{"type":"search","query":"q"}}"#;
    let ghost = r#"{"type":"ghost_snapshot","ghost_commit":{"id":"g","parent":"p","preexisting_untracked_files":[],"preexisting_untracked_dirs":[]}}"#;
    let search = r#"{"type":"tool_search_call","call_id":"ts-1","status":"completed","execution":"local","arguments":{"query":"q"}}"#;
    let found = r#"{"type":"tool_search_output","call_id":"ts-1","status":"completed","execution":"local","tools":[]}"#;
    let image = r#"{"type":"image_generation_call","status":"completed","revised_prompt":"a cat","result":"AA=="}"#;
    let agent = r#"{"type":"agent_message","author":"a","recipient":"b","content":[{"type":"input_text","text":"hi"}]}"#;
    let compaction = r#"{"type":"compaction","encrypted_content":"enc"}"#;
    let old_name = r#"{"type":"compaction_summary","encrypted_content":"enc"}"#;
    let unknown = r#"{"type":"future_kind","x":1}"#;
    let history = format!(
        r#"{{"message":"","replacement_history":[{user},{compaction},{ghost},{agent},{old_name}]}}"#
    );
    let text = [
        line(
            "session_meta",
            r#"{"id":"s-1","timestamp":"2026-01-01T00:00:00.000Z"}"#,
        ),
        line("response_item", user),
        line("response_item", web),
        line("response_item", ghost),
        line("response_item", search),
        line("response_item", found),
        line("response_item", image),
        line("response_item", agent),
        line("response_item", unknown),
        line("response_item", reply),
    ]
    .concat();
    let codex = ContextOptions::from_json(r#"{"profile":"codex"}"#).unwrap();
    let context_of = |text: &str, options: &ContextOptions| {
        let imported = import(Some(Format::Codex), text.as_bytes()).unwrap();
        assert!(
            imported.report.unmapped.is_empty(),
            "{:?}",
            imported.report.unmapped
        );
        let leaf = imported.report.resume_leaf_id.clone().unwrap();
        let entries = parse_entries(format!("[{}]", imported.lines.join(","))).unwrap();
        let metadata: Vec<String> = imported
            .lines
            .iter()
            .filter(|l| l.contains(r#""key":"codex.response_item""#))
            .cloned()
            .collect();
        (build_context(&entries, &leaf, options).unwrap(), metadata)
    };
    let (context, metadata) = context_of(&text, &codex);
    assert_eq!(
        codex_items(&context),
        [
            "user",
            "web_search_call",
            "tool_search_call",
            "tool_search_output",
            "image_generation_call",
            "agent_message",
            "assistant"
        ]
    );
    // Kept whole: what Codex sends is the item as the rollout holds it.
    let web_message: serde_json::Value = serde_json::from_str(&context.messages[1]).unwrap();
    assert_eq!(web_message["content"], serde_json::json!([]));
    assert_eq!(
        web_message["codexItem"],
        serde_json::from_str::<serde_json::Value>(web).unwrap()
    );
    assert_eq!(metadata.len(), 2, "{metadata:?}");
    assert!(metadata[0].contains("ghost_snapshot") && metadata[1].contains("future_kind"));
    // Without a profile the same messages are there, with no blocks.
    let (plain, _) = context_of(
        &text,
        &ContextOptions::from_json(r#"{"profile":"none"}"#).unwrap(),
    );
    assert_eq!(plain.messages, context.messages);

    // Inside a replacement history: the compaction items are sent (an older
    // `compaction_summary` under the name Codex sends it by), the ghost snapshot is not.
    let compacted = [
        text.clone(),
        line("compacted", &history),
        line("response_item", reply),
    ]
    .concat();
    let (context, metadata) = context_of(&compacted, &codex);
    assert_eq!(
        codex_items(&context),
        [
            "user",
            "compaction",
            "agent_message",
            "compaction",
            "assistant"
        ]
    );
    assert_eq!(metadata.len(), 3, "{metadata:?}");
}
