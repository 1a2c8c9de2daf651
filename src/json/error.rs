//! Why a JSON text is refused: the kind of fault, where it is, and its byte offset.

use std::fmt;

/// Why a text is not acceptable JSON.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum JsonErrorKind {
    /// The input holds no value at all (empty or whitespace).
    Empty,
    /// Not JSON grammar at this byte.
    Syntax(String),
    /// A string ends before its closing quote, or the text ends inside a value.
    UnexpectedEnd,
    /// A byte sequence that is not UTF-8.
    InvalidUtf8,
    /// A raw control character (below U+0020) inside a string.
    ControlCharacter,
    /// A `\uD800`–`\uDFFF` escape that is not part of a surrogate pair. Never
    /// produced: a lone surrogate escape is kept as written (docs/contract.md §6.1).
    LoneSurrogate,
    /// The same key twice in one object; a parser would keep one and drop the other.
    DuplicateKey(String),
    /// A number that would not come back as the same value.
    LossyNumber(String),
    /// Nesting deeper than the limit.
    TooDeep(usize),
    /// Something other than whitespace after the value.
    TrailingData,
}

impl fmt::Display for JsonErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JsonErrorKind::Empty => write!(f, "no JSON value"),
            JsonErrorKind::Syntax(what) => write!(f, "{what}"),
            JsonErrorKind::UnexpectedEnd => write!(f, "the text ends inside a value"),
            JsonErrorKind::InvalidUtf8 => write!(f, "invalid UTF-8"),
            JsonErrorKind::ControlCharacter => {
                write!(f, "raw control character in a string (escape it)")
            }
            JsonErrorKind::LoneSurrogate => {
                write!(f, "lone surrogate escape; it is not a Unicode character")
            }
            JsonErrorKind::DuplicateKey(key) => write!(
                f,
                "duplicate key {key:?}; one of the two values would be silently dropped"
            ),
            JsonErrorKind::LossyNumber(why) => write!(f, "{why}"),
            JsonErrorKind::TooDeep(limit) => {
                write!(f, "nesting deeper than {limit} levels")
            }
            JsonErrorKind::TrailingData => {
                write!(
                    f,
                    "more than one JSON value, or trailing data after the value"
                )
            }
        }
    }
}

/// A rejected JSON text: what is wrong, where (a JSON Pointer), and at which byte of
/// the input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JsonError {
    pub kind: JsonErrorKind,
    pub pointer: String,
    pub offset: usize,
}

impl fmt::Display for JsonError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (byte {})", self.kind, self.offset)
    }
}
