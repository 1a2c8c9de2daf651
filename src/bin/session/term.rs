//! Text for a terminal.

/// `text` on one line: every control character becomes a space.
pub fn flatten(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}
