//! Search across the sessions of a folder: full-text, ranked, and aware of branches.
//!
//! What is searched is the text a person reads ([`text::readable`]): user and
//! assistant text, tool call names and arguments, tool results, extension messages'
//! text and compaction summaries. Matching is by substring, case-insensitive, so CJK
//! text matches inside words (`项目名` finds `项目名是 tiny-pi`); every
//! whitespace-separated term of the query must occur.
//!
//! The index is a SQLite database beside the sessions, [`SIDECAR`]: an FTS5 index of
//! the words of the text ([`text::words`]) that keeps neither the text nor positions,
//! and the vocabulary of those words, through which a term is found as a substring
//! (every word that holds a piece of it); each candidate's text is read again from its
//! line in the session file and checked for the terms, so the index answers exactly
//! what a scan of the text would. Hits are ranked by BM25. It is disposable: deleting it loses nothing, the
//! next search rebuilds it. It is incremental: per file it records the file's identity
//! (device, inode), its size, modification and change times, hashes of its first and
//! of its last indexed block and the committed bytes already indexed, so a search
//! reads only the committed bytes appended since; a replaced, truncated or rewritten
//! file is read again (one whose times changed at the same size too: an edit in
//! place), a deleted one dropped. A corrupt line is reported (`errors`) and the rest
//! of the file is still searched. The sidecar and its journal take the session files'
//! owner and group where the process may set them and only the mode bits all of them
//! have, never wider (the rule of every sidecar, `store::mode_like`; 0600 when there
//! is none). Two processes searching at once serialise on SQLite's lock (a busy
//! timeout, never a corrupt index).
//!
//! The index is never required: where it cannot be used (a folder the caller may only
//! read, a sidecar it cannot open or narrow, anything but a regular file at its name
//! or a SQLite side file's), the search is answered from a temporary index built for
//! the call ([`IndexUse::Temporary`]).
//!
//! A query is bounded: at most [`MAX_QUERY_BYTES`] bytes and [`MAX_TERMS`] different
//! words (a repeated word counts once), so its cost is linear in its length.
//!
//! Secrets are never indexed: the text and role of every entry pass through the default rules
//! of [`crate::secrets`] first (each match becomes `[REDACTED:<rule>]`), for the index,
//! the check of a candidate and its snippet alike. `"redact": false` searches the text
//! as written, with a temporary index: the sidecar only ever holds redacted text.
//!
//! Each hit says whether its entry is on the path from the root to the session's
//! latest leaf (the last committed entry, as `latest_leaf` defines it):
//! `onLatestPath`; `latestPathOnly` keeps only those.
//!
//! The engine is behind the cargo feature `search` (on by default); without it,
//! [`search`] fails with [`Error::Unsupported`].

#[cfg(feature = "search")]
mod index;
pub mod text;

use std::path::Path;

use serde::Deserialize;

use crate::error::Error;
use crate::json::{Object, array};

/// The file name of the search index in a searched folder (with SQLite's
/// `-journal` beside it, kept empty between searches). It never ends in `.jsonl`.
pub const SIDECAR: &str = ".session-search.db";

/// The most hits a query may ask for.
pub const MAX_LIMIT: u64 = 1000;

/// The longest query, in bytes of UTF-8.
pub const MAX_QUERY_BYTES: usize = 1 << 20;

/// The most distinct words a query may hold (words that differ only in case are one).
pub const MAX_TERMS: usize = 256;

fn default_limit() -> u64 {
    20
}

/// A query: `{"query": non-empty string, "limit": 1..1000 (20), "roles": [role…]
/// (all), "latestPathOnly": bool (false)}`.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SearchQuery {
    pub query: String,
    #[serde(default = "default_limit")]
    pub limit: u64,
    /// Only hits of these roles (`user`, `assistant`, `toolResult`, an extension
    /// role, or `compaction` for a compaction's summary); all when absent.
    #[serde(default)]
    pub roles: Option<Vec<String>>,
    #[serde(default)]
    pub latest_path_only: bool,
    /// Secrets (the default rules of [`crate::secrets`]) in the text are replaced by
    /// `[REDACTED:<rule>]` before anything is indexed, matched or cut into a snippet, so
    /// the sidecar never holds one and searching for one finds nothing. Default true;
    /// false answers from the text as written, with a temporary index built for the
    /// call (the sidecar never takes unredacted text).
    #[serde(default = "default_redact")]
    pub redact: bool,
}

fn default_redact() -> bool {
    true
}

impl SearchQuery {
    /// A query of `text` with the defaults.
    pub fn new(text: &str) -> SearchQuery {
        SearchQuery {
            query: text.to_owned(),
            limit: default_limit(),
            roles: None,
            latest_path_only: false,
            redact: true,
        }
    }

