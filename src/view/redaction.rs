//! The page's entries with their secrets redacted, and carried as the page carries them
//! (plain JSON, or deflated from [`DEFLATE_FROM`] bytes on).
//!
//! The store writes the entries' JSON array as it is; each entry is then redacted on its
//! own (most have no keyword and are passed over by the first test). For a large
//! session the redaction runs on a second thread, a chunk of entries at a time, while
//! this one deflates the chunks already redacted: deflating is most of a large page's
//! work, so the redaction's cost mostly disappears behind it on a machine with two
//! cores. The page is the same bytes either way: the same entries, redacted by the same
//! function, deflated by one stream that writes what one call over the whole text
//! writes (the tests `pipelined_pages_are_the_sequential_pages_on_the_corpus` and
//! `…_wherever_the_chunks_end`).

use std::sync::mpsc;
use std::thread;

use super::{DEFLATE_FROM, Deflater, base64, deflated_base64};
use crate::error::Error;
use crate::secrets::Redactor;

/// How the entries are redacted: on this thread below [`Pipeline::from`] bytes of
/// entries, and from it on a second thread, [`Pipeline::chunk`] bytes of entries at a
/// time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Pipeline {
    /// The size of the entries' JSON from which a second thread redacts them. A smaller
    /// session is not worth a thread: its page is plain JSON, not deflated, and the
    /// thread's start would cost about what the redaction does.
    pub(crate) from: usize,
    /// About how many bytes of entries the second thread redacts before handing them
    /// over (at least one entry): small enough that the first chunk is soon ready, large
    /// enough that handing over costs nothing beside the chunk's deflating.
    pub(crate) chunk: usize,
}

impl Pipeline {
    /// What [`super::render_html`] uses.
    pub(crate) const DEFAULT: Pipeline = Pipeline {
        from: DEFLATE_FROM,
        chunk: 64 * 1024,
    };
}

/// The entries as the page carries them.
pub(super) enum Carried {
    /// The JSON array itself (below [`DEFLATE_FROM`] bytes).
    Plain(Vec<u8>),
    /// The JSON array deflated, in base64.
    Deflated(String),
}

impl Carried {
    /// `json` carried as its size says.
    pub(super) fn of(json: Vec<u8>) -> Result<Carried, Error> {
        Ok(match json.len() < DEFLATE_FROM {
            true => Carried::Plain(json),
            false => Carried::Deflated(deflated_base64(&json)?),
        })
    }
}

/// An entry whose redacted JSON differs from the store's: its position and new JSON.
pub(super) type Change = (usize, Vec<u8>);

/// The store's JSON array of entries (`[e0,e1,…]`, each entry `lengths[i]` bytes)
/// redacted by `redactor` and carried as the page carries it, with the entries that
/// changed (for the outline's sizes).
pub(super) fn redact_entries(
    redactor: &Redactor,
    array: Vec<u8>,
    lengths: &[usize],
    pipeline: Pipeline,
) -> Result<(Carried, Vec<Change>), Error> {
    let spans = spans(lengths);
    if array.len() >= pipeline.from {
        let chunks = chunks(&spans, pipeline.chunk);
        if let Some(done) = pipelined(redactor, &array, &spans, &chunks) {
            return done;
        }
    }
    // Below the pipeline's size, or when no thread could be started.
    let changes = redact_span(redactor, &array, &spans, 0..spans.len());
    let json = match changes.is_empty() {
        true => array,
        false => apply(&array, &spans, &changes),
    };
    Ok((Carried::of(json)?, changes))
}

/// The byte range of each entry in the array: after the `[`, each entry then a `,`.
fn spans(lengths: &[usize]) -> Vec<(usize, usize)> {
    let mut at = 1;
    lengths
        .iter()
        .map(|&len| {
            let span = (at, at + len);
            at += len + 1;
            span
        })
        .collect()
}

/// The entries cut into consecutive ranges of about `size` bytes each (at least one
/// entry each).
fn chunks(spans: &[(usize, usize)], size: usize) -> Vec<std::ops::Range<usize>> {
    let mut chunks = Vec::new();
    let mut first = 0;
    for (i, &(_, end)) in spans.iter().enumerate() {
        let start = spans[first].0;
        if end - start >= size {
            chunks.push(first..i + 1);
            first = i + 1;
        }
    }
    if first < spans.len() {
        chunks.push(first..spans.len());
    }
    chunks
}

