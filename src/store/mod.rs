//! Stores: an append-only tree of entries in memory or in a JSONL file (SPEC §3).
//!
//! One [`Store`] type serves both. `append` takes its snapshot at the moment of the
//! call (validate, copy, and for a file serialise the one fixed line), then joins the
//! store's FIFO; in its turn it checks the state, the id and the parent, writes the
//! line with one append, and only then records the id. Reads join the same FIFO, so
//! they wait for every append that arrived before them, and return copies.
//!
//! Guarantees of the JSONL store, and their limits: one writer instance per file; a
//! completed append means the OS accepted the bytes (no fsync); no cross-process lock.
//! After every successful append the old bytes of the file are a prefix of the new
//! ones. The library never truncates or rewrites a file by itself: a file with an
//! unterminated tail opens as `needs_repair` and refuses appends.

mod fifo;
mod file;
mod log;

use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::path::Path;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::entry::{Entry, EntryParser, Message, parse_entry};
use crate::error::{EntryError, Error, IoFailure, IoOp, Warning};
use crate::json;
use crate::recover::{LineScanner, MAX_LINE_BYTES};

pub use file::SessionFile;

use fifo::{Delivered, Entered, Fifo, Turn};
use log::Log;

/// The condition of a store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    /// Appends are accepted.
    Ready,
    /// The file has an unterminated tail: reads return the committed prefix and the
    /// warning; appends are refused without touching the file.
    NeedsRepair,
    /// A write failed and may have left half a line: every later operation fails with
    /// that original error and performs no I/O. Reopen the file to re-check the disk.
    Tainted,
}

impl State {
    /// `ready`, `needs_repair` or `tainted`.
    pub fn as_str(self) -> &'static str {
        match self {
            State::Ready => "ready",
            State::NeedsRepair => "needs_repair",
            State::Tainted => "tainted",
        }
    }

    fn from_u8(v: u8) -> State {
        match v {
            0 => State::Ready,
            1 => State::NeedsRepair,
            _ => State::Tainted,
        }
    }

    fn to_u8(self) -> u8 {
        match self {
            State::Ready => 0,
            State::NeedsRepair => 1,
            State::Tainted => 2,
        }
    }
}

/// The proof of a committed append.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Receipt {
    /// The entry's id.
    pub id: String,
    /// The entry's 0-based position among the store's committed entries, counting
    /// those already in the file at open; a failed append uses no number.
    pub seq: u64,
}

impl Receipt {
    /// `{"id":"…","seq":N}`.
    pub fn to_json(&self) -> String {
        let mut out = String::from("{\"id\":");
        json::push_string(&mut out, &self.id);
        out.push_str(&format!(",\"seq\":{}}}", self.seq));
        out
    }
}

/// What opening a JSONL file found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpenReport {
    /// `Ready`, or `NeedsRepair` when the file has an unterminated tail.
    pub state: State,
    pub warnings: Vec<Warning>,
}

impl OpenReport {
    /// `{"state":"ready"|"needs_repair","warnings":[…]}`.
    pub fn to_json(&self) -> String {
        format!(
            "{{\"state\":\"{}\",\"warnings\":{}}}",
            self.state.as_str(),
            warnings_json(&self.warnings)
        )
    }
}

/// Everything a store holds, read in one turn.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Snapshot {
    pub state: State,
    pub entries: Vec<Entry>,
    pub warnings: Vec<Warning>,
}

/// `[…]` of warnings in their JSON form.
pub fn warnings_json(warnings: &[Warning]) -> String {
    let items: Vec<String> = warnings.iter().map(Warning::to_json).collect();
    json::array(items.iter().map(String::as_str))
}

/// An append waiting in the FIFO: the snapshot taken at call time.
struct PendingAppend {
    entry: Entry,
    /// For a file store, the one line (`json + "\n"`) fixed at call time.
    line: Option<Vec<u8>>,
}

enum Op {
    Append(PendingAppend),
    Read,
}

type AppendResult = Result<Receipt, Error>;

enum Sink {
    Memory,
    File(Box<dyn SessionFile>),
}

