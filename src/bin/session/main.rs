//! `session`: restore, inspect and repair libsession JSONL files.
//!
//! Every command but `repair`, `label`, `import` and `export` (which write new files)
//! opens the file read-only: it never creates, locks or
//! writes it, so it can run beside the agent that is writing the session.
//!
//! Layout: `args` turns the command line into a [`args::Command`] (on clap), `exit` is the
//! exit-code table, `term` makes text safe for a terminal, `output` holds what every
//! verb shares (stdout, stderr notes, opening a file, printing JSON lines), and one
//! module per verb group (`read`: show/path/messages, `check`: verify/salvage/repair,
//! `tree`, `children`, `leaves`, `ls`, `search`, `label`, `context`, `interop`: import/export,
//! `view`, `copy`, `secrets`: secrets/redact).

mod args;
mod check;
mod children;
mod context;
mod copy;
mod exit;
mod interop;
mod label;
mod leaves;
mod ls;
mod node;
mod output;
mod progress;
mod read;
mod search;
mod secrets;
mod term;
mod tree;
mod view;

use std::ffi::OsString;
use std::io::Write;
use std::process::ExitCode;

use args::Command;
use output::Out;

fn main() -> ExitCode {
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    let command = match args::parse(&args) {
        Ok(command) => command,
        Err(not_run) if not_run.usage_error => {
            let _ = write!(std::io::stderr().lock(), "{}", not_run.text);
            return exit::usage();
        }
        Err(help) => {
            let mut out = Out::new();
            let printed = write!(out, "{}", help.text).and_then(|()| out.flush());
            return exit::finish(printed.map(|()| ExitCode::SUCCESS).map_err(Into::into));
        }
    };
    let mut out = Out::new();
    let outcome = match command {
        Command::Show { file, leaf } => read::show(&mut out, &file, leaf.as_deref()),
        Command::Path { file, leaf } => read::path(&mut out, &file, leaf.as_deref()),
        Command::Messages { file, leaf } => read::messages(&mut out, &file, leaf.as_deref()),
        Command::Tree { file, options } => tree::tree(&mut out, &file, &options),
        Command::Children { file, id } => children::children(&mut out, &file, &id),
        Command::Leaves { file, json } => leaves::leaves(&mut out, &file, json),
        Command::Ls { dir, options } => ls::ls(&mut out, &dir, &options),
        Command::Label { file, target, text } => label::label(&mut out, &file, &target, &text),
        Command::Search { dir, query, json } => search::search(&mut out, &dir, &query, json),
        Command::Context(request) => context::context(&mut out, &request),
        Command::Verify { file } => check::verify(&mut out, &file),
        Command::Salvage { file } => check::salvage(&mut out, &file),
        Command::Repair { file } => check::repair(&mut out, &file),
        Command::Import {
            format,
            source,
            out,
            redact,
        } => interop::import(format, &source, &out, redact),
        Command::View {
            file,
            leaf,
            out: to,
            redact,
        } => view::view(&mut out, &file, leaf, to.as_deref(), redact),
        Command::Export {
            format,
            file,
            leaf,
            out,
            redact,
        } => interop::export(format, &file, leaf.as_deref(), &out, redact),
        Command::Secrets { path, json, rules } => secrets::secrets(&mut out, &path, json, &rules),
        Command::Redact {
            src,
            out: to,
            rules,
        } => secrets::redact(&mut out, &src, to.as_deref(), &rules),
        Command::Copy { src, dst, redact } => copy::copy(&src, &dst, redact),
    };
    // Flush here, not in a destructor, so a closed pipe is seen and ends quietly.
    let outcome = outcome.and_then(|code| out.flush().map(|()| code).map_err(Into::into));
    exit::finish(outcome)
}
