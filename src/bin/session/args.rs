//! The command line, on clap: every verb, its arguments and its help text, parsed into
//! a [`Command`]. clap gives each verb its own `--help`, `--version`, flags in any order
//! as `--flag VALUE` or `--flag=VALUE`, and a usage error (exit 64) for anything else,
//! with a suggestion for a misspelt flag.

use std::ffi::{OsStr, OsString};
use std::io::IsTerminal;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// What follows every verb's list in `session --help`: which verbs write, how text is
/// shown, and the exit codes (the README lists the same table; tests/cli.rs checks it).
const AFTER_HELP: &str = "\
Every verb but repair, label and redact --in-place opens FILE read-only (import,
export, redact and view -o create a new OUT and never overwrite one; search writes only
its index, DIR/.session-search.db). Where LEAF is optional it defaults to the leaf the
agent of an imported session resumes (recorded by import), else to the latest leaf.
Text read from the file is shown with control characters escaped (\\xHH, \\u{HHHH});
JSON output stays JSON.

exit codes (the same for every verb):
  0    done; the file is clean
  1    done, but the file needs repair (an unterminated tail was left out of the
       output; `session repair FILE`), salvage found damaged lines, ls
       listed a session with an error, search could not read a file or line,
       or secrets found a secret
  2    the file is corrupt or the request failed (e.g. no such leaf)
  3    an I/O error (including a FILE that is missing or not a regular file)
  4    the file is locked by a writer (repair, label)
  64   a usage error (unknown verb or flag, wrong arguments, a LEAF that is not UTF-8)
  141  stdout was closed before the output was written (`| head -1`); nothing is
       printed on stderr";

/// `session`: restore, inspect and repair libsession JSONL files.
#[derive(Parser)]
#[command(
    name = "session",
    version,
    about = "Restore, inspect and repair libsession session files (JSONL).",
    after_help = AFTER_HELP,
    subcommand_required = true,
    arg_required_else_help = true
)]
struct Cli {
    #[command(subcommand)]
    verb: Verb,
}

