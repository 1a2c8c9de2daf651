//! What every verb shares: the buffered stdout, notes on stderr, opening a file
//! read-only and printing JSON lines.

use std::io::{self, BufWriter, Read, Stdout, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use session::interop::Format;
use session::{Error, JsonlOptions, OpenReport, Store, Verify};

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
pub struct Out(BufWriter<Stdout>);

impl Out {
    pub fn new() -> Self {
        Out(BufWriter::new(io::stdout()))
    }
}

impl Write for Out {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
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

/// A JSON array, one item per line.
pub fn print_lines<'a>(
    out: &mut Out,
    items: impl ExactSizeIterator<Item = &'a str>,
) -> io::Result<()> {
    writeln!(out, "[")?;
    let count = items.len();
    for (i, item) in items.enumerate() {
        let comma = if i + 1 < count { "," } else { "" };
        writeln!(out, "  {item}{comma}")?;
    }
    writeln!(out, "]")
}
