//! tantivy beside libsession's search, on the same generated folder (issue 37): an
//! on-demand peer benchmark, its own crate and workspace, never built with libsession.
//!
//! ```text
//! benches/tantivypeer/run.sh                     # both, alternated, on the same folder
//! cargo bench --bench search -- --sessions 200 --mb 200        # writes target/bench-search/
//! CARGO_TARGET_DIR=target/tantivypeer cargo run --release \
//!     --manifest-path benches/tantivypeer/Cargo.toml -- --dir target/bench-search
//! ```
//!
//! It reads every `*.jsonl` of the folder, extracts the text libsession's search indexes
//! (`text.rs`: message text, tool call names and arguments, tool results, compaction
//! summaries) and indexes one document per entry with text (its text, and its file and
//! line offset as one u64 fast field, libsession's `file << 40 | offset`), with the
//! tokenizer of `tokenizer.rs` (tantivy's default words, lowercased; bigrams for CJK
//! runs). It prints:
//!
//! - a scan of the folder without an index (read, parse, extract): the floor of any build;
//! - builds: with positions on one writer thread and on tantivy's default threads (the
//!   machine's cores), alternated `--runs` times; and without positions on one thread
//!   (frequencies only, nearer FTS5's `detail=none`): time, MB/s of session bytes, index
//!   size beside the session bytes and the text;
//! - warm queries (median of 5) of `flamingo`, `项目名` and `the`, each as a word and as a
//!   substring (every term of the dictionary that holds it, found by a scan of the
//!   terms as libsession scans its vocabulary, and ranked by BM25 over them), in
//!   process with the reader kept and as a fresh search would (list and stat the
//!   folder, open the index, search): top 20 by BM25, their count, and each hit's line
//!   read back from its file;
//! - every query's hits against a substring scan of the extracted text (recall and
//!   precision), and `rg -F -c flamingo` over the files;
//! - one entry added and committed, and the query after it.
//!
//! Index data goes to `--index` (default `target/tantivypeer-index`), deleted at the end
//! unless `--keep`. `--search QUERY [--substring]` then makes one search of that kept
//! index as a fresh process would (for timing the whole process beside
//! `session search DIR QUERY`), and prints its count of hits. `--build` only builds the
//! index with positions on one writer thread (for timing the whole process beside
//! `session search DIR QUERY --no-redact`, which builds a temporary index each time).

mod text;
mod tokenizer;

use std::collections::{HashMap, HashSet};
use std::error::Error;
use std::fs;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use tantivy::collector::{Count, DocSetCollector, TopDocs};
use tantivy::query::{BooleanQuery, EmptyQuery, Occur, PhraseQuery, Query, TermQuery};
use tantivy::schema::{FAST, Field, IndexRecordOption, Schema, TextFieldIndexing, TextOptions};
use tantivy::{Index, IndexReader, ReloadPolicy, Searcher, TantivyDocument, Term, doc};

type Res<T> = Result<T, Box<dyn Error>>;

/// Bits of a key that hold the line's offset (libsession's `entry_key`).
const OFFSET_BITS: u32 = 40;
/// Each writer thread's memory arena.
const ARENA: usize = 64 << 20;
const LIMIT: usize = 20;
/// The index built with positions on one writer thread, under `--index`.
const ONE_THREAD: &str = "positions";
/// The index built with positions on tantivy's default threads, under `--index`: the
/// one `--search` opens.
const DEFAULT_THREADS: &str = "positions-default-threads";

struct Args {
    dir: PathBuf,
    index: PathBuf,
    runs: usize,
    keep: bool,
    /// One search of a kept index (`--search QUERY`), and how its words match.
    search: Option<String>,
    substring: bool,
    /// Only the build with positions on one writer thread (`--build`).
    build_only: bool,
}

fn args() -> Res<Args> {
    let mut a = Args {
        dir: PathBuf::from("target/bench-search"),
        index: PathBuf::from("target/tantivypeer-index"),
        runs: 1,
        keep: false,
        search: None,
        substring: false,
        build_only: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        match flag.as_str() {
            "--dir" => a.dir = it.next().ok_or("--dir DIR")?.into(),
            "--index" => a.index = it.next().ok_or("--index DIR")?.into(),
            "--runs" => a.runs = it.next().ok_or("--runs N")?.parse()?,
            "--keep" => a.keep = true,
            "--search" => a.search = Some(it.next().ok_or("--search QUERY")?),
            "--substring" => a.substring = true,
            "--build" => a.build_only = true,
            other => return Err(format!("unknown argument {other}").into()),
        }
    }
    Ok(a)
}

