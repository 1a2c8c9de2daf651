//! Replaying a JSONL file into a log (docs/contract.md §3): every committed line is parsed, then
//! checked against the tree rules in file order (ids unique, every parent on an
//! earlier committed line) and committed.
//!
//! Parsing is most of the work and each line parses on its own, so a large file is
//! parsed by worker threads while this thread reads and frames the lines and applies
//! the tree rules strictly in file order. The outcome — entries, the first error and
//! its line, diagnostics — is the same as replaying line by line; only the time
//! differs. Memory stays bounded: a few batches of about a chunk each are in flight,
//! and the entries' text grows with the committed lines, never with the file's size.
//!
//! Holes in a sparse file are not read: [`Reader`] finds them with `SEEK_DATA` and the
//! scanner counts them as the NUL bytes they read as, so a 100 GB mostly-hole file
//! costs a few system calls, not 100 GB of reads.

use std::collections::BTreeMap;
use std::fs::File;
use std::hash::RandomState;
use std::io;
use std::ops::Range;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::Path;
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::sync::{Mutex, PoisonError};
use std::thread;

use super::file::io_error;
use super::log::{IdHashes, Log};
use crate::entry::{EntryParser, Facts, ParseOptions};
use crate::error::{Error, IoOp, LineFault};
use crate::json::Object;
use crate::recover::{LineScanner, MAX_LINE_BYTES, committed};

/// Bytes read at a time (and, when parsing in parallel, the size of a batch).
const CHUNK: usize = 1 << 20;

/// Files at least this large are parsed by worker threads.
const PARALLEL_FROM_BYTES: u64 = 8 << 20;

/// At most this many parsing threads.
const MAX_WORKERS: usize = 4;

/// A line that salvage could not load, or an entry it loaded detached.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    /// The 1-based physical line.
    pub line: u64,
    pub problem: Problem,
}

/// What is wrong with a salvaged line.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Problem {
    /// The line is not a valid entry; it is skipped.
    Corrupt(LineFault),
    /// The id was already loaded from an earlier line; this line is skipped.
    DuplicateId { id: String },
    /// The entry is loaded, but its parent is not on an earlier good line: a path
    /// through it fails with `missing_parent`.
    Orphan { id: String, parent_id: String },
}

impl Diagnostic {
    /// `{"line":N,"code":…,…}`.
    pub fn to_json(&self) -> String {
        let object = Object::new().number("line", self.line);
        match &self.problem {
            Problem::Corrupt(fault) => object
                .string("code", "corrupt_line")
                .string("reason", fault.reason())
                .string("message", &fault.to_string()),
            Problem::DuplicateId { id } => object.string("code", "duplicate_id").string("id", id),
            Problem::Orphan { id, parent_id } => object
                .string("code", "orphan")
                .string("id", id)
                .string("parentId", parent_id),
        }
        .finish()
    }
}

pub(crate) struct Replay {
    pub(crate) log: Log,
    pub(crate) diagnostics: Vec<Diagnostic>,
    pub(crate) scanner: LineScanner,
    salvage: bool,
    /// How lines are parsed (`strictRoles`).
    parse: ParseOptions,
    /// The bytes left to replay at open: large files are parsed in parallel.
    size: u64,
    /// Where the replay starts: after the prefix a session index covered, else 0.
    start: u64,
}

/// Where a framed line's bytes are: in the batch's chunk, or copied (a line that
/// spanned chunks) into the batch's `spanning` buffer.
enum Place {
    Chunk(Range<usize>),
    Spanning(Range<usize>),
}

/// Committed lines handed to a worker, in file order.
struct Batch {
    index: usize,
    chunk: Vec<u8>,
    spanning: Vec<u8>,
    lines: Vec<(u64, Result<Place, LineFault>)>,
}

/// A parsed line: where its canonical text is in the batch's `text`, its facts, and
/// the index hashes of its ids (computed by the worker, off the ordered path).
type ParsedLine = Result<(Range<usize>, Facts, IdHashes), Error>;

