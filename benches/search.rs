//! The search benchmark (issue 25), on demand: a folder of generated, real-shaped
//! sessions (user / assistant tool call / tool result / answer turns, a regenerated
//! answer on a side branch every 50 turns, a CJK user message every 7th turn), then
//! in one run:
//!
//! - the first search, which builds the index (MB/s over the session bytes);
//! - a warm query (median of 5), and the same word with `rg -F -c` over the files;
//! - pi's own linear scan of the same sessions written in pi's format to a sibling
//!   folder (bench/peer/search.mjs: `SessionManager.list`, then each session's message
//!   texts tested for the word), with the hit counts of the generator, rg, pi and ours;
//! - a CJK query;
//! - the query after one session grew by one entry (and the bytes it read);
//! - the index's size beside the session bytes and beside the text it indexes.
//!
//! ```text
//! cargo bench --bench search                         100 sessions, about 100 MB
//! cargo bench --bench search -- --sessions 1000 --mb 1000
//! cargo bench --bench search -- --sessions 200 --mb 200 --redaction 5
//! ```
//!
//! `--redaction N` adds redaction's cost on building the index (issue 36): N pairs of
//! builds of the whole folder, one with redaction (the default) and one without, in
//! alternation, first on the generated folder and then on the real corpus
//! (tests/interop/corpus/, each file imported to a libsession file, 3N pairs). Both
//! builds of a pair use a temporary index (a directory stands at the sidecar's name, so
//! no sidecar can be used and every search builds its index anew): the same storage,
//! only the redaction differs.
//!
//! ripgrep is Debian's package `ripgrep` (`apt-get install ripgrep`); without it the rg
//! column says so; pi's scan needs node and `npm ci` in bench/peer (else its row says
//! so). Under `cargo test` (no `--bench` argument) it only does a smoke run of 3 small
//! sessions, without pi. Data goes to target/bench-search/ and target/bench-search-pi/.
//! The figures are in docs/performance.md ("Search").

#[path = "sessiongen/mod.rs"]
#[allow(dead_code)]
mod sessiongen;

use std::fs;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use session::json::push_string;
use session::search::IndexUse;
use session::{SIDECAR, SearchQuery, search};
use sessiongen::{Entry, Rng, answer_message, call_message, id_of, result_message, user_message};

const TOOLS: &[&str] = &["read", "bash", "edit", "write", "grep"];
const CJK: &[&str] = &[
    "读取 README.md，告诉我项目名",
    "再读 package.json，告诉我版本",
    "这个函数为什么返回空值？",
    "请把测试改成并行运行",
    "还有什么依赖需要升级？",
];
/// A word written into every tenth session's user messages: what the warm query finds.
const NEEDLE: &str = "flamingo";

fn cjk_message(rng: &mut Rng, ts: u64, session: usize) -> String {
    let mut s = String::from("{\"role\":\"user\",\"content\":");
    push_string(&mut s, &format!("{} 会话{session}", rng.pick(CJK)));
    s.push_str(&format!(",\"timestamp\":{ts}}}"));
    s
}

fn needle_message(ts: u64) -> String {
    format!(
        "{{\"role\":\"user\",\"content\":\"where is the {NEEDLE} config?\",\"timestamp\":{ts}}}"
    )
}

/// What [`write_session`] wrote.
#[derive(Default)]
struct Written {
    /// Bytes of our file.
    bytes: u64,
    /// Bytes of pi's file.
    pi_bytes: u64,
    /// Entries whose message holds [`NEEDLE`].
    needles: u64,
}

