//! `session context` and the compaction marker of `session show`, run as a process on
//! the shipped compacted example (docs/contract.md §10) and on small files written
//! here. Exit codes are the CLI's table: 0 clean, 1 needs repair, 2 the request
//! failed, 64 usage.

use crate::common;

use std::path::Path;
use std::process::{Command, Output};

use common::{TempFile, temp_dir, write_file};
use session::{ContextOptions, JsonlOptions, Store};

const EXAMPLE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/examples/tiny-pi-compacted.jsonl"
);

fn session(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_session"))
        .args(args)
        .output()
        .expect("run the session binary")
}

fn stdout(out: &Output) -> String {
    String::from_utf8(out.stdout.clone()).expect("UTF-8 stdout")
}

fn stderr(out: &Output) -> String {
    String::from_utf8(out.stderr.clone()).expect("UTF-8 stderr")
}

/// What the library builds for `leaf` in `file` with `options` (JSON).
fn library_context(file: &Path, leaf: &str, options: &str) -> String {
    let read_only = JsonlOptions {
        read_only: true,
        ..JsonlOptions::default()
    };
    let (store, _) = Store::open_jsonl_with(file, &read_only).unwrap();
    let options = ContextOptions::from_json(options).unwrap();
    store.build_context(leaf, &options, None).unwrap().to_json()
}

/// The example's first `n` lines plus `extra`, as a new file.
fn example_prefix_with(name: &str, n: usize, extra: &[&str]) -> TempFile {
    let text = std::fs::read_to_string(EXAMPLE).unwrap();
    let mut lines: Vec<&str> = text.lines().take(n).collect();
    lines.extend_from_slice(extra);
    let path = temp_dir(name).file_path("s.jsonl");
    write_file(&path, format!("{}\n", lines.join("\n")).as_bytes());
    path
}

const ORPHAN: &str = r#"{"id":"r-orphan","parentId":"a-final","timestamp":1733000006000,"type":"message","message":{"role":"toolResult","toolCallId":"call-9","toolName":"read","content":[],"isError":false}}"#;

