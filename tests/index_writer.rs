//! Issue 21, the session index's writing side: what the writer of `<file>.idx` does
//! with what it finds beside the session file (links, FIFOs, long names, an orphan), the
//! permissions it gives the index, and an index never vouching for bytes that are
//! gone. Each test failed before its fix, except four that pin behaviour the fix must
//! keep (they passed before too): a link or FIFO at `<file>.idx` is replaced, a
//! killed writer's temporary is reused, and a 252-byte name works without an index.

use crate::common;

use std::ffi::OsStr;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::index::{assert_same, outcome};
use common::*;
use session::{JsonlOptions, ListOptions, State, Store, index_path, list_sessions, repair_jsonl};

const SESSION: &str = env!("CARGO_BIN_EXE_session");

fn no_index() -> JsonlOptions {
    JsonlOptions::from_json(r#"{"index":false}"#).unwrap()
}

/// A session of three entries at `dir/name`, written without an index.
fn session_without_index(dir: &Path, name: &str) -> PathBuf {
    let path = dir.join(name);
    let (store, _) = Store::open_jsonl_with(&path, &no_index()).unwrap();
    store.append(user("a", None, "one")).unwrap();
    store.append(user("b", Some("a"), "two")).unwrap();
    store.append(user("c", Some("b"), "three")).unwrap();
    drop(store);
    assert!(!index_path(&path).exists());
    path
}

/// The entry ids of a read-only open with or without the index; panics unless ready.
fn ids_of(path: &Path, index: bool) -> Vec<String> {
    let options =
        JsonlOptions::from_json(&format!(r#"{{"readOnly":true,"index":{index}}}"#)).unwrap();
    let (store, report) = Store::open_jsonl_with(path, &options).unwrap();
    assert_eq!(report.state, State::Ready, "{:?}", report.warnings);
    ids(&store.entries().unwrap())
        .into_iter()
        .map(str::to_owned)
        .collect()
}

fn is_symlink(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink())
}

fn mkfifo(path: &Path) {
    assert!(Command::new("mkfifo").arg(path).status().unwrap().success());
}

/// Opens a writer (which writes the index at open), appends one entry and closes it
/// (which writes the index again), each step under a watchdog.
fn open_append_close(path: &Path, what: &str) {
    let target = path.to_owned();
    let store = within_a_minute(&format!("{what}: writer open"), move || {
        Store::open_jsonl(&target).map(|(store, _)| store)
    })
    .unwrap();
    let n = store.entries().unwrap().len();
    let parent = store.latest_leaf().unwrap().map(|leaf| leaf.id);
    store
        .append(user(&format!("w{n}"), parent.as_deref(), "more"))
        .unwrap();
    within_a_minute(&format!("{what}: writer close"), move || drop(store));
}

/// `session label FILE TARGET TEXT` under a watchdog; its exit code.
fn cli_label(path: &Path, target: &str, text: &str) -> i32 {
    let (file, target, text) = (path.to_owned(), target.to_owned(), text.to_owned());
    within_a_minute("session label", move || {
        Command::new(SESSION)
            .args([OsStr::new("label"), file.as_os_str(), OsStr::new(&target)])
            .arg(&text)
            .output()
            .unwrap()
            .status
            .code()
            .unwrap_or(-1)
    })
}

// The temporary is created exclusively and never through a link; the rename
// replaces a link at the index name.

#[test]
fn the_index_temporary_never_follows_a_symlink() {
    let dir = temp_dir("idx-tmp-symlink");
    // A link to the session itself: open used to truncate it and fill it with the index.
    let path = session_without_index(&dir, "s.jsonl");
    let before = read_file(&path);
    let temp = dir.join("s.jsonl.idx.tmp");
    std::os::unix::fs::symlink(&path, &temp).unwrap();
    let (store, report) = Store::open_jsonl(&path).unwrap();
    assert_eq!(report.state, State::Ready);
    assert_eq!(
        read_file(&path),
        before,
        "the writer's open wrote through the link"
    );
    drop(store);
    assert_eq!(ids_of(&path, true), ["a", "b", "c"]);
    assert!(is_symlink(&temp), "the link is left alone");
    assert!(index_path(&path).exists(), "the index went to another name");
    assert_same(&path, "after an index written beside a link");

    // A link elsewhere: at open, at close and through `session label`.
    let path = session_without_index(&dir, "t.jsonl");
    let victim = dir.join("victim");
    write_file(&victim, b"keep");
    std::os::unix::fs::symlink(&victim, dir.join("t.jsonl.idx.tmp")).unwrap();
    open_append_close(&path, "link elsewhere");
    assert_eq!(cli_label(&path, "a", "start"), 0);
    assert_eq!(read_file(&victim), b"keep");
    assert_eq!(ids_of(&path, true), ids_of(&path, false));
    assert_same(&path, "after writes beside a link elsewhere");
}

#[test]
fn the_index_rename_replaces_a_symlink_at_the_index_name() {
    let dir = temp_dir("idx-symlink");
    let path = session_without_index(&dir, "s.jsonl");
    let victim = dir.join("victim");
    write_file(&victim, b"keep");
    std::os::unix::fs::symlink(&victim, index_path(&path)).unwrap();
    open_append_close(&path, "link at the index name");
    assert_eq!(read_file(&victim), b"keep");
    assert!(!is_symlink(&index_path(&path)), "the link was replaced");
    assert!(std::fs::metadata(index_path(&path)).unwrap().is_file());
    assert_same(&path, "after an index replaced a link");
}

// The index is as private as its session.

#[test]
fn the_index_has_the_session_files_permissions_never_wider() {
    for mode in [0o600, 0o640, 0o660, 0o644] {
        let dir = temp_dir("idx-mode");
        let path = session_without_index(&dir, "s.jsonl");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        open_append_close(&path, "permissions");
        let (session, index) = (
            std::fs::metadata(&path).unwrap(),
            std::fs::metadata(index_path(&path)).unwrap(),
        );
        assert_eq!(index.mode() & 0o777, mode, "session mode {mode:o}");
        assert_eq!((index.uid(), index.gid()), (session.uid(), session.gid()));
    }
}

// Nothing at an index-related name blocks a writer or is taken for an index.

#[test]
fn a_fifo_at_the_index_temporary_never_blocks_open_close_or_label() {
    let dir = temp_dir("idx-tmp-fifo");
    let path = session_without_index(&dir, "s.jsonl");
    let temp = dir.join("s.jsonl.idx.tmp");
    mkfifo(&temp);
    open_append_close(&path, "FIFO at the temporary");
    assert_eq!(cli_label(&path, "a", "start"), 0);
    assert!(
        std::fs::symlink_metadata(&temp)
            .unwrap()
            .file_type()
            .is_fifo()
    );
    assert!(index_path(&path).exists());
    assert_same(&path, "after writes beside a FIFO");
}

#[test]
fn a_fifo_or_directory_at_the_index_name_never_blocks_nor_is_read() {
    let dir = temp_dir("idx-fifo");
    let path = session_without_index(&dir, "s.jsonl");
    mkfifo(&index_path(&path));
    let target = path.clone();
    let ids = within_a_minute("read-only open beside a FIFO index", move || {
        ids_of(&target, true)
    });
    assert_eq!(ids, ["a", "b", "c"]);
    open_append_close(&path, "FIFO at the index name");
    assert_eq!(cli_label(&path, "a", "start"), 0);
    assert!(
        !std::fs::symlink_metadata(index_path(&path))
            .unwrap()
            .file_type()
            .is_fifo()
    );
    assert_same(&path, "after the FIFO was replaced by an index");

    let path = session_without_index(&dir, "t.jsonl");
    std::fs::create_dir(index_path(&path)).unwrap();
    open_append_close(&path, "directory at the index name");
    assert_eq!(ids_of(&path, true), ["a", "b", "c", "w3"]);
    assert!(index_path(&path).is_dir());
    let leftovers: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn a_temporary_left_by_a_killed_writer_is_reused_not_accumulated() {
    let dir = temp_dir("idx-tmp-stale");
    let path = session_without_index(&dir, "s.jsonl");
    write_file(&dir.join("s.jsonl.idx.tmp"), b"half an ind");
    open_append_close(&path, "stale temporary");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["s.jsonl", "s.jsonl.idx"]);
    assert_same(&path, "after a stale temporary");
}

// An index never vouches for bytes that are no longer in the file.

/// Changes `from` into `to` (same length) in the file, in place, as another program
/// that ignores the lock would.
fn edit_in_place(path: &Path, from: &str, to: &str) {
    assert_eq!(from.len(), to.len());
    let bytes = read_file(path);
    let text = String::from_utf8(bytes).unwrap();
    let at = text.find(from).unwrap();
    let file = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    std::os::unix::fs::FileExt::write_all_at(&file, to.as_bytes(), at as u64).unwrap();
}

#[test]
fn an_edit_made_under_a_writer_never_becomes_a_stale_index() {
    let dir = temp_dir("idx-stale");
    let path = dir.join("s.jsonl");
    {
        let (store, _) = Store::open_jsonl(&path).unwrap();
        store.append(user("a", None, "one")).unwrap();
        store.append(user("b", Some("a"), "two")).unwrap();
        store.append(user("c", Some("b"), "three")).unwrap();
    }
    assert!(index_path(&path).exists());
    // A writer opens through the index (it never reads line b), another program edits
    // line b in place, the writer appends and closes.
    let (store, _) = Store::open_jsonl(&path).unwrap();
    std::thread::sleep(Duration::from_millis(20));
    edit_in_place(&path, "\"two\"", "\"TWO\"");
    store.append(user("d", Some("c"), "four")).unwrap();
    drop(store);
    // The file is valid; every open answers from it, with the index or without.
    assert!(!outcome(&path, false).starts_with("error"));
    assert_same(&path, "after an edit under a writer");
    assert!(outcome(&path, true).contains("TWO"));

    // The same when the edit comes after the writer's append.
    let (store, _) = Store::open_jsonl(&path).unwrap();
    store.append(user("e", Some("d"), "five")).unwrap();
    std::thread::sleep(Duration::from_millis(20));
    edit_in_place(&path, "\"one\"", "\"ONE\"");
    drop(store);
    assert_same(&path, "after an edit after an append");
    assert!(outcome(&path, true).contains("ONE"));
    // And the next writer writes a fresh index again.
    open_append_close(&path, "after the edits");
    assert!(index_path(&path).exists());
    assert_same(&path, "after a fresh index");
}

// Names derived from a session's name fit NAME_MAX.

#[test]
fn a_250_byte_session_name_is_repaired_and_indexed() {
    let dir = temp_dir("idx-long-name");
    let name = format!("{}.jsonl", "é".repeat(61) + &"s".repeat(122));
    assert_eq!(name.len(), 250);
    let path = dir.join(&name);
    let mut bytes = lines(&[U1]).into_bytes();
    bytes.extend_from_slice(b"{\"id\":\"torn");
    write_file(&path, &bytes);
    let report = repair_jsonl(&path).unwrap();
    let backup = report.backup.unwrap();
    assert_eq!(read_file(&backup), b"{\"id\":\"torn");
    let backup_name = backup.file_name().unwrap();
    assert!(backup_name.len() <= 255, "{backup_name:?}");
    assert!(backup_name.to_str().unwrap().ends_with(".tail-1.bak"));
    // A second repair of another torn tail gets another backup.
    std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .and_then(|mut f| std::io::Write::write_all(&mut f, b"{\"id\":\"again"))
        .unwrap();
    let second = repair_jsonl(&path).unwrap().backup.unwrap();
    assert_ne!(second, backup);
    assert_eq!(read_file(&second), b"{\"id\":\"again");
    // The repaired file gets its index (its temporary name is shortened too).
    open_append_close(&path, "250-byte name");
    assert!(index_path(&path).exists());
    assert_same(&path, "a 250-byte name");
}

/// Pins a decision: a session whose index name would exceed NAME_MAX works without one.
#[test]
fn a_252_byte_session_name_works_without_an_index() {
    let dir = temp_dir("idx-longer-name");
    let name = format!("{}.jsonl", "s".repeat(246));
    let path = dir.join(&name);
    open_append_close(&path, "252-byte name");
    open_append_close(&path, "252-byte name, again");
    assert_eq!(ids_of(&path, true), ["w0", "w1"]);
    let names: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
    assert_eq!(names.len(), 1, "only the session file");
}

// Noticed: an index left behind by a deleted session file.

#[test]
fn an_orphaned_index_is_never_listed_and_goes_when_its_session_is_created_again() {
    let dir = temp_dir("idx-orphan");
    let path = session_without_index(&dir, "s.jsonl");
    open_append_close(&path, "first life");
    assert!(index_path(&path).exists());
    std::fs::remove_file(&path).unwrap();
    let listed = list_sessions(&dir, &ListOptions::default()).unwrap();
    assert!(listed.is_empty(), "{listed:?}");
    // A new session at the same name: the orphan is removed when the file is created.
    let (store, _) = Store::open_jsonl(&path).unwrap();
    assert!(!index_path(&path).exists());
    store.append(user("n", None, "new life")).unwrap();
    drop(store);
    assert_eq!(ids_of(&path, true), ["n"]);
    assert_same(&path, "a new session at an orphan's name");
    // A writer whose file is deleted under it leaves no orphan at close.
    let (store, _) = Store::open_jsonl(&path).unwrap();
    store.append(user("m", Some("n"), "more")).unwrap();
    std::fs::remove_file(&path).unwrap();
    drop(store);
    assert!(!index_path(&path).exists());
}

// The fuzz target `index_writer` reaches the writer: its seeds get an index.

#[test]
fn the_index_writer_fuzz_seeds_reach_the_index_writer() {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/index_writer");
    for seed in ["seed-chapter", "seed-chapter-appends", "seed-generated-20"] {
        let data = read_file(&corpus.join(seed));
        assert!(
            common::properties::index_writer_rounds(&data),
            "{seed} left no index"
        );
    }
}
