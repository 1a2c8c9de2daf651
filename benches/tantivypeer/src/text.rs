//! The text of an entry that libsession's search indexes, extracted again with
//! serde_json (libsession reads it from its own JSON tape: `src/search/text.rs`,
//! `readable`), and the case folding of its substring match.
//!
//! Where this differs from libsession: entries are not validated (a line that parses
//! as JSON with the members below is taken), nothing is redacted (libsession replaces
//! secrets first, which the generated sessions hold few of), and a block member of an
//! unexpected JSON type makes the whole line unreadable here where libsession skips
//! that member.

use serde::Deserialize;
use serde_json::value::RawValue;

#[derive(Deserialize)]
struct Line<'a> {
    #[serde(rename = "type", borrow)]
    kind: Option<&'a RawValue>,
    #[serde(borrow)]
    message: Option<&'a RawValue>,
    #[serde(borrow)]
    summary: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct Message<'a> {
    #[serde(borrow)]
    content: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct Block<'a> {
    #[serde(rename = "type", default)]
    kind: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    text: Option<String>,
    #[serde(borrow, default)]
    arguments: Option<&'a RawValue>,
}

/// A JSON string's value, or `None` for any other JSON value.
fn string(raw: &RawValue) -> Option<String> {
    match raw.get().starts_with('"') {
        true => serde_json::from_str(raw.get()).ok(),
        false => None,
    }
}

fn push(out: &mut String, text: &str) {
    if text.is_empty() {
        return;
    }
    if !out.is_empty() {
        out.push('\n');
    }
    out.push_str(text);
}

/// The readable text of one JSONL line, as libsession's search indexes it: a message's
/// string content or its blocks' text (a tool call's name and its arguments as JSON;
/// thinking and images left out), a compaction's summary (an object as its JSON).
/// `None` when the line is not a JSON object with a `type`; `Some(None)` for an entry
/// without such text.
pub fn readable(line: &[u8]) -> Option<Option<String>> {
    let line: Line = serde_json::from_slice(line).ok()?;
    let kind = line.kind.and_then(string);
    let text = match kind.as_deref() {
        Some("message") => {
            let message: Message = serde_json::from_str(line.message?.get()).ok()?;
            let mut out = String::new();
            if let Some(content) = message.content {
                match content.get().as_bytes().first() {
                    Some(b'"') => push(&mut out, &string(content).unwrap_or_default()),
                    Some(b'[') => {
                        let blocks: Vec<&RawValue> = serde_json::from_str(content.get()).ok()?;
                        for block in blocks {
                            if !block.get().starts_with('{') {
                                continue;
                            }
                            let block: Block = serde_json::from_str(block.get()).ok()?;
                            match block.kind.as_deref() {
                                Some("thinking") | Some("image") => {}
                                Some("toolCall") => {
                                    if let Some(name) = &block.name {
                                        push(&mut out, name);
                                    }
                                    if let Some(arguments) = block.arguments {
                                        push(&mut out, arguments.get());
                                    }
                                }
                                _ => {
                                    if let Some(text) = &block.text {
                                        push(&mut out, text);
                                    }
                                }
                            }
                        }
                    }
                    _ => {}
                }
            }
            (!out.is_empty()).then_some(out)
        }
        Some("compaction") => line
            .summary
            .map(|s| string(s).unwrap_or_else(|| s.get().to_owned()))
            .filter(|t| !t.is_empty()),
        Some(_) => None,
        None => return None,
    };
    Some(text)
}

/// `text` folded for case-insensitive matching: each character's first lowercase
/// character (libsession's `folded`).
pub fn folded(text: &str) -> String {
    if text.is_ascii() {
        return text.to_ascii_lowercase();
    }
    text.chars()
        .map(|c| c.to_lowercase().next().unwrap_or(c))
        .collect()
}

/// The whitespace-separated words of a query, folded, each once (libsession's `terms`).
pub fn terms(query: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for word in query.split_whitespace() {
        let word = folded(word);
        if !out.contains(&word) {
            out.push(word);
        }
    }
    out
}

/// The committed lines of `bytes` (each ending with `\n`), with their offsets.
pub fn lines(bytes: &[u8]) -> impl Iterator<Item = (u64, &[u8])> {
    let mut at = 0usize;
    std::iter::from_fn(move || {
        let rest = bytes.get(at..)?;
        let end = rest.iter().position(|&b| b == b'\n')?;
        let line = (at as u64, &rest[..end]);
        at += end + 1;
        Some(line)
    })
}

/// The session files of `dir` (`*.jsonl`), sorted by name.
pub fn session_files(dir: &std::path::Path) -> std::io::Result<Vec<std::path::PathBuf>> {
    let mut files: Vec<_> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl") && p.is_file())
        .collect();
    files.sort();
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_text_a_person_reads_is_extracted_and_thinking_is_not() {
        let line = br#"{"id":"a","parentId":null,"timestamp":1,"type":"message","message":{"role":"assistant","content":[{"type":"thinking","thinking":"secret plan"},{"type":"text","text":"hello"},{"type":"toolCall","id":"c","name":"read","arguments":{"path":"README.md"}}]}}"#;
        assert_eq!(
            readable(line),
            Some(Some("hello\nread\n{\"path\":\"README.md\"}".to_owned()))
        );
        let compaction = br#"{"id":"c","type":"compaction","summary":"it is tiny-pi"}"#;
        assert_eq!(readable(compaction), Some(Some("it is tiny-pi".to_owned())));
        let metadata = br#"{"id":"m","type":"metadata","key":"cwd","value":"/w"}"#;
        assert_eq!(readable(metadata), Some(None));
        assert_eq!(readable(b"not json"), None);
    }

    #[test]
    fn only_committed_lines_are_read() {
        let got: Vec<_> = lines(b"a\nbc\npartial").collect();
        assert_eq!(got, [(0, &b"a"[..]), (2, &b"bc"[..])]);
    }
}
