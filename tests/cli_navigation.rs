//! The navigation verbs of the `session` command line: `tree` stays linear in the
//! file on the shapes that made it quadratic (a 100,000-deep chain, a node with
//! 100,000 children, a deep comb of branches), and `children`, `leaves`, `ls`,
//! `label` print what the library answers. Output size is asserted, never time.

use crate::common;

use std::ffi::OsStr;
use std::process::{Command, Output, Stdio};

use common::{CHAPTER, EXAMPLE_FILE, TempFile, temp_dir, write_file};

const SESSION: &str = env!("CARGO_BIN_EXE_session");

fn run<S: AsRef<OsStr>>(args: &[S]) -> Output {
    Command::new(SESSION)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run session")
}

fn ok(args: &[&OsStr]) -> String {
    let out = run(args);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8 output")
}

fn entry(id: &str, parent: Option<&str>) -> String {
    let parent = parent.map_or("null".to_owned(), |p| format!("\"{p}\""));
    format!(
        r#"{{"id":"{id}","parentId":{parent},"timestamp":1,"type":"message","message":{{"role":"user","content":"x"}}}}"#
    )
}

fn session_file(name: &str, lines: impl Iterator<Item = String>) -> TempFile {
    let path = temp_dir(name).file_path("s.jsonl");
    let mut text = String::new();
    for line in lines {
        text.push_str(&line);
        text.push('\n');
    }
    write_file(&path, text.as_bytes());
    path
}

const N: usize = 100_000;

/// Every line of `out` is at most `max` bytes, and there are `lines` of them.
fn assert_bounded(what: &str, out: &str, lines: usize, max: usize) {
    assert_eq!(out.lines().count(), lines, "{what}: line count");
    let longest = out.lines().map(str::len).max().unwrap_or(0);
    assert!(longest <= max, "{what}: a line of {longest} bytes");
}

#[test]
fn tree_of_a_100k_deep_chain_is_one_line_per_entry_without_indentation() {
    let path = session_file(
        "cli-chain",
        (0..N).map(|i| {
            entry(
                &format!("n-{i}"),
                i.checked_sub(1).map(|p| format!("n-{p}")).as_deref(),
            )
        }),
    );
    let out = ok(&[OsStr::new("tree"), path.as_os_str()]);
    // The old tree indented 3 columns per entry: 15 GB for this file.
    assert_bounded("chain", &out, N, 40);
    assert!(
        out.starts_with("n-0  user: x  *\nn-1  user: x  *\n"),
        "{}",
        &out[..80]
    );
    assert!(out.ends_with("n-99999  user: x  <== leaf\n"));
    assert!(out.len() < N * 24, "{} bytes", out.len());
}

#[test]
fn tree_of_a_node_with_100k_children_is_one_line_per_child() {
    let path = session_file(
        "cli-wide",
        std::iter::once(entry("root", None))
            .chain((0..N).map(|i| entry(&format!("c-{i}"), Some("root")))),
    );
    let out = ok(&[OsStr::new("tree"), path.as_os_str()]);
    assert_bounded("wide", &out, N + 1, 40);
    assert!(out.contains("\n├─ c-0  user: x\n"));
    assert!(out.ends_with("\n└─ c-99999  user: x  <== leaf\n"));
    let out = ok(&[OsStr::new("children"), path.as_os_str(), OsStr::new("root")]);
    assert_bounded("children", &out, N + 1, 60);
}

#[test]
fn tree_indentation_is_capped_on_a_deep_comb_of_branches() {
    // b-i has two children: the leaf l-i and b-(i+1), so every level branches.
    let depth: usize = 20_000;
    let lines = (0..depth).flat_map(|i| {
        let parent = i.checked_sub(1).map(|p| format!("b-{p}"));
        [
            entry(&format!("b-{i}"), parent.as_deref()),
            entry(&format!("l-{i}"), Some(&format!("b-{i}"))),
        ]
    });
    let path = session_file("cli-comb", lines);
    let out = ok(&[OsStr::new("tree"), path.as_os_str(), OsStr::new("b-0")]);
    // 16 levels of 3 columns (up to 3 bytes each), a "[+K] " marker, the line.
    assert_bounded("comb", &out, 2 * depth, 16 * 9 + 8 + 40);
    assert!(
        out.contains("[+19983] "),
        "deep lines say how many levels are left out"
    );
    let out = ok(&[
        OsStr::new("tree"),
        path.as_os_str(),
        OsStr::new("--depth"),
        OsStr::new("2"),
    ]);
    assert_eq!(out.lines().count(), 5, "{out}");
    assert!(out.contains("(+2 below)"), "{out}");
}

