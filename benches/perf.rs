//! libsession's performance benchmark: open, read and append beside their floors and
//! beside pi's SessionManager, on the same generated sessions.
//!
//! ```text
//! cargo bench --bench perf                      generate, then measure ours (no pi columns)
//! cargo bench --bench perf -- gen               only write target/bench-data/
//! cargo bench --bench perf -- run --pi FILE     measure ours and print the table beside
//!                                               pi's figures (bench/peer/peer.mjs)
//! cargo bench --bench perf -- nav-gen | nav [--pi-list FILE]
//!                                               navigation and session listing (navbench)
//! cargo bench --bench perf -- profile open|messages|path|context|append FILE [LEAF]
//!                                               one operation in a loop, for `perf record -g`
//! cargo bench --bench perf -- resume FILE      open -> depth-10 path with the session index
//!                                               (`<FILE>.idx`) and without it, median of 9,
//!                                               then the path's ids for benches/sqlite_peer.c
//! cargo bench --bench perf -- sqlite [--big]   beside the SQLite peer (benches/sqlite_peer.c):
//!                                               resume, RSS, reads, appends, bytes, as
//!                                               ratios in one table (benches/sqlitebench/)
//! cargo bench --bench perf -- context           build_context vs messages_on_path on the
//!                                               largest session's deepest leaf, with a
//!                                               compaction near the end (contract §7),
//!                                               and whole-path reads with the index ÷
//!                                               without it
//! cargo bench --bench perf -- resume-bench [--mb 66] [--big]
//!                                               resume (open + build_context of the latest
//!                                               leaf) and steady state, with and without
//!                                               the index, beside pi and SQLite, on a
//!                                               session with a compaction every 200 turns
//!                                               (benches/resumebench/)
//! cargo bench --bench perf -- import [--gb 1] [--runs 3]
//!                                               import a generated Claude Code transcript
//!                                               of real lines and a pi file: MB/s, peak RSS,
//!                                               beside opening the result (importbench)
//! options: --sizes 1000,10000,100000  --runs 5  --data DIR
//! ```
//!
//! Under `cargo test` (no `--bench` argument) it only does a quick smoke run.
//! `scripts/bench.sh` runs gen, pi's peer and run; see the README's Performance section.
//! Floor and ours are sampled alternately, so the machine's load hits both alike.
//!
//! Every figure is the median of several runs, measured in this process on files in the
//! page cache, except peak RSS, which a fresh child process measures (this binary
//! re-executed with `rss-child FILE`), so nothing allocated earlier pollutes it.
//!
//! Floors, measured in the same run on the same bytes:
//! - open: read the file and parse every line with `serde_json` into `IgnoredAny`;
//! - path / messages: copy the same output bytes (allocate, memcpy, free);
//! - append to JSONL: a bare `write(2)` of the same line to an `O_APPEND` fd, one at a
//!   time and against bursts of 8 threads appending to one handle at once;
//! - append to memory: `serde_json` into `IgnoredAny` plus keeping a copy of the line;
//! - memory: the file's size.

mod importbench;
mod navbench;
mod resumebench;
mod sessiongen;
mod sqlitebench;

use std::ffi::{CStr, CString, c_char};
use std::fmt::Write as _;
use std::fs;
use std::io::Write as _;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde::de::IgnoredAny;
use serde_json::{Value, json};
use session::ffi;
use session::{JsonlOptions, Store};

use sessiongen::Shape;

/// Appends per batch, for ours, the floor and pi.
const APPEND_BATCH: usize = 1000;
/// Threads appending to one handle at once in the burst figure.
const BURST: usize = 8;

// ---------------------------------------------------------------------------------
// Options and files
// ---------------------------------------------------------------------------------

struct Options {
    data: PathBuf,
    sizes: Vec<usize>,
    runs: usize,
    pi: Option<PathBuf>,
    /// How long a fast measurement keeps taking samples beyond `runs`.
    budget: Duration,
}

fn parse_options(args: &[String]) -> Options {
    let mut o = Options {
        data: std::env::var_os("SESSION_BENCH_DATA")
            .map(PathBuf::from)
            .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench-data")),
        sizes: vec![1_000, 10_000, 100_000],
        runs: 5,
        pi: None,
        budget: Duration::from_millis(300),
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = || {
            it.next()
                .cloned()
                .unwrap_or_else(|| die(&format!("{a} needs a value")))
        };
        match a.as_str() {
            "--data" => o.data = PathBuf::from(value()),
            "--sizes" => {
                o.sizes = value()
                    .split(',')
                    .map(|s| {
                        s.trim()
                            .replace('_', "")
                            .parse()
                            .unwrap_or_else(|_| die("bad --sizes"))
                    })
                    .collect()
            }
            "--runs" => o.runs = value().parse().unwrap_or_else(|_| die("bad --runs")),
            "--pi" => o.pi = Some(PathBuf::from(value())),
            _ => {}
        }
    }
    o.runs = o.runs.max(1);
    o
}

/// The value after `name` in `args`, for a mode's own options beside [`parse_options`]'s.
fn arg<'a>(args: &'a [String], name: &str) -> Option<&'a str> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .map(String::as_str)
}

/// [`arg`] as a number.
fn num_arg<T: std::str::FromStr>(args: &[String], name: &str) -> Option<T> {
    arg(args, name).map(|v| v.parse().unwrap_or_else(|_| die(&format!("bad {name}"))))
}

fn die(msg: &str) -> ! {
    eprintln!("perf: {msg}");
    std::process::exit(2)
}

fn main() {
    // `cargo bench` passes `--bench`. Without it the binary was started by `cargo test`
    // (`--all-targets` runs bench targets once as a check): then only a quick smoke run
    // on small sessions, in a separate folder, without the table.
    let by_cargo_bench = std::env::args().any(|a| a == "--bench");
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    match args.first().map(String::as_str) {
        Some("rss-child") => rss_child(Path::new(&args[1])),
        Some("import") => importbench::run(&args[1..]),
        Some("import-child") => importbench::import_child(&args[1..]),
        Some("import-open-child") => importbench::open_child(&args[1..]),
        Some("import-floor-child") => importbench::floor_child(&args[1..]),
        Some("import-index-child") => importbench::index_child(&args[1..]),
        Some("import-resume-child") => importbench::resume_child(&args[1..]),
        Some("profile") => profile(&args[1..]),
        Some("resume") => resume(&args[1..]),
        Some("sqlite") => sqlitebench::run(&args[1..]),
        Some("sqlite-rss-child") => sqlitebench::rss_child(&args[1..]),
        Some("resume-bench") => resumebench::run(&args[1..]),
        Some("resume-rss-child") => resumebench::rss_child(&args[1..]),
        Some("gen") => {
            let o = parse_options(&args[1..]);
            generate(&o);
        }
        Some("nav-gen") => navbench::generate(&parse_options(&args[1..])),
        Some("nav") => {
            let o = parse_options(&args[1..]);
            let pi_list = args
                .iter()
                .position(|a| a == "--pi-list")
                .and_then(|i| args.get(i + 1))
                .map(PathBuf::from);
            navbench::run(&o, pi_list.as_deref());
        }
        Some("run") => {
            let o = parse_options(&args[1..]);
            let index = load_or_generate(&o);
            run(&o, &index);
        }
        Some("context") => {
            let o = parse_options(&args[1..]);
            let index = load_or_generate(&o);
            context_bench(&o, &index);
        }
        _ if !by_cargo_bench => smoke(),
        _ => {
            let o = parse_options(&args);
            let index = generate(&o);
            run(&o, &index);
        }
    }
}

