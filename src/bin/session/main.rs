//! `session`: restore, inspect and repair libsession JSONL files.
//!
//! Every command but `repair` opens the file read-only: it never creates, locks or
//! writes it, so it can run beside the agent that is writing the session.
//!
//! Layout: `args` turns the command line into a [`args::Command`], `exit` is the
//! exit-code table, `term` makes text safe for a terminal, `output` holds what every
//! verb shares (opening a file, printing JSON lines), and one module per verb group
//! (`read`: show/path/messages, `check`: verify/salvage/repair, `tree`,
//! `interop`: import/export).

mod args;
mod check;
mod exit;
mod interop;
mod output;
mod read;
mod term;
mod tree;

use std::process::ExitCode;

use args::Command;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args::parse(&args) {
        Command::Show { file, leaf } => read::show(file, leaf),
        Command::Path { file, leaf } => read::path(file, leaf),
        Command::Messages { file, leaf } => read::messages(file, leaf),
        Command::Tree { file, leaf } => tree::tree(file, leaf),
        Command::Verify { file } => check::verify(file),
        Command::Salvage { file } => check::salvage(file),
        Command::Repair { file } => check::repair(file),
        Command::Import {
            format,
            source,
            out,
        } => interop::import(format, source, out),
        Command::ExportPi { file, leaf, out } => interop::export_pi(file, leaf, out),
        Command::Help => {
            println!("{}", args::USAGE);
            return ExitCode::SUCCESS;
        }
        Command::Usage => {
            eprintln!("{}", args::USAGE);
            return exit::usage();
        }
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("session: {e}");
            exit::for_error(&e)
        }
    }
}
