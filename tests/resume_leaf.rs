//! Issue 35 (first part), docs/contract.md §6.3 and §12: import records the leaf its
//! agent resumes inside the session (a last `session.resumeLeaf` entry under that
//! leaf), validated like a label and in force until something other than `session.*`
//! metadata is appended; the command line's default LEAF is that leaf, `leaves` marks
//! it, and another agent's file given to a reading verb says how to import it.

use crate::common;

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{interop_fixture, temp_dir};
use session::interop::{Format, import};
use session::{ContextOptions, Error, Store, build_context, parse_entries};

fn session_cli(args: &[&OsStr]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_session"))
        .args(args)
        .output()
        .expect("the CLI runs")
}

fn memory_store(lines: &[String]) -> Store {
    let store = Store::memory();
    for line in lines {
        store.append(line).unwrap_or_else(|e| panic!("{e}: {line}"));
    }
    store
}

fn record(id: &str, parent: &str, value: &str) -> String {
    format!(
        r#"{{"id":"{id}","parentId":"{parent}","timestamp":9,"type":"metadata","key":"session.resumeLeaf","value":{value}}}"#
    )
}

fn user(id: &str, parent: Option<&str>) -> String {
    common::user(id, parent, "hi")
}

#[test]
fn every_import_ends_with_the_record_of_its_resume_leaf_under_that_leaf() {
    for file in common::corpus_files("") {
        let imported = import(None, &std::fs::read(&file).unwrap()).unwrap();
        let leaf = imported.report.resume_leaf_id.clone().unwrap();
        let last: serde_json::Value = serde_json::from_str(imported.lines.last().unwrap()).unwrap();
        assert_eq!(last["type"], "metadata", "{}", file.display());
        assert_eq!(last["key"], "session.resumeLeaf");
        assert_eq!(last["parentId"], leaf.as_str());
        assert_eq!(last["value"], serde_json::json!({ "leafId": leaf }));
        // The session's latest leaf is the record, on the resume leaf's branch: its
        // context is the resume leaf's (no `session.` metadata is replayed).
        let entries = parse_entries(format!("[{}]", imported.lines.join(","))).unwrap();
        let record_id = last["id"].as_str().unwrap();
        let at_leaf = build_context(&entries, &leaf, &ContextOptions::default()).unwrap();
        let at_record = build_context(&entries, record_id, &ContextOptions::default()).unwrap();
        assert_eq!(at_leaf.messages, at_record.messages, "{}", file.display());
        assert_eq!(at_leaf.metadata, at_record.metadata);
    }
}

#[test]
fn an_imported_session_satisfies_every_tree_rule_and_round_trips() {
    for name in ["claude-code-session.jsonl", "codex-rollout.jsonl"] {
        let imported = import(None, &std::fs::read(interop_fixture(name)).unwrap()).unwrap();
        // Appended one by one, every append-time rule holds (the record's leafId is
        // committed before it).
        let store = memory_store(&imported.lines);
        assert_eq!(
            store.resume_leaf().unwrap(),
            imported.report.resume_leaf_id,
            "{name}"
        );
        let stored: Vec<String> = store
            .entries()
            .unwrap()
            .iter()
            .map(|e| e.json().to_owned())
            .collect();
        assert_eq!(stored, imported.lines, "{name}: kept byte for byte");
        // As a file, it opens clean and says the same.
        let dir = temp_dir("resume-round-trip");
        let path = dir.join("s.jsonl");
        std::fs::write(&path, imported.lines.join("\n") + "\n").unwrap();
        let (file, report) = Store::open_jsonl(&path).unwrap();
        assert_eq!(report.state, session::State::Ready);
        let again: Vec<String> = file
            .entries()
            .unwrap()
            .iter()
            .map(|e| e.json().to_owned())
            .collect();
        assert_eq!(again, imported.lines, "{name}");
        assert_eq!(file.resume_leaf().unwrap(), imported.report.resume_leaf_id);
    }
}

