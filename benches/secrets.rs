//! The secret scanner's benchmark (issue 36): scan speed on real session text, and the
//! cost redaction adds to the HTML view.
//!
//! ```text
//! cargo bench --bench secrets                 scan >= 1 GiB, then the view with and
//!                                             without redaction
//! cargo bench --bench secrets -- --gb 2 --runs 7
//! cargo bench --bench secrets -- --view-only --runs 21   the view only
//! ```
//!
//! The session text is the real corpus (tests/interop/corpus/: Claude Code, Codex and
//! pi files as written, and each imported to a libsession file), its lines repeated in
//! memory to a buffer of 64 MiB; the scan reads that buffer again and again until the
//! total reaches the size asked for, on one thread, line by line, as `session secrets`
//! does once a file is read (the figure leaves out the read from disk). The view is
//! rendered from the largest corpus session, imported, with redaction on (the default)
//! and off, alternately, median of `--runs`: first the page alone (`render_html` on an
//! open store), then the whole command a user runs, `session view FILE -o OUT` against
//! `session view --no-redact FILE -o OUT` (the process, the open, the page, the file).
//!
//! Under `cargo test` (no `--bench` argument) it only does a quick smoke run.

use std::path::{Path, PathBuf};
use std::time::Instant;

use session::secrets::{Redactor, SecretsOptions};
use session::view::{ViewOptions, render_html};
use session::{JsonlOptions, Store};

const BUFFER: usize = 64 << 20;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let bench = args.iter().any(|a| a == "--bench");
    let number = |name: &str, default: f64| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(default)
    };
    let gib = if bench { number("--gb", 1.0) } else { 0.01 };
    let runs = if bench {
        number("--runs", 5.0) as usize
    } else {
        1
    };
    if !args.iter().any(|a| a == "--view-only") {
        scan_speed(&corpus_lines(), gib);
    }
    view_cost(runs.max(1));
}

/// Every line of every corpus file, raw and imported.
fn corpus_lines() -> Vec<Vec<u8>> {
    let mut lines = Vec::new();
    for file in corpus_files() {
        let text = std::fs::read(&file).expect("a corpus file");
        lines.extend(
            text.split(|&b| b == b'\n')
                .filter(|l| !l.is_empty())
                .map(<[u8]>::to_vec),
        );
        if let Ok(imported) = session::interop::import(None, &text) {
            lines.extend(imported.lines.into_iter().map(String::into_bytes));
        }
    }
    lines
}

fn corpus_files() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/interop/corpus");
    let mut files = Vec::new();
    let mut stack = vec![root];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("the corpus folder") {
            let path = entry.expect("a corpus entry").path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "jsonl") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// Scans the corpus lines, repeated, until `gib` GiB have been read; prints MB/s.
fn scan_speed(corpus: &[Vec<u8>], gib: f64) {
    let redactor = Redactor::standard().expect("the default rules compile");
    let mut buffer: Vec<&[u8]> = Vec::new();
    let mut size = 0usize;
    let target = BUFFER.min((gib * f64::from(1u32 << 30)) as usize).max(1);
    'fill: loop {
        for line in corpus {
            buffer.push(line);
            size += line.len() + 1;
            if size >= target {
                break 'fill;
            }
        }
    }
    let total_target = (gib * f64::from(1u32 << 30)) as usize;
    let (mut total, mut findings, mut lines) = (0usize, 0usize, 0usize);
    let start = Instant::now();
    while total < total_target {
        for line in &buffer {
            findings += redactor.find_in_json(line).len();
        }
        total += size;
        lines += buffer.len();
    }
    let seconds = start.elapsed().as_secs_f64();
    println!(
        "scan: {:.2} GiB ({} lines, {} corpus lines distinct) in {:.2} s on one thread: {:.0} MB/s, {} findings",
        total as f64 / f64::from(1u32 << 30),
        lines,
        corpus.len(),
        seconds,
        total as f64 / 1e6 / seconds,
        findings
    );
}

