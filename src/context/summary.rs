//! The synthetic summary message a compaction's context starts with (docs/contract.md
//! §7.3), written by the build and by Codex's rebuilt history alike.

use super::ContextOptions;
use crate::error::Error;
use crate::json;
use crate::tree::PathEntry;

/// `{"role":"user","content":[{"type":"text","text":PREFIX+S+SUFFIX}],"timestamp":T}`:
/// S is the summary string exactly as written, or the normalised JSON of an object.
pub(super) fn summary_message(
    entry: &PathEntry<'_>,
    summary: &crate::entry::Span,
    options: &ContextOptions,
) -> Result<String, Error> {
    let raw = crate::entry::utf8(summary.bytes(entry.json))?;
    let mut text = String::with_capacity(raw.len() + 96);
    text.push_str("{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"");
    push_string_inner(&mut text, &options.summary_prefix);
    if raw.starts_with('"') {
        // The token's inside is already a valid JSON string body, escapes as written.
        text.push_str(&raw[1..raw.len() - 1]);
    } else {
        push_string_inner(&mut text, raw);
    }
    push_string_inner(&mut text, &options.summary_suffix);
    text.push_str("\"}],\"timestamp\":");
    text.push_str(crate::entry::utf8(entry.facts.timestamp.bytes(entry.json))?);
    text.push('}');
    Ok(text)
}

/// Appends `s` escaped as the inside of a JSON string.
fn push_string_inner(out: &mut String, s: &str) {
    let mut quoted = String::with_capacity(s.len() + 2);
    json::push_string(&mut quoted, s);
    out.push_str(&quoted[1..quoted.len() - 1]);
}
