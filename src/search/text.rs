//! What the search indexes of an entry (the text a person reads), how a query splits
//! into terms, and the snippet around a match. Pure: no file, no database.
// Without the engine only the query's terms are used.
#![cfg_attr(not(feature = "search"), allow(dead_code))]

use std::borrow::Cow;

use crate::json::{Kind, Tape};
use crate::secrets::Redactor;

/// The role recorded for a compaction entry, whose summary is indexed.
pub const COMPACTION_ROLE: &str = "compaction";

/// The readable text of the entry on `tape` (a validated entry's tape) and its role:
/// a message's text blocks (or string content), each tool call's name and arguments
/// (as JSON), a tool result's text blocks, a text member of an extension block, and a
/// compaction's summary (an object summary as its JSON). Thinking, images and metadata
/// are not indexed. `None` for an entry without such text.
pub(crate) fn readable(tape: &Tape) -> (Option<String>, Option<String>) {
    readable_with(tape, &mut |_, node, json| match tape.nodes[node].kind {
        Kind::String if !json => tape.string(node),
        _ => String::from_utf8_lossy(tape.raw(node)),
    })
}

/// [`readable`] as the search holds it: with `redactor`, each secret in the text and
/// the role replaced by `[REDACTED:<rule>]`, as in the entry's line redacted whole
/// (each value is redacted as its member in the line would be), but without reading
/// the rest of the line: thinking, metadata and usage are not searched, so they are
/// not redacted either. Most texts have no keyword of any rule: they are checked once,
/// whole, and taken as they are.
pub(crate) fn readable_redacted(
    tape: &Tape,
    redactor: Option<&Redactor>,
) -> (Option<String>, Option<String>) {
    let plain = readable(tape);
    let Some(redactor) = redactor else {
        return plain;
    };
    // A keyword of a value is in the text made of it too, and a member name a value
    // is judged by (a tool call's arguments are JSON) as well.
    let may = |t: &Option<String>| {
        t.as_deref()
            .is_some_and(|t| redactor.may_hold_secret(t.as_bytes()))
    };
    if !may(&plain.0) && !may(&plain.1) {
        return plain;
    }
    readable_with(tape, &mut |key, node, json| match tape.nodes[node].kind {
        Kind::String if !json => Cow::Owned(
            redactor
                .redact_value(Some(key), &tape.string(node))
                .into_owned(),
        ),
        _ => match redactor.redact_json_bytes(tape.raw(node)) {
            Cow::Borrowed(raw) => String::from_utf8_lossy(raw),
            Cow::Owned(raw) => Cow::Owned(String::from_utf8_lossy(&raw).into_owned()),
        },
    })
}

/// A value of the readable text, given the member it is the value of, its node and
/// whether its JSON is asked for: a string's text, or its JSON (always for a value
/// that is not a string).
type Value<'t> = dyn FnMut(&str, usize, bool) -> Cow<'t, str> + 't;

/// The role and readable text of the entry on `tape` (see [`readable`]), each piece
/// taken from `value`.
fn readable_with<'t>(tape: &'t Tape, value: &mut Value<'t>) -> (Option<String>, Option<String>) {
    let string = |i: usize| (tape.nodes[i].kind == Kind::String).then_some(i);
    let kind = tape.get(0, "type").map(|t| tape.string(t));
    match kind.as_deref() {
        Some("message") => {
            let Some(message) = tape.get(0, "message") else {
                return (None, None);
            };
            let role = tape
                .get(message, "role")
                .and_then(string)
                .map(|r| value("role", r, false).into_owned());
            let mut out = String::new();
            if let Some(content) = tape.get(message, "content") {
                match tape.nodes[content].kind {
                    Kind::String => push(&mut out, &value("content", content, false)),
                    Kind::Array => {
                        for block in tape.elements(content) {
                            if tape.nodes[block].kind == Kind::Object {
                                block_text(tape, block, value, &mut out);
                            }
                        }
                    }
                    _ => {}
                }
            }
            (role, (!out.is_empty()).then_some(out))
        }
        Some("compaction") => {
            let text = tape
                .get(0, "summary")
                .map(|s| value("summary", s, false).into_owned());
            (
                Some(COMPACTION_ROLE.to_owned()),
                text.filter(|t| !t.is_empty()),
            )
        }
        _ => (None, None),
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

fn block_text<'t>(tape: &'t Tape, block: usize, value: &mut Value<'t>, out: &mut String) {
    let string = |name| {
        tape.get(block, name)
            .filter(|&i| tape.nodes[i].kind == Kind::String)
    };
    match string("type").map(|t| tape.string(t)).as_deref() {
        Some("thinking") | Some("image") => {}
        Some("toolCall") => {
            if let Some(name) = string("name") {
                push(out, &value("name", name, false));
            }
            if let Some(arguments) = tape.get(block, "arguments") {
                // Its JSON, whatever it is (a string's with its quotes).
                push(out, &value("arguments", arguments, true));
            }
        }
        // Text blocks, and extension blocks that carry a text member.
        _ => {
            if let Some(text) = string("text") {
                push(out, &value("text", text, false));
            }
        }
    }
}

