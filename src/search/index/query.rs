//! The query: candidates from the full-text index, each checked against its line,
//! ranked by BM25.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::Path;

use rusqlite::types::Value;
use rusqlite::{Connection, OptionalExtension};

use super::super::text::{
    contains_all, contains_all_ascii, fold_terms, folded, readable_redacted, snippet, terms, words,
};
use super::super::{Hit, SearchQuery};
use super::lines::LineReader;
use super::vocabulary::{expression, term_groups};
use super::{Fail, SEQ_BITS, key_parts, parse};
use crate::entry::EntryParser;
use crate::recover::MAX_LINE_BYTES;
use crate::secrets::Redactor;
use crate::store::open_regular_with;

/// BM25 (the constants of FTS5's `bm25`).
pub(super) const K1: f64 = 1.2;
pub(super) const B: f64 = 0.75;

/// The inverse document frequency of a term held by `n` of `total` entries, as FTS5's
/// `bm25` computes it (never below a millionth).
pub(super) fn idf(total: f64, n: f64) -> f64 {
    let idf = ((total - n + 0.5) / (n + 0.5)).ln();
    if idf <= 0.0 { 1e-6 } else { idf }
}

/// A candidate that passed the check: its row, the file it is in and its score.
struct Checked {
    key: i64,
    name: std::rc::Rc<str>,
    entry_id: String,
    score: f64,
}

/// The session file a candidate's line is read from, kept open while consecutive
/// candidates are in it.
pub(super) struct Reader<'a> {
    dir: &'a Path,
    redactor: Option<&'a Redactor>,
    open: Option<(i64, std::rc::Rc<str>, File)>,
    parser: EntryParser,
    buf: Vec<u8>,
}

/// What a candidate's line holds: its entry's id, its readable text and its timestamp
/// (as written).
struct Line {
    id: String,
    text: String,
    timestamp: String,
}

impl<'a> Reader<'a> {
    fn new(dir: &'a Path, redactor: Option<&'a Redactor>) -> Reader<'a> {
        Reader {
            dir,
            redactor,
            open: None,
            parser: EntryParser::default(),
            buf: Vec::new(),
        }
    }

    /// The entry whose line starts at `at` in file row `file` (`names` gives its name);
    /// `None` when it cannot be read back as an entry with text (the file changed since
    /// the index was brought up to date: it is left to the next search).
    fn line(&mut self, names: &mut Names, file: i64, at: u64) -> Option<Line> {
        if self.open.as_ref().is_none_or(|(open, _, _)| *open != file) {
            let name = names.get(file)?;
            let path = self.dir.join(&*name);
            let handle = open_regular_with(
                OpenOptions::new().read(true),
                rustix::fs::OFlags::NOFOLLOW,
                &path,
            )
            .ok()?;
            self.open = Some((file, name, handle));
        }
        let (_, _, handle) = self.open.as_ref()?;
        // The line runs to the first `\n` from `at`: read in growing pieces until it
        // is met, never past the longest line a session may hold.
        let mut len = 0;
        let end = loop {
            let want = (len * 2).clamp(LINE_PIECE, MAX_LINE_BYTES + 1);
            if want <= len {
                return None;
            }
            self.buf.resize(want, 0);
            let n = read_at_most(handle, &mut self.buf[len..], at + len as u64)?;
            if let Some(i) = memchr::memchr(b'\n', &self.buf[len..len + n]) {
                break len + i;
            }
            if n < want - len {
                return None;
            }
            len = want;
        };
        let facts = parse(&mut self.parser, &self.buf[..end], self.redactor).ok()?;
        let tape = self.parser.tape();
        let text = readable_redacted(tape, self.redactor).1?;
        Some(Line {
            id: facts.id.of(&tape.text).to_owned(),
            text,
            timestamp: String::from_utf8_lossy(facts.timestamp.bytes(&tape.text)).into_owned(),
        })
    }

    /// The name of the file last read.
    fn name(&self) -> Option<std::rc::Rc<str>> {
        self.open.as_ref().map(|(_, name, _)| name.clone())
    }
}

/// A line is first read in a piece of this size (most lines are shorter).
const LINE_PIECE: usize = 4096;

