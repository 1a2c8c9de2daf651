//! The `session` command line, run as a program: the exit-code table verb by verb, a
//! closed stdout, non-UTF-8 arguments, and terminal escapes in what it prints.

use crate::common;

use std::ffi::OsStr;
use std::io::{BufRead, BufReader};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use common::{CHAPTER, EXAMPLE_FILE, TempFile, temp_dir, write_file};

const SESSION: &str = env!("CARGO_BIN_EXE_session");

fn run<I, S>(args: I) -> Output
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    Command::new(SESSION)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run session")
}

fn code(out: &Output) -> i32 {
    out.status
        .code()
        .unwrap_or_else(|| panic!("killed by a signal: {out:?}"))
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The chapter's six entries, every line committed.
fn clean_file(name: &str) -> TempFile {
    let path = temp_dir(name).file_path("s.jsonl");
    write_file(&path, EXAMPLE_FILE.as_bytes());
    path
}

/// Every verb with FILE, and LEAF where it takes one.
fn every_verb(file: &Path, leaf: &str) -> Vec<(&'static str, Vec<PathBuf>)> {
    let f = file.to_path_buf();
    let l = PathBuf::from(leaf);
    vec![
        ("show", vec![f.clone(), l.clone()]),
        ("path", vec![f.clone(), l.clone()]),
        ("messages", vec![f.clone(), l.clone()]),
        ("tree", vec![f.clone()]),
        ("tree", vec![f.clone(), l.clone()]),
        ("children", vec![f.clone(), l]),
        ("leaves", vec![f.clone()]),
        ("view", vec![f.clone(), PathBuf::from("u-1")]),
        ("verify", vec![f.clone()]),
        ("salvage", vec![f.clone()]),
        ("repair", vec![f]),
    ]
}

fn run_verb(verb: &str, args: &[PathBuf]) -> Output {
    let mut all: Vec<&OsStr> = vec![OsStr::new(verb)];
    all.extend(args.iter().map(|a| a.as_os_str()));
    run(all)
}

#[test]
fn every_verb_exits_0_on_a_clean_file() {
    for (verb, args) in every_verb(&clean_file("clean"), "a-final") {
        let out = run_verb(verb, &args);
        assert_eq!(code(&out), 0, "{verb}: {}", stderr(&out));
        assert_eq!(stderr(&out), "", "{verb}");
        assert!(!out.stdout.is_empty(), "{verb}");
    }
    let file = clean_file("clean-label");
    let out = run([
        OsStr::new("label"),
        file.as_os_str(),
        OsStr::new("u-1"),
        OsStr::new("x"),
    ]);
    assert_eq!(code(&out), 0, "label: {}", stderr(&out));
    let out = run([OsStr::new("ls"), file.parent().expect("dir").as_os_str()]);
    assert_eq!(code(&out), 0, "ls: {}", stderr(&out));
}

#[test]
fn every_reading_verb_exits_1_after_printing_on_a_file_that_needs_repair() {
    let path = temp_dir("needs-repair").file_path("s.jsonl");
    let tail = &CHAPTER[5][..20];
    write_file(
        &path,
        format!("{}\n{tail}", CHAPTER[..5].join("\n")).as_bytes(),
    );
    for (verb, args) in every_verb(&path, "a-final") {
        if verb == "repair" {
            continue;
        }
        let out = run_verb(verb, &args);
        assert_eq!(code(&out), 1, "{verb}: {}", stderr(&out));
        assert!(!out.stdout.is_empty(), "{verb} printed nothing");
        assert!(
            stderr(&out).contains("has no terminating newline"),
            "{verb}: {}",
            stderr(&out)
        );
    }
    for verb in ["show", "path", "messages"] {
        let out = run([OsStr::new(verb), path.as_os_str(), OsStr::new("a-final")]);
        assert!(
            stderr(&out).contains("needs repair; the output shows its committed entries only"),
            "{verb}: {}",
            stderr(&out)
        );
    }
    // repair mends it and exits 0; afterwards every verb is clean again.
    let out = run([OsStr::new("repair"), path.as_os_str()]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let out = run([OsStr::new("verify"), path.as_os_str()]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
}

#[test]
fn every_verb_but_salvage_exits_2_on_a_corrupt_file_and_salvage_exits_1() {
    let path = temp_dir("corrupt").file_path("s.jsonl");
    write_file(
        &path,
        format!("{}\nnot json\n{}\n", CHAPTER[0], CHAPTER[1]).as_bytes(),
    );
    for (verb, args) in every_verb(&path, "u-1") {
        let out = run_verb(verb, &args);
        let expected = if verb == "salvage" { 1 } else { 2 };
        assert_eq!(code(&out), expected, "{verb}: {}", stderr(&out));
        if verb != "salvage" {
            assert!(stderr(&out).starts_with("session: "), "{verb}");
        }
    }
}

#[test]
fn every_verb_with_a_leaf_exits_2_when_there_is_no_such_leaf() {
    let path = clean_file("no-leaf");
    for verb in ["show", "path", "messages", "tree", "view"] {
        let out = run([OsStr::new(verb), path.as_os_str(), OsStr::new("nope")]);
        assert_eq!(code(&out), 2, "{verb}: {}", stderr(&out));
        assert!(out.stdout.is_empty(), "{verb}");
    }
}

#[test]
fn every_verb_exits_3_on_a_missing_file() {
    let path = temp_dir("missing").file_path("absent.jsonl");
    for (verb, args) in every_verb(&path, "u-1") {
        let out = run_verb(verb, &args);
        assert_eq!(code(&out), 3, "{verb}: {}", stderr(&out));
        assert!(!path.exists(), "{verb} created the file");
    }
    let out = run([
        OsStr::new("label"),
        path.as_os_str(),
        OsStr::new("u-1"),
        OsStr::new("x"),
    ]);
    assert_eq!(code(&out), 3, "label: {}", stderr(&out));
    assert!(!path.exists(), "label created the file");
    let out = run([OsStr::new("ls"), path.as_os_str()]);
    assert_eq!(code(&out), 3, "ls: {}", stderr(&out));
}

#[test]
fn repair_exits_4_while_a_writer_holds_the_file() {
    let path = clean_file("locked");
    let (_writer, _) = session::Store::open_jsonl(&path).expect("open as writer");
    let out = run([OsStr::new("repair"), path.as_os_str()]);
    assert_eq!(code(&out), 4, "{}", stderr(&out));
    let out = run([
        OsStr::new("label"),
        path.as_os_str(),
        OsStr::new("u-1"),
        OsStr::new("x"),
    ]);
    assert_eq!(code(&out), 4, "{}", stderr(&out));
    // Readers never lock, so they are not refused.
    let out = run([OsStr::new("verify"), path.as_os_str()]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
}

#[test]
fn usage_errors_exit_64_and_help_exits_0() {
    let file = clean_file("usage");
    let f = file.as_os_str();
    let cases: Vec<Vec<&OsStr>> = vec![
        vec![],
        vec![OsStr::new("bogus")],
        vec![OsStr::new("show")],
        vec![OsStr::new("verify")],
        vec![OsStr::new("verify"), f, f],
        vec![OsStr::new("tree"), f, OsStr::new("a"), OsStr::new("b")],
        vec![OsStr::from_bytes(b"ver\xffify"), f],
    ];
    for args in cases {
        let out = run(&args);
        assert_eq!(code(&out), 64, "{args:?}");
        assert!(stderr(&out).contains("Usage:"), "{args:?}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
    for help in [&["-h"][..], &["--help"], &["help"]] {
        let out = run(help);
        assert_eq!(code(&out), 0, "{help:?}");
        assert!(String::from_utf8_lossy(&out.stdout).contains("Usage:"));
        assert_eq!(stderr(&out), "");
    }
}

#[test]
fn an_unknown_flag_is_a_usage_error_with_a_suggestion() {
    let file = clean_file("bad-flag");
    // `--lables` was taken as a leaf id.
    let out = run([OsStr::new("tree"), file.as_os_str(), OsStr::new("--lables")]);
    assert_eq!(code(&out), 64, "{}", stderr(&out));
    assert!(out.stdout.is_empty());
    let err = stderr(&out);
    assert!(
        err.contains("'--lables'") && err.contains("'--labels'"),
        "{err}"
    );
    assert!(err.contains("Usage: session tree"), "{err}");
    let out = run([
        OsStr::new("tree"),
        file.as_os_str(),
        OsStr::new("--bad-flag"),
    ]);
    assert_eq!(code(&out), 64, "{}", stderr(&out));
}

#[test]
fn version_prints_the_crates_version() {
    for flag in ["--version", "-V"] {
        let out = run([flag]);
        assert_eq!(code(&out), 0);
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            format!("session {}\n", env!("CARGO_PKG_VERSION"))
        );
    }
}

#[test]
fn each_verb_prints_its_own_usage_with_help() {
    for verb in [
        "show", "path", "messages", "tree", "children", "leaves", "ls", "label", "context",
        "verify", "salvage", "repair", "import", "export", "copy",
    ] {
        for args in [[verb, "--help"], ["help", verb]] {
            let out = run(args);
            assert_eq!(code(&out), 0, "{args:?}");
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(
                text.contains(&format!("Usage: session {verb}")),
                "{args:?}: {text}"
            );
        }
    }
}

#[test]
fn a_verb_without_leaf_reads_the_latest_leaf() {
    let file = clean_file("no-leaf");
    // The chapter's tree: its latest leaf by commit order is meta-cwd.
    let latest = "meta-cwd";
    for verb in ["show", "path", "messages", "context"] {
        let without = run([OsStr::new(verb), file.as_os_str()]);
        let with = run([OsStr::new(verb), file.as_os_str(), OsStr::new(latest)]);
        assert_eq!(code(&without), 0, "{verb}: {}", stderr(&without));
        assert_eq!(
            String::from_utf8_lossy(&without.stdout),
            String::from_utf8_lossy(&with.stdout),
            "{verb}"
        );
    }
    // A session with no entries has no latest leaf: the request fails (2), said in words.
    let empty = temp_dir("no-leaf-empty").file_path("s.jsonl");
    write_file(&empty, b"");
    let out = run([OsStr::new("show"), empty.as_os_str()]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(stderr(&out).contains("no latest leaf"), "{}", stderr(&out));
}

#[test]
fn flags_come_anywhere_and_take_their_value_either_way() {
    let file = clean_file("flags");
    let f = file.as_os_str();
    let expected = run([
        OsStr::new("tree"),
        f,
        OsStr::new("--depth"),
        OsStr::new("1"),
    ]);
    assert_eq!(code(&expected), 0, "{}", stderr(&expected));
    for args in [
        vec![OsStr::new("tree"), f, OsStr::new("--depth=1")],
        vec![
            OsStr::new("tree"),
            OsStr::new("--depth"),
            OsStr::new("1"),
            f,
        ],
    ] {
        let out = run(&args);
        assert_eq!(code(&out), 0, "{args:?}: {}", stderr(&out));
        assert_eq!(out.stdout, expected.stdout, "{args:?}");
    }
}

/// The lines of the exit-code table in `--help`.
fn help_exit_table() -> Vec<String> {
    let out = run(["--help"]);
    let help = String::from_utf8(out.stdout).expect("UTF-8 help");
    let table = help
        .split("exit codes (the same for every verb):\n")
        .nth(1)
        .expect("an exit-code table in --help");
    table.lines().map(str::to_owned).collect()
}

#[test]
fn help_and_readme_list_the_same_exit_codes() {
    let table = help_exit_table();
    let codes: Vec<&str> = table
        .iter()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|w| w.parse::<u8>().is_ok())
        .collect();
    assert_eq!(codes, ["0", "1", "2", "3", "4", "64", "141"]);
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md"))
        .expect("README.md");
    for line in &table {
        assert!(
            readme.contains(line.as_str()),
            "README.md lacks the --help exit-code line {line:?}"
        );
    }
}

/// A linear session long enough that its output cannot fit in a pipe's buffer.
fn long_file(name: &str) -> (TempFile, String) {
    let path = temp_dir(name).file_path("s.jsonl");
    let text = "x".repeat(200);
    let mut lines = String::new();
    let mut parent: Option<String> = None;
    for i in 0..1500 {
        let id = format!("m-{i}");
        lines.push_str(&common::user(&id, parent.as_deref(), &text));
        lines.push('\n');
        parent = Some(id);
    }
    write_file(&path, lines.as_bytes());
    (path, parent.unwrap_or_default())
}

#[test]
fn a_closed_stdout_ends_quietly_with_141() {
    let (path, leaf) = long_file("pipe");
    for verb in ["show", "path", "messages", "tree"] {
        let mut child = Command::new(SESSION)
            .args([OsStr::new(verb), path.as_os_str(), OsStr::new(&leaf)])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn");
        // Read one line, as `| head -1` does, then close the pipe.
        let stdout = child.stdout.take().expect("stdout");
        let mut first = String::new();
        BufReader::new(stdout)
            .read_line(&mut first)
            .expect("first line");
        assert!(!first.is_empty(), "{verb}");
        let out = child.wait_with_output().expect("wait");
        assert_eq!(code(&out), 141, "{verb}: {}", stderr(&out));
        assert_eq!(stderr(&out), "", "{verb}");
    }
}

#[test]
fn a_full_stdout_is_an_io_error_exit_3() {
    let path = clean_file("full");
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .expect("/dev/full");
    let out = Command::new(SESSION)
        .args([OsStr::new("tree"), path.as_os_str()])
        .stdout(full)
        .output()
        .expect("run");
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    assert!(stderr(&out).starts_with("session: cannot write the output: "));
}

#[test]
fn a_non_utf8_file_name_works() {
    let dir = temp_dir("non-utf8");
    let path = dir.join(OsStr::from_bytes(b"s\xff\xfe.jsonl"));
    write_file(&path, EXAMPLE_FILE.as_bytes());
    for (verb, args) in every_verb(&path, "a-final") {
        let out = run_verb(verb, &args);
        assert_eq!(code(&out), 0, "{verb}: {}", stderr(&out));
    }
}

#[test]
fn a_non_utf8_leaf_is_a_usage_error() {
    let path = clean_file("non-utf8-leaf");
    for verb in ["show", "path", "messages", "tree"] {
        let out = run([
            OsStr::new(verb),
            path.as_os_str(),
            OsStr::from_bytes(b"a-\xff"),
        ]);
        assert_eq!(code(&out), 64, "{verb}: {}", stderr(&out));
        assert!(
            stderr(&out).starts_with("session: LEAF is not UTF-8 text"),
            "{verb}: {}",
            stderr(&out)
        );
    }
}

/// What a crafted file could make a terminal do: ESC sequences (clear the screen,
/// set the title), a one-byte C1 CSI, DEL, a bidi override, a line separator.
const HOSTILE: [&str; 6] = [
    "\u{1b}", "\u{7}", "\u{9b}", "\u{7f}", "\u{202e}", "\u{2028}",
];

fn assert_terminal_safe(what: &str, bytes: &[u8]) {
    let text = String::from_utf8_lossy(bytes);
    for bad in HOSTILE {
        assert!(!text.contains(bad), "{what} printed {bad:?} raw: {text}");
    }
}

#[test]
fn text_from_the_file_reaches_the_terminal_escaped() {
    let path = temp_dir("escapes").file_path("s.jsonl");
    let root = r#"{"id":"r\u001b]0;pwned\u0007","parentId":null,"timestamp":1,"type":"message","message":{"role":"user","content":"hi \u001b[2J\u009b31m\u007f\u202e\u2028"}}"#;
    let meta = r#"{"id":"k\u001b[2J","parentId":"r\u001b]0;pwned\u0007","timestamp":2,"type":"metadata","key":"ke\u001b[31my\u009b","value":"v\u001b[2J"}"#;
    write_file(&path, format!("{root}\n{meta}\n").as_bytes());
    let leaf = "k\u{1b}[2J";
    // Metadata is shown on request: every kind is printed here.
    let every_kind = ["--kind", "message", "--kind", "metadata"].map(OsStr::new);
    for verb in ["show", "tree", "path", "leaves"] {
        let mut args = vec![OsStr::new(verb), path.as_os_str()];
        if verb != "leaves" {
            args.push(OsStr::new(leaf));
        }
        args.extend(every_kind);
        let out = run(args);
        assert_eq!(code(&out), 0, "{verb}: {}", stderr(&out));
        assert_terminal_safe(verb, &out.stdout);
        assert_terminal_safe(verb, &out.stderr);
    }
    let mut args = vec![OsStr::new("show"), path.as_os_str(), OsStr::new(leaf)];
    args.extend(every_kind);
    let out = run(args);
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(shown.contains("user  r\\x1b]0;pwned\\x07\n"), "{shown}");
    assert!(
        shown.contains("metadata ke\\x1b[31my\\x9b  k\\x1b[2J\n  v\\x1b[2J\n"),
        "{shown}"
    );
    let mut args = vec![OsStr::new("tree"), path.as_os_str()];
    args.extend(every_kind);
    let out = run(args);
    let tree = String::from_utf8_lossy(&out.stdout);
    assert!(
        tree.contains(r"k\x1b[2J  metadata ke\x1b[31my\x9b: "),
        "{tree}"
    );
    // A damaged line with raw ESC bytes, reported by verify (an error) and salvage.
    let damaged = temp_dir("escapes-damaged").file_path("s.jsonl");
    write_file(
        &damaged,
        format!("{root}\n{{\"bad\u{1b}[2J\u{9b}\n").as_bytes(),
    );
    for verb in ["verify", "salvage"] {
        let out = run([OsStr::new(verb), damaged.as_os_str()]);
        assert_terminal_safe(verb, &out.stdout);
        assert_terminal_safe(verb, &out.stderr);
    }
    // An id given on the command line is echoed escaped in the error.
    let out = run([
        OsStr::new("show"),
        path.as_os_str(),
        OsStr::new("no\u{1b}[2J"),
    ]);
    assert_eq!(code(&out), 2);
    assert_terminal_safe("show (error)", &out.stderr);
}

#[test]
fn json_output_stays_the_same_json() {
    let path = temp_dir("escapes-json").file_path("s.jsonl");
    let root = r#"{"id":"r\u001b","parentId":null,"timestamp":1,"type":"message","message":{"role":"user","content":"hi \u001b[2J\u009b\u202e"}}"#;
    write_file(&path, format!("{root}\n").as_bytes());
    let out = run([
        OsStr::new("path"),
        path.as_os_str(),
        OsStr::new("r\u{1b}"),
        OsStr::new("--json"),
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let entries: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(entries[0]["id"], "r\u{1b}");
    assert_eq!(
        entries[0]["message"]["content"],
        "hi \u{1b}[2J\u{9b}\u{202e}"
    );
    let out = run([
        OsStr::new("messages"),
        path.as_os_str(),
        OsStr::new("r\u{1b}"),
        OsStr::new("--jsonl"),
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_terminal_safe("messages --jsonl", &out.stdout);
    let shown = String::from_utf8(out.stdout).expect("UTF-8");
    let message: serde_json::Value = serde_json::from_str(&shown).expect("JSON");
    assert_eq!(message["content"], "hi \u{1b}[2J\u{9b}\u{202e}");
}

#[test]
fn show_prints_an_extension_role_by_its_own_name() {
    let path = temp_dir("extension-role").file_path("s.jsonl");
    let root = r#"{"id":"u","parentId":null,"timestamp":1,"type":"message","message":{"role":"user","content":"hi"}}"#;
    let ext = r#"{"id":"x","parentId":"u","timestamp":2,"type":"message","message":{"role":"bashExecution","command":"ls"}}"#;
    write_file(&path, format!("{root}\n{ext}\n").as_bytes());
    let out = run([OsStr::new("show"), path.as_os_str(), OsStr::new("x")]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(shown.contains("\nbashExecution  x\n  $ ls\n"), "{shown}");
    assert!(!shown.contains("\nextension"), "{shown}");
    let out = run([OsStr::new("path"), path.as_os_str(), OsStr::new("x")]);
    let listed = String::from_utf8_lossy(&out.stdout);
    assert_eq!(listed, "u  user: hi\nx  bashExecution: ls\n");
}

#[test]
fn view_prints_the_page_or_writes_a_new_file_and_never_replaces_one() {
    let path = clean_file("view");
    let out = run([OsStr::new("view"), path.as_os_str(), OsStr::new("a-alt")]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let page = String::from_utf8(out.stdout).expect("UTF-8");
    assert!(page.starts_with("<!DOCTYPE html>"));
    assert!(
        page.contains("<title>s.jsonl</title>"),
        "titled with the file's name"
    );
    assert!(page.contains(r#""leaf":"a-alt""#));

    let html = path.with_file_name("s.html");
    let args = [
        OsStr::new("view"),
        path.as_os_str(),
        OsStr::new("-o"),
        html.as_os_str(),
    ];
    let out = run(args);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(out.stdout.is_empty());
    let written = std::fs::read_to_string(&html).expect("the page");
    assert!(
        written.contains(r#""leaf":"meta-cwd""#),
        "the latest leaf by default"
    );

    std::fs::write(&html, "mine").expect("write");
    let out = run(args);
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(&html).expect("kept"), "mine");
}