/// The terms of a query: its whitespace-separated words (each matched as a substring,
/// all of them required), each once: a word that repeats an earlier one, in any case,
/// is left out (it requires nothing more). Linear in the query's length.
pub fn terms(query: &str) -> Vec<&str> {
    let mut seen = std::collections::HashSet::new();
    query
        .split_whitespace()
        .filter(|word| seen.insert(folded(word)))
        .collect()
}

/// `text` folded for case-insensitive matching (see [`fold`]).
pub(crate) fn folded(text: &str) -> String {
    // ASCII folds byte for byte (the same result, much faster).
    if text.is_ascii() {
        return text.to_ascii_lowercase();
    }
    // Else each ASCII run byte for byte and each other character by [`fold`], into a
    // string sized once (folding keeps most characters' lengths).
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while !rest.is_empty() {
        let ascii = rest
            .bytes()
            .position(|b| !b.is_ascii())
            .unwrap_or(rest.len());
        let (run, tail) = rest.split_at(ascii);
        out.extend(run.bytes().map(|b| char::from(b.to_ascii_lowercase())));
        let mut chars = tail.chars();
        if let Some(c) = chars.next() {
            out.push(fold(c));
        }
        rest = chars.as_str();
    }
    out
}

/// Characters of context kept before the first match in a snippet.
const SNIPPET_BEFORE: usize = 30;
/// The most characters a snippet holds.
const SNIPPET_CHARS: usize = 120;

/// A piece of `text` around the first case-insensitive occurrence of one of `terms`
/// (the start of the text when none occurs), at most [`SNIPPET_CHARS`] characters,
/// with `…` where it was cut and runs of whitespace shown as one space.
pub fn snippet(text: &str, terms: &[&str]) -> String {
    let chars: Vec<char> = text.chars().collect();
    let haystack = folded(text);
    // Folding maps a character to one character, so a byte offset in `haystack` is
    // found as the same count of characters in `chars`.
    let at = terms
        .iter()
        .filter(|term| !term.is_empty())
        .filter_map(|term| haystack.find(&folded(term)))
        .min()
        .map_or(0, |byte| haystack[..byte].chars().count());
    let start = at.saturating_sub(SNIPPET_BEFORE);
    let end = (start + SNIPPET_CHARS).min(chars.len());
    let mut out = String::new();
    if start > 0 {
        out.push('…');
    }
    let mut space = false;
    for &c in &chars[start..end] {
        if c.is_whitespace() {
            space = true;
            continue;
        }
        if space && !out.is_empty() && !out.ends_with('…') {
            out.push(' ');
        }
        space = false;
        out.push(c);
    }
    if end < chars.len() {
        out.push('…');
    }
    out
}

/// Terms folded once for [`contains_all`].
pub(crate) fn fold_terms(terms: &[&str]) -> Vec<String> {
    terms.iter().map(|t| folded(t)).collect()
}

/// Whether every one of `needles` ([`fold_terms`]) occurs in `haystack`, text already
/// [`folded`]: case-insensitively (the folding of [`snippet`]). Each lookup is linear
/// in the text and the needle (`str::find`).
pub(crate) fn contains_all(haystack: &str, needles: &[String]) -> bool {
    needles
        .iter()
        .all(|needle| haystack.contains(needle.as_str()))
}

