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

use std::borrow::Cow;
use std::fmt;

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
    /// A `\uD800`–`\uDFFF` escape that is not part of a surrogate pair. No longer
    /// produced: since round 2 (docs/contract.md §6.1) a lone surrogate escape is kept as written.
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

/// `[a,b,…]` from the JSON texts `items`, in a buffer sized exactly (plus one byte,
/// so that a C caller's terminating NUL fits without a copy).
pub(crate) fn array<'a>(items: impl Iterator<Item = &'a [u8]> + Clone) -> Vec<u8> {
    let len: usize = items.clone().map(|item| item.len() + 1).sum();
    let mut out = Vec::with_capacity(len + 2);
    push_array(&mut out, items);
    out
}

/// Appends `[a,b,…]` from the JSON texts `items` to `out`.
pub(crate) fn push_array<'a>(out: &mut Vec<u8>, items: impl Iterator<Item = &'a [u8]>) {
    out.push(b'[');
    for (i, item) in items.enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(item);
    }
    out.push(b']');
}

/// Appends `s` as a JSON string literal.
pub fn push_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Appends `segment` to a JSON Pointer, escaping `~` and `/` (RFC 6901).
pub(crate) fn push_pointer_segment(pointer: &mut String, segment: &str) {
    pointer.push('/');
    for c in segment.chars() {
        match c {
            '~' => pointer.push_str("~0"),
            '/' => pointer.push_str("~1"),
            _ => pointer.push(c),
        }
    }
}

/// Decodes a validated string token (quotes included) to its value.
pub(crate) fn decode_string(token: &[u8], escaped: bool) -> Cow<'_, str> {
    let inner = &token[1..token.len() - 1];
    if !escaped {
        // The scanner checked the token's UTF-8; `from_utf8_lossy` borrows when valid.
        return String::from_utf8_lossy(inner);
    }
    let mut out = String::with_capacity(inner.len());
    let mut rest = inner;
    while let Some(pos) = rest.iter().position(|&b| b == b'\\') {
        out.push_str(&String::from_utf8_lossy(&rest[..pos]));
        let (ch, used) = decode_escape(&rest[pos..]);
        out.push(ch);
        rest = &rest[pos + used..];
    }
    out.push_str(&String::from_utf8_lossy(rest));
    Cow::Owned(out)
}

/// Decodes one escape at the start of `s` (which begins with a backslash); returns
/// the character and the bytes used. The scanner has validated the escape.
fn decode_escape(s: &[u8]) -> (char, usize) {
    match s.get(1) {
        Some(b'"') => ('"', 2),
        Some(b'\\') => ('\\', 2),
        Some(b'/') => ('/', 2),
        Some(b'b') => ('\u{8}', 2),
        Some(b'f') => ('\u{c}', 2),
        Some(b'n') => ('\n', 2),
        Some(b'r') => ('\r', 2),
        Some(b't') => ('\t', 2),
        Some(b'u') => {
            let hi = hex4(&s[2..]).unwrap_or(0xFFFD);
            let lo = s
                .get(6..8)
                .filter(|p| *p == b"\\u")
                .and_then(|_| s.get(8..).and_then(hex4));
            if let (0xD800..=0xDBFF, Some(lo @ 0xDC00..=0xDFFF)) = (hi, lo) {
                let code = 0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00);
                (char::from_u32(code).unwrap_or('\u{FFFD}'), 12)
            } else {
                // A lone surrogate has no char: its decoded value is U+FFFD (the JSON
                // text keeps the escape as written).
                (char::from_u32(hi).unwrap_or('\u{FFFD}'), 6)
            }
        }
        _ => ('\u{FFFD}', 1),
    }
}

/// Reads four hex digits.
fn hex4(s: &[u8]) -> Option<u32> {
    let digits = s.get(..4)?;
    let mut value = 0u32;
    for &d in digits {
        value = value * 16 + (d as char).to_digit(16)?;
    }
    Some(value)
}

/// Bytes that end the fast path inside a string: the quote, a backslash, or a raw
/// control character.
static STRING_STOP: [bool; 256] = {
    let mut table = [false; 256];
    let mut i = 0;
    while i < 0x20 {
        table[i] = true;
        i += 1;
    }
    table[b'"' as usize] = true;
    table[b'\\' as usize] = true;
    table
};

