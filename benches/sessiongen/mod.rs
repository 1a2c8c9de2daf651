//! A deterministic session generator for the benchmark.
//!
//! It writes the shape of a long coding-agent session: turns of
//! `user` / `assistant` (thinking + toolCall) / `toolResult` / `assistant` (text), with a
//! sibling branch (a regenerated final answer) every 50 turns. Text lengths are chosen
//! so that 100k entries come to about 66 MB, the size measured for pi's SessionManager.
//!
//! The same messages are written twice, byte for byte identical message objects:
//! - ours: `{"type":"message","id":…,"parentId":…,"timestamp":<ms>,"message":{…}}`
//! - pi's: a `{"type":"session","version":3,…}` header line, then the same entries with
//!   an ISO-8601 string `timestamp` (pi's v3 format, see SessionManager.newSession).
//!
//! Strings are written by the library's `json::push_string`, which escapes as
//! `JSON.stringify` does except for U+0008 and U+000C (`\u0008`, `\u000c` where
//! JavaScript writes `\b`, `\f`): the generated text holds neither. Numbers are spelled
//! as JavaScript spells them. So the messages pi rebuilds serialise to the very bytes
//! that libsession returns: the bench compares the two as a cross-check.
//!
//! No randomness crate: a fixed-seed xorshift64*. Ids are 8 hex digits like pi's, from
//! a bijective 32-bit mix of a counter, so they never collide.

use std::fmt::Write as _;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;

use session::json::push_string;

/// Milliseconds of the first entry (2024-11-30T21:33:20Z).
const T0: u64 = 1_733_000_000_000;

/// xorshift64* with a fixed seed.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + (self.next() % (hi - lo + 1) as u64) as usize
    }
    pub fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[(self.next() % items.len() as u64) as usize]
    }
}

/// A bijection on u32 (murmur3's finaliser): distinct counters give distinct ids.
fn mix32(mut h: u32) -> u32 {
    h ^= h >> 16;
    h = h.wrapping_mul(0x85eb_ca6b);
    h ^= h >> 13;
    h = h.wrapping_mul(0xc2b2_ae35);
    h ^= h >> 16;
    h
}

/// The 8-hex-digit id of entry number `n` (pi's id shape).
pub fn id_of(n: u32) -> String {
    format!("{:08x}", mix32(n))
}

/// A number of dollars given in micro-dollars, spelled as JavaScript spells it
/// (shortest round trip, no exponent for values ≥ 1e-6).
fn push_micros(out: &mut String, micros: u64) {
    let _ = write!(out, "{}", micros as f64 / 1e6);
}

/// `YYYY-MM-DDTHH:MM:SS.mmmZ`, as `Date.prototype.toISOString` (the library's writer
/// of pi's timestamps).
pub fn iso(ms: u64) -> String {
    session::interop::millis_to_iso(ms as f64)
        .unwrap_or_else(|| panic!("sessiongen: {ms} ms is past the year 9999"))
}

const WORDS: &[&str] = &[
    "the",
    "function",
    "returns",
    "a",
    "value",
    "when",
    "the",
    "test",
    "fails",
    "because",
    "of",
    "an",
    "off-by-one",
    "error",
    "in",
    "the",
    "parser",
    "module",
    "we",
    "should",
    "check",
    "whether",
    "buffer",
    "is",
    "empty",
    "before",
    "reading",
    "next",
    "line",
    "and",
    "update",
    "index",
    "accordingly",
    "session",
    "store",
    "append",
    "entry",
    "tree",
    "branch",
    "leaf",
    "path",
    "message",
    "assistant",
    "user",
    "tool",
    "result",
    "config",
    "options",
    "default",
    "handler",
    "request",
    "response",
    "async",
    "await",
    "promise",
    "vector",
    "allocation",
    "performance",
    "latency",
    "throughput",
    "refactor",
    "rename",
    "variable",
    "let's",
    "I'll",
    "read",
    "file",
    "src/lib.rs",
    "Cargo.toml",
    "README.md",
    "`cargo test`",
    "\"quoted\"",
    "path/to/file.ts",
    "(see",
    "above)",
    "e.g.",
    "i.e.",
    "TODO:",
    "->",
    "=>",
    "读取",
    "文件",
    "项目",
    "函数",
    "错误",
    "测试",
    "ünïcödé",
    "naïve",
    "café",
    "—",
    "…",
];

