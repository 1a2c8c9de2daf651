//! Secrets never leave (issue 36): an export redacts by default, an import and a copy
//! when asked. One secret of each kind the default rules know is planted in a real
//! corpus session (a user message, a tool call's arguments, a tool result, a
//! compaction summary, a metadata value) and the bytes written are searched for each.
//! Redaction never changes an id, so the tree and the context keep their shape.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use session::context::{ContextOptions, build_context};
use session::interop::{
    ExportOptions, Format, ImportOptions, export, export_file, import, import_file_with,
};
use session::secrets::{Redactor, SecretsOptions, scan_secrets};
use session::{CopyOptions, Entry, Error, JsonlOptions, PgOptions, Store, parse_entries};

use common::secrets::{Plant, assert_holds_no_secret, json_escaped, one_of_each_kind};
use common::{read_file, temp_dir, write_file};

const SESSION: &str = env!("CARGO_BIN_EXE_session");
const FORMATS: [Format; 3] = [Format::Pi, Format::ClaudeCode, Format::Codex];

/// The planted corpus session written to `dir`: its path, lines, resume leaf.
fn planted(dir: &Path) -> (PathBuf, Vec<String>, String, Vec<Plant>) {
    let plants = one_of_each_kind();
    let (lines, leaf, places) = common::secrets::planted_corpus_session(&plants);
    assert_eq!(places.len(), 5);
    let path = dir.join("planted.jsonl");
    write_lines(&path, &lines);
    (path, lines, leaf, plants)
}

fn write_lines(path: &Path, lines: &[String]) {
    let mut text = lines.join("\n");
    text.push('\n');
    write_file(path, text.as_bytes());
}

fn text_of(path: &Path) -> String {
    String::from_utf8(read_file(path)).unwrap()
}

/// Every planted secret is in `text` (whole, or as JSON or a JSON text in a string
/// spells it).
fn assert_holds_every_secret(plants: &[Plant], text: &str, what: &str) {
    for p in plants {
        let escaped = json_escaped(&p.secret);
        assert!(
            text.contains(&p.secret)
                || text.contains(&escaped)
                || text.contains(&json_escaped(&escaped)),
            "{what} lacks the {} secret",
            p.rule
        );
    }
}

/// Whether a member holds an id: the libsession ids and the agents' own.
fn is_id_member(key: &str) -> bool {
    key == "id"
        || key.ends_with("Id")
        || key == "uuid"
        || key.ends_with("Uuid")
        || key == "tool_use_id"
        || key == "call_id"
}

