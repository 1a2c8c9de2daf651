//! Navigating the tree (docs/contract.md §8): the node shape the queries return, their options
//! and results, and the pure parts (what a node says of an entry, previews).
//!
//! A node describes an entry without its body, so that a host UI can draw a tree of
//! any size from answers proportional to what it shows: ids, position, depth, what
//! kind of entry it is, how many children it has, its label, and on request a short
//! preview of its first text. The queries themselves run over the store's index
//! ([`crate::Store::children`] and the others).

use std::borrow::Cow;

use serde::Deserialize;

pub use crate::entry::{LABEL_KEY, RESUME_LEAF_KEY};
pub use crate::preview::{escape_controls, preview};

use crate::error::Error;
use crate::json::Object;
use crate::json::{self, Kind, Tape};

/// One entry as a navigation query shows it: never the message body.
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    pub id: String,
    /// `None` for a root.
    pub parent_id: Option<String>,
    /// The entry's 0-based commit position.
    pub seq: u64,
    /// The number of ancestors in the store: 0 for a root (and for a salvaged orphan,
    /// whose parent is missing).
    pub depth: u64,
    /// The entry's timestamp.
    pub timestamp: f64,
    /// `message`, `metadata` or `compaction`.
    pub kind: String,
    /// For a message: its role (extension roles included).
    pub role: Option<String>,
    /// For an assistant message: how many tool calls it holds.
    pub tool_calls: Option<u64>,
    /// For a `toolResult` message: the call it answers.
    pub tool_call_id: Option<String>,
    /// For metadata: its key.
    pub key: Option<String>,
    /// For a compaction: `Some(None)` when it keeps nothing from before it.
    pub first_kept_entry_id: Option<Option<String>>,
    /// How many entries name this one as their parent.
    pub child_count: u64,
    /// The entry's current label (`session.label`), if any.
    pub label: Option<String>,
    /// The first characters of the entry's first text, control characters escaped;
    /// only when a preview was asked for and the entry has a text.
    pub preview: Option<String>,
    /// In a tree page: the node is on the path to the page's `leaf`.
    pub on_path: bool,
    /// The timestamp's number token, exactly as committed.
    timestamp_token: String,
}

/// What the index knows of an entry's place in the tree, given to [`Node::describe`].
pub(crate) struct Place<'a> {
    pub seq: u64,
    pub depth: u64,
    pub child_count: u64,
    pub label: Option<&'a str>,
    pub on_path: bool,
}

impl Node {
    /// The node of the entry whose canonical JSON is `entry_json`, at `place`, with a
    /// preview of at most `preview_chars` characters (0: none).
    pub(crate) fn describe(entry_json: &[u8], place: Place<'_>, preview_chars: u64) -> Node {
        let mut tape = Tape::default();
        let scanned = json::scan(entry_json, json::MAX_DEPTH, &mut tape).is_ok()
            && tape.nodes.first().map(|n| n.kind) == Some(Kind::Object);
        let mut node = Node {
            id: String::new(),
            parent_id: None,
            seq: place.seq,
            depth: place.depth,
            timestamp: 0.0,
            kind: String::new(),
            role: None,
            tool_calls: None,
            tool_call_id: None,
            key: None,
            first_kept_entry_id: None,
            child_count: place.child_count,
            label: place.label.map(str::to_owned),
            preview: None,
            on_path: place.on_path,
            timestamp_token: "0".to_owned(),
        };
        // A committed entry always scans (it was validated before it was committed).
        if scanned {
            node.read_entry(&tape, preview_chars);
        }
        node
    }

    fn read_entry(&mut self, tape: &Tape, preview_chars: u64) {
        let string = |i: Option<usize>| {
            i.filter(|&i| tape.nodes[i].kind == Kind::String)
                .map(|i| tape.string(i).into_owned())
        };
        self.id = string(tape.get(0, "id")).unwrap_or_default();
        self.parent_id = string(tape.get(0, "parentId"));
        if let Some(ts) = tape.get(0, "timestamp") {
            let token = String::from_utf8_lossy(tape.raw(ts)).into_owned();
            self.timestamp = token.parse().unwrap_or(0.0);
            self.timestamp_token = token;
        }
        self.kind = string(tape.get(0, "type")).unwrap_or_default();
        let mut first_text = None;
        match self.kind.as_str() {
            "message" => {
                if let Some(message) = tape.get(0, "message") {
                    first_text = self.read_message(tape, message);
                }
            }
            "metadata" => self.key = string(tape.get(0, "key")),
            "compaction" => {
                self.first_kept_entry_id = Some(string(tape.get(0, "firstKeptEntryId")));
                first_text = tape
                    .get(0, "summary")
                    .filter(|&i| tape.nodes[i].kind == Kind::String)
                    .map(|i| tape.string(i));
            }
            _ => {}
        }
        if preview_chars > 0 {
            self.preview = first_text.map(|text| preview(&text, preview_chars));
        }
    }

