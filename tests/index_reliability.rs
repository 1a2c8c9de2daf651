//! The session index never lies (docs/reliability.md, T27; issue 15). For the states
//! that T1, T2, T4 and T7 produce, with an index on disk that a writer made for the file
//! (covering all of it, or the lines before the damage), an open that may use the index
//! answers exactly as one that may not: the same report, entries, navigation, contexts
//! and errors ([`outcome`]). A stale, foreign, replaced or damaged index falls back, and
//! the next writer rewrites it. The soak tier (`SOAK=1`) adds T3's corruption census.
//!
//! Only the public API and plain file operations are used: nothing here depends on the
//! index's format. Every in-place rewrite of the session file moves its mtime forward
//! ([`rewrite_in_place`]), and, since the index records the change time (round 4),
//! every rewrite or planted tail also makes the open replay the file: these sweeps
//! then check that fallback, and `a_matching_index_is_used_a_writer_that_appends_nothing_leaves_it_as_it_is`
//! that an untouched file's index is used. Each test prints its figure.

use crate::common;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use common::index::*;
use common::powerloss::{Recorder, Recording, crash_states};
use common::*;
use session::{Durability, JsonlOptions, State, Store, index_path};

/// Runs `check` over `items` on every core. Each worker first builds its own fixture
/// with `setup(worker)`: an index names its file's inode, so workers cannot share one.
fn sweep<T: Sync, F>(
    items: &[T],
    setup: impl Fn(usize) -> F + Sync,
    check: impl Fn(&F, &T) -> Option<String> + Sync,
) -> Vec<String> {
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    let chunk = items.len().div_ceil(threads).max(1);
    let parts: Vec<(usize, &[T])> = items.chunks(chunk).enumerate().collect();
    in_parallel(&parts, |(worker, part)| {
        let fixture = setup(*worker);
        let found: Vec<String> = part.iter().filter_map(|i| check(&fixture, i)).collect();
        (!found.is_empty()).then_some(found)
    })
    .into_iter()
    .flatten()
    .collect()
}

/// The entries of T1's generated session (one line of exactly 64 KiB, a few of 2–4 KiB,
/// the rest under 1 KiB; CJK, emoji, U+2028/U+2029, escapes), `count` of them.
fn generated_lines(seed_default: u64, count: usize, long_lines: bool) -> Vec<String> {
    generated_session(seed(seed_default), count, long_lines)
        .entries()
        .iter()
        .map(|e| e.json().to_owned())
        .collect()
}

/// A session file written by a writer, and for each of its line boundaries the index a
/// writer leaves for the file cut there (`None` for the empty file, which gets none).
struct Indexed {
    path: PathBuf,
    full: Vec<u8>,
    boundaries: Vec<usize>,
    /// `indexes[i]` covers `full[..boundaries[i]]`.
    indexes: Vec<Option<Vec<u8>>>,
}

impl Indexed {
    /// Builds the fixture at `dir/name`: the file cut at each line boundary, opened by
    /// a writer (which indexes what it found), then the whole file back in place.
    fn new(dir: &Path, name: &str, lines: &[String]) -> Indexed {
        let path = dir.join(name);
        let (full, whole_index) = indexed_fixture(&path, lines);
        let boundaries = line_boundaries(&full);
        let mut indexes = Vec::new();
        for &b in &boundaries[..boundaries.len() - 1] {
            rewrite_in_place(&path, &full[..b]);
            drop(Store::open_jsonl(&path).expect("a writer opens a prefix"));
            indexes.push(std::fs::read(index_path(&path)).ok().filter(|_| b > 0));
            let _ = std::fs::remove_file(index_path(&path));
        }
        indexes.push(Some(whole_index));
        rewrite_in_place(&path, &full);
        Indexed {
            path,
            full,
            boundaries,
            indexes,
        }
    }

    /// Puts the index that covers the largest line boundary at or below `len` on disk
    /// (or none), and the file's first `len` bytes followed by `tail` in place.
    fn plant(&self, len: usize, tail: &[u8]) -> usize {
        let i = self.boundaries.partition_point(|&b| b <= len) - 1;
        self.plant_index(self.indexes[i].as_deref());
        rewrite_in_place(&self.path, &[&self.full[..len], tail].concat());
        self.boundaries[i]
    }

