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

use serde_json::Value;

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
        let lower = input.to_ascii_lowercase();
        let marker = (0xE000u32..=0xF8FF)
            .filter_map(char::from_u32)
            .find(|&marker| {
                let mut raw = [0u8; 4];
                let raw = marker.encode_utf8(&mut raw).as_bytes();
                let escape = format!("\\u{:04x}", marker as u32);
                !contains(input, raw) && !contains(&lower, escape.as_bytes())
            });
        Lenient { marker }
    }

    /// Parses one JSON text into a value, lone surrogate escapes marked.
    pub(crate) fn parse(&self, text: &[u8]) -> Result<Value, serde_json::Error> {
        match self.marker {
            Some(marker) => serde_json::from_slice(&mark(marker, text)),
            None => serde_json::from_slice(text),
        }
    }

    /// Serialises a value to one line of JSON, marked lone surrogates written back as
    /// the escapes they came from.
    pub(crate) fn write(&self, value: &Value) -> String {
        // Serialising a `Value` cannot fail: its keys are strings and its numbers
        // finite.
        let text = serde_json::to_string(value).unwrap_or_default();
        match self.marker {
            Some(marker) if text.contains(marker) => unmark(marker, &text),
            _ => text,
        }
    }
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
fn mark(marker: char, text: &[u8]) -> Vec<u8> {
    if !contains(text, b"\\u") {
        return text.to_vec();
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
    out
}

/// The UTF-16 unit of a `\uXXXX` escape at `at` when it is a surrogate.
fn surrogate_at(text: &[u8], at: usize) -> Option<u16> {
    let escape = text.get(at..at + 6)?;
    if escape[0] != b'\\' || escape[1] != b'u' {
        return None;
    }
    let hex = std::str::from_utf8(&escape[2..]).ok()?;
    let unit = u16::from_str_radix(hex, 16).ok()?;
    (0xD800..=0xDFFF).contains(&unit).then_some(unit)
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
    fn marker_avoids_characters_the_input_uses() {
        let input = "{\"a\":\"\u{E000}\\ue001\"}".as_bytes();
        let lenient = Lenient::for_input(input);
        assert_eq!(lenient.marker, Some('\u{E002}'));
        let value = lenient.parse(input).unwrap();
        assert_eq!(lenient.write(&value), "{\"a\":\"\u{E000}\u{E001}\"}");
    }
}