/// Under `cargo test`: generate two small sessions and measure them once, so the bench
/// keeps compiling and running, in a second or two.
fn smoke() {
    let o = Options {
        data: std::env::temp_dir().join(format!("libsession-bench-smoke-{}", std::process::id())),
        sizes: vec![200, 400],
        runs: 1,
        pi: None,
        budget: Duration::ZERO,
    };
    let index = generate(&o);
    for s in &index.sessions {
        let f = measure_session(&o, s);
        assert!(f.open_s > 0.0 && f.leaves.iter().all(|l| l.messages_bytes > 2));
    }
    fs::remove_dir_all(&o.data).ok();
    eprintln!("perf: smoke run passed (run `cargo bench --bench perf` to benchmark)");
}

// ---------------------------------------------------------------------------------
// Durability modes: what group commit saves
// ---------------------------------------------------------------------------------

/// The store's file with its syncs counted.
struct CountingFile {
    file: fs::File,
    syncs: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

impl session::SessionFile for CountingFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        std::io::Write::write(&mut self.file, buf)
    }

    fn sync(&mut self) -> std::io::Result<()> {
        self.syncs
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.file.sync_data()
    }
}

/// Appends per durability configuration (spread over the appenders).
const DURABLE_APPENDS: usize = 480;

/// `fsync` and `fsync_batch` with 1, 4 and 16 concurrent appenders on one store:
/// appends per second, syncs, and the group-commit win as a ratio.
fn durability_table(o: &Options) -> String {
    use session::Durability;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};
    let dir = o.data.join("tmp");
    fs::create_dir_all(&dir).unwrap();
    let mut out = String::from(
        "\n### Durability: fsync per append vs group commit (fsync_batch)\n\n\
         | appenders | fsync: appends/s | syncs | fsync_batch: appends/s | syncs | appends per sync | batch ÷ fsync |\n\
         |---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for appenders in [1usize, 4, 16] {
        let mut rows = Vec::new();
        for durability in [Durability::Fsync, Durability::FsyncBatch] {
            let path = dir.join(format!("durable-{appenders}-{durability:?}.jsonl"));
            let _ = fs::remove_file(&path);
            let syncs = Arc::new(AtomicU64::new(0));
            let counter = Arc::clone(&syncs);
            let options = JsonlOptions {
                durability,
                ..JsonlOptions::default()
            };
            let (store, _) = Store::open_jsonl_with_options_and_io(&path, &options, move |file| {
                Box::new(CountingFile {
                    file,
                    syncs: counter,
                })
            })
            .unwrap();
            let per_thread = DURABLE_APPENDS / appenders;
            let (_, d) = timed(|| {
                std::thread::scope(|s| {
                    for t in 0..appenders {
                        let store = &store;
                        s.spawn(move || {
                            let mut parent = String::from("null");
                            for i in 0..per_thread {
                                let id = format!("d{t}-{i}");
                                let line = format!(
                                    r#"{{"id":"{id}","parentId":{parent},"timestamp":{i},"type":"message","message":{{"role":"user","content":"a durable turn of about a hundred bytes of text, like a short prompt"}}}}"#
                                );
                                store.append(&line).unwrap();
                                parent = format!("\"{id}\"");
                            }
                        });
                    }
                });
            });
            let appends = (per_thread * appenders) as f64;
            rows.push((appends / d.as_secs_f64(), syncs.load(Ordering::Relaxed)));
            drop(store);
            let _ = fs::remove_file(&path);
        }
        let ((fsync_rate, fsync_syncs), (batch_rate, batch_syncs)) = (rows[0], rows[1]);
        let _ = writeln!(
            out,
            "| {appenders} | {fsync_rate:.0} | {fsync_syncs} | {batch_rate:.0} | {batch_syncs} | {:.1} | {:.2}× |",
            (DURABLE_APPENDS / appenders * appenders) as f64 / batch_syncs.max(1) as f64,
            batch_rate / fsync_rate
        );
    }
    out
}

/// One generated session, as `sessions.json` lists it for the peer.
#[derive(Clone)]
struct SessionFiles {
    name: String,
    file: PathBuf,
    pi_file: PathBuf,
    entries: usize,
    bytes: u64,
    pi_bytes: u64,
    /// (name, id, depth): depth is the number of entries on the path.
    leaves: Vec<(String, String, usize)>,
    append: bool,
    rss: bool,
}

impl SessionFiles {
    fn to_json(&self) -> Value {
        json!({
            "name": self.name,
            "file": self.file,
            "pi_file": self.pi_file,
            "entries": self.entries,
            "bytes": self.bytes,
            "pi_bytes": self.pi_bytes,
            "leaves": self.leaves.iter().map(|(n, id, d)| json!({"name": n, "id": id, "depth": d})).collect::<Vec<_>>(),
            "append": self.append,
            "rss": self.rss,
        })
    }

    fn from_json(v: &Value) -> SessionFiles {
        let s = |k: &str| v[k].as_str().unwrap_or_default().to_owned();
        let n = |k: &str| v[k].as_u64().unwrap_or_default();
        SessionFiles {
            name: s("name"),
            file: PathBuf::from(s("file")),
            pi_file: PathBuf::from(s("pi_file")),
            entries: n("entries") as usize,
            bytes: n("bytes"),
            pi_bytes: n("pi_bytes"),
            leaves: v["leaves"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|l| {
                    (
                        l["name"].as_str().unwrap_or_default().to_owned(),
                        l["id"].as_str().unwrap_or_default().to_owned(),
                        l["depth"].as_u64().unwrap_or_default() as usize,
                    )
                })
                .collect(),
            append: v["append"].as_bool().unwrap_or(false),
            rss: v["rss"].as_bool().unwrap_or(false),
        }
    }
}

struct Index {
    sessions: Vec<SessionFiles>,
}

