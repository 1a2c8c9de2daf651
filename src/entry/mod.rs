//! Entries and `parse_entry`, the boundary where untrusted text becomes a validated
//! entry (docs/contract.md §2).
//!
//! Parsing checks from the outside in and narrows only after each fact is proven: the
//! JSON hygiene scan first ([`crate::json`]), then the entry's shape, then the message
//! by role, then each content block by type. An [`Entry`] keeps its canonical JSON
//! text, so unknown fields, key order and exact numbers survive every round trip, and
//! keeps the facts the tree needs (id, parent, kind) as spans into that text.

use std::borrow::Cow;
use std::fmt;

use crate::error::Error;
use crate::json::{self, Kind, MAX_DEPTH, Tape};

/// The author of an agent message (docs/contract.md §2, §6.1): the three known roles, strictly
/// validated, or an extension role (any other non-empty string, kept byte-exact).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Role {
    User,
    Assistant,
    ToolResult,
    /// A role other than the three known ones (pi's `bashExecution`, `custom`,
    /// `branchSummary`; Codex's `developer`). Its name is the message's `role` member.
    /// It is a message everywhere, but never pairs tool calls.
    Extension,
}

impl Role {
    /// The role as written in JSON: `user`, `assistant`, `toolResult`; `extension` for
    /// an extension role (read the message's `role` member for its name).
    pub fn as_str(self) -> &'static str {
        match self {
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::ToolResult => "toolResult",
            Role::Extension => "extension",
        }
    }
}

/// What an entry records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum EntryKind {
    /// `type: "message"`: a model-facing message.
    Message(Role),
    /// `type: "metadata"`: a key and a JSON value; on the path, never a message.
    Metadata,
    /// `type: "compaction"` (docs/contract.md §6.2): a summary that replaces what comes before
    /// `firstKeptEntryId` in what the model sees; never a message itself.
    Compaction,
}

/// How strictly `parse_entry` treats roles and block types it does not know.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ParseOptions {
    /// Reject extension roles and extension blocks with `invalid_entry`
    /// (docs/contract.md §6.1 option `strictRoles`). Default: open.
    pub strict_roles: bool,
}

/// A byte range inside an entry's canonical JSON.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Span {
    start: u32,
    len: u32,
}

impl Span {
    /// A span from its start and length (the session index stores spans this way).
    pub(crate) fn from_parts(start: u32, len: u32) -> Span {
        Span { start, len }
    }

    /// The span's start and length.
    pub(crate) fn parts(&self) -> (u32, u32) {
        (self.start, self.len)
    }

    pub(crate) fn bytes<'a>(&self, json: &'a [u8]) -> &'a [u8] {
        let start = self.start as usize;
        json.get(start..start + self.len as usize)
            .unwrap_or_default()
    }

    pub(crate) fn of<'a>(&self, json: &'a str) -> &'a str {
        let start = self.start as usize;
        json.get(start..start + self.len as usize)
            .unwrap_or_default()
    }
}

/// A string value of the entry: the text between the quotes of its token when that is
/// the value itself (no escapes, the common case, no allocation), else the decoded
/// value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Text {
    InJson(Span),
    Decoded(Box<str>),
}

