//! The resume benchmark (issue 23): what it costs to get from a session file to the
//! model's context, and to the next context after one more turn, for libsession with its
//! session index and with `{"index":false}`, for pi's `SessionManager` and for the SQLite
//! peer, side by side in one Markdown table.
//!
//! ```text
//! cargo bench --bench perf -- resume-bench [--mb 66] [--big] [--near] [--runs 5]
//!     [--pi-runs N] [--no-pi] [--data DIR]
//! ```
//!
//! The session (generated once into `DIR/resume/`, then reused while its size matches):
//! the turns of benches/sessiongen (user / assistant with thinking + toolCall /
//! toolResult / assistant text, a regenerated answer as a sibling branch every 50 turns)
//! with a `compaction` every 200 turns whose `firstKeptEntryId` is the user message 13
//! turns back (52 messages), up to `--mb` MB (default 66); `--big` adds a ~1 GB one.
//! The file ends where the size is reached, up to 200 turns after the latest
//! compaction; with `--near` it ends one turn after a compaction, so that the context
//! keeps the 13 turns the compaction kept plus that one (56 messages).
//! Both our JSONL and pi's (a v3 header, ISO timestamps, the same message objects).
//!
//! Every libsession figure goes through the C ABI, as a C host sees it:
//! - open: `session_jsonl_store_open` (the default writer open, with the index: it is
//!   written by one writer's close before the runs) or
//!   `session_jsonl_store_open_with(…, {"index":false})`, then `session_store_latest_leaf`;
//! - context: the first `session_store_build_context` of that leaf, default options, on
//!   that fresh store; resume: both on one clock. Fresh store each run, medians of
//!   `--runs` after one warm-up, index and no index alternating, close not timed;
//! - steady: on one open store, `session_store_append` of one more entry, then
//!   `build_context` of it (only the latter timed);
//! - peak RSS: VmHWM of a fresh child process (this binary with `resume-rss-child`)
//!   after open + latest leaf + build_context.
//!
//! pi (bench/peer/resume.mjs): `SessionManager.open` (its leaf is the last entry), the
//! first `buildSessionContext()`, the same after one `appendMessage`, and maxRSS of a
//! fresh node process. SQLite (benches/sqlite_peer.c `resume`): `sqlite3_open_v2` + the
//! latest row, then two recursive CTEs (leaf up to its compaction, then the compaction's
//! parent up to the first kept entry) fetching the same messages as one JSON array.
//!
//! Checked in every run: the context with and without the index is the same bytes; the
//! SQLite peer returns the kept messages of the same ids in the same order; pi's message
//! count is reported beside ours (summary + kept).

use std::ffi::{CStr, CString, c_char};
use std::fmt::Write as _;
use std::fs::{self, File};
use std::io::{self, BufWriter, Write as _};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use session::ffi;
use session::json::push_string;

use super::sessiongen::{self, Entry, Rng, id_of, iso};
use super::sqlitebench::Peer;
use super::{CStore, die, file_len, fmt_time, fmt_x, mb, median, num_arg, status_kb, take};

/// Milliseconds of the first entry, as in sessiongen.
const T0: u64 = 1_733_000_000_000;
/// Turns between compactions.
const COMPACTION_EVERY: u32 = 200;
/// Turns a compaction keeps (its `firstKeptEntryId` is the user message this many turns
/// back, the last turn included): 13 turns of 4 messages = 52 messages.
const KEPT_TURNS: usize = 13;

const TOOLS: &[&str] = &["read", "bash", "edit", "write", "grep"];

/// One generated session with compactions.
struct Session {
    name: String,
    file: PathBuf,
    pi_file: PathBuf,
    bytes: u64,
    pi_bytes: u64,
    entries: u64,
    compactions: u64,
    leaf: String,
}

/// Both files of a session, written line by line.
struct Out {
    ours: BufWriter<File>,
    pi: BufWriter<File>,
    bytes: u64,
    pi_bytes: u64,
    entries: u64,
    n: u32,
}

