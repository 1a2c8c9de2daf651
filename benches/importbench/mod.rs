//! `import [--gb N] [--runs N] [--data DIR]`: importing foreign session files, in MB/s
//! and peak RSS, beside opening what the import wrote.
//!
//! The Claude Code transcript is generated from the real transcripts of the test
//! corpus (`tests/interop/corpus/claude-code/*.jsonl`): their lines, repeated until the
//! file holds `--gb` gigabytes (default 1), every uuid replaced by a fresh one per
//! repetition (the first line of a repetition hangs under the last of the one before,
//! so the tree stays one tree), and after every conversation line enough copies of the
//! corpus's `progress` lines (fresh uuids, each under the line before it) that 99% of
//! the lines are `progress`, as in the multi-gigabyte transcripts users report. The pi
//! file is the largest pi file of the corpus, as it is.
//!
//! Every figure comes from a fresh child process (this binary re-executed as
//! `import-child` / `import-open-child`), so its peak RSS (`VmHWM`) is its own; the
//! time is the median of `--runs` children (default 3), files in the page cache.

use std::fs;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use session::interop::{Format, import_file, import_file_into};
use session::{JsonlOptions, Store};

use super::{die, status_kb};

pub mod generate;
use generate::{generate_claude, write_line};

const CORPUS: &str = "tests/interop/corpus";

pub fn run(args: &[String]) {
    let o = super::parse_options(args);
    let gb: f64 = super::num_arg(args, "--gb").unwrap_or(1.0);
    // The pi and Codex files: the corpus's, repeated to this size.
    let foreign_mb: f64 = super::num_arg(args, "--foreign-mb").unwrap_or(100.0);
    // Three children by default: each imports a whole gigabyte.
    let runs: usize = super::num_arg(args, "--runs").unwrap_or(3).max(1);
    // `--sink`: the Claude Code import only, its output into `io::sink()` (no file
    // written, nothing opened): peak memory at sizes whose output the disk cannot hold.
    let sink = args.iter().any(|a| a == "--sink");
    let data = o.data;
    let dir = data.join("import");
    fs::create_dir_all(&dir).unwrap();
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join(CORPUS);
    let claude = dir.join(format!("claude-{gb}gb.jsonl"));
    let target = (gb * 1e9) as u64;
    let made = |path: &Path, target: u64, make: &dyn Fn(&Path, u64)| {
        if fs::metadata(path).map(|m| m.len()).unwrap_or(0) < target {
            let t = Instant::now();
            make(path, target);
            eprintln!(
                "import: wrote {} ({:.1} MB) in {:.1} s",
                path.display(),
                fs::metadata(path).unwrap().len() as f64 / 1e6,
                t.elapsed().as_secs_f64()
            );
        }
    };
    made(&claude, target, &|p, t| {
        generate_claude(&corpus.join("claude-code"), p, t);
    });
    let mut sources = vec![("Claude Code, generated", "claude-code", claude.clone())];
    if !sink {
        let foreign = (foreign_mb * 1e6) as u64;
        let pi = dir.join(format!("pi-{foreign_mb}mb.jsonl"));
        made(&pi, foreign, &|p, t| {
            generate_pi(&largest(&corpus.join("pi")), p, t)
        });
        let codex = dir.join(format!("codex-{foreign_mb}mb.jsonl"));
        made(&codex, foreign, &|p, t| {
            generate_codex(&largest(&corpus.join("codex")), p, t)
        });
        sources.push(("pi, corpus repeated", "pi", pi));
        sources.push(("Codex, corpus repeated", "codex", codex));
    }
    println!(
        "| source | size | import | import MB/s | import peak RSS | RSS ÷ size | floor: read | floor: split + parse | import ÷ parse floor | open the result | open MB/s | open peak RSS |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (name, format, source) in &sources {
        let source = source.as_path();
        let bytes = fs::metadata(source).unwrap().len();
        let out = dir.join(format!("imported-{format}.jsonl"));
        let mut imports = Vec::new();
        let mut opens = Vec::new();
        let mut reads = Vec::new();
        let mut parses = Vec::new();
        for _ in 0..runs {
            let _ = fs::remove_file(&out);
            let _ = fs::remove_file(session::index_path(&out));
            // The floors first, in the same run (the file in the page cache for both).
            reads.push(child("import-floor-child", &["read", path_str(source)]).0);
            parses.push(child("import-floor-child", &["parse", path_str(source)]).0);
            let to = if sink { "-" } else { path_str(&out) };
            imports.push(child("import-child", &[format, path_str(source), to]));
            if !sink {
                opens.push(child("import-open-child", &[path_str(&out)]));
            }
        }
        // Resume of the result, its index written once by a writer's open and close.
        let mut resumes = Vec::new();
        if !sink {
            child("import-index-child", &[path_str(&out)]);
            for _ in 0..runs.max(5) {
                resumes.push(child3("import-resume-child", &[path_str(&out)]));
            }
        }
        let (it, ir) = medians(&imports);
        let (rt, _) = medians(&reads.iter().map(|&t| (t, 0.0)).collect::<Vec<_>>());
        let (pt, _) = medians(&parses.iter().map(|&t| (t, 0.0)).collect::<Vec<_>>());
        let mb = bytes as f64 / 1e6;
        let (open, open_mbs, open_rss) = if sink {
            (
                "(output not written)".to_owned(),
                String::new(),
                String::new(),
            )
        } else {
            let out_bytes = fs::metadata(&out).unwrap().len();
            let (ot, or) = medians(&opens);
            (
                format!("{ot:.2} s ({:.1} MB)", out_bytes as f64 / 1e6),
                format!("{:.0}", out_bytes as f64 / 1e6 / ot),
                format!("{:.1} MB", or / 1e6),
            )
        };
        println!(
            "| {name} | {mb:.1} MB | {it:.2} s | {:.0} | {:.1} MB | {:.3} | {rt:.2} s ({:.0} MB/s) | {pt:.2} s ({:.0} MB/s) | {:.2} | {open} | {open_mbs} | {open_rss} |",
            mb / it,
            ir / 1e6,
            ir / bytes as f64,
            mb / rt,
            mb / pt,
            it / pt,
        );
        if !resumes.is_empty() {
            let mut open: Vec<f64> = resumes.iter().map(|r| r.0).collect();
            let mut resume: Vec<f64> = resumes.iter().map(|r| r.1).collect();
            open.sort_by(f64::total_cmp);
            resume.sort_by(f64::total_cmp);
            eprintln!(
                "{name}: with the index, open {:.3} ms, open + context of the resume leaf ({} messages) {:.3} ms (medians of {})",
                open[open.len() / 2] * 1e3,
                resumes[0].2,
                resume[resume.len() / 2] * 1e3,
                resumes.len()
            );
        }
        let _ = fs::remove_file(&out);
        let _ = fs::remove_file(session::index_path(&out));
    }
}

