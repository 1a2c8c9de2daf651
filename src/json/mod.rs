//! JSON hygiene: one pass over untrusted bytes that accepts exactly one JSON value
//! whose meaning survives a round trip, and writes its canonical form.
//!
//! A general JSON parser silently changes some inputs: it keeps one of two duplicate
//! keys, rounds an integer that does not fit, or turns `1e400` into infinity. Each of
//! those is a value that would not come back as written, so the scanner rejects it
//! with a JSON Pointer to the spot instead (docs/contract.md §2). A lone surrogate escape such as
//! `"\ud83d"` is different: the JSON text carries it without loss, so it is kept
//! exactly as written (docs/contract.md §6.1).
//!
//! The scanner is iterative (an explicit stack, no recursion), so no input depth can
//! overflow the thread's stack; depth beyond the caller's limit is an error.
//!
//! Output is a [`Tape`]: the canonical text (every token copied verbatim, insignificant
//! whitespace dropped) and a flat list of [`Node`]s whose spans point into that text.
//! Strings keep their escapes as written: `"\u00e9"` and `"é"` are the same value, and
//! copying the token is both exact and cheap.

mod error;
mod scan;
mod text;
mod write;

pub use error::{JsonError, JsonErrorKind};
pub(crate) use scan::scan;
use scan::{Frame, KeySpan};
pub use text::push_string;
pub(crate) use text::{decode_string, decode_string_mapped, push_pointer_segment};
pub(crate) use write::{ArrayWriter, array, bytes_array, push_value, string_or_null_array};
// The one JSON writer, for the `session` binary too (which can reach only the public
// API); not part of the documented API.
#[doc(hidden)]
pub use write::{Integer, Object};

use std::borrow::Cow;

/// The deepest nesting an entry may have: the entry object itself is level 1.
pub const MAX_DEPTH: usize = 128;

/// What kind of JSON value a [`Node`] is.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Kind {
    Object,
    Array,
    String,
    Number,
    Bool,
    Null,
}

impl Kind {
    /// The word used in error messages ("expected a string, found an array").
    pub(crate) fn noun(self) -> &'static str {
        match self {
            Kind::Object => "an object",
            Kind::Array => "an array",
            Kind::String => "a string",
            Kind::Number => "a number",
            Kind::Bool => "a boolean",
            Kind::Null => "null",
        }
    }
}

/// One value on the tape. Objects are followed by their members as alternating key
/// and value nodes; arrays by their elements.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Node {
    pub kind: Kind,
    /// For strings: the token contains at least one backslash escape.
    pub escaped: bool,
    /// Byte span of the value in the canonical text (quotes and brackets included).
    pub start: usize,
    pub end: usize,
    /// Index of the first node after this value's subtree (its next sibling).
    pub next: usize,
}

/// The canonical text of one JSON value and the nodes that index it. Reused between
/// calls so that scanning many lines does not allocate per line.
#[derive(Default, Debug)]
pub(crate) struct Tape {
    pub text: Vec<u8>,
    pub nodes: Vec<Node>,
    /// The scanner's working stacks, kept here so that they are reused too.
    frames: Vec<Frame>,
    keys: Vec<KeySpan>,
}

impl Tape {
    /// The canonical text of node `i`.
    pub(crate) fn raw(&self, i: usize) -> &[u8] {
        let n = &self.nodes[i];
        &self.text[n.start..n.end]
    }

    /// The value of string node `i`, unescaped.
    pub(crate) fn string(&self, i: usize) -> Cow<'_, str> {
        decode_string(self.raw(i), self.nodes[i].escaped)
    }

    /// The members of object node `obj`, as (key node, value node) pairs in order.
    pub(crate) fn members(&self, obj: usize) -> impl Iterator<Item = (usize, usize)> + '_ {
        let end = self.nodes[obj].next;
        let mut key = obj + 1;
        std::iter::from_fn(move || {
            if key >= end {
                return None;
            }
            let pair = (key, key + 1);
            key = self.nodes[key + 1].next;
            Some(pair)
        })
    }

    /// The elements of array node `arr`, in order.
    pub(crate) fn elements(&self, arr: usize) -> impl Iterator<Item = usize> + '_ {
        let end = self.nodes[arr].next;
        let mut at = arr + 1;
        std::iter::from_fn(move || {
            if at >= end {
                return None;
            }
            let this = at;
            at = self.nodes[at].next;
            Some(this)
        })
    }

    /// The value of member `name` of object node `obj`. Keys are compared by value,
    /// so an escaped spelling of `name` matches too.
    pub(crate) fn get(&self, obj: usize, name: &str) -> Option<usize> {
        self.members(obj)
            .find(|&(key, _)| {
                let node = &self.nodes[key];
                if node.escaped {
                    self.string(key) == name
                } else {
                    &self.text[node.start + 1..node.end - 1] == name.as_bytes()
                }
            })
            .map(|(_, value)| value)
    }
}

#[cfg(test)]
mod tests;