impl Out {
    fn line(&mut self, ours: &str, pi: &str) -> io::Result<()> {
        self.ours.write_all(ours.as_bytes())?;
        self.ours.write_all(b"\n")?;
        self.pi.write_all(pi.as_bytes())?;
        self.pi.write_all(b"\n")?;
        self.bytes += ours.len() as u64 + 1;
        self.pi_bytes += pi.len() as u64 + 1;
        self.entries += 1;
        Ok(())
    }

    fn ts(&self) -> u64 {
        T0 + self.entries * 1000
    }

    fn message(&mut self, message: String, parent: Option<&str>) -> io::Result<String> {
        let id = id_of(self.n);
        self.n += 1;
        let e = Entry {
            id: id.clone(),
            parent: parent.map(str::to_owned),
            ts: self.ts(),
            message,
        };
        self.line(&e.ours(), &e.pi())?;
        Ok(id)
    }

    /// A compaction under `parent` keeping from `first_kept`.
    fn compaction(&mut self, rng: &mut Rng, parent: &str, first_kept: &str) -> io::Result<String> {
        let id = id_of(self.n);
        self.n += 1;
        let mut tail = String::from(",\"summary\":");
        push_string(&mut tail, &sessiongen::prose(rng, 600, 2_400));
        tail.push_str(",\"firstKeptEntryId\":");
        push_string(&mut tail, first_kept);
        let _ = write!(tail, ",\"tokensBefore\":{}}}", rng.range(80_000, 180_000));
        let head = |ts: &str| {
            let mut s = String::from("{\"type\":\"compaction\",\"id\":");
            push_string(&mut s, &id);
            s.push_str(",\"parentId\":");
            push_string(&mut s, parent);
            s.push_str(",\"timestamp\":");
            s.push_str(ts);
            s
        };
        let ms = self.ts();
        let mut iso_ts = String::new();
        push_string(&mut iso_ts, &iso(ms));
        let (ours, pi) = (head(&ms.to_string()) + &tail, head(&iso_ts) + &tail);
        self.line(&ours, &pi)?;
        Ok(id)
    }
}

/// Writes (or reuses) the session of about `mb` MB in `dir`.
fn generate(dir: &Path, mb_target: u64, near: bool) -> Session {
    let name = format!("resume-{mb_target}mb{}", if near { "-near" } else { "" });
    let file = dir.join(format!("{name}.jsonl"));
    let pi_file = dir.join(format!("{name}.pi.jsonl"));
    let meta = dir.join(format!("{name}.json"));
    if let Ok(text) = fs::read_to_string(&meta) {
        let v: Value = serde_json::from_str(&text).unwrap_or_default();
        if v["bytes"].as_u64() == Some(file_len(&file))
            && v["pi_bytes"].as_u64() == Some(file_len(&pi_file))
        {
            return Session {
                name,
                file,
                pi_file,
                bytes: v["bytes"].as_u64().unwrap_or(0),
                pi_bytes: v["pi_bytes"].as_u64().unwrap_or(0),
                entries: v["entries"].as_u64().unwrap_or(0),
                compactions: v["compactions"].as_u64().unwrap_or(0),
                leaf: v["leaf"].as_str().unwrap_or_default().to_owned(),
            };
        }
    }
    eprintln!("resume-bench: generating {name} (about {mb_target} MB, twice: ours and pi's)");
    let t = Instant::now();
    let open = |p: &Path| {
        File::create(p)
            .map(|f| BufWriter::with_capacity(1 << 20, f))
            .unwrap_or_else(|e| die(&format!("{}: {e}", p.display())))
    };
    let mut out = Out {
        ours: open(&file),
        pi: open(&pi_file),
        bytes: 0,
        pi_bytes: 0,
        entries: 0,
        n: 0,
    };
    let (leaf, compactions) = write_turns(&mut out, mb_target * 1_000_000, near)
        .unwrap_or_else(|e| die(&format!("{}: {e}", file.display())));
    let Out {
        mut ours,
        mut pi,
        bytes,
        pi_bytes,
        entries,
        ..
    } = out;
    ours.flush()
        .and_then(|_| pi.flush())
        .unwrap_or_else(|e| die(&e.to_string()));
    let v = json!({"bytes": bytes, "pi_bytes": pi_bytes, "entries": entries,
                   "compactions": compactions, "leaf": leaf});
    fs::write(&meta, v.to_string()).unwrap_or_else(|e| die(&e.to_string()));
    eprintln!(
        "resume-bench: {entries} entries, {compactions} compactions, {:.1} MB in {:.1} s",
        mb(bytes),
        t.elapsed().as_secs_f64()
    );
    Session {
        name,
        file,
        pi_file,
        bytes,
        pi_bytes,
        entries,
        compactions,
        leaf,
    }
}