const CODE: &[&str] = &[
    "fn main() {",
    "    let mut store = Store::open(\"session.jsonl\")?;",
    "    for line in reader.lines() {",
    "        if line.is_empty() { continue; }",
    "    }",
    "}",
    "import { readFileSync } from \"fs\";",
    "export function parse(text: string): Entry[] {",
    "\treturn text.split(\"\\n\").map((l) => JSON.parse(l));",
    "// SAFETY: the pointer is valid for the call",
    "#[derive(Debug, Clone, PartialEq)]",
    "pub struct Record { start: usize, len: u32 }",
    "  \"name\": \"tiny-pi\",",
    "  \"version\": \"0.1.0\",",
    "test result: ok. 42 passed; 0 failed; 0 ignored",
    "error[E0382]: borrow of moved value: `entry`",
    "   --> src/store/mod.rs:120:17",
    "$ git status --short",
    " M src/lib.rs",
    "?? notes.txt",
    "",
];

const TOOLS: &[&str] = &["read", "bash", "edit", "write", "grep"];

pub fn prose(rng: &mut Rng, lo: usize, hi: usize) -> String {
    let target = rng.range(lo, hi);
    let mut s = String::with_capacity(target + 16);
    let mut sentence = 0;
    while s.len() < target {
        let w = rng.pick(WORDS);
        if !s.is_empty() {
            s.push(' ');
        }
        s.push_str(w);
        sentence += 1;
        if sentence > 8 && rng.next().is_multiple_of(6) {
            s.push('.');
            sentence = 0;
            if rng.next().is_multiple_of(5) {
                s.push_str("\n\n");
            }
        }
    }
    s
}

fn code(rng: &mut Rng, lo: usize, hi: usize) -> String {
    let target = rng.range(lo, hi);
    let mut s = String::with_capacity(target + 64);
    while s.len() < target {
        s.push_str(rng.pick(CODE));
        s.push('\n');
    }
    s
}

fn usage(out: &mut String, rng: &mut Rng) {
    let input = rng.range(2_000, 120_000) as u64;
    let output = rng.range(20, 2_000) as u64;
    let cache_read = rng.range(0, 100_000) as u64;
    let cache_write = rng.range(0, 5_000) as u64;
    let total = input + output + cache_read + cache_write;
    // $3 / $15 / $0.30 / $3.75 per Mtok, in micro-dollars.
    let (ci, co, cr, cw) = (
        input * 3,
        output * 15,
        cache_read * 3 / 10,
        cache_write * 15 / 4,
    );
    let _ = write!(
        out,
        "\"usage\":{{\"input\":{input},\"output\":{output},\"cacheRead\":{cache_read},\
         \"cacheWrite\":{cache_write},\"totalTokens\":{total},\"cost\":{{\"input\":"
    );
    push_micros(out, ci);
    out.push_str(",\"output\":");
    push_micros(out, co);
    out.push_str(",\"cacheRead\":");
    push_micros(out, cr);
    out.push_str(",\"cacheWrite\":");
    push_micros(out, cw);
    out.push_str(",\"total\":");
    push_micros(out, ci + co + cr + cw);
    out.push_str("}}");
}

fn assistant_tail(out: &mut String, rng: &mut Rng, stop: &str, ts: u64) {
    out.push_str(
        ",\"api\":\"anthropic-messages\",\"provider\":\"anthropic\",\"model\":\"claude-sonnet-4-5\",",
    );
    usage(out, rng);
    let _ = write!(out, ",\"stopReason\":\"{stop}\",\"timestamp\":{ts}}}");
}

pub fn user_message(rng: &mut Rng, ts: u64) -> String {
    let mut m = String::from("{\"role\":\"user\",\"content\":");
    push_string(&mut m, &prose(rng, 40, 220));
    let _ = write!(m, ",\"timestamp\":{ts}}}");
    m
}

