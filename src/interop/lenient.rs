//! Reading foreign JSON lines that may hold lone surrogate escapes.
//!
//! Agents cut strings mid-emoji and write `"\ud83d"` (JavaScript's `JSON.stringify`
//! does so since ES2019). That is valid JSON text, and libsession keeps it as written
//! (the contract's §6.1), but `serde_json` refuses to decode it into a `String`. The
//! importers work on `serde_json::Value`s, so each lone surrogate escape is replaced,
//! before parsing, by a marker — a private-use character that occurs nowhere in the
//! input, followed by the four hex digits — and the marker is turned back into the
//! same escape when a line is written. Because the marker character is absent from
//! the input (raw or escaped), the round trip is exact.
//!
//! Numbers get the same treatment. `serde_json` reads a number into an `f64` and
//! writes it back in its own spelling (`0.0012000000000000001` comes back as
//! `0.0012`, `1E5` as `100000.0`, `-0` as `0`), and libsession keeps number spelling
//! exactly. So each number token that `serde_json` would spell differently is
//! replaced, before parsing, by a stand-in string: the marker, `#`, then the token
//! as written; the stand-in is written back as the bare token. An importer that
//! reads such a number's value (a timestamp) reads it with [`number_value`].

use std::borrow::Cow;

use serde_json::Value;

use crate::json::{Kind, Tape};

/// The marker chosen for one input.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Lenient {
    /// `None` when every private-use character occurs in the input (no real session
    /// does that): lone surrogates then fail to parse like any invalid line.
    marker: Option<char>,
}

impl Lenient {
    /// Picks a private-use character that `input` contains neither raw nor as a
    /// `\uXXXX` escape.
    pub(crate) fn for_input(input: &[u8]) -> Lenient {
        let mut scan = MarkerScan::default();
        scan.feed(input);
        scan.lenient()
    }

    /// Parses one JSON text into a value, lone surrogate escapes marked and numbers
    /// that `serde_json` would re-spell replaced by stand-ins.
    pub(crate) fn parse(&self, text: &[u8]) -> Result<Value, serde_json::Error> {
        match self.marker {
            Some(marker) => {
                let marked = mark(marker, text);
                match stand_in_numbers(marker, &marked) {
                    Some(standing) => serde_json::from_slice(&standing),
                    None => serde_json::from_slice(&marked),
                }
            }
            None => serde_json::from_slice(text),
        }
    }

    /// Serialises a value to one line of JSON, marked lone surrogates written back as
    /// the escapes they came from.
    pub(crate) fn write(&self, value: &Value) -> String {
        let mut text = String::new();
        crate::json::push_value(&mut text, value);
        match self.marker {
            Some(marker) if text.contains(marker) => {
                unmark(marker, &restore_numbers(marker, &text))
            }
            _ => text,
        }
    }
}

impl Lenient {
    /// Whether [`Lenient::write`] of [`Lenient::parse`] of `text` gives `text` back,
    /// byte for byte, judged from `tape`, `text` scanned by [`crate::json::scan`]
    /// (which refuses duplicate keys and numbers that do not keep their value): then a
    /// line can be copied into an entry as it is, without building its value. It
    /// does when the text has no insignificant whitespace and every string escape is
    /// one the library's writer writes ([`crate::json::push_string`]: `\"`, `\\`, `\n`,
    /// `\r`, `\t`, `\u00xx` for the other control characters, lowercase) or a lone surrogate
    /// escape (kept as written); numbers always come back as written.
    pub(crate) fn writes_back(&self, text: &[u8], tape: &Tape) -> bool {
        self.marker.is_some()
            && tape.text == text
            && tape.nodes.iter().all(|node| {
                node.kind != Kind::String
                    || !node.escaped
                    || escapes_written_back(&tape.text[node.start..node.end])
            })
    }
}

/// Whether every escape of a string token is one the library's writer writes, or a lone
/// surrogate escape (see [`Lenient::writes_back`]).
fn escapes_written_back(token: &[u8]) -> bool {
    let mut i = 0;
    while let Some(found) = memchr::memchr(b'\\', &token[i..]) {
        let at = i + found;
        match token.get(at + 1) {
            Some(b'"' | b'\\' | b'n' | b'r' | b't') => i = at + 2,
            Some(b'u') => {
                let Some(hex) = token.get(at + 2..at + 6) else {
                    return false;
                };
                let Some(unit) = hex_unit(hex) else {
                    return false;
                };
                let kept = if (0xD800..=0xDFFF).contains(&unit) {
                    // A pair is read as its character and written raw; a lone one is
                    // kept as written (see `mark`).
                    !(is_high(unit) && surrogate_at(token, at + 6).is_some_and(is_low))
                } else {
                    unit < 0x20
                        && !matches!(unit, 0x09 | 0x0A | 0x0D)
                        && !hex.iter().any(u8::is_ascii_uppercase)
                };
                if !kept {
                    return false;
                }
                i = at + 6;
            }
            _ => return false,
        }
    }
    true
}

