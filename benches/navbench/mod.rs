//! The navigation benchmark (docs/contract.md §8): `children`, `leaves`, `latest_leaf` and a
//! 100-node `tree` page on the 100k-entry session, and `list_sessions` over 1,000
//! generated session files (about 1 GB) beside pi's `SessionManager.list` over the
//! same sessions in pi's format (bench/peer/list.mjs), one folder per format.
//!
//! ```text
//! cargo bench --bench perf -- nav-gen [--data DIR]       write the 1,000 sessions
//! cargo bench --bench perf -- nav [--runs 5] [--pi-list FILE]
//! ```

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::Value;
use session::list::list_sessions_with_io;
use session::{JsonlOptions, ListOptions, Store, TreeOptions};

// The listing tests' counting ListIo, one implementation for both (the bench needs
// only its total).
#[allow(dead_code)]
#[path = "../../tests/common/list_io.rs"]
mod list_io;

use super::sessiongen::{self, Shape};
use super::{Options, die, fmt_time, mb, median};
use list_io::CountingListIo;

/// Session files in the listing benchmark.
pub const LIST_FILES: usize = 1_000;
/// Entries of the two alternating file sizes (about 0.5 MB and 1.5 MB each, 1 GB in all).
const LIST_ENTRIES: [usize; 2] = [760, 2_280];

fn list_dirs(data: &Path) -> (PathBuf, PathBuf) {
    (data.join("list/ours"), data.join("list/pi"))
}

/// Writes the 1,000 sessions in both formats (two generated sessions, copied).
pub fn generate(o: &Options) {
    let (ours, pi) = list_dirs(&o.data);
    for dir in [&ours, &pi] {
        let _ = fs::remove_dir_all(dir);
        fs::create_dir_all(dir).unwrap_or_else(|e| die(&format!("{}: {e}", dir.display())));
    }
    let t = Instant::now();
    let templates: Vec<(PathBuf, PathBuf)> = LIST_ENTRIES
        .iter()
        .map(|&n| {
            let (fo, fp) = (
                o.data.join(format!("list-template-{n}.jsonl")),
                o.data.join(format!("list-template-{n}.pi.jsonl")),
            );
            sessiongen::write(n, Shape::Deep, &fo, &fp)
                .unwrap_or_else(|e| die(&format!("list template: {e}")));
            (fo, fp)
        })
        .collect();
    let mut total = (0u64, 0u64);
    for i in 0..LIST_FILES {
        let (fo, fp) = &templates[i % templates.len()];
        let name = format!("session-{i:04}.jsonl");
        total.0 += fs::copy(fo, ours.join(&name)).unwrap_or_else(|e| die(&e.to_string()));
        total.1 += fs::copy(fp, pi.join(&name)).unwrap_or_else(|e| die(&e.to_string()));
    }
    eprintln!(
        "perf: wrote {LIST_FILES} sessions ({:.0} MB ours, {:.0} MB pi's) in {:.1} s",
        mb(total.0),
        mb(total.1),
        t.elapsed().as_secs_f64()
    );
}

/// Median seconds of `f`, after one warm-up: at least `runs` samples, more while
/// `budget` lasts.
fn measure(runs: usize, budget: Duration, mut f: impl FnMut()) -> f64 {
    f();
    let start = Instant::now();
    let mut samples = Vec::new();
    while samples.len() < runs || (start.elapsed() < budget && samples.len() < 20_000) {
        let t = Instant::now();
        f();
        samples.push(t.elapsed().as_secs_f64());
    }
    median(samples)
}

