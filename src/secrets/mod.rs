//! Secrets in sessions: find API keys, tokens, private keys and passwords in the
//! strings of JSON lines, and redact them (issue 36).
//!
//! A transcript holds whatever passed through the agent's terminal. Before a session
//! is copied somewhere it will be read by others (an HTML page, a search index, a
//! database, another agent's format), the secrets in it are found by a rule set
//! ([`rules`]: one pattern per vendor's documented key format, plus the user's) and
//! replaced by `[REDACTED:<rule>]`.
//!
//! The rules run inside JSON strings, on their decoded value, so a key written with
//! an escape in it (`sk\u002dant-…`, `https:\/\/…`) is found too; a redaction rewrites
//! only the bytes that spell the secret, so every other byte of the line (ids, numbers,
//! keys, the other strings, the escapes around it) is unchanged. Keys and the values
//! of `id` and `…Id` members are never redacted: they hold the tree together.
//!
//! Matching is one pass per text with a keyword prefilter ([`aho_corasick`]; first a
//! SIMD search for the keywords, see [`QuickTest`]): a line with none of the rules'
//! keywords (and no `\u` or `\/` escape that could hide one) is passed over without
//! being parsed; in a line with some, only the rules whose keywords occur in a string
//! run on it.
//!
//! A secret's value never leaves this module: a [`Finding`] names the rule, where the
//! secret is (entry id, JSON Pointer) and a fingerprint (the first 12 hex digits of
//! its SHA-256), and no error quotes a line.
//!
//! For the other parts of the library: [`Redactor::redact_json_strings`] redacts one
//! JSON text (a line, an entry, an array of entries), [`Redactor::redact_text`] one
//! decoded string; [`Redactor::standard`] is the default rule set, compiled once.

mod files;
pub(crate) mod rules;
mod scan;

pub use files::{FileFinding, RedactReport, ScanReport, redact_session, scan_secrets};
pub(crate) use files::{RedactorRef, redactor_for};

use std::borrow::Cow;
use std::collections::HashSet;
use std::sync::OnceLock;

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind, packed};
use serde::Deserialize;
use sha2::{Digest, Sha256};

use crate::error::Error;
use rules::{ASSIGNMENT_KEYS, ASSIGNMENT_RULE, Check, DEFAULT_RULES};

/// The longest rule pattern accepted, in bytes.
const MAX_PATTERN_BYTES: usize = 4096;
/// The most memory one compiled user rule may take (the `regex` crate's size limit).
const MAX_COMPILED_BYTES: usize = 1 << 20;
/// The longest rule name: it is written into the text in place of each secret.
const MAX_NAME_BYTES: usize = 64;
/// Literals that send a line to the full check although they are no rule's keyword:
/// an escape can spell a keyword's character (`\u002d` for `-`, `\/` for `/`; only
/// escapes of printable ASCII can, as every keyword is ASCII), and a member named
/// `token` is judged as an assignment (see [`rules::ASSIGNMENT_KEYS`]), in the text or
/// in a JSON text held in one of its strings (`token\"`).
const LINE_TRIGGERS: &[&str] = &[
    "\\u002",
    "\\u003",
    "\\u004",
    "\\u005",
    "\\u006",
    "\\u007",
    "\\/",
    "token\"",
    "token\\\"",
];

/// The bytes of text lowercased at a time for [`QuickTest`]'s case-folded search.
const FOLD_BLOCK: usize = 16 * 1024;

thread_local! {
    /// The block [`QuickTest::any`] lowercases text into.
    static FOLDED: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// A user's rule, as in the options: `{"name": …, "pattern": …}`. The pattern is
/// `regex` syntax; if it has a group named `secret`, only that group is the secret.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleSpec {
    pub name: String,
    pub pattern: String,
}

/// The base rule set: `"default"` or a list of rules that replaces it.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum RuleChoice {
    Named(String),
    Custom(Vec<RuleSpec>),
}