/// The private-use characters an input uses, raw or as a `\uXXXX` escape (in either
/// case), fed piece by piece: an import reads its source line by line, and neither
/// form can span a line break.
pub(crate) struct MarkerScan {
    /// One bit per character of U+E000..=U+F8FF.
    used: [u64; 100],
}

impl Default for MarkerScan {
    fn default() -> MarkerScan {
        MarkerScan { used: [0; 100] }
    }
}

impl MarkerScan {
    const FIRST: u32 = 0xE000;
    const LAST: u32 = 0xF8FF;

    fn mark(&mut self, code: u32) {
        if (Self::FIRST..=Self::LAST).contains(&code) {
            let bit = (code - Self::FIRST) as usize;
            self.used[bit / 64] |= 1 << (bit % 64);
        }
    }

    /// Notes the characters of one piece of input that does not end inside a
    /// character or an escape (a whole line).
    pub(crate) fn feed(&mut self, piece: &[u8]) {
        for at in memchr::memchr2_iter(0xEE, 0xEF, piece) {
            // U+E000..=U+F8FF in UTF-8: EE or EF, then two continuation bytes.
            if let Some(&[lead, b1, b2]) = piece.get(at..at + 3)
                && (b1 & 0xC0) == 0x80
                && (b2 & 0xC0) == 0x80
            {
                let code = (u32::from(lead & 0x0F) << 12)
                    | (u32::from(b1 & 0x3F) << 6)
                    | u32::from(b2 & 0x3F);
                self.mark(code);
            }
        }
        for at in memchr::memchr_iter(b'\\', piece) {
            if let Some(&[_, u, ref hex @ ..]) = piece.get(at..at + 6)
                && (u == b'u' || u == b'U')
                && let Some(code) = hex_unit(hex)
            {
                self.mark(u32::from(code));
            }
        }
    }

    /// The marker: the first private-use character not used.
    pub(crate) fn lenient(&self) -> Lenient {
        let marker = (Self::FIRST..=Self::LAST)
            .find(|&code| {
                let bit = (code - Self::FIRST) as usize;
                self.used[bit / 64] & (1 << (bit % 64)) == 0
            })
            .and_then(char::from_u32);
        Lenient { marker }
    }
}

/// The value of a number as the importers read it: a JSON number, or the stand-in
/// [`Lenient::parse`] put in place of a number `serde_json` would re-spell.
pub(crate) fn number_value(value: &Value) -> Option<f64> {
    match value {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => {
            let mut chars = s.chars();
            let marker = chars.next()?;
            let token = chars.as_str().strip_prefix('#')?;
            let is_marker = (MarkerScan::FIRST..=MarkerScan::LAST).contains(&u32::from(marker));
            let is_token = token.bytes().all(|b| b"0123456789+-.eE".contains(&b));
            if is_marker && is_token {
                token.parse::<f64>().ok().filter(|f| f.is_finite())
            } else {
                None
            }
        }
        _ => None,
    }
}

/// Whether `serde_json` writes the number `token` back spelled as it is.
fn spelled_as_read(token: &[u8]) -> bool {
    let plain_integer = token.len() < 19
        && token.first().is_some_and(u8::is_ascii_digit)
        && token.iter().all(u8::is_ascii_digit)
        && (token.len() == 1 || token[0] != b'0');
    if plain_integer {
        return true;
    }
    let Ok(text) = std::str::from_utf8(token) else {
        return false;
    };
    serde_json::from_str::<serde_json::Number>(text).is_ok_and(|n| n.to_string() == text)
}

