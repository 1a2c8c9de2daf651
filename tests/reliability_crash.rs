//! Process-crash durability (docs/reliability.md T6): a child process appends entries
//! with increasing sequence numbers and acknowledges each on a pipe; the parent kills it
//! with SIGKILL after a random 1–50 ms and reopens the file. Every acknowledged entry
//! must be there, in order, with at most one more; the file opens clean or with an
//! unterminated tail, never with a hard error.
//!
//! The child is this test binary itself, re-run with `SESSION_T6_CHILD=<file>` and
//! filtered to [`t6_child_appends_and_acks_until_killed`]; without the variable that
//! test returns at once. The delay counts from the child's "ready" line (printed once
//! its store is open), so the kill lands among appends, not in process start-up. PR tier: 200 cycles; `SOAK=1`: 20,000 (or
//! `SESSION_T6_CYCLES=N`).
//!
//! The children are writers with the session index on (the default): each indexes what
//! it found at open, and the kill leaves that index beside a longer file. Before the
//! parent's reopen, an open that may use the index must answer exactly as one that may
//! not (issue 15): after every cycle with `SOAK=1`, after every tenth in the PR tier.

use crate::common;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::index;
use common::*;
use session::{State, Store, Warning};

const CHILD_ENV: &str = "SESSION_T6_CHILD";
const CHILD_TEST: &str = "t6_child_appends_and_acks_until_killed";
/// A fresh file every this many cycles, so that reopening stays cheap.
const CYCLES_PER_FILE: u64 = 10;

/// The entry with sequence number `seq`: every 16th is a 64 KiB line, so that a kill
/// can land inside a larger write.
fn entry(seq: u64, parent: Option<&str>) -> String {
    let text = if seq % 16 == 15 {
        "k".repeat(64 * 1024)
    } else {
        format!("entry {seq} 项目")
    };
    user(&format!("s-{seq}"), parent, &text)
}

/// The child: continue the file's sequence, acknowledging each append on stdout.
#[test]
fn t6_child_appends_and_acks_until_killed() {
    let Ok(path) = std::env::var(CHILD_ENV) else {
        return;
    };
    let (store, report) = match Store::open_jsonl(&path) {
        Ok(opened) => opened,
        Err(e) => {
            eprintln!("child: open failed: {e}");
            std::process::exit(3);
        }
    };
    if report.state != State::Ready {
        eprintln!("child: the parent left a file that needs repair");
        std::process::exit(4);
    }
    let committed = store.entries().expect("entries");
    let mut seq = committed.len() as u64;
    let mut parent = committed.last().map(|e| e.id().to_owned());
    let mut out = std::io::stdout().lock();
    out.write_all(b"\nready\n")
        .and_then(|()| out.flush())
        .expect("ready");
    loop {
        if let Err(e) = store.append(entry(seq, parent.as_deref())) {
            eprintln!("child: append {seq} failed: {e}");
            std::process::exit(5);
        }
        // One write of a short line on a pipe is atomic: the parent never sees half an ack.
        out.write_all(format!("ack {seq}\n").as_bytes())
            .and_then(|()| out.flush())
            .expect("ack");
        parent = Some(format!("s-{seq}"));
        seq += 1;
    }
}

/// What one kill left, as the parent checks it.
struct Cycle {
    acks: Vec<u64>,
    tail: Option<u64>,
}