/// Writes one session of about `bytes` bytes to `path`, and the same session in pi's
/// format (a session header, then the same entries with ISO timestamps) to `pi`.
fn write_session(path: &Path, pi: &Path, session: usize, bytes: u64) -> Written {
    let mut rng = Rng::new(session as u64 + 1);
    let mut out = BufWriter::new(fs::File::create(path).expect("create session"));
    let mut out_pi = BufWriter::new(fs::File::create(pi).expect("create pi session"));
    let header = format!(
        "{{\"type\":\"session\",\"version\":3,\"id\":\"0193a4c2-7f00-7000-8000-{session:012x}\",\"timestamp\":\"{}\",\"cwd\":\"/workspace/tiny-pi\"}}\n",
        sessiongen::iso(1_733_000_000_000 - 1000)
    );
    out_pi.write_all(header.as_bytes()).expect("write");
    let mut w = Written {
        pi_bytes: header.len() as u64,
        ..Written::default()
    };
    let (mut n, mut turn) = (0u32, 0usize);
    let mut last: Option<String> = None;
    let mut emit = |message: String, parent: Option<String>, n: &mut u32, w: &mut Written| {
        let e = Entry {
            id: id_of(*n),
            parent,
            ts: 1_733_000_000_000 + u64::from(*n) * 1000,
            message,
        };
        *n += 1;
        if e.message.contains(NEEDLE) {
            w.needles += 1;
        }
        let (line, pi_line) = (e.ours(), e.pi());
        out.write_all(line.as_bytes()).expect("write");
        out.write_all(b"\n").expect("write");
        out_pi.write_all(pi_line.as_bytes()).expect("write");
        out_pi.write_all(b"\n").expect("write");
        w.bytes += line.len() as u64 + 1;
        w.pi_bytes += pi_line.len() as u64 + 1;
        e.id
    };
    while w.bytes < bytes {
        let ts = 1_733_000_000_000 + u64::from(n) * 1000;
        let m = if turn % 7 == 3 {
            cjk_message(&mut rng, ts, session)
        } else if session.is_multiple_of(10) && turn % 13 == 5 {
            needle_message(ts)
        } else {
            user_message(&mut rng, ts)
        };
        let u = emit(m, last.take(), &mut n, &mut w);
        let call_id = format!("toolu_{session:04}_{turn:06}");
        let tool = rng.pick(TOOLS);
        let a = emit(
            call_message(&mut rng, ts, &call_id, tool),
            Some(u),
            &mut n,
            &mut w,
        );
        let r = emit(
            result_message(&mut rng, ts, &call_id, tool),
            Some(a),
            &mut n,
            &mut w,
        );
        last = Some(emit(
            answer_message(&mut rng, ts),
            Some(r.clone()),
            &mut n,
            &mut w,
        ));
        if turn % 50 == 49 {
            emit(answer_message(&mut rng, ts), Some(r), &mut n, &mut w);
        }
        turn += 1;
    }
    out.flush().expect("flush");
    out_pi.flush().expect("flush");
    w
}

