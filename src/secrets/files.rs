//! Secrets in session files: scan a file or a folder of them, redact a file into a new
//! one or in place.

use std::fs::{File, Metadata, OpenOptions};
use std::io::{self, BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

use super::scan::Scratch;
use super::{Finding, Redactor, RuleChoice, SecretsOptions};
use crate::error::{Error, IoOp};
use crate::json::{Object, array};
use crate::store::{
    create_sidecar, io_error, lock, open_regular_with, remove_index, sidecar_name, sync_dir,
};

/// A finding in a session file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileFinding {
    /// The file: as given, or its name within the folder that was scanned.
    pub path: String,
    pub finding: Finding,
}

impl FileFinding {
    /// `{"path","entryId","pointer","rule","fingerprint"}`.
    pub fn to_json(&self) -> String {
        Object::new()
            .string("path", &self.path)
            .string_or_null("entryId", self.finding.entry_id.as_deref())
            .string_or_null("pointer", self.finding.pointer.as_deref())
            .string("rule", &self.finding.rule)
            .string("fingerprint", &self.finding.fingerprint)
            .finish()
    }
}

fn findings_json(findings: &[FileFinding]) -> String {
    array(findings.iter().map(FileFinding::to_json))
}

/// What [`scan_secrets`] found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ScanReport {
    pub findings: Vec<FileFinding>,
    /// Session files scanned.
    pub sessions: u64,
}

impl ScanReport {
    /// `{"findings":[…],"sessions":N}`.
    pub fn to_json(&self) -> String {
        Object::new()
            .raw("findings", &findings_json(&self.findings))
            .number("sessions", self.sessions)
            .finish()
    }
}

/// What [`redact_session`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RedactReport {
    /// Secrets replaced.
    pub redactions: u64,
    /// Where they were (the file as given).
    pub findings: Vec<FileFinding>,
}

impl RedactReport {
    /// `{"redactions":N,"findings":[…]}`.
    pub fn to_json(&self) -> String {
        Object::new()
            .number("redactions", self.redactions)
            .raw("findings", &findings_json(&self.findings))
            .finish()
    }
}

/// The secrets in the session file `path`, or in the `*.jsonl` files directly in the
/// folder `path` (in name order; symbolic links and anything not a regular file are
/// passed over, never followed). Every line is checked: an entry's strings, a line
/// that is not JSON as text. Fails with [`Error::InvalidOption`] for invalid rules or
/// `inPlace`, and [`Error::Io`] when a file cannot be read.
pub fn scan_secrets(path: &Path, options: &SecretsOptions) -> Result<ScanReport, Error> {
    if options.in_place {
        return Err(crate::options::invalid(
            "inPlace is an option of redacting, not of scanning",
        ));
    }
    let redactor = redactor_for(options)?;
    let mut report = ScanReport::default();
    let meta = std::fs::metadata(path).map_err(|e| io_error(IoOp::Open, path, &e))?;
    let files: Vec<(PathBuf, String)> = if meta.is_dir() {
        session_files(path)?
    } else {
        vec![(path.to_path_buf(), path.display().to_string())]
    };
    let mut scratch = Scratch::default();
    for (file_path, shown) in files {
        let file = open_session(&file_path)?;
        let mut findings = Vec::new();
        for_each_line(&file, &file_path, |line| {
            let text = line.strip_suffix(b"\n").unwrap_or(line);
            redactor.process(text, &mut scratch, false, &mut findings);
            Ok(())
        })?;
        report.sessions += 1;
        report
            .findings
            .extend(findings.into_iter().map(|finding| FileFinding {
                path: shown.clone(),
                finding,
            }));
    }
    Ok(report)
}