/// The turns, until our file holds `target` bytes and ends on a message; returns the
/// last entry (the latest leaf) and the number of compactions.
/// The turns, until `target` bytes are written; with `near`, then on to one turn after
/// the next compaction.
fn write_turns(out: &mut Out, target: u64, near: bool) -> io::Result<(String, u64)> {
    let mut rng = Rng::new(0x2E5_0E23);
    let pi_header = format!(
        "{{\"type\":\"session\",\"version\":3,\"id\":\"0193a4c2-7f00-7000-8000-{:012x}\",\"timestamp\":\"{}\",\"cwd\":\"/workspace/tiny-pi\"}}\n",
        target,
        iso(T0 - 1000)
    );
    out.pi.write_all(pi_header.as_bytes())?;
    out.pi_bytes += pi_header.len() as u64;
    let mut last: Option<String> = None;
    let mut users: Vec<String> = Vec::new();
    let mut compactions = 0;
    let mut turn = 0u32;
    let mut ended_on_compaction = false;
    // Turns since the latest compaction (none yet: u32::MAX).
    let mut since = u32::MAX;
    while out.bytes < target || ended_on_compaction || (near && since != 1) {
        let ts = out.ts();
        let tool = rng.pick(TOOLS);
        let call_id = format!("toolu_{:08x}{:08x}", turn ^ 0xA5A5_0000, turn);
        let m = sessiongen::user_message(&mut rng, ts);
        let u = out.message(m, last.as_deref())?;
        let m = sessiongen::call_message(&mut rng, ts + 1000, &call_id, tool);
        let a = out.message(m, Some(&u))?;
        let m = sessiongen::result_message(&mut rng, ts + 2000, &call_id, tool);
        let r = out.message(m, Some(&a))?;
        let m = sessiongen::answer_message(&mut rng, ts + 3000);
        let mut answer = out.message(m, Some(&r))?;
        // A regenerated answer every 50 turns, on a side branch.
        if turn % 50 == 49 {
            let m = sessiongen::answer_message(&mut rng, ts + 4000);
            out.message(m, Some(&r))?;
        }
        users.push(u);
        ended_on_compaction = false;
        since = since.saturating_add(1);
        if turn % COMPACTION_EVERY == COMPACTION_EVERY - 1 && users.len() >= KEPT_TURNS {
            let first_kept = users[users.len() - KEPT_TURNS].clone();
            answer = out.compaction(&mut rng, &answer, &first_kept)?;
            users.clear();
            compactions += 1;
            ended_on_compaction = true;
            since = 0;
        }
        last = Some(answer);
        turn += 1;
    }
    Ok((last.unwrap_or_default(), compactions))
}

// ---------------------------------------------------------------------------------
// libsession through the C ABI
// ---------------------------------------------------------------------------------

/// The two libsession configurations: the default open, and `{"index":false}`.
#[derive(Clone, Copy, PartialEq)]
enum Ours {
    Index,
    NoIndex,
}

