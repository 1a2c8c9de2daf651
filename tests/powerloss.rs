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

mod common;

use std::io;
use std::sync::{Arc, Mutex};

use common::*;
use session::{Durability, Error, JsonlOptions, SessionFile, State, Store, recover_jsonl};

/// What the recording layer saw: the bytes written in order, and the length of the
/// file at each sync.
#[derive(Default)]
struct Recording {
    bytes: Vec<u8>,
    synced: usize,
}

struct Recorder {
    file: std::fs::File,
    rec: Arc<Mutex<Recording>>,
}

impl SessionFile for Recorder {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = io::Write::write(&mut self.file, buf)?;
        self.rec.lock().unwrap().bytes.extend_from_slice(&buf[..n]);
        Ok(n)
    }

    fn sync(&mut self) -> io::Result<()> {
        self.file.sync_data()?;
        let mut rec = self.rec.lock().unwrap();
        rec.synced = rec.bytes.len();
        Ok(())
    }
}

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

/// What a damaged unsynced chunk holds after power loss (undamaged chunks hold data).
#[derive(Clone, Copy, Debug)]
enum Fill {
    Zeros,
    Garbage,
}

/// Every crash state of a recording: synced bytes kept, the unsynced suffix cut at each
/// 4 KiB boundary and at three-way splits between them, and the kept unsynced chunks
/// filled as data, zeros or garbage (the last chunk, or one earlier chunk).
fn crash_states(rec: &Recording) -> Vec<(Vec<u8>, bool)> {
    const CHUNK: usize = 4096;
    let base = rec.synced;
    let suffix = &rec.bytes[base..];
    let mut cuts: Vec<usize> = (0..=suffix.len()).step_by(CHUNK).collect();
    for w in (0..suffix.len()).step_by(CHUNK) {
        cuts.extend(
            [w + CHUNK / 3, w + 2 * CHUNK / 3]
                .into_iter()
                .filter(|&c| c < suffix.len()),
        );
    }
    cuts.push(suffix.len());
    cuts.sort_unstable();
    cuts.dedup();
    let mut states = Vec::new();
    let mut seed = 0x9E37_79B9_7F4A_7C15u64;
    for &cut in &cuts {
        let kept = &suffix[..cut];
        let chunks = kept.len().div_ceil(CHUNK);
        // (which chunk is damaged, how): none; the last; the first of several.
        let mut plans: Vec<Option<(usize, Fill)>> = vec![None];
        if chunks > 0 {
            for fill in [Fill::Zeros, Fill::Garbage] {
                plans.push(Some((chunks - 1, fill)));
                if chunks > 1 {
                    plans.push(Some((0, fill)));
                }
            }
        }
        for plan in plans {
            let mut bytes = rec.bytes[..base].to_vec();
            let mut tail = kept.to_vec();
            let mut damage_before_data = false;
            if let Some((chunk, fill)) = plan {
                let range = chunk * CHUNK..((chunk + 1) * CHUNK).min(tail.len());
                damage_before_data = range.end < tail.len();
                for b in &mut tail[range] {
                    *b = match fill {
                        Fill::Zeros => 0,
                        Fill::Garbage => {
                            seed ^= seed << 13;
                            seed ^= seed >> 7;
                            seed ^= seed << 17;
                            (seed >> 24) as u8
                        }
                    };
                }
            }
            bytes.extend_from_slice(&tail);
            states.push((bytes, damage_before_data));
        }
    }
    states
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
