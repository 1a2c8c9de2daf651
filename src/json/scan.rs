//! The validating scanner: one iterative pass that builds a [`Tape`] or says why not.

use super::text::hex4;
use super::*;

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
pub(super) struct Frame {
    node: usize,
    is_object: bool,
    /// Elements (arrays) or members (objects) seen so far.
    count: usize,
    /// Index into `Scanner::keys` where this object's keys begin.
    keys_from: usize,
}

/// A key seen in the object being scanned: the span of its token in the canonical text.
#[derive(Clone, Copy, Debug)]
pub(super) struct KeySpan {
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