    /// Role, tool-call count and call id of a message; returns its first text.
    fn read_message<'t>(&mut self, tape: &'t Tape, message: usize) -> Option<Cow<'t, str>> {
        let get = |name| tape.get(message, name);
        let is = |i: usize, kind| tape.nodes[i].kind == kind;
        self.role = get("role")
            .filter(|&i| is(i, Kind::String))
            .map(|i| tape.string(i).into_owned());
        if self.role.as_deref() == Some("toolResult") {
            self.tool_call_id = get("toolCallId")
                .filter(|&i| is(i, Kind::String))
                .map(|i| tape.string(i).into_owned());
        }
        let content = get("content")?;
        if is(content, Kind::String) {
            return Some(tape.string(content));
        }
        if !is(content, Kind::Array) {
            return None;
        }
        let block_type = |block: usize| {
            tape.get(block, "type")
                .filter(|&i| is(i, Kind::String))
                .map(|i| tape.string(i))
        };
        let blocks = || tape.elements(content).filter(|&b| is(b, Kind::Object));
        if self.role.as_deref() == Some("assistant") {
            let calls = blocks()
                .filter(|&b| block_type(b).as_deref() == Some("toolCall"))
                .count();
            self.tool_calls = Some(calls as u64);
        }
        blocks()
            .find(|&b| block_type(b).as_deref() == Some("text"))
            .and_then(|b| tape.get(b, "text"))
            .filter(|&i| is(i, Kind::String))
            .map(|i| tape.string(i))
    }

    /// The node as JSON: `{id, parentId, seq, depth, timestamp, type, role?,
    /// toolCalls?, toolCallId?, key?, firstKeptEntryId?, childCount, label?,
    /// preview?, onPath?}` (`onPath` only when true).
    pub fn to_json(&self) -> String {
        let mut o = Object::new()
            .string("id", &self.id)
            .string_or_null("parentId", self.parent_id.as_deref())
            .number("seq", self.seq)
            .number("depth", self.depth)
            .raw("timestamp", &self.timestamp_token)
            .string("type", &self.kind);
        if let Some(role) = &self.role {
            o = o.string("role", role);
        }
        if let Some(calls) = self.tool_calls {
            o = o.number("toolCalls", calls);
        }
        if let Some(call) = &self.tool_call_id {
            o = o.string("toolCallId", call);
        }
        if let Some(key) = &self.key {
            o = o.string("key", key);
        }
        if let Some(first_kept) = &self.first_kept_entry_id {
            o = o.string_or_null("firstKeptEntryId", first_kept.as_deref());
        }
        o = o.number("childCount", self.child_count);
        if let Some(label) = &self.label {
            o = o.string("label", label);
        }
        if let Some(preview) = &self.preview {
            o = o.string("preview", preview);
        }
        if self.on_path {
            o = o.boolean("onPath", true);
        }
        o.finish()
    }
}

/// `[node, …]`.
pub fn nodes_json(nodes: &[Node]) -> String {
    crate::json::array(nodes.iter().map(Node::to_json))
}

/// Options of a `tree` page: `{"afterSeq":N,"limit":N,"leaf":"id","previewChars":N}`,
/// every member optional.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct TreeOptions {
    /// Only nodes whose seq is greater than this (the previous page's `nextAfterSeq`).
    pub after_seq: Option<u64>,
    /// At most this many nodes; no limit when absent.
    pub limit: Option<u64>,
    /// Flag the nodes on the path to this entry with `onPath`.
    pub leaf: Option<String>,
    /// Previews of at most this many characters; 0 or absent: none.
    #[serde(default)]
    pub preview_chars: u64,
}

impl TreeOptions {
    /// Options from JSON; absent members keep their defaults. A negative or
    /// non-integer `afterSeq`, `limit` or `previewChars`, a member of the wrong type,
    /// or an unknown member is [`Error::InvalidOption`].
    pub fn from_json(text: &str) -> Result<TreeOptions, Error> {
        crate::options::from_json(text)
    }
}

