//! `copy`: a session between a JSONL file and a PostgreSQL database (docs/contract.md
//! §14), either way, all or nothing: the library checks each entry as an append would
//! as it writes it, into a file beside DST renamed into place at the end, or into a
//! database session in one transaction. Byte for byte, in commit order (seq).

use std::io::ErrorKind;
use std::process::ExitCode;

use session::secrets::Redactor;
use session::{CopyOptions, Error, PgOptions, Store};

use crate::exit;
use crate::location::Location;
use crate::output::{Doc, Out, Outcome, Source, note, open, outputs_no_wider_than};
use crate::progress::Progress;

/// Copies every entry of `src` into `dst`, a new file or a new or empty session; says
/// how many on stderr. A source that does not exist (a file, or a session: it is never
/// created) fails before anything is written; so does a destination that exists or
/// has entries (exit 2). With `redact`, each entry's secrets are replaced (the default
/// rules) before it is checked and written.
pub fn copy(out: &mut Out, src: &Location, dst: &Location, redact: bool) -> Outcome {
    let source = match src {
        Location::File(path) => {
            outputs_no_wider_than(Source::File(path));
            open(path, false)?.0
        }
        Location::Postgres {
            conninfo,
            session_id,
        } => {
            outputs_no_wider_than(Source::Database);
            let reader = PgOptions {
                create: false,
                ..PgOptions::default()
            };
            Store::open_pg(conninfo, session_id, &reader)?.0
        }
    };
    let options = CopyOptions {
        redact: match redact {
            true => Some(Redactor::standard()?),
            false => None,
        },
    };
    let progress = Progress::entries("copying");
    let copied = match dst {
        Location::File(path) => {
            source.copy_to_jsonl_with(path, &options, &mut |p| progress.copied(p))
        }
        Location::Postgres {
            conninfo,
            session_id,
        } => source.copy_to_pg_with(
            conninfo,
            session_id,
            &PgOptions::default(),
            &options,
            &mut |p| progress.copied(p),
        ),
    };
    drop(progress);
    match copied {
        Ok(count) if !out.readable() => {
            out.emit(&Doc::One(format!("{{\"copied\":{count}}}")))?;
            Ok(ExitCode::SUCCESS)
        }
        Ok(count) => {
            note(&format!("copied {count} entries"));
            Ok(ExitCode::SUCCESS)
        }
        Err(Error::Io(failure)) if failure.kind == ErrorKind::AlreadyExists => {
            let rule = match dst {
                Location::File(_) => "; copy writes to a new file only",
                // The library's message says it for a session.
                Location::Postgres { .. } => "",
            };
            note(&format!("{failure}{rule}"));
            Ok(ExitCode::from(exit::FAILED))
        }
        Err(e) => Err(e.into()),
    }
}