/// Returns the index of the first byte at or after `i` that ends the fast path in a
/// string (see [`STRING_STOP`]), OR-ing every byte passed into `high_bits` (so the
/// caller knows whether to validate UTF-8). The quote or backslash is found with
/// `memchr2` (vectorised); the control-byte check over the span between is a branch-free
/// loop over eight bytes at a time.
fn skip_plain_string_bytes(input: &[u8], mut i: usize, high_bits: &mut u8) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    // Most strings are short (keys, ids, names): a byte loop finds their end before a
    // vectorised search would have started.
    let short_end = input.len().min(i + 24);
    while i < short_end {
        let b = input[i];
        if STRING_STOP[b as usize] {
            return i;
        }
        *high_bits |= b;
        i += 1;
    }
    let rest = input.get(i..).unwrap_or_default();
    let end = memchr::memchr2(b'"', b'\\', rest).unwrap_or(rest.len());
    let span = &rest[..end];
    let (mut below_space, mut high) = (0u64, 0u64);
    let mut words = span.chunks_exact(8);
    for word in &mut words {
        let word = u64::from_le_bytes(<[u8; 8]>::try_from(word).unwrap_or([0; 8]));
        // Non-zero exactly when some byte is below 0x20 (which bytes is not exact).
        below_space |= word.wrapping_sub(ONES * 0x20) & !word & HIGH;
        high |= word & HIGH;
    }
    for &b in words.remainder() {
        below_space |= u64::from(b < 0x20);
        high |= u64::from(b & 0x80);
    }
    if below_space != 0 {
        // Stop at the first control byte; the caller reports it.
        let at = span.iter().position(|&b| b < 0x20).unwrap_or(end);
        return i + at;
    }
    if high != 0 {
        *high_bits |= 0x80;
    }
    i + end
}

/// One open container while scanning.
#[derive(Debug)]
struct Frame {
    node: usize,
    is_object: bool,
    /// Elements (arrays) or members (objects) seen so far.
    count: usize,
    /// Index into `Scanner::keys` where this object's keys begin.
    keys_from: usize,
}

/// A key seen in the object being scanned: the span of its token in the canonical text.
#[derive(Clone, Copy, Debug)]
struct KeySpan {
    start: usize,
    end: usize,
    escaped: bool,
}

struct Scanner<'a> {
    input: &'a [u8],
    pos: usize,
    max_depth: usize,
    stack: Vec<Frame>,
    keys: Vec<KeySpan>,
    /// Where the value starts in the input (after leading whitespace).
    base: usize,
    /// No insignificant whitespace seen inside the value yet, so the canonical text so
    /// far is `input[base..pos]` and is not copied token by token: most lines are
    /// written minified, and then the whole value is copied once at the end.
    lazy: bool,
}

/// Scans `input` as exactly one JSON value nested at most `max_depth` levels deep,
/// filling `tape` (cleared first) with its canonical text and nodes.
pub(crate) fn scan(input: &[u8], max_depth: usize, tape: &mut Tape) -> Result<(), JsonError> {
    tape.text.clear();
    tape.nodes.clear();
    tape.text.reserve(input.len());
    let mut scanner = Scanner {
        input,
        pos: 0,
        max_depth,
        stack: std::mem::take(&mut tape.frames),
        keys: std::mem::take(&mut tape.keys),
        base: 0,
        lazy: true,
    };
    scanner.stack.clear();
    scanner.keys.clear();
    let result = scanner.run(tape);
    tape.frames = scanner.stack;
    tape.keys = scanner.keys;
    result
}