/// Runs this binary as `mode args…`; its output is three numbers.
fn child3(mode: &str, args: &[&str]) -> (f64, f64, f64) {
    let v = child_numbers(mode, args);
    (v[0], v[1], v[2])
}

/// In the child: `import-floor-child read|parse FILE`: the file read through (`read`),
/// or split into lines each parsed by `serde_json` into `IgnoredAny` (`parse`, a
/// validating parse that builds nothing). Prints `SECONDS PEAK_BYTES`.
pub fn floor_child(args: &[String]) {
    use std::io::{BufRead, BufReader, Read};
    let file = fs::File::open(&args[1]).unwrap_or_else(|e| die(&e.to_string()));
    let t = Instant::now();
    let mut reader = BufReader::with_capacity(1 << 16, file);
    let mut count = 0u64;
    if args[0] == "read" {
        let mut buf = vec![0u8; 1 << 16];
        loop {
            let n = reader
                .read(&mut buf)
                .unwrap_or_else(|e| die(&e.to_string()));
            if n == 0 {
                break;
            }
            count += n as u64;
        }
    } else {
        let mut line = Vec::new();
        loop {
            line.clear();
            let n = reader
                .read_until(b'\n', &mut line)
                .unwrap_or_else(|e| die(&e.to_string()));
            if n == 0 {
                break;
            }
            if serde_json::from_slice::<serde::de::IgnoredAny>(&line).is_ok() {
                count += 1;
            }
        }
    }
    let secs = t.elapsed().as_secs_f64();
    std::hint::black_box(count);
    println!("{secs} {}", status_kb("VmHWM:") * 1024);
}

/// A pi file: `source`'s lines repeated to `target` bytes, the header once, every id
/// (`id`, `parentId`, `firstKeptEntryId`) suffixed with the repetition, and the first
/// entry of a repetition under the last of the one before.
fn generate_pi(source: &Path, out: &Path, target: u64) {
    let text = fs::read_to_string(source).unwrap();
    let lines: Vec<serde_json::Value> = text
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let mut w = BufWriter::with_capacity(1 << 20, fs::File::create(out).unwrap());
    let mut written = 0u64;
    let mut last: Option<String> = None;
    for repetition in 0u64.. {
        let mut first = true;
        for line in &lines {
            let mut line = line.clone();
            let Some(object) = line.as_object_mut() else {
                continue;
            };
            if object.get("type").and_then(|t| t.as_str()) == Some("session") {
                if repetition > 0 {
                    continue;
                }
            } else {
                for key in ["id", "parentId", "firstKeptEntryId"] {
                    if let Some(serde_json::Value::String(id)) = object.get_mut(key) {
                        id.push_str(&format!("-{repetition}"));
                    }
                }
                if first && repetition > 0 {
                    object.insert("parentId".into(), last.clone().into());
                }
                first = false;
                last = object.get("id").and_then(|i| i.as_str()).map(str::to_owned);
            }
            let text = serde_json::to_vec(&line).unwrap();
            write_line(&mut w, &text, &mut written);
        }
        if written >= target {
            break;
        }
    }
    w.flush().unwrap();
}