impl Text {
    /// The value, read from the entry's canonical JSON. An in-JSON span is the inside
    /// of a validated string token, so it is UTF-8 on its own.
    pub(crate) fn of<'a>(&'a self, json: &'a [u8]) -> &'a str {
        match self {
            Text::InJson(span) => std::str::from_utf8(span.bytes(json)).unwrap_or_default(),
            Text::Decoded(text) => text,
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Body {
    Message {
        role: Role,
        span: Span,
        /// What the message says about tool calls, found while validating it, so that
        /// pairing reads no message twice.
        tools: Tools,
    },
    Metadata {
        key: Text,
        value: Span,
        /// The entry a `session.label` entry labels (its `targetId`) or a
        /// `session.resumeLeaf` entry names (its `leafId`): it must be committed
        /// when the entry is appended.
        target: Option<Text>,
    },
    Compaction {
        /// `None` for a null `firstKeptEntryId` (keep nothing from before it).
        first_kept: Option<Text>,
        /// The `summary` value (a string token or an object).
        summary: Span,
        tokens_before: Span,
        details: Option<Span>,
    },
}

/// A message's part in tool pairing (docs/contract.md §7.1).
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Tools {
    /// No tool call and not a result (user, extension, text-only assistant).
    None,
    /// An assistant message with at least one `toolCall` block.
    Calls,
    /// A `toolResult`, with its `toolCallId`.
    Result(Text),
}

/// What the tree and the reads need to know of an entry, as positions in its canonical
/// JSON: no copy of the text.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Facts {
    pub(crate) id: Text,
    pub(crate) parent: Option<Text>,
    /// The number token of the timestamp (read only when asked for).
    pub(crate) timestamp: Span,
    pub(crate) body: Body,
}

impl Facts {
    pub(crate) fn message_json<'a>(&self, json: &'a [u8]) -> Option<&'a [u8]> {
        match &self.body {
            Body::Message { span, .. } => Some(span.bytes(json)),
            Body::Metadata { .. } | Body::Compaction { .. } => None,
        }
    }

    pub(crate) fn role(&self) -> Option<Role> {
        match &self.body {
            Body::Message { role, .. } => Some(*role),
            Body::Metadata { .. } | Body::Compaction { .. } => None,
        }
    }

    pub(crate) fn id<'a>(&'a self, json: &'a [u8]) -> &'a str {
        self.id.of(json)
    }

    pub(crate) fn parent_id<'a>(&'a self, json: &'a [u8]) -> Option<&'a str> {
        self.parent.as_ref().map(|p| p.of(json))
    }
}

/// A validated session entry. It owns its canonical JSON (the input with insignificant
/// whitespace removed; key order, unknown fields, escapes and numbers exactly as
/// written) and shares nothing with the text it was parsed from.
#[derive(Clone, Debug)]
pub struct Entry {
    json: Box<str>,
    facts: Facts,
}

impl Entry {
    pub(crate) fn from_parts(json: &str, facts: Facts) -> Entry {
        Entry {
            json: json.into(),
            facts,
        }
    }

    pub(crate) fn facts(&self) -> &Facts {
        &self.facts
    }

    /// The entry's id.
    pub fn id(&self) -> &str {
        self.facts.id(self.json.as_bytes())
    }

    /// The parent's id; `None` for a root.
    pub fn parent_id(&self) -> Option<&str> {
        self.facts.parent_id(self.json.as_bytes())
    }

    /// The entry's timestamp (a finite number: parsing admitted only those).
    pub fn timestamp(&self) -> f64 {
        self.facts.timestamp.of(&self.json).parse().unwrap_or(0.0)
    }

    /// Whether this is a message (and whose) or metadata.
    pub fn kind(&self) -> EntryKind {
        match &self.facts.body {
            Body::Message { role, .. } => EntryKind::Message(*role),
            Body::Metadata { .. } => EntryKind::Metadata,
            Body::Compaction { .. } => EntryKind::Compaction,
        }
    }

    /// The canonical JSON of the whole entry, one line without a newline.
    pub fn json(&self) -> &str {
        &self.json
    }

    /// The canonical JSON of the `message` member, complete (every toolCall and
    /// toolResult field kept); `None` for metadata.
    pub fn message_json(&self) -> Option<&str> {
        self.facts
            .message_json(self.json.as_bytes())
            .and_then(|m| std::str::from_utf8(m).ok())
    }

    /// The message as an owned [`Message`]; `None` for metadata.
    pub fn message(&self) -> Option<Message> {
        match &self.facts.body {
            Body::Message { role, span, .. } => Some(Message {
                role: *role,
                json: span.of(&self.json).into(),
            }),
            Body::Metadata { .. } | Body::Compaction { .. } => None,
        }
    }

