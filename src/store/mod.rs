//! Stores: an append-only tree of entries in memory, in a JSONL file (docs/contract.md
//! §3) or in a PostgreSQL database (§14).
//!
//! One [`Store`] type serves the three. `append` takes its snapshot at the moment of the
//! call (validate, copy, and for a file serialise the one fixed line), then joins the
//! store's FIFO; in its turn it checks the state, the id and the parent, writes the
//! line with one append, and only then records the id. Reads join the same FIFO, so
//! they wait for every append that arrived before them, and return copies.
//!
//! Guarantees of the JSONL store, and their limits: one writer per file, enforced by
//! an advisory lock by default ([`JsonlOptions::lock`]); a completed append means the
//! OS accepted the bytes, or with [`Durability::Fsync`] that they are on stable
//! storage. After every successful append the old bytes of the file are a prefix of
//! the new ones. The library never truncates or rewrites a file by itself: a file with
//! an unterminated tail opens as `needs_repair` and refuses appends until the caller
//! runs [`crate::repair_jsonl`].

mod fifo;
mod file;
mod fuzz;
mod index;
mod jsonl;
mod lock;
mod log;
mod nav;
mod pg;
mod queries;
mod reading;
mod replay;

use std::fs::File;
use std::path::Path;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use std::cell::RefCell;

use crate::entry::{Body, Entry, EntryParser, Facts, ParseFault, ParseOptions};
use crate::error::{EntryError, Error, IoFailure, Warning};
use crate::json::Object;
use crate::nav::Label;
use crate::recover::MAX_LINE_BYTES;
use crate::tree::checks;

pub use file::SessionFile;
pub(crate) use file::io_error;
#[cfg(feature = "search")]
pub(crate) use file::mode_like;
pub(crate) use file::sync_dir;
pub(crate) use file::{create_sidecar, sidecar_name, sync, write_all};
pub use fuzz::{fuzz_index, index_checksum, reseal_index};
pub use index::{index_path, remove_index};
pub use jsonl::{Durability, JsonlOptions, Verify};
pub(crate) use jsonl::{open_regular, open_regular_with};
pub(crate) use lock::lock;

/// A function of an entry (its JSON and facts) giving the JSON written for it, which
/// may borrow from it (the view's redaction; the view also reads the facts for the
/// page's outline of the tree).
pub(crate) type MapEntry<'f> =
    dyn for<'a> Fn(crate::tree::PathEntry<'a>) -> std::borrow::Cow<'a, [u8]> + 'f;
use pg::PgBackend;
/// What `crate::copy` needs of the PostgreSQL store: the session id's check and the
/// copy of a whole session in one transaction.
pub(crate) mod pg_copy {
    pub(crate) use super::pg::{check_session_id, copy_in};
}
pub use pg::{PgListOptions, PgOptions, PgSessionInfo, list_pg_sessions, pg_sessions_json};
pub use replay::{Diagnostic, Problem};
pub(crate) use replay::{Piece, Reader, Replay};

use fifo::{Delivered, Entered, Fifo, Turn};
use index::Fault;
use jsonl::FileSink;
use log::Log;

/// The most appends one group commit takes (`Durability::FsyncBatch`).
const MAX_GROUP: usize = 256;

/// The state of a store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum State {
    /// Appends are accepted (or, for a read-only store, the file is clean).
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
        Object::new()
            .string("id", &self.id)
            .number("seq", self.seq)
            .finish()
    }
}

/// What opening a JSONL file found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpenReport {
    /// `Ready`, or `NeedsRepair` when the file has an unterminated tail.
    pub state: State,
    pub warnings: Vec<Warning>,
    /// Salvage only: the lines that could not be loaded and the orphans.
    pub diagnostics: Vec<Diagnostic>,
    /// Whether this is a salvage open.
    pub salvage: bool,
}

impl OpenReport {
    /// `{"state":"ready"|"needs_repair","warnings":[…]}`; a salvage open adds
    /// `"complete":bool,"diagnostics":[…]`.
    pub fn to_json(&self) -> String {
        let object = Object::new()
            .string("state", self.state.as_str())
            .raw("warnings", &warnings_json(&self.warnings));
        let object = if self.salvage {
            salvage_members(object, &self.diagnostics)
        } else {
            object
        };
        object.finish()
    }
}