/// Measures and prints the navigation table (Markdown).
pub fn run(o: &Options, pi_list: Option<&Path>) {
    let n = 100_000;
    let (fo, fp) = (
        o.data.join(format!("session-{n}.jsonl")),
        o.data.join(format!("session-{n}.pi.jsonl")),
    );
    if !fo.exists() {
        sessiongen::write(n, Shape::Deep, &fo, &fp).unwrap_or_else(|e| die(&e.to_string()));
    }
    let read_only = JsonlOptions {
        read_only: true,
        ..JsonlOptions::default()
    };
    let (store, _) =
        Store::open_jsonl_with(&fo, &read_only).unwrap_or_else(|e| die(&e.to_string()));
    let count = store.len().unwrap_or(0);
    // A node with children on a side branch: the parent of the first leaf that is not
    // the last entry (a regenerated answer beside the main chain).
    let leaves = store.leaves().unwrap_or_else(|e| die(&e.to_string()));
    let branch_parent = leaves
        .leaves
        .first()
        .and_then(|l| l.parent_id.clone())
        .unwrap_or_else(|| die("no branch in the session"));
    let kids = store.children(&branch_parent).map_or(0, |c| c.len());
    let latest = leaves.latest_by_seq.clone().unwrap_or_default();
    let page = TreeOptions {
        after_seq: Some(count as u64 / 2),
        limit: Some(100),
        leaf: Some(latest.clone()),
        preview_chars: 48,
    };
    let budget = o.budget;
    let t_children = measure(o.runs, budget, || {
        store.children(&branch_parent).ok();
    });
    let t_leaves = measure(o.runs, budget, || {
        store.leaves().ok();
    });
    let t_latest = measure(o.runs, budget, || {
        store.latest_leaf().ok();
    });
    let t_page = measure(o.runs, budget, || {
        store.tree(&page).ok();
    });
    let t_page_json = measure(o.runs, budget, || {
        store.tree_json(&page).ok();
    });
    drop(store);

    let (ours_dir, pi_dir) = list_dirs(&o.data);
    if !ours_dir.join("session-0000.jsonl").exists() {
        generate(o);
    }
    let options = ListOptions::default();
    let mut io = CountingListIo::default();
    let listed =
        list_sessions_with_io(&ours_dir, &options, &mut io).unwrap_or_else(|e| die(&e.to_string()));
    let bytes_read = io.total();
    let total: u64 = listed.iter().map(|s| s.bytes).sum();
    let errors = listed.iter().filter(|s| s.error.is_some()).count();
    let t_list = measure(o.runs, Duration::ZERO, || {
        session::list_sessions(&ours_dir, &options).ok();
    });
    let t_list_first = measure(o.runs, Duration::ZERO, || {
        let first = ListOptions {
            limit: Some(50),
            ..ListOptions::default()
        };
        session::list_sessions(&ours_dir, &first).ok();
    });

    let pi: Option<Value> = pi_list.map(|p| {
        let text = fs::read_to_string(p).unwrap_or_else(|e| die(&format!("{}: {e}", p.display())));
        serde_json::from_str(&text).unwrap_or_else(|e| die(&format!("{}: {e}", p.display())))
    });
    let pi_s = pi.as_ref().and_then(|v| v["seconds"].as_f64());
    let pi_count = pi.as_ref().and_then(|v| v["sessions"].as_u64());

    println!("## Navigation ({count}-entry session) and session listing\n");
    println!("| operation | libsession |");
    println!("|---|---|");
    println!(
        "| `children` of a node with {kids} children | {} |",
        fmt_time(t_children)
    );
    println!(
        "| `leaves` ({} leaves) | {} |",
        leaves.leaves.len(),
        fmt_time(t_leaves)
    );
    println!("| `latest_leaf` | {} |", fmt_time(t_latest));
    println!(
        "| `tree` page of 100 nodes (previews, `leaf` flagged) | {} |",
        fmt_time(t_page)
    );
    println!("| the same page as JSON | {} |", fmt_time(t_page_json));
    println!();
    println!(
        "| listing {} sessions ({:.0} MB; pi's copies {:.0} MB) | libsession `list_sessions` | pi `SessionManager.list` | pi / libsession |",
        listed.len(),
        mb(total),
        mb(dir_bytes(&pi_dir)),
    );
    println!("|---|---|---|---|");
    let ratio = pi_s.map_or("–".to_owned(), |p| format!("{:.0}×", p / t_list));
    println!(
        "| all, newest first | {} | {} | {ratio} |",
        fmt_time(t_list),
        pi_s.map_or("–".to_owned(), fmt_time),
    );
    println!("| the newest 50 | {} | – | – |", fmt_time(t_list_first));
    println!();
    println!(
        "libsession read {:.1} MB of {:.0} MB ({:.2} %) to list them; {errors} listed with an error; pi listed {}.",
        mb(bytes_read),
        mb(total),
        100.0 * bytes_read as f64 / total.max(1) as f64,
        pi_count.map_or("–".to_owned(), |c| c.to_string())
    );
}

fn dir_bytes(dir: &Path) -> u64 {
    fs::read_dir(dir)
        .map(|it| {
            it.filter_map(Result::ok)
                .filter_map(|e| e.metadata().ok())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0)
}
