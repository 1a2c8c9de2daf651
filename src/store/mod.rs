//! Stores: an append-only tree of entries in memory or in a JSONL file (docs/contract.md §3).
//!
//! One [`Store`] type serves both. `append` takes its snapshot at the moment of the
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

mod copy;
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
mod replay;

use std::fs::File;
use std::path::Path;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use std::cell::RefCell;

use crate::context::{self, Context, ContextOptions, Estimator};
use crate::entry::{Body, Entry, EntryParser, Facts, Message, ParseFault, ParseOptions};
use crate::error::{EntryError, Error, IoFailure, Warning};
use crate::json::Object;
use crate::nav::{Label, Leaves, Node, TreeOptions, TreePage, labels_json, nodes_json};
use crate::recover::MAX_LINE_BYTES;

pub use copy::{CopyOptions, CopyProgress};
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
pub use pg::{PgListOptions, PgOptions, PgSessionInfo, pg_sessions_json};
pub use replay::{Diagnostic, Problem};
pub(crate) use replay::{Piece, Reader, Replay};

use fifo::{Delivered, Entered, Fifo, Turn};
use index::Fault;
use jsonl::FileSink;
use log::Log;

/// The most appends one group commit takes (`Durability::FsyncBatch`).
const MAX_GROUP: usize = 256;

/// The most inserts in a row one PostgreSQL append tries after running into rows that
/// other writers committed meanwhile (each try first reads them): every lost race is
/// another writer's progress; the bound only ends a starvation.
const MAX_RACES: u32 = 1024;

/// What a PostgreSQL store reconnects with after losing its connection.
struct PgAgain {
    conninfo: String,
    session_id: String,
    options: PgOptions,
}

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

struct Inner {
    log: Log,
    /// The writer's file: present exactly when the store's kind is [`Kind::File`].
    file: Option<FileSink>,
    /// The database connection: present when the kind is [`Kind::Postgres`], except
    /// after the connection was lost, until the next call reconnects.
    pg: Option<pg::PgSink>,
    /// What a PostgreSQL store reconnects with.
    pg_again: Option<PgAgain>,
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

/// An append-only tree of session entries, in memory or backed by a JSONL file.
///
/// Every method may be called from any thread, concurrently: appends commit in the
/// FIFO order in which they arrive, and reads wait for the appends that arrived before
/// them.
pub struct Store {
    fifo: Fifo<Op, AppendResult>,
    inner: Mutex<Inner>,
    /// A copy of the state, readable without waiting for the FIFO.
    state: AtomicU8,
    /// What kind of store this is. Fixed at open and kept outside the mutex: a call
    /// must join the FIFO without waiting for the write in flight.
    kind: Kind,
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

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Memory,
    ReadOnly {
        salvage: bool,
    },
    File {
        group_commit: bool,
    },
    /// `read_only`: the server was a standby (or read-only) at open.
    Postgres {
        read_only: bool,
    },
}

impl Store {
    /// A new, empty store in memory.
    pub fn memory() -> Store {
        Store::memory_with(&MemoryOptions::default())
    }