impl Scanner<'_> {
    fn run(&mut self, tape: &mut Tape) -> Result<(), JsonError> {
        self.skip_blank();
        self.base = self.pos;
        if self.pos == self.input.len() {
            return Err(self.error(tape, JsonErrorKind::Empty));
        }
        loop {
            // A value that opens a non-empty container is not complete yet: its first
            // element comes next.
            let complete = self.value(tape)?;
            if complete && !self.after_value(tape)? {
                break;
            }
        }
        if self.lazy {
            tape.text
                .extend_from_slice(&self.input[self.base..self.pos]);
            self.lazy = false;
        }
        self.skip_blank();
        if self.pos != self.input.len() {
            return Err(self.error(tape, JsonErrorKind::TrailingData));
        }
        Ok(())
    }

    /// Skips whitespace outside the value (before or after it).
    fn skip_blank(&mut self) {
        while let Some(&b) = self.input.get(self.pos) {
            if !matches!(b, b' ' | b'\t' | b'\n' | b'\r') {
                break;
            }
            self.pos += 1;
        }
    }

    /// Skips whitespace inside the value: from then on the canonical text is built
    /// token by token, without it.
    fn skip_ws(&mut self, tape: &mut Tape) {
        let start = self.pos;
        self.skip_blank();
        if self.lazy && self.pos > start {
            tape.text.extend_from_slice(&self.input[self.base..start]);
            self.lazy = false;
        }
    }

    /// Adds `input[from..to]` to the canonical text; returns its span there.
    fn emit(&self, tape: &mut Tape, from: usize, to: usize) -> (usize, usize) {
        if self.lazy {
            return (from - self.base, to - self.base);
        }
        let start = tape.text.len();
        tape.text.extend_from_slice(&self.input[from..to]);
        (start, tape.text.len())
    }

    /// The canonical text at `start..end` (valid while scanning, lazy or not).
    fn canonical<'t>(&'t self, tape: &'t Tape, start: usize, end: usize) -> &'t [u8] {
        if self.lazy {
            &self.input[self.base + start..self.base + end]
        } else {
            &tape.text[start..end]
        }
    }

    /// Scans one value, or opens a container. Returns `false` when it opened a
    /// container whose first element (or member value) must be scanned next.
    fn value(&mut self, tape: &mut Tape) -> Result<bool, JsonError> {
        self.skip_ws(tape);
        let Some(&byte) = self.input.get(self.pos) else {
            return Err(self.error(tape, JsonErrorKind::UnexpectedEnd));
        };
        match byte {
            b'{' | b'[' => return self.open(tape, byte == b'{'),
            b'"' => self.string(tape),
            b'-' | b'0'..=b'9' => self.number(tape),
            b't' => self.literal(tape, b"true", Kind::Bool),
            b'f' => self.literal(tape, b"false", Kind::Bool),
            b'n' => self.literal(tape, b"null", Kind::Null),
            _ => Err(self.error(tape, syntax(format!("unexpected {}", describe(byte))))),
        }
        .map(|()| true)
    }

    /// Opens a container; returns `true` when it is empty (and so already complete
    /// once its closing bracket is consumed by `after_value`).
    fn open(&mut self, tape: &mut Tape, is_object: bool) -> Result<bool, JsonError> {
        if self.stack.len() >= self.max_depth {
            return Err(self.error(tape, JsonErrorKind::TooDeep(self.max_depth)));
        }
        let node = tape.nodes.len();
        let (start, _) = self.emit(tape, self.pos, self.pos + 1);
        tape.nodes.push(Node {
            kind: if is_object { Kind::Object } else { Kind::Array },
            escaped: false,
            start,
            end: 0,
            next: 0,
        });
        self.pos += 1;
        self.stack.push(Frame {
            node,
            is_object,
            count: 0,
            keys_from: self.keys.len(),
        });
        self.skip_ws(tape);
        let close = if is_object { b'}' } else { b']' };
        if self.input.get(self.pos) == Some(&close) {
            // Empty container: `after_value` consumes the closing bracket.
            return Ok(true);
        }
        if is_object {
            self.key(tape)?;
        }
        self.value_pending();
        Ok(false)
    }

    fn value_pending(&mut self) {
        if let Some(frame) = self.stack.last_mut() {
            frame.count += 1;
        }
    }

    /// After a value: close containers and consume separators. Returns `true` when
    /// another value must follow, `false` when the top-level value is complete.
    fn after_value(&mut self, tape: &mut Tape) -> Result<bool, JsonError> {
        loop {
            let Some(frame) = self.stack.last() else {
                return Ok(false);
            };
            let (is_object, count) = (frame.is_object, frame.count);
            self.skip_ws(tape);
            let close = if is_object { b'}' } else { b']' };
            match self.input.get(self.pos) {
                Some(&b',') if count > 0 => {
                    self.emit(tape, self.pos, self.pos + 1);
                    self.pos += 1;
                    if is_object {
                        self.skip_ws(tape);
                        self.key(tape)?;
                    }
                    self.value_pending();
                    return Ok(true);
                }
                Some(&b) if b == close => self.close(tape)?,
                Some(&b) => {
                    let want = if is_object {
                        "',' or '}'"
                    } else {
                        "',' or ']'"
                    };
                    return Err(self.error(
                        tape,
                        syntax(format!("expected {want}, found {}", describe(b))),
                    ));
                }
                None => return Err(self.error(tape, JsonErrorKind::UnexpectedEnd)),
            }
        }
    }

    /// Consumes the closing bracket at `self.pos`.
    fn close(&mut self, tape: &mut Tape) -> Result<(), JsonError> {
        let Some(frame) = self.stack.last() else {
            return Ok(());
        };
        let (node, is_object, keys_from) = (frame.node, frame.is_object, frame.keys_from);
        let (_, end) = self.emit(tape, self.pos, self.pos + 1);
        self.pos += 1;
        if is_object {
            self.check_duplicate_keys(tape, keys_from)?;
            self.keys.truncate(keys_from);
        }
        self.stack.pop();
        let next = tape.nodes.len();
        if let Some(n) = tape.nodes.get_mut(node) {
            n.end = end;
            n.next = next;
        }
        Ok(())
    }

    /// Scans `"key":` inside an object.
    fn key(&mut self, tape: &mut Tape) -> Result<(), JsonError> {
        if self.input.get(self.pos) != Some(&b'"') {
            let found = match self.input.get(self.pos) {
                Some(&b) => describe(b),
                None => return Err(self.error(tape, JsonErrorKind::UnexpectedEnd)),
            };
            return Err(self.error(
                tape,
                syntax(format!("expected a key string, found {found}")),
            ));
        }
        let span = self.string_token(tape)?;
        self.keys.push(span);
        push_string_node(tape, span);
        self.skip_ws(tape);
        match self.input.get(self.pos) {
            Some(&b':') => {
                self.emit(tape, self.pos, self.pos + 1);
                self.pos += 1;
                Ok(())
            }
            Some(&b) => {
                Err(self.error(tape, syntax(format!("expected ':', found {}", describe(b)))))
            }
            None => Err(self.error(tape, JsonErrorKind::UnexpectedEnd)),
        }
    }

    fn string(&mut self, tape: &mut Tape) -> Result<(), JsonError> {
        let span = self.string_token(tape)?;
        push_string_node(tape, span);
        Ok(())
    }

    /// Validates one string token at `self.pos` and copies it to the canonical text.
    fn string_token(&mut self, tape: &mut Tape) -> Result<KeySpan, JsonError> {
        let input = self.input;
        let begin = self.pos;
        let mut i = begin + 1;
        let mut escaped = false;
        let mut high_bits = 0u8;
        loop {
            i = skip_plain_string_bytes(input, i, &mut high_bits);
            match input.get(i) {
                None => {
                    self.pos = i;
                    return Err(self.error(tape, JsonErrorKind::UnexpectedEnd));
                }
                Some(b'"') => break,
                Some(b'\\') => {
                    escaped = true;
                    i = self.escape(tape, i)?;
                }
                Some(_) => {
                    self.pos = i;
                    return Err(self.error(tape, JsonErrorKind::ControlCharacter));
                }
            }
        }
        let token = &input[begin..=i];
        if high_bits & 0x80 != 0
            && let Err(e) = std::str::from_utf8(token)
        {
            self.pos = begin + e.valid_up_to();
            return Err(self.error(tape, JsonErrorKind::InvalidUtf8));
        }
        self.pos = i + 1;
        let (start, end) = self.emit(tape, begin, i + 1);
        Ok(KeySpan {
            start,
            end,
            escaped,
        })
    }

    /// Validates the escape at `i` (a backslash); returns the index after it.
    fn escape(&mut self, tape: &Tape, i: usize) -> Result<usize, JsonError> {
        let input = self.input;
        match input.get(i + 1) {
            Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => Ok(i + 2),
            Some(b'u') => {
                let Some(unit) = input.get(i + 2..).and_then(hex4) else {
                    self.pos = i;
                    return Err(self.error(
                        tape,
                        syntax("\\u must be followed by four hex digits".into()),
                    ));
                };
                // A lone surrogate escape (no pair) is kept as written (docs/contract.md §6.1):
                // JSON text carries it without loss, and agents write it when they cut
                // a string in the middle of an emoji. A pair is consumed whole.
                let paired = (0xD800..=0xDBFF).contains(&unit)
                    && input.get(i + 6..i + 8) == Some(&b"\\u"[..])
                    && matches!(input.get(i + 8..).and_then(hex4), Some(0xDC00..=0xDFFF));
                Ok(if paired { i + 12 } else { i + 6 })
            }
            Some(&b) => {
                self.pos = i;
                Err(self.error(tape, syntax(format!("invalid escape \\{}", b as char))))
            }
            None => {
                self.pos = i;
                Err(self.error(tape, JsonErrorKind::UnexpectedEnd))
            }
        }
    }

    fn number(&mut self, tape: &mut Tape) -> Result<(), JsonError> {
        let input = self.input;
        let begin = self.pos;
        let mut i = begin;
        if input.get(i) == Some(&b'-') {
            i += 1;
        }
        let int_start = i;
        match input.get(i) {
            Some(b'0') => i += 1,
            Some(b'1'..=b'9') => {
                while matches!(input.get(i), Some(b'0'..=b'9')) {
                    i += 1;
                }
            }
            _ => {
                self.pos = i;
                return Err(self.error(tape, syntax("a number needs a digit here".into())));
            }
        }
        let int_end = i;
        let mut is_integer = true;
        if input.get(i) == Some(&b'.') {
            is_integer = false;
            i += 1;
            let digits = i;
            while matches!(input.get(i), Some(b'0'..=b'9')) {
                i += 1;
            }
            if i == digits {
                self.pos = i;
                return Err(self.error(tape, syntax("a fraction needs a digit after '.'".into())));
            }
        }
        let mantissa_end = i;
        if matches!(input.get(i), Some(b'e' | b'E')) {
            is_integer = false;
            i += 1;
            if matches!(input.get(i), Some(b'+' | b'-')) {
                i += 1;
            }
            let digits = i;
            while matches!(input.get(i), Some(b'0'..=b'9')) {
                i += 1;
            }
            if i == digits {
                self.pos = i;
                return Err(self.error(tape, syntax("an exponent needs a digit".into())));
            }
        }
        let token = &input[begin..i];
        // The token is ASCII by construction.
        let text = std::str::from_utf8(token).unwrap_or("");
        let lossy = if is_integer {
            lossy_integer(text)
        } else {
            lossy_float(
                text,
                &input[int_start..int_end],
                &input[int_end..mantissa_end],
            )
        };
        if let Some(why) = lossy {
            return Err(self.error(tape, JsonErrorKind::LossyNumber(why)));
        }
        self.pos = i;
        let (start, end) = self.emit(tape, begin, i);
        tape.nodes.push(Node {
            kind: Kind::Number,
            escaped: false,
            start,
            end,
            next: tape.nodes.len() + 1,
        });
        Ok(())
    }

    fn literal(&mut self, tape: &mut Tape, word: &[u8], kind: Kind) -> Result<(), JsonError> {
        if !self.input[self.pos..].starts_with(word) {
            let byte = self.input[self.pos];
            return Err(self.error(tape, syntax(format!("unexpected {}", describe(byte)))));
        }
        let (start, end) = self.emit(tape, self.pos, self.pos + word.len());
        self.pos += word.len();
        tape.nodes.push(Node {
            kind,
            escaped: false,
            start,
            end,
            next: tape.nodes.len() + 1,
        });
        Ok(())
    }

    /// Rejects an object whose keys repeat. Keys are compared by value, so `"id"` and
    /// `"\u0069d"` are the same key.
    fn check_duplicate_keys(&mut self, tape: &Tape, keys_from: usize) -> Result<(), JsonError> {
        let keys = &self.keys[keys_from..];
        if keys.len() < 2 {
            return Ok(());
        }
        let key = |k: &KeySpan| decode_string(self.canonical(tape, k.start, k.end), k.escaped);
        // Unescaped keys are equal exactly when their tokens are; decode only escapes.
        let same = |a: &KeySpan, b: &KeySpan| {
            if a.escaped || b.escaped {
                key(a) == key(b)
            } else {
                self.canonical(tape, a.start, a.end) == self.canonical(tape, b.start, b.end)
            }
        };
        let duplicate = if keys.len() <= 16 {
            (1..keys.len()).find(|&j| keys[..j].iter().any(|ki| same(ki, &keys[j])))
        } else {
            let mut seen = std::collections::HashSet::with_capacity(keys.len());
            (0..keys.len()).find(|&j| !seen.insert(key(&keys[j])))
        };
        let Some(j) = duplicate else {
            return Ok(());
        };
        let name = key(&keys[j]).into_owned();
        // Point at the repeated member itself.
        let mut pointer = self.pointer_to_open(tape, self.stack.len() - 1);
        push_pointer_segment(&mut pointer, &name);
        Err(JsonError {
            kind: JsonErrorKind::DuplicateKey(name),
            pointer,
            offset: self.pos.saturating_sub(1),
        })
    }

    /// The pointer of the container at `depth` (its own path, not its current child).
    fn pointer_to_open(&self, tape: &Tape, depth: usize) -> String {
        let mut pointer = String::new();
        for frame in &self.stack[..depth] {
            self.push_frame_segment(tape, frame, &mut pointer);
        }
        pointer
    }

    fn push_frame_segment(&self, tape: &Tape, frame: &Frame, pointer: &mut String) {
        if frame.count == 0 {
            return;
        }
        if frame.is_object {
            // One key per member, so the current member's key is the frame's last one;
            // keys of nested objects come after it.
            if let Some(k) = self.keys.get(frame.keys_from + frame.count - 1) {
                push_pointer_segment(
                    pointer,
                    &decode_string(self.canonical(tape, k.start, k.end), k.escaped),
                );
            }
        } else {
            push_pointer_segment(pointer, &frame.count.saturating_sub(1).to_string());
        }
    }

    /// An error at the current position, pointing at the innermost value being read.
    fn error(&self, tape: &Tape, kind: JsonErrorKind) -> JsonError {
        let mut pointer = String::new();
        for frame in &self.stack {
            if frame.count == 0 {
                break;
            }
            self.push_frame_segment(tape, frame, &mut pointer);
        }
        JsonError {
            kind,
            pointer,
            offset: self.pos,
        }
    }
}

