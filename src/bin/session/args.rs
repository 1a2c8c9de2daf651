//! The command line: the usage text and the parse into a [`Command`].

pub const USAGE: &str = "usage:
  session show FILE LEAF       the active path to LEAF and its messages
  session path FILE LEAF       the entries from the root to LEAF (JSON, one per line)
  session messages FILE LEAF   the messages on that path (JSON, one per line)
  session tree FILE [LEAF]     every branch as an indented tree; LEAF (default: the
                               last entry) and its path are marked
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

exit codes: 0 clean; 1 the file needs repair (or salvage found damage); 2 the file is
corrupt or the request failed; 3 an I/O error; 4 the file is locked by a writer;
64 a usage error";

/// What the command line asks for.
pub enum Command<'a> {
    Show {
        file: &'a str,
        leaf: &'a str,
    },
    Path {
        file: &'a str,
        leaf: &'a str,
    },
    Messages {
        file: &'a str,
        leaf: &'a str,
    },
    Tree {
        file: &'a str,
        leaf: Option<&'a str>,
    },
    Verify {
        file: &'a str,
    },
    Salvage {
        file: &'a str,
    },
    Repair {
        file: &'a str,
    },
    Import {
        format: session::interop::Format,
        source: &'a str,
        out: &'a str,
    },
    ExportPi {
        file: &'a str,
        leaf: &'a str,
        out: &'a str,
    },
    /// `-h`, `--help`, `help`: the usage text on stdout, exit 0.
    Help,
    /// Anything else: the usage text on stderr, exit 64.
    Usage,
}

/// Reads the arguments after the program name.
pub fn parse(args: &[String]) -> Command<'_> {
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    match argv.as_slice() {
        ["show", file, leaf] => Command::Show { file, leaf },
        ["path", file, leaf] => Command::Path { file, leaf },
        ["messages", file, leaf] => Command::Messages { file, leaf },
        ["tree", file] => Command::Tree { file, leaf: None },
        ["tree", file, leaf] => Command::Tree {
            file,
            leaf: Some(leaf),
        },
        ["verify", file] => Command::Verify { file },
        ["salvage", file] => Command::Salvage { file },
        ["repair", file] => Command::Repair { file },
        ["import", "--from", format, source, out] => {
            match session::interop::Format::from_name(format) {
                Some(format) => Command::Import {
                    format,
                    source,
                    out,
                },
                None => Command::Usage,
            }
        }
        ["export", "--to", "pi", file, leaf, out] => Command::ExportPi { file, leaf, out },
        ["-h" | "--help" | "help"] => Command::Help,
        _ => Command::Usage,
    }
}
