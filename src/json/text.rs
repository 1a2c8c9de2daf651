//! JSON strings: writing a literal, JSON Pointer segments, decoding escapes.

use std::borrow::Cow;

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

/// Decodes the inside of a validated string token that has escapes (`inner`, the
/// bytes between the quotes) into `out`, and records in `offsets`, for each byte of
/// the value and one past its end, the offset in `inner` where the character holding
/// it begins (so a range of whole characters of the value maps back to the bytes that
/// spell it, escapes included). Both are cleared first.
pub(crate) fn decode_string_mapped(inner: &[u8], out: &mut Vec<u8>, offsets: &mut Vec<usize>) {
    out.clear();
    offsets.clear();
    let mut at = 0;
    while at < inner.len() {
        if inner[at] == b'\\' {
            let (ch, used) = decode_escape(&inner[at..]);
            let mut buf = [0u8; 4];
            let bytes = ch.encode_utf8(&mut buf).as_bytes();
            out.extend_from_slice(bytes);
            offsets.extend(std::iter::repeat_n(at, bytes.len()));
            at += used;
        } else {
            out.push(inner[at]);
            // A multi-byte character is copied byte by byte: each of its bytes begins
            // at its own offset, and a match never starts or ends inside it.
            offsets.push(at);
            at += 1;
        }
    }
    offsets.push(inner.len());
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
pub(super) fn hex4(s: &[u8]) -> Option<u32> {
    let digits = s.get(..4)?;
    let mut value = 0u32;
    for &d in digits {
        value = value * 16 + (d as char).to_digit(16)?;
    }
    Some(value)
}