pub fn call_message(rng: &mut Rng, ts: u64, call_id: &str, tool: &str) -> String {
    let mut m =
        String::from("{\"role\":\"assistant\",\"content\":[{\"type\":\"thinking\",\"thinking\":");
    push_string(&mut m, &prose(rng, 80, 340));
    m.push_str(",\"thinkingSignature\":");
    let sig: String = (0..rng.range(40, 90))
        .map(|_| {
            char::from(
                b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
                    [(rng.next() % 64) as usize],
            )
        })
        .collect();
    push_string(&mut m, &sig);
    m.push_str("},{\"type\":\"toolCall\",\"id\":");
    push_string(&mut m, call_id);
    m.push_str(",\"name\":");
    push_string(&mut m, tool);
    m.push_str(",\"arguments\":{");
    match tool {
        "bash" => {
            m.push_str("\"command\":");
            push_string(
                &mut m,
                &format!(
                    "cd /workspace/tiny-pi && {}",
                    rng.pick(&[
                        "cargo test --all-targets 2>&1 | tail -20",
                        "git status --short",
                        "rg -n \"fn parse\" src/",
                        "ls -la src/store"
                    ])
                ),
            );
            let _ = write!(m, ",\"timeout\":{}", rng.range(10, 600));
        }
        "edit" => {
            m.push_str("\"path\":\"src/store/mod.rs\",\"oldText\":");
            push_string(&mut m, &code(rng, 30, 100));
            m.push_str(",\"newText\":");
            push_string(&mut m, &code(rng, 30, 120));
        }
        "grep" => {
            m.push_str("\"pattern\":");
            push_string(
                &mut m,
                rng.pick(&["fn \\w+\\(", "TODO", "unwrap\\(\\)", "\"type\":\"message\""]),
            );
            m.push_str(",\"path\":\"src\"");
        }
        _ => {
            m.push_str("\"path\":");
            push_string(
                &mut m,
                rng.pick(&[
                    "src/lib.rs",
                    "src/store/mod.rs",
                    "README.md",
                    "Cargo.toml",
                    "src/json.rs",
                ]),
            );
            let _ = write!(
                m,
                ",\"offset\":{},\"limit\":{}",
                rng.range(1, 400),
                rng.range(50, 300)
            );
        }
    }
    m.push_str("}}]");
    assistant_tail(&mut m, rng, "toolUse", ts);
    m
}

pub fn result_message(rng: &mut Rng, ts: u64, call_id: &str, tool: &str) -> String {
    let mut m = String::from("{\"role\":\"toolResult\",\"toolCallId\":");
    push_string(&mut m, call_id);
    m.push_str(",\"toolName\":");
    push_string(&mut m, tool);
    m.push_str(",\"content\":[{\"type\":\"text\",\"text\":");
    let text = code(rng, 150, 700);
    push_string(&mut m, &text);
    let is_error = rng.next().is_multiple_of(20);
    let _ = write!(
        m,
        "}}],\"details\":{{\"bytes\":{},\"truncated\":{}}},\"isError\":{is_error},\"timestamp\":{ts}}}",
        text.len(),
        text.len() > 600
    );
    m
}

pub fn answer_message(rng: &mut Rng, ts: u64) -> String {
    let mut m = String::from("{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":");
    push_string(&mut m, &prose(rng, 50, 260));
    m.push_str("}]");
    assistant_tail(&mut m, rng, "stop", ts);
    m
}

/// One entry: id, parent, timestamp and message JSON.
pub struct Entry {
    pub id: String,
    pub parent: Option<String>,
    pub ts: u64,
    pub message: String,
}

impl Entry {
    /// Our line (without `\n`).
    pub fn ours(&self) -> String {
        self.line(&self.ts.to_string())
    }

    /// pi's line (without `\n`): the same entry with an ISO timestamp.
    pub fn pi(&self) -> String {
        let mut iso_ts = String::new();
        push_string(&mut iso_ts, &iso(self.ts));
        self.line(&iso_ts)
    }

    /// The entry's line with `timestamp` (already JSON) as its timestamp.
    fn line(&self, timestamp: &str) -> String {
        let mut s = String::with_capacity(self.message.len() + 112);
        s.push_str("{\"type\":\"message\",\"id\":");
        push_string(&mut s, &self.id);
        s.push_str(",\"parentId\":");
        match &self.parent {
            Some(p) => push_string(&mut s, p),
            None => s.push_str("null"),
        }
        s.push_str(",\"timestamp\":");
        s.push_str(timestamp);
        s.push_str(",\"message\":");
        s.push_str(&self.message);
        s.push('}');
        s
    }
}

/// The tree's shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// One long conversation: every turn continues the previous one; every 50th turn
    /// also gets a sibling (a regenerated final answer). The deepest leaf ends the file.
    Deep,
    /// The same messages, re-parented into chains of 9 hanging off the first entry, so
    /// the last entry is a leaf 10 deep among all the entries.
    Wide,
}

/// A generated session.
pub struct Generated {
    pub entries: usize,
    pub bytes: u64,
    pub pi_bytes: u64,
    /// Ids from the root to the chosen (deepest) leaf, root first.
    pub chain: Vec<String>,
    /// The chosen leaf: the deepest entry of the main chain (Deep), or the last entry (Wide).
    pub leaf: String,
}

/// Hands out ids and parents in the chosen shape, and tracks the path to the leaf.
struct Emitter<F: FnMut(&Entry)> {
    shape: Shape,
    f: F,
    n: u32,
    count: usize,
    root: Option<String>,
    prev: Option<String>,
    /// Deep: the main chain. Wide: the current 9-chain under the root.
    chain: Vec<String>,
}

