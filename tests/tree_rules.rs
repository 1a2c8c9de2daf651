//! path_to's diagnostics (docs/contract.md §3): duplicate ids anywhere, missing parents and cycles
//! on the chosen path only.

use crate::common;

use common::*;
use session::{Entry, Error, parse_entry, path_to};

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