/// A worker's result for one batch: each line's canonical text (in `text`) and facts,
/// or its error.
struct Parsed {
    index: usize,
    text: Vec<u8>,
    lines: Vec<(u64, ParsedLine)>,
    /// The batch's chunk buffer, returned for reuse.
    chunk: Vec<u8>,
}

impl Replay {
    pub(crate) fn new(file: &File, salvage: bool) -> Replay {
        let size = file.metadata().map(|m| m.len()).unwrap_or(0);
        Replay {
            // Nothing is reserved from the size: the file is untrusted, and a sparse
            // file can claim terabytes that hold a few lines.
            log: Log::default(),
            diagnostics: Vec::new(),
            scanner: LineScanner::new(MAX_LINE_BYTES),
            salvage,
            parse: ParseOptions::default(),
            size,
            start: 0,
        }
    }

    /// A replay that continues after the first `lines` lines (`start` bytes) of the
    /// file, already committed to `log` (from a session index).
    pub(crate) fn resume(file: &File, log: Log, start: u64, lines: u64) -> Replay {
        let mut replay = Replay::new(file, false);
        replay.size = replay.size.saturating_sub(start);
        replay.log = log;
        replay.scanner = LineScanner::resume(MAX_LINE_BYTES, lines, start);
        replay.start = start;
        replay
    }

    /// Parses every line with `parse` (a strict store rejects extension entries as
    /// corrupt lines).
    pub(crate) fn with_parse_options(mut self, parse: ParseOptions) -> Replay {
        self.parse = parse;
        self
    }

    /// Reads to the end; returns the number of bytes read.
    pub(crate) fn run(&mut self, file: &File, path: &Path) -> Result<u64, Error> {
        if self.size < PARALLEL_FROM_BYTES {
            return self.run_sequential(file, path);
        }
        // Asking costs system calls (cgroup files): only for a large file.
        let cores = thread::available_parallelism().map_or(1, |n| n.get());
        let workers = cores.min(MAX_WORKERS);
        if workers > 1 {
            self.run_parallel(file, path, workers)
        } else {
            self.run_sequential(file, path)
        }
    }

    /// Applies one committed line's outcome, in file order: the tree rules, then the
    /// commit. A salvage replay turns a bad line into a diagnostic and goes on.
    fn take(
        &mut self,
        line: u64,
        parsed: Result<(&[u8], Facts, Option<IdHashes>), Error>,
    ) -> Result<(), Error> {
        let outcome = parsed.and_then(|(json, facts, hashes)| {
            let (id, parent_id) = (facts.id(json), facts.parent_id(json));
            let admitted = match hashes {
                Some(hashes) => self.log.admit_hashed(id, parent_id, hashes, Some(line)),
                None => self.log.admit(id, parent_id, Some(line)),
            };
            match admitted {
                Ok(admitted) => self.log.push(json, facts, admitted).map(drop),
                Err(Error::MissingParent {
                    child_id,
                    parent_id,
                    ..
                }) if self.salvage => {
                    let admitted = self.log.admit_orphan(&child_id);
                    self.diagnostics.push(Diagnostic {
                        line,
                        problem: Problem::Orphan {
                            id: child_id,
                            parent_id,
                        },
                    });
                    self.log.push(json, facts, admitted).map(drop)
                }
                Err(e) => Err(e),
            }
        });
        let problem = match outcome {
            Err(Error::CorruptLine { fault, .. }) if self.salvage => Problem::Corrupt(fault),
            Err(Error::DuplicateId { id, .. }) if self.salvage => Problem::DuplicateId { id },
            other => return other,
        };
        self.diagnostics.push(Diagnostic { line, problem });
        Ok(())
    }

