//! The validator: from the JSON hygiene scan to the entry's shape, the message by role
//! and each content block by type (docs/contract.md §2, §6).

use crate::error::{EntryError, Error, LineFault};
use crate::json::{self, Kind, MAX_DEPTH, Tape};

use super::*;

/// The prefix of the metadata keys reserved for libsession (docs/contract.md §6.3).
pub const RESERVED_PREFIX: &str = "session.";

/// The metadata key of a label entry (docs/contract.md §6.3).
pub const LABEL_KEY: &str = "session.label";

/// The metadata key of the entry an import writes to record the leaf its agent
/// resumes (docs/contract.md §6.3): value `{"leafId": non-empty string}`.
pub const RESUME_LEAF_KEY: &str = "session.resumeLeaf";

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

    /// The tape of the entry the last successful [`EntryParser::parse`] returned (the
    /// search index reads the text a person reads from it without scanning again).
    #[cfg_attr(not(feature = "search"), allow(dead_code))]
    pub(crate) fn tape(&self) -> &Tape {
        &self.tape
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
pub(super) enum Segment {
    Key(&'static str),
    Index(usize),
}

/// The shape checker. It walks the tape from the outside in, keeping the path to the
/// value under inspection so that every error can name its place as a JSON Pointer
/// (rendered only when an error happens).
pub(super) struct Check<'t> {
    tape: &'t Tape,
    pub(super) path: Vec<Segment>,
    options: ParseOptions,
}

type Checked<T> = Result<T, EntryError>;

impl<'t> Check<'t> {
    pub(super) fn new(tape: &'t Tape, options: ParseOptions) -> Check<'t> {
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

    pub(super) fn expect(&self, node: usize, kind: Kind) -> Checked<()> {
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

    pub(super) fn entry(&mut self, root: usize) -> Checked<Facts> {
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
                let target = match key.of(&self.tape.text[base..]) {
                    LABEL_KEY => Some(self.within(Segment::Key("value"), |c| c.label(node, base))?),
                    RESUME_LEAF_KEY => {
                        Some(self.within(Segment::Key("value"), |c| c.resume_leaf(node, base))?)
                    }
                    _ => None,
                };
                Body::Metadata {
                    key,
                    value: self.span(node, base),
                    target,
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

    /// The value of a `session.resumeLeaf` metadata entry: `{"leafId": non-empty
    /// string}`; returns the leaf. Other members are kept and ignored.
    fn resume_leaf(&mut self, value: usize, base: usize) -> Checked<Text> {
        self.expect(value, Kind::Object)?;
        self.text(value, "leafId", base)
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
