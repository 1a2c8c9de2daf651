//! The one harness of the integration tests: the chapter's fixed tree, entry builders,
//! temporary folders and file helpers (here), the fault-injecting file ([`faults`]), the
//! reliability harness's generator and measurements ([`harness`]), and the properties the
//! fuzz targets share with the corpus replay ([`properties`]), and the byte-counting
//! listing I/O ([`list_io`], which the navigation benchmark includes too). Each test
//! crate declares it once in its root (`mod common;`); its modules `use crate::common`.
#![allow(dead_code, unused_imports)]

pub mod export;
pub mod faults;
pub mod harness;
pub mod index;
pub mod list_io;
pub mod pg;
pub mod powerloss;
pub mod properties;
pub mod secrets;

use std::path::{Path, PathBuf};

pub use faults::*;
pub use harness::*;

/// The example session (docs/contract.md §1), byte for byte as checked in: the one copy
/// of the chapter's tree that every test reads.
pub const EXAMPLE_FILE: &str = include_str!("../../examples/tiny-pi.jsonl");

/// Line `n` (from 0) of [`EXAMPLE_FILE`], without its `\n`; at compile time, so the
/// entries below stay constants.
const fn example_line(n: usize) -> &'static str {
    let bytes = EXAMPLE_FILE.as_bytes();
    let (mut i, mut start, mut line) = (0, 0, 0);
    while i < bytes.len() {
        if bytes[i] == b'\n' {
            if line == n {
                let (head, _) = EXAMPLE_FILE.split_at(i);
                return head.split_at(start).1;
            }
            line += 1;
            start = i + 1;
        }
        i += 1;
    }
    panic!("the example has fewer lines")
}

/// The chapter's fixed tree, in append order (docs/contract.md §1).
pub const U1: &str = example_line(0);
pub const A_READ: &str = example_line(1);
pub const R_READ: &str = example_line(2);
pub const A_FINAL: &str = example_line(3);
pub const A_ALT: &str = example_line(4);
pub const META_CWD: &str = example_line(5);

pub const CHAPTER: [&str; 6] = [U1, A_READ, R_READ, A_FINAL, A_ALT, META_CWD];

/// The message member of a fixture line.
pub fn message_of(line: &str) -> &str {
    let start = line.find(r#""message":"#).expect("a message entry") + r#""message":"#.len();
    &line[start..line.len() - 1]
}

/// A small valid entry: a user message with `text`, child of `parent` (a root when
/// `None`). Ids and text are JSON-escaped.
pub fn user(id: &str, parent: Option<&str>, text: &str) -> String {
    let quote = |s: &str| serde_json::to_string(s).expect("a string serialises");
    let parent = parent.map_or_else(|| "null".to_owned(), quote);
    format!(
        r#"{{"id":{},"parentId":{parent},"timestamp":1,"type":"message","message":{{"role":"user","content":{}}}}}"#,
        quote(id),
        quote(text)
    )
}

/// A line from *another* session: valid JSON and a valid entry, whose parent is not in
/// ours (T2's foreign line).
pub const FOREIGN: &str = r#"{"id":"x-7","parentId":"x-6","timestamp":99,"type":"message","message":{"role":"user","content":"from another session"}}"#;

/// `lines` joined, each followed by `\n`.
pub fn jsonl(lines: &[&str]) -> Vec<u8> {
    lines
        .iter()
        .flat_map(|l| [l.as_bytes(), b"\n"].concat())
        .collect()
}

/// A message of pi's `buildSessionContext` as libsession writes the same message: pi's
/// `compactionSummary` is our summary message (a user message with one text block and
/// the compaction's timestamp); every other message is the same JSON.
pub fn pi_message_as_ours(pi: &serde_json::Value) -> serde_json::Value {
    if pi["role"] == "compactionSummary" {
        serde_json::json!({
            "role": "user",
            "content": [{"type": "text", "text": pi["summary"]}],
            "timestamp": pi["timestamp"],
        })
    } else {
        pi.clone()
    }
}

/// Runs `op` on another thread; fails the test if it has not returned in a minute (a
/// watchdog for calls that must never block).
pub fn within_a_minute<T: Send + 'static>(
    what: &str,
    op: impl FnOnce() -> T + Send + 'static,
) -> T {
    let (done, result) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = done.send(op());
    });
    result
        .recv_timeout(std::time::Duration::from_secs(60))
        .unwrap_or_else(|_| panic!("{what} hung"))
}