fn timed<T>(f: impl FnOnce() -> T) -> (T, Duration) {
    let start = Instant::now();
    let value = f();
    (value, start.elapsed())
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

fn mb(bytes: u64) -> f64 {
    bytes as f64 / 1e6
}

/// The folder's text, as a scan without an index sees it.
struct Corpus {
    files: Vec<PathBuf>,
    bytes: u64,
    entries: u64,
    /// Each entry with text: its key and its folded text.
    texts: Vec<(u64, String)>,
    text_bytes: u64,
}

fn key(file: usize, offset: u64) -> u64 {
    (file as u64) << OFFSET_BITS | offset
}

/// Reads every session file and passes each entry's text to `each(key, text)`; returns
/// the bytes read and the entries met.
fn read_folder(files: &[PathBuf], mut each: impl FnMut(u64, String) -> Res<()>) -> Res<(u64, u64)> {
    let (mut bytes, mut entries) = (0u64, 0u64);
    for (n, path) in files.iter().enumerate() {
        let data = fs::read(path)?;
        bytes += data.len() as u64;
        for (offset, line) in text::lines(&data) {
            let Some(readable) = text::readable(line) else {
                continue;
            };
            entries += 1;
            if let Some(t) = readable {
                each(key(n, offset), t)?;
            }
        }
    }
    Ok((bytes, entries))
}

fn scan(dir: &Path) -> Res<Corpus> {
    let files = text::session_files(dir)?;
    let mut texts = Vec::new();
    let mut text_bytes = 0u64;
    let (bytes, entries) = read_folder(&files, |k, t| {
        text_bytes += t.len() as u64;
        texts.push((k, text::folded(&t)));
        Ok(())
    })?;
    Ok(Corpus {
        files,
        bytes,
        entries,
        texts,
        text_bytes,
    })
}

struct Fields {
    text: Field,
    key: Field,
}

fn schema(positions: bool) -> (Schema, Fields) {
    let mut b = Schema::builder();
    let record = match positions {
        true => IndexRecordOption::WithFreqsAndPositions,
        false => IndexRecordOption::WithFreqs,
    };
    let indexing = TextFieldIndexing::default()
        .set_tokenizer(tokenizer::NAME)
        .set_index_option(record);
    let text = b.add_text_field(
        "text",
        TextOptions::default().set_indexing_options(indexing),
    );
    let key = b.add_u64_field("key", FAST);
    (b.build(), Fields { text, key })
}

fn fields(index: &Index) -> Res<Fields> {
    let s = index.schema();
    Ok(Fields {
        text: s.get_field("text")?,
        key: s.get_field("key")?,
    })
}

fn open(dir: &Path) -> Res<Index> {
    let index = Index::open_in_dir(dir)?;
    index
        .tokenizers()
        .register(tokenizer::NAME, tokenizer::analyzer());
    Ok(index)
}

fn reader(index: &Index) -> Res<IndexReader> {
    Ok(index
        .reader_builder()
        .reload_policy(ReloadPolicy::Manual)
        .try_into()?)
}

fn dir_size(dir: &Path) -> Res<u64> {
    let mut total = 0;
    for e in fs::read_dir(dir)? {
        let m = e?.metadata()?;
        if m.is_file() {
            total += m.len();
        }
    }
    Ok(total)
}

struct Built {
    time: Duration,
    size: u64,
    segments: usize,
    docs: u64,
}

/// Indexes the folder anew in `dir`: `threads` writer threads (tantivy's default when
/// `None`), positions or frequencies only. Timed from the first read to the end of
/// the merges after the commit.
fn build(files: &[PathBuf], dir: &Path, threads: Option<usize>, positions: bool) -> Res<Built> {
    let _ = fs::remove_dir_all(dir);
    fs::create_dir_all(dir)?;
    let start = Instant::now();
    let (schema, f) = schema(positions);
    let index = Index::create_in_dir(dir, schema)?;
    index
        .tokenizers()
        .register(tokenizer::NAME, tokenizer::analyzer());
    let mut writer = match threads {
        Some(n) => index.writer_with_num_threads::<TantivyDocument>(n, n * ARENA)?,
        None => {
            let cores = std::thread::available_parallelism()?.get();
            index.writer::<TantivyDocument>(cores * ARENA)?
        }
    };
    let mut docs = 0u64;
    read_folder(files, |k, t| {
        writer.add_document(doc!(f.text => t, f.key => k))?;
        docs += 1;
        Ok(())
    })?;
    writer.commit()?;
    writer.wait_merging_threads()?;
    let time = start.elapsed();
    let segments = index.searchable_segment_ids()?.len();
    Ok(Built {
        time,
        size: dir_size(dir)?,
        segments,
        docs,
    })
}

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    /// The query's words as tokens.
    Word,
    /// Each word token as every dictionary term that holds it.
    Substring,
}