fn chapter(name: &str) -> TempFile {
    session_file(name, CHAPTER.iter().map(|l| (*l).to_owned()))
}

#[test]
fn tree_marks_the_leaf_path_and_json_lists_nodes() {
    let path = chapter("cli-chapter");
    let out = ok(&[
        OsStr::new("tree"),
        path.as_os_str(),
        OsStr::new("--leaf"),
        OsStr::new("a-alt"),
    ]);
    assert_eq!(
        out,
        "u-1  user: 读取 README.md，告诉我项目名  *\n\
         ├─ a-read  assistant [1 tool call]: \n\
         │  r-read  toolResult call-1: # tiny-pi\\n\\nA tiny coding agent.\n\
         │  a-final  assistant: 项目名是 tiny-pi\n\
         └─ a-alt  assistant: 我无法读取该文件  <== leaf\n\
         (1 metadata entries hidden: --kind metadata shows them)\n"
    );
    // Metadata on request, drawn where it is.
    let out = ok(&[
        OsStr::new("tree"),
        path.as_os_str(),
        OsStr::new("--leaf"),
        OsStr::new("a-alt"),
        OsStr::new("--kind=message"),
        OsStr::new("--kind=metadata"),
    ]);
    assert_eq!(
        out,
        "u-1  user: 读取 README.md，告诉我项目名  *\n\
         ├─ a-read  assistant [1 tool call]: \n\
         │  r-read  toolResult call-1: # tiny-pi\\n\\nA tiny coding agent.\n\
         │  a-final  assistant: 项目名是 tiny-pi\n\
         │  meta-cwd  metadata cwd: \n\
         └─ a-alt  assistant: 我无法读取该文件  <== leaf\n"
    );
    // Only metadata: its nearest shown ancestor is none, so it is drawn as a root.
    let out = ok(&[
        OsStr::new("tree"),
        path.as_os_str(),
        OsStr::new("--kind"),
        OsStr::new("metadata"),
    ]);
    assert_eq!(out, "meta-cwd  metadata cwd:   <== leaf\n");
    let out = ok(&[OsStr::new("tree"), path.as_os_str(), OsStr::new("--json")]);
    let nodes: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(nodes.as_array().map(Vec::len), Some(6));
    assert_eq!(nodes[5]["id"], "meta-cwd");
    assert_eq!(nodes[5]["onPath"], true);
    assert_eq!(nodes[4].get("onPath"), None);
}

#[test]
fn children_and_leaves_print_the_index_answers() {
    let path = chapter("cli-children");
    let out = ok(&[OsStr::new("children"), path.as_os_str(), OsStr::new("u-1")]);
    assert_eq!(
        out,
        "2 children\n\
         a-read  assistant [1 tool call]:   (1 children)\n\
         a-alt  assistant: 我无法读取该文件  (0 children)\n"
    );
    let out = run(&[OsStr::new("children"), path.as_os_str(), OsStr::new("nope")]);
    assert_eq!(out.status.code(), Some(2));
    let out = ok(&[OsStr::new("leaves"), path.as_os_str()]);
    assert_eq!(
        out,
        "2 leaves (1 metadata leaves hidden: --kind metadata shows them)\n\
         latest by commit: meta-cwd\nlatest by time:   meta-cwd\n\
         a-alt  assistant:   (depth 1)\n"
    );
    let out = ok(&[
        OsStr::new("leaves"),
        path.as_os_str(),
        OsStr::new("--kind=metadata"),
    ]);
    assert_eq!(
        out,
        "2 leaves (1 shown)\nlatest by commit: meta-cwd\nlatest by time:   meta-cwd\n\
         meta-cwd  metadata cwd:   (depth 4)\n"
    );
}

