//! Finding secrets in one JSON text: its string tokens located with the project's
//! JSON scanner, each decoded, matched, and (when redacting) rewritten in place in the
//! raw text.

use std::borrow::Cow;

use super::rules::{self, Check};
use super::{Finding, Redactor, fingerprint};
use crate::json::{Kind, MAX_DEPTH, Tape, decode_string_mapped, push_pointer_segment, scan};

/// The nesting a text may have: an entry's limit, plus one for an array of entries.
const DEPTH: usize = MAX_DEPTH + 1;
/// How many JSON texts held in strings, one in another, are read as JSON (Codex's tool
/// call arguments are one level; each level doubles the escapes, so deeper ones are
/// rare and are still checked as text).
const MAX_NESTING: u8 = 3;

/// A secret in a decoded string: its byte range there and its rule.
#[derive(Clone, Copy, Debug)]
pub(super) struct Hit {
    pub start: usize,
    pub end: usize,
    pub rule: usize,
}

/// A replacement in the raw text: `raw[from..to]` becomes the rule's replacement.
#[derive(Clone, Copy, Debug)]
struct Edit {
    from: usize,
    to: usize,
    rule: usize,
}

/// One step of the path from the root to a string.
#[derive(Clone, Copy, Debug)]
enum Step {
    /// A member, by its key's node.
    Key(usize),
    Index(usize),
}

/// Buffers reused between texts.
#[derive(Default, Debug)]
pub(super) struct Scratch {
    tape: Tape,
    /// For a text with insignificant whitespace: the raw offset of each canonical byte.
    raw_of: Vec<usize>,
    decoded: Vec<u8>,
    offsets: Vec<usize>,
    triggered: Vec<bool>,
    pub(super) hits: Vec<Hit>,
    edits: Vec<Edit>,
    path: Vec<Step>,
    /// How many strings holding JSON text this text is inside.
    nesting: u8,
}

impl Redactor {
    /// Finds the secrets in `json` (appended to `findings`) and, when `redact`, returns
    /// the text with them replaced (`None` when nothing changes).
    pub(super) fn process(
        &self,
        json: &[u8],
        scratch: &mut Scratch,
        redact: bool,
        findings: &mut Vec<Finding>,
    ) -> Option<Vec<u8>> {
        if !self.line_may_hold_secret(json) {
            return None;
        }
        scratch.edits.clear();
        let mut tape = std::mem::take(&mut scratch.tape);
        if scan(json, DEPTH, &mut tape).is_ok() {
            self.process_tape(json, &tape, scratch, findings);
        } else {
            // Not JSON: the whole text is one string, with no entry and no pointer.
            self.string_hits(json, None, scratch);
            for hit in &scratch.hits {
                findings.push(self.finding(None, None, hit, &json[hit.start..hit.end]));
                scratch.edits.push(Edit {
                    from: hit.start,
                    to: hit.end,
                    rule: hit.rule,
                });
            }
        }
        scratch.tape = tape;
        if !redact || scratch.edits.is_empty() {
            return None;
        }
        let spans = scratch.edits.iter().map(|e| (e.from, e.to, e.rule));
        Some(self.replaced(json, spans))
    }

    /// Checks every string value of a scanned text.
    fn process_tape(
        &self,
        json: &[u8],
        tape: &Tape,
        scratch: &mut Scratch,
        findings: &mut Vec<Finding>,
    ) {
        map_canonical_to_raw(json, tape, &mut scratch.raw_of);
        scratch.path.clear();
        let mut path = std::mem::take(&mut scratch.path);
        self.walk(json, tape, 0, None, &mut path, scratch, findings);
        scratch.path = path;
    }

    /// Visits node `node` and its subtree; `key` is the key node when it is a member's
    /// value.
    #[allow(clippy::too_many_arguments)]
    fn walk(
        &self,
        json: &[u8],
        tape: &Tape,
        node: usize,
        key: Option<usize>,
        path: &mut Vec<Step>,
        scratch: &mut Scratch,
        findings: &mut Vec<Finding>,
    ) {
        match tape.nodes[node].kind {
            Kind::Object => {
                for (k, v) in tape.members(node) {
                    path.push(Step::Key(k));
                    self.walk(json, tape, v, Some(k), path, scratch, findings);
                    path.pop();
                }
            }
            Kind::Array => {
                for (index, element) in tape.elements(node).enumerate() {
                    path.push(Step::Index(index));
                    self.walk(json, tape, element, None, path, scratch, findings);
                    path.pop();
                }
            }
            Kind::String => self.check_string(json, tape, node, key, path, scratch, findings),
            Kind::Number | Kind::Bool | Kind::Null => {}
        }
    }

