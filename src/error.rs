//! The core's typed errors. Each carries the facts a caller needs (line, ids, JSON
//! Pointer) as fields; the C boundary maps them once to a status code and error JSON.

use std::fmt;
use std::io;
use std::sync::Arc;

use crate::json::JsonError;
use crate::json::Object;

/// A fact about a file that is not an error but that the caller must know.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Warning {
    /// The file ends in a non-blank piece without `\n` starting at physical line
    /// `line`: an append that did not finish. It is not committed, and a store that
    /// sees it refuses to append until the caller repairs the file.
    UnterminatedTail { line: u64 },
}

impl Warning {
    /// The warning's stable code, as in its JSON form.
    pub fn code(&self) -> &'static str {
        match self {
            Warning::UnterminatedTail { .. } => "unterminated_tail",
        }
    }

    /// `{"code":"unterminated_tail","line":N}`.
    pub fn to_json(&self) -> String {
        match self {
            Warning::UnterminatedTail { line } => Object::new()
                .string("code", self.code())
                .number("line", *line)
                .finish(),
        }
    }
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Warning::UnterminatedTail { line } => write!(
                f,
                "line {line} has no terminating newline (an unfinished append); it is not committed"
            ),
        }
    }
}

/// Well-formed JSON of the wrong shape for an entry.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message} (at {pointer:?})")]
pub struct EntryError {
    /// JSON Pointer of the offending value, or of the member that is missing.
    pub pointer: String,
    pub message: String,
}

/// Why a committed line cannot be read as an entry.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LineFault {
    #[error("invalid JSON at {:?}: {}", .0.pointer, .0)]
    Json(JsonError),
    #[error("invalid entry: {0}")]
    Entry(EntryError),
    #[error("the line is {len} bytes long; the maximum is {max}")]
    TooLong { len: u64, max: usize },
    /// A byte that cannot occur where it is in an entry line (a line that does not
    /// start with `{`, or a byte JSON never contains), found in a long line that was
    /// therefore not kept in memory.
    #[error("byte 0x{byte:02X} at offset {offset} cannot occur there in an entry line")]
    NotAnEntry { offset: u64, byte: u8 },
}

impl LineFault {
    /// `invalid_json`, `invalid_entry` or `line_too_long`.
    pub fn reason(&self) -> &'static str {
        match self {
            LineFault::Json(_) | LineFault::NotAnEntry { .. } => "invalid_json",
            LineFault::Entry(_) => "invalid_entry",
            LineFault::TooLong { .. } => "line_too_long",
        }
    }

    /// The JSON Pointer inside the line, where there is one.
    pub fn pointer(&self) -> Option<&str> {
        match self {
            LineFault::Json(e) => Some(&e.pointer),
            LineFault::Entry(e) => Some(&e.pointer),
            LineFault::TooLong { .. } | LineFault::NotAnEntry { .. } => None,
        }
    }
}

/// The file operation that failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum IoOp {
    Open,
    Read,
    Write,
    Sync,
    /// Taking the advisory lock.
    Lock,
    /// Checking that the path still names the file being written.
    Identity,
    /// Cutting a file to its committed prefix (repair).
    Truncate,
}

impl IoOp {
    pub fn name(self) -> &'static str {
        match self {
            IoOp::Open => "open",
            IoOp::Read => "read",
            IoOp::Write => "write",
            IoOp::Sync => "sync",
            IoOp::Lock => "lock",
            IoOp::Identity => "identity",
            IoOp::Truncate => "truncate",
        }
    }
}

/// How the file behind a writer changed under it, found before an append.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum FileChange {
    /// The path no longer exists: appends would go to an unlinked file.
    Deleted,
    /// The path names another file now (renamed over, or deleted and recreated).
    Replaced,
    /// The file's size is not what this writer last left: someone else wrote to it.
    SizeChanged { expected: u64, actual: u64 },
}

impl FileChange {
    /// `deleted`, `replaced` or `size_changed`.
    pub fn reason(self) -> &'static str {
        match self {
            FileChange::Deleted => "deleted",
            FileChange::Replaced => "replaced",
            FileChange::SizeChanged { .. } => "size_changed",
        }
    }
}

/// A failed file operation, kept whole: a tainted store reports this same value to
/// every later caller.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct IoFailure {
    pub op: IoOp,
    pub kind: io::ErrorKind,
    /// The OS error number (`errno`), when the OS gave one.
    pub os_error: Option<i32>,
    pub message: String,
    /// Set when no operation failed but the file changed under the writer
    /// (`op` is [`IoOp::Identity`]).
    pub change: Option<FileChange>,
}

