//! Injected I/O errors (docs/reliability.md T4) and a file changed under an open
//! writer (T20 b): a fault at every write call of a workload, in every mode, with
//! every fault, must taint the store with one shared error, stop all I/O, and leave a
//! file that reopens to exactly the acknowledged entries.

use crate::common;

use std::sync::Arc;

use common::*;
use session::{Entry, Error, IoFailure, IoOp, State, Store, Warning, parse_entry};

/// The largest count one write call accepts in T4, so that the 1 MiB entry takes
/// several calls and a fault can land in the middle of a line.
const CHUNK: usize = 256 * 1024;

/// Index of the ~1 MiB entry in the workload.
const BIG: usize = 40;

/// The T4 workload: 50 entries (a chain with branches), entry 40 a ~1 MiB tool result.
fn workload() -> Vec<Entry> {
    (0..50usize)
        .map(|i| {
            let parent = match i {
                0 => None,
                _ if i.is_multiple_of(9) => Some(format!("w-{:02}", i - 3)),
                _ => Some(format!("w-{:02}", i - 1)),
            };
            let text = if i == BIG {
                "0123456789abcdef 读取 ".repeat(45_000)
            } else {
                format!("step {i} — 项目名是 tiny-pi")
            };
            let value = serde_json::json!({
                "id": format!("w-{i:02}"), "parentId": parent, "timestamp": i, "type": "message",
                "message": {"role": "toolResult", "toolCallId": format!("call-{i}"),
                    "toolName": "read", "content": [{"type": "text", "text": text}],
                    "isError": false},
            });
            parse_entry(value.to_string()).expect("workload entry")
        })
        .collect()
}

fn line_of(entry: &Entry) -> Vec<u8> {
    [entry.json().as_bytes(), b"\n"].concat()
}

/// The 1-based write calls each append makes without faults, as (first, last).
fn calls_per_append(entries: &[Entry]) -> Vec<(u64, u64)> {
    let mut next = 1;
    entries
        .iter()
        .map(|e| {
            let calls = line_of(e).len().div_ceil(CHUNK) as u64;
            let range = (next, next + calls - 1);
            next += calls;
            range
        })
        .collect()
}

const FAULTS: [Fault; 5] = [
    Fault::Errno(libc::EIO),
    Fault::Errno(libc::ENOSPC),
    Fault::Errno(libc::EINTR),
    Fault::ShortThenEio,
    Fault::EioAfterFullWrite,
];

const MODES: [FaultMode; 2] = [FaultMode::TransientOnce, FaultMode::Persistent];

/// Checks that `result` is `Tainted` by exactly `cause`.
fn check_tainted<T: std::fmt::Debug>(
    what: &str,
    result: Result<T, Error>,
    cause: &Arc<IoFailure>,
    v: &mut Vec<String>,
) {
    match result {
        Err(Error::Tainted { cause: c }) if Arc::ptr_eq(&c, cause) => {
            if (c.kind, c.os_error, &c.message) != (cause.kind, cause.os_error, &cause.message) {
                v.push(format!("{what}: same Arc, different facts?"));
            }
        }
        Err(Error::Tainted { cause: c }) => {
            v.push(format!("{what}: tainted by another error object: {c}"))
        }
        other => v.push(format!("{what}: {other:?}, expected tainted")),
    }
}