/// Renders the largest corpus session's page with and without redaction.
fn view_cost(runs: usize) {
    let largest = corpus_files()
        .into_iter()
        .max_by_key(|f| std::fs::metadata(f).map(|m| m.len()).unwrap_or(0))
        .expect("a corpus file");
    let text = std::fs::read(&largest).expect("the largest corpus file");
    let imported = session::interop::import(None, &text).expect("the corpus file imports");
    let dir = std::env::temp_dir().join(format!("libsession-secrets-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary folder");
    let path = dir.join("view.jsonl");
    let mut body = imported.lines.join("\n");
    body.push('\n');
    std::fs::write(&path, body.as_bytes()).expect("the session file");
    // Where the time goes: building the rule set (once per process), the prefilter over
    // every entry, and the whole redaction (the fastest of `runs` passes each).
    let mut compile = f64::INFINITY;
    for _ in 0..runs {
        let start = Instant::now();
        std::hint::black_box(Redactor::new(&SecretsOptions::default()).expect("the rules"));
        compile = compile.min(start.elapsed().as_secs_f64());
    }
    println!(
        "the default rule set builds in {:.2} ms (once per process, its patterns compiled as texts trigger them; fastest of {runs})",
        compile * 1e3
    );
    let redactor = Redactor::standard().expect("the default rules compile");
    let (mut prefilter, mut whole, mut passing) = (f64::INFINITY, f64::INFINITY, 0);
    for _ in 0..runs {
        passing = 0;
        let start = Instant::now();
        for line in &imported.lines {
            passing += usize::from(redactor.may_hold_secret(line.as_bytes()));
        }
        prefilter = prefilter.min(start.elapsed().as_secs_f64());
        let start = Instant::now();
        for line in &imported.lines {
            std::hint::black_box(redactor.redact_json_strings(line));
        }
        whole = whole.min(start.elapsed().as_secs_f64());
    }
    println!(
        "view's entries: {} of {} pass the prefilter; fastest of {runs}: prefilter {:.2} ms ({:.0} MB/s), redaction in all {:.2} ms",
        passing,
        imported.lines.len(),
        prefilter * 1e3,
        body.len() as f64 / 1e6 / prefilter,
        whole * 1e3
    );
    let options = JsonlOptions {
        read_only: true,
        ..JsonlOptions::default()
    };
    let (store, _) = Store::open_jsonl_with(&path, &options).expect("the session opens");
    let redacted = ViewOptions::default();
    let plain = ViewOptions::from_json(r#"{"redact":false}"#).expect("options");
    let (mut with, mut without) = (Vec::new(), Vec::new());
    let mut page_bytes = 0;
    for _ in 0..runs {
        let start = Instant::now();
        page_bytes = render_html(&store, &plain).expect("a page").len();
        without.push(start.elapsed().as_secs_f64());
        let start = Instant::now();
        render_html(&store, &redacted).expect("a page");
        with.push(start.elapsed().as_secs_f64());
    }
    println!(
        "view: {} ({} bytes of session, {} bytes of page), {runs} runs: {}",
        largest
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        body.len(),
        page_bytes,
        cost(&mut with, &mut without, ("without redaction", "with"))
    );
    view_command(&path, runs, &dir);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Runs `session view` on `session` with redaction and without, alternately, `runs`
/// times each, writing the page to a new file in `dir`; prints the fastest and the
/// median of each.
fn view_command(session: &Path, runs: usize, dir: &Path) {
    let command = |redact: bool, run: usize| {
        let out = dir.join(format!("page-{redact}-{run}.html"));
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_session"));
        command.arg("view");
        if !redact {
            command.arg("--no-redact");
        }
        command.arg(session).arg("-o").arg(&out);
        let start = Instant::now();
        let status = command.status().expect("session view runs");
        let seconds = start.elapsed().as_secs_f64();
        assert!(status.success(), "session view: {status}");
        let _ = std::fs::remove_file(&out);
        seconds
    };
    let (mut with, mut without) = (Vec::new(), Vec::new());
    for run in 0..runs {
        without.push(command(false, run));
        with.push(command(true, run));
    }
    println!(
        "session view FILE -o OUT, {runs} runs: {}",
        cost(&mut with, &mut without, ("with --no-redact", "redacting"))
    );
}

/// What redaction adds: the fastest run of each way and the cost between them, then
/// the medians and theirs (`labels`: how the two ways are named, without first).
fn cost(with: &mut [f64], without: &mut [f64], labels: (&str, &str)) -> String {
    let (min_with, min_without) = (fastest(with), fastest(without));
    let (with, without) = (median(with), median(without));
    format!(
        "fastest {:.1} ms {}, {:.1} ms {}: +{:.1}%; median {:.1} ms and {:.1} ms: +{:.1}%",
        min_without * 1e3,
        labels.0,
        min_with * 1e3,
        labels.1,
        (min_with / min_without - 1.0) * 100.0,
        without * 1e3,
        with * 1e3,
        (with / without - 1.0) * 100.0
    )
}

/// The fastest run: the one least disturbed by other work on the machine.
fn fastest(samples: &[f64]) -> f64 {
    samples.iter().copied().fold(f64::INFINITY, f64::min)
}

fn median(samples: &mut [f64]) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}
