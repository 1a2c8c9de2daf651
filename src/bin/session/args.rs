//! The command line, on clap: every verb, its arguments and its help text, parsed into
//! a [`Verb`] (`main` hands each to its module). clap gives each verb its own `--help`, `--version`, flags in any order
//! as `--flag VALUE` or `--flag=VALUE`, and a usage error (exit 64) for anything else,
//! with a suggestion for a misspelt flag.

use std::ffi::{OsStr, OsString};
use std::io::IsTerminal;
use std::path::PathBuf;

use clap::{Args, CommandFactory, Parser, Subcommand, ValueEnum};

use session::Format;

use crate::output::{DEFAULT_WIDTH, Mode, Settings, color_wanted};
use crate::render::{Filter, Kind};

/// What follows every verb's list in `session --help`: which verbs write, how text is
/// shown, and the exit codes (the README lists the same table; tests/cli.rs checks it).
const AFTER_HELP: &str = "\
Output is readable (metadata hidden: --kind metadata shows it); --json prints one
JSON document, --jsonl one JSON value per line. A session is a FILE, or in
PostgreSQL postgres://…#SESSION_ID, or --pg CONNINFO with the session id.
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
pub struct Cli {
    #[command(flatten)]
    global: Global,
    #[command(subcommand)]
    verb: Verb,
}