/// Everything a store holds, read in one turn.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Snapshot {
    pub state: State,
    pub entries: Vec<Entry>,
    pub warnings: Vec<Warning>,
    /// Salvage only: the lines that could not be loaded and the orphans.
    pub diagnostics: Vec<Diagnostic>,
}

/// What the HTML view shows, read from the store in one turn.
pub(crate) struct ViewSnapshot {
    /// Every committed entry, a JSON array in commit order.
    pub entries_json: Vec<u8>,
    pub labels: Vec<Label>,
    /// The id of the last committed entry (the latest leaf), `None` when empty.
    pub latest: Option<String>,
}

/// `[…]` of warnings in their JSON form.
pub fn warnings_json(warnings: &[Warning]) -> String {
    crate::json::array(warnings.iter().map(Warning::to_json))
}

/// `[…]` of salvage diagnostics in their JSON form.
fn diagnostics_json(diagnostics: &[Diagnostic]) -> String {
    crate::json::array(diagnostics.iter().map(Diagnostic::to_json))
}

/// `"complete":…,"diagnostics":[…]`, the members a salvage store adds.
fn salvage_members(object: Object, diagnostics: &[Diagnostic]) -> Object {
    object
        .boolean("complete", diagnostics.is_empty())
        .raw("diagnostics", &diagnostics_json(diagnostics))
}

/// An append waiting in the FIFO: the snapshot taken at call time.
struct PendingAppend {
    /// The entry's canonical JSON and `\n`: the exact line a file store writes.
    line: Vec<u8>,
    facts: Facts,
}

impl PendingAppend {
    fn json(&self) -> &[u8] {
        &self.line[..self.line.len() - 1]
    }
}

thread_local! {
    /// Appends parse on the caller's thread; each thread reuses one parser's buffers.
    static PARSER: RefCell<EntryParser> = RefCell::new(EntryParser::default());
}

enum Op {
    Append(PendingAppend),
    Read,
}

type AppendResult = Result<Receipt, Error>;

/// Where a store's entries live and what writes them: the one place where the store's
/// medium is told apart.
enum Backend {
    /// In memory only.
    Memory,
    /// A JSONL file opened without a writer: read-only, or a salvage open.
    ReadOnly { salvage: bool },
    /// A JSONL file and its writer.
    File(FileSink),
    /// A session of a PostgreSQL database.
    Pg(PgBackend),
}

struct Inner {
    log: Log,
    backend: Backend,
    /// The failure that tainted the store, once one has.
    tainted: Option<Arc<IoFailure>>,
    /// What the open found; an unterminated tail makes the store `NeedsRepair`.
    warnings: Vec<Warning>,
    diagnostics: Vec<Diagnostic>,
}

impl Inner {
    fn state(&self) -> State {
        if self.tainted.is_some() {
            State::Tainted
        } else if self.warnings.is_empty() {
            State::Ready
        } else {
            State::NeedsRepair
        }
    }

    /// Fails with [`Error::Tainted`] on a tainted store.
    fn check_tainted(&self) -> Result<(), Error> {
        match &self.tainted {
            Some(cause) => Err(Error::Tainted {
                cause: Arc::clone(cause),
            }),
            None => Ok(()),
        }
    }
}

/// An append-only tree of session entries: in memory, or backed by a JSONL file or by
/// a session in a PostgreSQL database.
///
/// Every method may be called from any thread, concurrently: appends commit in the
/// FIFO order in which they arrive, and reads wait for the appends that arrived before
/// them.
pub struct Store {
    fifo: Fifo<Op, AppendResult>,
    inner: Mutex<Inner>,
    /// A copy of the state, readable without waiting for the FIFO.
    state: AtomicU8,
    /// Appends are refused at call time: a file opened read-only or for salvage, or a
    /// PostgreSQL server that was a standby at open. Fixed at open and kept outside the
    /// mutex, as is `bounded_lines`: a call must join the FIFO without waiting for the
    /// write in flight.
    read_only: bool,
    /// Lines are read back (every store but memory): an entry longer than a line may
    /// be is refused at call time.
    bounded_lines: bool,
    /// The process that opened the store. After `fork`, the child's copy shares the
    /// parent's file (and lock) and a snapshot of its locks: it must not be used.
    owner: u32,
    /// How appends parse their entry (`strictRoles`).
    parse: ParseOptions,
}