/// The real session files of other agents, `tests/interop/corpus/` (provenance in its
/// README): the folder.
pub fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/interop/corpus")
}

/// The hand-made session file `name` of `tests/interop/fixtures/`.
pub fn interop_fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/interop/fixtures")
        .join(name)
}

/// Every `*.jsonl` under `corpus_dir()/folder` (`""`: the whole corpus), sub-folders
/// included (Claude Code's sub-agent files), sorted.
pub fn corpus_files(folder: &str) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut stack = vec![corpus_dir().join(folder)];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "jsonl") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// A corpus file imported with format detection: its name under `corpus_dir()`, its
/// entries and the import's resume leaf.
pub fn import_corpus_file(file: &Path) -> (String, Vec<session::Entry>, String) {
    let name = file
        .strip_prefix(corpus_dir())
        .unwrap()
        .display()
        .to_string();
    let (entries, leaf) = import_text(&std::fs::read(file).unwrap());
    (name, entries, leaf)
}

/// Another agent's session text imported with format detection: its entries and the
/// import's resume leaf.
pub fn import_text(text: &[u8]) -> (Vec<session::Entry>, String) {
    let imported = session::interop::import(None, text).unwrap();
    let leaf = imported
        .report
        .resume_leaf_id
        .clone()
        .expect("a resume leaf");
    let entries = session::parse_entries(format!("[{}]", imported.lines.join(","))).unwrap();
    (entries, leaf)
}