fn one_cycle(path: &Path, delay: Duration, compare_index: bool) -> Result<Cycle, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut child = Command::new(exe)
        .arg(test_name(module_path!(), CHILD_TEST))
        .args(["--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, path)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| e.to_string())?;
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let (lines, received) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if lines.send(line).is_err() {
                break;
            }
        }
    });
    // The delay counts from the child's "ready" (its store is open), so that the kill
    // lands among the appends rather than in process start-up.
    let ready = received.iter().any(|l| l.contains("ready"));
    if ready {
        std::thread::sleep(delay);
    }
    child.kill().map_err(|e| e.to_string())?; // SIGKILL
    let status = child.wait().map_err(|e| e.to_string())?;
    reader.join().map_err(|_| "reader panicked")?;
    if !ready {
        return Err(format!("the child ended before it was ready: {status}"));
    }
    // Each ack is one short write on a pipe, so it arrives whole on its own line.
    let acks: Vec<u64> = received
        .try_iter()
        .filter_map(|l| l.split_once("ack ").and_then(|(_, n)| n.parse().ok()))
        .collect();
    if status.code().is_some_and(|c| c != 0) {
        return Err(format!("the child exited by itself with {status}"));
    }
    if compare_index && let Some(divergent) = index::divergence(path, "the killed writer's index") {
        return Err(divergent);
    }
    let (store, report) = Store::open_jsonl(path).map_err(|e| format!("reopen: hard error {e}"))?;
    let entries = store.entries().map_err(|e| e.to_string())?;
    let tail = match (report.state, report.warnings.as_slice()) {
        (State::Ready, []) => None,
        (State::NeedsRepair, [Warning::UnterminatedTail { line }])
            if *line == entries.len() as u64 + 1 =>
        {
            Some(*line)
        }
        other => return Err(format!("reopen state {other:?}")),
    };
    // The file holds s-0, s-1, … in order: every acknowledged entry and at most one more.
    for (i, e) in entries.iter().enumerate() {
        if e.id() != format!("s-{i}") {
            return Err(format!("line {}: {} out of order", i + 1, e.id()));
        }
    }
    let present = entries.len() as u64;
    if let Some(&last) = acks.last() {
        if present <= last {
            return Err(format!("ack {last} lost: the file has {present} entries"));
        }
        if present > last + 2 {
            return Err(format!(
                "{present} entries after ack {last}: more than one in flight"
            ));
        }
    }
    Ok(Cycle { acks, tail })
}

#[test]
fn t6_kill_9_loses_no_acknowledged_entry() {
    let cycles = env_count("SESSION_T6_CYCLES", if soak() { 20_000 } else { 200 });
    let mut rng = Rng::new(seed(0x7136));
    let dir = temp_dir("t6");
    let started = Instant::now();
    let mut violations = Vec::new();
    let mut tails: BTreeMap<&str, u64> = BTreeMap::new();
    let (mut total_acks, mut cycles_with_acks, mut lost) = (0u64, 0u64, 0u64);
    let mut index_compared = 0u64;
    for cycle in 0..cycles {
        let path = dir.join(format!("s{}.jsonl", cycle / CYCLES_PER_FILE));
        let delay = Duration::from_millis(rng.range(1, 50) as u64);
        let compare_index = soak() || cycle % CYCLES_PER_FILE == CYCLES_PER_FILE - 1;
        index_compared += u64::from(compare_index);
        match one_cycle(&path, delay, compare_index) {
            Ok(c) => {
                total_acks += c.acks.len() as u64;
                cycles_with_acks += u64::from(!c.acks.is_empty());
                *tails
                    .entry(if c.tail.is_some() {
                        "unterminated_tail"
                    } else {
                        "clean"
                    })
                    .or_default() += 1;
                if c.tail.is_some() {
                    // The caller's repair, so that the next child continues the file.
                    truncate_to_committed(&path);
                }
            }
            Err(e) => {
                if e.contains("lost") {
                    lost += 1;
                }
                violations.push(format!("cycle {cycle} ({delay:?}): {e}"));
                truncate_to_committed(&path);
            }
        }
        if cycle % CYCLES_PER_FILE == CYCLES_PER_FILE - 1 {
            // A release child appends about 170 MB in ten cycles: keep one file at a time.
            let _ = std::fs::remove_file(session::index_path(&path));
            let _ = std::fs::remove_file(&path);
        }
    }
    println!(
        "T6: cycles {cycles} ({cycles_with_acks} with acks, {total_acks} acks), lost acks {lost}, \
         tail states {tails:?}, hard errors {}, index compared after {index_compared} cycles, {:.1?}",
        violations.len(),
        started.elapsed()
    );
    assert_no_violations("T6", &violations);
}
