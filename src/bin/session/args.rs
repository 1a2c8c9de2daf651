//! The command line: the usage text and the parse into a [`Command`].

use std::ffi::OsString;
use std::path::Path;

pub const USAGE: &str = "usage:
  session show FILE LEAF       the active path to LEAF and its messages
  session path FILE LEAF       the entries from the root to LEAF (JSON, one per line)
  session messages FILE LEAF   the messages on that path (JSON, one per line)
  session tree FILE [LEAF] [--leaf ID] [--depth N] [--labels] [--json]
                               every branch as a tree (a run of only children is
                               drawn as a chain, indentation is capped); LEAF (default:
                               the last entry) and its path are marked; --depth N
                               hides entries deeper than N; --labels shows labels;
                               --json prints the nodes as JSON, one per line
  session children FILE ID     the direct children of ID, in commit order
  session leaves FILE          every leaf, with the latest by commit and by time
  session ls DIR [--recursive] [--limit N] [--sort modified|path]
                               the sessions in DIR: modified, entries, state, first
                               user text (head and tail of each file only)
  session label FILE TARGET TEXT
                               label TARGET with TEXT (empty TEXT clears the label);
                               the label entry is appended under the latest entry
  session context FILE LEAF [--max-tokens N] [--reserved-output N]
                  [--safety-margin N] [--on-defect error|skip|keep]
                               what the model sees for LEAF (compaction, tool
                               pairing, budget): one JSON line on stdout, and on
                               stderr what was used, trimmed or skipped and why
  session verify FILE          state, entry count and warnings
  session salvage FILE         read a damaged file: every good entry is counted and
                               every bad line reported
  session repair FILE          move an unterminated tail to a backup file and cut
                               the file to its committed lines
  session import --from pi|claude-code|codex SRC OUT
                               convert another agent's session file into a new
                               libsession file OUT; the report (JSON) on stderr
  session export --to pi FILE LEAF OUT
                               write FILE's tree as a new pi session file OUT that
                               resumes at LEAF

Every verb but repair and label opens FILE read-only (import and export create a new
OUT and never overwrite one). Text read from the file is
shown with control characters escaped (\\xHH, \\u{HHHH}); JSON output stays JSON.

exit codes (the same for every verb):
  0    done; the file is clean
  1    done, but the file needs repair (an unterminated tail was left out of the
       output; `session repair FILE`), salvage found damaged lines, or ls
       listed a session with an error
  2    the file is corrupt or the request failed (e.g. no such leaf)
  3    an I/O error (including a FILE that is missing or not a regular file)
  4    the file is locked by a writer (repair, label)
  64   a usage error (unknown verb, wrong arguments, a LEAF that is not UTF-8)
  141  stdout was closed before the output was written (`| head -1`); nothing is
       printed on stderr";

/// What the command line asks for. FILE is any path (on Unix, any bytes); LEAF is an
/// entry id, which is always UTF-8 text.
pub enum Command<'a> {
    Show {
        file: &'a Path,
        leaf: &'a str,
    },
    Path {
        file: &'a Path,
        leaf: &'a str,
    },
    Messages {
        file: &'a Path,
        leaf: &'a str,
    },
    Tree {
        file: &'a Path,
        options: TreeArgs<'a>,
    },
    Children {
        file: &'a Path,
        id: &'a str,
    },
    Leaves {
        file: &'a Path,
    },
    Ls {
        dir: &'a Path,
        options: LsArgs,
    },
    Label {
        file: &'a Path,
        target: &'a str,
        text: &'a str,
    },
    Context(crate::context::Request<'a>),
    Verify {
        file: &'a Path,
    },
    Salvage {
        file: &'a Path,
    },
    Repair {
        file: &'a Path,
    },
    Import {
        format: session::interop::Format,
        source: &'a Path,
        out: &'a Path,
    },
    ExportPi {
        file: &'a Path,
        leaf: &'a str,
        out: &'a Path,
    },
    /// `-h`, `--help`, `help`: the usage text on stdout, exit 0.
    Help,
    /// Anything else: the reason, if there is more to say, and the usage text on
    /// stderr, exit 64.
    Usage(Option<&'static str>),
}

/// Reads the arguments after the program name.
pub fn parse(args: &[OsString]) -> Command<'_> {
    let Some((verb, rest)) = args.split_first() else {
        return Command::Usage(None);
    };
    let file = |i: usize| rest.get(i).map(Path::new);
    let leaf = |i: usize| rest.get(i).map(|s| s.to_str().ok_or(LEAF_NOT_UTF8));
    let (verb, file0, leaf1) = (verb.to_str(), file(0), leaf(1));
    if verb == Some("context") {
        return crate::context::parse(rest)
            .map_or_else(|r| Command::Usage(Some(r)), Command::Context);
    }
    match (verb, rest.len(), file0, leaf1) {
        (Some("show" | "path" | "messages" | "children" | "label"), _, _, Some(Err(reason))) => {
            Command::Usage(Some(reason))
        }
        (Some("show"), 2, Some(file), Some(Ok(leaf))) => Command::Show { file, leaf },
        (Some("path"), 2, Some(file), Some(Ok(leaf))) => Command::Path { file, leaf },
        (Some("messages"), 2, Some(file), Some(Ok(leaf))) => Command::Messages { file, leaf },
        (Some("tree"), _, Some(file), _) => match tree_args(&rest[1..]) {
            Ok(options) => Command::Tree { file, options },
            Err(reason) => Command::Usage(reason),
        },
        (Some("children"), 2, Some(file), Some(Ok(id))) => Command::Children { file, id },
        (Some("leaves"), 1, Some(file), None) => Command::Leaves { file },
        (Some("ls"), _, Some(dir), _) => match ls_args(&rest[1..]) {
            Ok(options) => Command::Ls { dir, options },
            Err(reason) => Command::Usage(reason),
        },
        (Some("label"), 3, Some(file), Some(Ok(target))) => match rest[2].to_str() {
            Some(text) => Command::Label { file, target, text },
            None => Command::Usage(Some("TEXT is not UTF-8 text")),
        },
        (Some("verify"), 1, Some(file), None) => Command::Verify { file },
        (Some("salvage"), 1, Some(file), None) => Command::Salvage { file },
        (Some("repair"), 1, Some(file), None) => Command::Repair { file },
        (Some("import"), 4, _, _) => import_args(rest),
        (Some("export"), 5, _, _) => export_args(rest),
        (Some("-h" | "--help" | "help"), 0, _, _) => Command::Help,
        _ => Command::Usage(None),
    }
}

