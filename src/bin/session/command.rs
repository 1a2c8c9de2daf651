//! What the command line asks for, checked: each verb's arguments as the verbs take
//! them.

use std::ffi::OsString;
use std::path::PathBuf;

use crate::args::*;
use crate::location::{Location, LsPlace, file_only, is_pg_uri, leaf_id, location, utf8};
use crate::render::Filter;

/// What the command line asks for. FILE is any path (on Unix, any bytes); LEAF is an
/// entry id, which is always UTF-8 text; `None` asks for the default leaf (`output::default_leaf`).
pub enum Command {
    Show {
        file: Location,
        leaf: Option<String>,
        filter: Filter,
    },
    Path {
        file: Location,
        leaf: Option<String>,
        filter: Filter,
    },
    Messages {
        file: Location,
        leaf: Option<String>,
        filter: Filter,
    },
    Tree {
        file: Location,
        options: TreeArgs,
    },
    Children {
        file: Location,
        id: String,
        filter: Filter,
    },
    Leaves {
        file: Location,
        filter: Filter,
    },
    Ls {
        place: LsPlace,
        options: LsArgs,
    },
    Label {
        file: Location,
        target: String,
        text: String,
    },
    Search {
        dir: PathBuf,
        query: session::SearchQuery,
    },
    Context(crate::context::Request),
    Verify {
        file: PathBuf,
    },
    Salvage {
        file: PathBuf,
    },
    Repair {
        file: PathBuf,
    },
    Import {
        format: Option<session::interop::Format>,
        source: PathBuf,
        out: PathBuf,
        redact: bool,
    },
    View {
        file: Location,
        leaf: Option<String>,
        out: Option<PathBuf>,
        redact: bool,
    },
    Secrets {
        path: PathBuf,
        rules: RuleArgs,
    },
    Redact {
        src: PathBuf,
        out: Option<PathBuf>,
        rules: RuleArgs,
    },
    Export {
        format: session::interop::Format,
        file: PathBuf,
        leaf: Option<String>,
        out: PathBuf,
        redact: bool,
    },
    Copy {
        src: Location,
        dst: Location,
        redact: bool,
    },
    Completions(clap_complete::Shell),
    Man,
}