fn generate(o: &Options) -> Index {
    fs::create_dir_all(&o.data).unwrap_or_else(|e| die(&format!("{}: {e}", o.data.display())));
    let t = Instant::now();
    let mut sessions = Vec::new();

    let (co, cp) = (
        o.data.join("chapter.jsonl"),
        o.data.join("chapter.pi.jsonl"),
    );
    sessiongen::chapter(&co, &cp).unwrap_or_else(|e| die(&format!("chapter: {e}")));
    sessions.push(SessionFiles {
        name: "chapter".into(),
        bytes: file_len(&co),
        pi_bytes: file_len(&cp),
        file: co,
        pi_file: cp,
        entries: 6,
        leaves: vec![
            ("meta-cwd".into(), "meta-cwd".into(), 5),
            ("a-alt".into(), "a-alt".into(), 2),
        ],
        append: false,
        rss: false,
    });

    let largest = o.sizes.iter().copied().max().unwrap_or(0);
    let mut jobs: Vec<(String, usize, Shape)> = o
        .sizes
        .iter()
        .map(|&n| (format!("session-{n}"), n, Shape::Deep))
        .collect();
    if largest >= 100 {
        jobs.push((format!("wide-{largest}"), largest, Shape::Wide));
    }
    for (name, n, shape) in jobs {
        let (fo, fp) = (
            o.data.join(format!("{name}.jsonl")),
            o.data.join(format!("{name}.pi.jsonl")),
        );
        let g =
            sessiongen::write(n, shape, &fo, &fp).unwrap_or_else(|e| die(&format!("{name}: {e}")));
        let mut leaves = vec![("deepest".to_owned(), g.leaf.clone(), g.chain.len())];
        if shape == Shape::Deep && n == largest {
            // Leaves along the main chain, for "cost grows with the path".
            for d in [10usize, 100, 1_000, 10_000] {
                if d < g.chain.len() {
                    leaves.push((format!("depth-{d}"), g.chain[d - 1].clone(), d));
                }
            }
        } else if shape == Shape::Deep && g.chain.len() > 10 {
            leaves.push(("depth-10".into(), g.chain[9].clone(), 10));
        }
        if shape == Shape::Wide {
            leaves[0].0 = "leaf".into();
        }
        sessions.push(SessionFiles {
            name,
            file: fo,
            pi_file: fp,
            entries: g.entries,
            bytes: g.bytes,
            pi_bytes: g.pi_bytes,
            leaves,
            append: shape == Shape::Deep,
            rss: shape == Shape::Deep,
        });
    }

    // The messages every append batch appends (ours as lines, pi's through appendMessage).
    let mut am = String::new();
    for e in sessiongen::continuation(0x4000_0000, "x", APPEND_BATCH) {
        am.push_str(&e.message);
        am.push('\n');
    }
    fs::write(o.data.join("append-messages.jsonl"), am).unwrap_or_else(|e| die(&e.to_string()));

    let index = json!({
        "append_messages": o.data.join("append-messages.jsonl"),
        "append_batch": APPEND_BATCH,
        "sessions": sessions.iter().map(SessionFiles::to_json).collect::<Vec<_>>(),
    });
    fs::write(
        o.data.join("sessions.json"),
        serde_json::to_string_pretty(&index).unwrap(),
    )
    .unwrap_or_else(|e| die(&e.to_string()));
    eprintln!(
        "perf: generated {} sessions in {} in {:.1} s",
        sessions.len(),
        o.data.display(),
        t.elapsed().as_secs_f64()
    );
    Index { sessions }
}

fn load_or_generate(o: &Options) -> Index {
    let Ok(text) = fs::read_to_string(o.data.join("sessions.json")) else {
        return generate(o);
    };
    let v: Value =
        serde_json::from_str(&text).unwrap_or_else(|e| die(&format!("sessions.json: {e}")));
    let sessions: Vec<SessionFiles> = v["sessions"]
        .as_array()
        .into_iter()
        .flatten()
        .map(SessionFiles::from_json)
        .collect();
    if sessions
        .iter()
        .any(|s| !s.file.exists() || file_len(&s.file) != s.bytes)
    {
        return generate(o);
    }
    Index { sessions }
}

fn file_len(p: &Path) -> u64 {
    fs::metadata(p).map(|m| m.len()).unwrap_or(0)
}

// ---------------------------------------------------------------------------------
// Timing
// ---------------------------------------------------------------------------------

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n == 0 {
        f64::NAN
    } else if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Median seconds of `a` and of `b` (each times itself), after one warm-up call of
/// each: at least `runs` samples, more while the budget lasts (for fast operations).
/// The samples alternate, so that a change in the machine's load hits both: the ratio
/// of the medians is what counts.
fn measure_pair(
    runs: usize,
    budget: Duration,
    mut a: impl FnMut() -> Duration,
    mut b: impl FnMut() -> Duration,
) -> (f64, f64) {
    a();
    b();
    let start = Instant::now();
    let (mut sa, mut sb) = (Vec::new(), Vec::new());
    while sa.len() < runs || (start.elapsed() < budget && sa.len() < 20_000) {
        sa.push(a().as_secs_f64());
        sb.push(b().as_secs_f64());
    }
    (median(sa), median(sb))
}

// ---------------------------------------------------------------------------------
// build_context (contract §7)
// ---------------------------------------------------------------------------------

/// How far before the deepest leaf the compaction keeps from (in path entries).
const CONTEXT_KEPT_TAIL: usize = 40;
/// Entries appended after the compaction.
const CONTEXT_AFTER: usize = 8;

/// One C ABI call of `session_store_build_context` (default estimator), timed with
/// the free; returns the output when asked.
fn build_context_call(
    cs: &CStore,
    leaf: &CStr,
    options: Option<&CStr>,
    inspect: Option<&mut Vec<u8>>,
) -> Duration {
    let mut out: *mut c_char = std::ptr::null_mut();
    let opts = options.map_or(std::ptr::null(), CStr::as_ptr);
    let t = Instant::now();
    // SAFETY: an open store, C strings or NULL, a writable out pointer; freed once.
    let status = unsafe {
        ffi::session_store_build_context(
            cs.0,
            leaf.as_ptr(),
            opts,
            None,
            std::ptr::null_mut(),
            &mut out,
        )
    };
    if status != ffi::SESSION_OK {
        die(&format!("build_context {leaf:?}: {}", take(out)));
    }
    if let Some(buf) = inspect {
        // SAFETY: `out` is the NUL-terminated result.
        buf.extend_from_slice(unsafe { CStr::from_ptr(out) }.to_bytes());
    }
    // SAFETY: freed once.
    unsafe { ffi::session_string_free(out) };
    t.elapsed()
}