    fn run_sequential(&mut self, file: &File, path: &Path) -> Result<u64, Error> {
        let mut parser = EntryParser::new(self.parse);
        let mut scanner = std::mem::replace(&mut self.scanner, LineScanner::new(MAX_LINE_BYTES));
        let mut buf = vec![0u8; CHUNK];
        let mut reader = Reader::new(file, path, self.start);
        let result = loop {
            let n = match reader.next(&mut buf) {
                Ok(Piece::End) => break Ok(reader.pos),
                Ok(Piece::Hole(len)) => {
                    scanner.feed_zeros(len);
                    continue;
                }
                Ok(Piece::Data(n)) => n,
                Err(e) => break Err(e),
            };
            let fed = scanner.feed(&buf[..n], &mut |line, text| {
                let parsed = committed(line, text).and_then(|text| {
                    let (json, facts) = parser.parse(text).map_err(|fault| fault.at_line(line))?;
                    Ok((json, facts, None))
                });
                self.take(line, parsed)
            });
            if let Err(e) = fed {
                break Err(e);
            }
        };
        self.scanner = scanner;
        result
    }

    fn run_parallel(&mut self, file: &File, path: &Path, workers: usize) -> Result<u64, Error> {
        // One queued batch per worker keeps them busy; more would only hold memory.
        let (jobs, job_queue) = mpsc::sync_channel::<Batch>(workers);
        let job_queue = Mutex::new(job_queue);
        let (done, results) = mpsc::channel::<Parsed>();
        let hasher = self.log.hasher();
        let parse = self.parse;
        thread::scope(|scope| {
            for _ in 0..workers {
                let (job_queue, done, hasher) = (&job_queue, done.clone(), &hasher);
                scope.spawn(move || parse_batches(job_queue, &done, hasher, parse));
            }
            drop(done);
            // Returning drops `jobs`, so the workers stop; the scope waits for them.
            self.feed_batches(file, path, jobs, &results)
        })
    }

    /// Reads and frames the file into batches for the workers, and applies their
    /// results in file order.
    fn feed_batches(
        &mut self,
        file: &File,
        path: &Path,
        jobs: SyncSender<Batch>,
        results: &Receiver<Parsed>,
    ) -> Result<u64, Error> {
        let mut scanner = std::mem::replace(&mut self.scanner, LineScanner::new(MAX_LINE_BYTES));
        let mut sent = 0usize;
        let mut applied = 0usize;
        let mut arrived: BTreeMap<usize, Parsed> = BTreeMap::new();
        let mut free_chunks: Vec<Vec<u8>> = Vec::new();
        let mut reader = Reader::new(file, path, self.start);
        let result = loop {
            let mut chunk = free_chunks.pop().unwrap_or_default();
            chunk.resize(CHUNK, 0);
            let n = match reader.next(&mut chunk) {
                Ok(Piece::End) => break Ok(reader.pos),
                Ok(Piece::Hole(len)) => {
                    // Holes are framed here, in file order, like every byte.
                    scanner.feed_zeros(len);
                    free_chunks.push(chunk);
                    continue;
                }
                Ok(Piece::Data(n)) => n,
                Err(e) => break Err(e),
            };
            chunk.truncate(n);
            let batch = match frame(&mut scanner, chunk, sent) {
                Ok(batch) => batch,
                Err(e) => break Err(e),
            };
            if jobs.send(batch).is_err() {
                break Err(Error::internal("the parsing threads stopped"));
            }
            sent += 1;
            // Apply what is ready without waiting, so results do not pile up.
            arrived.extend(results.try_iter().map(|p| (p.index, p)));
            if let Err(e) = self.apply_ready(&mut arrived, &mut applied, &mut free_chunks) {
                break Err(e);
            }
        };
        drop(jobs);
        let result = result.and_then(|total| {
            while applied < sent {
                let parsed = results
                    .recv()
                    .map_err(|_| Error::internal("a parsing thread stopped early"))?;
                arrived.insert(parsed.index, parsed);
                self.apply_ready(&mut arrived, &mut applied, &mut free_chunks)?;
            }
            Ok(total)
        });
        self.scanner = scanner;
        result
    }

