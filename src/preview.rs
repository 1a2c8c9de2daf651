//! Previews of text for people: cut on a Unicode scalar value, control characters
//! written as visible escapes, so a preview never moves a terminal's cursor or breaks a
//! line of a listing. Used by navigation nodes, the session listing and error messages
//! that quote their input.

use std::borrow::Cow;

/// The first `chars` Unicode scalar values of `text`, then every control character
/// in them written as a visible escape (`\n`, `\t`, `\r`, `\u001b`, `\u007f`, C1
/// controls as `\u0085`…), so a preview never moves a terminal's cursor or breaks a
/// line of a listing. Cutting on a scalar value never splits a character.
pub fn preview(text: &str, chars: u64) -> String {
    let cut = usize::try_from(chars)
        .ok()
        .and_then(|n| text.char_indices().nth(n))
        .map_or(text.len(), |(at, _)| at);
    escape_controls(&text[..cut]).into_owned()
}

/// `text` with every control character written as a visible escape (see
/// [`preview`]); borrowed when there is none.
pub fn escape_controls(text: &str) -> Cow<'_, str> {
    if !text.chars().any(char::is_control) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn preview_cuts_on_scalar_values_then_escapes_controls() {
        assert_eq!(preview("héllo\nworld", 6), "héllo\\n");
        assert_eq!(preview("😀😀😀", 2), "😀😀");
        assert_eq!(preview("a\u{1b}[2Jb", 10), "a\\u001b[2Jb");
        assert_eq!(preview("\u{85}\u{7f}", 5), "\\u0085\\u007f");
        assert_eq!(preview("short", 100), "short");
    }
}