    /// Checks one string value and records its findings and edits.
    #[allow(clippy::too_many_arguments)]
    fn check_string(
        &self,
        json: &[u8],
        tape: &Tape,
        node: usize,
        key: Option<usize>,
        path: &[Step],
        scratch: &mut Scratch,
        findings: &mut Vec<Finding>,
    ) {
        let key_name = key.map(|k| tape.string(k));
        if let Some(name) = &key_name
            && is_id_member(name)
        {
            return;
        }
        let n = tape.nodes[node];
        let raw_start = raw_offset(&scratch.raw_of, n.start);
        // The token is the same bytes in the raw text as in the canonical one.
        let inner_start = raw_start + 1;
        let inner = &json[inner_start..raw_start + (n.end - n.start) - 1];
        let key_bytes = key_name.as_deref().map(str::as_bytes);
        let mut decoded = std::mem::take(&mut scratch.decoded);
        let mut offsets = std::mem::take(&mut scratch.offsets);
        let value: &[u8] = if n.escaped {
            decode_string_mapped(inner, &mut decoded, &mut offsets);
            &decoded
        } else {
            inner
        };
        // Only a string with an escape can hold a JSON text with strings in it.
        let found = self.value_secrets(value, key_bytes, n.escaped, scratch);
        if !found.is_empty() {
            let entry_id = entry_id(tape);
            let pointer = pointer(tape, path);
            for (edit, mut finding) in found {
                // Found where this string is: the entry's id, this string's pointer.
                finding.entry_id = entry_id.clone();
                finding.pointer = Some(pointer.clone());
                let (from, to) = if n.escaped {
                    (offsets[edit.from], offsets[edit.to])
                } else {
                    (edit.from, edit.to)
                };
                scratch.edits.push(Edit {
                    from: inner_start + from,
                    to: inner_start + to,
                    rule: edit.rule,
                });
                findings.push(finding);
            }
        }
        scratch.decoded = decoded;
        scratch.offsets = offsets;
    }

    /// The secrets of one decoded string value, as edits of the value (its byte
    /// ranges), in order and not overlapping, each with its finding (no entry, no
    /// pointer yet). `key` is the member name it is the value of; `may_hold_json`
    /// whether it may hold a JSON text with strings in it.
    ///
    /// A string that holds a JSON text (a Codex tool call's arguments, a raw line kept
    /// by an import) is read as JSON too, so that a secret in it is judged as in any
    /// other JSON: by its member's name as well, and in strings whose quotes are
    /// escaped here. The string is still checked as text, and of two matches that
    /// overlap the earlier (then the longer) is kept.
    fn value_secrets(
        &self,
        value: &[u8],
        key: Option<&[u8]>,
        may_hold_json: bool,
        scratch: &mut Scratch,
    ) -> Vec<(Edit, Finding)> {
        let mut candidates: Vec<(Edit, Finding)> = Vec::new();
        if may_hold_json
            && scratch.nesting < MAX_NESTING
            && matches!(value.first(), Some(b'{' | b'['))
        {
            let mut nested = Scratch {
                nesting: scratch.nesting + 1,
                ..Scratch::default()
            };
            let mut nested_tape = Tape::default();
            if scan(value, DEPTH, &mut nested_tape).is_ok() {
                let mut found = Vec::new();
                self.process_tape(value, &nested_tape, &mut nested, &mut found);
                // One edit per finding, in the same order.
                candidates.extend(nested.edits.iter().copied().zip(found));
            }
        }
        self.string_hits(value, key, scratch);
        for hit in &scratch.hits {
            let edit = Edit {
                from: hit.start,
                to: hit.end,
                rule: hit.rule,
            };
            let secret = &value[hit.start..hit.end];
            candidates.push((edit, self.finding(None, None, hit, secret)));
        }
        if candidates.len() > 1 {
            candidates.sort_by_key(|(edit, _)| (edit.from, std::cmp::Reverse(edit.to)));
            let mut end = 0;
            candidates.retain(|(edit, _)| {
                let keep = edit.from >= end;
                if keep {
                    end = edit.to;
                }
                keep
            });
        }
        candidates
    }