#[test]
fn the_record_is_validated_like_a_label() {
    let store = memory_store(&[user("u-1", None)]);
    for (value, pointer) in [
        (r#""u-1""#, "/value"),
        (r#"{}"#, "/value/leafId"),
        (r#"{"leafId":""}"#, "/value/leafId"),
        (r#"{"leafId":7}"#, "/value/leafId"),
    ] {
        match store.append(record("r", "u-1", value)) {
            Err(Error::InvalidEntry(e)) => assert_eq!(e.pointer, pointer, "{value}"),
            other => panic!("{value}: {other:?}"),
        }
    }
    match store.append(record("r", "u-1", r#"{"leafId":"nope"}"#)) {
        Err(Error::UnknownLeaf { id }) => assert_eq!(id, "nope"),
        other => panic!("{other:?}"),
    }
    // Other members are kept and ignored, as for every session.* value.
    store
        .append(record("r", "u-1", r#"{"leafId":"u-1","by":"x"}"#))
        .unwrap();
    assert_eq!(store.resume_leaf().unwrap().as_deref(), Some("u-1"));
}

#[test]
fn the_record_is_in_force_until_something_but_session_metadata_is_appended() {
    let store = memory_store(&[
        user("u-1", None),
        user("u-2", Some("u-1")),
        record("rec", "u-1", r#"{"leafId":"u-1"}"#),
    ]);
    assert_eq!(store.resume_leaf().unwrap().as_deref(), Some("u-1"));
    // A label under it (what `session label` appends) leaves it in force.
    store
        .append(r#"{"id":"l-1","parentId":"rec","timestamp":10,"type":"metadata","key":"session.label","value":{"targetId":"u-1","label":"start"}}"#)
        .unwrap();
    assert_eq!(store.resume_leaf().unwrap().as_deref(), Some("u-1"));
    // A host's own metadata or message ends it: the session is the host's now.
    store
        .append(r#"{"id":"m-1","parentId":"l-1","timestamp":11,"type":"metadata","key":"cwd","value":"/w"}"#)
        .unwrap();
    assert_eq!(store.resume_leaf().unwrap(), None);
    // A native session has none.
    assert_eq!(
        memory_store(&[user("u-1", None)]).resume_leaf().unwrap(),
        None
    );
}

/// An imported file on disk and the report's resume leaf.
fn imported_file(dir: &Path, fixture_name: &str) -> (PathBuf, String) {
    let out = dir.join(format!("{fixture_name}.imported.jsonl"));
    let import = session_cli(&[
        "import".as_ref(),
        interop_fixture(fixture_name).as_os_str(),
        out.as_os_str(),
    ]);
    assert_eq!(import.status.code(), Some(0));
    let report: serde_json::Value = serde_json::from_slice(&import.stderr).unwrap();
    (out, report["resumeLeafId"].as_str().unwrap().to_owned())
}

fn stdout(output: &Output) -> String {
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout.clone()).unwrap()
}

#[test]
fn the_cli_default_leaf_of_an_imported_session_is_its_resume_leaf() {
    let dir = temp_dir("resume-cli");
    // The transcript ends in a summary line hung under the root: the source's last
    // line is not on the conversation's branch.
    let (file, leaf) = imported_file(&dir, "claude-code-session.jsonl");
    assert_eq!(leaf, "a-3");
    let f = file.as_os_str();
    for verb in ["path", "messages", "show", "tree"] {
        let default = stdout(&session_cli(&[verb.as_ref(), f]));
        let explicit = stdout(&session_cli(&[verb.as_ref(), f, leaf.as_ref()]));
        assert_eq!(default, explicit, "{verb}");
    }
    let path = stdout(&session_cli(&["path".as_ref(), f, "--json".as_ref()]));
    let last = path.lines().rev().nth(1).unwrap();
    assert!(
        last.contains(r#""id":"a-3""#),
        "the path ends at the leaf: {last}"
    );
    let context: serde_json::Value = serde_json::from_str(&stdout(&session_cli(&[
        "context".as_ref(),
        f,
        "--json".as_ref(),
    ])))
    .unwrap();
    assert_eq!(context["leafId"], "a-3");

    // Once a host appends a message, the latest leaf is the default again.
    let mut text = std::fs::read_to_string(&file).unwrap();
    text.push_str(&user("u-next", Some("a-3")));
    text.push('\n');
    std::fs::write(&file, text).unwrap();
    let context: serde_json::Value = serde_json::from_str(&stdout(&session_cli(&[
        "context".as_ref(),
        f,
        "--json".as_ref(),
    ])))
    .unwrap();
    assert_eq!(context["leafId"], "u-next");
}

#[test]
fn leaves_marks_the_resume_leaf_and_names_it_in_json() {
    let dir = temp_dir("resume-leaves");
    let (file, leaf) = imported_file(&dir, "codex-rollout.jsonl");
    let f = file.as_os_str();
    let human = stdout(&session_cli(&["leaves".as_ref(), f]));
    assert!(
        human.contains(&format!("resume leaf:      {leaf}  (where the agent")),
        "{human}"
    );
    let marked: Vec<&str> = human.lines().filter(|l| l.contains("<- ")).collect();
    assert_eq!(marked.len(), 1, "{human}");
    assert!(
        marked[0].starts_with("session-resume-leaf")
            && marked[0].ends_with("<- records the resume leaf, its parent (the default LEAF)"),
        "{human}"
    );
    let json: serde_json::Value = serde_json::from_str(&stdout(&session_cli(&[
        "leaves".as_ref(),
        f,
        "--json".as_ref(),
    ])))
    .unwrap();
    assert_eq!(json["resumeLeafId"], leaf.as_str());
    assert_eq!(json["latestBySeq"], "session-resume-leaf");

    // A leaf that is itself the resume leaf is marked on its own row.
    let native = dir.join("native.jsonl");
    std::fs::write(
        &native,
        [
            user("u-1", None),
            user("u-2", Some("u-1")),
            user("u-3", Some("u-1")),
            record("rec", "u-3", r#"{"leafId":"u-2"}"#),
        ]
        .join("\n")
            + "\n",
    )
    .unwrap();
    let human = stdout(&session_cli(&["leaves".as_ref(), native.as_os_str()]));
    let marked: Vec<&str> = human.lines().filter(|l| l.contains("<- ")).collect();
    assert_eq!(marked.len(), 1, "{human}");
    assert!(
        marked[0].starts_with("u-2") && marked[0].ends_with("<- resume (the default LEAF)"),
        "{human}"
    );
    // Without a record: no resume line, resumeLeafId null.
    let plain = dir.join("plain.jsonl");
    std::fs::write(&plain, user("u-1", None) + "\n").unwrap();
    let human = stdout(&session_cli(&["leaves".as_ref(), plain.as_os_str()]));
    assert!(!human.contains("resume"), "{human}");
    let json: serde_json::Value = serde_json::from_str(&stdout(&session_cli(&[
        "leaves".as_ref(),
        plain.as_os_str(),
        "--json".as_ref(),
    ])))
    .unwrap();
    assert_eq!(json["resumeLeafId"], serde_json::Value::Null);
}

#[test]
fn another_agents_file_given_to_a_reading_verb_says_how_to_import_it() {
    let pi = common::corpus_files("pi").remove(0);
    let dir = temp_dir("agent-file-hint");
    for (source, format) in [
        (
            interop_fixture("claude-code-session.jsonl"),
            Format::ClaudeCode,
        ),
        (interop_fixture("codex-rollout.jsonl"), Format::Codex),
        (pi, Format::Pi),
    ] {
        // A copy: `label` opens its file as a writer.
        let file = dir.join(source.file_name().unwrap());
        std::fs::copy(&source, &file).unwrap();
        let before = std::fs::read(&file).unwrap();
        for verb in ["show", "context", "leaves", "path", "label"] {
            let mut args: Vec<&OsStr> = vec![verb.as_ref(), file.as_os_str()];
            if verb == "label" {
                args.extend([OsStr::new("u-1"), OsStr::new("x")]);
            }
            let output = session_cli(&args);
            assert_eq!(output.status.code(), Some(2), "{verb} {}", file.display());
            let stderr = String::from_utf8_lossy(&output.stderr);
            let expected = format!(
                "session: {} is a {}, not a libsession session: import it first with \
                 `session import --from {} {} OUT.jsonl`\n",
                file.display(),
                format.description(),
                format.name(),
                file.display()
            );
            assert!(stderr.starts_with(&expected), "{stderr}");
            assert!(
                stderr.contains("(read as a libsession session: line 1:"),
                "{stderr}"
            );
        }
        assert_eq!(
            std::fs::read(&file).unwrap(),
            before,
            "the file is left as it was"
        );
    }
    // A libsession file damaged further on is reported as before, with no hint.
    let damaged = dir.join("damaged.jsonl");
    std::fs::write(&damaged, user("u-1", None) + "\n{\"type\":\"user\"}\n").unwrap();
    let output = session_cli(&["show".as_ref(), damaged.as_os_str()]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.starts_with("session: line 2: "), "{stderr}");
    assert!(!stderr.contains("session import"), "{stderr}");
}