/// Options of [`scan_secrets`] and [`redact_session`], as JSON: `{"rules": "default" |
/// [rule…], "extraRules": [rule…], "allow": [string…], "inPlace": bool}`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct SecretsOptions {
    /// The base rules (default: the built-in set).
    pub rules: Option<RuleChoice>,
    /// Rules added to the base set.
    pub extra_rules: Vec<RuleSpec>,
    /// Values that are never reported or redacted (compared with the whole secret).
    pub allow: Vec<String>,
    /// [`redact_session`] without a destination rewrites the source.
    pub in_place: bool,
}

/// The redactor of an export's or an import's options: `redact` (the call's default
/// when `None`) and the rule options of [`SecretsOptions`] (`rules`, `extraRules`,
/// `allow`), checked by the same code as theirs ([`Redactor::new`]). `None` when
/// nothing is to be redacted; rule options without redaction are refused, since they
/// would silently do nothing.
pub(crate) fn redaction(
    redact: Option<bool>,
    default: bool,
    rules: &Option<RuleChoice>,
    extra_rules: &[RuleSpec],
    allow: &[String],
) -> Result<Option<RedactorRef>, Error> {
    if !redact.unwrap_or(default) {
        if rules.is_some() || !extra_rules.is_empty() || !allow.is_empty() {
            return Err(crate::options::invalid(
                "rules, extraRules and allow apply only with \"redact\": true",
            ));
        }
        return Ok(None);
    }
    let options = SecretsOptions {
        rules: rules.clone(),
        extra_rules: extra_rules.to_vec(),
        allow: allow.to_vec(),
        in_place: false,
    };
    redactor_for(&options).map(Some)
}

impl SecretsOptions {
    /// Options from JSON, through the one options parser ([`crate::options`]).
    pub fn from_json(text: &str) -> Result<SecretsOptions, Error> {
        crate::options::from_json(text)
    }
}

/// One secret found: where it is and what kind, never its value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    /// The `id` of the line's entry; `None` for a line that is not a JSON object with a
    /// string `id` (such a line is checked as plain text).
    pub entry_id: Option<String>,
    /// JSON Pointer of the string holding the secret; `None` for a line that is not
    /// JSON.
    pub pointer: Option<String>,
    /// The rule's name.
    pub rule: String,
    /// The first 12 hex digits of the secret's SHA-256: the same secret has the same
    /// fingerprint wherever it occurs, and the fingerprint does not reveal it.
    pub fingerprint: String,
}

/// A compiled rule.
#[derive(Debug)]
struct Rule {
    name: String,
    /// `[REDACTED:<name>]`.
    replacement: Vec<u8>,
    /// The pattern, compiled: a user's when the rule set is built (an invalid one is
    /// refused then), a default rule's when a text first triggers it ([`Rule::regex`]).
    compiled: OnceLock<Result<Compiled, Error>>,
    /// A default rule's pattern, compiled on first use; `None` for a user's.
    deferred: Option<&'static str>,
    /// A byte that must occur in the text too (see [`rules::DefaultRule::also`]).
    also: Option<u8>,
    /// What must follow a keyword for it to count (see
    /// [`rules::DefaultRule::suffixes`]); empty: anything.
    suffixes: &'static [&'static str],
    check: Check,
}

/// A rule's compiled pattern.
#[derive(Debug)]
struct Compiled {
    regex: regex::bytes::Regex,
    /// The index of the group named `secret`, if the pattern has one.
    secret: Option<usize>,
}

/// A compiled rule set with its prefilter and allow-list: finds and redacts secrets.
/// Build one per set of options and reuse it; it is `Send` and `Sync`.
#[derive(Debug)]
pub struct Redactor {
    rules: Vec<Rule>,
    /// The first test of a text: whether any keyword may be in it (see [`QuickTest`]);
    /// `None` when the keywords are too many for it, and [`Redactor::prefilter`] is the
    /// first test.
    quick: Option<Box<QuickTest>>,
    /// Every rule's keywords, then [`LINE_TRIGGERS`]; ASCII case ignored.
    prefilter: AhoCorasick,
    /// For each prefilter pattern, the rules it triggers (none for a line trigger).
    triggers: Vec<Vec<usize>>,
    /// Rules without keywords (the user's): run on every string.
    unconditional: Vec<usize>,
    /// The assignment rule and the member names whose values it judges.
    assignment: Option<(usize, regex::bytes::Regex)>,
    allow: HashSet<Vec<u8>>,
}