impl<F: FnMut(&Entry)> Emitter<F> {
    fn emit(&mut self, message: String, logical_parent: Option<String>, main: bool) -> String {
        let id = id_of(self.n);
        self.n += 1;
        let parent = match self.shape {
            Shape::Deep => logical_parent,
            Shape::Wide => match &self.root {
                None => None,
                Some(r) if (self.count - 1).is_multiple_of(9) => Some(r.clone()),
                Some(_) => self.prev.clone(),
            },
        };
        let wide_new_segment = self.shape == Shape::Wide && parent.is_some() && parent == self.root;
        let e = Entry {
            id: id.clone(),
            parent,
            ts: T0 + self.count as u64 * 1000,
            message,
        };
        (self.f)(&e);
        self.count += 1;
        if self.root.is_none() {
            self.root = Some(id.clone());
        }
        match self.shape {
            Shape::Deep if main => self.chain.push(id.clone()),
            Shape::Deep => {}
            Shape::Wide => {
                if wide_new_segment {
                    self.chain.clear();
                }
                if e.parent.is_some() {
                    self.chain.push(id.clone());
                }
            }
        }
        self.prev = Some(id.clone());
        id
    }

    /// Ids from the root to the chosen leaf.
    fn path(self) -> Vec<String> {
        match self.shape {
            Shape::Deep => self.chain,
            Shape::Wide => self.root.into_iter().chain(self.chain).collect(),
        }
    }
}

/// Streams the entries of a session of exactly `target` entries to `f`; returns the
/// ids from the root to the chosen leaf (the end of the main chain).
pub fn entries(target: usize, shape: Shape, f: impl FnMut(&Entry)) -> Vec<String> {
    let mut rng = Rng::new(0x5E55_1011);
    let mut g = Emitter {
        shape,
        f,
        n: 0,
        count: 0,
        root: None,
        prev: None,
        chain: Vec::new(),
    };
    let mut last: Option<String> = None;
    let mut turn = 0u32;
    while g.count < target {
        let ts = T0 + g.count as u64 * 1000;
        let tool = rng.pick(TOOLS);
        let call_id = format!("toolu_{:08x}{:08x}", mix32(turn ^ 0xA5A5_0000), mix32(turn));
        let m = user_message(&mut rng, ts);
        let u = g.emit(m, last.take(), true);
        if g.count >= target {
            break;
        }
        let m = call_message(&mut rng, ts + 1000, &call_id, tool);
        let a = g.emit(m, Some(u), true);
        if g.count >= target {
            break;
        }
        let m = result_message(&mut rng, ts + 2000, &call_id, tool);
        let r = g.emit(m, Some(a), true);
        if g.count >= target {
            break;
        }
        let m = answer_message(&mut rng, ts + 3000);
        last = Some(g.emit(m, Some(r.clone()), true));
        // A sibling branch every 50 turns (a regenerated answer to the same tool
        // result), never as the very last entry, so the file ends on the deepest leaf.
        if turn % 50 == 49 && g.count + 1 < target {
            let m = answer_message(&mut rng, ts + 4000);
            g.emit(m, Some(r), false);
        }
        turn += 1;
    }
    g.path()
}

/// Writes our JSONL to `ours` and pi's to `pi`.
pub fn write(target: usize, shape: Shape, ours: &Path, pi: &Path) -> io::Result<Generated> {
    let mut wo = BufWriter::with_capacity(1 << 20, File::create(ours)?);
    let mut wp = BufWriter::with_capacity(1 << 20, File::create(pi)?);
    let header = format!(
        "{{\"type\":\"session\",\"version\":3,\"id\":\"0193a4c2-7f00-7000-8000-{:012x}\",\"timestamp\":\"{}\",\"cwd\":\"/workspace/tiny-pi\"}}\n",
        target,
        iso(T0 - 1000)
    );
    wp.write_all(header.as_bytes())?;
    let (mut bytes, mut pi_bytes) = (0u64, header.len() as u64);
    let mut err = None;
    let mut count = 0;
    let chain = entries(target, shape, |e| {
        let (o, p) = (e.ours(), e.pi());
        bytes += o.len() as u64 + 1;
        pi_bytes += p.len() as u64 + 1;
        count += 1;
        let r = wo
            .write_all(o.as_bytes())
            .and_then(|_| wo.write_all(b"\n"))
            .and_then(|_| wp.write_all(p.as_bytes()))
            .and_then(|_| wp.write_all(b"\n"));
        if let Err(e) = r {
            err.get_or_insert(e);
        }
    });
    if let Some(e) = err {
        return Err(e);
    }
    wo.flush()?;
    wp.flush()?;
    let leaf = chain.last().cloned().unwrap_or_default();
    Ok(Generated {
        entries: count,
        bytes,
        pi_bytes,
        chain,
        leaf,
    })
}