/// Options of a memory store, as JSON: `{"strictRoles":bool}`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct MemoryOptions {
    /// Reject extension roles and blocks with `invalid_entry` (docs/contract.md §6.1).
    pub strict_roles: bool,
}

impl MemoryOptions {
    /// Options from a JSON object; unknown members are [`Error::InvalidOption`].
    pub fn from_json(text: &str) -> Result<MemoryOptions, Error> {
        crate::options::from_json(text)
    }
}

impl Store {
    /// A new, empty store in memory.
    pub fn memory() -> Store {
        Store::memory_with(&MemoryOptions::default())
    }

    /// A new, empty store in memory, with options.
    pub fn memory_with(options: &MemoryOptions) -> Store {
        let mut store = Store::new(Log::default(), Backend::Memory, Vec::new(), Vec::new());
        store.parse = ParseOptions {
            strict_roles: options.strict_roles,
        };
        store
    }

    /// Opens the JSONL file at `path` with the default [`JsonlOptions`]: created if it
    /// is missing (not its folders), locked against a second writer, no fsync.
    ///
    /// Recovers the committed lines and replays the tree rules in file order: ids
    /// unique, every parent on an earlier committed line. Fails with
    /// [`Error::CorruptLine`], [`Error::DuplicateId`] or [`Error::MissingParent`]
    /// naming the line, [`Error::Locked`], or [`Error::Io`]. A file with an
    /// unterminated tail opens in [`State::NeedsRepair`].
    pub fn open_jsonl(path: impl AsRef<Path>) -> Result<(Store, OpenReport), Error> {
        Store::open_jsonl_with(path, &JsonlOptions::default())
    }

    /// [`Store::open_jsonl`] with options.
    pub fn open_jsonl_with(
        path: impl AsRef<Path>,
        options: &JsonlOptions,
    ) -> Result<(Store, OpenReport), Error> {
        Store::open_jsonl_with_options_and_io(path, options, |file| Box::new(file))
    }

    /// [`Store::open_jsonl`], with the writes and syncs after open going through the
    /// [`SessionFile`] that `wrap` makes of the opened file (to inject failures).
    pub fn open_jsonl_with_io(
        path: impl AsRef<Path>,
        wrap: impl FnOnce(File) -> Box<dyn SessionFile>,
    ) -> Result<(Store, OpenReport), Error> {
        Store::open_jsonl_with_options_and_io(path, &JsonlOptions::default(), wrap)
    }

    /// [`Store::open_jsonl_with`] and [`Store::open_jsonl_with_io`] together.
    pub fn open_jsonl_with_options_and_io(
        path: impl AsRef<Path>,
        options: &JsonlOptions,
        wrap: impl FnOnce(File) -> Box<dyn SessionFile>,
    ) -> Result<(Store, OpenReport), Error> {
        let opened = jsonl::open(path.as_ref(), options, wrap)?;
        let backend = match opened.sink {
            Some(sink) => Backend::File(sink),
            None => Backend::ReadOnly {
                salvage: options.salvage,
            },
        };
        let report = OpenReport {
            state: if opened.warnings.is_empty() {
                State::Ready
            } else {
                State::NeedsRepair
            },
            warnings: opened.warnings.clone(),
            diagnostics: opened.diagnostics.clone(),
            salvage: options.salvage,
        };
        let mut store = Store::new(opened.log, backend, opened.warnings, opened.diagnostics);
        store.parse = options.parse();
        Ok((store, report))
    }