/// The default rule set, compiled on first use.
static STANDARD: OnceLock<Result<Redactor, Error>> = OnceLock::new();

impl Redactor {
    /// The rule set the options ask for. Fails with [`Error::InvalidOption`] naming a
    /// rule whose name or pattern is invalid (never quoting the pattern), or for
    /// `"rules"` other than `"default"` or a list.
    pub fn new(options: &SecretsOptions) -> Result<Redactor, Error> {
        let mut rules = Vec::new();
        let mut keywords: Vec<(String, usize)> = Vec::new();
        // The keywords for the quick test: as written, and lowercase (ASCII case ignored).
        let (mut exact, mut folded): (Vec<String>, Vec<String>) = (Vec::new(), Vec::new());
        let mut escapes: Vec<&'static str> = Vec::new();
        let mut unconditional = Vec::new();
        let custom = match &options.rules {
            None => None,
            Some(RuleChoice::Named(name)) if name == "default" => None,
            Some(RuleChoice::Named(_)) => {
                return Err(crate::options::invalid(
                    "rules must be \"default\" or a list of {\"name\", \"pattern\"}",
                ));
            }
            Some(RuleChoice::Custom(list)) => Some(list),
        };
        if custom.is_none() {
            for rule in DEFAULT_RULES {
                let index = rules.len();
                // Compiled on first use: a text triggers few rules, and compiling all
                // of them took about 6 ms of every process that redacts (a
                // `{0,128}` of a Unicode class is large); a test compiles each.
                rules.push(Rule {
                    name: rule.name.to_owned(),
                    replacement: format!("[REDACTED:{}]", rule.name).into_bytes(),
                    compiled: OnceLock::new(),
                    deferred: Some(rule.pattern),
                    also: rule.also,
                    suffixes: rule.suffixes,
                    check: rule.check,
                });
                keywords.extend(rule.keywords.iter().map(|k| (k.to_string(), index)));
                for keyword in rule.keywords {
                    match rule.exact_case {
                        true => exact.push((*keyword).to_owned()),
                        false => folded.push(keyword.to_ascii_lowercase()),
                    }
                }
            }
        }
        for spec in custom.into_iter().flatten().chain(&options.extra_rules) {
            if rules.iter().any(|r: &Rule| r.name == spec.name) {
                return Err(crate::options::invalid(&format!(
                    "rule {:?} is defined twice",
                    spec.name
                )));
            }
            unconditional.push(rules.len());
            rules.push(compile(
                &spec.name,
                &spec.pattern,
                Check::None,
                MAX_COMPILED_BYTES,
            )?);
        }
        let mut patterns: Vec<String> = Vec::new();
        let mut triggers: Vec<Vec<usize>> = Vec::new();
        for (keyword, rule) in keywords {
            let keyword = keyword.to_ascii_lowercase();
            match patterns.iter().position(|p| *p == keyword) {
                Some(at) => triggers[at].push(rule),
                None => {
                    patterns.push(keyword);
                    triggers.push(vec![rule]);
                }
            }
        }
        for trigger in LINE_TRIGGERS {
            patterns.push((*trigger).to_owned());
            triggers.push(Vec::new());
            // An escape is spelled in one case (JSON's `\u` is lowercase, and the text
            // of a line that is not JSON is not decoded); a member named `token` in any.
            match trigger
                .bytes()
                .any(|b| b.is_ascii_alphabetic() && b != b'u')
            {
                true => folded.push(trigger.to_ascii_lowercase()),
                false => escapes.push(trigger),
            }
        }
        let prefilter = AhoCorasickBuilder::new()
            .ascii_case_insensitive(true)
            .match_kind(MatchKind::Standard)
            .build(&patterns)
            .map_err(|e| Error::Internal {
                message: format!("the secrets prefilter: {e}"),
            })?;
        let assignment = match rules.iter().position(|r| r.name == ASSIGNMENT_RULE) {
            Some(index) if custom.is_none() => Some((
                index,
                regex::bytes::Regex::new(ASSIGNMENT_KEYS).map_err(|e| Error::Internal {
                    message: format!("the assignment keys: {e}"),
                })?,
            )),
            _ => None,
        };
        Ok(Redactor {
            rules,
            quick: QuickTest::new(&exact, &folded, &escapes).map(Box::new),
            prefilter,
            triggers,
            unconditional,
            assignment,
            allow: options
                .allow
                .iter()
                .map(|a| a.as_bytes().to_vec())
                .collect(),
        })
    }