    /// For metadata: the key and the canonical JSON of the value.
    pub fn metadata(&self) -> Option<(&str, &str)> {
        match &self.facts.body {
            Body::Metadata { key, value, .. } => {
                Some((key.of(self.json.as_bytes()), value.of(&self.json)))
            }
            Body::Message { .. } | Body::Compaction { .. } => None,
        }
    }
}

/// Two entries are equal when their canonical JSON is equal.
impl PartialEq for Entry {
    fn eq(&self, other: &Entry) -> bool {
        self.json == other.json
    }
}

impl Eq for Entry {}

impl fmt::Display for Entry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.json)
    }
}

/// A model-facing message taken from a `message` entry, complete and owned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Message {
    role: Role,
    json: Box<str>,
}

impl Message {
    /// A message from a path entry's facts and its message JSON.
    pub(crate) fn from_path(facts: &Facts, json: &[u8]) -> Result<Message, Error> {
        Ok(Message {
            role: facts.role().unwrap_or(Role::Extension),
            json: utf8(json)?.into(),
        })
    }

    /// The message's role (`Role::Extension` for any role but the three known ones).
    pub fn role(&self) -> Role {
        self.role
    }

    /// The message's canonical JSON.
    pub fn json(&self) -> &str {
        &self.json
    }
}

impl fmt::Display for Message {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.json)
    }
}

/// Parses untrusted text as one entry (docs/contract.md §2). On success the entry is new and
/// normalised; on failure the error names the offending place as a JSON Pointer:
/// [`Error::InvalidJson`] for text that is not exactly one acceptable JSON value,
/// [`Error::InvalidEntry`] for JSON of the wrong shape.
pub fn parse_entry(text: impl AsRef<[u8]>) -> Result<Entry, Error> {
    parse_entry_with(text, ParseOptions::default())
}

/// [`parse_entry`] with options (`strict_roles`).
pub fn parse_entry_with(text: impl AsRef<[u8]>, options: ParseOptions) -> Result<Entry, Error> {
    let mut parser = EntryParser::new(options);
    let (json, facts) = parser
        .parse(text.as_ref())
        .map_err(ParseFault::into_error)?;
    Ok(Entry::from_parts(utf8(json)?, facts))
}

/// Parses a JSON array of entries (the input of the slice-level tree operations).
/// Pointers in errors start with the element's index (`/3/message/content/0/id`).
pub fn parse_entries(text: impl AsRef<[u8]>) -> Result<Vec<Entry>, Error> {
    parse_entries_with(text, ParseOptions::default())
}

/// [`parse_entries`] with options (`strict_roles`).
pub fn parse_entries_with(
    text: impl AsRef<[u8]>,
    options: ParseOptions,
) -> Result<Vec<Entry>, Error> {
    let mut tape = Tape::default();
    // One more level than an entry may have, for the array around the entries.
    json::scan(text.as_ref(), MAX_DEPTH + 1, &mut tape).map_err(Error::InvalidJson)?;
    let mut check = Check::new(&tape, options);
    check.expect(0, Kind::Array).map_err(Error::InvalidEntry)?;
    let mut entries = Vec::new();
    for (index, element) in tape.elements(0).enumerate() {
        check.path.push(Segment::Index(index));
        let facts = check.entry(element).map_err(Error::InvalidEntry)?;
        check.path.pop();
        entries.push(Entry::from_parts(utf8(tape.raw(element))?, facts));
    }
    Ok(entries)
}

/// The canonical text is UTF-8 by construction (validated strings, ASCII elsewhere);
/// this check is paid only where a `&str` is handed out.
pub(crate) fn utf8(bytes: &[u8]) -> Result<&str, Error> {
    std::str::from_utf8(bytes).map_err(|_| Error::internal("canonical JSON is not UTF-8"))
}

#[cfg(test)]
mod tests;
mod validate;

use validate::{Check, Segment};
pub(crate) use validate::{EntryParser, ParseFault};
pub use validate::{LABEL_KEY, RESERVED_PREFIX, RESUME_LEAF_KEY};
