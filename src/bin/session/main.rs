//! `session`: restore, inspect and repair libsession JSONL files.
//!
//! Every command but `repair`, `label`, `import` and `export` (which write new files)
//! opens the file read-only: it never creates, locks or
//! writes it, so it can run beside the agent that is writing the session.
//!
//! Layout: `args` turns the command line into a [`args::Verb`] and the output
//! settings (on clap), `location` parses where a session is, `main` hands each verb to
//! its module, `exit` is the exit-code table, `term` makes text safe for a
//! terminal, `output` holds what every verb shares (stdout and the one rule of
//! `--json`/`--jsonl`, colour, stderr notes, opening a store location), `render` the
//! readable form of entries and messages, and one module per verb group (`read`:
//! show/path/messages, `check`: verify/salvage/repair, `tree`, `children`, `leaves`,
//! `ls`, `search`, `label`, `context`, `interop`: import/export, `view`, `copy`, `secrets`:
//! secrets/redact, `help`: completions and the man page).

mod args;
mod check;
mod children;
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
use std::path::PathBuf;
use std::process::ExitCode;

use args::{FileLeaf, FilterArgs, OnDefect, ShellArg, Sort, Verb};
use location::{LsPlace, file_only, is_pg_uri, leaf_id, location, utf8};
use output::{Out, Outcome};
use session::Format;

fn main() -> ExitCode {
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    let parsed = args::parse(&args);
    let (verb, settings, pg) = match parsed {
        Ok(parsed) => parsed,
        Err(not_run) if not_run.usage_error => return usage(&not_run.text),
        Err(help) => {
            let mut out = Out::new(output::Settings::default());
            let printed = write!(out, "{}", help.text).and_then(|()| out.flush());
            return exit::finish(printed.map(|()| ExitCode::SUCCESS).map_err(Into::into));
        }
    };
    let mut out = Out::new(settings);
    let outcome = match run(&mut out, verb, pg.as_deref()) {
        Ok(outcome) => outcome,
        Err(reason) => return usage(&args::usage_error(reason).text),
    };
    // Flush here, not in a destructor, so a closed pipe is seen and ends quietly.
    let outcome = outcome.and_then(|code| out.flush().map(|()| code).map_err(Into::into));
    exit::finish(outcome)
}

/// A usage error on stderr, exit 64.
fn usage(text: &str) -> ExitCode {
    let _ = write!(std::io::stderr().lock(), "{text}");
    exit::usage()
}

