//! What a store opened through its session index returns is checked against the lines it
//! comes from (issue 21). Every read of a covered line from disk — the first or any later
//! one, streamed or cached, before or after the cache is trimmed — is checked against its
//! record's checksum: a line that changed is `corrupt_line` with its line number, never
//! an answer built from the changed bytes. Navigation checks the line of every entry it
//! returns, its label's line included. What the index derives from *other* lines (which
//! entries are children or leaves, depth, child count) is never stale at open: the
//! index records the file's change time, which every edit moves — even one that keeps
//! the size and puts the modification time back — and an index whose file changed is
//! not used (round 4, docs/contract.md §3).

use crate::common;

use std::path::Path;

use common::index::{file_id, read_only_with_index};
use common::*;
use session::{ContextOptions, Error, JsonlOptions, State, Store, TreeOptions, index_path};

/// A session of `n` entries whose text is `"entry {i} "` repeated `repeat` times, in a
/// chain with a branch every tenth entry (e0010's parent is e0008, so e0009 is a leaf).
fn chain(path: &Path, n: usize, repeat: usize) {
    let (store, _) = Store::open_jsonl(path).unwrap();
    for i in 0..n {
        let parent = match i {
            0 => None,
            i if i % 10 == 0 => Some(format!("e{:04}", i - 2)),
            i => Some(format!("e{:04}", i - 1)),
        };
        let text = format!("entry {i} ").repeat(repeat);
        store
            .append(user(&format!("e{i:04}"), parent.as_deref(), &text))
            .unwrap();
    }
}