    /// One string value, decoded, with each secret replaced by `[REDACTED:<rule>]`,
    /// exactly as [`Redactor::redact_json_bytes`] redacts it where it is the value of
    /// member `key` in a JSON text (borrowed when nothing is redacted). The value of an
    /// `id` member (see [`is_id_member`]) is never redacted.
    pub fn redact_value<'a>(&self, key: Option<&str>, value: &'a str) -> Cow<'a, str> {
        if key.is_some_and(is_id_member) {
            return Cow::Borrowed(value);
        }
        // The prefilter of a JSON text sees its member names; a value alone does not,
        // so one judged by its member's name skips it.
        let judged_by_key = key.is_some_and(|key| {
            self.assignment
                .as_ref()
                .is_some_and(|(_, keys)| keys.is_match(key.as_bytes()))
        });
        if !judged_by_key && !self.line_may_hold_secret(value.as_bytes()) {
            return Cow::Borrowed(value);
        }
        let mut scratch = Scratch::default();
        let edits =
            self.value_secrets(value.as_bytes(), key.map(str::as_bytes), true, &mut scratch);
        if edits.is_empty() {
            return Cow::Borrowed(value);
        }
        let spans = edits.iter().map(|(e, _)| (e.from, e.to, e.rule));
        let out = self.replaced(value.as_bytes(), spans);
        // Only ASCII was put in place of whole characters of valid UTF-8.
        Cow::Owned(String::from_utf8_lossy(&out).into_owned())
    }

    /// `text` with each span `(from, to, rule)` (in order, not overlapping) replaced by
    /// the rule's `[REDACTED:<rule>]`, every other byte as it is.
    pub(super) fn replaced(
        &self,
        text: &[u8],
        spans: impl IntoIterator<Item = (usize, usize, usize)>,
    ) -> Vec<u8> {
        let mut out = Vec::with_capacity(text.len());
        let mut at = 0;
        for (from, to, rule) in spans {
            out.extend_from_slice(&text[at..from]);
            out.extend_from_slice(&self.rules[rule].replacement);
            at = to;
        }
        out.extend_from_slice(&text[at..]);
        out
    }

    /// The secrets in one decoded string, into `scratch.hits`: in order, not
    /// overlapping (the earliest wins, then the longest, then the first rule). `key` is
    /// the member name the string is the value of, if any.
    pub(super) fn string_hits(&self, value: &[u8], key: Option<&[u8]>, scratch: &mut Scratch) {
        scratch.hits.clear();
        let triggered = &mut scratch.triggered;
        triggered.clear();
        triggered.resize(self.rules.len(), false);
        let mut any = false;
        for m in self.prefilter.find_overlapping_iter(value) {
            for &rule in &self.triggers[m.pattern().as_usize()] {
                if !triggered[rule] && self.rules[rule].keyword_counts(value, m.end()) {
                    triggered[rule] = true;
                    any = true;
                }
            }
        }
        for &rule in &self.unconditional {
            triggered[rule] = true;
            any = true;
        }
        if any {
            for (index, rule) in self.rules.iter().enumerate() {
                if !triggered[index] {
                    continue;
                }
                let Some(compiled) = rule.regex() else {
                    // A default rule that did not compile (a test compiles each): the
                    // whole string is redacted rather than a secret let through.
                    scratch.hits.push(Hit {
                        start: 0,
                        end: value.len(),
                        rule: index,
                    });
                    continue;
                };
                for caps in compiled.regex.captures_iter(value) {
                    let span = match compiled.secret {
                        Some(group) => caps.get(group),
                        None => caps.get(0),
                    };
                    let Some(span) = span else { continue };
                    let secret = span.as_bytes();
                    if secret.is_empty() || !self.counts(rule.check, secret) {
                        continue;
                    }
                    scratch.hits.push(Hit {
                        start: span.start(),
                        end: span.end(),
                        rule: index,
                    });
                }
            }
        }
        if scratch.hits.is_empty()
            && let (Some(key), Some((rule, keys))) = (key, &self.assignment)
            && keys.is_match(key)
            && (8..=256).contains(&value.len())
            && !value.iter().any(u8::is_ascii_whitespace)
            && self.counts(Check::HighEntropy, value)
        {
            scratch.hits.push(Hit {
                start: 0,
                end: value.len(),
                rule: *rule,
            });
        }
        self.resolve_overlaps(&mut scratch.hits);
    }

    /// Keeps non-overlapping hits: a vendor's rule before a generic one (a token in a
    /// URL is the vendor's token, not a URL password), then the earliest, the longest,
    /// the first rule. Leaves them in text order.
    fn resolve_overlaps(&self, hits: &mut Vec<Hit>) {
        if hits.len() < 2 {
            return;
        }
        hits.sort_by_key(|h| {
            let generic = self.rules[h.rule].check != Check::None;
            (generic, h.start, std::cmp::Reverse(h.end), h.rule)
        });
        let mut kept: Vec<Hit> = Vec::with_capacity(hits.len());
        for hit in hits.iter() {
            if kept
                .iter()
                .all(|k| hit.end <= k.start || hit.start >= k.end)
            {
                kept.push(*hit);
            }
        }
        kept.sort_by_key(|h| h.start);
        *hits = kept;
    }

    /// Whether a match's secret counts: it passes the rule's check and is not allowed.
    fn counts(&self, check: Check, secret: &[u8]) -> bool {
        let passes = match check {
            Check::None => true,
            Check::NotPlaceholder => !rules::is_placeholder(secret),
            Check::HighEntropy => rules::looks_random(secret),
        };
        passes && !self.allow.contains(secret)
    }

    fn finding(
        &self,
        entry_id: Option<String>,
        pointer: Option<String>,
        hit: &Hit,
        secret: &[u8],
    ) -> Finding {
        Finding {
            entry_id,
            pointer,
            rule: self.rules[hit.rule].name.clone(),
            fingerprint: fingerprint(secret),
        }
    }
}