/// Every id member of every line of `text`: (line, JSON Pointer, value).
fn ids_of(text: &str) -> Vec<(usize, String, Value)> {
    fn walk(value: &Value, at: &str, line: usize, out: &mut Vec<(usize, String, Value)>) {
        match value {
            Value::Object(map) => {
                for (key, v) in map {
                    let pointer = format!("{at}/{key}");
                    if is_id_member(key) && !v.is_object() && !v.is_array() {
                        out.push((line, pointer.clone(), v.clone()));
                    }
                    walk(v, &pointer, line, out);
                }
            }
            Value::Array(items) => {
                for (i, v) in items.iter().enumerate() {
                    walk(v, &format!("{at}/{i}"), line, out);
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        // A line an import kept raw is written back as it was: not JSON, no ids.
        if let Ok(value) = serde_json::from_str(line) {
            walk(&value, "", n, &mut out);
        }
    }
    out
}

/// A context's messages with every string emptied but ids, roles, types and names:
/// what redaction must leave as it is.
fn shape(messages: &[String]) -> Vec<Value> {
    fn blank(value: &mut Value, key: Option<&str>) {
        match value {
            Value::String(s) => {
                let kept = key.is_some_and(|k| {
                    is_id_member(k) || matches!(k, "role" | "type" | "name" | "toolName")
                });
                if !kept {
                    s.clear();
                }
            }
            Value::Object(map) => map.iter_mut().for_each(|(k, v)| blank(v, Some(k))),
            Value::Array(items) => items.iter_mut().for_each(|v| blank(v, None)),
            _ => {}
        }
    }
    messages
        .iter()
        .map(|m| {
            let mut v: Value = serde_json::from_str(m).unwrap();
            blank(&mut v, None);
            v
        })
        .collect()
}

fn profile_of(format: Format) -> ContextOptions {
    ContextOptions::from_json(&format!(r#"{{"profile":"{}"}}"#, format.name())).unwrap()
}

fn entries_of(lines: &[String]) -> Vec<Entry> {
    parse_entries(format!("[{}]", lines.join(","))).unwrap()
}

/// The context an agent's file gives once imported (at the leaf the import says the
/// agent resumes), under that agent's profile.
fn context_of_import(format: Format, text: &str) -> Vec<String> {
    let imported = import(format, text.as_bytes()).unwrap();
    let leaf = imported.report.resume_leaf_id.clone().unwrap();
    build_context(&entries_of(&imported.lines), &leaf, &profile_of(format))
        .unwrap()
        .messages
}

fn findings_in(path: &Path) -> u64 {
    scan_secrets(path, &SecretsOptions::default())
        .unwrap()
        .findings
        .len() as u64
}

fn export_options(json: &str) -> ExportOptions {
    ExportOptions::from_json(json).unwrap()
}

#[test]
fn an_export_to_each_agent_holds_no_planted_secret_by_default_and_each_with_redact_false() {
    let dir = temp_dir("wire-export");
    let (src, _, leaf, plants) = planted(&dir);
    for format in FORMATS {
        let name = format.name();
        let redacted = dir.join(format!("{name}-redacted.jsonl"));
        let kept = dir.join(format!("{name}-kept.jsonl"));
        let leaf_only = format!(r#"{{"leaf":"{leaf}"}}"#);
        let report = export_file(format, &src, &redacted, &export_options(&leaf_only)).unwrap();
        let with_secrets = format!(r#"{{"leaf":"{leaf}","redact":false}}"#);
        let plain = export_file(format, &src, &kept, &export_options(&with_secrets)).unwrap();
        let (redacted_text, kept_text) = (text_of(&redacted), text_of(&kept));

        assert_holds_no_secret(&plants, &redacted_text, &format!("the export to {name}"));
        assert_holds_every_secret(&plants, &kept_text, &format!("the export to {name}"));
        // Each secret the unredacted file holds was replaced, and counted.
        assert_eq!(report.redactions, findings_in(&kept), "{name}");
        assert_eq!(plain.redactions, 0, "{name}");
        if format == Format::Pi {
            // pi carries all five places.
            assert_eq!(report.redactions as usize, plants.len() * 5);
        }
        assert_eq!(findings_in(&redacted), 0, "{name}");
        assert!(
            report
                .to_json()
                .ends_with(&format!(r#""redactions":{}}}"#, report.redactions))
        );
        // The same lines, with the same ids in each.
        assert_eq!(report.entries, plain.entries, "{name}");
        assert_eq!(ids_of(&redacted_text), ids_of(&kept_text), "{name}");

        // Imported again, the redacted file gives the context of the unredacted one,
        // its text redacted: the same messages, roles, blocks and ids.
        let got = context_of_import(format, &redacted_text);
        let expected = context_of_import(format, &kept_text);
        assert_holds_no_secret(&plants, &got.join("\n"), &format!("{name} and back"));
        assert_holds_every_secret(&plants, &expected.join("\n"), &format!("{name} and back"));
        assert_eq!(shape(&got), shape(&expected), "{name} and back");
    }
}

#[test]
fn a_rule_that_matches_every_id_changes_no_id_in_an_export() {
    // The user's rule runs on every string: one that matches the hex digits of every id
    // (pi's 8-digit ids, UUIDs, the import's own) shows that no id member of any
    // agent's lines is touched, while the same text elsewhere is.
    let dir = temp_dir("wire-ids");
    let (src, _, leaf, _) = planted(&dir);
    for format in FORMATS {
        let name = format.name();
        let redacted = dir.join(format!("{name}-redacted.jsonl"));
        let kept = dir.join(format!("{name}-kept.jsonl"));
        let options = format!(
            r#"{{"leaf":"{leaf}","extraRules":[{{"name":"hex","pattern":"[0-9a-f]{{8}}"}}]}}"#
        );
        let report = export_file(format, &src, &redacted, &export_options(&options)).unwrap();
        let with_secrets = format!(r#"{{"leaf":"{leaf}","redact":false}}"#);
        export_file(format, &src, &kept, &export_options(&with_secrets)).unwrap();
        let (redacted_text, kept_text) = (text_of(&redacted), text_of(&kept));
        assert!(redacted_text.contains("[REDACTED:hex]"), "{name}");
        assert!(report.redactions > 0, "{name}");
        let ids = ids_of(&kept_text);
        assert!(ids.len() > 100, "{name}: {} ids", ids.len());
        assert_eq!(ids_of(&redacted_text), ids, "{name}");
    }
}

#[test]
fn rule_options_without_redaction_and_invalid_rules_are_refused() {
    let dir = temp_dir("wire-options");
    let (src, _, _, _) = planted(&dir);
    fn refused<T: std::fmt::Debug>(result: Result<T, Error>, what: &str) -> String {
        match result {
            Err(Error::InvalidOption { message }) => message,
            other => panic!("{what}: {other:?}"),
        }
    }
    let out = dir.join("out.jsonl");
    let message = refused(
        export_file(
            Format::Pi,
            &src,
            &out,
            &export_options(r#"{"redact":false,"allow":["x"]}"#),
        ),
        "export",
    );
    assert!(message.contains("redact"), "{message}");
    let options = ImportOptions::from_json(r#"{"extraRules":[{"name":"a","pattern":"b"}]}"#);
    let message = refused(
        import_file_with(Format::Pi, &src, &out, &options.unwrap(), &mut |_| true),
        "import",
    );
    assert!(message.contains("redact"), "{message}");
    let bad = r#"{"rules":[{"name":"bad","pattern":"("}]}"#;
    let message = refused(
        export_file(Format::Pi, &src, &out, &export_options(bad)),
        "export",
    );
    assert!(message.contains("\"bad\""), "{message}");
    assert!(ImportOptions::from_json(r#"{"redcat":true}"#).is_err());
    assert!(!out.exists());
}

#[test]
fn an_import_with_redact_true_holds_no_planted_secret_and_the_same_context_shape() {
    // Each agent's file holding every secret (the unredacted export), imported.
    let dir = temp_dir("wire-import");
    let (_, lines, leaf, plants) = planted(&dir);
    let entries = entries_of(&lines);
    for format in FORMATS {
        let name = format.name();
        let source = dir.join(format!("{name}-source.jsonl"));
        write_file(
            &source,
            export(format, &entries, &leaf).unwrap().text.as_bytes(),
        );
        let (redacted, kept) = (
            dir.join(format!("{name}-redacted.jsonl")),
            dir.join(format!("{name}-kept.jsonl")),
        );
        let options = ImportOptions::from_json(r#"{"redact":true}"#).unwrap();
        let report = import_file_with(format, &source, &redacted, &options, &mut |_| true)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let plain = import_file_with(
            format,
            &source,
            &kept,
            &ImportOptions::default(),
            &mut |_| true,
        )
        .unwrap();
        let (redacted_text, kept_text) = (text_of(&redacted), text_of(&kept));
        assert_holds_no_secret(&plants, &redacted_text, &format!("the import of {name}"));
        assert_holds_every_secret(&plants, &kept_text, &format!("the import of {name}"));
        assert_eq!(report.redactions, findings_in(&kept), "{name}");
        assert!(report.redactions >= plants.len() as u64, "{name}");
        assert_eq!(plain.redactions, 0);
        assert_eq!(findings_in(&redacted), 0, "{name}");
        assert_eq!(report.entries_written, plain.entries_written, "{name}");
        assert_eq!(report.resume_leaf_id, plain.resume_leaf_id, "{name}");
        assert_eq!(ids_of(&redacted_text), ids_of(&kept_text), "{name}");

        // The same context at the resume leaf, text redacted.
        let context = |text: &str| {
            let lines: Vec<String> = text.lines().map(str::to_owned).collect();
            let leaf = report.resume_leaf_id.as_deref().unwrap();
            build_context(&entries_of(&lines), leaf, &profile_of(format))
                .unwrap()
                .messages
        };
        let (got, expected) = (context(&redacted_text), context(&kept_text));
        assert_holds_no_secret(&plants, &got.join("\n"), &format!("{name}'s context"));
        assert_eq!(shape(&got), shape(&expected), "{name}");
    }
}

fn read_only(path: &Path) -> Store {
    let options = JsonlOptions {
        read_only: true,
        ..JsonlOptions::default()
    };
    Store::open_jsonl_with(path, &options).unwrap().0
}

/// (id, parent id) of every entry of a store, in commit order.
fn tree_of(store: &Store) -> Vec<(String, Option<String>)> {
    store
        .entries()
        .unwrap()
        .iter()
        .map(|e| (e.id().to_owned(), e.parent_id().map(str::to_owned)))
        .collect()
}

fn joined(store: &Store) -> String {
    let entries = store.entries().unwrap();
    let lines: Vec<&str> = entries.iter().map(Entry::json).collect();
    lines.join("\n")
}

#[test]
fn a_copy_with_redaction_holds_no_planted_secret_in_a_file_or_in_postgresql() {
    let dir = temp_dir("wire-copy");
    let (src, _, _, plants) = planted(&dir);
    let source = read_only(&src);
    let tree = tree_of(&source);
    let redact = CopyOptions {
        redact: Some(Redactor::standard().unwrap()),
    };

    // File to file, by the library and by the CLI.
    let out = dir.join("copied.jsonl");
    let count = source
        .copy_to_jsonl_with(&out, &redact, &mut |_| {})
        .unwrap();
    assert_eq!(count as usize, tree.len());
    let by_cli = dir.join("copied-cli.jsonl");
    let cli = Command::new(SESSION)
        .args(["copy", "--redact"])
        .args([&src, &by_cli])
        .output()
        .unwrap();
    assert!(cli.status.success(), "{cli:?}");
    assert_eq!(text_of(&by_cli), text_of(&out));
    assert_holds_no_secret(&plants, &text_of(&out), "the copied file");
    assert_eq!(findings_in(&out), 0);
    // The store's checks ran on the redacted lines; the tree is the same.
    assert_eq!(tree_of(&read_only(&out)), tree);
    // Without --redact, byte for byte.
    let plain = dir.join("plain.jsonl");
    source.copy_to_jsonl(&plain, &mut |_| {}).unwrap();
    assert_eq!(read_file(&plain), read_file(&src));

    // File to a PostgreSQL session (a throwaway cluster).
    if !common::pg::available() {
        return;
    }
    let cluster = common::pg::cluster();
    let conninfo = cluster.conninfo();
    let reader = PgOptions {
        create: false,
        ..PgOptions::default()
    };
    let session_id = format!("wire-{}", std::process::id());
    source
        .copy_to_pg_with(
            &conninfo,
            &session_id,
            &PgOptions::default(),
            &redact,
            &mut |_| {},
        )
        .unwrap();
    let copied = Store::open_pg(&conninfo, &session_id, &reader).unwrap().0;
    assert_eq!(tree_of(&copied), tree);
    assert_holds_no_secret(&plants, &joined(&copied), "the copied session");
    assert_eq!(joined(&copied), text_of(&out).trim_end());
    // And by the CLI, into another session.
    let by_cli = format!("wire-cli-{}", std::process::id());
    let cli = Command::new(SESSION)
        .args(["copy", "--redact", src.to_str().unwrap()])
        .arg(format!("{}#{by_cli}", cluster.uri()))
        .output()
        .unwrap();
    assert!(cli.status.success(), "{cli:?}");
    let copied = Store::open_pg(&conninfo, &by_cli, &reader).unwrap().0;
    assert_holds_no_secret(&plants, &joined(&copied), "the session copied by the CLI");
    assert_eq!(tree_of(&copied), tree);
}

#[test]
fn the_cli_export_redacts_unless_told_not_to_and_import_redacts_when_told() {
    let dir = temp_dir("wire-cli");
    let (src, _, leaf, plants) = planted(&dir);
    let run = |args: &[&str]| {
        let out = Command::new(SESSION).args(args).output().unwrap();
        assert!(out.status.success(), "{args:?}: {out:?}");
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert_holds_no_secret(&plants, &stderr, &format!("session {args:?}"));
        stderr
    };
    let path = |name: &str| dir.join(name).to_str().unwrap().to_owned();
    let src = src.to_str().unwrap();
    let report = run(&["export", "--to", "codex", src, &leaf, &path("codex.jsonl")]);
    assert!(!report.contains(r#""redactions":0"#), "{report}");
    assert_holds_no_secret(&plants, &text_of(&dir.join("codex.jsonl")), "export");
    let args = ["export", "--to", "codex", "--no-redact", src, &leaf];
    run(&[&args[..], &[&path("kept.jsonl")]].concat());
    assert_holds_every_secret(&plants, &text_of(&dir.join("kept.jsonl")), "--no-redact");
    let report = run(&["import", "--redact", &path("kept.jsonl"), &path("in.jsonl")]);
    assert!(!report.contains(r#""redactions":0"#), "{report}");
    assert_holds_no_secret(&plants, &text_of(&dir.join("in.jsonl")), "import --redact");
    run(&["import", &path("kept.jsonl"), &path("in-kept.jsonl")]);
    assert_holds_every_secret(&plants, &text_of(&dir.join("in-kept.jsonl")), "import");
}