    /// The default rules with no allow-list, compiled once per process.
    pub fn standard() -> Result<&'static Redactor, Error> {
        STANDARD
            .get_or_init(|| Redactor::new(&SecretsOptions::default()))
            .as_ref()
            .map_err(Clone::clone)
    }

    /// The names of the rules, in order.
    pub fn rule_names(&self) -> impl Iterator<Item = &str> {
        self.rules.iter().map(|r| r.name.as_str())
    }

    /// The secrets in one JSON text (a session line, an entry, an array of entries):
    /// inside its strings, or in the whole text if it is not JSON.
    pub fn find_in_json(&self, json: &[u8]) -> Vec<Finding> {
        let mut scratch = scan::Scratch::default();
        let mut findings = Vec::new();
        self.process(json, &mut scratch, false, &mut findings);
        findings
    }

    /// `json` with each secret inside its strings replaced by `[REDACTED:<rule>]`,
    /// every other byte unchanged (borrowed when nothing is redacted). A text that is
    /// not JSON is redacted as plain text. The result is valid JSON when `json` is.
    pub fn redact_json_bytes<'a>(&self, json: &'a [u8]) -> Cow<'a, [u8]> {
        let mut scratch = scan::Scratch::default();
        let mut findings = Vec::new();
        match self.process(json, &mut scratch, true, &mut findings) {
            Some(redacted) => Cow::Owned(redacted),
            None => Cow::Borrowed(json),
        }
    }

    /// [`Redactor::redact_json_bytes`] and the number of secrets it replaced.
    pub fn redact_json_counted<'a>(&self, json: &'a [u8]) -> (Cow<'a, [u8]>, u64) {
        let mut scratch = scan::Scratch::default();
        let mut findings = Vec::new();
        match self.process(json, &mut scratch, true, &mut findings) {
            Some(redacted) => (Cow::Owned(redacted), findings.len() as u64),
            None => (Cow::Borrowed(json), 0),
        }
    }

    /// [`Redactor::redact_json_bytes`] for text.
    pub fn redact_json_strings<'a>(&self, json: &'a str) -> Cow<'a, str> {
        match self.redact_json_bytes(json.as_bytes()) {
            Cow::Borrowed(_) => Cow::Borrowed(json),
            // Only ASCII was put in place of whole characters of valid UTF-8.
            Cow::Owned(bytes) => Cow::Owned(String::from_utf8_lossy(&bytes).into_owned()),
        }
    }

    /// One decoded string (a message's text, a tool's output) with each secret
    /// replaced by `[REDACTED:<rule>]` (borrowed when there is none).
    pub fn redact_text<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut scratch = scan::Scratch::default();
        if !self.line_may_hold_secret(text.as_bytes()) {
            return Cow::Borrowed(text);
        }
        self.string_hits(text.as_bytes(), None, &mut scratch);
        if scratch.hits.is_empty() {
            return Cow::Borrowed(text);
        }
        let spans = scratch.hits.iter().map(|h| (h.start, h.end, h.rule));
        let out = self.replaced(text.as_bytes(), spans);
        Cow::Owned(String::from_utf8_lossy(&out).into_owned())
    }

    /// Whether a text may hold a secret: one of the rules' keywords occurs in it (and
    /// counts there), or an escape that could hide one, or a rule has no keywords. The
    /// prefilter every other call runs first; `false` means none of them would find
    /// anything.
    pub fn may_hold_secret(&self, text: &[u8]) -> bool {
        self.line_may_hold_secret(text)
    }

    fn line_may_hold_secret(&self, text: &[u8]) -> bool {
        if !self.unconditional.is_empty() {
            return true;
        }
        // Most texts have no keyword at all: one fast pass says so. Only a text with
        // one is walked again to see whether a keyword counts.
        let any = match &self.quick {
            Some(quick) => quick.any(text),
            None => self.prefilter.is_match(text),
        };
        any && self.prefilter.find_overlapping_iter(text).any(|m| {
            let rules = &self.triggers[m.pattern().as_usize()];
            // No rule: a line trigger (an escape, a member named token).
            rules.is_empty()
                || rules
                    .iter()
                    .any(|&rule| self.rules[rule].keyword_counts(text, m.end()))
        })
    }
}