#[derive(Subcommand)]
enum Verb {
    /// The active path to LEAF and its messages.
    Show(FileLeaf),
    /// The entries from the root to LEAF (JSON, one per line).
    Path(FileLeaf),
    /// The messages on the path to LEAF (JSON, one per line).
    Messages(FileLeaf),
    /// Every branch as a tree, LEAF and its path marked.
    ///
    /// A run of only children is drawn as a chain and indentation is capped, so the
    /// output stays linear in the file. LEAF defaults to the leaf an imported
    /// session's agent resumes, else the latest leaf.
    Tree {
        /// The session file.
        file: PathBuf,
        /// The leaf whose path is marked.
        leaf: Option<OsString>,
        /// The same as LEAF.
        #[arg(long = "leaf", value_name = "ID", conflicts_with = "leaf")]
        leaf_flag: Option<OsString>,
        /// Hide entries deeper than N.
        #[arg(long, value_name = "N")]
        depth: Option<u64>,
        /// Show each entry's label.
        #[arg(long)]
        labels: bool,
        /// Print the nodes as JSON, one per line.
        #[arg(long)]
        json: bool,
    },
    /// The direct children of ID, in commit order.
    Children {
        /// The session file.
        file: PathBuf,
        /// The entry whose children are listed.
        id: OsString,
    },
    /// Every leaf, with the latest by commit and by time, and the leaf an imported
    /// session's agent resumes.
    Leaves {
        /// The session file.
        file: PathBuf,
        /// Print one JSON object: the library's leaves, plus resumeLeafId.
        #[arg(long)]
        json: bool,
    },
    /// The sessions in DIR: modified, entries, state, first user text.
    ///
    /// Only the head and the tail of each file are read.
    Ls {
        /// The folder.
        dir: PathBuf,
        /// Look into sub-folders too.
        #[arg(short, long)]
        recursive: bool,
        /// List at most N sessions.
        #[arg(long, value_name = "N")]
        limit: Option<u64>,
        /// The order: newest first, or by path.
        #[arg(long, value_enum, default_value_t = Sort::Modified)]
        sort: Sort,
    },
    /// Find QUERY in the sessions of DIR: one hit per line, best first.
    ///
    /// Each word of QUERY must occur in the text a person reads (a substring, in any
    /// case; CJK text matches inside words). A line is PATH, ENTRY, ROLE, * when the
    /// entry is on the session's latest path (else -), and a snippet. The index,
    /// DIR/.session-search.db, is brought up to date first, reading only what was
    /// appended since the last search; deleting it loses nothing. Where it cannot be
    /// written (a folder you may only read), a temporary index is built instead.
    Search {
        /// The folder of sessions.
        dir: PathBuf,
        /// The words to find.
        query: OsString,
        /// Show at most N hits (1 to 1000).
        #[arg(long, value_name = "N", default_value_t = 20,
              value_parser = clap::value_parser!(u64).range(1..=1000))]
        limit: u64,
        /// Only hits of role R (user, assistant, toolResult, compaction, …); repeatable.
        #[arg(long = "role", value_name = "R")]
        roles: Vec<String>,
        /// Only hits on the path to each session's latest entry.
        #[arg(long)]
        latest: bool,
        /// Print the result as one JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Label TARGET with TEXT (an empty TEXT clears the label).
    ///
    /// The label entry is appended under the latest entry, so "resume the latest"
    /// stays on its branch.
    Label {
        /// The session file (opened as a writer).
        file: PathBuf,
        /// The entry labelled.
        target: OsString,
        /// The label.
        text: OsString,
    },
    /// What the model sees for LEAF: compaction, tool pairing, budget.
    ///
    /// One JSON line on stdout (the library's build_context), and on stderr what was
    /// used, trimmed or skipped and why.
    Context {
        /// The session file.
        file: PathBuf,
        /// The leaf (default: the leaf an imported session's agent resumes, else the
        /// latest leaf).
        leaf: Option<OsString>,
        /// The model's context window, in tokens: turns on the budget.
        #[arg(long, value_name = "N", value_parser = tokens)]
        max_tokens: Option<f64>,
        /// Tokens kept free for the reply (needs --max-tokens).
        #[arg(long, value_name = "N", value_parser = tokens, requires = "max_tokens")]
        reserved_output: Option<f64>,
        /// Tokens kept free as a margin (needs --max-tokens).
        #[arg(long, value_name = "N", value_parser = tokens, requires = "max_tokens")]
        safety_margin: Option<f64>,
        /// What to do with an interaction whose tool calls and results do not pair.
        #[arg(long, value_enum, value_name = "WHAT")]
        on_defect: Option<OnDefect>,
        /// Send as this agent does: auto (the default) the agent an imported session
        /// came from, none for the library's own rules.
        #[arg(long, value_name = "AGENT",
              value_parser = ["auto", "none", "pi", "claude-code", "codex"])]
        profile: Option<String>,
    },
    /// State, entry count and warnings (every line checked).
    Verify {
        /// The session file.
        file: PathBuf,
    },
    /// Read a damaged file: every good entry is counted and every bad line reported.
    Salvage {
        /// The session file.
        file: PathBuf,
    },
    /// Move an unterminated tail to a backup file and cut the file to its committed lines.
    Repair {
        /// The session file (opened as a writer).
        file: PathBuf,
    },
    /// One self-contained HTML page of FILE: the tree and LEAF's branch.
    ///
    /// The page works offline (no request of any kind) and shows session text as
    /// text, never as markup or script. Any node can be chosen in the page. LEAF
    /// defaults to the leaf an imported session's agent resumes, else the latest
    /// leaf; without -o the page goes to stdout.
    View {
        /// The session file.
        file: PathBuf,
        /// The leaf whose branch the page opens on.
        leaf: Option<OsString>,
        /// Write the page to OUT, a new file (never replacing one).
        #[arg(short = 'o', long = "out", value_name = "OUT.html")]
        out: Option<PathBuf>,
        /// Keep secrets in the page (by default they are redacted).
        #[arg(long)]
        no_redact: bool,
    },
    /// Convert another agent's session file into a new libsession file.
    ///
    /// The report (JSON) goes to stderr. OUT must not exist.
    Import {
        /// The source's format; auto (the default) detects it from the first lines.
        #[arg(long, value_enum, default_value = "auto")]
        from: ImportFormat,
        /// The other agent's session file.
        src: PathBuf,
        /// The new libsession file.
        out: PathBuf,
        /// Replace every secret with [REDACTED:RULE] in the entries written.
        #[arg(long)]
        redact: bool,
    },
    /// Write FILE as a new session file of another agent that resumes at LEAF.
    ///
    /// pi gets the whole tree; Claude Code and Codex get what they send for LEAF (the
    /// context under their profile), as lines they resume. What the agent cannot carry
    /// is converted or left out, and listed in the report (JSON, on stderr). LEAF
    /// defaults to the latest leaf. OUT must not exist.
    #[command(
        override_usage = "session export --to pi|claude-code|codex [--no-redact] FILE [LEAF] OUT"
    )]
    Export {
        /// The format written.
        #[arg(long, value_enum)]
        to: ExportFormat,
        /// The session file.
        file: PathBuf,
        /// The leaf the agent resumes at (default: the latest leaf), then OUT, the new
        /// file.
        #[arg(value_name = "LEAF OUT", num_args = 1..=2, required = true)]
        leaf_out: Vec<OsString>,
        /// Keep secrets in the file written (by default they are redacted).
        #[arg(long)]
        no_redact: bool,
    },
    /// Find secrets (API keys, tokens, private keys, passwords) in sessions.
    ///
    /// PATH is a session file or a folder of them (its *.jsonl files). A line is PATH,
    /// ENTRY, POINTER (the string in the entry), RULE and FINGERPRINT (12 hex digits of
    /// the secret's SHA-256); the secret itself is never printed. Exits 1 when a secret
    /// was found.
    Secrets {
        /// A session file or a folder of them.
        path: PathBuf,
        /// Print the result as one JSON object.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        rules: RuleArgs,
    },
    /// Write SRC with every secret replaced by [REDACTED:RULE] to OUT, a new file.
    ///
    /// Only the bytes of each secret change. With --in-place, FILE is rewritten under
    /// the writer's lock, through a temporary file renamed over it (no backup copy is
    /// kept). The report (JSON) goes to stdout.
    #[command(override_usage = "session redact SRC OUT\n       session redact --in-place FILE")]
    Redact {
        /// The session file.
        src: PathBuf,
        /// The new file (must not exist).
        #[arg(required_unless_present = "in_place", conflicts_with = "in_place")]
        out: Option<PathBuf>,
        /// Rewrite SRC itself.
        #[arg(long)]
        in_place: bool,
        #[command(flatten)]
        rules: RuleArgs,
    },
    /// Copy a session, entry for entry and byte for byte, between a JSONL file and a
    /// PostgreSQL database.
    ///
    /// SRC and DST are each a JSONL path or postgres://…#SESSION_ID (a connection URI,
    /// the session id after #). DST must be a new file or an empty session. All or
    /// nothing: a failure leaves DST as it was.
    #[command(override_usage = "session copy [--redact] SRC DST")]
    Copy {
        /// The source: a JSONL file or postgres://…#SESSION_ID.
        src: OsString,
        /// The destination: a new JSONL file or postgres://…#SESSION_ID.
        dst: OsString,
        /// Replace every secret with [REDACTED:RULE] in the entries written.
        #[arg(long)]
        redact: bool,
    },
}

