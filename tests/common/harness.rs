//! The reliability harness's own tools: a reproducible random generator, a realistic
//! generated session with the structural truth about each of its prefixes, parallel
//! checks that collect violations, and process measurements.

use std::io;

use session::{Entry, parse_entry};

use super::CHAPTER;

// ---------------------------------------------------------------------------------------
// Deterministic randomness

/// SplitMix64: small, fast and reproducible from a printed seed.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    pub fn range(&mut self, lo: usize, hi_inclusive: usize) -> usize {
        lo + self.below((hi_inclusive - lo + 1) as u64) as usize
    }

    pub fn chance(&mut self, one_in: u64) -> bool {
        self.below(one_in) == 0
    }

    pub fn bytes(&mut self, len: usize) -> Vec<u8> {
        (0..len).map(|_| self.next_u64() as u8).collect()
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }
}

/// A seed from `SESSION_SEED`, or `default`; printed by the tests so a failure replays.
pub fn seed(default: u64) -> u64 {
    std::env::var("SESSION_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// Whether the soak tier was asked for (`SOAK=1`).
pub fn soak() -> bool {
    std::env::var("SOAK").is_ok_and(|v| v == "1")
}

/// A count from the environment variable `name`, or `default`.
pub fn env_count(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

// ---------------------------------------------------------------------------------------
// A realistic generated session

/// A session file and the facts about each of its physical lines.
pub struct Session {
    pub bytes: Vec<u8>,
    /// Per physical line: the byte range (without `\n`) and the entry, `None` if blank.
    pub lines: Vec<PhysicalLine>,
}

pub struct PhysicalLine {
    pub start: usize,
    /// The index of the line's `\n`.
    pub newline: usize,
    pub entry: Option<Entry>,
}

impl Session {
    /// Builds a session from physical lines (`""` or whitespace for a blank line).
    pub fn from_lines(lines: &[String]) -> Session {
        let mut bytes = Vec::new();
        let mut physical = Vec::new();
        for line in lines {
            let start = bytes.len();
            bytes.extend_from_slice(line.as_bytes());
            let is_blank = line.bytes().all(|b| matches!(b, b' ' | b'\t' | b'\r'));
            let entry = (!is_blank).then(|| parse_entry(line).expect("generated entry parses"));
            physical.push(PhysicalLine {
                start,
                newline: bytes.len(),
                entry,
            });
            bytes.push(b'\n');
        }
        Session {
            bytes,
            lines: physical,
        }
    }

    pub fn entries(&self) -> Vec<Entry> {
        self.lines.iter().filter_map(|l| l.entry.clone()).collect()
    }

    /// What a file holding the first `len` bytes must recover, from the structure
    /// alone: the entries whose `\n` is within the prefix, and an `unterminated_tail`
    /// at the next physical line iff a non-blank partial line remains.
    pub fn expected_prefix(&self, len: usize) -> ExpectedPrefix {
        let complete = self.lines.iter().take_while(|l| l.newline < len).count();
        let entries = self.lines[..complete]
            .iter()
            .filter_map(|l| l.entry.clone())
            .collect();
        let tail_start = self.lines.get(complete).map_or(len, |l| l.start);
        let tail = &self.bytes[tail_start.min(len)..len];
        let nonblank = !tail.iter().all(|b| matches!(b, b' ' | b'\t' | b'\r'));
        ExpectedPrefix {
            entries,
            tail_line: nonblank.then_some(complete as u64 + 1),
        }
    }
}

pub struct ExpectedPrefix {
    pub entries: Vec<Entry>,
    pub tail_line: Option<u64>,
}

/// Text that exercises the encodings a session really holds: CJK, emoji (4-byte UTF-8),
/// raw U+2028/U+2029 (valid JSON, invalid JavaScript source), escaped newlines and
/// quotes, and backslashes.
const TEXTS: [&str; 8] = [
    "读取 README.md，告诉我项目名",
    "fn main() {\n    println!(\"hi\");\n}\n",
    "line\u{2028}separator and paragraph\u{2029}separator",
    "emoji 🦀🚀 and accents café naïve",
    "path C:\\Users\\pi\\src and a tab\there",
    "项目名是 tiny-pi",
    "plain ascii text for padding the session",
    "quotes \"inside\" and 'single' and </script>",
];

/// Filler text of about `len` bytes drawn from [`TEXTS`].
fn filler(rng: &mut Rng, len: usize) -> String {
    let mut out = String::new();
    while out.len() < len {
        out.push_str(rng.pick::<&str>(&TEXTS));
        out.push(' ');
    }
    let mut end = len.min(out.len());
    while !out.is_char_boundary(end) {
        end -= 1;
    }
    out.truncate(end);
    out
}

/// A realistic session of `count` entries (at least 50 in T1): user prompts, assistant
/// turns with thinking, text and tool calls, tool results with details, metadata,
/// branches (a retried turn, an edited prompt), and one blank line (space, tab, CR).
/// With `long_lines`, line lengths run from under 100 B to exactly 64 KiB (one line,
/// third from the end; three of 2–4 KiB); without, every line is under 1.5 KiB.
/// Deterministic for a given seed.
pub fn generated_session(seed: u64, count: usize, long_lines: bool) -> Session {
    let mut rng = Rng::new(seed);
    let mut lines: Vec<String> = Vec::new();
    let mut ids: Vec<String> = Vec::new();
    let mut ts = 1_733_000_000_000_i64;
    for i in 0..count {
        ts += rng.range(10, 5000) as i64;
        let id = format!("e-{i:03}");
        // Mostly a chain; sometimes a branch from an earlier entry.
        let parent = if i == 0 {
            None
        } else if rng.chance(6) {
            Some(ids[rng.below(ids.len() as u64) as usize].clone())
        } else {
            ids.last().cloned()
        };
        // The long lines: one of exactly 64 KiB (a user prompt), a few of a few KiB.
        let big = long_lines && i + 3 == count;
        let size = match i {
            _ if big => 56_000,
            _ if long_lines && i % 17 == 5 => 2048 + rng.range(0, 2048),
            _ => rng.range(0, 600),
        };
        let value = match if big { 0 } else { i % 7 } {
            0 => serde_json::json!({
                "id": id, "parentId": parent, "timestamp": ts, "type": "message",
                "message": {"role": "user", "content": filler(&mut rng, size), "timestamp": ts},
            }),
            1 => serde_json::json!({
                "id": id, "parentId": parent, "timestamp": ts, "type": "message",
                "message": {"role": "assistant", "content": [
                    {"type": "thinking", "thinking": filler(&mut rng, size / 2)},
                    {"type": "text", "text": filler(&mut rng, size / 2)},
                    {"type": "toolCall", "id": format!("call-{i}"), "name": "read",
                     "arguments": {"path": "src/main.rs", "limit": 200, "offset": -1.5e-3}},
                ], "api": "openai-responses", "provider": "openai", "model": "gpt-5",
                "usage": {"input": 1200 + i, "output": 18, "cost": {"total": 0.00123}},
                "stopReason": "toolUse"},
            }),
            2 => serde_json::json!({
                "id": id, "parentId": parent, "timestamp": ts, "type": "message",
                "message": {"role": "toolResult", "toolCallId": format!("call-{}", i - 1),
                "toolName": "read", "content": [
                    {"type": "text", "text": filler(&mut rng, size)},
                    {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
                ], "isError": i.is_multiple_of(3), "details": {"lines": [1, 2, 3], "truncated": null}},
            }),
            3 => serde_json::json!({
                "id": id, "parentId": parent, "timestamp": ts, "type": "metadata",
                "key": "cwd", "value": {"path": "/workspace/tiny-pi", "note": filler(&mut rng, size / 4)},
            }),
            4 => serde_json::json!({
                "id": id, "parentId": parent, "timestamp": ts, "type": "message",
                "message": {"role": "user", "content": [
                    {"type": "text", "text": filler(&mut rng, size)},
                ]},
            }),
            5 => serde_json::json!({
                "id": id, "parentId": parent, "timestamp": ts, "type": "message",
                "message": {"role": "assistant", "content": [
                    {"type": "text", "text": filler(&mut rng, size)},
                ], "stopReason": "stop"},
            }),
            _ => serde_json::json!({
                "id": id, "parentId": parent, "timestamp": ts, "type": "metadata",
                "key": "m", "value": i,
            }),
        };
        let mut line = value.to_string();
        if big {
            // Exactly 64 KiB: pad the text so the line is 65,536 bytes long.
            let pad = 64 * 1024 - line.len();
            let at = line.find("\"content\":\"").expect("user string content") + 11;
            line.insert_str(at, &"x".repeat(pad));
        }
        lines.push(line);
        ids.push(id);
        if i == count / 2 {
            lines.push("  \t\r".to_owned());
        }
    }
    Session::from_lines(&lines)
}

/// The chapter tree as a session (six lines, about 1.6 KB).
pub fn chapter_session() -> Session {
    let lines: Vec<String> = CHAPTER.iter().map(|s| s.to_string()).collect();
    Session::from_lines(&lines)
}

// ---------------------------------------------------------------------------------------
// ALICE-style tail fills (T2)

/// What a torn or damaged tail holds (ALICE's zero and garbage states, and more).
#[derive(Clone, Copy, Debug)]
pub enum Fill {
    Zeros,
    Ff,
    /// Random bytes without `\n`: a torn write of garbage.
    Random,
    /// Random bytes that may hold `\n`: garbage that commits a line.
    RandomWithNewlines,
    Whitespace,
    Bom,
    TruncatedUtf8,
}

pub const FILLS: [Fill; 7] = [
    Fill::Zeros,
    Fill::Ff,
    Fill::Random,
    Fill::RandomWithNewlines,
    Fill::Whitespace,
    Fill::Bom,
    Fill::TruncatedUtf8,
];

/// `len` bytes of `fill` (random ones drawn from `rng`).
pub fn fill_bytes(fill: Fill, len: usize, rng: &mut Rng) -> Vec<u8> {
    let pattern = |p: &[u8]| p.iter().copied().cycle().take(len).collect::<Vec<u8>>();
    match fill {
        Fill::Zeros => vec![0; len],
        Fill::Ff => vec![0xFF; len],
        Fill::Random => rng
            .bytes(len)
            .into_iter()
            .map(|b| if b == b'\n' { b'?' } else { b })
            .collect(),
        Fill::RandomWithNewlines => rng.bytes(len),
        Fill::Whitespace => pattern(b" \t\r"),
        Fill::Bom => pattern(&[0xEF, 0xBB, 0xBF]),
        Fill::TruncatedUtf8 => {
            // Whole three-byte characters, ending in the first byte of one more.
            let mut bytes = pattern("日".as_bytes());
            if let Some(last) = bytes.last_mut() {
                *last = 0xE6;
            }
            if len >= 2 {
                bytes[len - 2] = b'x';
            }
            bytes
        }
    }
}

// ---------------------------------------------------------------------------------------
// Running checks

/// Runs `check` over `items` on every core, collecting what it reports.
pub fn in_parallel<T: Sync, R: Send>(
    items: &[T],
    check: impl Fn(&T) -> Option<R> + Sync,
) -> Vec<R> {
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    let chunk = items.len().div_ceil(threads).max(1);
    std::thread::scope(|s| {
        let handles: Vec<_> = items
            .chunks(chunk)
            .map(|part| s.spawn(|| part.iter().filter_map(&check).collect::<Vec<R>>()))
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("worker"))
            .collect()
    })
}

/// Fails unless `violations` is empty, listing the first ten under `figure`.
pub fn assert_no_violations(figure: &str, violations: &[String]) {
    assert!(
        violations.is_empty(),
        "{figure}: {} violations, first: {:#?}",
        violations.len(),
        &violations[..violations.len().min(10)]
    );
}

// ---------------------------------------------------------------------------------------
// Process measurements (Linux)

/// Open file descriptors of this process.
pub fn fd_count() -> usize {
    std::fs::read_dir("/proc/self/fd")
        .map(|d| d.count())
        .unwrap_or(0)
}

/// Resident set size of this process in KiB (`VmRSS`).
pub fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// Runs `cmd`, returning its exit status, output and peak RSS in KiB (from `wait4`).
// The child is reaped by `wait4` (which also gives its rusage), not by `Child::wait`.
#[allow(clippy::zombie_processes)]
pub fn run_measured(cmd: &mut std::process::Command) -> (i32, String, u64, std::time::Duration) {
    use std::io::Read;
    use std::process::Stdio;
    let started = std::time::Instant::now();
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut out = String::new();
    if let Some(mut stdout) = child.stdout.take() {
        stdout.read_to_string(&mut out).expect("read stdout");
    }
    if let Some(mut stderr) = child.stderr.take() {
        stderr.read_to_string(&mut out).expect("read stderr");
    }
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value to be overwritten by wait4.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: pid is our own unreaped child; status and usage are valid for writes.
    let reaped = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(reaped, pid, "wait4: {}", io::Error::last_os_error());
    let elapsed = started.elapsed();
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        -libc::WTERMSIG(status)
    };
    (code, out, usage.ru_maxrss as u64, elapsed)
}