/// A CJK bigram or unigram token.
fn is_cjk_token(t: &str) -> bool {
    t.chars().next().is_some_and(tokenizer::is_cjk)
}

/// Every term of the dictionary (of every segment) that holds `piece`: a scan of the
/// terms, as libsession's vocabulary is scanned.
fn holding(searcher: &Searcher, field: Field, piece: &str) -> Res<Vec<Term>> {
    let mut found: Vec<Vec<u8>> = Vec::new();
    for segment in searcher.segment_readers() {
        let index = segment.inverted_index(field)?;
        let mut stream = index.terms().stream()?;
        while stream.advance() {
            let key = stream.key();
            if std::str::from_utf8(key).is_ok_and(|k| k.contains(piece)) {
                found.push(key.to_vec());
            }
        }
    }
    found.sort_unstable();
    found.dedup();
    Ok(found
        .iter()
        .map(|k| Term::from_field_text(field, &String::from_utf8_lossy(k)))
        .collect())
}

/// The query: every whitespace-separated term required. `Substring` takes each word
/// token as the disjunction of the dictionary's terms that hold it, so BM25 still ranks.
fn make_query(
    searcher: &Searcher,
    f: &Fields,
    query: &str,
    mode: Mode,
    positions: bool,
) -> Res<Box<dyn Query>> {
    let mut parts: Vec<(Occur, Box<dyn Query>)> = Vec::new();
    for term in text::terms(query) {
        let tokens = tokenizer::tokens(&term);
        let one = |t: &str| -> Res<Box<dyn Query>> {
            // A CJK bigram is already every place the pair occurs; a lone CJK
            // character or a word may lie inside a longer term.
            let inside = mode == Mode::Substring && (!is_cjk_token(t) || t.chars().count() == 1);
            Ok(match inside {
                true => {
                    let terms = holding(searcher, f.text, t)?;
                    match terms.is_empty() {
                        true => Box::new(EmptyQuery),
                        false => Box::new(BooleanQuery::new_multiterms_query(terms)),
                    }
                }
                false => Box::new(TermQuery::new(
                    Term::from_field_text(f.text, t),
                    IndexRecordOption::WithFreqs,
                )),
            })
        };
        match tokens.len() {
            0 => {}
            1 => parts.push((Occur::Must, one(&tokens[0].1)?)),
            _ if positions
                && (mode == Mode::Word || tokens.iter().all(|(_, t)| is_cjk_token(t))) =>
            {
                // At the query's own positions: a separator in it is a gap in both.
                let first = tokens[0].0;
                let terms = tokens
                    .iter()
                    .map(|(p, t)| (p - first, Term::from_field_text(f.text, t)))
                    .collect();
                parts.push((Occur::Must, Box::new(PhraseQuery::new_with_offset(terms))));
            }
            _ => {
                for (_, t) in &tokens {
                    parts.push((Occur::Must, one(t)?));
                }
            }
        }
    }
    Ok(match parts.len() {
        1 => parts.pop().map(|(_, q)| q).ok_or("no part")?,
        _ => Box::new(BooleanQuery::new(parts)),
    })
}

fn key_of(searcher: &Searcher, addr: tantivy::DocAddress) -> Res<u64> {
    let column = searcher
        .segment_reader(addr.segment_ord)
        .fast_fields()
        .u64("key")?;
    Ok(column
        .first(addr.doc_id)
        .ok_or("a document without a key")?)
}

