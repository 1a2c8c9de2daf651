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

use crate::error::{EntryError, Error, LineFault};
use crate::json::{self, Kind, MAX_DEPTH, Tape};
use crate::nav::LABEL_KEY;

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
    /// Reject extension roles and extension blocks with `invalid_entry`, as round 1
    /// did (docs/contract.md §6.1 option `strictRoles`). Default: open.
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
        /// For a `session.label` entry: the `targetId` it labels.
        label_target: Option<Text>,
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

/// Why a text is not an entry: bad JSON, or the wrong shape.
#[derive(Debug)]
pub(crate) enum ParseFault {
    Json(json::JsonError),
    Entry(EntryError),
}

impl ParseFault {
    pub(crate) fn into_error(self) -> Error {
        match self {
            ParseFault::Json(e) => Error::InvalidJson(e),
            ParseFault::Entry(e) => Error::InvalidEntry(e),
        }
    }

    /// The error for a committed line that is not an entry.
    pub(crate) fn at_line(self, line: u64) -> Error {
        let fault = match self {
            ParseFault::Json(e) => LineFault::Json(e),
            ParseFault::Entry(e) => LineFault::Entry(e),
        };
        Error::CorruptLine { line, fault }
    }
}

/// Parses many entries while reusing one scan buffer (recovery parses a line at a time).
#[derive(Default)]
pub(crate) struct EntryParser {
    tape: Tape,
    options: ParseOptions,
}

impl EntryParser {
    pub(crate) fn new(options: ParseOptions) -> EntryParser {
        EntryParser {
            tape: Tape::default(),
            options,
        }
    }

    /// Parses with `options` from now on (a reused parser serves stores of both kinds).
    pub(crate) fn set_options(&mut self, options: ParseOptions) {
        self.options = options;
    }

    /// Parses one entry; returns its canonical JSON (borrowed from the parser's buffer
    /// until the next call) and its facts.
    pub(crate) fn parse(&mut self, text: &[u8]) -> Result<(&[u8], Facts), ParseFault> {
        json::scan(text, MAX_DEPTH, &mut self.tape).map_err(ParseFault::Json)?;
        let facts = Check::new(&self.tape, self.options)
            .entry(0)
            .map_err(ParseFault::Entry)?;
        Ok((&self.tape.text, facts))
    }
}

/// The block types libsession knows; any other is an extension block (docs/contract.md §6.1).
const KNOWN_BLOCKS: &[&str] = &["text", "thinking", "image", "toolCall"];

/// Block types allowed in each content array.
const USER_BLOCKS: &[&str] = &["text", "image"];
const ASSISTANT_BLOCKS: &[&str] = &["text", "thinking", "toolCall"];
const TOOL_RESULT_BLOCKS: &[&str] = &["text", "image"];

/// One step of the JSON Pointer to the value under inspection.
#[derive(Clone, Copy)]
enum Segment {
    Key(&'static str),
    Index(usize),
}

/// The shape checker. It walks the tape from the outside in, keeping the path to the
/// value under inspection so that every error can name its place as a JSON Pointer
/// (rendered only when an error happens).
struct Check<'t> {
    tape: &'t Tape,
    path: Vec<Segment>,
    options: ParseOptions,
}

type Checked<T> = Result<T, EntryError>;

