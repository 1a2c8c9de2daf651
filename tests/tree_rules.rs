//! The tree rules (docs/contract.md §3, §6.2, §6.3), one implementation each: path_to's
//! diagnostics (duplicate ids anywhere, missing parents and cycles on the chosen path
//! only), and each rule named with every caller that runs it (the slice functions, the
//! store's append, the replay of a file, build_context) failing alike.

use crate::common;

use common::*;
use session::{
    CompactionFault, ContextOptions, Entry, Error, JsonlOptions, Store, build_context, parse_entry,
    path_to,
};

fn entries(lines: &[&str]) -> Vec<Entry> {
    lines.iter().map(|l| parse_entry(l).unwrap()).collect()
}

#[test]
fn duplicate_id_anywhere_fails_even_off_the_path() {
    let a = user("a", None, "x");
    let dup = user("z", None, "1");
    let dup2 = user("z", Some("a"), "2");
    match path_to(&entries(&[&a, &dup, &dup2]), "a") {
        Err(Error::DuplicateId { id, line: None }) => assert_eq!(id, "z"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn missing_parent_names_child_and_parent() {
    let a = user("a", None, "x");
    let b = user("b", Some("gone"), "y");
    let c = user("c", Some("b"), "z");
    match path_to(&entries(&[&a, &b, &c]), "c") {
        Err(Error::MissingParent {
            child_id,
            parent_id,
            line: None,
        }) => {
            assert_eq!((child_id.as_str(), parent_id.as_str()), ("b", "gone"));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn cycle_on_the_path_fails_naming_the_revisited_id() {
    let a = user("a", Some("c"), "x");
    let b = user("b", Some("a"), "y");
    let c = user("c", Some("b"), "z");
    match path_to(&entries(&[&a, &b, &c]), "c") {
        Err(Error::Cycle { id }) => assert_eq!(id, "c"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn self_parent_is_a_cycle() {
    let a = user("a", Some("a"), "x");
    assert!(matches!(path_to(&entries(&[&a]), "a"), Err(Error::Cycle { id }) if id == "a"));
}

#[test]
fn broken_unselected_branch_does_not_stop_a_healthy_path() {
    let root = user("root", None, "r");
    let ok = user("ok", Some("root"), "fine");
    let orphan = user("orphan", Some("missing"), "broken");
    let loop_a = user("la", Some("lb"), "loop");
    let loop_b = user("lb", Some("la"), "loop");
    let other_root = user("r2", None, "another root");
    let all = entries(&[&root, &orphan, &loop_a, &ok, &loop_b, &other_root]);
    assert_eq!(ids(&path_to(&all, "ok").unwrap()), ["root", "ok"]);
    assert_eq!(ids(&path_to(&all, "r2").unwrap()), ["r2"]);
    assert!(matches!(
        path_to(&all, "orphan"),
        Err(Error::MissingParent { .. })
    ));
    assert!(matches!(path_to(&all, "la"), Err(Error::Cycle { .. })));
}

#[test]
fn unknown_leaf_fails_naming_it() {
    let a = user("a", None, "x");
    assert!(
        matches!(path_to(&entries(&[&a]), "nope"), Err(Error::UnknownLeaf { id }) if id == "nope")
    );
    assert!(matches!(
        path_to(&[], "nope"),
        Err(Error::UnknownLeaf { .. })
    ));
}

#[test]
fn entries_may_come_in_any_order() {
    let mut lines: Vec<&str> = CHAPTER.to_vec();
    lines.reverse();
    let path = path_to(&entries(&lines), "meta-cwd").unwrap();
    assert_eq!(
        ids(&path),
        ["u-1", "a-read", "r-read", "a-final", "meta-cwd"]
    );
}

#[test]
fn a_long_chain_is_walked_without_recursion() {
    let mut lines = vec![user("n0", None, "x")];
    for i in 1..100_000 {
        lines.push(user(&format!("n{i}"), Some(&format!("n{}", i - 1)), "x"));
    }
    let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
    let path = path_to(&entries(&refs), "n99999").unwrap();
    assert_eq!(path.len(), 100_000);
    assert_eq!(path[0].id(), "n0");
}

/// A store holding `lines`, appended in order.
fn memory_store(lines: &[&str]) -> Store {
    let store = Store::memory();
    for line in lines {
        store.append(line).unwrap();
    }
    store
}

/// The error of opening a JSONL file of `lines` (strict replay).
fn replay_error(name: &str, lines: &[&str]) -> Error {
    let dir = temp_dir(name);
    let path = dir.join("s.jsonl");
    write_file(&path, &jsonl(lines));
    match Store::open_jsonl_with(&path, &JsonlOptions::default()) {
        Err(e) => e,
        Ok(_) => panic!("the replay of {lines:?} was accepted"),
    }
}

#[test]
fn rule_id_is_new_holds_for_the_slice_the_append_and_the_replay() {
    let (a, b) = (user("a", None, "x"), user("a", None, "y"));
    let duplicate = |e: Error| match e {
        Error::DuplicateId { id, line } => (id, line),
        other => panic!("{other:?}"),
    };
    assert_eq!(
        duplicate(path_to(&entries(&[&a, &b]), "a").unwrap_err()),
        ("a".to_owned(), None)
    );
    assert_eq!(
        duplicate(memory_store(&[&a]).append(&b).unwrap_err()),
        ("a".to_owned(), None)
    );
    assert_eq!(
        duplicate(replay_error("rule-id", &[&a, &b])),
        ("a".to_owned(), Some(2))
    );
}

#[test]
fn rule_parent_is_committed_holds_for_the_slice_the_append_and_the_replay() {
    let (a, b) = (user("a", None, "x"), user("b", Some("gone"), "y"));
    let missing = |e: Error| match e {
        Error::MissingParent {
            child_id,
            parent_id,
            line,
        } => (child_id, parent_id, line),
        other => panic!("{other:?}"),
    };
    let named = |line| ("b".to_owned(), "gone".to_owned(), line);
    assert_eq!(
        missing(path_to(&entries(&[&a, &b]), "b").unwrap_err()),
        named(None)
    );
    assert_eq!(
        missing(memory_store(&[&a]).append(&b).unwrap_err()),
        named(None)
    );
    assert_eq!(
        missing(replay_error("rule-parent", &[&a, &b])),
        named(Some(2))
    );
}

#[test]
fn rule_not_revisited_fails_a_path_that_loops() {
    let a = user("a", Some("b"), "x");
    let b = user("b", Some("a"), "y");
    match path_to(&entries(&[&a, &b]), "b") {
        Err(Error::Cycle { id }) => assert_eq!(id, "b"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn rule_target_is_committed_holds_for_a_label_and_a_resume_leaf_record() {
    let store = memory_store(&[&user("a", None, "x")]);
    let label = r#"{"id":"l","parentId":"a","timestamp":9,"type":"metadata","key":"session.label","value":{"targetId":"nope","label":"x"}}"#;
    let record = r#"{"id":"r","parentId":"a","timestamp":9,"type":"metadata","key":"session.resumeLeaf","value":{"leafId":"nope"}}"#;
    for line in [label, record] {
        match store.append(line) {
            Err(Error::UnknownLeaf { id }) => assert_eq!(id, "nope", "{line}"),
            other => panic!("{line}: {other:?}"),
        }
    }
    // Named entries that are committed pass.
    store.append(label.replace("nope", "a")).unwrap();
}

#[test]
fn rule_check_compaction_holds_for_the_append_and_build_context() {
    let root = user("a", None, "x");
    let sibling = user("s", None, "y");
    let next = user("b", Some("a"), "z");
    // Keeps from an entry that is not on its path.
    let compaction = r#"{"id":"c","parentId":"b","timestamp":5,"type":"compaction","summary":"s","firstKeptEntryId":"s","tokensBefore":10}"#;
    let fault = |e: Error| match e {
        Error::InvalidCompaction {
            compaction_id,
            reason,
            ..
        } => (compaction_id, reason),
        other => panic!("{other:?}"),
    };
    let expected = ("c".to_owned(), CompactionFault::NotOnPath);
    let store = memory_store(&[&root, &sibling, &next]);
    assert_eq!(fault(store.append(compaction).unwrap_err()), expected);
    let all = entries(&[&root, &sibling, &next, compaction]);
    assert_eq!(
        fault(build_context(&all, "c", &ContextOptions::default()).unwrap_err()),
        expected
    );
}