/// Reads into `buf` from `at` until it is full or the file ends; the bytes read.
fn read_at_most(file: &File, buf: &mut [u8], at: u64) -> Option<usize> {
    let mut n = 0;
    while n < buf.len() {
        match file.read_at(&mut buf[n..], at + n as u64) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return None,
        }
    }
    Some(n)
}

/// The names of the file rows, looked up as they are met.
struct Names<'c> {
    stmt: rusqlite::Statement<'c>,
    known: std::collections::HashMap<i64, std::rc::Rc<str>>,
}

impl Names<'_> {
    fn get(&mut self, file: i64) -> Option<std::rc::Rc<str>> {
        if let Some(name) = self.known.get(&file) {
            return Some(name.clone());
        }
        let name: String = self
            .stmt
            .query_row([file], |r| r.get(0))
            .optional()
            .ok()??;
        let name: std::rc::Rc<str> = name.into();
        self.known.insert(file, name.clone());
        Some(name)
    }
}

/// The hits of `query`, best first: the entries the full-text index names for the
/// words that hold the terms' runs, each checked against its text read again from the
/// session file (its file and entry the index's row says, [`entry_key`], and where its
/// line starts the file's chunk of line offsets, [`LineReader`]). A query with
/// a term of three characters or more is ranked by BM25 over the terms (each term a
/// phrase: its occurrences in the entry's text, the entry's length in words, and the
/// entries that may hold it by the index); a query of shorter words alone keeps the
/// order of the files and their entries, score 0. Only the hits returned are looked up
/// in `entries` (their sequence number, role and place on the latest path), unless
/// the query filters on those or is not ranked.
pub(super) fn query_hits(
    conn: &Connection,
    dir: &Path,
    query: &SearchQuery,
    redactor: Option<&Redactor>,
) -> Result<Vec<Hit>, Fail> {
    let terms = terms(&query.query);
    let (long, short): (Vec<&str>, Vec<&str>) = terms.iter().partition(|t| t.chars().count() >= 3);
    let blocks: Vec<String> = {
        let mut stmt = conn.prepare("SELECT words FROM vocabulary")?;
        let rows = stmt.query_map([], |r| r.get::<_, String>(0))?;
        rows.collect::<Result<_, _>>()?
    };
    let mut per_term: Vec<Vec<Vec<String>>> = Vec::new();
    for term in &terms {
        match term_groups(&blocks, term) {
            Ok(groups) => per_term.push(groups),
            Err(()) => return Ok(Vec::new()),
        }
    }
    let all = expression(per_term.iter().flatten().cloned().collect());
    let ranked = !long.is_empty();
    let mut params: Vec<Value> = Vec::new();
    let mut filters: Vec<String> = Vec::new();
    if let Some(all) = &all {
        params.push(Value::Text(all.clone()));
        filters.push(format!("texts MATCH ?{}", params.len()));
    }
    if let Some(roles) = &query.roles {
        let mut marks = Vec::new();
        for role in roles {
            params.push(Value::Text(role.clone()));
            marks.push(format!("?{}", params.len()));
        }
        filters.push(format!(
            "e.role IN (SELECT id FROM roles WHERE name IN ({}))",
            marks.join(", ")
        ));
    }
    if query.latest_path_only {
        filters.push("e.on_latest = 1".into());
    }
    // The rows of the candidates. Ranked without a filter on the entries, the index
    // alone names them (in its order: each file's lines ascending); else joined to
    // their entries, unranked in the order of the files and their entries.
    let sql = match (
        ranked && query.roles.is_none() && !query.latest_path_only,
        &all,
    ) {
        (true, Some(_)) => format!("SELECT rowid FROM texts WHERE {}", filters.join(" AND ")),
        (_, all) => {
            let from = match all {
                Some(_) => "texts JOIN entries e ON e.id = texts.rowid",
                None => {
                    filters.push("e.has_text = 1".into());
                    "entries e"
                }
            };
            let order = match ranked {
                true => "",
                false => "ORDER BY f.name, e.id",
            };
            format!(
                "SELECT e.id FROM {from} JOIN files f ON f.id = e.id >> {SEQ_BITS} WHERE {} {order}",
                filters.join(" AND ")
            )
        }
    };
    let needles = fold_terms(&long);
    // BM25's figures: entries with text, their mean length in words, and per long
    // term the entries the index names for it.
    let (total, mean_words) = conn.query_row(
        "SELECT coalesce(sum(text_entries), 0), coalesce(sum(words), 0) FROM files",
        [],
        |r| Ok((r.get::<_, i64>(0)? as f64, r.get::<_, i64>(1)? as f64)),
    )?;
    let mean_words = if total > 0.0 { mean_words / total } else { 1.0 };
    let mut weights = Vec::new();
    if ranked {
        for (term, groups) in terms.iter().zip(&per_term) {
            if term.chars().count() < 3 {
                continue;
            }
            let n = match expression(groups.clone()) {
                Some(e) => conn.query_row(
                    "SELECT count(*) FROM texts WHERE texts MATCH ?1",
                    [e],
                    |r| r.get::<_, i64>(0),
                )? as f64,
                None => total,
            };
            weights.push(idf(total, n));
        }
    }
    let mut names = Names {
        stmt: conn.prepare("SELECT name FROM files WHERE id = ?1")?,
        known: std::collections::HashMap::new(),
    };
    let mut reader = Reader::new(dir, redactor);
    let mut lines = LineReader::new(conn)?;
    let mut stmt = conn.prepare(&sql)?;
    let mut rows = stmt.query(rusqlite::params_from_iter(params))?;
    let limit = query.limit as usize;
    let mut checked: Vec<Checked> = Vec::new();
    loop {
        // Unranked, the first `limit` hits in order are the answer; ranked, every
        // candidate is scored.
        if !ranked && checked.len() == limit {
            break;
        }
        let Some(r) = rows.next()? else { break };
        let key: i64 = r.get(0)?;
        let Some(at) = lines.offset(key)? else {
            continue;
        };
        let Some(line) = reader.line(&mut names, key_parts(key).0, at) else {
            continue;
        };
        // Folded once, for the check and the counts.
        let haystack = folded(&line.text);
        if !contains_all(&haystack, &needles) || !contains_all_ascii(&line.text, &short) {
            continue;
        }
        let score = match ranked {
            true => {
                // The entry's length in words, as the update counted it.
                let mut length = 0usize;
                words(&line.text, |_| length += 1);
                let norm = K1 * (1.0 - B + B * length as f64 / mean_words);
                needles
                    .iter()
                    .zip(&weights)
                    .map(|(needle, weight)| {
                        let tf = haystack.matches(needle.as_str()).count() as f64;
                        weight * tf * (K1 + 1.0) / (tf + norm)
                    })
                    .sum()
            }
            false => 0.0,
        };
        let Some(name) = reader.name() else { continue };
        checked.push(Checked {
            key,
            name,
            entry_id: line.id,
            score,
        });
    }
    drop(rows);
    let mut lookup = conn.prepare(
        "SELECT (SELECT name FROM roles WHERE id = e.role), e.on_latest, e.entry_id
         FROM entries e WHERE e.id = ?1",
    )?;
    // Ranked, the order needs each hit's place in its file: its row (its sequence
    // number in the file).
    if ranked {
        // Best first; equal scores in the order of the files and their entries.
        checked.sort_by(|a, b| {
            (b.score.total_cmp(&a.score))
                .then_with(|| a.name.cmp(&b.name))
                .then(a.key.cmp(&b.key))
        });
        checked.truncate(limit);
    }
    let mut out = Vec::with_capacity(checked.len());
    for c in checked {
        let Some((role, on_latest, entry_id)) = lookup
            .query_row([c.key], |r| {
                Ok((
                    r.get::<_, Option<String>>(0)?,
                    r.get::<_, i64>(1)?,
                    r.get::<_, String>(2)?,
                ))
            })
            .optional()?
        else {
            continue;
        };
        // Read a second time (ranked, only the hits kept are): a line that no longer
        // reads back as the entry the index holds there is left out, as above.
        let (file, seq) = key_parts(c.key);
        let Some(at) = lines.offset(c.key)? else {
            continue;
        };
        let Some(line) = reader.line(&mut names, file, at) else {
            continue;
        };
        if line.id != entry_id || c.entry_id != entry_id {
            continue;
        }
        out.push(Hit {
            path: c.name.to_string(),
            entry_id,
            seq,
            role: role.unwrap_or_default(),
            timestamp: line.timestamp,
            snippet: snippet(&line.text, &terms),
            score: c.score,
            on_latest_path: on_latest != 0,
        });
    }
    Ok(out)
}
