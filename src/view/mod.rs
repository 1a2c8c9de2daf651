//! A session as one self-contained HTML page (docs/contract.md §8, "a view of the
//! session"): the tree, its labels and latest leaf, and the messages of the chosen
//! branch; any node can be chosen in the page.
//!
//! The page works offline and trusts nothing it shows:
//!
//! - the session is data: its entries go into a `<script type="application/json">`
//!   block with every `<`, `>`, `&`, U+2028 and U+2029 written as a `\uXXXX` escape
//!   ([`script_safe`]), so no text in the session can close that element, and the
//!   page's script builds the DOM with `textContent` and `createElement` only;
//! - from [`DEFLATE_FROM`] bytes of entries on, that block carries them deflated (zlib
//!   format, in base64: no character to escape) as `entriesDeflate`, and the page
//!   inflates them with the browser's own `DecompressionStream`: every entry is still
//!   in the one file, at a sixth to a twelfth of the session's size for most sessions;
//! - the page's own CSS and script (`page.css`, `page.js`, hand-written) are inlined,
//!   and a Content-Security-Policy forbids every load: `default-src 'none'`, the
//!   script and the style allowed by their SHA-256 hash only, images only as `data:`.
//!
//! Secrets in the entries (API keys, tokens, private keys, passwords: the default
//! rules of [`crate::secrets`]) are replaced by `[REDACTED:<rule>]` unless the options
//! say `"redact": false`; the labels and the title are the caller's and are kept. A
//! large session is redacted on a second thread while this one deflates it
//! (`redaction.rs`).
//!
//! The script renders lazily (the tree as a virtual list, the branch a chunk at a
//! time) from an outline of the tree carried beside the entries (`outline.rs`), parsing
//! an entry only when it is shown; a session of 100,000 entries (25.6 MB, a 2.4 MB
//! page) is drawn in 0.44× the time of the page without the outline
//! (`tests/view/run.sh --bench`; docs/performance.md, "The session view").

use std::borrow::Cow;
use std::cell::RefCell;
use std::fs::OpenOptions;
use std::io::Write;
use std::path::Path;
use std::sync::Arc;

use miniz_oxide::deflate::core::{
    CompressorOxide, TDEFLFlush, TDEFLStatus, compress_to_output, create_comp_flags_from_zip_params,
};
use serde::Deserialize;
use sha2::{Digest, Sha256};

use crate::error::{Error, IoFailure, IoOp};
use crate::json::Object;
use crate::nav::labels_json;
use crate::secrets::Redactor;
use crate::store::Store;
use crate::tree::PathEntry;
use outline::SharedOutline;
pub(crate) use redaction::Pipeline;
use redaction::{Carried, redact_entries};

mod outline;
mod redaction;

/// The page's style sheet, inlined.
const CSS: &str = include_str!("page.css");
/// The page's script, inlined.
const JS: &str = include_str!("page.js");
/// The title when the options give none.
const DEFAULT_TITLE: &str = "Session";

/// Options of [`render_html`], as JSON: `{"leaf": id, "title": string, "redact": bool}`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ViewOptions {
    /// The leaf whose branch the page opens on; the latest leaf (the last committed
    /// entry) by default.
    pub leaf: Option<String>,
    /// The page's title; "Session" by default.
    pub title: Option<String>,
    /// Whether secrets are redacted in the page (the default rules of
    /// [`crate::secrets`]); `true` by default: a page is made to be shared.
    pub redact: Option<bool>,
}

impl ViewOptions {
    /// Options from JSON, through the one options parser ([`crate::options`]).
    pub fn from_json(text: &str) -> Result<ViewOptions, Error> {
        crate::options::from_json(text)
    }
}

/// The store as one self-contained HTML document (see the module documentation),
/// opening on the branch of `options.leaf` (default: the latest leaf). Fails with
/// [`Error::UnknownLeaf`] for a leaf no entry has, or as the store's reads fail.
pub fn render_html(store: &Store, options: &ViewOptions) -> Result<String, Error> {
    render_html_with(store, options, Pipeline::DEFAULT)
}