    /// Applies the batches that are next in file order.
    fn apply_ready(
        &mut self,
        arrived: &mut BTreeMap<usize, Parsed>,
        applied: &mut usize,
        free_chunks: &mut Vec<Vec<u8>>,
    ) -> Result<(), Error> {
        while let Some(parsed) = arrived.remove(applied) {
            for (line, outcome) in parsed.lines {
                let outcome = outcome
                    .map(|(range, facts, hashes)| (&parsed.text[range], facts, Some(hashes)));
                self.take(line, outcome)?;
            }
            free_chunks.push(parsed.chunk);
            *applied += 1;
        }
        Ok(())
    }
}

/// What [`Reader::next`] found at the current offset.
pub(crate) enum Piece {
    /// This many bytes were read into the buffer.
    Data(usize),
    /// A hole of this many bytes (it reads as NULs) was skipped.
    Hole(u64),
    /// The end of the file.
    End,
}

/// Reads a file front to back in bounded chunks (positional reads, so the file's
/// cursor does not matter), reporting holes by their length instead of reading them.
pub(crate) struct Reader<'a> {
    file: &'a File,
    path: &'a Path,
    /// The offset of the next byte.
    pub(crate) pos: u64,
    /// Whether to ask for holes; off after the file system could not say.
    holes: bool,
}

impl<'a> Reader<'a> {
    /// A reader starting at `pos`.
    pub(crate) fn new(file: &'a File, path: &'a Path, pos: u64) -> Reader<'a> {
        Reader {
            file,
            path,
            pos,
            holes: true,
        }
    }

    /// The next piece: data read into `buf` (never past the data's extent), a hole,
    /// or the end.
    pub(crate) fn next(&mut self, buf: &mut [u8]) -> Result<Piece, Error> {
        use rustix::fs::{SeekFrom, seek};
        let read_error = |e: io::Error| io_error(IoOp::Read, self.path, &e);
        let mut want = buf.len();
        if self.holes {
            match seek(self.file, SeekFrom::Data(self.pos)) {
                Ok(data) if data > self.pos => {
                    let hole = data - self.pos;
                    self.pos = data;
                    return Ok(Piece::Hole(hole));
                }
                // Data here: read up to the next hole at most.
                Ok(_) => {
                    if let Ok(hole) = seek(self.file, SeekFrom::Hole(self.pos))
                        && hole > self.pos
                    {
                        want = usize::try_from(hole - self.pos).map_or(want, |n| n.min(want));
                    }
                }
                // No data at or after `pos`: the rest of the file, if any, is a hole.
                Err(rustix::io::Errno::NXIO) => {
                    let size = self.file.metadata().map_err(read_error)?.size();
                    if size > self.pos {
                        let hole = size - self.pos;
                        self.pos = size;
                        return Ok(Piece::Hole(hole));
                    }
                }
                // The file system cannot tell: read every byte.
                Err(_) => self.holes = false,
            }
        }
        let buf = &mut buf[..want];
        loop {
            match self.file.read_at(buf, self.pos) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(read_error(e)),
                Ok(0) => return Ok(Piece::End),
                Ok(n) => {
                    self.pos += n as u64;
                    return Ok(Piece::Data(n));
                }
            }
        }
    }
}