/// Writes `src` with every secret redacted (see [`Redactor::redact_json_bytes`]; lines
/// without one are copied byte for byte) to `dst`, a new file (an existing one is
/// never replaced) with `src`'s permissions, never wider. With `dst` `None` and
/// `options.in_place`, rewrites `src` instead, under the writer's lock (so no writer
/// appends meanwhile; [`Error::Locked`] when one holds it): the new text goes to a
/// temporary file in the same folder, synced, and renamed over `src`, so the file is
/// whole at every moment and no copy of a secret is kept (the temporary file is
/// removed after a failure). A file with nothing to redact is left as it is.
pub fn redact_session(
    src: &Path,
    dst: Option<&Path>,
    options: &SecretsOptions,
) -> Result<RedactReport, Error> {
    let redactor = redactor_for(options)?;
    match (dst, options.in_place) {
        (Some(dst), false) => {
            let file = open_session(src)?;
            let like = file.metadata().map_err(|e| io_error(IoOp::Open, src, &e))?;
            let (temp, report) = write_redacted(&redactor, &file, src, dst, &like)?;
            let published = crate::repair::rename_no_replace(&temp, dst)
                .map_err(|e| io_error(IoOp::Write, dst, &e));
            finish(&temp, dst, published)?;
            Ok(report)
        }
        (None, true) => {
            let file = crate::store::open_regular(OpenOptions::new().read(true).write(true), src)
                .map_err(|e| io_error(IoOp::Open, src, &e))?;
            // Released when this returns, after the rename.
            let _lock = lock(&file, src)?;
            let like = file.metadata().map_err(|e| io_error(IoOp::Open, src, &e))?;
            let (temp, report) = write_redacted(&redactor, &file, src, src, &like)?;
            if report.redactions == 0 {
                let _ = std::fs::remove_file(&temp);
                return Ok(report);
            }
            let published = std::fs::rename(&temp, src).map_err(|e| io_error(IoOp::Write, src, &e));
            finish(&temp, src, published)?;
            // The session index described the old text; the next open rebuilds it.
            let _ = remove_index(src);
            Ok(report)
        }
        (Some(_), true) => Err(crate::options::invalid(
            "inPlace rewrites the source: give no destination",
        )),
        (None, false) => Err(crate::options::invalid(
            "no destination: give one, or {\"inPlace\": true}",
        )),
    }
}

/// The redactor the options ask for: the shared default one when they add nothing.
pub(crate) fn redactor_for(options: &SecretsOptions) -> Result<RedactorRef, Error> {
    let plain = options.extra_rules.is_empty()
        && options.allow.is_empty()
        && match &options.rules {
            None => true,
            Some(RuleChoice::Named(name)) => name == "default",
            Some(RuleChoice::Custom(_)) => false,
        };
    if plain {
        return Redactor::standard().map(RedactorRef::Shared);
    }
    Redactor::new(options).map(RedactorRef::Owned)
}

