//! Reading a file's new committed lines and cutting each entry into what the index
//! holds of it ([`Cut`]): its id, parent, role, the words of its text and where its
//! line is. No database: this is the work a second thread does while the first
//! inserts what it has cut ([`update`](super::update)), so that reading, parsing,
//! redacting and cutting words run beside SQLite's work instead of before it. (Which
//! words are new to the vocabulary the inserting thread decides: that keeps the two
//! threads' shares of the work close on real sessions, whose reading costs more.)

use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;

use super::super::text::{readable_redacted, words};
use super::fingerprint::{hash_block, hash_tail};
use super::{entry_key, io_error, parse};
use crate::entry::EntryParser;
use crate::error::{Error, IoOp};
use crate::recover::{LineScanner, MAX_LINE_BYTES};
use crate::secrets::Redactor;

/// Files are read in pieces of this size.
const CHUNK: usize = 1 << 20;
/// Entries cut are handed over in batches of this many.
pub(super) const BATCH: usize = 256;

/// A file to read from where its index stopped, as the update decided.
pub(super) struct Plan {
    pub(super) file: File,
    pub(super) path: PathBuf,
    /// Its row in `files`.
    pub(super) id: i64,
    /// The committed bytes and lines already indexed, and the entries.
    pub(super) offset: u64,
    pub(super) lines: u64,
    pub(super) entries: u64,
    /// The size to read up to.
    pub(super) size: u64,
}

/// What the index holds of one committed line.
pub(super) enum Item {
    /// A line that is not an entry: its 1-based number, why and the message.
    Corrupt {
        line: u64,
        reason: &'static str,
        message: String,
    },
    Entry(Cut),
}

/// What the index holds of one entry.
pub(super) struct Cut {
    /// Its row ([`entry_key`]).
    pub(super) key: i64,
    /// Where its line starts in the file.
    pub(super) at: u64,
    pub(super) id: String,
    pub(super) parent: Parent,
    pub(super) role: Option<String>,
    /// The words of its readable text, space-separated, their count and the text's
    /// bytes; `None` when it has no readable text.
    pub(super) words: Option<(String, i64, i64)>,
}

/// An entry's parent.
pub(super) enum Parent {
    None,
    /// An entry read by the same update: its row.
    Row(i64),
    /// An entry indexed by an earlier update (or none): its id, looked up in the table.
    Find(String),
}

/// What one read of a file handed over.
pub(super) enum Message {
    Items(Vec<Item>),
    /// The file is read: the bytes read, and where the index now stops or why it
    /// could not be read.
    Done {
        bytes: u64,
        end: Result<End, Error>,
    },
}

/// Where a file's index stops after a read, and the hashes of its first and last
/// indexed blocks.
pub(super) struct End {
    pub(super) offset: u64,
    pub(super) lines: u64,
    pub(super) head_hash: i64,
    pub(super) head_len: i64,
    pub(super) tail_hash: i64,
}

/// Reads the committed bytes of `plan`'s file after its offset (up to its size), hands
/// each batch of cut lines to `hand` and then [`Message::Done`]. Returns false when
/// `hand` refused a message (the update stopped).
pub(super) fn cut_file(
    plan: Plan,
    redactor: Option<&Redactor>,
    hand: &mut dyn FnMut(Message) -> bool,
) -> bool {
    let mut bytes = 0;
    let end = cut_lines(&plan, redactor, &mut bytes, hand).and_then(|cut| {
        let Some(offset) = cut else {
            return Ok(None);
        };
        let (head_hash, head_len) = hash_block(&plan.file, 0, offset.0, &plan.path)?;
        let tail_hash = hash_tail(&plan.file, offset.0, &plan.path)?;
        Ok(Some(End {
            offset: offset.0,
            lines: offset.1,
            head_hash,
            head_len,
            tail_hash,
        }))
    });
    match end {
        Ok(None) => false,
        Ok(Some(end)) => hand(Message::Done {
            bytes,
            end: Ok(end),
        }),
        Err(e) => hand(Message::Done { bytes, end: Err(e) }),
    }
}

