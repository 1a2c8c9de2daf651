//! Shared helpers of the reliability harness (tests/reliability_*.rs, tests/fuzz_corpus.rs):
//! fixtures, a deterministic random generator, a realistic generated session, the
//! structural truth about a file's prefixes, a scripted fault-injecting file, and
//! process measurements. [`properties`] holds the property checks that the fuzz targets
//! share with the corpus replay.
#![allow(dead_code)]

pub mod properties;

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use session::{Entry, SessionFile, parse_entry};

// ---------------------------------------------------------------------------------------
// Fixtures

// The chapter's fixed tree (docs/contract.md §1), shared with the other integration tests.
#[path = "../common/mod.rs"]
mod common;
#[allow(unused_imports)] // each test binary uses its own subset
pub use common::{A_ALT, A_FINAL, A_READ, CHAPTER, META_CWD, R_READ, U1};

/// A line from *another* session: valid JSON and a valid entry, whose parent is not in
/// ours (T2's foreign line).
pub const FOREIGN: &str = r#"{"id":"x-7","parentId":"x-6","timestamp":99,"type":"message","message":{"role":"user","content":"from another session"}}"#;

/// `lines` joined, each followed by `\n`.
pub fn jsonl(lines: &[&str]) -> Vec<u8> {
    lines
        .iter()
        .flat_map(|l| [l.as_bytes(), b"\n"].concat())
        .collect()
}

/// A small valid entry: a user message with `text`, child of `parent`.
pub fn user_entry(id: &str, parent: Option<&str>, text: &str) -> String {
    serde_json::json!({
        "id": id,
        "parentId": parent,
        "timestamp": 1,
        "type": "message",
        "message": {"role": "user", "content": text},
    })
    .to_string()
}

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

/// The chapter tree as a session (six lines, about 1.1 KB).
pub fn chapter_session() -> Session {
    let lines: Vec<String> = CHAPTER.iter().map(|s| s.to_string()).collect();
    Session::from_lines(&lines)
}

// ---------------------------------------------------------------------------------------
// Files

/// A fresh, empty directory under the system temp dir, removed on drop.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new(name: &str) -> TempDir {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!(
            "libsession-reliability-{}-{name}-{n}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        TempDir(dir)
    }

    pub fn join(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Cuts `path` back to its last `\n` (the committed prefix): what a caller's repair
/// does. The library has no repair operation of its own yet.
pub fn truncate_to_committed(path: &Path) {
    let bytes = std::fs::read(path).expect("read");
    let keep = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .expect("open for repair");
    file.set_len(keep as u64).expect("truncate");
}

// ---------------------------------------------------------------------------------------
// The scripted fault layer

/// What a faulty write call does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultKind {
    /// Fail with this errno before writing anything.
    Errno(i32),
    /// Write half of the buffer and return that count; the next call fails with EIO.
    ShortThenEio,
    /// Write the whole buffer, then report EIO anyway.
    EioAfterFullWrite,
}

/// Whether the fault happens once or the device stays broken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultMode {
    /// Only the scripted call(s) fail; later calls would succeed.
    TransientOnce,
    /// Every call from the fault on fails (EINTR: a burst of [`EINTR_BURST`] calls).
    Persistent,
}

/// How many calls in a row a "persistent" EINTR interrupts. A truly endless EINTR
/// would make every writer (this library's and std's `write_all` alike) spin forever.
pub const EINTR_BURST: u64 = 100;

/// Counts and scripts the write calls a store makes on its file.
#[derive(Default, Debug)]
pub struct Script {
    /// Write calls seen so far, faulty or not.
    pub writes: u64,
    /// Bytes that reached the file.
    pub bytes_written: u64,
    /// Fail from this 1-based write call on.
    pub fault: Option<(u64, FaultKind, FaultMode)>,
    /// The number of the call that returned a non-EINTR error, if any.
    pub failed_at: Option<u64>,
    /// The largest count one call accepts (a real file takes everything at once; a
    /// smaller cap makes big lines take several calls).
    pub max_chunk: Option<usize>,
    pub syncs: u64,
    /// Hold this 1-based write call until the gate opens (to queue appends behind it).
    pub hold: Option<(u64, Arc<Gate>)>,
}