/// Rewrites, in place, the first `from` in the line of entry `id` into `to` (of the same
/// length), as another program would; with `keep_mtime`, puts the modification time
/// back. Returns the offset of the change.
fn edit_line(path: &Path, id: &str, from: &str, to: &str, keep_mtime: bool) -> usize {
    assert_eq!(from.len(), to.len());
    let text = String::from_utf8(read_file(path)).unwrap();
    let start = text.find(&format!(r#"{{"id":"{id}""#)).unwrap();
    let end = start + text[start..].find('\n').unwrap();
    let at = start + text[start..end].find(from).unwrap();
    let modified = std::fs::metadata(path).unwrap().modified().unwrap();
    let file = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    std::os::unix::fs::FileExt::write_all_at(&file, to.as_bytes(), at as u64).unwrap();
    if keep_mtime {
        file.set_modified(modified).unwrap();
    } else {
        file.set_modified(modified + std::time::Duration::from_secs(1))
            .unwrap();
    }
    at
}

/// Fails unless `at..at + len` misses the 16 sampled regions of 256 bytes and the last
/// line that open compares: the change is one the checks at open cannot see.
fn assert_outside_the_open_checks(path: &Path, at: usize, len: usize) {
    let bytes = read_file(path);
    let size = bytes.len();
    for k in 0..16 {
        let region = size / 16 * k;
        assert!(
            at + len <= region || at >= region + 256,
            "the change at {at} is in sampled region {k}"
        );
    }
    let last_line = bytes[..size - 1].iter().rposition(|&b| b == b'\n').unwrap();
    assert!(at < last_line, "the change is in the last line");
}

/// Fails unless `result` is `corrupt_line` at `line`.
fn assert_corrupt<T: std::fmt::Debug>(what: &str, result: Result<T, Error>, line: u64) {
    match result {
        Err(Error::CorruptLine { line: at, .. }) if at == line => {}
        other => {
            let got: String = format!("{other:?}").chars().take(300).collect();
            panic!("{what}: expected corrupt_line at line {line}, got {got}")
        }
    }
}

/// Every call that reads the whole path to `leaf` or every entry, and `children` of
/// `parent` (whose children include the changed line), as results to compare.
fn reads_through(
    store: &Store,
    leaf: &str,
    parent: &str,
) -> Vec<(&'static str, Result<String, Error>)> {
    let text = |bytes: Vec<u8>| String::from_utf8_lossy(&bytes).into_owned();
    vec![
        ("path_to", store.path_to(leaf).map(|v| format!("{v:?}"))),
        ("path_to_json", store.path_to_json(leaf).map(text)),
        (
            "messages_on_path_json",
            store.messages_on_path_json(leaf).map(text),
        ),
        ("entries", store.entries().map(|v| format!("{v:?}"))),
        ("entries_json", store.entries_json().map(text)),
        ("read", store.read().map(|v| format!("{v:?}"))),
        ("read_json", store.read_json().map(text)),
        (
            "messages_on_path",
            store.messages_on_path(leaf).map(|v| format!("{v:?}")),
        ),
        (
            "build_context",
            store
                .build_context(leaf, &ContextOptions::default(), None)
                .map(|c| c.to_json()),
        ),
        ("children", store.children_json(parent)),
        ("tree", store.tree_json(&TreeOptions::default())),
    ]
}

/// The changes of one line that keep its size and leave valid JSON and a valid entry:
/// its id, its parent (another entry of the store) and its body.
const EDITS: [(&str, &str, &str); 3] = [
    ("id", r#"{"id":"e0070""#, r#"{"id":"x0070""#),
    ("parentId", r#""parentId":"e0068""#, r#""parentId":"e0067""#),
    ("body", "entry 70 entry", "Entry 70 entry"),
];

#[test]
fn every_read_of_a_line_from_disk_is_checked_not_only_the_first() {
    for (what, from, to) in EDITS {
        let dir = temp_dir(&format!("index-reads-{what}"));
        let path = dir.join("s.jsonl");
        chain(&path, 200, 100);
        let (store, _) = Store::open_jsonl_with(&path, &read_only_with_index(true)).unwrap();
        // e0070 is on the path to e0199 (line 71, in the second block of 64 lines);
        // the leaf is in the fourth. The streamed reads check every line once and keep
        // none of them.
        let before: Vec<String> = [
            store.path_to_json("e0199"),
            store.messages_on_path_json("e0199"),
            store.entries_json(),
            store.read_json(),
        ]
        .into_iter()
        .map(|r| String::from_utf8(r.unwrap()).unwrap())
        .collect();
        assert!(before[0].contains(r#""id":"e0070""#));

        // Another program rewrites the line in place while the store is open.
        edit_line(&path, "e0070", from, to, true);

        // Every read from disk checks it again: none answers with the changed bytes.
        for round in 0..2 {
            for (call, result) in reads_through(&store, "e0199", "e0068") {
                assert_corrupt(&format!("{what}, {call}, round {round}"), result, 71);
            }
        }
        assert_eq!(store.state(), State::Ready);
        // What does not touch the line still answers.
        assert_eq!(store.path_to("e0069").unwrap().len(), 64);
    }
}

#[test]
fn a_line_read_again_after_the_cache_is_trimmed_is_checked_again() {
    let dir = temp_dir("index-reads-trim");
    let path = dir.join("s.jsonl");
    // 300 lines of about 70 KB: 20 MB, more than the 16 MiB the store keeps cached
    // between calls.
    chain(&path, 300, 7_000);
    assert!(read_file(&path).len() > 17 << 20);
    let (store, _) = Store::open_jsonl_with(&path, &read_only_with_index(true)).unwrap();
    assert_eq!(store.children("e0098").unwrap().len(), 2);
    // A tree of every node reads and keeps every line: the next call drops them all.
    let nodes = store.tree(&TreeOptions::default()).unwrap().nodes;
    assert_eq!(nodes.len(), 300);

    edit_line(&path, "e0100", "entry 100 entry", "Entry 100 entry", true);

    // The cache is dropped at the start of the next call: e0100's line is read from
    // disk again, and checked again.
    for (call, result) in reads_through(&store, "e0299", "e0098") {
        assert_corrupt(&format!("after the trim, {call}"), result, 101);
    }
    assert_corrupt("latest_leaf's path", store.path_to_json("e0101"), 101);
    assert_eq!(store.state(), State::Ready);
}

/// A chain of 200 entries whose e0051 is labelled `alpha` by a last entry `lab`.
fn labelled_chain(path: &Path) {
    chain(path, 200, 100);
    let (store, _) = Store::open_jsonl(path).unwrap();
    store
        .append(
            r#"{"id":"lab","parentId":"e0199","timestamp":9,"type":"metadata","key":"session.label","value":{"targetId":"e0051","label":"alpha"}}"#,
        )
        .unwrap();
    drop(store);
    let (store, _) = Store::open_jsonl(path).unwrap();
    // A longer last line, so that the label's line is not the one open checks.
    store
        .append(user("last", Some("lab"), &"tail ".repeat(200)))
        .unwrap();
}

#[test]
fn navigation_checks_the_line_of_every_entry_it_returns_and_of_its_label() {
    let dir = temp_dir("index-reads-nav");
    let path = dir.join("s.jsonl");
    labelled_chain(&path);
    let original = read_file(&path);
    let (store, _) = Store::open_jsonl_with(&path, &read_only_with_index(true)).unwrap();
    let labelled = store.children("e0050").unwrap();
    assert_eq!(labelled[0].label.as_deref(), Some("alpha"));
    drop(store);

    // The label's text changes (same size, mtime kept) while a store is open through
    // the index: a node that carries the label checks the label's line.
    let (store, _) = Store::open_jsonl_with(&path, &read_only_with_index(true)).unwrap();
    edit_line(
        &path,
        "lab",
        r#""label":"alpha""#,
        r#""label":"alphA""#,
        true,
    );
    assert_corrupt("children of e0050", store.children("e0050"), 201);
    assert_corrupt("labels", store.labels(), 201);
    assert_corrupt("tree", store.tree(&TreeOptions::default()), 201);
    drop(store);

    // A leaf's text changes: `leaves` checks every leaf it returns.
    write_file(&path, &original);
    let (writer, _) = Store::open_jsonl(&path).unwrap();
    drop(writer);
    let (store, _) = Store::open_jsonl_with(&path, &read_only_with_index(true)).unwrap();
    edit_line(&path, "e0089", "entry 89 entry", "Entry 89 entry", true);
    assert_corrupt("leaves", store.leaves(), 90);
    assert_corrupt("children of e0088", store.children("e0088"), 90);
    assert_eq!(store.latest_leaf().unwrap().unwrap().id, "last");
    assert_eq!(store.state(), State::Ready);
}

/// The answers of the navigation calls that derive from lines they do not return:
/// children of the entries around the edit, the leaves, the path and depth below it,
/// the roots and the whole tree.
fn navigation(store: &Store) -> Vec<String> {
    let ids = |nodes: Vec<session::Node>| {
        nodes
            .into_iter()
            .map(|n| format!("{}@{}", n.id, n.depth))
            .collect::<Vec<_>>()
            .join(",")
    };
    let mut answers: Vec<String> = ["e0067", "e0068", "e0069", "e0071"]
        .iter()
        .map(|id| ids(store.children(id).unwrap()))
        .collect();
    answers.push(store.leaves().unwrap().to_json());
    answers.push(ids(store.roots().unwrap()));
    answers.push(format!("{}", store.path_to("e0071").unwrap().len()));
    answers.push(store.tree_json(&TreeOptions::default()).unwrap());
    answers
}

/// Rule (round 4): an index is used only while the file's change time is the one it
/// recorded. An edit in place that keeps the size and puts the modification time back,
/// outside the sampled regions and the last line — which the checks at open missed in
/// round 3, leaving children, leaves, depth and paths as indexed — now replays the
/// file: every navigation answer is the file's.
#[test]
fn an_in_place_edit_keeping_size_and_mtime_is_never_answered_from_the_index() {
    let dir = temp_dir("index-reads-ctime");
    let path = dir.join("s.jsonl");
    chain(&path, 200, 100);
    // e0070 moves from e0068 to e0069 (so e0069 is no longer a leaf): same size, mtime
    // kept, outside the sampled regions and the last line.
    let at = edit_line(
        &path,
        "e0070",
        r#""parentId":"e0068""#,
        r#""parentId":"e0069""#,
        true,
    );
    assert_outside_the_open_checks(&path, at, 18);

    // The truth, from the file.
    let full = JsonlOptions::from_json(r#"{"readOnly":true,"verify":"full"}"#).unwrap();
    let (truth, _) = Store::open_jsonl_with(&path, &full).unwrap();
    let expected = navigation(&truth);
    assert_eq!(expected[1], "e0069@63", "e0068's children");
    assert_eq!(expected[2], "e0070@64", "e0069's children");
    assert!(
        !expected[4].contains(r#""id":"e0069""#),
        "e0069 is no longer a leaf"
    );

    // Through the index: the same answers, for a reader and for a writer.
    let (store, _) = Store::open_jsonl_with(&path, &read_only_with_index(true)).unwrap();
    assert_eq!(navigation(&store), expected);
    drop(store);
    let (writer, _) = Store::open_jsonl(&path).unwrap();
    assert_eq!(navigation(&writer), expected);
    // The writer writes a new index at its close, which a later open uses.
    writer.append(user("w", Some("e0199"), "w")).unwrap();
    drop(writer);
    let (store, _) = Store::open_jsonl_with(&path, &read_only_with_index(true)).unwrap();
    assert_eq!(navigation(&store)[..4], expected[..4]);
    assert_eq!(
        store.path_to("w").unwrap().len(),
        truth.path_to("e0199").unwrap().len() + 1
    );
}

/// `build_context` reads the path from the leaf back to the latest compaction's first
/// kept entry, the path's root and its replayed metadata, and nothing before the cut
/// (issue 23: its cost is what it keeps, not the path). Shown by a line before the
/// cut that another program changed: the context of the compacted leaf never reads
/// it, where the whole-path reads find it.
#[test]
fn build_context_reads_nothing_before_the_latest_compaction_cut() {
    let dir = temp_dir("index-reads-tail");
    let path = dir.join("s.jsonl");
    chain(&path, 200, 100);
    let (store, _) = Store::open_jsonl(&path).unwrap();
    store
        .append(r#"{"id":"m","parentId":"e0199","timestamp":9,"type":"metadata","key":"model","value":"m-1"}"#)
        .unwrap();
    store
        .append(r#"{"id":"c","parentId":"m","timestamp":9,"type":"compaction","summary":"s","firstKeptEntryId":"e0190","tokensBefore":10}"#)
        .unwrap();
    store.append(user("after", Some("c"), "after")).unwrap();
    drop(store);
    let (store, _) = Store::open_jsonl_with(&path, &read_only_with_index(true)).unwrap();
    let before = store
        .build_context("after", &ContextOptions::default(), None)
        .unwrap();
    drop(store);

    // Changed while a store is open through the index (an edit before the open would
    // replay the file: its change time moved).
    let (store, _) = Store::open_jsonl_with(&path, &read_only_with_index(true)).unwrap();
    edit_line(&path, "e0070", "entry 70 entry", "Entry 70 entry", true);
    let after = store
        .build_context("after", &ContextOptions::default(), None)
        .unwrap();
    assert_eq!(before, after);
    assert_eq!(after.kept_entry_ids.len(), 11, "e0190..e0199 and after");
    assert_eq!(
        after.metadata,
        [("model".to_owned(), r#""m-1""#.to_owned())]
    );
    // A whole-path read does reach the changed line.
    assert_corrupt("messages_on_path", store.messages_on_path_json("after"), 71);
    assert_corrupt(
        "an uncompacted leaf's context",
        store.build_context("e0199", &ContextOptions::default(), None),
        71,
    );
}

/// `build_context` reads, of the path's replayed metadata, only the last entry of each
/// run of one key (issue 37: a Claude Code import holds a million `progress` entries
/// on its path): the context's metadata is the same as the pure function's over every
/// entry, and a metadata line inside a run that another program changed is never read
/// (a walk over every metadata entry would find it: `corrupt_line`).
#[test]
fn build_context_reads_one_metadata_entry_per_run_of_one_key() {
    let dir = temp_dir("index-reads-meta-runs");
    let path = dir.join("s.jsonl");
    let (store, _) = Store::open_jsonl(&path).unwrap();
    store.append(user("u0", None, "start")).unwrap();
    let mut parent = "u0".to_owned();
    let meta = |id: &str, parent: &str, key: &str, value: &str| {
        format!(
            r#"{{"id":"{id}","parentId":"{parent}","timestamp":9,"type":"metadata","key":"{key}","value":"{value}"}}"#
        )
    };
    for turn in 0..5 {
        for j in 0..20 {
            let id = format!("p{turn}-{j:02}");
            let value = format!("tick {turn} {j:02}");
            store
                .append(meta(&id, &parent, "progress", &value))
                .unwrap();
            parent = id;
        }
        let id = format!("m{turn}");
        store
            .append(meta(&id, &parent, "model", &format!("model-{turn}")))
            .unwrap();
        parent = id;
        let id = format!("u{}", turn + 1);
        store.append(user(&id, Some(&parent), "next")).unwrap();
        parent = id;
    }
    // A compaction that keeps u5: the context reads u5, c and u6, and the metadata.
    store
        .append(r#"{"id":"c","parentId":"u5","timestamp":9,"type":"compaction","summary":"s","firstKeptEntryId":"u5","tokensBefore":10}"#)
        .unwrap();
    store.append(user("u6", Some("c"), "after")).unwrap();
    drop(store);
    let (truth, _) = Store::open_jsonl_with(&path, &read_only_with_index(false)).unwrap();
    let expected =
        session::build_context(&truth.entries().unwrap(), "u6", &ContextOptions::default())
            .unwrap();
    assert_eq!(
        expected.metadata,
        [
            ("progress".to_owned(), r#""tick 4 19""#.to_owned()),
            ("model".to_owned(), r#""model-4""#.to_owned()),
        ]
    );
    for index in [false, true] {
        let (store, _) = Store::open_jsonl_with(&path, &read_only_with_index(index)).unwrap();
        let context = store
            .build_context("u6", &ContextOptions::default(), None)
            .unwrap();
        assert_eq!(context, expected, "index: {index}");
    }

    let (store, _) = Store::open_jsonl_with(&path, &read_only_with_index(true)).unwrap();
    // p2-10 lies inside a run of `progress` entries: its value is never the context's.
    edit_line(&path, "p2-10", "tick 2 10", "tock 2 10", true);
    let after = store
        .build_context("u6", &ContextOptions::default(), None)
        .unwrap();
    assert_eq!(after, expected);
    // A whole-path read does reach the changed line.
    let line = 1 + 2 * 22 + 11;
    assert_corrupt("path_to", store.path_to_json("u6"), line);
}

/// `index` (an index this library wrote for the file) in the layout of version 3, which
/// round 3 wrote: the same header without the change time, resealed.
fn as_version_3(index: &[u8]) -> Vec<u8> {
    assert_eq!(
        &index[8..12],
        &5u32.to_le_bytes(),
        "the index is of version 5"
    );
    let mut old = index.to_vec();
    // The two u64s of the change time follow the modification time (fields 5 and 6).
    old.drain(64..80);
    old.splice(232..232, [0u8; 16]);
    old[8..12].copy_from_slice(&3u32.to_le_bytes());
    let seal = session::store::index_checksum(&old[..248]);
    old[248..256].copy_from_slice(&seal.to_le_bytes());
    assert_eq!(old.len(), index.len());
    old
}

/// Rule (round 4): the index format's version went to 4 with the change time; an index
/// of version 3 — which round 3 would have used after an edit that keeps the size and
/// the modification time — is never read: the file is replayed, and a writer rebuilds
/// the index at its close.
#[test]
fn an_index_of_the_previous_version_is_rebuilt_never_read() {
    let dir = temp_dir("index-reads-v3");
    let path = dir.join("s.jsonl");
    chain(&path, 200, 100);
    let old = as_version_3(&read_file(&index_path(&path)));
    edit_line(
        &path,
        "e0070",
        r#""parentId":"e0068""#,
        r#""parentId":"e0069""#,
        true,
    );
    write_file(&index_path(&path), &old);
    let full = JsonlOptions::from_json(r#"{"readOnly":true,"verify":"full"}"#).unwrap();
    let (truth, _) = Store::open_jsonl_with(&path, &full).unwrap();
    let (store, _) = Store::open_jsonl_with(&path, &read_only_with_index(true)).unwrap();
    assert_eq!(navigation(&store), navigation(&truth));
    drop(store);
    assert_eq!(
        read_file(&index_path(&path)),
        old,
        "a reader never writes one"
    );
    let (writer, _) = Store::open_jsonl(&path).unwrap();
    assert_eq!(navigation(&writer), navigation(&truth));
    drop(writer);
    let rebuilt = read_file(&index_path(&path));
    assert_eq!(&rebuilt[8..12], &5u32.to_le_bytes(), "rebuilt as version 5");
    // The rebuilt index matches the file: a writer that appends nothing keeps it.
    let written = file_id(&index_path(&path));
    drop(Store::open_jsonl(&path).unwrap());
    assert_eq!(
        file_id(&index_path(&path)),
        written,
        "the rebuilt index is used"
    );
}