/// One T4 run: the workload with `fault` at write call `k` in `mode`. Returns its
/// violations, each prefixed with the run's coordinates.
fn run(k: u64, mode: FaultMode, fault: Fault, entries: &[Entry], dir: &TempDir) -> Vec<String> {
    let mut v = Vec::new();
    let path = dir.join(format!("k{k}-{mode:?}-{fault:?}.jsonl"));
    let calls = calls_per_append(entries);
    let script = FaultPlan::with(Script {
        max_chunk: Some(CHUNK),
        fault: Some((k, fault, mode)),
        ..Script::default()
    });
    let (store, report) =
        Store::open_jsonl_with_io(&path, FaultyFile::wrap(&script)).expect("open a new file");
    assert_eq!(report.state, State::Ready);

    // The workload: every append, recording what was acknowledged.
    let mut acked: Vec<&Entry> = Vec::new();
    let mut failure: Option<(usize, Arc<IoFailure>, u64)> = None;
    for (i, entry) in entries.iter().enumerate() {
        let result = store.append_entry(entry.clone());
        match (&failure, result) {
            (None, Ok(receipt)) => {
                if receipt.seq != acked.len() as u64 || receipt.id != entry.id() {
                    v.push(format!("append {i}: receipt {receipt:?}"));
                }
                acked.push(entry);
            }
            (None, Err(Error::Io(f))) => {
                let writes = script.script().writes;
                failure = Some((i, f, writes));
            }
            (Some((_, cause, _)), result) => check_tainted(
                &format!("append {i} after the failure"),
                result,
                cause,
                &mut v,
            ),
            (None, Err(e)) => v.push(format!("append {i}: {e}")),
        }
    }

    let s = script.script();
    let (writes, bytes_written, failed_at) = (s.writes, s.bytes_written, s.failed_at);
    drop(s);
    let total_calls = calls.last().map_or(0, |c| c.1);
    let expected_fail_call = match fault {
        Fault::Errno(libc::EINTR) => None,
        Fault::ShortThenEio => Some(k + 1),
        _ => Some(k),
    };
    match (fault, &failure) {
        (Fault::Errno(libc::EINTR), None) => {
            let retries = match mode {
                FaultMode::TransientOnce => 1,
                FaultMode::Persistent => EINTR_BURST,
            };
            if writes != total_calls + retries {
                v.push(format!(
                    "EINTR: {writes} write calls, expected {}",
                    total_calls + retries
                ));
            }
        }
        (_, Some((i, f, writes_at_failure))) => {
            // The append whose line the fault-free run writes with call k (a short write
            // adds one call for the rest of that same line).
            let expected_index = calls
                .iter()
                .position(|&(first, last)| (first..=last).contains(&k));
            if Some(*i) != expected_index {
                v.push(format!("append {i} failed, expected {expected_index:?}"));
            }
            let errno = match fault {
                Fault::Errno(e) => e,
                _ => libc::EIO,
            };
            let io_kind = std::io::Error::from_raw_os_error(errno).kind();
            if f.os_error != Some(errno) || f.kind != io_kind || f.op != IoOp::Write {
                v.push(format!("the error is {f:?}, expected errno {errno}"));
            }
            if failed_at != expected_fail_call || *writes_at_failure != failed_at.unwrap_or(0) {
                v.push(format!(
                    "failed at call {failed_at:?} with {writes_at_failure} calls, expected {expected_fail_call:?}"
                ));
            }
            if writes != *writes_at_failure {
                v.push(format!(
                    "{} write calls after the taint",
                    writes - writes_at_failure
                ));
            }
            if store.state() != State::Tainted {
                v.push(format!("state {:?}", store.state()));
            }
            check_tainted("entries", store.entries(), f, &mut v);
            check_tainted("read", store.read(), f, &mut v);
            check_tainted("path_to", store.path_to("w-00"), f, &mut v);
            check_tainted(
                "messages_on_path",
                store.messages_on_path("w-00"),
                f,
                &mut v,
            );
            check_tainted("len", store.len(), f, &mut v);
            check_tainted("append", store.append(user("late", None, "x")), f, &mut v);
            if script.script().writes != writes {
                v.push("reads or appends after the taint wrote".into());
            }
        }
        (_, None) => v.push("no append failed".into()),
    }
    drop(store);

    // The file: the acknowledged lines, then at most part of the failed line (or all
    // of it when the fault came after a full write).
    let bytes = std::fs::read(&path).expect("read back");
    let prefix: Vec<u8> = acked.iter().flat_map(|e| line_of(e)).collect();
    let mut expected_entries: Vec<&Entry> = acked.clone();
    let mut partial = false;
    if !bytes.starts_with(&prefix) {
        v.push("the file does not start with the acknowledged lines".into());
    } else if let Some((i, _, _)) = &failure {
        let rest = &bytes[prefix.len()..];
        let failed_line = line_of(&entries[*i]);
        if !failed_line.starts_with(rest) {
            v.push(format!(
                "after the acknowledged lines: {} bytes that are not the failed line",
                rest.len()
            ));
        }
        if rest.len() as u64 + prefix.len() as u64 != bytes_written {
            v.push("the file holds bytes the fault layer did not write".into());
        }
        if rest.len() == failed_line.len() {
            if fault != Fault::EioAfterFullWrite {
                v.push("a failed write left its whole line".into());
            }
            expected_entries.push(&entries[*i]);
        } else {
            partial = !rest.is_empty();
        }
    } else if bytes != prefix {
        v.push("extra bytes after a clean workload".into());
    }

    // Reopen with the real file: exactly what the disk commits.
    match Store::open_jsonl(&path) {
        Ok((store, report)) => {
            let got = store.entries().expect("entries");
            if got.iter().collect::<Vec<_>>() != expected_entries {
                v.push(format!(
                    "reopen: {} entries, expected {}",
                    got.len(),
                    expected_entries.len()
                ));
            }
            let expected_warnings: Vec<Warning> = partial
                .then_some(Warning::UnterminatedTail {
                    line: expected_entries.len() as u64 + 1,
                })
                .into_iter()
                .collect();
            if report.warnings != expected_warnings {
                v.push(format!(
                    "reopen warnings {:?}, expected {expected_warnings:?}",
                    report.warnings
                ));
            }
        }
        Err(e) => v.push(format!("reopen: hard error {e}")),
    }

    // A caller's repair (cut to the committed prefix), then one more append.
    if partial {
        truncate_to_committed(&path);
    }
    let last = expected_entries.last().map(|e| e.id().to_owned());
    match Store::open_jsonl(&path) {
        Ok((store, report)) if report.state == State::Ready => {
            if let Err(e) = store.append(user("after-repair", last.as_deref(), "ok")) {
                v.push(format!("append after repair: {e}"));
            }
        }
        Ok((_, report)) => v.push(format!("after repair: {report:?}")),
        Err(e) => v.push(format!("after repair: {e}")),
    }
    let _ = std::fs::remove_file(&path);
    v.into_iter()
        .map(|m| format!("k={k} {mode:?} {fault:?}: {m}"))
        .collect()
}