impl<'t> Check<'t> {
    fn new(tape: &'t Tape, options: ParseOptions) -> Check<'t> {
        Check {
            tape,
            path: Vec::new(),
            options,
        }
    }

    fn fail<T>(&self, message: String) -> Checked<T> {
        let mut pointer = String::new();
        for segment in &self.path {
            match segment {
                Segment::Key(key) => json::push_pointer_segment(&mut pointer, key),
                Segment::Index(i) => json::push_pointer_segment(&mut pointer, &i.to_string()),
            }
        }
        Err(EntryError { pointer, message })
    }

    /// Runs `f` with `segment` appended to the path.
    fn within<T>(
        &mut self,
        segment: Segment,
        f: impl FnOnce(&mut Self) -> Checked<T>,
    ) -> Checked<T> {
        self.path.push(segment);
        let result = f(self);
        self.path.pop();
        result
    }

    fn expect(&self, node: usize, kind: Kind) -> Checked<()> {
        let found = self.tape.nodes[node].kind;
        if found == kind {
            Ok(())
        } else {
            self.fail(format!("expected {}, found {}", kind.noun(), found.noun()))
        }
    }

    /// The required member `name` of object `obj`.
    fn required(&mut self, obj: usize, name: &'static str) -> Checked<usize> {
        match self.tape.get(obj, name) {
            Some(value) => Ok(value),
            None => self.within(Segment::Key(name), |c| {
                c.fail(format!("missing member {name:?}"))
            }),
        }
    }

    /// A required member of a given JSON kind.
    fn member_of_kind(&mut self, obj: usize, name: &'static str, kind: Kind) -> Checked<usize> {
        let node = self.required(obj, name)?;
        self.within(Segment::Key(name), |c| c.expect(node, kind))?;
        Ok(node)
    }

    /// A required string member, its value decoded (borrowed when it has no escapes):
    /// for the short discriminants (`type`, `role`) that are compared.
    fn string(&mut self, obj: usize, name: &'static str) -> Checked<Cow<'t, str>> {
        let node = self.member_of_kind(obj, name, Kind::String)?;
        Ok(self.tape.string(node))
    }

    /// A required non-empty string member, as a [`Text`] relative to `base`.
    fn text(&mut self, obj: usize, name: &'static str, base: usize) -> Checked<Text> {
        let node = self.required(obj, name)?;
        self.within(Segment::Key(name), |c| c.text_value(node, base))
    }

    fn text_value(&self, node: usize, base: usize) -> Checked<Text> {
        self.expect(node, Kind::String)?;
        let n = &self.tape.nodes[node];
        if n.end - n.start <= 2 {
            return self.fail("must be a non-empty string".into());
        }
        if n.escaped {
            return Ok(Text::Decoded(self.tape.string(node).into()));
        }
        // The value is the token without its quotes.
        Ok(Text::InJson(Span {
            start: (n.start + 1 - base) as u32,
            len: (n.end - n.start - 2) as u32,
        }))
    }

    fn span(&self, node: usize, base: usize) -> Span {
        let n = &self.tape.nodes[node];
        Span {
            start: (n.start - base) as u32,
            len: (n.end - n.start) as u32,
        }
    }

    fn entry(&mut self, root: usize) -> Checked<Facts> {
        self.expect(root, Kind::Object)?;
        let base = self.tape.nodes[root].start;
        let id = self.text(root, "id", base)?;
        let parent_node = self.required(root, "parentId")?;
        let parent = match self.tape.nodes[parent_node].kind {
            Kind::Null => None,
            _ => Some(self.within(Segment::Key("parentId"), |c| {
                c.text_value(parent_node, base)
            })?),
        };
        let ts_node = self.member_of_kind(root, "timestamp", Kind::Number)?;
        let timestamp = self.span(ts_node, base);
        let kind = self.string(root, "type")?;
        let body = match kind.as_ref() {
            "message" => {
                let node = self.required(root, "message")?;
                let (role, tools) =
                    self.within(Segment::Key("message"), |c| c.message(node, base))?;
                Body::Message {
                    role,
                    span: self.span(node, base),
                    tools,
                }
            }
            "metadata" => {
                let key = self.text(root, "key", base)?;
                let node = self.required(root, "value")?;
                let label_target = if key.of(&self.tape.text[base..]) == LABEL_KEY {
                    Some(self.within(Segment::Key("value"), |c| c.label(node, base))?)
                } else {
                    None
                };
                Body::Metadata {
                    key,
                    value: self.span(node, base),
                    label_target,
                }
            }
            "compaction" => self.compaction(root, base, &id, parent.is_some())?,
            other => {
                return self.within(Segment::Key("type"), |c| {
                    c.fail(format!(
                        "unknown entry type {other:?}; expected \"message\", \"metadata\" or \"compaction\""
                    ))
                });
            }
        };
        Ok(Facts {
            id,
            parent,
            timestamp,
            body,
        })
    }

    /// A `compaction` entry (docs/contract.md §6.2): its own rules at call time; whether its
    /// `firstKeptEntryId` is a valid cut is checked against the tree at append.
    fn compaction(
        &mut self,
        root: usize,
        base: usize,
        id: &Text,
        has_parent: bool,
    ) -> Checked<Body> {
        if !has_parent {
            return self.within(Segment::Key("parentId"), |c| {
                c.fail("a compaction is never a root: parentId must be a non-empty string".into())
            });
        }
        let summary = self.required(root, "summary")?;
        self.within(Segment::Key("summary"), |c| {
            match c.tape.nodes[summary].kind {
                Kind::String => c.text_value(summary, base).map(drop),
                Kind::Object => Ok(()),
                other => c.fail(format!(
                    "expected a non-empty string or an object, found {}",
                    other.noun()
                )),
            }
        })?;
        let first = self.required(root, "firstKeptEntryId")?;
        let first_kept = match self.tape.nodes[first].kind {
            Kind::Null => None,
            _ => Some(self.within(Segment::Key("firstKeptEntryId"), |c| {
                let text = c.text_value(first, base)?;
                let json = &c.tape.text[base..];
                if text.of(json) == id.of(json) {
                    return c.fail(
                        "a compaction cannot keep itself: firstKeptEntryId equals id".into(),
                    );
                }
                Ok(text)
            })?),
        };
        let tokens = self.member_of_kind(root, "tokensBefore", Kind::Number)?;
        let negative = self.tape.raw(tokens).first() == Some(&b'-')
            && self
                .tape
                .raw(tokens)
                .iter()
                .any(|b| (b'1'..=b'9').contains(b));
        if negative {
            return self.within(Segment::Key("tokensBefore"), |c| {
                c.fail("must be a number >= 0".into())
            });
        }
        let details = self.tape.get(root, "details").map(|n| self.span(n, base));
        Ok(Body::Compaction {
            first_kept,
            summary: self.span(summary, base),
            tokens_before: self.span(tokens, base),
            details,
        })
    }

    /// The value of a `session.label` metadata entry: `{"targetId": non-empty string,
    /// "label": non-empty string | null}`; returns the target.
    fn label(&mut self, value: usize, base: usize) -> Checked<Text> {
        self.expect(value, Kind::Object)?;
        let target = self.text(value, "targetId", base)?;
        let label = self.required(value, "label")?;
        if self.tape.nodes[label].kind != Kind::Null {
            self.within(Segment::Key("label"), |c| c.text_value(label, base))?;
        }
        Ok(target)
    }

    fn message(&mut self, msg: usize, base: usize) -> Checked<(Role, Tools)> {
        self.expect(msg, Kind::Object)?;
        let role = self.string(msg, "role")?;
        match role.as_ref() {
            "user" => {
                let content = self.required(msg, "content")?;
                self.within(Segment::Key("content"), |c| {
                    match c.tape.nodes[content].kind {
                        Kind::String => Ok(()),
                        Kind::Array => c.blocks(content, USER_BLOCKS, "user"),
                        other => c.fail(format!(
                            "expected a string or an array of blocks, found {}",
                            other.noun()
                        )),
                    }
                })?;
                Ok((Role::User, Tools::None))
            }
            "assistant" => {
                let content = self.member_of_kind(msg, "content", Kind::Array)?;
                self.within(Segment::Key("content"), |c| {
                    c.blocks(content, ASSISTANT_BLOCKS, "assistant")
                })?;
                let tape = self.tape;
                let calls = tape.elements(content).any(|block| {
                    tape.get(block, "type").map(|t| tape.string(t)).as_deref() == Some("toolCall")
                });
                Ok((Role::Assistant, if calls { Tools::Calls } else { Tools::None }))
            }
            "toolResult" => {
                let call = self.text(msg, "toolCallId", base)?;
                self.member_of_kind(msg, "toolName", Kind::String)?;
                let content = self.member_of_kind(msg, "content", Kind::Array)?;
                self.within(Segment::Key("content"), |c| {
                    c.blocks(content, TOOL_RESULT_BLOCKS, "toolResult")
                })?;
                self.member_of_kind(msg, "isError", Kind::Bool)?;
                // `details` is optional and may be any JSON value.
                Ok((Role::ToolResult, Tools::Result(call)))
            }
            other if self.options.strict_roles || other.is_empty() => {
                self.within(Segment::Key("role"), |c| {
                    c.fail(format!(
                        "unknown role {other:?}; expected \"user\", \"assistant\" or \"toolResult\"{}",
                        if c.options.strict_roles { " (strictRoles)" } else { " or a non-empty extension role" }
                    ))
                })
            }
            // An extension message: kept byte-exact and unchecked (docs/contract.md §6.1).
            _ => Ok((Role::Extension, Tools::None)),
        }
    }

    fn blocks(&mut self, array: usize, allowed: &[&str], role: &str) -> Checked<()> {
        for (index, block) in self.tape.elements(array).enumerate() {
            self.within(Segment::Index(index), |c| c.block(block, allowed, role))?;
        }
        Ok(())
    }

    fn block(&mut self, block: usize, allowed: &[&str], role: &str) -> Checked<()> {
        self.expect(block, Kind::Object)?;
        let kind = self.string(block, "type")?;
        let known = KNOWN_BLOCKS.contains(&kind.as_ref());
        if !known && !kind.is_empty() && !self.options.strict_roles {
            // An extension block: kept byte-exact and unchecked (docs/contract.md §6.1).
            return Ok(());
        }
        if !allowed.contains(&kind.as_ref()) {
            return self.within(Segment::Key("type"), |c| {
                c.fail(if known {
                    format!("a {kind:?} block is not allowed in {role} content")
                } else {
                    format!("unknown block type {kind:?}")
                })
            });
        }
        match kind.as_ref() {
            "text" => drop(self.member_of_kind(block, "text", Kind::String)?),
            "thinking" => drop(self.member_of_kind(block, "thinking", Kind::String)?),
            "image" => {
                self.member_of_kind(block, "data", Kind::String)?;
                self.member_of_kind(block, "mimeType", Kind::String)?;
            }
            _ => {
                // toolCall: the pairing with its result depends on id and name.
                self.text(block, "id", 0)?;
                self.text(block, "name", 0)?;
                self.member_of_kind(block, "arguments", Kind::Object)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A_READ: &str = r#"{"id":"a-read","parentId":"u-1","timestamp":2,"type":"message","message":{"role":"assistant","content":[{"type":"toolCall","id":"call-1","name":"read","arguments":{"path":"README.md"}}],"api":"x","usage":{"input":10}}}"#;

    fn invalid_entry(text: &str) -> EntryError {
        match parse_entry(text) {
            Err(Error::InvalidEntry(e)) => e,
            other => panic!("expected InvalidEntry for {text}, got {other:?}"),
        }
    }

    fn invalid_json(text: &[u8]) -> json::JsonError {
        match parse_entry(text) {
            Err(Error::InvalidJson(e)) => e,
            other => panic!("expected InvalidJson, got {other:?}"),
        }
    }

    /// Replaces `from` with `to` in the a-read fixture.
    fn a_read_with(from: &str, to: &str) -> String {
        assert!(A_READ.contains(from), "{from}");
        A_READ.replacen(from, to, 1)
    }

    #[test]
    fn parse_entry_keeps_a_tool_call_intact() {
        let e = parse_entry(A_READ).unwrap();
        assert_eq!(e.id(), "a-read");
        assert_eq!(e.parent_id(), Some("u-1"));
        assert_eq!(e.timestamp(), 2.0);
        assert_eq!(e.kind(), EntryKind::Message(Role::Assistant));
        assert_eq!(e.json(), A_READ);
        let m = e.message_json().unwrap();
        assert!(
            m.starts_with(r#"{"role":"assistant","content":[{"type":"toolCall","id":"call-1""#)
        );
        assert!(m.ends_with(r#""usage":{"input":10}}"#));
    }

    #[test]
    fn parse_entry_normalises_whitespace_only() {
        let spaced = "{ \"id\" : \"m\", \"parentId\":null ,\"timestamp\":1.50,\n\"type\":\"metadata\",\"key\":\"cwd\",\"value\":{ \"z\":1,\"a\":[ ] },\"extra\":\"kept\"}";
        let e = parse_entry(spaced).unwrap();
        assert_eq!(
            e.json(),
            r#"{"id":"m","parentId":null,"timestamp":1.50,"type":"metadata","key":"cwd","value":{"z":1,"a":[]},"extra":"kept"}"#
        );
        assert_eq!(e.metadata(), Some(("cwd", r#"{"z":1,"a":[]}"#)));
        assert_eq!(e.kind(), EntryKind::Metadata);
        assert!(e.message_json().is_none());
    }

    #[test]
    fn user_string_content_stays_a_string() {
        let e = parse_entry(r#"{"id":"u","parentId":null,"timestamp":0,"type":"message","message":{"role":"user","content":"hi"}}"#).unwrap();
        assert_eq!(e.message_json(), Some(r#"{"role":"user","content":"hi"}"#));
    }

    #[test]
    fn tool_result_keeps_every_field() {
        let text = r##"{"id":"r","parentId":"a","timestamp":3,"type":"message","message":{"role":"toolResult","toolCallId":"call-1","toolName":"read","content":[{"type":"text","text":"# tiny-pi"},{"type":"image","data":"AA==","mimeType":"image/png"}],"isError":false,"details":{"bytes":[1,2.5,null]}}}"##;
        let e = parse_entry(text).unwrap();
        assert_eq!(e.kind(), EntryKind::Message(Role::ToolResult));
        assert!(
            e.message_json()
                .unwrap()
                .contains(r#""details":{"bytes":[1,2.5,null]}"#)
        );
    }

    #[test]
    fn id_written_with_escapes_is_decoded() {
        let e = parse_entry(r#"{"id":"u\u002d1","parentId":null,"timestamp":0,"type":"metadata","key":"k","value":0}"#).unwrap();
        assert_eq!(e.id(), "u-1");
        assert!(e.json().contains(r#""u\u002d1""#));
    }

    #[test]
    fn rejects_non_object_entry() {
        assert_eq!(invalid_entry("[]").pointer, "");
        assert_eq!(invalid_entry("\"x\"").pointer, "");
    }

    #[test]
    fn rejects_missing_or_empty_id() {
        assert_eq!(
            invalid_entry(&a_read_with(r#""id":"a-read","#, "")).pointer,
            "/id"
        );
        assert_eq!(
            invalid_entry(&a_read_with(r#""a-read""#, r#""""#)).pointer,
            "/id"
        );
        assert_eq!(
            invalid_entry(&a_read_with(r#""a-read""#, "7")).pointer,
            "/id"
        );
    }

    #[test]
    fn rejects_bad_parent_id() {
        assert_eq!(
            invalid_entry(&a_read_with(r#""parentId":"u-1","#, "")).pointer,
            "/parentId"
        );
        assert_eq!(
            invalid_entry(&a_read_with(r#""u-1""#, r#""""#)).pointer,
            "/parentId"
        );
        assert_eq!(
            invalid_entry(&a_read_with(r#""u-1""#, "false")).pointer,
            "/parentId"
        );
    }

    #[test]
    fn rejects_non_number_timestamp() {
        assert_eq!(
            invalid_entry(&a_read_with(r#""timestamp":2"#, r#""timestamp":"2""#)).pointer,
            "/timestamp"
        );
        assert_eq!(
            invalid_entry(&a_read_with(r#""timestamp":2,"#, "")).pointer,
            "/timestamp"
        );
    }

    #[test]
    fn rejects_unknown_entry_type() {
        let e = invalid_entry(&a_read_with(r#""type":"message""#, r#""type":"bogus""#));
        assert_eq!(e.pointer, "/type");
    }

    /// Round 2 (docs/contract.md §6.1) opened roles and block types; round 1 rejected them. The
    /// `strictRoles` option restores the closed set.
    #[test]
    fn extension_role_and_block_are_kept_unless_strict() {
        let role = a_read_with(r#""role":"assistant""#, r#""role":"system""#);
        let e = parse_entry(&role).unwrap();
        assert_eq!(e.kind(), EntryKind::Message(Role::Extension));
        assert_eq!(e.json(), role);
        let block = a_read_with(r#""type":"toolCall""#, r#""type":"audio""#);
        assert_eq!(parse_entry(&block).unwrap().json(), block);
        let strict = ParseOptions { strict_roles: true };
        let fail = |text: &str| match parse_entry_with(text, strict) {
            Err(Error::InvalidEntry(e)) => e.pointer,
            other => panic!("expected InvalidEntry, got {other:?}"),
        };
        assert_eq!(fail(&role), "/message/role");
        assert_eq!(fail(&block), "/message/content/0/type");
        // An empty role or block type is never an extension.
        assert_eq!(
            invalid_entry(&a_read_with(r#""role":"assistant""#, r#""role":"""#)).pointer,
            "/message/role"
        );
        assert_eq!(
            invalid_entry(&a_read_with(r#""type":"toolCall""#, r#""type":"""#)).pointer,
            "/message/content/0/type"
        );
    }

    #[test]
    fn rejects_block_type_not_allowed_for_the_role() {
        let text = r#"{"id":"u","parentId":null,"timestamp":0,"type":"message","message":{"role":"user","content":[{"type":"text","text":"a"},{"type":"thinking","thinking":"b"}]}}"#;
        let e = invalid_entry(text);
        assert_eq!(e.pointer, "/message/content/1/type");
        assert!(
            e.message.contains("not allowed in user content"),
            "{}",
            e.message
        );
    }

    #[test]
    fn rejects_incomplete_tool_call() {
        assert_eq!(
            invalid_entry(&a_read_with(r#""call-1""#, r#""""#)).pointer,
            "/message/content/0/id"
        );
        assert_eq!(
            invalid_entry(&a_read_with(r#""name":"read","#, "")).pointer,
            "/message/content/0/name"
        );
        assert_eq!(
            invalid_entry(&a_read_with(r#"{"path":"README.md"}"#, r#""{\"path\":1}""#)).pointer,
            "/message/content/0/arguments"
        );
    }

    #[test]
    fn rejects_incomplete_tool_result() {
        let base = r#"{"id":"r","parentId":"a","timestamp":3,"type":"message","message":{"role":"toolResult","toolCallId":"c","toolName":"read","content":[],"isError":false}}"#;
        assert!(parse_entry(base).is_ok());
        for (from, to, pointer) in [
            (r#""toolCallId":"c","#, "", "/message/toolCallId"),
            (r#""c""#, r#""""#, "/message/toolCallId"),
            (
                r#""toolName":"read""#,
                r#""toolName":1"#,
                "/message/toolName",
            ),
            (
                r#""isError":false"#,
                r#""isError":"no""#,
                "/message/isError",
            ),
            (r#""content":[]"#, r#""content":"x""#, "/message/content"),
            (
                r#""content":[]"#,
                r#""content":[{"type":"toolCall","id":"x","name":"y","arguments":{}}]"#,
                "/message/content/0/type",
            ),
        ] {
            let e = invalid_entry(&base.replacen(from, to, 1));
            assert_eq!(e.pointer, pointer, "{from} -> {to}");
        }
    }

    #[test]
    fn rejects_assistant_string_content() {
        let e = invalid_entry(&a_read_with(
            r#""content":[{"type":"toolCall","id":"call-1","name":"read","arguments":{"path":"README.md"}}]"#,
            r#""content":"text""#,
        ));
        assert_eq!(e.pointer, "/message/content");
    }

    #[test]
    fn rejects_metadata_without_key_or_value() {
        let base = r#"{"id":"m","parentId":null,"timestamp":0,"type":"metadata","key":"cwd","value":"/w"}"#;
        assert!(parse_entry(base).is_ok());
        assert_eq!(
            invalid_entry(&base.replace(r#""key":"cwd","#, "")).pointer,
            "/key"
        );
        assert_eq!(
            invalid_entry(&base.replace(r#""cwd""#, r#""""#)).pointer,
            "/key"
        );
        assert_eq!(
            invalid_entry(&base.replace(r#","value":"/w""#, "")).pointer,
            "/value"
        );
    }

    #[test]
    fn metadata_value_may_be_any_json_including_null() {
        for v in ["null", "0", "\"s\"", "[1,[2]]", "{\"a\":{}}", "true"] {
            let text = format!(
                r#"{{"id":"m","parentId":null,"timestamp":0,"type":"metadata","key":"k","value":{v}}}"#
            );
            assert_eq!(parse_entry(&text).unwrap().metadata().unwrap().1, v);
        }
    }

    #[test]
    fn json_hygiene_classes_are_invalid_json_with_pointers() {
        assert_eq!(
            invalid_json(a_read_with(r#""api":"x""#, r#""api":"x","api":"y""#).as_bytes()).pointer,
            "/message/api"
        );
        assert_eq!(
            invalid_json(a_read_with(r#""input":10"#, r#""input":1e400"#).as_bytes()).pointer,
            "/message/usage/input"
        );
        assert_eq!(
            invalid_json(
                a_read_with(r#""input":10"#, r#""input":123456789012345678901234"#).as_bytes()
            )
            .pointer,
            "/message/usage/input"
        );
        // Round 2 (docs/contract.md §6.1): a lone surrogate escape is kept as written.
        let lone = a_read_with("README.md", r"\ud800");
        assert_eq!(parse_entry(&lone).unwrap().json(), lone);
        let mut bad_utf8 = A_READ.as_bytes().to_vec();
        let at = A_READ.find("README").unwrap();
        bad_utf8[at] = 0xFF;
        assert_eq!(
            invalid_json(&bad_utf8).pointer,
            "/message/content/0/arguments/path"
        );
        invalid_json(format!("{A_READ} {A_READ}").as_bytes());
        invalid_json(format!("{A_READ}x").as_bytes());
        let deep = format!(
            r#"{{"id":"m","parentId":null,"timestamp":0,"type":"metadata","key":"k","value":{}{}}}"#,
            "[".repeat(200),
            "]".repeat(200)
        );
        assert!(matches!(
            invalid_json(deep.as_bytes()).kind,
            json::JsonErrorKind::TooDeep(_)
        ));
    }

    #[test]
    fn parse_entries_prefixes_pointers_with_the_index() {
        let list = format!("[{A_READ},{}]", a_read_with(r#""call-1""#, r#""""#));
        match parse_entries(&list) {
            Err(Error::InvalidEntry(e)) => assert_eq!(e.pointer, "/1/message/content/0/id"),
            other => panic!("{other:?}"),
        }
        match parse_entries(format!(
            "[{A_READ},{}]",
            a_read_with(r#""input":10"#, r#""input":1e999"#)
        )) {
            Err(Error::InvalidJson(e)) => assert_eq!(e.pointer, "/1/message/usage/input"),
            other => panic!("{other:?}"),
        }
        assert!(matches!(parse_entries("{}"), Err(Error::InvalidEntry(_))));
        assert_eq!(
            parse_entries(format!("[{A_READ}]")).unwrap()[0].json(),
            A_READ
        );
    }
}