/// Whether every one of `terms` occurs in `text` with ASCII case folding only (the
/// rule for a word under three characters).
pub(crate) fn contains_all_ascii(text: &str, terms: &[&str]) -> bool {
    if terms.is_empty() {
        return true;
    }
    let haystack = text.to_ascii_lowercase();
    terms
        .iter()
        .all(|term| haystack.contains(&term.to_ascii_lowercase()))
}

/// The longest word the index holds whole, in characters; a longer one is indexed as
/// overlapping windows of twice this length starting every this many characters (see
/// [`words`]).
pub(crate) const WINDOW: usize = 32;

/// A character that ends a word: ASCII but neither a letter nor a digit (what SQLite's
/// FTS5 `ascii` tokenizer separates at; every other character, any non-ASCII one
/// included, belongs to a word).
fn separates(c: char) -> bool {
    c.is_ascii() && !c.is_ascii_alphanumeric()
}

/// The words the index holds for `text` (the [`readable`] text of an entry), each
/// passed to `each`: the runs of [`folded`] `text` between separators (ASCII
/// characters other than letters and digits). A run longer than 2 × [`WINDOW`]
/// characters is passed as windows of 2 × [`WINDOW`] characters starting every
/// [`WINDOW`] characters (the last one reaching its end), so that any piece of it of
/// at most [`WINDOW`] characters lies whole in one window.
///
/// What makes a search by words answer a search by substrings: when a folded term
/// occurs in the folded text, each of the term's own runs ([`runs`]) lies inside one
/// run of the text, and so (cut to [`WINDOW`] characters) inside one word of the index.
pub(crate) fn words(text: &str, mut each: impl FnMut(&str)) {
    let text = folded(text);
    for run in text.split(separates).filter(|r| !r.is_empty()) {
        // A run of at most 2 × WINDOW bytes has at most that many characters: whole,
        // without counting them.
        if run.len() <= 2 * WINDOW {
            each(run);
            continue;
        }
        // Byte offsets of the run's characters, and its end.
        let starts: Vec<usize> = run.char_indices().map(|(i, _)| i).collect();
        let chars = starts.len();
        if chars <= 2 * WINDOW {
            each(run);
            continue;
        }
        let at = |n: usize| starts.get(n).copied().unwrap_or(run.len());
        let mut first = 0;
        while first == 0 || first + WINDOW < chars {
            each(&run[at(first)..at(first + 2 * WINDOW)]);
            first += WINDOW;
        }
    }
}

/// What the index is asked for one query term: its [`folded`] runs between separators
/// (see [`words`]), each cut to its first [`WINDOW`] characters, without repeats. Each
/// must lie inside some word of an entry that holds the term; a term of separators
/// alone asks nothing.
pub(crate) fn runs(term: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for run in folded(term).split(separates).filter(|r| !r.is_empty()) {
        let cut: String = run.chars().take(WINDOW).collect();
        if !out.contains(&cut) {
            out.push(cut);
        }
    }
    out
}

