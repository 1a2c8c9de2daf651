//! Durability modes (issue 7): what a successful append means, group commit, and
//! sync failures tainting the store like write failures.

use crate::common;

use std::sync::Arc;
use std::thread;

use common::*;
use session::{Durability, Error, IoOp, JsonlOptions, State, Store};

fn options(durability: Durability) -> JsonlOptions {
    JsonlOptions {
        durability,
        ..JsonlOptions::default()
    }
}

#[test]
fn durability_none_never_syncs() {
    let dir = temp_dir("none");
    let plan = FaultPlan::new();
    let (store, _) = open_faulty_with(&dir.join("s.jsonl"), &plan, &options(Durability::None));
    for line in CHAPTER {
        store.append(line).unwrap();
    }
    assert_eq!(plan.syncs(), 0);
}

#[test]
fn durability_fsync_syncs_after_every_append() {
    let dir = temp_dir("fsync");
    let plan = FaultPlan::new();
    let (store, _) = open_faulty_with(&dir.join("s.jsonl"), &plan, &options(Durability::Fsync));
    for (i, line) in CHAPTER.iter().enumerate() {
        store.append(line).unwrap();
        assert_eq!(plan.syncs(), i as u64 + 1, "a sync per acknowledged append");
    }
    // A refused append does not sync.
    assert!(store.append(U1).is_err());
    assert_eq!(plan.syncs(), 6);
}

#[test]
fn a_failed_sync_taints_the_store_and_is_never_retried() {
    for durability in [Durability::Fsync, Durability::FsyncBatch] {
        let dir = temp_dir("syncfail");
        let path = dir.join("s.jsonl");
        let plan = FaultPlan::new();
        let (store, _) = open_faulty_with(&path, &plan, &options(durability));
        store.append(U1).unwrap();
        plan.fail_sync(2);
        let failure = match store.append(A_READ) {
            Err(Error::Io(f)) => f,
            other => panic!("{durability:?}: {other:?}"),
        };
        assert_eq!(failure.op, IoOp::Sync);
        assert_eq!(failure.os_error, Some(libc::EIO));
        assert_eq!(store.state(), State::Tainted);
        let (writes, syncs) = (plan.writes(), plan.syncs());
        match store.append(R_READ) {
            Err(Error::Tainted { cause }) => assert!(Arc::ptr_eq(&cause, &failure)),
            other => panic!("{durability:?}: {other:?}"),
        }
        assert!(matches!(store.entries(), Err(Error::Tainted { .. })));
        assert_eq!(
            (plan.writes(), plan.syncs()),
            (writes, syncs),
            "{durability:?}: no I/O after the taint"
        );
        drop(store);
        // The unsynced line may be on disk; a reopen shows a clean prefix either way.
        let (store, report) = Store::open_jsonl(&path).unwrap();
        assert_eq!(report.state, State::Ready);
        let ids = ids(&store.entries().unwrap())
            .iter()
            .map(|s| s.to_string())
            .collect::<Vec<_>>();
        assert!(ids == ["u-1"] || ids == ["u-1", "a-read"], "{ids:?}");
    }
}

#[test]
fn group_commit_shares_syncs_and_keeps_fifo_order() {
    const THREADS: usize = 8;
    const PER_THREAD: usize = 100;
    let dir = temp_dir("batch");
    let path = dir.join("s.jsonl");
    let plan = FaultPlan::new();
    let (store, _) = open_faulty_with(&path, &plan, &options(Durability::FsyncBatch));
    // A duplicate inside a group fails alone.
    let receipts = append_chains(&store, THREADS, PER_THREAD, None, |store, _, _, id| {
        assert!(matches!(
            store.append(user(id, None, "dup")),
            Err(Error::DuplicateId { .. })
        ));
    });
    let total = (THREADS * PER_THREAD) as u64;
    let syncs = plan.syncs();
    println!("group commit: {total} appends from {THREADS} threads, {syncs} syncs");
    assert!(syncs <= total, "never more than one sync per append");
    assert!(syncs >= 1);
    drop(store);
    assert_file_order_is_seq_order(&path, &receipts, total as usize);
}

