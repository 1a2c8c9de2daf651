//! What every verb shares: the buffered stdout and its settings, the one rule of
//! `--json`/`--jsonl` ([`Out::emit`]), colour, notes on stderr, and opening a file
//! read-only. A verb produces values (JSON text for a machine, lines for a person);
//! this module prints them.

use std::io::{self, BufWriter, Read, Stdout, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use session::Format;
use session::{Error, JsonlOptions, OpenReport, PgOptions, State, Store, Verify};

use crate::location::Location;
use crate::term;

/// Why a verb stopped: the library refused, or stdout could not be written.
pub enum Failure {
    Session(Error),
    /// The request cannot be answered (exit 2), said in words: e.g. no LEAF was given
    /// and the session has no entries.
    Request(&'static str),
    /// Writing stdout failed; `BrokenPipe` when the reader went away (`| head -1`).
    Stdout(io::Error),
    /// FILE is another agent's session file, not a libsession one: `cause` is what
    /// reading it as one said; the next step is `session import`.
    AgentFile {
        file: PathBuf,
        format: Format,
        cause: Error,
    },
}

impl Failure {
    /// What is said on stderr, one line each.
    pub fn lines(&self) -> Vec<String> {
        match self {
            Failure::Session(e @ Error::UnknownLeaf { .. }) => vec![
                e.to_string(),
                "(the session's leaves: `session leaves LOCATION`; every entry: \
                 `session path LOCATION --kind message --kind metadata --kind compaction`)"
                    .to_owned(),
            ],
            Failure::Session(e) => vec![e.to_string()],
            Failure::Request(reason) => vec![(*reason).to_owned()],
            Failure::Stdout(e) => vec![format!("cannot write the output: {e}")],
            Failure::AgentFile {
                file,
                format,
                cause,
            } => vec![
                format!(
                    "{} is a {}, not a libsession session: import it first with \
                     `session import --from {} {} OUT.jsonl`",
                    file.display(),
                    format.description(),
                    format.name(),
                    file.display()
                ),
                format!("(read as a libsession session: {cause})"),
            ],
        }
    }
}

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        Failure::Session(e)
    }
}

/// Only stdout writes produce a bare `io::Error` in a verb: the library wraps its own.
impl From<io::Error> for Failure {
    fn from(e: io::Error) -> Self {
        Failure::Stdout(e)
    }
}

/// What a verb returns: its exit code, or why it stopped.
pub type Outcome = Result<ExitCode, Failure>;

/// Buffered stdout. Every write returns its error instead of panicking as `println!`
/// does, so a closed pipe ends the program quietly (see `exit::finish`).
pub struct Out {
    stdout: BufWriter<Stdout>,
    settings: Settings,
}

impl Out {
    pub fn new(settings: Settings) -> Self {
        Out {
            stdout: BufWriter::new(io::stdout()),
            settings,
        }
    }
}

impl Write for Out {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.stdout.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.stdout.flush()
    }
}

/// How a verb's result is printed: `--json` (one JSON document), `--jsonl` (one JSON
/// value per line) or the readable form (the default, on a terminal or not).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub enum Mode {
    #[default]
    Readable,
    Json,
    Jsonl,
}

/// The output settings every verb shares, from the global flags.
#[derive(Clone, Copy, Debug)]
pub struct Settings {
    pub mode: Mode,
    /// ANSI colour in the readable form.
    pub color: bool,
    /// The width the readable form wraps text to.
    pub width: usize,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            mode: Mode::Readable,
            color: false,
            width: DEFAULT_WIDTH,
        }
    }
}

/// The width when stdout is not a terminal (or says none): stable output for a pipe.
pub const DEFAULT_WIDTH: usize = 80;

/// Whether colour is used: `always` and `never` say so; `auto` colours a terminal only,
/// and never when `NO_COLOR` is set to anything non-empty (no-color.org).
pub fn color_wanted(choice: &str, terminal: bool, no_color: Option<&std::ffi::OsStr>) -> bool {
    match choice {
        "always" => true,
        "never" => false,
        _ => terminal && no_color.is_none_or(|v| v.is_empty()),
    }
}

