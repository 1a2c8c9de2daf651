//! `session`: restore, inspect and repair libsession JSONL files.
//!
//! Every command but `repair`, `label`, `import` and `export` (which write new files)
//! opens the file read-only: it never creates, locks or
//! writes it, so it can run beside the agent that is writing the session.
//!
//! Layout: `args` turns the command line into a [`args::Command`] and the output
//! settings (on clap), `exit` is the exit-code table, `term` makes text safe for a
//! terminal, `output` holds what every verb shares (stdout and the one rule of
//! `--json`/`--jsonl`, colour, stderr notes, opening a store location), `render` the
//! readable form of entries and messages, and one module per verb group (`read`:
//! show/path/messages, `check`: verify/salvage/repair, `tree`, `children`, `leaves`,
//! `ls`, `search`, `label`, `context`, `interop`: import/export, `view`, `copy`, `secrets`:
//! secrets/redact, `help`: completions and the man page).

mod args;
mod check;
mod children;
mod command;
mod context;
mod copy;
mod exit;
mod help;
mod interop;
mod label;
mod leaves;
mod location;
mod ls;
mod node;
mod output;
mod progress;
mod read;
mod render;
mod search;
mod secrets;
mod term;
mod tree;
mod view;

use std::ffi::OsString;
use std::io::Write;
use std::process::ExitCode;

use command::Command;
use output::Out;

fn main() -> ExitCode {
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    let (command, settings) = match args::parse(&args) {
        Ok(parsed) => parsed,
        Err(not_run) if not_run.usage_error => {
            let _ = write!(std::io::stderr().lock(), "{}", not_run.text);
            return exit::usage();
        }
        Err(help) => {
            let mut out = Out::new(output::Settings::default());
            let printed = write!(out, "{}", help.text).and_then(|()| out.flush());
            return exit::finish(printed.map(|()| ExitCode::SUCCESS).map_err(Into::into));
        }
    };
    let mut out = Out::new(settings);
    let outcome = match command {
        Command::Show { file, leaf, filter } => {
            read::show(&mut out, &file, leaf.as_deref(), &filter)
        }
        Command::Path { file, leaf, filter } => {
            read::path(&mut out, &file, leaf.as_deref(), &filter)
        }
        Command::Messages { file, leaf, filter } => {
            read::messages(&mut out, &file, leaf.as_deref(), &filter)
        }
        Command::Tree { file, options } => tree::tree(&mut out, &file, &options),
        Command::Children { file, id, filter } => children::children(&mut out, &file, &id, &filter),
        Command::Leaves { file, filter } => leaves::leaves(&mut out, &file, &filter),
        Command::Ls { place, options } => ls::ls(&mut out, &place, &options),
        Command::Label { file, target, text } => label::label(&mut out, &file, &target, &text),
        Command::Search { dir, query } => search::search(&mut out, &dir, &query),
        Command::Context(request) => context::context(&mut out, &request),
        Command::Verify { file } => check::verify(&mut out, &file),
        Command::Salvage { file } => check::salvage(&mut out, &file),
        Command::Repair { file } => check::repair(&mut out, &file),
        Command::Import {
            format,
            source,
            out: to,
            redact,
        } => interop::import(&mut out, format, &source, &to, redact),
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
            out: to,
            redact,
        } => interop::export(&mut out, format, &file, leaf.as_deref(), &to, redact),
        Command::Secrets { path, rules } => secrets::secrets(&mut out, &path, &rules),
        Command::Redact {
            src,
            out: to,
            rules,
        } => secrets::redact(&mut out, &src, to.as_deref(), &rules),
        Command::Copy { src, dst, redact } => copy::copy(&mut out, &src, &dst, redact),
        Command::Completions(shell) => help::completions(&mut out, shell),
        Command::Man => help::man(&mut out),
    };
    // Flush here, not in a destructor, so a closed pipe is seen and ends quietly.
    let outcome = outcome.and_then(|code| out.flush().map(|()| code).map_err(Into::into));
    exit::finish(outcome)
}