/// The verb as a [`Command`]; `Err` is the reason for a usage error that clap cannot
/// see (text that must be UTF-8, a location).
pub fn command(verb: Verb, pg: Option<&str>) -> Result<Command, &'static str> {
    let at = |file: OsString| location(file, pg);
    Ok(match verb {
        Verb::Show(FileLeaf { file, leaf, filter }) => Command::Show {
            file: at(file)?,
            leaf: leaf_id(leaf)?,
            filter: filter.filter(),
        },
        Verb::Path(FileLeaf { file, leaf, filter }) => Command::Path {
            file: at(file)?,
            leaf: leaf_id(leaf)?,
            filter: filter.filter(),
        },
        Verb::Messages(FileLeaf { file, leaf, filter }) => Command::Messages {
            file: at(file)?,
            leaf: leaf_id(leaf)?,
            filter: filter.filter(),
        },
        Verb::Tree {
            file,
            leaf,
            leaf_flag,
            depth,
            labels,
            kinds,
            roles,
        } => Command::Tree {
            file: at(file)?,
            options: TreeArgs {
                leaf: leaf_id(leaf.or(leaf_flag))?,
                depth,
                labels,
                filter: FilterArgs {
                    kinds,
                    roles,
                    limit: None,
                }
                .filter(),
            },
        },
        Verb::Children { file, id, filter } => Command::Children {
            file: at(file)?,
            id: utf8(id, "ID is not UTF-8 text, so it cannot be an entry id")?,
            filter: filter.filter(),
        },
        Verb::Leaves { file, filter } => Command::Leaves {
            file: at(file)?,
            filter: filter.filter(),
        },
        Verb::Ls {
            dir,
            recursive,
            limit,
            sort,
        } => Command::Ls {
            place: match (dir, pg) {
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
            },
            options: LsArgs {
                recursive,
                limit,
                by_path: matches!(sort, Sort::Path),
            },
        },
        Verb::Search {
            dir,
            query,
            limit,
            roles,
            latest,
            no_redact,
        } => Command::Search {
            dir,
            query: session::SearchQuery {
                query: utf8(query, "QUERY is not UTF-8 text")?,
                limit,
                roles: (!roles.is_empty()).then_some(roles),
                latest_path_only: latest,
                redact: !no_redact,
            },
        },
        Verb::Label { file, target, text } => Command::Label {
            file: at(file)?,
            target: utf8(
                target,
                "TARGET is not UTF-8 text, so it cannot be an entry id",
            )?,
            text: utf8(text, "TEXT is not UTF-8 text")?,
        },
        Verb::Context {
            file,
            leaf,
            max_tokens,
            reserved_output,
            safety_margin,
            on_defect,
            profile,
        } => Command::Context(crate::context::Request::new(
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
        )),
        Verb::Verify { file } => Command::Verify {
            file: file_only(file, pg)?,
        },
        Verb::Salvage { file } => Command::Salvage {
            file: file_only(file, pg)?,
        },
        Verb::Repair { file } => Command::Repair {
            file: file_only(file, pg)?,
        },
        Verb::View {
            file,
            leaf,
            out,
            no_redact,
        } => Command::View {
            file: at(file)?,
            leaf: leaf_id(leaf)?,
            out,
            redact: !no_redact,
        },
        Verb::Secrets { path, rules } => Command::Secrets { path, rules },
        Verb::Redact {
            src,
            out,
            in_place: _,
            rules,
        } => Command::Redact { src, out, rules },
        Verb::Import {
            from,
            src,
            out,
            redact,
        } => Command::Import {
            format: match from {
                ImportFormat::Auto => None,
                ImportFormat::Pi => Some(session::interop::Format::Pi),
                ImportFormat::ClaudeCode => Some(session::interop::Format::ClaudeCode),
                ImportFormat::Codex => Some(session::interop::Format::Codex),
            },
            source: file_only(src, pg)?,
            out,
            redact,
        },
        Verb::Export {
            to,
            file,
            mut leaf_out,
            no_redact,
        } => {
            let out = PathBuf::from(leaf_out.pop().unwrap_or_default());
            Command::Export {
                format: match to {
                    ExportFormat::Pi => session::interop::Format::Pi,
                    ExportFormat::ClaudeCode => session::interop::Format::ClaudeCode,
                    ExportFormat::Codex => session::interop::Format::Codex,
                },
                file: file_only(file, pg)?,
                leaf: leaf_id(leaf_out.pop())?,
                out,
                redact: !no_redact,
            }
        }
        Verb::Copy { src, dst, redact } => Command::Copy {
            src: at(src)?,
            dst: at(dst)?,
            redact,
        },
        Verb::Completions { shell } => Command::Completions(match shell {
            ShellArg::Bash => clap_complete::Shell::Bash,
            ShellArg::Zsh => clap_complete::Shell::Zsh,
            ShellArg::Fish => clap_complete::Shell::Fish,
        }),
        Verb::Man => Command::Man,
    })
}

/// The options of `tree`.
#[derive(Default)]
pub struct TreeArgs {
    /// The entry whose path is marked; default the default leaf.
    pub leaf: Option<String>,
    /// Hide entries deeper than this.
    pub depth: Option<u64>,
    /// Show each entry's label.
    pub labels: bool,
    /// Which nodes are drawn (`--kind`, `--role`).
    pub filter: Filter,
}

/// The options of `ls`.
#[derive(Default)]
pub struct LsArgs {
    pub recursive: bool,
    pub limit: Option<u64>,
    /// Sort by path instead of newest first.
    pub by_path: bool,
}