/// Members whose values are never redacted: `id` and names ending in `Id` (`parentId`,
/// `toolCallId`, `firstKeptEntryId`), and the ids of the agents' own files an export
/// writes and an import keeps (Claude Code's `uuid`, `parentUuid`, `leafUuid`,
/// `tool_use_id`; Codex's `call_id`): they link entries, and an id is not a secret.
fn is_id_member(name: &str) -> bool {
    name == "id"
        || name.ends_with("Id")
        || name == "uuid"
        || name.ends_with("Uuid")
        || matches!(name, "tool_use_id" | "call_id")
}

/// The `id` of the text's top-level object, if it is a string.
fn entry_id(tape: &Tape) -> Option<String> {
    if tape.nodes.first()?.kind != Kind::Object {
        return None;
    }
    let id = tape.get(0, "id")?;
    (tape.nodes[id].kind == Kind::String).then(|| tape.string(id).into_owned())
}

/// The JSON Pointer of `path`.
fn pointer(tape: &Tape, path: &[Step]) -> String {
    let mut out = String::new();
    for step in path {
        match *step {
            Step::Key(k) => push_pointer_segment(&mut out, &tape.string(k)),
            Step::Index(i) => {
                out.push('/');
                out.push_str(&i.to_string());
            }
        }
    }
    out
}

/// Fills `raw_of` with the raw offset of each byte of the tape's canonical text, or
/// leaves it holding only the offset of the value when the two are the same bytes (a
/// text without insignificant whitespace inside the value: the common case).
///
/// The canonical text is the raw text without the whitespace between tokens, so
/// walking both together and skipping raw bytes that differ lines them up: inside a
/// string the bytes are identical, and outside one the canonical text has no
/// whitespace.
fn map_canonical_to_raw(json: &[u8], tape: &Tape, raw_of: &mut Vec<usize>) {
    raw_of.clear();
    let lead = json
        .iter()
        .position(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
        .unwrap_or(json.len());
    let trail = json
        .iter()
        .rposition(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
        .map_or(lead, |p| p + 1);
    if trail - lead == tape.text.len() {
        raw_of.push(lead);
        return;
    }
    raw_of.reserve(tape.text.len() + 1);
    raw_of.push(lead);
    let mut raw = lead;
    for &byte in &tape.text {
        while raw < json.len() && json[raw] != byte {
            raw += 1;
        }
        raw_of.push(raw);
        raw += 1;
    }
}

/// The raw offset of canonical offset `at` (see [`map_canonical_to_raw`]).
fn raw_offset(raw_of: &[usize], at: usize) -> usize {
    match raw_of {
        [lead] => lead + at,
        _ => raw_of.get(at + 1).copied().unwrap_or(0),
    }
}
