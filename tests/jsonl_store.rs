//! The JSONL store (docs/contract.md §3): open states, the line fixed at call time, one write per
//! append, the prefix property, and the tainted rule with injected failures.

use crate::common;

use std::sync::Arc;
use std::thread;

use common::*;
use session::{Error, IoOp, LineFault, State, Store, Warning};

#[test]
fn open_creates_a_missing_file_but_not_its_folders() {
    let dir = temp_dir("create");
    let path = dir.join("new.jsonl");
    let (_store, report) = Store::open_jsonl(&path).unwrap();
    assert_eq!(report.state, State::Ready);
    assert!(path.exists());
    match Store::open_jsonl(dir.join("missing").join("x.jsonl")) {
        Err(Error::Io(failure)) => {
            assert_eq!(failure.op, IoOp::Open);
            assert_eq!(failure.os_error, Some(libc::ENOENT));
        }
        other => panic!("{:?}", other.map(|_| ())),
    }
}

#[test]
fn open_with_a_torn_tail_is_needs_repair_and_reads_the_prefix() {
    let dir = temp_dir("torn");
    let path = dir.join("s.jsonl");
    write_file(
        &path,
        format!("{}{}", lines(&[U1, A_READ]), &R_READ[..30]).as_bytes(),
    );
    let (store, report) = Store::open_jsonl(&path).unwrap();
    assert_eq!(report.state, State::NeedsRepair);
    assert_eq!(report.warnings, [Warning::UnterminatedTail { line: 3 }]);
    assert_eq!(store.state(), State::NeedsRepair);
    let snapshot = store.read().unwrap();
    assert_eq!(ids(&snapshot.entries), ["u-1", "a-read"]);
    assert_eq!(snapshot.warnings, report.warnings);
    assert_eq!(ids(&store.path_to("a-read").unwrap()), ["u-1", "a-read"]);
}