enum Condition {
    Ready,
    NeedsRepair,
    Tainted(Arc<IoFailure>),
}

struct Inner {
    log: Log,
    sink: Sink,
    condition: Condition,
    warnings: Vec<Warning>,
}

/// An append-only tree of session entries, in memory or backed by a JSONL file.
///
/// Every method may be called from any thread, concurrently: appends commit in the
/// FIFO order in which they arrive, and reads wait for the appends that arrived before
/// them.
pub struct Store {
    fifo: Fifo<Op, AppendResult>,
    inner: Mutex<Inner>,
    /// A copy of the condition, readable without waiting for the FIFO.
    state: AtomicU8,
    /// Whether appends write lines to a file. Fixed at open, and kept outside the
    /// mutex: a call must join the FIFO without waiting for the write in flight.
    writes_lines: bool,
}

impl Store {
    /// A new, empty store in memory.
    pub fn memory() -> Store {
        Store::new(Log::default(), Sink::Memory, Condition::Ready, Vec::new())
    }

    /// Opens the JSONL file at `path`, creating it if it is missing (not its folders).
    ///
    /// Recovers the committed lines and replays the tree rules in file order: ids
    /// unique, every parent on an earlier committed line. Fails with
    /// [`Error::CorruptLine`], [`Error::DuplicateId`] or [`Error::MissingParent`]
    /// naming the line, or [`Error::Io`]. A file with an unterminated tail opens in
    /// [`State::NeedsRepair`].
    pub fn open_jsonl(path: impl AsRef<Path>) -> Result<(Store, OpenReport), Error> {
        Store::open_jsonl_with_io(path, |file| Box::new(file))
    }

    /// [`Store::open_jsonl`], with the writes and syncs after open going through the
    /// [`SessionFile`] that `wrap` makes of the opened file (to inject failures).
    pub fn open_jsonl_with_io(
        path: impl AsRef<Path>,
        wrap: impl FnOnce(File) -> Box<dyn SessionFile>,
    ) -> Result<(Store, OpenReport), Error> {
        let path = path.as_ref();
        let file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .open(path)
            .map_err(|e| io_error(IoOp::Open, path, &e))?;
        let (log, warnings) = replay(&file, path)?;
        let (state, condition) = if warnings.is_empty() {
            (State::Ready, Condition::Ready)
        } else {
            (State::NeedsRepair, Condition::NeedsRepair)
        };
        let store = Store::new(log, Sink::File(wrap(file)), condition, warnings.clone());
        Ok((store, OpenReport { state, warnings }))
    }

    fn new(log: Log, sink: Sink, condition: Condition, warnings: Vec<Warning>) -> Store {
        let state = condition_state(&condition);
        let writes_lines = matches!(sink, Sink::File(_));
        Store {
            writes_lines,
            fifo: Fifo::new(),
            inner: Mutex::new(Inner {
                log,
                sink,
                condition,
                warnings,
            }),
            state: AtomicU8::new(state.to_u8()),
        }
    }

    /// The store's state, without waiting for queued operations.
    pub fn state(&self) -> State {
        State::from_u8(self.state.load(Ordering::Acquire))
    }

    /// Parses `entry_json` now (see [`parse_entry`]) and appends it in FIFO order.
    ///
    /// Fails at call time with [`Error::InvalidJson`] or [`Error::InvalidEntry`]
    /// (the store stays as it was); in its turn with [`Error::NeedsRepair`],
    /// [`Error::DuplicateId`], [`Error::MissingParent`], [`Error::Io`] (the write
    /// failed; the store is tainted from now on) or [`Error::Tainted`].
    pub fn append(&self, entry_json: impl AsRef<[u8]>) -> Result<Receipt, Error> {
        self.append_entry(parse_entry(entry_json)?)
    }

    /// Appends an already parsed entry, as [`Store::append`] does.
    pub fn append_entry(&self, entry: Entry) -> Result<Receipt, Error> {
        let pending = self.snapshot(entry)?;
        match self.fifo.enter(Op::Append(pending)) {
            Entered::Done(Delivered::Result(result)) => result,
            Entered::Done(Delivered::Abandoned) => Err(abandoned()),
            Entered::Turn(turn, Op::Append(pending)) => self.run_append(turn, pending),
            Entered::Turn(_, Op::Read) => Err(Error::internal("an append was handed a read")),
        }
    }

