//! Text for a terminal: nothing read from a file may reach it as a control sequence.

use std::borrow::Cow;
use std::fmt::Write;

/// Characters a terminal may act on instead of showing: C0 controls (ESC starts
/// cursor moves, screen clears and title changes), DEL, C1 controls (U+009B is a
/// one-character CSI), the line and paragraph separators, and the bidirectional
/// overrides and isolates that reorder what is shown.
pub fn is_unsafe(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{2028}' | '\u{2029}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}'
        )
}

/// `text` with every unsafe character written as `\xHH` (below U+0100) or `\u{HHHH}`,
/// and every backslash doubled so an escape in the output is always one we wrote.
pub fn escape(text: &str) -> Cow<'_, str> {
    if !text.chars().any(|c| c == '\\' || is_unsafe(c)) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if c == '\\' {
            out.push_str("\\\\");
        } else if is_unsafe(c) {
            push_escape(&mut out, c);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

fn push_escape(out: &mut String, c: char) {
    let code = u32::from(c);
    // Writing to a String cannot fail.
    let _ = if code < 0x100 {
        write!(out, "\\x{code:02x}")
    } else {
        write!(out, "\\u{{{code:04x}}}")
    };
}

/// JSON text made safe for a terminal and still the same JSON: every unsafe character
/// but tab, line feed and carriage return (which JSON allows raw only as whitespace
/// between tokens) can only be inside a string there, and becomes a `\uHHHH` escape.
pub fn json(text: &str) -> Cow<'_, str> {
    let in_string_only = |c: char| is_unsafe(c) && !matches!(c, '\t' | '\n' | '\r');
    if !text.chars().any(in_string_only) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if in_string_only(c) {
            // Writing to a String cannot fail.
            let _ = write!(out, "\\u{:04x}", u32::from(c));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// `text` on one line: every unsafe character becomes a space.
pub fn flatten(text: &str) -> String {
    text.chars()
        .map(|c| if is_unsafe(c) { ' ' } else { c })
        .collect()
}