/// `build_context` for the deepest leaf of the largest session, after a compaction
/// appended under it that keeps the last interactions, beside `messages_on_path` for
/// the same leaf (the whole path). The session file is copied, never changed.
fn context_bench(o: &Options, index: &Index) {
    // The largest session, and of those the one with the deepest leaf (the deep shape).
    let Some(s) = index
        .sessions
        .iter()
        .max_by_key(|s| (s.entries, s.leaves.first().map_or(0, |l| l.2)))
    else {
        die("no session");
    };
    let (_, deepest, depth) = &s.leaves[0];
    let dir = o.data.join("tmp");
    fs::create_dir_all(&dir).unwrap();
    let copy = dir.join(format!("context-{}.jsonl", s.name));
    fs::copy(&s.file, &copy).unwrap();
    let (store, _) = Store::open_jsonl(&copy).unwrap();
    // F: the last user message at least CONTEXT_KEPT_TAIL entries before the leaf.
    let path = store.path_to(deepest).unwrap();
    let first_kept = path[..path.len().saturating_sub(CONTEXT_KEPT_TAIL)]
        .iter()
        .rev()
        .find(|e| e.kind() == session::EntryKind::Message(session::Role::User))
        .map(|e| e.id().to_owned())
        .unwrap_or_else(|| die("no user message on the deepest path"));
    let compaction = format!(
        r#"{{"id":"bench-c","parentId":"{deepest}","timestamp":1,"type":"compaction","summary":"Earlier work, summarised.","firstKeptEntryId":"{first_kept}","tokensBefore":100000}}"#
    );
    let (receipt, append_d) = timed(|| store.append(&compaction));
    receipt.unwrap_or_else(|e| die(&format!("compaction: {e}")));
    let mut leaf = "bench-c".to_owned();
    for e in sessiongen::continuation(0x5000_0000, "bench-c", CONTEXT_AFTER) {
        store.append(e.ours()).unwrap();
        leaf = e.id;
    }
    drop(store);

    let cs = CStore::open(&copy);
    let leaf_c = CString::new(leaf.as_str()).unwrap();
    let deepest_c = CString::new(deepest.as_str()).unwrap();
    let budget = CString::new(r#"{"budget":{"maxTokens":200000,"reservedOutput":8000}}"#).unwrap();
    let mut ctx = Vec::new();
    build_context_call(&cs, &leaf_c, None, Some(&mut ctx));
    let mut msgs = Vec::new();
    cs.read(
        ffi::session_store_messages_on_path,
        &leaf_c,
        Some(&mut msgs),
    );
    let small = o.budget / 2;
    let (ctx_s, msgs_s) = measure_pair(
        o.runs,
        small,
        || build_context_call(&cs, &leaf_c, None, None),
        || cs.read(ffi::session_store_messages_on_path, &leaf_c, None),
    );
    let (ctx_budget_s, ctx_floor_s) = measure_pair(
        o.runs,
        small,
        || build_context_call(&cs, &leaf_c, Some(&budget), None),
        || copy_floor(&ctx),
    );
    let (full_s, full_msgs_s) = measure_pair(
        o.runs,
        small,
        || build_context_call(&cs, &deepest_c, None, None),
        || cs.read(ffi::session_store_messages_on_path, &deepest_c, None),
    );
    let kept: Value = serde_json::from_slice(&ctx).unwrap();
    let kept = kept["keptEntryIds"].as_array().map_or(0, Vec::len);
    let us = |s: f64| s * 1e6;
    println!(
        "build_context on {} ({} entries): deepest leaf {} deep + compaction + {CONTEXT_AFTER}",
        s.name, s.entries, depth
    );
    println!(
        "  compaction append (cut check walks {CONTEXT_KEPT_TAIL}+ entries): {:.1} µs",
        us(append_d.as_secs_f64())
    );
    println!(
        "  build_context, compacted leaf ({kept} kept messages, {:.1} KB out): {:.1} µs; with a budget (default estimator): {:.1} µs; copy floor of its output: {:.1} µs",
        ctx.len() as f64 / 1e3,
        us(ctx_s),
        us(ctx_budget_s),
        us(ctx_floor_s)
    );
    println!(
        "  messages_on_path, same leaf (whole path, {:.1} MB out): {:.1} µs",
        msgs.len() as f64 / 1e6,
        us(msgs_s)
    );
    println!(
        "  deepest leaf without compaction: build_context {:.1} µs, messages_on_path {:.1} µs (ratio {:.2})",
        us(full_s),
        us(full_msgs_s),
        full_s / full_msgs_s
    );
    // Whole-path reads of the deepest leaf through the session index (the store
    // above, opened on the index its close wrote) and without it (`{"index":false}`:
    // the file replayed into memory; read-only, as the writer above holds the file),
    // sampled alternately.
    let no_index = CString::new(r#"{"readOnly":true,"index":false}"#).unwrap();
    let plain = CStore::open_with(&copy, Some(&no_index));
    println!("  whole-path reads of the deepest leaf, with the index ÷ without (medians):");
    for (name, (with, without)) in [
        (
            "messages_on_path",
            measure_pair(
                o.runs,
                small,
                || cs.read(ffi::session_store_messages_on_path, &deepest_c, None),
                || plain.read(ffi::session_store_messages_on_path, &deepest_c, None),
            ),
        ),
        (
            "path_to",
            measure_pair(
                o.runs,
                small,
                || cs.read(ffi::session_store_path_to, &deepest_c, None),
                || plain.read(ffi::session_store_path_to, &deepest_c, None),
            ),
        ),
        (
            "build_context (uncompacted)",
            measure_pair(
                o.runs,
                small,
                || build_context_call(&cs, &deepest_c, None, None),
                || build_context_call(&plain, &deepest_c, None, None),
            ),
        ),
    ] {
        println!(
            "    {name}: {:.1} µs ÷ {:.1} µs = {:.2}",
            us(with),
            us(without),
            with / without
        );
    }
    drop(plain);
    drop(cs);
    let _ = fs::remove_file(&copy);
}

fn timed<R>(f: impl FnOnce() -> R) -> (R, Duration) {
    let t = Instant::now();
    let r = f();
    (r, t.elapsed())
}

/// FNV-1a 32 of bytes (the peer computes the same over JSON.stringify's UTF-8).
fn fnv32(bytes: &[u8]) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for &b in bytes {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    h
}

// ---------------------------------------------------------------------------------
// The C ABI, from Rust
// ---------------------------------------------------------------------------------

struct CStore(*mut ffi::SessionStore);

impl CStore {
    fn open(path: &Path) -> CStore {
        CStore::open_with(path, None)
    }

    /// `session_jsonl_store_open` (options `None`) or `session_jsonl_store_open_with`.
    fn open_with(path: &Path, options: Option<&CStr>) -> CStore {
        let p = CString::new(path.as_os_str().as_bytes()).unwrap();
        let mut store = std::ptr::null_mut();
        let mut out: *mut c_char = std::ptr::null_mut();
        // SAFETY: valid C strings and out pointers; `out` is freed once.
        let status = unsafe {
            match options {
                None => ffi::session_jsonl_store_open(p.as_ptr(), &mut store, &mut out),
                Some(o) => {
                    ffi::session_jsonl_store_open_with(p.as_ptr(), o.as_ptr(), &mut store, &mut out)
                }
            }
        };
        let text = take(out);
        if status != ffi::SESSION_OK {
            die(&format!(
                "session_jsonl_store_open({}): {text}",
                path.display()
            ));
        }
        CStore(store)
    }

    /// Calls a read (`session_store_path_to` / `_messages_on_path`) once; returns the
    /// time including the free, and the output's length and hash when asked.
    fn read(
        &self,
        f: unsafe extern "C" fn(
            *mut ffi::SessionStore,
            *const c_char,
            *mut *mut c_char,
        ) -> ffi::SessionStatus,
        leaf: &CStr,
        inspect: Option<&mut Vec<u8>>,
    ) -> Duration {
        let mut out: *mut c_char = std::ptr::null_mut();
        let t = Instant::now();
        // SAFETY: an open store, a C string, a writable out pointer.
        let status = unsafe { f(self.0, leaf.as_ptr(), &mut out) };
        if status != ffi::SESSION_OK {
            die(&format!("read {leaf:?}: {}", take(out)));
        }
        if let Some(buf) = inspect {
            // SAFETY: `out` is the NUL-terminated result.
            buf.extend_from_slice(unsafe { CStr::from_ptr(out) }.to_bytes());
        }
        // SAFETY: freed once.
        unsafe { ffi::session_string_free(out) };
        t.elapsed()
    }

    fn append(&self, line: &CStr) -> ffi::SessionStatus {
        let mut out: *mut c_char = std::ptr::null_mut();
        // SAFETY: an open store, a C string, a writable out pointer; freed once.
        unsafe {
            let s = ffi::session_store_append(self.0, line.as_ptr(), &mut out);
            ffi::session_string_free(out);
            s
        }
    }
}

impl Drop for CStore {
    fn drop(&mut self) {
        // SAFETY: the store is open and no longer used.
        unsafe { ffi::session_store_close(self.0) }
    }
}

fn take(out: *mut c_char) -> String {
    if out.is_null() {
        return String::new();
    }
    // SAFETY: a result string of the library, freed once here.
    unsafe {
        let s = CStr::from_ptr(out).to_string_lossy().into_owned();
        ffi::session_string_free(out);
        s
    }
}

// ---------------------------------------------------------------------------------
// Measurements
// ---------------------------------------------------------------------------------

#[derive(Default)]
struct LeafFigures {
    name: String,
    depth: usize,
    messages_s: f64,
    path_s: f64,
    messages_bytes: usize,
    messages_fnv: u32,
    path_bytes: usize,
    messages_floor_s: f64,
    path_floor_s: f64,
}

#[derive(Default)]
struct Figures {
    open_s: f64,
    open_floor_s: f64,
    leaves: Vec<LeafFigures>,
    append_jsonl_us: f64,
    append_ffi_us: f64,
    append_no_identity_us: f64,
    append_burst_us: f64,
    append_floor_us: f64,
    append_mem_us: f64,
    append_mem_floor_us: f64,
    mem_load_us: f64,
    peak_rss: u64,
    baseline_rss: u64,
}

fn open_floor(path: &Path) -> Duration {
    let (_, d) = timed(|| {
        let data = fs::read(path).unwrap();
        let mut start = 0;
        for end in memchr::memchr_iter(b'\n', &data) {
            let line = &data[start..end];
            if !line.is_empty() {
                serde_json::from_slice::<IgnoredAny>(line).unwrap();
            }
            start = end + 1;
        }
        std::hint::black_box(&data);
    });
    d
}

fn copy_floor(bytes: &[u8]) -> Duration {
    let t = Instant::now();
    let mut v = Vec::<u8>::with_capacity(bytes.len() + 1);
    v.extend_from_slice(bytes);
    std::hint::black_box(&v);
    drop(v);
    t.elapsed()
}

fn measure_session(o: &Options, s: &SessionFiles) -> Figures {
    let mut f = Figures::default();
    let big = o.budget;

    // Open: recover + validate + index, through the Rust API (the C ABI's open is the
    // same call plus a small report string). Without the session index: this is the
    // full replay a first open (or `{"index":false}`) does; with an index present,
    // open reads a few pages (the `sqlite` subcommand's resume rows).
    let no_index = JsonlOptions::from_json(r#"{"index":false}"#).unwrap();
    (f.open_s, f.open_floor_s) = measure_pair(
        o.runs,
        big,
        || {
            let ((store, _report), d) =
                timed(|| Store::open_jsonl_with(&s.file, &no_index).unwrap());
            drop(store);
            d
        },
        || open_floor(&s.file),
    );

    // Reads through the C ABI, JSON out.
    let cs = CStore::open(&s.file);
    for (name, id, depth) in &s.leaves {
        let leaf = CString::new(id.as_str()).unwrap();
        let mut msgs = Vec::new();
        cs.read(ffi::session_store_messages_on_path, &leaf, Some(&mut msgs));
        let mut path = Vec::new();
        cs.read(ffi::session_store_path_to, &leaf, Some(&mut path));
        let small = o.budget / 2;
        let (messages_s, messages_floor_s) = measure_pair(
            o.runs,
            small,
            || cs.read(ffi::session_store_messages_on_path, &leaf, None),
            || copy_floor(&msgs),
        );
        let (path_s, path_floor_s) = measure_pair(
            o.runs,
            small,
            || cs.read(ffi::session_store_path_to, &leaf, None),
            || copy_floor(&path),
        );
        let lf = LeafFigures {
            name: name.clone(),
            depth: *depth,
            messages_s,
            path_s,
            messages_floor_s,
            path_floor_s,
            messages_bytes: msgs.len(),
            messages_fnv: fnv32(&msgs),
            path_bytes: path.len(),
        };
        f.leaves.push(lf);
    }
    drop(cs);

    if s.append {
        measure_appends(o, s, &mut f);
    }
    if s.rss {
        let mut peaks = Vec::new();
        let mut bases = Vec::new();
        for _ in 0..3.min(o.runs) {
            let (b, p) = rss_of_open(&s.file);
            bases.push(b as f64);
            peaks.push(p as f64);
        }
        f.peak_rss = median(peaks) as u64;
        f.baseline_rss = median(bases) as u64;
    }
    f
}

fn measure_appends(o: &Options, s: &SessionFiles, f: &mut Figures) {
    let deepest = &s.leaves[0].1;
    let dir = o.data.join("tmp");
    fs::create_dir_all(&dir).unwrap();
    let batches = o.runs.max(3);
    // Every batch continues the chain from the previous one, with fresh ids and the
    // same messages (those pi's appendMessage gets). Batch 0 warms up.
    let mut batch_lines: Vec<Vec<String>> = Vec::new();
    let mut parent = deepest.clone();
    for b in 0..=batches {
        let entries = sessiongen::continuation(
            0x4000_0000 + (b * APPEND_BATCH) as u32,
            &parent,
            APPEND_BATCH,
        );
        parent = entries.last().unwrap().id.clone();
        batch_lines.push(entries.iter().map(|e| e.ours()).collect());
    }
    // Bursts: BURST threads append to one handle at once, each its own chain of
    // APPEND_BATCH / BURST entries branching from the deepest leaf (a chain's next entry
    // waits for its parent's append; the chains never wait for each other), so the
    // store's queue finds up to BURST appends waiting and may write them together.
    let burst_chains: Vec<Vec<Vec<String>>> = (0..=batches)
        .map(|b| {
            (0..BURST)
                .map(|t| {
                    let per = APPEND_BATCH / BURST;
                    sessiongen::continuation(
                        0x6000_0000 + (b * APPEND_BATCH + t * per) as u32,
                        deepest,
                        per,
                    )
                    .iter()
                    .map(|e| e.ours())
                    .collect()
                })
                .collect()
        })
        .collect();
    let per_append = |d: Duration| d.as_secs_f64() * 1e6 / APPEND_BATCH as f64;
    let copy_of = |tag: &str| {
        let copy = dir.join(format!("append-{tag}-{}.jsonl", s.name));
        fs::copy(&s.file, &copy).unwrap();
        copy
    };

    // The JSONL store through the Rust API, and through the C ABI (the line as a C
    // string, the receipt freed), each on its own copy of the session.
    let rust_copy = copy_of("rust");
    let (store, _) = Store::open_jsonl(&rust_copy).unwrap();
    let ffi_copy = copy_of("ffi");
    let cs = CStore::open(&ffi_copy);
    // The same without the identity check (`{"checkIdentity":false}`): no stat of the
    // path and of the fd before each write.
    let plain_copy = copy_of("plain");
    let no_identity = JsonlOptions {
        check_identity: false,
        ..JsonlOptions::default()
    };
    let (plain, _) = Store::open_jsonl_with(&plain_copy, &no_identity).unwrap();
    let burst_copy = copy_of("burst");
    let (burst_store, _) = Store::open_jsonl(&burst_copy).unwrap();
    // The floor: a bare write(2) of the same line to an O_APPEND fd at the end of a copy.
    let floor_copy = copy_of("floor");
    let cpath = CString::new(floor_copy.as_os_str().as_bytes()).unwrap();
    // SAFETY: a valid path; the fd is closed below.
    let fd = unsafe {
        libc::open(
            cpath.as_ptr(),
            libc::O_WRONLY | libc::O_APPEND | libc::O_CLOEXEC,
        )
    };
    assert!(fd >= 0, "open {}", floor_copy.display());
    // A memory store holding the same session, loaded by appending every line.
    let text = fs::read_to_string(&s.file).unwrap();
    let mem = Store::memory();
    let (_, d) = timed(|| {
        for line in text.lines() {
            mem.append(line).unwrap();
        }
    });
    drop(text);
    f.mem_load_us = d.as_secs_f64() * 1e6 / s.entries as f64;

    let (mut rust_us, mut ffi_us, mut floor_us, mut mem_us, mut mem_floor_us, mut plain_us) = (
        Vec::new(),
        Vec::new(),
        Vec::new(),
        Vec::new(),
        Vec::new(),
        Vec::new(),
    );
    let mut burst_us = Vec::new();
    for (b, lines) in batch_lines.iter().enumerate() {
        let c: Vec<CString> = lines
            .iter()
            .map(|l| CString::new(l.as_str()).unwrap())
            .collect();
        let bufs: Vec<Vec<u8>> = lines
            .iter()
            .map(|l| [l.as_bytes(), b"\n"].concat())
            .collect();
        let mut kept: Vec<String> = Vec::with_capacity(lines.len());

        let (_, rust) = timed(|| {
            for line in lines {
                store.append(line).unwrap();
            }
        });
        let (_, ffi) = timed(|| {
            for line in &c {
                assert_eq!(cs.append(line), ffi::SESSION_OK);
            }
        });
        let (_, no_identity) = timed(|| {
            for line in lines {
                plain.append(line).unwrap();
            }
        });
        let (_, burst) = timed(|| {
            std::thread::scope(|scope| {
                for chain in &burst_chains[b] {
                    let store = &burst_store;
                    scope.spawn(move || {
                        for line in chain {
                            store.append(line).unwrap();
                        }
                    });
                }
            })
        });
        let (_, floor) = timed(|| {
            for buf in &bufs {
                // SAFETY: fd is open; buf is valid for its length.
                let n = unsafe { libc::write(fd, buf.as_ptr().cast(), buf.len()) };
                assert_eq!(n, buf.len() as isize);
            }
        });
        let (_, memory) = timed(|| {
            for line in lines {
                mem.append(line).unwrap();
            }
        });
        // The memory floor: validate as JSON and keep a copy of the line.
        let (_, memory_floor) = timed(|| {
            for line in lines {
                serde_json::from_str::<IgnoredAny>(line).unwrap();
                kept.push(line.clone());
            }
        });
        std::hint::black_box(&kept);
        if b > 0 {
            rust_us.push(per_append(rust));
            ffi_us.push(per_append(ffi));
            plain_us.push(per_append(no_identity));
            burst_us.push(per_append(burst));
            floor_us.push(per_append(floor));
            mem_us.push(per_append(memory));
            mem_floor_us.push(per_append(memory_floor));
        }
    }
    f.append_jsonl_us = median(rust_us);
    f.append_ffi_us = median(ffi_us);
    f.append_no_identity_us = median(plain_us);
    f.append_burst_us = median(burst_us);
    f.append_floor_us = median(floor_us);
    f.append_mem_us = median(mem_us);
    f.append_mem_floor_us = median(mem_floor_us);

    drop(store);
    drop(cs);
    drop(plain);
    drop(burst_store);
    drop(mem);
    // SAFETY: fd is open.
    unsafe { libc::close(fd) };
    for p in [rust_copy, ffi_copy, plain_copy, burst_copy, floor_copy] {
        fs::remove_file(p).ok();
    }
}

/// `resume FILE`: open a copy of FILE read-only and read the path to an entry at depth
/// 10, with the session index present and with `{"index":false}`; medians of 9 runs.
fn resume(args: &[String]) {
    let Some(file) = args.first().map(PathBuf::from) else {
        die("resume FILE");
    };
    let copy = file.with_extension("resume.jsonl");
    fs::copy(&file, &copy).unwrap();
    let _ = fs::remove_file(session::index_path(&copy));
    // A writer's open writes the index.
    drop(Store::open_jsonl(&copy).unwrap());
    assert!(session::index_path(&copy).exists());
    let (probe, _) = Store::open_jsonl_with(
        &copy,
        &JsonlOptions::from_json(r#"{"readOnly":true,"index":false}"#).unwrap(),
    )
    .unwrap();
    let page = probe.tree(&session::TreeOptions::default()).unwrap();
    let leaf = page
        .nodes
        .iter()
        .find(|n| n.depth == 10)
        .map(|n| n.id.clone())
        .unwrap_or_else(|| die("no entry at depth 10"));
    let expected = probe.path_to_json(&leaf).unwrap();
    drop(probe);
    let run = |index: bool| {
        let options =
            JsonlOptions::from_json(&format!(r#"{{"readOnly":true,"index":{index}}}"#)).unwrap();
        let mut times: Vec<Duration> = (0..9)
            .map(|_| {
                let t = Instant::now();
                let (store, _) = Store::open_jsonl_with(&copy, &options).unwrap();
                let path = store.path_to_json(&leaf).unwrap();
                let d = t.elapsed();
                assert_eq!(path, expected, "the same path with index {index}");
                d
            })
            .collect();
        times.sort();
        times[4]
    };
    let (with, without) = (run(true), run(false));
    let bytes = fs::metadata(&copy).unwrap().len();
    println!(
        "open -> depth-10 path, {:.1} MB: with index {:.2} ms, without {:.2} ms ({:.2}x)",
        bytes as f64 / 1e6,
        with.as_secs_f64() * 1e3,
        without.as_secs_f64() * 1e3,
        without.as_secs_f64() / with.as_secs_f64()
    );
    // The path's ids, root first, to check against a peer (benches/sqlite_peer.c).
    println!("leaf {leaf}");
    for entry in probe_path(&copy, &leaf) {
        println!("{entry}");
    }
    let _ = fs::remove_file(session::index_path(&copy));
    let _ = fs::remove_file(&copy);
}

fn probe_path(file: &Path, leaf: &str) -> Vec<String> {
    let options = JsonlOptions::from_json(r#"{"readOnly":true}"#).unwrap();
    let (store, _) = Store::open_jsonl_with(file, &options).unwrap();
    store
        .path_to(leaf)
        .unwrap()
        .iter()
        .map(|e| e.id().to_owned())
        .collect()
}

/// `profile open|messages|path|append FILE [LEAF]`: one operation in a loop for about
/// three seconds, to run under `perf record -g`.
fn profile(args: &[String]) {
    let (op, file) = match args {
        [op, file, ..] => (op.as_str(), PathBuf::from(file)),
        _ => die("profile open|messages|path|context[-no-index]|append FILE [LEAF]"),
    };
    let leaf = args.get(2).cloned().unwrap_or_default();
    let until = Instant::now() + Duration::from_secs(3);
    let mut n = 0u64;
    match op {
        "open" => {
            while Instant::now() < until {
                std::hint::black_box(Store::open_jsonl(&file).unwrap());
                n += 1;
            }
        }
        "messages" | "path" | "context" | "messages-no-index" | "path-no-index"
        | "context-no-index" => {
            // `-no-index`: opened with `{"index":false}` (the file replayed into memory).
            let no_index = CString::new(r#"{"index":false}"#).unwrap();
            let cs = match op.ends_with("-no-index") {
                true => CStore::open_with(&file, Some(&no_index)),
                false => CStore::open(&file),
            };
            let op = op.trim_end_matches("-no-index");
            let leaf = CString::new(leaf).unwrap();
            let f = if op == "path" {
                ffi::session_store_path_to
            } else {
                ffi::session_store_messages_on_path
            };
            while Instant::now() < until {
                match op {
                    "context" => drop(build_context_call(&cs, &leaf, None, None)),
                    _ => drop(cs.read(f, &leaf, None)),
                }
                n += 1;
            }
        }
        "append" => {
            // Lines first (150 batches), then the appends alone: start perf with a delay
            // (`perf record -D 2000`) to leave out the open and the generation.
            let copy = file.with_extension("profile.jsonl");
            fs::copy(&file, &copy).unwrap();
            let (store, _) = Store::open_jsonl(&copy).unwrap();
            let mut parent = store
                .entries()
                .unwrap()
                .last()
                .map(|e| e.id().to_owned())
                .unwrap_or_default();
            let mut lines = Vec::new();
            for b in 0..150u32 {
                let entries = sessiongen::continuation(0x5000_0000 + b * 1000, &parent, 1000);
                parent = entries.last().unwrap().id.clone();
                lines.extend(entries.iter().map(|e| e.ours()));
            }
            eprintln!("profile append: ready");
            let until = Instant::now() + Duration::from_secs(3);
            for l in &lines {
                store.append(l).unwrap();
                n += 1;
                if Instant::now() > until {
                    break;
                }
            }
            fs::remove_file(&copy).ok();
        }
        _ => die("profile open|messages|path|context[-no-index]|append FILE [LEAF]"),
    }
    eprintln!("profile {op}: {n} operations");
}

// ---------------------------------------------------------------------------------
// Peak RSS in a child process
// ---------------------------------------------------------------------------------

fn status_kb(field: &str) -> u64 {
    let status = fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// In the child: the peak RSS before and after opening the file, in bytes.
fn rss_child(path: &Path) {
    let before = status_kb("VmHWM:");
    let (store, _) = Store::open_jsonl(path).unwrap_or_else(|e| die(&e.to_string()));
    let peak = status_kb("VmHWM:");
    let rss = status_kb("VmRSS:");
    std::hint::black_box(&store);
    println!("{} {} {}", before * 1024, peak * 1024, rss * 1024);
}

fn rss_of_open(path: &Path) -> (u64, u64) {
    let exe = std::env::current_exe().unwrap();
    let out = Command::new(exe)
        .arg("rss-child")
        .arg(path)
        .output()
        .unwrap();
    if !out.status.success() {
        die(&format!(
            "rss-child: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let v: Vec<u64> = text
        .split_whitespace()
        .filter_map(|x| x.parse().ok())
        .collect();
    (v[0], v[1])
}

// ---------------------------------------------------------------------------------
// The table
// ---------------------------------------------------------------------------------

fn mb(bytes: u64) -> f64 {
    bytes as f64 / 1e6
}

fn fmt_time(s: f64) -> String {
    if !s.is_finite() {
        "—".into()
    } else if s >= 1.0 {
        format!("{s:.2} s")
    } else if s >= 1e-3 {
        format!("{:.2} ms", s * 1e3)
    } else {
        format!("{:.2} µs", s * 1e6)
    }
}

fn fmt_x(x: f64) -> String {
    if !x.is_finite() {
        "—".into()
    } else if x >= 100.0 {
        format!("{x:.0}×")
    } else if x >= 10.0 {
        format!("{x:.1}×")
    } else if x >= 0.01 {
        format!("{x:.2}×")
    } else {
        format!("{x:.4}×")
    }
}

fn verdict(ok: bool) -> &'static str {
    if ok { "met" } else { "MISSED" }
}

/// pi's figures for one session, if the peer ran.
struct Pi<'a>(Option<&'a Value>);

impl Pi<'_> {
    fn num(&self, path: &[&str]) -> f64 {
        let mut v = match self.0 {
            Some(v) => v,
            None => return f64::NAN,
        };
        for k in path {
            v = &v[*k];
        }
        v.as_f64().unwrap_or(f64::NAN)
    }
}

fn run(o: &Options, index: &Index) {
    let pi_all: Option<Value> = o.pi.as_ref().map(|p| {
        let text = fs::read_to_string(p).unwrap_or_else(|e| die(&format!("{}: {e}", p.display())));
        serde_json::from_str(&text).unwrap_or_else(|e| die(&format!("{}: {e}", p.display())))
    });
    let mut out = String::new();
    let mut targets: Vec<String> = Vec::new();
    let mut scaling_open: Vec<(String, u64, usize, f64, f64)> = Vec::new();
    // The targets are stated for the largest session (the 100k-entry file).
    let largest = index
        .sessions
        .iter()
        .filter(|s| s.name.starts_with("session-"))
        .map(|s| s.entries)
        .max()
        .unwrap_or(0);
    let mut scaling_path: Vec<(String, usize, usize, f64, f64, f64, Pi)> = Vec::new();
    let mut checks: Vec<String> = Vec::new();

    for s in &index.sessions {
        eprintln!(
            "perf: measuring {} ({} entries, {:.1} MB)",
            s.name,
            s.entries,
            mb(s.bytes)
        );
        let f = measure_session(o, s);
        let pi = Pi(pi_all.as_ref().and_then(|v| v["sessions"].get(&s.name)));

        // Cross-check: pi rebuilds the same messages, byte for byte.
        for l in &f.leaves {
            let pb = pi.num(&["leaves", &l.name, "messages_bytes"]);
            let ph = pi.num(&["leaves", &l.name, "messages_fnv"]);
            if pb.is_finite() {
                let same = pb as usize == l.messages_bytes && ph as u32 == l.messages_fnv;
                checks.push(format!(
                    "{}/{}: messages {} bytes fnv {:08x} vs pi {} bytes fnv {:08x}: {}",
                    s.name,
                    l.name,
                    l.messages_bytes,
                    l.messages_fnv,
                    pb,
                    ph as u32,
                    if same { "identical" } else { "DIFFERENT" }
                ));
            }
        }
        if s.name == "chapter" {
            continue;
        }
        scaling_open.push((s.name.clone(), s.bytes, s.entries, f.open_s, f.open_floor_s));
        for l in &f.leaves {
            scaling_path.push((
                s.name.clone(),
                s.entries,
                l.depth,
                l.messages_s,
                l.messages_floor_s,
                l.path_s,
                Pi(pi.0.map(|v| &v["leaves"][&l.name])),
            ));
        }
        if s.name.starts_with("wide") {
            continue;
        }

        let pi_open = pi.num(&["open_s"]);
        let ours_mbs = mb(s.bytes) / f.open_s;
        let floor_mbs = mb(s.bytes) / f.open_floor_s;
        let pi_mbs = mb(pi.num(&["pi_bytes"]) as u64) / pi_open;
        let _ = writeln!(
            out,
            "\n### {} — {} entries, {:.1} MB (pi's file {:.1} MB)\n",
            s.name,
            s.entries,
            mb(s.bytes),
            mb(s.pi_bytes)
        );
        let _ = writeln!(
            out,
            "| figure | ours | floor | ours ÷ floor | pi | ours better than pi by | target |"
        );
        let _ = writeln!(out, "|---|---:|---:|---:|---:|---:|---|");
        let _ = writeln!(
            out,
            "| open MB/s | {:.0} | {:.0} | {:.2} | {:.1} | {} | ≥ 0.5 × floor, ≥ 10 × pi |",
            ours_mbs,
            floor_mbs,
            ours_mbs / floor_mbs,
            pi_mbs,
            fmt_x(ours_mbs / pi_mbs)
        );
        let _ = writeln!(
            out,
            "| open time (entries/s) | {} ({:.2} M/s) | {} | | {} | | |",
            fmt_time(f.open_s),
            s.entries as f64 / f.open_s / 1e6,
            fmt_time(f.open_floor_s),
            fmt_time(pi_open)
        );
        let d = &f.leaves[0];
        let pi_ctx = pi.num(&["leaves", "deepest", "buildSessionContext_s"]);
        let pi_branch = pi.num(&["leaves", "deepest", "getBranch_s"]);
        let _ = writeln!(
            out,
            "| messages_on_path, deepest leaf ({} deep), C ABI, {:.1} MB JSON out (pi: buildSessionContext) | {} | {} | {:.2} | {} | {} | ≥ 20 × pi |",
            d.depth,
            mb(d.messages_bytes as u64),
            fmt_time(d.messages_s),
            fmt_time(d.messages_floor_s),
            d.messages_s / d.messages_floor_s,
            fmt_time(pi_ctx),
            fmt_x(pi_ctx / d.messages_s)
        );
        let _ = writeln!(
            out,
            "| path_to, deepest leaf, C ABI, {:.1} MB JSON out (pi: getBranch) | {} | {} | {:.2} | {} | {} | ≥ 20 × pi |",
            mb(d.path_bytes as u64),
            fmt_time(d.path_s),
            fmt_time(d.path_floor_s),
            d.path_s / d.path_floor_s,
            fmt_time(pi_branch),
            fmt_x(pi_branch / d.path_s)
        );
        let pi_app = pi.num(&["append_us"]);
        let _ = writeln!(
            out,
            "| append to JSONL, µs (pi: appendMessage) | {:.2} | {:.2} (write(2)) | {:.2} | {:.1} | {} | ≤ 2 × floor |",
            f.append_jsonl_us,
            f.append_floor_us,
            f.append_jsonl_us / f.append_floor_us,
            pi_app,
            fmt_x(pi_app / f.append_jsonl_us)
        );
        let _ = writeln!(
            out,
            "| append to JSONL through the C ABI, µs | {:.2} | {:.2} (write(2)) | {:.2} | | | |",
            f.append_ffi_us,
            f.append_floor_us,
            f.append_ffi_us / f.append_floor_us
        );
        let _ = writeln!(
            out,
            "| append to JSONL with `checkIdentity:false`, µs | {:.2} | {:.2} (write(2)) | {:.2} | | | |",
            f.append_no_identity_us,
            f.append_floor_us,
            f.append_no_identity_us / f.append_floor_us
        );
        let _ = writeln!(
            out,
            "| append to JSONL in bursts of {BURST} (threads on one handle), µs each | {:.2} | {:.2} (write(2)) | {:.2} | | | ≤ 2 × floor |",
            f.append_burst_us,
            f.append_floor_us,
            f.append_burst_us / f.append_floor_us
        );
        let _ = writeln!(
            out,
            "| append to memory, µs (load: {:.2} µs/entry) | {:.2} | {:.2} (parse + copy) | {:.2} | | | |",
            f.mem_load_us,
            f.append_mem_us,
            f.append_mem_floor_us,
            f.append_mem_us / f.append_mem_floor_us
        );
        let pi_peak = pi.num(&["peak_rss"]);
        let pi_rss = pi.num(&["rss_after_open"]);
        let pi_base = pi.num(&["rss_baseline"]);
        let _ = writeln!(
            out,
            "| peak RSS of the process after open ÷ file | {:.2} ({:.1} MB) | 1.00 | {:.2} | {:.2} ({:.1} MB; {:.2} after open) | {} | ≤ 1.5 × file |",
            f.peak_rss as f64 / s.bytes as f64,
            mb(f.peak_rss),
            f.peak_rss as f64 / s.bytes as f64,
            pi_peak / pi.num(&["pi_bytes"]),
            mb(pi_peak as u64),
            pi_rss / pi.num(&["pi_bytes"]),
            fmt_x(pi_peak / f.peak_rss as f64)
        );
        let _ = writeln!(
            out,
            "| the same, less the process at start (ours {:.1} MB, node + pi's module {:.1} MB) | {:.2} | 1.00 | | {:.2} | | |",
            mb(f.baseline_rss),
            mb(pi_base as u64),
            (f.peak_rss - f.baseline_rss) as f64 / s.bytes as f64,
            (pi_peak - pi_base) / pi.num(&["pi_bytes"]),
        );

        if s.entries < largest {
            continue;
        }
        let name = &s.name;
        let ratio_open_floor = ours_mbs / floor_mbs;
        targets.push(format!(
            "{name}: open {:.2} × floor (≥ 0.5: {}); {} pi (≥ 10: {})",
            ratio_open_floor,
            verdict(ratio_open_floor >= 0.5),
            fmt_x(ours_mbs / pi_mbs),
            if pi_mbs.is_finite() {
                verdict(ours_mbs / pi_mbs >= 10.0)
            } else {
                "no pi figure"
            }
        ));
        targets.push(format!(
            "{name}: messages {} pi, path {} pi (≥ 20: {})",
            fmt_x(pi_ctx / d.messages_s),
            fmt_x(pi_branch / d.path_s),
            if pi_ctx.is_finite() {
                verdict(pi_ctx / d.messages_s >= 20.0 && pi_branch / d.path_s >= 20.0)
            } else {
                "no pi figure"
            }
        ));
        targets.push(format!(
            "{name}: append {:.2} × floor (≤ 2: {})",
            f.append_jsonl_us / f.append_floor_us,
            verdict(f.append_jsonl_us / f.append_floor_us <= 2.0)
        ));
        targets.push(format!(
            "{name}: peak RSS {:.2} × file (≤ 1.5: {})",
            f.peak_rss as f64 / s.bytes as f64,
            verdict(f.peak_rss as f64 / s.bytes as f64 <= 1.5)
        ));
    }

    let _ = writeln!(out, "\n### Scaling: open is linear in the file's size\n");
    let _ = writeln!(
        out,
        "| session | entries | MB | open | ns per byte | MB/s | floor ns per byte | ours ÷ floor (MB/s) |"
    );
    let _ = writeln!(out, "|---|---:|---:|---:|---:|---:|---:|---:|");
    for (name, bytes, entries, s, floor) in &scaling_open {
        let _ = writeln!(
            out,
            "| {name} | {entries} | {:.1} | {} | {:.2} | {:.0} | {:.2} | {:.2} |",
            mb(*bytes),
            fmt_time(*s),
            s * 1e9 / *bytes as f64,
            mb(*bytes) / s,
            floor * 1e9 / *bytes as f64,
            floor / s
        );
    }
    let _ = writeln!(
        out,
        "\n### Scaling: a read costs what its path holds, not what the store holds\n"
    );
    let _ = writeln!(
        out,
        "| store | entries | path length | messages_on_path (C ABI) | ns per path entry | its copy floor | path_to (C ABI) | pi buildSessionContext | pi getBranch |"
    );
    let _ = writeln!(out, "|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (name, entries, depth, m, floor, p, pi) in &scaling_path {
        let _ = writeln!(
            out,
            "| {name} | {entries} | {depth} | {} | {:.0} | {} | {} | {} | {} |",
            fmt_time(*m),
            m * 1e9 / *depth as f64,
            fmt_time(*floor),
            fmt_time(*p),
            fmt_time(pi.num(&["buildSessionContext_s"])),
            fmt_time(pi.num(&["getBranch_s"]))
        );
    }
    out.push_str(&durability_table(o));
    if !checks.is_empty() {
        let _ = writeln!(
            out,
            "\nSame messages (JSON.stringify of pi's buildSessionContext().messages vs ours):\n"
        );
        for c in &checks {
            let _ = writeln!(out, "- {c}");
        }
    }
    let _ = writeln!(out, "\nTargets (on the {largest}-entry session):\n");
    for t in &targets {
        let _ = writeln!(out, "- {t}");
    }
    print!("{out}");
    std::io::stdout().flush().ok();
}