/// Frames the committed lines of `chunk` (and any line it completes) into a batch.
fn frame(scanner: &mut LineScanner, chunk: Vec<u8>, index: usize) -> Result<Batch, Error> {
    let mut spanning = Vec::new();
    let mut lines = Vec::new();
    let chunk_start = chunk.as_ptr() as usize;
    scanner.feed(&chunk, &mut |line, text| {
        let place = text.map(|text| {
            // A line inside the chunk is named by its range; one that spanned chunks
            // comes from the scanner's own buffer and is copied.
            let offset = (text.as_ptr() as usize).wrapping_sub(chunk_start);
            match offset.checked_add(text.len()) {
                Some(end) if end <= chunk.len() => Place::Chunk(offset..end),
                _ => {
                    let start = spanning.len();
                    spanning.extend_from_slice(text);
                    Place::Spanning(start..spanning.len())
                }
            }
        });
        lines.push((line, place));
        Ok(())
    })?;
    Ok(Batch {
        index,
        chunk,
        spanning,
        lines,
    })
}

/// A worker: parses batches until the queue closes or the results are not wanted.
fn parse_batches(
    queue: &Mutex<Receiver<Batch>>,
    done: &mpsc::Sender<Parsed>,
    hasher: &RandomState,
    parse: ParseOptions,
) {
    let mut parser = EntryParser::new(parse);
    loop {
        let next = queue.lock().unwrap_or_else(PoisonError::into_inner).recv();
        let Ok(batch) = next else {
            return;
        };
        if done.send(parse_batch(&mut parser, batch, hasher)).is_err() {
            return;
        }
    }
}

