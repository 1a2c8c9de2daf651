//! The vocabulary: every word put in the full-text index, and how a query term is
//! turned into the words that hold its pieces.

use rusqlite::Connection;

use super::super::text::runs;
use super::Fail;

/// The most runs of a query ([`runs`]) looked up in the full-text index (the ones that
/// match the fewest words); the terms are checked whole afterwards, so fewer runs only
/// let more candidates through.
pub(super) const MAX_RUNS: usize = 64;
/// A run held by more words of the vocabulary than this is not looked up (it would
/// select little); the terms are checked whole afterwards.
pub(super) const MAX_WORDS_PER_RUN: usize = 2000;

/// The most blocks the vocabulary is kept in. An update writes the words it met as one
/// more block without reading the others (reading them all would cost a search after
/// a one-line append as much as the whole vocabulary), so a word may be in several
/// blocks; once there are this many, the next update that reads a file reads them all
/// and writes them back as one.
pub(super) const MAX_BLOCKS: i64 = 64;

/// The words an update puts in the index ([`words`]), each once.
#[derive(Default)]
pub(super) struct Vocabulary {
    /// The words met by this update; when merging, every word of the vocabulary too.
    seen: std::collections::HashSet<Box<str>>,
    /// The words met by this update, newline-separated.
    added: String,
    /// Whether the blocks are merged by this update; decided when the first file is
    /// read.
    merge: Option<bool>,
}

impl Vocabulary {
    /// Decides, once, whether this update merges the blocks, and reads them if so.
    pub(super) fn load(&mut self, tx: &Connection) -> Result<(), Fail> {
        if self.merge.is_some() {
            return Ok(());
        }
        let blocks: i64 = tx.query_row("SELECT count(*) FROM vocabulary", [], |r| r.get(0))?;
        let merge = blocks >= MAX_BLOCKS;
        if merge {
            let mut stmt = tx.prepare("SELECT words FROM vocabulary")?;
            let mut rows = stmt.query([])?;
            while let Some(row) = rows.next()? {
                let block: String = row.get(0)?;
                self.seen
                    .extend(block.split('\n').filter(|w| !w.is_empty()).map(Box::from));
            }
        }
        self.merge = Some(merge);
        Ok(())
    }

    /// Notes the words of `doc` (space-separated), each new one added once, in order.
    pub(super) fn meet(&mut self, doc: &str) {
        for word in doc.split(' ').filter(|w| !w.is_empty()) {
            if !self.seen.contains(word) {
                self.seen.insert(Box::from(word));
                self.added.push_str(word);
                self.added.push('\n');
            }
        }
    }

    pub(super) fn save(&mut self, tx: &Connection) -> Result<(), Fail> {
        if self.merge == Some(true) {
            let mut all = String::new();
            for word in &self.seen {
                all.push_str(word);
                all.push('\n');
            }
            tx.execute("DELETE FROM vocabulary", [])?;
            tx.execute("INSERT INTO vocabulary(words) VALUES(?1)", [all])?;
        } else if !self.added.is_empty() {
            tx.execute(
                "INSERT INTO vocabulary(words) VALUES(?1)",
                [std::mem::take(&mut self.added)],
            )?;
        }
        Ok(())
    }
}

/// The words of the vocabulary that hold `run`, at most `cap` + 1 of them (more than
/// `cap` means "too many to look up").
pub(super) fn words_holding(blocks: &[String], run: &str, cap: usize) -> Vec<String> {
    let finder = memchr::memmem::Finder::new(run.as_bytes());
    let mut out = Vec::new();
    for block in blocks {
        let bytes = block.as_bytes();
        let mut from = 0;
        while let Some(found) = finder.find(&bytes[from..]) {
            let hit = from + found;
            let start = memchr::memrchr(b'\n', &bytes[..hit]).map_or(0, |i| i + 1);
            let end = memchr::memchr(b'\n', &bytes[hit..]).map_or(bytes.len(), |i| hit + i);
            out.push(block[start..end].to_owned());
            if out.len() > cap {
                return out;
            }
            from = end;
        }
    }
    // A word may be in several blocks (see [`MAX_BLOCKS`]).
    out.sort_unstable();
    out.dedup();
    out
}

/// What the full-text index is asked for a term: for each of its [`runs`], the words
/// of the vocabulary that hold it (left out when more than [`MAX_WORDS_PER_RUN`]: it
/// would select little); `Err(())` when some run is in no word at all (no entry can
/// hold the term).
pub(super) fn term_groups(blocks: &[String], term: &str) -> Result<Vec<Vec<String>>, ()> {
    let mut groups: Vec<Vec<String>> = Vec::new();
    for run in runs(term) {
        let held = words_holding(blocks, &run, MAX_WORDS_PER_RUN);
        if held.is_empty() {
            return Err(());
        }
        if held.len() <= MAX_WORDS_PER_RUN && !groups.contains(&held) {
            groups.push(held);
        }
    }
    Ok(groups)
}

/// The FTS5 expression that requires every group: `("w1" OR "w2") AND …`, the most
/// selective [`MAX_RUNS`] of them; `None` for no group. A word holds no `"` (an ASCII
/// separator), so quoting needs no escape.
pub(super) fn expression(mut groups: Vec<Vec<String>>) -> Option<String> {
    groups.sort_by_key(Vec::len);
    groups.dedup();
    groups.truncate(MAX_RUNS);
    if groups.is_empty() {
        return None;
    }
    let all = groups
        .iter()
        .map(|words| {
            let alternatives: Vec<String> = words.iter().map(|w| format!("\"{w}\"")).collect();
            format!("({})", alternatives.join(" OR "))
        })
        .collect::<Vec<_>>()
        .join(" AND ");
    Some(all)
}