/// `--from pi|claude-code|codex SRC OUT`.
fn import_args(rest: &[OsString]) -> Command<'_> {
    let format = rest[1]
        .to_str()
        .and_then(session::interop::Format::from_name);
    match (rest[0].to_str(), format) {
        (Some("--from"), Some(format)) => Command::Import {
            format,
            source: Path::new(&rest[2]),
            out: Path::new(&rest[3]),
        },
        _ => Command::Usage(Some("import takes --from pi|claude-code|codex SRC OUT")),
    }
}

/// `--to pi FILE LEAF OUT`.
fn export_args(rest: &[OsString]) -> Command<'_> {
    match (rest[0].to_str(), rest[1].to_str(), rest[3].to_str()) {
        (Some("--to"), Some("pi"), Some(leaf)) => Command::ExportPi {
            file: Path::new(&rest[2]),
            leaf,
            out: Path::new(&rest[4]),
        },
        (Some("--to"), Some("pi"), None) => Command::Usage(Some(LEAF_NOT_UTF8)),
        _ => Command::Usage(Some("export takes --to pi FILE LEAF OUT")),
    }
}

const LEAF_NOT_UTF8: &str = "LEAF is not UTF-8 text, so it cannot be an entry id";

/// The options of `tree`.
#[derive(Default)]
pub struct TreeArgs<'a> {
    /// The entry whose path is marked; default the last entry.
    pub leaf: Option<&'a str>,
    /// Hide entries deeper than this.
    pub depth: Option<u64>,
    /// Show each entry's label.
    pub labels: bool,
    /// Nodes as JSON, one per line.
    pub json: bool,
}

/// `[LEAF] [--leaf ID] [--depth N] [--labels] [--json]`.
fn tree_args(args: &[OsString]) -> Result<TreeArgs<'_>, Option<&'static str>> {
    let mut options = TreeArgs::default();
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        match arg.to_str() {
            Some("--leaf") => options.leaf = Some(utf8_leaf(args.next())?),
            Some("--depth") => options.depth = Some(number(args.next(), DEPTH_NOT_NUMBER)?),
            Some("--labels") => options.labels = true,
            Some("--json") => options.json = true,
            _ if options.leaf.is_none() => options.leaf = Some(utf8_leaf(Some(arg))?),
            _ => return Err(None),
        }
    }
    Ok(options)
}

/// The options of `ls`.
#[derive(Default)]
pub struct LsArgs {
    pub recursive: bool,
    pub limit: Option<u64>,
    /// Sort by path instead of newest first.
    pub by_path: bool,
}

/// `[--recursive] [--limit N] [--sort modified|path]`.
fn ls_args(args: &[OsString]) -> Result<LsArgs, Option<&'static str>> {
    let mut options = LsArgs::default();
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        match arg.to_str() {
            Some("--recursive" | "-r") => options.recursive = true,
            Some("--limit") => options.limit = Some(number(args.next(), LIMIT_NOT_NUMBER)?),
            Some("--sort") => match args.next().and_then(|a| a.to_str()) {
                Some("modified") => options.by_path = false,
                Some("path") => options.by_path = true,
                _ => return Err(Some("--sort takes modified or path")),
            },
            _ => return Err(None),
        }
    }
    Ok(options)
}

fn utf8_leaf(arg: Option<&OsString>) -> Result<&str, Option<&'static str>> {
    arg.ok_or(None)?.to_str().ok_or(Some(LEAF_NOT_UTF8))
}

fn number(arg: Option<&OsString>, reason: &'static str) -> Result<u64, Option<&'static str>> {
    arg.and_then(|a| a.to_str())
        .and_then(|a| a.parse().ok())
        .ok_or(Some(reason))
}

const DEPTH_NOT_NUMBER: &str = "--depth takes a whole number";
const LIMIT_NOT_NUMBER: &str = "--limit takes a whole number";
