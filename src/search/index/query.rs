//! The query: candidates from the full-text index, each checked against its line,
//! ranked by BM25.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::Path;

use rusqlite::Connection;
use rusqlite::types::Value;

use super::super::text::{
    contains_all, contains_all_ascii, fold_terms, folded, readable, snippet, terms,
};
use super::super::{Hit, SearchQuery};
use super::vocabulary::{expression, term_groups};
use super::{Fail, as_searched};
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

/// The session file a candidate's line is read from, kept open while consecutive
/// candidates are in it.
pub(super) struct Reader<'a> {
    dir: &'a Path,
    redactor: Option<&'a Redactor>,
    open: Option<(String, File)>,
    parser: EntryParser,
    buf: Vec<u8>,
}

impl Reader<'_> {
    /// The readable text and the timestamp (as written) of the entry whose line is
    /// `len` bytes at `at` in file `name`; `None` when it cannot be read back as the
    /// entry `id` with text (the file changed since the index was brought up to date:
    /// it is left to the next search).
    fn text(&mut self, name: &str, id: &str, at: i64, len: i64) -> Option<(String, String)> {
        if self.open.as_ref().is_none_or(|(open, _)| open != name) {
            let path = self.dir.join(name);
            let file = open_regular_with(
                OpenOptions::new().read(true),
                rustix::fs::OFlags::NOFOLLOW,
                &path,
            )
            .ok()?;
            self.open = Some((name.to_owned(), file));
        }
        let (_, file) = self.open.as_ref()?;
        let len = usize::try_from(len).ok().filter(|&l| l <= MAX_LINE_BYTES)?;
        self.buf.resize(len, 0);
        file.read_exact_at(&mut self.buf, u64::try_from(at).ok()?)
            .ok()?;
        let (_, facts) = self
            .parser
            .parse(&as_searched(&self.buf, self.redactor))
            .ok()?;
        let tape = self.parser.tape();
        if facts.id.of(&tape.text) != id {
            return None;
        }
        let text = readable(tape).1?;
        let timestamp = String::from_utf8_lossy(facts.timestamp.bytes(&tape.text)).into_owned();
        Some((text, timestamp))
    }
}

/// The hits of `query`, best first: the entries the full-text index names for the
/// words that hold the terms' runs, each checked against its text read again from the
/// session file. A query with a term of three characters or more is ranked by BM25
/// over the terms (each term a phrase: its occurrences in the entry's text, the
/// entry's length in words, and the entries that may hold it by the index); a query
/// of shorter words alone keeps the order of the files and their entries, score 0.
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
    let mut params: Vec<Value> = Vec::new();
    let mut filters: Vec<String> = Vec::new();
    let from = match &all {
        Some(all) => {
            params.push(Value::Text(all.clone()));
            filters.push(format!("texts MATCH ?{}", params.len()));
            "texts JOIN entries e ON e.id = texts.rowid"
        }
        None => {
            filters.push("e.has_text = 1".into());
            "entries e"
        }
    };
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
    let ranked = !long.is_empty();
    // Ranked, every candidate is read and the hits are sorted here, so the rows come
    // in the index's order (the entries' rows ascending: each page read once).
    let order = match ranked {
        true => "",
        false => "ORDER BY f.name, e.seq",
    };
    let sql = format!(
        "SELECT f.name, e.entry_id, e.seq, (SELECT name FROM roles WHERE id = e.role), NULL,
                e.on_latest, e.line_at,
                e.line_len, e.words
         FROM {from} JOIN files f ON f.id = e.file
         WHERE {} {order}",
        filters.join(" AND ")
    );
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
    let mut reader = Reader {
        dir,
        redactor,
        open: None,
        parser: EntryParser::default(),
        buf: Vec::new(),
    };
    let mut stmt = conn.prepare(&sql)?;
    let mut rows = stmt.query(rusqlite::params_from_iter(params))?;
    let limit = query.limit as usize;
    // With where its line is, for the snippet.
    let mut hits: Vec<(Hit, i64, i64)> = Vec::new();
    loop {
        // Unranked, the first `limit` hits in order are the answer; ranked, every
        // candidate is scored.
        if !ranked && hits.len() == limit {
            break;
        }
        let Some(r) = rows.next()? else { break };
        let name: String = r.get(0)?;
        let id: String = r.get(1)?;
        let Some((text, _)) = reader.text(&name, &id, r.get(6)?, r.get(7)?) else {
            continue;
        };
        // Folded once, for the check and the counts.
        let haystack = folded(&text);
        if !contains_all(&haystack, &needles) || !contains_all_ascii(&text, &short) {
            continue;
        }
        let score = match ranked {
            true => {
                let norm = K1 * (1.0 - B + B * r.get::<_, i64>(8)? as f64 / mean_words);
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
        let hit = Hit {
            path: name,
            entry_id: id,
            seq: r.get::<_, i64>(2)?.max(0) as u64,
            role: r.get::<_, Option<String>>(3)?.unwrap_or_default(),
            timestamp: String::new(),
            snippet: String::new(),
            score,
            on_latest_path: r.get::<_, i64>(5)? != 0,
        };
        hits.push((hit, r.get(6)?, r.get(7)?));
    }
    if ranked {
        // Best first; equal scores in the order of the files and their entries.
        hits.sort_by(|a, b| {
            (b.0.score.total_cmp(&a.0.score))
                .then_with(|| a.0.path.cmp(&b.0.path))
                .then(a.0.seq.cmp(&b.0.seq))
        });
        hits.truncate(limit);
    }
    let mut out = Vec::with_capacity(hits.len());
    for (mut hit, at, len) in hits {
        // Read a second time (ranked, only the hits kept are): a line that no longer
        // reads back is left out, as above.
        if let Some((text, timestamp)) = reader.text(&hit.path, &hit.entry_id, at, len) {
            hit.snippet = snippet(&text, &terms);
            hit.timestamp = timestamp;
            out.push(hit);
        }
    }
    Ok(out)
}