    /// A new, empty store in memory, with options.
    pub fn memory_with(options: &MemoryOptions) -> Store {
        let mut store = Store::new(Log::default(), None, Kind::Memory, Vec::new(), Vec::new());
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
        let kind = match &opened.sink {
            Some(sink) => Kind::File {
                group_commit: sink.durability() == Durability::FsyncBatch,
            },
            None => Kind::ReadOnly {
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
        let mut store = Store::new(
            opened.log,
            opened.sink,
            kind,
            opened.warnings,
            opened.diagnostics,
        );
        store.parse = options.parse();
        Ok((store, report))
    }

    /// Opens session `session_id` of the PostgreSQL database `conninfo` names (a
    /// libpq-style connection string or URI), creating the tables on first use (an open
    /// of tables at this library's version runs no DDL) and the session if it is new,
    /// unless [`PgOptions::create`] is off (docs/contract.md §14). The store has the
    /// meaning of a JSONL store; any number of stores in any number of processes may
    /// append to one session, and `seq` is that session's commit order, the same for
    /// every reader. Every call first reads what other stores committed since its last
    /// call.
    ///
    /// Fails with [`Error::InvalidArgument`] (a bad `conninfo` or `session_id`),
    /// [`Error::Io`] (the server cannot be reached, refuses the login, holds a newer
    /// schema or tables this role may not create or upgrade, or, without `create`, has
    /// no such session: kind `NotFound`), or, for rows that do not replay, as a file's
    /// open would. No message holds the password.
    pub fn open_pg(
        conninfo: &str,
        session_id: &str,
        options: &PgOptions,
    ) -> Result<(Store, OpenReport), Error> {
        let sink = pg::PgSink::open(conninfo, session_id, options)?;
        // A strict open checks every row: an index written without those checks is
        // not used (as for a file).
        let log = match options.strict_roles {
            false => pg::load_base(&sink).unwrap_or_default(),
            true => Log::default(),
        };
        let kind = Kind::Postgres {
            read_only: sink.read_only(),
        };
        let mut store = Store::new(log, None, kind, Vec::new(), Vec::new());
        store.parse = ParseOptions {
            strict_roles: options.strict_roles,
        };
        {
            let mut inner = store.lock()?;
            inner.pg = Some(sink);
            inner.pg_again = Some(PgAgain {
                conninfo: conninfo.to_owned(),
                session_id: session_id.to_owned(),
                options: *options,
            });
            store.catch_up(&mut inner)?;
            if inner.log.take_fault().is_some() {
                // Replaying the rows after the index read through it, and that failed:
                // the index must not change the outcome, so every row is read.
                store.fall_back(&mut inner)?;
            }
            store.index_pg(&mut inner);
        }
        let report = OpenReport {
            state: State::Ready,
            warnings: Vec::new(),
            diagnostics: Vec::new(),
            salvage: false,
        };
        Ok((store, report))
    }

    /// Reads the rows other stores committed after what this one holds and pushes
    /// them through the tree rules, as a file's replay does ([`Store::read_rows`]).
    /// When a read through the session index failed on the way (the rules' answer may
    /// then be wrong), the session is read again ([`Store::fall_back`]).
    fn catch_up(&self, inner: &mut Inner) -> Result<(), Error> {
        let result = self.read_rows(inner);
        if inner.log.take_fault().is_some() {
            return self.fall_back(inner);
        }
        result
    }

    /// See [`Store::catch_up`]. A failed read taints the store, or, when the
    /// connection is gone, leaves the next call to reconnect.
    fn read_rows(&self, inner: &mut Inner) -> Result<(), Error> {
        if inner.pg.is_none() && inner.pg_again.is_some() {
            return self.reconnect(inner);
        }
        let Some(sink) = &mut inner.pg else {
            return Ok(());
        };
        let rows = match sink.rows_from(inner.log.len() as u64) {
            Ok(rows) => rows,
            Err(failure) => return Err(Error::Io(self.pg_failed(inner, failure))),
        };
        PARSER.with(|parser| {
            let mut owned;
            let mut borrowed = parser.try_borrow_mut();
            let parser = match &mut borrowed {
                Ok(parser) => &mut **parser,
                Err(_) => {
                    owned = EntryParser::default();
                    &mut owned
                }
            };
            parser.set_options(self.parse);
            for (seq, line) in rows {
                let number = seq.saturating_add(1);
                if seq != inner.log.len() as u64 {
                    return Err(Error::internal(
                        "the session's rows are not numbered densely",
                    ));
                }
                let (json, facts) =
                    parser
                        .parse(line.as_bytes())
                        .map_err(|fault| Error::CorruptLine {
                            line: number,
                            fault: match fault {
                                ParseFault::Json(e) => crate::error::LineFault::Json(e),
                                ParseFault::Entry(e) => crate::error::LineFault::Entry(e),
                            },
                        })?;
                let admitted =
                    inner
                        .log
                        .admit(facts.id(json), facts.parent_id(json), Some(number))?;
                inner.log.push(json, facts, admitted)?;
            }
            Ok(())
        })
    }

    /// An append to a PostgreSQL store: catch up, check the tree rules against
    /// everything committed, then one statement (its own transaction) inserts the row
    /// at seq = the count and updates the session's row. The seq's uniqueness is the
    /// only lock: an insert that finds its seq (or its id) taken lost a race with
    /// another writer, which the next catch-up explains, and tries again. Appends to
    /// one session thus commit in one order, holding the session's row only for the
    /// insert itself. The identical entry (same id, same bytes) already committed is
    /// that entry: its receipt is returned, so a host can learn the outcome of an
    /// ambiguous failure. A refused entry writes nothing; a failed statement taints
    /// the store, or, when the connection is gone, waits for the next call to
    /// reconnect.
    fn commit_pg(&self, inner: &mut Inner, pending: PendingAppend) -> AppendResult {
        let json = pending.json();
        let (id, parent_id) = (pending.facts.id(json), pending.facts.parent_id(json));
        let text = crate::entry::utf8(json)?;
        if inner.pg.is_none() {
            self.reconnect(inner)?;
        }
        let mut races = 0;
        // The seq of the last insert that ran into a row.
        let mut raced: Option<u64> = None;
        loop {
            self.catch_up(inner)?;
            if let Some(seq) = raced.take()
                && inner.log.len() as u64 == seq
            {
                // No row at that seq to catch up: what did the insert run into?
                let found = match &mut inner.pg {
                    Some(sink) => sink.conflict(seq, id),
                    None => {
                        return Err(Error::internal("a PostgreSQL store without its connection"));
                    }
                };
                match found {
                    Ok(found) => Self::unexplained(found, seq, races)?,
                    Err(failure) => return Err(Error::Io(self.pg_failed(inner, failure))),
                }
            }
            let admitted = inner.log.admit(id, parent_id, None).and_then(|admitted| {
                check_against_tree(&inner.log, json, &pending.facts, admitted.parent)?;
                Ok(admitted)
            });
            if inner.tainted.is_none() && inner.log.take_fault().is_some() {
                // A read through the session index failed: check again on every row.
                self.fall_back(inner)?;
                continue;
            }
            let admitted = match admitted {
                Ok(admitted) => admitted,
                Err(refused) => {
                    return match (&refused, inner.log.find(id)) {
                        (Error::DuplicateId { .. }, Some(position))
                            if inner.log.entry(position).map(|(j, _)| j) == Some(json) =>
                        {
                            Ok(Receipt {
                                id: id.to_owned(),
                                seq: u64::from(position),
                            })
                        }
                        _ => Err(refused),
                    };
                }
            };
            let (seq, off) = (inner.log.len() as u64, inner.log.line_bytes());
            let Some(sink) = &mut inner.pg else {
                return Err(Error::internal("a PostgreSQL store without its connection"));
            };
            let written = match sink.insert(seq, off, id, parent_id, text) {
                Ok(pg::Inserted::Committed) => Ok(()),
                Ok(pg::Inserted::Raced) => {
                    // Another writer took the seq (the usual case: the next catch-up
                    // reads its row) or the id.
                    races += 1;
                    if races >= MAX_RACES {
                        Self::unexplained(None, seq, races)?;
                    }
                    raced = Some(seq);
                    continue;
                }
                Err(failure) => Err(failure),
            };
            if let Err(failure) = written {
                return Err(Error::Io(self.pg_failed(inner, failure)));
            }
            let id = id.to_owned();
            let seq = inner.log.push(json, pending.facts.clone(), admitted)?;
            self.index_pg(inner);
            return Ok(Receipt { id, seq });
        }
    }

    /// [`Store::commit_pg`]'s answer to an insert that ran into a row: `found`, the row
    /// at the insert's `seq` or one whose id column holds the entry's id. A row before
    /// `seq` was caught up, and its line's id is not the entry's (the tree rules would
    /// have refused the entry): its id column disagrees with its line, which no retry
    /// mends, so it is named as a corrupt line. A row at or after `seq` (or none any
    /// more) came from another writer since the catch-up: catching up explains it, so
    /// the append tries again, at most [`MAX_RACES`] times in a row.
    fn unexplained(found: Option<u64>, seq: u64, races: u32) -> Result<(), Error> {
        match found {
            Some(row) if row < seq => Err(Error::CorruptLine {
                line: row.saturating_add(1),
                fault: crate::error::LineFault::Entry(EntryError {
                    pointer: "/id".to_owned(),
                    message: "the row's id column does not hold its line's id (the row was \
                              changed outside libsession)"
                        .to_owned(),
                }),
            }),
            _ if races >= MAX_RACES => Err(Error::Io(Arc::new(IoFailure {
                op: crate::error::IoOp::Write,
                kind: std::io::ErrorKind::Other,
                os_error: None,
                message: format!(
                    "PostgreSQL: {races} inserts in a row ran into rows written without the \
                     session's lock; nothing was written"
                ),
                change: None,
            }))),
            _ => Ok(()),
        }
    }

    fn new(
        log: Log,
        file: Option<FileSink>,
        kind: Kind,
        warnings: Vec<Warning>,
        diagnostics: Vec<Diagnostic>,
    ) -> Store {
        let inner = Inner {
            log,
            file,
            pg: None,
            pg_again: None,
            tainted: None,
            warnings,
            diagnostics,
        };
        Store {
            state: AtomicU8::new(inner.state().to_u8()),
            fifo: Fifo::new(),
            inner: Mutex::new(inner),
            kind,
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
        matches!(
            self.kind,
            Kind::ReadOnly { .. } | Kind::Postgres { read_only: true }
        )
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
        if json.len() > MAX_LINE_BYTES && self.kind != Kind::Memory {
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
        let group_commit = self.kind == (Kind::File { group_commit: true });
        let mut results = match self.lock() {
            Ok(mut inner) => {
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
        let synced = match &mut inner.file {
            Some(sink) if ready => sink.sync(),
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
        if let Kind::Postgres { .. } = self.kind {
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
        if let Some(sink) = &mut inner.file {
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
        if let Some(sink) = &mut inner.file
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

    /// A failed database operation. When the connection is gone (the server stopped,
    /// crashed or failed over, the network broke), the store drops it, keeps what it
    /// has committed, and the next call reconnects ([`Store::reconnect`]): the failure
    /// is returned, the store is not tainted. Otherwise the store is tainted.
    fn pg_failed(&self, inner: &mut Inner, failure: IoFailure) -> Arc<IoFailure> {
        if inner.pg.as_ref().is_some_and(pg::PgSink::is_closed) {
            inner.pg = None;
            return Arc::new(failure);
        }
        self.taint(inner, failure)
    }

    /// Opens a new connection with the store's conninfo (its hosts in order, as
    /// `target_session_attrs` says) and reads the session again from its index and
    /// rows: after a failover the new server's commit order is the truth, and rows
    /// read before from the old server that never reached it are forgotten. A writer
    /// that lands on a server taking no writes stays disconnected (`io`).
    fn reconnect(&self, inner: &mut Inner) -> Result<(), Error> {
        let Some(again) = &inner.pg_again else {
            return Err(Error::internal("a PostgreSQL store without its connection"));
        };
        let sink = pg::PgSink::open(&again.conninfo, &again.session_id, &again.options)?;
        if sink.read_only() && !self.is_read_only() {
            return Err(Error::Io(Arc::new(IoFailure {
                op: crate::error::IoOp::Open,
                kind: std::io::ErrorKind::Other,
                os_error: None,
                message: "PostgreSQL: reconnected to a server that takes no writes (a \
                          standby): a writer needs target_session_attrs=read-write"
                    .to_owned(),
                change: None,
            })));
        }
        inner.log = match self.parse.strict_roles {
            false => pg::load_base(&sink).unwrap_or_default(),
            true => Log::default(),
        };
        inner.pg = Some(sink);
        self.catch_up(inner)?;
        if inner.log.take_fault().is_some() {
            self.fall_back(inner)?;
        }
        Ok(())
    }

    /// A PostgreSQL store holding [`pg::INDEX_EVERY`] rows or more after its session
    /// index writes one that covers them all and reads on through it: what a handle
    /// keeps in memory, and what the next open reads, stay bounded. Best effort.
    fn index_pg(&self, inner: &mut Inner) {
        if self.parse.strict_roles || self.is_read_only() || inner.log.unindexed() < pg::INDEX_EVERY
        {
            return;
        }
        let Some(sink) = &inner.pg else {
            return;
        };
        // Another handle may have written one meanwhile: read through it rather than
        // write another (the rows after it are read again).
        let base_len = inner.log.len() - inner.log.unindexed();
        if let Some(newer) = pg::load_base(sink)
            && newer.len() > base_len
            && newer.len() + pg::INDEX_EVERY > inner.log.len()
        {
            inner.log = newer;
            if self.catch_up(inner).is_err() || inner.log.take_fault().is_some() {
                let _ = self.fall_back(inner);
            }
            return;
        }
        if pg::write_index(sink, &inner.log)
            && let Some(log) = pg::load_base(sink)
            && log.len() == inner.log.len()
        {
            inner.log = log;
        }
    }

    /// Replaces the log read through the session index with a replay of the whole
    /// file (or of every row of a PostgreSQL session), as an open without the index
    /// does.
    fn fall_back(&self, inner: &mut Inner) -> Result<(), Error> {
        if let Kind::Postgres { .. } = self.kind {
            // The index read through may be one that a newer one replaced (and whose
            // row is gone): read through the newest, else every row.
            if let Some(sink) = &inner.pg
                && !self.parse.strict_roles
                && let Some(newest) = pg::load_base(sink)
                && newest.len() != inner.log.len() - inner.log.unindexed()
            {
                inner.log = newest;
                if self.read_rows(inner).is_ok() && inner.log.take_fault().is_none() {
                    return Ok(());
                }
            }
            inner.log = Log::default();
            return self.read_rows(inner);
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
        if let Some(sink) = &mut inner.file {
            sink.forget_index();
        }
        self.state.store(inner.state().to_u8(), Ordering::Release);
        Ok(())
    }

    /// Copies of every committed entry, in commit order.
    pub fn entries(&self) -> Result<Vec<Entry>, Error> {
        self.read_with(|inner| inner.log.entries())
    }

    /// State, committed entries and warnings (and a salvage store's diagnostics), read
    /// in one turn.
    pub fn read(&self) -> Result<Snapshot, Error> {
        self.read_with(|inner| {
            Ok(Snapshot {
                state: inner.state(),
                entries: inner.log.entries()?,
                warnings: inner.warnings.clone(),
                diagnostics: inner.diagnostics.clone(),
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
        self.read_with(|inner| inner.log.path_message_values(leaf_id))
    }

    /// [`Store::entries`] as a JSON array (UTF-8 bytes).
    pub fn entries_json(&self) -> Result<Vec<u8>, Error> {
        self.read_with(|inner| {
            let mut out = Vec::new();
            inner.log.push_entries_json(&mut out)?;
            Ok(out)
        })
    }

    /// [`Store::read`] as `{"state":…,"entries":[…],"warnings":[…]}` (a salvage store
    /// adds `"complete"` and `"diagnostics"`), UTF-8 bytes.
    pub fn read_json(&self) -> Result<Vec<u8>, Error> {
        self.read_with(|inner| {
            let object = Object::new()
                .string("state", inner.state().as_str())
                .raw_with("entries", |out| inner.log.push_entries_json(out))?
                .raw("warnings", &warnings_json(&inner.warnings));
            let object = if matches!(self.kind, Kind::ReadOnly { salvage: true }) {
                salvage_members(object, &inner.diagnostics)
            } else {
                object
            };
            Ok(object.finish_bytes())
        })
    }

    /// [`Store::path_to`] as a JSON array of entries (UTF-8 bytes).
    pub fn path_to_json(&self, leaf_id: &str) -> Result<Vec<u8>, Error> {
        self.read_with(|inner| inner.log.path_json(leaf_id))
    }

    /// [`Store::messages_on_path`] as a JSON array of messages (UTF-8 bytes).
    pub fn messages_on_path_json(&self, leaf_id: &str) -> Result<Vec<u8>, Error> {
        self.read_with(|inner| inner.log.path_messages_json(leaf_id))
    }

    /// What the model should see for `leaf_id` (docs/contract.md §7), through the store's index:
    /// the cost grows with what is kept (the path from the leaf back to the latest
    /// compaction's first kept entry, plus the path's replayed metadata entries), not
    /// with the path before the cut or the store. The same rules and result as
    /// [`crate::build_context`] over the store's entries. `estimate` (used only with a
    /// budget) runs on the calling thread inside the store's FIFO turn: it must not
    /// call this store.
    pub fn build_context(
        &self,
        leaf_id: &str,
        options: &ContextOptions,
        estimate: Option<&mut Estimator<'_>>,
    ) -> Result<Context, Error> {
        let mut default = |m: &str| Ok(context::default_estimate(m));
        let estimate: &mut Estimator<'_> = match estimate {
            Some(estimate) => estimate,
            None => &mut default,
        };
        self.read_with(|inner| {
            let path = inner.log.path_tail(leaf_id, options.strict_roles)?;
            context::build_explained(
                path,
                leaf_id,
                options,
                &|id| inner.log.find(id).map(u64::from),
                &|id| inner.log.child_entries(id),
                estimate,
            )
        })
    }

    /// The direct children of `id`, in commit order (docs/contract.md §8), through the index:
    /// the cost grows with the number of children. Fails with
    /// [`Error::UnknownLeaf`] for an unknown id.
    pub fn children(&self, id: &str) -> Result<Vec<Node>, Error> {
        self.read_with(|inner| inner.log.children(id))
    }

    /// The entries without a parent in the store, in commit order: the roots, and in
    /// a salvage store the orphans whose parent is missing.
    pub fn roots(&self) -> Result<Vec<Node>, Error> {
        self.read_with(|inner| Ok(inner.log.roots()))
    }

    /// The entries without children, in commit order, with the latest by seq and by
    /// timestamp (a tie goes to the higher seq).
    pub fn leaves(&self) -> Result<Leaves, Error> {
        self.read_with(|inner| Ok(inner.log.leaves()))
    }

    /// The node of the last committed entry ("resume the latest"), `None` when the
    /// store is empty. O(1).
    pub fn latest_leaf(&self) -> Result<Option<Node>, Error> {
        self.read_with(|inner| Ok(inner.log.latest_leaf()))
    }

    /// The leaf the agent of an imported session resumes: the `leafId` of its
    /// `session.resumeLeaf` entry while that entry is in force (docs/contract.md §6.3:
    /// the last committed entry, or under it only `session.*` metadata such as
    /// labels); `None` otherwise, and for a native session. The command line's
    /// default leaf: this, else the latest leaf.
    pub fn resume_leaf(&self) -> Result<Option<String>, Error> {
        self.read_with(|inner| Ok(inner.log.resume_leaf()))
    }

    /// A page of nodes in commit order: those after `after_seq`, at most `limit`,
    /// flagged `on_path` on the path to `leaf`, with previews of `preview_chars`.
    /// Cost: the page plus O(log depth) for the leaf's path. Fails with [`Error::UnknownLeaf`] for
    /// an unknown `leaf`.
    pub fn tree(&self, options: &TreeOptions) -> Result<TreePage, Error> {
        self.read_with(|inner| inner.log.tree(options))
    }

    /// Each labelled entry once, ordered by its seq, with its current label and the
    /// label entry that set it (docs/contract.md §6.3).
    pub fn labels(&self) -> Result<Vec<Label>, Error> {
        self.read_with(|inner| Ok(inner.log.labels()))
    }

    /// What the HTML view draws, read in one turn (one snapshot): every entry as a
    /// JSON array (each passed through `map`, when given: the view's redaction), the
    /// labels, and the id of the last committed entry. Fails with
    /// [`Error::UnknownLeaf`] when `leaf` is given and no entry has it.
    pub(crate) fn view_snapshot(
        &self,
        leaf: Option<&str>,
        map: Option<&MapEntry<'_>>,
    ) -> Result<ViewSnapshot, Error> {
        self.read_with(|inner| {
            if let Some(leaf) = leaf {
                inner.log.find(leaf).ok_or_else(|| Error::UnknownLeaf {
                    id: leaf.to_owned(),
                })?;
            }
            let mut entries_json = Vec::new();
            match map {
                Some(map) => inner.log.push_entries_json_mapped(&mut entries_json, map)?,
                None => inner.log.push_entries_json(&mut entries_json)?,
            }
            Ok(ViewSnapshot {
                entries_json,
                labels: inner.log.labels(),
                latest: inner.log.latest_leaf().map(|node| node.id),
            })
        })
    }

    /// [`Store::children`] as a JSON array of nodes.
    pub fn children_json(&self, id: &str) -> Result<String, Error> {
        Ok(nodes_json(&self.children(id)?))
    }

    /// [`Store::roots`] as a JSON array of nodes.
    pub fn roots_json(&self) -> Result<String, Error> {
        Ok(nodes_json(&self.roots()?))
    }

    /// [`Store::leaves`] as `{"leaves":[…],"latestBySeq":…,"latestByTimestamp":…}`.
    pub fn leaves_json(&self) -> Result<String, Error> {
        Ok(self.leaves()?.to_json())
    }

    /// [`Store::latest_leaf`] as a node or `null`.
    pub fn latest_leaf_json(&self) -> Result<String, Error> {
        Ok(self
            .latest_leaf()?
            .map_or_else(|| "null".to_owned(), |node| node.to_json()))
    }

    /// [`Store::tree`] as `{"nodes":[…],"count":N,"nextAfterSeq":N|null}`.
    pub fn tree_json(&self, options: &TreeOptions) -> Result<String, Error> {
        Ok(self.tree(options)?.to_json())
    }

    /// [`Store::labels`] as a JSON array of `{targetId,label,entryId,seq}`.
    pub fn labels_json(&self) -> Result<String, Error> {
        Ok(labels_json(&self.labels()?))
    }

    /// How many index records the navigation queries of this store have visited:
    /// the measure of their cost in tests, independent of the machine's speed.
    #[doc(hidden)]
    pub fn nav_steps(&self) -> Result<u64, Error> {
        self.read_with(|inner| Ok(inner.log.nav().steps()))
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
            && let Some(sink) = &mut inner.file
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
        Body::Compaction { first_kept, .. } => context::check_compaction(
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
            match log.find(target) {
                Some(_) => Ok(()),
                None => Err(Error::UnknownLeaf {
                    id: target.to_owned(),
                }),
            }
        }
        _ => Ok(()),
    }
}

fn abandoned() -> Error {
    Error::internal("the operation was abandoned by a panic in the operation ahead of it")
}

/// Every session of the PostgreSQL database `conninfo` names, most recently modified
/// first (docs/contract.md §14). Creates the schema on first use, as an open does.
pub fn list_pg_sessions(
    conninfo: &str,
    options: &PgListOptions,
) -> Result<Vec<PgSessionInfo>, Error> {
    pg::list(conninfo, options)
}