/// Runs `verb`. What clap cannot check (text that must be UTF-8, a location) is
/// checked before the verb starts: `Err` is the reason for a usage error, and
/// nothing has been printed then.
fn run(out: &mut Out, verb: Verb, pg: Option<&str>) -> Result<Outcome, &'static str> {
    let at = |file: OsString| location(file, pg);
    Ok(match verb {
        Verb::Show(FileLeaf { file, leaf, filter }) => {
            read::show(out, &at(file)?, leaf_id(leaf)?.as_deref(), &filter.filter())
        }
        Verb::Path(FileLeaf { file, leaf, filter }) => {
            read::path(out, &at(file)?, leaf_id(leaf)?.as_deref(), &filter.filter())
        }
        Verb::Messages(FileLeaf { file, leaf, filter }) => {
            read::messages(out, &at(file)?, leaf_id(leaf)?.as_deref(), &filter.filter())
        }
        Verb::Tree {
            file,
            leaf,
            leaf_flag,
            depth,
            labels,
            kinds,
            roles,
        } => {
            let file = at(file)?;
            let options = tree::TreeArgs {
                leaf: leaf_id(leaf.or(leaf_flag))?,
                depth,
                labels,
                filter: FilterArgs {
                    kinds,
                    roles,
                    limit: None,
                }
                .filter(),
            };
            tree::tree(out, &file, &options)
        }
        Verb::Children { file, id, filter } => {
            let file = at(file)?;
            let id = utf8(id, "ID is not UTF-8 text, so it cannot be an entry id")?;
            children::children(out, &file, &id, &filter.filter())
        }
        Verb::Leaves { file, filter } => leaves::leaves(out, &at(file)?, &filter.filter()),
        Verb::Ls {
            dir,
            recursive,
            limit,
            sort,
        } => {
            let place = match (dir, pg) {
                (None, Some(conninfo)) => LsPlace::Postgres(conninfo.to_owned()),
                (Some(_), Some(_)) => {
                    return Err("ls --pg CONNINFO lists that database; give no DIR with it");
                }
                (None, None) => return Err("ls needs a DIR, a postgres:// URI or --pg CONNINFO"),
                (Some(dir), None) if is_pg_uri(&dir) => {
                    let uri = utf8(dir, "a postgres:// argument must be UTF-8 text")?;
                    let uri = uri.split_once('#').map_or(uri.as_str(), |(u, _)| u);
                    LsPlace::Postgres(uri.to_owned())
                }
                (Some(dir), None) => LsPlace::Dir(PathBuf::from(dir)),
            };
            let options = ls::LsArgs {
                recursive,
                limit,
                by_path: matches!(sort, Sort::Path),
            };
            ls::ls(out, &place, &options)
        }
        Verb::Search {
            dir,
            query,
            limit,
            roles,
            latest,
            no_redact,
        } => {
            let query = session::SearchQuery {
                query: utf8(query, "QUERY is not UTF-8 text")?,
                limit,
                roles: (!roles.is_empty()).then_some(roles),
                latest_path_only: latest,
                redact: !no_redact,
            };
            search::search(out, &dir, &query)
        }
        Verb::Label { file, target, text } => {
            let file = at(file)?;
            let target = utf8(
                target,
                "TARGET is not UTF-8 text, so it cannot be an entry id",
            )?;
            let text = utf8(text, "TEXT is not UTF-8 text")?;
            label::label(out, &file, &target, &text)
        }
        Verb::Context {
            file,
            leaf,
            max_tokens,
            reserved_output,
            safety_margin,
            on_defect,
            profile,
        } => {
            let request = context::Request::new(
                at(file)?,
                leaf_id(leaf)?,
                on_defect.map(|d| match d {
                    OnDefect::Error => "error",
                    OnDefect::Skip => "skip",
                    OnDefect::Keep => "keep",
                    OnDefect::Synthesize => "synthesize",
                }),
                profile.as_deref(),
                [
                    ("maxTokens", max_tokens),
                    ("reservedOutput", reserved_output),
                    ("safetyMargin", safety_margin),
                ],
            );
            context::context(out, &request)
        }
        Verb::Verify { file } => check::verify(out, &file_only(file, pg)?),
        Verb::Salvage { file } => check::salvage(out, &file_only(file, pg)?),
        Verb::Repair { file } => check::repair(out, &file_only(file, pg)?),
        Verb::View {
            file,
            leaf,
            out: to,
            no_redact,
        } => {
            let file = at(file)?;
            view::view(out, &file, leaf_id(leaf)?, to.as_deref(), !no_redact)
        }
        Verb::Secrets { path, rules } => secrets::secrets(out, &path, &rules),
        Verb::Redact {
            src,
            out: to,
            in_place: _,
            rules,
        } => secrets::redact(out, &src, to.as_deref(), &rules),
        Verb::Import {
            from,
            src,
            out: to,
            redact,
        } => {
            // `auto` (no agent's name) detects the format.
            let format = Format::from_name(&from);
            interop::import(out, format, &file_only(src, pg)?, &to, redact)
        }
        Verb::Export {
            to,
            file,
            mut leaf_out,
            no_redact,
        } => {
            let format = Format::from_name(&to).ok_or("--to takes an agent's name")?;
            let target = PathBuf::from(leaf_out.pop().unwrap_or_default());
            let file = file_only(file, pg)?;
            let leaf = leaf_id(leaf_out.pop())?;
            interop::export(out, format, &file, leaf.as_deref(), &target, !no_redact)
        }
        Verb::Copy { src, dst, redact } => copy::copy(out, &at(src)?, &at(dst)?, redact),
        Verb::Completions { shell } => help::completions(
            out,
            match shell {
                ShellArg::Bash => clap_complete::Shell::Bash,
                ShellArg::Zsh => clap_complete::Shell::Zsh,
                ShellArg::Fish => clap_complete::Shell::Fish,
            },
        ),
        Verb::Man => help::man(out),
    })
}
