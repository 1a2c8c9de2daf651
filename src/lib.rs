//! libsession stores the conversation of an AI coding agent as an append-only tree of
//! entries, persists it as JSONL, and restores the model-facing messages of any branch
//! without loss.
//!
//! Every entry has an `id`, a `parentId` (null for a root) and a `timestamp`. The order
//! of lines in a file is only the order of writing; `parentId` is the logical relation,
//! so one history grows several branches and no branch overwrites another:
//!
//! ```text
//! u-1            user: "读取 README.md，告诉我项目名"
//! ├── a-read     assistant: toolCall call-1 read {"path":"README.md"}
//! │   └── r-read toolResult call-1: "# tiny-pi ..."
//! │       └── a-final   assistant: "项目名是 tiny-pi"
//! │           └── meta-cwd  metadata cwd = "/workspace/tiny-pi"
//! └── a-alt      assistant: "我无法读取该文件"
//! ```
//!
//! The caller names a leaf and gets the path from the root: `path_to("meta-cwd")` is
//! u-1, a-read, r-read, a-final, meta-cwd, and `messages_on_path("meta-cwd")` is the
//! four messages on it (metadata is on the path but is not a message).
//!
//! ```
//! use session::Store;
//!
//! let store = Store::memory();
//! store.append(r#"{"id":"u-1","parentId":null,"timestamp":1,"type":"message",
//!     "message":{"role":"user","content":"hi"}}"#)?;
//! store.append(r#"{"id":"a-1","parentId":"u-1","timestamp":2,"type":"message",
//!     "message":{"role":"assistant","content":[{"type":"text","text":"hello"}]}}"#)?;
//! let messages = store.messages_on_path("a-1")?;
//! assert_eq!(messages.len(), 2);
//! assert_eq!(messages[0].json(), r#"{"role":"user","content":"hi"}"#);
//! # Ok::<(), session::Error>(())
//! ```
//!
//! # Modules
//!
//! Each module holds one concept. Floors count from the foundation up: a module is
//! built on the floors below it, and the C ABI is the top floor.
//!
//! - floor 1: [`json`], JSON hygiene: the one-pass scanner (one value, no duplicate
//!   keys, lossless numbers, depth limit), JSON Pointers and the one writer.
//! - floor 1: [`preview`], previews of text for people: cut on a scalar value,
//!   control characters escaped.
//! - floor 1: [`agent`], the agents libsession imports and exports, and the one list
//!   of their names.
//! - floor 2: [`error`], the typed core errors, with the facts a caller needs as
//!   fields.
//! - floor 3: [`options`], the one parser of every `options_json`.
//! - floor 3: [`entry`], the entry types and `parse_entry`: the parsing boundary.
//! - floor 4: [`tree`], `path_to` and `messages_on_path` over a slice of entries.
//! - floor 4: [`recover`], what a JSONL byte string commits, and the line scanner.
//! - floor 4: [`nav`], the navigation node, its query options and labels.
//! - floor 5: [`context`], what the model sees for a leaf: compactions,
//!   interactions, tool pairing, the token budget and the agents' profiles.
//! - floor 6: [`store`], the append-only stores: in memory, on a JSONL file (with
//!   its session index) and on PostgreSQL.
//! - floor 7: [`repair`], the explicit repair of a file's unterminated tail.
//! - floor 7: [`list`], the sessions in a folder, one record per `*.jsonl` file.
//! - floor 8: [`secrets`], finding and redacting secrets in JSON lines.
//! - floor 9: [`search`], search across the sessions of a folder, with its sidecar
//!   index.
//! - floor 9: [`view`], a store as one self-contained HTML page.
//! - floor 9: [`interop`], import from and export to pi, Claude Code and Codex.
//! - floor 10: [`copy`], a store's committed entries written whole into a new JSONL
//!   file or PostgreSQL session, redacted on request: all of it or nothing.
//! - floor 10: [`ffi`], the C ABI (include/session.h): the only `extern "C"` and the
//!   only module with `unsafe`.

#![deny(unsafe_code)]

pub mod agent;
pub mod context;
pub mod copy;
pub mod entry;
pub mod error;
pub mod interop;
pub mod json;
pub mod list;
pub mod nav;
pub mod options;
pub mod preview;
pub mod recover;
pub mod repair;
pub mod search;
pub mod secrets;
pub mod store;
pub mod tree;
pub mod view;

// The C ABI's comments are the header's text, written as C prose (sqlite3.h's way): each
// unsafe function states its contract in a "Safety:" sentence, not a rustdoc heading.
#[allow(unsafe_code, clippy::missing_safety_doc)]
pub mod ffi;

pub use agent::Format;
pub use context::{
    Budget, BudgetReason, BudgetReport, CompactionUsed, Context, ContextOptions, Defect, Estimator,
    Interaction, OnDefect, Profile, build_context, build_context_with,
};
pub use copy::{CopyOptions, CopyProgress};
pub use entry::{
    Entry, EntryKind, Message, ParseOptions, Role, parse_entries, parse_entries_with, parse_entry,
    parse_entry_with,
};
pub use error::{
    CompactionFault, EntryError, Error, FileChange, Hint, IoFailure, IoOp, LineFault,
    PairingDefect, Warning,
};
pub use interop::ImportProgress;
pub use json::{JsonError, JsonErrorKind, MAX_DEPTH};
pub use list::{ListOptions, SessionInfo, SortBy, list_sessions};
pub use nav::{Label, Leaves, Node, TreeOptions, TreePage};
pub use recover::{MAX_LINE_BYTES, Recovered, recover_jsonl};
pub use repair::{RealRepairIo, RepairIo, RepairReport, repair_jsonl, repair_jsonl_with_io};
pub use search::{Hit, SIDECAR, SearchError, SearchQuery, SearchResult, search};
pub use store::{
    Diagnostic, Durability, JsonlOptions, MemoryOptions, OpenReport, PgListOptions, PgOptions,
    PgSessionInfo, Problem, Receipt, SessionFile, Snapshot, State, Store, Verify, index_path,
    list_pg_sessions, pg_sessions_json,
};
pub use tree::{messages_on_path, path_to};