/// The line at `key`, read back from its file (what a snippet needs).
fn read_line(files: &[PathBuf], key: u64) -> Res<usize> {
    let file = fs::File::open(&files[(key >> OFFSET_BITS) as usize])?;
    let mut at = key & ((1 << OFFSET_BITS) - 1);
    let mut buf = [0u8; 4096];
    let mut len = 0;
    loop {
        let n = file.read_at(&mut buf, at)?;
        if n == 0 {
            return Ok(len);
        }
        if let Some(i) = buf[..n].iter().position(|&b| b == b'\n') {
            return Ok(len + i);
        }
        len += n;
        at += n as u64;
    }
}

/// One search: the best [`LIMIT`] hits, each one's line read back, and the count.
fn search(searcher: &Searcher, files: &[PathBuf], query: &dyn Query) -> Res<(usize, usize)> {
    let (top, count) =
        searcher.search(query, &(TopDocs::with_limit(LIMIT).order_by_score(), Count))?;
    let mut read = 0;
    for (_, addr) in &top {
        read += read_line(files, key_of(searcher, *addr)?)?;
    }
    Ok((count, read))
}

/// A search as a fresh call makes it: the folder listed and each file's metadata read
/// (what tells an index up to date), the index opened, then [`search`].
fn fresh_search(
    dir: &Path,
    index_dir: &Path,
    query: &str,
    mode: Mode,
    positions: bool,
) -> Res<usize> {
    let files = text::session_files(dir)?;
    for f in &files {
        fs::metadata(f)?;
    }
    let index = open(index_dir)?;
    let searcher = reader(&index)?.searcher();
    let q = make_query(&searcher, &fields(&index)?, query, mode, positions)?;
    Ok(search(&searcher, &files, q.as_ref())?.0)
}

/// The entries whose folded text holds every term: what libsession answers.
fn truth(corpus: &Corpus, query: &str) -> HashSet<u64> {
    let terms = text::terms(query);
    corpus
        .texts
        .iter()
        .filter(|(_, t)| terms.iter().all(|w| t.contains(w.as_str())))
        .map(|(k, _)| *k)
        .collect()
}

fn rg(dir: &Path, word: &str) -> Option<(Duration, u64)> {
    let run = || {
        Command::new("rg")
            .args(["-F", "-c", "--no-ignore", "--hidden", "-g", "*.jsonl", word])
            .arg(dir)
            .output()
            .ok()
    };
    let first = run()?;
    let lines = String::from_utf8_lossy(&first.stdout)
        .lines()
        .filter_map(|l| l.rsplit(':').next()?.parse::<u64>().ok())
        .sum();
    Some((median((0..5).map(|_| timed(run).1).collect()), lines))
}

const QUERIES: &[(&str, Mode)] = &[
    ("flamingo", Mode::Word),
    ("flamingo", Mode::Substring),
    ("项目名", Mode::Word),
    ("the", Mode::Word),
    ("the", Mode::Substring),
];

/// The queries on one index, with their recall against the scan.
fn queries(
    a: &Args,
    corpus: &Corpus,
    dir: &Path,
    label: &str,
    positions: bool,
) -> Res<HashMap<&'static str, Duration>> {
    println!(
        "queries on {label} (median of 5, warm; top {LIMIT} by BM25 + count + each hit's line read back):"
    );
    let index = open(dir)?;
    let f = fields(&index)?;
    let searcher = reader(&index)?.searcher();
    let mut warm = HashMap::new();
    for &(word, mode) in QUERIES {
        let q = make_query(&searcher, &f, word, mode, positions)?;
        search(&searcher, &corpus.files, q.as_ref())?;
        // The query is made anew each time: a substring's automaton is built then.
        let kept = median(
            (0..5)
                .map(|_| {
                    timed(|| -> Res<usize> {
                        let q = make_query(&searcher, &f, word, mode, positions)?;
                        Ok(search(&searcher, &corpus.files, q.as_ref())?.0)
                    })
                    .1
                })
                .collect(),
        );
        let fresh = median(
            (0..5)
                .map(|_| timed(|| fresh_search(&a.dir, dir, word, mode, positions)).1)
                .collect(),
        );
        let hits: HashSet<u64> = searcher
            .search(q.as_ref(), &DocSetCollector)?
            .into_iter()
            .map(|addr| key_of(&searcher, addr))
            .collect::<Res<_>>()?;
        let (expected, scan) = timed(|| truth(corpus, word));
        let found = hits.intersection(&expected).count();
        let how = match mode {
            Mode::Word => "word",
            Mode::Substring => "substring",
        };
        println!(
            "  {word:?} as a {how:<9}  kept reader {:>9}  fresh search {:>9}  hits {:>7}; scan of the text {:>7} in {}: recall {:.4}, precision {:.4}",
            ms(kept),
            ms(fresh),
            hits.len(),
            expected.len(),
            ms(scan),
            found as f64 / expected.len().max(1) as f64,
            found as f64 / hits.len().max(1) as f64,
        );
        if mode == Mode::Word {
            warm.entry(word).or_insert(fresh);
        }
    }
    Ok(warm)
}