/// A page of the tree in commit order.
#[derive(Clone, Debug, PartialEq)]
pub struct TreePage {
    pub nodes: Vec<Node>,
    /// Entries in the store.
    pub count: u64,
    /// The last node's seq when more nodes follow, for the next page's `afterSeq`.
    pub next_after_seq: Option<u64>,
}

impl TreePage {
    /// `{"nodes":[…],"count":N,"nextAfterSeq":N|null}`.
    pub fn to_json(&self) -> String {
        Object::new()
            .raw("nodes", &nodes_json(&self.nodes))
            .number("count", self.count)
            .number_or_null("nextAfterSeq", self.next_after_seq)
            .finish()
    }
}

/// The leaves of the store.
#[derive(Clone, Debug, PartialEq)]
pub struct Leaves {
    /// Every entry without children, in commit order.
    pub leaves: Vec<Node>,
    /// The last committed entry (always a leaf); `None` when the store is empty.
    pub latest_by_seq: Option<String>,
    /// The leaf with the greatest timestamp, a tie going to the higher seq.
    pub latest_by_timestamp: Option<String>,
}

impl Leaves {
    /// `{"leaves":[…],"latestBySeq":id|null,"latestByTimestamp":id|null}`.
    pub fn to_json(&self) -> String {
        Object::new()
            .raw("leaves", &nodes_json(&self.leaves))
            .string_or_null("latestBySeq", self.latest_by_seq.as_deref())
            .string_or_null("latestByTimestamp", self.latest_by_timestamp.as_deref())
            .finish()
    }
}

/// A target's current label.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Label {
    pub target_id: String,
    pub label: String,
    /// The `session.label` entry that set it, and its seq.
    pub entry_id: String,
    pub seq: u64,
}

impl Label {
    /// `{"targetId":…,"label":…,"entryId":…,"seq":N}`.
    pub fn to_json(&self) -> String {
        Object::new()
            .string("targetId", &self.target_id)
            .string("label", &self.label)
            .string("entryId", &self.entry_id)
            .number("seq", self.seq)
            .finish()
    }
}

/// `[label, …]`.
pub fn labels_json(labels: &[Label]) -> String {
    crate::json::array(labels.iter().map(Label::to_json))
}

/// What a `session.label` value says: its target and the label, `None` to clear.
/// `None` for a value that is not a label (validation at append is the entry
/// rules' job; the index only reads what was committed).
pub(crate) fn read_label(value_json: &[u8]) -> Option<(String, Option<String>)> {
    let mut tape = Tape::default();
    json::scan(value_json, json::MAX_DEPTH, &mut tape).ok()?;
    if tape.nodes.first()?.kind != Kind::Object {
        return None;
    }
    let target = tape.get(0, "targetId")?;
    let label = tape.get(0, "label")?;
    if tape.nodes[target].kind != Kind::String {
        return None;
    }
    let target = tape.string(target).into_owned();
    match tape.nodes[label].kind {
        Kind::String => Some((target, Some(tape.string(label).into_owned()))),
        Kind::Null => Some((target, None)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tree_options_reject_negative_fractional_and_unknown_members() {
        for bad in [
            r#"{"afterSeq":-1}"#,
            r#"{"limit":1.5}"#,
            r#"{"limit":"3"}"#,
            r#"{"lmit":3}"#,
            r#"{"limit":1,"limit":2}"#,
            "[]",
        ] {
            assert!(
                matches!(
                    TreeOptions::from_json(bad),
                    Err(Error::InvalidOption { .. })
                ),
                "{bad}"
            );
        }
        let options = TreeOptions::from_json(r#"{"afterSeq":3,"limit":10,"leaf":"x"}"#);
        assert_eq!(
            options.ok(),
            Some(TreeOptions {
                after_seq: Some(3),
                limit: Some(10),
                leaf: Some("x".into()),
                preview_chars: 0
            })
        );
    }

    #[test]
    fn label_values_read_target_and_label_or_clear() {
        assert_eq!(
            read_label(br#"{"targetId":"a","label":"x"}"#),
            Some(("a".into(), Some("x".into())))
        );
        assert_eq!(
            read_label(br#"{"targetId":"a","label":null}"#),
            Some(("a".into(), None))
        );
        assert_eq!(read_label(br#"{"targetId":"a"}"#), None);
        assert_eq!(read_label(br#""a""#), None);
    }
}
