//! The session index's equivalence harness (issue 15): everything an open tells, with
//! and without the index, and the file manipulations the index tests make. Only the
//! public API and plain file operations: nothing here knows the index's byte layout.

use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::{Duration, SystemTime};

use session::{ContextOptions, JsonlOptions, Store, TreeOptions, index_path};

/// A read-only open that may use the index (`index`) or must not.
pub fn read_only_with_index(index: bool) -> JsonlOptions {
    JsonlOptions::from_json(&format!(r#"{{"readOnly":true,"index":{index}}}"#))
        .expect("valid options")
}

/// Everything a read-only open tells: its report, the entries, the navigation, the
/// latest path and every leaf's context, or its error. Readers never write the index,
/// so this can be called any number of times against the same index.
pub fn outcome(path: &Path, index: bool) -> String {
    match Store::open_jsonl_with(path, &read_only_with_index(index)) {
        Ok((store, report)) => {
            let read = store
                .read_json()
                .map_or_else(|e| format!("{e:?}"), |r| String::from_utf8_lossy(&r).into());
            let tree = store.tree_json(&TreeOptions::default());
            let leaves = store.leaves_json();
            let labels = store.labels_json();
            let path = store.latest_leaf().map(|leaf| {
                leaf.map(|leaf| {
                    store
                        .path_to_json(&leaf.id)
                        .map(|p| String::from_utf8_lossy(&p).into_owned())
                })
            });
            // Tool pairing and roles, through the context of every leaf.
            let contexts: Vec<String> = store.leaves().map_or_else(
                |e| vec![format!("{e:?}")],
                |leaves| {
                    leaves
                        .leaves
                        .iter()
                        .map(|leaf| {
                            store
                                .build_context(&leaf.id, &ContextOptions::default(), None)
                                .map_or_else(|e| format!("{e:?}"), |c| c.to_json())
                        })
                        .collect()
                },
            );
            format!(
                "{}\n{read}\n{tree:?}\n{leaves:?}\n{labels:?}\n{path:?}\n{contexts:?}",
                report.to_json()
            )
        }
        Err(e) => format!("error: {e:?}"),
    }
}

/// `None` when an open that may use the index answers exactly as one that may not;
/// otherwise both answers, headed by `what`.
pub fn divergence(path: &Path, what: &str) -> Option<String> {
    let (with, without) = (outcome(path, true), outcome(path, false));
    (with != without)
        .then(|| format!("{what}:\n  with the index:    {with}\n  without it:        {without}"))
}

/// Fails unless an open that may use the index answers exactly as one that may not.
pub fn assert_same(path: &Path, what: &str) {
    assert_eq!(outcome(path, true), outcome(path, false), "{what}");
}

/// The file's modification time.
pub fn mtime(path: &Path) -> SystemTime {
    std::fs::metadata(path)
        .and_then(|m| m.modified())
        .expect("mtime")
}

/// Rewrites `path` in place (same inode) with `bytes`, as another program would, and
/// makes sure its modification time moved forward: the index's guarantee covers every
/// change that alters the size, the mtime, the device/inode or the content, and a
/// coarse filesystem clock could otherwise leave a same-size rewrite with the old mtime.
pub fn rewrite_in_place(path: &Path, bytes: &[u8]) {
    let before = std::fs::metadata(path).and_then(|m| m.modified()).ok();
    std::fs::write(path, bytes).expect("rewrite the file");
    if let Some(before) = before
        && mtime(path) <= before
    {
        let file = std::fs::OpenOptions::new()
            .write(true)
            .open(path)
            .expect("open to set the mtime");
        file.set_modified(before + Duration::from_micros(1))
            .expect("set the mtime");
    }
}

/// Device, inode, size and mtime of a file, or `None` when it does not exist: how a
/// test sees, from outside, whether a writer rewrote the index.
pub fn file_id(path: &Path) -> Option<(u64, u64, u64, SystemTime)> {
    let meta = std::fs::metadata(path).ok()?;
    Some((meta.dev(), meta.ino(), meta.len(), meta.modified().ok()?))
}

/// Writes `lines` (entries) through a writer into a new file at `path`, so that the file
/// is exactly their lines and the writer leaves a full index at close. Returns the
/// file's bytes and the index's.
pub fn indexed_fixture(path: &Path, lines: &[String]) -> (Vec<u8>, Vec<u8>) {
    let _ = std::fs::remove_file(path);
    let _ = std::fs::remove_file(index_path(path));
    {
        let (store, _) = Store::open_jsonl(path).expect("open the fixture");
        for line in lines {
            store.append(line).expect("append a fixture line");
        }
    }
    let idx = std::fs::read(index_path(path)).expect("the writer left an index");
    (std::fs::read(path).expect("read the fixture"), idx)
}

/// The byte offset just after each `\n` of `bytes`, with 0 first: the line boundaries.
pub fn line_boundaries(bytes: &[u8]) -> Vec<usize> {
    std::iter::once(0)
        .chain(
            bytes
                .iter()
                .enumerate()
                .filter(|(_, b)| **b == b'\n')
                .map(|(i, _)| i + 1),
        )
        .collect()
}
