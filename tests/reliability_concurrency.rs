//! Order and completeness under concurrent appends (docs/reliability.md T8, in Rust):
//! 16 threads × 2,000 appends on one JSONL store. The file order is the commit (seq)
//! order, every line parses, nothing is lost, duplicated or interleaved.

use crate::common;

use std::collections::HashMap;
use std::time::Instant;

use common::*;
use session::{Store, recover_jsonl};

const THREADS: usize = 16;

#[test]
fn t8_concurrent_appends_commit_every_line_once_in_seq_order() {
    let per_thread = env_count("SESSION_T8_APPENDS", if soak() { 10_000 } else { 2_000 }) as usize;
    let dir = temp_dir("t8");
    let path = dir.join("s.jsonl");
    let (store, _) = Store::open_jsonl(&path).expect("open");
    let started = Instant::now();
    // Each thread grows its own chain: a child names the entry its thread appended
    // before, so FIFO order per thread is also a tree rule.
    let receipts: Vec<Vec<(String, u64)>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..THREADS)
            .map(|t| {
                let store = &store;
                s.spawn(move || {
                    let mut parent: Option<String> = None;
                    (0..per_thread)
                        .map(|i| {
                            let id = format!("c{t}-{i}");
                            let receipt = store
                                .append(user(&id, parent.as_deref(), "並行 append"))
                                .expect("append");
                            assert_eq!(receipt.id, id);
                            parent = Some(id.clone());
                            (id, receipt.seq)
                        })
                        .collect()
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("thread"))
            .collect()
    });
    let elapsed = started.elapsed();
    drop(store);

    let total = THREADS * per_thread;
    let seq_of: HashMap<&str, u64> = receipts
        .iter()
        .flatten()
        .map(|(id, seq)| (id.as_str(), *seq))
        .collect();
    assert_eq!(seq_of.len(), total, "ids are unique");
    for chain in &receipts {
        assert!(
            chain.windows(2).all(|w| w[0].1 < w[1].1),
            "per-thread seq grows"
        );
    }
    let bytes = std::fs::read(&path).expect("read");
    assert_eq!(
        bytes.iter().filter(|&&b| b == b'\n').count(),
        total,
        "one line per append"
    );
    let recovered = recover_jsonl(&bytes).expect("every line parses");
    assert!(recovered.warnings.is_empty());
    let mut out_of_order = 0;
    for (line, entry) in recovered.entries.iter().enumerate() {
        if seq_of.get(entry.id()) != Some(&(line as u64)) {
            out_of_order += 1;
        }
    }
    let reopened = Store::open_jsonl(&path)
        .expect("reopen")
        .0
        .len()
        .expect("len");
    println!(
        "T8-lite: {THREADS} threads x {per_thread} appends = {total} lines in {elapsed:.2?} \
         ({:.0} appends/s); lost {}, duplicated {}, out of seq order {out_of_order}",
        total as f64 / elapsed.as_secs_f64(),
        total - reopened.min(total),
        reopened.saturating_sub(total),
    );
    assert_eq!(out_of_order, 0, "file order is seq order");
    assert_eq!(reopened, total);
}
