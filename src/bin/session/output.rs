//! What every verb shares: the buffered stdout, notes on stderr, opening a file
//! read-only and printing JSON lines.

use std::io::{self, BufWriter, Stdout, Write};
use std::path::Path;
use std::process::ExitCode;

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

/// Opens a file read-only (never creating or locking it), noting its warnings.
pub fn open(file: &Path, salvage: bool) -> Result<(Store, OpenReport), Error> {
    open_with(file, salvage, Verify::default())
}

/// [`open`], checking the lines a session index covers as `verify` says.
pub fn open_with(file: &Path, salvage: bool, verify: Verify) -> Result<(Store, OpenReport), Error> {
    let options = JsonlOptions {
        read_only: true,
        salvage,
        verify,
        ..JsonlOptions::default()
    };
    let opened = Store::open_jsonl_with(file, &options)?;
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

/// `leaf`, or the store's latest leaf when none was given.
pub fn latest_or(store: &Store, leaf: Option<&str>) -> Result<String, Failure> {
    match leaf {
        Some(leaf) => Ok(leaf.to_owned()),
        None => store
            .latest_leaf()?
            .map(|node| node.id)
            .ok_or(Failure::Request(
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