/// The entries `range` of the array that redaction changes.
fn redact_span(
    redactor: &Redactor,
    array: &[u8],
    spans: &[(usize, usize)],
    range: std::ops::Range<usize>,
) -> Vec<Change> {
    let mut changes = Vec::new();
    for index in range {
        let (start, end) = spans[index];
        let json = &array[start..end];
        let redacted = redactor.redact_json_bytes(json);
        if *redacted != *json {
            changes.push((index, redacted.into_owned()));
        }
    }
    changes
}

/// The array with each changed entry's JSON in place of the store's.
fn apply(array: &[u8], spans: &[(usize, usize)], changes: &[Change]) -> Vec<u8> {
    let grown: usize = changes.iter().map(|(_, json)| json.len()).sum();
    let mut out = Vec::with_capacity(array.len() + grown);
    let mut at = 0;
    for (index, json) in changes {
        let (start, end) = spans[*index];
        out.extend_from_slice(&array[at..start]);
        out.extend_from_slice(json);
        at = end;
    }
    out.extend_from_slice(&array[at..]);
    out
}

/// The redaction on a second thread, chunk by chunk, while this one deflates what is
/// redacted. `None` when no thread could be started (the caller then redacts on this
/// thread); an error when the second thread failed, so that no page is made from
/// entries it did not redact.
fn pipelined(
    redactor: &Redactor,
    array: &[u8],
    spans: &[(usize, usize)],
    chunks: &[std::ops::Range<usize>],
) -> Option<Result<(Carried, Vec<Change>), Error>> {
    thread::scope(|scope| {
        let (sender, receiver) = mpsc::channel::<Vec<Change>>();
        let worker = thread::Builder::new()
            .name("session-view-redact".to_owned())
            .spawn_scoped(scope, move || {
                for range in chunks {
                    if sender
                        .send(redact_span(redactor, array, spans, range.clone()))
                        .is_err()
                    {
                        return;
                    }
                }
            })
            .ok()?;
        let mut deflater = Deflater::new();
        let mut changes: Vec<Change> = Vec::new();
        // The array's bytes up to `at` are in the deflater.
        let mut at = 0;
        let mut fed = Ok(());
        for range in chunks {
            let Ok(chunk) = receiver.recv() else {
                fed = Err(stopped());
                break;
            };
            for (index, json) in &chunk {
                let (start, end) = spans[*index];
                fed = fed.and_then(|()| deflater.push(&array[at..start]));
                fed = fed.and_then(|()| deflater.push(json));
                at = end;
            }
            // Up to the end of the chunk's last entry; the last chunk takes the `]`.
            let end = match range.end == spans.len() {
                true => array.len(),
                false => spans[range.end - 1].1,
            };
            fed = fed.and_then(|()| deflater.push(&array[at..end]));
            at = end;
            changes.extend(chunk);
        }
        if chunks.is_empty() {
            fed = fed.and_then(|()| deflater.push(array));
        }
        if worker.join().is_err() {
            return Some(Err(stopped()));
        }
        if let Err(e) = fed {
            return Some(Err(e));
        }
        let size = array.len() + changes.iter().map(|(_, json)| json.len()).sum::<usize>()
            - changes
                .iter()
                .map(|(index, _)| spans[*index].1 - spans[*index].0)
                .sum::<usize>();
        // Redaction may shrink a session below the deflated size: then it is carried as
        // the plain JSON, as it would be on one thread.
        let carried = match size < DEFLATE_FROM {
            true => Carried::Plain(apply(array, spans, &changes)),
            false => match deflater.finish() {
                Ok(deflated) => Carried::Deflated(base64(&deflated)),
                Err(e) => return Some(Err(e)),
            },
        };
        Some(Ok((carried, changes)))
    })
}

/// The error when the redaction's thread ended before it redacted every entry.
fn stopped() -> Error {
    Error::Internal {
        message: "the view's redaction thread stopped before the last entry".to_owned(),
    }
}