/// [`render_html`], redacting as `pipeline` says (the tests compare its ways).
pub(crate) fn render_html_with(
    store: &Store,
    options: &ViewOptions,
    pipeline: Pipeline,
) -> Result<String, Error> {
    let redactor = match options.redact {
        Some(false) => None,
        _ => Some(Redactor::standard()?),
    };
    let outline = SharedOutline::default();
    let lengths = RefCell::new(Vec::new());
    let write = per_entry(|entry: PathEntry<'_>| {
        outline.borrow_mut().add(&entry, entry.json.len());
        lengths.borrow_mut().push(entry.json.len());
        Cow::Borrowed(entry.json)
    });
    let snapshot = store.view_snapshot(options.leaf.as_deref(), Some(&write))?;
    let mut outline = outline.into_inner();
    let entries = match redactor {
        Some(redactor) => {
            let (carried, changes) = redact_entries(
                redactor,
                snapshot.entries_json,
                &lengths.into_inner(),
                pipeline,
            )?;
            for (index, json) in &changes {
                outline.set_size(*index, json.len());
            }
            carried
        }
        None => Carried::of(snapshot.entries_json)?,
    };
    let leaf = options.leaf.as_deref().or(snapshot.latest.as_deref());
    let outline = outline.to_json(leaf, snapshot.latest.as_deref());
    let title = options.title.as_deref().unwrap_or(DEFAULT_TITLE);
    let data = Object::new()
        .string("title", title)
        .string_or_null("leaf", leaf)
        .string_or_null("latest", snapshot.latest.as_deref())
        .raw("labels", &labels_json(&snapshot.labels));
    // The outline is carried as the entries are: deflated from the same size on.
    let data = match entries {
        Carried::Plain(entries) => data
            .raw_bytes("outline", &outline)
            .raw_bytes("entries", &entries),
        Carried::Deflated(entries) => data
            .string("outlineDeflate", &deflated_base64(&outline)?)
            .string("entriesDeflate", &entries),
    };
    Ok(page(title, &script_safe(&data.finish_bytes())))
}

/// The size of the entries' JSON from which the page carries it deflated: below it, the
/// page is the plain JSON (readable, and the script's start synchronous); from it, the
/// page is a sixth to a twelfth of the session's size.
pub(crate) const DEFLATE_FROM: usize = 256 * 1024;

/// `json` compressed in the zlib format (RFC 1950, what a browser's
/// `DecompressionStream("deflate")` reads), as standard base64.
pub(crate) fn deflated_base64(json: &[u8]) -> Result<String, Error> {
    let mut deflater = Deflater::new();
    deflater.push(json)?;
    Ok(base64(&deflater.finish()?))
}

/// A zlib stream at [`DEFLATE_LEVEL`] fed a piece at a time: the same bytes as
/// `miniz_oxide`'s `compress_to_vec_zlib` over the whole text, however the text is cut
/// (the compressor keeps every byte it is given until it has enough to decide on; only
/// `finish` flushes; `a_deflate_stream_fed_in_pieces_writes_what_one_call_writes`).
pub(crate) struct Deflater {
    compressor: Box<CompressorOxide>,
    out: Vec<u8>,
}

impl Deflater {
    /// An empty stream.
    pub(crate) fn new() -> Deflater {
        // Window bits above 0: the zlib format (header and Adler-32), as
        // `compress_to_vec_zlib` writes; strategy 0, the default.
        let flags = create_comp_flags_from_zip_params(DEFLATE_LEVEL.into(), 1, 0);
        Deflater {
            compressor: Box::new(CompressorOxide::new(flags)),
            out: Vec::new(),
        }
    }

    /// Adds `bytes` to the text.
    pub(crate) fn push(&mut self, bytes: &[u8]) -> Result<(), Error> {
        self.run(bytes, TDEFLFlush::None)
    }

