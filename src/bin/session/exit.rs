//! The exit-code table: the one place that says which outcome exits with which code.
//! The help text (`args::AFTER_HELP`) and the README list the same table; tests/cli.rs
//! checks it verb by verb.

use std::io;
use std::process::ExitCode;

use session::{Error, State};

use crate::output::{Failure, Outcome, note};

/// Done, the file is clean.
pub const OK: u8 = 0;
/// Done, but the file needs repair, or salvage found damaged lines.
pub const NEEDS_REPAIR: u8 = 1;
/// The file is corrupt or the request failed.
pub const FAILED: u8 = 2;
/// An I/O error.
pub const IO: u8 = 3;
/// The file is locked by a writer.
pub const LOCKED: u8 = 4;
/// The command line was not understood (sysexits' EX_USAGE).
pub const USAGE: u8 = 64;
/// Stdout was closed by its reader: 128 + SIGPIPE, as a shell reports a program that
/// SIGPIPE ended.
pub const CLOSED_PIPE: u8 = 141;

/// 0 for a ready file, 1 for one that needs repair.
pub fn for_state(state: State) -> ExitCode {
    ExitCode::from(match state {
        State::Ready => OK,
        _ => NEEDS_REPAIR,
    })
}

/// 1: salvage found damage.
pub fn damage() -> ExitCode {
    ExitCode::from(NEEDS_REPAIR)
}

/// 64: the command line was not understood.
pub fn usage() -> ExitCode {
    ExitCode::from(USAGE)
}

/// The exit code of a finished verb; a failure is noted on stderr first, except a
/// closed stdout, which ends quietly.
pub fn finish(outcome: Outcome) -> ExitCode {
    let failure = match outcome {
        Ok(code) => return code,
        Err(failure) => failure,
    };
    let code = match &failure {
        Failure::Session(e) => for_error(e),
        Failure::Request(_) | Failure::AgentFile { .. } => FAILED,
        Failure::Stdout(e) if e.kind() == io::ErrorKind::BrokenPipe => return CLOSED_PIPE.into(),
        Failure::Stdout(_) => IO,
    };
    for line in failure.lines() {
        note(&line);
    }
    ExitCode::from(code)
}

/// 3 for an I/O error, 4 for a file locked by a writer, 2 for anything else.
fn for_error(e: &Error) -> u8 {
    match e {
        Error::Io(_) => IO,
        Error::Locked { .. } => LOCKED,
        _ => FAILED,
    }
}
