//! One writer per file (issue 7): the advisory lock, read-only opens beside a writer,
//! the file-identity check before each append, and salvage reads of damaged files.

use crate::common;

use std::process::Command;

use common::*;
use session::{Error, FileChange, IoOp, JsonlOptions, Problem, State, Store, Warning};

#[test]
fn a_second_writer_in_this_process_fails_with_locked() {
    let dir = temp_dir("lock");
    let path = dir.join("s.jsonl");
    let (writer, _) = Store::open_jsonl(&path).unwrap();
    writer.append(U1).unwrap();
    assert!(matches!(
        Store::open_jsonl(&path),
        Err(Error::Locked { .. })
    ));
    drop(writer);
    // Closing the writer releases the lock.
    let (again, _) = Store::open_jsonl(&path).unwrap();
    again.append(A_READ).unwrap();
}

#[test]
fn a_second_writer_in_another_process_fails_with_locked() {
    let dir = temp_dir("lock2");
    let path = dir.join("s.jsonl");
    write_file(&path, lines(&[U1]).as_bytes());
    let (_writer, _) = Store::open_jsonl(&path).unwrap();
    // The CLI's repair takes the writer's lock: another process, refused at once.
    let started = std::time::Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_session"))
        .args(["repair", path.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(4),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("locked"));
    println!("second writer refused in {:?}", started.elapsed());
}

#[test]
fn without_the_lock_option_a_second_writer_opens() {
    let dir = temp_dir("nolock");
    let path = dir.join("s.jsonl");
    let no_lock = JsonlOptions {
        lock: false,
        ..JsonlOptions::default()
    };
    let (_a, _) = Store::open_jsonl_with(&path, &no_lock).unwrap();
    let (_b, _) = Store::open_jsonl_with(&path, &no_lock).unwrap();
}

#[test]
fn a_read_only_open_works_beside_a_writer_and_refuses_appends() {
    let dir = temp_dir("ro");
    let path = dir.join("s.jsonl");
    let (writer, _) = Store::open_jsonl(&path).unwrap();
    writer.append(U1).unwrap();
    let (reader, report) = Store::open_jsonl_with(&path, &read_only()).unwrap();
    assert_eq!(report.state, State::Ready);
    assert!(reader.is_read_only());
    assert_eq!(ids(&reader.entries().unwrap()), ["u-1"]);
    assert!(matches!(reader.append(A_READ), Err(Error::ReadOnly)));
    // The writer is unaffected.
    writer.append(A_READ).unwrap();
}

#[test]
fn a_read_only_open_never_creates_the_file() {
    let dir = temp_dir("ro-missing");
    let path = dir.join("none.jsonl");
    assert!(
        matches!(Store::open_jsonl_with(&path, &read_only()), Err(Error::Io(f)) if f.op == IoOp::Open)
    );
    assert!(!path.exists());
}

fn changed(result: Result<session::Receipt, Error>) -> FileChange {
    match result {
        Err(Error::Io(f)) => {
            assert_eq!(f.op, IoOp::Identity);
            f.change.expect("a file change")
        }
        other => panic!("expected a file change, got {other:?}"),
    }
}

#[test]
fn appending_after_the_file_was_deleted_taints_instead_of_writing() {
    let dir = temp_dir("deleted");
    let path = dir.join("s.jsonl");
    let plan = FaultPlan::new();
    let (store, _) = open_faulty(&path, &plan);
    store.append(U1).unwrap();
    std::fs::remove_file(&path).unwrap();
    assert_eq!(changed(store.append(A_READ)), FileChange::Deleted);
    assert_eq!(plan.writes(), 1, "nothing written into the unlinked file");
    assert_eq!(store.state(), State::Tainted);
    assert!(matches!(store.append(R_READ), Err(Error::Tainted { .. })));
}

#[test]
fn appending_after_the_file_was_replaced_taints_instead_of_writing() {
    let dir = temp_dir("replaced");
    let path = dir.join("s.jsonl");
    let plan = FaultPlan::new();
    let (store, _) = open_faulty(&path, &plan);
    store.append(U1).unwrap();
    let other = dir.join("other.jsonl");
    write_file(&other, lines(&[U1]).as_bytes());
    std::fs::rename(&other, &path).unwrap();
    assert_eq!(changed(store.append(A_READ)), FileChange::Replaced);
    assert_eq!(plan.writes(), 1);
    assert_eq!(
        read_file(&path),
        lines(&[U1]).as_bytes(),
        "the new file is untouched"
    );
}

#[test]
fn a_foreign_append_between_two_of_ours_is_caught() {
    let dir = temp_dir("foreign");
    let path = dir.join("s.jsonl");
    let no_lock = JsonlOptions {
        lock: false,
        ..JsonlOptions::default()
    };
    let (ours, _) = Store::open_jsonl_with(&path, &no_lock).unwrap();
    let (theirs, _) = Store::open_jsonl_with(&path, &no_lock).unwrap();
    ours.append(U1).unwrap();
    // The other writer does not know about u-1 and appends its own root.
    let expected = (U1.len() + 1) as u64;
    match changed(theirs.append(user("x", None, "foreign"))) {
        FileChange::SizeChanged {
            expected: 0,
            actual,
        } => assert_eq!(actual, expected),
        other => panic!("{other:?}"),
    }
    ours.append(A_READ).unwrap();
    assert_eq!(
        read_file(&path),
        lines(&[U1, A_READ]).as_bytes(),
        "the foreign writer wrote nothing"
    );
}

#[test]
fn a_foreign_append_is_caught_in_every_trial() {
    const TRIALS: usize = 1000;
    let dir = temp_dir("trials");
    let no_lock = JsonlOptions {
        lock: false,
        ..JsonlOptions::default()
    };
    let foreign = format!("{}\n", user("f", None, "foreign"));
    let mut caught = 0;
    for i in 0..TRIALS {
        let path = dir.join(format!("t{i}.jsonl"));
        let (store, _) = Store::open_jsonl_with(&path, &no_lock).unwrap();
        store.append(U1).unwrap();
        // Between two of our appends, a writer that does not lock appends its own line.
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        std::io::Write::write_all(&mut f, foreign.as_bytes()).unwrap();
        if let Err(Error::Io(f)) = store.append(A_READ)
            && matches!(f.change, Some(FileChange::SizeChanged { .. }))
        {
            caught += 1;
        }
    }
    println!("foreign appends between two of ours: caught {caught} of {TRIALS}");
    assert_eq!(caught, TRIALS);
}

#[test]
fn identity_checks_can_be_turned_off() {
    let dir = temp_dir("nocheck");
    let path = dir.join("s.jsonl");
    let options = JsonlOptions {
        check_identity: false,
        ..JsonlOptions::default()
    };
    let (store, _) = Store::open_jsonl_with(&path, &options).unwrap();
    store.append(U1).unwrap();
    std::fs::remove_file(&path).unwrap();
    // The documented limitation without the check: the append goes to the unlinked file.
    store.append(A_READ).unwrap();
}

#[test]
fn salvage_loads_every_good_entry_and_reports_every_bad_line() {
    let dir = temp_dir("salvage");
    let path = dir.join("s.jsonl");
    let text = format!(
        "{}{{broken\n{}\0\0\0\n{}{}",
        lines(&[U1, A_READ]),
        lines(&[A_FINAL, U1]), // a-final's parent r-read is on no good line; u-1 repeats
        lines(&[A_ALT]),
        &META_CWD[..20]
    );
    write_file(&path, text.as_bytes());
    assert!(
        Store::open_jsonl_with(&path, &read_only()).is_err(),
        "a strict open fails"
    );
    let (store, report) = Store::open_jsonl_with(&path, &salvage()).unwrap();
    assert!(store.is_read_only());
    assert_eq!(report.state, State::NeedsRepair);
    assert_eq!(report.warnings, [Warning::UnterminatedTail { line: 8 }]);
    let problems: Vec<(u64, &str)> = report
        .diagnostics
        .iter()
        .map(|d| {
            let code = match &d.problem {
                Problem::Corrupt(_) => "corrupt_line",
                Problem::DuplicateId { .. } => "duplicate_id",
                Problem::Orphan { .. } => "orphan",
                _ => "unclassified",
            };
            (d.line, code)
        })
        .collect();
    assert_eq!(
        problems,
        [
            (3, "corrupt_line"),
            (4, "orphan"),
            (5, "duplicate_id"),
            (6, "corrupt_line")
        ]
    );
    assert_eq!(
        ids(&store.entries().unwrap()),
        ["u-1", "a-read", "a-final", "a-alt"]
    );
    // A healthy path reads; a path through the orphan fails naming what is missing.
    assert_eq!(ids(&store.path_to("a-alt").unwrap()), ["u-1", "a-alt"]);
    match store.path_to("a-final") {
        Err(Error::MissingParent {
            child_id,
            parent_id,
            ..
        }) => {
            assert_eq!(
                (child_id.as_str(), parent_id.as_str()),
                ("a-final", "r-read")
            );
        }
        other => panic!("{other:?}"),
    }
    let json = String::from_utf8(store.read_json().unwrap()).unwrap();
    assert!(json.contains(r#""complete":false,"diagnostics":[{"line":3,"code":"corrupt_line","reason":"invalid_json""#), "{json}");
    assert!(
        report
            .to_json()
            .contains(r#"{"line":4,"code":"orphan","id":"a-final","parentId":"r-read"}"#)
    );
    assert!(matches!(store.append(R_READ), Err(Error::ReadOnly)));
}

#[test]
fn salvage_of_a_clean_file_is_complete() {
    let dir = temp_dir("salvage-clean");
    let path = dir.join("s.jsonl");
    write_file(&path, lines(&CHAPTER).as_bytes());
    let (store, report) = Store::open_jsonl_with(&path, &salvage()).unwrap();
    assert!(report.diagnostics.is_empty());
    assert_eq!(report.state, State::Ready);
    assert_eq!(store.len().unwrap(), 6);
    assert!(
        report
            .to_json()
            .ends_with(r#","complete":true,"diagnostics":[]}"#)
    );
}

#[test]
fn cli_repair_then_append() {
    let dir = temp_dir("cli");
    let path = dir.join("s.jsonl");
    write_file(
        &path,
        format!("{}{}", lines(&[U1]), &A_READ[..30]).as_bytes(),
    );
    let verify = |expected: i32| {
        let out = Command::new(env!("CARGO_BIN_EXE_session"))
            .args(["verify", path.to_str().unwrap()])
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(expected),
            "{}",
            String::from_utf8_lossy(&out.stdout)
        );
    };
    verify(1);
    let out = Command::new(env!("CARGO_BIN_EXE_session"))
        .args(["repair", path.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("removed an unterminated tail of 30 bytes")
    );
    verify(0);
    let (store, _) = Store::open_jsonl(&path).unwrap();
    store.append(A_READ).unwrap();
}