impl Ours {
    fn options(self) -> Option<CString> {
        match self {
            Ours::Index => None,
            Ours::NoIndex => Some(CString::new(r#"{"index":false}"#).unwrap()),
        }
    }

    fn arg(self) -> &'static str {
        match self {
            Ours::Index => "index",
            Ours::NoIndex => "no-index",
        }
    }
}

fn latest_leaf(cs: &CStore) -> CString {
    let mut out: *mut c_char = std::ptr::null_mut();
    // SAFETY: an open store and a writable out pointer; `take` frees the result once.
    let status = unsafe { ffi::session_store_latest_leaf(cs.0, &mut out) };
    let text = take(out);
    if status != ffi::SESSION_OK {
        die(&format!("latest_leaf: {text}"));
    }
    let v: Value = serde_json::from_str(&text).unwrap_or_else(|e| die(&e.to_string()));
    CString::new(v["id"].as_str().unwrap_or_else(|| die("no latest leaf"))).unwrap()
}

/// `session_store_build_context` of `leaf` with the default options: its output.
fn build_context(cs: &CStore, leaf: &CStr) -> Vec<u8> {
    let mut out: *mut c_char = std::ptr::null_mut();
    // SAFETY: an open store, a C string, NULL options and estimator, a writable out.
    let status = unsafe {
        ffi::session_store_build_context(
            cs.0,
            leaf.as_ptr(),
            std::ptr::null(),
            None,
            std::ptr::null_mut(),
            &mut out,
        )
    };
    if status != ffi::SESSION_OK {
        die(&format!("build_context {leaf:?}: {}", take(out)));
    }
    // SAFETY: `out` is the NUL-terminated result, freed once.
    let bytes = unsafe { CStr::from_ptr(out) }.to_bytes().to_vec();
    // SAFETY: freed once.
    unsafe { ffi::session_string_free(out) };
    bytes
}

/// One resume: (open + latest leaf, first build_context, its output).
fn resume_once(file: &Path, which: Ours) -> (Duration, Duration, Vec<u8>) {
    let options = which.options();
    let t0 = Instant::now();
    let cs = CStore::open_with(file, options.as_deref());
    let leaf = latest_leaf(&cs);
    let t1 = Instant::now();
    let ctx = build_context(&cs, &leaf);
    let t2 = Instant::now();
    drop(cs);
    (t1 - t0, t2 - t1, ctx)
}

/// In the child: peak RSS before and after open + latest leaf + build_context.
pub fn rss_child(args: &[String]) {
    let [file, which, ..] = args else {
        die("resume-rss-child FILE index|no-index");
    };
    let which = if which == "index" {
        Ours::Index
    } else {
        Ours::NoIndex
    };
    let before = status_kb("VmHWM:");
    let (_, _, ctx) = resume_once(Path::new(file), which);
    let peak = status_kb("VmHWM:");
    std::hint::black_box(&ctx);
    println!("{} {}", before * 1024, peak * 1024);
}

fn rss_of(file: &Path, which: Ours, runs: usize) -> f64 {
    let exe = std::env::current_exe().unwrap();
    let peaks = (0..runs)
        .map(|_| {
            let out = Command::new(&exe)
                .arg("resume-rss-child")
                .arg(file)
                .arg(which.arg())
                .output()
                .unwrap_or_else(|e| die(&e.to_string()));
            if !out.status.success() {
                die(&format!(
                    "resume-rss-child: {}",
                    String::from_utf8_lossy(&out.stderr)
                ));
            }
            let text = String::from_utf8_lossy(&out.stdout);
            text.split_whitespace()
                .nth(1)
                .and_then(|x| x.parse().ok())
                .unwrap_or(f64::NAN)
        })
        .collect();
    median(peaks)
}

/// Steady state: one open store, the conversation continued under the current leaf
/// (turns of user / assistant with a tool call / tool result / assistant), each entry
/// appended on its own; `build_context` is timed where a runtime calls it, after the
/// user message and after the tool result (a leaf with a pending tool call is not a
/// context). At least `n + 1` contexts, the first a warm-up. Returns the median and the last
/// entry's id.
fn steady(file: &Path, which: Ours, parent: &str, first_id: u32, n: usize) -> (f64, String) {
    let options = which.options();
    let cs = CStore::open_with(file, options.as_deref());
    let mut times = Vec::new();
    let mut leaf = parent.to_owned();
    // Whole turns, so that the next run continues after an answer.
    let entries = sessiongen::continuation(first_id, parent, 4 * n.div_ceil(2).max(1));
    for (i, e) in entries.into_iter().enumerate() {
        let line = CString::new(e.ours()).unwrap();
        if cs.append(&line) != ffi::SESSION_OK {
            die("steady: append failed");
        }
        leaf = e.id;
        if i % 2 == 1 {
            // an assistant message: the model's answer, no context needed
            continue;
        }
        let id = CString::new(leaf.as_str()).unwrap();
        let t = Instant::now();
        std::hint::black_box(build_context(&cs, &id));
        if i > 0 {
            times.push(t.elapsed().as_secs_f64());
        }
    }
    (median(times), leaf)
}

// ---------------------------------------------------------------------------------
// The run
// ---------------------------------------------------------------------------------

/// One column's figures (seconds, bytes, counts); NaN when not measured.
struct Column {
    open: f64,
    context: f64,
    resume: f64,
    steady: f64,
    peak_rss: f64,
    messages: f64,
    note: String,
}

impl Column {
    fn missing(note: &str) -> Column {
        Column {
            open: f64::NAN,
            context: f64::NAN,
            resume: f64::NAN,
            steady: f64::NAN,
            peak_rss: f64::NAN,
            messages: f64::NAN,
            note: note.to_owned(),
        }
    }
}

/// `resume-bench`: every size, one table each, on stdout.
pub fn run(args: &[String]) {
    let o = super::parse_options(args);
    let mut sizes = vec![num_arg::<u64>(args, "--mb").unwrap_or(66).max(1)];
    if args.iter().any(|a| a == "--big") {
        sizes.push(1000);
    }
    let no_pi = args.iter().any(|a| a == "--no-pi");
    let near = args.iter().any(|a| a == "--near");
    let dir = o.data.join("resume");
    fs::create_dir_all(&dir).unwrap_or_else(|e| die(&format!("{}: {e}", dir.display())));
    let peer = Peer::try_build();
    if let Err(e) = &peer {
        eprintln!("resume-bench: SQLite peer skipped: {e}");
    }
    let mut report = String::new();
    for &size in &sizes {
        let pi_runs =
            num_arg::<usize>(args, "--pi-runs").unwrap_or(if size > 200 { 1 } else { o.runs });
        let s = generate(&dir, size, near);
        report.push_str(&measure(
            &o,
            &s,
            &dir,
            peer.as_ref().ok(),
            (!no_pi).then_some(pi_runs),
        ));
    }
    print!("{report}");
    io::stdout().flush().ok();
}

fn measure(
    o: &super::Options,
    s: &Session,
    dir: &Path,
    peer: Option<&Peer>,
    pi_runs: Option<usize>,
) -> String {
    let runs = o.runs;
    // A working copy (the steady state appends to it), its index written by a writer.
    let work = dir.join(format!("{}.work.jsonl", s.name));
    let _ = fs::remove_file(session::index_path(&work));
    fs::copy(&s.file, &work).unwrap_or_else(|e| die(&format!("copy: {e}")));
    eprintln!(
        "resume-bench: {}: first open (its close writes the index)",
        s.name
    );
    let t = Instant::now();
    let cs = CStore::open(&work);
    let first_open = t.elapsed();
    let leaf = latest_leaf(&cs);
    if leaf.to_bytes() != s.leaf.as_bytes() {
        die("the latest leaf is not the generated one");
    }
    let t = Instant::now();
    drop(cs);
    let first_close = t.elapsed();
    let index_written = session::index_path(&work).exists();

    // Resume: fresh store each run, index and no index alternating.
    eprintln!("resume-bench: {}: resume, {runs} runs each", s.name);
    let (mut io, mut ic, mut ir, mut no, mut nc, mut nr) =
        (vec![], vec![], vec![], vec![], vec![], vec![]);
    let (mut ctx_index, mut ctx_none) = (Vec::new(), Vec::new());
    for run in 0..=runs {
        let (a, b, ci) = resume_once(&work, Ours::Index);
        let (c, d, cn) = resume_once(&work, Ours::NoIndex);
        if run == 0 {
            (ctx_index, ctx_none) = (ci, cn);
            continue;
        }
        io.push(a.as_secs_f64());
        ic.push(b.as_secs_f64());
        ir.push((a + b).as_secs_f64());
        no.push(c.as_secs_f64());
        nc.push(d.as_secs_f64());
        nr.push((c + d).as_secs_f64());
    }
    let index_kept = session::index_path(&work).exists();
    let parsed: Value = serde_json::from_slice(&ctx_index).unwrap_or_else(|e| die(&e.to_string()));
    let kept_ids: Vec<String> = parsed["keptEntryIds"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| v.as_str().map(str::to_owned))
        .collect();
    let messages = parsed["messages"].as_array().map_or(0, Vec::len);
    let parsed_none: Value =
        serde_json::from_slice(&ctx_none).unwrap_or_else(|e| die(&e.to_string()));
    let kept_none = parsed_none["keptEntryIds"].as_array().map_or(0, Vec::len);
    if kept_none != kept_ids.len() {
        die(&format!(
            "kept messages: {} with the index, {kept_none} without",
            kept_ids.len()
        ));
    }
    let mut checks = vec![format!(
        "libsession with and without the index: {} kept messages each{}",
        kept_ids.len(),
        if ctx_index == ctx_none {
            ", byte-identical build_context output"
        } else {
            ", **outputs differ**"
        }
    )];

    eprintln!("resume-bench: {}: peak RSS", s.name);
    let rss_runs = if s.bytes > 200_000_000 { 1 } else { 3 };
    let rss_index = rss_of(&work, Ours::Index, rss_runs);
    let rss_none = rss_of(&work, Ours::NoIndex, rss_runs);

    eprintln!("resume-bench: {}: steady state", s.name);
    let (steady_index, last) = steady(&work, Ours::Index, &s.leaf, 0x6000_0000, runs);
    let (steady_none, _) = steady(&work, Ours::NoIndex, &last, 0x6100_0000, runs);
    let _ = fs::remove_file(session::index_path(&work));
    let _ = fs::remove_file(&work);

    let ours = |open: Vec<f64>, ctx: Vec<f64>, res: Vec<f64>, steady: f64, rss: f64| Column {
        open: median(open),
        context: median(ctx),
        resume: median(res),
        steady,
        peak_rss: rss,
        messages: messages as f64,
        note: String::new(),
    };
    let col_index = ours(io, ic, ir, steady_index, rss_index);
    let col_none = ours(no, nc, nr, steady_none, rss_none);

    // The messages one appended turn holds, for pi's appendMessage.
    let append_file = dir.join("resume-append.jsonl");
    let mut am = String::new();
    for e in sessiongen::continuation(0x6200_0000, "x", runs + 1) {
        am.push_str(&e.message);
        am.push('\n');
    }
    fs::write(&append_file, am).unwrap_or_else(|e| die(&e.to_string()));

    let col_pi = match pi_runs {
        None => Column::missing("not run (--no-pi)"),
        Some(pi_runs) => pi_column(s, &append_file, pi_runs, &mut checks, messages),
    };
    let (col_sqlite, sqlite_version) = match peer {
        None => (
            Column::missing("skipped (no cc or libsqlite3-dev)"),
            String::new(),
        ),
        Some(peer) => sqlite_column(peer, s, dir, runs, &kept_ids, &mut checks),
    };

    // The table.
    let mut t = String::new();
    let _ = writeln!(
        t,
        "\n### Resume: {} — {} entries, {:.1} MB (pi's file {:.1} MB), {} compactions\n",
        s.name,
        s.entries,
        mb(s.bytes),
        mb(s.pi_bytes),
        s.compactions
    );
    let _ = writeln!(
        t,
        "Medians of {runs} runs (pi: {}), files in the page cache; in brackets: ÷ libsession with the index.\n",
        pi_runs.map_or("—".into(), |n| n.to_string())
    );
    let _ = writeln!(
        t,
        "| figure | libsession, index | libsession, `{{\"index\":false}}` | pi 0.73.1 | SQLite {sqlite_version} |"
    );
    let _ = writeln!(t, "|---|---:|---:|---:|---:|");
    let cols = [&col_index, &col_none, &col_pi, &col_sqlite];
    let time_row = |t: &mut String, figure: &str, get: &dyn Fn(&Column) -> f64| {
        let base = get(&col_index);
        let cells: Vec<String> = cols
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let v = get(c);
                if !v.is_finite() {
                    "—".into()
                } else if i == 0 {
                    fmt_time(v)
                } else {
                    format!("{} ({})", fmt_time(v), fmt_x(v / base))
                }
            })
            .collect();
        let _ = writeln!(t, "| {figure} | {} |", cells.join(" | "));
    };
    time_row(&mut t, "open (+ latest leaf)", &|c| c.open);
    time_row(&mut t, "first `build_context` of the latest leaf", &|c| {
        c.context
    });
    time_row(&mut t, "**resume**: open + first `build_context`", &|c| {
        c.resume
    });
    time_row(
        &mut t,
        "`build_context` after one more append (steady state)",
        &|c| c.steady,
    );
    let cells: Vec<String> = cols
        .iter()
        .enumerate()
        .map(|(i, c)| {
            if !c.peak_rss.is_finite() {
                "—".into()
            } else if i == 0 {
                format!(
                    "{:.1} MB ({:.2} × file)",
                    c.peak_rss / 1e6,
                    c.peak_rss / s.bytes as f64
                )
            } else {
                format!(
                    "{:.1} MB ({})",
                    c.peak_rss / 1e6,
                    fmt_x(c.peak_rss / col_index.peak_rss)
                )
            }
        })
        .collect();
    let _ = writeln!(
        t,
        "| peak RSS of a fresh process after resume | {} |",
        cells.join(" | ")
    );
    let cells: Vec<String> = cols
        .iter()
        .map(|c| {
            if c.messages.is_finite() {
                format!("{}", c.messages)
            } else {
                "—".into()
            }
        })
        .collect();
    let _ = writeln!(
        t,
        "| messages in the context (libsession, pi: summary + kept; SQLite: kept) | {} |",
        cells.join(" | ")
    );
    let _ = writeln!(
        t,
        "\n- first open of the file without an index (a writer): {}; its close, which writes the index: {}; index {}",
        fmt_time(first_open.as_secs_f64()),
        fmt_time(first_close.as_secs_f64()),
        match (index_written, index_kept) {
            (true, true) => "present for every run",
            (true, false) => "**gone after the runs**",
            _ => "**not written**",
        }
    );
    for c in cols {
        if !c.note.is_empty() {
            let _ = writeln!(t, "- {}", c.note);
        }
    }
    for c in checks {
        let _ = writeln!(t, "- checked: {c}");
    }
    t
}