    /// Fixes what will be committed: for a file store, the exact line.
    fn snapshot(&self, entry: Entry) -> Result<PendingAppend, Error> {
        if !self.writes_lines {
            return Ok(PendingAppend { entry, line: None });
        }
        let json = entry.json();
        if json.len() > MAX_LINE_BYTES {
            // Recovery would call such a line corrupt: never write what cannot be read back.
            return Err(Error::InvalidEntry(EntryError {
                pointer: String::new(),
                message: format!(
                    "the entry is {} bytes; a line may hold at most {MAX_LINE_BYTES}",
                    json.len()
                ),
            }));
        }
        let mut line = Vec::with_capacity(json.len() + 1);
        line.extend_from_slice(json.as_bytes());
        line.push(b'\n');
        Ok(PendingAppend {
            entry,
            line: Some(line),
        })
    }

    fn run_append(&self, turn: Turn<'_, Op, AppendResult>, pending: PendingAppend) -> AppendResult {
        let result = match self.lock() {
            Ok(mut inner) => self.commit(&mut inner, pending),
            Err(e) => Err(e),
        };
        turn.finish(Vec::new());
        result
    }

    /// One append in its turn: state, tree rules, write, record.
    fn commit(&self, inner: &mut Inner, pending: PendingAppend) -> AppendResult {
        match &inner.condition {
            Condition::Ready => {}
            Condition::NeedsRepair => {
                return Err(Error::NeedsRepair {
                    warnings: inner.warnings.clone(),
                });
            }
            Condition::Tainted(cause) => {
                return Err(Error::Tainted {
                    cause: Arc::clone(cause),
                });
            }
        }
        let entry = &pending.entry;
        let parent = inner.log.admit(entry.id(), entry.parent_id(), None)?;
        if let (Sink::File(file), Some(line)) = (&mut inner.sink, &pending.line)
            && let Err(e) = file::write_all(file.as_mut(), line)
        {
            let failure = Arc::new(IoFailure::new(IoOp::Write, "appending a line", &e));
            inner.condition = Condition::Tainted(Arc::clone(&failure));
            self.state.store(State::Tainted.to_u8(), Ordering::Release);
            return Err(Error::Io(failure));
        }
        let seq = inner
            .log
            .push(entry.json(), entry.facts().clone(), parent)?;
        Ok(Receipt {
            id: entry.id().to_owned(),
            seq,
        })
    }

    /// Runs `f` on the committed state in FIFO order, after every earlier append.
    /// Fails with [`Error::Tainted`] on a tainted store.
    fn read_with<R>(&self, f: impl FnOnce(&Inner) -> Result<R, Error>) -> Result<R, Error> {
        let turn = match self.fifo.enter(Op::Read) {
            Entered::Turn(turn, _) => turn,
            Entered::Done(_) => return Err(Error::internal("a read was run by another operation")),
        };
        let result = self.lock().and_then(|inner| {
            if let Condition::Tainted(cause) = &inner.condition {
                return Err(Error::Tainted {
                    cause: Arc::clone(cause),
                });
            }
            f(&inner)
        });
        turn.finish(Vec::new());
        result
    }

    /// Copies of every committed entry, in commit order.
    pub fn entries(&self) -> Result<Vec<Entry>, Error> {
        self.read_with(|inner| Ok(inner.log.entries()))
    }

    /// State, committed entries and warnings, read in one turn.
    pub fn read(&self) -> Result<Snapshot, Error> {
        self.read_with(|inner| {
            Ok(Snapshot {
                state: condition_state(&inner.condition),
                entries: inner.log.entries(),
                warnings: inner.warnings.clone(),
            })
        })
    }

    /// The entries from the root to `leaf_id`, through the store's index: the cost
    /// grows with the path's length, not with the number of entries. Fails with
    /// [`Error::UnknownLeaf`] (or [`Error::Tainted`]).
    pub fn path_to(&self, leaf_id: &str) -> Result<Vec<Entry>, Error> {
        self.read_with(|inner| inner.log.path_entries(leaf_id))
    }

