//! The command line: the usage text and the parse into a [`Command`].

use std::ffi::OsString;
use std::path::Path;

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

Every verb but repair opens FILE read-only. Text read from the file is shown with
control characters escaped (\\xHH, \\u{HHHH}); JSON output stays JSON.

exit codes (the same for every verb):
  0    done; the file is clean
  1    done, but the file needs repair (an unterminated tail was left out of the
       output; `session repair FILE`), or salvage found damaged lines
  2    the file is corrupt or the request failed (e.g. no such leaf)
  3    an I/O error (including a FILE that is missing or not a regular file)
  4    the file is locked by a writer (repair)
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
        leaf: Option<&'a str>,
    },
    Verify {
        file: &'a Path,
    },
    Salvage {
        file: &'a Path,
    },
    Repair {
        file: &'a Path,
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
    match (verb, rest.len(), file0, leaf1) {
        (Some("show" | "path" | "messages" | "tree"), _, _, Some(Err(reason))) => {
            Command::Usage(Some(reason))
        }
        (Some("show"), 2, Some(file), Some(Ok(leaf))) => Command::Show { file, leaf },
        (Some("path"), 2, Some(file), Some(Ok(leaf))) => Command::Path { file, leaf },
        (Some("messages"), 2, Some(file), Some(Ok(leaf))) => Command::Messages { file, leaf },
        (Some("tree"), 1, Some(file), None) => Command::Tree { file, leaf: None },
        (Some("tree"), 2, Some(file), Some(Ok(leaf))) => Command::Tree {
            file,
            leaf: Some(leaf),
        },
        (Some("verify"), 1, Some(file), None) => Command::Verify { file },
        (Some("salvage"), 1, Some(file), None) => Command::Salvage { file },
        (Some("repair"), 1, Some(file), None) => Command::Repair { file },
        (Some("-h" | "--help" | "help"), 0, _, _) => Command::Help,
        _ => Command::Usage(None),
    }
}

const LEAF_NOT_UTF8: &str = "LEAF is not UTF-8 text, so it cannot be an entry id";
