//! A store's committed entries written whole into a new JSONL file or a new or empty
//! PostgreSQL session (`session copy`, docs/contract.md §14): all of it or nothing.
//!
//! Both directions check each entry as an append to an empty store would, in commit
//! order (ids, parents, the compaction and label rules, `strictRoles` of the
//! destination), through a memory store: the one implementation of those rules. So the
//! destination holds exactly what appending the entries one by one would have
//! committed, at the same seqs; and an entry that appending would refuse fails the copy
//! with that error. Each entry is checked just before it is written, so the checks run
//! while the server takes the rows before it; what was written is then dropped, as for
//! any other failure: a file is written beside its name and renamed into place at the
//! end (never replacing anything), a database session in one transaction.
//!
//! With a redactor ([`CopyOptions::redact`]) each entry's secrets are replaced by
//! `[REDACTED:<rule>]` first; the checks and the write then see the redacted entry
//! (its ids unchanged: the redactor never touches an id).

use std::path::Path;

use crate::entry::Entry;
use crate::error::Error;
use crate::secrets::Redactor;

use crate::store::{MemoryOptions, PgOptions, Store, pg_copy as pg};

/// How far a copy is: `done` of `total` entries written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CopyProgress {
    pub done: u64,
    pub total: u64,
}

/// Options of a copy.
#[derive(Clone, Copy, Debug, Default)]
pub struct CopyOptions<'r> {
    /// Redact each entry with this rule set before it is checked and written (`None`:
    /// byte for byte).
    pub redact: Option<&'r Redactor>,
}

impl Store {
    /// Writes every committed entry of this store, in commit order and byte for byte,
    /// as a new JSONL file at `out`: into a temporary file beside it, synced, then
    /// renamed to `out` unless `out` exists by then. Returns the number of entries.
    ///
    /// Fails, leaving nothing at `out`, with the error an append would give for an
    /// entry the tree rules refuse, with [`Error::Io`] of kind `AlreadyExists` (op
    /// `open`) when `out` exists, or with [`Error::Io`] for a failed write.
    pub fn copy_to_jsonl(
        &self,
        out: &Path,
        progress: &mut dyn FnMut(CopyProgress),
    ) -> Result<u64, Error> {
        self.copy_to_jsonl_with(out, &CopyOptions::default(), progress)
    }

    /// [`Store::copy_to_jsonl`], each entry redacted first when `options.redact` is
    /// set.
    pub fn copy_to_jsonl_with(
        &self,
        out: &Path,
        options: &CopyOptions<'_>,
        progress: &mut dyn FnMut(CopyProgress),
    ) -> Result<u64, Error> {
        let entries = redacted(self.entries()?, options.redact)?;
        let check = AsAppended::new(false);
        let total = entries.len() as u64;
        crate::interop::write_new_file(out, |sink| {
            for (done, entry) in entries.iter().enumerate() {
                check.entry(entry)?;
                sink.line(&[entry.json().as_bytes()])?;
                if (done + 1) % PROGRESS_STEP == 0 {
                    progress(CopyProgress {
                        done: done as u64 + 1,
                        total,
                    });
                }
            }
            Ok(())
        })?;
        progress(CopyProgress { done: total, total });
        Ok(total)
    }

    /// Writes every committed entry of this store, in commit order and byte for byte,
    /// as session `session_id` of the PostgreSQL database `conninfo` names, in one
    /// transaction: the session is created if it does not exist, and refused if it has
    /// entries. The rows, the session's count and latest entry are what that many
    /// appends would have made. Returns the number of entries.
    ///
    /// Fails with the error an append would give for an entry the tree rules refuse,
    /// with [`Error::InvalidArgument`] (a bad `conninfo` or `session_id`), with
    /// [`Error::Io`] of kind `AlreadyExists` when the session has entries, or with
    /// [`Error::Io`] (the server cannot be reached, refuses a row, or the connection is
    /// lost): in each case nothing is committed, no session created. A failed commit
    /// (op `sync`) is ambiguous: the session then holds all of the copy or none of it.
    pub fn copy_to_pg(
        &self,
        conninfo: &str,
        session_id: &str,
        options: &PgOptions,
        progress: &mut dyn FnMut(CopyProgress),
    ) -> Result<u64, Error> {
        self.copy_to_pg_with(
            conninfo,
            session_id,
            options,
            &CopyOptions::default(),
            progress,
        )
    }

    /// [`Store::copy_to_pg`], each entry redacted first when `copy.redact` is set.
    pub fn copy_to_pg_with(
        &self,
        conninfo: &str,
        session_id: &str,
        options: &PgOptions,
        copy: &CopyOptions<'_>,
        progress: &mut dyn FnMut(CopyProgress),
    ) -> Result<u64, Error> {
        pg::check_session_id(session_id)?;
        let entries = redacted(self.entries()?, copy.redact)?;
        let check = AsAppended::new(options.strict_roles);
        let total = entries.len() as u64;
        pg::copy_in(
            conninfo,
            session_id,
            options,
            &entries,
            &mut |entry| check.entry(entry),
            &mut |done| progress(CopyProgress { done, total }),
        )?;
        Ok(total)
    }
}

/// `entries` with each one holding a secret replaced by its redacted text, parsed
/// again (an entry without one is kept as it is).
fn redacted(mut entries: Vec<Entry>, redactor: Option<&Redactor>) -> Result<Vec<Entry>, Error> {
    let Some(redactor) = redactor else {
        return Ok(entries);
    };
    for entry in &mut entries {
        if let std::borrow::Cow::Owned(text) = redactor.redact_json_bytes(entry.json().as_bytes()) {
            *entry = crate::entry::parse_entry(text)?;
        }
    }
    Ok(entries)
}

/// Checks entries as appends to an empty store would, in the order given: a memory
/// store they are appended to.
struct AsAppended(Store);

impl AsAppended {
    fn new(strict_roles: bool) -> AsAppended {
        AsAppended(Store::memory_with(&MemoryOptions { strict_roles }))
    }

    /// The error appending `entry` after the entries checked before it would give.
    fn entry(&self, entry: &Entry) -> Result<(), Error> {
        self.0.append_entry(entry.clone()).map(|_| ())
    }
}

/// Entries written between two progress reports.
const PROGRESS_STEP: usize = 4096;