/// The flags every verb takes: how its result is printed, and `--pg`.
#[derive(Args)]
pub struct Global {
    /// Print the result as one JSON document (a list is one array).
    #[arg(long, global = true, conflicts_with = "jsonl")]
    json: bool,
    /// Print the result as JSON, one value per line (a list's items one per line).
    #[arg(long, global = true)]
    jsonl: bool,
    /// Colour the readable form: auto (on a terminal, unless NO_COLOR is set), always,
    /// never.
    #[arg(long, global = true, value_enum, value_name = "WHEN", default_value_t = ColorChoice::Auto)]
    color: ColorChoice,
    /// Read sessions from the PostgreSQL database CONNINFO (key=value, e.g.
    /// 'host=/var/run/postgresql dbname=agents'): each FILE is then a session id, and
    /// `ls` lists the database's sessions.
    #[arg(long, global = true, value_name = "CONNINFO")]
    pg: Option<String>,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum ColorChoice {
    Auto,
    Always,
    Never,
}

/// `--kind`, `--role`, `--limit`.
#[derive(Args)]
pub struct FilterArgs {
    /// Show only entries of KIND (repeatable). Default: messages and compactions in the
    /// readable form (metadata hidden), every kind with --json/--jsonl.
    #[arg(long = "kind", value_enum, value_name = "KIND")]
    pub kinds: Vec<KindArg>,
    /// Show only messages of role R (user, assistant, toolResult, …; repeatable).
    #[arg(long = "role", value_name = "R")]
    pub roles: Vec<String>,
    /// Show only the last N entries (after --kind and --role).
    #[arg(long, value_name = "N")]
    pub limit: Option<u64>,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum KindArg {
    Message,
    Metadata,
    Compaction,
}

impl FilterArgs {
    pub fn filter(self) -> Filter {
        Filter {
            kinds: self
                .kinds
                .into_iter()
                .map(|k| match k {
                    KindArg::Message => Kind::Message,
                    KindArg::Metadata => Kind::Metadata,
                    KindArg::Compaction => Kind::Compaction,
                })
                .collect(),
            roles: self.roles,
            limit: self.limit,
        }
    }
}

#[derive(Subcommand)]
pub enum Verb {
    /// The conversation on the active path to LEAF: roles, text, tool calls and their
    /// results folded, compactions as their summary (metadata hidden unless asked).
    #[command(after_help = "\
Examples:
  session show s.jsonl                     the conversation the agent resumes
  session show s.jsonl --role user         only what the person typed
  session show s.jsonl --limit 10          the last ten entries
  session show s.jsonl --json              the path's entries as one JSON array
  session show 'postgresql://alice@/agents?host=/var/run/postgresql#SESSION'")]
    Show(FileLeaf),
    /// The entries from the root to LEAF, one line each (--json: the entries).
    #[command(after_help = "\
Examples:
  session path s.jsonl                     one line per entry: id, what, preview
  session path s.jsonl --kind metadata     only the metadata entries
  session path s.jsonl --jsonl             the entries as JSON, one per line")]
    Path(FileLeaf),
    /// The messages on the path to LEAF, as a conversation (--json: the messages).
    #[command(after_help = "\
Examples:
  session messages s.jsonl                 the messages, readable
  session messages s.jsonl --jsonl         one message JSON per line")]
    Messages(FileLeaf),
    /// Every branch as a tree, LEAF and its path marked.
    ///
    /// A run of only children is drawn as a chain and indentation is capped, so the
    /// output stays linear in the file. LEAF defaults to the leaf an imported
    /// session's agent resumes, else the latest leaf. Metadata entries are hidden
    /// unless --kind metadata is given (their children are drawn under the nearest
    /// entry shown).
    #[command(after_help = "\
Examples:
  session tree s.jsonl                     the branches, metadata hidden
  session tree s.jsonl --depth 3 --labels  three levels, with labels
  session tree s.jsonl --kind message --kind metadata   everything
  session tree s.jsonl --json              the nodes as one JSON array")]
    Tree {
        /// The session: a file, postgres://…#SESSION_ID, or a session id with --pg.
        file: OsString,
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
        /// Show only entries of KIND (repeatable). Default: messages and compactions
        /// (every kind with --json/--jsonl).
        #[arg(long = "kind", value_enum, value_name = "KIND")]
        kinds: Vec<KindArg>,
        /// Show only messages of role R (repeatable).
        #[arg(long = "role", value_name = "R")]
        roles: Vec<String>,
    },
    /// The direct children of ID, in commit order.
    #[command(after_help = "\
Examples:
  session children s.jsonl u-1             the answers to u-1, one line each
  session children s.jsonl u-1 --json      the nodes as one JSON array")]
    Children {
        /// The session: a file, postgres://…#SESSION_ID, or a session id with --pg.
        file: OsString,
        /// The entry whose children are listed.
        id: OsString,
        #[command(flatten)]
        filter: FilterArgs,
    },
    /// Every leaf, with the latest by commit and by time, and the leaf an imported
    /// session's agent resumes (metadata leaves hidden unless asked).
    #[command(after_help = "\
Examples:
  session leaves s.jsonl                   the leaves a person would resume
  session leaves s.jsonl --kind metadata   only the metadata leaves (hidden by default)
  session leaves s.jsonl --json            the library's leaves object, plus resumeLeafId")]
    Leaves {
        /// The session: a file, postgres://…#SESSION_ID, or a session id with --pg.
        file: OsString,
        #[command(flatten)]
        filter: FilterArgs,
    },
    /// The sessions in DIR (modified, entries, state, first user text), or in a
    /// database: `session ls postgres://…` or `session ls --pg CONNINFO`.
    ///
    /// Only the head and the tail of each file are read.
    #[command(after_help = "\
Examples:
  session ls ~/.pi/sessions -r --limit 20  the 20 newest sessions, sub-folders too
  session ls 'postgresql://alice@/agents?host=/var/run/postgresql'
  session ls --pg 'host=/var/run/postgresql dbname=agents' --json")]
    Ls {
        /// The folder, or a postgres:// URI (no #); omitted with --pg.
        dir: Option<OsString>,
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
    #[command(after_help = "\
Examples:
  session search ~/.pi/sessions 'readme project'
  session search . migration --role user --latest --json")]
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
        /// Search the text as written, secrets included (by default they are redacted
        /// and never indexed; this builds a temporary index instead of the sidecar).
        #[arg(long)]
        no_redact: bool,
    },
    /// Label TARGET with TEXT (an empty TEXT clears the label).
    ///
    /// The label entry is appended under the latest entry, so "resume the latest"
    /// stays on its branch.
    #[command(after_help = "\
Examples:
  session label s.jsonl a-final 'good answer'
  session label s.jsonl a-final ''         clears the label")]
    Label {
        /// The session (opened as a writer): a file, postgres://…#SESSION_ID, or a
        /// session id with --pg.
        file: OsString,
        /// The entry labelled.
        target: OsString,
        /// The label.
        text: OsString,
    },
    /// What the model sees for LEAF: compaction, tool pairing, budget.
    ///
    /// The messages the model is sent, readable (--json: the library's build_context
    /// object), and on stderr what was used, trimmed or skipped and why.
    #[command(after_help = "\
Examples:
  session context s.jsonl                  what the agent would send now
  session context s.jsonl --max-tokens 200000 --reserved-output 8000
  session context s.jsonl u-3 --profile none --json")]
    Context {
        /// The session: a file, postgres://…#SESSION_ID, or a session id with --pg.
        file: OsString,
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
              value_parser = agents(&["auto", "none"]))]
        profile: Option<String>,
    },
    /// State, entry count and warnings (every line checked).
    #[command(after_help = "\
Examples:
  session verify s.jsonl                   exit 0 when clean, 1 when it needs repair
  session verify s.jsonl --json")]
    Verify {
        /// The session file.
        file: PathBuf,
    },
    /// Read a damaged file: every good entry is counted and every bad line reported.
    #[command(after_help = "\
Examples:
  session salvage damaged.jsonl
  session salvage damaged.jsonl --jsonl    one diagnostic per line")]
    Salvage {
        /// The session file.
        file: PathBuf,
    },
    /// Move an unterminated tail to a backup file and cut the file to its committed lines.
    #[command(after_help = "\
Example:
  session repair s.jsonl                   after `session verify` exits 1")]
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
    #[command(after_help = "\
Examples:
  session view s.jsonl -o s.html           then open s.html in a browser
  session view s.jsonl a-alt > alt.html")]
    View {
        /// The session: a file, postgres://…#SESSION_ID, or a session id with --pg.
        file: OsString,
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
    /// The report (JSON) goes to stderr; with --json or --jsonl, to stdout. OUT must
    /// not exist.
    #[command(after_help = "\
Examples:
  session import ~/.claude/projects/x/abc.jsonl abc.jsonl
  session import --from codex rollout.jsonl s.jsonl")]
    Import {
        /// The source's format; auto (the default) detects it from the first lines.
        #[arg(long, value_name = "FROM", value_parser = agents(&["auto"]), default_value = "auto")]
        from: String,
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
    /// is converted or left out, and listed in the report (JSON, on stderr; with
    /// --json or --jsonl, on stdout). LEAF defaults to the latest leaf. OUT must not
    /// exist.
    #[command(
        override_usage = "session export --to pi|claude-code|codex [--no-redact] FILE [LEAF] OUT",
        after_help = "\
Example:
  session export --to claude-code s.jsonl resumed.jsonl"
    )]
    Export {
        /// The format written.
        #[arg(long, value_name = "TO", value_parser = agents(&[]))]
        to: String,
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
    #[command(
        override_usage = "session copy [--redact] SRC DST",
        after_help = "\
Example:
  session copy s.jsonl 'postgresql://alice@/agents?host=/var/run/postgresql#s-1'"
    )]
    Copy {
        /// The source: a JSONL file or postgres://…#SESSION_ID.
        src: OsString,
        /// The destination: a new JSONL file or postgres://…#SESSION_ID.
        dst: OsString,
        /// Replace every secret with [REDACTED:RULE] in the entries written.
        #[arg(long)]
        redact: bool,
    },
    /// Print a shell completion script for SHELL.
    #[command(after_help = "\