/// Holds the next write, appends `h` (a child of u-1) and then `queued` more appends
/// behind it, runs `before_release`, and releases the write. Returns the results in
/// arrival order: `h` first.
fn behind_a_held_write(
    plan: &FaultPlan,
    store: &Store,
    queued: usize,
    before_release: impl FnOnce(),
) -> Vec<Result<session::Receipt, Error>> {
    plan.hold();
    thread::scope(|s| {
        let first = s.spawn(|| store.append(user("h", Some("u-1"), "held")));
        plan.wait_blocked();
        let behind: Vec<_> = (0..queued)
            .map(|i| {
                let h =
                    s.spawn(move || store.append(user(&format!("q{i}"), Some("u-1"), "queued")));
                // Let each enter the FIFO before the next, so arrival order is known.
                thread::sleep(std::time::Duration::from_millis(20));
                h
            })
            .collect();
        before_release();
        plan.release();
        std::iter::once(first)
            .chain(behind)
            .map(|h| h.join().unwrap())
            .collect()
    })
}

#[test]
fn group_commit_coalesces_appends_queued_behind_a_sync() {
    let dir = temp_dir("coalesce");
    let plan = FaultPlan::new();
    let (store, _) = open_faulty_with(
        &dir.join("s.jsonl"),
        &plan,
        &options(Durability::FsyncBatch),
    );
    store.append(U1).unwrap();
    assert_eq!(plan.syncs(), 1);
    // Five appends queue up while the held one is writing; its turn takes them into
    // its group before syncing.
    let results = behind_a_held_write(&plan, &store, 5, || {});
    let seqs: Vec<u64> = results.into_iter().map(|r| r.unwrap().seq).collect();
    assert_eq!(seqs[0], 1);
    let seqs = &seqs[1..];
    assert_eq!(seqs, [2, 3, 4, 5, 6], "FIFO order kept inside the group");
    assert_eq!(
        plan.syncs(),
        2,
        "one sync for the held append and the five behind it"
    );
}

#[test]
fn a_failed_write_in_a_group_fails_the_whole_group() {
    let dir = temp_dir("groupfail");
    let path = dir.join("s.jsonl");
    let plan = FaultPlan::new();
    let (store, _) = open_faulty_with(&path, &plan, &options(Durability::FsyncBatch));
    store.append(U1).unwrap();
    // Writes: 1 = u-1, 2 = held, 3 = q0, 4 = q1 fails.
    let results = behind_a_held_write(&plan, &store, 3, || {
        plan.fail_write(4, Fault::Errno(libc::ENOSPC));
    });
    let cause = results.iter().find_map(|r| match r {
        Err(Error::Io(f)) => Some(Arc::clone(f)),
        _ => None,
    });
    let cause = cause.expect("the failed write is reported as io");
    assert_eq!(cause.os_error, Some(libc::ENOSPC));
    for r in &results {
        match r {
            Err(Error::Io(f)) => assert!(Arc::ptr_eq(f, &cause)),
            Err(Error::Tainted { cause: c }) => assert!(Arc::ptr_eq(c, &cause)),
            other => panic!("every append of the group fails: {other:?}"),
        }
    }
    assert_eq!(plan.syncs(), 1, "no sync after the failed write");
}

#[test]
fn options_parse_from_json_and_reject_unknown_members() {
    let o = JsonlOptions::from_json(r#"{"durability":"fsync_batch","lock":false}"#).unwrap();
    assert_eq!(o.durability, Durability::FsyncBatch);
    assert!(!o.lock && o.check_identity && !o.read_only);
    assert_eq!(
        JsonlOptions::from_json("{}").unwrap(),
        JsonlOptions::default()
    );
    for bad in [
        r#"{"durability":"always"}"#,
        r#"{"lok":true}"#,
        r#"{"lock":"yes"}"#,
        "[]",
        "{",
    ] {
        assert!(
            matches!(
                JsonlOptions::from_json(bad),
                Err(Error::InvalidOption { .. })
            ),
            "{bad}"
        );
    }
    // The message stays short even when it quotes a huge value.
    let huge = format!(r#"{{"durability":"{}"}}"#, "x".repeat(1 << 20));
    match JsonlOptions::from_json(&huge) {
        Err(Error::InvalidOption { message }) => assert!(message.chars().count() <= 201),
        other => panic!("{other:?}"),
    }
}