/// The rules of `secrets` and `redact`.
#[derive(Args, Clone, Default)]
pub struct RuleArgs {
    /// Also apply the rules in FILE: a JSON array of {"name": …, "pattern": …}.
    #[arg(long = "rules", value_name = "FILE")]
    pub rules: Option<PathBuf>,
    /// A value never reported or redacted (repeatable).
    #[arg(long = "allow", value_name = "VALUE")]
    pub allow: Vec<String>,
}

/// `FILE [LEAF]`.
#[derive(Args)]
struct FileLeaf {
    /// The session file.
    file: PathBuf,
    /// The leaf (default: the leaf an imported session's agent resumes, else the
    /// latest leaf).
    leaf: Option<OsString>,
}

#[derive(Clone, Copy, ValueEnum)]
enum Sort {
    Modified,
    Path,
}

#[derive(Clone, Copy, ValueEnum)]
enum OnDefect {
    Error,
    Skip,
    Keep,
    Synthesize,
}

#[derive(Clone, Copy, ValueEnum)]
enum ImportFormat {
    Auto,
    Pi,
    ClaudeCode,
    Codex,
}

#[derive(Clone, Copy, ValueEnum)]
enum ExportFormat {
    Pi,
    ClaudeCode,
    Codex,
}

/// A token count: a finite number >= 0.
fn tokens(text: &str) -> Result<f64, String> {
    text.parse::<f64>()
        .ok()
        .filter(|n| n.is_finite() && *n >= 0.0)
        .ok_or_else(|| "takes a number >= 0".to_owned())
}

