//! The generated Claude Code transcript of the import benchmark, shared with the
//! on-demand test of a large import (`tests/import_hardening.rs` includes this file):
//! the corpus's real lines repeated with fresh uuids (see [`generate_claude`]).

use std::fs;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// The `.jsonl` files of `dir`, sorted.
pub fn corpus_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = fs::read_dir(dir)
        .expect("the corpus folder")
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

/// Writes a Claude Code transcript of at least `target` bytes at `out` from the
/// transcripts in `dir`: their lines, repeated, every uuid replaced by a fresh one per
/// repetition (the first line of a repetition hangs under the last of the one before,
/// so the tree stays one tree), and after every conversation line enough copies of
/// the corpus's `progress` lines (fresh uuids, each under the line before it) that
/// 99% of the lines are `progress`. Returns the lines written.
pub fn generate_claude(dir: &Path, out: &Path, target: u64) -> u64 {
    let mut lines: Vec<Vec<u8>> = Vec::new();
    for file in corpus_files(dir) {
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
        panic!("the corpus has no progress or no conversation lines");
    }
    // Progress lines to add after each conversation line so that 99% are progress.
    let extra = (99 * conversation).saturating_sub(progress.len()) / conversation;
    let tmp = out.with_extension("tmp");
    let mut w = BufWriter::with_capacity(1 << 20, fs::File::create(&tmp).unwrap());
    let mut written = 0u64;
    let mut lines_written = 0u64;
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
            lines_written += 1;
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
                lines_written += 1;
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
    lines_written
}

pub fn write_line(w: &mut impl Write, line: &[u8], written: &mut u64) {
    w.write_all(line).unwrap();
    w.write_all(b"\n").unwrap();
    *written += line.len() as u64 + 1;
}
