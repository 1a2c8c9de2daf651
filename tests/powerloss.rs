//! T7 — simulated power loss (docs/reliability.md; SQLite's crash VFS, LevelDB's
//! fault_injection_test, ALICE's model).
//!
//! A recording layer sits between the store and its file and remembers where each
//! sync happened. A crash state keeps the synced bytes and some prefix of the unsynced
//! suffix, and each 4 KiB chunk of that kept suffix is data, zeros or garbage (what a
//! filesystem may leave after power loss). Every state is recovered by a strict open:
//!
//! - with `fsync`, every acknowledged entry survives in 100% of states;
//! - with `none`, the recovered entries are a prefix of the written ones;
//! - a state with zeros or garbage before more data is never accepted silently: it is
//!   a hard error with a line number, or an unterminated tail that repair removes.

use crate::common;

use std::sync::{Arc, Mutex};

use common::powerloss::{Recorder, Recording, crash_states};
use common::*;
use session::{Durability, Error, JsonlOptions, State, Store, recover_jsonl};

/// Runs the workload; returns the recording and the acknowledged lines in order.
fn workload(durability: Durability, entries: usize) -> (Recording, Vec<String>) {
    let dir = temp_dir("powerloss");
    let rec = Arc::new(Mutex::new(Recording::default()));
    let options = JsonlOptions {
        durability,
        ..JsonlOptions::default()
    };
    let recorder = Arc::clone(&rec);
    let (store, _) =
        Store::open_jsonl_with_options_and_io(dir.join("s.jsonl"), &options, move |file| {
            Box::new(Recorder {
                file,
                rec: recorder,
            })
        })
        .unwrap();
    let mut acked = Vec::new();
    let mut parent: Option<String> = None;
    for i in 0..entries {
        // Lines of varied length, some spanning 4 KiB chunks.
        let text = "x".repeat((i * 397) % 5000);
        let id = format!("e{i}");
        let line = user(&id, parent.as_deref(), &text);
        store.append(&line).unwrap();
        acked.push(line);
        parent = Some(id);
    }
    drop(store);
    let rec = std::mem::take(&mut *rec.lock().unwrap());
    (rec, acked)
}

/// How a crash state recovered.
enum Outcome {
    /// Clean or needs repair, with these committed lines.
    Recovered(Vec<String>),
    /// A hard error naming a line.
    HardError,
}

fn recover(bytes: &[u8]) -> Outcome {
    match recover_jsonl(bytes) {
        Ok(r) => Outcome::Recovered(r.entries.iter().map(|e| e.json().to_owned()).collect()),
        Err(Error::CorruptLine { line, .. }) if line >= 1 => Outcome::HardError,
        Err(e) => panic!("a crash state must recover or fail at a line, not {e}"),
    }
}

#[test]
fn t7_with_fsync_every_acknowledged_entry_survives_every_crash_state() {
    let (rec, acked) = workload(Durability::Fsync, 40);
    assert_eq!(
        rec.synced,
        rec.bytes.len(),
        "fsync: everything acknowledged is synced"
    );
    // Power loss can only drop or damage unsynced bytes, and there are none: the
    // synced file itself is the one state, and it holds every acknowledged entry.
    let states = crash_states(&rec);
    let mut violations = 0;
    for (bytes, _) in &states {
        match recover(bytes) {
            Outcome::Recovered(lines) if lines == acked => {}
            _ => violations += 1,
        }
    }
    println!(
        "T7 fsync: {} crash states, {violations} violations",
        states.len()
    );
    assert_eq!(violations, 0);
}

#[test]
fn t7_with_group_commit_every_acknowledged_entry_survives() {
    let (rec, acked) = workload(Durability::FsyncBatch, 40);
    assert_eq!(rec.synced, rec.bytes.len());
    match recover(&rec.bytes) {
        Outcome::Recovered(lines) => assert_eq!(lines, acked),
        Outcome::HardError => panic!("the synced file must recover"),
    }
}

#[test]
fn t7_without_sync_recovery_is_a_prefix_and_damage_is_never_silent() {
    let (mut rec, acked) = workload(Durability::None, 60);
    // Nothing was synced: power loss may leave any prefix of the writes, damaged.
    rec.synced = 0;
    let states = crash_states(&rec);
    let (mut prefixes, mut hard_errors, mut repaired, mut violations) = (0, 0, 0, 0);
    let dir = temp_dir("t7-repair");
    for (i, (bytes, damage_before_data)) in states.iter().enumerate() {
        match recover(bytes) {
            Outcome::Recovered(lines) => {
                if lines.len() > acked.len() || lines[..] != acked[..lines.len()] {
                    violations += 1;
                    continue;
                }
                prefixes += 1;
                if *damage_before_data {
                    // Damage followed by data may only be accepted if it is an
                    // unterminated tail that repair removes, leaving a clean prefix.
                    let path = dir.join(format!("s{i}.jsonl"));
                    write_file(&path, bytes);
                    let (store, report) = Store::open_jsonl(&path).unwrap();
                    drop(store);
                    if report.state != State::NeedsRepair {
                        // Damage followed by data, accepted without a warning: silent.
                        violations += 1;
                        continue;
                    }
                    if report.state == State::NeedsRepair {
                        session::repair_jsonl(&path).unwrap();
                        let (_, again) = Store::open_jsonl(&path).unwrap();
                        assert_eq!(again.state, State::Ready);
                        repaired += 1;
                    }
                }
            }
            // Undamaged prefixes never fail: see the test below.
            Outcome::HardError => hard_errors += 1,
        }
    }
    println!(
        "T7 none: {} crash states: {prefixes} recovered a prefix ({repaired} after repair), {hard_errors} hard errors at a line, {violations} violations",
        states.len()
    );
    assert!(states.len() > 100);
    assert_eq!(violations, 0);
}

#[test]
fn t7_undamaged_prefixes_always_recover_the_committed_entries() {
    let (rec, acked) = workload(Durability::None, 60);
    let mut lines_end = Vec::new();
    for (i, b) in rec.bytes.iter().enumerate() {
        if *b == b'\n' {
            lines_end.push(i + 1);
        }
    }
    let mut states = 0;
    for cut in (0..=rec.bytes.len()).step_by(97).chain([rec.bytes.len()]) {
        let committed = lines_end.iter().filter(|&&end| end <= cut).count();
        match recover(&rec.bytes[..cut]) {
            Outcome::Recovered(lines) => assert_eq!(lines[..], acked[..committed], "cut {cut}"),
            Outcome::HardError => panic!("an undamaged prefix at {cut} is not a hard error"),
        }
        states += 1;
    }
    println!("T7 undamaged prefixes: {states} states, 0 violations");
}
