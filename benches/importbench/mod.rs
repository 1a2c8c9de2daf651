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

use session::interop::{Format, import_file};
use session::{JsonlOptions, Store};

use super::{die, status_kb};

const CORPUS: &str = "tests/interop/corpus";

pub fn run(args: &[String]) {
    let o = super::parse_options(args);
    let gb: f64 = super::num_arg(args, "--gb").unwrap_or(1.0);
    // Three children by default: each imports a whole gigabyte.
    let runs: usize = super::num_arg(args, "--runs").unwrap_or(3).max(1);
    let data = o.data;
    let dir = data.join("import");
    fs::create_dir_all(&dir).unwrap();
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join(CORPUS);
    let claude = dir.join(format!("claude-{gb}gb.jsonl"));
    let target = (gb * 1e9) as u64;
    if fs::metadata(&claude).map(|m| m.len()).unwrap_or(0) < target {
        let t = Instant::now();
        generate_claude(&corpus.join("claude-code"), &claude, target);
        eprintln!(
            "import: wrote {} ({:.1} MB) in {:.1} s",
            claude.display(),
            fs::metadata(&claude).unwrap().len() as f64 / 1e6,
            t.elapsed().as_secs_f64()
        );
    }
    let pi = largest(&corpus.join("pi"));
    println!(
        "| source | size | import | import MB/s | import peak RSS | RSS ÷ size | open the result | open MB/s | open peak RSS |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (name, format, source) in [
        ("Claude Code, generated", "claude-code", claude.as_path()),
        ("pi, corpus", "pi", pi.as_path()),
    ] {
        let bytes = fs::metadata(source).unwrap().len();
        let out = dir.join(format!("imported-{format}.jsonl"));
        let mut imports = Vec::new();
        let mut opens = Vec::new();
        for _ in 0..runs {
            let _ = fs::remove_file(&out);
            let _ = fs::remove_file(session::index_path(&out));
            imports.push(child(
                "import-child",
                &[format, path_str(source), path_str(&out)],
            ));
            opens.push(child("import-open-child", &[path_str(&out)]));
        }
        let out_bytes = fs::metadata(&out).unwrap().len();
        let (it, ir) = medians(&imports);
        let (ot, or) = medians(&opens);
        println!(
            "| {name} | {:.1} MB | {:.2} s | {:.0} | {:.1} MB | {:.2} | {:.2} s ({:.1} MB) | {:.0} | {:.1} MB |",
            bytes as f64 / 1e6,
            it,
            bytes as f64 / 1e6 / it,
            ir / 1e6,
            ir / bytes as f64,
            ot,
            out_bytes as f64 / 1e6,
            out_bytes as f64 / 1e6 / ot,
            or / 1e6,
        );
        let _ = fs::remove_file(&out);
        let _ = fs::remove_file(session::index_path(&out));
    }
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
    let out = Command::new(std::env::current_exe().unwrap())
        .arg(mode)
        .args(args)
        .output()
        .unwrap();
    if !out.status.success() {
        die(&format!("{mode}: {}", String::from_utf8_lossy(&out.stderr)));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let v: Vec<f64> = text
        .split_whitespace()
        .filter_map(|x| x.parse().ok())
        .collect();
    (v[0], v[1])
}

/// In the child: `import-child FORMAT SRC OUT`.
pub fn import_child(args: &[String]) {
    let format = Format::from_name(&args[0]).unwrap_or_else(|| die("bad format"));
    let t = Instant::now();
    let report = import_file(format, Path::new(&args[1]), Path::new(&args[2]))
        .unwrap_or_else(|e| die(&e.to_string()));
    let secs = t.elapsed().as_secs_f64();
    std::hint::black_box(&report);
    println!("{secs} {}", status_kb("VmHWM:") * 1024);
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

/// SplitMix64.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

fn is_uuid(s: &[u8]) -> bool {
    s.len() == 36
        && s.iter().enumerate().all(|(i, b)| match i {
            8 | 13 | 18 | 23 => *b == b'-',
            _ => b.is_ascii_hexdigit(),
        })
}

/// A fresh uuid for `old` in the copy salted `salt`.
fn fresh(old: &[u8], salt: u64) -> [u8; 36] {
    let mut h = salt;
    for &b in old {
        h = mix(h ^ u64::from(b));
    }
    let (a, b) = (mix(h), mix(h ^ 0x5555));
    let text = format!(
        "{:08x}-{:04x}-4{:03x}-8{:03x}-{:012x}",
        a >> 32,
        (a >> 16) & 0xffff,
        a & 0xfff,
        b >> 52,
        b & 0xffff_ffff_ffff
    );
    let mut out = [0u8; 36];
    out.copy_from_slice(text.as_bytes());
    out
}

/// `line` with every quoted uuid replaced by its fresh one for `salt`, and its first
/// `parentUuid` (the line's own: Claude Code writes it first) set to `parent` when
/// given.
fn remap(line: &[u8], salt: u64, parent: Option<&[u8; 36]>, out: &mut Vec<u8>) {
    out.clear();
    let mut parent = parent;
    let mut i = 0;
    while i < line.len() {
        if line[i] == b'"'
            && i + 38 <= line.len()
            && line[i + 37] == b'"'
            && is_uuid(&line[i + 1..i + 37])
        {
            let mut value = fresh(&line[i + 1..i + 37], salt);
            if line[..i].ends_with(b"\"parentUuid\":")
                && let Some(p) = parent.take()
            {
                value = *p;
            }
            out.push(b'"');
            out.extend_from_slice(&value);
            out.push(b'"');
            i += 38;
            continue;
        }
        if line[i..].starts_with(b"\"parentUuid\":null") {
            out.extend_from_slice(b"\"parentUuid\":");
            match parent.take() {
                Some(p) => {
                    out.push(b'"');
                    out.extend_from_slice(p);
                    out.push(b'"');
                }
                None => out.extend_from_slice(b"null"),
            }
            i += b"\"parentUuid\":null".len();
            continue;
        }
        out.push(line[i]);
        i += 1;
    }
}

/// The line's own `uuid` (the top-level member), if it is one.
fn own_uuid(line: &[u8]) -> Option<Vec<u8>> {
    let value: serde_json::Value = serde_json::from_slice(line).ok()?;
    let id = value.get("uuid")?.as_str()?;
    is_uuid(id.as_bytes()).then(|| id.as_bytes().to_vec())
}

fn is_progress(line: &[u8]) -> bool {
    memchr::memmem::find(line, b"\"type\":\"progress\"").is_some()
}

/// Writes the generated Claude Code transcript (see the module's text).
fn generate_claude(dir: &Path, out: &Path, target: u64) {
    let mut lines: Vec<Vec<u8>> = Vec::new();
    for file in jsonl_files(dir) {
        let text = fs::read(&file).unwrap();
        lines.extend(
            text.split(|&b| b == b'\n')
                .filter(|l| !l.is_empty())
                .map(<[u8]>::to_vec),
        );
    }
    let own: Vec<Option<Vec<u8>>> = lines.iter().map(|l| own_uuid(l)).collect();
    let progress: Vec<usize> = (0..lines.len())
        .filter(|&i| is_progress(&lines[i]))
        .collect();
    let conversation = lines.len() - progress.len();
    if progress.is_empty() || conversation == 0 {
        die("the corpus has no progress or no conversation lines");
    }
    // Progress lines to add after each conversation line so that 99% are progress.
    let extra = (99 * conversation).saturating_sub(progress.len()) / conversation;
    let tmp = out.with_extension("tmp");
    let mut w = BufWriter::with_capacity(1 << 20, fs::File::create(&tmp).unwrap());
    let mut written = 0u64;
    let mut buf = Vec::new();
    let mut last: Option<[u8; 36]> = None;
    let mut inserted = 0u64;
    let mut next_progress = 0usize;
    let mut repetition = 0u64;
    'outer: loop {
        for (index, line) in lines.iter().enumerate() {
            // A line whose parent is null hangs under the previous repetition's last.
            let chain =
                last.filter(|_| memchr::memmem::find(line, b"\"parentUuid\":null").is_some());
            remap(line, repetition, chain.as_ref(), &mut buf);
            write_line(&mut w, &buf, &mut written);
            if let Some(uuid) = &own[index] {
                last = Some(fresh(uuid, repetition));
            }
            if is_progress(line) {
                continue;
            }
            for _ in 0..extra {
                let template = progress[next_progress % progress.len()];
                next_progress += 1;
                inserted += 1;
                let salt = (1 << 40) | inserted;
                remap(&lines[template], salt, last.as_ref(), &mut buf);
                write_line(&mut w, &buf, &mut written);
                if let Some(uuid) = &own[template] {
                    last = Some(fresh(uuid, salt));
                }
            }
            if written >= target {
                break 'outer;
            }
        }
        repetition += 1;
    }
    w.flush().unwrap();
    drop(w);
    fs::rename(&tmp, out).unwrap();
}

fn write_line(w: &mut impl Write, line: &[u8], written: &mut u64) {
    w.write_all(line).unwrap();
    w.write_all(b"\n").unwrap();
    *written += line.len() as u64 + 1;
}