/// What a verb produces for a machine: one value, or a list of values. The one rule of
/// `--json` and `--jsonl`: a list is one JSON array (`--json`) or one item per line
/// (`--jsonl`); one value is that value, on one line either way.
pub enum Doc {
    One(String),
    Many(Vec<String>),
}

impl Out {
    pub fn settings(&self) -> Settings {
        self.settings
    }

    /// Whether the verb prints its readable form.
    pub fn readable(&self) -> bool {
        self.settings.mode == Mode::Readable
    }

    /// Prints `doc` under `--json` / `--jsonl` (each value is JSON text, made safe for a
    /// terminal and still the same JSON).
    pub fn emit(&mut self, doc: &Doc) -> io::Result<()> {
        match doc {
            Doc::One(value) => writeln!(self, "{}", term::json(value)),
            Doc::Many(items) => self.emit_each(items.iter()),
        }
    }

    /// Prints a list as [`Doc::Many`] does (`--json`: an array, one item per line), each
    /// item made as it is printed, so that a
    /// long list (`ls` of 100,000 sessions) never holds all its texts at once.
    pub fn emit_each<S: AsRef<str>>(
        &mut self,
        items: impl ExactSizeIterator<Item = S>,
    ) -> io::Result<()> {
        if self.settings.mode == Mode::Jsonl {
            for item in items {
                writeln!(self, "{}", term::json(item.as_ref()))?;
            }
            return Ok(());
        }
        writeln!(self, "[")?;
        let count = items.len();
        for (i, item) in items.enumerate() {
            let comma = if i + 1 < count { "," } else { "" };
            writeln!(self, "  {}{comma}", term::json(item.as_ref()))?;
        }
        writeln!(self, "]")
    }

    /// `text` in the ANSI style `sgr` (e.g. `"1;32"`) when colour is on, else as is.
    pub fn paint(&self, sgr: &str, text: &str) -> String {
        if self.settings.color {
            format!("\u{1b}[{sgr}m{text}\u{1b}[0m")
        } else {
            text.to_owned()
        }
    }
}

/// `session: TEXT` on stderr, escaped for a terminal. A stderr that cannot be written
/// is ignored: there is nowhere left to report it.
pub fn note(text: &str) {
    let _ = writeln!(io::stderr().lock(), "session: {}", term::escape(text));
}

/// Opens a file read-only (never creating or locking it), noting its warnings. A
/// file whose first line is not an entry but which another agent's format detection
/// recognises fails with [`Failure::AgentFile`], which says to import it.
pub fn open(file: &Path, salvage: bool) -> Result<(Store, OpenReport), Failure> {
    open_with(file, salvage, Verify::default())
}

/// [`open`], checking the lines a session index covers as `verify` says.
pub fn open_with(
    file: &Path,
    salvage: bool,
    verify: Verify,
) -> Result<(Store, OpenReport), Failure> {
    let options = JsonlOptions {
        read_only: true,
        salvage,
        verify,
        ..JsonlOptions::default()
    };
    let opened = Store::open_jsonl_with(file, &options).map_err(|e| opening(file, e))?;
    for warning in &opened.1.warnings {
        note(&format!("warning: {warning}"));
    }
    Ok(opened)
}

/// What an output file is made from.
pub enum Source<'a> {
    /// A file: a session, or another agent's session file.
    File(&'a Path),
    /// A session in a database, which has no file mode: owner only.
    Database,
}

/// Makes every file this process creates from now on no wider than `source`: an output
/// (an HTML view, a copy, an import, an export) holds the session's text, so its
/// permission bits are those the umask allows and the source has (a database source
/// counts as 0600). Done through the umask, which the OS applies at each creation, so
/// that no output, nor the temporary file it is written through, is ever wider for a
/// moment. A source that cannot be read leaves the umask as it is: the verb then fails
/// on opening it, before it creates anything.
pub fn outputs_no_wider_than(source: Source<'_>) {
    use rustix::fs::Mode;
    use std::os::unix::fs::PermissionsExt;
    let mode = match source {
        Source::File(path) => match std::fs::metadata(path) {
            Ok(meta) => meta.permissions().mode() & 0o777,
            Err(_) => return,
        },
        Source::Database => 0o600,
    };
    // umask(2) sets and returns the mask in one call: set it back, then narrow it.
    let current = rustix::process::umask(Mode::empty());
    let narrowed = current | Mode::from_bits_truncate(!mode & 0o777);
    rustix::process::umask(narrowed);
}