/// `count` entries continuing the conversation after `parent`, for the append
/// benchmark: ids drawn from counters starting at `first` (far from the session's).
/// The messages do not depend on `first`: every batch appends the same messages, the
/// ones pi's `appendMessage` is given.
pub fn continuation(first: u32, parent: &str, count: usize) -> Vec<Entry> {
    let mut rng = Rng::new(0xA99E);
    let mut out: Vec<Entry> = Vec::with_capacity(count);
    let mut parent = parent.to_owned();
    for i in 0..count {
        let ts = T0 + 1_000_000_000 + i as u64 * 1000;
        let call_id = format!("toolu_{:08x}", mix32((i / 4) as u32 ^ 0x5A5A_0000));
        let message = match i % 4 {
            0 => user_message(&mut rng, ts),
            1 => call_message(&mut rng, ts, &call_id, "read"),
            2 => result_message(&mut rng, ts, &call_id, "read"),
            _ => answer_message(&mut rng, ts),
        };
        let id = id_of(first + i as u32);
        out.push(Entry {
            id: id.clone(),
            parent: Some(parent.clone()),
            ts,
            message,
        });
        parent = id;
    }
    out
}

/// The chapter's tree (README "The model"), in our format and in pi's (pi has no
/// metadata entry: `meta-cwd` becomes a `custom` entry, which pi also keeps on the path
/// but not among the messages).
pub fn chapter(ours: &Path, pi: &Path) -> io::Result<()> {
    const LINES: &[(&str, Option<&str>, u64, &str)] = &[
        (
            "u-1",
            None,
            1_733_000_000_000,
            r#"{"role":"user","content":"读取 README.md，告诉我项目名","timestamp":1733000000000}"#,
        ),
        (
            "a-read",
            Some("u-1"),
            1_733_000_001_000,
            r#"{"role":"assistant","content":[{"type":"toolCall","id":"call-1","name":"read","arguments":{"path":"README.md"}}],"api":"openai-responses","provider":"openai","model":"gpt-5","usage":{"input":120,"output":18},"stopReason":"toolUse","timestamp":1733000001000}"#,
        ),
        (
            "r-read",
            Some("a-read"),
            1_733_000_002_000,
            r##"{"role":"toolResult","toolCallId":"call-1","toolName":"read","content":[{"type":"text","text":"# tiny-pi\n\nA tiny coding agent."}],"isError":false,"details":{"path":"README.md","bytes":33},"timestamp":1733000002000}"##,
        ),
        (
            "a-final",
            Some("r-read"),
            1_733_000_003_000,
            r#"{"role":"assistant","content":[{"type":"text","text":"项目名是 tiny-pi"}],"api":"openai-responses","provider":"openai","model":"gpt-5","usage":{"input":160,"output":9},"stopReason":"stop","timestamp":1733000003000}"#,
        ),
        (
            "a-alt",
            Some("u-1"),
            1_733_000_004_000,
            r#"{"role":"assistant","content":[{"type":"text","text":"我无法读取该文件"}],"api":"openai-responses","provider":"openai","model":"gpt-5","usage":{"input":120,"output":8},"stopReason":"stop","timestamp":1733000004000}"#,
        ),
    ];
    let mut o = String::new();
    let mut p = format!(
        "{{\"type\":\"session\",\"version\":3,\"id\":\"chapter\",\"timestamp\":\"{}\",\"cwd\":\"/workspace/tiny-pi\"}}\n",
        iso(T0 - 1000)
    );
    for (id, parent, ts, message) in LINES {
        let e = Entry {
            id: (*id).to_owned(),
            parent: parent.map(str::to_owned),
            ts: *ts,
            message: (*message).to_owned(),
        };
        o.push_str(&e.ours());
        o.push('\n');
        p.push_str(&e.pi());
        p.push('\n');
    }
    o.push_str(r#"{"type":"metadata","id":"meta-cwd","parentId":"a-final","timestamp":1733000005000,"key":"cwd","value":"/workspace/tiny-pi"}"#);
    o.push('\n');
    p.push_str(&format!(
        r#"{{"type":"custom","customType":"metadata","data":{{"key":"cwd","value":"/workspace/tiny-pi"}},"id":"meta-cwd","parentId":"a-final","timestamp":"{}"}}"#,
        iso(1_733_000_005_000)
    ));
    p.push('\n');
    std::fs::write(ours, o)?;
    std::fs::write(pi, p)
}