#[test]
fn t4_a_fault_at_any_write_taints_the_store_and_keeps_exactly_the_acknowledged_entries() {
    let entries = workload();
    let big = line_of(&entries[BIG]).len();
    assert!(big > 1 << 20, "the big entry is over 1 MiB");
    let n = calls_per_append(&entries).last().map_or(0, |c| c.1);
    // The fault-free workload makes exactly these calls.
    let dir = temp_dir("t4");
    let script = FaultPlan::with(Script {
        max_chunk: Some(CHUNK),
        ..Script::default()
    });
    let path = dir.join("clean.jsonl");
    let (store, _) = Store::open_jsonl_with_io(&path, FaultyFile::wrap(&script)).expect("open");
    for entry in &entries {
        store.append_entry(entry.clone()).expect("clean append");
    }
    drop(store);
    assert_eq!(script.script().writes, n, "write calls of the workload");

    let mut runs = Vec::new();
    for k in 1..=n {
        for mode in MODES {
            for fault in FAULTS {
                runs.push((k, mode, fault));
            }
        }
    }
    let started = std::time::Instant::now();
    let violations: Vec<String> = in_parallel(&runs, |&(k, mode, fault)| {
        let v = run(k, mode, fault, &entries, &dir);
        (!v.is_empty()).then_some(v)
    })
    .into_iter()
    .flatten()
    .collect();
    println!(
        "T4: {n} x {} modes x {} faults = {} runs (50 appends, one {big}-byte line in {}-KiB write calls), violations {} ({:.1?})",
        MODES.len(),
        FAULTS.len(),
        runs.len(),
        CHUNK / 1024,
        violations.len(),
        started.elapsed()
    );
    assert_no_violations("T4", &violations);
}

