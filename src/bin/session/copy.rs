//! `copy`: a session between a JSONL file and a PostgreSQL database (docs/contract.md
//! §14), either way, entry for entry: each entry's line is appended as it is stored, so
//! the copy is byte for byte and keeps the commit order (seq).

use std::fs::OpenOptions;
use std::process::ExitCode;

use session::{PgOptions, Store};

use crate::args::Place;
use crate::exit;
use crate::output::{Outcome, note, open};

/// Copies every entry of `src` into `dst`, a new file or an empty session; says
/// how many on stderr.
pub fn copy(src: &Place, dst: &Place) -> Outcome {
    let source = match src {
        Place::File(path) => open(path, false)?.0,
        Place::Postgres {
            conninfo,
            session_id,
        } => Store::open_pg(conninfo, session_id, &PgOptions::default())?.0,
    };
    let entries = source.entries()?;
    let target = match dst {
        Place::File(path) => {
            // A new file only: create_new refuses an existing one without touching it.
            if let Err(e) = OpenOptions::new().write(true).create_new(true).open(path) {
                note(&format!("cannot create {}: {e}", path.display()));
                return Ok(ExitCode::from(match e.kind() {
                    std::io::ErrorKind::AlreadyExists => exit::FAILED,
                    _ => exit::IO,
                }));
            }
            Store::open_jsonl(path)?.0
        }
        Place::Postgres {
            conninfo,
            session_id,
        } => Store::open_pg(conninfo, session_id, &PgOptions::default())?.0,
    };
    if !target.is_empty()? {
        note("the destination session is not empty: copy writes to an empty session only");
        return Ok(ExitCode::from(exit::FAILED));
    }
    for entry in &entries {
        target.append(entry.json())?;
    }
    note(&format!("copied {} entries", entries.len()));
    Ok(ExitCode::SUCCESS)
}