/// The first test of a text for the rules' keywords, with SIMD (`aho_corasick`'s
/// packed searcher, Teddy): the keywords of the rules whose every match spells one of
/// them as written ([`rules::DefaultRule::exact_case`]) searched in the text as it is,
/// and the others lowercase in the text lowercased, [`FOLD_BLOCK`] bytes at a time.
/// The prefilter's automaton, with ASCII case ignored, has no SIMD search and reads
/// about a quarter as fast.
///
/// It says no for a text with a keyword only in a case no match of its rule can have
/// (`akia…`), where the prefilter says yes: such a text has no secret either way.
///
/// The escapes of [`LINE_TRIGGERS`] (`\u002`…, `\/`) are not in the exact set but
/// found by their two-byte start (`memchr`'s SIMD substring search): in the set they
/// made it too large (more than 32 keywords) and its shortest keyword two bytes, which
/// sent Teddy to its slowest form (fat, two-byte fingerprints); without them it is slim
/// with three-byte fingerprints.
#[derive(Debug)]
struct QuickTest {
    /// `None` when there are no such keywords.
    exact: Option<packed::Searcher>,
    folded: Option<packed::Searcher>,
    /// The escapes, by their two-byte start: each start's searcher and the escapes
    /// that begin with it.
    escapes: Vec<(memchr::memmem::Finder<'static>, Vec<&'static [u8]>)>,
    /// The longest lowercase keyword: consecutive blocks overlap by one byte less.
    folded_longest: usize,
}

impl QuickTest {
    /// `None` when a set of keywords is too large for the packed searcher.
    fn new(exact: &[String], folded: &[String], escapes: &[&'static str]) -> Option<QuickTest> {
        let mut by_start: Vec<(memchr::memmem::Finder<'static>, Vec<&'static [u8]>)> = Vec::new();
        for escape in escapes {
            let escape = escape.as_bytes();
            let start = &escape[..escape.len().min(2)];
            match by_start.iter_mut().find(|(f, _)| f.needle() == start) {
                Some((_, list)) => list.push(escape),
                None => by_start.push((
                    memchr::memmem::Finder::new(start).into_owned(),
                    vec![escape],
                )),
            }
        }
        let searcher = |keywords: &[String]| -> Option<Option<packed::Searcher>> {
            if keywords.is_empty() {
                return Some(None);
            }
            packed::Config::new()
                .match_kind(packed::MatchKind::LeftmostFirst)
                .builder()
                .extend(keywords)
                .build()
                .map(Some)
        };
        Some(QuickTest {
            exact: searcher(exact)?,
            folded: searcher(folded)?,
            folded_longest: folded.iter().map(String::len).max().unwrap_or(0),
            escapes: by_start,
        })
    }

    /// Whether a keyword occurs in `text` (in a case that a match of its rule can have).
    fn any(&self, text: &[u8]) -> bool {
        if self.exact.as_ref().is_some_and(|s| s.find(text).is_some()) {
            return true;
        }
        for (start, escapes) in &self.escapes {
            if start
                .find_iter(text)
                .any(|at| escapes.iter().any(|e| text[at..].starts_with(e)))
            {
                return true;
            }
        }
        let Some(folded) = &self.folded else {
            return false;
        };
        let overlap = self.folded_longest.saturating_sub(1).min(FOLD_BLOCK / 2);
        // One block per thread, reused: most texts are short, and allocating (and
        // zeroing) a block for each was a tenth of this test's time.
        FOLDED.with_borrow_mut(|block| {
            let mut start = 0;
            loop {
                let end = (start + FOLD_BLOCK).min(text.len());
                block.clear();
                block.extend(text[start..end].iter().map(u8::to_ascii_lowercase));
                if folded.find(&block[..]).is_some() {
                    return true;
                }
                if end == text.len() {
                    return false;
                }
                start = end - overlap;
            }
        })
    }
}

impl Rule {
    /// The rule's compiled pattern; `None` only if a default rule's pattern failed to
    /// compile (a test compiles each, so never in a release).
    fn regex(&self) -> Option<&Compiled> {
        let compiled = self.compiled.get_or_init(|| match self.deferred {
            Some(pattern) => compile_pattern(&self.name, pattern, usize::MAX),
            // A user's rule is compiled when it is built; not reached.
            None => Err(Error::Internal {
                message: format!("rule {:?} was not compiled", self.name),
            }),
        });
        compiled.as_ref().ok()
    }