impl IoFailure {
    pub(crate) fn new(op: IoOp, context: &str, err: &io::Error) -> IoFailure {
        IoFailure {
            op,
            kind: err.kind(),
            os_error: err.raw_os_error(),
            message: format!("{} {context} failed: {err}", op.name()),
            change: None,
        }
    }

    pub(crate) fn changed(path: &str, change: FileChange) -> IoFailure {
        let what = match change {
            FileChange::Deleted => "was deleted".to_owned(),
            FileChange::Replaced => "now names another file".to_owned(),
            FileChange::SizeChanged { expected, actual } => format!(
                "is {actual} bytes long, not the {expected} this writer left: another writer appended or truncated it"
            ),
        };
        IoFailure {
            op: IoOp::Identity,
            kind: io::ErrorKind::Other,
            os_error: None,
            message: format!("{path} {what}; nothing was written"),
            change: Some(change),
        }
    }
}

/// Every way a libsession operation can fail.
#[derive(Clone, Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Not exactly one well-formed JSON value, or JSON that would not survive a round
    /// trip (duplicate key, lossy number, nesting too deep).
    #[error("invalid JSON at {:?}: {}", .0.pointer, .0)]
    InvalidJson(JsonError),
    /// Well-formed JSON of the wrong shape.
    #[error("invalid entry: {0}")]
    InvalidEntry(EntryError),
    /// An id that is already taken. `line` is set when replaying a file.
    #[error("{}duplicate id {id:?}", at_line(*.line))]
    DuplicateId { id: String, line: Option<u64> },
    /// An entry whose parent is not there. `line` is set when replaying a file.
    #[error("{}entry {child_id:?} names parent {parent_id:?}, which does not exist{}",
        at_line(*.line), if .line.is_some() { " on an earlier line" } else { "" })]
    MissingParent {
        child_id: String,
        parent_id: String,
        line: Option<u64>,
    },
    /// Walking parent links from the leaf came back to `id`.
    #[error("cycle: entry {id:?} is its own ancestor")]
    Cycle { id: String },
    /// No entry has the requested leaf id.
    #[error("no entry has id {id:?}")]
    UnknownLeaf { id: String },
    /// A committed line (ending in `\n`) that is not a valid entry.
    #[error("line {line}: {fault}")]
    CorruptLine { line: u64, fault: LineFault },
    /// The store's file has an unterminated tail; appends are refused until the caller
    /// repairs it.
    #[error("the file needs repair before appending: {}", warnings_text(.warnings))]
    NeedsRepair { warnings: Vec<Warning> },
    /// An earlier write on this store failed; `cause` is that original failure.
    #[error("the store is tainted by an earlier failed write: {cause}")]
    Tainted { cause: Arc<IoFailure> },
    /// A file operation failed.
    #[error("{0}")]
    Io(Arc<IoFailure>),
    /// Another writer holds the file's advisory lock.
    #[error("{path} is locked by another writer (in this or another process)")]
    Locked { path: String },
    /// An append on a store opened read-only.
    #[error("the store is read-only")]
    ReadOnly,
    /// A call on a store from a process other than the one that opened it (after
    /// `fork`): the child must open its own store.
    #[error(
        "the store was opened by process {owner}; process {current} cannot use it (open it again)"
    )]
    WrongProcess { owner: u32, current: u32 },
    /// An unknown or ill-typed option.
    #[error("invalid option: {message}")]
    InvalidOption { message: String },
    /// A bug in libsession (an operation abandoned by a panic).
    #[error("internal error: {message}")]
    Internal { message: String },
    /// A compaction whose `firstKeptEntryId` is not a valid cut for its path
    /// (docs/contract.md §6.2), found when appending it or when building a context through it.
    #[error("compaction {compaction_id:?}: {}{}", .reason.explain(.first_kept_entry_id.as_deref()), .hint.compaction())]
    InvalidCompaction {
        compaction_id: String,
        first_kept_entry_id: Option<String>,
        reason: CompactionFault,
        /// The option that would build the context anyway, said in the message
        /// ([`Hint::None`] at append).
        hint: Hint,
    },
    /// A tool call and its result do not pair up within an interaction (docs/contract.md §7.2).
    #[error("entry {entry_id:?}: {} (tool call {tool_call_id:?}, interaction starting at {interaction_start_id:?}){}", .reason.explain(), .hint.pairing())]
    ToolPairing {
        entry_id: String,
        tool_call_id: String,
        reason: PairingDefect,
        interaction_start_id: String,
        /// The option that would build the context anyway, said in the message.
        hint: Hint,
    },
    /// An import source that is not a session of the format asked for: it looks like
    /// another format (`detected` is not `requested`), or no line of it maps to a
    /// conversation entry. Nothing is written.
    #[error("{}", not_importable(*.detected, *.requested))]
    NotImportable {
        /// The format the source's first lines show, if any.
        detected: Option<crate::agent::Format>,
        /// The format asked for; `None` for detection.
        requested: Option<crate::agent::Format>,
    },
    /// The token estimator failed for a message, or returned a negative or non-finite
    /// number; `entry_id` names the message's entry (the compaction for the summary).
    #[error("the token estimator failed for entry {entry_id:?}: {message}")]
    Estimator { entry_id: String, message: String },
    /// The caller's progress callback asked a long call to stop; nothing was written.
    #[error("cancelled by the progress callback; nothing was written")]
    Cancelled,
    /// A function of a cargo feature this build of libsession was made without
    /// (`search`, `postgres`).
    #[error("this libsession was built without the cargo feature {feature:?}")]
    Unsupported { feature: &'static str },
    /// An argument other than an options object is refused (a PostgreSQL store's
    /// `session_id` or `conninfo`); `argument` names it.
    #[error("{message}")]
    InvalidArgument {
        argument: &'static str,
        message: String,
    },
}