/// The lines of [`cut_file`]; `Ok(None)` when `hand` refused, else the committed bytes
/// and lines now indexed.
fn cut_lines(
    plan: &Plan,
    redactor: Option<&Redactor>,
    bytes: &mut u64,
    hand: &mut dyn FnMut(Message) -> bool,
) -> Result<Option<(u64, u64)>, Error> {
    // The rows of the entries read by this call, by id: the parent of most entries
    // (earlier ones are looked up in the table).
    let mut rows: HashMap<Vec<u8>, i64> = HashMap::new();
    let mut scanner = LineScanner::resume(MAX_LINE_BYTES, plan.lines, plan.offset);
    let mut parser = EntryParser::default();
    let mut buf = vec![0u8; CHUNK];
    let mut batch: Vec<Item> = Vec::with_capacity(BATCH);
    let mut entries = plan.entries;
    let mut at = plan.offset;
    let mut refused = false;
    while at < plan.size {
        let want = usize::try_from(plan.size - at).map_or(CHUNK, |left| left.min(CHUNK));
        let n = plan
            .file
            .read_at(&mut buf[..want], at)
            .map_err(|e| io_error(IoOp::Read, &plan.path, &e))?;
        if n == 0 {
            break;
        }
        *bytes += n as u64;
        let chunk_at = at;
        at += n as u64;
        // Fed one line at a time, so that the end of the line the scanner passes on
        // is known: the byte after the `\n` that ends the piece fed.
        let mut piece_start = 0;
        while piece_start < n {
            let piece_end =
                memchr::memchr(b'\n', &buf[piece_start..n]).map_or(n, |i| piece_start + i + 1);
            let line_end = chunk_at + piece_end as u64;
            scanner.feed(&buf[piece_start..piece_end], &mut |line, text| {
                let text = match text {
                    Err(fault) => {
                        batch.push(Item::Corrupt {
                            line,
                            reason: fault.reason(),
                            message: fault.to_string(),
                        });
                        return Ok(());
                    }
                    Ok(text) => text,
                };
                let line_at = line_end - 1 - text.len() as u64;
                let facts = match parse(&mut parser, text, redactor) {
                    Ok(facts) => facts,
                    Err(fault) => {
                        let e = fault.at_line(line);
                        let reason = match &e {
                            Error::CorruptLine { fault, .. } => fault.reason(),
                            _ => "invalid_entry",
                        };
                        batch.push(Item::Corrupt {
                            line,
                            reason,
                            message: e.to_string(),
                        });
                        return Ok(());
                    }
                };
                let Some(key) = entry_key(plan.id, entries) else {
                    return Err(too_many(&plan.path));
                };
                let tape = parser.tape();
                let json = &tape.text[..];
                let parent = match &facts.parent {
                    Some(p) => match rows.get(p.of(json).as_bytes()) {
                        Some(&row) => Parent::Row(row),
                        None => Parent::Find(p.of(json).to_owned()),
                    },
                    None => Parent::None,
                };
                let (role, text) = readable_redacted(tape, redactor);
                let words_of = text.map(|text| {
                    // The words the index holds for the text, as one string.
                    let mut doc = String::new();
                    let mut count = 0i64;
                    words(&text, |word| {
                        count += 1;
                        if !doc.is_empty() {
                            doc.push(' ');
                        }
                        doc.push_str(word);
                    });
                    (doc, count, text.len() as i64)
                });
                let id = facts.id.of(json);
                rows.entry(id.as_bytes().to_vec()).or_insert(key);
                batch.push(Item::Entry(Cut {
                    key,
                    at: line_at,
                    id: id.to_owned(),
                    parent,
                    role,
                    words: words_of,
                }));
                entries += 1;
                Ok(())
            })?;
            if batch.len() >= BATCH {
                let full = std::mem::replace(&mut batch, Vec::with_capacity(BATCH));
                if !hand(Message::Items(full)) {
                    refused = true;
                    break;
                }
            }
            piece_start = piece_end;
        }
        if refused {
            return Ok(None);
        }
    }
    if !batch.is_empty() && !hand(Message::Items(batch)) {
        return Ok(None);
    }
    Ok(Some((scanner.committed_bytes(), scanner.lines())))
}

/// A file of more entries than an entry's row can count ([`entry_key`]: 2^32).
fn too_many(path: &std::path::Path) -> Error {
    let e = std::io::Error::new(
        std::io::ErrorKind::FileTooLarge,
        "the search index holds at most 4,294,967,296 entries of a session file",
    );
    io_error(IoOp::Read, path, &e)
}