/// A Codex rollout: `source`'s lines repeated to `target` bytes, its `session_meta`
/// once (Codex's items carry no ids: a repetition continues the conversation).
fn generate_codex(source: &Path, out: &Path, target: u64) {
    let text = fs::read(source).unwrap();
    let lines: Vec<&[u8]> = text
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .collect();
    let mut w = BufWriter::with_capacity(1 << 20, fs::File::create(out).unwrap());
    let mut written = 0u64;
    for repetition in 0u64.. {
        for line in &lines {
            if repetition > 0 && memchr::memmem::find(line, b"\"type\":\"session_meta\"").is_some()
            {
                continue;
            }
            write_line(&mut w, line, &mut written);
        }
        if written >= target {
            break;
        }
    }
    w.flush().unwrap();
}

fn path_str(p: &Path) -> &str {
    p.to_str()
        .unwrap_or_else(|| die("a path that is not UTF-8"))
}

fn medians(samples: &[(f64, f64)]) -> (f64, f64) {
    let mut t: Vec<f64> = samples.iter().map(|s| s.0).collect();
    let mut r: Vec<f64> = samples.iter().map(|s| s.1).collect();
    t.sort_by(f64::total_cmp);
    r.sort_by(f64::total_cmp);
    (t[t.len() / 2], r[r.len() / 2])
}

/// Runs this binary as `mode args…`; its output is `SECONDS PEAK_BYTES`.
fn child(mode: &str, args: &[&str]) -> (f64, f64) {
    let v = child_numbers(mode, args);
    (v[0], v[1])
}

/// Runs this binary as `mode args…` and reads the numbers it prints, dying with its
/// error output when it fails.
fn child_numbers(mode: &str, args: &[&str]) -> Vec<f64> {
    let out = Command::new(std::env::current_exe().unwrap())
        .arg(mode)
        .args(args)
        .output()
        .unwrap();
    if !out.status.success() {
        die(&format!("{mode}: {}", String::from_utf8_lossy(&out.stderr)));
    }
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .filter_map(|x| x.parse().ok())
        .collect()
}

/// In the child: `import-child FORMAT SRC OUT` (`OUT` `-`: into `io::sink()`).
pub fn import_child(args: &[String]) {
    let format = Format::from_name(&args[0]).unwrap_or_else(|| die("bad format"));
    let t = Instant::now();
    let report = match args[2].as_str() {
        "-" => import_file_into(format, Path::new(&args[1]), &mut std::io::sink()),
        out => import_file(format, Path::new(&args[1]), Path::new(out)),
    }
    .unwrap_or_else(|e| die(&e.to_string()));
    let secs = t.elapsed().as_secs_f64();
    std::hint::black_box(&report);
    println!("{secs} {}", status_kb("VmHWM:") * 1024);
}

/// In the child: `import-index-child FILE`: a writer's open and close, which writes
/// the session index.
pub fn index_child(args: &[String]) {
    let (store, _) = Store::open_jsonl(Path::new(&args[0])).unwrap_or_else(|e| die(&e.to_string()));
    drop(store);
    println!("0 0");
}

/// In the child: `import-resume-child FILE`, the index present: a read-only open,
/// then the recorded resume leaf's context with the default options. Prints
/// `OPEN_SECONDS OPEN_AND_CONTEXT_SECONDS MESSAGES`.
pub fn resume_child(args: &[String]) {
    let options = JsonlOptions::from_json(r#"{"readOnly":true}"#).unwrap();
    let t = Instant::now();
    let (store, _) = Store::open_jsonl_with(Path::new(&args[0]), &options)
        .unwrap_or_else(|e| die(&e.to_string()));
    let open = t.elapsed().as_secs_f64();
    let leaf = store
        .resume_leaf()
        .unwrap_or_else(|e| die(&e.to_string()))
        .unwrap_or_else(|| die("no resume leaf"));
    let context = store
        .build_context(&leaf, &session::ContextOptions::default(), None)
        .unwrap_or_else(|e| die(&e.to_string()));
    let resume = t.elapsed().as_secs_f64();
    println!("{open} {resume} {}", context.messages.len());
}

/// In the child: `import-open-child FILE`, a read-only open (no index written).
pub fn open_child(args: &[String]) {
    let options = JsonlOptions::from_json(r#"{"readOnly":true}"#).unwrap();
    let t = Instant::now();
    let (store, _) = Store::open_jsonl_with(Path::new(&args[0]), &options)
        .unwrap_or_else(|e| die(&e.to_string()));
    let secs = t.elapsed().as_secs_f64();
    std::hint::black_box(&store);
    println!("{secs} {}", status_kb("VmHWM:") * 1024);
}

fn largest(dir: &Path) -> PathBuf {
    jsonl_files(dir)
        .into_iter()
        .max_by_key(|p| fs::metadata(p).map(|m| m.len()).unwrap_or(0))
        .unwrap_or_else(|| die("no corpus files"))
}

fn jsonl_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap_or_else(|e| die(&format!("{}: {e}", dir.display())))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    files.sort();
    files
}