/// What the command line asks for. FILE is any path (on Unix, any bytes); LEAF is an
/// entry id, which is always UTF-8 text; `None` asks for the default leaf (`output::default_leaf`).
pub enum Command {
    Show {
        file: PathBuf,
        leaf: Option<String>,
    },
    Path {
        file: PathBuf,
        leaf: Option<String>,
    },
    Messages {
        file: PathBuf,
        leaf: Option<String>,
    },
    Tree {
        file: PathBuf,
        options: TreeArgs,
    },
    Children {
        file: PathBuf,
        id: String,
    },
    Leaves {
        file: PathBuf,
        json: bool,
    },
    Ls {
        dir: PathBuf,
        options: LsArgs,
    },
    Label {
        file: PathBuf,
        target: String,
        text: String,
    },
    Search {
        dir: PathBuf,
        query: session::SearchQuery,
        json: bool,
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
        file: PathBuf,
        leaf: Option<String>,
        out: Option<PathBuf>,
        redact: bool,
    },
    Secrets {
        path: PathBuf,
        json: bool,
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
        src: Place,
        dst: Place,
        redact: bool,
    },
}

/// Where `copy` reads or writes a session.
pub enum Place {
    File(PathBuf),
    Postgres {
        conninfo: String,
        session_id: String,
    },
}

/// A `postgres://` or `postgresql://` URI with `#SESSION_ID`, or a file path.
fn place(arg: OsString) -> Result<Place, &'static str> {
    let is_uri = arg
        .to_str()
        .is_some_and(|t| t.starts_with("postgres://") || t.starts_with("postgresql://"));
    if !is_uri {
        return Ok(Place::File(PathBuf::from(arg)));
    }
    let text = utf8(arg, "a postgres:// argument must be UTF-8 text")?;
    match text.rsplit_once('#') {
        Some((conninfo, session_id)) if !session_id.is_empty() => Ok(Place::Postgres {
            conninfo: conninfo.to_owned(),
            session_id: session_id.to_owned(),
        }),
        _ => Err("a postgres:// argument names its session after #: postgres://…#SESSION_ID"),
    }
}

/// Why the command line was not run: help or the version to print on stdout (exit 0),
/// or a usage error for stderr (exit 64). `text` is what to print.
pub struct NotRun {
    pub text: String,
    pub usage_error: bool,
}

