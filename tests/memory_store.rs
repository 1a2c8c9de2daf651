//! The memory store (docs/contract.md §3): snapshot at call, FIFO in turn, failures fail only
//! themselves, reads wait and return copies.

use crate::common;

use common::*;
use session::{Error, Receipt, State, Store};

#[test]
fn append_reports_the_commit_position_as_seq() {
    let store = Store::memory();
    assert_eq!(
        store.append(U1).unwrap(),
        Receipt {
            id: "u-1".into(),
            seq: 0
        }
    );
    assert_eq!(
        store.append(A_READ).unwrap(),
        Receipt {
            id: "a-read".into(),
            seq: 1
        }
    );
    assert_eq!(store.state(), State::Ready);
}

#[test]
fn snapshot_is_taken_at_call_time() {
    let store = Store::memory();
    let mut buffer = U1.to_owned();
    store.append(&buffer).unwrap();
    buffer.replace_range(..buffer.len(), &user("u-1", None, "rewritten"));
    assert_eq!(store.entries().unwrap()[0].json(), U1);
}

#[test]
fn invalid_entry_fails_at_call_time_and_leaves_the_store_ready() {
    let store = Store::memory();
    assert!(matches!(store.append("{"), Err(Error::InvalidJson(_))));
    assert!(matches!(store.append("{}"), Err(Error::InvalidEntry(_))));
    assert_eq!(store.state(), State::Ready);
    assert_eq!(store.append(U1).unwrap().seq, 0);
}

#[test]
fn duplicate_id_is_refused_in_turn() {
    let store = Store::memory();
    store.append(U1).unwrap();
    assert!(matches!(store.append(U1), Err(Error::DuplicateId { id, line: None }) if id == "u-1"));
}

#[test]
fn missing_parent_is_refused_in_turn() {
    let store = Store::memory();
    match store.append(A_READ) {
        Err(Error::MissingParent {
            child_id,
            parent_id,
            ..
        }) => {
            assert_eq!((child_id.as_str(), parent_id.as_str()), ("a-read", "u-1"));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_failed_append_does_not_poison_the_queue() {
    let store = Store::memory();
    assert!(store.append(A_READ).is_err());
    // The next valid append still commits, and takes the first position.
    assert_eq!(store.append(U1).unwrap().seq, 0);
    assert_eq!(store.append(A_READ).unwrap().seq, 1);
}

#[test]
fn reads_return_copies_independent_of_the_store() {
    let store = Store::memory();
    store.append(U1).unwrap();
    let mut copy = store.entries().unwrap();
    copy.clear();
    assert_eq!(ids(&store.entries().unwrap()), ["u-1"]);
    let snapshot = store.read().unwrap();
    assert_eq!(snapshot.state, State::Ready);
    assert!(snapshot.warnings.is_empty());
    assert_eq!(
        String::from_utf8(store.read_json().unwrap()).unwrap(),
        format!(r#"{{"state":"ready","entries":[{U1}],"warnings":[]}}"#)
    );
}

#[test]
fn store_path_reads_use_the_index_and_report_unknown_leaves() {
    let store = Store::memory();
    for line in CHAPTER {
        store.append(line).unwrap();
    }
    assert!(matches!(store.path_to("zzz"), Err(Error::UnknownLeaf { id }) if id == "zzz"));
    assert!(matches!(
        store.messages_on_path_json("zzz"),
        Err(Error::UnknownLeaf { .. })
    ));
}

#[test]
fn concurrent_appends_commit_or_fail_for_their_own_reason() {
    const THREADS: usize = 8;
    const PER_THREAD: usize = 300;
    let store = Store::memory();
    store.append(user("root", None, "r")).unwrap();
    // Every thread also tries a duplicate and an orphan after each append: each fails
    // alone.
    let mut all = append_chains(
        &store,
        THREADS,
        PER_THREAD,
        Some("root"),
        |store, t, i, id| {
            assert!(matches!(
                store.append(user(id, Some("root"), "dup")),
                Err(Error::DuplicateId { .. })
            ));
            assert!(matches!(
                store.append(user(&format!("o{t}-{i}"), Some("nowhere"), "o")),
                Err(Error::MissingParent { .. })
            ));
        },
    );
    let entries = store.entries().unwrap();
    assert_eq!(entries.len(), 1 + THREADS * PER_THREAD);
    all.sort_by_key(|r| r.seq);
    for receipt in &all {
        assert_eq!(
            entries[receipt.seq as usize].id(),
            receipt.id,
            "seq is the commit position"
        );
    }
    for t in 0..THREADS {
        let path = store.path_to(&format!("t{t}-{}", PER_THREAD - 1)).unwrap();
        assert_eq!(path.len(), PER_THREAD + 1, "each thread's chain is whole");
    }
}