    fn plant_index(&self, index: Option<&[u8]>) {
        match index {
            Some(bytes) => write_file(&index_path(&self.path), bytes),
            None => {
                let _ = std::fs::remove_file(index_path(&self.path));
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// T1 — every truncation offset

/// Every offset of `bytes`, except, in a debug build outside the soak tier, inside a line
/// longer than 16 KiB (the 64 KiB one), where every 251st offset and every offset within
/// 128 B of either end is tried (the open re-reads the whole prefix at each offset, so
/// the full sweep is quadratic; release and `SOAK=1` try every offset).
fn t1_offsets(bytes: &[u8]) -> Vec<usize> {
    let thorough = soak() || !cfg!(debug_assertions);
    let bounds = line_boundaries(bytes);
    let mut offsets = Vec::new();
    for pair in bounds.windows(2) {
        let (start, end) = (pair[0], pair[1]);
        let long = end - start > 16 * 1024;
        offsets.extend(
            (start..end).filter(|&o| {
                thorough || !long || o < start + 128 || o + 128 >= end || o % 251 == 0
            }),
        );
    }
    offsets.push(bytes.len());
    offsets
}

#[test]
fn t1_every_truncation_opens_with_the_index_exactly_as_without_it() {
    let dir = temp_dir("idx-t1");
    let lines = generated_lines(0x1D71, 10, true);
    let probe = Indexed::new(&dir, "probe.jsonl", &lines);
    let longest = probe.boundaries.windows(2).map(|w| w[1] - w[0]).max();
    assert_eq!(
        longest,
        Some(64 * 1024 + 1),
        "the fixture has a 64 KiB line"
    );
    let offsets = t1_offsets(&probe.full);
    let started = Instant::now();
    // At each offset: the index covering the lines before it (the tail replayed after
    // it); and at every line boundary, the offsets next to it and every 32nd offset, the
    // index of the whole file (which covers more than the file holds: one path, so
    // sampled in the PR tier).
    let violations = sweep(
        &offsets,
        |w| Indexed::new(&dir, &format!("w{w}.jsonl"), &lines),
        |f, &cut| {
            let covered = f.plant(cut, b"");
            let partial = divergence(&f.path, &format!("cut {cut}, index to {covered}"));
            let near_boundary = f.boundaries.iter().any(|&b| b.abs_diff(cut) <= 1);
            if partial.is_some() || !(soak() || near_boundary || cut % 32 == 0) {
                return partial;
            }
            f.plant_index(f.indexes.last().and_then(Option::as_deref));
            divergence(&f.path, &format!("cut {cut}, whole-file index"))
        },
    );
    println!(
        "T1 index: {} B, {} entries, offsets tried {}, divergent {} ({:.1?})",
        probe.full.len(),
        lines.len(),
        offsets.len(),
        violations.len(),
        started.elapsed()
    );
    assert_no_violations("T1 index", &violations);
}

// ---------------------------------------------------------------------------------------
// T2 — ALICE-style tail fills after the covered prefix

#[test]
fn t2_every_tail_fill_after_the_covered_prefix_opens_as_without_the_index() {
    let dir = temp_dir("idx-t2");
    let lines = generated_lines(0x1D72, 40, false);
    let probe = Indexed::new(&dir, "probe.jsonl", &lines);
    // Bases: every line boundary, and 16 cuts inside the last line.
    let mut bases = probe.boundaries.clone();
    let last = probe.boundaries[probe.boundaries.len() - 2];
    let last_len = probe.full.len() - last;
    bases.extend((1..=16).map(|i| last + i * last_len / 17));
    let started = Instant::now();
    let cases = Mutex::new(0u64);
    let violations = sweep(
        &bases,
        |w| Indexed::new(&dir, &format!("w{w}.jsonl"), &lines),
        |f, &base| {
            let mut rng = Rng::new(seed(0x1D72) ^ base as u64);
            let mut tails: Vec<(String, Vec<u8>)> = Vec::new();
            for fill in FILLS {
                for len in [1, 7, 4096 - base % 4096, 8192] {
                    tails.push((format!("{fill:?}x{len}"), fill_bytes(fill, len, &mut rng)));
                }
            }
            // The rest of the file, torn at a few points and whole: lines the index
            // does not cover, replayed after it.
            let rest = &f.full[base..];
            for n in [1, rest.len() / 3, rest.len() / 2, rest.len()] {
                tails.push((format!("rest[..{n}]"), rest[..n.min(rest.len())].to_vec()));
            }
            tails.push(("foreign\\n".into(), format!("{FOREIGN}\n").into_bytes()));
            tails.push(("blank lines".into(), b"\n \t\r\n\n".to_vec()));
            let first = lines[0].clone();
            tails.push(("duplicate\\n".into(), format!("{first}\n").into_bytes()));
            *cases.lock().unwrap() += tails.len() as u64;
            let found: Vec<String> = tails
                .iter()
                .filter_map(|(name, tail)| {
                    let covered = f.plant(base, tail);
                    divergence(&f.path, &format!("base {base} (index to {covered}) {name}"))
                })
                .collect();
            (!found.is_empty()).then(|| found.join("\n"))
        },
    );
    println!(
        "T2 index: bases {}, cases {}, divergent {} ({:.1?})",
        bases.len(),
        cases.into_inner().unwrap(),
        violations.len(),
        started.elapsed()
    );
    assert_no_violations("T2 index", &violations);
}

// ---------------------------------------------------------------------------------------
// T3 — every single-byte corruption under a full index

#[test]
fn t3_every_single_byte_corruption_opens_with_the_index_exactly_as_without_it() {
    let dir = temp_dir("idx-t3");
    let lines = generated_lines(0x7133, 20, false);
    let full = indexed_fixture(&dir.join("probe.jsonl"), &lines).0;
    // The soak tier: every byte with the structural values and pseudo-random picks, 32
    // draws (`SESSION_T3_INDEX_VALUES=255`: each of the other 255 values; two
    // opens per case make the full census about an hour). The PR tier: every 13th byte
    // with the structural values and one pseudo-random pick.
    const STRUCTURAL: [u8; 6] = [b'\n', b'"', b'\\', b'}', 0x00, b'1'];
    let mut rng = Rng::new(seed(0x7133));
    let per_byte = env_count("SESSION_T3_INDEX_VALUES", 32) as usize;
    let mut cases: Vec<(usize, u8)> = Vec::new();
    for (at, &original) in full.iter().enumerate() {
        let values: Vec<u8> = if soak() && per_byte >= 255 {
            (0..=255u8).collect()
        } else if soak() {
            let mut picks = STRUCTURAL.to_vec();
            while picks.len() < per_byte {
                picks.push(rng.next_u64() as u8);
            }
            picks
        } else if at % 13 == 0 {
            STRUCTURAL
                .into_iter()
                .chain([rng.next_u64() as u8])
                .collect()
        } else {
            Vec::new()
        };
        cases.extend(
            values
                .into_iter()
                .filter(|&v| v != original)
                .map(|v| (at, v)),
        );
    }
    let started = Instant::now();
    let violations = sweep(
        &cases,
        |w| {
            let path = dir.join(format!("w{w}.jsonl"));
            indexed_fixture(&path, &lines);
            path
        },
        |path, &(at, value)| {
            let mut bytes = full.clone();
            bytes[at] = value;
            rewrite_in_place(path, &bytes);
            divergence(path, &format!("byte {at} = {value:#04x}"))
        },
    );
    println!(
        "T3 index: {} B, {} entries, cases {} ({}), divergent {} ({:.1?})",
        full.len(),
        lines.len(),
        cases.len(),
        if soak() {
            format!("soak: every byte, {per_byte} values")
        } else {
            "PR sample: every 13th byte, 7 values".to_owned()
        },
        violations.len(),
        started.elapsed()
    );
    assert_no_violations("T3 index", &violations);
}

// ---------------------------------------------------------------------------------------
// T4 — a fault at every write and sync of a writer that opened with an index

/// The largest count one write call accepts, so that the big entry takes several calls
/// and a fault can land inside it.
const T4_CHUNK: usize = 64 * 1024;

/// The T4 workload: 24 entries appended after the fixture (a chain with branches),
/// entry 12 a ~200 KiB tool result.
fn t4_workload(parent: &str) -> Vec<String> {
    (0..24usize)
        .map(|i| {
            let parent = match i {
                0 => parent.to_owned(),
                _ if i.is_multiple_of(7) => format!("w-{:02}", i - 3),
                _ => format!("w-{:02}", i - 1),
            };
            let text = match i {
                12 => "0123456789abcdef 读取 ".repeat(9_000),
                _ => format!("step {i} — 项目名是 tiny-pi"),
            };
            serde_json::json!({
                "id": format!("w-{i:02}"), "parentId": parent, "timestamp": i, "type": "message",
                "message": {"role": "toolResult", "toolCallId": format!("call-{i}"),
                    "toolName": "read", "content": [{"type": "text", "text": text}],
                    "isError": false},
            })
            .to_string()
        })
        .collect()
}

/// How one T4 run fails: write call `k` with a fault, or sync call `k`.
#[derive(Clone, Copy, Debug)]
enum T4Fault {
    Write(u64, Fault),
    Sync(u64),
}

/// One T4 run: the fixture with its full index, a writer (index on) that appends the
/// workload until the fault taints it, then close. After it, after a writer's reopen
/// and close, and after a repair and one more append, the index on disk (whatever the
/// writers left) must answer as the file.
fn t4_run(dir: &Path, base: &[String], fault: T4Fault) -> Option<String> {
    let path = dir.join(format!("{fault:?}.jsonl").replace(['(', ')', ' ', ','], "-"));
    indexed_fixture(&path, base);
    let plan = FaultPlan::with(Script {
        max_chunk: Some(T4_CHUNK),
        ..Script::default()
    });
    let durability = match fault {
        T4Fault::Write(k, f) => {
            plan.script().fault = Some((k, f, FaultMode::TransientOnce));
            Durability::None
        }
        T4Fault::Sync(k) => {
            plan.fail_sync(k);
            Durability::Fsync
        }
    };
    let options = JsonlOptions {
        durability,
        ..JsonlOptions::default()
    };
    let parent = session::parse_entry(base.last().expect("a base")).expect("an entry");
    let mut found = Vec::new();
    {
        let (store, _) = open_faulty_with(&path, &plan, &options);
        for line in t4_workload(parent.id()) {
            if store.append(line).is_err() {
                break;
            }
        }
    }
    found.extend(divergence(
        &path,
        &format!("{fault:?}: after the faulty writer"),
    ));
    let needs_repair = match Store::open_jsonl(&path) {
        Ok((store, report)) => {
            drop(store);
            report.state == State::NeedsRepair
        }
        Err(e) => {
            found.push(format!("{fault:?}: reopen: {e}"));
            false
        }
    };
    found.extend(divergence(
        &path,
        &format!("{fault:?}: after a writer's reopen"),
    ));
    if needs_repair {
        if let Err(e) = session::repair_jsonl(&path) {
            found.push(format!("{fault:?}: repair: {e}"));
        }
        found.extend(divergence(&path, &format!("{fault:?}: after repair")));
    }
    match Store::open_jsonl(&path) {
        Ok((store, _)) => {
            let last = store.latest_leaf().ok().flatten().map(|n| n.id);
            if let Err(e) = store.append(user("after", last.as_deref(), "one more")) {
                found.push(format!("{fault:?}: append after repair: {e}"));
            }
        }
        Err(e) => found.push(format!("{fault:?}: open after repair: {e}")),
    }
    found.extend(divergence(
        &path,
        &format!("{fault:?}: after one more append"),
    ));
    let _ = std::fs::remove_file(&path);
    let _ = std::fs::remove_file(index_path(&path));
    (!found.is_empty()).then(|| found.join("\n"))
}

#[test]
fn t4_a_fault_at_any_write_or_sync_never_leaves_an_index_that_answers_differently() {
    let dir = temp_dir("idx-t4");
    let base = generated_lines(0x1D74, 12, false);
    // The fault-free workload's write and sync calls.
    let plan = FaultPlan::with(Script {
        max_chunk: Some(T4_CHUNK),
        ..Script::default()
    });
    let path = dir.join("clean.jsonl");
    indexed_fixture(&path, &base);
    let fsync = JsonlOptions {
        durability: Durability::Fsync,
        ..JsonlOptions::default()
    };
    {
        let (store, _) = open_faulty_with(&path, &plan, &fsync);
        let parent = session::parse_entry(&base[base.len() - 1]).expect("an entry");
        for line in t4_workload(parent.id()) {
            store.append(line).expect("a clean append");
        }
    }
    assert_same(&path, "the clean workload");
    let (writes, syncs) = (plan.writes(), plan.syncs());
    assert!(writes > 24 && syncs >= 24, "{writes} writes, {syncs} syncs");
    let mut runs: Vec<T4Fault> = Vec::new();
    for k in 1..=writes + 1 {
        for fault in [
            Fault::Errno(libc::EIO),
            Fault::Errno(libc::EINTR),
            Fault::ShortThenEio,
            Fault::EioAfterFullWrite,
        ] {
            runs.push(T4Fault::Write(k, fault));
        }
    }
    runs.extend((1..=syncs).map(T4Fault::Sync));
    let started = Instant::now();
    let violations = in_parallel(&runs, |&fault| t4_run(&dir, &base, fault));
    println!(
        "T4 index: {writes} write calls x 4 faults + {syncs} sync calls = {} runs, 4 comparisons each, divergent {} ({:.1?})",
        runs.len(),
        violations.len(),
        started.elapsed()
    );
    assert_no_violations("T4 index", &violations);
}

// ---------------------------------------------------------------------------------------
// T7 — simulated power loss: the index that survived and the crashed file

/// Two writer sessions through one recording: the first appends `first` entries and
/// closes (its index: `a`), the second opens with that index, appends `second` more and
/// closes (its index: `b`). Returns the recording and both indexes.
fn t7_workload(path: &Path, durability: Durability) -> (Recording, Vec<u8>, Vec<u8>) {
    let rec = Arc::new(Mutex::new(Recording::default()));
    let options = JsonlOptions {
        durability,
        ..JsonlOptions::default()
    };
    let mut parent: Option<String> = None;
    let mut indexes = Vec::new();
    for (session, count) in [(0, 14), (1, 16)] {
        let recorder = Arc::clone(&rec);
        let (store, _) = Store::open_jsonl_with_options_and_io(path, &options, move |file| {
            Box::new(Recorder {
                file,
                rec: recorder,
            })
        })
        .expect("open");
        for i in 0..count {
            // Lines of varied length, some spanning 4 KiB chunks.
            let id = format!("p{session}-{i}");
            let text = "x".repeat((i * 397 + session * 1500) % 3000);
            store
                .append(user(&id, parent.as_deref(), &text))
                .expect("append");
            parent = Some(id);
        }
        drop(store);
        indexes.push(read_file(&index_path(path)));
    }
    let b = indexes.pop().expect("two sessions");
    let a = indexes.pop().expect("two sessions");
    let rec = std::mem::take(&mut *rec.lock().unwrap());
    (rec, a, b)
}

#[test]
fn t7_every_crash_state_with_any_surviving_index_opens_as_without_it() {
    let dir = temp_dir("idx-t7");
    let mut states_tried = 0;
    let mut violations = Vec::new();
    let started = Instant::now();
    for durability in [Durability::None, Durability::Fsync] {
        let path = dir.join(format!("{durability:?}.jsonl"));
        let (mut rec, a, b) = t7_workload(&path, durability);
        if durability == Durability::None {
            // Nothing was synced: power loss may leave any prefix of the writes, damaged.
            rec.synced = 0;
        }
        // What may survive of the index: none, either whole version, or a torn one.
        let mut zeroed = b.clone();
        zeroed[b.len() / 2..].fill(0);
        let indexes: Vec<(&str, Option<&[u8]>)> = vec![
            ("no index", None),
            ("the first session's", Some(&a)),
            ("the second session's", Some(&b)),
            ("the second's, torn in half", Some(&b[..b.len() / 2])),
            ("the second's, zeros after half", Some(&zeroed)),
            ("empty", Some(&[])),
        ];
        let states = crash_states(&rec);
        for (i, (bytes, _)) in states.iter().enumerate() {
            states_tried += 1;
            rewrite_in_place(&path, bytes);
            let without = outcome(&path, false);
            for (name, index) in &indexes {
                match index {
                    Some(bytes) => write_file(&index_path(&path), bytes),
                    None => {
                        let _ = std::fs::remove_file(index_path(&path));
                    }
                }
                let with = outcome(&path, true);
                if with != without {
                    violations.push(format!(
                        "{durability:?} state {i} ({} B), {name} index:\n  with:    {with}\n  without: {without}",
                        bytes.len()
                    ));
                }
            }
        }
    }
    println!(
        "T7 index: crash states {states_tried} x 6 surviving indexes, divergent {} ({:.1?})",
        violations.len(),
        started.elapsed()
    );
    assert_no_violations("T7 index", &violations);
}

// ---------------------------------------------------------------------------------------
// Stale, foreign and replaced indexes

/// A writer's open and close at `path` rewrote the index planted there (a new file, as
/// the index is replaced by a rename), and the new one answers as the file.
fn assert_rewritten_by_a_writer(path: &Path, what: &str) {
    let planted = file_id(&index_path(path));
    let planted_bytes = read_file(&index_path(path));
    drop(Store::open_jsonl(path).expect("a writer opens"));
    let now = file_id(&index_path(path));
    assert!(now.is_some(), "{what}: the writer left no index");
    assert_ne!(now, planted, "{what}: the writer did not rewrite the index");
    assert_ne!(
        read_file(&index_path(path)),
        planted_bytes,
        "{what}: the same index bytes"
    );
    assert_same(path, &format!("{what}, after the writer rewrote the index"));
}

/// `lines` with every `from` replaced by `to` (of the same length).
fn replaced(lines: &[String], from: &str, to: &str) -> Vec<String> {
    assert_eq!(from.len(), to.len());
    lines.iter().map(|l| l.replace(from, to)).collect()
}

#[test]
fn an_index_from_another_file_of_the_same_size_falls_back_and_is_rewritten() {
    let dir = temp_dir("idx-foreign");
    let lines = generated_lines(0x1D75, 20, false);
    let path = dir.join("s.jsonl");
    let (own, _) = indexed_fixture(&path, &lines);
    let other = dir.join("other.jsonl");
    let (theirs, their_index) = indexed_fixture(&other, &replaced(&lines, "tiny-pi", "TINY-PI"));
    assert_eq!(own.len(), theirs.len(), "the same size");
    assert_ne!(own, theirs, "other bytes");
    write_file(&index_path(&path), &their_index);
    assert_same(&path, "another file's index");
    assert!(outcome(&path, true).contains("tiny-pi"));
    assert_rewritten_by_a_writer(&path, "another file's index");
}

#[test]
fn an_index_from_an_older_size_of_the_file_answers_as_the_file_and_is_rewritten() {
    let dir = temp_dir("idx-older");
    let lines = generated_lines(0x1D76, 30, false);
    let path = dir.join("s.jsonl");
    // (a) The file grew without the index (another writer with `index:false`).
    let (_, short_index) = indexed_fixture(&path, &lines[..20]);
    {
        let off = JsonlOptions::from_json(r#"{"index":false}"#).unwrap();
        let (store, _) = Store::open_jsonl_with(&path, &off).unwrap();
        for line in &lines[20..] {
            store.append(line).unwrap();
        }
    }
    assert_eq!(
        read_file(&index_path(&path)),
        short_index,
        "index:false kept it"
    );
    assert_same(&path, "an index of the first 20 of 30 entries");
    assert!(outcome(&path, true).contains(r#""id":"e-029""#));
    assert_rewritten_by_a_writer(&path, "an index of an older, smaller size");
    // (b) The file shrank, then grew back to the indexed size with other bytes.
    let (full, full_index) = indexed_fixture(&path, &lines);
    let cut = line_boundaries(&full)[10];
    let other = replaced(&lines[10..], "tiny-pi", "TINY-PI");
    let mut regrown = full[..cut].to_vec();
    for line in &other {
        regrown.extend_from_slice(line.as_bytes());
        regrown.push(b'\n');
    }
    assert_eq!(regrown.len(), full.len());
    rewrite_in_place(&path, &full[..cut]);
    assert_same(&path, "an index of a larger size");
    rewrite_in_place(&path, &regrown);
    write_file(&index_path(&path), &full_index);
    assert_same(&path, "the file shrank and grew back to the indexed size");
    assert!(outcome(&path, true).contains("TINY-PI"));
    assert_rewritten_by_a_writer(&path, "an index of the file before it shrank");
}

#[test]
fn an_index_copied_from_a_previous_version_of_the_file_answers_as_the_file() {
    let dir = temp_dir("idx-previous");
    let lines = generated_lines(0x1D77, 30, false);
    let path = dir.join("s.jsonl");
    let (_, previous) = indexed_fixture(&path, &lines[..12]);
    // Appends by writers with the index on, which rewrite it at close.
    for chunk in lines[12..].chunks(6) {
        let (store, _) = Store::open_jsonl(&path).unwrap();
        for line in chunk {
            store.append(line).unwrap();
        }
    }
    assert_ne!(
        read_file(&index_path(&path)),
        previous,
        "the writers rewrote it"
    );
    // The old index restored (a backup, a sync tool): it covers an older version.
    write_file(&index_path(&path), &previous);
    assert_same(&path, "the index of the first 12 entries, 30 on disk");
    assert!(outcome(&path, true).contains(r#""id":"e-029""#));
    assert_rewritten_by_a_writer(&path, "an index of a previous version");
    // The previous version restored too, but not as it was: its lines rewritten with
    // other bytes of the same length after the index was taken.
    let (first, first_index) = indexed_fixture(&path, &lines[..12]);
    let edited: Vec<u8> = String::from_utf8(first.clone())
        .unwrap()
        .replace("tiny-pi", "TINY-PI")
        .into_bytes();
    assert_ne!(edited, first);
    rewrite_in_place(&path, &edited);
    write_file(&index_path(&path), &first_index);
    assert_same(&path, "the same size, other bytes, a later mtime");
    assert!(outcome(&path, true).contains("TINY-PI"));
}

#[test]
fn an_index_whose_file_was_replaced_by_a_rename_falls_back_and_is_rewritten() {
    let dir = temp_dir("idx-renamed");
    let lines = generated_lines(0x1D78, 20, false);
    let path = dir.join("s.jsonl");
    let (full, index) = indexed_fixture(&path, &lines);
    // The same bytes under a new inode (an editor's save: write a copy, rename it over).
    let tmp = dir.join("s.jsonl.tmp");
    write_file(&tmp, &full);
    std::fs::rename(&tmp, &path).unwrap();
    assert_eq!(read_file(&index_path(&path)), index);
    assert_same(&path, "the same bytes, a new inode");
    assert_rewritten_by_a_writer(&path, "the same bytes, a new inode");
    // Other bytes of the same size under a new inode.
    let (_, index) = indexed_fixture(&path, &lines);
    let edited = String::from_utf8(full)
        .unwrap()
        .replace("tiny-pi", "TINY-PI");
    write_file(&tmp, edited.as_bytes());
    std::fs::rename(&tmp, &path).unwrap();
    write_file(&index_path(&path), &index);
    assert_same(&path, "other bytes of the same size, a new inode");
    assert!(outcome(&path, true).contains("TINY-PI"));
    assert_rewritten_by_a_writer(&path, "other bytes, a new inode");
}

/// The offsets of an index of `len` bytes to damage: every one with `SOAK=1`; in the
/// PR tier the first 512, every 61st after them, and the three around every 4 KiB.
fn damage_offsets(len: usize) -> Vec<usize> {
    (0..len)
        .filter(|&at| {
            let near_4k = matches!(at % 4096, 0 | 1 | 4095);
            soak() || at < 512 || at % 61 == 0 || near_4k
        })
        .collect()
}

/// A fixture of 10 entries with its index; with `tail`, 6 more lines and a torn one
/// after the indexed prefix. Every damaged, cut or extended copy of the index must give
/// the answers of no index. Returns the figure and the divergent cases.
fn damaged_index_sweep(name: &str, tail: bool) -> (String, Vec<String>) {
    let dir = temp_dir(name);
    let lines = generated_lines(0x1D79, 16, false);
    let path = dir.join("s.jsonl");
    let (_, index) = indexed_fixture(&path, &lines[..10]);
    if tail {
        let mut bytes = read_file(&path);
        for line in &lines[10..] {
            bytes.extend_from_slice(line.as_bytes());
            bytes.push(b'\n');
        }
        bytes.extend_from_slice(&lines[0].as_bytes()[..40]);
        rewrite_in_place(&path, &bytes);
    }
    let expected = outcome(&path, false);
    assert_eq!(expected.contains("unterminated_tail"), tail, "{expected}");
    assert_eq!(outcome(&path, true), expected, "the intact index");
    let started = Instant::now();
    let mut cases = 0;
    let mut violations = Vec::new();
    let mut check = |bad: &[u8], what: String| {
        cases += 1;
        write_file(&index_path(&path), bad);
        let got = outcome(&path, true);
        if got != expected {
            violations.push(format!("{what}: {got}"));
        }
    };
    let masks: &[u8] = if soak() { &[0x01, 0x80, 0xFF] } else { &[0x41] };
    let offsets = damage_offsets(index.len());
    for &at in &offsets {
        for &mask in masks {
            let mut bad = index.clone();
            bad[at] ^= mask;
            check(&bad, format!("byte {at} ^ {mask:#04x}"));
        }
    }
    for &len in &offsets {
        check(&index[..len], format!("cut at {len}"));
    }
    let mut longer = index.clone();
    longer.extend_from_slice(&[0; 64]);
    check(&longer, "64 zero bytes more".into());
    let figure = format!(
        "{} B index, offsets {} x {} flips + cuts = {cases} cases, divergent {} ({:.1?})",
        index.len(),
        offsets.len(),
        masks.len(),
        violations.len(),
        started.elapsed()
    );
    (figure, violations)
}

#[test]
fn every_damaged_or_truncated_index_of_the_whole_file_falls_back() {
    let (figure, violations) = damaged_index_sweep("idx-damaged", false);
    println!("T27 damaged index: {figure}");
    assert_no_violations("T27 damaged index", &violations);
}

#[test]
fn every_damaged_or_truncated_index_before_a_replayed_tail_falls_back() {
    let (figure, violations) = damaged_index_sweep("idx-damaged-tail", true);
    println!("T27 damaged index before a tail: {figure}");
    assert_no_violations("T27 damaged index before a tail", &violations);
}

#[test]
fn a_matching_index_is_used_a_writer_that_appends_nothing_leaves_it_as_it_is() {
    // The equivalence tests above would pass vacuously if no index were ever accepted:
    // a writer that found a matching, complete index does not rewrite it.
    let dir = temp_dir("idx-used");
    let path = dir.join("s.jsonl");
    indexed_fixture(&path, &generated_lines(0x1D7A, 20, true));
    let before = file_id(&index_path(&path));
    assert!(before.is_some());
    drop(Store::open_jsonl(&path).unwrap());
    assert_eq!(
        file_id(&index_path(&path)),
        before,
        "the index was rewritten"
    );
    assert_same(&path, "a matching index");
}