/// Whether `node` runs (the interop tests against other agents' own code need it).
pub fn node_available() -> bool {
    std::process::Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// `npm ci` in `dir` unless `installed` (a path under it) already exists.
pub fn npm_ci_unless_installed(dir: &Path, installed: &[&str]) {
    if installed.iter().all(|p| dir.join(p).exists()) {
        return;
    }
    let status = std::process::Command::new("npm")
        .args(["ci", "--no-audit", "--no-fund"])
        .current_dir(dir)
        .status()
        .expect("npm runs");
    assert!(status.success(), "npm ci in {} failed", dir.display());
}

/// The names in `dir`, sorted.
pub fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("the folder can be read")
        .map(|e| {
            e.expect("a folder entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    names.sort();
    names
}

/// A fresh, empty folder under the system temp folder whose name contains `name`,
/// removed with its contents when the returned guard is dropped. The guard
/// dereferences to the folder's path, so keep it in a variable for as long as the
/// folder is used (`temp_dir("x").join("s.jsonl")` would remove the folder at once).
pub fn temp_dir(name: &str) -> TempDir {
    let dir = tempfile::Builder::new()
        .prefix(&format!("libsession-test-{name}-"))
        .tempdir()
        .expect("temp dir");
    TempDir(dir)
}

/// A [`temp_dir`]: the folder lives as long as this guard.
pub struct TempDir(tempfile::TempDir);

impl std::ops::Deref for TempDir {
    type Target = Path;

    fn deref(&self) -> &Path {
        self.0.path()
    }
}

impl AsRef<Path> for TempDir {
    fn as_ref(&self) -> &Path {
        self.0.path()
    }
}

impl TempDir {
    /// The folder's path (as `tempfile::TempDir::path`).
    pub fn path(&self) -> &Path {
        self.0.path()
    }

    /// The folder's path, no longer removed by this guard: for a folder that whoever
    /// keeps it removes itself (a PostgreSQL cluster, stopped at the binary's exit).
    pub fn keep(self) -> PathBuf {
        self.0.keep()
    }

    /// The path of `file_name` in this folder, keeping the folder as long as the path
    /// (for helpers that return a session file's path).
    pub fn file_path(self, file_name: &str) -> TempFile {
        TempFile {
            path: self.join(file_name),
            _dir: self,
        }
    }
}

/// A path in a [`temp_dir`] that owns the folder: it is removed when this drops.
pub struct TempFile {
    path: PathBuf,
    _dir: TempDir,
}

impl std::ops::Deref for TempFile {
    type Target = Path;

    fn deref(&self) -> &Path {
        &self.path
    }
}

impl AsRef<Path> for TempFile {
    fn as_ref(&self) -> &Path {
        &self.path
    }
}

impl AsRef<std::ffi::OsStr> for TempFile {
    fn as_ref(&self) -> &std::ffi::OsStr {
        self.path.as_os_str()
    }
}

/// The name libtest gives test `name` of the module `module` (pass `module_path!()`):
/// the module's path without the crate's name, so that a test that runs its own binary
/// again for one test (`--exact`) names it right whichever test crate holds the file.
pub fn test_name(module: &str, name: &str) -> String {
    match module.split_once("::") {
        Some((_, inner)) => format!("{inner}::{name}"),
        None => name.to_owned(),
    }
}

pub fn write_file(path: &Path, bytes: &[u8]) {
    std::fs::write(path, bytes).expect("write fixture");
}

pub fn read_file(path: &Path) -> Vec<u8> {
    std::fs::read(path).expect("read file")
}

/// The ids of a list of entries.
pub fn ids(entries: &[session::Entry]) -> Vec<&str> {
    entries.iter().map(|e| e.id()).collect()
}

/// Appends, from `threads` threads at once, a chain of `per_thread` user entries
/// `t{t}-{i}` each, the first a child of `root` (or a root). After each append,
/// `also(store, t, i, id)` runs on the same thread (for attempts that must fail alone).
/// Returns every receipt.
pub fn append_chains(
    store: &session::Store,
    threads: usize,
    per_thread: usize,
    root: Option<&str>,
    also: impl Fn(&session::Store, usize, usize, &str) + Sync,
) -> Vec<session::Receipt> {
    let barrier = std::sync::Barrier::new(threads);
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let (barrier, also) = (&barrier, &also);
                s.spawn(move || {
                    barrier.wait();
                    let mut receipts = Vec::new();
                    let mut parent = root.map(str::to_owned);
                    for i in 0..per_thread {
                        let id = format!("t{t}-{i}");
                        receipts.push(
                            store
                                .append(user(&id, parent.as_deref(), "x"))
                                .expect("append"),
                        );
                        also(store, t, i, &id);
                        parent = Some(id);
                    }
                    receipts
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("thread"))
            .collect()
    })
}

/// Asserts that the file at `path` holds exactly `count` lines, each an entry, and that
/// each receipt's `seq` is its entry's line index: file order is commit order.
pub fn assert_file_order_is_seq_order(path: &Path, receipts: &[session::Receipt], count: usize) {
    let text = String::from_utf8(read_file(path)).expect("UTF-8");
    let file_ids: Vec<String> = text
        .lines()
        .map(|l| {
            session::parse_entry(l)
                .expect("every line parses")
                .id()
                .to_owned()
        })
        .collect();
    assert_eq!(file_ids.len(), count);
    for r in receipts {
        assert_eq!(file_ids[r.seq as usize], r.id, "file order = seq order");
    }
}

/// Cuts `path` back to its last `\n` (the committed prefix): what a caller's repair
/// does. The library has no repair operation of its own yet.
pub fn truncate_to_committed(path: &Path) {
    let bytes = std::fs::read(path).expect("read");
    let keep = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .expect("open for repair");
    file.set_len(keep as u64).expect("truncate");
}

/// The text of a file holding `items`, one per line, each ended by `\n`.
pub fn lines(items: &[&str]) -> String {
    items.iter().map(|l| format!("{l}\n")).collect()
}

/// Options for a read-only open (no lock, no writes).
pub fn read_only() -> session::JsonlOptions {
    session::JsonlOptions {
        read_only: true,
        ..session::JsonlOptions::default()
    }
}

/// Options for a salvage open (load every good entry of a damaged file).
pub fn salvage() -> session::JsonlOptions {
    session::JsonlOptions {
        salvage: true,
        ..session::JsonlOptions::default()
    }
}