/// Reads the arguments after the program name.
pub fn parse(args: &[OsString]) -> Result<Command, NotRun> {
    let all = std::iter::once(OsStr::new("session")).chain(args.iter().map(OsString::as_os_str));
    let cli = Cli::try_parse_from(all).map_err(|e| {
        let usage_error = e.use_stderr();
        // Styled only for a terminal, as clap itself would print it.
        let terminal = if usage_error {
            std::io::stderr().is_terminal()
        } else {
            std::io::stdout().is_terminal()
        };
        let text = e.render();
        NotRun {
            text: if terminal {
                text.ansi().to_string()
            } else {
                text.to_string()
            },
            usage_error,
        }
    })?;
    command(cli.verb).map_err(|reason| NotRun {
        text: format!("session: {reason}\n\nFor more information, try '--help'.\n"),
        usage_error: true,
    })
}

/// The verb as a [`Command`]; `Err` is the reason for a usage error that clap cannot
/// see (text that must be UTF-8).
fn command(verb: Verb) -> Result<Command, &'static str> {
    Ok(match verb {
        Verb::Show(FileLeaf { file, leaf }) => Command::Show {
            file,
            leaf: leaf_id(leaf)?,
        },
        Verb::Path(FileLeaf { file, leaf }) => Command::Path {
            file,
            leaf: leaf_id(leaf)?,
        },
        Verb::Messages(FileLeaf { file, leaf }) => Command::Messages {
            file,
            leaf: leaf_id(leaf)?,
        },
        Verb::Tree {
            file,
            leaf,
            leaf_flag,
            depth,
            labels,
            json,
        } => Command::Tree {
            file,
            options: TreeArgs {
                leaf: leaf_id(leaf.or(leaf_flag))?,
                depth,
                labels,
                json,
            },
        },
        Verb::Children { file, id } => Command::Children {
            file,
            id: utf8(id, "ID is not UTF-8 text, so it cannot be an entry id")?,
        },
        Verb::Leaves { file, json } => Command::Leaves { file, json },
        Verb::Ls {
            dir,
            recursive,
            limit,
            sort,
        } => Command::Ls {
            dir,
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
            json,
        } => Command::Search {
            dir,
            query: session::SearchQuery {
                query: utf8(query, "QUERY is not UTF-8 text")?,
                limit,
                roles: (!roles.is_empty()).then_some(roles),
                latest_path_only: latest,
            },
            json,
        },
        Verb::Label { file, target, text } => Command::Label {
            file,
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
            file,
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
        Verb::Verify { file } => Command::Verify { file },
        Verb::Salvage { file } => Command::Salvage { file },
        Verb::Repair { file } => Command::Repair { file },
        Verb::View {
            file,
            leaf,
            out,
            no_redact,
        } => Command::View {
            file,
            leaf: leaf_id(leaf)?,
            out,
            redact: !no_redact,
        },
        Verb::Secrets { path, json, rules } => Command::Secrets { path, json, rules },
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
            source: src,
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
                file,
                leaf: leaf_id(leaf_out.pop())?,
                out,
                redact: !no_redact,
            }
        }
        Verb::Copy { src, dst, redact } => Command::Copy {
            src: place(src)?,
            dst: place(dst)?,
            redact,
        },
    })
}

const LEAF_NOT_UTF8: &str = "LEAF is not UTF-8 text, so it cannot be an entry id";

fn leaf_id(leaf: Option<OsString>) -> Result<Option<String>, &'static str> {
    leaf.map(|l| utf8(l, LEAF_NOT_UTF8)).transpose()
}

fn utf8(text: OsString, reason: &'static str) -> Result<String, &'static str> {
    text.into_string().map_err(|_| reason)
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
    /// Nodes as JSON, one per line.
    pub json: bool,
}

/// The options of `ls`.
#[derive(Default)]
pub struct LsArgs {
    pub recursive: bool,
    pub limit: Option<u64>,
    /// Sort by path instead of newest first.
    pub by_path: bool,
}