#[test]
fn label_appends_under_the_latest_leaf_and_empty_text_clears() {
    let path = chapter("cli-label");
    let out = ok(&[
        OsStr::new("label"),
        path.as_os_str(),
        OsStr::new("a-alt"),
        OsStr::new("the other way"),
    ]);
    assert_eq!(out, "label of a-alt set by label-6 (seq 6)\n");
    let (store, _) = session::Store::open_jsonl(&path).unwrap();
    let labels = store.labels().unwrap();
    assert_eq!(labels.len(), 1);
    assert_eq!(
        (labels[0].target_id.as_str(), labels[0].label.as_str()),
        ("a-alt", "the other way")
    );
    // Under the latest leaf: "resume the latest" stays on the same branch.
    let latest = store.latest_leaf().unwrap().unwrap();
    assert_eq!(
        (latest.id.as_str(), latest.parent_id.as_deref()),
        ("label-6", Some("meta-cwd"))
    );
    drop(store);
    let out = ok(&[OsStr::new("tree"), path.as_os_str(), OsStr::new("--labels")]);
    assert!(out.contains("└─ a-alt [the other way]  assistant"), "{out}");
    ok(&[
        OsStr::new("label"),
        path.as_os_str(),
        OsStr::new("a-alt"),
        OsStr::new(""),
    ]);
    let (store, _) = session::Store::open_jsonl(&path).unwrap();
    assert_eq!(store.labels().unwrap(), []);
    drop(store);
    let out = run(&[
        OsStr::new("label"),
        path.as_os_str(),
        OsStr::new("nope"),
        OsStr::new("x"),
    ]);
    assert_eq!(out.status.code(), Some(2));
    let missing = path.with_file_name("missing.jsonl");
    let out = run(&[
        OsStr::new("label"),
        missing.as_os_str(),
        OsStr::new("u-1"),
        OsStr::new("x"),
    ]);
    assert_eq!(out.status.code(), Some(3));
    assert!(!missing.exists(), "label never creates a session");
}

#[test]
fn ls_prints_a_table_row_per_session_with_escaped_text() {
    let dir = temp_dir("cli-ls");
    write_file(&dir.join("a.jsonl"), EXAMPLE_FILE.as_bytes());
    let hostile = r#"{"id":"u","parentId":null,"timestamp":1,"type":"message","message":{"role":"user","content":"hi \u001b[2J there"}}"#;
    write_file(&dir.join("b.jsonl"), format!("{hostile}\n").as_bytes());
    write_file(&dir.join("c.jsonl"), b"{oops}\n");
    let out = run(&[
        OsStr::new("ls"),
        dir.as_os_str(),
        OsStr::new("--sort"),
        OsStr::new("path"),
    ]);
    // A damaged session is listed, and the exit code says so.
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8(out.stdout).unwrap();
    let rows: Vec<&str> = text.lines().collect();
    assert_eq!(rows.len(), 4, "{text}");
    assert!(rows[0].starts_with("MODIFIED (UTC)"));
    assert!(
        rows[1].contains("       6 ready") && rows[1].ends_with("读取 README.md，告诉我项目名"),
        "{text}"
    );
    assert!(rows[2].ends_with(r"hi \u001b[2J there"), "{text}");
    assert!(rows[3].contains("corrupt_line"), "{text}");
    assert!(!text.contains('\u{1b}'));
}

/// Issue 10 item 4, for every verb: on a 100,000-deep chain no verb prints more than a
/// small constant times the file (the quadratic `tree` printed 15 GB for 66 MB).
#[test]
fn no_verb_prints_more_than_a_constant_times_the_file_on_a_100k_deep_chain() {
    let path = session_file(
        "linear-verbs",
        (0..N).map(|i| {
            let id = format!("e{i}");
            let parent = (i > 0).then(|| format!("e{}", i - 1));
            entry(&id, parent.as_deref())
        }),
    );
    let file_bytes = std::fs::metadata(&path).unwrap().len() as usize;
    let leaf = format!("e{}", N - 1);
    let file = path.as_os_str();
    let leaf = OsStr::new(&leaf);
    for verb in [
        vec![OsStr::new("show"), file, leaf],
        vec![OsStr::new("path"), file, leaf],
        vec![OsStr::new("messages"), file, leaf],
        vec![OsStr::new("tree"), file],
        vec![OsStr::new("verify"), file],
        vec![OsStr::new("salvage"), file],
        vec![OsStr::new("leaves"), file],
        vec![OsStr::new("children"), file, OsStr::new("e5")],
    ] {
        let out = ok(&verb);
        assert!(
            out.len() <= 2 * file_bytes,
            "{verb:?}: {} bytes of output for a {file_bytes}-byte file",
            out.len()
        );
    }
}
