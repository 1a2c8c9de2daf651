//! The PostgreSQL side of [`Store`]: the open, the catch-up before every call, the
//! append (one statement that numbers and inserts the row), the reconnect after a
//! lost connection, and the upkeep of the session index. The rows themselves move
//! through [`super::PgSink`]; the tree rules are the ones the JSONL store applies.

use std::sync::Arc;

use crate::entry::{EntryParser, ParseFault, ParseOptions};
use crate::error::{EntryError, Error, IoFailure};
use crate::store::log::Log;
use crate::store::{
    AppendResult, Backend, Inner, OpenReport, PARSER, PendingAppend, Receipt, State, Store,
    check_against_tree,
};

use super::{PgOptions, PgSink};

/// The most inserts in a row one PostgreSQL append tries after finding its id taken
/// (each try first reads what was committed): the bound ends a loop on rows changed
/// outside libsession.
const MAX_RACES: u32 = 1024;

/// A PostgreSQL store's connection and what it reconnects with after losing it.
pub(in crate::store) struct PgBackend {
    /// `None` after the connection was lost, until the next call reconnects.
    sink: Option<PgSink>,
    conninfo: String,
    session_id: String,
    options: PgOptions,
    /// The server was a standby (or took no writes) at open.
    read_only: bool,
}

impl PgBackend {
    pub(in crate::store) fn read_only(&self) -> bool {
        self.read_only
    }
}

/// The connection of a PostgreSQL store: `None` for another store, and after the
/// connection was lost.
fn sink(backend: &mut Backend) -> Option<&mut PgSink> {
    match backend {
        Backend::Pg(pg) => pg.sink.as_mut(),
        _ => None,
    }
}

impl Store {
    /// Opens session `session_id` of the PostgreSQL database `conninfo` names (a
    /// libpq-style connection string or URI), creating the tables on first use (an open
    /// of tables at this library's version runs no DDL) and the session if it is new,
    /// unless [`PgOptions::create`] is off (docs/contract.md §14). The store has the
    /// meaning of a JSONL store; any number of stores in any number of processes may
    /// append to one session, and `seq` is that session's commit order, the same for
    /// every reader. Every read first reads what other stores committed since its last
    /// call; an append reads them when its insert was numbered after them.
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
        let sink = PgSink::open(conninfo, session_id, options)?;
        // A strict open checks every row: an index written without those checks is
        // not used (as for a file).
        let log = match options.strict_roles {
            false => super::load_base(&sink).unwrap_or_default(),
            true => Log::default(),
        };
        let backend = Backend::Pg(PgBackend {
            read_only: sink.read_only(),
            sink: Some(sink),
            conninfo: conninfo.to_owned(),
            session_id: session_id.to_owned(),
            options: *options,
        });
        let mut store = Store::new(log, backend, Vec::new(), Vec::new());
        store.parse = ParseOptions {
            strict_roles: options.strict_roles,
        };
        {
            let mut inner = store.lock()?;
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
    pub(in crate::store) fn catch_up(&self, inner: &mut Inner) -> Result<(), Error> {
        let result = self.read_rows(inner);
        if inner.log.take_fault().is_some() {
            return self.fall_back(inner);
        }
        result
    }

    /// See [`Store::catch_up`]. A failed read taints the store, or, when the
    /// connection is gone, leaves the next call to reconnect.
    fn read_rows(&self, inner: &mut Inner) -> Result<(), Error> {
        let sink = match &mut inner.backend {
            Backend::Pg(PgBackend { sink: None, .. }) => return self.reconnect(inner),
            Backend::Pg(PgBackend {
                sink: Some(sink), ..
            }) => sink,
            _ => return Ok(()),
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
            for (seq, id_column, line) in rows {
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
                // The unique index holds each id column once: a line whose id is its
                // row's id column is not looked up among the indexed entries.
                let (id, parent_id) = (facts.id(json), facts.parent_id(json));
                let admitted = match id.as_bytes() == id_column.as_slice() {
                    true => inner.log.admit_over_base(id, parent_id, Some(number))?,
                    false => inner.log.admit(id, parent_id, Some(number))?,
                };
                inner.log.push(json, facts, admitted)?;
            }
            Ok(())
        })
    }