    fn new(
        log: Log,
        backend: Backend,
        warnings: Vec<Warning>,
        diagnostics: Vec<Diagnostic>,
    ) -> Store {
        let read_only = match &backend {
            Backend::Memory | Backend::File(_) => false,
            Backend::ReadOnly { .. } => true,
            Backend::Pg(pg) => pg.read_only(),
        };
        let bounded_lines = !matches!(backend, Backend::Memory);
        let inner = Inner {
            log,
            backend,
            tainted: None,
            warnings,
            diagnostics,
        };
        Store {
            state: AtomicU8::new(inner.state().to_u8()),
            fifo: Fifo::new(),
            inner: Mutex::new(inner),
            read_only,
            bounded_lines,
            owner: std::process::id(),
            parse: ParseOptions::default(),
        }
    }

    /// The store's state, without waiting for queued operations.
    pub fn state(&self) -> State {
        State::from_u8(self.state.load(Ordering::Acquire))
    }

    /// Whether appends are refused because the store was opened read-only.
    pub fn is_read_only(&self) -> bool {
        self.read_only
    }

    /// Calls from a forked child would write through the parent's file and lock, and
    /// could find the FIFO's locks held by threads that do not exist in the child.
    fn check_process(&self) -> Result<(), Error> {
        let current = std::process::id();
        if current == self.owner {
            Ok(())
        } else {
            Err(Error::WrongProcess {
                owner: self.owner,
                current,
            })
        }
    }

    /// Parses `entry_json` now (see [`parse_entry`]) and appends it in FIFO order.
    ///
    /// Fails at call time with [`Error::InvalidJson`] or [`Error::InvalidEntry`]
    /// (the store stays as it was), [`Error::ReadOnly`] or [`Error::WrongProcess`]; in
    /// its turn with [`Error::NeedsRepair`], [`Error::DuplicateId`],
    /// [`Error::MissingParent`], [`Error::Io`] (the write or sync failed, or the file
    /// changed under the writer; the store is tainted from now on) or
    /// [`Error::Tainted`].
    pub fn append(&self, entry_json: impl AsRef<[u8]>) -> Result<Receipt, Error> {
        self.check_process()?;
        let pending = PARSER.with(|parser| match parser.try_borrow_mut() {
            Ok(mut parser) => {
                parser.set_options(self.parse);
                let (json, facts) = parser
                    .parse(entry_json.as_ref())
                    .map_err(ParseFault::into_error)?;
                self.snapshot(json, facts)
            }
            // Only reachable if parsing re-entered append on this thread.
            Err(_) => {
                let entry = crate::entry::parse_entry_with(entry_json, self.parse)?;
                self.snapshot(entry.json().as_bytes(), entry.facts().clone())
            }
        })?;
        self.enqueue(pending)
    }

    /// Appends an already parsed entry, as [`Store::append`] does.
    pub fn append_entry(&self, entry: Entry) -> Result<Receipt, Error> {
        self.check_process()?;
        let pending = self.snapshot(entry.json().as_bytes(), entry.facts().clone())?;
        self.enqueue(pending)
    }

    fn enqueue(&self, pending: PendingAppend) -> Result<Receipt, Error> {
        match self.fifo.enter(Op::Append(pending)) {
            Entered::Done(Delivered::Result(result)) => result,
            Entered::Done(Delivered::Abandoned) => Err(abandoned()),
            Entered::Turn(turn, Op::Append(pending)) => self.run_appends(turn, pending),
            Entered::Turn(_, Op::Read) => Err(Error::internal("an append was handed a read")),
        }
    }