#[test]
fn context_prints_the_library_object_on_one_line() {
    let out = session(&["context", "--json", EXAMPLE, "u-3"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let expected = library_context(Path::new(EXAMPLE), "u-3", "{}");
    assert_eq!(stdout(&out), format!("{expected}\n"));
    let value: serde_json::Value = serde_json::from_str(&expected).unwrap();
    assert_eq!(
        value["keptEntryIds"],
        serde_json::json!(["u-2", "a-pkg", "r-pkg", "a-ver", "u-3"])
    );
    assert_eq!(value["messages"].as_array().unwrap().len(), 6);
}

#[test]
fn context_names_the_compaction_it_used_on_stderr() {
    let out = session(&["context", "--json", EXAMPLE, "u-3"]);
    assert_eq!(
        stderr(&out),
        "session: compaction c-1 (firstKeptEntryId u-2, tokensBefore 1200): its summary, then 5 message(s) from u-2\n"
    );
    let out = session(&["context", "--json", EXAMPLE, "a-alt"]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        stderr(&out),
        "session: no compaction on the path: 2 message(s) from u-1, the whole path\n"
    );
}

#[test]
fn context_budget_flags_trim_and_say_why() {
    // Default estimator, ceil(bytes / 4): the summary message costs 32, u-3 19 and
    // u-2's interaction 195, so 60 available keep the summary and u-3 only.
    let args = [
        "context",
        "--json",
        EXAMPLE,
        "u-3",
        "--max-tokens",
        "100",
        "--reserved-output",
        "30",
        "--safety-margin=10",
    ];
    let out = session(&args);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let options = r#"{"budget":{"maxTokens":100,"reservedOutput":30,"safetyMargin":10}}"#;
    let expected = library_context(Path::new(EXAMPLE), "u-3", options);
    assert_eq!(stdout(&out), format!("{expected}\n"));
    let value: serde_json::Value = serde_json::from_str(&expected).unwrap();
    assert_eq!(value["budget"]["reason"], "trimmed");
    assert_eq!(value["budget"]["droppedInteractions"], 1);
    assert_eq!(value["budget"]["used"], 51);
    assert_eq!(value["keptEntryIds"], serde_json::json!(["u-3"]));
    assert_eq!(
        stderr(&out),
        "session: compaction c-1 (firstKeptEntryId u-2, tokensBefore 1200): its summary, then 1 message(s) from u-3\n\
         session: budget: 51 used of 60 available (max 100 - reserved output 30 - safety margin 10): trimmed: dropped the 1 oldest interaction(s), which did not fit\n\
         session: a compaction with firstKeptEntryId u-3 would keep what fits\n"
    );

    // Nothing fits but the newest interaction: it stays, and stderr says so.
    let out = session(&["context", "--json", EXAMPLE, "u-3", "--max-tokens", "10"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("the newest interaction alone is over budget and is kept anyway"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn context_pairing_defect_fails_unless_skipped_or_kept() {
    let path = example_prefix_with("orphan", 4, &[ORPHAN]);
    let file = path.to_str().unwrap();

    let out = session(&["context", "--json", file, "r-orphan"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(stdout(&out), "");
    assert!(stderr(&out).contains("r-orphan"), "{}", stderr(&out));

    let out = session(&["context", "--json", file, "r-orphan", "--on-defect", "skip"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let value: serde_json::Value = serde_json::from_str(stdout(&out).trim_end()).unwrap();
    assert_eq!(value["messages"], serde_json::json!([]));
    assert!(
        stderr(&out).contains(
            "session: skipped the interaction from u-1: orphan_result at r-orphan (tool call call-9)\n"
        ),
        "{}",
        stderr(&out)
    );

    let out = session(&["context", "--json", file, "r-orphan", "--on-defect=keep"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(
            "session: kept with a defect: the interaction from u-1: orphan_result at r-orphan (tool call call-9)\n"
        ),
        "{}",
        stderr(&out)
    );
}

#[test]
fn context_profile_flag_sends_as_that_agent_and_says_what_it_left_out() {
    let path = example_prefix_with("profile", 4, &[ORPHAN]);
    let file = path.to_str().unwrap();
    let out = session(&["context", "--json", file, "r-orphan", "--profile", "codex"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let expected = library_context(&path, "r-orphan", r#"{"profile":"codex"}"#);
    assert_eq!(stdout(&out), format!("{expected}\n"));
    let value: serde_json::Value = serde_json::from_str(&expected).unwrap();
    assert_eq!(value["defects"][0]["action"], "dropped");
    assert!(
        stderr(&out).contains("session: left out, as the agent does: "),
        "{}",
        stderr(&out)
    );
    // A session that was not imported has no agent: auto is no profile.
    let out = session(&["context", "--json", file, "r-orphan", "--profile=auto"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let out = session(&["context", "--json", file, "r-orphan", "--profile", "gemini"]);
    assert_eq!(out.status.code(), Some(64));
}

#[test]
fn context_invalid_compaction_fails_and_is_never_a_fallback() {
    // Written behind the library's back: a cut that separates call-2 from its result.
    let bad = r#"{"id":"c-1","parentId":"a-ver","timestamp":1733000010000,"type":"compaction","summary":"s","firstKeptEntryId":"r-pkg","tokensBefore":1}"#;
    let path = example_prefix_with("badcut", 10, &[bad]);
    let out = session(&["context", "--json", path.to_str().unwrap(), "c-1"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(stdout(&out), "");
    assert!(stderr(&out).contains("compaction"), "{}", stderr(&out));
}

#[test]
fn context_unknown_leaf_fails_with_2() {
    let out = session(&["context", "--json", EXAMPLE, "nope"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(stdout(&out), "");
}

#[test]
fn context_on_a_torn_file_builds_from_the_committed_prefix_and_exits_1() {
    let text = std::fs::read_to_string(EXAMPLE).unwrap();
    let path = temp_dir("torn").file_path("s.jsonl");
    write_file(&path, format!("{text}{{\"id\":\"u-4\"").as_bytes());
    let out = session(&["context", "--json", path.to_str().unwrap(), "u-3"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let expected = library_context(Path::new(EXAMPLE), "u-3", "{}");
    assert_eq!(stdout(&out), format!("{expected}\n"));
}

#[test]
fn context_usage_errors_exit_64() {
    for args in [
        &["context"][..],
        &["context", EXAMPLE, "u-3", "extra"],
        &["context", EXAMPLE, "u-3", "--max-tokens"],
        &["context", EXAMPLE, "u-3", "--max-tokens", "-1"],
        &["context", EXAMPLE, "u-3", "--max-tokens", "NaN"],
        &["context", EXAMPLE, "u-3", "--reserved-output", "5"],
        &["context", EXAMPLE, "u-3", "--on-defect", "ignore"],
        &["context", EXAMPLE, "u-3", "--budget", "5"],
        &["context", EXAMPLE, "u-3", "--on-defect"],
    ] {
        let out = session(args);
        assert_eq!(out.status.code(), Some(64), "{args:?}: {}", stderr(&out));
        assert_eq!(stdout(&out), "", "{args:?}");
    }
}

#[test]
fn show_marks_the_compaction_on_the_path() {
    let out = session(&["show", EXAMPLE, "u-3"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("\ncompaction in force: c-1 (the model sees its summary, then the messages from u-2 on: session context FILE LEAF)\n\nuser  u-1\n"),
        "{text}"
    );
    // The compaction is shown as its summary, where it is on the path.
    assert!(
        text.contains("\n\nassistant  a-ver\n  版本是 0.1.0\n\ncompaction (keeps from u-2 on)  c-1\n  User asked for the project name; it is tiny-pi.\n\nuser  u-3\n"),
        "{text}"
    );
    // Without a compaction on the path, show says nothing about one.
    let out = session(&["show", EXAMPLE, "a-ver"]);
    assert!(!stdout(&out).contains("compaction"), "{}", stdout(&out));
}