/// Why opening `file` failed: [`Failure::AgentFile`] when its first line is not an
/// entry and it is another agent's session file, else the library's error.
pub fn opening(file: &Path, e: Error) -> Failure {
    match e {
        Error::CorruptLine { line, .. } => match agent_format(file, line) {
            Some(format) => Failure::AgentFile {
                file: file.to_owned(),
                format,
                cause: e,
            },
            None => Failure::Session(e),
        },
        e => Failure::Session(e),
    }
}

/// How much of a file's head is read to tell another agent's session file.
const HEAD_BYTES: u64 = 64 << 10;

/// The agent whose session file `file` is, when its first non-blank line is `line`
/// (the one that is not an entry) and the import's format detection recognises its
/// head. Only the first line counts: a libsession file with a damaged line further on
/// has entries before it, which detection could take for pi's.
fn agent_format(file: &Path, line: u64) -> Option<Format> {
    if !std::fs::metadata(file).ok()?.is_file() {
        return None;
    }
    let mut head = Vec::new();
    std::fs::File::open(file)
        .ok()?
        .take(HEAD_BYTES)
        .read_to_end(&mut head)
        .ok()?;
    let first = head
        .split(|&b| b == b'\n')
        .position(|l| !l.iter().all(u8::is_ascii_whitespace))?;
    (first as u64 + 1 == line).then(|| Format::detect(&head))?
}

/// The leaf a verb reads when none is given: the leaf the agent of an imported
/// session resumes, while the import's record of it is in force
/// ([`Store::resume_leaf`]), else the latest leaf; `None` for an empty session.
pub fn default_leaf(store: &Store) -> Result<Option<String>, Error> {
    match store.resume_leaf()? {
        Some(leaf) => Ok(Some(leaf)),
        None => Ok(store.latest_leaf()?.map(|node| node.id)),
    }
}

/// `leaf`, or the [`default_leaf`] when none was given.
pub fn leaf_or_default(store: &Store, leaf: Option<&str>) -> Result<String, Failure> {
    match leaf {
        Some(leaf) => Ok(leaf.to_owned()),
        None => default_leaf(store)?.ok_or(Failure::Request(
            "the session has no entries, so it has no latest leaf",
        )),
    }
}

/// A session opened at a [`Location`]: the store, its state (a database session is
/// always ready) and how to name it in a note.
pub struct Opened {
    pub store: Store,
    pub state: State,
    pub location: Location,
}

/// Opens a store location for reading: a file read-only ([`open`]), or a session in a
/// database that must exist (nothing is created).
pub fn open_at(location: &Location) -> Result<Opened, Failure> {
    let (store, state) = match location {
        Location::File(path) => {
            let (store, report) = open(path, false)?;
            (store, report.state)
        }
        Location::Postgres {
            conninfo,
            session_id,
        } => {
            let reader = PgOptions {
                create: false,
                ..PgOptions::default()
            };
            let (store, _) = Store::open_pg(conninfo, session_id, &reader)?;
            (store, State::Ready)
        }
    };
    Ok(Opened {
        store,
        state,
        location: location.clone(),
    })
}

/// The entries' JSON, parsed for the readable form. An entry line the library accepted
/// is a JSON object; one that somehow is not shows as null (an empty entry).
pub fn parsed(json: &str) -> serde_json::Value {
    serde_json::from_str(json).unwrap_or(serde_json::Value::Null)
}

#[cfg(test)]
mod tests {
    use super::color_wanted;
    use std::ffi::OsStr;

    #[test]
    fn colour_is_on_a_terminal_only_and_never_under_no_color() {
        assert!(color_wanted("auto", true, None));
        assert!(!color_wanted("auto", false, None));
        assert!(!color_wanted("auto", true, Some(OsStr::new("1"))));
        // An empty NO_COLOR does not count (no-color.org).
        assert!(color_wanted("auto", true, Some(OsStr::new(""))));
        assert!(color_wanted("always", false, Some(OsStr::new("1"))));
        assert!(!color_wanted("never", true, None));
    }
}