    /// Fixes what will be committed: the entry's one line (`json + "\n"`), taken at
    /// the moment of the call so that later changes by the caller cannot alter it.
    fn snapshot(&self, json: &[u8], facts: Facts) -> Result<PendingAppend, Error> {
        if self.is_read_only() {
            return Err(Error::ReadOnly);
        }
        if json.len() > MAX_LINE_BYTES && self.bounded_lines {
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
        line.extend_from_slice(json);
        line.push(b'\n');
        Ok(PendingAppend { line, facts })
    }

    /// Runs this turn's append and, with group commit, the appends queued behind it:
    /// after each round of writes it takes the appends that arrived meanwhile, so that
    /// everything queued while this turn was writing shares its one sync.
    fn run_appends(
        &self,
        mut turn: Turn<'_, Op, AppendResult>,
        first: PendingAppend,
    ) -> AppendResult {
        let mut results = match self.lock() {
            Ok(mut inner) => {
                let group_commit = matches!(&inner.backend, Backend::File(sink)
                    if sink.durability() == Durability::FsyncBatch);
                let mut results = vec![self.commit(&mut inner, first)];
                while group_commit && results.len() < MAX_GROUP {
                    let more = turn.take_following(MAX_GROUP - results.len(), |op| {
                        matches!(op, Op::Append(_))
                    });
                    if more.is_empty() {
                        break;
                    }
                    for op in more {
                        results.push(match op {
                            Op::Append(pending) => self.commit(&mut inner, pending),
                            Op::Read => Err(Error::internal("a read was taken into a group")),
                        });
                    }
                }
                if group_commit {
                    self.sync_group(&mut inner, &mut results);
                }
                results
            }
            Err(e) => vec![Err(e)],
        };
        let own = results.remove(0);
        turn.finish(results);
        own
    }

    /// Group commit: one sync makes every append of the group durable. A failed write
    /// or sync fails every append of the group that is not yet durable.
    fn sync_group(&self, inner: &mut Inner, results: &mut [AppendResult]) {
        if !results.iter().any(|r| r.is_ok()) {
            return;
        }
        let ready = inner.state() == State::Ready;
        let synced = match &mut inner.backend {
            Backend::File(sink) if ready => sink.sync(),
            // A write in this group failed: nothing written before it is durable.
            _ => Ok(()),
        };
        if let Err(failure) = synced {
            let failure = self.taint(inner, failure);
            // The first written append reports the failure; the others its taint.
            if let Some(first) = results.iter_mut().find(|r| r.is_ok()) {
                *first = Err(Error::Io(Arc::clone(&failure)));
            }
        }
        if let Some(cause) = &inner.tainted {
            for result in results.iter_mut().filter(|r| r.is_ok()) {
                *result = Err(Error::Tainted {
                    cause: Arc::clone(cause),
                });
            }
        }
    }

    /// One append in its turn: state, tree rules, file identity, write, record.
    fn commit(&self, inner: &mut Inner, pending: PendingAppend) -> AppendResult {
        inner.check_tainted()?;
        if !inner.warnings.is_empty() {
            return Err(Error::NeedsRepair {
                warnings: inner.warnings.clone(),
            });
        }
        if let Backend::Pg(_) = inner.backend {
            return self.commit_pg(inner, pending);
        }
        let json = pending.json();
        let (id, parent_id) = (pending.facts.id(json), pending.facts.parent_id(json));
        let check = |inner: &Inner| {
            let admitted = inner.log.admit(id, parent_id, None)?;
            check_against_tree(&inner.log, json, &pending.facts, admitted.parent)?;
            Ok(admitted)
        };
        let admitted = self.with_fallback(inner, check)?;
        let id = id.to_owned();
        if let Backend::File(sink) = &mut inner.backend {
            let written = sink
                .check_identity()
                .and_then(|()| sink.write(&pending.line));
            let written = written.and_then(|()| match sink.durability() {
                Durability::Fsync => sink.sync(),
                // Group commit syncs once for the whole group; none never syncs.
                Durability::FsyncBatch | Durability::None => Ok(()),
            });
            if let Err(failure) = written {
                return Err(Error::Io(self.taint(inner, failure)));
            }
        }
        let PendingAppend { line, facts } = pending;
        let seq = inner.log.push(&line[..line.len() - 1], facts, admitted)?;
        if inner.log.take_fault().is_some() {
            // The line is in the file: a replay of the file has it. If the replay fails
            // too, the next operation tries again.
            let _ = self.fall_back(inner);
        }
        if let Backend::File(sink) = &mut inner.backend
            && sink.index_due()
        {
            sink.write_index(&inner.log);
        }
        Ok(Receipt { id, seq })
    }

    /// From now on every operation fails with `failure`, and no I/O is done.
    fn taint(&self, inner: &mut Inner, failure: IoFailure) -> Arc<IoFailure> {
        let failure = Arc::new(failure);
        inner.tainted = Some(Arc::clone(&failure));
        self.state.store(State::Tainted.to_u8(), Ordering::Release);
        failure
    }

    /// Runs `f` on the committed state in FIFO order, after every earlier append.
    /// Fails with [`Error::Tainted`] on a tainted store.
    fn read_with<R>(&self, f: impl FnMut(&Inner) -> Result<R, Error>) -> Result<R, Error> {
        self.check_process()?;
        let turn = match self.fifo.enter(Op::Read) {
            Entered::Turn(turn, _) => turn,
            Entered::Done(_) => return Err(Error::internal("a read was run by another operation")),
        };
        let result = self.lock().and_then(|mut inner| {
            inner.check_tainted()?;
            inner.log.trim();
            self.catch_up(&mut inner)?;
            self.with_fallback(&mut inner, f)
        });
        turn.finish(Vec::new());
        result
    }

    /// Runs `f`, then reports what went wrong reading through the session index: a
    /// damaged line is its error (`corrupt_line`, without tainting the store); a
    /// damaged index means the store replays its file, as an open without the index
    /// would, and runs `f` again.
    fn with_fallback<R>(
        &self,
        inner: &mut Inner,
        mut f: impl FnMut(&Inner) -> Result<R, Error>,
    ) -> Result<R, Error> {
        let result = f(inner);
        match inner.log.take_fault() {
            None => result,
            Some(Fault::Error(e)) => Err(e),
            Some(Fault::Index) => {
                self.fall_back(inner)?;
                f(inner)
            }
        }
    }

    /// Replaces the log read through the session index with a replay of the whole
    /// file (or of every row of a PostgreSQL session), as an open without the index
    /// does.
    fn fall_back(&self, inner: &mut Inner) -> Result<(), Error> {
        if let Backend::Pg(_) = inner.backend {
            return self.fall_back_pg(inner);
        }
        let Some(base) = inner.log.base() else {
            return Err(Error::internal("no session index to fall back from"));
        };
        let path = base.path().to_owned();
        let file = base
            .file()
            .ok_or_else(|| Error::internal("the session file was not kept"))?
            .try_clone()
            .map_err(|e| io_error(crate::error::IoOp::Read, &path, &e))?;
        let mut replay = Replay::new(&file, false).with_parse_options(self.parse);
        replay.run(&file, &path)?;
        let Replay { log, scanner, .. } = replay;
        inner.log = log;
        inner.warnings = scanner.finish().into_iter().collect();
        if let Backend::File(sink) = &mut inner.backend {
            sink.forget_index();
        }
        self.state.store(inner.state().to_u8(), Ordering::Release);
        Ok(())
    }

    fn lock(&self) -> Result<MutexGuard<'_, Inner>, Error> {
        self.inner.lock().map_err(|_| {
            Error::internal("the store was poisoned by a panic in an earlier operation")
        })
    }
}