fn push_string_node(tape: &mut Tape, span: KeySpan) {
    tape.nodes.push(Node {
        kind: Kind::String,
        escaped: span.escaped,
        start: span.start,
        end: span.end,
        next: tape.nodes.len() + 1,
    });
}

fn syntax(what: String) -> JsonErrorKind {
    JsonErrorKind::Syntax(what)
}

fn describe(byte: u8) -> String {
    if byte.is_ascii_graphic() {
        format!("'{}'", byte as char)
    } else {
        format!("byte 0x{byte:02X}")
    }
}

/// An integer literal is kept only if a 64-bit integer holds it exactly.
fn lossy_integer(text: &str) -> Option<String> {
    let fits = if text.starts_with('-') {
        text.parse::<i64>().is_ok()
    } else {
        text.parse::<u64>().is_ok()
    };
    (!fits).then(|| format!("integer {text} is too large to hold exactly (64-bit range)"))
}

/// A number with a fraction or exponent must be a finite double, and a non-zero
/// literal must not round to zero.
fn lossy_float(text: &str, int_digits: &[u8], fraction: &[u8]) -> Option<String> {
    let value: f64 = match text.parse() {
        Ok(v) => v,
        Err(_) => return Some(format!("number {text} cannot be read")),
    };
    if !value.is_finite() {
        return Some(format!("number {text} is out of range for a double"));
    }
    let nonzero_digit = int_digits
        .iter()
        .chain(fraction.iter())
        .any(|d| matches!(d, b'1'..=b'9'));
    if value == 0.0 && nonzero_digit {
        return Some(format!("number {text} underflows to zero"));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canon(input: &str) -> Result<String, JsonError> {
        let mut tape = Tape::default();
        scan(input.as_bytes(), MAX_DEPTH, &mut tape)?;
        Ok(String::from_utf8(tape.text).unwrap())
    }

    fn err(input: &[u8]) -> JsonError {
        let mut tape = Tape::default();
        scan(input, MAX_DEPTH, &mut tape).unwrap_err()
    }

    #[test]
    fn canonical_form_drops_only_insignificant_whitespace() {
        assert_eq!(
            canon(" { \"a\" : [ 1 , 2.50 , \"x y\" ] ,\r\n\t\"b\":{}} ").unwrap(),
            r#"{"a":[1,2.50,"x y"],"b":{}}"#
        );
        assert_eq!(canon(r#""\u00e9\n""#).unwrap(), r#""\u00e9\n""#);
        assert_eq!(canon("[[],{},[{}]]").unwrap(), "[[],{},[{}]]");
    }

    #[test]
    fn nodes_index_the_canonical_text() {
        let mut tape = Tape::default();
        scan(br#"{"k": [true, null], "n": -1}"#, MAX_DEPTH, &mut tape).unwrap();
        let kinds: Vec<Kind> = tape.nodes.iter().map(|n| n.kind).collect();
        use Kind::*;
        assert_eq!(kinds, [Object, String, Array, Bool, Null, String, Number]);
        assert_eq!(tape.nodes[0].next, 7);
        assert_eq!(tape.nodes[2].next, 5);
        assert_eq!(tape.raw(2), b"[true,null]");
        let members: Vec<(usize, usize)> = tape.members(0).collect();
        assert_eq!(members, [(1, 2), (5, 6)]);
        assert_eq!(tape.elements(2).collect::<Vec<_>>(), [3, 4]);
        assert_eq!(tape.get(0, "n"), Some(6));
        assert_eq!(tape.get(0, "missing"), None);
    }

    #[test]
    fn duplicate_key_is_rejected_with_its_pointer() {
        let e = err(br#"{"a":{"x":1,"y":2,"x":3}}"#);
        assert_eq!(e.kind, JsonErrorKind::DuplicateKey("x".into()));
        assert_eq!(e.pointer, "/a/x");
    }

    #[test]
    fn duplicate_key_written_with_an_escape_is_still_a_duplicate() {
        let e = err(br#"{"id":"a","\u0069d":"b"}"#);
        assert_eq!(e.kind, JsonErrorKind::DuplicateKey("id".into()));
    }

    #[test]
    fn duplicate_key_in_a_large_object_is_found() {
        let mut s = String::from("{");
        for i in 0..100 {
            s.push_str(&format!("\"k{i}\":{i},"));
        }
        s.push_str("\"k42\":0}");
        assert_eq!(
            err(s.as_bytes()).kind,
            JsonErrorKind::DuplicateKey("k42".into())
        );
    }

    #[test]
    fn same_key_in_sibling_objects_is_not_a_duplicate() {
        assert!(canon(r#"[{"a":1},{"a":2}]"#).is_ok());
        assert!(canon(r#"{"a":{"a":{"a":1}}}"#).is_ok());
    }

    #[test]
    fn numbers_that_would_change_are_rejected() {
        for bad in [
            "1e400",
            "-1e400",
            "18446744073709551616",
            "-9223372036854775809",
            "1e-400",
        ] {
            let e = err(format!("[0,{bad}]").as_bytes());
            assert!(
                matches!(e.kind, JsonErrorKind::LossyNumber(_)),
                "{bad}: {e:?}"
            );
            assert_eq!(e.pointer, "/1", "{bad}");
        }
    }

    #[test]
    fn numbers_that_survive_are_kept_verbatim() {
        for ok in [
            "0",
            "-0",
            "18446744073709551615",
            "-9223372036854775808",
            "1.0",
            "1e5",
            "0.1",
            "1E-5",
            "0e0",
            "-0.0e-400",
            "9007199254740993",
        ] {
            assert_eq!(canon(ok).unwrap(), ok);
        }
    }

    #[test]
    fn malformed_numbers_are_syntax_errors() {
        for bad in ["01", "1.", ".5", "-", "1e", "+1", "0x10", "NaN", "Infinity"] {
            let e = err(bad.as_bytes());
            assert!(
                matches!(
                    e.kind,
                    JsonErrorKind::Syntax(_) | JsonErrorKind::TrailingData
                ),
                "{bad}: {e:?}"
            );
        }
    }

    #[test]
    fn lone_surrogate_escapes_are_kept_as_written_and_pairs_too() {
        // Round 2 (docs/contract.md §6.1) accepts lone surrogate escapes; round 1 rejected them.
        for lone in [
            r#""\ud800""#,
            r#""\udc00""#,
            r#""\ud800\u0041""#,
            r#""\ud800x""#,
            r#""\ud83d""#,
        ] {
            assert_eq!(canon(lone).unwrap(), lone);
        }
        assert_eq!(canon(r#""\ud83d\ude00""#).unwrap(), r#""\ud83d\ude00""#);
        assert_eq!(decode_string(br#""a\ud83db""#, true), "a\u{FFFD}b");
        assert_eq!(decode_string(br#""\ud800\u0041""#, true), "\u{FFFD}A");
        assert_eq!(decode_string(br#""\ud83d\ude00""#, true), "\u{1F600}");
    }

    #[test]
    fn escaped_nul_is_valid_and_kept() {
        assert_eq!(canon(r#""a\u0000b""#).unwrap(), r#""a\u0000b""#);
    }

    #[test]
    fn invalid_utf8_and_raw_controls_are_rejected() {
        assert_eq!(err(b"{\"a\":\"\xff\"}").kind, JsonErrorKind::InvalidUtf8);
        assert_eq!(
            err(b"{\"a\":\"\xe4\xb8\"}").kind,
            JsonErrorKind::InvalidUtf8
        );
        assert_eq!(
            err(b"{\"a\":\"x\ny\"}").kind,
            JsonErrorKind::ControlCharacter
        );
        assert_eq!(err(b"\"\x00\"").kind, JsonErrorKind::ControlCharacter);
        assert_eq!(
            err(b"{\"a\":\"\xed\xa0\x80\"}").kind,
            JsonErrorKind::InvalidUtf8
        );
    }

    #[test]
    fn trailing_data_and_second_values_are_rejected() {
        for bad in ["{} {}", "{}x", "1 2", "[] ]", "{}\u{0}"] {
            assert_eq!(
                err(bad.as_bytes()).kind,
                JsonErrorKind::TrailingData,
                "{bad:?}"
            );
        }
        assert_eq!(err(b"").kind, JsonErrorKind::Empty);
        assert_eq!(err(b" \r\n").kind, JsonErrorKind::Empty);
    }

    #[test]
    fn depth_limit_is_exact_and_deep_input_does_not_overflow_the_stack() {
        let ok = "[".repeat(MAX_DEPTH) + &"]".repeat(MAX_DEPTH);
        assert!(canon(&ok).is_ok());
        let deep = "[".repeat(MAX_DEPTH + 1) + &"]".repeat(MAX_DEPTH + 1);
        assert_eq!(err(deep.as_bytes()).kind, JsonErrorKind::TooDeep(MAX_DEPTH));
        let huge = "[".repeat(1_000_000);
        assert_eq!(err(huge.as_bytes()).kind, JsonErrorKind::TooDeep(MAX_DEPTH));
        let objects = "{\"a\":".repeat(1_000_000);
        assert_eq!(
            err(objects.as_bytes()).kind,
            JsonErrorKind::TooDeep(MAX_DEPTH)
        );
    }

    #[test]
    fn syntax_errors_point_at_the_member_being_read() {
        let e = err(br#"{"message":{"content":[{"id": }]}}"#);
        assert_eq!(e.pointer, "/message/content/0/id");
        let e = err(br#"{"a":[1,2,}"#);
        assert_eq!(e.pointer, "/a/2");
        let e = err(br#"{"a":1,}"#);
        assert!(matches!(e.kind, JsonErrorKind::Syntax(_)));
    }

    #[test]
    fn pointer_segments_escape_tilde_and_slash() {
        let e = err(br#"{"a/b~c":[1e999]}"#);
        assert_eq!(e.pointer, "/a~1b~0c/0");
    }

    #[test]
    fn truncated_input_is_unexpected_end() {
        for bad in [r#"{"a""#, r#"{"a":"#, r#"{"a":"x"#, "[1,", r#""\"#, "{"] {
            let e = err(bad.as_bytes());
            assert!(
                matches!(
                    e.kind,
                    JsonErrorKind::UnexpectedEnd | JsonErrorKind::Syntax(_)
                ),
                "{bad}: {e:?}"
            );
        }
    }

    #[test]
    fn decode_string_handles_every_escape() {
        let token = br#""a\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00z""#;
        assert_eq!(
            decode_string(token, true),
            "a\"\\/\u{8}\u{c}\n\r\t\u{e9}\u{1F600}z"
        );
        assert_eq!(decode_string(b"\"plain\"", false), "plain");
    }
}
