//! The exit-code table: one place that says which outcome exits with which code.

use std::process::ExitCode;

use session::{Error, State};

/// 0 for a ready file, 1 for one that needs repair.
pub fn for_state(state: State) -> ExitCode {
    match state {
        State::Ready => ExitCode::SUCCESS,
        _ => ExitCode::from(1),
    }
}

/// 1: salvage found damage.
pub fn damage() -> ExitCode {
    ExitCode::from(1)
}

/// 3 for an I/O error, 4 for a file locked by a writer, 2 for anything else.
pub fn for_error(e: &Error) -> ExitCode {
    ExitCode::from(match e {
        Error::Io(_) => 3,
        Error::Locked { .. } => 4,
        _ => 2,
    })
}

/// 64: the command line was not understood.
pub fn usage() -> ExitCode {
    ExitCode::from(64)
}