/// A character folded for case-insensitive matching (its first lowercase character).
fn fold(c: char) -> char {
    c.to_lowercase().next().unwrap_or(c)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::entry::EntryParser;

    fn readable_of(line: &str) -> (Option<String>, Option<String>) {
        let mut parser = EntryParser::default();
        parser.parse(line.as_bytes()).expect("a valid entry");
        readable(parser.tape())
    }

    #[test]
    fn the_text_a_person_reads_is_indexed_and_thinking_is_not() {
        let (role, text) = readable_of(
            r#"{"id":"a","parentId":null,"timestamp":1,"type":"message","message":{"role":"assistant","content":[{"type":"thinking","thinking":"secret plan"},{"type":"text","text":"hello"},{"type":"toolCall","id":"c","name":"read","arguments":{"path":"README.md"}}]}}"#,
        );
        assert_eq!(role.as_deref(), Some("assistant"));
        let text = text.unwrap_or_default();
        assert!(text.contains("hello") && text.contains("read") && text.contains("README.md"));
        assert!(!text.contains("secret"), "{text}");
    }

    #[test]
    fn metadata_has_no_text_and_a_compaction_its_summary() {
        let (_, text) = readable_of(
            r#"{"id":"m","parentId":null,"timestamp":1,"type":"metadata","key":"cwd","value":"/w"}"#,
        );
        assert_eq!(text, None);
        let (role, text) = readable_of(
            r#"{"id":"c","parentId":"x","timestamp":1,"type":"compaction","summary":"it is tiny-pi","firstKeptEntryId":null,"tokensBefore":1}"#,
        );
        assert_eq!(role.as_deref(), Some(COMPACTION_ROLE));
        assert_eq!(text.as_deref(), Some("it is tiny-pi"));
    }

    #[test]
    fn a_snippet_holds_the_match_and_says_where_it_was_cut() {
        let text = format!(
            "{} the NEEDLE is here {}",
            "x ".repeat(100),
            "y ".repeat(100)
        );
        let s = snippet(&text, &["needle"]);
        assert!(s.contains("NEEDLE"), "{s}");
        assert!(s.starts_with('…') && s.ends_with('…'), "{s}");
        assert!(s.chars().count() <= SNIPPET_CHARS + 2);
        assert_eq!(snippet("项目名是 tiny-pi", &["项目名"]), "项目名是 tiny-pi");
    }

    #[test]
    fn a_term_is_found_as_a_substring_in_any_case() {
        let all = |text: &str, terms: &[&str]| contains_all(&folded(text), &fold_terms(terms));
        assert!(all("where is the Flamingo config", &["flAMINGO"]));
        assert!(!all("flam ingo", &["flamingo"]));
        assert!(all("项目名是 tiny-pi", &["项目名", "PI"]));
        assert!(!all("项目名是 tiny-pi", &["项目名", "zebra"]));
    }

    #[test]
    fn words_split_at_ascii_separators_and_a_term_asks_for_its_runs() {
        let mut got = Vec::new();
        words("The tiny-pi 项目名是 README.md!", |w| {
            got.push(w.to_owned())
        });
        assert_eq!(got, ["the", "tiny", "pi", "项目名是", "readme", "md"]);
        assert_eq!(runs("Y-P"), ["y", "p"]);
        assert_eq!(runs("..."), Vec::<String>::new());
        assert_eq!(runs("ab-ab"), ["ab"]);
    }

    #[test]
    fn a_long_word_is_indexed_as_windows_that_hold_every_piece_of_a_window_length() {
        let long: String = (0..100u32)
            .map(|i| char::from_digit(i % 36, 36).unwrap_or('x'))
            .collect();
        let mut got = Vec::new();
        words(&long, |w| got.push(w.to_owned()));
        assert!(got.iter().all(|w| w.chars().count() <= 2 * WINDOW));
        assert_eq!(got.last().map(|w| long.ends_with(w.as_str())), Some(true));
        for start in 0..=long.len() - WINDOW {
            let piece = &long[start..start + WINDOW];
            assert!(got.iter().any(|w| w.contains(piece)), "{piece}");
            assert_eq!(runs(&long[start..])[0], piece);
        }
    }

    #[test]
    fn folding_maps_each_character_to_its_first_lowercase_one() {
        let text = "Ab İstanbul ΣΊΣΥΦΟΣ straße 项目名 ÉÉ x";
        let by_char: String = text.chars().map(fold).collect();
        assert_eq!(folded(text), by_char);
        assert_eq!(folded("ÉcOLE"), "écol\u{65}");
        assert_eq!(folded("MIXED ascii"), "mixed ascii");
    }

    #[test]
    fn a_short_term_folds_ascii_case_only() {
        assert!(contains_all_ascii("Tiny-PI", &["pi", "Y-"]));
        assert!(!contains_all_ascii("É", &["é"]));
        assert!(contains_all_ascii("x", &[]));
    }

    #[test]
    fn a_word_repeated_in_any_case_is_one_term() {
        assert_eq!(
            terms("Tiny tiny TINY pi 项目 项目 Pi"),
            ["Tiny", "pi", "项目"]
        );
        assert_eq!(terms("  "), Vec::<&str>::new());
        assert_eq!(terms(&"ab ".repeat(40_000)), ["ab"]);
    }
}