impl Drop for Store {
    /// A writer brings its session index up to date at close, best effort: close
    /// reports nothing, and a failure here only costs the next open a longer replay.
    fn drop(&mut self) {
        if std::process::id() != self.owner {
            return;
        }
        let Ok(inner) = self.inner.get_mut() else {
            return;
        };
        if inner.tainted.is_none()
            && let Backend::File(sink) = &mut inner.backend
        {
            sink.write_index(&inner.log);
        }
    }
}

/// The append-time rules that depend on the committed tree (docs/contract.md §6.2, §6.3): a
/// compaction's cut, walked up from its parent (cost: the distance walked), and the
/// entry a label or a resume-leaf record names, which must be committed.
fn check_against_tree(log: &Log, json: &[u8], facts: &Facts, parent: u32) -> Result<(), Error> {
    match &facts.body {
        Body::Compaction { first_kept, .. } => checks::check_compaction(
            facts.id(json),
            first_kept.as_ref().map(|t| t.of(json)),
            log.ancestors(parent),
            &|id| log.find(id).is_some(),
        ),
        Body::Metadata {
            target: Some(target),
            ..
        } => {
            let target = target.of(json);
            checks::target_is_committed(target, log.find(target).is_some())
        }
        _ => Ok(()),
    }
}

fn abandoned() -> Error {
    Error::internal("the operation was abandoned by a panic in the operation ahead of it")
}