/// A compiled rule set: the shared default one or one built for the call.
pub(crate) enum RedactorRef {
    Shared(&'static Redactor),
    Owned(Redactor),
}

impl std::ops::Deref for RedactorRef {
    type Target = Redactor;
    fn deref(&self) -> &Redactor {
        match self {
            RedactorRef::Shared(r) => r,
            RedactorRef::Owned(r) => r,
        }
    }
}

/// Writes the redacted text of `file` to a new temporary file beside `dst`; returns
/// its path (synced) and the report. The temporary file is removed after a failure.
fn write_redacted(
    redactor: &Redactor,
    file: &File,
    src: &Path,
    dst: &Path,
    like: &Metadata,
) -> Result<(PathBuf, RedactReport), Error> {
    let name = dst
        .file_name()
        .unwrap_or_else(|| std::ffi::OsStr::new("session"));
    let (temp_path, temp) = first_free(dst, name, like)?;
    let mut out = BufWriter::new(temp);
    let mut scratch = Scratch::default();
    let mut findings = Vec::new();
    let written = for_each_line(file, src, |line| {
        let (text, newline) = match line.strip_suffix(b"\n") {
            Some(text) => (text, true),
            None => (line, false),
        };
        let redacted = redactor.process(text, &mut scratch, true, &mut findings);
        out.write_all(redacted.as_deref().unwrap_or(text))
            .and_then(|()| {
                if newline {
                    out.write_all(b"\n")
                } else {
                    Ok(())
                }
            })
            .map_err(|e| io_error(IoOp::Write, &temp_path, &e))
    })
    .and_then(|()| {
        out.into_inner()
            .map_err(|e| io_error(IoOp::Write, &temp_path, e.error()))
    })
    .and_then(|temp| {
        temp.sync_all()
            .map_err(|e| io_error(IoOp::Sync, &temp_path, &e))
    });
    if let Err(e) = written {
        let _ = std::fs::remove_file(&temp_path);
        return Err(e);
    }
    let report = RedactReport {
        redactions: findings.len() as u64,
        findings: findings
            .into_iter()
            .map(|finding| FileFinding {
                path: src.display().to_string(),
                finding,
            })
            .collect(),
    };
    Ok((temp_path, report))
}

/// After the rename: the folder synced, or the temporary file removed on failure.
fn finish(temp: &Path, dst: &Path, published: Result<(), Error>) -> Result<(), Error> {
    if let Err(e) = published {
        let _ = std::fs::remove_file(temp);
        return Err(e);
    }
    sync_dir(dst).map_err(|e| io_error(IoOp::Sync, dst, &e))
}

/// Creates the first free `.<name>.redact-<k>.tmp` beside `dst`, with the permissions
/// of `like`, never wider.
fn first_free(
    dst: &Path,
    name: &std::ffi::OsStr,
    like: &Metadata,
) -> Result<(PathBuf, File), Error> {
    for k in 1..=1000u32 {
        let candidate = dst.with_file_name(sidecar_name(name, ".", &format!(".redact-{k}.tmp")));
        match create_sidecar(&candidate, like) {
            Ok(file) => return Ok((candidate, file)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(io_error(IoOp::Open, &candidate, &e)),
        }
    }
    let e = io::Error::new(io::ErrorKind::AlreadyExists, "1000 temporary files exist");
    Err(io_error(IoOp::Open, dst, &e))
}

/// Opens a session file for reading: never through a symbolic link, never blocking on
/// a FIFO.
fn open_session(path: &Path) -> Result<File, Error> {
    open_regular_with(
        OpenOptions::new().read(true),
        rustix::fs::OFlags::NOFOLLOW,
        path,
    )
    .map_err(|e| io_error(IoOp::Open, path, &e))
}

/// Calls `each` with every line of `file`, its `\n` included (the last line may have
/// none).
fn for_each_line(
    file: &File,
    path: &Path,
    mut each: impl FnMut(&[u8]) -> Result<(), Error>,
) -> Result<(), Error> {
    let mut reader = BufReader::with_capacity(1 << 16, file);
    let mut line = Vec::new();
    loop {
        line.clear();
        let n = reader
            .read_until(b'\n', &mut line)
            .map_err(|e| io_error(IoOp::Read, path, &e))?;
        if n == 0 {
            return Ok(());
        }
        each(&line)?;
    }
}

/// The regular `*.jsonl` files directly in `dir`, in name order, with their names.
fn session_files(dir: &Path) -> Result<Vec<(PathBuf, String)>, Error> {
    let mut files = Vec::new();
    let entries = std::fs::read_dir(dir).map_err(|e| io_error(IoOp::Open, dir, &e))?;
    for entry in entries {
        let entry = entry.map_err(|e| io_error(IoOp::Read, dir, &e))?;
        let name = entry.file_name();
        if !crate::list::is_jsonl(&name) {
            continue;
        }
        // file_type does not follow a symbolic link.
        let regular = entry.file_type().is_ok_and(|t| t.is_file());
        if regular {
            files.push((entry.path(), name.to_string_lossy().into_owned()));
        }
    }
    files.sort_by(|a, b| a.1.cmp(&b.1));
    Ok(files)
}