fn pi_column(
    s: &Session,
    append_file: &Path,
    runs: usize,
    checks: &mut Vec<String>,
    ours: usize,
) -> Column {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    if !root
        .join("bench/peer/node_modules/@mariozechner/pi-coding-agent")
        .exists()
    {
        return Column::missing("pi: not run (`npm ci` in bench/peer first)");
    }
    eprintln!("resume-bench: {}: pi ({runs} runs)", s.name);
    let out = Command::new("node")
        .arg("--expose-gc")
        .arg(root.join("bench/peer/resume.mjs"))
        .arg("--file")
        .arg(&s.pi_file)
        .args(["--runs", &runs.to_string(), "--rss-runs", "1", "--append"])
        .arg(append_file)
        .output();
    let out = match out {
        Ok(out) if out.status.success() => out,
        Ok(out) => {
            let err = String::from_utf8_lossy(&out.stderr);
            // node's error line ("Error: …"), else its last line
            let line = err
                .lines()
                .find(|l| l.contains("Error:"))
                .or_else(|| err.lines().rev().find(|l| !l.trim().is_empty()))
                .unwrap_or("");
            return Column::missing(&format!("pi failed: {}", line.trim()));
        }
        Err(e) => return Column::missing(&format!("pi: node: {e}")),
    };
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| die(&e.to_string()));
    let n = |k: &str| v[k].as_f64().unwrap_or(f64::NAN);
    checks.push(format!(
        "pi ({}): {} messages in buildSessionContext (summary + kept), libsession {ours}{}",
        v["package"].as_str().unwrap_or("?"),
        n("messages"),
        if n("messages") as usize == ours {
            ": the same"
        } else {
            ": **different**"
        }
    ));
    Column {
        open: n("open_s"),
        context: n("context_s"),
        resume: n("resume_s"),
        steady: n("steady_s"),
        peak_rss: n("peak_rss"),
        messages: n("messages"),
        note: String::new(),
    }
}