/// `text` (one JSON text, lone surrogates already marked) with each number token
/// that `serde_json` would re-spell replaced by the string `"<marker>#<token>"`;
/// `None` when there is none. A text that is not JSON is scanned all the same: the
/// parse that follows refuses it.
fn stand_in_numbers(marker: char, text: &[u8]) -> Option<Vec<u8>> {
    let mut out: Option<Vec<u8>> = None;
    let mut copied = 0;
    let mut i = 0;
    while i < text.len() {
        match text[i] {
            b'"' => {
                i += 1;
                // To the closing quote, an escaped byte skipped (the text between
                // found by memchr: a line is mostly strings).
                loop {
                    match text
                        .get(i..)
                        .and_then(|rest| memchr::memchr2(b'"', b'\\', rest))
                    {
                        Some(at) if text[i + at] == b'\\' => i += at + 2,
                        Some(at) => {
                            i += at;
                            break;
                        }
                        None => {
                            i = text.len();
                            break;
                        }
                    }
                }
                i += 1;
            }
            b'-' | b'0'..=b'9' => {
                let start = i;
                while i < text.len() && b"0123456789+-.eE".contains(&text[i]) {
                    i += 1;
                }
                let token = &text[start..i];
                if !spelled_as_read(token) {
                    let buf = out.get_or_insert_with(|| Vec::with_capacity(text.len() + 16));
                    buf.extend_from_slice(&text[copied..start]);
                    buf.push(b'"');
                    let mut utf8 = [0u8; 4];
                    buf.extend_from_slice(marker.encode_utf8(&mut utf8).as_bytes());
                    buf.push(b'#');
                    buf.extend_from_slice(token);
                    buf.push(b'"');
                    copied = i;
                }
            }
            _ => i += 1,
        }
    }
    let mut out = out?;
    out.extend_from_slice(text.get(copied..).unwrap_or_default());
    Some(out)
}

