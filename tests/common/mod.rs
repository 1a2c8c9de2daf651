//! Fixtures and helpers shared by the integration tests.
#![allow(dead_code)]

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use session::SessionFile;

/// The chapter's fixed tree, in append order (docs/contract.md §1).
pub const U1: &str = r#"{"id":"u-1","parentId":null,"timestamp":1,"type":"message","message":{"role":"user","content":"读取 README.md，告诉我项目名"}}"#;
pub const A_READ: &str = r#"{"id":"a-read","parentId":"u-1","timestamp":2,"type":"message","message":{"role":"assistant","content":[{"type":"toolCall","id":"call-1","name":"read","arguments":{"path":"README.md"},"partialJson":"{\"path\":\"README.md\"}"}],"api":"openai-responses","provider":"openai","model":"gpt-5","usage":{"input":120,"output":18},"stopReason":"toolUse"}}"#;
pub const R_READ: &str = r##"{"id":"r-read","parentId":"a-read","timestamp":3,"type":"message","message":{"role":"toolResult","toolCallId":"call-1","toolName":"read","content":[{"type":"text","text":"# tiny-pi ..."}],"isError":false,"details":{"path":"README.md","bytes":12}}}"##;
pub const A_FINAL: &str = r#"{"id":"a-final","parentId":"r-read","timestamp":4,"type":"message","message":{"role":"assistant","content":[{"type":"text","text":"项目名是 tiny-pi"}]}}"#;
pub const A_ALT: &str = r#"{"id":"a-alt","parentId":"u-1","timestamp":5,"type":"message","message":{"role":"assistant","content":[{"type":"text","text":"我无法读取该文件"}]}}"#;
pub const META_CWD: &str = r#"{"id":"meta-cwd","parentId":"a-final","timestamp":6,"type":"metadata","key":"cwd","value":"/workspace/tiny-pi"}"#;

pub const CHAPTER: [&str; 6] = [U1, A_READ, R_READ, A_FINAL, A_ALT, META_CWD];