fn sqlite_column(
    peer: &Peer,
    s: &Session,
    dir: &Path,
    runs: usize,
    kept: &[String],
    checks: &mut Vec<String>,
) -> (Column, String) {
    let db = dir.join(format!("{}.db", s.name));
    let modified = |p: &Path| fs::metadata(p).and_then(|m| m.modified()).ok();
    if modified(&db).is_none() || modified(&db) < modified(&s.file) {
        eprintln!("resume-bench: {}: loading into SQLite", s.name);
        let out = peer.run(&[&"load", &s.file, &db]);
        eprintln!(
            "resume-bench: {} entries in {:.1} s",
            out.num("entries"),
            out.num("load_ms") / 1e3
        );
    }
    // One more line each steady run (its parent set by the peer).
    let lines = dir.join("resume-sqlite-append.jsonl");
    let mut text = String::new();
    for e in sessiongen::continuation(0x6300_0000, "x", runs + 1) {
        text.push_str(&e.ours());
        text.push('\n');
    }
    fs::write(&lines, text).unwrap_or_else(|e| die(&e.to_string()));
    eprintln!("resume-bench: {}: SQLite", s.name);
    let r = peer.run(&[&"resume", &db, &runs.to_string(), &lines]);
    let rss: Vec<f64> = (0..3)
        .map(|_| peer.run(&[&"resume-rss", &db]).num("hwm_after"))
        .collect();
    let same = r.ids == kept;
    checks.push(format!(
        "SQLite: {} kept messages, libsession {}{}",
        r.ids.len(),
        kept.len(),
        if same {
            ": the same ids in the same order"
        } else {
            ": **different**"
        }
    ));
    let version = peer
        .run(&[&"version"])
        .kv
        .get("version")
        .cloned()
        .unwrap_or_default();
    (
        Column {
            open: r.num("open_ms") / 1e3,
            context: r.num("context_ms") / 1e3,
            resume: r.num("resume_ms") / 1e3,
            steady: r.num("steady_ms") / 1e3,
            peak_rss: median(rss),
            messages: r.num("messages"),
            note: String::new(),
        },
        version,
    )
}