#[test]
fn t4_appends_and_reads_queued_behind_a_failing_write_fail_with_the_same_cause() {
    let dir = temp_dir("t4-queued");
    let mut runs = 0;
    let mut violations = Vec::new();
    for mode in MODES {
        for fault in [
            Fault::Errno(libc::EIO),
            Fault::Errno(libc::ENOSPC),
            Fault::ShortThenEio,
            Fault::EioAfterFullWrite,
        ] {
            runs += 1;
            let path = dir.join(format!("{mode:?}-{fault:?}.jsonl"));
            let script = FaultPlan::with(Script {
                fault: Some((3, fault, mode)),
                hold: Hold::Call(3),
                ..Script::default()
            });
            let (store, _) =
                Store::open_jsonl_with_io(&path, FaultyFile::wrap(&script)).expect("open");
            store.append(user("q-0", None, "a")).expect("first");
            store.append(user("q-1", Some("q-0"), "b")).expect("second");
            std::thread::scope(|s| {
                let failing = s.spawn(|| store.append(user("q-2", Some("q-1"), "c")));
                script.wait_blocked();
                let queued: Vec<_> = (3..6)
                    .map(|i| {
                        let store = &store;
                        s.spawn(move || store.append(user(&format!("q-{i}"), Some("q-1"), "d")))
                    })
                    .collect();
                let reader = s.spawn(|| store.entries());
                // Give the queued calls time to enter the FIFO behind the held write.
                std::thread::sleep(std::time::Duration::from_millis(50));
                script.release();
                let cause = match failing.join().expect("thread") {
                    Err(Error::Io(f)) => f,
                    other => {
                        violations.push(format!("{mode:?} {fault:?}: failing append {other:?}"));
                        return;
                    }
                };
                for q in queued {
                    check_tainted(
                        "queued append",
                        q.join().expect("thread"),
                        &cause,
                        &mut violations,
                    );
                }
                check_tainted(
                    "queued read",
                    reader.join().expect("thread"),
                    &cause,
                    &mut violations,
                );
            });
            let s = script.script();
            if Some(s.writes) != s.failed_at {
                violations.push(format!(
                    "{mode:?} {fault:?}: {} calls, failed at {:?}",
                    s.writes, s.failed_at
                ));
            }
        }
    }
    println!(
        "T4 queued: runs {runs} (3 appends and 1 read queued behind each failing write), violations {}",
        violations.len()
    );
    assert_no_violations("T4 queued", &violations);
}

// ---------------------------------------------------------------------------------------
// T20 (b) — the file is unlinked or renamed under an open writer

/// Today's answer to an append after the file changed under the writer.
fn describe_append(result: Result<session::Receipt, Error>) -> String {
    match result {
        Ok(receipt) => format!(
            "the append succeeds (seq {}) into the old inode, which the path no longer names",
            receipt.seq
        ),
        Err(Error::Io(f)) => match f.change {
            Some(change) => format!(
                "the append is refused before writing ({} {}: {f})",
                f.op.name(),
                change.reason(),
            ),
            None => format!("the append fails with an I/O error: {f}"),
        },
        Err(e) => format!("the append fails: {e}"),
    }
}

#[test]
fn t20b_unlink_or_rename_under_an_open_writer_is_measured() {
    let dir = temp_dir("t20b");

    let path = dir.join("unlinked.jsonl");
    let (store, _) = Store::open_jsonl(&path).expect("open");
    store.append(U1).expect("before");
    std::fs::remove_file(&path).expect("unlink");
    let after_unlink = describe_append(store.append(A_READ));
    let state = store.state();
    drop(store);
    let reopened = Store::open_jsonl(&path).map(|(s, _)| s.len().unwrap_or(0));
    println!(
        "T20b unlink: {after_unlink}; state {state:?}; a reopen at the path creates a new file with {:?} entries",
        reopened.map_err(|e| e.to_string())
    );

    let path = dir.join("renamed.jsonl");
    let moved = dir.join("moved.jsonl");
    let (store, _) = Store::open_jsonl(&path).expect("open");
    store.append(U1).expect("before");
    std::fs::rename(&path, &moved).expect("rename");
    let after_rename = describe_append(store.append(A_READ));
    let state = store.state();
    drop(store);
    let at_new_name = std::fs::read(&moved).map(|b| b.iter().filter(|&&c| c == b'\n').count());
    println!(
        "T20b rename: {after_rename}; state {state:?}; lines under the new name: {:?}",
        at_new_name.map_err(|e| e.to_string())
    );
}