    /// The query from JSON (the one options parser), checked: a query with no
    /// non-space character, longer than [`MAX_QUERY_BYTES`] or of more than
    /// [`MAX_TERMS`] different words, or a limit outside 1..=1000 is
    /// [`Error::InvalidOption`].
    pub fn from_json(text: &str) -> Result<SearchQuery, Error> {
        let query: SearchQuery = crate::options::from_json(text)?;
        query.check()?;
        Ok(query)
    }

    fn check(&self) -> Result<(), Error> {
        if self.query.len() > MAX_QUERY_BYTES {
            return Err(crate::options::invalid(&format!(
                "query must be at most {MAX_QUERY_BYTES} bytes"
            )));
        }
        let terms = text::terms(&self.query).len();
        if terms == 0 {
            return Err(crate::options::invalid(
                "query must hold a non-space character",
            ));
        }
        if terms > MAX_TERMS {
            return Err(crate::options::invalid(&format!(
                "query must hold at most {MAX_TERMS} different words (it holds {terms})"
            )));
        }
        if !(1..=MAX_LIMIT).contains(&self.limit) {
            return Err(crate::options::invalid("limit must be 1..1000"));
        }
        Ok(())
    }
}

/// One match.
#[derive(Clone, Debug, PartialEq)]
pub struct Hit {
    /// The session file's name relative to the folder.
    pub path: String,
    pub entry_id: String,
    /// The entry's 0-based position among the file's committed entries.
    pub seq: u64,
    pub role: String,
    /// The entry's timestamp as written.
    pub timestamp: String,
    pub snippet: String,
    /// Higher is better (BM25 over the query's terms of 3 characters or more; 0 for a
    /// query whose every term is shorter, kept in file and entry order).
    pub score: f64,
    pub on_latest_path: bool,
}

impl Hit {
    fn to_json(&self) -> String {
        Object::new()
            .string("path", &self.path)
            .string("entryId", &self.entry_id)
            .number("seq", self.seq)
            .string("role", &self.role)
            .raw("timestamp", &self.timestamp)
            .string("snippet", &self.snippet)
            .finite("score", self.score)
            .boolean("onLatestPath", self.on_latest_path)
            .finish()
    }
}

/// A file, or one line of it, that could not be searched.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SearchError {
    /// The file's name relative to the folder (lossy when not UTF-8).
    pub path: String,
    /// The 1-based line, for a corrupt line; `None` for the whole file.
    pub line: Option<u64>,
    /// `invalid_json`, `invalid_entry`, `line_too_long` or `io`.
    pub reason: String,
    pub message: String,
}

impl SearchError {
    fn to_json(&self) -> String {
        Object::new()
            .string("path", &self.path)
            .number_or_null("line", self.line)
            .string("reason", &self.reason)
            .string("message", &self.message)
            .finish()
    }
}

/// Which index a search used.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum IndexUse {
    /// The sidecar [`SIDECAR`] in the folder, brought up to date.
    #[default]
    Sidecar,
    /// A temporary index built for this search alone (every file read), because the
    /// sidecar could not be used: the folder or the sidecar cannot be written, or
    /// something other than a regular file is at its name or a SQLite side file's.
    Temporary,
}

impl IndexUse {
    fn name(self) -> &'static str {
        match self {
            IndexUse::Sidecar => "sidecar",
            IndexUse::Temporary => "temporary",
        }
    }
}

/// What a search found.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SearchResult {
    /// Best first.
    pub hits: Vec<Hit>,
    /// Session files searched.
    pub sessions: u64,
    /// Committed entries in them.
    pub entries: u64,
    pub errors: Vec<SearchError>,
    /// Bytes of session files read by this search to bring the index up to date (the
    /// blocks of a changed file checked against their hashes not counted).
    pub bytes_read: u64,
    /// Which index answered.
    pub index: IndexUse,
}

impl SearchResult {
    /// `{"hits":[…],"sessions":N,"entries":M,"errors":[…],"bytesRead":B,
    /// "index":"sidecar"|"temporary"}`.
    pub fn to_json(&self) -> String {
        Object::new()
            .raw("hits", &array(self.hits.iter().map(Hit::to_json)))
            .number("sessions", self.sessions)
            .number("entries", self.entries)
            .raw(
                "errors",
                &array(self.errors.iter().map(SearchError::to_json)),
            )
            .number("bytesRead", self.bytes_read)
            .string("index", self.index.name())
            .finish()
    }
}

/// Searches the `*.jsonl` files directly in `dir` (see the module documentation),
/// bringing the sidecar index up to date first. Fails when `dir` cannot be read or
/// the index cannot be opened or written ([`Error::Io`]); a file's trouble is in
/// `errors`.
pub fn search(dir: &Path, query: &SearchQuery) -> Result<SearchResult, Error> {
    query.check()?;
    #[cfg(feature = "search")]
    {
        index::search(dir, query)
    }
    #[cfg(not(feature = "search"))]
    {
        let _ = dir;
        Err(Error::Unsupported { feature: "search" })
    }
}