fn main() -> Res<()> {
    let a = args()?;
    if let Some(query) = &a.search {
        let mode = match a.substring {
            true => Mode::Substring,
            false => Mode::Word,
        };
        let index = a.index.join(DEFAULT_THREADS);
        println!("{} hits", fresh_search(&a.dir, &index, query, mode, true)?);
        return Ok(());
    }
    if a.build_only {
        let files = text::session_files(&a.dir)?;
        let built = build(&files, &a.index.join(ONE_THREAD), Some(1), true)?;
        println!("{} docs in {}", built.docs, ms(built.time));
        return Ok(());
    }
    let cores = std::thread::available_parallelism()?.get();
    let (corpus, scan_time) = timed(|| scan(&a.dir));
    let corpus = corpus?;
    if corpus.files.is_empty() {
        return Err(format!(
            "no *.jsonl in {}: run the search bench first",
            a.dir.display()
        )
        .into());
    }
    let mbps = |t: Duration| mb(corpus.bytes) / t.as_secs_f64();
    println!(
        "tantivy peer (tantivy 0.27, {cores} cores): {} sessions, {:.1} MB; {} entries, {} with text, {:.1} MB of text",
        corpus.files.len(),
        mb(corpus.bytes),
        corpus.entries,
        corpus.texts.len(),
        mb(corpus.text_bytes)
    );
    println!(
        "scan without an index (read, parse, extract)  {:>10}  {:.1} MB/s",
        ms(scan_time),
        mbps(scan_time)
    );

    let with_pos = a.index.join(ONE_THREAD);
    let with_pos_default = a.index.join(DEFAULT_THREADS);
    let freqs = a.index.join("freqs-only");
    let (mut one, mut many, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    let mut last = None;
    for run in 0..a.runs.max(1) {
        let (x, y) = match run % 2 {
            0 => {
                let x = build(&corpus.files, &with_pos, Some(1), true)?;
                (x, build(&corpus.files, &with_pos_default, None, true)?)
            }
            _ => {
                let y = build(&corpus.files, &with_pos_default, None, true)?;
                (build(&corpus.files, &with_pos, Some(1), true)?, y)
            }
        };
        ratios.push(x.time.as_secs_f64() / y.time.as_secs_f64());
        one.push(x.time);
        many.push(y.time);
        last = Some((x, y));
    }
    let (x, y) = last.ok_or("no build")?;
    let freq = build(&corpus.files, &freqs, Some(1), false)?;
    ratios.sort_by(f64::total_cmp);
    let show = |label: &str, t: Duration, b: &Built| {
        println!(
            "first index ({label})  {:>10}  {:.1} MB/s  ({} docs, {} segments); index {:.1} MB: {:.2}x the session bytes, {:.2}x the {:.1} MB of text",
            ms(t),
            mbps(t),
            b.docs,
            b.segments,
            mb(b.size),
            b.size as f64 / corpus.bytes as f64,
            b.size as f64 / corpus.text_bytes as f64,
            mb(corpus.text_bytes)
        );
    };
    show("positions, 1 writer thread", median(one), &x);
    show(
        &format!("positions, default threads = {cores}"),
        median(many),
        &y,
    );
    show("frequencies only, 1 writer thread", freq.time, &freq);
    println!(
        "1 thread / default threads: median of {} pairs' ratios {:.2}",
        ratios.len(),
        ratios[ratios.len() / 2]
    );

    let warm = queries(
        &a,
        &corpus,
        &with_pos_default,
        "positions, default threads",
        true,
    )?;
    queries(
        &a,
        &corpus,
        &freqs,
        "frequencies only (CJK bigrams ANDed, no phrase)",
        false,
    )?;
    let flamingo = warm.get("flamingo").copied().unwrap_or_default();
    match rg(&a.dir, "flamingo") {
        Some((t, lines)) => println!(
            "rg -F -c \"flamingo\" over the files  {:>10}  (rg / fresh warm query = {:.1}x; {lines} lines)",
            ms(t),
            t.as_secs_f64() / flamingo.as_secs_f64()
        ),
        None => println!("rg: not installed (Debian: apt-get install ripgrep)"),
    }

    // One entry more: added, committed, the reader reloaded, then the query.
    let index = open(&with_pos_default)?;
    let f = fields(&index)?;
    let r = reader(&index)?;
    let searcher = r.searcher();
    let before = search(
        &searcher,
        &corpus.files,
        make_query(&searcher, &f, "flamingo", Mode::Word, true)?.as_ref(),
    )?
    .0;
    let last_file = corpus.files.len() - 1;
    let end = fs::metadata(&corpus.files[last_file])?.len();
    let (added, t) = timed(|| -> Res<()> {
        let mut writer = index.writer_with_num_threads::<TantivyDocument>(1, ARENA)?;
        writer.add_document(
            doc!(f.text => "where is the flamingo config?", f.key => key(last_file, end)),
        )?;
        writer.commit()?;
        Ok(())
    });
    added?;
    let (after, q) = timed(|| -> Res<usize> {
        r.reload()?;
        let searcher = r.searcher();
        let q = make_query(&searcher, &f, "flamingo", Mode::Word, true)?;
        Ok(search(&searcher, &corpus.files, q.as_ref())?.0)
    });
    let after = after?;
    println!(
        "one entry added and committed {:>10}; the query after it {:>10} ({before} -> {after} hits)",
        ms(t),
        ms(q)
    );
    if !a.keep {
        fs::remove_dir_all(&a.index)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An index in memory of `texts`, each keyed by its position.
    fn index_of(texts: &[&str], positions: bool) -> Res<(Index, Fields)> {
        let (schema, f) = schema(positions);
        let index = Index::create_in_ram(schema);
        index
            .tokenizers()
            .register(tokenizer::NAME, tokenizer::analyzer());
        let mut writer = index.writer_with_num_threads::<TantivyDocument>(1, ARENA)?;
        for (n, t) in texts.iter().enumerate() {
            writer.add_document(doc!(f.text => *t, f.key => n as u64))?;
        }
        writer.commit()?;
        Ok((index, f))
    }

    fn hits(index: &Index, f: &Fields, query: &str, mode: Mode, positions: bool) -> Res<Vec<u64>> {
        let searcher = reader(index)?.searcher();
        let q = make_query(&searcher, f, query, mode, positions)?;
        let mut keys: Vec<u64> = searcher
            .search(q.as_ref(), &DocSetCollector)?
            .into_iter()
            .map(|addr| key_of(&searcher, addr))
            .collect::<Res<_>>()?;
        keys.sort_unstable();
        Ok(keys)
    }

    #[test]
    fn a_substring_query_finds_a_word_inside_words_and_a_word_query_does_not() -> Res<()> {
        let (index, f) = index_of(&["whether The test", "the end", "flam ingo"], true)?;
        assert_eq!(hits(&index, &f, "THE", Mode::Word, true)?, [0, 1]);
        assert_eq!(hits(&index, &f, "he", Mode::Substring, true)?, [0, 1]);
        assert_eq!(hits(&index, &f, "ethe", Mode::Substring, true)?, [0]);
        assert_eq!(
            hits(&index, &f, "flamingo", Mode::Substring, true)?,
            Vec::<u64>::new()
        );
        Ok(())
    }

    #[test]
    fn a_cjk_query_is_a_phrase_of_bigrams_with_positions_and_their_conjunction_without() -> Res<()>
    {
        let texts = ["告诉我项目名", "项目 目名", "名项目"];
        let (index, f) = index_of(&texts, true)?;
        assert_eq!(hits(&index, &f, "项目名", Mode::Word, true)?, [0]);
        assert_eq!(hits(&index, &f, "项", Mode::Substring, true)?, [0, 1, 2]);
        let (index, f) = index_of(&texts, false)?;
        // Without positions the bigrams are only required together: a false match, which
        // a check of the line would have to remove.
        assert_eq!(hits(&index, &f, "项目名", Mode::Word, false)?, [0, 1]);
        Ok(())
    }
}