fn timed<T>(f: impl FnOnce() -> T) -> (T, Duration) {
    let start = Instant::now();
    let value = f();
    (value, start.elapsed())
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

fn query(text: &str) -> SearchQuery {
    SearchQuery::new(text)
}

/// pi's own linear scan (bench/peer/search.mjs), if node and bench/peer/node_modules
/// are there.
struct PiScan {
    total: Duration,
    list: Duration,
    scan: Duration,
    hits: u64,
    sessions: u64,
    rss_kb: u64,
}

fn pi_scan(pi_dir: &Path, bench: bool) -> Result<PiScan, String> {
    let peer = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("bench/peer");
    if !peer
        .join("node_modules/@mariozechner/pi-coding-agent")
        .is_dir()
    {
        return Err("run `npm ci` in bench/peer first".into());
    }
    if !bench {
        return Err("smoke run".into());
    }
    let out = Command::new("node")
        .arg(peer.join("search.mjs"))
        .arg("--dir")
        .arg(pi_dir)
        .args(["--query", NEEDLE])
        .output()
        .map_err(|e| format!("node: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "search.mjs failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let v: serde_json::Value =
        serde_json::from_slice(&out.stdout).map_err(|e| format!("search.mjs output: {e}"))?;
    let secs = |k: &str| Duration::from_secs_f64(v[k].as_f64().unwrap_or(0.0));
    let n = |k: &str| v[k].as_u64().unwrap_or(0);
    Ok(PiScan {
        total: secs("seconds"),
        list: secs("listSeconds"),
        scan: secs("scanSeconds"),
        hits: n("hits"),
        sessions: n("sessions"),
        rss_kb: n("maxRssKb"),
    })
}

/// The median time of `rg -F -c NEEDLE` over the folder, and the matching lines it counted.
fn rg(dir: &Path) -> Option<(Duration, u64)> {
    let run = || {
        Command::new("rg")
            .args([
                "-F",
                "-c",
                "--no-ignore",
                "--hidden",
                "-g",
                "*.jsonl",
                NEEDLE,
            ])
            .arg(dir)
            .output()
            .ok()
    };
    let first = run()?;
    // One `path:count` line a file.
    let lines = String::from_utf8_lossy(&first.stdout)
        .lines()
        .filter_map(|l| l.rsplit(':').next()?.parse::<u64>().ok())
        .sum();
    Some((median((0..5).map(|_| timed(run).1).collect()), lines))
}

/// Builds of the whole `dir` with redaction and without, `runs` pairs in alternation
/// (which goes first alternates too), through a temporary index each (a directory at
/// the sidecar's name); prints the medians and the median of the pairs' ratios.
fn redaction_cost(dir: &Path, runs: usize, label: &str, bytes: u64) {
    let sidecar = dir.join(SIDECAR);
    let _ = fs::remove_file(&sidecar);
    fs::create_dir(&sidecar).expect("a directory at the sidecar's name");
    let build = |redact: bool| {
        let (result, t) = timed(|| {
            search(
                dir,
                &SearchQuery {
                    redact,
                    ..query(NEEDLE)
                },
            )
            .expect("a build")
        });
        assert_eq!(result.index, IndexUse::Temporary, "every search builds");
        t
    };
    let (mut on, mut off, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for run in 0..runs {
        let (a, b) = match run % 2 {
            0 => {
                let a = build(true);
                (a, build(false))
            }
            _ => {
                let b = build(false);
                (build(true), b)
            }
        };
        ratios.push(a.as_secs_f64() / b.as_secs_f64());
        on.push(a);
        off.push(b);
    }
    ratios.sort_by(f64::total_cmp);
    let (on, off) = (median(on), median(off));
    let mbps = |t: Duration| bytes as f64 / 1e6 / t.as_secs_f64();
    println!(
        "redaction's cost on building, {label}: with {} ({:.1} MB/s), without {} ({:.1} MB/s); median of {runs} pairs' ratios {:.3} (+{:.1}%)",
        ms(on),
        mbps(on),
        ms(off),
        mbps(off),
        ratios[ratios.len() / 2],
        (ratios[ratios.len() / 2] - 1.0) * 100.0
    );
    fs::remove_dir(&sidecar).expect("remove the directory");
}

/// The real corpus (tests/interop/corpus/), each file imported to a libsession file in
/// `dir`; returns the bytes written.
fn corpus_folder(dir: &Path) -> u64 {
    let _ = fs::remove_dir_all(dir);
    fs::create_dir_all(dir).expect("corpus dir");
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/interop/corpus");
    let (mut stack, mut bytes, mut n) = (vec![root], 0u64, 0usize);
    while let Some(d) = stack.pop() {
        for item in fs::read_dir(&d).expect("the corpus folder") {
            let path = item.expect("a corpus entry").path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "jsonl") {
                continue;
            }
            let text = fs::read(&path).expect("a corpus file");
            let Ok(imported) = session::interop::import(None, &text) else {
                continue;
            };
            let mut body = imported.lines.join("\n");
            body.push('\n');
            fs::write(dir.join(format!("c{n:04}.jsonl")), body.as_bytes()).expect("write");
            bytes += body.len() as u64;
            n += 1;
        }
    }
    bytes
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let bench = args.iter().any(|a| a == "--bench");
    let value = |name: &str, default: u64| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let (sessions, mb) = match bench {
        true => (value("--sessions", 100) as usize, value("--mb", 100)),
        false => (3, 1),
    };
    let target = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target");
    let dir = target.join("bench-search");
    let pi_dir = target.join("bench-search-pi");
    for d in [&dir, &pi_dir] {
        let _ = fs::remove_dir_all(d);
        fs::create_dir_all(d).expect("data dir");
    }
    let per_session = mb * 1_000_000 / sessions.max(1) as u64;
    let (written, gen_time) = timed(|| {
        (0..sessions)
            .map(|s| {
                let name = format!("s{s:05}.jsonl");
                write_session(&dir.join(&name), &pi_dir.join(&name), s, per_session)
            })
            .fold(Written::default(), |a, w| Written {
                bytes: a.bytes + w.bytes,
                pi_bytes: a.pi_bytes + w.pi_bytes,
                needles: a.needles + w.needles,
            })
    });
    let total = written.bytes;
    println!(
        "search benchmark: {sessions} sessions, {:.1} MB ({:.1} MB in pi's format; generated in {})",
        total as f64 / 1e6,
        written.pi_bytes as f64 / 1e6,
        ms(gen_time)
    );

    let (first, first_time) = timed(|| search(&dir, &query(NEEDLE)).expect("first search"));
    let mbps = total as f64 / 1e6 / first_time.as_secs_f64();
    println!(
        "first search (builds the index)  {:>12}  {mbps:.1} MB/s  ({} entries, {} hits)",
        ms(first_time),
        first.entries,
        first.hits.len()
    );
    let warm = median(
        (0..5)
            .map(|_| timed(|| search(&dir, &query(NEEDLE)).expect("warm")).1)
            .collect(),
    );
    println!("warm query {NEEDLE:?}               {:>12}", ms(warm));
    match rg(&dir) {
        Some((t, lines)) => println!(
            "rg -F -c {NEEDLE:?} over the files  {:>12}  (rg / warm query = {:.1}x; {lines} lines)",
            ms(t),
            t.as_secs_f64() / warm.as_secs_f64()
        ),
        None => println!("rg: not installed (Debian: apt-get install ripgrep)"),
    }
    match pi_scan(&pi_dir, bench) {
        Ok(pi) => println!(
            "pi list + text match {NEEDLE:?}     {:>12}  (pi / warm query = {:.0}x; list {}, match {}; {} hits in {} sessions; peak RSS {:.0} MB)",
            ms(pi.total),
            pi.total.as_secs_f64() / warm.as_secs_f64(),
            ms(pi.list),
            ms(pi.scan),
            pi.hits,
            pi.sessions,
            pi.rss_kb as f64 / 1e3
        ),
        Err(why) => println!("pi: not run ({why})"),
    }
    let all = search(
        &dir,
        &SearchQuery {
            limit: 1000,
            ..query(NEEDLE)
        },
    )
    .expect("count");
    let mut in_sessions: Vec<&str> = all.hits.iter().map(|h| h.path.as_str()).collect();
    in_sessions.sort_unstable();
    in_sessions.dedup();
    println!(
        "hits for {NEEDLE:?}: generated {} entries; libsession {} hits (limit 1000) in {} sessions",
        written.needles,
        all.hits.len(),
        in_sessions.len()
    );
    let cjk = median(
        (0..5)
            .map(|_| timed(|| search(&dir, &query("项目名")).expect("cjk")).1)
            .collect(),
    );
    println!("warm CJK query \"项目名\"            {:>12}", ms(cjk));

    let line = format!(
        "{{\"type\":\"message\",\"id\":\"appended\",\"parentId\":null,\"timestamp\":1,\"message\":{}}}\n",
        needle_message(1)
    );
    fs::OpenOptions::new()
        .append(true)
        .open(dir.join("s00001.jsonl"))
        .and_then(|mut f| f.write_all(line.as_bytes()))
        .expect("append");
    let (after, after_time) = timed(|| search(&dir, &query(NEEDLE)).expect("after append"));
    println!(
        "query after one appended entry    {:>12}  (read {} bytes; {} hits)",
        ms(after_time),
        after.bytes_read,
        after.hits.len()
    );

    let index = fs::metadata(dir.join(SIDECAR))
        .map(|m| m.len())
        .unwrap_or(0);
    let text: i64 = rusqlite::Connection::open(dir.join(SIDECAR))
        .and_then(|c| {
            c.query_row("SELECT coalesce(sum(text_bytes), 0) FROM files", [], |r| {
                r.get(0)
            })
        })
        .unwrap_or(0);
    println!(
        "index {:.1} MB: {:.2}x the session bytes, {:.2}x the {:.1} MB of text it indexes",
        index as f64 / 1e6,
        index as f64 / total as f64,
        index as f64 / text.max(1) as f64,
        text as f64 / 1e6
    );
    let pairs = value("--redaction", 0) as usize;
    if pairs > 0 {
        redaction_cost(&dir, pairs, "generated sessions", total);
        let corpus = target.join("bench-search-corpus");
        let bytes = corpus_folder(&corpus);
        redaction_cost(&corpus, pairs * 3, "the real corpus", bytes);
        let _ = fs::remove_dir_all(&corpus);
    }
}
