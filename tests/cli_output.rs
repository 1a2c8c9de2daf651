//! The command line's output rules: the readable form (snapshots of a few sessions,
//! one a real Claude Code session imported), `--json`/`--jsonl` on every verb under one
//! rule, the filters, colour and `NO_COLOR`, errors that name the next step, and the
//! completions and man page.
//!
//! The snapshots are under tests/cli_snapshots/; `SESSION_UPDATE_SNAPSHOTS=1 cargo test
//! --test suite_cli cli_output::` rewrites them from the current output (then read the
//! diff).

use crate::common;

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::*;

const SESSION: &str = env!("CARGO_BIN_EXE_session");

fn run_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(SESSION)
        .args(args)
        .current_dir(dir)
        .env_remove("NO_COLOR")
        .output()
        .expect("the CLI runs")
}

fn stdout(out: &Output) -> String {
    String::from_utf8(out.stdout.clone()).expect("UTF-8")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn ok(dir: &Path, args: &[&str]) -> String {
    let out = run_in(dir, args);
    assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
    stdout(&out)
}

/// A folder holding the example sessions and an imported real Claude Code session,
/// named relatively so that the output does not show the temporary path.
fn fixtures() -> TempDir {
    let dir = temp_dir("cli-output");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for name in ["tiny-pi.jsonl", "tiny-pi-compacted.jsonl"] {
        std::fs::copy(root.join("examples").join(name), dir.join(name)).unwrap();
    }
    let claude = corpus_dir().join("claude-code/spotter-short.jsonl");
    std::fs::copy(&claude, dir.join("claude-code.jsonl")).unwrap();
    let out = run_in(&dir, &["import", "claude-code.jsonl", "claude.jsonl"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // A folder of clean sessions only, for ls and search.
    std::fs::create_dir(dir.join("clean")).unwrap();
    std::fs::copy(
        root.join("examples/tiny-pi.jsonl"),
        dir.join("clean/a.jsonl"),
    )
    .unwrap();
    dir
}

fn snapshot(name: &str, actual: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/cli_snapshots")
        .join(name);
    if std::env::var_os("SESSION_UPDATE_SNAPSHOTS").is_some() {
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (SESSION_UPDATE_SNAPSHOTS=1 writes it)",
            path.display()
        )
    });
    assert_eq!(
        actual, expected,
        "{name} changed (SESSION_UPDATE_SNAPSHOTS=1 rewrites it)"
    );
}

#[test]
fn the_readable_form_matches_its_snapshots() {
    // Rule: without --json/--jsonl every verb prints its readable form, also into a
    // pipe (stable: 80 columns, no colour): roles, wrapped text, tool calls as
    // name(args…), results folded, compactions as their summary, metadata hidden.
    let dir = fixtures();
    for (name, args) in [
        ("tiny-pi.show.txt", vec!["show", "tiny-pi.jsonl"]),
        ("tiny-pi.path.txt", vec!["path", "tiny-pi.jsonl"]),
        ("tiny-pi.tree.txt", vec!["tree", "tiny-pi.jsonl"]),
        ("tiny-pi.leaves.txt", vec!["leaves", "tiny-pi.jsonl"]),
        (
            "compacted.show.txt",
            vec!["show", "tiny-pi-compacted.jsonl", "u-3"],
        ),
        (
            "compacted.messages.txt",
            vec!["messages", "tiny-pi-compacted.jsonl", "u-3"],
        ),
        (
            "compacted.context.txt",
            vec!["context", "tiny-pi-compacted.jsonl", "u-3"],
        ),
        ("claude.show.txt", vec!["show", "claude.jsonl"]),
        ("claude.tree.txt", vec!["tree", "claude.jsonl"]),
        ("claude.leaves.txt", vec!["leaves", "claude.jsonl"]),
    ] {
        let shown = ok(&dir, &args);
        assert!(!shown.contains('\u{1b}'), "{name}: colour in a pipe");
        snapshot(name, &shown);
    }
}

#[test]
fn a_tool_result_is_folded_and_a_long_line_wrapped_to_80_columns() {
    let dir = temp_dir("cli-fold");
    let long = "word ".repeat(40);
    let output = (1..=10)
        .map(|n| format!("line {n}"))
        .collect::<Vec<_>>()
        .join("\\n");
    let lines = [
        format!(r#"{{"id":"u","parentId":null,"timestamp":1,"type":"message","message":{{"role":"user","content":"{long}"}}}}"#),
        r#"{"id":"a","parentId":"u","timestamp":2,"type":"message","message":{"role":"assistant","content":[{"type":"toolCall","id":"c","name":"bash","arguments":{"command":"seq 10"}}]}}"#.to_owned(),
        format!(r#"{{"id":"r","parentId":"a","timestamp":3,"type":"message","message":{{"role":"toolResult","toolCallId":"c","toolName":"bash","content":[{{"type":"text","text":"{output}"}}],"isError":false}}}}"#),
    ];
    write_file(&dir.join("s.jsonl"), (lines.join("\n") + "\n").as_bytes());
    let shown = ok(&dir, &["messages", "s.jsonl"]);
    let mut expected = String::from("user\n");
    // 40 words of 5 characters: 15 a line within 78 columns (80 less the indent).
    for n in [15, 15, 10] {
        expected.push_str(&format!("  {}\n", vec!["word"; n].join(" ")));
    }
    expected.push_str("\nassistant\n  bash(command=\"seq 10\")\n\nbash result\n");
    expected.push_str("  line 1\n  line 2\n  line 3\n  line 4\n  … (6 more lines)\n");
    assert_eq!(shown, expected);
}

/// Every verb, with arguments that succeed; `true` when its result is a list.
fn every_verb(dir: &Path, n: usize) -> Vec<(Vec<String>, bool)> {
    let s = |t: &str| t.to_owned();
    let label = format!("label{n}.jsonl");
    std::fs::copy(dir.join("tiny-pi.jsonl"), dir.join(&label)).unwrap();
    let torn = format!("torn{n}.jsonl");
    let mut bytes = std::fs::read(dir.join("tiny-pi.jsonl")).unwrap();
    bytes.extend_from_slice(b"{\"id\":\"half");
    std::fs::write(dir.join(&torn), bytes).unwrap();
    vec![
        (vec![s("show"), s("tiny-pi.jsonl")], true),
        (vec![s("path"), s("tiny-pi.jsonl")], true),
        (vec![s("messages"), s("tiny-pi.jsonl")], true),
        (vec![s("tree"), s("tiny-pi.jsonl")], true),
        (vec![s("children"), s("tiny-pi.jsonl"), s("u-1")], true),
        (vec![s("leaves"), s("tiny-pi.jsonl")], false),
        (vec![s("ls"), s("clean")], true),
        (vec![s("search"), s("clean"), s("tiny")], false),
        (vec![s("label"), label.clone(), s("a-alt"), s("x")], false),
        (vec![s("context"), s("tiny-pi.jsonl")], false),
        (vec![s("verify"), s("tiny-pi.jsonl")], false),
        (vec![s("salvage"), s("tiny-pi.jsonl")], false),
        (vec![s("repair"), torn], false),
        (vec![s("view"), s("tiny-pi.jsonl")], false),
        (
            vec![
                s("import"),
                s("claude-code.jsonl"),
                format!("imported{n}.jsonl"),
            ],
            false,
        ),
        (
            vec![
                s("export"),
                s("--to"),
                s("pi"),
                s("tiny-pi.jsonl"),
                format!("pi{n}.jsonl"),
            ],
            false,
        ),
        (vec![s("secrets"), s("tiny-pi.jsonl")], false),
        (
            vec![
                s("redact"),
                s("tiny-pi.jsonl"),
                format!("redacted{n}.jsonl"),
            ],
            false,
        ),
        (
            vec![s("copy"), s("tiny-pi.jsonl"), format!("copy{n}.jsonl")],
            false,
        ),
    ]
}

#[test]
fn every_verb_prints_one_json_document_or_one_value_per_line() {
    // The one rule: --json prints one JSON document (a list is one array); --jsonl
    // prints a list's items one per line, and one value on one line; both the same
    // values. Every verb that prints a result follows it.
    let dir = fixtures();
    let help = ok(&dir, &["--help"]);
    let listed: Vec<&str> = help
        .split("Commands:\n")
        .nth(1)
        .unwrap()
        .lines()
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|v| !["completions", "man", "help"].contains(v))
        .collect();
    let covered: Vec<String> = every_verb(&dir, 0)
        .into_iter()
        .map(|(a, _)| a[0].clone())
        .collect();
    assert_eq!(listed, covered, "a verb is missing from this test");
    let (json_runs, jsonl_runs) = (every_verb(&dir, 1), every_verb(&dir, 2));
    for ((json_args, list), (jsonl_args, _)) in json_runs.into_iter().zip(jsonl_runs) {
        let verb = json_args[0].clone();
        let mut args: Vec<&str> = json_args.iter().map(String::as_str).collect();
        args.push("--json");
        let json = ok(&dir, &args);
        let document: serde_json::Value = serde_json::from_str(&json)
            .unwrap_or_else(|e| panic!("{verb} --json is not one JSON document: {e}: {json}"));
        let mut args: Vec<&str> = jsonl_args.iter().map(String::as_str).collect();
        args.push("--jsonl");
        let jsonl = ok(&dir, &args);
        let values: Vec<serde_json::Value> = jsonl
            .lines()
            .map(|l| {
                serde_json::from_str(l)
                    .unwrap_or_else(|e| panic!("{verb} --jsonl line is not JSON: {e}: {l}"))
            })
            .collect();
        if list {
            let items = document
                .as_array()
                .unwrap_or_else(|| panic!("{verb}: {json}"));
            assert!(!items.is_empty(), "{verb}");
            // The array is written one item per line, between its brackets.
            assert_eq!(json.lines().count(), items.len() + 2, "{verb}: {json}");
            assert_eq!(
                items, &values,
                "{verb}: --jsonl is --json's items, one per line"
            );
        } else {
            assert!(document.is_object(), "{verb}: {json}");
            assert_eq!(json.lines().count(), 1, "{verb}: one line");
            assert_eq!(values.len(), 1, "{verb}: {jsonl}");
            // These write, or (search) report what the index read, which differs
            // between two runs; the rest answer the same twice.
            let differ = ["label", "import", "export", "copy", "repair", "search"];
            if !differ.contains(&verb.as_str()) {
                assert_eq!(values[0], document, "{verb}");
            }
        }
    }
}

#[test]
fn kind_role_and_limit_choose_what_is_shown() {
    let dir = fixtures();
    let f = "tiny-pi.jsonl";
    // Readable: metadata hidden by default, shown on request.
    assert!(!ok(&dir, &["path", f]).contains("metadata cwd"));
    assert_eq!(
        ok(&dir, &["path", f, "--kind", "metadata"]),
        "5 entries on the path to meta-cwd (1 shown)\nmeta-cwd  metadata cwd: /workspace/tiny-pi\n"
    );
    // --role: only those messages.
    let users = ok(&dir, &["show", f, "--role", "user"]);
    assert!(users.contains("\nuser  u-1\n"), "{users}");
    assert!(!users.contains("assistant"), "{users}");
    // --limit: the last N after the other filters.
    let ids = |args: &[&str]| -> Vec<String> {
        let out = ok(&dir, args);
        let values: Vec<serde_json::Value> = out
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        values
            .iter()
            .map(|v| v["id"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(
        ids(&["path", f, "--jsonl", "--limit", "2"]),
        ["a-final", "meta-cwd"]
    );
    assert_eq!(
        ids(&["path", f, "--jsonl", "--kind", "message", "--limit", "2"]),
        ["r-read", "a-final"]
    );
    assert_eq!(
        ids(&["path", f, "--jsonl", "--role", "assistant"]),
        ["a-read", "a-final"]
    );
    assert_eq!(
        ids(&["tree", f, "--jsonl", "--kind", "metadata"]),
        ["meta-cwd"]
    );
    assert_eq!(
        ids(&[
            "children",
            f,
            "u-1",
            "--jsonl",
            "--role",
            "assistant",
            "--limit",
            "1"
        ]),
        ["a-alt"]
    );
    // Machines get every kind unless they ask otherwise.
    assert_eq!(ids(&["path", f, "--jsonl"]).len(), 5);
    let out = run_in(&dir, &["path", f, "--kind", "everything"]);
    assert_eq!(out.status.code(), Some(64));
}

#[test]
fn colour_only_when_asked_or_on_a_terminal_and_never_under_no_color() {
    let dir = fixtures();
    let f = "tiny-pi.jsonl";
    assert!(
        !ok(&dir, &["show", f]).contains('\u{1b}'),
        "a pipe gets no colour"
    );
    assert!(!ok(&dir, &["show", f, "--color", "never"]).contains('\u{1b}'));
    let coloured = ok(&dir, &["show", f, "--color=always"]);
    assert!(
        coloured.contains("\u{1b}[1;32muser\u{1b}[0m  \u{1b}[2mu-1\u{1b}[0m\n"),
        "{coloured}"
    );
    // NO_COLOR turns auto off (here already off, as stdout is a pipe: the terminal
    // case is the unit test output::tests), and JSON is never coloured.
    let out = Command::new(SESSION)
        .args(["show", f, "--color", "auto"])
        .current_dir(&dir)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    assert!(!out.stdout.contains(&0x1b));
    assert!(!ok(&dir, &["show", f, "--json", "--color=always"]).contains('\u{1b}'));
}

#[test]
fn errors_name_the_next_step() {
    let dir = fixtures();
    for (args, says) in [
        (vec!["show", "postgres://h/db"], "session ls postgres://"),
        (
            vec!["verify", "--pg", "host=/tmp dbname=x", "s-1"],
            "session copy",
        ),
        (vec!["ls"], "--pg CONNINFO"),
        (
            vec!["show", "--pg", "host=/tmp", "postgres://h/db#s"],
            "give the session id",
        ),
    ] {
        let out = run_in(&dir, &args);
        assert_eq!(out.status.code(), Some(64), "{args:?}");
        assert!(stderr(&out).contains(says), "{args:?}: {}", stderr(&out));
    }
    // An id that is not there: where to find the ids.
    let out = run_in(&dir, &["show", "tiny-pi.jsonl", "nope"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("`session leaves LOCATION`"),
        "{}",
        stderr(&out)
    );
    // Another agent's file: import it first, with the command.
    let out = run_in(&dir, &["show", "claude-code.jsonl"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("session import --from claude-code claude-code.jsonl OUT.jsonl"),
        "{}",
        stderr(&out)
    );
    // Every verb's help has an example.
    for verb in [
        "show", "path", "messages", "tree", "leaves", "ls", "context", "copy",
    ] {
        let help = ok(&dir, &[verb, "--help"]);
        assert!(help.contains("\nExample"), "{verb}: {help}");
    }
}

#[test]
fn completions_and_the_man_page_are_generated_from_the_definitions() {
    let dir = temp_dir("cli-completions");
    for (shell, marker) in [
        ("bash", "_session()"),
        ("zsh", "#compdef session"),
        ("fish", "complete -c session"),
    ] {
        let script = ok(&dir, &["completions", shell]);
        assert!(script.contains(marker), "{shell}");
        for word in ["show", "--jsonl", "--kind", "completions"] {
            assert!(script.contains(word), "{shell} completes {word}");
        }
    }
    let out = run_in(&dir, &["completions", "powershell"]);
    assert_eq!(out.status.code(), Some(64));
    let page = ok(&dir, &["man"]);
    assert!(page.contains(".TH session 1"), "{page}");
    assert!(
        page.contains(".TH SESSION-SHOW"),
        "each verb has its section"
    );
    assert!(page.contains("\\-\\-jsonl"), "the flags are listed");
}

#[test]
fn show_of_the_largest_corpus_file_timing() {
    // On demand (not a test of time): SESSION_TIMING=1 prints how long `session show`
    // of the largest corpus file takes, readable form, into a pipe.
    if std::env::var_os("SESSION_TIMING").is_none() {
        return;
    }
    let dir = temp_dir("cli-timing");
    let largest: PathBuf = ["claude-code", "codex", "pi"]
        .iter()
        .flat_map(|a| std::fs::read_dir(corpus_dir().join(a)).unwrap())
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension() == Some(OsStr::new("jsonl")))
        .max_by_key(|p| std::fs::metadata(p).unwrap().len())
        .unwrap();
    let imported = dir.join("largest.jsonl");
    let out = run_in(
        &dir,
        &[
            "import",
            largest.to_str().unwrap(),
            imported.to_str().unwrap(),
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    for _ in 0..5 {
        let start = std::time::Instant::now();
        let shown = ok(&dir, &["show", imported.to_str().unwrap()]);
        println!(
            "session show {} ({} bytes): {:?}, {} lines",
            largest.display(),
            std::fs::metadata(&imported).unwrap().len(),
            start.elapsed(),
            shown.lines().count()
        );
    }
}