/// `text` with each number stand-in `"<marker>#<token>"` written back as the token.
fn restore_numbers(marker: char, text: &str) -> String {
    let mut opening = String::from('"');
    opening.push(marker);
    opening.push('#');
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(&opening) {
        let after = &rest[at + opening.len()..];
        let token_len = after
            .bytes()
            .take_while(|b| b"0123456789+-.eE".contains(b))
            .count();
        if after.as_bytes().get(token_len) == Some(&b'"') && token_len > 0 {
            out.push_str(&rest[..at]);
            out.push_str(&after[..token_len]);
            rest = &after[token_len + 1..];
        } else {
            out.push_str(&rest[..at + opening.len()]);
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

/// `text` with each marked lone surrogate written back as its escape.
fn unmark(marker: char, text: &str) -> String {
    {
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(at) = rest.find(marker) {
            out.push_str(&rest[..at]);
            let after = &rest[at + marker.len_utf8()..];
            match after.get(..4) {
                Some(hex) if hex.bytes().all(|b| b.is_ascii_hexdigit()) => {
                    out.push_str("\\u");
                    out.push_str(hex);
                    rest = &after[4..];
                }
                _ => {
                    out.push(marker);
                    rest = after;
                }
            }
        }
        out.push_str(rest);
        out
    }
}

/// Copies `text`, replacing each lone surrogate escape inside a string by the
/// marker and its hex digits. A paired escape (high then low) is left alone.
fn mark(marker: char, text: &[u8]) -> Cow<'_, [u8]> {
    if !contains(text, b"\\u") {
        return Cow::Borrowed(text);
    }
    let mut out = Vec::with_capacity(text.len());
    let mut buf = [0u8; 4];
    let marker = marker.encode_utf8(&mut buf).as_bytes();
    let mut in_string = false;
    let mut i = 0;
    while i < text.len() {
        let b = text[i];
        if !in_string {
            in_string = b == b'"';
            out.push(b);
            i += 1;
            continue;
        }
        match b {
            b'"' => {
                in_string = false;
                out.push(b);
                i += 1;
            }
            b'\\' => match surrogate_at(text, i) {
                Some(unit) if is_high(unit) => {
                    let next = surrogate_at(text, i + 6);
                    if next.is_some_and(is_low) {
                        out.extend_from_slice(&text[i..i + 12]);
                        i += 12;
                    } else {
                        out.extend_from_slice(marker);
                        out.extend_from_slice(&text[i + 2..i + 6]);
                        i += 6;
                    }
                }
                Some(_) => {
                    out.extend_from_slice(marker);
                    out.extend_from_slice(&text[i + 2..i + 6]);
                    i += 6;
                }
                None => {
                    // Any other escape: copy the backslash and the escaped byte
                    // so that `\\u` and `\"` are not misread.
                    out.extend_from_slice(&text[i..(i + 2).min(text.len())]);
                    i += 2;
                }
            },
            _ => {
                out.push(b);
                i += 1;
            }
        }
    }
    Cow::Owned(out)
}

/// The UTF-16 unit of a `\uXXXX` escape at `at` when it is a surrogate.
fn surrogate_at(text: &[u8], at: usize) -> Option<u16> {
    let escape = text.get(at..at + 6)?;
    if escape[0] != b'\\' || escape[1] != b'u' {
        return None;
    }
    let unit = hex_unit(&escape[2..])?;
    (0xD800..=0xDFFF).contains(&unit).then_some(unit)
}

/// The code unit spelled by the four hex digits of a `\uXXXX` escape (either case);
/// `None` unless `hex` is exactly four hex digits.
pub(crate) fn hex_unit(hex: &[u8]) -> Option<u16> {
    if hex.len() != 4 || !hex.iter().all(u8::is_ascii_hexdigit) {
        return None;
    }
    let hex = std::str::from_utf8(hex).ok()?;
    u16::from_str_radix(hex, 16).ok()
}

fn is_high(unit: u16) -> bool {
    (0xD800..=0xDBFF).contains(&unit)
}

fn is_low(unit: u16) -> bool {
    (0xDC00..=0xDFFF).contains(&unit)
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    memchr::memmem::find(haystack, needle).is_some()
}

/// The marker as the whole-input search picked it before the scan was incremental.
#[cfg(test)]
fn marker_by_search(input: &[u8]) -> Option<char> {
    let lower = input.to_ascii_lowercase();
    (0xE000u32..=0xF8FF)
        .filter_map(char::from_u32)
        .find(|&marker| {
            let mut raw = [0u8; 4];
            let raw = marker.encode_utf8(&mut raw).as_bytes();
            let escape = format!("\\u{:04x}", marker as u32);
            !contains(input, raw) && !contains(&lower, escape.as_bytes())
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lone_surrogates_round_trip_as_written() {
        let input = br#"{"a":"x\ud83d","b":"\uDE00y","c":"\ud83d\ude00","d":"\\ud83d"}"#;
        let lenient = Lenient::for_input(input);
        let value = lenient.parse(input).unwrap();
        assert_eq!(
            lenient.write(&value),
            r#"{"a":"x\ud83d","b":"\uDE00y","c":"😀","d":"\\ud83d"}"#
        );
    }

    #[test]
    fn the_incremental_marker_scan_picks_what_the_whole_input_search_picked() {
        let mut inputs: Vec<Vec<u8>> = vec![
            b"".to_vec(),
            "\u{E000}\u{E001}\\uE002\\UE003\\ue004".as_bytes().to_vec(),
            b"\\u\\ue0\\ue00g\\uE0".to_vec(),
            vec![0xEE, 0x80],
            vec![0xEE, 0x80, 0x80, 0xEF, 0xA3, 0xBF, 0xEE, 0x80, 0x41],
        ];
        // Every private-use character raw, then all but the last escaped.
        let all: String = (0xE000u32..=0xF8FF).filter_map(char::from_u32).collect();
        inputs.push(all.as_bytes().to_vec());
        let escaped: String = (0xE000u32..0xF8FF).map(|c| format!("\\u{c:04X}")).collect();
        inputs.push(escaped.into_bytes());
        for input in inputs {
            assert_eq!(Lenient::for_input(&input).marker, marker_by_search(&input));
        }
    }

    #[test]
    fn numbers_are_written_as_spelled_in_the_source() {
        let tokens = [
            "0.0012000000000000001",
            "0.0048000000000000004",
            "0.0012",
            "1e400",
            "-1E-400",
            "123456789012345678901234567890",
            "-0",
            "-0.0",
            "1.0",
            "1.50",
            "1E5",
            "1e+5",
            "2.5e-3",
            "0",
            "-7",
            "18446744073709551615",
            "-9223372036854775808",
        ];
        let input = format!(
            r#"{{"a":[{}],"s":"1E5 \"-0\" 1.0","n":{{"x":1.0,"y":"x\ud83d"}}}}"#,
            tokens.join(",")
        );
        let lenient = Lenient::for_input(input.as_bytes());
        let value = lenient.parse(input.as_bytes()).unwrap();
        assert_eq!(lenient.write(&value), input);
        // A value moved elsewhere keeps its spelling too.
        let moved =
            serde_json::json!({"moved": value["a"][0].clone(), "again": value["n"].clone()});
        assert_eq!(
            lenient.write(&moved),
            r#"{"moved":0.0012000000000000001,"again":{"x":1.0,"y":"x\ud83d"}}"#
        );
        // An importer reading a value reads the number.
        assert_eq!(number_value(&value["a"][10]), Some(1e5));
        assert_eq!(
            number_value(&value["a"][0]),
            Some("0.0012000000000000001".parse().unwrap())
        );
        assert_eq!(number_value(&value["a"][13]), Some(0.0));
        assert_eq!(number_value(&value["s"]), None);
    }

    #[test]
    fn marker_avoids_characters_the_input_uses() {
        let input = "{\"a\":\"\u{E000}\\ue001\"}".as_bytes();
        let lenient = Lenient::for_input(input);
        assert_eq!(lenient.marker, Some('\u{E002}'));
        let value = lenient.parse(input).unwrap();
        assert_eq!(lenient.write(&value), "{\"a\":\"\u{E000}\u{E001}\"}");
    }
}