/// What a caller of `build_context` can change to build a context that failed with
/// [`Error::ToolPairing`] or [`Error::InvalidCompaction`]: the error's message names
/// it, so that a person reading it knows the next step (docs/contract.md §7.2).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Hint {
    /// No option answers it (a compaction naming an entry off its path, or any
    /// error at append).
    #[default]
    None,
    /// The session was imported from this agent and was built without its rules
    /// (`"profile":"none"`, or an `onDefect` other than `"error"`, under which no
    /// agent's rules apply): `"profile":"auto"` with `"onDefect":"error"` sends what
    /// that agent sends.
    Imported(crate::agent::Format),
    /// A native session: `onDefect` chooses what happens to a defective interaction.
    OnDefect,
}

impl Hint {
    /// The end of a tool pairing error's message.
    fn pairing(self) -> String {
        match self {
            Hint::None => String::new(),
            Hint::Imported(format) => format!(
                " (this session was imported from {name}; build it with \"profile\":\"auto\" \
                 and \"onDefect\":\"error\" \u{2014} CLI --profile auto \u{2014} to send what {name} \
                 sends, or choose another \"onDefect\")",
                name = format.name()
            ),
            Hint::OnDefect => " (choose \"onDefect\": \"skip\", \"keep\" or \"synthesize\" \
                 \u{2014} CLI --on-defect \u{2014} to build it anyway)"
                .to_owned(),
        }
    }

    /// The end of an invalid compaction error's message.
    fn compaction(self) -> String {
        match self {
            Hint::Imported(format) => format!(
                " (this session was imported from {name}, which takes this cut; build it with \
                 \"profile\":\"auto\" and \"onDefect\":\"error\" \u{2014} CLI --profile auto \u{2014} \
                 to send what {name} sends)",
                name = format.name()
            ),
            Hint::None | Hint::OnDefect => String::new(),
        }
    }
}

/// Why a compaction's `firstKeptEntryId` is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CompactionFault {
    /// No committed entry has that id.
    UnknownEntry,
    /// The entry exists but is not a proper ancestor of the compaction.
    NotOnPath,
    /// The first message kept would not start an interaction (it would separate a tool
    /// call from its result).
    NotInteractionStart,
    /// Nothing is kept while the last interaction before it has an unanswered call.
    PendingToolCalls,
}