    /// The zlib stream of the whole text.
    pub(crate) fn finish(mut self) -> Result<Vec<u8>, Error> {
        self.run(&[], TDEFLFlush::Finish)?;
        Ok(self.out)
    }

    fn run(&mut self, bytes: &[u8], flush: TDEFLFlush) -> Result<(), Error> {
        let out = &mut self.out;
        let (status, read) = compress_to_output(&mut self.compressor, bytes, flush, |piece| {
            out.extend_from_slice(piece);
            true
        });
        match (status, flush) {
            (TDEFLStatus::Okay, TDEFLFlush::None) | (TDEFLStatus::Done, TDEFLFlush::Finish)
                if read == bytes.len() =>
            {
                Ok(())
            }
            _ => Err(Error::Internal {
                message: format!("the page's deflate stream stopped ({status:?})"),
            }),
        }
    }
}

/// miniz's level 6, zlib's default: within a few percent of the smallest output at a
/// fraction of level 9's time.
const DEFLATE_LEVEL: u8 = 6;

/// `write` as a function of each entry, borrowing from its JSON (the closure's type
/// annotated once, where inference alone cannot see the higher-ranked lifetime).
fn per_entry<F: for<'a> Fn(PathEntry<'a>) -> Cow<'a, [u8]>>(write: F) -> F {
    write
}

/// [`render_html`] written to a new file at `path` (never replacing one: an existing
/// `path` fails with [`Error::Io`], as does a failed write). The file is complete or,
/// after a failure, removed.
pub fn write_html_file(store: &Store, options: &ViewOptions, path: &Path) -> Result<(), Error> {
    let html = render_html(store, options)?;
    let io = |op, e: &std::io::Error| {
        Error::Io(Arc::new(IoFailure::new(op, &path.display().to_string(), e)))
    };
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(|e| io(IoOp::Open, &e))?;
    if let Err(e) = file.write_all(html.as_bytes()).and_then(|()| file.flush()) {
        let _ = std::fs::remove_file(path);
        return Err(io(IoOp::Write, &e));
    }
    Ok(())
}

/// The document around `data` (JSON already made [`script_safe`]).
fn page(title: &str, data: &str) -> String {
    let csp = format!(
        "default-src 'none'; script-src '{}'; style-src '{}'; img-src data:; \
         base-uri 'none'; form-action 'none'",
        sha256_source(JS),
        sha256_source(CSS)
    );
    let mut html = String::with_capacity(data.len() + CSS.len() + JS.len() + 1024);
    html.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    html.push_str("<meta http-equiv=\"Content-Security-Policy\" content=\"");
    html.push_str(&csp);
    html.push_str("\">\n<meta name=\"referrer\" content=\"no-referrer\">\n");
    html.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    html.push_str("<title>");
    html.push_str(&html_text(title));
    html.push_str("</title>\n<style>");
    html.push_str(CSS);
    html.push_str("</style>\n</head>\n<body>\n");
    html.push_str("<script type=\"application/json\" id=\"session-data\">");
    html.push_str(data);
    html.push_str("</script>\n<script>");
    html.push_str(JS);
    html.push_str("</script>\n</body>\n</html>\n");
    html
}

/// JSON text safe inside a `<script>` element: `<`, `>`, `&`, U+2028 and U+2029
/// written as `\u` escapes. They occur only inside JSON strings, where the escape
/// means the same character, so the JSON is unchanged for a parser.
pub(crate) fn script_safe(json: &[u8]) -> String {
    let text = String::from_utf8_lossy(json);
    let mut out = String::with_capacity(text.len() + 64);
    for c in text.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}

/// `text` as HTML character data (for the title).
fn html_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            c => out.push(c),
        }
    }
    out
}

/// The CSP source that allows exactly `text` inline: `sha256-` and its base64 hash.
fn sha256_source(text: &str) -> String {
    format!("sha256-{}", base64(&Sha256::digest(text.as_bytes())))
}

/// Standard base64 with padding (RFC 4648 §4): a hash in the CSP, the deflated entries.
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests;