    /// An append to a PostgreSQL store: check the tree rules against the rows this
    /// handle holds, then one statement (its own transaction, one round trip) numbers
    /// the row after every committed one as it updates the session's row, and inserts
    /// it ([`PgSink::insert`]). The session's row is the lock, held for that statement
    /// only: concurrent appends wait for each other's statement, never fail for being
    /// late, and commit in one order, `seq`. When other writers committed rows since
    /// this handle last read, the append leaves them and its own row to be read by the
    /// next call that needs them (every read catches up first). The rules still hold
    /// against those rows: they only add entries (a parent,
    /// a kept entry, a label's target that this handle found stays committed), and a
    /// taken id is refused by the unique index, which this check leaves the entries
    /// its session index covers to (so it reads no page of the index's id table). A
    /// refusal is only given after catching up. The identical entry (same id, same
    /// bytes) already committed is that entry: its receipt is returned, so a host can
    /// learn the outcome of an ambiguous failure. A refused entry writes nothing; a
    /// failed statement taints the store, or, when the connection is gone, waits for
    /// the next call to reconnect.
    pub(in crate::store) fn commit_pg(
        &self,
        inner: &mut Inner,
        pending: PendingAppend,
    ) -> AppendResult {
        let json = pending.json();
        let (id, parent_id) = (pending.facts.id(json), pending.facts.parent_id(json));
        let text = crate::entry::utf8(json)?;
        if sink(&mut inner.backend).is_none() {
            self.reconnect(inner)?;
        }
        let mut races = 0;
        // The last insert found the id taken.
        let mut taken = false;
        // The first try inserts without reading the session first; a refusal, though,
        // is given only after reading every row committed (the parent may be one of
        // them).
        let (mut read_first, mut read) = (false, false);
        loop {
            if read_first {
                self.catch_up(inner)?;
                read = true;
            }
            read_first = true;
            // Once an insert found the id taken, the ids are checked over every
            // entry, so the answer (a refusal, or this entry's receipt) is given here.
            let admitted = match races {
                0 => inner.log.admit_over_base(id, parent_id, None),
                _ => inner.log.admit(id, parent_id, None),
            };
            let admitted = admitted.and_then(|admitted| {
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
                Err(_) if !read => continue,
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
            let held = inner.log.len() as u64;
            let Some(sink) = sink(&mut inner.backend) else {
                return Err(Error::internal("a PostgreSQL store without its connection"));
            };
            if std::mem::take(&mut taken) {
                // The id was taken, yet no row read since holds it: which row does?
                match sink.conflict(id) {
                    Ok(found) => Self::unexplained(found, held, races)?,
                    Err(failure) => return Err(Error::Io(self.pg_failed(inner, failure))),
                }
            }
            let seq = match sink.insert(held, id, parent_id, text) {
                Ok(super::Inserted::Committed(seq)) => seq,
                Ok(super::Inserted::Taken) => {
                    races += 1;
                    if races >= MAX_RACES {
                        Self::unexplained(None, held, races)?;
                    }
                    taken = true;
                    continue;
                }
                Err(failure) => return Err(Error::Io(self.pg_failed(inner, failure))),
            };
            let receipt = Receipt {
                id: id.to_owned(),
                seq,
            };
            if seq == held {
                inner.log.push(json, pending.facts.clone(), admitted)?;
                self.index_pg(inner);
            }
            // Otherwise other writers committed first: their rows and this one are read
            // when a call needs them (every read catches up first; an append whose
            // checks fail on what this handle holds catches up and checks again).
            return Ok(receipt);
        }
    }

    /// [`Store::commit_pg`]'s answer to an insert that found the entry's id taken
    /// although no row read since holds it: `found`, the row whose id column holds the
    /// id. A row before `held` (the rows this handle holds) was read, and its line's id
    /// is not the entry's: its id column disagrees with its line, which no retry
    /// mends, so it is named as a corrupt line. A row at or after `held` (or none any
    /// more) came from another writer since: catching up explains it, so the append
    /// tries again, at most [`MAX_RACES`] times in a row.
    fn unexplained(found: Option<u64>, held: u64, races: u32) -> Result<(), Error> {
        match found {
            Some(row) if row < held => Err(Error::CorruptLine {
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
                    "PostgreSQL: {races} inserts in a row found the entry's id taken by rows \
                     that do not hold it; nothing was written"
                ),
                change: None,
            }))),
            _ => Ok(()),
        }
    }

    /// A failed database operation. When the connection is gone (the server stopped,
    /// crashed or failed over, the network broke), the store drops it, keeps what it
    /// has committed, and the next call reconnects ([`Store::reconnect`]): the failure
    /// is returned, the store is not tainted. Otherwise the store is tainted.
    fn pg_failed(&self, inner: &mut Inner, failure: IoFailure) -> Arc<IoFailure> {
        if let Backend::Pg(pg) = &mut inner.backend
            && pg.sink.as_ref().is_some_and(PgSink::is_closed)
        {
            pg.sink = None;
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
        let Backend::Pg(pg) = &mut inner.backend else {
            return Err(Error::internal(
                "a reconnect of a store that is not PostgreSQL",
            ));
        };
        let sink = PgSink::open(&pg.conninfo, &pg.session_id, &pg.options)?;
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
        let log = match self.parse.strict_roles {
            false => super::load_base(&sink).unwrap_or_default(),
            true => Log::default(),
        };
        pg.sink = Some(sink);
        inner.log = log;
        self.catch_up(inner)?;
        if inner.log.take_fault().is_some() {
            self.fall_back(inner)?;
        }
        Ok(())
    }

    /// A PostgreSQL store holding [`super::INDEX_EVERY`] rows or more after its session
    /// index writes one that covers them all and reads on through it: what a handle
    /// keeps in memory, and what the next open reads, stay bounded. Best effort.
    fn index_pg(&self, inner: &mut Inner) {
        if self.parse.strict_roles
            || self.is_read_only()
            || inner.log.unindexed() < super::INDEX_EVERY
        {
            return;
        }
        let Some(sink) = sink(&mut inner.backend) else {
            return;
        };
        // Another handle may have written one meanwhile: read through it rather than
        // write another (the rows after it are read again).
        let base_len = inner.log.len() - inner.log.unindexed();
        if let Some(newer) = super::load_base(sink)
            && newer.len() > base_len
            && newer.len() + super::INDEX_EVERY > inner.log.len()
        {
            inner.log = newer;
            if self.catch_up(inner).is_err() || inner.log.take_fault().is_some() {
                let _ = self.fall_back(inner);
            }
            return;
        }
        if super::write_index(sink, &inner.log)
            && let Some(log) = super::load_base(sink)
            && log.len() == inner.log.len()
        {
            inner.log = log;
        }
    }

    /// The PostgreSQL part of [`Store::fall_back`]: the rows read again.
    pub(in crate::store) fn fall_back_pg(&self, inner: &mut Inner) -> Result<(), Error> {
        // The index read through may be one that a newer one replaced (and whose
        // row is gone): read through the newest, else every row.
        if let Some(sink) = sink(&mut inner.backend)
            && !self.parse.strict_roles
            && let Some(newest) = super::load_base(sink)
            && newest.len() != inner.log.len() - inner.log.unindexed()
        {
            inner.log = newest;
            if self.read_rows(inner).is_ok() && inner.log.take_fault().is_none() {
                return Ok(());
            }
        }
        inner.log = Log::default();
        self.read_rows(inner)
    }
}