impl CompactionFault {
    /// `unknown_entry`, `not_on_path`, `not_interaction_start`, `pending_tool_calls`.
    pub fn as_str(self) -> &'static str {
        match self {
            CompactionFault::UnknownEntry => "unknown_entry",
            CompactionFault::NotOnPath => "not_on_path",
            CompactionFault::NotInteractionStart => "not_interaction_start",
            CompactionFault::PendingToolCalls => "pending_tool_calls",
        }
    }

    fn explain(self, first_kept: Option<&str>) -> String {
        // A missing id prints as the JSON `null` it was written as, not as the id "null".
        let first = first_kept.map_or_else(|| "null".to_owned(), |id| format!("{id:?}"));
        match self {
            CompactionFault::UnknownEntry => {
                format!("firstKeptEntryId {first} names no committed entry")
            }
            CompactionFault::NotOnPath => {
                format!("firstKeptEntryId {first} is not an ancestor of the compaction")
            }
            CompactionFault::NotInteractionStart => format!(
                "the first message kept from {first} is not a user message or the first message of the path; the cut would separate a tool call from its result"
            ),
            CompactionFault::PendingToolCalls => {
                "nothing is kept while the last interaction has an unanswered tool call".to_owned()
            }
        }
    }
}

/// How a tool call and its results fail to pair within one interaction (docs/contract.md §7.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PairingDefect {
    /// A result whose call is not earlier in the same interaction.
    OrphanResult,
    /// A second call with an id already called in the interaction.
    DuplicateToolCall,
    /// A second result for the same call.
    DuplicateToolResult,
    /// A call that no later result of the interaction answers.
    MissingResult,
}

impl PairingDefect {
    /// `orphan_result`, `duplicate_tool_call`, `duplicate_tool_result`, `missing_result`.
    pub fn as_str(self) -> &'static str {
        match self {
            PairingDefect::OrphanResult => "orphan_result",
            PairingDefect::DuplicateToolCall => "duplicate_tool_call",
            PairingDefect::DuplicateToolResult => "duplicate_tool_result",
            PairingDefect::MissingResult => "missing_result",
        }
    }

    fn explain(self) -> &'static str {
        match self {
            PairingDefect::OrphanResult => "a tool result without an earlier call",
            PairingDefect::DuplicateToolCall => "a second tool call with the same id",
            PairingDefect::DuplicateToolResult => "a second result for the same tool call",
            PairingDefect::MissingResult => "a tool call without a result",
        }
    }
}

fn at_line(line: Option<u64>) -> String {
    line.map(|l| format!("line {l}: ")).unwrap_or_default()
}

fn warnings_text(warnings: &[Warning]) -> String {
    let texts: Vec<String> = warnings.iter().map(ToString::to_string).collect();
    texts.join("; ")
}

/// The library error for a failed operation `op` on `path`: the one way a failed file
/// operation becomes an [`Error`].
pub(crate) fn io_error(op: IoOp, path: &std::path::Path, e: &io::Error) -> Error {
    Error::Io(Arc::new(IoFailure::new(op, &path.display().to_string(), e)))
}

impl Error {
    pub(crate) fn internal(message: impl Into<String>) -> Error {
        Error::Internal {
            message: message.into(),
        }
    }
}

fn not_importable(
    detected: Option<crate::agent::Format>,
    requested: Option<crate::agent::Format>,
) -> String {
    match (detected, requested) {
        (Some(found), Some(asked)) if found != asked => format!(
            "this looks like a {}, not a {}; import it as {} or auto",
            found.description(),
            asked.description(),
            found.name()
        ),
        (Some(found), _) => format!(
            "no line of this {} maps to a conversation entry",
            found.description()
        ),
        (None, Some(asked)) => format!(
            "no line of the source maps to a conversation entry of a {}",
            asked.description()
        ),
        (None, None) => "the source is not a pi, Claude Code or Codex session file: \
             no line of it maps to a conversation entry"
            .to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn compaction(first_kept: Option<&str>, reason: CompactionFault) -> String {
        Error::InvalidCompaction {
            compaction_id: "c-1".to_owned(),
            first_kept_entry_id: first_kept.map(str::to_owned),
            reason,
            hint: Hint::None,
        }
        .to_string()
    }

    #[test]
    fn invalid_compaction_message_quotes_the_first_kept_id_without_option_debug() {
        assert_eq!(
            compaction(Some("nope"), CompactionFault::UnknownEntry),
            r#"compaction "c-1": firstKeptEntryId "nope" names no committed entry"#
        );
    }

    #[test]
    fn invalid_compaction_message_prints_a_missing_first_kept_id_as_bare_null() {
        assert_eq!(
            compaction(None, CompactionFault::NotOnPath),
            r#"compaction "c-1": firstKeptEntryId null is not an ancestor of the compaction"#
        );
    }
}