    /// Whether a keyword of this rule ending at `end` in `text` counts: the rule's
    /// extra byte occurs in `text`, and one of its suffixes follows the keyword.
    fn keyword_counts(&self, text: &[u8], end: usize) -> bool {
        let rest = text.get(end..).unwrap_or_default();
        self.also
            .is_none_or(|byte| memchr::memchr(byte, text).is_some())
            && (self.suffixes.is_empty()
                || self.suffixes.iter().any(|s| rest.starts_with(s.as_bytes())))
    }
}

/// Compiles one rule; an invalid name or pattern is an invalid option naming the rule.
fn compile(name: &str, pattern: &str, check: Check, size_limit: usize) -> Result<Rule, Error> {
    let name_ok = !name.is_empty()
        && name.len() <= MAX_NAME_BYTES
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
    if !name_ok {
        return Err(crate::options::invalid(&format!(
            "rule name {name:?} must be 1 to {MAX_NAME_BYTES} letters, digits, '-', '_' or '.'"
        )));
    }
    if pattern.len() > MAX_PATTERN_BYTES {
        return Err(crate::options::invalid(&format!(
            "rule {name:?}: the pattern is longer than {MAX_PATTERN_BYTES} bytes"
        )));
    }
    let compiled = compile_pattern(name, pattern, size_limit)?;
    Ok(Rule {
        name: name.to_owned(),
        replacement: format!("[REDACTED:{name}]").into_bytes(),
        compiled: OnceLock::from(Ok(compiled)),
        deferred: None,
        also: None,
        suffixes: &[],
        check,
    })
}

/// `pattern` compiled, with its `secret` group; an invalid one is an invalid option
/// naming the rule (never quoting the pattern).
fn compile_pattern(name: &str, pattern: &str, size_limit: usize) -> Result<Compiled, Error> {
    let mut builder = regex::bytes::RegexBuilder::new(pattern);
    if size_limit != usize::MAX {
        builder.size_limit(size_limit).dfa_size_limit(size_limit);
    }
    // The regex crate's message quotes the pattern, which may spell a secret: only the
    // rule's name is given.
    let regex = builder.build().map_err(|_| {
        crate::options::invalid(&format!(
            "rule {name:?}: the pattern is not a valid regular expression (or too large)"
        ))
    })?;
    let secret = regex.capture_names().position(|n| n == Some("secret"));
    Ok(Compiled { regex, secret })
}

/// The first 12 hex digits of the SHA-256 of `secret`.
fn fingerprint(secret: &[u8]) -> String {
    let digest = Sha256::digest(secret);
    let mut out = String::with_capacity(12);
    for byte in &digest[..6] {
        out.push(char::from(b"0123456789abcdef"[usize::from(byte >> 4)]));
        out.push(char::from(b"0123456789abcdef"[usize::from(byte & 15)]));
    }
    out
}

#[cfg(test)]
mod tests;