#[test]
fn append_in_needs_repair_is_refused_without_touching_the_file() {
    let dir = temp_dir("refuse");
    let path = dir.join("s.jsonl");
    let original = format!("{}\0\0\0", lines(&[U1]));
    write_file(&path, original.as_bytes());
    let plan = FaultPlan::new();
    let (store, _) = open_faulty(&path, &plan);
    match store.append(A_READ) {
        Err(Error::NeedsRepair { warnings }) => {
            assert_eq!(warnings, [Warning::UnterminatedTail { line: 2 }])
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(plan.writes(), 0, "no I/O in needs_repair");
    assert_eq!(read_file(&path), original.as_bytes());
}

#[test]
fn whitespace_tail_opens_ready_and_the_next_line_parses() {
    let dir = temp_dir("ws");
    let path = dir.join("s.jsonl");
    write_file(&path, format!("{} \t\r", lines(&[U1])).as_bytes());
    let (store, report) = Store::open_jsonl(&path).unwrap();
    assert_eq!(report.state, State::Ready);
    store.append(A_READ).unwrap();
    drop(store);
    let (store, report) = Store::open_jsonl(&path).unwrap();
    assert_eq!(report.state, State::Ready);
    assert_eq!(ids(&store.entries().unwrap()), ["u-1", "a-read"]);
}

#[test]
fn open_fails_on_a_committed_bad_line_naming_it() {
    let dir = temp_dir("bad");
    let path = dir.join("s.jsonl");
    write_file(
        &path,
        format!("{}{{\"id\":\n{}", lines(&[U1]), lines(&[A_READ])).as_bytes(),
    );
    match Store::open_jsonl(&path) {
        Err(Error::CorruptLine {
            line: 2,
            fault: LineFault::Json(_),
        }) => {}
        other => panic!("{:?}", other.map(|_| ())),
    }
}

#[test]
fn open_replays_tree_rules_naming_the_line() {
    let dir = temp_dir("replay");
    let path = dir.join("dup.jsonl");
    write_file(&path, lines(&[U1, A_READ, U1]).as_bytes());
    match Store::open_jsonl(&path) {
        Err(Error::DuplicateId { id, line: Some(3) }) => assert_eq!(id, "u-1"),
        other => panic!("{:?}", other.map(|_| ())),
    }
    let path = dir.join("orphan.jsonl");
    write_file(&path, lines(&[U1, R_READ]).as_bytes());
    match Store::open_jsonl(&path) {
        Err(Error::MissingParent {
            child_id,
            parent_id,
            line: Some(2),
        }) => {
            assert_eq!(
                (child_id.as_str(), parent_id.as_str()),
                ("r-read", "a-read")
            );
        }
        other => panic!("{:?}", other.map(|_| ())),
    }
    // A parent on a later line is not on an earlier committed line.
    let path = dir.join("forward.jsonl");
    write_file(&path, lines(&[A_READ, U1]).as_bytes());
    assert!(matches!(
        Store::open_jsonl(&path),
        Err(Error::MissingParent { line: Some(1), .. })
    ));
}

#[test]
fn seq_counts_entries_already_in_the_file() {
    let dir = temp_dir("seq");
    let path = dir.join("s.jsonl");
    write_file(&path, format!("\n{}\n", lines(&[U1, A_READ])).as_bytes());
    let (store, _) = Store::open_jsonl(&path).unwrap();
    assert_eq!(store.append(R_READ).unwrap().seq, 2);
}

#[test]
fn every_append_is_one_write_and_keeps_the_old_bytes_as_a_prefix() {
    let dir = temp_dir("prefix");
    let path = dir.join("s.jsonl");
    let plan = FaultPlan::new();
    let (store, _) = open_faulty(&path, &plan);
    let mut before = read_file(&path);
    for (i, line) in CHAPTER.iter().enumerate() {
        store.append(line).unwrap();
        assert_eq!(plan.writes(), i as u64 + 1, "one write call per append");
        let after = read_file(&path);
        assert!(
            after.starts_with(&before),
            "old bytes are a prefix after append {i}"
        );
        assert_eq!(&after[before.len()..], format!("{line}\n").as_bytes());
        before = after;
    }
}

#[test]
fn the_written_line_is_the_canonical_entry() {
    let dir = temp_dir("canon");
    let path = dir.join("s.jsonl");
    let (store, _) = Store::open_jsonl(&path).unwrap();
    store.append("{ \"id\" : \"u\" ,\n \"parentId\":null, \"timestamp\": 1, \"type\":\"metadata\", \"key\":\"k\", \"value\": [1, 2] }").unwrap();
    assert_eq!(
        String::from_utf8(read_file(&path)).unwrap(),
        "{\"id\":\"u\",\"parentId\":null,\"timestamp\":1,\"type\":\"metadata\",\"key\":\"k\",\"value\":[1,2]}\n"
    );
}

fn tainted_cause(result: Result<impl std::fmt::Debug, Error>) -> Arc<session::IoFailure> {
    match result {
        Err(Error::Tainted { cause }) => cause,
        other => panic!("expected tainted, got {other:?}"),
    }
}

#[test]
fn a_failed_write_taints_the_store_and_stops_all_io() {
    for fault in [
        Fault::Errno(libc::ENOSPC),
        Fault::ShortThenEio,
        Fault::EioAfterFullWrite,
    ] {
        let dir = temp_dir("taint");
        let path = dir.join("s.jsonl");
        let plan = FaultPlan::new();
        let (store, _) = open_faulty(&path, &plan);
        store.append(U1).unwrap();
        plan.fail_write(2, fault);
        let first = match store.append(A_READ) {
            Err(Error::Io(failure)) => failure,
            other => panic!("{fault:?}: {other:?}"),
        };
        assert_eq!(first.op, IoOp::Write);
        assert_eq!(store.state(), State::Tainted);
        let writes = plan.writes();
        let size = read_file(&path).len();
        // Every later operation reports the very same failure and does no I/O.
        for cause in [
            tainted_cause(store.append(R_READ)),
            tainted_cause(store.append(user("root2", None, "x"))),
            tainted_cause(store.entries()),
            tainted_cause(store.read()),
            tainted_cause(store.path_to("u-1")),
            tainted_cause(store.messages_on_path_json("u-1")),
        ] {
            assert!(Arc::ptr_eq(&cause, &first), "{fault:?}: the original error");
        }
        assert_eq!(plan.writes(), writes, "{fault:?}: no write after the taint");
        assert_eq!(
            read_file(&path).len(),
            size,
            "{fault:?}: the file does not change"
        );
        // Validation still fails at call time, before the FIFO.
        assert!(matches!(store.append("{"), Err(Error::InvalidJson(_))));
    }
}

#[test]
fn reopen_after_a_half_line_is_needs_repair_with_the_acknowledged_entries() {
    let dir = temp_dir("half");
    let path = dir.join("s.jsonl");
    {
        let plan = FaultPlan::new();
        let (store, _) = open_faulty(&path, &plan);
        store.append(U1).unwrap();
        store.append(A_READ).unwrap();
        plan.fail_write(3, Fault::ShortThenEio);
        assert!(matches!(store.append(R_READ), Err(Error::Io(_))));
    }
    let (store, report) = Store::open_jsonl(&path).unwrap();
    assert_eq!(report.state, State::NeedsRepair);
    assert_eq!(report.warnings, [Warning::UnterminatedTail { line: 3 }]);
    assert_eq!(ids(&store.entries().unwrap()), ["u-1", "a-read"]);
}

#[test]
fn appends_queued_behind_a_failing_write_fail_with_the_same_error() {
    let dir = temp_dir("queued");
    let path = dir.join("s.jsonl");
    let plan = FaultPlan::new();
    let (store, _) = open_faulty(&path, &plan);
    let store = Arc::new(store);
    store.append(U1).unwrap();
    plan.fail_write(2, Fault::Errno(libc::EIO));
    plan.hold();
    let failing = {
        let store = Arc::clone(&store);
        thread::spawn(move || store.append(A_READ))
    };
    plan.wait_blocked();
    // These enter the FIFO while the failing write is in flight.
    let queued: Vec<_> = ["q1", "q2", "q3"]
        .into_iter()
        .map(|id| {
            let store = Arc::clone(&store);
            let line = user(id, Some("u-1"), "x");
            let h = thread::spawn(move || store.append(line));
            thread::sleep(std::time::Duration::from_millis(20));
            h
        })
        .collect();
    let reader = {
        let store = Arc::clone(&store);
        thread::spawn(move || store.entries())
    };
    thread::sleep(std::time::Duration::from_millis(20));
    plan.release();
    let first = match failing.join().unwrap() {
        Err(Error::Io(f)) => f,
        other => panic!("{other:?}"),
    };
    for h in queued {
        assert!(Arc::ptr_eq(&tainted_cause(h.join().unwrap()), &first));
    }
    assert!(Arc::ptr_eq(&tainted_cause(reader.join().unwrap()), &first));
    assert_eq!(plan.writes(), 2, "queued appends perform no I/O");
}

#[test]
fn a_queued_child_commits_after_its_parent_in_fifo_order() {
    let dir = temp_dir("fifo");
    let path = dir.join("s.jsonl");
    let plan = FaultPlan::new();
    let (store, _) = open_faulty(&path, &plan);
    let store = Arc::new(store);
    plan.hold();
    let parent = {
        let store = Arc::clone(&store);
        thread::spawn(move || store.append(U1))
    };
    plan.wait_blocked();
    // The child is called while its parent is not committed yet: the parent check
    // runs in the child's turn, after the parent's.
    let child = {
        let store = Arc::clone(&store);
        thread::spawn(move || store.append(A_READ))
    };
    thread::sleep(std::time::Duration::from_millis(20));
    let reader = {
        let store = Arc::clone(&store);
        thread::spawn(move || store.entries())
    };
    thread::sleep(std::time::Duration::from_millis(20));
    plan.release();
    assert_eq!(parent.join().unwrap().unwrap().seq, 0);
    assert_eq!(child.join().unwrap().unwrap().seq, 1);
    // The read arrived after both appends, so it waited for them.
    assert_eq!(ids(&reader.join().unwrap().unwrap()), ["u-1", "a-read"]);
}

#[test]
fn file_order_equals_seq_order_under_concurrent_appends() {
    const THREADS: usize = 8;
    const PER_THREAD: usize = 250;
    let dir = temp_dir("threads");
    let path = dir.join("s.jsonl");
    let (store, _) = Store::open_jsonl(&path).unwrap();
    let receipts = append_chains(&store, THREADS, PER_THREAD, None, |_, _, _, _| {});
    drop(store);
    assert_file_order_is_seq_order(&path, &receipts, THREADS * PER_THREAD);
    let (reopened, report) = Store::open_jsonl(&path).unwrap();
    assert_eq!(report.state, State::Ready);
    assert_eq!(reopened.len().unwrap(), THREADS * PER_THREAD);
}

#[test]
fn an_entry_longer_than_the_line_limit_is_refused_before_writing() {
    let dir = temp_dir("long");
    let path = dir.join("s.jsonl");
    let (store, _) = Store::open_jsonl(&path).unwrap();
    let big = user("big", None, &"x".repeat(session::MAX_LINE_BYTES));
    assert!(matches!(store.append(&big), Err(Error::InvalidEntry(e)) if e.pointer.is_empty()));
    assert_eq!(store.state(), State::Ready);
    assert_eq!(read_file(&path).len(), 0);
    // The memory store has no lines, so no such limit.
    assert!(Store::memory().append(&big).is_ok());
}
