//! `view`: the session as one self-contained HTML page, on stdout or in a new file.

use std::io::Write;
use std::path::Path;

use session::json::Object;
use session::view::{ViewOptions, render_html, write_html_file};

use crate::exit;
use crate::location::Location;
use crate::output::{Doc, Out, Outcome, Source, default_leaf, open_at, outputs_no_wider_than};

/// The page of `file` opening on `leaf`'s branch (default: the default leaf: the
/// one an imported session's agent resumes, else the latest), titled with the file's
/// name, secrets redacted unless `redact` is false; written to `to` (a new file, no
/// wider in mode than `file`) or to stdout.
pub fn view(
    out: &mut Out,
    at: &Location,
    leaf: Option<String>,
    to: Option<&Path>,
    redact: bool,
) -> Outcome {
    let opened = open_at(at)?;
    let store = &opened.store;
    let options = ViewOptions {
        leaf: match leaf {
            Some(leaf) => Some(leaf),
            None => default_leaf(store)?,
        },
        title: match at {
            Location::File(file) => file
                .file_name()
                .map(|name| name.to_string_lossy().into_owned()),
            Location::Postgres { session_id, .. } => Some(session_id.clone()),
        },
        redact: Some(redact),
    };
    match to {
        Some(to) => {
            outputs_no_wider_than(match at {
                Location::File(file) => Source::File(file),
                Location::Postgres { .. } => Source::Database,
            });
            write_html_file(store, &options, to)?;
            if !out.readable() {
                let doc = Object::new().string("out", &to.to_string_lossy()).finish();
                out.emit(&Doc::One(doc))?;
            }
        }
        // The page itself is the output; --json wraps it as {"html": …}.
        None if out.readable() => out.write_all(render_html(store, &options)?.as_bytes())?,
        None => {
            let doc = Object::new()
                .string("html", &render_html(store, &options)?)
                .finish();
            out.emit(&Doc::One(doc))?;
        }
    }
    Ok(exit::for_state(opened.state))
}