/// A one-shot gate: write calls wait at it until [`Gate::open`].
#[derive(Default, Debug)]
pub struct Gate {
    state: Mutex<(bool, bool)>,
    changed: std::sync::Condvar,
}

impl Gate {
    pub fn new() -> Arc<Gate> {
        Arc::new(Gate::default())
    }

    /// Lets every held call through.
    pub fn open(&self) {
        self.state.lock().unwrap().0 = true;
        self.changed.notify_all();
    }

    /// Waits until a call is held at the gate.
    pub fn wait_until_held(&self) {
        let mut s = self.state.lock().unwrap();
        while !s.1 {
            s = self.changed.wait(s).unwrap();
        }
    }

    fn pass(&self) {
        let mut s = self.state.lock().unwrap();
        s.1 = true;
        self.changed.notify_all();
        while !s.0 {
            s = self.changed.wait(s).unwrap();
        }
    }
}

/// A real file behind a [`Script`].
pub struct ScriptedFile {
    pub file: File,
    pub script: Arc<Mutex<Script>>,
}

impl ScriptedFile {
    /// A wrapper for [`session::Store::open_jsonl_with_io`].
    pub fn wrap(script: &Arc<Mutex<Script>>) -> impl FnOnce(File) -> Box<dyn SessionFile> {
        let script = Arc::clone(script);
        move |file| Box::new(ScriptedFile { file, script })
    }
}

/// One real write, counted.
fn write_through(file: &mut File, s: &mut Script, buf: &[u8]) -> io::Result<usize> {
    let n = io::Write::write(file, buf)?;
    s.bytes_written += n as u64;
    Ok(n)
}

impl SessionFile for ScriptedFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let held = {
            let s = self.script.lock().unwrap();
            match &s.hold {
                Some((at, gate)) if *at == s.writes + 1 => Some(Arc::clone(gate)),
                _ => None,
            }
        };
        if let Some(gate) = held {
            gate.pass();
        }
        let mut guard = self.script.lock().unwrap();
        let s = &mut *guard;
        let file = &mut self.file;
        s.writes += 1;
        let call = s.writes;
        let buf = &buf[..buf.len().min(s.max_chunk.unwrap_or(usize::MAX))];
        let Some((at, kind, mode)) = s.fault else {
            return write_through(file, s, buf);
        };
        let eio = || io::Error::from_raw_os_error(libc::EIO);
        let result = match (kind, mode) {
            _ if call < at => write_through(file, s, buf),
            (FaultKind::Errno(libc::EINTR), FaultMode::TransientOnce) if call == at => {
                return Err(io::Error::from_raw_os_error(libc::EINTR));
            }
            (FaultKind::Errno(libc::EINTR), FaultMode::Persistent) if call < at + EINTR_BURST => {
                return Err(io::Error::from_raw_os_error(libc::EINTR));
            }
            (FaultKind::Errno(libc::EINTR), _) => write_through(file, s, buf),
            (FaultKind::Errno(errno), FaultMode::TransientOnce) if call == at => {
                Err(io::Error::from_raw_os_error(errno))
            }
            (FaultKind::Errno(errno), FaultMode::Persistent) => {
                Err(io::Error::from_raw_os_error(errno))
            }
            (FaultKind::ShortThenEio, _) if call == at => {
                return write_through(file, s, &buf[..buf.len() / 2]);
            }
            (FaultKind::ShortThenEio, FaultMode::TransientOnce) if call == at + 1 => Err(eio()),
            (FaultKind::EioAfterFullWrite, _) if call == at => {
                write_through(file, s, buf)?;
                Err(eio())
            }
            (_, FaultMode::Persistent) => Err(eio()),
            (_, FaultMode::TransientOnce) => write_through(file, s, buf),
        };
        if result.is_err() && s.failed_at.is_none() {
            s.failed_at = Some(call);
        }
        result
    }

    fn sync(&mut self) -> io::Result<()> {
        self.script.lock().unwrap().syncs += 1;
        self.file.sync_data()
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