    /// The messages on the path to `leaf_id`, complete; metadata is skipped.
    pub fn messages_on_path(&self, leaf_id: &str) -> Result<Vec<Message>, Error> {
        self.read_with(|inner| {
            let path = inner.log.path_entries(leaf_id)?;
            Ok(path.iter().filter_map(Entry::message).collect())
        })
    }

    /// [`Store::entries`] as a JSON array.
    pub fn entries_json(&self) -> Result<String, Error> {
        self.read_with(|inner| Ok(json::array(inner.log.jsons())))
    }

    /// [`Store::read`] as `{"state":…,"entries":[…],"warnings":[…]}`.
    pub fn read_json(&self) -> Result<String, Error> {
        self.read_with(|inner| {
            let entries = json::array(inner.log.jsons());
            Ok(format!(
                "{{\"state\":\"{}\",\"entries\":{entries},\"warnings\":{}}}",
                condition_state(&inner.condition).as_str(),
                warnings_json(&inner.warnings)
            ))
        })
    }

    /// [`Store::path_to`] as a JSON array of entries.
    pub fn path_to_json(&self, leaf_id: &str) -> Result<String, Error> {
        self.read_with(|inner| {
            let path = inner.log.path_jsons(leaf_id)?;
            Ok(json::array(path.iter().copied()))
        })
    }

    /// [`Store::messages_on_path`] as a JSON array of messages.
    pub fn messages_on_path_json(&self, leaf_id: &str) -> Result<String, Error> {
        self.read_with(|inner| {
            let messages = inner.log.path_messages(leaf_id)?;
            Ok(json::array(messages.iter().copied()))
        })
    }

    /// Number of committed entries.
    pub fn len(&self) -> Result<usize, Error> {
        self.read_with(|inner| Ok(inner.log.len()))
    }

    /// Whether the store has no committed entries.
    pub fn is_empty(&self) -> Result<bool, Error> {
        Ok(self.len()? == 0)
    }

    fn lock(&self) -> Result<MutexGuard<'_, Inner>, Error> {
        self.inner.lock().map_err(|_| {
            Error::internal("the store was poisoned by a panic in an earlier operation")
        })
    }
}

fn condition_state(condition: &Condition) -> State {
    match condition {
        Condition::Ready => State::Ready,
        Condition::NeedsRepair => State::NeedsRepair,
        Condition::Tainted(_) => State::Tainted,
    }
}

fn abandoned() -> Error {
    Error::internal("the operation was abandoned by a panic in the operation ahead of it")
}

fn io_error(op: IoOp, path: &Path, e: &io::Error) -> Error {
    Error::Io(Arc::new(IoFailure::new(op, &path.display().to_string(), e)))
}

/// Reads the file from the start in fixed-size chunks, committing every line that
/// passes the entry and tree rules.
fn replay(file: &File, path: &Path) -> Result<(Log, Vec<Warning>), Error> {
    const CHUNK: usize = 1 << 20;
    // The canonical text is at most the file's size: reserve it once, so the arena
    // never reallocates (and never holds two copies) while a large file is read.
    let size = file.metadata().map(|m| m.len()).unwrap_or(0);
    let mut log = Log::with_capacity(usize::try_from(size).unwrap_or(0));
    let mut parser = EntryParser::default();
    let mut scanner = LineScanner::new(MAX_LINE_BYTES);
    let mut buf = vec![0u8; CHUNK];
    let mut reader = file;
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(io_error(IoOp::Read, path, &e)),
        };
        scanner.feed(&buf[..n], &mut |line, text| {
            let (json, facts) = parser.parse(text).map_err(|fault| fault.at_line(line))?;
            let parent = {
                let (id, parent_id) =
                    (facts.id.of(json), facts.parent.as_ref().map(|p| p.of(json)));
                log.admit(id, parent_id, Some(line))?
            };
            log.push(json, facts, parent)?;
            Ok(())
        })?;
    }
    Ok((log, scanner.finish().into_iter().collect()))
}