/// The message member of a fixture line.
pub fn message_of(line: &str) -> &str {
    let start = line.find(r#""message":"#).expect("a message entry") + r#""message":"#.len();
    &line[start..line.len() - 1]
}

/// A simple entry: a user message with `text`, child of `parent`.
pub fn user(id: &str, parent: Option<&str>, text: &str) -> String {
    let parent = parent
        .map(|p| format!("\"{p}\""))
        .unwrap_or_else(|| "null".into());
    format!(
        r#"{{"id":"{id}","parentId":{parent},"timestamp":1,"type":"message","message":{{"role":"user","content":"{text}"}}}}"#
    )
}

/// A fresh, empty directory under the system temp dir.
pub fn temp_dir(name: &str) -> PathBuf {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let dir =
        std::env::temp_dir().join(format!("libsession-test-{}-{name}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

pub fn write_file(path: &Path, bytes: &[u8]) {
    std::fs::write(path, bytes).expect("write fixture");
}

pub fn read_file(path: &Path) -> Vec<u8> {
    std::fs::read(path).expect("read file")
}

/// What the fault layer does on a write call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// Fail with this errno before writing anything.
    Errno(i32),
    /// Write half of the buffer, then fail the next call with EIO.
    ShortThenEio,
    /// Write the whole buffer, then report EIO anyway.
    AfterWriteEio,
}

/// Counts and scripts the calls the store makes on its file.
#[derive(Default)]
pub struct FaultPlan {
    pub state: Mutex<PlanState>,
    pub released: Condvar,
}

#[derive(Default)]
pub struct PlanState {
    /// Write calls seen so far (successful or not).
    pub writes: u64,
    pub syncs: u64,
    /// Fail the write call with this 1-based number.
    pub fail_write: Option<(u64, Fault)>,
    /// A pending second half of a short write failure.
    pub fail_next_write: bool,
    /// Block write calls until `hold` is cleared.
    pub hold: bool,
    /// Number of write calls currently blocked by `hold`.
    pub blocked: u64,
    /// Fail the sync call with this 1-based number with EIO.
    pub fail_sync: Option<u64>,
}

impl FaultPlan {
    pub fn new() -> Arc<FaultPlan> {
        Arc::new(FaultPlan::default())
    }

    pub fn writes(&self) -> u64 {
        self.state.lock().unwrap().writes
    }

    pub fn syncs(&self) -> u64 {
        self.state.lock().unwrap().syncs
    }

    pub fn fail_sync(&self, n: u64) {
        self.state.lock().unwrap().fail_sync = Some(n);
    }

    pub fn hold(&self) {
        self.state.lock().unwrap().hold = true;
    }

    pub fn release(&self) {
        self.state.lock().unwrap().hold = false;
        self.released.notify_all();
    }

    /// Waits until a write call is blocked by `hold`.
    pub fn wait_blocked(&self) {
        let mut s = self.state.lock().unwrap();
        while s.blocked == 0 {
            s = self.released.wait(s).unwrap();
        }
    }

    pub fn fail_write(&self, n: u64, fault: Fault) {
        self.state.lock().unwrap().fail_write = Some((n, fault));
    }
}

/// A real file behind a scripted fault layer.
pub struct FaultyFile {
    pub file: File,
    pub plan: Arc<FaultPlan>,
}

impl SessionFile for FaultyFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut s = self.plan.state.lock().unwrap();
        s.writes += 1;
        if s.hold {
            s.blocked += 1;
            self.plan.released.notify_all();
            while s.hold {
                s = self.plan.released.wait(s).unwrap();
            }
            s.blocked -= 1;
        }
        if s.fail_next_write {
            s.fail_next_write = false;
            return Err(io::Error::from_raw_os_error(libc::EIO));
        }
        let n = s.writes;
        match s.fail_write {
            Some((k, Fault::Errno(errno))) if k == n => Err(io::Error::from_raw_os_error(errno)),
            Some((k, Fault::ShortThenEio)) if k == n => {
                s.fail_next_write = true;
                let half = buf.len() / 2;
                io::Write::write(&mut self.file, &buf[..half])
            }
            Some((k, Fault::AfterWriteEio)) if k == n => {
                io::Write::write_all(&mut self.file, buf)?;
                Err(io::Error::from_raw_os_error(libc::EIO))
            }
            _ => io::Write::write(&mut self.file, buf),
        }
    }

    fn sync(&mut self) -> io::Result<()> {
        let mut s = self.plan.state.lock().unwrap();
        s.syncs += 1;
        if s.fail_sync == Some(s.syncs) {
            return Err(io::Error::from_raw_os_error(libc::EIO));
        }
        drop(s);
        self.file.sync_data()
    }
}

/// Opens `path` with every write going through `plan`.
pub fn open_faulty(path: &Path, plan: &Arc<FaultPlan>) -> (session::Store, session::OpenReport) {
    open_faulty_with(path, plan, &session::JsonlOptions::default())
}

/// [`open_faulty`] with options.
pub fn open_faulty_with(
    path: &Path,
    plan: &Arc<FaultPlan>,
    options: &session::JsonlOptions,
) -> (session::Store, session::OpenReport) {
    let plan = Arc::clone(plan);
    session::Store::open_jsonl_with_options_and_io(path, options, move |file| {
        Box::new(FaultyFile { file, plan })
    })
    .expect("open")
}

/// The ids of a list of entries.
pub fn ids(entries: &[session::Entry]) -> Vec<&str> {
    entries.iter().map(|e| e.id()).collect()
}

/// Appends, from `threads` threads at once, a chain of `per_thread` user entries
/// `t{t}-{i}` each, the first a child of `root` (or a root). After each append,
/// `also(store, t, i, id)` runs on the same thread (for attempts that must fail alone).
/// Returns every receipt.
pub fn append_chains(
    store: &session::Store,
    threads: usize,
    per_thread: usize,
    root: Option<&str>,
    also: impl Fn(&session::Store, usize, usize, &str) + Sync,
) -> Vec<session::Receipt> {
    let barrier = std::sync::Barrier::new(threads);
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let (barrier, also) = (&barrier, &also);
                s.spawn(move || {
                    barrier.wait();
                    let mut receipts = Vec::new();
                    let mut parent = root.map(str::to_owned);
                    for i in 0..per_thread {
                        let id = format!("t{t}-{i}");
                        receipts.push(
                            store
                                .append(user(&id, parent.as_deref(), "x"))
                                .expect("append"),
                        );
                        also(store, t, i, &id);
                        parent = Some(id);
                    }
                    receipts
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("thread"))
            .collect()
    })
}

/// Asserts that the file at `path` holds exactly `count` lines, each an entry, and that
/// each receipt's `seq` is its entry's line index: file order is commit order.
pub fn assert_file_order_is_seq_order(path: &Path, receipts: &[session::Receipt], count: usize) {
    let text = String::from_utf8(read_file(path)).expect("UTF-8");
    let file_ids: Vec<String> = text
        .lines()
        .map(|l| {
            session::parse_entry(l)
                .expect("every line parses")
                .id()
                .to_owned()
        })
        .collect();
    assert_eq!(file_ids.len(), count);
    for r in receipts {
        assert_eq!(file_ids[r.seq as usize], r.id, "file order = seq order");
    }
}
