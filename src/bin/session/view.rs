//! `view`: the session as one self-contained HTML page, on stdout or in a new file.

use std::io::Write;
use std::path::Path;

use session::view::{ViewOptions, render_html, write_html_file};

use crate::exit;
use crate::output::{Out, Outcome, Source, default_leaf, open, outputs_no_wider_than};

/// The page of `file` opening on `leaf`'s branch (default: the default leaf: the
/// one an imported session's agent resumes, else the latest), titled with the file's
/// name, secrets redacted unless `redact` is false; written to `to` (a new file, no
/// wider in mode than `file`) or to stdout.
pub fn view(
    out: &mut Out,
    file: &Path,
    leaf: Option<String>,
    to: Option<&Path>,
    redact: bool,
) -> Outcome {
    let (store, report) = open(file, false)?;
    let options = ViewOptions {
        leaf: match leaf {
            Some(leaf) => Some(leaf),
            None => default_leaf(&store)?,
        },
        title: file
            .file_name()
            .map(|name| name.to_string_lossy().into_owned()),
        redact: Some(redact),
    };
    match to {
        Some(to) => {
            outputs_no_wider_than(Source::File(file));
            write_html_file(&store, &options, to)?
        }
        None => out.write_all(render_html(&store, &options)?.as_bytes())?,
    }
    Ok(exit::for_state(report.state))
}