fn parse_batch(parser: &mut EntryParser, batch: Batch, hasher: &RandomState) -> Parsed {
    let mut text = Vec::with_capacity(batch.chunk.len() + batch.spanning.len());
    let lines = batch
        .lines
        .into_iter()
        .map(|(line, place)| {
            let outcome = match place {
                Err(fault) => Err(Error::CorruptLine { line, fault }),
                Ok(place) => {
                    let bytes = match place {
                        Place::Chunk(range) => &batch.chunk[range],
                        Place::Spanning(range) => &batch.spanning[range],
                    };
                    parser
                        .parse(bytes)
                        .map(|(json, facts)| {
                            let hashes =
                                IdHashes::new(hasher, facts.id(json), facts.parent_id(json));
                            let start = text.len();
                            text.extend_from_slice(json);
                            (start..text.len(), facts, hashes)
                        })
                        .map_err(|fault| fault.at_line(line))
                }
            };
            (line, outcome)
        })
        .collect();
    Parsed {
        index: batch.index,
        text,
        lines,
        chunk: batch.chunk,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Warning;

    /// Everything a replay produces, comparable (entries as a count and a digest).
    #[derive(Debug, PartialEq)]
    struct Outcome {
        result: Result<u64, String>,
        entries: usize,
        digest: u64,
        diagnostics: Vec<Diagnostic>,
        warnings: Vec<Warning>,
        committed_bytes: u64,
    }

    fn replay(bytes: &[u8], salvage: bool, workers: usize) -> Outcome {
        use std::hash::{DefaultHasher, Hash, Hasher};
        use std::sync::atomic::{AtomicU64, Ordering};
        static FILES: AtomicU64 = AtomicU64::new(0);
        let dir = std::env::temp_dir().join(format!("libsession-replay-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(format!("r{}.jsonl", FILES.fetch_add(1, Ordering::Relaxed)));
        std::fs::write(&path, bytes).unwrap();
        let file = File::open(&path).unwrap();
        let mut replay = Replay::new(&file, salvage);
        let result = if workers > 1 {
            replay.run_parallel(&file, &path, workers)
        } else {
            replay.run_sequential(&file, &path)
        };
        // After an error the replay is abandoned: where framing stopped does not matter
        // (the parallel replay has read ahead).
        let committed_bytes = if result.is_ok() {
            replay.scanner.committed_bytes()
        } else {
            0
        };
        let mut digest = DefaultHasher::new();
        replay.log.jsons().for_each(|json| json.hash(&mut digest));
        std::fs::remove_file(&path).unwrap();
        Outcome {
            result: result.as_ref().map(|n| *n).map_err(|e| format!("{e}")),
            entries: replay.log.len(),
            digest: digest.finish(),
            diagnostics: replay.diagnostics,
            warnings: match result {
                Ok(_) => replay.scanner.finish().into_iter().collect(),
                Err(_) => Vec::new(),
            },
            committed_bytes,
        }
    }

    fn entry(id: usize, parent: Option<usize>, text_len: usize) -> String {
        let parent = parent.map_or("null".to_owned(), |p| format!("\"e{p}\""));
        format!(
            r#"{{"id":"e{id}","parentId":{parent},"timestamp":{id},"type":"message","message":{{"role":"user","content":"{}"}}}}"#,
            "x".repeat(text_len)
        )
    }

    /// A file of about `bytes` bytes spanning several chunks, with lines of many lengths
    /// (some longer than a chunk) and `damage` applied at the given line numbers.
    fn session(bytes: usize, damage: &[(usize, &str)]) -> Vec<u8> {
        let mut out = Vec::new();
        let mut n = 0;
        while out.len() < bytes {
            let text_len = match n % 50 {
                7 => CHUNK + 1000, // spans chunks
                13 => 0,
                _ => (n * 7919) % 3000,
            };
            let line = match damage.iter().find(|(at, _)| *at == n + 1) {
                Some((_, "corrupt")) => "{\"id\":".to_owned(),
                Some((_, "blank")) => "  \r".to_owned(),
                Some((_, "duplicate")) => entry(0, None, 3),
                Some((_, "orphan")) => entry(1_000_000 + n, Some(999_999), 3),
                _ => entry(n, n.checked_sub(1), text_len),
            };
            out.extend_from_slice(line.as_bytes());
            out.push(b'\n');
            n += 1;
        }
        out
    }

    fn assert_same(bytes: &[u8], what: &str) {
        for salvage in [false, true] {
            let sequential = replay(bytes, salvage, 1);
            for workers in [2, 3] {
                let parallel = replay(bytes, salvage, workers);
                assert_eq!(
                    parallel, sequential,
                    "{what}, salvage {salvage}, {workers} workers"
                );
            }
        }
    }

    #[test]
    fn parallel_replay_of_a_clean_file_is_the_sequential_replay() {
        assert_same(&session(5 << 20, &[]), "clean");
    }

    #[test]
    fn parallel_replay_reports_the_same_first_error_and_diagnostics() {
        // About 250 lines, a chunk-sized one every 50: damage lands in several batches.
        let damage = [
            (40, "blank"),
            (90, "duplicate"),
            (120, "corrupt"),
            (160, "orphan"),
            (210, "corrupt"),
        ];
        let damaged = session(5 << 20, &damage);
        let salvaged = replay(&damaged, true, 2);
        // Each damaged line, and the line after it whose parent it was (an orphan).
        let lines: Vec<u64> = salvaged.diagnostics.iter().map(|d| d.line).collect();
        assert_eq!(lines[..7], [41, 90, 91, 120, 121, 160, 161], "{lines:?}");
        assert_same(&damaged, "damaged");
        // Strict: the first error is a corrupt line several batches in.
        let corrupt = session(5 << 20, &[(180, "corrupt"), (220, "corrupt")]);
        let outcome = replay(&corrupt, false, 2);
        assert!(
            outcome
                .result
                .as_ref()
                .is_err_and(|e| e.starts_with("line 180:")),
            "{:?}",
            outcome.result
        );
        assert_same(&corrupt, "corrupt");
    }

    #[test]
    fn parallel_replay_keeps_tails_and_overlong_lines_exact() {
        let mut bytes = session(3 << 20, &[]);
        bytes.extend_from_slice(b"{\"id\":\"torn\",\"par");
        assert_same(&bytes, "torn tail");
        let mut bytes = session(3 << 20, &[]);
        bytes.extend(std::iter::repeat_n(0u8, 3 << 20));
        assert_same(&bytes, "NUL tail");
        bytes.push(b'\n');
        assert_same(&bytes, "NUL line");
    }
}