Examples:
  session completions bash > ~/.local/share/bash-completion/completions/session
  session completions zsh > ~/.zfunc/_session
  session completions fish > ~/.config/fish/completions/session.fish")]
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: ShellArg,
    },
    /// Print the man page (roff), made from the same definitions as --help.
    #[command(after_help = "\
Example:
  session man > ~/.local/share/man/man1/session.1 && man session")]
    Man,
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

#[derive(Clone, Copy, ValueEnum)]
pub enum ShellArg {
    Bash,
    Zsh,
    Fish,
}

/// `FILE [LEAF]` and the filters.
#[derive(Args)]
pub struct FileLeaf {
    /// The session: a file, postgres://…#SESSION_ID, or a session id with --pg.
    pub file: OsString,
    /// The leaf (default: the leaf an imported session's agent resumes, else the
    /// latest leaf).
    pub leaf: Option<OsString>,
    #[command(flatten)]
    pub filter: FilterArgs,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum Sort {
    Modified,
    Path,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum OnDefect {
    Error,
    Skip,
    Keep,
    Synthesize,
}

/// The agents' names, from the library's one list, after `extra` (`auto`, `none`).
fn agents(extra: &[&'static str]) -> clap::builder::PossibleValuesParser {
    let names = extra.iter().copied().chain(Format::ALL.map(Format::name));
    clap::builder::PossibleValuesParser::new(names)
}

/// A token count: a finite number >= 0.
pub fn tokens(text: &str) -> Result<f64, String> {
    text.parse::<f64>()
        .ok()
        .filter(|n| n.is_finite() && *n >= 0.0)
        .ok_or_else(|| "takes a number >= 0".to_owned())
}

/// Why the command line was not run: help or the version to print on stdout (exit 0),
/// or a usage error for stderr (exit 64). `text` is what to print.
pub struct NotRun {
    pub text: String,
    pub usage_error: bool,
}

/// Reads the arguments after the program name: the verb as clap parsed it, how to
/// print its result, and `--pg`'s connection string.
pub fn parse(args: &[OsString]) -> Result<(Verb, Settings, Option<String>), NotRun> {
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
    let settings = settings(&cli.global);
    Ok((cli.verb, settings, cli.global.pg))
}

/// A usage error clap cannot see (text that must be UTF-8, a location), worded as
/// clap words its own.
pub fn usage_error(reason: &str) -> NotRun {
    NotRun {
        text: format!("session: {reason}\n\nFor more information, try '--help'.\n"),
        usage_error: true,
    }
}

/// The output settings from the global flags, the terminal and `NO_COLOR`.
fn settings(global: &Global) -> Settings {
    let terminal = std::io::stdout().is_terminal();
    let choice = match global.color {
        ColorChoice::Auto => "auto",
        ColorChoice::Always => "always",
        ColorChoice::Never => "never",
    };
    let width = if terminal {
        rustix::termios::tcgetwinsize(std::io::stdout())
            .ok()
            .map(|size| usize::from(size.ws_col))
            .filter(|&cols| cols >= 20)
            .unwrap_or(DEFAULT_WIDTH)
    } else {
        DEFAULT_WIDTH
    };
    Settings {
        mode: if global.json {
            Mode::Json
        } else if global.jsonl {
            Mode::Jsonl
        } else {
            Mode::Readable
        },
        color: color_wanted(choice, terminal, std::env::var_os("NO_COLOR").as_deref()),
        width,
    }
}

/// The clap definition of the command line, for completions and the man page.
pub fn definition() -> clap::Command {
    Cli::command()
}
